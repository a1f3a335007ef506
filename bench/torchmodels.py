# torchmodels.py: the examples in PyTorch (CPU, float32), written once for the benchmarks that
# hold mtc against it (bench/peers.py, tests/backend/bench.py).
# build(name, K) -> dict: layers (each a module of its params, as checkpoint_sequential wants),
# first() (the input to the first layer), head(h) (the loss from the last layer's output), ps
# (params), opt (the optimizer the .tdsl names), inputs, bufs (buffers: batch norm's running
# statistics; absent where none). K(NAME, default) gives the model's
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

def bn(h, g, b, rm, rv):
    return F.batch_norm(h, rm, rv, g, b, training=True, momentum=0.1, eps=1e-5)

def BN(c):
    # gamma, beta (trained), running mean and variance (buffers: not trained, updated in place)
    return [P(c, fill=1.0), P(c, fill=0.0), torch.zeros(c), torch.ones(c)]

def conv(co, ci, k):
    return P(co, ci, k, k, std=(2.0 / (co * k * k)) ** 0.5)

def resnet(K):
    # examples/resnet.tdsl: ResNet-18 for SxS images, basic blocks, strided 1x1 shortcuts
    B, C, S, W = K("B", 2), K("K", 10), K("S", 32), K("W", 64)
    stem = [conv(W, 3, 3)] + BN(W)
    def block(h, w1, g1, b1, m1, v1, w2, g2, b2, m2, v2):
        t = F.relu(bn(F.conv2d(h, w1, padding=1), g1, b1, m1, v1))
        return F.relu(bn(F.conv2d(t, w2, padding=1), g2, b2, m2, v2) + h)
    def down(h, w1, g1, b1, m1, v1, w2, g2, b2, m2, v2, ws, gs, bs, ms, vs):
        t = F.relu(bn(F.conv2d(h, w1, stride=2, padding=1), g1, b1, m1, v1))
        t = bn(F.conv2d(t, w2, padding=1), g2, b2, m2, v2)
        return F.relu(t + bn(F.conv2d(h, ws, stride=2), gs, bs, ms, vs))
    layers, ps, c = [], stem[:3], W
    for s in range(4):
        co = W << s
        for k in range(2):
            if s and not k:
                p = [conv(co, c, 3)] + BN(co) + [conv(co, co, 3)] + BN(co) + [conv(co, c, 1)] + BN(co)
                layers.append(Fn(down, p))
            else:
                p = [conv(co, co, 3)] + BN(co) + [conv(co, co, 3)] + BN(co)
                layers.append(Fn(block, p))
            ps += [t for t in p if t.requires_grad]
            c = co
    bufs = [t for f in [stem] + [l.ps for l in layers] for t in f if not t.requires_grad]
    bound = (1.0 / c) ** 0.5
    fc, fcb = (torch.empty(c, C).uniform_(-bound, bound).requires_grad_(),
               torch.empty(C).uniform_(-bound, bound).requires_grad_())
    ps += [fc, fcb]
    x, y = torch.randn(B, 3, S, S), torch.randint(0, C, (B,))
    return dict(layers=layers, first=lambda: F.relu(bn(F.conv2d(x, stem[0], padding=1), *stem[1:])),
                head=lambda h: F.cross_entropy(h.mean((2, 3)) @ fc + fcb, y), ps=ps,
                opt=torch.optim.SGD(ps, lr=0.005, momentum=0.9), inputs=[x, y], bufs=bufs)

def mobilenet(K):
    # examples/mobilenet.tdsl: inverted residuals (1x1 expansion, 3x3 depthwise, 1x1 projection)
    B, C, S = K("B", 4), K("K", 10), K("S", 32)
    relu6 = lambda h: torch.clamp(h, 0, 6)
    stem = [conv(32, 3, 3)] + BN(32) + [conv(32, 1, 3)] + BN(32) + [conv(16, 32, 1)] + BN(16)
    def first():
        h = relu6(bn(F.conv2d(x, stem[0], padding=1), *stem[1:5]))
        h = relu6(bn(F.conv2d(h, stem[5], padding=1, groups=32), *stem[6:10]))
        return bn(F.conv2d(h, stem[10]), *stem[11:15])
    def inv(s, res):
        def f(h, we, ge, be, me, ve, wd, gd, bd, md, vd, wp, gp, bp, mp, vp):
            t = relu6(bn(F.conv2d(h, we), ge, be, me, ve))
            t = relu6(bn(F.conv2d(t, wd, stride=s, padding=1, groups=wd.shape[0]), gd, bd, md, vd))
            t = bn(F.conv2d(t, wp), gp, bp, mp, vp)
            return h + t if res else t
        return f
    layers, ps, c = [], [t for t in stem if t.requires_grad], 16
    for co, s, res in ((24, 1, 0), (24, 1, 1), (32, 2, 0), (32, 1, 1), (64, 2, 0), (64, 1, 1)):
        e = 6 * c
        p = [conv(e, c, 1)] + BN(e) + [conv(e, 1, 3)] + BN(e) + [conv(co, e, 1)] + BN(co)
        layers.append(Fn(inv(s, res), p))
        ps += [t for t in p if t.requires_grad]
        c = co
    hd = [conv(256, c, 1)] + BN(256)
    fc, fcb = P(256, C, std=0.01), P(C, fill=0.0)
    ps += [t for t in hd if t.requires_grad] + [fc, fcb]
    def head(h):
        h = relu6(bn(F.conv2d(h, hd[0]), *hd[1:])).mean((2, 3))
        return F.cross_entropy(F.dropout(h, 0.2) @ fc + fcb, y)
    x, y = torch.randn(B, 3, S, S), torch.randint(0, C, (B,))
    bufs = [t for f in [stem, hd] + [l.ps for l in layers] for t in f if not t.requires_grad]
    return dict(layers=layers, first=first, head=head, ps=ps,
                opt=torch.optim.SGD(ps, lr=0.01, momentum=0.9), inputs=[x, y], bufs=bufs)

def build(name, K):
    return {"mlp": mlp, "skipnet": skipnet, "resnet": resnet, "mobilenet": mobilenet}.get(name, transformer)(K)
