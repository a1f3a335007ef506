/* onnxshape.c: the ONNX ops of shape arithmetic and layout: Constant, Shape, Size,
 * ConstantOfShape, Identity, Cast, Where, Expand, Range, Reshape, Flatten, (Un)Squeeze,
 * Transpose, Concat, Tile, DepthToSpace. The shape arithmetic exporters write folds at
 * import time; what reads run-time values becomes IR ops (the table: onnxops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"

/* ---------- Constant, Shape, Size, ConstantOfShape, Identity, Cast ---------- */

int
fold_constant(Ox *x)
{
	static const char *const other[] = { "sparse_value", "value_string", "value_strings" };
	Onnx__AttributeProto *a;
	Shape sh = { 0, { 0 } };
	Kv *k = NULL;

	if ((a = ox_attr(x->nd, "value")) && a->t)
		k = kv_tensor(x->o, x->nd, a->t, x->a);
	else if ((a = ox_attr(x->nd, "value_float")) && a->has_f) {
		if ((k = knew(x, KF, &sh)))
			k->f[0] = a->f;
	} else if ((a = ox_attr(x->nd, "value_int")) && a->has_i) {
		if ((k = knew(x, KI, &sh)))
			k->i[0] = a->i;
	} else if ((a = ox_attr(x->nd, "value_floats")) || (a = ox_attr(x->nd, "value_ints"))) {
		int fl = a->n_floats > 0 || strcmp(a->name, "value_floats") == 0;
		sh = (Shape){ 1, { fl ? (int64_t)a->n_floats : (int64_t)a->n_ints } };
		if ((k = knew(x, fl ? KF : KI, &sh)))
			for (int64_t i = 0; i < k->n; i++) {
				if (fl)
					k->f[i] = a->floats[i];
				else
					k->i[i] = a->ints[i];
			}
	} else {
		for (int i = 0; i < 3; i++)
			if (ox_attr(x->nd, other[i]))
				return xerr(x, "a constant given as '%s' is not supported", other[i]);
		return xerr(x, "the constant has no value");
	}
	if (!k)
		return -1;
	out_k(x, 0, k);
	return 0;
}

int
fold_shape(Ox *x)
{
	Type t;
	int64_t s, e;
	Shape sh;
	Kv *k;

	if (in_type(x, 0, &t))
		return -1;
	s = att_i(x, "start", 0);
	e = att_i(x, "end", t.sh.rank);
	s = s < 0 ? s + t.sh.rank : s;
	e = e < 0 ? e + t.sh.rank : e;
	s = s < 0 ? 0 : s > t.sh.rank ? t.sh.rank : s;
	e = e < 0 ? 0 : e > t.sh.rank ? t.sh.rank : e;
	sh = (Shape){ 1, { e > s ? e - s : 0 } };
	if (!(k = knew(x, KI, &sh)))
		return -1;
	for (int64_t i = s; i < e; i++)
		k->i[i - s] = t.sh.d[i];
	out_k(x, 0, k);
	return 0;
}

int
fold_size(Ox *x)
{
	Shape sh = { 0, { 0 } };
	Type t;
	Kv *k;

	if (in_type(x, 0, &t) || !(k = knew(x, KI, &sh)))
		return -1;
	k->i[0] = shape_numel(&t.sh);
	out_k(x, 0, k);
	return 0;
}

/* A list of dims (Expand's, ConstantOfShape's) as a shape. */
static int
kdims(Ox *x, const Kv *k, Shape *sh, const char *what)
{
	int n;

	if (klist(x, k, sh->d, &n, what))
		return -1;
	sh->rank = n;
	for (int i = 0; i < n; i++)
		if (sh->d[i] < 0)
			return xerr(x, "%s has a negative dimension %lld", what, (long long)sh->d[i]);
	return 0;
}

