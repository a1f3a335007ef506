/* onnxindex.c: the ONNX ops that index: Gather, Slice, Split, Pad, GatherElements,
 * ScatterElements, ScatterND, OneHot, ArgMax/ArgMin and TopK (the table: onnxops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"

/* ---------- OneHot, ScatterND ---------- */

/* 1 where the run-time integer indices i (i32, or exact integers in f32) name a position
 * 0..n-1, else 0: equal of to_f32(i), a 1 inserted at axis p, with a constant of the positions along p (named name). With wrap a
 * negative index counts from n (ONNX's OneHot and GatherElements). Exact: n and every index
 * that can match are below 2^24. *fv, if given, gets to_f32(i). -1 after an error. */
int
onehot_eq(Ox *x, int i, int p, int64_t n, int wrap, const char *name, int *fv)
{
	const Shape one = { 0, { 0 } };
	Shape s = x->c->f->val[i].ty.sh;
	int f = x->c->f->val[i].ty.dt == I32 ? xemit1(x, OP_TOF32, i) : i, r = s.rank, a[3];
	Kv *pos;

	if (fv)
		*fv = f;
	if (wrap) {
		a[0] = xemit2(x, OP_LT, f, xconst(x, 0, &one));
		a[1] = xemit2(x, OP_ADD, f, xconst(x, (double)n, &one));
		a[2] = f;
		f = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	for (int d = r; d > p; d--)
		s.d[d] = s.d[d - 1];
	s.d[p] = 1;
	s.rank = r + 1;
	f = xreshape(x, f, &s);
	for (int d = 0; d <= r; d++)
		s.d[d] = d == p ? n : 1;
	if (f < 0 || !(pos = knew(x, KF, &s)))
		return -1;
	for (int64_t k = 0; k < pos->n; k++)
		pos->f[k] = (float)k;
	return xemit2(x, OP_EQ, f, xknown(x, pos, name));
}

/* The element of v that the one-hot e (0/1, broadcast against v) picks along axis ax (kept
 * as 1 with keep): the sum of select(e, v, -0), whose one term is the element's bits (-0
 * too; a select, not a product, so an infinite element not picked stays out), its gradient
 * to it alone. */
static int
onehot_take(Ox *x, int e, int v, int ax, int keep)
{
	const Shape one = { 0, { 0 } };
	int64_t ia[MAXIA] = { ax, keep };
	int a[3] = { e, v, xconst(x, -0.0, &one) };

	return xemit(x, OP_SUM, (int[]){ xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL) }, 1, ia, 2,
	             NULL, NULL);
}

/* OneHot of run-time integer indices (F.one_hot): equal(to_f32(i), 0..depth-1 along axis),
 * a negative index counted from depth (ONNX's), then select(e, on, off) unless they are 1
 * and 0. Indices out of range give a row of off, as ONNX says; exact, since depth and every
 * index that can match it are below 2^24. */
int
emit_onehot(Ox *x)
{
	const Shape one = { 0, { 0 } };
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "onehot";
	double depth = 0, off, on;
	int i = in_index(x, 0, "indices", 0), r, ax, e, a[3];
	Kv *vals = in_k(x, 2);

	if (i < 0 || kscalar(x, in_k(x, 1), &depth, "the depth") || !vals)
		return -1;
	if (vals->n != 2)
		return xerr(x, "the values must be [off, on], it has %lld", (long long)vals->n);
	off = kv_get(vals, 0);
	on = kv_get(vals, 1);
	if (!(depth >= 1 && depth <= 1 << 24) || depth != (double)(int64_t)depth)
		return xerr(x, "the depth %g is not an integer in [1, 2^24]", depth);
	r = x->c->f->val[i].ty.sh.rank;
	if (r + 1 > MAXRANK)
		return xerr(x, "the result would exceed rank %d", MAXRANK);
	if ((ax = axis_of(x, att_i(x, "axis", -1), r + 1)) < 0)
		return -1;
	e = onehot_eq(x, i, ax, (int64_t)depth, 1, asprintf_a(x->a, "%s.positions", nm), NULL);
	if (off == 0 && on == 1)
		return out_bool(x, e);
	a[0] = e;
	a[1] = xconst(x, on, &one);
	a[2] = xconst(x, off, &one);
	if ((e = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL)) < 0)
		return -1;
	out_t(x, 0, e);
	return 0;
}

/* ScatterND's shapes: indices ix integers of rank 1 or more, their last axis *k long (1 to
 * data's rank), updates of shape indices.shape[:-1] + data.shape[k:]. 0, or -1 after an
 * error. */
static int
scatternd_shapes(Ox *x, const Shape *ds, const Kv *ix, const Shape *us, int *k)
{
	if (ix->dt == KF || ix->sh.rank < 1)
		return xerr(x, "indices must be an integer tensor of rank 1 or more");
	*k = (int)ix->sh.d[ix->sh.rank - 1];
	if (*k < 1 || *k > ds->rank)
		return xerr(x, "indices' last axis is %d long, not 1 to the rank of data (%d)", *k, ds->rank);
	if (us->rank != ix->sh.rank - 1 + ds->rank - *k)
		return xerr(x, "updates have rank %d, not %d", us->rank, ix->sh.rank - 1 + ds->rank - *k);
	for (int i = 0; i < us->rank; i++)
		if (us->d[i] != (i < ix->sh.rank - 1 ? ix->sh.d[i] : ds->d[*k + i - (ix->sh.rank - 1)]))
			return xerr(x, "updates' dimension %d is %lld, not as indices and data give", i,
			            (long long)us->d[i]);
	return 0;
}

/* The row of data (its first k axes as one) that ScatterND's index j names, negative ones
 * counted from the end, into *at. 0, or -1 after an error. */
static int
scatternd_row(Ox *x, const Kv *ix, int64_t j, int k, const Shape *ds, int64_t *at)
{
	*at = 0;
	for (int a = 0; a < k; a++) {
		int64_t v = ix->i[j * k + a], n = ds->d[a];
		if (v < -n || v >= n)
			return xerr(x, "index %lld is out of range for an axis of %lld", (long long)v, (long long)n);
		*at = *at * n + (v < 0 ? v + n : v);
	}
	return 0;
}

