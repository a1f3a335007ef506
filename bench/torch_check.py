#!/usr/bin/python3
# torch_check.py: cross-check mtc-run's losses against PyTorch for the same params and inputs.
#
# For each case it writes random inputs, lets mtc-run save the model's initial params, trains
# 5 steps with mtc-run (--params, --inputs) and the same model written in PyTorch with the
# same optimizer, and compares the losses step by step. Needs numpy and torch (Debian's
# python3-torch); no safetensors package: the format is read and written here.
#
# usage: bench/torch_check.py [--mtc-run PATH] [--steps N] [--tol REL] [--keep DIR]
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def st_read(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    hdr = json.loads(buf[8:8 + n])
    data = buf[8 + n:]
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        dt = {"F32": np.float32, "I32": np.int32}[t["dtype"]]
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(t["shape"]).copy()
    return out


def st_write(path, tensors):
    hdr, off, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}[a.dtype]
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def mtc_losses(run, model, defines, params, inputs, steps):
    cmd = [run, model, "--params", params, "--inputs", inputs, "--steps", str(steps)]
    for d in defines:
        cmd += ["-D", d]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    losses = [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", out, re.M)]
    summary = [l for l in out.splitlines() if l.startswith("peak_bytes")]
    return losses, summary[0] if summary else ""


def save_initial(run, model, defines, path):
    cmd = [run, model, "--steps", "0", "--save-params", path]
    for d in defines:
        cmd += ["-D", d]
    subprocess.run(cmd, check=True, capture_output=True)


# ---------- the models, as the .tdsl files write them ----------

def mlp_loss(p, x, y, L):
    h = F.relu(x @ p["w0"] + p["b0"])
    for i in range(L):
        h = F.relu(h @ p["w.%d" % i] + p["b.%d" % i])
    return F.cross_entropy(h @ p["wo"], y.long())


def skipnet_loss(p, x, y, N):
    h0 = torch.sigmoid(x @ p["win"] + p["bin"])
    h = h0
    for i in range(N):
        h = h + torch.tanh(h @ p["w.%d" % i] + p["b.%d" % i])
    u = torch.cat([h, h0], dim=1)
    return F.mse_loss(F.relu(u @ p["wmix"]) @ p["wout"], y)


def transformer_loss(p, tok, tgt, mask, c):
    B, S, D, H, L = c["B"], c["S"], c["D"], c["H"], c["L"]
    HD = D // H

    def attention(x, i):
        q = (x @ p["wq.%d" % i]).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        k = (x @ p["wk.%d" % i]).reshape(B, S, H, HD).permute(0, 2, 3, 1)
        v = (x @ p["wv.%d" % i]).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        a = torch.softmax(q @ k * 0.25 + mask, dim=-1)
        o = (a @ v).permute(0, 2, 1, 3).reshape(B, S, D)
        return o @ p["wo.%d" % i]

    def ln(x, g, b):
        return F.layer_norm(x, (D,), p[g], p[b], eps=1e-5)

    x = F.embedding(tok.long(), p["emb"]) + p["pos"]
    for i in range(L):
        x = x + attention(ln(x, "g1.%d" % i, "b1.%d" % i), i)
        h = ln(x, "g2.%d" % i, "b2.%d" % i)
        x = x + (F.gelu(h @ p["w1.%d" % i] + p["c1.%d" % i], approximate="tanh") @ p["w2.%d" % i]
                 + p["c2.%d" % i])
    logits = ln(x, "gf", "bf") @ p["head"]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1).long())


def torch_losses(params, loss_fn, make_opt, steps):
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = make_opt(list(p.values()))
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(p)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def case(args, tmp, name, model, defines, make_inputs, loss_fn, make_opt):
    params, inputs = os.path.join(tmp, name + ".params"), os.path.join(tmp, name + ".inputs")
    save_initial(args.mtc_run, model, defines, params)
    ins = make_inputs()
    st_write(inputs, ins)
    ours, summary = mtc_losses(args.mtc_run, model, defines, params, inputs, args.steps)
    t = {k: torch.tensor(v) for k, v in ins.items()}
    theirs = torch_losses(st_read(params), lambda p: loss_fn(p, t), make_opt, args.steps)
    worst = 0.0
    print("%s (-D %s)" % (name, " ".join(defines)))
    print("  step  mtc-run          torch            rel. diff")
    for k, (a, b) in enumerate(zip(ours, theirs)):
        rel = abs(a - b) / max(abs(b), 1e-30)
        worst = max(worst, rel)
        print("  %4d  %-15.9g  %-15.9g  %.2e" % (k + 1, a, b, rel))
    print("  max relative difference %.2e; %s" % (worst, summary))
    ok = len(ours) == args.steps and worst <= args.tol
    if not ok:
        print("  FAIL: tolerance %.0e" % args.tol)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mtc-run", default=os.path.join(TOP, "mtc-run"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--keep", help="keep the tensor files in this directory")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    tmp = args.keep or tempfile.mkdtemp(prefix="torch-check.")
    os.makedirs(tmp, exist_ok=True)
    ok = True

    ex = lambda name: os.path.join(TOP, "examples", name + ".tdsl")
    pin = lambda c: ["%s=%d" % kv for kv in c.items()]

    # The MLP with SGD + momentum (examples/mlp.tdsl; every const pinned with -D).
    c = {"B": 1024, "IN": 64, "D": 64, "L": 16, "C": 10}
    ok &= case(args, tmp, "mlp", ex("mlp"), pin(c),
               lambda: {"x": rng.standard_normal((c["B"], c["IN"])).astype(np.float32),
                        "y": rng.integers(0, c["C"], c["B"]).astype(np.int32)},
               lambda p, t: mlp_loss(p, t["x"], t["y"], c["L"]),
               lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9))

    # The residual MLP regressor with plain SGD, concat and mse (examples/skipnet.tdsl).
    k = {"B": 1024, "IN": 64, "D": 64, "N": 8, "O": 8}
    ok &= case(args, tmp, "skipnet", ex("skipnet"), pin(k),
               lambda: {"x": rng.standard_normal((k["B"], k["IN"])).astype(np.float32),
                        "y": rng.standard_normal((k["B"], k["O"])).astype(np.float32)},
               lambda p, t: skipnet_loss(p, t["x"], t["y"], k["N"]),
               lambda ps: torch.optim.SGD(ps, lr=0.01))

    # Transformer blocks with Adam (examples/transformer.tdsl), a causal mask; the model
    # scales scores by 0.25, so the head width D / H stays 16.
    for L in (4, 1):
        t = {"B": 16, "S": 64, "D": 64, "H": 4, "L": L, "V": 128}
        mask = np.triu(np.full((t["S"], t["S"]), -1e9, np.float32), 1)
        ok &= case(args, tmp, "transformer", ex("transformer"), pin(t),
                   lambda: {"tok": rng.integers(0, t["V"], (t["B"], t["S"])).astype(np.int32),
                            "tgt": rng.integers(0, t["V"], (t["B"], t["S"])).astype(np.int32),
                            "mask": mask},
                   lambda p, u: transformer_loss(p, u["tok"], u["tgt"], u["mask"], t),
                   lambda ps: torch.optim.Adam(ps, lr=0.001))
    print("all agree" if ok else "DISAGREEMENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
