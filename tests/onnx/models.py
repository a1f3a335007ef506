#!/usr/bin/python3
# models.py: small PyTorch modules exported to ONNX for mtc's importer tests, with PyTorch's
# own results to compare with: the forward outputs, and the losses of 5 training steps of
# the same module from the same weights.
#
# usage: tests/onnx/models.py OUTDIR [NAME...]     (default: every model)
# writes, for each model NAME, into OUTDIR:
#   NAME.onnx          torch.onnx.export(..., training=TRAINING, do_constant_folding=False)
#   NAME.tdsl          a model that imports NAME.onnx, adds the loss and SGD, for mtc-run
#   NAME.in.st         the graph's inputs (safetensors), named as in NAME.onnx and NAME.tdsl
#   NAME.train.st      those and the labels (y) and targets (t) of the loss
#   NAME.out.st        PyTorch's forward outputs for those inputs
#   NAME.loss          PyTorch's loss at each of the 5 steps, one per line (dropout with
#                      mtc's masks: MtcDropout)
#   NAME.args          the mtc flags `mtc NAME.onnx` needs (-D for symbolic dimensions)
#   NAME.buffers.st    batch norm's running statistics after the 5 steps, named as mtc names
#                      the buffers of the import (net.<initializer>), for models that have them
import copy
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 5


