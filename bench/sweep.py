# sweep.py (make bench-peers): mtc's budget sweep per solver against PyTorch eager and its
# checkpointing (bench/peers.py) on the examples, the two ratios of docs' goals, and the
# solvers' compile time against graph size. Writes bench/results/{peers.md,peers.json,*.svg}.
# usage: /usr/bin/python3 sweep.py [--report]   (--report: outputs from OUT/peers.json only)
# environment: MTC, MTC_RUN (paths), top_srcdir,
#   OUT (results folder), MTC_THREADS (mtc's and torch's threads, default 1), BENCH_THREADS2
#   (a second thread count for the timings, default 2; 0: none), BENCH_STEPS (timed steps,
#   default 9), BENCH_ILP_TIME (--solver-time per ILP run, default 2), BENCH_MODELS (a
#   comma-separated subset of the models), BENCH_QUICK=1 (one model, a smoke run)
# Time: every point is planned first with --emit=schedule (no C compiler), and a module is
# built and measured only for a plan not seen before on that model; the budgets are PCTS plus
# the recompute-only floor (bisected with tso), and each solver's descent stops at its first
# swap-bound point (below), after which only the smallest feasible budget is tried. About 7
# minutes on 2 quiet cores.
import hashlib, json, os, re, shutil, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import svg

SRC = os.environ.get("top_srcdir", ".")
MTC = os.environ.get("MTC", "./mtc")
RUN = os.environ.get("MTC_RUN", os.path.join(os.path.dirname(MTC) or ".", "mtc-run"))
OUT = os.environ.get("OUT", os.path.join(SRC, "bench", "results"))
THREADS = int(os.environ.get("MTC_THREADS", "1"))
# A second thread count (0: none): the peers and every distinct plan that is not swap-bound
# timed again, the ratios taken again with the same plans (memory does not depend on it).
THREADS2 = int(os.environ.get("BENCH_THREADS2", "2"))
STEPS = int(os.environ.get("BENCH_STEPS", "9"))
ILPT = os.environ.get("BENCH_ILP_TIME", "2")
QUICK = os.environ.get("BENCH_QUICK") == "1"
# The planner's cost model told about this CPU rather than the default accelerator: ~3 GFLOP/s
# for mtc's kernels on 2 cores (measured on the MLP), and copies so slow that swapping to the
# host zone (which on a CPU is the same RAM) is a last resort; recompute is what is compared.
COST = ["--target-flops=3e9", "--target-bw=10e9", "--copy-bw=1e6", "--copy-latency=1e-3",
        "--launch=5e-6"]
MODELS = [("mlp", "mlp.tdsl", []), ("transformer-L2", "transformer.tdsl", ["L=2"]),
          ("transformer-L4", "transformer.tdsl", ["L=4"]),
          ("transformer-L8", "transformer.tdsl", ["L=8"]), ("skipnet", "skipnet.tdsl", []),
          ("resnet-W16", "resnet.tdsl", ["W=16", "B=8"]), ("mobilenet", "mobilenet.tdsl", ["B=8"])]
if QUICK:
    MODELS = MODELS[1:2]
if os.environ.get("BENCH_MODELS"):   # a comma-separated subset, e.g. mlp,skipnet
    MODELS = [x for x in MODELS if x[0] in os.environ["BENCH_MODELS"].split(",")]
SOLVERS = ["none", "chen", "tso", "ilp", "auto"]
PCTS = [100, 90, 80, 70, 60, 50, 40, 30]
# Swap-bound: a plan that swaps and whose modeled step is over twice the unplanned one. Under
# the cost model above such plans come only below the recompute-only floor (the planner then
# swaps rather than fail); they are listed but kept out of the curves and of the ratios.
SWAPBOUND = 100.0
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

def step_ms(so, threads):
    env = dict(os.environ, MTC_THREADS=str(threads))
    r = subprocess.run([RUN, so, "--steps", str(STEPS)], capture_output=True, text=True, env=env)
    m = re.search(r"step_ms (\S+)", r.stdout)
    return float(m.group(1)) if m else None

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

def mtc(f, d, solver, budget, extra):
    cmd = [MTC, os.path.join(SRC, "examples", f)] + defs(d) + COST + \
        ["--solver=" + solver, "--solver-time=" + ILPT, "--mem-budget=" + budget] + extra
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, round(time.time() - t0, 3)

