/* onnxops.c: the ONNX ops mtc imports: for each, how it folds (every input known at import
 * time) and how it becomes IR ops (onnxcall.c decides which runs). Semantics follow the
 * ONNX operator documents of opsets 11 to 18; an op or attribute value outside what is
 * handled here is an error naming the node, never a guess.
 *
 * The shape arithmetic exporters write (Shape, Gather, Concat, Unsqueeze, Range, Expand,
 * Where, Equal, Cast, ConstantOfShape, ...) folds; ops the IR lacks are written with the
 * ops it has (Erf, Gemm, Pow by 2, Reciprocal, Abs, Flatten, Squeeze). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnxint.h"

/* ---------- helpers ---------- */

static Kv *
knew(Ox *x, KDt dt, const Shape *sh)
{
	int64_t n = 1;

	for (int i = 0; i < sh->rank; i++)
		if (sh->d[i] < 0 || mul64(n, sh->d[i], &n) || n > MAXKNOWN) {
			xerr(x, "a tensor folded at import time would have more than %d elements", MAXKNOWN);
			return NULL;
		}
	return kv_new(x->a, dt, sh);
}

/* A shallow copy of k with shape sh (same element count): reshapes move no data. */
static Kv *
kreshape(Ox *x, const Kv *k, const Shape *sh)
{
	Kv *r = aalloc(x->a, sizeof *r);

	*r = *k;
	r->sh = *sh;
	return r;
}

static int
rank_ok(Ox *x, int r)
{
	if (r > MAXRANK)
		return xerr(x, "the result would have rank %d, more than mtc's limit of %d", r, MAXRANK);
	return 0;
}

/* A known 1-D (or scalar) integer tensor as a list of at most MAXRANK integers. */
static int
klist(Ox *x, const Kv *k, int64_t *v, int *n, const char *what)
{
	if (!k)
		return -1;
	if (k->dt == KF || k->sh.rank > 1)
		return xerr(x, "%s must be a list of integers", what);
	if (k->n > MAXRANK)
		return xerr(x, "%s has %lld elements, more than mtc's rank limit of %d", what,
		            (long long)k->n, MAXRANK);
	for (int64_t i = 0; i < k->n; i++)
		v[i] = k->i[i];
	*n = (int)k->n;
	return 0;
}

/* A known scalar (or one-element tensor) as a double. */
static int
kscalar(Ox *x, const Kv *k, double *v, const char *what)
{
	if (!k)
		return -1;
	if (k->n != 1)
		return xerr(x, "%s must be a single value, it has %lld", what, (long long)k->n);
	*v = kv_get(k, 0);
	return 0;
}

/* A list of axes (negatives counted from the end of rank r), each once, into v. */
static int
axes_of(Ox *x, int64_t *v, int n, int r)
{
	int seen[MAXRANK] = { 0 };

	for (int i = 0; i < n; i++) {
		int a = axis_of(x, v[i], r);
		if (a < 0)
			return -1;
		if (seen[a]++)
			return xerr(x, "axis %lld is given twice", (long long)v[i]);
		v[i] = a;
	}
	return 0;
}

/* The axes of Unsqueeze, Squeeze, ReduceX and Split-like ops: an attribute before opset
 * `since`, the optional input `in` from it. *n = -1: not given. */
static int
axes_arg(Ox *x, int since, int in, const char *att, int64_t *v, int *n)
{
	if (x->o->opset >= since) {
		*n = -1;
		return has_in(x, in) ? klist(x, in_k(x, in), v, n, "the axes") : 0;
	}
	*n = att_ints(x, att, v, MAXRANK);
	return *n == -2 ? xerr(x, "attribute '%s' has more than %d elements", att, MAXRANK) : 0;
}

/* ---------- Constant, Shape, Size, ConstantOfShape, Identity, Cast ---------- */

static int
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

static int
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

static int
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

static int
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

static int
fold_identity(Ox *x)
{
	Kv *k = in_k(x, 0);

	if (!k)
		return -1;
	out_k(x, 0, k);
	return 0;
}

static int
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

static int
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

/* Output 0 as v, a run-time boolean (f32 1 or 0); 0, or -1 if v is. */
static int
out_bool(Ox *x, int v)
{
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	if (x->nd->nout && x->nd->out[0] >= 0)
		x->x[x->nd->out[0]].boolean = 1;
	return 0;
}

static int
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
			v = xemit2(x, OP_SUB, xconst(x, 1, &one), xemit2(x, OP_EQ, v, xconst(x, 0, &one)));
		return out_bool(x, v);
	}
	if ((dt == KF) != (x->c->f->val[v].ty.dt == F32) || dt == KB)
		return xerr(x, "a cast of a run-time %s tensor to %s is not supported",
		            dtype_name(x->c->f->val[v].ty.dt), dt_name(to));
	out_t(x, 0, v);
	return 0;
}

/* Input i as run-time integer indices: i32 as it is; a count or a boolean, exact integers
 * held in f32 (mask.cumsum(1).long()), made i32 by to_i32 where i32 is wanted (an
 * embedding's ids), else kept in f32 (onehot_eq compares floats); else an error naming what.
 * -1 after an error. */
static int
in_index(Ox *x, int i, const char *what, int i32)
{
	int v = in_t(x, i);
	const Xv *in;

	if (v < 0 || x->c->f->val[v].ty.dt == I32)
		return v;
	in = &x->x[x->nd->in[i]];
	if (in->count || in->boolean)
		return i32 ? xemit1(x, OP_TOI32, v) : v;
	return xerr(x, "the %s must be integers", what);
}

/* ---------- elementwise ---------- */

enum { E_ADD, E_SUB, E_MUL, E_DIV, E_POW, E_EQ, E_LT, E_GT, E_LE, E_GE, E_AND, E_OR, E_XOR,
       E_MIN, E_MAX, E_MOD };

static const struct { const char *name; int code; } binops[] = {
	{ "Add", E_ADD }, { "Sub", E_SUB }, { "Mul", E_MUL }, { "Div", E_DIV }, { "Pow", E_POW },
	{ "Equal", E_EQ }, { "Less", E_LT }, { "Greater", E_GT }, { "LessOrEqual", E_LE },
	{ "GreaterOrEqual", E_GE }, { "And", E_AND }, { "Or", E_OR }, { "Xor", E_XOR },
	{ "Min", E_MIN }, { "Max", E_MAX }, { "Mod", E_MOD },
};

static int
binop_code(const char *name)
{
	for (size_t i = 0; i < sizeof binops / sizeof *binops; i++)
		if (strcmp(binops[i].name, name) == 0)
			return binops[i].code;
	die("no binary op %s", name);
}

/* One element: floats in f32 (as the exporter's runtime computes), integers in int64. */
static int
bin1(Ox *x, int code, int fl, double a, double b, int64_t ia, int64_t ib, double *rf, int64_t *ri)
{
	switch (code) {
	case E_EQ: *ri = fl ? a == b : ia == ib; return 0;
	case E_LT: *ri = fl ? a < b : ia < ib; return 0;
	case E_GT: *ri = fl ? a > b : ia > ib; return 0;
	case E_LE: *ri = fl ? a <= b : ia <= ib; return 0;
	case E_GE: *ri = fl ? a >= b : ia >= ib; return 0;
	case E_AND: *ri = ia && ib; return 0;
	case E_OR: *ri = ia || ib; return 0;
	case E_XOR: *ri = !ia != !ib; return 0;
	}
	if (fl) {
		float fa = (float)a, fb = (float)b;
		switch (code) {
		case E_ADD: *rf = fa + fb; break;
		case E_SUB: *rf = fa - fb; break;
		case E_MUL: *rf = fa * fb; break;
		case E_DIV: *rf = fa / fb; break;
		case E_POW: *rf = powf(fa, fb); break;
		case E_MIN: *rf = fa < fb ? fa : fb; break;
		case E_MAX: *rf = fa > fb ? fa : fb; break;
		default: *rf = fmodf(fa, fb); break;
		}
		return 0;
	}
	switch (code) {
	case E_ADD: if (add64(ia, ib, ri)) goto big; return 0;
	case E_SUB: if (__builtin_sub_overflow(ia, ib, ri)) goto big; return 0;
	case E_MUL: if (mul64(ia, ib, ri)) goto big; return 0;
	case E_DIV:
	case E_MOD:
		if (ib == 0 || (ia == INT64_MIN && ib == -1))
			return xerr(x, "integer division of %lld by %lld", (long long)ia, (long long)ib);
		*ri = code == E_DIV ? ia / ib : ((ia % ib) + ib) % ib;      /* Mod: the divisor's sign */
		return 0;
	case E_POW: {
		int64_t r = 1;
		if (ib < 0)
			return xerr(x, "an integer power with a negative exponent %lld", (long long)ib);
		for (int64_t k = 0; k < ib; k++)
			if (mul64(r, ia, &r))
				goto big;
		*ri = r;
		return 0;
	}
	case E_MIN: *ri = ia < ib ? ia : ib; return 0;
	default: *ri = ia > ib ? ia : ib; return 0;
	}
big:
	return xerr(x, "integer overflow folding %lld and %lld", (long long)ia, (long long)ib);
}

static Kv *
fold2(Ox *x, int code, const Kv *a, const Kv *b)
{
	int fl = a->dt == KF || b->dt == KF, cmp = code >= E_EQ && code <= E_XOR;
	char sa[MAXRANK * 24 + 8], sb[MAXRANK * 24 + 8];
	Shape sh;
	Kv *r;

	if (shape_broadcast(&a->sh, &b->sh, &sh)) {
		xerr(x, "shapes %s and %s do not broadcast", shape_str(&a->sh, sa, sizeof sa),
		     shape_str(&b->sh, sb, sizeof sb));
		return NULL;
	}
	if (!(r = knew(x, cmp ? KB : fl ? KF : a->dt, &sh)))
		return NULL;
	for (int64_t i = 0; i < r->n; i++) {
		int64_t p = bcast_index(&a->sh, &sh, i), q = bcast_index(&b->sh, &sh, i), ri = 0;
		double rf = 0;
		if (bin1(x, code, fl, kv_get(a, p), kv_get(b, q), a->dt == KF ? 0 : a->i[p],
		         b->dt == KF ? 0 : b->i[q], &rf, &ri))
			return NULL;
		if (r->dt == KF)
			r->f[i] = (float)rf;
		else
			r->i[i] = ri;
	}
	return r;
}

static int
fold_bin(Ox *x)
{
	int code = binop_code(x->nd->op);
	Kv *r = in_k(x, 0);

	/* Min and Max take one or more operands */
	for (int i = 1; r && i < x->nd->nin; i++) {
		Kv *b = in_k(x, i);
		r = b ? fold2(x, code, r, b) : NULL;
	}
	if (!r)
		return -1;
	out_k(x, 0, r);
	return 0;
}

/* Input i as an f32 IR value for a comparison, Where, Min or Max: run-time booleans are f32
 * 0 and 1 (comparisons make them), known booleans and integers are made so; a run-time
 * integer tensor is refused. -1 after an error. */
static int
in_f32(Ox *x, int i)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1;
	Type t;
	Kv *k, *f;

	if (in_type(x, i, &t))
		return -1;
	if (t.dt == F32)
		return in_t(x, i);
	if (x->x[id].v >= 0)
		return xerr(x, "input '%s' is an integer tensor computed at run time: %s of run-time "
		            "integers is not supported", x->o->name[id], x->nd->op);
	if (!(k = in_k(x, i)) || !(f = knew(x, KF, &k->sh)))
		return -1;
	for (int64_t j = 0; j < k->n; j++)
		if ((double)(f->f[j] = (float)kv_get(k, j)) != kv_get(k, j))
			return xerr(x, "input '%s' holds %.17g, which a float cannot hold exactly",
			            x->o->name[id], kv_get(k, j));
	return xknown(x, f, x->o->name[id]);
}