/* ScatterND on known values (a mask written in place into zeros, Swin's shifted windows):
 * a copy of data with the slices that indices name replaced by updates' (or combined with
 * them by `reduction`, opset 16 on), indices' last axis k long, negative ones from the end;
 * updates of shape indices.shape[:-1] + data.shape[k:]. */
int
fold_scatternd(Ox *x)
{
	Kv *d = in_k(x, 0), *ix = in_k(x, 1), *u = in_k(x, 2), *r;
	int k, red = 0;
	int64_t inner = 1, nidx;
	static const char *const rname[] = { "none", "add", "mul", "max", "min" };

	if (!d || !ix || !u)
		return -1;
	for (int i = 1; i < 5; i++)
		if (att_is(x, "reduction", "none", rname[i]))
			red = i;
	if (!red && !att_is(x, "reduction", "none", "none"))
		return xerr(x, "reduction must be none, add, mul, max or min");
	if (scatternd_shapes(x, &d->sh, ix, &u->sh, &k))
		return -1;
	if (u->dt != d->dt && !(u->dt != KF && d->dt != KF))
		return xerr(x, "updates and data have different types");
	for (int i = k; i < d->sh.rank; i++)
		inner *= d->sh.d[i];
	nidx = ix->n / k;
	if (!(r = knew(x, d->dt, &d->sh)))
		return -1;
	if (d->dt == KF)
		memcpy(r->f, d->f, (size_t)d->n * sizeof *r->f);
	else
		memcpy(r->i, d->i, (size_t)d->n * sizeof *r->i);
	for (int64_t j = 0; j < nidx; j++) {
		int64_t at;
		if (scatternd_row(x, ix, j, k, &d->sh, &at))
			return -1;
		for (int64_t e = 0; e < inner; e++) {
			int64_t o = at * inner + e, w = j * inner + e;
			if (r->dt == KF) {
				float a = r->f[o], b = (float)kv_get(u, w);
				r->f[o] = red == 1 ? a + b : red == 2 ? a * b : red == 3 ? fmaxf(a, b) :
				          red == 4 ? fminf(a, b) : b;
			} else {
				int64_t a = r->i[o], b = u->i[w];
				r->i[o] = red == 1 ? a + b : red == 2 ? a * b : red == 3 ? (a > b ? a : b) :
				          red == 4 ? (a < b ? a : b) : b;
			}
		}
	}
	out_k(x, 0, r);
	return 0;
}

/* ScatterND at run time (h[:, 1] = y in PyTorch: data or updates computed in the step) by
 * indices known at import time: data and updates seen as rows [R, C] and [U, C] (C the
 * elements each index names); for reduction none, each row's last update (ONNX's reference
 * applies them in order) gathered by an embedding of constant row ids and selected where a
 * row is hit (the update's bits; the gradient to each update as the embedding's, to the
 * rows not hit of data); for add, the data plus one such layer per update of a row, in
 * order (at most MAXLAYER). mul, max and min refused. */
enum { MAXLAYER = 16 };
int
emit_scatternd(Ox *x)
{
	const Shape one = { 0, { 0 } };
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "scatter";
	int d = in_t(x, 0), u = in_t(x, 2), add = att_is(x, "reduction", "none", "add"), k, nl = 0;
	int64_t rows = 1, inner = 1, nidx, *mult = NULL;
	Kv *ix;
	Shape ds, us;

	if (d < 0 || u < 0)
		return -1;
	if (!known_in(x, 1))
		return xerr(x, "the indices must be known at import time (data and updates may be "
		            "computed at run time)");
	if (!(ix = in_k(x, 1)))
		return -1;
	if (!add && !att_is(x, "reduction", "none", "none"))
		return xerr(x, "reduction must be none or add at run time (mul, max and min are not "
		            "supported)");
	if (x->c->f->val[d].ty.dt != F32 || x->c->f->val[u].ty.dt != F32)
		return xerr(x, "the data and the updates must be floats at run time");
	ds = x->c->f->val[d].ty.sh;
	us = x->c->f->val[u].ty.sh;
	if (scatternd_shapes(x, &ds, ix, &us, &k))
		return -1;
	for (int i = 0; i < ds.rank; i++)
		*(i < k ? &rows : &inner) *= ds.d[i];
	nidx = ix->n / k;
	if (nidx < 1)
		return xerr(x, "indices name no element");
	mult = aalloc(x->a, (size_t)rows * sizeof *mult);
	memset(mult, 0, (size_t)rows * sizeof *mult);
	{
		int64_t *at = aalloc(x->a, (size_t)nidx * sizeof *at);
		Shape rs = { 2, { rows, inner } }, col = { 2, { rows, 1 } };
		int dv = xreshape(x, d, &rs), uv = xreshape(x, u, &(Shape){ 2, { nidx, inner } }), out;
		for (int64_t j = 0; j < nidx; j++) {
			if (scatternd_row(x, ix, j, k, &ds, &at[j]))
				return -1;
			if (++mult[at[j]] > nl)
				nl = (int)mult[at[j]];
		}
		if (add && nl > MAXLAYER)
			return xerr(x, "a row is updated %d times; at most %d are summed", nl, MAXLAYER);
		out = add ? dv : -1;
		for (int l = 0; l < (add ? nl : 1); l++) {
			/* layer l: each row's l-th update (none: its last), rows it does not reach masked */
			Kv *ids = knew(x, KI, &(Shape){ 1, { rows } }), *hit = knew(x, KF, &col);
			int a[3], g;
			if (!ids || !hit)
				return -1;
			memset(mult, 0, (size_t)rows * sizeof *mult);
			for (int64_t j = 0; j < nidx; j++)
				if (!add || mult[at[j]]++ == l) {
					ids->i[at[j]] = j;
					hit->f[at[j]] = 1;
				}
			g = xemit2(x, OP_EMBEDDING, uv, xknown(x, ids, asprintf_a(x->a, "%s.rows", nm)));
			a[0] = xknown(x, hit, asprintf_a(x->a, "%s.hit", nm));
			a[1] = g;
			a[2] = add ? xconst(x, -0.0, &one) : dv;
			g = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
			out = add ? xemit2(x, OP_ADD, out, g) : g;
		}
		if ((out = xreshape(x, out, &ds)) < 0)
			return -1;
		out_t(x, 0, out);
	}
	return 0;
}

