#!/usr/bin/python3
# twin.py: training with mtc against PyTorch 1.13 doing the same: 10 steps of tests/train/
# twin.tdsl with a learning-rate schedule (linear warm-up then cosine, replayed from a file and
# by name), AdamW with weight decay, SGD with momentum and weight decay, gradient clipping by
# global norm that triggers, and accumulation over micro-batches. Losses of every step and the
# final params must agree within 1e-5 relative (a param tensor: max |mtc - torch| / max |torch|),
# for the interpreter (mtc-run MODEL.tdsl) and the mt3000 module (with and without a budget).
#
# usage: twin.py MTC MTC-RUN SRCDIR OUTDIR; ends with "N passed, N failed".
import json
import math
import os
import re
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F

MTC, RUN, SRC, OUT = sys.argv[1:5]
STEPS, TOL = 10, 1e-5
npass = nfail = 0


def check(ok, what):
    global npass, nfail
    if ok:
        npass += 1
        print("ok " + what)
    else:
        nfail += 1
        print("FAIL: " + what)


def st_read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    out = {}
    for name, v in hdr.items():
        if name == "__metadata__":
            continue
        a, b = v["data_offsets"]
        dt = torch.float32 if v["dtype"] == "F32" else torch.int32
        out[name] = torch.frombuffer(bytearray(data[8 + n + a:8 + n + b]), dtype=dt).reshape(v["shape"])
    return out


def st_write(path, tensors):
    hdr, off, blobs = {}, 0, []
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        hdr[name] = {"dtype": "F32" if t.dtype == torch.float32 else "I32", "shape": list(t.shape),
                     "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def model(p, x, y):
    """twin.tdsl in PyTorch."""
    B = x.shape[0]
    h = F.gelu(x @ p["w0"] + p["b0"], approximate="tanh")
    h = F.layer_norm(h.reshape(B, 4, 4), (4,), p["g"], p["bt"], 1e-5)
    logits = h @ p["w1"]
    return F.cross_entropy(logits.reshape(-1, 5), y.reshape(-1).long())


def cosine(k, base, warm=3, total=STEPS):
    """HuggingFace's get_cosine_schedule_with_warmup: step k (from 1) at base * f(k - 1)."""
    s = k - 1
    if s < warm:
        return base * s / max(1, warm)
    return base * max(0.0, 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm))))


def torch_run(p0, x, y, opt_kind, base, clip, micro):
    p = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
    if opt_kind == "adamw":
        opt = torch.optim.AdamW(list(p.values()), lr=base, weight_decay=0.1)
    else:
        opt = torch.optim.SGD(list(p.values()), lr=base, momentum=0.9, weight_decay=0.01)
    losses, clipped = [], 0
    for k in range(1, STEPS + 1):
        for gr in opt.param_groups:
            gr["lr"] = cosine(k, base)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        n = x.shape[0] // micro
        for m in range(micro):       # PyTorch's accumulation loop: the mean of the batch
            loss = model(p, x[m * n:(m + 1) * n], y[m * n:(m + 1) * n]) / micro
            loss.backward()
            total += loss.item()
        norm = torch.nn.utils.clip_grad_norm_(list(p.values()), clip)
        clipped += float(norm) > clip
        opt.step()
        losses.append(total)
    return losses, {k: v.detach() for k, v in p.items()}, clipped


def mtc_run(args):
    r = subprocess.run([RUN] + args, capture_output=True, text=True)
    if r.returncode:
        print(r.stderr)
        return None
    return [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]


def compare(what, losses, params, tl, tp):
    if losses is None or len(losses) != STEPS:
        check(False, what + ": mtc-run failed")
        return
    # float("nan") compares false: a NaN loss must not pass for a small error
    el = max((abs(a - b) / abs(b) if math.isfinite(a) else math.inf) for a, b in zip(losses, tl))
    ep = max((params[k].double() - tp[k].double()).abs().max().item() /
             tp[k].double().abs().max().item() for k in tp)
    check(el <= TOL and ep <= TOL,
          "%s: %d losses within %.1e (worst %.2e), params within %.1e (worst %.2e)" %
          (what, STEPS, TOL, el, TOL, ep))


def main():
    os.makedirs(OUT, exist_ok=True)
    base = open(os.path.join(SRC, "tests/train/twin.tdsl")).read()
    g = torch.Generator().manual_seed(5)
    x = torch.randn(8, 12, generator=g)
    y = torch.randint(0, 5, (8, 4), generator=g, dtype=torch.int32)
    inp = os.path.join(OUT, "inputs.st")
    st_write(inp, {"x": x, "y": y})
    for kind, lr, clip, train in (
            ("adamw", 0.01, 0.5, "adamw(lr = 0.01, weight_decay = 0.1, clip_norm = 0.5)"),
            ("sgd", 0.05, 0.3, "sgd(lr = 0.05, momentum = 0.9, weight_decay = 0.01, clip_norm = 0.3)")):
        src = os.path.join(OUT, kind + ".tdsl")
        open(src, "w").write(re.sub(r"train loss with .*;", "train loss with %s;" % train, base))
        sched = os.path.join(OUT, kind + ".lr")
        open(sched, "w").write("".join("%.17g\n" % cosine(k, lr) for k in range(1, STEPS + 1)))
        p0f = os.path.join(OUT, kind + ".p0")
        subprocess.run([RUN, src, "--steps", "0", "--save-params", p0f], check=True,
                       stdout=subprocess.DEVNULL)
        p0 = st_read(p0f)
        for micro in (1, 4):
            tl, tp, clipped = torch_run(p0, x, y, kind, lr, clip, micro)
            check(clipped >= STEPS // 2, "%s micro %d: clipping triggers (%d of %d steps)" %
                  (kind, micro, clipped, STEPS))
            mb = ["--micro-batches=%d" % micro] if micro > 1 else []
            runs = [("interpreter", src, [])]
            for budget in ([], ["--mem-budget=80%"]):
                so = os.path.join(OUT, "%s-%d%s.so" % (kind, micro, "-b" if budget else ""))
                r = subprocess.run([MTC, src, "-o", so] + mb + budget, capture_output=True, text=True)
                if r.returncode:
                    check(False, "%s: mtc %s" % (so, r.stderr.strip()))
                    continue
                runs.append(("module" + (" " + budget[0] if budget else ""), so, []))
            for name, target, extra in runs:
                pf = os.path.join(OUT, "%s-%d.params" % (kind, micro))
                for how in ("file", "cosine:3:%d" % STEPS):
                    ls = mtc_run([target, "--params", p0f, "--inputs", inp, "--steps", str(STEPS),
                                  "--lr-schedule", sched if how == "file" else how,
                                  "--save-params", pf] + (mb if target == src else []) + extra)
                    compare("%s micro %d %s, lr schedule %s" % (kind, micro, name, how), ls,
                            st_read(pf) if ls else None, tl, tp)
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
