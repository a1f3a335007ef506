# sweep.py (make bench-peers): mtc's budget sweep per solver against PyTorch eager and its
# checkpointing (bench/peers.py) on the examples, the two ratios of docs' goals, and the
# solvers' compile time against graph size. Writes bench/results/{peers.md,peers.json,*.svg}.
# usage: /usr/bin/python3 sweep.py [--report]   (--report: outputs from OUT/peers.json only)
# environment: MTC, MTC_RUN (paths), top_srcdir,
#   OUT (results folder), MTC_THREADS (default nproc), BENCH_STEPS (timed steps, default 5),
#   BENCH_ILP_TIME (--solver-time per ILP run, default 2), BENCH_QUICK=1 (one model, a smoke run)
import hashlib, json, os, re, shutil, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svg

SRC = os.environ.get("top_srcdir", ".")
MTC = os.environ.get("MTC", "./mtc")
RUN = os.environ.get("MTC_RUN", os.path.join(os.path.dirname(MTC) or ".", "mtc-run"))
OUT = os.environ.get("OUT", os.path.join(SRC, "bench", "results"))
THREADS = int(os.environ.get("MTC_THREADS", os.cpu_count()))
STEPS = int(os.environ.get("BENCH_STEPS", "5"))
ILPT = os.environ.get("BENCH_ILP_TIME", "2")
QUICK = os.environ.get("BENCH_QUICK") == "1"
# The planner's cost model told about this CPU rather than the default accelerator: ~3 GFLOP/s
# for mtc's kernels on 2 cores (measured on the MLP), and copies so slow that swapping to the
# host zone (which on a CPU is the same RAM) is a last resort; recompute is what is compared.
COST = ["--target-flops=3e9", "--target-bw=10e9", "--copy-bw=1e6", "--copy-latency=1e-3",
        "--launch=5e-6"]
MODELS = [("mlp", "mlp.tdsl", []), ("transformer-L2", "transformer.tdsl", ["L=2"]),
          ("transformer-L4", "transformer.tdsl", ["L=4"]),
          ("transformer-L8", "transformer.tdsl", ["L=8"]), ("skipnet", "skipnet.tdsl", [])]
if QUICK:
    MODELS = MODELS[1:2]
SOLVERS = ["none", "chen", "tso", "ilp", "auto"]
PCTS = [100, 90, 75, 60, 50, 40, 30, 25, 20, 15, 10]
os.environ["MTC_THREADS"] = str(THREADS)
tmp = tempfile.mkdtemp(prefix="mtc-bench-")

def log(*a):
    print(*a, file=sys.stderr, flush=True)

def defs(d):
    return sum([["-D", x] for x in d], [])

def summary(text):
    s = {}
    for line in text.splitlines():
        m = re.match(r"^(solver|budget_bytes|unplanned_peak_bytes|planned_peak_bytes|arena_bytes|"
                     r"recomputed_ops|swapped_values|modeled_step_s|unplanned_step_s|overhead|"
                     r"solve_s|ilp_gap) (\S+)", line)
        if m:
            s[m.group(1)] = m.group(2)
        m = re.match(r"^# module tensors (\d+) bytes.*host zone (\d+) bytes", line)
        if m:
            s["state"], s["host"] = int(m.group(1)), int(m.group(2))
    s["ops"] = sum(1 for l in text.splitlines() if re.match(r"^\s*\d+ ", l))
    # The plan itself: the schedule without the lines that name the solver or its time.
    body = "\n".join(l for l in text.splitlines()
                     if not re.match(r"^(solver|solve_s|ilp_gap|budget_bytes|overhead) ", l))
    s["key"] = hashlib.sha1(body.encode()).hexdigest()
    return s

def measure(so):
    """Measured step (median ms of STEPS) and high-water mark (MTC_CHECK=1) of a module."""
    r = subprocess.run([RUN, so, "--steps", str(STEPS)], capture_output=True, text=True)
    m = re.search(r"step_ms (\S+)", r.stdout)
    env = dict(os.environ, MTC_CHECK="1")
    r2 = subprocess.run([RUN, so, "--steps", "1"], capture_output=True, text=True, env=env)
    p = re.search(r"peak_bytes (\d+)", r2.stdout)
    if not m or not p:
        log("mtc-run failed on", so, r.stderr[-300:], r2.stderr[-300:])
        return None, None
    return float(m.group(1)), int(p.group(1))

