#!/usr/bin/python3
# cnn_twin.py: the convolutional examples (examples/resnet.tdsl, examples/mobilenet.tdsl) as mtc
# modules and as PyTorch twins, trained 5 steps from the same initial values (the module's, by
# mtc-run --steps 0 --save-params) on the same batch: batch norm in training mode (running
# statistics updated, and compared), dropout with mtc's mask (Philox4x32-10 as
# <mtc/mtc-ops.h> draws it, written again here with numpy). The losses must agree within
# 1e-5 relative; the final params and buffers are compared and printed. Exit 77 (skipped)
# without torch.
#
# Small configurations (-D: batch, width, image side) keep it to seconds and keep it well
# conditioned: a relu's input within rounding of 0 goes either way, and the steps after it
# differ by more than rounding (ResNet-18 at -D W=8 -D B=32 meets one 1.3e-7 from 0 in its first
# step: a gradient 6e-3 off in one channel, both sides right). The least distance met is printed.
#
# usage: cnn_twin.py MTC OUTDIR [MODEL ...]   (MODEL: resnet, mobilenet; default both)
import json, math, os, struct, subprocess, sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print("no PyTorch and numpy (%s)\n0 passed, 0 failed, 1 skipped" % e)
    sys.exit(77)

MTC, OUT = sys.argv[1], sys.argv[2]
RUN = os.path.join(os.path.dirname(MTC), "mtc-run")
SRC = os.environ.get("top_srcdir", ".")
STEPS = 5
torch.set_num_threads(1)


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
        out[name] = torch.frombuffer(bytearray(data[8 + n + a:8 + n + b]), dtype=dt).reshape(v["shape"]).clone()
    return out


# ---------- dropout's mask, as <mtc/mtc-ops.h> draws it ----------

def philox(c0, c1, c2, c3, k0, k1):
    """Word 0 of Philox4x32-10 of counters (uint64 arrays holding 32-bit values)."""
    M = np.uint64(0xFFFFFFFF)
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        h0, l0, h1, l1 = p0 >> np.uint64(32), p0 & M, p1 >> np.uint64(32), p1 & M
        c0, c1, c2, c3 = (h1 ^ c1 ^ k0) & M, l1, (h0 ^ c3 ^ k1) & M, l0
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M, (k1 + np.uint64(0xBB67AE85)) & M
    return c0


def dropout(x, p, key, step, seed=0):
    n = x.numel()
    i = np.arange(n, dtype=np.uint64)
    z = np.zeros(n, dtype=np.uint64)
    r = philox(i & np.uint64(0xFFFFFFFF), i >> np.uint64(32), z + np.uint64(key), z + np.uint64(step),
               seed & 0xFFFFFFFF, seed >> 32)
    u = (r >> np.uint64(8)).astype(np.float32) * np.float32(5.9604644775390625e-8)
    keep = torch.from_numpy(u >= np.float32(p)).reshape(x.shape)
    return torch.where(keep, x * torch.tensor(1.0 / (1.0 - p), dtype=torch.float32), torch.zeros((), dtype=torch.float32))


# ---------- the twins: the examples' tdsl, op for op ----------

# How near a relu's or a clip's input comes to a kink (0, or 6 for ReLU6): where it lies within
# float32 rounding of one, mtc and torch may take opposite sides (both right), and the steps
# after that differ by more than rounding. The test asks for a configuration that stays clear.
MARGIN = [float("inf")]


def kink(h, *at):
    for a in at:
        MARGIN[0] = min(MARGIN[0], (h.detach() - a).abs().min().item())
    return h


def relu(h):
    return F.relu(kink(h, 0.0))


def bn(P, h, g, b):
    return F.batch_norm(h, P[g + ".running_mean"], P[g + ".running_var"], P[g], P[b], training=True,
                        momentum=0.1, eps=1e-5)


def resnet(P, x, step):
    def block(h, w1, g1, b1, w2, g2, b2):
        t = relu(bn(P, F.conv2d(h, P[w1], padding=1), g1, b1))
        t = bn(P, F.conv2d(t, P[w2], padding=1), g2, b2)
        return relu(t + h)

    def down(h, w1, g1, b1, w2, g2, b2, ws, gs, bs):
        t = relu(bn(P, F.conv2d(h, P[w1], stride=2, padding=1), g1, b1))
        t = bn(P, F.conv2d(t, P[w2], padding=1), g2, b2)
        return relu(t + bn(P, F.conv2d(h, P[ws], stride=2), gs, bs))

    h = relu(bn(P, F.conv2d(x, P["w0"], padding=1), "g0", "b0"))
    h = block(h, "w1.0", "g1.0", "b1.0", "w1.1", "g1.1", "b1.1")
    h = block(h, "w1.2", "g1.2", "b1.2", "w1.3", "g1.3", "b1.3")
    for s in (2, 3, 4):
        h = down(h, "w%da" % s, "g%d.0" % s, "b%d.0" % s, "w%d.0" % s, "g%d.1" % s, "b%d.1" % s,
                 "w%ds" % s, "g%d.4" % s, "b%d.4" % s)
        h = block(h, "w%d.1" % s, "g%d.2" % s, "b%d.2" % s, "w%d.2" % s, "g%d.3" % s, "b%d.3" % s)
    return h.mean((2, 3)) @ P["fc"] + P["fcb"]


