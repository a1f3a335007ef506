#!/usr/bin/env python3
"""calibrate.py: the CUDA cost model's constants from held traces (MTC_TRACE_HOLD), and the
modeled step against the measured one.

    bench/calibrate.py DIR [--mtc MTC] [--fit]

DIR is a `tests/cuda/gpu.sh run` directory: per module NAME its held trace NAME.hold.json
(every kernel's GPU time without the launch gaps, and the host's time to issue it), its
untraced median step NAME.time (`mtc-run --steps`), plan.txt (the budgets and -D options).
Each unbudgeted module's kernels are matched, in order, with the ops of its step (the
schedule of `mtc --emit=schedule`), whose FLOPs and bytes mtc says (two schedules with
the cost model's rates set so that each op's time is its FLOPs, then its bytes). --fit
prints the constants fitted per class of op (cuBLAS GEMM, convolution, other kernels):
the host's time to issue one, the GPU's fixed time, its FLOP rate and its bandwidth, then
each module's step under a pipeline model with those constants (the host issues op after
op; the GPU runs an op once the host has issued it and the op before it ended) beside the
measured step. The constants come from single kernels, not from the steps they are checked
against. Without --fit: each module's measured step beside mtc's modeled one.
"""
import json
import os
import re
import statistics
import subprocess
import sys


def load_trace(path):
    with open(path) as f:
        t = json.load(f)
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    ev.sort(key=lambda e: e["args"]["seq"])
    return t["otherData"], ev


def field(text, key):
    """The number after key on the last line that has it (None if none does)."""
    for line in text.splitlines()[::-1]:
        w = line.split()
        if key in w:
            return float(w[w.index(key) + 1])
    return None


def step_ms(path):
    """The median step of `mtc-run --steps N` (its last line: ... step_ms T ...)."""
    with open(path) as f:
        return field(f.read(), "step_ms")


def schedule(mtc, src, flags):
    """[(kind, modeled ms)] of the step's ops, from --emit=schedule."""
    out = subprocess.run([mtc, src, "--target=cuda", "--emit=schedule", "-o", "-"] + flags,
                         check=True, capture_output=True, text=True).stdout
    ops = []
    for line in out.splitlines():
        m = re.match(r"\s*(\d+) (\w+)\s+(\w+)\s.*start ([0-9.]+) end ([0-9.]+)", line)
        if m:
            ops.append((m.group(3), float(m.group(5)) - float(m.group(4))))
        elif line.startswith("# func") and ops:
            break
    return ops


def op_sizes(mtc, src, flags):
    """[(kind, FLOPs, bytes)] per op: with no launch cost, each op's modeled time is its FLOPs
    at 1e9 FLOP/s (memory infinitely fast), then its bytes at 1e9 bytes/s."""
    base = flags + ["--launch=0", "--copy-latency=0"]
    f = schedule(mtc, src, base + ["--target-flops=1e9", "--target-bw=1e30"])
    b = schedule(mtc, src, base + ["--target-flops=1e30", "--target-bw=1e9"])
    return [(k, 1e6 * d, 1e6 * e) for (k, d), (_, e) in zip(f, b)]


def pure(spans, meta):
    """The spans the hold kept back to back: all of them when the host issued the whole step
    within the hold; else those issued before the host first stalled (the driver's queue full,
    about 340 kernels with their two events each): the later ones ran as issued."""
    if meta.get("hold") == "held":
        return spans
    out, prev = [], 0.0
    for s in spans:
        a = s["args"]
        if a["issue_at"] - prev > 1e5 or a["issue"] > 1e5:
            break
        out.append(s)
        prev = a["issue_at"] + a["issue"]
    return out[:-1]


def align(spans, ops):
    """Each compute-stream span with the op that launched it: the next op of its kind (the ops
    skipped ran inside a fused group or launch nothing)."""
    out, j = [], 0
    for s in spans:
        kind = re.sub(r"^k\d+_", "", s["name"].replace(" (cuBLAS)", ""))
        k = j
        while k < len(ops) and ops[k][0] != kind:
            k += 1
        if k == len(ops):
            return None
        out.append((s, ops[k]))
        j = k + 1
    return out


def klass(kind, blas=True):
    if kind == "matmul" and blas:
        return "gemm"
    if kind.startswith("conv2d"):
        return kind
    return "kernel"


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fit(rows):
    """The constants, each a median over the kernels that show it: the host's time for an op
    that launches a kernel and for one that calls cuBLAS; the GPU's fixed time of a kernel (those under 64 KiB) and of
    a GEMM (under 1e7 FLOPs); its bandwidth over the kernels of 16 MiB and more; the FLOP
    rate of GEMMs of 1e9 FLOPs and more, and of each convolution of 1e8 and more."""
    c = {}
    k = [r for r in rows if r["class"] == "kernel"]
    g = [r for r in rows if r["class"] == "gemm"]
    c["issue"] = med([r["host"] for r in k]) * 1e-6
    c["issue_gemm"] = med([r["host"] for r in g]) * 1e-6
    c["fixed"] = med([r["dur"] for r in k if r["bytes"] < 65536]) * 1e-6
    c["fixed_gemm"] = med([r["dur"] for r in g if r["flops"] < 1e7]) * 1e-6
    c["bw"] = med([r["bytes"] / (r["dur"] * 1e-6 - c["fixed"]) for r in k if r["bytes"] >= 1 << 24])
    c["flops_gemm"] = med([r["flops"] / (r["dur"] * 1e-6 - c["fixed_gemm"]) for r in g
                           if r["flops"] >= 1e9])
    for kind in ("conv2d", "conv2d_dx", "conv2d_dw"):
        c["flops_" + kind] = med([r["flops"] / (r["dur"] * 1e-6 - c["fixed"]) for r in rows
                                  if r["kind"] == kind and r["flops"] >= 1e8])
    c["flops_conv"] = med([r["flops"] / (r["dur"] * 1e-6 - c["fixed"]) for r in rows
                           if r["kind"].startswith("conv2d") and r["flops"] >= 1e8])
    return c