def build(name, f, d, solver, budget):
    """Compile one plan; None where the budget is infeasible for the solver."""
    so = os.path.join(tmp, "m.so")
    dd = os.path.join(tmp, "dump")
    shutil.rmtree(dd, ignore_errors=True)
    cmd = [MTC, os.path.join(SRC, "examples", f)] + defs(d) + COST + \
        ["--solver=" + solver, "--solver-time=" + ILPT, "--mem-budget=" + budget, "-o", so,
         "--dump-dir=" + dd]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    sched = [x for x in sorted(os.listdir(dd)) if x.endswith("-step-schedule.txt")][0]
    s = summary(open(os.path.join(dd, sched)).read())
    s["compile_s"] = round(wall, 3)
    return s, so

seen = {}
def point(name, f, d, solver, budget):
    s, so = build(name, f, d, solver, budget)
    if s is None:
        return {"model": name, "solver": solver, "solver_asked": solver, "budget": budget,
                "feasible": False, "why": so}
    k = (name, s["key"])
    if k not in seen:
        seen[k] = measure(so)
    ms, peak = seen[k]
    s.update(model=name, solver_asked=solver, budget=budget, feasible=ms is not None,
             step_ms=ms, peak_bytes=peak,
             act_bytes=None if peak is None else peak - s["state"] + s["host"])
    del s["key"]
    return s

def peers(name, d):
    mod = "transformer" if name.startswith("transformer") else name
    r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "bench", "peers.py"), mod,
                        str(THREADS), str(STEPS)] + d, capture_output=True, text=True)
    out = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if not out:
        log("peers.py failed:", r.stderr[-500:])
    return out

def mib(b):
    return b / 1048576.0

def sweep():
    res = {"threads": THREADS, "steps": STEPS, "ilp_time": ILPT, "cost": COST, "models": {}}
    t_all = time.time()
    for name, f, d in MODELS:
        t0 = time.time()
        pts = []
        for solver in SOLVERS:
            for pct in PCTS if solver != "none" else [100]:
                p = point(name, f, d, solver, "%d%%" % pct)
                pts.append(p)
                log("%-15s %-5s %4d%% %s" % (name, solver, pct, "%.1f ms %.2f MiB act" %
                    (p["step_ms"], mib(p["act_bytes"])) if p["feasible"] else "infeasible"))
                if not p["feasible"]:
                    break
        pe = peers(name, d)
        m = {"points": pts, "peers": pe, "cmp": {}}
        base = [p for p in pts if p["solver_asked"] == "none" and p["feasible"]]
        state = base[0]["state"] if base else 0
        by = dict((p["peer"], p) for p in pe)
        # At checkpoint_sequential's activation memory: mtc (auto) with that much beside its state.
        cs = by.get("ckpt-sqrt")
        if cs and base:
            q = point(name, f, d, "auto", str(state + cs["act_bytes"]))
            m["cmp"]["at_mem"] = {"peer_ms": cs["ms"], "peer_act": cs["act_bytes"], "mtc": q,
                                  "ratio": cs["ms"] / q["step_ms"] if q["feasible"] else None}
        # At eager's step time: mtc's least activation memory among plans no slower than eager.
        ea = by.get("eager")
        if ea:
            ok = [p for p in pts if p["feasible"] and p["step_ms"] <= ea["ms"]]
            best = min(ok, key=lambda p: p["act_bytes"]) if ok else None
            fast = min((p for p in pts if p["feasible"]), key=lambda p: p["step_ms"], default=None)
            m["cmp"]["at_time"] = {"peer_ms": ea["ms"], "peer_act": ea["act_bytes"], "mtc": best,
                                   "ratio": ea["act_bytes"] / best["act_bytes"] if best else None,
                                   "fastest": fast}
        m["wall_s"] = round(time.time() - t0, 1)
        res["models"][name] = m
        log("%s done in %.0f s" % (name, m["wall_s"]))

    # Compile time against graph size: the deep MLP at growing depth, tso and ilp, 75% budget.
    scal = []
    for L in ([8, 40] if QUICK else [8, 20, 40, 100, 420]):
        for solver in ["tso", "ilp"]:
            cmd = [MTC, os.path.join(SRC, "examples", "mlp.tdsl"), "-D", "L=%d" % L] + COST + \
                ["--solver=" + solver, "--solver-time=5", "--mem-budget=75%", "--emit=schedule",
                 "-o", "-"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
                s = summary(r.stdout) if r.returncode == 0 else None
            except subprocess.TimeoutExpired:
                s = None
            e = {"L": L, "solver": solver, "ok": s is not None}
            if s:
                e.update(ops=s["ops"], used=s.get("solver"), solve_s=float(s["solve_s"]),
                         gap=s.get("ilp_gap"),
                         overhead=s.get("overhead"))
            scal.append(e)
            log("scaling L=%d %s %s" % (L, solver, e))
    res["scaling"] = scal
    res["wall_s"] = round(time.time() - t_all, 1)
    shutil.rmtree(tmp, ignore_errors=True)
    return res

if len(sys.argv) > 1 and sys.argv[1] == "--report":   # redo the outputs from peers.json
    res = json.load(open(os.path.join(OUT, "peers.json")))
    shutil.rmtree(tmp, ignore_errors=True)
else:
    res = sweep()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "peers.json"), "w") as fp:
        json.dump(res, fp, indent=1)
