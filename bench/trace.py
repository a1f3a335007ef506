#!/usr/bin/python3
# trace.py: summarize traces written by `mtc-run MODEL.so --trace FILE` (CUDA modules): per
# stream its busy time and the share of it that overlaps a kernel on the compute stream (copies
# hidden behind compute), then the kernels that take the most time.
#
# usage: bench/trace.py [--top N] TRACE.json...
import argparse
import json
from collections import defaultdict


def union(spans):
    """Disjoint, sorted intervals covering the (start, end) pairs."""
    out = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(spans, cover):
    """Time of spans (possibly overlapping one another) inside the disjoint intervals cover."""
    t = 0.0
    for s, e in union(spans):
        for a, b in cover:
            if b <= s:
                continue
            if a >= e:
                break
            t += min(b, e) - max(a, s)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--top", type=int, default=5, help="kernels listed per trace")
    ap.add_argument("trace", nargs="+")
    a = ap.parse_args()
    for path in a.trace:
        d = json.load(open(path))
        names, ev = {}, defaultdict(list)
        for e in d["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            elif e.get("ph") == "X":
                ev[e["tid"]].append(e)
        comp = union([(e["ts"], e["ts"] + e["dur"]) for e in ev[0]])
        end = max((e["ts"] + e["dur"] for v in ev.values() for e in v), default=0)
        od = d.get("otherData", {})
        print("%s: model %s, step %s, traced step %.3f ms, peak %s bytes, budget %s" % (
            path, od.get("model"), od.get("step"), end / 1e3, od.get("peak_bytes"), od.get("budget_bytes")))
        for tid in sorted(ev):
            spans = [(e["ts"], e["ts"] + e["dur"]) for e in ev[tid]]
            busy = sum(b - s for s, b in union(spans))
            line = "  %-22s %5d spans, busy %9.1f us" % (names.get(tid, tid), len(spans), busy)
            if tid != 0 and busy > 0:
                line += ", %3.0f%% hidden behind compute" % (100 * overlap(spans, comp) / busy)
            print(line)
        per = defaultdict(float)
        cnt = defaultdict(int)
        for e in ev[0]:
            per[e["name"]] += e["dur"]
            cnt[e["name"]] += 1
        tot = sum(per.values()) or 1
        for n, t in sorted(per.items(), key=lambda x: -x[1])[:a.top]:
            print("    %-40s %4d calls %9.1f us %5.1f%%" % (n, cnt[n], t, 100 * t / tot))


if __name__ == "__main__":
    main()