def options(c):
    """mtc's cost-model options (passes/target.c) for the constants: its pipeline form."""
    return [f"--host-issue={c['issue']:.4g}", f"--host-issue-gemm={c['issue_gemm']:.4g}",
            f"--launch={c['fixed']:.4g}", f"--target-bw={c['bw']:.4g}",
            f"--gemm-flops={c['flops_gemm']:.4g}", f"--conv-flops={c['flops_conv']:.4g}"]


def modeled_ms(mtc, src, flags):
    out = subprocess.run([mtc, src, "--target=cuda", "--emit=schedule", "-o", "-"] + flags,
                         check=True, capture_output=True, text=True).stdout
    return field(out, "modeled_ms")


def pipeline(ops, c):
    """The step as the host issues it and the GPU runs it: op i starts on the GPU once the
    one before it ended and the host has issued it (the host issues op after op, never
    waiting for the GPU)."""
    host = gpu = 0.0
    for kind, fl, by in ops:
        cl = klass(kind)
        if cl == "gemm":
            t = c["fixed_gemm"] + max(fl / c["flops_gemm"], by / c["bw"])
        elif cl.startswith("conv2d"):
            t = c["fixed"] + max(fl / c["flops_" + cl], by / c["bw"])
        else:
            t = c["fixed"] + by / c["bw"]
        host += c["issue_gemm"] if cl == "gemm" else c["issue"]
        gpu = max(gpu, host) + t
    return gpu


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    d = a[0]
    mtc = a[a.index("--mtc") + 1] if "--mtc" in a else "./mtc"
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    plan = {}
    with open(os.path.join(d, "plan.txt")) as f:
        for line in f:
            w = line.split()
            plan[w[0]] = w[1:]
    rows, mods = [], []
    print("| module | kernels held | GPU busy, held (ms) | measured step (ms) | modeled now (ms) |")
    print("| --- | --- | --- | --- | --- |")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".hold.json"):
            continue
        mod = name[:-len(".hold.json")]
        if re.search(r"-b(35)?$", mod):
            continue
        flags = []
        if mod in ("big", "r18"):
            src = os.path.join(top, "examples/transformer.tdsl" if mod == "big" else "bench/resnet18.tdsl")
            flags = [x for x in plan.get(mod, []) if x != "budget"][:-1] + ["--arch=sm_90"]
        else:
            src = os.path.join(top, "examples", mod + ".tdsl")
        meta, ev = load_trace(os.path.join(d, name))
        spans = pure([e for e in ev if e["tid"] == 0], meta)
        ops = op_sizes(mtc, src, flags)
        al = align(spans, ops)
        if al is None:
            print(f"{mod}: the trace's kernels do not match the step's ops", file=sys.stderr)
            continue
        prev = 0.0
        for s, (kind, fl, by) in al:
            # the host's time for the op: from the end of the last one's issue to the end of
            # its own (the generated code's work beside the launch included)
            end = s["args"]["issue_at"] + s["args"]["issue"]
            rows.append({"mod": mod, "class": klass(kind, "cuBLAS" in s["name"]), "kind": kind,
                         "flops": fl, "bytes": by, "dur": s["dur"], "issue": s["args"]["issue"],
                         "host": end - prev})
            prev = end
        t = os.path.join(d, mod + ".time")
        ms = step_ms(t if os.path.exists(t) else os.path.join(d, mod + ".out"))
        now = modeled_ms(mtc, src, flags)
        mods.append((mod, ops, ms, src, flags))
        print(f"| {mod} | {len(spans)} of {len(ops)} ops | {sum(s['dur'] for s in spans) / 1e3:.3f} | "
              f"{ms} | {now:.3f} |")
    if "--fit" not in a:
        return
    c = fit(rows)
    print()
    print(f"| constant ({len(rows)} kernels) | measured |")
    print("| --- | --- |")
    for k, v in c.items():
        print(f"| {k} | {v:.4g} |")
    print()
    opts = options(c)
    print(f"mtc with them: `{' '.join(opts)}`")
    print()
    print("| module | pipeline model (ms) | model / measured | mtc with the options (ms) | mtc / measured | measured (ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mod, ops, ms, src, flags in mods:
        p = pipeline(ops, c) * 1e3
        m = modeled_ms(mtc, src, flags + opts)
        print(f"| {mod} | {p:.3f} | {p / ms:.2f} | {m:.3f} | {m / ms:.2f} | {ms} |")


if __name__ == "__main__":
    main()