def st_write(path, tensors):
    """A safetensors file of float32 and int32 tensors (an ordered dict name -> tensor)."""
    hdr, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dt = "I32" if t.dtype in (torch.int32, torch.int64) else "F32"
        t = t.to(torch.int32 if dt == "I32" else torch.float32)
        b = t.numpy().tobytes()
        hdr[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ---------- the modules ----------

class Mlp(nn.Module):
    """Gemm, Relu, LogSoftmax."""
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return F.log_softmax(self.l2(torch.relu(self.l1(x))), dim=-1)


class GeluLn(nn.Module):
    """Linear on a 3-D input (MatMul of a transposed weight), exact GELU (Erf), LayerNorm
    written out (ReduceMean, Sub, Pow, Sqrt, Div at opset 14), Tanh, Sigmoid."""
    def __init__(self):
        super().__init__()
        self.l1, self.ln, self.l2 = nn.Linear(12, 24), nn.LayerNorm(24), nn.Linear(24, 6)

    def forward(self, x):
        h = self.ln(F.gelu(self.l1(x)))
        return self.l2(torch.tanh(h) * torch.sigmoid(h))


class Shapes(nn.Module):
    """The shape arithmetic exporters write around reshapes: x.view(x.size(0), -1), unsqueeze,
    expand, cat, mean and sum over axes, a division by a size."""
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(20, 10), nn.Linear(20, 5)

    def forward(self, x):
        b = x.size(0)
        h = torch.relu(self.l1(x.view(b, -1)))
        g = h.unsqueeze(1).expand(b, 2, h.size(1)).sum(dim=1) / h.size(1)
        h = torch.cat([h, g - h.mean(dim=-1, keepdim=True)], dim=1)
        return self.l2(h)


class Embed(nn.Module):
    """An embedding of int64 token ids (Gather), mean over positions, Softmax-free head."""
    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.Embedding(30, 16), nn.Linear(16, 30)

    def forward(self, ids):
        return self.head(torch.relu(self.emb(ids)))


class TwoOut(nn.Module):
    """Two outputs: logits and a features tensor (a, b = net(x) in tdsl)."""
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        f = torch.tanh(self.l1(x))
        return self.l2(f), f * 2.0 - 1.0


class Ln17(nn.Module):
    """nn.LayerNorm exported as LayerNormalization (opset 17), Reciprocal, Abs, Pow by 3."""
    def __init__(self):
        super().__init__()
        self.l1, self.ln, self.l2 = nn.Linear(10, 10), nn.LayerNorm(10), nn.Linear(10, 4)

    def forward(self, x):
        h = self.ln(self.l1(x))
        h = h * torch.reciprocal(1.0 + torch.abs(h)) + 0.1 * h.pow(3)
        return self.l2(h)


class Gpt(nn.Module):
    """A GPT-2-style model: token and position embeddings (Gather by run-time ids, and by the
    positions Range makes), a pre-norm block of causal self-attention (one projection split
    into q, k and v: Split; a tril buffer compared with 0 and masked_fill with -inf: Equal,
    Where) with a tanh-GELU MLP (Pow by 3, Tanh), a final LayerNorm and a head."""
    def __init__(self, V=32, T=8, C=16, H=2):
        super().__init__()
        self.H = H
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(C), nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.head = nn.Linear(C, V, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, idx):
        B, T = idx.size()
        C, H = self.wte.embedding_dim, self.H
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        h = self.ln1(x)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in self.c_attn(h).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        h = self.fc(self.ln2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return self.head(self.lnf(x + self.fc2(h)))


class Encoder(nn.Module):
    """torch.nn.TransformerEncoder: two post-norm layers (multi-head attention with a packed
    in-projection sliced in three, ReLU feed-forward, LayerNorm), then a head."""
    def __init__(self, D=16, H=2, F=32, L=2, C=5):
        super().__init__()
        layer = nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True)
        self.enc, self.head = nn.TransformerEncoder(layer, L), nn.Linear(D, C)

    def forward(self, x):
        return self.head(self.enc(x))


class ConvNet(nn.Module):
    """Conv (padded, strided, grouped, depthwise, with and without bias), ReLU and ReLU6
    (Clip), MaxPool, AveragePool with padding, adaptive average pooling to 1x1
    (GlobalAveragePool), Flatten, Linear."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 12, 1)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        h = F.max_pool2d(torch.relu(self.c1(x)), 2)
        h = F.relu6(self.c2(h))
        h = F.avg_pool2d(self.dw(h), 3, stride=1, padding=1)
        h = F.adaptive_avg_pool2d(torch.relu(self.pw(h)), 1)
        return self.fc(torch.flatten(h, 1))


class CeilPool(nn.Module):
    """ceil_mode: max pools whose last window runs past the input (down the rows, across the
    columns with a pad, both ways), one where PyTorch drops the window ceil would add (it would
    start past the input and its pad), average pools whose last windows run past it (their
    divisors cut at the right pad, with and without count_include_pad, with a pad) and one
    where it adds no window, as SqueezeNet, GoogLeNet and ResNet-D's downsampling use them; no
    ReLU before them, so what the windows take past the input would show (a 0 there would win
    over negative maxima)."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1)
        self.fc = nn.Linear(6 * (4 + 6 + 6 + 1), 5)

    def forward(self, x):                                                         # 9 x 12
        h = F.max_pool2d(self.c1(x), 2, ceil_mode=True)                             # 5 x 6
        h = F.max_pool2d(h, 3, stride=2, padding=1, ceil_mode=True)                 # 3 x 4
        a = F.avg_pool2d(self.c2(h), 3, stride=1, padding=1, ceil_mode=True)        # 3 x 4
        b = F.avg_pool2d(a, 2, stride=2, ceil_mode=True)                            # 2 x 2
        c = F.avg_pool2d(a, 3, stride=2, padding=1, ceil_mode=True)                 # 2 x 3
        d = F.avg_pool2d(a, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        e = F.max_pool2d(a, (2, 3), stride=(2, 3), ceil_mode=True)                  # 2 x 2
        e = F.max_pool2d(e, 2, stride=4, padding=1, ceil_mode=True)                 # 1 x 1
        return self.fc(torch.cat([t.flatten(1) for t in (b, c, d, e)], 1))


class HardNet(nn.Module):
    """HardSwish and HardSigmoid (MobileNetV3's activations, its squeeze-and-excitation gate),
    over inputs spread past their corners at -3 and 3."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.se1, self.se2 = nn.Linear(8, 4), nn.Linear(4, 8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = F.hardswish(4 * self.c1(x))
        g = F.hardsigmoid(4 * self.se2(F.relu(self.se1(h.mean((2, 3))))))
        h = h * g[:, :, None, None]
        return self.fc(F.hardswish(h.mean((2, 3))))


class NormAct(nn.Module):
    """GroupNorm (exported through InstanceNormalization), InstanceNorm2d with its affine
    params, LeakyReLU and ELU with their alphas, whose inputs start at exactly 0 on half the
    channels (a per-channel scale of 0 there, so their gradient at 0, PyTorch's alpha, moves
    the scale)."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(4, 8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.s1 = nn.Parameter(torch.tensor([0.0, 1.5] * 4).reshape(8, 1, 1))
        self.s2 = nn.Parameter(torch.tensor([0.0, -1.5] * 4).reshape(8, 1, 1))
        self.fc = nn.Linear(16, 5)
        with torch.no_grad():
            for p in (self.gn.weight, self.gn.bias, self.inorm.weight, self.inorm.bias):
                p.uniform_(0.5, 1.5)

    def forward(self, x):
        h = self.gn(self.c1(x))
        a = F.elu(h * self.s1, 0.7)
        b = F.leaky_relu(self.inorm(self.c2(h)) * self.s2, 0.2)
        return self.fc(torch.cat([a.mean((2, 3)), b.mean((2, 3))], 1))


class UpNet(nn.Module):
    """Resize as PyTorch's interpolate exports it: nearest by 2 (UNet's and FPN's upsampling),
    bilinear by 2 without align_corners, bilinear with align_corners to an odd size, and
    nearest to a size that is not a multiple; a skip connection concatenated after the first."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.c3 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 3, 5)

    def forward(self, x):                                                         # 6 x 6
        s = self.c1(x)
        h = self.c2(F.max_pool2d(s, 2))                                             # 3 x 3
        h = self.c3(torch.cat([F.interpolate(h, scale_factor=2.0, mode="nearest"), s], 1))
        a = F.interpolate(h, scale_factor=2.0, mode="bilinear", align_corners=False)  # 12 x 12
        b = F.interpolate(h, size=(7, 9), mode="bilinear", align_corners=True)
        c = F.interpolate(h, size=(4, 10), mode="nearest")
        return self.fc(torch.cat([a.mean((2, 3)), b.mean((2, 3)), (c * c).mean((2, 3))], 1))


class ConvTNet(nn.Module):
    """ConvTranspose2d as decoders and generators use it: stride 2 with output_padding (a size
    doubled), DCGAN's kernel 4 stride 2 pad 1 in two groups, a dilated one without bias, a
    depthwise one and a pointwise one (the two without a workspace)."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)                               # 7 -> 4
        self.t1 = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)    # 4 -> 8
        self.t2 = nn.ConvTranspose2d(6, 4, 4, stride=2, padding=1, groups=2)            # 8 -> 16
        self.t3 = nn.ConvTranspose2d(4, 4, 3, padding=1, dilation=2, bias=False)        # 16 -> 18
        self.t4 = nn.ConvTranspose2d(4, 4, 3, padding=1, groups=4)                      # 18
        self.t5 = nn.ConvTranspose2d(4, 5, 1)                                           # 18
        self.fc = nn.Linear(5 * 18 * 18, 5)

    def forward(self, x):
        h = torch.relu(self.t1(torch.relu(self.c1(x))))
        h = torch.tanh(self.t3(torch.relu(self.t2(h))))
        return self.fc(torch.flatten(self.t5(self.t4(h) * h), 1))


class Act2(nn.Module):
    """PReLU (a learned slope per channel), Softplus, Mish (exported as Softplus, Tanh, Mul),
    SELU and CELU, their inputs at exactly 0 on half the channels (a per-channel scale of 0
    there, so that their gradient at 0, PyTorch's, moves the scale)."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pr = nn.PReLU(8, init=0.3)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.s1 = nn.Parameter(torch.tensor([0.0, 1.5] * 4).reshape(8, 1, 1))
        self.s2 = nn.Parameter(torch.tensor([0.0, 1.5] * 4).reshape(8, 1, 1))
        self.fc = nn.Linear(32 * 25, 5)
        with torch.no_grad():
            self.pr.weight.uniform_(0.5, 1.0)

    def forward(self, x):
        h = self.c2(self.pr(self.c1(x) * self.s1)) * self.s2
        return self.fc(torch.flatten(torch.cat([F.softplus(h), F.mish(h), F.selu(h), F.celu(h, 0.7)], 1), 1))


class Seq1d(nn.Module):
    """1-D windows over [N, C, L], as audio and text CNNs use them: Conv1d (strided and padded,
    dilated in groups), BatchNorm1d, MaxPool1d in ceil_mode, AvgPool1d counting its pad,
    ConvTranspose1d with output_padding."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 8, 5, stride=2, padding=2)                       # 17 -> 9
        self.bn = nn.BatchNorm1d(8)
        self.c2 = nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=2)           # 9
        self.t1 = nn.ConvTranspose1d(8, 4, 3, stride=2, padding=1, output_padding=1)  # 4 -> 8
        self.fc = nn.Linear(4 * 8, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.c1(x)))
        h = F.max_pool1d(torch.tanh(self.c2(h)), 2, ceil_mode=True)             # 9 -> 5
        h = F.avg_pool1d(h, 3, stride=1, padding=1, count_include_pad=True)[:, :, :4]
        return self.fc(torch.flatten(torch.relu(self.t1(h)), 1))