scal = res["scaling"]

# ---- output ----

def f1(v, fmt="%.1f"):
    return "-" if v is None else fmt % v

md = ["# mtc against PyTorch: budget sweep and peers", "",
      "Threads %d (MTC_THREADS = torch.set_num_threads), median of %d steps, ILP --solver-time=%s; "
      "planner cost flags `%s`. act = bytes beyond params, inputs and optimizer state: mtc's "
      "measured high-water mark (MTC_CHECK=1) minus its module tensors plus its host zone; "
      "PyTorch's from profiler memory events (bench/peers.py). Whole run %.0f s." %
      (res["threads"], res["steps"], res["ilp_time"], " ".join(res["cost"]), res["wall_s"]), ""]
for name, m in res["models"].items():
    md += ["## " + name, "",
           "| who | budget | solver used | arena MiB | act MiB (measured) | modeled overhead | "
           "step ms (measured) | solve s | ILP gap |", "|---|---|---|---|---|---|---|---|---|"]
    for p in m["points"]:
        if not p["feasible"]:
            md.append("| mtc %s | %s | infeasible | | | | | | |" % (p["solver"], p["budget"]))
            continue
        md.append("| mtc %s | %s | %s | %.2f | %.2f | %s | %.1f | %s | %s |" %
                  (p["solver_asked"], p["budget"], p["solver"], mib(int(p["arena_bytes"])),
                   mib(p["act_bytes"]), p["overhead"], p["step_ms"], p["solve_s"], p["ilp_gap"]))
    for q in m["peers"]:
        md.append("| torch %s%s | - | - | - | %.2f | - | %.1f | - | - |" %
                  (q["peer"], " (%d segments)" % q["segments"] if q["segments"] else "",
                   mib(q["act_bytes"]), q["ms"]))
    c = m["cmp"]
    md.append("")
    if "at_mem" in c:
        a = c["at_mem"]
        md.append("- At checkpoint_sequential's memory (%.2f MiB act, %.1f ms): mtc auto %s; "
                  "speed ratio (torch ms / mtc ms) **%s** (goal >= 1.3)." %
                  (mib(a["peer_act"]), a["peer_ms"],
                   "%.1f ms, %.2f MiB act" % (a["mtc"]["step_ms"], mib(a["mtc"]["act_bytes"]))
                   if a["mtc"]["feasible"] else "infeasible", f1(a["ratio"], "%.2f")))
    if "at_time" in c:
        a = c["at_time"]
        if a["mtc"]:
            md.append("- At eager's step time (%.1f ms, %.2f MiB act): mtc's least memory no "
                      "slower is %.2f MiB (%s at %s, %.1f ms); memory ratio **%.2f** (goal >= 2)." %
                      (a["peer_ms"], mib(a["peer_act"]), mib(a["mtc"]["act_bytes"]),
                       a["mtc"]["solver_asked"], a["mtc"]["budget"], a["mtc"]["step_ms"], a["ratio"]))
        elif a["fastest"]:
            md.append("- At eager's step time (%.1f ms, %.2f MiB act): no mtc plan is that fast; "
                      "the fastest takes %.1f ms (%.2fx eager's time) with %.2f MiB act "
                      "(memory ratio %.2f at that slower time; goal >= 2 at equal time: missed)." %
                      (a["peer_ms"], mib(a["peer_act"]), a["fastest"]["step_ms"],
                       a["fastest"]["step_ms"] / a["peer_ms"], mib(a["fastest"]["act_bytes"]),
                       a["peer_act"] / a["fastest"]["act_bytes"]))
    md.append("")
