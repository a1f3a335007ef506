# torchmodels.py: the examples in PyTorch (CPU, float32), written once for the benchmarks that
# hold mtc against it (bench/peers.py, tests/backend/bench.py).
# build(name, K) -> dict: layers (each a module of its params, as checkpoint_sequential wants),
# first() (the input to the first layer), head(h) (the loss from the last layer's output), ps
# (params), opt (the optimizer the .tdsl names), inputs. K(NAME, default) gives the model's
# consts (the .tdsl's, -D overrides applied by the caller).
import torch
import torch.nn.functional as F

class Fn(torch.nn.Module):
    def __init__(s, f, ps):
        super().__init__()
        s.f, s.ps = f, ps
    def forward(s, x):
        return s.f(x, *s.ps)

def P(*shape, std=0.0, fill=None):
    t = torch.full(shape, fill) if fill is not None else torch.randn(shape) * std
    return t.requires_grad_()

def mlp(K):
    B, IN, D, L, C = K("B", 1024), K("IN", 64), K("D", 64), K("L", 16), K("C", 10)
    w0, b0, wo = P(IN, D, std=0.177), P(D, fill=0.0), P(D, C, std=0.1)
    ws = [(P(D, D, std=0.177), P(D, fill=0.0)) for _ in range(L)]
    x, y = torch.randn(B, IN), torch.randint(0, C, (B,))
    dense = lambda h, w, b: F.relu(h @ w + b)
    ps = [w0, b0, wo] + [t for p in ws for t in p]
    return dict(layers=[Fn(dense, p) for p in ws], first=lambda: dense(x, w0, b0),
                head=lambda h: F.cross_entropy(h @ wo, y), ps=ps,
                opt=torch.optim.SGD(ps, lr=0.05, momentum=0.9), inputs=[x, y])

def skipnet(K):
    B, IN, D, N, O = K("B", 1024), K("IN", 64), K("D", 64), K("N", 8), K("O", 8)
    win, bin_, wmix, wout = P(IN, D, std=0.1), P(D, fill=0.0), P(2 * D, D, std=0.05), P(D, O, std=0.1)
    ws = [(P(D, D, std=0.05), P(D, fill=0.0)) for _ in range(N)]
    x, y = torch.randn(B, IN), torch.randn(B, O)
    h0 = []                 # the skip connection, from first() to head()
    def first():
        h0[:] = [torch.sigmoid(x @ win + bin_)]
        return h0[0]
    def head(h):
        return F.mse_loss(F.relu(torch.cat([h, h0[0]], 1) @ wmix) @ wout, y)
    ps = [win, bin_, wmix, wout] + [t for p in ws for t in p]
    return dict(layers=[Fn(lambda h, w, b: h + torch.tanh(h @ w + b), p) for p in ws],
                first=first, head=head, ps=ps, opt=torch.optim.SGD(ps, lr=0.01), inputs=[x, y])

def transformer(K):
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
    def head(x):
        return F.cross_entropy((F.layer_norm(x, (D,), gf, bf) @ hw).reshape(B * S, V), tgt.reshape(-1))
    ps = [emb, pos, gf, bf, hw] + [t for p in blocks for t in p]
    return dict(layers=[Fn(block, p) for p in blocks], first=lambda: F.embedding(tok, emb) + pos,
                head=head, ps=ps, opt=torch.optim.Adam(ps, lr=0.001), inputs=[tok, tgt, mask])

def build(name, K):
    return {"mlp": mlp, "skipnet": skipnet}.get(name, transformer)(K)
