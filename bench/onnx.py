#!/usr/bin/python3
# onnx.py (make bench-onnx): the CIFAR-sized ResNet-18 of examples/onnx, exported from
# torchvision and imported by mtc, against the same module in PyTorch 1.13 eager, without and
# with checkpoint_sequential (ceil(sqrt(n)) segments over its top-level layers): step time (SGD
# with momentum, median of STEPS steps) and activation memory, mtc unplanned and planned at
# 50% of its unconstrained arena. Writes OUT/onnx.md.
# usage: /usr/bin/python3 bench/onnx.py      environment: MTC, MTC_RUN, top_srcdir, OUT,
#   MTC_THREADS (threads of mtc and torch, default 1), BENCH_BATCH (default 16),
#   BENCH_STEPS (timed steps, default 5)
# Activation memory ("act", docs/README's definition): bytes a step holds beyond params,
# inputs and optimizer state. mtc: the measured high-water mark (MTC_CHECK=1) minus the module
# tensors plus the host zone. PyTorch: one step under torch.profiler(profile_memory=True), each
# op's self bytes summed in time order, the largest running sum (bench/peers.py's method).
import math, os, re, subprocess, sys, tempfile, time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential

SRC = os.environ.get("top_srcdir", ".")
MTC = os.environ.get("MTC", "./mtc")
RUN = os.environ.get("MTC_RUN", os.path.join(os.path.dirname(MTC) or ".", "mtc-run"))
OUT = os.environ.get("OUT", os.path.join(SRC, "bench", "results"))
THREADS = int(os.environ.get("MTC_THREADS", "1"))
B = int(os.environ.get("BENCH_BATCH", "16"))
STEPS = int(os.environ.get("BENCH_STEPS", "5"))
LR, MOM = 0.01, 0.9
# The planner told about this CPU, as bench/sweep.py does: copies priced so that it recomputes
# rather than swaps to the host (on a CPU the same RAM).
COST = ["--target-flops=3e9", "--target-bw=10e9", "--copy-bw=1e6", "--copy-latency=1e-3",
        "--launch=5e-6"]