md += ["## Solver time against graph size (deep MLP, -D L=..., 75% budget, ILP limit 5 s, 90 s cap)", "",
       "| L | ops | solver | used | solve s | ILP gap | overhead |", "|---|---|---|---|---|---|---|"]
for e in scal:
    md.append("| %d | %s | %s | %s | %s | %s | %s |" % (e["L"], e.get("ops", "-"), e["solver"],
              e.get("used", "?"),
              e.get("solve_s", "timeout/failed"), e.get("gap", "-"), e.get("overhead", "-")))
# The short table for the README: one row per model.
sm = ["| model | torch eager ms / act MiB | torch sqrt-ckpt ms / act MiB | torch per-layer ms / "
      "act MiB | mtc unplanned ms / act MiB | mtc least act: ms / act MiB (solver, budget) | "
      "speed at sqrt-ckpt's memory | memory at eager's time |", "|---|---|---|---|---|---|---|---|"]
for name, m in res["models"].items():
    by = dict((q["peer"], q) for q in m["peers"])
    pk = lambda q: "%.1f / %.2f" % (q["ms"], mib(q["act_bytes"])) if q else "-"
    ok = [p for p in m["points"] if p["feasible"]]
    un = [p for p in ok if p["solver_asked"] == "none"]
    lo = min(ok, key=lambda p: (p["act_bytes"], p["step_ms"])) if ok else None
    c = m["cmp"]
    am = c.get("at_mem", {}).get("ratio")
    at = c.get("at_time", {})
    if at.get("ratio") is not None:
        tm = "%.2fx" % at["ratio"]
    elif at.get("fastest"):
        tm = "none as fast (fastest %.2fx eager's time)" % (at["fastest"]["step_ms"] / at["peer_ms"])
    else:
        tm = "-"
    sm.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, pk(by.get("eager")), pk(by.get("ckpt-sqrt")), pk(by.get("ckpt-layer")),
        "%.1f / %.2f" % (un[0]["step_ms"], mib(un[0]["act_bytes"])) if un else "-",
        "%.1f / %.2f (%s, %s)" % (lo["step_ms"], mib(lo["act_bytes"]), lo["solver"], lo["budget"])
        if lo else "-", "%.2fx" % am if am is not None else "infeasible", tm))
with open(os.path.join(OUT, "summary.md"), "w") as fp:
    fp.write("\n".join(sm) + "\n")
md[2:2] = sm + [""]
with open(os.path.join(OUT, "peers.md"), "w") as fp:
    fp.write("\n".join(md) + "\n")

for name, m in res["models"].items():
    ser = []
    for solver in SOLVERS:
        ps = [(mib(p["act_bytes"]), p["step_ms"]) for p in m["points"]
              if p.get("solver_asked") == solver and p["feasible"]]
        ser.append(("mtc " + solver, ps, {}))
    ser.append(("torch (eager, sqrt, layer)", [(mib(q["act_bytes"]), q["ms"]) for q in m["peers"]],
                {"dash": True, "square": True}))
    svg.plot(os.path.join(OUT, "overhead-%s.svg" % name),
             "%s: measured step time against activation memory" % name,
             "activation memory, MiB (measured)", "step time, ms (median)", ser)
    ser = []
    for solver in SOLVERS[1:]:
        ps = [(float(p["budget"].rstrip("%")), 1 + float(p["overhead"].rstrip("%")) / 100)
              for p in m["points"] if p.get("solver_asked") == solver and p["feasible"]]
        ser.append((solver, ps, {}))
    svg.plot(os.path.join(OUT, "modeled-%s.svg" % name),
             "%s: modeled overhead against budget" % name, "--mem-budget, %",
             "modeled step / unplanned step", ser)
ser = []
for solver in ["tso", "ilp"]:   # points where the asked solver's plan was taken (ilp-blocks: ilp)
    ser.append((solver, [(e["ops"], e["solve_s"]) for e in scal
                         if e["ok"] and e["solve_s"] > 0 and e.get("used", solver).startswith(solver)], {}))
svg.plot(os.path.join(OUT, "solve-time.svg"), "solver time against graph size (deep MLP)",
         "ops in the training step (log)", "solve seconds (log)", ser, logx=True, logy=True)
print("\n".join(md))
