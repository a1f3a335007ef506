/* onnxconv.c: the ONNX ops of convolutional networks: Conv, ConvTranspose, MaxPool,
 * AveragePool, the global pools, InstanceNormalization, Resize (the table: onnxops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"

/* ---------- convolutional networks ---------- */

/* A window node over sp spatial axes (1: NCL, 2: NCHW) is imported as a 2-D one, an NCL
 * tensor read as [N, C, 1, L] (lift) and its result reshaped back (unlift); the node's
 * attributes then give the last axis alone, the first being 1 wide, strides 1, no pad. */
static int
lift(Ox *x, int v, Type *t)
{
	if (t->sh.rank != 3)
		return v;
	t->sh = (Shape){ 4, { t->sh.d[0], t->sh.d[1], 1, t->sh.d[2] } };
	return xreshape(x, v, &t->sh);
}

static int
unlift(Ox *x, int v, int sp)
{
	const Shape *sh;

	if (sp == 2 || v < 0)
		return v;
	sh = &x->c->f->val[v].ty.sh;
	return xreshape(x, v, &(Shape){ 3, { sh->d[0], sh->d[1], sh->d[3] } });
}

/* Attribute name's sp values (pads: sp begins, then sp ends) into a[2 - sp ..]: 0, 1 if it is
 * absent, -1 after an error. */
static int
window_ints(Ox *x, const char *name, int sp, int64_t *a, int64_t *end)
{
	int64_t v[4];
	int n = end ? 2 * sp : sp;

	if (!ox_attr(x->nd, name))
		return 1;
	if (att_ints(x, name, v, 4) != n)
		return xerr(x, "%s must give %d value%s", name, n, n > 1 ? "s" : "");
	for (int i = 0; i < sp; i++) {
		a[2 - sp + i] = v[i];
		if (end)
			end[2 - sp + i] = v[sp + i];
	}
	return 0;
}

/* A window's strides, dilations and pads over sp spatial axes, 1, 1 and 0 where absent: the
 * pads before in p, after in pe; without pe, both sides alike (as PyTorch pads) or an error.
 * 0, or -1 after an error. */
static int
window_atts(Ox *x, int sp, int64_t *s, int64_t *p, int64_t *d, int64_t *pe)
{
	int64_t e[2] = { 0, 0 };

	s[0] = s[1] = d[0] = d[1] = 1;
	p[0] = p[1] = 0;
	if (window_ints(x, "strides", sp, s, NULL) < 0 || window_ints(x, "dilations", sp, d, NULL) < 0 ||
	    window_ints(x, "pads", sp, p, e) < 0)
		return -1;
	if (pe) {
		pe[0] = e[0];
		pe[1] = e[1];
		return 0;
	}
	if (p[0] != e[0] || p[1] != e[1])
		return xerr(x, "asymmetric pads (%lld, %lld before, %lld, %lld after the last two axes) are not "
		            "supported (PyTorch pads both sides alike)", (long long)p[0], (long long)p[1],
		            (long long)e[0], (long long)e[1]);
	return 0;
}

/* The window of a Conv or pool node over sp spatial axes, its input of type t (lifted: NCHW):
 * kernel k (from the attribute, or the weight's dims kw), strides, pads and dilations.
 * auto_pad VALID is no padding; SAME_UPPER and SAME_LOWER pad an odd total's extra one after
 * or before. The IR's windows pad both sides alike: p is the part both sides share, and xp
 * the rest (before axes 2 and 3, then after them), which the caller concatenates to the
 * input (pad_window). 0, or -1 after an error. */