def mobilenet(P, x, step):
    def relu6(h):
        return torch.clamp(kink(h, 0.0, 6.0), 0, 6)

    def inv(h, k, e, s):
        t = relu6(bn(P, F.conv2d(h, P["e%d" % k]), "ge%d" % k, "be%d" % k))
        t = relu6(bn(P, F.conv2d(t, P["d%d" % k], stride=s, padding=1, groups=e), "gd%d" % k, "bd%d" % k))
        return bn(P, F.conv2d(t, P["p%d" % k]), "gp%d" % k, "bp%d" % k)

    h = relu6(bn(P, F.conv2d(x, P["w0"], padding=1), "g0", "b0"))
    h = relu6(bn(P, F.conv2d(h, P["d1"], padding=1, groups=32), "gd1", "bd1"))
    h = bn(P, F.conv2d(h, P["p1"]), "gp1", "bp1")
    h = inv(h, 2, 96, 1)
    h = h + inv(h, 3, 144, 1)
    h = inv(h, 4, 144, 2)
    h = h + inv(h, 5, 192, 1)
    h = inv(h, 6, 192, 2)
    h = h + inv(h, 7, 384, 1)
    h = relu6(bn(P, F.conv2d(h, P["wh"]), "gh", "bh"))
    return dropout(h.mean((2, 3)), 0.2, 0, step) @ P["fc"] + P["fcb"]


MODELS = {
    # model: (twin, -D defines, lr, momentum)
    "resnet": (resnet, ["-D", "B=8", "-D", "W=8", "-D", "S=16"], 0.005, 0.9),
    "mobilenet": (mobilenet, ["-D", "B=4", "-D", "S=8"], 0.01, 0.9),
}


def check(name):
    twin, defs, lr, mom = MODELS[name]
    tdsl = os.path.join(SRC, "examples", name + ".tdsl")
    so, p0, p5, inp = (os.path.join(OUT, name + s) for s in (".so", ".p0", ".p5", ".in"))
    subprocess.run([MTC, tdsl, *defs, "-o", so], check=True)
    subprocess.run([RUN, so, "--steps", "0", "--save-params", p0], check=True, stdout=subprocess.DEVNULL)
    P = st_read(p0)
    P0 = {k: v.clone() for k, v in P.items()}
    D = dict(d.split("=") for d in defs[1::2])
    B, S = int(D["B"]), int(D.get("S", 32))
    g = torch.Generator().manual_seed(18)
    x = torch.randn(B, 3, S, S, generator=g)
    y = torch.randint(0, 10, (B,), generator=g, dtype=torch.int32)
    st_write(inp, {"x": x, "y": y})
    out = subprocess.run([RUN, so, "--params", p0, "--inputs", inp, "--steps", str(STEPS), "--save-params", p5],
                         check=True, capture_output=True, text=True).stdout
    ml = [float(l.split()[3]) for l in out.splitlines() if l.startswith("step")]

    trained = [k for k in P if not k.endswith(("running_mean", "running_var", "dropout.step"))]
    for k in trained:
        P[k].requires_grad_(True)
    opt = torch.optim.SGD([P[k] for k in trained], lr=lr, momentum=mom)
    tl = []
    MARGIN[0] = float("inf")
    for s in range(1, STEPS + 1):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(twin(P, x, s), y.long())
        loss.backward()
        opt.step()
        tl.append(loss.item())
    # float("nan") compares false: a NaN loss must not pass for a small error
    rel = max((abs(a - b) / abs(b) if math.isfinite(a) else math.inf) for a, b in zip(ml, tl))
    Q = st_read(p5)
    # params: the difference against the torch twin's update (p5 - p0), but for the betas whose
    # true gradient is 0 (MobileNet's projections: a per-channel constant that the next batch
    # norm takes out), which train on rounding noise; running means against the running
    # standard deviation (a mean that is exactly 0 is noise too), running variances relative.
    dp = max((((Q[k] - P[k].detach()).abs().max() / (P[k].detach() - P0[k]).abs().max().clamp(min=1e-30)).item(), k)
             for k in trained if not (name == "mobilenet" and k.startswith("bp")))
    db = max(max((((Q[k] - P[k]).abs().max() / P[k.replace("mean", "var")].sqrt().max()).item(), k)
                  for k in P if k.endswith("running_mean")),
             max((((Q[k] - P[k]).abs() / P[k]).max().item(), k) for k in P if k.endswith("running_var")))
    ok = len(ml) == STEPS and rel <= 1e-5
    print("%s %s: mtc %s" % ("ok" if ok else "FAIL", name, " ".join("%.9g" % v for v in ml)))
    print("   %s: torch %s" % (name, " ".join("%.9g" % v for v in tl)))
    print("   %s: losses within %.2e relative (bound 1e-5); after %d steps params within %.2e of the "
          "update (%s), running statistics within %.2e (%s); inputs of relu/clip "
          "at least %.2e from a kink" % (name, rel, STEPS, *dp, *db, MARGIN[0]))
    if not ok and MARGIN[0] < 1e-6:
        print("   %s: a relu's or clip's input came within %.2e of its kink, where float32 rounding "
              "picks the side: try other -D values or another input seed" % (name, MARGIN[0]))
    return ok


names = sys.argv[3:] or list(MODELS)
good = sum(check(n) for n in names)
print("%d passed, %d failed" % (good, len(names) - good))
sys.exit(0 if good == len(names) else 1)
