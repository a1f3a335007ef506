/* onnxew.c: the elementwise ONNX ops (arithmetic, comparisons, activations, Pow, Erf, ...),
 * the reductions and CumSum: folded on known values, else IR ops (the table: onnxops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"

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

int
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

/* -v, or the operand of the neg that made v (a Min's result taken by ReduceMin, say). */
int
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

int
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
int
emit_cmp(Ox *x)
{
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
	case E_OR: v = xemit2(x, OP_MUL, a, b), v = xemit2(x, OP_SUB, xemit2(x, OP_ADD, a, b), v); break;
	default: v = xoneminus(x, xemit2(x, OP_EQ, a, b)); break;
	}
	return out_bool(x, v);
}

/* IsNaN (x != x), IsInf (x == inf, x == -inf, as detect_positive and detect_negative ask):
 * run-time booleans. */
int
emit_isnan(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0), v = -1;
	int pos = (int)att_i(x, "detect_positive", 1), neg = (int)att_i(x, "detect_negative", 1);

	if (a < 0)
		return -1;
	if (strcmp(x->nd->op, "IsNaN") == 0)
		return out_bool(x, xoneminus(x, xemit2(x, OP_EQ, a, a)));
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
int
emit_sign(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0), z = xconst(x, 0, &one), v, s[3];

	v = xemit2(x, OP_LT, a, z);
	v = xemit2(x, OP_SUB, xemit2(x, OP_LT, z, a), v);
	s[0] = xemit2(x, OP_EQ, a, a);
	s[1] = v;
	s[2] = a;
	if ((v = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Not of a run-time boolean (f32 0 or 1): 1 - a. */
int
emit_not(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int a = in_f32(x, 0);

	return out_bool(x, a < 0 ? -1 : xemit2(x, OP_SUB, xconst(x, 1, &one), a));
}

/* x ** c with c known: by 2 as x * x (PyTorch's pow by 2, bit for bit), else pow. */
int
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

int
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

	t = xemit2(x, OP_MUL, u, xconst(x, 0.3275911, &one));
	t = xemit2(x, OP_ADD, xconst(x, 1, &one), t);
	t = xemit2(x, OP_DIV, xconst(x, 1, &one), t);
	p = xemit2(x, OP_MUL, t, xconst(x, a[4], &one));
	for (int i = 3; i >= 0; i--)
		p = xemit2(x, OP_MUL, t, xemit2(x, OP_ADD, p, xconst(x, a[i], &one)));
	return xemit2(x, OP_MUL, p, xemit1(x, OP_EXP, xemit1(x, OP_NEG, xemit2(x, OP_MUL, u, u))));
}

int
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
		v = xemit1(x, OP_RELU, xemit1(x, OP_NEG, a));
		v = xemit2(x, OP_ADD, xemit1(x, OP_RELU, a), v);
		break;
	case U_ERF:
		v = erfc_as(x, xemit1(x, OP_RELU, a));
		v = xemit2(x, OP_SUB, erfc_as(x, xemit1(x, OP_RELU, xemit1(x, OP_NEG, a))), v);
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

/* ---------- reductions ---------- */

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

int
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
int
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
	if (l1) {       /* |x| as Abs: relu(x) + relu(-x), whose gradient at 0 is 0 (PyTorch's) */
		int n = xemit1(x, OP_RELU, xemit1(x, OP_NEG, v));
		v = xemit2(x, OP_ADD, xemit1(x, OP_RELU, v), n);
	}
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
	if (lse && v >= 0 && m >= 0) {
		int mr = xreshape(x, m, &x->c->f->val[v].ty.sh);
		v = xemit2(x, OP_ADD, xemit1(x, OP_LOG, v), mr);
	}
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

/* A mean over the axes in mask (keeping them when keep): a sum per axis, the last first, then
 * one division by their element count, as tdsl's mean over several axes. */
int
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

/* ---------- CumSum, Sum and Mean, Clip, activations with parameters ---------- */

/* CumSum along a known axis, exclusive and reverse as given: cumsum (summed in double, as
 * PyTorch's CPU cumsum). A count stays a count while its bound times the axis's length stays
 * at most 2^24. */
int
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

/* Sum and Mean of any number of operands, broadcast: add left to right (Mean then divided by
 * their number), as ONNX's reference computes them. */
int
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
int
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
			if (i == 1)
				v = xemit2(x, OP_MAXIMUM, v, b);
			else                    /* min(v, b) = -max(-v, -b), -b made first */
				b = xneg(x, b), v = xneg(x, xemit2(x, OP_MAXIMUM, xneg(x, v), b));
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
int
emit_hard(Ox *x)
{
	int sw = strcmp(x->nd->op, "HardSwish") == 0, a = in_t(x, 0), v;
	double al = sw ? 1.0 / 6 : att_f(x, "alpha", 0.2), be = sw ? 0.5 : att_f(x, "beta", 0.5);
	double fa[MAXFA] = { 0, 1 };
	const Shape one = { 0, { 0 } };

	if (a < 0)
		return -1;
	v = xconst(x, be, &one);
	v = xemit2(x, OP_ADD, xemit2(x, OP_MUL, a, xconst(x, al, &one)), v);
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
int
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
		int e = xconst(x, 1, &one);
		e = xemit2(x, OP_SUB, xemit1(x, OP_EXP, v), e);
		v = xemit2(x, OP_ADD, r, xemit2(x, OP_MUL, xconst(x, al, &one), e));
		if (selu)
			v = xemit2(x, OP_MUL, v, xconst(x, att_f(x, "gamma", 1.05070102214813232421875), &one));
	} else if (strcmp(op, "PRelu") == 0) {
		int d = xemit2(x, OP_SUB, a, r);
		v = xemit2(x, OP_ADD, r, xemit2(x, OP_MUL, in_t(x, 1), d));
	} else if (strcmp(op, "Softplus") == 0) {
		int ab = xemit2(x, OP_SUB, xemit2(x, OP_MUL, r, xconst(x, 2, &one)), a);
		v = xemit1(x, OP_EXP, xemit1(x, OP_NEG, ab));
		v = xemit2(x, OP_ADD, r, xemit1(x, OP_LOG, xemit2(x, OP_ADD, v, xconst(x, 1, &one))));
	} else {
		int rr = xemit2(x, OP_MUL, r, xconst(x, 1 - al, &one));
		v = xemit2(x, OP_ADD, xemit2(x, OP_MUL, a, xconst(x, al, &one)), rr);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}