static int
window2d(Ox *x, const Type *t, int sp, const int64_t *kw, int64_t *k, int64_t *s, int64_t *p,
         int64_t *d, int64_t *xp)
{
	Onnx__AttributeProto *ap = ox_attr(x->nd, "auto_pad");
	const char *pad = ap && ap->has_s ? (const char *)ap->s.data : "NOTSET";
	size_t padn = ap && ap->has_s ? ap->s.len : 6;
	int64_t pe[2] = { 0, 0 };
	int r;

	if (t->dt != F32 || t->sh.rank != 4)
		return xerr(x, "mtc imports 1-D and 2-D windows over NCL and NCHW tensors; the input is of "
		            "rank %d", sp == 1 ? 3 : t->sh.rank);
	k[0] = kw ? kw[0] : 1, k[1] = kw ? kw[1] : 0;
	if ((r = window_ints(x, "kernel_shape", sp, k, NULL)) < 0)
		return -1;
	if (r && !kw)
		return xerr(x, "kernel_shape must give %d size%s", sp, sp > 1 ? "s" : "");
	if (window_atts(x, sp, s, p, d, pe))
		return -1;
	for (int i = 0; i < 2; i++)
		if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0 || pe[i] < 0 || k[i] > INT32_MAX ||
		    s[i] > INT32_MAX || d[i] > INT32_MAX || p[i] > INT32_MAX || pe[i] > INT32_MAX)
			return xerr(x, "a window needs positive sizes, strides and dilations and pads of 0 or more");
	if (padn == 5 && memcmp(pad, "VALID", 5) == 0) {
		p[0] = p[1] = pe[0] = pe[1] = 0;
	} else if (padn >= 8 && memcmp(pad, "SAME_", 5) == 0) {
		int lower = padn == 10 && memcmp(pad, "SAME_LOWER", 10) == 0;
		for (int i = 0; i < 2; i++) {
			int64_t n = t->sh.d[2 + i], out = (n + s[i] - 1) / s[i];
			int64_t tot = (out - 1) * s[i] + d[i] * (k[i] - 1) + 1 - n;
			if (tot < 0)
				tot = 0;
			/* an odd total: the extra one after (SAME_UPPER) or before (SAME_LOWER) */
			p[i] = lower ? tot - tot / 2 : tot / 2;
			pe[i] = tot - p[i];
		}
	} else if (!(padn == 6 && memcmp(pad, "NOTSET", 6) == 0)) {
		return xerr(x, "auto_pad '%.*s' is not supported", (int)(padn > 32 ? 32 : padn), pad);
	}
	for (int i = 0; i < 2; i++) {
		/* the pads both sides share stay the window's; the rest, xp, is the caller's */
		int64_t m = p[i] < pe[i] ? p[i] : pe[i];
		xp[i] = p[i] - m;
		xp[2 + i] = pe[i] - m;
		p[i] = m;
	}
	if (window_out(t->sh.d[2] + xp[0] + xp[2], k[0], s[0], p[0], d[0]) < 1 ||
	    window_out(t->sh.d[3] + xp[1] + xp[3], k[1], s[1], p[1], d[1]) < 1)
		return xerr(x, "a %lldx%lld window does not fit the input", (long long)k[0], (long long)k[1]);
	return 0;
}

/* v (NCHW, its type in t) padded by xp (window2d's: before axes 2 and 3, after them) with
 * blocks of val concatenated: the part of asymmetric pads the window does not take. */
static int
pad_window(Ox *x, int v, Type *t, const int64_t *xp, double val)
{
	for (int i = 0; i < 4 && v >= 0; i++) {
		int a = 2 + i % 2, parts[2];
		int64_t ia[MAXIA] = { a };
		Shape sh = x->c->f->val[v].ty.sh;
		if (!xp[i])
			continue;
		sh.d[a] = xp[i];
		parts[i < 2 ? 0 : 1] = xconst(x, val, &sh);
		parts[i < 2 ? 1 : 0] = v;
		v = xemit(x, OP_CONCAT, parts, 2, ia, 1, NULL, NULL);
	}
	if (v >= 0)
		t->sh = x->c->f->val[v].ty.sh;
	return v;
}

/* Conv: the ops of tdsl's conv2d (frontend/nn.c): conv2d with its workspace (none for a
 * pointwise convolution), plus the bias as f32[Cout, 1, 1]. */