def why(r):
    e = r.stderr.strip().splitlines()
    return e[-1] if e else "failed"

def swapbound(s):
    return int(s.get("swapped_values", 0)) > 0 and float(s["overhead"].rstrip("%")) > SWAPBOUND

seen = {}
sos = {}   # id of a point -> its module, for the second thread count
def point(name, f, d, solver, budget):
    """Plan one point (--emit=schedule), build and measure its module if the plan is new."""
    r, wall = mtc(f, d, solver, budget, ["--emit=schedule", "-o", "-"])
    if r.returncode:
        return {"model": name, "solver": solver, "solver_asked": solver, "budget": budget,
                "feasible": False, "why": why(r)}
    s = summary(r.stdout)
    s["plan_s"] = wall
    k = (name, s["key"])
    if k not in seen:
        so = os.path.join(tmp, "%s-%d.so" % (name, len(seen)))
        dd = os.path.join(tmp, "dump")
        shutil.rmtree(dd, ignore_errors=True)
        r, wall = mtc(f, d, solver, budget, ["-o", so, "--dump-dir=" + dd])
        if r.returncode:
            log("build failed after planning:", why(r))
            seen[k] = (None, None, None)
        else:
            # A time-limited ILP may plan otherwise the second time: the built plan is the one
            # measured, so it is the one reported.
            sched = [x for x in sorted(os.listdir(dd)) if x.endswith("-step-schedule.txt")][0]
            s2 = summary(open(os.path.join(dd, sched)).read())
            s2["plan_s"], s2["compile_s"] = s["plan_s"], wall
            s, k = s2, (name, s2["key"])
            seen[k] = measure(so) + (so,)
    ms, peak, so = seen[k]
    sos[id(s)] = so
    s.update(model=name, solver_asked=solver, budget=budget, feasible=ms is not None,
             step_ms=ms, peak_bytes=peak, swapbound=swapbound(s),
             act_bytes=None if peak is None else peak - s["state"] + s["host"])
    del s["key"]
    return s

def rcfloor(f, d, low):
    """The smallest budget in % (to 2%) where tso's plan is not swap-bound: the low end of the
    curves, which the fixed steps of PCTS would miss by up to 10%."""
    ok, bad = 100, low or 1
    while ok - bad > 2:
        mid = (ok + bad) // 2
        r, _ = mtc(f, d, "tso", "%d%%" % mid, ["--emit=schedule", "-o", "-"])
        if r.returncode == 0 and not swapbound(summary(r.stdout)):
            ok = mid
        else:
            bad = mid
    return ok

def floor(f, d):
    """The smallest feasible budget in %, from the planner's error at 1%; None if 1% fits."""
    r, _ = mtc(f, d, "tso", "1%", ["--emit=schedule", "-o", "-"])
    m = re.search(r"--mem-budget=(\d+)% or more", r.stderr)
    return int(m.group(1)) if m else None

def peers(name, d, threads):
    mod = name.split("-")[0]            # transformer-L2: bench/torchmodels.py's transformer
    r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "bench", "peers.py"), mod,
                        str(threads), str(STEPS)] + d, capture_output=True, text=True)
    out = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if not out:
        log("peers.py failed:", r.stderr[-500:])
    return out

def compare(pts, q, pe, ms):
    """The two ratios with step times from key ms: at checkpoint_sequential's memory, the
    fastest measured plan (not swap-bound) whose measured act is at most the peer's (the
    budget-matched auto plan q among them where it qualifies); at eager's step time, the least
    act among plans no slower."""
    by = dict((p["peer"], p) for p in pe)
    ok = [p for p in pts + ([q] if q else []) if p["feasible"] and not p["swapbound"] and
          p.get(ms) is not None]
    c = {}
    cs = by.get("ckpt-sqrt")
    if cs and q:
        within = [p for p in ok if p["act_bytes"] <= cs["act_bytes"]]
        best = min(within, key=lambda p: p[ms]) if within else None
        c["at_mem"] = {"peer_ms": cs["ms"], "peer_act": cs["act_bytes"], "mtc": q, "best": best,
                       "ratio": cs["ms"] / best[ms] if best else None}
    ea = by.get("eager")
    if ea:
        fast = [p for p in ok if p[ms] <= ea["ms"]]
        best = min(fast, key=lambda p: p["act_bytes"]) if fast else None
        c["at_time"] = {"peer_ms": ea["ms"], "peer_act": ea["act_bytes"], "mtc": best,
                        "ratio": ea["act_bytes"] / best["act_bytes"] if best else None,
                        "fastest": min(ok, key=lambda p: p[ms], default=None)}
    return c

