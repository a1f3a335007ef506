# svg.py: a line plot as a standalone SVG (no matplotlib on the machine): series of points,
# linear or log axes, a legend. Used by bench/sweep.py.
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f"]

def _ticks(lo, hi, log):
    if log:
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        return [10.0 ** e for e in range(a, b + 1)]
    step = 10 ** math.floor(math.log10((hi - lo) or 1))
    while (hi - lo) / step > 8:
        step *= 2
    while (hi - lo) / step < 4:
        step /= 2
    t, v = [], math.floor(lo / step) * step
    while v <= hi + step * 1e-9:
        t.append(v)
        v += step
    return t

def _fmt(v):
    return "%g" % float("%.3g" % v)

def plot(path, title, xlabel, ylabel, series, logx=False, logy=False):
    """series: list of (label, [(x, y)], dict(dash=bool, marker=bool, line=bool))."""
    pts = [p for _, ps, _ in series for p in ps if (not logx or p[0] > 0) and (not logy or p[1] > 0)]
    if not pts:
        return
    W, H, L, R, T, B = 760, 460, 70, 210, 40, 50
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if not logy:
        y0 = min(0, y0)
    if not logx:
        x0 = min(0, x0)
    xt, yt = _ticks(x0 if x0 > 0 or not logx else 1, x1 if x1 > x0 else x0 + 1, logx), \
        _ticks(y0 if y0 > 0 or not logy else 1, y1 if y1 > y0 else y0 + 1, logy)
    x0, x1, y0, y1 = min(xt[0], x0), max(xt[-1], x1), min(yt[0], y0), max(yt[-1], y1)
    tx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    ty = (lambda v: math.log10(v)) if logy else (lambda v: v)
    sx = lambda v: L + (tx(v) - tx(x0)) / ((tx(x1) - tx(x0)) or 1) * (W - L - R)
    sy = lambda v: H - B - (ty(v) - ty(y0)) / ((ty(y1) - ty(y0)) or 1) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12"><rect width="100%%" height="100%%" fill="white"/>' % (W, H),
         '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>' % ((W - R + L) / 2, title)]
    for v in xt:
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (sx(v), T, sx(v), H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (sx(v), H - B + 16, _fmt(v)))
    for v in yt:
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, sy(v), W - R, sy(v)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, sy(v) + 4, _fmt(v)))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' %
             (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((W - R + L) / 2, H - 12, xlabel))
    o.append('<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>' %
             ((H - B + T) / 2, (H - B + T) / 2, ylabel))
    for i, (label, ps, st) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        ps = sorted(p for p in ps if (not logx or p[0] > 0) and (not logy or p[1] > 0))
        if ps and st.get("line", True) and len(ps) > 1:
            o.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' %
                     (c, ' stroke-dasharray="6,4"' if st.get("dash") else "",
                      " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in ps)))
        for x, y in ps:
            if st.get("square"):
                o.append('<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>' % (sx(x) - 4.5, sy(y) - 4.5, c))
            else:
                o.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (sx(x), sy(y), c))
        ly = T + 10 + 18 * i
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' %
                 (W - R + 12, ly, W - R + 36, ly, c, ' stroke-dasharray="6,4"' if st.get("dash") else ""))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 42, ly + 4, label))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