class PadNet(nn.Module):
    """F.pad in reflect and replicate modes (uneven on each side; 2-D, and 1-D as audio models
    pad), pixel_shuffle (DepthToSpace, CRD), Tensor.repeat (Tile)."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3)
        self.c2 = nn.Conv2d(2, 4, 3)
        self.c3 = nn.Conv1d(4, 4, 3)
        self.fc = nn.Linear(8 * 14, 5)

    def forward(self, x):                                                      # 6 x 6
        h = torch.tanh(self.c1(F.pad(x, (1, 2, 2, 1), mode="reflect")))         # 7 x 7
        h = F.pixel_shuffle(h, 2)                                              # 2 x 14 x 14
        h = torch.relu(self.c2(F.pad(h, (2, 0, 1, 1), mode="replicate")))      # 4 x 14 x 14
        h = self.c3(F.pad(h.mean(2), (2, 0), mode="reflect"))                  # 4 x 14
        return self.fc(torch.flatten(h.repeat(1, 2, 1) * h.repeat(1, 2, 1).flip(1), 1))


class EinNet(nn.Module):
    """torch.einsum as attention code writes it (scores over heads, the mix, a contraction over
    two letters with a weight, a batched product, a sum by an ellipsis, a sum over a letter of
    one operand), a causal mask from triu of a known matrix, tril at run time, x.norm and
    F.normalize (ReduceL2)."""
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(2, 4, 3) * 0.5)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):                                                       # 2 x 5 x 8
        q, k, v = (f(x).view(2, 5, 2, 4) for f in (self.q, self.k, self.v))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / 2
        mask = torch.triu(torch.full((5, 5), float("-inf")), 1)
        o = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s + mask, -1), v)
        z = torch.einsum("bqhd,hde->bqe", o, self.w)                             # 2 x 5 x 3
        z = F.normalize(z, dim=-1) + 0.1 * z.norm(dim=-1, keepdim=True)
        t = torch.tril(torch.einsum("bqe,bke->bqk", z, z))
        e = torch.einsum("...qk->...q", t)
        return self.fc(torch.cat([e, torch.einsum("bqe->be", z)], -1))


class RnnNet(nn.Module):
    """nn.LSTM (batch first: its last cell state read too) and a bidirectional nn.GRU
    over its outputs, as PyTorch exports them (the gates reordered by slices of the params)."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(6, 8)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.gru = nn.GRU(8, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12 + 8, 5)

    def forward(self, x):                                                       # 3 x 3 x 6
        h, (hn, cn) = self.lstm(torch.tanh(self.emb(x)))
        g, gn = self.gru(h)
        return self.fc(torch.cat([g[:, -1], cn[-1]], -1))


class BnNet(nn.Module):
    """BatchNormalization in training mode (batch statistics in the step, the running ones
    buffers that the step updates, the forward-only module on them): BatchNorm2d after
    convolutions around a residual add, BatchNorm1d after a Linear."""
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.f1, self.b3, self.f2 = nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 5)
        for b in (self.b1, self.b2, self.b3):       # statistics other than the defaults
            b.running_mean.uniform_(-0.5, 0.5)
            b.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        h = torch.relu(h + self.b2(self.c2(h)))
        h = torch.flatten(F.adaptive_avg_pool2d(h, 1), 1)
        return self.f2(torch.relu(self.b3(self.f1(h))))


class ShiftNet(nn.Module):
    """Swin's shifted windows, small: torch.roll (Slice, Concat) of a Linear's output, and an
    additive mask made by writing slices of a zeros tensor in place (ScatterND on values
    known at import time: folded, as the shift's attention mask in torchvision's Swin)."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 5)

    def forward(self, x):                                                       # 2 x 6 x 6
        m = torch.zeros(6, 6)
        m[2:4, :3] = 1.5
        m[4:, 3:] = -2.0
        m[0, 5] = 0.25
        h = torch.roll(torch.tanh(self.fc1(x)), shifts=(2, -1), dims=(1, 2)) + m
        return self.fc2(h.mean(1))


class Seq2Seq(nn.Module):
    """torch.nn.Transformer, encoder and decoder (one layer each): the decoder's causal self-
    attention (its mask a buffer from generate_square_subsequent_mask) and its cross-attention
    over the encoder's memory, then a Linear head per target position."""
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                dim_feedforward=32, dropout=0.0, batch_first=True)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(4))
        self.fc = nn.Linear(16, 5)

    def forward(self, src, tgt):                                        # 2 x 5 x 16, 2 x 4 x 16
        return self.fc(self.t(src, tgt, tgt_mask=self.mask))


