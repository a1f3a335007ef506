#!/usr/bin/python3
# check.py: imported ONNX models against PyTorch's results (what tests/onnx/models.py wrote):
# the forward outputs of `mtc NAME.onnx` modules within 1e-5, and the losses of 5 training
# steps of NAME.tdsl (which imports NAME.onnx) within 1e-5 relative, on the interpreter, as a
# module, and as a module planned at 50% of its unconstrained arena (or, where that cannot be
# met, at the smallest budget the planner says it reaches); where NAME.buffers.st is given,
# batch norm's running statistics after the steps within 1e-5. No PyTorch needed.
#
# The forward and planned modules are built at -O0 (the same bits as mtc's default -O2, a third
# of the compile), the unplanned one at -O2, unless MTC_CFLAGS is set; with MTC_QUICK=1 (CI's
# sanitizer run) the unplanned module is left out.
#
# usage: check.py DIR WORKDIR [NAME...]    (environment: MTC, MTC_RUN; default ./mtc, ./mtc-run)
# prints one line per failed check and "N passed, N failed".
import json
import os
import re
import struct
import subprocess
import sys

TOL = 1e-5


def st_read(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        fmt = "<%d%s" % ((e - s) // 4, "i" if v["dtype"] == "I32" else "f")
        out[k] = struct.unpack(fmt, b[8 + n + s:8 + n + e])
    return out


def run(cmd, cflags=None):
    env = None
    if cflags is not None and "MTC_CFLAGS" not in os.environ:
        env = dict(os.environ, MTC_CFLAGS=cflags)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return p.returncode, p.stdout


def losses(text):
    return [float(l.split()[3]) for l in text.splitlines() if l.startswith("step ")]


class Count:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s %s" % (what, detail))
        return ok


def main():
    if len(sys.argv) < 3:
        print("usage: check.py DIR WORKDIR [NAME...]", file=sys.stderr)
        return 2
    d, w = sys.argv[1], sys.argv[2]
    mtc = os.environ.get("MTC", "./mtc")
    mrun = os.environ.get("MTC_RUN", os.path.join(os.path.dirname(mtc), "mtc-run"))
    names = sys.argv[3:] or sorted(f[:-5] for f in os.listdir(d) if f.endswith(".onnx") and
                                   os.path.exists(os.path.join(d, f[:-5] + ".loss")))
    quick = bool(os.environ.get("MTC_QUICK"))    # CI's sanitizer run
    os.makedirs(w, exist_ok=True)
    c = Count()
    for n in names:
        p = os.path.join(d, n)
        with open(p + ".args") as f:
            args = f.read().split()
        # forward: the graph alone as a module, against PyTorch's outputs
        so, got = os.path.join(w, n + ".so"), os.path.join(w, n + ".fwd.st")
        rc, out = run([mtc, p + ".onnx", *args, "-o", so], "-O0")
        if c.check(rc == 0, n + ": mtc NAME.onnx", out):
            rc, out = run([mrun, so, "--forward", "--inputs", p + ".in.st", "--save-outputs", got])
            if c.check(rc == 0, n + ": forward", out):
                ref, res = st_read(p + ".out.st"), st_read(got)
                for k in ref:
                    scale = max([1.0] + [abs(v) for v in ref[k]])
                    err = max(abs(a - b) for a, b in zip(ref[k], res.get(k, []))) if k in res else None
                    c.check(err is not None and len(res[k]) == len(ref[k]) and err <= TOL * scale,
                            n + ": forward output " + k, "max error %s" % err)
        # training: the tdsl model that imports the graph, 5 steps, against PyTorch's losses
        with open(p + ".loss") as f:
            want = [float(l) for l in f]
        tso = os.path.join(w, n + "_train.so")
        pso = os.path.join(w, n + "_plan.so")
        # (what, the build, its C flags, the run): only the unplanned module at mtc's own
        # -O2, left out under MTC_QUICK; the planned one at -O0 (the same bits, a third of the
        # compile), unless MTC_CFLAGS says otherwise
        runs = [("interpreter", None, None, [mrun, p + ".tdsl"])] + \
            ([] if quick else [("module", [mtc, p + ".tdsl", "-o", tso], None, [mrun, tso])]) + \
            [("module at 50%", [mtc, p + ".tdsl", "--mem-budget=50%", "-o", pso], "-O0", [mrun, pso])]
        if os.path.exists(p + ".buffers.st"):
            # batch norm's running statistics after the steps, against PyTorch's
            got = os.path.join(w, n + ".after.st")
            rc, out = run([mrun, p + ".tdsl", "--inputs", p + ".train.st", "--steps", str(len(want)),
                           "--save-params", got])
            if c.check(rc == 0, n + ": interpreter: save the params and buffers", out):
                ref, res = st_read(p + ".buffers.st"), st_read(got)
                for k in ref:
                    err = max(abs(a - b) for a, b in zip(ref[k], res[k])) if k in res else None
                    c.check(err is not None and err <= TOL * max([1.0] + [abs(v) for v in ref[k]]),
                            "%s: buffer %s after the steps" % (n, k), "max error %s" % err)
        for what, build, cflags, go in runs:
            if build:
                rc, out = run(build, cflags)
                floor = re.search(r"--mem-budget=(\d+)% or more", out)
                if rc and floor and "--mem-budget=50%" in build:
                    what = "module at the floor, %s%%" % floor.group(1)
                    rc, out = run([a if a != "--mem-budget=50%" else "--mem-budget=%s%%" % floor.group(1)
                                   for a in build], cflags)
                if not c.check(rc == 0, "%s: %s: build" % (n, what), out):
                    continue
            rc, out = run(go + ["--inputs", p + ".train.st", "--steps", str(len(want))])
            got = losses(out) if rc == 0 else []
            ok = len(got) == len(want) and all(abs(a - b) <= TOL * abs(b) for a, b in zip(got, want))
            c.check(ok, "%s: %s: losses" % (n, what), "got %s, PyTorch %s %s" % (got, want, out if rc else ""))
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 0 if c.failed == 0 and c.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