def mib(b):
    return b / 1048576.0

def sweep():
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
           "load0": open("/proc/loadavg").read().split()[:3],
           "threads": THREADS, "threads2": THREADS2, "steps": STEPS, "ilp_time": ILPT, "cost": COST, "models": {}}
    t_all = time.time()
    for name, f, d in MODELS:
        t0 = time.time()
        pts = []
        low = floor(f, d)
        rc = rcfloor(f, d, low)
        for solver in SOLVERS:
            pcts = [100] if solver == "none" else \
                sorted(set([x for x in PCTS if low is None or x > low] + [rc]), reverse=True)
            for pct in pcts + ([low] if low and solver != "none" else []):
                p = point(name, f, d, solver, "%d%%" % pct)
                pts.append(p)
                log("%-15s %-5s %4d%% %s" % (name, solver, pct, "%.1f ms %.2f MiB act, modeled %s%s" %
                    (p["step_ms"], mib(p["act_bytes"]), p["overhead"],
                     " (swap-bound)" if p["swapbound"] else "") if p["feasible"] else "infeasible"))
                if not p["feasible"]:
                    break
                if p["swapbound"] and pct != low:   # further down only the smallest feasible
                    p = point(name, f, d, solver, "%d%%" % low) if low else None
                    if p:
                        pts.append(p)
                        log("%-15s %-5s %4d%% (smallest feasible) %s" % (name, solver, low,
                            "%.1f ms, modeled %s" % (p["step_ms"], p["overhead"]) if p["feasible"]
                            else "infeasible"))
                    break
        pe = peers(name, d, THREADS)
        m = {"points": pts, "peers": pe}
        base = [p for p in pts if p["solver_asked"] == "none" and p["feasible"]]
        state = base[0]["state"] if base else 0
        cs = dict((p["peer"], p) for p in pe).get("ckpt-sqrt")
        # At checkpoint_sequential's activation memory: mtc (auto) with that much beside its state.
        q = point(name, f, d, "auto", str(state + cs["act_bytes"])) if cs and base else None
        m["cmp"] = compare(pts, q, pe, "step_ms")
        if THREADS2:
            m["peers2"] = peers(name, d, THREADS2)
            t2 = {}
            for p in pts + ([q] if q else []):
                if p["feasible"] and not p["swapbound"]:
                    so = sos[id(p)]
                    if so not in t2:
                        t2[so] = step_ms(so, THREADS2)
                    p["step_ms2"] = t2[so]
            m["cmp2"] = compare(pts, q, m["peers2"], "step_ms2")
        if q:
            m["at_mem_point"] = q
        m["floor_pct"], m["rc_floor_pct"] = low, rc
        m["wall_s"] = round(time.time() - t0, 1)
        res["models"][name] = m
        log("%s done in %.0f s" % (name, m["wall_s"]))

    # Compile time against graph size: the deep MLP at growing depth, tso and ilp, 75% budget.
    scal = []
    for L in ([8, 40] if QUICK else [8, 20, 40, 100, 200, 420, 510]):
        for solver in ["tso", "ilp"]:
            cmd = [MTC, os.path.join(SRC, "examples", "mlp.tdsl"), "-D", "L=%d" % L] + COST + \
                ["--solver=" + solver, "--solver-time=5", "--mem-budget=75%", "--emit=schedule",
                 "-o", "-"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
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
    res["load1"] = open("/proc/loadavg").read().split()[:3]
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

def ratios(c, ms, threads):
    """The two comparisons of one thread count, as markdown bullets."""
    o = []
    if "at_mem" in c:
        a, q = c["at_mem"], c["at_mem"]["mtc"]
        b = a.get("best")
        o.append("- %d thread%s, at checkpoint_sequential's memory (%.2f MiB act, %.1f ms): mtc "
                 "auto at that budget %s; the fastest mtc plan within that act (not swap-bound): "
                 "%s; speed ratio (torch ms / mtc ms) **%s** (goal >= 1.3)." %
                 (threads, "s" if threads > 1 else "", mib(a["peer_act"]), a["peer_ms"],
                  "%s ms, %.2f MiB act, modeled %s%s" % (f1(q.get(ms)), mib(q["act_bytes"]),
                  q["overhead"], ", swap-bound" if q["swapbound"] else "")
                  if q["feasible"] else "infeasible",
                  "%.1f ms, %.2f MiB (%s at %s)" % (b[ms], mib(b["act_bytes"]),
                  b["solver_asked"], b["budget"]) if b else "none", f1(a["ratio"], "%.2f")))
    if "at_time" in c:
        a = c["at_time"]
        if a["mtc"]:
            o.append("- %d thread%s, at eager's step time (%.1f ms, %.2f MiB act): mtc's least "
                     "memory no slower is %.2f MiB (%s at %s, %.1f ms); memory ratio **%.2f** "
                     "(goal >= 2)." % (threads, "s" if threads > 1 else "", a["peer_ms"],
                     mib(a["peer_act"]), mib(a["mtc"]["act_bytes"]), a["mtc"]["solver_asked"],
                     a["mtc"]["budget"], a["mtc"][ms], a["ratio"]))
        elif a["fastest"]:
            o.append("- %d thread%s, at eager's step time (%.1f ms, %.2f MiB act): no mtc plan is "
                     "that fast; the fastest takes %.1f ms (%.2fx eager's time) with %.2f MiB act "
                     "(memory ratio %.2f at that slower time; goal >= 2 at equal time: missed)." %
                     (threads, "s" if threads > 1 else "", a["peer_ms"], mib(a["peer_act"]),
                      a["fastest"][ms], a["fastest"][ms] / a["peer_ms"],
                      mib(a["fastest"]["act_bytes"]), a["peer_act"] / a["fastest"]["act_bytes"]))
    return o

md = ["# mtc against PyTorch: budget sweep and peers", "",
      "Threads %d%s (MTC_THREADS = torch.set_num_threads), median of %d steps, ILP --solver-time=%s; "
      "planner cost flags `%s`. act = bytes beyond params, inputs and optimizer state: mtc's "
      "measured high-water mark (MTC_CHECK=1) minus its module tensors plus its host zone; "
      "PyTorch's from profiler memory events (bench/peers.py). Whole run %.0f s%s." %
      (res["threads"], " (the peers and the plans timed again at %d)" % res["threads2"]
       if res.get("threads2") else "", res["steps"], res["ilp_time"], " ".join(res["cost"]), res["wall_s"],
       ", started %s on %d cores, load average %s before and %s after" % (res["date"], res["cores"],
       " ".join(res["load0"]), " ".join(res["load1"])) if "date" in res else ""), ""]
for name, m in res["models"].items():
    md += ["## " + name, "",
           "| who | budget | solver used | arena MiB | act MiB (measured) | modeled overhead | "
           "step ms (measured) | solve s | ILP gap |", "|---|---|---|---|---|---|---|---|---|"]
    if m.get("floor_pct"):
        md[-2:-2] = ["Smallest feasible budget %d%%; smallest where tso's plan is not swap-bound "
                     "%s%% (bisected). *swap-bound*: the plan swaps and its modeled "
                     "step is over %d%% slower (below the recompute-only floor the planner swaps "
                     "rather than fail; with copies priced at 1 MB/s that is a last resort); such "
                     "rows are kept out of the plots and the ratios." % (m["floor_pct"],
                     m.get("rc_floor_pct", "?"), SWAPBOUND), ""]
    for p in m["points"]:
        if not p["feasible"]:
            md.append("| mtc %s | %s | infeasible | | | | | | |" % (p["solver"], p["budget"]))
            continue
        md.append("| mtc %s | %s | %s | %.2f | %.2f | %s | %.1f | %s | %s |" %
                  (p["solver_asked"], p["budget"], p["solver"], mib(int(p["arena_bytes"])),
                   mib(p["act_bytes"]), p["overhead"] + (" swap-bound" if p.get("swapbound") else ""), p["step_ms"], p["solve_s"], p["ilp_gap"]))
    for q in m["peers"]:
        md.append("| torch %s%s | - | - | - | %.2f | - | %.1f | - | - |" %
                  (q["peer"], " (%d segments)" % q["segments"] if q["segments"] else "",
                   mib(q["act_bytes"]), q["ms"]))
    if m.get("peers2"):
        for q in m["peers2"]:
            md.append("| torch %s, %d threads | - | - | - | %.2f | - | %.1f | - | - |" %
                      (q["peer"], res["threads2"], mib(q["act_bytes"]), q["ms"]))
    md.append("")
    md += ratios(m["cmp"], "step_ms", res["threads"])
    if m.get("cmp2"):
        md += ratios(m["cmp2"], "step_ms2", res["threads2"])
    md.append("")
md += ["## Solver time against graph size (deep MLP, -D L=..., 75% budget, ILP limit 5 s, 60 s cap)", "",
       "| L | ops | solver | used | solve s | ILP gap | overhead |", "|---|---|---|---|---|---|---|"]
for e in scal:
    md.append("| %d | %s | %s | %s | %s | %s | %s |" % (e["L"], e.get("ops", "-"), e["solver"],
              e.get("used", "?"),
              e.get("solve_s", "timeout/failed"), e.get("gap", "-"), e.get("overhead", "-")))
# The short table for the README: one row per model.
sm = ["| model | threads | torch eager ms / act MiB | torch sqrt-ckpt ms / act MiB | torch per-layer ms / "
      "act MiB | mtc unplanned ms / act MiB | mtc least act (not swap-bound): ms / act MiB (solver, budget) | "
      "speed at sqrt-ckpt's memory | memory at eager's time |", "|---|---|---|---|---|---|---|---|---|"]
def row(name, m, threads, peers, c, ms):
    by = dict((q["peer"], q) for q in peers)
    pk = lambda q: "%.1f / %.2f" % (q["ms"], mib(q["act_bytes"])) if q else "-"
    ok = [p for p in m["points"] if p["feasible"] and not p.get("swapbound") and p.get(ms)]
    un = [p for p in ok if p["solver_asked"] == "none"]
    lo = min(ok, key=lambda p: (p["act_bytes"], p[ms])) if ok else None
    am = c.get("at_mem", {}).get("ratio")
    at = c.get("at_time", {})
    if at.get("ratio") is not None:
        tm = "%.2fx" % at["ratio"]
    elif at.get("fastest"):
        tm = "none as fast (fastest %.2fx eager's time)" % (at["fastest"][ms] / at["peer_ms"])
    else:
        tm = "-"
    return "| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
        name, threads, pk(by.get("eager")), pk(by.get("ckpt-sqrt")), pk(by.get("ckpt-layer")),
        "%.1f / %.2f" % (un[0][ms], mib(un[0]["act_bytes"])) if un else "-",
        "%.1f / %.2f (%s, %s)" % (lo[ms], mib(lo["act_bytes"]), lo["solver"], lo["budget"])
        if lo else "-", "%.2fx" % am if am is not None else "none within its memory", tm)