class Rope(nn.Module):
    """Rotary position embeddings as LLaMA-style code writes them: inv_freq a buffer (finite,
    so frozen in the import), the positions' angles (torch.arange times inv_freq), their cos and
    sin (Cos, Sin: folded at import time), the halves rotated (Slice, Neg, Concat) on a
    Linear's output, then a Linear head."""
    def __init__(self):
        super().__init__()
        self.q, self.fc = nn.Linear(8, 8), nn.Linear(8, 5)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))

    def forward(self, x):                                                       # 2 x 6 x 8
        t = torch.arange(x.shape[1], dtype=torch.float32)
        f = t[:, None] * self.inv_freq[None, :]        # torch.outer exports as an Einsum
        emb = torch.cat([f, f], -1)
        q = self.q(x)
        rot = torch.cat([-q[..., 4:], q[..., :4]], -1)
        return self.fc((q * emb.cos() + rot * emb.sin()).mean(1))


class HfRope(nn.Module):
    """Rotary embeddings as Hugging Face's LLaMA writes them: the angles as inv_freq @
    position_ids (MatMul, folded at import time), for q; as torch.outer (Einsum) for k, as
    older LLaMA code does; a softmax attention over the rotated q and k."""
    def __init__(self):
        super().__init__()
        self.q, self.k, self.fc = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(6, 5)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))

    @staticmethod
    def rot(v, cos, sin):
        return v * cos + torch.cat([-v[..., 4:], v[..., :4]], -1) * sin

    def forward(self, x):                                                       # 2 x 6 x 8
        b, t = x.shape[0], x.shape[1]
        pos = torch.arange(t).unsqueeze(0).expand(b, -1)
        f = (self.inv_freq[None, :, None].float().expand(b, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
        e = torch.cat([f, f], -1)
        g = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        e2 = torch.cat([g, g], -1)
        q = self.rot(self.q(x), e.cos(), e.sin())
        k = self.rot(self.k(x), e2.cos(), e2.sin())
        s = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, -1)
        return self.fc(s.mean(1))


class PosRope(nn.Module):
    """Rotary embeddings of positions given at run time (an input, as a packed batch or a
    cache offset gives them): cos and sin computed in the step (Sin, Cos), their gradient
    flowing to the positions' Linear scale too."""
    def __init__(self):
        super().__init__()
        self.q, self.s, self.fc = nn.Linear(8, 8), nn.Linear(1, 1), nn.Linear(8, 5)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))

    def forward(self, x, pos):                                                  # 2 x 6 x 8, 2 x 6
        p = self.s(pos[..., None] * 3)                                           # 2 x 6 x 1
        f = p * self.inv_freq
        e = torch.cat([f, f], -1)
        q = self.q(x)
        rot = torch.cat([-q[..., 4:], q[..., :4]], -1)
        return self.fc((q * e.cos() + rot * e.sin()).mean(1))


class HfPos(HfRope):
    """Hugging Face LLaMA's rotary embeddings of position_ids given at run time (an int64
    input): Unsqueeze and Cast to float in the step, inv_freq @ positions (a run-time MatMul),
    cos and sin; the positions as a packed batch gives them (each row its own offset)."""
    def forward(self, x, position_ids):                                         # 2 x 6 x 8, 2 x 6
        b = x.shape[0]
        f = (self.inv_freq[None, :, None].float().expand(b, -1, 1) @ position_ids[:, None, :].float()).transpose(1, 2)
        e = torch.cat([f, f], -1)
        q = self.rot(self.q(x), e.cos(), e.sin())
        k = self.rot(self.k(x), e.cos(), e.sin())
        s = torch.softmax(q @ k.transpose(1, 2) / 8 ** 0.5, -1)
        return self.fc(s.mean(1))


class MaskAttn(nn.Module):
    """Attention under a padding mask computed in the step from an input, as the Annotated
    Transformer's masked_fill: keys kept where mask > 0 or at the row's largest mask value
    (so no row is all masked), the rest filled with -inf (Greater, Equal, Or, Not, Where); a
    leaky activation by torch.where; a gate (h < 1 and h > -1).float() multiplying h."""
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.fc = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 5)

    def forward(self, x, mask):                                                 # 2 x 6 x 8, 2 x 6
        keep = (mask > 0) | (mask == mask.max(-1, keepdim=True).values)
        s = self.q(x) @ self.k(x).transpose(1, 2) / 8 ** 0.5
        s = s.masked_fill(~keep[:, None, :], float("-inf"))
        h = torch.softmax(s, -1) @ self.v(x)
        h = torch.where(h > 0, h, 0.1 * h)
        g = torch.logical_and(h < 1, h > -1).float()
        return self.fc((h * g + h).mean(1))


class MinMax(nn.Module):
    """torch.maximum and torch.minimum of run-time values (Max, Min), tied everywhere at the
    start between two Linear layers that start equal (PyTorch halves the gradient there, so
    the two move apart), and amin (ReduceMin)."""
    def __init__(self):
        super().__init__()
        self.a, self.b, self.fc = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 5)
        self.b.load_state_dict(self.a.state_dict())

    def forward(self, x):                                                       # 2 x 6 x 8
        h, g = self.a(x), self.b(x)
        m = torch.maximum(h, g) + torch.minimum(h, 0.5 * g)
        m = m - m.amin(1, keepdim=True)
        return self.fc(m.mean(1))


class Reducers(nn.Module):
    """Reductions and predicates over a convolution's maps: logsumexp (ReduceLogSumExp), the
    L1 norm (ReduceL1), sign, floor, round and ceil (no gradient), softsign, nan_to_num
    written with isnan and isinf (IsNaN, IsInf, Or, Where), an adaptive max pool to 1."""
    def __init__(self):
        super().__init__()
        self.c, self.fc = nn.Conv2d(2, 4, 3, padding=1), nn.Linear(4, 5)

    def forward(self, x):                                                       # 2 x 2 x 6 x 6
        h = self.c(x)
        p = F.adaptive_max_pool2d(h, 1).flatten(1)
        s = F.softsign(h).mean((2, 3))
        l = torch.logsumexp(h, dim=(2, 3))
        g = (torch.sign(h) * h + torch.floor(h * 2) * 0.1 + torch.round(h) * 0.05 + torch.ceil(h) * 0.01).mean((2, 3))
        z = torch.where(torch.isnan(h) | torch.isinf(h), torch.zeros_like(h), h).mean((2, 3))
        n = torch.norm(h, p=1, dim=(2, 3))
        return self.fc(p + s + l + g + z + n * 0.01)