/* -v, or the operand of the neg that made v (a Min's result taken by ReduceMin, say). */
static int
xneg(Ox *x, int v)
{
	const Func *f = x->c->f;
	int d = v >= 0 ? f->val[v].def : -1;

	if (d >= 0 && f->op[d].kind == OP_NEG)
		return f->op[d].args[0];
	return xemit1(x, OP_NEG, v);
}

/* Add, Sub or Mul of a count (an integer held in f32) and a known integer or another count:
 * f32 arithmetic, exact while the result's bound stays below 2^24; Div (integer division) is
 * refused. */
static int
count_bin(Ox *x, int code)
{
	double bound[2], r;
	int v[2];

	if (code == E_DIV)
		return xerr(x, "an integer division of a count of booleans is not supported; cast it "
		            "to float first");
	for (int i = 0; i < 2; i++) {
		Kv *k;
		bound[i] = (double)x->x[x->nd->in[i]].count;
		if (!bound[i]) {        /* a known integer: its largest magnitude */
			if (!(k = in_k(x, i)))
				return -1;
			for (int64_t j = 0; j < k->n; j++)
				bound[i] = fmax(bound[i], fabs(kv_get(k, j)));
		}
		if ((v[i] = in_f32(x, i)) < 0)
			return -1;
	}
	r = code == E_MUL ? bound[0] * bound[1] : bound[0] + bound[1];
	if (r > 1 << 24)
		return xerr(x, "the result, up to %.0f, is not exact in f32, which holds mtc's run-time "
		            "integers", r);
	if ((v[0] = xemit2(x, code == E_ADD ? OP_ADD : code == E_SUB ? OP_SUB : OP_MUL, v[0], v[1])) < 0)
		return -1;
	out_t(x, 0, v[0]);
	if (x->nd->out[0] >= 0)
		x->x[x->nd->out[0]].count = r ? (int64_t)r : 1;
	return 0;
}

