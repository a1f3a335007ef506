# peers.py: the examples in PyTorch eager (CPU, float32), as the peers of mtc: no checkpointing,
# checkpoint_sequential at ceil(sqrt(n)) segments, and every layer checkpointed.
# usage: /usr/bin/python3 peers.py MODEL THREADS STEPS [NAME=INT ...]   (MODEL: mlp, skipnet,
# transformer; NAME=INT overrides a const as mtc -D does). Prints one JSON line per peer:
#   {"peer", "ms" (median step), "act_bytes" (peak bytes allocated during a step), "state_bytes"}
# Memory method: a step runs once more under torch.profiler with profile_memory=True; each
# op's self bytes (allocations at its start, net frees at its end; frees outside ops as
# [memory] events) are summed in time order, and the largest running sum is the
# step's peak of bytes allocated beyond what lived before it (activations, gradients,
# temporaries: grads are freed by zero_grad(set_to_none=True), so they count, as in mtc's
# arena). state_bytes: params, optimizer state and inputs, which live across steps.
import json, math, sys, time
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

name, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
over = dict((a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[4:])
torch.set_num_threads(threads)
torch.manual_seed(0)

def K(n, v):
    return over.get(n, v)

def P(*shape, std=0.0, fill=None):
    t = torch.full(shape, fill) if fill is not None else torch.randn(shape) * std
    return t.requires_grad_()

class Fn(torch.nn.Module):
    # A layer as a module of its params (checkpoint_sequential wants modules).
    def __init__(s, f, ps):
        super().__init__()
        s.f, s.ps = f, ps
    def forward(s, x):
        return s.f(x, *s.ps)

if name == "mlp":
    B, IN, D, L, C = K("B", 1024), K("IN", 64), K("D", 64), K("L", 16), K("C", 10)
    w0, b0, wo = P(IN, D, std=0.177), P(D, fill=0.0), P(D, C, std=0.1)
    ws = [(P(D, D, std=0.177), P(D, fill=0.0)) for _ in range(L)]
    x, y = torch.randn(B, IN), torch.randint(0, C, (B,))
    dense = lambda h, w, b: F.relu(h @ w + b)
    layers = [Fn(dense, p) for p in ws]
    def head(h):
        return F.cross_entropy(h @ wo, y)
    first = lambda: dense(x, w0, b0)
    ps = [w0, b0, wo] + [t for p in ws for t in p]
    opt = torch.optim.SGD(ps, lr=0.05, momentum=0.9)
    inputs = [x, y]
elif name == "skipnet":
    B, IN, D, N, O = K("B", 1024), K("IN", 64), K("D", 64), K("N", 8), K("O", 8)
    win, bin_, wmix, wout = P(IN, D, std=0.1), P(D, fill=0.0), P(2 * D, D, std=0.05), P(D, O, std=0.1)
    ws = [(P(D, D, std=0.05), P(D, fill=0.0)) for _ in range(N)]
    x, y = torch.randn(B, IN), torch.randn(B, O)
    layers = [Fn(lambda h, w, b: h + torch.tanh(h @ w + b), p) for p in ws]
    h0 = None
    def first():
        global h0
        h0 = torch.sigmoid(x @ win + bin_)
        return h0
    def head(h):
        return F.mse_loss(F.relu(torch.cat([h, h0], 1) @ wmix) @ wout, y)
    ps = [win, bin_, wmix, wout] + [t for p in ws for t in p]
    opt = torch.optim.SGD(ps, lr=0.01)
    inputs = [x, y]
else:
    B, S, D, H, V, L = K("B", 16), K("S", 64), K("D", 64), K("H", 4), K("V", 128), K("L", 4)
    HD, FF = D // H, 4 * D
    emb, pos = P(V, D, std=0.02), P(S, D, std=0.02)
    gf, bf, hw = P(D, fill=1.0), P(D, fill=0.0), P(D, V, std=0.02)
    blocks = [(P(D, fill=1.0), P(D, fill=0.0), P(D, D, std=0.02), P(D, D, std=0.02),
               P(D, D, std=0.02), P(D, D, std=0.02), P(D, fill=1.0), P(D, fill=0.0),
               P(D, FF, std=0.02), P(FF, fill=0.0), P(FF, D, std=0.02), P(D, fill=0.0))
              for _ in range(L)]
    tok, tgt = torch.randint(0, V, (B, S)), torch.randint(0, V, (B, S))
    mask = torch.triu(torch.full((S, S), -1e9), 1)
    def attn(x, wq, wk, wv, wo):
        q = (x @ wq).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        k = (x @ wk).reshape(B, S, H, HD).permute(0, 2, 3, 1)
        v = (x @ wv).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        p = torch.softmax(q @ k * 0.25 + mask, dim=-1)
        return (p @ v).permute(0, 2, 1, 3).reshape(B, S, D) @ wo
    def block(x, g1, b1, wq, wk, wv, wo, g2, b2, w1, c1, w2, c2):
        x = x + attn(F.layer_norm(x, (D,), g1, b1), wq, wk, wv, wo)
        return x + F.gelu(F.layer_norm(x, (D,), g2, b2) @ w1 + c1, approximate="tanh") @ w2 + c2
    layers = [Fn(block, p) for p in blocks]
    first = lambda: F.embedding(tok, emb) + pos
    def head(x):
        return F.cross_entropy((F.layer_norm(x, (D,), gf, bf) @ hw).reshape(B * S, V), tgt.reshape(-1))
    ps = [emb, pos, gf, bf, hw] + [t for p in blocks for t in p]
    opt = torch.optim.Adam(ps, lr=0.001)
    inputs = [tok, tgt, mask]

n = len(layers)
seq = torch.nn.Sequential(*layers)
segs = max(2, math.ceil(math.sqrt(n)))

# The first layer's output needs a grad (its params do), so the reentrant checkpoint of
# torch 1.13 passes gradients through every segment.
def eager():
    return head(seq(first()))
def sqrtn():
    return head(checkpoint_sequential(seq, segs, first(), preserve_rng_state=False))
def perlayer():
    h = first()
    for f in layers:
        h = checkpoint(f, h, preserve_rng_state=False)
    return head(h)

def run(loss):
    opt.zero_grad(set_to_none=True)
    l = loss()
    l.backward()
    opt.step()
    return l

def peak(loss):
    act = torch.profiler.ProfilerActivity.CPU
    with torch.profiler.profile(activities=[act], profile_memory=True) as prof:
        run(loss)
    # An op's own (self) bytes: allocations placed at its start, net frees at its end.
    ev = [(e.time_range.start if e.self_cpu_memory_usage > 0 else e.time_range.end,
           e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage]
    cur = top = 0
    for _, b in sorted(ev):
        cur += b
        top = max(top, cur)
    return top

def median(a):
    a = sorted(a)
    return a[len(a) // 2] if len(a) % 2 else (a[len(a) // 2 - 1] + a[len(a) // 2]) / 2

for peer, loss in (("eager", eager), ("ckpt-sqrt", sqrtn), ("ckpt-layer", perlayer)):
    torch.manual_seed(0)
    for _ in range(2):
        run(loss)
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run(loss)
        ms.append((time.perf_counter() - t0) * 1e3)
    st = sum(p.numel() * 4 for p in ps) + sum(t.numel() * t.element_size() for t in inputs)
    st += sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
              if torch.is_tensor(v))
    print(json.dumps({"peer": peer, "segments": segs if peer == "ckpt-sqrt" else None,
                      "layers": n, "ms": round(median(ms), 3), "act_bytes": peak(loss),
                      "state_bytes": st}), flush=True)