class OneHotNet(nn.Module):
    """F.one_hot of class indices given at run time (OneHot of an int64 input), made float
    and scaled into the logits, as a teacher-forced or label-conditioned head does."""
    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(8, 5), nn.Linear(5, 5)

    def forward(self, x, t):                                                    # 3 x 8, 3
        o = self.fc(x)
        return self.out(torch.tanh(o + 0.5 * F.one_hot(t, 5).float() * o))


class LossNet(nn.Module):
    """A model exported with its loss (SoftmaxCrossEntropyLoss): F.cross_entropy over [N, C,
    L] positions with label 4 ignored, its sum, and F.nll_loss of log_softmax with class
    weights (a frozen buffer) and label 2 ignored."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 5)
        self.register_buffer("cw", torch.tensor([1.0, 2.0, 0.5, 1.5, 1.0]))

    def forward(self, x, t):                                                    # 2 x 4 x 8, 2 x 4
        o = self.fc(torch.tanh(x))
        l1 = F.cross_entropy(o.transpose(1, 2), t, ignore_index=4)
        l2 = F.cross_entropy(o.reshape(-1, 5), t.reshape(-1), reduction="sum") * 0.1
        l3 = F.nll_loss(F.log_softmax(o.reshape(-1, 5), -1), t.reshape(-1), weight=self.cw, ignore_index=2)
        return l1 + l2 + l3


class Losses(nn.Module):
    """Losses written in forward, as PyTorch exports them: binary cross-entropy with logits,
    smooth L1 written with torch.where on |d| < 1 (F.smooth_l1_loss does not export), KL
    divergence of softmaxes, cosine similarity, pairwise distance and a masked mean of the
    positive targets (their count an integer: mask.sum() * 2 + 1, a boolean cast to int64)."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, t):                                                    # 3 x 8, 3 x 4
        o = self.fc(x)
        l = F.binary_cross_entropy_with_logits(o, torch.sigmoid(t))
        d = o - t
        l = l + torch.where(d.abs() < 1, 0.5 * d * d, d.abs() - 0.5).mean()
        l = l + F.kl_div(F.log_softmax(o, -1), F.softmax(t, -1), reduction="batchmean")
        l = l + (1 - F.cosine_similarity(o, t)).mean() + 0.1 * F.pairwise_distance(o, t).mean()
        m = t > 0
        return l + (o * m.float()).sum() / (m.sum() * 2 + 1).clamp(min=1)


class GatherNet(nn.Module):
    """torch.gather by indices given at run time (GatherElements): per-token log-probabilities
    of labels, as DPO and PPO losses take them (one index along the last axis), and two
    indices per column along axis 1 from a second input."""
    def __init__(self):
        super().__init__()
        self.fc, self.head = nn.Linear(8, 5), nn.Linear(4, 5)

    def forward(self, x, t, u):                                 # 2 x 4 x 8, 2 x 4, 2 x 2 x 5
        o = self.fc(x)
        g = torch.gather(o.log_softmax(-1), 2, t.unsqueeze(2)).squeeze(2)       # 2 x 4
        h = torch.gather(torch.tanh(o), 1, u).sum(1)                            # 2 x 5
        return self.head(g) + h


class CumNet(nn.Module):
    """torch.cumsum (CumSum) of run-time values: a cumulative mean along the sequence, a
    reversed one (flip, cumsum, flip), and positions counted from a mask computed in the step
    ((m > 0).long().cumsum(-1): a count)."""
    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(8, 8), nn.Linear(8, 5)

    def forward(self, x, m):                                                    # 2 x 6 x 8, 2 x 6
        h = self.fc(x)
        c = h.cumsum(1) / torch.arange(1, 7, dtype=torch.float32)[None, :, None]
        r = h.flip(1).cumsum(1).flip(1)
        p = (m > 0).long().cumsum(-1).float()
        return self.out((c + 0.5 * r + 0.1 * p[..., None] * h).mean(1))


class LossInf(nn.Module):
    """Log-probabilities of class 2 masked to -inf where its logit is below -0.2 (a vocabulary
    restricted in the step), then F.nll_loss ignoring label 2 and torch.gather clamped: a -inf
    not taken, or ignored, must give no NaN."""
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 5)

    def forward(self, x, t):                                                    # 6 x 8, 6
        o = self.fc(x)
        lp = o.masked_fill((o < -0.2) & (torch.arange(5) == 2), float("-inf")).log_softmax(-1)
        return F.nll_loss(lp, t, ignore_index=2) + torch.gather(lp, 1, t[:, None]).clamp(min=-5).mean()


class ArgNet(nn.Module):
    """argmax and argmin of values computed in the step (ArgMax, ArgMin): the predicted token
    fed back through an embedding (scheduled sampling's greedy feedback), and a one-hot of the
    smallest logit."""
    def __init__(self):
        super().__init__()
        self.fc, self.emb, self.out = nn.Linear(8, 5), nn.Embedding(5, 8), nn.Linear(8, 5)

    def forward(self, x):                                                       # 2 x 6 x 8
        o = self.fc(x)
        e = self.emb(o.argmax(-1))                                              # 2 x 6 x 8
        m = F.one_hot(o.argmin(-1), 5).float()                                  # 2 x 6 x 5
        return self.out(torch.tanh(x + e)).mean(1) + (o * m).mean(1)


class MoENet(nn.Module):
    """A mixture of experts with top-2 routing (TopK of the router's logits, a softmax over the
    two kept, F.one_hot of their indices as gates; every expert computed densely), and the 3
    smallest of each feature over the sequence (TopK with largest=False)."""
    def __init__(self):
        super().__init__()
        self.router, self.out = nn.Linear(8, 4), nn.Linear(8, 5)
        self.experts = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):                                                       # 2 x 6 x 8
        v, i = torch.topk(self.router(x), 2, dim=-1)                            # 2 x 6 x 2
        g = (F.one_hot(i, 4).float() * torch.softmax(v, -1).unsqueeze(-1)).sum(-2)  # 2 x 6 x 4
        y = torch.stack([e(x) for e in self.experts], -1)                       # 2 x 6 x 8 x 4
        h = torch.tanh((y * g.unsqueeze(-2)).sum(-1))                           # 2 x 6 x 8
        s, _ = torch.topk(h, 3, dim=1, largest=False)                           # 2 x 3 x 8
        return self.out(h).mean(1) + self.out(s).mean(1)