for name, m in res["models"].items():
    sm.append(row(name, m, res["threads"], m["peers"], m["cmp"], "step_ms"))
    if m.get("cmp2"):
        sm.append(row(name, m, res["threads2"], m["peers2"], m["cmp2"], "step_ms2"))
with open(os.path.join(OUT, "summary.md"), "w") as fp:
    fp.write("\n".join(sm) + "\n")
md[2:2] = sm + [""]
with open(os.path.join(OUT, "peers.md"), "w") as fp:
    fp.write("\n".join(md) + "\n")

for name, m in res["models"].items():
    ser = []
    for solver in SOLVERS:
        ps = [(mib(p["act_bytes"]), p["step_ms"]) for p in m["points"]
              if p.get("solver_asked") == solver and p["feasible"] and not p.get("swapbound")]
        ser.append(("mtc " + solver, ps, {}))
    ser.append(("torch (eager, sqrt, layer)", [(mib(q["act_bytes"]), q["ms"]) for q in m["peers"]],
                {"dash": True, "square": True}))
    svg.plot(os.path.join(OUT, "overhead-%s.svg" % name),
             "%s: measured step time against activation memory" % name,
             "activation memory, MiB (measured)", "step time, ms (median)", ser)
    ser = []
    for solver in SOLVERS[1:]:
        ps = [(float(p["budget"].rstrip("%")), 1 + float(p["overhead"].rstrip("%")) / 100)
              for p in m["points"] if p.get("solver_asked") == solver and p["feasible"] and
              not p.get("swapbound")]
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
