#!/usr/bin/python3
# torch_step.py: PyTorch's median training-step time on the GPU, for gpu.sh: the model of
# examples/transformer.tdsl (bench/torch_check.py's, Adam) at the scale given with -D, or
# torchvision's ResNet-18 (bench/resnet18.tdsl's; -D B, -D S), SGD with momentum.
#
# usage: tests/cuda/torch_step.py [--model transformer|resnet18] [-D NAME=INT]... [--steps N]
#                                 [--warmup N] [--compile] [--budget F]
# --compile: the loss under torch.compile (its backward through AOTAutograd); --budget F sets
# torch._functorch.config.activation_memory_budget (1.0: keep every activation; 0.5: the
# partitioner recomputes until the saved activations are at most half). f32 as mtc computes
# it: TF32 off for matrix products and for cuDNN's convolutions (PyTorch allows it by default
# in cuDNN); --tf32 allows both.
# prints: torch_step_ms T peak_bytes P device NAME [tf32]
import argparse
import os
import statistics
import sys
import time

import torch

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "bench"))
from torch_check import transformer_loss  # noqa: E402  (the one PyTorch model of the example)


def transformer(c, dev, compile_):
    """examples/transformer.tdsl's model and Adam: the step's closure."""
    B, S, D, L, V = c["B"], c["S"], c["D"], c["L"], c["V"]
    F = 4 * D
    g = torch.Generator(device=dev).manual_seed(0)

    def normal(*shape):
        return torch.randn(*shape, device=dev, generator=g) * 0.02

    p = {"emb": normal(V, D), "pos": normal(S, D), "gf": torch.ones(D, device=dev),
         "bf": torch.zeros(D, device=dev), "head": normal(D, V)}
    for i in range(L):
        for n in ("g1", "g2"):
            p["%s.%d" % (n, i)] = torch.ones(D, device=dev)
        for n in ("b1", "b2", "c2"):
            p["%s.%d" % (n, i)] = torch.zeros(D, device=dev)
        for n in ("wq", "wk", "wv", "wo"):
            p["%s.%d" % (n, i)] = normal(D, D)
        p["w1.%d" % i], p["c1.%d" % i], p["w2.%d" % i] = normal(D, F), torch.zeros(F, device=dev), normal(F, D)
    for t in p.values():
        t.requires_grad_(True)
    tok = torch.randint(0, V, (B, S), device=dev, generator=g)
    tgt = torch.randint(0, V, (B, S), device=dev, generator=g)
    mask = torch.triu(torch.full((S, S), -1e9, device=dev), 1)
    opt = torch.optim.Adam(list(p.values()), lr=0.001)
    loss_fn = torch.compile(transformer_loss) if compile_ else transformer_loss

    def step():
        opt.zero_grad()
        loss_fn(p, tok, tgt, mask, c).backward()
        opt.step()
    return step


def resnet18(c, dev, compile_):
    """torchvision's ResNet-18 (bench/resnet18.tdsl's model) and SGD with momentum."""
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=1000).to(dev)
    x = torch.randn(c["B"], 3, c["S"], c["S"], device=dev)
    y = torch.randint(0, 1000, (c["B"],), device=dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    fwd = torch.compile(m) if compile_ else m

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(fwd(x), y).backward()
        opt.step()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-D", action="append", default=[], help="NAME=INT, as for mtc")
    ap.add_argument("--model", choices=("transformer", "resnet18"), default="transformer")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="cpu: try the script without a GPU")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--budget", type=float, default=None,
                    help="activation_memory_budget for --compile")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 (matmul and cuDNN)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    c = ({"B": 8, "S": 64, "D": 64, "H": 4, "L": 2, "V": 128} if a.model == "transformer"
         else {"B": 64, "S": 224})
    for d in a.D:
        k, v = d.split("=")
        c[k] = int(v)
    gpu = a.device == "cuda"
    if gpu and not torch.cuda.is_available():
        print("torch_step: no CUDA device for PyTorch")
        return 2
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    if a.compile and not hasattr(torch, "compile"):
        print("torch_step: this PyTorch (%s) has no torch.compile" % torch.__version__)
        return 2
    if a.compile and a.budget is not None:
        import torch._functorch.config as fc
        if not hasattr(fc, "activation_memory_budget"):
            print("torch_step: this PyTorch (%s) has no activation_memory_budget" % torch.__version__)
            return 2
        fc.activation_memory_budget = a.budget
    step = (transformer if a.model == "transformer" else resnet18)(c, dev, a.compile)
    times = []
    for s in range(a.warmup + a.steps):
        if s == a.warmup and gpu:
            torch.cuda.reset_peak_memory_stats()
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        if s >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    print("torch_step_ms %.3f peak_bytes %d device %s%s%s" % (
        statistics.median(times), torch.cuda.max_memory_allocated() if gpu else 0,
        torch.cuda.get_device_name().replace(" ", "_") if gpu else "cpu",
        "" if not a.compile else " compile budget %s" % a.budget, " tf32" if a.tf32 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
