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
# arena). state_bytes: params, optimizer state, buffers and inputs, which live across steps.
import json, math, os, sys, time
import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchmodels import build

name, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
over = dict((a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[4:])
torch.set_num_threads(threads)
torch.manual_seed(0)
m = build(name, lambda n, v: over.get(n, v))
layers, first, head, ps, opt, inputs = (m[k] for k in ("layers", "first", "head", "ps", "opt", "inputs"))

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
    st = sum(p.numel() * 4 for p in ps) + sum(t.numel() * t.element_size() for t in inputs + m.get("bufs", []))
    st += sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values()
              if torch.is_tensor(v))
    print(json.dumps({"peer": peer, "segments": segs if peer == "ckpt-sqrt" else None,
                      "layers": n, "ms": round(median(ms), 3), "act_bytes": peak(loss),
                      "state_bytes": st}), flush=True)
