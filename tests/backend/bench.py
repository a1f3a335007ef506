# bench.py: the examples' training step in PyTorch (CPU, float32), timed as mtc-run times
# modules: median milliseconds of STEPS steps on one fixed batch after 3 warm-up steps.
# usage: python3 bench.py MODEL THREADS STEPS   (MODEL: mlp, skipnet, transformer)
import sys, time
import torch
import torch.nn.functional as F

name, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)

def P(*shape, std=0.02, zero=False, one=False):
    t = torch.zeros(shape) if zero else torch.ones(shape) if one else torch.randn(shape) * std
    return t.requires_grad_()

if name == "mlp":
    B, IN, D, L, C = 32, 784, 256, 8, 10
    ps = [P(IN, D), P(D, zero=True)] + sum([[P(D, D, std=0.05), P(D, zero=True)] for _ in range(L)], []) + [P(D, C)]
    x, y = torch.randn(B, IN), torch.randint(0, C, (B,))
    def loss():
        h = F.relu(x @ ps[0] + ps[1])
        for i in range(L):
            h = F.relu(h @ ps[2 + 2 * i] + ps[3 + 2 * i])
        return F.cross_entropy(h @ ps[-1], y)
    opt = torch.optim.SGD(ps, lr=0.05, momentum=0.9)
elif name == "skipnet":
    B, IN, D, N, O = 32, 64, 128, 6, 8
    ps = [P(IN, D, std=0.1), P(D, zero=True)] + sum([[P(D, D, std=0.05), P(D, zero=True)] for _ in range(N)], []) + [P(2 * D, D, std=0.05), P(D, O, std=0.1)]
    x, y = torch.randn(B, IN), torch.randn(B, O)
    def loss():
        h0 = torch.sigmoid(x @ ps[0] + ps[1])
        h = h0
        for i in range(N):
            h = h + torch.tanh(h @ ps[2 + 2 * i] + ps[3 + 2 * i])
        u = torch.cat([h, h0], 1)
        return F.mse_loss(F.relu(u @ ps[-2]) @ ps[-1], y)
    opt = torch.optim.SGD(ps, lr=0.01)
else:
    B, S, D, H, L, V = 4, 16, 64, 4, 2, 128
    HD, FF = D // H, 4 * D
    emb, pos, gf, bf, head = P(V, D), P(S, D), P(D, one=True), P(D, zero=True), P(D, V)
    blocks = [[P(D, one=True), P(D, zero=True), P(D, D), P(D, D), P(D, D), P(D, D),
               P(D, one=True), P(D, zero=True), P(D, FF), P(FF, zero=True), P(FF, D), P(D, zero=True)] for _ in range(L)]
    ps = [emb, pos, gf, bf, head] + sum(blocks, [])
    tok, tgt, mask = torch.randint(0, V, (B, S)), torch.randint(0, V, (B, S)), torch.randn(S, S)
    def attn(x, wq, wk, wv, wo):
        q = (x @ wq).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        k = (x @ wk).reshape(B, S, H, HD).permute(0, 2, 3, 1)
        v = (x @ wv).reshape(B, S, H, HD).permute(0, 2, 1, 3)
        p = torch.softmax(q @ k * 0.25 + mask, dim=-1)
        return (p @ v).permute(0, 2, 1, 3).reshape(B, S, D) @ wo
    def loss():
        x = F.embedding(tok, emb) + pos
        for g1, b1, wq, wk, wv, wo, g2, b2, w1, c1, w2, c2 in blocks:
            x = x + attn(F.layer_norm(x, (D,), g1, b1), wq, wk, wv, wo)
            x = x + F.gelu(F.layer_norm(x, (D,), g2, b2) @ w1 + c1, approximate="tanh") @ w2 + c2
        return F.cross_entropy((F.layer_norm(x, (D,), gf, bf) @ head).reshape(B * S, V), tgt.reshape(-1))
    opt = torch.optim.Adam(ps, lr=0.001)

def step():
    opt.zero_grad()
    l = loss()
    l.backward()
    opt.step()
    return l

for _ in range(3):
    step()
ms = []
for _ in range(steps):
    t0 = time.perf_counter()
    step()
    ms.append((time.perf_counter() - t0) * 1e3)
ms.sort()
print("%.3f" % (ms[len(ms) // 2] if len(ms) % 2 else (ms[len(ms) // 2 - 1] + ms[len(ms) // 2]) / 2))
