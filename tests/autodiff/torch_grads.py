#!/usr/bin/python3
# torch_grads.py: the examples' gradients from mtc's autodiff against PyTorch's (a benchmark-
# style check, not a CI test: it needs python3-torch).
#
# Each example is trained for one step of sgd(lr = 1) by `mtc-run` (the reference
# interpreter), so the gradient is p0 - p1; PyTorch computes the same loss from the same params
# and inputs in float32 and its autograd gives its gradient. Per tensor it prints
# max|g_mtc - g_torch| / max|g_torch|; p0 - p1 loses about 6e-8 * |p| / |g| to rounding.
#
# usage: tests/autodiff/torch_grads.py [MTC-RUN [EXAMPLES-DIR]]
import json, os, re, struct, subprocess, sys, tempfile

import torch
import torch.nn.functional as F

RUN = sys.argv[1] if len(sys.argv) > 1 else "./mtc-run"
EX = sys.argv[2] if len(sys.argv) > 2 else "examples"


def st_write(path, tensors):
    hdr, off, blobs = {}, 0, []
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        dt = "F32" if t.dtype == torch.float32 else "I32"
        hdr[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_read(path):
    with open(path, "rb") as f:
        data = f.read()
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


def mlp(p, i):
    h = torch.relu(i["x"] @ p["w0"] + p["b0"])
    for k in range(8):
        h = torch.relu(h @ p[f"w.{k}"] + p[f"b.{k}"])
    return F.cross_entropy(h @ p["wo"], i["y"].long())


def skipnet(p, i):
    h0 = torch.sigmoid(i["x"] @ p["win"] + p["bin"])
    h = h0
    for k in range(6):
        h = h + torch.tanh(h @ p[f"w.{k}"] + p[f"b.{k}"])
    u = torch.cat([h, h0], 1)
    return F.mse_loss(torch.relu(u @ p["wmix"]) @ p["wout"], i["y"])


def transformer(p, i):
    B, S, D, H, V = 4, 16, 64, 4, 128
    HD = D // H
    x = p["emb"][i["tok"].long()] + p["pos"]
    for k in range(2):
        a = F.layer_norm(x, (D,), p[f"g1.{k}"], p[f"b1.{k}"], 1e-5)
        q = (a @ p[f"wq.{k}"]).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        kk = (a @ p[f"wk.{k}"]).reshape(B, S, H, HD).permute(0, 2, 3, 1)
        v = (a @ p[f"wv.{k}"]).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        s = torch.softmax(q @ kk * 0.25 + i["mask"], dim=-1)
        o = (s @ v).permute(0, 2, 1, 3).reshape(B, S, D)
        x = x + o @ p[f"wo.{k}"]
        m = F.layer_norm(x, (D,), p[f"g2.{k}"], p[f"b2.{k}"], 1e-5)
        x = x + F.gelu(m @ p[f"w1.{k}"] + p[f"c1.{k}"], approximate="tanh") @ p[f"w2.{k}"] + p[f"c2.{k}"]
    logits = F.layer_norm(x, (D,), p["gf"], p["bf"], 1e-5) @ p["head"]
    return F.cross_entropy(logits.reshape(-1, V), i["tgt"].reshape(-1).long())


def inputs(name, g):
    if name == "mlp":
        return {"x": torch.randn(32, 784, generator=g), "y": torch.randint(0, 10, (32,), generator=g, dtype=torch.int32)}
    if name == "skipnet":
        return {"x": torch.randn(32, 64, generator=g), "y": torch.randn(32, 8, generator=g)}
    causal = torch.triu(torch.full((16, 16), -1e4), 1)
    return {"tok": torch.randint(0, 128, (4, 16), generator=g, dtype=torch.int32),
            "tgt": torch.randint(0, 128, (4, 16), generator=g, dtype=torch.int32), "mask": causal}


def main():
    worst = 0
    for name, fn in (("mlp", mlp), ("skipnet", skipnet), ("transformer", transformer)):
        src = open(os.path.join(EX, name + ".tdsl")).read()
        src = re.sub(r"train loss with .*;", "train loss with sgd(lr = 1.0);", src)
        with tempfile.TemporaryDirectory() as d:
            model, pf, inf, out = (os.path.join(d, n) for n in (name + ".tdsl", "p.st", "i.st", "o.st"))
            open(model, "w").write(src)
            # the initial params: the model's own initializers, as mtc-run draws them
            subprocess.run([RUN, model, "--steps", "0", "--save-params", pf], check=True,
                           stdout=subprocess.DEVNULL)
            p0 = st_read(pf)
            g = torch.Generator().manual_seed(1)
            # move the zero/one-initialised params off their initial values
            p0 = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in p0.items()}
            inp = inputs(name, g)
            st_write(pf, p0)
            st_write(inf, inp)
            r = subprocess.run([RUN, model, "--params", pf, "--inputs", inf, "--steps", "1",
                                "--save-params", out], check=True, capture_output=True, text=True)
            loss_mtc = float(re.search(r"step 1 loss (\S+)", r.stdout).group(1))
            p1 = st_read(out)
        p = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
        loss = fn(p, inp)
        loss.backward()
        print(f"{name}: loss mtc {loss_mtc:.9g} torch {loss.item():.9g} "
              f"rel {abs(loss_mtc - loss.item()) / abs(loss.item()):.2e}")
        errs = []
        for k in p0:
            gm = p0[k].double() - p1[k].double()
            gt = p[k].grad.double()
            e = (gm - gt).abs().max().item() / max(gt.abs().max().item(), 1e-12)
            errs.append((e, k))
        errs.sort(reverse=True)
        print(f"  {len(errs)} gradients, worst {errs[0][1]} {errs[0][0]:.2e}, median {errs[len(errs) // 2][0]:.2e}")
        worst = max(worst, errs[0][0])
    print(f"worst relative gradient error {worst:.2e}")
    return 0 if worst < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