int
fold_cos(Ox *x)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, "value");
	Kv *v = NULL, *k;
	Shape sh;

	if (kdims(x, in_k(x, 0), &sh, "the shape"))
		return -1;
	if (a && a->t && !(v = kv_tensor(x->o, x->nd, a->t, x->a)))
		return -1;
	if (v && v->n != 1)
		return xerr(x, "the value must have one element, it has %lld", (long long)v->n);
	if (!(k = knew(x, v ? v->dt : KF, &sh)))
		return -1;
	for (int64_t i = 0; i < k->n; i++)
		if (k->dt == KF)
			k->f[i] = v ? v->f[0] : 0;
		else
			k->i[i] = v->i[0];
	out_k(x, 0, k);
	return 0;
}

int
fold_identity(Ox *x)
{
	Kv *k = in_k(x, 0);

	if (!k)
		return -1;
	out_k(x, 0, k);
	return 0;
}

int
emit_identity(Ox *x)
{
	int v = in_t(x, 0);

	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Cast's target as known values' type: -1 for a type mtc does not fold into. */
static int
cast_to(int to)
{
	switch (to) {
	case DT_FLOAT: case DT_DOUBLE: case DT_FLOAT16: return KF;
	case DT_BOOL: return KB;
	case DT_INT8: case DT_UINT8: case DT_INT16: case DT_UINT16: case DT_INT32: case DT_INT64:
	case DT_UINT32: case DT_UINT64: return KI;
	default: return -1;
	}
}

int
fold_cast(Ox *x)
{
	int to = (int)att_i(x, "to", 0), dt = cast_to(to);
	Kv *k = in_k(x, 0), *r;

	if (!k)
		return -1;
	if (dt < 0)
		return xerr(x, "a cast to %s is not supported", dt_name(to));
	if (!(r = knew(x, (KDt)dt, &k->sh)))
		return -1;
	for (int64_t i = 0; i < k->n; i++) {
		double v = kv_get(k, i);
		if (dt == KF)
			r->f[i] = k->dt == KF ? k->f[i] : (float)k->i[i];
		else if (dt == KB)
			r->i[i] = v != 0;
		else if (k->dt != KF)
			r->i[i] = k->i[i];
		else if (!(v > -9.2e18 && v < 9.2e18))
			return xerr(x, "the value %g does not fit in %s", v, dt_name(to));
		else
			r->i[i] = (int64_t)v;       /* toward zero */
	}
	out_k(x, 0, r);
	return 0;
}

int
emit_cast(Ox *x)
{
	int to = (int)att_i(x, "to", 0), dt = cast_to(to), v = in_t(x, 0);
	const Xv *in;

	if (v < 0)
		return -1;
	in = &x->x[x->nd->in[0]];
	if (dt == KF && x->c->f->val[v].ty.dt == I32 && (v = xemit1(x, OP_TOF32, v)) < 0)
		return -1;          /* integer positions made float: to_f32 */
	if (dt == KI && x->c->f->val[v].ty.dt == F32 && (in->boolean || in->count)) {
		out_t(x, 0, v);         /* a boolean or a count made an integer: the same f32 */
		if (x->nd->nout && x->nd->out[0] >= 0)
			x->x[x->nd->out[0]].count = in->boolean ? 1 : in->count;
		return 0;
	}
	if (dt == KI && x->c->f->val[v].ty.dt == F32) {
		/* toward zero, as .long(); NaN 0 and past i32's range clamped, where PyTorch's
		 * int64 holds what i32 cannot (mtc's run-time integers are i32) */
		if ((v = xemit1(x, OP_TOI32, v)) < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	if (dt == KB && x->c->f->val[v].ty.dt == F32) {     /* x != 0, 1 or 0 (NaN is true) */
		const Shape one = { 0, { 0 } };
		if (!in->boolean)
			v = xoneminus(x, xemit2(x, OP_EQ, v, xconst(x, 0, &one)));
		return out_bool(x, v);
	}
	if ((dt == KF) != (x->c->f->val[v].ty.dt == F32) || dt == KB)
		return xerr(x, "a cast of a run-time %s tensor to %s is not supported",
		            dtype_name(x->c->f->val[v].ty.dt), dt_name(to));
	out_t(x, 0, v);
	return 0;
}

/* ---------- Where, Expand, Range ---------- */

int
fold_where(Ox *x)
{
	Kv *c = in_k(x, 0), *a = in_k(x, 1), *b = in_k(x, 2), *r;
	Shape s1, sh;

	if (!c || !a || !b)
		return -1;
	if (shape_broadcast(&c->sh, &a->sh, &s1) || shape_broadcast(&s1, &b->sh, &sh))
		return xerr(x, "the condition and the values do not broadcast");
	if (!(r = knew(x, a->dt == KF || b->dt == KF ? KF : a->dt, &sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++) {
		int sel = kv_get(c, bcast_index(&c->sh, &sh, i)) != 0;
		const Kv *s = sel ? a : b;
		int64_t j = bcast_index(&s->sh, &sh, i);
		if (r->dt == KF)
			r->f[i] = (float)kv_get(s, j);
		else
			r->i[i] = s->i[j];
	}
	out_k(x, 0, r);
	return 0;
}

/* fill[i] = sel(c[i]) ? k[i] : 0 over shape sh (k NULL: 1); a known operand of Where. */
static Kv *
where_part(Ox *x, const Kv *c, const Kv *k, int sel, const Shape *sh)
{
	Kv *r = knew(x, KF, sh);

	for (int64_t i = 0; r && i < r->n; i++)
		r->f[i] = (kv_get(c, bcast_index(&c->sh, sh, i)) != 0) == sel ?
		          (k ? (float)kv_get(k, bcast_index(&k->sh, sh, i)) : 1) : 0;
	return r;
}

/* The most copies a concat makes along one axis (Tile, Expand of run-time integers). */
enum { MAXTILE = 256 };

/* n copies of v concatenated along axis a (v itself for one); n at most MAXTILE. */
static int
copies(Ox *x, int v, int a, int64_t n)
{
	int64_t ia[MAXIA] = { a };
	int parts[MAXTILE];

	for (int64_t i = 0; i < n; i++)
		parts[i] = v;
	return n > 1 && v >= 0 ? xemit(x, OP_CONCAT, parts, (int)n, ia, 1, NULL, NULL) : v;
}

/* Where with a condition known at import time: one branch where the condition is uniform;
 * else a * C + b * (1 - C) with the 0/1 mask C, a known branch given as its values where it
 * is selected (so -inf fills stay -inf): the gradient of a branch is zero where the other is
 * taken, as PyTorch's. */
int
emit_where(Ox *x)
{
	const char *nm = x->nd->nout && x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "where";
	Kv *c, *m;
	Type ta, tb;
	Shape s1, sh;
	int v, part[2];

	if (has_in(x, 0) && x->x[x->nd->in[0]].v >= 0) {   /* computed at run time: select */
		int a[3];
		for (int i = 0; i < 3; i++)
			if ((a[i] = in_f32(x, i)) < 0)
				return -1;
		if ((v = xemit(x, OP_SELECT, a, 3, NULL, 0, NULL, NULL)) < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	if (!(c = in_k(x, 0)) || in_type(x, 1, &ta) || in_type(x, 2, &tb))
		return -1;
	if (shape_broadcast(&c->sh, &ta.sh, &s1) || shape_broadcast(&s1, &tb.sh, &sh))
		return xerr(x, "the condition and the values do not broadcast");
	if (kv_uniform(c)) {
		v = in_t(x, kv_get(c, 0) != 0 ? 1 : 2);
		if (v >= 0 && !shape_eq(&x->c->f->val[v].ty.sh, &sh))
			v = xemit2(x, OP_ADD, v, xconst(x, 0, &sh));
		if (v < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	for (int b = 0; b < 2; b++) {
		int sel = b == 0;       /* branch a where the condition holds, b where it does not */
		if (known_in(x, 1 + b)) {
			Kv *k = in_k(x, 1 + b);
			Shape ks;
			if (!k || shape_broadcast(&c->sh, &k->sh, &ks) || !(m = where_part(x, c, k, sel, &ks)))
				return -1;
			part[b] = xknown(x, m, asprintf_a(x->a, "%s.%s", nm, sel ? "then" : "else"));
		} else {
			if (!(m = where_part(x, c, NULL, sel, &c->sh)))
				return -1;
			int mk = xknown(x, m, asprintf_a(x->a, "%s.%s", nm, sel ? "mask" : "unmask"));
			part[b] = xemit2(x, OP_MUL, in_t(x, 1 + b), mk);
		}
	}
	v = xemit2(x, OP_ADD, part[0], part[1]);
	if (v >= 0 && !shape_eq(&x->c->f->val[v].ty.sh, &sh))
		v = xemit2(x, OP_ADD, v, xconst(x, 0, &sh));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

int
fold_expand(Ox *x)
{
	Kv *k = in_k(x, 0), *r;
	Shape want, sh;
	char sa[MAXRANK * 24 + 8], sb[MAXRANK * 24 + 8];

	if (!k || kdims(x, in_k(x, 1), &want, "the shape"))
		return -1;
	if (shape_broadcast(&k->sh, &want, &sh))
		return xerr(x, "%s does not expand to %s", shape_str(&k->sh, sa, sizeof sa),
		            shape_str(&want, sb, sizeof sb));
	if (!(r = knew(x, k->dt, &sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++) {
		int64_t j = bcast_index(&k->sh, &sh, i);
		if (r->dt == KF)
			r->f[i] = k->f[j];
		else
			r->i[i] = k->i[j];
	}
	out_k(x, 0, r);
	return 0;
}

int
emit_expand(Ox *x)
{
	int v = in_t(x, 0);
	Shape want, sh;
	char sa[MAXRANK * 24 + 8], sb[MAXRANK * 24 + 8];

	if (v < 0 || kdims(x, in_k(x, 1), &want, "the shape"))
		return -1;
	if (shape_broadcast(&x->c->f->val[v].ty.sh, &want, &sh))
		return xerr(x, "%s does not expand to %s", shape_str(&x->c->f->val[v].ty.sh, sa, sizeof sa),
		            shape_str(&want, sb, sizeof sb));
	if (!shape_eq(&sh, &x->c->f->val[v].ty.sh) && x->c->f->val[v].ty.dt == I32) {
		/* run-time integers (indices): the copies concatenated along each axis broadcast */
		Shape at = x->c->f->val[v].ty.sh, one = sh;
		for (int a = 0; a < sh.rank; a++)
			one.d[a] = a < sh.rank - at.rank ? 1 : at.d[a - (sh.rank - at.rank)];
		v = xreshape(x, v, &one);
		for (int a = 0; a < sh.rank && v >= 0; a++) {
			if (one.d[a] == sh.d[a])
				continue;
			if (sh.d[a] > MAXTILE)
				return xerr(x, "an expand of run-time integers to %lld along axis %d: at most %d",
				            (long long)sh.d[a], a, MAXTILE);
			v = copies(x, v, a, sh.d[a]);
		}
	} else if (!shape_eq(&sh, &x->c->f->val[v].ty.sh))
		v = xemit2(x, OP_ADD, v, xconst(x, 0, &sh));     /* a broadcast that autodiff sums back */
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

int
fold_range(Ox *x)
{
	Kv *s = in_k(x, 0), *l = in_k(x, 1), *d = in_k(x, 2), *r;
	double a = 0, b = 0, c = 0, n;
	Shape sh;

	if (kscalar(x, s, &a, "start") || kscalar(x, l, &b, "limit") || kscalar(x, d, &c, "delta"))
		return -1;
	if (c == 0)
		return xerr(x, "delta is 0");
	n = ceil((b - a) / c);
	if (!(n < MAXKNOWN))
		return xerr(x, "the range has more than %d elements", MAXKNOWN);
	sh = (Shape){ 1, { n > 0 ? (int64_t)n : 0 } };
	if (!(r = knew(x, s->dt == KF ? KF : KI, &sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++)
		if (r->dt == KF)
			r->f[i] = (float)(s->f[0] + (float)i * (float)c);
		else
			r->i[i] = s->i[0] + i * d->i[0];
	out_k(x, 0, r);
	return 0;
}

/* ---------- layout: Reshape, Flatten, Unsqueeze, Squeeze, Transpose, Concat ---------- */

/* Reshape's target for a tensor of shape in: 0 copies in's dim (unless allowzero), one -1
 * takes what is left. */
static int
reshape_to(Ox *x, const Shape *in, Kv *k, int allowzero, Shape *r)
{
	int64_t prod = 1, total = shape_numel(in);
	int n, hole = -1;
	char sa[MAXRANK * 24 + 8];

	if (klist(x, k, r->d, &n, "the shape"))
		return -1;
	r->rank = n;
	for (int i = 0; i < n; i++) {
		if (r->d[i] == 0 && !allowzero) {
			if (i >= in->rank)
				return xerr(x, "dimension %d is 0 (copy), but the input has rank %d", i, in->rank);
			r->d[i] = in->d[i];
		}
		if (r->d[i] == -1) {
			if (hole >= 0)
				return xerr(x, "the shape has two -1");
			hole = i;
			continue;
		}
		if (r->d[i] < 0 || mul64(prod, r->d[i], &prod))
			return xerr(x, "the shape has a bad dimension %lld", (long long)r->d[i]);
	}
	if (hole >= 0) {
		if (prod == 0 || total % prod)
			return xerr(x, "-1 does not divide: %s has %lld elements", shape_str(in, sa, sizeof sa),
			            (long long)total);
		r->d[hole] = total / prod;
	} else if (prod != total) {
		char sb[MAXRANK * 24 + 8];
		return xerr(x, "cannot reshape %s into %s", shape_str(in, sa, sizeof sa),
		            shape_str(r, sb, sizeof sb));
	}
	return 0;
}

/* The result shape of the layout op being translated, for an input of shape in. */
static int
layout_shape(Ox *x, const Shape *in, Shape *r)
{
	const char *op = x->nd->op;
	int64_t ax[MAXRANK];
	int n;

	if (strcmp(op, "Reshape") == 0)
		return reshape_to(x, in, in_k(x, 1), (int)att_i(x, "allowzero", 0), r);
	if (strcmp(op, "Flatten") == 0) {
		int a = (int)att_i(x, "axis", 1);
		int64_t p = 1;
		if (a < 0)
			a += in->rank;
		if (a < 0 || a > in->rank)
			return xerr(x, "axis %lld is out of range for rank %d", (long long)att_i(x, "axis", 1),
			            in->rank);
		for (int i = 0; i < a; i++)
			p *= in->d[i];
		*r = (Shape){ 2, { p, a == 0 ? shape_numel(in) : shape_numel(in) / (p ? p : 1) } };
		if (p == 0)
			r->d[1] = 1;
		return 0;
	}
	if (axes_arg(x, 13, 1, "axes", ax, &n))
		return -1;
	if (strcmp(op, "Unsqueeze") == 0) {
		int ins[MAXRANK + 1] = { 0 };
		if (n < 0)
			return xerr(x, "the axes are missing");
		if (rank_ok(x, in->rank + n) || axes_of(x, ax, n, in->rank + n))
			return -1;
		for (int i = 0; i < n; i++)
			ins[ax[i]] = 1;
		r->rank = in->rank + n;
		for (int i = 0, k = 0; i < r->rank; i++)
			r->d[i] = ins[i] ? 1 : in->d[k++];
		return 0;
	}
	/* Squeeze: the given axes (each of size 1), or every axis of size 1 */
	{
		int drop[MAXRANK] = { 0 };
		if (n > 0 && axes_of(x, ax, n, in->rank))
			return -1;
		for (int i = 0; i < n; i++) {
			if (in->d[ax[i]] != 1)
				return xerr(x, "axis %lld has size %lld, not 1", (long long)ax[i], (long long)in->d[ax[i]]);
			drop[ax[i]] = 1;
		}
		for (int i = 0; n < 0 && i < in->rank; i++)
			drop[i] = in->d[i] == 1;
		r->rank = 0;
		for (int i = 0; i < in->rank; i++)
			if (!drop[i])
				r->d[r->rank++] = in->d[i];
	}
	return 0;
}

int
fold_layout(Ox *x)
{
	Kv *k = in_k(x, 0);
	Shape sh;

	if (!k || layout_shape(x, &k->sh, &sh))
		return -1;
	out_k(x, 0, kreshape(x, k, &sh));
	return 0;
}

int
emit_layout(Ox *x)
{
	int v = in_t(x, 0);
	Shape sh;

	if (v < 0 || layout_shape(x, &x->c->f->val[v].ty.sh, &sh) || (v = xreshape(x, v, &sh)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

static int
perm_of(Ox *x, int r, int64_t *p)
{
	int n = att_ints(x, "perm", p, MAXRANK), seen[MAXRANK] = { 0 };

	if (n == -1) {
		for (int i = 0; i < r; i++)
			p[i] = r - 1 - i;
		return 0;
	}
	if (n != r)
		return xerr(x, "perm has %d axes for a tensor of rank %d", n, r);
	for (int i = 0; i < r; i++)
		if (p[i] < 0 || p[i] >= r || seen[p[i]]++)
			return xerr(x, "perm is not a permutation of 0..%d", r - 1);
	return 0;
}

int
fold_transpose(Ox *x)
{
	Kv *k = in_k(x, 0), *r;
	int64_t p[MAXRANK], st[MAXRANK];
	Shape sh;

	if (!k || perm_of(x, k->sh.rank, p))
		return -1;
	sh.rank = k->sh.rank;
	for (int i = sh.rank - 1, s = 1; i >= 0; s *= (int)k->sh.d[i], i--)
		st[i] = s;
	for (int i = 0; i < sh.rank; i++)
		sh.d[i] = k->sh.d[p[i]];
	if (!(r = knew(x, k->dt, &sh)))
		return -1;
	for (int64_t i = 0; i < r->n; i++) {
		int64_t rem = i, j = 0;
		for (int a = sh.rank - 1; a >= 0; a--) {
			j += (rem % sh.d[a]) * st[p[a]];
			rem /= sh.d[a];
		}
		if (r->dt == KF)
			r->f[i] = k->f[j];
		else
			r->i[i] = k->i[j];
	}
	out_k(x, 0, r);
	return 0;
}

int
emit_transpose(Ox *x)
{
	int v = in_t(x, 0), id = 1;
	int64_t p[MAXRANK];

	if (v < 0 || perm_of(x, x->c->f->val[v].ty.sh.rank, p))
		return -1;
	for (int i = 0; i < x->c->f->val[v].ty.sh.rank; i++)
		id &= p[i] == i;
	if (!id)
		v = xemit(x, OP_TRANSPOSE, &v, 1, p, x->c->f->val[v].ty.sh.rank, NULL, NULL);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Tile by known repeats: r copies concatenated along each axis repeated (at most MAXTILE) */
int
emit_tile(Ox *x)
{
	int64_t rep[MAXRANK];
	int v = in_t(x, 0), n, r;

	if (v < 0 || klist(x, in_k(x, 1), rep, &n, "the repeats"))
		return -1;
	r = x->c->f->val[v].ty.sh.rank;
	if (n != r)
		return xerr(x, "%d repeats for a tensor of rank %d", n, r);
	for (int a = 0; a < r; a++) {
		if (rep[a] < 1 || rep[a] > MAXTILE)
			return xerr(x, "a repeat of %lld on axis %d: each must be 1 to %d", (long long)rep[a], a, MAXTILE);
		if ((v = copies(x, v, a, rep[a])) < 0)
			return -1;
	}
	out_t(x, 0, v);
	return 0;
}

/* DepthToSpace (blocksize b) of [N, C, H, W]: the channels as [b, b, C/b^2] (DCR, the
 * default) or [C/b^2, b, b] (CRD, PyTorch's pixel_shuffle) spread over b x b blocks: a reshape
 * to rank 6, a transpose, a reshape to [N, C/b^2, H b, W b]. */
int
emit_d2s(Ox *x)
{
	int64_t b = att_i(x, "blocksize", 0), c, dcr = !att_is(x, "mode", "DCR", "CRD");
	int v = in_t(x, 0);
	Shape sh;

	if (v < 0)
		return -1;
	sh = x->c->f->val[v].ty.sh;
	if (!(dcr ? att_is(x, "mode", "DCR", "DCR") : 1) || sh.rank != 4)
		return xerr(x, "DepthToSpace needs mode DCR or CRD and an input of rank 4");
	if (b < 1 || b > 65536 || sh.d[1] % (b * b))
		return xerr(x, "blocksize %lld does not divide %lld channels into blocks", (long long)b,
		            (long long)sh.d[1]);
	c = sh.d[1] / (b * b);
	{
		int64_t pd[MAXIA] = { 0, 3, 4, 1, 5, 2 }, pc[MAXIA] = { 0, 1, 4, 2, 5, 3 };
		Shape s6 = dcr ? (Shape){ 6, { sh.d[0], b, b, c, sh.d[2], sh.d[3] } } :
		                 (Shape){ 6, { sh.d[0], c, b, b, sh.d[2], sh.d[3] } };
		v = xemit(x, OP_TRANSPOSE, (int[]){ xreshape(x, v, &s6) }, 1, dcr ? pd : pc, 6, NULL, NULL);
		v = xreshape(x, v, &(Shape){ 4, { sh.d[0], c, sh.d[2] * b, sh.d[3] * b } });
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

int
fold_concat(Ox *x)
{
	Kv *k[x->nd->nin + 1], *r;
	int64_t outer = 1, at = 0;
	Shape sh;
	int a, n = 0;

	for (int i = 0; i < x->nd->nin; i++)
		if (has_in(x, i) && !(k[n++] = in_k(x, i)))
			return -1;
	if (!n)
		return xerr(x, "nothing to concatenate");
	if ((a = axis_of(x, att_i(x, "axis", 0), k[0]->sh.rank)) < 0)
		return -1;
	sh = k[0]->sh;
	sh.d[a] = 0;
	for (int i = 0; i < n; i++) {
		if (k[i]->sh.rank != sh.rank || (k[i]->dt == KF) != (k[0]->dt == KF))
			return xerr(x, "operands differ in rank or type");
		for (int d = 0; d < sh.rank; d++)
			if (d != a && k[i]->sh.d[d] != sh.d[d])
				return xerr(x, "operands differ off the axis");
		sh.d[a] += k[i]->sh.d[a];
	}
	if (!(r = knew(x, k[0]->dt, &sh)))
		return -1;
	for (int d = 0; d < a; d++)
		outer *= sh.d[d];
	for (int64_t o = 0; o < outer; o++)
		for (int i = 0; i < n; i++) {
			int64_t run = k[i]->n / (outer ? outer : 1);
			for (int64_t j = 0; j < run; j++, at++)
				if (r->dt == KF)
					r->f[at] = k[i]->f[o * run + j];
				else
					r->i[at] = k[i]->i[o * run + j];
		}
	out_k(x, 0, r);
	return 0;
}

int
emit_concat(Ox *x)
{
	int args[x->nd->nin + 1], n = 0, v;
	int64_t ia[MAXIA] = { 0 };
	Type t;

	for (int i = 0; i < x->nd->nin; i++)
		if (has_in(x, i) && (args[n++] = in_t(x, i)) < 0)
			return -1;
	if (!n || in_type(x, 0, &t) || (ia[0] = axis_of(x, att_i(x, "axis", 0), t.sh.rank)) < 0)
		return n ? -1 : xerr(x, "nothing to concatenate");
	v = n == 1 ? args[0] : xemit(x, OP_CONCAT, args, n, ia, 1, NULL, NULL);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}