class CountPos(nn.Module):
    """Indices computed in the step: OPT's learned positions counted over a padding mask
    ((cumsum(mask, 1) * mask).long() - 1, looked up at an offset of 2, as Hugging Face's
    OPTLearnedPositionalEmbedding), the mask found from the input; and a bucket by .long() of a
    float (clamped below 4), looked up in an embedding."""
    def __init__(self):
        super().__init__()
        self.pos, self.bkt, self.fc = nn.Embedding(8, 8), nn.Embedding(4, 8), nn.Linear(8, 5)

    def forward(self, x):                                                       # 2 x 6 x 8
        mask = (x[..., 0] > -0.5).long()                                        # 2 x 6
        pos = torch.cumsum(mask, dim=1) * mask - 1
        h = x + self.pos(pos + 2)
        b = (torch.sigmoid(h.mean(-1)) * 4).clamp(max=3.5).long()              # 2 x 6
        return self.fc(torch.tanh(h + self.bkt(b)))


class HFMask(nn.Module):
    """Hugging Face's masks from int64 inputs given at run time: attention scores filled with
    -inf where `attention_mask == 0` (Equal of a run-time integer tensor and 0), and the
    embeddings of pad tokens zeroed by `ids != 0`."""
    def __init__(self):
        super().__init__()
        self.emb, self.qk, self.out = nn.Embedding(11, 8), nn.Linear(8, 16), nn.Linear(8, 5)

    def forward(self, ids, mask):                                               # 2 x 6 each
        h = self.emb(ids) * (ids != 0).unsqueeze(-1).float()
        q, k = self.qk(h).split(8, -1)
        s = (q @ k.transpose(1, 2)) / 8 ** 0.5
        s = s.masked_fill(mask[:, None, :] == 0, float("-inf"))
        return self.out(torch.softmax(s, -1) @ h)


class ScatterNet(nn.Module):
    """torch.scatter and scatter_add by indices computed in the step (ScatterElements): a MoE's
    sparse gates (zeros with the top-2 softmax weights scattered at their experts' indices), and
    the tokens' features summed into buckets chosen by argmax (scatter_add, as message passing
    sums messages into nodes)."""
    def __init__(self):
        super().__init__()
        self.router, self.fc, self.out = nn.Linear(8, 4), nn.Linear(8, 8), nn.Linear(8, 5)

    def forward(self, x):                                                       # 2 x 6 x 8
        r = self.router(x)
        v, i = torch.topk(r, 2, dim=-1)
        g = torch.zeros(2, 6, 4).scatter(-1, i, torch.softmax(v, -1))          # 2 x 6 x 4
        h = torch.tanh(self.fc(x) * g.repeat(1, 1, 2))
        b = r.argmax(-1, keepdim=True).expand(2, 6, 8)
        pooled = torch.zeros(2, 4, 8).scatter_add(1, b, h)                      # 2 x 4 x 8
        return self.out(pooled).mean(1) + self.out(h).mean(1)


class CubicNet(nn.Module):
    """Bicubic interpolation (Resize, cubic, coefficient -0.75): by 2, with align_corners to an
    odd size, and down to a size that is not a multiple, over a convolution's maps."""
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(2, 3, 3, padding=1), nn.Linear(3 * (10 * 10 + 7 * 9 + 3 * 4), 5)

    def forward(self, x):                                                       # 2 x 2 x 5 x 5
        h = torch.tanh(self.conv(x))
        a = F.interpolate(h, scale_factor=2, mode="bicubic")                    # 10 x 10
        b = F.interpolate(h, size=(7, 9), mode="bicubic", align_corners=True)
        c = F.interpolate(h, size=(3, 4), mode="bicubic")
        return self.fc(torch.cat([a.flatten(1), b.flatten(1), c.flatten(1)], 1))


class InPlace(nn.Module):
    """Assignments into slices of tensors computed in the step (ScatterND with known indices,
    run-time data and updates): a column from another's tanh, a feature zeroed, a row of a
    clone written from a Linear; and index_put accumulating (no index repeated: PyTorch exports
    it as a gather, an add and a ScatterND, which a repeated index would make the last one)."""
    def __init__(self):
        super().__init__()
        self.l, self.m, self.out = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 5)

    def forward(self, x):                                                       # 2 x 6 x 8
        h = self.l(x)
        h[:, 1] = torch.tanh(h[:, 2])
        h[:, :, 0] = 0
        g = x.clone()
        g[:, 3:5] = self.m(h[:, 3:5])
        g = g.index_put((torch.tensor([0, 0, 0]), torch.tensor([0, 2, 4])), torch.tanh(h[0, :3]), accumulate=True)
        return self.out(torch.tanh(h + g))


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10's word 0, as mtc_philox (<mtc/mtc-ops.h>): dropout's generator."""
    m32 = 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & m32, (p0 >> 32) ^ c3 ^ k1, p0 & m32
        k0, k1 = (k0 + 0x9E3779B9) & m32, (k1 + 0xBB67AE85) & m32
    return c0


assert philox(0, 0, 0, 0, 0, 0) == 0x6627E8D5     # Random123's known answer


class MtcDropout(nn.Module):
    """Dropout whose training mask is mtc's (docs/ir.md): element i of dropout `key` (its
    number in the model) at step t (1 at the first step) under the build's seed (0) is kept,
    times 1/(1-p), when the top 24 bits of Philox's word, as a fraction, are at least p. So
    PyTorch trains the twin with mtc's masks; the export writes an ordinary Dropout."""
    step = 0                        # the training step, counted by export()

    def __init__(self, p, key):
        super().__init__()
        self.p, self.key = p, key

    def forward(self, x):
        if torch.onnx.is_in_onnx_export() or not self.training:
            return F.dropout(x, self.p, self.training)
        pf = torch.tensor(self.p, dtype=torch.float32).item()
        t = MtcDropout.step
        keep = [philox(i & 0xFFFFFFFF, i >> 32, self.key, t, 0, 0) >> 8 >= pf * 2 ** 24
                for i in range(x.numel())]
        mask = torch.tensor(keep, dtype=torch.float32).reshape(x.shape)
        return x * mask * torch.tensor(1 / (1 - self.p), dtype=torch.float32)