int
emit_conv(Ox *x)
{
	int64_t k[2], s[2], p[2], d[2], xp[4], g = att_i(x, "group", 1);
	Type tx, tw;
	int v, c, sp, xv, wv;

	if (in_type(x, 0, &tx) || in_type(x, 1, &tw))
		return -1;
	sp = tx.sh.rank == 3 ? 1 : 2;
	if (tx.dt != F32 || tx.sh.rank < 3 || tx.sh.rank > 4)
		return xerr(x, "mtc imports 1-D and 2-D convolutions over NCL and NCHW tensors; the input is "
		            "of rank %d%s", tx.sh.rank, tx.sh.rank == 5 ? " (a 3-D convolution)" : "");
	if (tw.dt != F32 || tw.sh.rank != sp + 2)
		return xerr(x, "the weight must be f32[Cout, Cin/group, %s]", sp == 1 ? "k" : "kh, kw");
	xv = lift(x, in_t(x, 0), &tx);
	wv = lift(x, in_t(x, 1), &tw);
	if (window2d(x, &tx, sp, &tw.sh.d[2], k, s, p, d, xp) ||
	    (xv = pad_window(x, xv, &tx, xp, 0)) < 0)
		return -1;
	if (k[0] != tw.sh.d[2] || k[1] != tw.sh.d[3])
		return xerr(x, "kernel_shape disagrees with the weight's dims");
	if (g < 1 || tx.sh.d[1] % g || tw.sh.d[0] % g || tw.sh.d[1] * g != tx.sh.d[1])
		return xerr(x, "group=%lld does not fit %lld input and %lld output channels", (long long)g,
		            (long long)tx.sh.d[1], (long long)tw.sh.d[0]);
	{
		int64_t ia[MAXIA] = { s[0], s[1], p[0], p[1], d[0], d[1], g };
		int ops[3] = { xv, wv, -1 };
		Type ws;
		c = 2;
		if (conv_workspace(&tx.sh, &tw.sh, ia, &ws))
			ops[c++] = xemit(x, OP_WORKSPACE, NULL, 0, NULL, 0, NULL, &ws);
		v = xemit(x, OP_CONV2D, ops, c, ia, 7, NULL, NULL);
	}
	if (has_in(x, 2))
		v = xemit2(x, OP_ADD, v, xreshape(x, in_t(x, 2), &(Shape){ 3, { tw.sh.d[0], 1, 1 } }));
	v = unlift(x, v, sp);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* ConvTranspose over NCHW: the adjoint of a convolution, conv2d_dx(W, x), W f32[Cin, Cout/group,
 * kh, kw] being that convolution's weight; each axis's output (n - 1) s - 2 p + d (k - 1) + 1 +
 * output_padding, output_padding under the stride (so the convolution of the output gives n back).
 * Pads as the convolution's: both sides alike, given, or from output_shape or auto_pad SAME where
 * they come out so. */
int
emit_convt(Ox *x)
{
	int64_t k[2], s[2], p[2], d[2], op[2] = { 0, 0 }, o[2], v[4], g = att_i(x, "group", 1);
	int same = att_is(x, "auto_pad", "NOTSET", "SAME_UPPER") || att_is(x, "auto_pad", "NOTSET", "SAME_LOWER");
	int nos, sp, xv, wv;
	Type tx, tw, ty;

	if (in_type(x, 0, &tx) || in_type(x, 1, &tw))
		return -1;
	sp = tx.sh.rank == 3 ? 1 : 2;
	if (tx.dt != F32 || tx.sh.rank < 3 || tx.sh.rank > 4)
		return xerr(x, "mtc imports 1-D and 2-D transposed convolutions over NCL and NCHW tensors; the "
		            "input is of rank %d", tx.sh.rank);
	if (tw.dt != F32 || tw.sh.rank != sp + 2)
		return xerr(x, "the weight must be f32[Cin, Cout/group, %s]", sp == 1 ? "k" : "kh, kw");
	xv = lift(x, in_t(x, 0), &tx);
	wv = lift(x, in_t(x, 1), &tw);
	if (!same && !att_is(x, "auto_pad", "NOTSET", "NOTSET") && !att_is(x, "auto_pad", "NOTSET", "VALID"))
		return xerr(x, "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER");
	k[0] = tw.sh.d[2], k[1] = tw.sh.d[3];
	o[0] = k[0], o[1] = k[1];
	if (window_ints(x, "kernel_shape", sp, o, NULL) < 0 || window_atts(x, sp, s, p, d, NULL) < 0 ||
	    window_ints(x, "output_padding", sp, op, NULL) < 0)
		return -1;
	if (o[0] != k[0] || o[1] != k[1])
		return xerr(x, "kernel_shape disagrees with the weight's dims");
	if (att_is(x, "auto_pad", "NOTSET", "VALID"))
		p[0] = p[1] = 0;
	for (int i = 0; i < 2; i++)
		if (k[i] > INT32_MAX || s[i] < 1 || s[i] > INT32_MAX || d[i] < 1 || d[i] > INT32_MAX || p[i] < 0 ||
		    p[i] > INT32_MAX || op[i] < 0 || op[i] >= s[i] || tx.sh.d[2 + i] > INT32_MAX)
			return xerr(x, "a transposed convolution needs positive strides and dilations, pads of 0 "
			            "or more and output_padding under the stride");
	nos = ox_attr(x->nd, "output_shape") ? att_ints(x, "output_shape", v, 4) : 0;
	if (nos != 0 && nos != sp && nos != sp + 2)
		return xerr(x, "output_shape must give %d size%s", sp, sp > 1 ? "s" : "");
	for (int i = 0; i < 2; i++) {
		int64_t n = tx.sh.d[2 + i], full = (n - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i], want = -1;
		if (nos && i >= 2 - sp)
			want = v[nos - 2 + i];
		else if (same)
			want = n * s[i];
		if (want >= 0) {
			if (want > full || (full - want) % 2)
				return xerr(x, "an output of %lld on axis %d needs uneven or negative padding (%lld in "
				            "all), which is not supported", (long long)want, 2 + i, (long long)(full - want));
			p[i] = (full - want) / 2;
		}
		o[i] = full - 2 * p[i];
		if (o[i] < 1)
			return xerr(x, "the output of axis %d is empty (pads %lld)", 2 + i, (long long)p[i]);
	}
	if (g < 1 || tw.sh.d[0] != tx.sh.d[1] || tw.sh.d[0] % g || mul64(tw.sh.d[1], g, &v[0]))
		return xerr(x, "group=%lld does not fit %lld input channels and a weight of %lld", (long long)g,
		            (long long)tx.sh.d[1], (long long)tw.sh.d[0]);
	ty = (Type){ F32, { 4, { tx.sh.d[0], v[0], o[0], o[1] } } };
	{
		int64_t ia[MAXIA] = { s[0], s[1], p[0], p[1], d[0], d[1], g };
		int ops[3] = { wv, xv, -1 }, c = 2, r;
		Type ws;
		if (conv_workspace(&ty.sh, &tw.sh, ia, &ws))
			ops[c++] = xemit(x, OP_WORKSPACE, NULL, 0, NULL, 0, NULL, &ws);
		r = xemit(x, OP_CONV2D_DX, ops, c, ia, 7, NULL, &ty);
		if (has_in(x, 2))
			r = xemit2(x, OP_ADD, r, xreshape(x, in_t(x, 2), &(Shape){ 3, { ty.sh.d[1], 1, 1 } }));
		r = unlift(x, r, sp);
		if (r < 0)
			return -1;
		out_t(x, 0, r);
	}
	return 0;
}

/* ceil_mode's windows past floor's on axis 2 + i, as PyTorch counts them (its last window
 * starts inside the input or the left pad): the elements past the right pad they reach. */
static int64_t
ceil_extra(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d)
{
	int64_t span = d * (k - 1) + 1, lo = window_out(n, k, s, p, d);
	int64_t hi = (n + 2 * p - span + s - 1) / s + 1;

	if ((hi - 1) * s >= n + p)
		hi--;
	return hi > lo ? (hi - 1) * s + span - (n + 2 * p) : 0;
}

/* The divisor PyTorch gives average pool window o on an axis of n (kernel k, stride s, pad p
 * each side): the window cut at the right pad (ceil_mode's last ones reach past it), and with
 * count_include_pad off, to the input. */
static int64_t
avg_divisor(int64_t o, int64_t n, int64_t k, int64_t s, int64_t p, int cip)
{
	int64_t lo = o * s - p, hi = lo + k < n + p ? lo + k : n + p;

	if (!cip)
		lo = lo < 0 ? 0 : lo, hi = hi < n ? hi : n;
	return hi - lo;
}

/* v times the factors k / divisor of the ho windows on axis 2 + i (avg_divisor's), a constant
 * f32[1, 1, ho, 1] or [1, 1, 1, ho] concatenated from runs of one factor; v where all are 1.
 * Only windows that start before the input (count_include_pad off) or reach past the right
 * pad (the input, off) have a divisor other than k: those before a and from b on; the rest
 * are one run, so an axis of any length costs those windows alone (at most MAXPART). */
enum { MAXPART = 4096 };
static int
avg_scale(Ox *x, int v, int i, int64_t n, int64_t k, int64_t s, int64_t p, int cip, int64_t ho)
{
	int64_t a = cip ? 0 : (p + s - 1) / s, lim = cip ? n + p : n;
	int64_t b = lim + p - k < 0 ? 0 : (lim + p - k) / s + 1, part;
	int *run, nr = 0, all1 = 1, c;
	int64_t ax[MAXIA] = { 2 + i };

	a = a < ho ? a : ho, b = b < ho ? b : ho;
	part = b > a ? a + (ho - b) : ho;
	if (part > MAXPART)
		return xerr(x, "ceil_mode gives %lld windows of other sizes than the kernel's on axis %d "
		            "(at most %d)", (long long)part, 2 + i, MAXPART);
	run = xcalloc((size_t)part + 2, sizeof *run);
	for (int64_t o = 0, len; o < ho && v >= 0; o += len) {
		int64_t dv = o >= a && o < b ? k : avg_divisor(o, n, k, s, p, cip);
		Shape sh = { 4, { 1, 1, 1, 1 } };
		len = o >= a && o < b ? b - o : 1;
		while (o + len < ho && !(o + len >= a && o + len < b) && avg_divisor(o + len, n, k, s, p, cip) == dv)
			len++;
		sh.d[2 + i] = len;
		all1 &= dv == k;
		if ((run[nr++] = xconst(x, (double)k / (double)dv, &sh)) < 0)
			v = -1;
	}
	if (v >= 0 && !all1) {
		c = nr == 1 ? run[0] : xemit(x, OP_CONCAT, run, nr, ax, 1, NULL, NULL);
		v = xemit2(x, OP_MUL, v, c);
	}
	free(run);
	return v;
}

/* MaxPool and AveragePool: max_pool2d and avg_pool2d (PyTorch's: the pads at most half the
 * kernel). ceil_mode where it adds windows (each starts inside the input): a max pool over
 * the input with -inf rows and columns after it, which no window's maximum takes; an average
 * pool over it with zeros there, counting every place of its windows, then scaled on each
 * axis to PyTorch's divisors (avg_divisor). */
int
emit_pool(Ox *x)
{
	int mx = strcmp(x->nd->op, "MaxPool") == 0, v, sp;
	int64_t k[2], s[2], p[2], d[2], e[2] = { 0, 0 }, xp[4];
	Type t;

	if (in_type(x, 0, &t))
		return -1;
	sp = t.sh.rank == 3 ? 1 : 2;
	v = lift(x, in_t(x, 0), &t);
	if (window2d(x, &t, sp, NULL, k, s, p, d, xp))
		return -1;
	if (xp[0] || xp[1] || xp[2] || xp[3]) {
		/* asymmetric pads: -inf for a max pool, which no window's maximum takes (each window
		 * holds an input element), zeros for an average pool that counts its padding */
		if (att_i(x, "ceil_mode", 0))
			return xerr(x, "asymmetric pads with ceil_mode are not supported");
		if (!mx && !att_i(x, "count_include_pad", 0))
			return xerr(x, "asymmetric pads of an average pool that does not count its padding "
			            "are not supported");
		if ((v = pad_window(x, v, &t, xp, mx ? -INFINITY : 0)) < 0)
			return -1;
	}
	if (att_i(x, "ceil_mode", 0))
		for (int i = 0; i < 2; i++)
			e[i] = ceil_extra(t.sh.d[2 + i], k[i], s[i], p[i], d[i]);
	if (!mx && (d[0] != 1 || d[1] != 1))
		return xerr(x, "an average pool with dilations is not supported");
	if (mx && att_i(x, "storage_order", 0))
		return xerr(x, "storage_order 1 is not supported");
	for (int i = 0; i < 2; i++) {
		int64_t m = p[i] + (xp[i] > xp[2 + i] ? xp[i] : xp[2 + i]);
		if (2 * m > d[i] * (k[i] - 1) + 1)
			return xerr(x, "a pad of %lld is more than half of the window's %lld", (long long)m,
			            (long long)(d[i] * (k[i] - 1) + 1));
	}
	{
		int cip = att_i(x, "count_include_pad", 0) != 0, ceil = e[0] || e[1];
		int64_t ia[MAXIA] = { k[0], k[1], s[0], s[1], p[0], p[1], mx ? d[0] : cip || ceil, d[1] };
		for (int i = 0; i < 2 && v >= 0; i++)
			if (e[i]) {
				Shape sh = x->c->f->val[v].ty.sh;
				int64_t ax[MAXIA] = { 2 + i };
				int c;
				sh.d[2 + i] = e[i];
				c = xconst(x, mx ? -INFINITY : 0, &sh);
				v = c < 0 ? -1 : xemit(x, OP_CONCAT, (int[]){ v, c }, 2, ax, 1, NULL, NULL);
			}
		if (v >= 0)
			v = xemit(x, mx ? OP_MAXPOOL : OP_AVGPOOL, (int[]){ v }, 1, ia, mx ? 8 : 7, NULL, NULL);
		for (int i = 0; i < 2 && !mx && ceil && v >= 0; i++)
			v = avg_scale(x, v, i, t.sh.d[2 + i], k[i], s[i], p[i], cip,
			              x->c->f->val[v].ty.sh.d[2 + i]);
	}
	v = unlift(x, v, sp);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* GlobalAveragePool: the mean over every axis after the first two, kept. GlobalMaxPool (1-D,
 * 2-D): a max_pool2d whose window is the whole map, as PyTorch exports adaptive_max_pool2d(x,
 * 1): a NaN kept, the gradient to the first largest. */
int
emit_gap(Ox *x)
{
	int mask[MAXRANK] = { 0 }, v = in_t(x, 0), r;

	if (v < 0)
		return -1;
	if ((r = x->c->f->val[v].ty.sh.rank) < 3)
		return xerr(x, "the input must have spatial axes");
	if (strcmp(x->nd->op, "GlobalMaxPool") == 0) {
		Type t = x->c->f->val[v].ty;
		int64_t ia[MAXIA] = { 0, 0, 1, 1, 0, 0, 1, 1 };
		if (r > 4)
			return xerr(x, "a %d-D pool is not supported (1-D and 2-D are)", r - 2);
		v = lift(x, v, &t);
		ia[0] = t.sh.d[2];
		ia[1] = t.sh.d[3];
		if (v < 0 || (v = unlift(x, xemit(x, OP_MAXPOOL, &v, 1, ia, 8, NULL, NULL), r == 3 ? 1 : 2)) < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	for (int a = 2; a < r; a++)
		mask[a] = 1;
	if ((v = mean_axes(x, v, mask, 1)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* InstanceNormalization(x, scale, B): each (n, c)'s values normalized over the other axes (a
 * layernorm of the rows of x as [N C, rest], no gain of its own), then scale and B per channel;
 * PyTorch's InstanceNorm and, exported through it, GroupNorm. */
int
emit_instnorm(Ox *x)
{
	double fa[MAXFA] = { att_f(x, "epsilon", 1e-5) };
	int v = in_t(x, 0), g, b;
	Shape sx, flat, row, par;

	if (v < 0)
		return -1;
	sx = x->c->f->val[v].ty.sh;
	if (sx.rank < 3)
		return xerr(x, "the input must be [N, C, ...] with at least one axis after C");
	flat = (Shape){ 2, { sx.d[0] * sx.d[1], 1 } };
	for (int i = 2; i < sx.rank; i++)
		flat.d[1] *= sx.d[i];
	row = (Shape){ 1, { flat.d[1] } };
	par = (Shape){ sx.rank - 1, { sx.d[1] } };
	for (int i = 1; i < par.rank; i++)
		par.d[i] = 1;
	v = xemit(x, OP_LAYERNORM, (int[]){ xreshape(x, v, &flat), xconst(x, 1, &row), xconst(x, 0, &row) },
	          3, NULL, 0, fa, NULL);
	g = xreshape(x, in_t(x, 1), &par);
	b = xreshape(x, in_t(x, 2), &par);
	v = xemit2(x, OP_ADD, xemit2(x, OP_MUL, xreshape(x, v, &sx), g), b);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Resize's interpolation of one axis as a matrix f32[o, n]: output j reads input coordinate
 * c(j) (by the coordinate transformation ct: 0 half_pixel, 1 pytorch_half_pixel, 2
 * align_corners, 3 asymmetric), the nearest input (nm: 0 round_prefer_floor, 1
 * round_prefer_ceil, 2 floor, 3 ceil), or (linear 1) the two around it, linearly (c below 0
 * taken as 0, past the last input as the last, as PyTorch's), or (linear 2) the four around
 * it, cubic (with coefficient ca). */
static Kv *
resize_matrix(Ox *x, int64_t n, int64_t o, double scale, int linear, int ct, int nm, double ca)
{
	Kv *k = knew(x, KF, &(Shape){ 2, { o, n } });

	for (int64_t j = 0; k && j < o; j++) {
		double c = ct == 0 ? (j + 0.5) / scale - 0.5 : ct == 1 ? (o > 1 ? (j + 0.5) / scale - 0.5 : 0)
		         : ct == 2 ? (o > 1 ? (double)j * (n - 1) / (o - 1) : 0) : j / scale;
		if (linear == 2) {
			/* cubic: four taps from floor(c) - 1, each index clamped to the axis (edge
			 * padding), Keys' kernel with coefficient a, as PyTorch's bicubic and ONNX's */
			double f = floor(c), t = c - f, w[4];
			w[0] = ((ca * (t + 1) - 5 * ca) * (t + 1) + 8 * ca) * (t + 1) - 4 * ca;
			w[1] = ((ca + 2) * t - (ca + 3)) * t * t + 1;
			w[2] = ((ca + 2) * (1 - t) - (ca + 3)) * (1 - t) * (1 - t) + 1;
			w[3] = ((ca * (2 - t) - 5 * ca) * (2 - t) + 8 * ca) * (2 - t) - 4 * ca;
			for (int q = 0; q < 4; q++) {
				double i = f - 1 + q;
				i = i < 0 ? 0 : i > (double)(n - 1) ? (double)(n - 1) : i;
				k->f[j * n + (int64_t)i] += (float)w[q];
			}
		} else if (!linear) {
			double f = floor(c);
			int64_t i = nm == 2 ? (int64_t)f : nm == 3 ? (int64_t)ceil(c)
			          : c - f == 0.5 ? (int64_t)f + (nm == 1) : (int64_t)floor(c + 0.5);
			i = i < 0 ? 0 : i > n - 1 ? n - 1 : i;
			k->f[j * n + i] = 1;
		} else {
			int64_t i;
			double l;
			c = c < 0 ? 0 : c;
			i = (int64_t)floor(c);
			if (i >= n - 1)
				i = n - 1, l = 0;
			else
				l = c - (double)i;
			k->f[j * n + i] += (float)(1 - l);
			if (l > 0)
				k->f[j * n + i + 1] += (float)l;
		}
	}
	return k;
}

/* Resize and Upsample of an NCHW tensor's last two axes (N and C unscaled), nearest or
 * linear: each axis's interpolation as a constant matrix (resize_matrix), y = A_h x A_w^T
 * as two matmuls, whose gradients are the matrices' transposes'. PyTorch's interpolate
 * (nearest, bilinear, with and without align_corners). */
int
emit_resize(Ox *x)
{
	static const char *const cts[] = { "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric" };
	static const char *const nms[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
	int up = strcmp(x->nd->op, "Upsample") == 0 || x->o->opset < 11, v = in_t(x, 0), ct = -1, nm = -1;
	int linear = att_is(x, "mode", "nearest", "linear") || att_is(x, "mode", "nearest", "bilinear");
	double ca = att_f(x, "cubic_coeff_a", -0.75);
	double sc[4];
	int64_t out[4];
	Type t;
	Kv *k;

	if (v < 0 || in_type(x, 0, &t))
		return -1;
	if (att_is(x, "mode", "nearest", "cubic") || att_is(x, "mode", "nearest", "bicubic"))
		linear = 2;
	if (!linear && !att_is(x, "mode", "nearest", "nearest"))
		return xerr(x, "mode must be nearest, linear or cubic");
	if (linear == 2 && att_i(x, "exclude_outside", 0))
		return xerr(x, "exclude_outside is not supported");
	for (int i = 0; i < 4; i++) {
		if (att_is(x, "coordinate_transformation_mode", up ? "asymmetric" : "half_pixel", cts[i]))
			ct = i;
		if (att_is(x, "nearest_mode", up ? "floor" : "round_prefer_floor", nms[i]))
			nm = i;
	}
	if (ct < 0)
		return xerr(x, "coordinate_transformation_mode must be one of half_pixel, "
		            "pytorch_half_pixel, align_corners or asymmetric");
	if (nm < 0)
		return xerr(x, "nearest_mode must be one of round_prefer_floor, round_prefer_ceil, floor or ceil");
	if (ox_attr(x->nd, "antialias") && att_i(x, "antialias", 0))
		return xerr(x, "antialias is not supported");
	if (ox_attr(x->nd, "axes"))
		return xerr(x, "axes are not supported (all four are resized)");
	if (t.dt != F32 || t.sh.rank != 4)
		return xerr(x, "mtc resizes NCHW f32 tensors; the input is of rank %d", t.sh.rank);
	if (!up && has_in(x, 3)) {
		if (!(k = in_k(x, 3)))
			return -1;
		if (k->dt == KF || k->n != 4)
			return xerr(x, "sizes must be 4 integers");
		for (int i = 0; i < 4; i++)
			out[i] = k->i[i], sc[i] = (double)out[i] / (double)t.sh.d[i];
	} else {
		int si = up ? 1 : 2;
		if (x->o->opset < 9 && !has_in(x, 1)) {
			Onnx__AttributeProto *a = ox_attr(x->nd, "scales");
			if (!a || a->n_floats != 4)
				return xerr(x, "scales must be 4 values");
			for (int i = 0; i < 4; i++)
				sc[i] = a->floats[i];
		} else {
			if (!(k = in_k(x, si)))
				return -1;
			if (k->dt != KF || k->n != 4)
				return xerr(x, "scales must be 4 floats (or sizes given)");
			for (int i = 0; i < 4; i++)
				sc[i] = k->f[i];
		}
		for (int i = 0; i < 4; i++) {
			double o = floor((double)t.sh.d[i] * sc[i]);
			if (!(o >= 0 && o <= INT32_MAX))       /* NaN too */
				return xerr(x, "a scale of %g makes axis %d %g long", sc[i], i, o);
			out[i] = (int64_t)o;
		}
	}
	if (out[0] != t.sh.d[0] || out[1] != t.sh.d[1])
		return xerr(x, "only the last two axes may be resized");
	for (int i = 2; i < 4; i++)
		if (out[i] < 1 || out[i] > INT32_MAX || !(sc[i] > 0))
			return xerr(x, "axis %d resized to %lld", i, (long long)out[i]);
	if (out[3] != t.sh.d[3] || sc[3] != 1) {
		if (!(k = resize_matrix(x, t.sh.d[3], out[3], sc[3], linear, ct, nm, ca)))
			return -1;
		v = xemit(x, OP_MATMUL, (int[]){ v, xknown(x, k, "resize") }, 2, (int64_t[MAXIA]){ 0, 1 }, 2, NULL, NULL);
	}
	if (v >= 0 && (out[2] != t.sh.d[2] || sc[2] != 1)) {
		if (!(k = resize_matrix(x, t.sh.d[2], out[2], sc[2], linear, ct, nm, ca)))
			return -1;
		v = xemit(x, OP_MATMUL, (int[]){ xknown(x, k, "resize"), v }, 2, (int64_t[MAXIA]){ 0, 0 }, 2, NULL, NULL);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}