static int
emit_bin(Ox *x)
{
	static const Opk ir[] = { [E_ADD] = OP_ADD, [E_SUB] = OP_SUB, [E_MUL] = OP_MUL, [E_DIV] = OP_DIV };
	int code = binop_code(x->nd->op), v;

	if (code <= E_DIV && x->nd->nin == 2 && x->nd->in[0] >= 0 && x->nd->in[1] >= 0 &&
	    (x->x[x->nd->in[0]].count || x->x[x->nd->in[1]].count))
		return count_bin(x, code);
	if (code == E_MIN || code == E_MAX) {
		/* maximum, PyTorch's (a NaN kept, the gradient halved at ties), left to right over
		 * the operands; the minimum as -maximum(-a, -b) */
		v = in_f32(x, 0);
		if (code == E_MIN)
			v = xneg(x, v);
		for (int i = 1; i < x->nd->nin && v >= 0; i++) {
			int b = in_f32(x, i);
			v = xemit2(x, OP_MAXIMUM, v, code == E_MIN ? xneg(x, b) : b);
		}
		if (code == E_MIN)
			v = xneg(x, v);
		if (v < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	if (code > E_DIV)
		return xerr(x, "this op is supported only on values known at import time");
	v = in_f32(x, 0);
	v = xemit2(x, ir[code], v, v < 0 ? -1 : in_f32(x, 1));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* The operands of a comparison where one is a run-time integer tensor: exact in f32 when the
 * other is known and every element is an integer below 2^24 in magnitude (to_f32 is exact up to
 * 2^24 and monotonic beyond, so a run-time value past it compares as it is: `mask == 0`,
 * `ids != pad`); two run-time integer tensors are refused. *a = -2 where neither is a run-time
 * integer tensor (the caller's in_f32 then); -1 after an error. */
static int
cmp_int(Ox *x, int *a, int *b)
{
	int rt[2];

	*a = -2;
	for (int i = 0; i < 2; i++) {
		Type t;
		if (in_type(x, i, &t))
			return -1;
		rt[i] = t.dt == I32 && x->x[x->nd->in[i]].v >= 0;
	}
	if (!rt[0] && !rt[1])
		return 0;
	if (rt[0] && rt[1])
		return xerr(x, "a comparison of two integer tensors computed at run time is not supported "
		            "(of one with known integers below 2^24 in magnitude, it is)");
	{
		int r = rt[0] ? 0 : 1;
		Kv *k = in_k(x, 1 - r);
		int v;
		if (!k)
			return -1;
		for (int64_t j = 0; j < k->n; j++)
			if (!(fabs(kv_get(k, j)) < 16777216) || kv_get(k, j) != floor(kv_get(k, j)))
				return xerr(x, "a run-time integer tensor compared with %.17g: only known integers "
				            "below 2^24 in magnitude compare exactly in f32", kv_get(k, j));
		if ((v = xemit1(x, OP_TOF32, in_t(x, r))) < 0)
			return -1;
		*(r ? b : a) = v;
		if ((*(r ? a : b) = in_f32(x, 1 - r)) < 0)
			return -1;
	}
	return 0;
}

/* Comparisons and logic of run-time values: f32 1 or 0 (ONNX's booleans at run time). Greater
 * is less with the operands swapped; And, Or and Xor of 0 and 1 are a b, a + b - a b and
 * 1 - (a == b); NaN compares false. No gradient flows through them. */
static int
emit_cmp(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int code = binop_code(x->nd->op), a, b, v;

	if (code <= E_GE && cmp_int(x, &a, &b))
		return -1;
	if (code > E_GE || a == -2) {
		a = in_f32(x, 0);
		b = a < 0 ? -1 : in_f32(x, 1);
	}

	switch (code) {
	case E_EQ: v = xemit2(x, OP_EQ, a, b); break;
	case E_LT: v = xemit2(x, OP_LT, a, b); break;
	case E_GT: v = xemit2(x, OP_LT, b, a); break;
	case E_LE: v = xemit2(x, OP_LE, a, b); break;
	case E_GE: v = xemit2(x, OP_LE, b, a); break;
	case E_AND: v = xemit2(x, OP_MUL, a, b); break;
	case E_OR: v = xemit2(x, OP_SUB, xemit2(x, OP_ADD, a, b), xemit2(x, OP_MUL, a, b)); break;
	default: v = xemit2(x, OP_SUB, xconst(x, 1, &one), xemit2(x, OP_EQ, a, b)); break;
	}
	return out_bool(x, v);
}

/* IsNaN (x != x), IsInf (x == inf, x == -inf, as detect_positive and detect_negative ask):
 * run-time booleans. */
static int
emit_isnan(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0), v = -1;
	int pos = (int)att_i(x, "detect_positive", 1), neg = (int)att_i(x, "detect_negative", 1);

	if (a < 0)
		return -1;
	if (strcmp(x->nd->op, "IsNaN") == 0)
		return out_bool(x, xemit2(x, OP_SUB, xconst(x, 1, &one), xemit2(x, OP_EQ, a, a)));
	if (!pos && !neg)
		return out_bool(x, xconst(x, 0, &x->c->f->val[a].ty.sh));
	if (pos)
		v = xemit2(x, OP_EQ, a, xconst(x, INFINITY, &one));
	if (neg) {
		int n = xemit2(x, OP_EQ, a, xconst(x, -INFINITY, &one));
		v = pos ? xemit2(x, OP_ADD, v, n) : n;
	}
	return out_bool(x, v);
}

/* Sign: (0 < x) - (x < 0), NaN where x is (select by x == x); no gradient, as PyTorch's. */
static int
emit_sign(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0), z = xconst(x, 0, &one), v, s[3];

	v = xemit2(x, OP_SUB, xemit2(x, OP_LT, z, a), xemit2(x, OP_LT, a, z));
	s[0] = xemit2(x, OP_EQ, a, a);
	s[1] = v;
	s[2] = a;
	if ((v = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* 1 where the run-time integer indices i (i32, or exact integers in f32) name a position
 * 0..n-1, else 0: equal of to_f32(i), a 1 inserted at axis p, with a constant of the positions along p (named name). With wrap a
 * negative index counts from n (ONNX's OneHot and GatherElements). Exact: n and every index
 * that can match are below 2^24. *fv, if given, gets to_f32(i). -1 after an error. */
static int
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
static int
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

/* Not of a run-time boolean (f32 0 or 1): 1 - a. */
static int
emit_not(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0);

	return out_bool(x, a < 0 ? -1 : xemit2(x, OP_SUB, xconst(x, 1, &one), a));
}

/* x ** c with c known: by 2 as x * x (PyTorch's pow by 2, bit for bit), else pow. */
static int
emit_pow(Ox *x)
{
	double c, fa[MAXFA] = { 0 };
	int a = in_t(x, 0), v;
	Kv *k;

	if (a < 0)
		return -1;
	if (!has_in(x, 1) || x->x[x->nd->in[1]].v >= 0)
		return xerr(x, "the exponent must be known at import time");
	if (!(k = in_k(x, 1)) || !kv_uniform(k))
		return k ? xerr(x, "the exponent must be one value") : -1;
	c = kv_get(k, 0);
	fa[0] = c;
	if (c == 1)
		v = a;
	else if (c == 2)
		v = xemit2(x, OP_MUL, a, a);
	else
		v = xemit(x, OP_POW, &a, 1, NULL, 0, fa, NULL);
	if (v >= 0 && k->sh.rank > 0) {     /* a broadcast exponent can grow the result */
		Shape sh;
		if (shape_broadcast(&x->c->f->val[v].ty.sh, &k->sh, &sh))
			return xerr(x, "the exponent does not broadcast with the base");
		if (!shape_eq(&sh, &x->c->f->val[v].ty.sh))
			v = xemit2(x, OP_ADD, v, xconst(x, 0, &sh));
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

enum { U_NEG, U_SQRT, U_RECIP, U_ABS, U_EXP, U_LOG, U_RELU, U_TANH, U_SIGMOID, U_ERF, U_NOT,
       U_FLOOR, U_CEIL, U_SIN, U_COS, U_ROUND };

static const struct { const char *name; int code; Opk ir; } unops[] = {
	{ "Neg", U_NEG, OP_NEG }, { "Sqrt", U_SQRT, OP_SQRT }, { "Reciprocal", U_RECIP, NOP },
	{ "Abs", U_ABS, NOP }, { "Exp", U_EXP, OP_EXP }, { "Log", U_LOG, OP_LOG },
	{ "Relu", U_RELU, OP_RELU }, { "Tanh", U_TANH, OP_TANH }, { "Sigmoid", U_SIGMOID, OP_SIGMOID },
	{ "Erf", U_ERF, NOP }, { "Not", U_NOT, NOP }, { "Floor", U_FLOOR, OP_FLOOR },
	{ "Ceil", U_CEIL, OP_CEIL },
	{ "Sin", U_SIN, OP_SIN }, { "Cos", U_COS, OP_COS }, { "Round", U_ROUND, OP_ROUND },
};

static int
unop(const char *name)
{
	for (size_t i = 0; i < sizeof unops / sizeof *unops; i++)
		if (strcmp(unops[i].name, name) == 0)
			return (int)i;
	die("no unary op %s", name);
}

static int
fold_un(Ox *x)
{
	int code = unops[unop(x->nd->op)].code;
	Kv *k = in_k(x, 0), *r;

	if (!k)
		return -1;
	if (code == U_NOT || (k->dt != KF && (code == U_NEG || code == U_ABS || code == U_FLOOR ||
	                                      code == U_CEIL || code == U_ROUND || code == U_RELU))) {
		if (!(r = knew(x, k->dt, &k->sh)))
			return -1;
		for (int64_t i = 0; i < k->n; i++) {
			int64_t v = k->i[i];
			if (code == U_NOT)
				r->i[i] = !v;
			else if ((code == U_NEG || (code == U_ABS && v < 0)) && v == INT64_MIN)
				return xerr(x, "integer overflow folding %lld", (long long)v);
			else
				r->i[i] = code == U_NEG || (code == U_ABS && v < 0) ? -v :
				          code == U_RELU && v < 0 ? 0 : v;
		}
		out_k(x, 0, r);
		return 0;
	}
	if (!(r = knew(x, KF, &k->sh)))
		return -1;
	for (int64_t i = 0; i < k->n; i++) {
		float v = (float)kv_get(k, i);
		switch (code) {
		case U_NEG: v = -v; break;
		case U_SQRT: v = sqrtf(v); break;
		case U_RECIP: v = 1 / v; break;
		case U_ABS: v = fabsf(v); break;
		case U_EXP: v = expf(v); break;
		case U_LOG: v = logf(v); break;
		case U_RELU: v = v > 0 ? v : 0; break;
		case U_TANH: v = tanhf(v); break;
		case U_SIGMOID: v = 1 / (1 + expf(-v)); break;
		case U_ERF: v = erff(v); break;
		case U_FLOOR: v = floorf(v); break;
		case U_SIN: v = sinf(v); break;
		case U_COS: v = cosf(v); break;
		case U_ROUND: v = rintf(v); break;
		default: v = ceilf(v); break;
		}
		r->f[i] = v;
	}
	out_k(x, 0, r);
	return 0;
}

/* erf(x) from the IR's ops: erf is odd, so erf(x) = P(relu(-x)) - P(relu(x)) with
 * P(u) = 1 - erf(u) for u >= 0 by Abramowitz and Stegun 7.1.26: (a1 t + ... + a5 t^5) e^(-u^2),
 * t = 1 / (1 + p u), absolute error below 1.5e-7; P(0) = 1 - 1e-9. */
static int
erfc_as(Ox *x, int u)
{
	static const double a[] = { 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429 };
	const Shape one = { 0, { 0 } };
	int t, p;

	t = xemit2(x, OP_DIV, xconst(x, 1, &one),
	          xemit2(x, OP_ADD, xconst(x, 1, &one), xemit2(x, OP_MUL, u, xconst(x, 0.3275911, &one))));
	p = xemit2(x, OP_MUL, t, xconst(x, a[4], &one));
	for (int i = 3; i >= 0; i--)
		p = xemit2(x, OP_MUL, t, xemit2(x, OP_ADD, p, xconst(x, a[i], &one)));
	return xemit2(x, OP_MUL, p, xemit1(x, OP_EXP, xemit1(x, OP_NEG, xemit2(x, OP_MUL, u, u))));
}

static int
emit_un(Ox *x)
{
	int i = unop(x->nd->op), a = in_t(x, 0), v;
	const Shape one = { 0, { 0 } };

	if (a < 0)
		return -1;
	switch (unops[i].code) {
	case U_RECIP:
		v = xemit2(x, OP_DIV, xconst(x, 1, &one), a);
		break;
	case U_ABS:         /* |x| = relu(x) + relu(-x): d|x|/dx at 0 is 0, as PyTorch's */
		v = xemit2(x, OP_ADD, xemit1(x, OP_RELU, a), xemit1(x, OP_RELU, xemit1(x, OP_NEG, a)));
		break;
	case U_ERF:
		v = xemit2(x, OP_SUB, erfc_as(x, xemit1(x, OP_RELU, xemit1(x, OP_NEG, a))),
		          erfc_as(x, xemit1(x, OP_RELU, a)));
		break;
	default:
		if (unops[i].ir == NOP)
			return xerr(x, "this op is supported only on values known at import time");
		v = xemit1(x, unops[i].ir, a);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
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
static int
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

/* ---------- Where, Expand, Range ---------- */

static int
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

/* Is input i known at import time without ops, and not made from a param? */
static int
known_in(Ox *x, int i)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1;
	const Xv *v = id >= 0 ? &x->x[id] : NULL;

	return v && !v->param && v->v < 0 && (v->k || v->wait || x->o->initof[id] >= 0);
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

/* ScatterND at run time (h[:, 1] = y in PyTorch: data or updates computed in the step) by
 * indices known at import time: data and updates seen as rows [R, C] and [U, C] (C the
 * elements each index names); for reduction none, each row's last update (ONNX's reference
 * applies them in order) gathered by an embedding of constant row ids and selected where a
 * row is hit (the update's bits; the gradient to each update as the embedding's, to the
 * rows not hit of data); for add, the data plus one such layer per update of a row, in
 * order (at most MAXLAYER). mul, max and min refused. */
enum { MAXLAYER = 16 };
static int
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

/* Where with a condition known at import time: one branch where the condition is uniform;
 * else a * C + b * (1 - C) with the 0/1 mask C, a known branch given as its values where it
 * is selected (so -inf fills stay -inf): the gradient of a branch is zero where the other is
 * taken, as PyTorch's. */
static int
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
			part[b] = xemit2(x, OP_MUL, in_t(x, 1 + b),
			                xknown(x, m, asprintf_a(x->a, "%s.%s", nm, sel ? "mask" : "unmask")));
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

static int
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

static int
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

static int
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

static int
fold_layout(Ox *x)
{
	Kv *k = in_k(x, 0);
	Shape sh;

	if (!k || layout_shape(x, &k->sh, &sh))
		return -1;
	out_k(x, 0, kreshape(x, k, &sh));
	return 0;
}

static int
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

static int
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

static int
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
static int
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
static int
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

static int
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

static int
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

/* ---------- Gather, Slice, Split ---------- */

static int
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
static int
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

static int
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
static int
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
static int
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
	a[0] = xemit2(x, OP_SUB, xconst(x, 1, &one), xemit(x, OP_SUM, &oh, 1, ia, 2, NULL, NULL));
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
static int
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
		int miss = xemit2(x, OP_SUB, xconst(x, 1, &one), xemit(x, OP_SUM, &oh, 1, ib, 2, NULL, NULL));
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
static int
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

static int
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

static int
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
static int
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

static int
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

/* ---------- reductions ---------- */

static int mean_axes(Ox *, int v, const int *mask, int keep);

/* The axes a ReduceX node reduces, as a mask over rank r; *all set when it reduces all. */
static int
reduce_axes(Ox *x, int r, int *mask)
{
	int64_t ax[MAXRANK];
	int n, since = strcmp(x->nd->op, "ReduceSum") == 0 ? 13 : 18;

	if (axes_arg(x, since, 1, "axes", ax, &n) || (n > 0 && axes_of(x, ax, n, r)))
		return -1;
	for (int i = 0; i < r; i++)
		mask[i] = n <= 0;
	if (n == 0 && att_i(x, "noop_with_empty_axes", 0))
		for (int i = 0; i < r; i++)
			mask[i] = 0;
	for (int i = 0; i < n; i++)
		mask[ax[i]] = 1;
	return 0;
}

static int
fold_reduce(Ox *x)
{
	const char *op = x->nd->op;
	int l2 = strcmp(op, "ReduceL2") == 0, sq = l2 || strcmp(op, "ReduceSumSquare") == 0;
	Kv *k = in_k(x, 0), *r;
	int mask[MAXRANK], keep = (int)att_i(x, "keepdims", 1);
	Shape sh = { 0, { 0 } }, ksh;
	int64_t *cnt;

	if (!k || reduce_axes(x, k->sh.rank, mask))
		return -1;
	ksh = k->sh;
	for (int i = 0; i < k->sh.rank; i++) {
		if (mask[i])
			ksh.d[i] = 1;
		if (!mask[i] || keep)
			sh.d[sh.rank++] = mask[i] ? 1 : k->sh.d[i];
	}
	if (!(r = knew(x, k->dt == KF || l2 || strcmp(op, "ReduceMean") == 0 ? KF : k->dt, &ksh)))
		return -1;
	cnt = aalloc(x->a, (size_t)(r->n ? r->n : 1) * sizeof *cnt);
	for (int64_t i = 0; i < k->n; i++) {
		int64_t rem = i, j = 0, st = 1;
		double v = kv_get(k, i), acc;
		if (sq)
			v *= v;
		for (int a = k->sh.rank - 1; a >= 0; a--) {
			if (!mask[a])
				j += (rem % k->sh.d[a]) * st;
			rem /= k->sh.d[a];
			st *= ksh.d[a];
		}
		acc = kv_get(r, j);
		if (cnt[j]++ == 0)
			acc = v;
		else if (strcmp(op, "ReduceMax") == 0)
			acc = v > acc ? v : acc;
		else if (strcmp(op, "ReduceMin") == 0)
			acc = v < acc ? v : acc;
		else if (strcmp(op, "ReduceProd") == 0)
			acc *= v;
		else
			acc += v;
		if (r->dt == KF)
			r->f[j] = (float)acc;
		else
			r->i[j] = (int64_t)acc;
	}
	if (strcmp(op, "ReduceMean") == 0)
		for (int64_t j = 0; j < r->n; j++)
			r->f[j] = cnt[j] ? r->f[j] / (float)cnt[j] : NAN;
	if (l2)
		for (int64_t j = 0; j < r->n; j++)
			r->f[j] = sqrtf(r->f[j]);
	out_k(x, 0, kreshape(x, r, &sh));
	return 0;
}

/* ReduceMean, ReduceSum and ReduceMax at run time: one IR reduction per axis, the last
 * axis first (so the others keep their numbers without keepdims). */
static int
emit_reduce(Ox *x)
{
	const char *op = x->nd->op;
	int l2 = strcmp(op, "ReduceL2") == 0, sq = l2 || strcmp(op, "ReduceSumSquare") == 0;
	int mn = strcmp(op, "ReduceMin") == 0;         /* -max(-x), its gradient as max's */
	int lse = strcmp(op, "ReduceLogSumExp") == 0, l1 = strcmp(op, "ReduceL1") == 0;
	Opk k = strcmp(op, "ReduceMean") == 0 ? OP_MEAN : strcmp(op, "ReduceSum") == 0 || sq || lse || l1 ?
	        OP_SUM : strcmp(op, "ReduceMax") == 0 || mn ? OP_MAX : NOP;
	int mask[MAXRANK], v = in_t(x, 0), keep = (int)att_i(x, "keepdims", 1), m = -1;
	const Shape one = { 0, { 0 } };

	if (k == NOP)
		return xerr(x, "this op is supported only on values known at import time");
	if (v < 0 || reduce_axes(x, x->c->f->val[v].ty.sh.rank, mask))
		return -1;
	if (sq)
		v = xemit2(x, OP_MUL, v, v);
	if (l1)         /* |x| as Abs: relu(x) + relu(-x), whose gradient at 0 is 0 (PyTorch's) */
		v = xemit2(x, OP_ADD, xemit1(x, OP_RELU, v), xemit1(x, OP_RELU, xemit1(x, OP_NEG, v)));
	if (mn)
		v = xneg(x, v);
	if (lse) {      /* m + log(sum(exp(x - m))), m the max over the axes (kept as 1s) */
		m = v;
		for (int a = x->c->f->val[v].ty.sh.rank - 1; a >= 0 && m >= 0; a--)
			if (mask[a]) {
				int64_t ia[MAXIA] = { a, 1 };
				m = xemit(x, OP_MAX, &m, 1, ia, 2, NULL, NULL);
			}
		v = xemit1(x, OP_EXP, xemit2(x, OP_SUB, v, m));
	}
	if (k == OP_MEAN)
		v = mean_axes(x, v, mask, keep);
	else
		for (int a = x->c->f->val[v].ty.sh.rank - 1; a >= 0 && v >= 0; a--)
		if (mask[a]) {
			int64_t ia[MAXIA] = { a, keep };
			v = xemit(x, k, &v, 1, ia, 2, NULL, NULL);
		}
	/* ReduceL2 (a norm, F.normalize's) as sqrt(sum of squares + 1e-30): the same value in f32
	 * wherever the sum is over 1e-22, and at 0 a gradient of 0, as PyTorch's (sqrt's would
	 * make it NaN) */
	if (l2)
		v = xemit1(x, OP_SQRT, xemit2(x, OP_ADD, v, xconst(x, 1e-30, &one)));
	if (mn)
		v = xneg(x, v);
	if (lse && v >= 0 && m >= 0)
		v = xemit2(x, OP_ADD, xemit1(x, OP_LOG, v), xreshape(x, m, &x->c->f->val[v].ty.sh));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	if (x->x[x->nd->in[0]].count && x->nd->out[0] >= 0 && strcmp(op, "ReduceSum") == 0) {
		/* a count of booleans (mask.sum()): exact while it stays below 2^24 */
		const Shape *s = &x->c->f->val[in_t(x, 0)].ty.sh;
		int64_t c = x->x[x->nd->in[0]].count;
		for (int a = 0; a < s->rank; a++)
			if (mask[a] && (c *= s->d[a]) > 1 << 24)
				return xerr(x, "a sum of up to %lld counts of booleans is not exact in f32, "
				            "which holds mtc's run-time integers", (long long)c);
		x->x[x->nd->out[0]].count = c;
	}
	return 0;
}

/* ---------- neural network ops ---------- */

static int
emit_softmax(Ox *x)
{
	int v = in_t(x, 0), r;
	int64_t ia[MAXIA] = { 0 };

	if (v < 0)
		return -1;
	r = x->c->f->val[v].ty.sh.rank;
	if ((ia[0] = axis_of(x, att_i(x, "axis", x->o->opset >= 13 ? -1 : 1), r)) < 0)
		return -1;
	if (x->o->opset < 13 && ia[0] != r - 1)
		return xerr(x, "before opset 13 a softmax flattens the axes from its axis on; mtc "
		            "imports it only along the last axis");
	v = xemit(x, strcmp(x->nd->op, "Softmax") == 0 ? OP_SOFTMAX : OP_LOGSOFTMAX, &v, 1, ia, 1,
	         NULL, NULL);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Einsum of one or two operands, without repeated letters in a term: letters in one operand
 * alone and not in the output summed first, then for two operands the batched GEMM
 * [B, M, K] @ [B, K, N] (B: letters in both and the output, K: in both, not in the output, M
 * and N: in one and the output), each operand transposed and reshaped to it, and the result
 * back to the output's order. An ellipsis stands for the same leading axes in every term. */
enum { EMAX = MAXRANK };
typedef struct { char l[EMAX]; int n; } Eterm;

static int
eterm(Ox *x, const char **p, const char *end, Eterm *t, int ell)
{
	t->n = 0;
	for (; *p < end && **p != ',' && **p != '-'; (*p)++) {
		char c = **p;
		if (c == ' ')
			continue;
		if (c == '.') {
			if (end - *p < 3 || (*p)[1] != '.' || (*p)[2] != '.' || ell < 0)
				return xerr(x, "a stray '.' in the equation");
			for (int i = 0; i < ell; i++) {
				if (t->n >= EMAX)
					return xerr(x, "a term of more than %d axes", EMAX);
				t->l[t->n++] = (char)('A' + i) | (char)0x80;   /* the ellipsis's axes */
			}
			*p += 2;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return xerr(x, "'%c' in the equation is not a letter", c);
		for (int i = 0; i < t->n; i++)
			if (t->l[i] == c)
				return xerr(x, "'%c' repeats in one term (a diagonal), which is not supported", c);
		if (t->n >= EMAX)
			return xerr(x, "a term of more than %d axes", EMAX);
		t->l[t->n++] = c;
	}
	return 0;
}

static int
epos(const Eterm *t, char c)
{
	for (int i = 0; i < t->n; i++)
		if (t->l[i] == c)
			return i;
	return -1;
}

/* v (axes named by t) with its axes in the order of the letters ord[0..n), reshaped to dims
 * (nd of them, products of consecutive runs, given by run[]: the count of letters in each) */
static int
eperm(Ox *x, int v, const Eterm *t, const char *ord, const int *run, int nd)
{
	int64_t p[MAXIA] = { 0 };
	Shape sh = x->c->f->val[v].ty.sh, r = { nd, { 0 } };
	int id = 1, k = 0;

	for (int i = 0; i < t->n; i++)
		p[i] = epos(t, ord[i]), id &= p[i] == i;
	if (!id && t->n > 1)
		v = xemit(x, OP_TRANSPOSE, &v, 1, p, t->n, NULL, NULL);
	for (int d = 0; d < nd; d++) {
		r.d[d] = 1;
		for (int j = 0; j < run[d]; j++, k++)
			r.d[d] *= sh.d[p[k]];
	}
	return xreshape(x, v, &r);
}

/* The equation against the operands' shapes sh[0..nin), nin 1 or 2: their terms, the
 * output's, and each letter's length (size[], -1 where unused). 0, or -1 after a diagnostic. */
static int
eparse(Ox *x, int nin, const Shape *shs, Eterm *in, Eterm *outp, int64_t *size)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, "equation");
	const char *p, *end, *arrow;
	Eterm out;
	int ell = -1;

	if (!a || !a->has_s)
		return xerr(x, "the equation is missing");
	p = (const char *)a->s.data, end = p + a->s.len;
	arrow = NULL;
	for (const char *q = p; q + 1 < end; q++)
		if (q[0] == '-' && q[1] == '>')
			arrow = q;
	for (int i = 0; i < 256; i++)
		size[i] = -1;
	for (int i = 0; i < nin; i++) {
		const char *q;
		int named = 0, dots = 0;
		Shape sh = shs[i];
		/* the ellipsis's axes: the operand's rank less its letters */
		for (q = p; q < end && *q != ',' && *q != '-'; q++)
			named += (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'), dots += *q == '.';
		if (dots && ell >= 0 && ell != sh.rank - named)
			return xerr(x, "the ellipsis stands for %d axes in one term and %d in another", ell,
			            sh.rank - named);
		if (dots)
			ell = sh.rank - named;
		if (eterm(x, &p, arrow ? arrow : end, &in[i], dots ? (ell < 0 ? 0 : ell) : -1))
			return -1;
		if (in[i].n != sh.rank)
			return xerr(x, "term %d names %d axes of an operand of rank %d", i + 1, in[i].n, sh.rank);
		for (int j = 0; j < in[i].n; j++) {
			unsigned char c = (unsigned char)in[i].l[j];
			if (size[c] >= 0 && size[c] != sh.d[j])
				return xerr(x, "'%c' is %lld long in one place and %lld in another (broadcasting is "
				            "not supported)", c & 0x7f, (long long)size[c], (long long)sh.d[j]);
			size[c] = sh.d[j];
		}
		if (i + 1 < nin && (p >= end || *p != ','))
			return xerr(x, "the equation has %d terms for %d operands", i + 1, nin);
		if (i + 1 < nin)
			p++;
	}
	if (p != (arrow ? arrow : end))
		return xerr(x, "the equation has more terms than operands");
	if (arrow) {
		const char *q = arrow + 2;
		if (eterm(x, &q, end, &out, ell < 0 ? -1 : ell))
			return -1;
		if (q != end)
			return xerr(x, "a stray character after the output's term");
		for (int j = 0; j < out.n; j++)
			if (size[(unsigned char)out.l[j]] < 0)
				return xerr(x, "'%c' of the output is in no operand", out.l[j] & 0x7f);
	} else {                /* implicit: the ellipsis, then letters once, in alphabetical order */
		out.n = 0;
		for (int i = 0; i < (ell > 0 ? ell : 0); i++)
			out.l[out.n++] = (char)('A' + i) | (char)0x80;
		for (int c = 'A'; c <= 'z'; c++) {
			int cnt = 0;
			for (int i = 0; i < nin; i++)
				cnt += epos(&in[i], (char)c) >= 0;
			if (cnt == 1 && out.n < EMAX)
				out.l[out.n++] = (char)c;
		}
	}
	*outp = out;
	return 0;
}

static int
emit_einsum(Ox *x)
{
	Eterm in[2], out;
	int nin = x->nd->nin, v[2];
	int64_t size[256];
	Shape sh[2];

	if (nin < 1 || nin > 2)
		return xerr(x, "an einsum of %d operands is not supported (1 or 2)", nin);
	for (int i = 0; i < nin; i++) {
		if ((v[i] = in_t(x, i)) < 0)
			return -1;
		sh[i] = x->c->f->val[v[i]].ty.sh;
	}
	if (eparse(x, nin, sh, in, &out, size))
		return -1;
	/* letters in one operand alone and not in the output: summed, the last first */
	for (int i = 0; i < nin; i++)
		for (int j = in[i].n - 1; j >= 0; j--) {
			char c = in[i].l[j];
			if (epos(&out, c) >= 0 || (nin == 2 && epos(&in[1 - i], c) >= 0))
				continue;
			v[i] = xemit(x, OP_SUM, &v[i], 1, (int64_t[MAXIA]){ j, 0 }, 2, NULL, NULL);
			memmove(in[i].l + j, in[i].l + j + 1, (size_t)(in[i].n - j - 1));
			in[i].n--;
			if (v[i] < 0)
				return -1;
		}
	if (nin == 1) {
		int run[EMAX];
		for (int j = 0; j < out.n; j++)
			run[j] = 1;
		if (in[0].n != out.n)
			return xerr(x, "internal: einsum terms");
		v[0] = out.n ? eperm(x, v[0], &in[0], out.l, run, out.n) : v[0];
	} else {
		char bo[3 * EMAX], ao[2 * EMAX], ro[2 * EMAX];
		int nb = 0, nm = 0, nk = 0, nn = 0, ra[3], rb[3];
		char B[EMAX], M[EMAX], K[EMAX], N[EMAX];
		Shape rs = { 0, { 0 } };
		for (int j = 0; j < in[0].n; j++) {
			char c = in[0].l[j];
			int ib = epos(&in[1], c) >= 0, io = epos(&out, c) >= 0;
			if (ib && io)
				B[nb++] = c;
			else if (ib)
				K[nk++] = c;
			else
				M[nm++] = c;
		}
		for (int j = 0; j < in[1].n; j++)
			if (epos(&in[0], in[1].l[j]) < 0)
				N[nn++] = in[1].l[j];
		memcpy(ao, B, (size_t)nb), memcpy(ao + nb, M, (size_t)nm), memcpy(ao + nb + nm, K, (size_t)nk);
		memcpy(bo, B, (size_t)nb), memcpy(bo + nb, K, (size_t)nk), memcpy(bo + nb + nk, N, (size_t)nn);
		ra[0] = nb, ra[1] = nm, ra[2] = nk;
		rb[0] = nb, rb[1] = nk, rb[2] = nn;
		v[0] = eperm(x, v[0], &in[0], ao, ra, 3);
		v[1] = eperm(x, v[1], &in[1], bo, rb, 3);
		v[0] = xemit(x, OP_MATMUL, v, 2, (int64_t[MAXIA]){ 0, 0 }, 2, NULL, NULL);
		/* [B, M, N] to the letters B M N, then to the output's order */
		memcpy(ro, B, (size_t)nb), memcpy(ro + nb, M, (size_t)nm), memcpy(ro + nb + nm, N, (size_t)nn);
		for (int j = 0; j < nb + nm + nn; j++)
			rs.d[rs.rank++] = size[(unsigned char)ro[j]];
		if (rs.rank != out.n)
			return xerr(x, "internal: einsum output");
		v[0] = xreshape(x, v[0], &rs);
		if (v[0] >= 0 && out.n > 1) {
			Eterm t = { { 0 }, nb + nm + nn };
			int run[EMAX];
			memcpy(t.l, ro, (size_t)t.n);
			for (int j = 0; j < out.n; j++)
				run[j] = 1;
			v[0] = eperm(x, v[0], &t, out.l, run, out.n);
		}
	}
	if (v[0] < 0)
		return -1;
	out_t(x, 0, v[0]);
	return 0;
}

/* Einsum on known values (rotary embeddings' torch.outer of positions and inv_freq): each
 * output element the sum, over the letters it lacks, of the operands' products, in double
 * and rounded to f32 once (integers in int64). Past MAXKNOWN elements or FOLD_WORK products,
 * IR ops instead (emit_einsum). */
static int
fold_einsum(Ox *x)
{
	Eterm in[2], out;
	int nin = x->nd->nin, nl = 0, fl = 0;
	int64_t size[256], work = 1, on, idx[2 * EMAX] = { 0 }, st[3][2 * EMAX], off[3] = { 0 };
	char let[2 * EMAX];
	Shape sh[2], rs = { 0, { 0 } };
	Kv *k[2] = { NULL, NULL }, *r;
	double *acc = NULL;

	if (nin < 1 || nin > 2)
		return xerr(x, "an einsum of %d operands is not supported (1 or 2)", nin);
	for (int i = 0; i < nin; i++) {
		if (!(k[i] = in_k(x, i)))
			return -1;
		sh[i] = k[i]->sh;
		fl |= k[i]->dt == KF;
	}
	if (eparse(x, nin, sh, in, &out, size))
		return -1;
	for (int i = 0; i < nin; i++)
		for (int j = 0; j < in[i].n; j++)
			if (memchr(let, in[i].l[j], (size_t)nl) == NULL)
				let[nl++] = in[i].l[j];
	for (int l = 0; l < nl; l++)
		if (mul64(work, size[(unsigned char)let[l]], &work))
			work = INT64_MAX;
	for (int j = 0; j < out.n; j++)
		rs.d[rs.rank++] = size[(unsigned char)out.l[j]];
	on = shape_numel(&rs);
	if (on > MAXKNOWN || work > FOLD_WORK)
		return emit_einsum(x);
	/* each letter's stride in operand 0, 1 and the output (0 where a term lacks it) */
	for (int l = 0; l < nl; l++)
		for (int t = 0; t < 3; t++) {
			const Eterm *e = t < 2 ? &in[t] : &out;
			int p = t < nin || t == 2 ? epos(e, let[l]) : -1;
			st[t][l] = 0;
			if (p >= 0) {
				st[t][l] = 1;
				for (int q = p + 1; q < e->n; q++)
					st[t][l] *= size[(unsigned char)e->l[q]];
			}
		}
	if (!(r = knew(x, fl ? KF : KI, &rs)))
		return -1;
	if (fl)                 /* floats summed in double; integers in r itself (zeroed) */
		acc = xcalloc((size_t)(on ? on : 1), sizeof *acc);
	for (int64_t w = 0; w < work; w++) {
		if (fl) {
			double pr = kv_get(k[0], off[0]);
			if (nin == 2)
				pr *= kv_get(k[1], off[1]);
			acc[off[2]] += pr;
		} else {
			int64_t pr = k[0]->i[off[0]];
			if ((nin == 2 && mul64(pr, k[1]->i[off[1]], &pr)) || add64(r->i[off[2]], pr, &r->i[off[2]]))
				return xerr(x, "integer overflow folding the einsum");
		}
		for (int l = nl - 1; l >= 0; l--) {     /* the odometer, the last letter fastest */
			int64_t n = size[(unsigned char)let[l]];
			for (int t = 0; t < 3; t++)
				off[t] += st[t][l];
			if (++idx[l] < n)
				break;
			for (int t = 0; t < 3; t++)
				off[t] -= st[t][l] * n;
			idx[l] = 0;
		}
	}
	for (int64_t i = 0; fl && i < on; i++)
		r->f[i] = (float)acc[i];
	free(acc);
	out_k(x, 0, r);
	return 0;
}

/* Trilu: the lower (upper 0) or upper triangle of the last two axes, from diagonal k on; the
 * rest 0. Known values fold; at run time a mul by the constant 0/1 mask (an infinite value
 * where the mask is 0 gives NaN, where PyTorch gives 0). */
static int
tri_keep(int64_t i, int64_t j, int64_t k, int up)
{
	return up ? j - i >= k : j - i <= k;
}

static int
tri_args(Ox *x, const Shape *sh, int64_t *k, int *up)
{
	double d = 0;

	*up = att_i(x, "upper", 1) != 0;
	if (has_in(x, 1) && kscalar(x, in_k(x, 1), &d, "k"))
		return -1;
	if (!(d >= -INT32_MAX && d <= INT32_MAX))
		return xerr(x, "k is out of range");
	*k = (int64_t)d;
	if (sh->rank < 2)
		return xerr(x, "the input must be of rank 2 or more");
	return 0;
}

static int
fold_trilu(Ox *x)
{
	Kv *kv = in_k(x, 0), *r;
	int64_t k, n, m;
	int up;

	if (!kv || tri_args(x, &kv->sh, &k, &up) || !(r = knew(x, kv->dt, &kv->sh)))
		return -1;
	n = kv->sh.d[kv->sh.rank - 2], m = kv->sh.d[kv->sh.rank - 1];
	for (int64_t e = 0; e < r->n; e++) {
		int keep = tri_keep(e / m % n, e % m, k, up);
		if (r->dt == KF)
			r->f[e] = keep ? kv->f[e] : 0;
		else
			r->i[e] = keep ? kv->i[e] : 0;
	}
	out_k(x, 0, r);
	return 0;
}

static int
emit_trilu(Ox *x)
{
	int v = in_t(x, 0), up;
	int64_t k, n, m;
	Shape sh;
	Kv *mask;

	if (v < 0 || tri_args(x, &x->c->f->val[v].ty.sh, &k, &up))
		return -1;
	sh = x->c->f->val[v].ty.sh;
	n = sh.d[sh.rank - 2], m = sh.d[sh.rank - 1];
	if (!(mask = knew(x, KF, &(Shape){ 2, { n, m } })))
		return -1;
	for (int64_t e = 0; e < mask->n; e++)
		mask->f[e] = (float)tri_keep(e / m, e % m, k, up);
	v = xemit2(x, OP_MUL, v, xknown(x, mask, "trilu"));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* LSTM and GRU (PyTorch's nn.LSTM and nn.GRU as exported), unrolled over the sequence: per
 * direction, at each step (reversed for the reverse direction) the step's inputs x_t @ W^T
 * (+ the biases; one GEMM of all the steps would hold the gates of the whole sequence through
 * the forward, which no plan could free) and h @ R^T, the gates (ONNX's
 * orders: LSTM i, o, f, c; GRU z, r, h) by slices, and the cell's update:
 *   LSTM  c = f c + i tanh(g_c), h = o tanh(c), i, o, f the sigmoids of theirs
 *   GRU   z, r the sigmoids, n = tanh(x_n + r (h R_n^T + Rb_n)) (linear_before_reset, PyTorch's;
 *         else tanh(x_n + (r h) R_n^T + Rb_n)), h = n + z (h - n)
 * Y concatenates each step's h in time order, Y_h and Y_c the last ones. Only the default
 * activations, no clip, peepholes, input_forget or batch-first layout; sequence_lens, if
 * given, all T. */
enum { MAXSEQ = 4096 };
static int
rnn_dir(Ox *x, int gru, int64_t H, int d, int rev, int X, int *hh, int *hc, int *y)
{
	Shape sx = x->c->f->val[X].ty.sh;
	int64_t T = sx.d[0], N = sx.d[1], I = sx.d[2], ng = gru ? 3 : 4, G = ng * H;
	int lbr = (int)att_i(x, "linear_before_reset", 0), W, R, xw, wb = -1, rb = -1, h, c = -1;
	int *ys;
	const int64_t tb[MAXIA] = { 0, 1 };

	W = xreshape(x, emit_slice1(x, in_t(x, 1), 0, d, 1), &(Shape){ 2, { G, I } });
	R = xreshape(x, emit_slice1(x, in_t(x, 2), 0, d, 1), &(Shape){ 2, { G, H } });
	if (has_in(x, 3)) {
		int b = xreshape(x, emit_slice1(x, in_t(x, 3), 0, d, 1), &(Shape){ 1, { 2 * G } });
		wb = emit_slice1(x, b, 0, 0, G);
		rb = emit_slice1(x, b, 0, G, G);
	}
	xw = xreshape(x, X, &(Shape){ 2, { T * N, I } });
	if (wb >= 0 && !gru)
		wb = xemit2(x, OP_ADD, wb, rb);
	if (has_in(x, 5))
		h = xreshape(x, emit_slice1(x, in_t(x, 5), 0, d, 1), &(Shape){ 2, { N, H } });
	else
		h = xconst(x, 0, &(Shape){ 2, { N, H } });
	if (!gru)
		c = has_in(x, 6) ? xreshape(x, emit_slice1(x, in_t(x, 6), 0, d, 1), &(Shape){ 2, { N, H } }) :
		    xconst(x, 0, &(Shape){ 2, { N, H } });
	ys = aalloc(x->a, (size_t)T * sizeof *ys);
	for (int64_t s = 0; s < T && h >= 0; s++) {
		int64_t t = rev ? T - 1 - s : s;
		int xt = xemit(x, OP_MATMUL, (int[]){ emit_slice1(x, xw, 0, t * N, N), W }, 2, tb, 2, NULL, NULL), g;
		if (wb >= 0)
			xt = xemit2(x, OP_ADD, xt, wb);
#define GATE(v, k) emit_slice1(x, (v), 1, (k) * H, H)
		if (!gru) {
			g = xemit2(x, OP_ADD, xt, xemit(x, OP_MATMUL, (int[]){ h, R }, 2, tb, 2, NULL, NULL));
			int i = xemit1(x, OP_SIGMOID, GATE(g, 0)), o = xemit1(x, OP_SIGMOID, GATE(g, 1));
			int f = xemit1(x, OP_SIGMOID, GATE(g, 2)), cc = xemit1(x, OP_TANH, GATE(g, 3));
			c = xemit2(x, OP_ADD, xemit2(x, OP_MUL, f, c), xemit2(x, OP_MUL, i, cc));
			h = xemit2(x, OP_MUL, o, xemit1(x, OP_TANH, c));
		} else {
			int rzr = emit_slice1(x, R, 0, 0, 2 * H), rn = emit_slice1(x, R, 0, 2 * H, H);
			int hzr = xemit(x, OP_MATMUL, (int[]){ h, rzr }, 2, tb, 2, NULL, NULL), z, r, n, hn;
			if (rb >= 0)
				hzr = xemit2(x, OP_ADD, hzr, emit_slice1(x, rb, 0, 0, 2 * H));
			z = xemit1(x, OP_SIGMOID, xemit2(x, OP_ADD, GATE(xt, 0), GATE(hzr, 0)));
			r = xemit1(x, OP_SIGMOID, xemit2(x, OP_ADD, GATE(xt, 1), GATE(hzr, 1)));
			hn = xemit(x, OP_MATMUL, (int[]){ lbr ? h : xemit2(x, OP_MUL, r, h), rn }, 2, tb, 2, NULL, NULL);
			if (rb >= 0)
				hn = xemit2(x, OP_ADD, hn, emit_slice1(x, rb, 0, 2 * H, H));
			n = xemit1(x, OP_TANH, xemit2(x, OP_ADD, GATE(xt, 2), lbr ? xemit2(x, OP_MUL, r, hn) : hn));
			h = xemit2(x, OP_ADD, n, xemit2(x, OP_MUL, z, xemit2(x, OP_SUB, h, n)));
		}
#undef GATE
		ys[t] = xreshape(x, h, &(Shape){ 4, { 1, 1, N, H } });
	}
	*y = T > 1 ? xemit(x, OP_CONCAT, ys, (int)T, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL) : ys[0];
	*hh = xreshape(x, h, &(Shape){ 3, { 1, N, H } });
	*hc = gru ? -1 : xreshape(x, c, &(Shape){ 3, { 1, N, H } });
	return *y < 0 || *hh < 0 ? -1 : 0;
}

static int
emit_rnn(Ox *x)
{
	int gru = strcmp(x->nd->op, "GRU") == 0, ng = gru ? 3 : 4, nd, y[2], hh[2], hc[2];
	int bi = att_is(x, "direction", "forward", "bidirectional"), rev = att_is(x, "direction", "forward", "reverse");
	int64_t H = att_i(x, "hidden_size", 0);
	Type tx, tw, tr;

	if (!bi && !rev && !att_is(x, "direction", "forward", "forward"))
		return xerr(x, "direction must be forward, reverse or bidirectional");
	if (ox_attr(x->nd, "activations") || ox_attr(x->nd, "clip") || att_i(x, "input_forget", 0) ||
	    att_i(x, "layout", 0) || has_in(x, 7))
		return xerr(x, "only the default activations, without clip, peepholes, input_forget or "
		            "batch-first layout, are supported");
	if (in_type(x, 0, &tx) || in_type(x, 1, &tw) || in_type(x, 2, &tr))
		return -1;
	nd = bi ? 2 : 1;
	if (tx.dt != F32 || tx.sh.rank != 3 || tx.sh.d[0] > MAXSEQ)
		return xerr(x, "X must be f32[T, N, I] with T at most %d", MAXSEQ);
	if (H < 1 || H > INT32_MAX || tw.sh.rank != 3 || tw.sh.d[0] != nd || tw.sh.d[1] != ng * H ||
	    tw.sh.d[2] != tx.sh.d[2] || tr.sh.rank != 3 || tr.sh.d[0] != nd || tr.sh.d[1] != ng * H ||
	    tr.sh.d[2] != H)
		return xerr(x, "W and R must be [%d, %d hidden_size, I] and [%d, %d hidden_size, hidden_size]",
		            nd, ng, nd, ng);
	if (has_in(x, 4)) {
		Kv *k = in_k(x, 4);
		if (!k)
			return -1;
		for (int64_t i = 0; i < k->n; i++)
			if (kv_get(k, i) != (double)tx.sh.d[0])
				return xerr(x, "sequence_lens other than the sequence's length are not supported");
	}
	for (int d = 0; d < nd; d++)
		if (rnn_dir(x, gru, H, d, bi ? d == 1 : rev, in_t(x, 0), &hh[d], &hc[d], &y[d]))
			return -1;
	if (nd == 2) {
		y[0] = xemit(x, OP_CONCAT, y, 2, (int64_t[MAXIA]){ 1 }, 1, NULL, NULL);
		hh[0] = xemit(x, OP_CONCAT, hh, 2, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL);
		if (!gru)
			hc[0] = xemit(x, OP_CONCAT, hc, 2, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL);
	}
	if (y[0] < 0 || hh[0] < 0 || (!gru && hc[0] < 0))
		return -1;
	out_t(x, 0, y[0]);
	out_t(x, 1, hh[0]);
	if (!gru)
		out_t(x, 2, hc[0]);
	return 0;
}

/* Input i as a matmul operand: a Transpose of the last two axes that waits (a weight's
 * transpose) is read in place, *tr set, instead of being made. */
static int
mm_operand(Ox *x, int i, int64_t *tr)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1, n;
	const OxNode *p, *save = x->nd;
	int64_t perm[MAXRANK];
	Type t;
	int v, ok = 1;

	*tr = 0;
	if (id < 0 || x->x[id].v >= 0 || !x->x[id].wait || x->o->defnode[id] < 0)
		return in_t(x, i);
	p = &x->o->node[x->o->defnode[id]];
	if (strcmp(p->op, "Transpose") || p->nin < 1 || p->in[0] < 0)
		return in_t(x, i);
	x->nd = p;
	n = att_ints(x, "perm", perm, MAXRANK);
	if (in_type(x, 0, &t)) {
		x->nd = save;
		return -1;
	}
	ok = n == t.sh.rank && n >= 2 && perm[n - 1] == n - 2 && perm[n - 2] == n - 1;
	for (int k = 0; ok && k < n - 2; k++)
		ok = perm[k] == k;
	v = ok ? in_t(x, 0) : -1;
	x->nd = save;
	if (!ok)
		return in_t(x, i);
	*tr = 1;
	return v;
}

static int
emit_matmul(Ox *x)
{
	int64_t ia[MAXIA] = { 0, 0 };
	int a = mm_operand(x, 0, &ia[0]), b = mm_operand(x, 1, &ia[1]), v, r1, r2;
	Shape sa, sb, sr;

	if (a < 0 || b < 0)
		return -1;
	sa = x->c->f->val[a].ty.sh;
	sb = x->c->f->val[b].ty.sh;
	r1 = sa.rank == 1;
	r2 = sb.rank == 1;
	if (r1)                 /* a vector: a row of one, dropped after */
		a = xreshape(x, a, &(Shape){ 2, { 1, sa.d[0] } });
	if (r2)
		b = xreshape(x, b, &(Shape){ 2, { sb.d[0], 1 } });
	if ((v = xemit(x, OP_MATMUL, (int[]){ a, b }, 2, ia, 2, NULL, NULL)) < 0)
		return -1;
	sr = x->c->f->val[v].ty.sh;
	if (r1 || r2) {
		Shape s = sr;
		s.rank -= r1 + r2;
		if (r1 && !r2)
			s.d[s.rank - 1] = sr.d[sr.rank - 1];
		v = xreshape(x, v, &s);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* MatMul on known values (rotary embeddings' inv_freq @ position_ids): numpy's matmul, a
 * vector operand a row (first) or a column (second) dropped after, the leading axes
 * broadcast; products summed in double and rounded to f32 once (integers in int64). Past
 * MAXKNOWN elements or FOLD_WORK products, IR ops instead (emit_matmul). */
static int
fold_matmul(Ox *x)
{
	Kv *a = in_k(x, 0), *b = in_k(x, 1), *r;
	Shape sa, sb, ba, bb, bs, rs;
	int64_t m, kk, n, nb, on, work, fl;

	if (!a || !b)
		return -1;
	sa = a->sh, sb = b->sh;
	if (sa.rank == 0 || sb.rank == 0)
		return xerr(x, "an operand is a scalar (MatMul needs rank 1 or more)");
	if (sa.rank == 1)
		sa = (Shape){ 2, { 1, sa.d[0] } };
	if (sb.rank == 1)
		sb = (Shape){ 2, { sb.d[0], 1 } };
	m = sa.d[sa.rank - 2], kk = sa.d[sa.rank - 1], n = sb.d[sb.rank - 1];
	if (sb.d[sb.rank - 2] != kk)
		return xerr(x, "the operands' inner dimensions differ (%lld and %lld)", (long long)kk,
		            (long long)sb.d[sb.rank - 2]);
	ba = sa, bb = sb;
	ba.rank -= 2, bb.rank -= 2;
	if (shape_broadcast(&ba, &bb, &bs))
		return xerr(x, "the operands' leading axes do not broadcast");
	rs = bs;
	if (a->sh.rank > 1)
		rs.d[rs.rank++] = m;
	if (b->sh.rank > 1)
		rs.d[rs.rank++] = n;
	if (rank_ok(x, bs.rank + 2))
		return -1;
	nb = shape_numel(&bs);
	if (mul64(nb, m, &work) || mul64(work, n, &work) || mul64(work, kk, &work))
		work = INT64_MAX;
	if (work > FOLD_WORK || mul64(nb, m, &on) || mul64(on, n, &on) || on > MAXKNOWN)
		return emit_matmul(x);
	fl = a->dt == KF || b->dt == KF;
	if (!(r = knew(x, fl ? KF : KI, &rs)))
		return -1;
	for (int64_t q = 0; q < nb; q++) {
		int64_t ia = bcast_index(&ba, &bs, q) * m * kk, ib = bcast_index(&bb, &bs, q) * kk * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double s = 0;
				int64_t si = 0, pr;
				for (int64_t t = 0; t < kk; t++) {
					if (fl)
						s += kv_get(a, ia + i * kk + t) * kv_get(b, ib + t * n + j);
					else if (mul64(a->i[ia + i * kk + t], b->i[ib + t * n + j], &pr) || add64(si, pr, &si))
						return xerr(x, "integer overflow folding the product");
				}
				if (fl)
					r->f[(q * m + i) * n + j] = (float)s;
				else
					r->i[(q * m + i) * n + j] = si;
			}
	}
	out_k(x, 0, r);
	return 0;
}

/* Gemm: alpha op(A) op(B) + beta C. */
static int
emit_gemm(Ox *x)
{
	int64_t ia[MAXIA] = { att_i(x, "transA", 0) != 0, att_i(x, "transB", 0) != 0 };
	double alpha = att_f(x, "alpha", 1), beta = att_f(x, "beta", 1);
	const Shape one = { 0, { 0 } };
	int v;

	v = xemit(x, OP_MATMUL, (int[]){ in_t(x, 0), in_t(x, 1) }, 2, ia, 2, NULL, NULL);
	if (alpha != 1)
		v = xemit2(x, OP_MUL, v, xconst(x, alpha, &one));
	if (has_in(x, 2) && beta != 0) {
		int c = in_t(x, 2);
		if (beta != 1)
			c = xemit2(x, OP_MUL, c, xconst(x, beta, &one));
		v = xemit2(x, OP_ADD, v, c);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

static int
emit_dropout(Ox *x)
{
	double ratio = att_f(x, "ratio", 0.5);
	int train = 0, v;
	Kv *k = NULL;

	if (x->o->opset >= 12) {
		ratio = 0.5;
		if (has_in(x, 1) && kscalar(x, in_k(x, 1), &ratio, "the ratio"))
			return -1;
		if (has_in(x, 2) && (!(k = in_k(x, 2)) || !kv_uniform(k)))
			return k ? xerr(x, "training_mode must be one value") : -1;
		train = has_in(x, 2) && kv_get(k, 0) != 0;
	}
	if (!(ratio >= 0 && ratio < 1))
		return xerr(x, "ratio %g is not in [0, 1)", ratio);
	if ((v = in_t(x, 0)) < 0)
		return -1;
	/* In training mode tdsl's dropout: the identity in the forward, in the step the mask of
	 * the model's next key (mtc's own generator, not PyTorch's). */
	if (train && ratio != 0) {
		int64_t ia[MAXIA] = { *x->c->ndropout, 0 };
		double fa[MAXFA] = { ratio };
		if (*x->c->ndropout == INT32_MAX)
			return xerr(x, "more than %d dropouts", INT32_MAX);
		++*x->c->ndropout;
		if ((v = xemit(x, OP_DROPOUT, &v, 1, ia, 2, fa, NULL)) < 0)
			return -1;
	}
	out_t(x, 0, v);
	return 0;
}

/* BatchNormalization: tdsl's batch_norm, the inference form on the running statistics (the
 * graph's mean and var initializers, made buffers), which autodiff turns into the training
 * form in the step whatever training_mode says, as PyTorch's module.train(). ONNX's momentum
 * weighs the running statistic, PyTorch's (the IR's) the batch's: 1 - momentum. */
static int
emit_bn(Ox *x)
{
	double fa[MAXFA] = { att_f(x, "epsilon", 1e-5), 1 - att_f(x, "momentum", 0.9) };
	int64_t ia[MAXIA] = { 0 };
	Type t;
	int a[5], v;

	if (in_type(x, 0, &t))
		return -1;
	if (t.dt != F32 || t.sh.rank < 2)
		return xerr(x, "the input must be f32[N, C, ...]");
	if (!(fa[0] > 0) || !(fa[1] >= 0 && fa[1] <= 1))
		return xerr(x, "epsilon must be positive and momentum in [0, 1]");
	a[0] = in_t(x, 0);
	a[1] = in_t(x, 1);
	a[2] = in_t(x, 2);
	a[3] = in_buffer(x, 3);
	a[4] = in_buffer(x, 4);
	if ((v = xemit(x, OP_BATCHNORM, a, 5, ia, 1, fa, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	/* outputs 2 and 3 of training mode, the updated statistics: the buffers themselves (the
	 * step's update writes them) */
	out_t(x, 1, a[3]);
	out_t(x, 2, a[4]);
	return 0;
}

/* LayerNormalization (opset 17): over the axes from `axis` on, as the IR's layernorm over a
 * last axis that holds them all. */
static int
emit_layernorm(Ox *x)
{
	double fa[MAXFA] = { att_f(x, "epsilon", 1e-5) };
	int v = in_t(x, 0), g, b, a;
	Shape sx, flat, par;

	if (v < 0)
		return -1;
	sx = x->c->f->val[v].ty.sh;
	if ((a = axis_of(x, att_i(x, "axis", -1), sx.rank)) < 0)
		return -1;
	flat = sx;
	flat.rank = a + 1;
	flat.d[a] = 1;
	for (int i = a; i < sx.rank; i++)
		flat.d[a] *= sx.d[i];
	par = (Shape){ 1, { flat.d[a] } };
	g = xreshape(x, in_t(x, 1), &par);
	b = has_in(x, 2) ? xreshape(x, in_t(x, 2), &par) : xconst(x, 0, &par);
	v = xemit(x, OP_LAYERNORM, (int[]){ xreshape(x, v, &flat), g, b }, 3, NULL, 0, fa, NULL);
	if ((v = xreshape(x, v, &sx)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

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
static int
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
static int
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
static int
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

/* A mean over the axes in mask (keeping them when keep): a sum per axis, the last first, then
 * one division by their element count, as tdsl's mean over several axes. */
static int
mean_axes(Ox *x, int v, const int *mask, int keep)
{
	int64_t cnt = 1;
	int n = 0;
	const Shape one = { 0, { 0 } };

	for (int a = x->c->f->val[v].ty.sh.rank - 1; a >= 0; a--)
		if (mask[a])
			n++, cnt *= x->c->f->val[v].ty.sh.d[a];
	if (n == 1) {
		for (int a = 0; a < MAXRANK; a++)
			if (mask[a]) {
				int64_t ia[MAXIA] = { a, keep };
				return xemit(x, OP_MEAN, &v, 1, ia, 2, NULL, NULL);
			}
	}
	for (int a = x->c->f->val[v].ty.sh.rank - 1; a >= 0 && v >= 0; a--)
		if (mask[a]) {
			int64_t ia[MAXIA] = { a, keep };
			v = xemit(x, OP_SUM, &v, 1, ia, 2, NULL, NULL);
		}
	return n ? xemit2(x, OP_DIV, v, xconst(x, (double)cnt, &one)) : v;
}

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (F.cross_entropy, F.nll_loss: a
 * model exported with its loss), written out so that ignore_index, weights and every
 * reduction are PyTorch's: the class axis (1) moved last, log_softmax for the first, then per
 * position -sum(logp where onehot(label)) (the one-hot as OneHot's), times the label's
 * weight, 0 where the label is ignore_index; NaN where a label is outside [0, C), not ignored
 * (PyTorch raises an error); mean: the sum over the sum of those weights. It holds a one-hot
 * of the logits' size: a loss over a large vocabulary is better written in tdsl
 * (cross_entropy). The optional log_prob output is logp, the class axis back in place. */
static int
emit_xentloss(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int sce = strcmp(x->nd->op, "SoftmaxCrossEntropyLoss") == 0, v = in_t(x, 0);
	int t = in_index(x, 1, "labels", 0);
	int mask[MAXRANK] = { 0 }, r, lp, f, oh, per, m = -1, bad;
	int ig = ox_attr(x->nd, "ignore_index") != NULL;
	int64_t ia[MAXIA] = { 0 }, perm[MAXIA];
	Shape ls, ts;

	if (v < 0 || t < 0)
		return -1;
	if ((r = x->c->f->val[v].ty.sh.rank) < 2 || x->c->f->val[v].ty.dt != F32)
		return xerr(x, "the scores must be floats [N, C, ...]");
	ls = x->c->f->val[v].ty.sh;
	for (int a = 0; a < r; a++)
		perm[a] = a == 0 ? 0 : a == r - 1 ? 1 : a + 1;
	if (r > 2)
		v = xemit(x, OP_TRANSPOSE, &v, 1, perm, r, NULL, NULL);
	ts = ls;
	ts.rank = r - 1;
	for (int a = 1; a < r - 1; a++)
		ts.d[a] = ls.d[a + 1];
	if (!shape_eq(&x->c->f->val[t].ty.sh, &ts))
		return xerr(x, "the labels' shape does not match the scores' without their class axis");
	ia[0] = r - 1;
	lp = sce ? xemit(x, OP_LOGSOFTMAX, &v, 1, ia, 1, NULL, NULL) : v;
	oh = onehot_eq(x, t, r - 1, ls.d[1], 0, asprintf_a(x->a, "%s.classes", x->nd->nout &&
	               x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "loss"), &f);
	ia[1] = 0;
	{                               /* select, not mul: a -inf log-probability not taken stays out */
		int s[3] = { oh, lp, xconst(x, 0, &one) };
		per = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL);
	}
	per = xemit1(x, OP_NEG, xemit(x, OP_SUM, &per, 1, ia, 2, NULL, NULL));
	bad = xemit2(x, OP_SUB, xconst(x, 1, &one), xemit(x, OP_SUM, &oh, 1, ia, 2, NULL, NULL));
	if (has_in(x, 2)) {             /* the label's weight */
		int w = in_f32(x, 2);
		if (w >= 0 && (x->c->f->val[w].ty.sh.rank != 1 || x->c->f->val[w].ty.sh.d[0] != ls.d[1]))
			return xerr(x, "the weights must be [C]");
		m = xemit(x, OP_SUM, (int[]){ xemit2(x, OP_MUL, oh, w) }, 1, ia, 2, NULL, NULL);
		per = xemit2(x, OP_MUL, per, m);
	}
	if (ig) {                       /* 0 where the label is ignore_index (select: -logp may be inf) */
		int keep = xemit2(x, OP_SUB, xconst(x, 1, &one),
		                  xemit2(x, OP_EQ, f, xconst(x, (double)att_i(x, "ignore_index", 0), &one)));
		int s[3] = { keep, per, xconst(x, 0, &one) };
		per = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL);
		bad = xemit2(x, OP_MUL, bad, keep);
		m = m >= 0 ? xemit2(x, OP_MUL, m, keep) : keep;
	}
	{                               /* NaN where a label is out of range */
		int s[3] = { bad, xconst(x, NAN, &one), xconst(x, 0, &one) };
		per = xemit2(x, OP_ADD, per, xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL));
	}
	if (att_is(x, "reduction", "mean", "sum") || (att_is(x, "reduction", "mean", "mean") && m >= 0)) {
		for (int a = r - 2; a >= 0 && per >= 0; a--) {
			int64_t ib[MAXIA] = { a, 0 };
			per = xemit(x, OP_SUM, &per, 1, ib, 2, NULL, NULL);
			if (m >= 0)
				m = xemit(x, OP_SUM, &m, 1, ib, 2, NULL, NULL);
		}
		if (att_is(x, "reduction", "mean", "mean"))     /* over the weights counted */
			per = xemit2(x, OP_DIV, per, m);
	} else if (att_is(x, "reduction", "mean", "mean")) {
		for (int a = 0; a < r - 1; a++)
			mask[a] = 1;
		per = mean_axes(x, per, mask, 0);
	} else if (!att_is(x, "reduction", "mean", "none")) {
		return xerr(x, "the reduction must be mean, sum or none");
	}
	if (per < 0)
		return -1;
	out_t(x, 0, per);
	if (sce && x->nd->nout > 1 && x->nd->out[1] >= 0) {
		int64_t inv[MAXIA];
		for (int a = 0; a < r; a++)
			inv[perm[a]] = a;
		if (r > 2 && (lp = xemit(x, OP_TRANSPOSE, &lp, 1, inv, r, NULL, NULL)) < 0)
			return -1;
		out_t(x, 1, lp);
	}
	return 0;
}

/* ArgMax, ArgMin of run-time values: argmax (of -x for ArgMin): the first largest (smallest),
 * or the first NaN, as torch.argmax; an i32 result (indices for an embedding, OneHot). */
static int
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
static int
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

/* CumSum along a known axis, exclusive and reverse as given: cumsum (summed in double, as
 * PyTorch's CPU cumsum). A count stays a count while its bound times the axis's length stays
 * at most 2^24. */
static int
emit_cumsum(Ox *x)
{
	int v = in_t(x, 0), r;
	double ax = 0;
	int64_t ia[MAXIA] = { 0 }, c;

	if (v < 0 || kscalar(x, in_k(x, 1), &ax, "the axis"))
		return -1;
	if (x->c->f->val[v].ty.dt != F32)
		return xerr(x, "a CumSum of run-time integers is not supported");
	r = x->c->f->val[v].ty.sh.rank;
	if ((ia[0] = axis_of(x, (int64_t)ax, r)) < 0)
		return -1;
	ia[1] = att_i(x, "exclusive", 0) != 0;
	ia[2] = att_i(x, "reverse", 0) != 0;
	if ((v = xemit(x, OP_CUMSUM, &v, 1, ia, 3, NULL, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	if ((c = x->x[x->nd->in[0]].count) && x->nd->out[0] >= 0) {
		if ((c *= x->c->f->val[v].ty.sh.d[ia[0]]) > 1 << 24)
			return xerr(x, "a cumulative sum of up to %lld is not exact in f32, which holds "
			            "mtc's run-time integers", (long long)c);
		x->x[x->nd->out[0]].count = c;
	}
	return 0;
}

/* GlobalAveragePool: the mean over every axis after the first two, kept. GlobalMaxPool (1-D,
 * 2-D): a max_pool2d whose window is the whole map, as PyTorch exports adaptive_max_pool2d(x,
 * 1): a NaN kept, the gradient to the first largest. */
static int
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

/* Sum and Mean of any number of operands, broadcast: add left to right (Mean then divided by
 * their number), as ONNX's reference computes them. */
static int
emit_sum(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int v = in_f32(x, 0);

	for (int i = 1; i < x->nd->nin && v >= 0; i++)
		v = xemit2(x, OP_ADD, v, in_f32(x, i));
	if (v >= 0 && strcmp(x->nd->op, "Mean") == 0 && x->nd->nin > 1)
		v = xemit2(x, OP_DIV, v, xconst(x, (double)x->nd->nin, &one));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Clip: lo and hi known (inputs from opset 11, attributes before), an absent one unbounded:
 * clip. A bound computed at run time: maximum with lo, then -maximum(-y, -hi), as
 * min(max(x, lo), hi) (torch.clamp's value: NaN kept, hi where lo > hi); at a tie the
 * gradient is halved between x and the bound, as for Max and Min. */
static int
emit_clip(Ox *x)
{
	double fa[MAXFA] = { -INFINITY, INFINITY };
	int v = in_t(x, 0);

	if (v < 0)
		return -1;
	if (x->o->opset >= 11 &&
	    ((has_in(x, 1) && !known_in(x, 1)) || (has_in(x, 2) && !known_in(x, 2)))) {
		for (int i = 1; i < 3 && v >= 0; i++) {
			int b;
			if (!has_in(x, i))
				continue;
			if (x->c->f->val[v].ty.sh.rank < 0 || (b = in_f32(x, i)) < 0)
				return -1;
			if (x->c->f->val[b].ty.sh.rank != 0)
				return xerr(x, "its %s must be a scalar", i == 1 ? "min" : "max");
			v = i == 1 ? xemit2(x, OP_MAXIMUM, v, b)
			           : xneg(x, xemit2(x, OP_MAXIMUM, xneg(x, v), xneg(x, b)));
		}
		if (v < 0)
			return -1;
		out_t(x, 0, v);
		return 0;
	}
	for (int i = 0; i < 2; i++)
		if (x->o->opset >= 11 ? has_in(x, 1 + i) && kscalar(x, in_k(x, 1 + i), &fa[i], i ? "max" : "min")
		                      : (fa[i] = att_f(x, i ? "max" : "min", fa[i]), 0))
			return -1;
	if (!(fa[0] <= fa[1]))
		return xerr(x, "min %g is above max %g", fa[0], fa[1]);
	if ((v = xemit(x, OP_CLIP, &v, 1, NULL, 0, fa, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* HardSigmoid (alpha and beta, 0.2 and 0.5 unless given) and HardSwish (x times HardSigmoid at
 * 1/6 and 1/2): clip(alpha x + beta, 0, 1), times x for HardSwish, as PyTorch's hardsigmoid and
 * hardswish (MobileNetV3's); their gradients are the composition's away from the corners. */
static int
emit_hard(Ox *x)
{
	int sw = strcmp(x->nd->op, "HardSwish") == 0, a = in_t(x, 0), v;
	double al = sw ? 1.0 / 6 : att_f(x, "alpha", 0.2), be = sw ? 0.5 : att_f(x, "beta", 0.5);
	double fa[MAXFA] = { 0, 1 };
	const Shape one = { 0, { 0 } };

	if (a < 0)
		return -1;
	v = xemit2(x, OP_ADD, xemit2(x, OP_MUL, a, xconst(x, al, &one)), xconst(x, be, &one));
	if (v >= 0)
		v = xemit(x, OP_CLIP, &v, 1, NULL, 0, fa, NULL);
	if (sw && v >= 0)
		v = xemit2(x, OP_MUL, a, v);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* The rectifiers, each PyTorch's with its gradient at 0 (from the side of the negatives where
 * PyTorch's backward takes that side, as relu's gradient at 0 is 0 here):
 *   LeakyRelu (alpha 0.01)  alpha x + (1 - alpha) relu(x)
 *   PRelu(x, slope)         relu(x) + slope (x - relu(x)), slope broadcast to x (a param's
 *                           gradient summed back to its shape by autodiff)
 *   Elu (alpha 1)           relu(x) + alpha (exp(x - relu(x)) - 1)
 *   Selu (alpha, gamma)     gamma times Elu's
 *   Celu (alpha 1)          relu(x) + alpha (exp((x - relu(x)) / alpha) - 1)
 *   Softplus                relu(x) + log(1 + exp(-|x|)), |x| = 2 relu(x) - x, whose gradient
 *                           is sigmoid(x) everywhere, 1/2 at 0 too (PyTorch's threshold of 20,
 *                           past which it returns x, is the same in f32) */
static int
emit_leaky(Ox *x)
{
	const char *op = x->nd->op;
	int elu = strcmp(op, "Elu") == 0, selu = strcmp(op, "Selu") == 0, celu = strcmp(op, "Celu") == 0;
	int a = in_t(x, 0), r, v;
	double al = att_f(x, "alpha", elu || celu ? 1.0 : selu ? 1.67326319217681884765625 : 0.01);
	const Shape one = { 0, { 0 } };

	if (a < 0)
		return -1;
	if (celu && !(al != 0 && isfinite(al)))
		return xerr(x, "Celu's alpha must be finite and not 0");
	r = xemit1(x, OP_RELU, a);
	if (elu || selu || celu) {
		v = xemit2(x, OP_SUB, a, r);
		if (celu)
			v = xemit2(x, OP_DIV, v, xconst(x, al, &one));
		v = xemit2(x, OP_ADD, r, xemit2(x, OP_MUL, xconst(x, al, &one),
		          xemit2(x, OP_SUB, xemit1(x, OP_EXP, v), xconst(x, 1, &one))));
		if (selu)
			v = xemit2(x, OP_MUL, v, xconst(x, att_f(x, "gamma", 1.05070102214813232421875), &one));
	} else if (strcmp(op, "PRelu") == 0) {
		v = xemit2(x, OP_ADD, r, xemit2(x, OP_MUL, in_t(x, 1), xemit2(x, OP_SUB, a, r)));
	} else if (strcmp(op, "Softplus") == 0) {
		int ab = xemit2(x, OP_SUB, xemit2(x, OP_MUL, r, xconst(x, 2, &one)), a);
		v = xemit1(x, OP_EXP, xemit1(x, OP_NEG, ab));
		v = xemit2(x, OP_ADD, r, xemit1(x, OP_LOG, xemit2(x, OP_ADD, v, xconst(x, 1, &one))));
	} else {
		v = xemit2(x, OP_ADD, xemit2(x, OP_MUL, a, xconst(x, al, &one)),
		          xemit2(x, OP_MUL, r, xconst(x, 1 - al, &one)));
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* InstanceNormalization(x, scale, B): each (n, c)'s values normalized over the other axes (a
 * layernorm of the rows of x as [N C, rest], no gain of its own), then scale and B per channel;
 * PyTorch's InstanceNorm and, exported through it, GroupNorm. */
static int
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
static int
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

/* ---------- the table ---------- */

static const OxOp ops[] = {
	{ "Abs", fold_un, emit_un, 0, 0 },
	{ "Add", fold_bin, emit_bin, 0, 0 },
	{ "And", fold_bin, emit_cmp, 0, 0 },
	{ "ArgMax", NULL, emit_argmax, 0, 0 },
	{ "ArgMin", NULL, emit_argmax, 0, 0 },
	{ "AveragePool", NULL, emit_pool, 0, 0 },
	{ "BatchNormalization", NULL, emit_bn, 0, 0 },
	{ "Cast", fold_cast, emit_cast, 0, 0 },
	{ "Ceil", fold_un, emit_un, 0, 0 },
	{ "Celu", NULL, emit_leaky, 0, 0 },
	{ "Clip", NULL, emit_clip, 0, 0 },
	{ "Concat", fold_concat, emit_concat, 0, 1 },
	{ "Constant", fold_constant, NULL, 0, 0 },
	{ "ConstantOfShape", fold_cos, NULL, 0, 0 },
	{ "Conv", NULL, emit_conv, 0, 0 },
	{ "ConvTranspose", NULL, emit_convt, 0, 0 },
	{ "Cos", fold_un, emit_un, 0, 0 },
	{ "CumSum", NULL, emit_cumsum, 0, 0 },
	{ "DepthToSpace", NULL, emit_d2s, 0, 0 },
	{ "Div", fold_bin, emit_bin, 0, 0 },
	{ "Dropout", NULL, emit_dropout, 0, 0 },
	{ "Einsum", fold_einsum, emit_einsum, 0, 0 },
	{ "Elu", NULL, emit_leaky, 0, 0 },
	{ "Equal", fold_bin, emit_cmp, 0, 0 },
	{ "Erf", fold_un, emit_un, 0, 0 },
	{ "Exp", fold_un, emit_un, 0, 0 },
	{ "Expand", fold_expand, emit_expand, 0, 1 },
	{ "Flatten", fold_layout, emit_layout, 0, 1 },
	{ "Floor", fold_un, emit_un, 0, 0 },
	{ "GRU", NULL, emit_rnn, 0, 0 },
	{ "Gather", fold_gather, emit_gather, 0, 1 },
	{ "GatherElements", NULL, emit_gatherel, 0, 0 },
	{ "Gemm", NULL, emit_gemm, 0, 0 },
	{ "GlobalAveragePool", NULL, emit_gap, 0, 0 },
	{ "GlobalMaxPool", NULL, emit_gap, 0, 0 },
	{ "Greater", fold_bin, emit_cmp, 0, 0 },
	{ "GreaterOrEqual", fold_bin, emit_cmp, 0, 0 },
	{ "HardSigmoid", NULL, emit_hard, 0, 0 },
	{ "HardSwish", NULL, emit_hard, 0, 0 },
	{ "Identity", fold_identity, emit_identity, 0, 1 },
	{ "InstanceNormalization", NULL, emit_instnorm, 0, 0 },
	{ "IsInf", NULL, emit_isnan, 0, 0 },
	{ "IsNaN", NULL, emit_isnan, 0, 0 },
	{ "LSTM", NULL, emit_rnn, 0, 0 },
	{ "LayerNormalization", NULL, emit_layernorm, 0, 0 },
	{ "LeakyRelu", NULL, emit_leaky, 0, 0 },
	{ "Less", fold_bin, emit_cmp, 0, 0 },
	{ "LessOrEqual", fold_bin, emit_cmp, 0, 0 },
	{ "Log", fold_un, emit_un, 0, 0 },
	{ "LogSoftmax", NULL, emit_softmax, 0, 0 },
	{ "MatMul", fold_matmul, emit_matmul, 0, 0 },
	{ "Max", fold_bin, emit_bin, 0, 0 },
	{ "MaxPool", NULL, emit_pool, 0, 0 },
	{ "Mean", NULL, emit_sum, 0, 0 },
	{ "Min", fold_bin, emit_bin, 0, 0 },
	{ "Mod", fold_bin, NULL, 0, 0 },
	{ "Mul", fold_bin, emit_bin, 0, 0 },
	{ "Neg", fold_un, emit_un, 0, 0 },
	{ "NegativeLogLikelihoodLoss", NULL, emit_xentloss, 0, 0 },
	{ "Not", fold_un, emit_not, 0, 0 },
	{ "OneHot", NULL, emit_onehot, 0, 0 },
	{ "Or", fold_bin, emit_cmp, 0, 0 },
	{ "PRelu", NULL, emit_leaky, 0, 0 },
	{ "Pad", fold_pad, emit_pad, 0, 0 },
	{ "Pow", fold_bin, emit_pow, 0, 0 },
	{ "Range", fold_range, NULL, 0, 0 },
	{ "Reciprocal", fold_un, emit_un, 0, 0 },
	{ "ReduceL1", NULL, emit_reduce, 0, 0 },
	{ "ReduceL2", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceLogSumExp", NULL, emit_reduce, 0, 0 },
	{ "ReduceMax", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceMean", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceMin", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceProd", fold_reduce, NULL, 0, 0 },
	{ "ReduceSum", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceSumSquare", fold_reduce, emit_reduce, 0, 0 },
	{ "Relu", fold_un, emit_un, 0, 0 },
	{ "Reshape", fold_layout, emit_layout, 0, 1 },
	{ "Resize", NULL, emit_resize, 0, 0 },
	{ "Round", fold_un, emit_un, 0, 0 },
	{ "ScatterElements", NULL, emit_scatterel, 0, 0 },
	{ "ScatterND", fold_scatternd, emit_scatternd, 0, 0 },
	{ "Selu", NULL, emit_leaky, 0, 0 },
	{ "Shape", fold_shape, NULL, 1, 0 },
	{ "Sigmoid", fold_un, emit_un, 0, 0 },
	{ "Sign", NULL, emit_sign, 0, 0 },
	{ "Sin", fold_un, emit_un, 0, 0 },
	{ "Size", fold_size, NULL, 1, 0 },
	{ "Slice", fold_slice, emit_slice, 0, 1 },
	{ "Softmax", NULL, emit_softmax, 0, 0 },
	{ "SoftmaxCrossEntropyLoss", NULL, emit_xentloss, 0, 0 },
	{ "Softplus", NULL, emit_leaky, 0, 0 },
	{ "Split", fold_split, emit_split, 0, 1 },
	{ "Sqrt", fold_un, emit_un, 0, 0 },
	{ "Squeeze", fold_layout, emit_layout, 0, 1 },
	{ "Sub", fold_bin, emit_bin, 0, 0 },
	{ "Sum", NULL, emit_sum, 0, 0 },
	{ "Tanh", fold_un, emit_un, 0, 0 },
	{ "Tile", NULL, emit_tile, 0, 1 },
	{ "TopK", NULL, emit_topk, 0, 0 },
	{ "Transpose", fold_transpose, emit_transpose, 0, 1 },
	{ "Trilu", fold_trilu, emit_trilu, 0, 0 },
	{ "Unsqueeze", fold_layout, emit_layout, 0, 1 },
	{ "Upsample", NULL, emit_resize, 0, 0 },
	{ "Where", fold_where, emit_where, 0, 0 },
	{ "Xor", fold_bin, emit_cmp, 0, 0 },
};

const OxOp *
ox_op(const char *name)
{
	static int sorted;
	size_t lo = 0, hi = sizeof ops / sizeof *ops;

	for (size_t i = 1; !sorted && i < hi; i++)
		if (strcmp(ops[i - 1].name, ops[i].name) >= 0)
			die("the ONNX op table is not sorted at %s", ops[i].name);
	sorted = 1;

	while (lo < hi) {       /* the table is sorted by name */
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, ops[mid].name);
		if (c == 0)
			return &ops[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}