/* ---------- Gather, Slice, Split ---------- */

int
fold_gather(Ox *x)
{
	Kv *k = in_k(x, 0), *ix = in_k(x, 1), *r;
	int64_t outer = 1, inner = 1, at = 0;
	Shape sh;
	int a;

	if (!k || !ix)
		return -1;
	if (ix->dt == KF)
		return xerr(x, "the indices are not integers");
	if ((a = axis_of(x, att_i(x, "axis", 0), k->sh.rank)) < 0 ||
	    rank_ok(x, k->sh.rank - 1 + ix->sh.rank))
		return -1;
	sh.rank = 0;
	for (int d = 0; d < a; d++)
		sh.d[sh.rank++] = k->sh.d[d], outer *= k->sh.d[d];
	for (int d = 0; d < ix->sh.rank; d++)
		sh.d[sh.rank++] = ix->sh.d[d];
	for (int d = a + 1; d < k->sh.rank; d++)
		sh.d[sh.rank++] = k->sh.d[d], inner *= k->sh.d[d];
	if (!(r = knew(x, k->dt, &sh)))
		return -1;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < ix->n; j++) {
			int64_t q = ix->i[j] < 0 ? ix->i[j] + k->sh.d[a] : ix->i[j];
			if (q < 0 || q >= k->sh.d[a])
				return xerr(x, "index %lld is out of range for a dimension of %lld",
				            (long long)ix->i[j], (long long)k->sh.d[a]);
			for (int64_t i = 0; i < inner; i++, at++) {
				int64_t s = (o * k->sh.d[a] + q) * inner + i;
				if (r->dt == KF)
					r->f[at] = k->f[s];
				else
					r->i[at] = k->i[s];
			}
		}
	out_k(x, 0, r);
	return 0;
}

/* Gather at run time: an embedding lookup of the data seen as [rows along the axis, the rest]
 * (moved to the front by a transpose first, and the result's axes back after), by indices
 * computed at run time or known (then a constant, negative ones counted from the end). */