class DropNet(nn.Module):
    """Dropout in training mode, trained with mtc's masks (MtcDropout)."""
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(12, 32), nn.Linear(32, 4)
        self.drop = MtcDropout(0.3, 0)

    def forward(self, x):
        return self.l2(self.drop(torch.relu(self.l1(x))))


def i64(*shape, hi):
    return ("i64", shape, hi)


def f32(*shape):
    return ("f32", shape, None)


# name: (module, inputs {name: spec}, loss, opset, dynamic axes, lr, momentum)
# loss: "xent" (cross_entropy of output 0 over its last axis against labels y),
#       "xent+mse" (plus the mse of output 1 against targets t),
#       "own" (output 0 is the loss: a model exported with its loss, its labels an input)
MODELS = {
    "mlp": (Mlp, {"x": f32(4, 8)}, "xent", 14, None, 0.1, 0.9),
    "geluln": (GeluLn, {"x": f32(2, 5, 12)}, "xent", 14, None, 0.1, 0.9),
    "shapes": (Shapes, {"x": f32(3, 4, 5)}, "xent", 13, {"x": {0: "batch"}}, 0.1, 0.0),
    "embed": (Embed, {"ids": i64(2, 7, hi=30)}, "xent", 14, None, 0.5, 0.9),
    "twoout": (TwoOut, {"x": f32(5, 8)}, "xent+mse", 15, None, 0.1, 0.9),
    "ln17": (Ln17, {"x": f32(6, 10)}, "xent", 17, None, 0.1, 0.9),
    "gpt": (Gpt, {"idx": i64(2, 8, hi=32)}, "xent", 14, None, 0.1, 0.9),
    "encoder": (Encoder, {"x": f32(2, 6, 16)}, "xent", 14, None, 0.1, 0.9),
    "convnet": (ConvNet, {"x": f32(2, 3, 12, 12)}, "xent", 14, None, 0.1, 0.9),
    "ceilpool": (CeilPool, {"x": f32(2, 3, 9, 12)}, "xent", 14, None, 0.1, 0.9),
    "hardnet": (HardNet, {"x": f32(2, 3, 6, 6)}, "xent", 14, None, 0.1, 0.9),
    "normact": (NormAct, {"x": f32(2, 3, 5, 5)}, "xent", 14, None, 0.1, 0.9),
    "upnet": (UpNet, {"x": f32(2, 3, 6, 6)}, "xent", 14, None, 0.1, 0.9),
    "convtnet": (ConvTNet, {"x": f32(2, 3, 7, 7)}, "xent", 14, None, 0.02, 0.9),
    "act2": (Act2, {"x": f32(2, 3, 5, 5)}, "xent", 14, None, 0.01, 0.9),
    "seq1d": (Seq1d, {"x": f32(4, 3, 17)}, "xent", 14, None, 0.1, 0.9),
    "padnet": (PadNet, {"x": f32(2, 3, 6, 6)}, "xent", 14, None, 0.05, 0.9),
    "einnet": (EinNet, {"x": f32(2, 5, 8)}, "xent", 14, None, 0.05, 0.9),
    "rnnnet": (RnnNet, {"x": f32(3, 3, 6)}, "xent", 14, None, 0.1, 0.9),
    "bnnet": (BnNet, {"x": f32(4, 3, 8, 8)}, "xent", 14, None, 0.1, 0.9),
    "dropnet": (DropNet, {"x": f32(8, 12)}, "xent", 14, None, 0.1, 0.9),
    "shiftnet": (ShiftNet, {"x": f32(2, 6, 6)}, "xent", 14, None, 0.1, 0.9),
    "rope": (Rope, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "hfrope": (HfRope, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "posrope": (PosRope, {"x": f32(2, 6, 8), "pos": f32(2, 6)}, "xent", 14, None, 0.1, 0.9),
    "hfpos": (HfPos, {"x": f32(2, 6, 8), "position_ids": i64(2, 6, hi=4096)}, "xent", 14, None, 0.1, 0.9),
    "maskattn": (MaskAttn, {"x": f32(2, 6, 8), "mask": f32(2, 6)}, "xent", 14, None, 0.1, 0.9),
    "minmax": (MinMax, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "reducers": (Reducers, {"x": f32(2, 2, 6, 6)}, "xent", 14, None, 0.02, 0.5),
    "onehot": (OneHotNet, {"x": f32(3, 8), "t": i64(3, hi=5)}, "xent", 14, None, 0.1, 0.9),
    "lossnet": (LossNet, {"x": f32(2, 4, 8), "t": i64(2, 4, hi=5)}, "own", 14, None, 0.1, 0.9),
    "losses": (Losses, {"x": f32(3, 8), "t": f32(3, 4)}, "own", 14, None, 0.1, 0.9),
    "gathernet": (GatherNet, {"x": f32(2, 4, 8), "t": i64(2, 4, hi=5), "u": i64(2, 2, 5, hi=4)}, "xent", 14,
                  None, 0.1, 0.9),
    "cumnet": (CumNet, {"x": f32(2, 6, 8), "m": f32(2, 6)}, "xent", 14, None, 0.1, 0.9),
    "lossinf": (LossInf, {"x": f32(12, 8), "t": i64(12, hi=5)}, "own", 14, None, 0.1, 0.9),
    "argnet": (ArgNet, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "countpos": (CountPos, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "hfmask": (HFMask, {"ids": i64(2, 6, hi=11), "mask": i64(2, 6, hi=2)}, "xent", 14, None, 0.1, 0.9),
    "scatternet": (ScatterNet, {"x": f32(2, 6, 8)}, "xent", 16, None, 0.1, 0.9),
    "cubicnet": (CubicNet, {"x": f32(2, 2, 5, 5)}, "xent", 14, None, 0.1, 0.9),
    "inplace": (InPlace, {"x": f32(2, 6, 8)}, "xent", 16, None, 0.1, 0.9),
    "moenet": (MoENet, {"x": f32(2, 6, 8)}, "xent", 14, None, 0.1, 0.9),
    "seq2seq": (Seq2Seq, {"src": f32(2, 5, 16), "tgt": f32(2, 4, 16)}, "xent", 14, None, 0.1, 0.9),
}


# Params the tdsl import freezes (`frozen "NAME", "PREFIX*"`), off requires_grad on PyTorch's
# side: the encoder of seq2seq (and its head's bias) as when fine-tuning; its causal mask, a
# buffer holding -inf, is frozen by the importer itself; rope's and hfrope's inv_freq, a finite
# buffer whose cos and sin are computed at import time, must be named.
FROZEN = {"seq2seq": ["t.encoder.*", "fc.bias"], "lossnet": ["cw"], "rope": ["inv_freq"], "hfrope": ["inv_freq"],
          "posrope": ["inv_freq"], "hfpos": ["inv_freq"]}


def frozen(pat, name):
    return name.startswith(pat[:-1]) if pat.endswith("*") else name == pat


def make(name, seed=0):
    cls, ins, loss, opset, dyn, lr, mom = MODELS[name]
    torch.manual_seed(seed)
    m = cls()
    g = torch.Generator().manual_seed(seed + 1)
    xs = {}
    for k, (dt, shape, hi) in ins.items():
        xs[k] = torch.randint(0, hi, shape, generator=g) if dt == "i64" else torch.randn(*shape, generator=g)
    return m, xs, loss, opset, dyn, lr, mom


def tdsl_type(t):
    return ("i32" if t.dtype in (torch.int32, torch.int64) else "f32") + "[" + ", ".join(map(str, t.shape)) + "]"


def export(name, out):
    m, xs, loss, opset, dyn, lr, mom = make(name)
    with torch.no_grad():           # the outputs' shapes, without moving batch norm's statistics
        outs = m.eval()(*xs.values())
    m.train()
    outs = outs if isinstance(outs, tuple) else (outs,)
    onames = ["out%d" % i for i in range(len(outs))]
    torch.onnx.export(m, tuple(xs.values()), os.path.join(out, name + ".onnx"), opset_version=opset,
                      input_names=list(xs), output_names=onames, dynamic_axes=dyn,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    # Tracing in training mode moved batch norm's running statistics once, and the file holds
    # them so: PyTorch's side starts from the module as exported.
    ref = copy.deepcopy(m)
    for k, p in ref.named_parameters():
        if any(frozen(f, k) for f in FROZEN.get(name, [])):
            p.requires_grad_(False)
    # the labels of the loss, from the output's shape (none where the model computes its own)
    g = torch.Generator().manual_seed(99)
    y = torch.randint(0, outs[0].shape[-1], outs[0].shape[:-1], generator=g) if loss != "own" else None
    data = dict(xs)
    if y is not None:
        data["y"] = y
    if loss == "xent+mse":
        data["t"] = torch.randn(*outs[1].shape, generator=g)
    st_write(os.path.join(out, name + ".in.st"), xs)
    st_write(os.path.join(out, name + ".train.st"), data)
    with torch.no_grad():       # what a forward-only module computes: eval(), running statistics
        fo = ref.eval()(*xs.values())
    ref.train()
    fo = fo if isinstance(fo, tuple) else (fo,)
    st_write(os.path.join(out, name + ".out.st"), dict(zip(onames, fo)))
    # PyTorch's training: the same module, data and SGD
    opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=mom)
    losses = []
    for k in range(STEPS):
        MtcDropout.step = k + 1
        opt.zero_grad()
        o = ref(*xs.values())
        o = o if isinstance(o, tuple) else (o,)
        lv = o[0] if loss == "own" else F.cross_entropy(o[0].reshape(-1, o[0].shape[-1]), y.reshape(-1))
        if loss == "xent+mse":
            lv = lv + F.mse_loss(o[1], data["t"])
        lv.backward()
        opt.step()
        losses.append(lv.item())
    with open(os.path.join(out, name + ".loss"), "w") as f:
        f.write("".join("%.9g\n" % v for v in losses))
    bufs = dict(("net." + k, v) for k, v in ref.state_dict().items() if k.endswith(("running_mean", "running_var")))
    if bufs:
        st_write(os.path.join(out, name + ".buffers.st"), bufs)
    # the tdsl model that trains the import
    fz = FROZEN.get(name)
    lines = ['import "%s.onnx" as net%s;' % (name, " frozen " + ", ".join('"%s"' % f for f in fz) if fz else ""),
             "model %s_train {" % name]
    for k, t in xs.items():
        lines.append("  input %s : %s;" % (k, tdsl_type(t)))
    if y is not None:
        lines.append("  input y : %s;" % tdsl_type(y))
    if loss == "xent+mse":
        lines.append("  input t : %s;" % tdsl_type(data["t"]))
    res = ", ".join("o%d" % i for i in range(len(outs)))
    lines.append("  %s = net(%s);" % (res, ", ".join(xs)))
    lines.append("  loss = %s;" % ("o0" if loss == "own" else "cross_entropy(o0, y)" +
                                     (" + mse(o1, t)" if loss == "xent+mse" else "")))
    lines.append("  output o0;")
    lines.append("  train loss with sgd(lr = %g, momentum = %g);" % (lr, mom))
    lines.append("}")
    with open(os.path.join(out, name + ".tdsl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    args = []
    for k, axes in (dyn or {}).items():
        for ax, sym in axes.items():
            args.append("-D %s=%d" % (sym, xs[k].shape[ax]))
    with open(os.path.join(out, name + ".args"), "w") as f:
        f.write(" ".join(args) + "\n")


def main():
    if len(sys.argv) < 2:
        print(__doc__ if __doc__ else "usage: models.py OUTDIR [NAME...]", file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        export(name, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