sys.path.insert(0, os.path.join(SRC, "examples", "onnx"))
from export import resnet18_cifar  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(a):
    a = sorted(a)
    return a[len(a) // 2] if len(a) % 2 else (a[len(a) // 2 - 1] + a[len(a) // 2]) / 2


def mib(b):
    return b / 2 ** 20


# ---------- PyTorch ----------

def torch_peer(ckpt):
    torch.manual_seed(0)
    m = resnet18_cifar()
    m.train()
    for mod in m.modules():     # a checkpointed segment may start with the stem's ReLU
        if isinstance(mod, torch.nn.ReLU):
            mod.inplace = False
    layers = [m.conv1, m.bn1, m.relu, m.layer1, m.layer2, m.layer3, m.layer4, m.avgpool,
              torch.nn.Flatten(1), m.fc]
    seq = torch.nn.Sequential(*layers)
    segs = max(2, math.ceil(math.sqrt(len(layers))))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(B, 3, 32, 32, generator=g), torch.randint(0, 10, (B,), generator=g)
    opt = torch.optim.SGD(m.parameters(), lr=LR, momentum=MOM)

    def step():
        opt.zero_grad(set_to_none=True)
        out = checkpoint_sequential(seq, segs, x.requires_grad_(True), preserve_rng_state=False) \
            if ckpt else seq(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    ms = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        step()
        ms.append((time.perf_counter() - t0) * 1e3)
    act = torch.profiler.ProfilerActivity.CPU
    with torch.profiler.profile(activities=[act], profile_memory=True) as prof:
        step()
    ev = [(e.time_range.start if e.self_cpu_memory_usage > 0 else e.time_range.end,
           e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage]
    cur = top = 0
    for _, b in sorted(ev):
        cur += b
        top = max(top, cur)
    return median(ms), top, segs


# ---------- mtc ----------

def mtc_point(tdsl, budget, tmp):
    so = os.path.join(tmp, "r18-%s.so" % (budget or "none").rstrip("%"))
    cmd = [MTC, tdsl, "-D", "B=%d" % B, "-o", so] + COST + (["--mem-budget=" + budget] if budget else [])
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        log("mtc failed:", r.stderr[-500:])
        return None
    compile_s = time.time() - t0
    hdr = open(so[:-3] + ".h").read()
    state = sum(int(re.search(r"%s \.+ (\d+)" % k, hdr).group(1)) for k in
                ("params", "optimizer state", r"inputs \(\+ padding\)"))
    bufm = re.search(r"buffers \.+ (\d+)", hdr)
    state += int(bufm.group(1)) if bufm else 0
    host = int(re.search(r"host zone \.+ (\d+)", hdr).group(1))
    env = dict(os.environ, MTC_THREADS=str(THREADS))
    r = subprocess.run([RUN, so, "--steps", str(STEPS + 2)], capture_output=True, text=True, env=env)
    ms = re.search(r"step_ms (\S+)", r.stdout)
    r2 = subprocess.run([RUN, so, "--steps", "1"], capture_output=True, text=True,
                        env=dict(env, MTC_CHECK="1"))
    peak = re.search(r"peak_bytes (\d+)", r2.stdout)
    if not ms or not peak:
        log("mtc-run failed:", r.stderr[-300:], r2.stderr[-300:])
        return None
    plan = re.search(r"arena \.+ (\d+)", hdr)
    return {"ms": float(ms.group(1)), "act": int(peak.group(1)) - state + host,
            "arena": int(plan.group(1)), "compile_s": compile_s}


def main():
    torch.set_num_threads(THREADS)
    os.environ["MTC_THREADS"] = str(THREADS)
    tmp = tempfile.mkdtemp(prefix="mtc-bench-onnx-")
    onnx = os.path.join(tmp, "resnet18.onnx")
    r = subprocess.run([sys.executable, os.path.join(SRC, "examples", "onnx", "export.py"),
                        "--batch", str(B), "-o", onnx], capture_output=True, text=True)
    if r.returncode:
        log(r.stderr)
        return 1
    tdsl = os.path.join(tmp, "resnet18.tdsl")
    with open(os.path.join(SRC, "examples", "onnx", "resnet18.tdsl")) as f:
        open(tdsl, "w").write(f.read())
    t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = open("/proc/loadavg").read().split()[:3]
    rows = []
    for budget in (None, "50%"):
        p = mtc_point(tdsl, budget, tmp)
        log("mtc", budget or "unplanned", p)
        rows.append(("mtc " + ("unplanned" if not budget else "at " + budget), p))
    eager, ck = torch_peer(False), torch_peer(True)
    log("torch eager", eager, "checkpoint_sequential", ck)
    load1 = open("/proc/loadavg").read().split()[:3]
    o = ["# The imported ResNet-18 against PyTorch", "",
         "CIFAR-sized torchvision ResNet-18 (examples/onnx/export.py: 3x3 stem, no max pool, 10 "
         "classes), batch %d, SGD lr %g momentum %g, %d thread%s, median of %d steps; %s, load "
         "average %s before, %s after. act: activation memory (bytes beyond params, inputs, "
         "buffers and optimizer state; bench/onnx.py says how each is measured)." %
         (B, LR, MOM, THREADS, "s" if THREADS > 1 else "", STEPS, t0, " ".join(load0), " ".join(load1)), "",
         "| who | step ms | act MiB | arena MiB |", "| --- | --- | --- | --- |",
         "| torch eager | %.1f | %.1f | |" % (eager[0], mib(eager[1])),
         "| torch checkpoint_sequential (%d segments) | %.1f | %.1f | |" % (ck[2], ck[0], mib(ck[1]))]
    for who, p in rows:
        o.append("| %s | %s | %s | %s |" % (who, "%.1f" % p["ms"] if p else "failed",
                                            "%.1f" % mib(p["act"]) if p else "",
                                            "%.1f" % mib(p["arena"]) if p else ""))
    un, half = rows[0][1], rows[1][1]
    if un and half:
        o += ["", "mtc at 50%%: %.2fx eager's step time with %.2fx less activation memory; against "
              "checkpoint_sequential: %.2fx its time, %.2fx less memory; unplanned mtc: %.2fx eager's "
              "time." % (half["ms"] / eager[0], eager[1] / max(half["act"], 1), half["ms"] / ck[0],
                         ck[1] / max(half["act"], 1), un["ms"] / eager[0])]
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "onnx.md"), "w") as f:
        f.write("\n".join(o) + "\n")
    print("\n".join(o))
    return 0


if __name__ == "__main__":
    sys.exit(main())
