# bench.py (make bench-backend): the examples' training step, mtc module against PyTorch eager
# on the CPU, side by side in one run: same model (sizes read from the .tdsl, -D overrides
# applied to both), batch, optimizer and thread count; and the measured cost of a 50% budget
# (the planned module against the unplanned one, same run).
#
# usage: /usr/bin/python3 bench.py [--rounds R] [--steps N] [--threads 1,2] [--configs C,...]
#   C is MODEL or MODEL:NAME=INT:NAME=INT (e.g. mlp:B=2048); default: the examples as they
#   are and larger variants. Each round runs, for every config and thread count, the
#   unplanned module, the planned one and torch, interleaved; each reports the median step
#   of N steps. The table gives, per config and thread count, the range over rounds of each
#   time and of the ratios taken within a round, the ratio of the fastest medians (best), and
#   the load average before and after.
# environment: MTC, MTC_RUN (paths), top_srcdir, PYTHON (for the torch child), BENCH_ILP_TIME
#   (--solver-time of the planned builds, default 10).
#   torch mode (the child): bench.py torch MODEL THREADS STEPS TDSL [NAME=INT ...]
import os, re, shutil, subprocess, sys, tempfile, time

def consts(tdsl, over):
    # The model's integer consts as written (const NAME = INT;), then the overrides.
    k = {}
    for m in re.finditer(r"^const\s+(\w+)\s*=\s*(-?\d+)\s*;", open(tdsl).read(), re.M):
        k[m.group(1)] = int(m.group(2))
    k.update(over)
    return k

def median(a):
    a = sorted(a)
    return a[len(a) // 2] if len(a) % 2 else (a[len(a) // 2 - 1] + a[len(a) // 2]) / 2

def torch_step(name, threads, steps, K):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
    from torchmodels import build
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    m = build(name, lambda n, v: K[n])
    first, head, opt = m["first"], m["head"], m["opt"]
    seq = torch.nn.Sequential(*m["layers"])
    loss = lambda: head(seq(first()))

    def step():
        opt.zero_grad(set_to_none=True)
        l = loss()
        l.backward()
        opt.step()
    for _ in range(3):
        step()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    return median(ms)

def load():
    return open("/proc/loadavg").read().split()[0]

def main():
    a = sys.argv[1:]
    if a and a[0] == "torch":
        name, threads, steps, tdsl = a[1], int(a[2]), int(a[3]), a[4]
        over = dict((s.split("=")[0], int(s.split("=")[1])) for s in a[5:])
        print("%.3f" % torch_step(name, threads, steps, consts(tdsl, over)))
        return
    opt = {"--rounds": "3", "--steps": "20", "--threads": "1,2",
           "--configs": "mlp,mlp:B=2048,transformer,transformer:L=8,skipnet,resnet:B=32,mobilenet:B=8"}
    while a:
        if a[0] not in opt or len(a) < 2:
            sys.exit("usage: bench.py [--rounds R] [--steps N] [--threads 1,2] [--configs C,...]")
        opt[a[0]] = a[1]
        a = a[2:]
    src = os.environ.get("top_srcdir", ".")
    mtc = os.environ.get("MTC", "./mtc")
    run = os.environ.get("MTC_RUN", os.path.join(os.path.dirname(mtc) or ".", "mtc-run"))
    py = os.environ.get("PYTHON", "/usr/bin/python3")
    rounds, steps = int(opt["--rounds"]), int(opt["--steps"])
    threads = [int(t) for t in opt["--threads"].split(",")]
    tmp = tempfile.mkdtemp(prefix="mtc-bench-")
    cfgs = []
    for c in opt["--configs"].split(","):
        name, *defs = c.split(":")
        tdsl = os.path.join(src, "examples", name + ".tdsl")
        D = sum([["-D", d] for d in defs], [])
        so, bso = os.path.join(tmp, c + ".so"), os.path.join(tmp, c + ".b.so")
        subprocess.run([mtc, tdsl, "-o", so] + D, check=True)
        # 50% of the unconstrained arena, or the smallest budget the planner meets above it.
        st = ["--solver-time=" + os.environ.get("BENCH_ILP_TIME", "10")]
        r = subprocess.run([mtc, tdsl, "--mem-budget=50%", "-o", bso] + st + D, stderr=subprocess.PIPE, text=True)
        pct = 50
        if r.returncode:
            m = re.search(r"--mem-budget=(\d+)% or more", r.stderr)
            pct = int(m.group(1)) if m else None
            if pct is None or pct >= 100 or subprocess.run([mtc, tdsl, "--mem-budget=%d%%" % pct, "-o", bso] + st + D).returncode:
                pct = None
        cfgs.append((c, name, tdsl, defs, so, bso if pct else None, pct))

    def mtc_ms(so, t):
        env = dict(os.environ, MTC_THREADS=str(t))
        out = subprocess.run([run, so, "--steps", str(steps + 3)], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        return float(re.search(r"step_ms (\S+)", out).group(1))

    res = {}
    load0 = load()
    for r in range(rounds):
        for c, name, tdsl, defs, so, bso, pct in cfgs:
            for t in threads:
                m = mtc_ms(so, t)
                b = mtc_ms(bso, t) if bso else None
                out = subprocess.run([py, __file__, "torch", name, str(t), str(steps), tdsl] + defs,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                tt = float(out.stdout) if out.returncode == 0 else None
                res.setdefault((c, t), []).append((m, b, tt))
                print("round %d %-16s threads %d: mtc %.2f ms, 50%% budget %s ms, torch %s ms (load %s)"
                      % (r + 1, c, t, m, "%.2f" % b if b else "-", "%.2f" % tt if tt else "-", load()),
                      file=sys.stderr, flush=True)
    load1 = load()
    shutil.rmtree(tmp, ignore_errors=True)

    def rng(v, f="%.1f"):
        v = [x for x in v if x is not None]
        if not v:
            return "-"
        lo, hi = min(v), max(v)
        return f % lo if f % lo == f % hi else (f % lo) + "-" + (f % hi)

    def best(v, a, b):
        x, y = [r[a] for r in v if r[a]], [r[b] for r in v if r[b]]
        return "%.2f" % (min(x) / min(y)) if x and y else "-"

    print("step time, median of %d steps, %d rounds, %s; load average %s before, %s after"
          % (steps, rounds, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load0, load1))
    # best: the ratio of the fastest medians over the rounds, the figure least hurt by load.
    print("| model | threads | mtc ms | torch ms | mtc/torch | best | budget | planned ms | planned/unplanned | best |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c, name, tdsl, defs, so, bso, pct in cfgs:
        for t in threads:
            v = res[(c, t)]
            print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c.replace(":", " -D "), t, rng([x[0] for x in v]), rng([x[2] for x in v]),
                rng([x[0] / x[2] if x[2] else None for x in v], "%.2f"), best(v, 0, 2),
                "%d%%" % pct if pct else "-", rng([x[1] for x in v]),
                rng([x[1] / x[0] if x[1] else None for x in v], "%.2f"), best(v, 1, 0)))

main()