int
emit_gather(Ox *x)
{
	Type td, ti;
	Shape sh, two;
	int t, ids, v, a, r, q;
	int64_t p1[MAXRANK], p2[MAXRANK];

	if (in_type(x, 0, &td) || in_type(x, 1, &ti))
		return -1;
	r = td.sh.rank;
	q = ti.sh.rank;
	if ((a = axis_of(x, att_i(x, "axis", 0), r)) < 0 || rank_ok(x, q + r - 1))
		return -1;
	if (td.dt != F32 || (ti.dt != I32 && (known_in(x, 1) || !x->x[x->nd->in[1]].count)))
		return xerr(x, "a gather at run time takes a float tensor by integer indices");
	if (known_in(x, 1)) {
		Kv *k = in_k(x, 1), *w;
		if (!k || !(w = knew(x, KI, &k->sh)))
			return -1;
		for (int64_t i = 0; i < k->n; i++) {
			w->i[i] = k->i[i] < 0 ? k->i[i] + td.sh.d[a] : k->i[i];
			if (w->i[i] < 0 || w->i[i] >= td.sh.d[a])
				return xerr(x, "index %lld is out of range for a dimension of %lld",
				            (long long)k->i[i], (long long)td.sh.d[a]);
		}
		ids = xknown(x, w, asprintf_a(x->a, "%s.indices", x->o->name[x->nd->in[1]]));
	} else {
		ids = in_index(x, 1, "indices", 1);     /* a count made an index: to_i32 */
	}
	t = in_t(x, 0);
	if (a > 0) {            /* the gathered axis first */
		p1[0] = a;
		for (int d = 0, k = 1; d < r; d++)
			if (d != a)
				p1[k++] = d;
		t = xemit(x, OP_TRANSPOSE, &t, 1, p1, r, NULL, NULL);
	}
	two = (Shape){ 2, { td.sh.d[a], td.sh.d[a] ? shape_numel(&td.sh) / td.sh.d[a] : 1 } };
	v = xemit2(x, OP_EMBEDDING, xreshape(x, t, &two), ids);
	sh = ti.sh;
	for (int d = 0; d < r; d++)
		if (d != a)
			sh.d[sh.rank++] = td.sh.d[d];
	v = xreshape(x, v, &sh);
	if (a > 0) {            /* [indices, before, after] to [before, indices, after] */
		int k = 0;
		for (int d = 0; d < a; d++)
			p2[k++] = q + d;
		for (int d = 0; d < q; d++)
			p2[k++] = d;
		for (int d = q + a; d < q + r - 1; d++)
			p2[k++] = d;
		if (q > 0)
			v = xemit(x, OP_TRANSPOSE, &v, 1, p2, q + r - 1, NULL, NULL);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Slice's starts, ends, axes and steps as a per-axis start, step and count. */
typedef struct Sl {
	int64_t start[MAXRANK], step[MAXRANK];
	Shape sh;
} Sl;

static int
slice_of(Ox *x, const Shape *in, Sl *s)
{
	int64_t st[MAXRANK], en[MAXRANK], ax[MAXRANK], sp[MAXRANK];
	int n, ne, na = -1, ns = -1;

	if (x->o->opset < 10)
		return xerr(x, "Slice before opset 10 is not supported");
	if (klist(x, in_k(x, 1), st, &n, "starts") || klist(x, in_k(x, 2), en, &ne, "ends") ||
	    (has_in(x, 3) && klist(x, in_k(x, 3), ax, &na, "axes")) ||
	    (has_in(x, 4) && klist(x, in_k(x, 4), sp, &ns, "steps")))
		return -1;
	if (ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n))
		return xerr(x, "starts, ends, axes and steps differ in length");
	for (int i = 0; na < 0 && i < n; i++)
		ax[i] = i;
	if (axes_of(x, ax, n, in->rank))
		return -1;
	s->sh = *in;
	for (int d = 0; d < in->rank; d++)
		s->start[d] = 0, s->step[d] = 1;
	for (int i = 0; i < n; i++) {
		int a = (int)ax[i];
		int64_t dim = in->d[a], step = ns >= 0 ? sp[i] : 1, b = st[i], e = en[i], c;
		if (step == 0)
			return xerr(x, "a step of 0");
		b = b < 0 ? (b < -dim ? -1 : b + dim) : b;
		e = e < 0 ? (e < -dim ? -1 : e + dim) : e;
		if (step > 0) {
			b = b < 0 ? 0 : b > dim ? dim : b;
			e = e < 0 ? 0 : e > dim ? dim : e;
			c = e > b ? (e - b - 1) / step + 1 : 0;
		} else {
			b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			c = b > e ? (step == INT64_MIN ? 0 : (b - e - 1) / -step) + 1 : 0;
		}
		s->start[a] = b;
		s->step[a] = step;
		s->sh.d[a] = c;
	}
	return 0;
}

int
fold_slice(Ox *x)
{
	Kv *k = in_k(x, 0), *r;
	Sl s;

	if (!k || slice_of(x, &k->sh, &s) || !(r = knew(x, k->dt, &s.sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++) {
		int64_t rem = i, j = 0, st = 1;
		for (int a = s.sh.rank - 1; a >= 0; a--) {
			j += (s.start[a] + (rem % s.sh.d[a]) * s.step[a]) * st;
			rem /= s.sh.d[a];
			st *= k->sh.d[a];
		}
		if (r->dt == KF)
			r->f[i] = k->f[j];
		else
			r->i[i] = k->i[j];
	}
	out_k(x, 0, r);
	return 0;
}

/* x[start : start + n] along axis a, as the IR's slice (step 1). */
int
emit_slice1(Ox *x, int v, int a, int64_t start, int64_t n)
{
	int64_t ia[MAXIA] = { a, start };
	Type t;

	if (v < 0)
		return -1;
	t = x->c->f->val[v].ty;
	if (start == 0 && n == t.sh.d[a])
		return v;
	t.sh.d[a] = n;
	return xemit(x, OP_SLICE, &v, 1, ia, 2, NULL, &t);
}

/* GatherElements (torch.gather: per-token log-probabilities of labels, DPO's and PPO's) by
 * run-time integer indices, as OneHot writes them: along axis, out[.., k, ..] = the sum over c
 * of data[.., c, ..] where index[.., k, ..] == c, the data sliced to the indices' other dims; a
 * negative index counted from the axis's length (ONNX's), NaN where one is out of range
 * (PyTorch raises an error). The gradient is the scatter-add, summed over k in order. It
 * holds a one-hot of [indices' shape, axis length]. */
int
emit_gatherel(Ox *x)
{
	const Shape one = { 0, { 0 } };
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "gather";
	int v = in_t(x, 0), i = in_index(x, 1, "indices", 0), r, ax, oh, out, a[3];
	int64_t ia[MAXIA] = { 0 };
	Shape is, s;

	if (v < 0 || i < 0)
		return -1;
	if (x->c->f->val[v].ty.dt != F32)
		return xerr(x, "the data must be floats");
	r = x->c->f->val[v].ty.sh.rank;
	is = x->c->f->val[i].ty.sh;
	if (is.rank != r || r < 1)
		return xerr(x, "the indices must have the data's rank");
	if (r + 1 > MAXRANK)
		return xerr(x, "the one-hot would exceed rank %d", MAXRANK);
	if ((ax = axis_of(x, att_i(x, "axis", 0), r)) < 0)
		return -1;
	for (int d = 0; d < r && v >= 0; d++)
		if (d != ax) {
			if (is.d[d] > x->c->f->val[v].ty.sh.d[d])
				return xerr(x, "the indices' dim %d, %lld, exceeds the data's, %lld", d,
				            (long long)is.d[d], (long long)x->c->f->val[v].ty.sh.d[d]);
			v = emit_slice1(x, v, d, 0, is.d[d]);
		}
	if (v < 0)
		return -1;
	oh = onehot_eq(x, i, ax + 1, x->c->f->val[v].ty.sh.d[ax], 1,
	               asprintf_a(x->a, "%s.positions", nm), NULL);
	s = x->c->f->val[v].ty.sh;      /* the data with a 1 at axis */
	for (int d = r; d > ax; d--)
		s.d[d] = s.d[d - 1];
	s.d[ax] = 1;
	s.rank = r + 1;
	ia[0] = ax + 1;
	ia[1] = 0;
	out = onehot_take(x, oh, xreshape(x, v, &s), ax + 1, 0);
	a[0] = xoneminus(x, xemit(x, OP_SUM, &oh, 1, ia, 2, NULL, NULL));
	a[1] = xconst(x, NAN, &one);
	a[2] = xconst(x, -0.0, &one);
	out = xemit2(x, OP_ADD, out, xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL));
	if (out < 0)
		return -1;
	out_t(x, 0, out);
	return 0;
}

/* v grown along axis a to n with zeros after it (a concat), or v where it is n long. */
static int
zeros_after(Ox *x, int v, int a, int64_t n)
{
	Shape sh;
	int64_t ia[MAXIA] = { a };

	if (v < 0 || x->c->f->val[v].ty.sh.d[a] == n)
		return v;
	sh = x->c->f->val[v].ty.sh;
	sh.d[a] = n - sh.d[a];
	return xemit(x, OP_CONCAT, (int[]){ v, xconst(x, 0, &sh) }, 2, ia, 1, NULL, NULL);
}

/* ScatterElements (torch.scatter, scatter_add) by run-time integer indices, as GatherElements
 * writes them: hit = (index == position) with the positions along a new axis after axis (a
 * negative index counted from the axis's length), each update taken where it hits
 * (select(hit, u, -0), so an infinite update not taken stays out) and summed over the
 * indices' own axis, zeros after it where the indices' other dims are shorter than the
 * data's. reduction add: data plus that sum (the duplicates' in index order); none: that sum
 * where an element is hit once, data where it is not hit; where it is hit more than once
 * (ONNX leaves the result undefined, PyTorch takes one of them), the updates' value where
 * they are equal (a mask's writes of one value), else NaN. NaN everywhere if an index
 * is out of range (PyTorch raises an error). The gradient of data is dy where kept (none) or
 * dy (add), of updates the gather of dy. It holds a one-hot of [indices' shape, axis length]. */
int
emit_scatterel(Ox *x)
{
	const Shape one = { 0, { 0 } };
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "scatter";
	int d = in_t(x, 0), i = in_index(x, 1, "indices", 0), u = in_t(x, 2);
	int r, ax, oh, sum, cnt, poison, a[3];
	int add = att_is(x, "reduction", "none", "add");
	int64_t ia[MAXIA] = { 0 };
	Shape is, ds, s;

	if (d < 0 || i < 0 || u < 0)
		return -1;
	if (!add && !att_is(x, "reduction", "none", "none"))
		return xerr(x, "reduction must be none or add (mul, max and min are not supported)");
	if (x->c->f->val[d].ty.dt != F32 || x->c->f->val[u].ty.dt != F32)
		return xerr(x, "the data and the updates must be floats");
	ds = x->c->f->val[d].ty.sh;
	is = x->c->f->val[i].ty.sh;
	r = ds.rank;
	if (is.rank != r || r < 1 || !shape_eq(&is, &x->c->f->val[u].ty.sh))
		return xerr(x, "the indices and the updates must have one shape, of the data's rank");
	if (r + 1 > MAXRANK)
		return xerr(x, "the one-hot would exceed rank %d", MAXRANK);
	if ((ax = axis_of(x, att_i(x, "axis", 0), r)) < 0)
		return -1;
	for (int k = 0; k < r; k++)
		if (k != ax && is.d[k] > ds.d[k])
			return xerr(x, "the indices' dim %d, %lld, exceeds the data's, %lld", k,
			            (long long)is.d[k], (long long)ds.d[k]);
	oh = onehot_eq(x, i, ax + 1, ds.d[ax], 1, asprintf_a(x->a, "%s.positions", nm), NULL);
	s = is;                         /* the updates with a 1 after axis */
	for (int k = r; k > ax + 1; k--)
		s.d[k] = s.d[k - 1];
	s.d[ax + 1] = 1;
	s.rank = r + 1;
	sum = onehot_take(x, oh, xreshape(x, u, &s), ax, 0);   /* over the indices' own axis */
	ia[0] = ax;
	ia[1] = 0;
	cnt = xemit(x, OP_SUM, &oh, 1, ia, 2, NULL, NULL);     /* hits per element */
	{
		/* the indices that hit no position (out of range), all summed: NaN everywhere where
		 * there is one, else -0, which adds nothing */
		int64_t ib[MAXIA] = { ax + 1, 0 };
		int miss = xoneminus(x, xemit(x, OP_SUM, &oh, 1, ib, 2, NULL, NULL));
		for (int k = r - 1; k >= 0 && miss >= 0; k--) {
			ib[0] = k;
			miss = xemit(x, OP_SUM, &miss, 1, ib, 2, NULL, NULL);
		}
		a[0] = xemit2(x, OP_LT, xconst(x, 0, &one), miss);
		a[1] = xconst(x, NAN, &one);
		a[2] = xconst(x, -0.0, &one);
		poison = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	if (!add) {
		/* where several updates hit one element: theirs if they are equal (a mask's writes
		 * of one value), else NaN; the largest and the smallest of them compared */
		int uk = xreshape(x, u, &s), hl[2];
		for (int j = 0; j < 2; j++) {
			ia[0] = ax;
			ia[1] = 0;
			a[0] = oh;
			a[1] = j ? xneg(x, uk) : uk;
			a[2] = xconst(x, -INFINITY, &one);
			hl[j] = xemit(x, OP_MAX, (int[]){ xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL) }, 1,
			              ia, 2, NULL, NULL);
		}
		a[0] = xemit2(x, OP_EQ, hl[0], xneg(x, hl[1]));
		a[1] = hl[0];
		a[2] = xconst(x, NAN, &one);
		a[0] = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
		a[1] = sum;
		a[2] = a[0];
		a[0] = xemit2(x, OP_EQ, cnt, xconst(x, 1, &one));
		sum = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	for (int k = 0; k < r; k++)
		if (k != ax) {
			sum = zeros_after(x, sum, k, ds.d[k]);
			cnt = zeros_after(x, cnt, k, ds.d[k]);
		}
	if (add)
		sum = xemit2(x, OP_ADD, d, sum);
	else {
		a[0] = xemit2(x, OP_EQ, cnt, xconst(x, 0, &one));
		a[1] = d;
		a[2] = sum;
		sum = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	if ((sum = xemit2(x, OP_ADD, sum, poison)) < 0)
		return -1;
	out_t(x, 0, sum);
	return 0;
}

/* Slice at run time: one IR slice per sliced axis; with another step (flip's -1), a concat of
 * the elements taken, each a one-wide slice (at most MAXSTEP of them). */
enum { MAXSTEP = 256 };
int
emit_slice(Ox *x)
{
	int v = in_t(x, 0);
	Sl s;

	if (v < 0 || slice_of(x, &x->c->f->val[v].ty.sh, &s))
		return -1;
	for (int a = 0; a < s.sh.rank && v >= 0; a++) {
		if (s.sh.d[a] == 0)
			return xerr(x, "the slice of axis %d is empty", a);
		if (s.step[a] != 1 && s.sh.d[a] > 1) {
			int64_t ia[MAXIA] = { a };
			int parts[MAXSTEP];
			if (s.sh.d[a] > MAXSTEP)
				return xerr(x, "a slice with step %lld at run time takes %lld elements, more than %d",
				            (long long)s.step[a], (long long)s.sh.d[a], MAXSTEP);
			for (int64_t i = 0; i < s.sh.d[a]; i++)
				parts[i] = emit_slice1(x, v, a, s.start[a] + i * s.step[a], 1);
			v = xemit(x, OP_CONCAT, parts, (int)s.sh.d[a], ia, 1, NULL, NULL);
			continue;
		}
		v = emit_slice1(x, v, a, s.start[a], s.sh.d[a]);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Split's sizes along axis a of a dimension dim into sp[nout]; 0, or -1 after an error. */
static int
split_sizes(Ox *x, int64_t dim, int64_t *sp, int nout)
{
	int64_t at = 0;
	int n = -1;

	if (nout > 64)
		return xerr(x, "more than 64 outputs");
	if (x->o->opset >= 13 && has_in(x, 1)) {
		Kv *s = in_k(x, 1);
		if (!s || s->dt == KF || s->n != nout)
			return s ? xerr(x, "split must list one size per output") : -1;
		for (int i = 0; i < nout; i++)
			sp[i] = s->i[i];
		n = nout;
	} else if (x->o->opset < 13 && (n = att_ints(x, "split", sp, 64)) >= 0 && n != nout) {
		return xerr(x, "split must list one size per output");
	}
	if (n < 0) {            /* equal parts; the last may be smaller (opset 18) */
		int64_t part = (dim + nout - 1) / (nout ? nout : 1);
		for (int i = 0; i < nout; i++)
			sp[i] = dim - part * i < part ? dim - part * i : part;
	}
	for (int i = 0; i < nout; i++)
		if (sp[i] < 0 || (at += sp[i]) > dim)
			return xerr(x, "the split sizes do not add up to the axis's %lld", (long long)dim);
	if (at != dim)
		return xerr(x, "the split sizes do not add up to the axis's %lld", (long long)dim);
	return 0;
}

int
emit_split(Ox *x)
{
	int v = in_t(x, 0), a;
	int64_t sp[64], at = 0;

	if (v < 0 || (a = axis_of(x, att_i(x, "axis", 0), x->c->f->val[v].ty.sh.rank)) < 0 ||
	    split_sizes(x, x->c->f->val[v].ty.sh.d[a], sp, x->nd->nout))
		return -1;
	for (int i = 0; i < x->nd->nout; i++) {
		int r;
		if (sp[i] == 0)
			return xerr(x, "output %d is empty", i + 1);
		if ((r = emit_slice1(x, v, a, at, sp[i])) < 0)
			return -1;
		out_t(x, i, r);
		at += sp[i];
	}
	return 0;
}

int
fold_split(Ox *x)
{
	Kv *k = in_k(x, 0);
	int64_t sp[64], outer = 1, inner = 1, at = 0;
	int a, nout = x->nd->nout;

	if (!k || (a = axis_of(x, att_i(x, "axis", 0), k->sh.rank)) < 0 ||
	    split_sizes(x, k->sh.d[a], sp, nout))
		return -1;
	for (int d = 0; d < a; d++)
		outer *= k->sh.d[d];
	for (int d = a + 1; d < k->sh.rank; d++)
		inner *= k->sh.d[d];
	at = 0;
	for (int i = 0; i < nout; i++) {
		Shape sh = k->sh;
		Kv *r;
		int64_t w = 0;
		sh.d[a] = sp[i];
		if (!(r = knew(x, k->dt, &sh)))
			return -1;
		for (int64_t o = 0; o < outer; o++)
			for (int64_t j = 0; j < sp[i] * inner; j++, w++) {
				int64_t s = (o * k->sh.d[a] + at) * inner + j;
				if (r->dt == KF)
					r->f[w] = k->f[s];
				else
					r->i[w] = k->i[s];
			}
		at += sp[i];
		out_k(x, i, r);
	}
	return 0;
}

/* Pad's modes: what fills the pads; reflect's and edge's pads at run time at most MAXPAD a side */
enum { PAD_CONST, PAD_REFLECT, PAD_EDGE, MAXPAD = 64 };

/* The index of axis element c (-b <= c < n + e: c < 0 and c >= n are the pads) that a pad of
 * mode md copies: reflect mirrors about the first and last element (PyTorch's 'reflect'), edge
 * repeats them ('replicate'); -1 for the constant. */
static int64_t
pad_src(int64_t c, int64_t n, int md)
{
	if (c >= 0 && c < n)
		return c;
	if (md == PAD_EDGE)
		return c < 0 ? 0 : n - 1;
	if (md == PAD_REFLECT)
		return c < 0 ? -c : 2 * (n - 1) - c;
	return -1;
}

/* Pad's amounts per axis (begin b[], end e[]) for a tensor of shape sh, its fill value and mode
 * (reflect's pads under the axis's length, edge's on axes of 1 or more). 0, or -1 after an
 * error. */
static int
pads_of(Ox *x, const Shape *sh, int64_t *b, int64_t *e, double *val, int *md)
{
	int64_t v[2 * MAXRANK], ax[MAXRANK];
	Onnx__AttributeProto *m = ox_attr(x->nd, "mode");
	int n, na = -1, r = sh->rank;

	*md = att_is(x, "mode", "constant", "reflect") ? PAD_REFLECT : att_is(x, "mode", "constant", "edge") ?
	      PAD_EDGE : PAD_CONST;
	if (*md == PAD_CONST && !att_is(x, "mode", "constant", "constant"))
		return xerr(x, "pad mode '%.*s' is not supported (only constant, reflect and edge)",
		            (int)(m->s.len > 32 ? 32 : m->s.len), (const char *)m->s.data);
	*val = 0;
	if (x->o->opset >= 11) {
		Kv *k = in_k(x, 1);
		if (!k || k->dt == KF || k->sh.rank != 1 || k->n > 2 * MAXRANK)
			return k ? xerr(x, "pads must be a list of integers") : -1;
		for (int64_t i = 0; i < k->n; i++)
			v[i] = k->i[i];
		n = (int)k->n;
		if (has_in(x, 2) && kscalar(x, in_k(x, 2), val, "the constant value"))
			return -1;
		if (has_in(x, 3) && klist(x, in_k(x, 3), ax, &na, "the axes"))
			return -1;
	} else if ((n = att_ints(x, "pads", v, 2 * MAXRANK)) < 0) {
		return xerr(x, "pads are missing");
	} else {
		*val = att_f(x, "value", 0);
	}
	if (na < 0)
		for (int i = 0; i < r; i++)
			ax[i] = i;
	if (axes_of(x, ax, na < 0 ? r : na, r))
		return -1;
	if (n != 2 * (na < 0 ? r : na))
		return xerr(x, "%d pads for %d axes", n, na < 0 ? r : na);
	for (int i = 0; i < r; i++)
		b[i] = e[i] = 0;
	for (int i = 0; i < n / 2; i++) {
		b[ax[i]] = v[i];
		e[ax[i]] = v[n / 2 + i];
	}
	for (int a = 0; a < r && *md != PAD_CONST; a++) {
		int64_t lim = *md == PAD_REFLECT ? sh->d[a] - 1 : MAXPAD;
		if (b[a] < 0 || e[a] < 0 || b[a] > lim || e[a] > lim || b[a] > MAXPAD || e[a] > MAXPAD)
			return xerr(x, "%s pads of %lld and %lld on axis %d of %lld: each must be 0 to %lld",
			            *md == PAD_REFLECT ? "reflect" : "edge", (long long)b[a], (long long)e[a], a,
			            (long long)sh->d[a], (long long)(lim < MAXPAD ? lim : MAXPAD));
	}
	return 0;
}

/* Pad at run time: a constant block concatenated on each side of each padded axis (a slice
 * where a pad is negative), so the gradient is concat's; reflect and edge concatenate one-wide
 * slices of the input, each where pad_src reads (at most MAXPAD a side). */
int
emit_pad(Ox *x)
{
	int64_t b[MAXRANK], e[MAXRANK];
	double val;
	int v = in_t(x, 0), r, md;

	if (v < 0 || pads_of(x, &x->c->f->val[v].ty.sh, b, e, &val, &md))
		return -1;
	r = x->c->f->val[v].ty.sh.rank;
	for (int a = 0; a < r && md != PAD_CONST; a++) {
		int64_t n = x->c->f->val[v].ty.sh.d[a], ia[MAXIA] = { a };
		int parts[2 * MAXPAD + 1], np = 0;
		for (int64_t c = -b[a]; c < n + e[a]; c++)
			if (c < 0 || c >= n)
				parts[np++] = emit_slice1(x, v, a, pad_src(c, n, md), 1);
			else if (c == 0)
				parts[np++] = v;
			else
				c = n - 1;
		if (np > 1 && (v = xemit(x, OP_CONCAT, parts, np, ia, 1, NULL, NULL)) < 0)
			return -1;
	}
	for (int a = 0; a < r && md == PAD_CONST; a++) {
		Shape sh = x->c->f->val[v].ty.sh;
		int64_t ia[MAXIA] = { a };
		int parts[3], n = 0;
		if (b[a] < 0 || e[a] < 0) {
			int64_t lo, hi;
			if (b[a] < -sh.d[a] || e[a] < -sh.d[a])
				return xerr(x, "the pads crop axis %d to nothing", a);
			lo = b[a] < 0 ? -b[a] : 0, hi = e[a] < 0 ? -e[a] : 0;
			if (lo + hi >= sh.d[a])
				return xerr(x, "the pads crop axis %d to nothing", a);
			if ((v = emit_slice1(x, v, a, lo, sh.d[a] - lo - hi)) < 0)
				return -1;
			sh = x->c->f->val[v].ty.sh;
		}
		if (b[a] > 0)
			sh.d[a] = b[a], parts[n++] = xconst(x, val, &sh);
		parts[n++] = v;
		if (e[a] > 0)
			sh.d[a] = e[a], parts[n++] = xconst(x, val, &sh);
		if (n > 1 && (v = xemit(x, OP_CONCAT, parts, n, ia, 1, NULL, NULL)) < 0)
			return -1;
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

int
fold_pad(Ox *x)
{
	int64_t b[MAXRANK], e[MAXRANK];
	double val;
	Kv *k = in_k(x, 0), *r;
	Shape sh;
	int md;

	if (!k || pads_of(x, &k->sh, b, e, &val, &md))
		return -1;
	sh = k->sh;
	for (int a = 0; a < sh.rank; a++)
		if (add64(sh.d[a], b[a], &sh.d[a]) || add64(sh.d[a], e[a], &sh.d[a]) || sh.d[a] < 0)
			return xerr(x, "the pads of axis %d are out of range", a);
	if (!(r = knew(x, k->dt, &sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++) {
		int64_t rem = i, j = 0, st = 1, in = 1;
		for (int a = sh.rank - 1; a >= 0; a--) {
			int64_t c = pad_src(rem % sh.d[a] - b[a], k->sh.d[a], md);
			rem /= sh.d[a];
			in &= c >= 0 && c < k->sh.d[a];
			j += c * st;
			st *= k->sh.d[a];
		}
		if (r->dt == KF)
			r->f[i] = in ? k->f[j] : (float)val;
		else
			r->i[i] = in ? k->i[j] : (int64_t)val;
	}
	out_k(x, 0, r);
	return 0;
}

/* ---------- ArgMax, ArgMin, TopK ---------- */

/* ArgMax, ArgMin of run-time values: argmax (of -x for ArgMin): the first largest (smallest),
 * or the first NaN, as torch.argmax; an i32 result (indices for an embedding, OneHot). */
int
emit_argmax(Ox *x)
{
	int v = in_t(x, 0), r;
	int64_t ia[MAXIA] = { 0 };

	if (v < 0)
		return -1;
	if (x->c->f->val[v].ty.dt != F32)
		return xerr(x, "the input must be floats");
	if (att_i(x, "select_last_index", 0))
		return xerr(x, "select_last_index is not supported: the first index is taken");
	r = x->c->f->val[v].ty.sh.rank;
	if (r < 1 || (ia[0] = axis_of(x, att_i(x, "axis", 0), r)) < 0)
		return r < 1 ? xerr(x, "the input must have an axis") : -1;
	ia[1] = att_i(x, "keepdims", 1) != 0;
	if (strcmp(x->nd->op, "ArgMin") == 0)
		v = xneg(x, v);
	if ((v = xemit(x, OP_ARGMAX, &v, 1, ia, 2, NULL, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* The first largest of key along axis ax (n long) as a one-hot (sel: select(e, ., -0) summed
 * along the axis takes its element exactly). Where taken (the one-hots of earlier rounds, 0/1
 * summed; -1 in the first round) is given, taken elements count as -inf, and where the largest
 * left is -inf, which ties with them, the one-hot is of the first element left by rank (2 for
 * a number, 1 for NaN): TopK's order between ties at -inf. *idx gets the index, i32. */
static int
topk_round(Ox *x, int key, int taken, int rank, int ax, int64_t n, const char *nm, int *idx)
{
	const Shape one = { 0, { 0 } };
	const char *pn = asprintf_a(x->a, "%s.positions", nm);
	int64_t ia[MAXIA] = { ax, 0 };
	int a[3], e, m;

	if (taken >= 0) {
		a[0] = taken;
		a[1] = xconst(x, -INFINITY, &one);
		a[2] = key;
		key = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	*idx = xemit(x, OP_ARGMAX, &key, 1, ia, 2, NULL, NULL);
	e = onehot_eq(x, *idx, ax, n, 0, pn, NULL);
	if (rank < 0)
		return e;
	m = onehot_take(x, e, key, ax, 1);  /* the largest left, and its ties at -inf */
	if (taken >= 0) {
		a[0] = taken;
		a[1] = xconst(x, 0, &one);
		a[2] = rank;
		rank = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	}
	a[0] = xemit2(x, OP_EQ, m, xconst(x, -INFINITY, &one));
	a[1] = rank;
	a[2] = key;
	key = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
	ia[1] = 0;
	*idx = xemit(x, OP_ARGMAX, &key, 1, ia, 2, NULL, NULL);
	return onehot_eq(x, *idx, ax, n, 0, pn, NULL);
}

/* TopK of run-time values along an axis, k known (at most MAXTOPK), as torch.topk: k rounds
 * of argmax (topk_round), each value the sum along the axis of select(onehot, x, -0) (one
 * term: the element's bits, -0 included; its gradient to that element alone). largest 1: NaN
 * above every number (the first NaN first), -inf ties in ascending index; largest 0: on -x
 * with NaN as -inf, so NaN after +inf. Values and indices come sorted (with sorted 0 too,
 * which leaves the order free), equal values in ascending index. */
enum { MAXTOPK = 64 };
int
emit_topk(Ox *x)
{
	const Shape one = { 0, { 0 } };
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "topk";
	int v = in_t(x, 0), r, ax, key, rank = -1, taken = -1, vals[MAXTOPK], idx[MAXTOPK];
	int64_t ia[MAXIA] = { 0 }, n;
	double kd = 0;
	Shape ks;

	if (v < 0)
		return -1;
	if (x->o->opset < 10)
		kd = (double)att_i(x, "k", 0);
	else if (kscalar(x, in_k(x, 1), &kd, "k"))
		return -1;
	if (x->c->f->val[v].ty.dt != F32)
		return xerr(x, "the input must be floats");
	r = x->c->f->val[v].ty.sh.rank;
	if (r < 1)
		return xerr(x, "the input must have an axis");
	if ((ax = axis_of(x, att_i(x, "axis", -1), r)) < 0)
		return -1;
	n = x->c->f->val[v].ty.sh.d[ax];
	if (!(kd >= 1 && kd <= (double)n) || kd != (double)(int64_t)kd)
		return xerr(x, "k %g is not an integer in [1, %lld], the axis's length", kd, (long long)n);
	if (kd > MAXTOPK)
		return xerr(x, "k %g is over %d, the most this import unrolls (a round of argmax each)",
		            kd, MAXTOPK);
	key = v;
	if (att_i(x, "largest", 1) == 0 || kd > 1) {
		int a[3] = { xemit2(x, OP_EQ, v, v), xconst(x, 2, &one), xconst(x, 1, &one) };
		rank = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
		if (att_i(x, "largest", 1) == 0) {
			a[1] = xneg(x, v);
			a[2] = xconst(x, -INFINITY, &one);
			key = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL);
		}
	}
	ks = x->c->f->val[v].ty.sh;
	ks.d[ax] = 1;
	for (int j = 0; j < (int)kd; j++) {
		/* largest 1 has no tie at -inf in its first round: argmax's first is torch's */
		int e = topk_round(x, key, taken, j || key != v ? rank : -1, ax, n, nm, &idx[j]);
		vals[j] = onehot_take(x, e, v, ax, 1);
		idx[j] = xreshape(x, idx[j], &ks);
		if (j + 1 < (int)kd)
			taken = taken < 0 ? e : xemit2(x, OP_ADD, taken, e);
		if (vals[j] < 0 || idx[j] < 0 || taken < -1)
			return -1;
	}
	ia[0] = ax;
	if ((v = kd > 1 ? xemit(x, OP_CONCAT, vals, (int)kd, ia, 1, NULL, NULL) : vals[0]) < 0 ||
	    (r = kd > 1 ? xemit(x, OP_CONCAT, idx, (int)kd, ia, 1, NULL, NULL) : idx[0]) < 0)
		return -1;
	out_t(x, 0, v);
	out_t(x, 1, r);
	return 0;
}
