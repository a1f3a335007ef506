/* ops.c: the op table instantiated, attribute lookup, and every op's shape rule. */
#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "ir.h"

const OpInfo opinfo[NOP] = {
#define X(id, nm, na, fl, ia, fa, sh, gr, co, nw, ew) \
	[OP_##id] = { nm, na, fl, ia, fa, sh, gr, co, nw, (fl) & F_EW ? #ew : NULL },
	OPTAB(X)
#undef X
};

const char *const phase_name[] = { "fwd", "bwd", "upd", "rec", "mem" };
const char *const optim_name[] = { "", "sgd", "adam", "adamw" };

int
op_lookup(const char *name)
{
	for (int k = 0; k < NOP; k++)
		if (strcmp(opinfo[k].name, name) == 0)
			return k;
	return -1;
}

/* Index of word `name` in a space-separated list (a trailing '*' marks a list), or -1;
 * with name NULL, the number of words. */
static int
word_index(const char *list, const char *name)
{
	int i = 0;
	const char *p = list;
	size_t n;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		n = strcspn(p, " *");
		if (name && strlen(name) == n && strncmp(p, name, n) == 0)
			return i;
		i++;
		p += strcspn(p, " ");
	}
	return name ? -1 : i;
}

int op_niattr(Opk k) { return word_index(opinfo[k].iattr, NULL); }
int op_nfattr(Opk k) { return word_index(opinfo[k].fattr, NULL); }
int op_iattr_index(Opk k, const char *name) { return word_index(opinfo[k].iattr, name); }
int op_fattr_index(Opk k, const char *name) { return word_index(opinfo[k].fattr, name); }
int op_iattr_is_list(Opk k) { return strchr(opinfo[k].iattr, '*') != NULL; }

static int isword(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

char *
op_ew_expr(Opk k, const char *const x[3], const char *const c[2], const char *n, char *buf,
           size_t nbuf)
{
	const char *s = opinfo[k].ew;
	size_t o = 0;

	if (!s)
		die("%s has no elementwise formula", opinfo[k].name);
	while (*s) {
		size_t len = 0, rl;
		const char *rep;
		while (isword(s[len]))          /* a name or a number */
			len++;
		if (len == 0)
			len = 1;
		rep = s;
		rl = len;
		if (len == 2 && s[0] == 'x' && s[1] >= '0' && s[1] <= '2')
			rep = x[s[1] - '0'];
		else if (len == 1 && (*s == 'c' || *s == 'd'))
			rep = c[*s == 'd'];
		else if (len == 1 && *s == 'n')
			rep = n;
		if (rep != s)
			rl = strlen(rep);
		if (o + rl >= nbuf)
			die("elementwise formula of %s too long", opinfo[k].name);
		memcpy(buf + o, rep, rl);
		o += rl;
		s += len;
	}
	buf[o] = 0;
	return buf;
}

/* ---------- shapes ---------- */

const char *
dtype_name(DType t)
{
	return t == F32 ? "f32" : "i32";
}

int64_t
shape_numel(const Shape *s)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		n *= s->d[i];
	return n;
}

int64_t
type_bytes(const Type *t)
{
	return shape_numel(&t->sh) * 4;
}

int
shape_eq(const Shape *a, const Shape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->d[i] != b->d[i])
			return 0;
	return 1;
}

int
shape_broadcast(const Shape *a, const Shape *b, Shape *r)
{
	Shape o;
	int n = a->rank > b->rank ? a->rank : b->rank;

	o.rank = n;
	for (int i = 0; i < n; i++) {
		int ia = a->rank - n + i, ib = b->rank - n + i;
		int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return -1;
		o.d[i] = da == 1 ? db : da;
	}
	*r = o;
	return 0;
}

int
shape_broadcasts_to(const Shape *a, const Shape *r)
{
	Shape o;
	return shape_broadcast(a, r, &o) == 0 && shape_eq(&o, r);
}

char *
shape_str(const Shape *s, char *buf, size_t n)
{
	size_t k = 0;

	if (s->rank < 0 || s->rank > MAXRANK) {      /* a broken type (the verifier's messages) */
		snprintf(buf, n, "[rank %d]", s->rank);
		return buf;
	}
	k += snprintf(buf + k, n - k, "[");
	for (int i = 0; i < s->rank && k < n; i++)
		k += snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)s->d[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

char *
type_str(const Type *t, char *buf, size_t n)
{
	char s[MAXRANK * 24 + 4];
	snprintf(buf, n, "%s%s", dtype_name(t->dt), shape_str(&t->sh, s, sizeof s));
	return buf;
}

/* ---------- shape rules ---------- */

#define ARG(i) (&f->val[op->args[i]].ty)
#define TS(t) type_str((t), (char[MAXRANK * 24 + 8]){0}, MAXRANK * 24 + 8)
#define ARGV(i) (&f->val[op->args[i]])

static int
fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

static int
want_f32(const Func *f, const Op *op, int i, char *err, size_t n)
{
	if (ARG(i)->dt != F32)
		return fail(err, n, "operand %d of %s must be f32, not %s", i + 1,
		            opinfo[op->kind].name, TS(ARG(i)));
	return 0;
}

static int
want_axis(const Op *op, int64_t axis, int rank, char *err, size_t n)
{
	if (axis < 0 || axis >= rank)
		return fail(err, n, "axis %lld out of range for %s of rank %d", (long long)axis,
		            opinfo[op->kind].name, rank);
	return 0;
}

int
sh_const(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)f;
	if (r->dt != F32)
		return fail(err, n, "const must be f32");
	(void)op;
	return 0;
}

int
sh_binary(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n) || want_f32(f, op, 1, err, n))
		return -1;
	r->dt = F32;
	if (shape_broadcast(&ARG(0)->sh, &ARG(1)->sh, &r->sh))
		return fail(err, n, "shapes %s and %s do not broadcast in %s", TS(ARG(0)), TS(ARG(1)),
		            opinfo[op->kind].name);
	if ((op->kind == OP_SOFTMAX_G || op->kind == OP_LOGSOFTMAX_G) &&
	    want_axis(op, op->ia[0], r->sh.rank, err, n))
		return -1;
	return 0;
}

/* cumsum(x) axis exclusive reverse: x's type; exclusive and reverse are 0 or 1. */
int
sh_cumsum(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n) || want_axis(op, op->ia[0], ARG(0)->sh.rank, err, n))
		return -1;
	if ((op->ia[1] != 0 && op->ia[1] != 1) || (op->ia[2] != 0 && op->ia[2] != 1))
		return fail(err, n, "cumsum's exclusive and reverse must be 0 or 1");
	*r = *ARG(0);
	return 0;
}

/* select(c, a, b), maximum_grad(a, b, dy): the three broadcast together, all f32. */
int
sh_ternary(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	Shape s;

	for (int i = 0; i < 3; i++)
		if (want_f32(f, op, i, err, n))
			return -1;
	r->dt = F32;
	if (shape_broadcast(&ARG(0)->sh, &ARG(1)->sh, &s) || shape_broadcast(&s, &ARG(2)->sh, &r->sh))
		return fail(err, n, "shapes %s, %s and %s do not broadcast in %s", TS(ARG(0)),
		            TS(ARG(1)), TS(ARG(2)), opinfo[op->kind].name);
	return 0;
}

int
sh_unary(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (!(opinfo[op->kind].flags & F_COPY) && want_f32(f, op, 0, err, n))
		return -1;
	*r = *ARG(0);
	if ((op->kind == OP_SOFTMAX || op->kind == OP_LOGSOFTMAX) &&
	    want_axis(op, op->ia[0], r->sh.rank, err, n))
		return -1;
	if (op->kind == OP_SWAPOUT && f->val[op->args[0]].host)
		return fail(err, n, "swap_out of a value already in host memory");
	if (op->kind == OP_SWAPIN && !f->val[op->args[0]].host)
		return fail(err, n, "swap_in of a value not in host memory");
	return 0;
}

int
sh_matmul(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Shape *a = &ARG(0)->sh, *b = &ARG(1)->sh;
	Shape ba = *a, bb = *b;
	int64_t m, ka, kb, nn;

	if (want_f32(f, op, 0, err, n) || want_f32(f, op, 1, err, n))
		return -1;
	if (a->rank < 2 || b->rank < 2)
		return fail(err, n, "matmul needs operands of rank >= 2, got %s and %s", TS(ARG(0)), TS(ARG(1)));
	m = op->ia[0] ? a->d[a->rank - 1] : a->d[a->rank - 2];
	ka = op->ia[0] ? a->d[a->rank - 2] : a->d[a->rank - 1];
	kb = op->ia[1] ? b->d[b->rank - 1] : b->d[b->rank - 2];
	nn = op->ia[1] ? b->d[b->rank - 2] : b->d[b->rank - 1];
	if (ka != kb)
		return fail(err, n, "matmul inner dimensions differ: %s @ %s", TS(ARG(0)), TS(ARG(1)));
	ba.rank -= 2;
	bb.rank -= 2;
	if (shape_broadcast(&ba, &bb, &r->sh))
		return fail(err, n, "matmul batch dimensions do not broadcast: %s @ %s", TS(ARG(0)), TS(ARG(1)));
	r->dt = F32;
	r->sh.d[r->sh.rank++] = m;
	r->sh.d[r->sh.rank++] = nn;
	return 0;
}

int
sh_transpose(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *a = ARG(0);
	int seen[MAXRANK] = {0};

	if (op->nia != a->sh.rank)
		return fail(err, n, "transpose of %s needs a permutation of %d axes, got %d", TS(a),
		            a->sh.rank, op->nia);
	r->dt = a->dt;
	r->sh.rank = a->sh.rank;
	for (int i = 0; i < op->nia; i++) {
		int64_t p = op->ia[i];
		if (p < 0 || p >= a->sh.rank || seen[p])
			return fail(err, n, "transpose permutation is not a permutation of 0..%d", a->sh.rank - 1);
		seen[p] = 1;
		r->sh.d[i] = a->sh.d[p];
	}
	return 0;
}

int
sh_reshape(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (shape_numel(&r->sh) != shape_numel(&ARG(0)->sh))
		return fail(err, n, "cannot reshape %s into %s: element counts differ", TS(ARG(0)), TS(r));
	r->dt = ARG(0)->dt;
	return 0;
}

int
sh_concat(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *a = ARG(0);
	int64_t ax = op->ia[0], tot = 0;

	if (want_axis(op, ax, a->sh.rank, err, n))
		return -1;
	for (int i = 0; i < op->nargs; i++) {
		const Type *b = ARG(i);
		if (b->dt != a->dt || b->sh.rank != a->sh.rank)
			return fail(err, n, "concat operands differ in dtype or rank: %s and %s", TS(a), TS(b));
		for (int k = 0; k < a->sh.rank; k++)
			if (k != ax && b->sh.d[k] != a->sh.d[k])
				return fail(err, n, "concat operands differ off axis %lld: %s and %s",
				            (long long)ax, TS(a), TS(b));
		if (add64(tot, b->sh.d[ax], &tot))
			return fail(err, n, "concat result too large");
	}
	*r = *a;
	r->sh.d[ax] = tot;
	return 0;
}

/* The shape of x reduced over axis (kept as 1 with keepdims). */
static void
reduced(const Shape *x, int64_t axis, int keep, Shape *r)
{
	int k = 0;
	for (int i = 0; i < x->rank; i++)
		if (i != axis)
			r->d[k++] = x->d[i];
		else if (keep)
			r->d[k++] = 1;
	r->rank = k;
}

int
sh_reduce(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n) || want_axis(op, op->ia[0], ARG(0)->sh.rank, err, n))
		return -1;
	if (op->ia[1] != 0 && op->ia[1] != 1)
		return fail(err, n, "keepdims must be 0 or 1");
	r->dt = op->kind == OP_ARGMAX ? I32 : F32;     /* argmax: the index, i32 */
	reduced(&ARG(0)->sh, op->ia[0], (int)op->ia[1], &r->sh);
	return 0;
}

int
sh_layernorm(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *x = ARG(0);

	for (int i = 0; i < 3; i++)
		if (want_f32(f, op, i, err, n))
			return -1;
	if (x->sh.rank < 1)
		return fail(err, n, "layernorm needs a tensor of rank >= 1, got %s", TS(x));
	for (int i = 1; i < 3; i++)
		if (ARG(i)->sh.rank != 1 || ARG(i)->sh.d[0] != x->sh.d[x->sh.rank - 1])
			return fail(err, n, "layernorm %s must be f32[%lld] for input %s, got %s",
			            i == 1 ? "gamma" : "beta", (long long)x->sh.d[x->sh.rank - 1], TS(x), TS(ARG(i)));
	if (!(op->fa[0] > 0))
		return fail(err, n, "layernorm eps must be positive");
	*r = *x;
	return 0;
}

/* to_f32(x): an i32 tensor's values as f32, rounded to nearest (PyTorch's .float(), ONNX's
 * Cast): positions given as integers, made angles by rotary embeddings. */
int
sh_tof32(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (ARG(0)->dt != I32)
		return fail(err, n, "to_f32 needs an i32 operand, got %s", TS(ARG(0)));
	r->dt = F32;
	r->sh = ARG(0)->sh;
	return 0;
}

/* to_i32(x): an f32 tensor's values as i32, toward zero (PyTorch's .long() and ONNX's Cast in
 * range), NaN 0, clamped to i32's range (mtc_toi32): counts made indices, an embedding's. */
int
sh_toi32(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (ARG(0)->dt != F32)
		return fail(err, n, "to_i32 needs an f32 operand, got %s", TS(ARG(0)));
	r->dt = I32;
	r->sh = ARG(0)->sh;
	return 0;
}

int
sh_embedding(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *t = ARG(0), *ids = ARG(1);

	if (t->dt != F32 || t->sh.rank != 2)
		return fail(err, n, "embedding table must be f32[V, D], got %s", TS(t));
	if (ids->dt != I32)
		return fail(err, n, "embedding ids must be i32, got %s", TS(ids));
	if (ids->sh.rank + 1 > MAXRANK)
		return fail(err, n, "embedding result would exceed rank %d", MAXRANK);
	r->dt = F32;
	r->sh = ids->sh;
	r->sh.d[r->sh.rank++] = t->sh.d[1];
	return 0;
}

/* labels must have logits' shape without the last axis */
static int
check_labels(const Type *lg, const Type *lb, char *err, size_t n)
{
	Shape s = lg->sh;

	if (lg->dt != F32 || lg->sh.rank < 1)
		return fail(err, n, "cross_entropy logits must be f32 of rank >= 1, got %s", TS(lg));
	if (lb->dt != I32)
		return fail(err, n, "cross_entropy labels must be i32, got %s", TS(lb));
	s.rank--;
	if (!shape_eq(&s, &lb->sh))
		return fail(err, n, "cross_entropy labels %s do not match logits %s", TS(lb), TS(lg));
	return 0;
}

int
sh_xent(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (check_labels(ARG(0), ARG(1), err, n))
		return -1;
	r->dt = F32;
	r->sh.rank = 0;
	return 0;
}

int
sh_mse(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (sh_binary(f, op, r, err, n))
		return -1;
	r->sh.rank = 0;
	return 0;
}

int
sh_sumto(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n))
		return -1;
	if (r->dt != F32 || !shape_broadcasts_to(&r->sh, &ARG(0)->sh))
		return fail(err, n, "sum_to: %s does not broadcast to %s", TS(r), TS(ARG(0)));
	return 0;
}

int
sh_bcast(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n))
		return -1;
	if (r->dt != F32 || !shape_broadcasts_to(&ARG(0)->sh, &r->sh))
		return fail(err, n, "broadcast: %s does not broadcast to %s", TS(ARG(0)), TS(r));
	return 0;
}

int
sh_maxgrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	Type red;

	if (sh_reduce(f, op, &red, err, n))
		return -1;
	for (int i = 1; i < 3; i++)
		if (want_f32(f, op, i, err, n))
			return -1;
	if (!shape_eq(&ARG(1)->sh, &red.sh) || !shape_eq(&ARG(2)->sh, &red.sh))
		return fail(err, n, "max_grad: %s and %s must be %s", TS(ARG(1)), TS(ARG(2)), TS(&red));
	*r = *ARG(0);
	return 0;
}

int
sh_lndx(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *x = ARG(0);

	for (int i = 0; i < 3; i++)
		if (want_f32(f, op, i, err, n))
			return -1;
	if (x->sh.rank < 1 || ARG(1)->sh.rank != 1 || ARG(1)->sh.d[0] != x->sh.d[x->sh.rank - 1] ||
	    !shape_eq(&ARG(2)->sh, &x->sh))
		return fail(err, n, "layernorm_dx: bad operands %s, %s, %s", TS(x), TS(ARG(1)), TS(ARG(2)));
	*r = *x;
	return 0;
}

int
sh_lndgamma(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *x = ARG(0);

	if (want_f32(f, op, 0, err, n) || want_f32(f, op, 1, err, n))
		return -1;
	if (x->sh.rank < 1 || !shape_eq(&ARG(1)->sh, &x->sh))
		return fail(err, n, "layernorm_dgamma: bad operands %s, %s", TS(x), TS(ARG(1)));
	r->dt = F32;
	r->sh.rank = 1;
	r->sh.d[0] = x->sh.d[x->sh.rank - 1];
	return 0;
}

int
sh_embedgrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *ids = ARG(0), *dy = ARG(1);
	Shape s = ids->sh;

	if (ids->dt != I32 || ids->sh.rank >= MAXRANK || dy->dt != F32 || r->dt != F32 || r->sh.rank != 2)
		return fail(err, n, "embedding_grad: bad operands %s, %s -> %s", TS(ids), TS(dy), TS(r));
	s.d[s.rank++] = r->sh.d[1];
	if (!shape_eq(&s, &dy->sh))
		return fail(err, n, "embedding_grad: gradient %s does not match ids %s", TS(dy), TS(ids));
	return 0;
}

int
sh_xentgrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (check_labels(ARG(0), ARG(1), err, n))
		return -1;
	if (ARG(2)->dt != F32 || ARG(2)->sh.rank != 0)
		return fail(err, n, "cross_entropy_grad: the loss gradient must be f32[], got %s", TS(ARG(2)));
	*r = *ARG(0);
	return 0;
}

int
sh_msegrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (sh_binary(f, op, r, err, n))
		return -1;
	if (ARG(2)->dt != F32 || ARG(2)->sh.rank != 0)
		return fail(err, n, "mse_grad: the loss gradient must be f32[], got %s", TS(ARG(2)));
	return 0;
}

/* The result (given) is x narrowed along axis to [start, start + r.d[axis]). */
int
sh_slice(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *x = ARG(0);
	int64_t ax = op->ia[0], st = op->ia[1];

	if (want_axis(op, ax, x->sh.rank, err, n))
		return -1;
	if (r->dt != x->dt || r->sh.rank != x->sh.rank)
		return fail(err, n, "slice of %s cannot give %s", TS(x), TS(r));
	for (int k = 0; k < x->sh.rank; k++)
		if (k != ax && r->sh.d[k] != x->sh.d[k])
			return fail(err, n, "slice of %s cannot give %s", TS(x), TS(r));
	if (st < 0 || r->sh.d[ax] > x->sh.d[ax] - st)
		return fail(err, n, "slice [%lld, +%lld) out of range for %s", (long long)st,
		            (long long)r->sh.d[ax], TS(x));
	return 0;
}

/* slice_grad(dy) axis start -> T (given): dy placed at [start, start + dy.d[axis]) along axis
 * of zeros of T, the shape slice(T) axis start took dy's shape from. */
int
sh_slicegrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *dy = ARG(0);
	int64_t ax = op->ia[0], st = op->ia[1];

	if (want_f32(f, op, 0, err, n) || want_axis(op, ax, dy->sh.rank, err, n))
		return -1;
	if (r->dt != F32 || r->sh.rank != dy->sh.rank)
		return fail(err, n, "slice_grad of %s cannot give %s", TS(dy), TS(r));
	for (int k = 0; k < dy->sh.rank; k++)
		if (k != ax && r->sh.d[k] != dy->sh.d[k])
			return fail(err, n, "slice_grad of %s cannot give %s", TS(dy), TS(r));
	if (st < 0 || dy->sh.d[ax] > r->sh.d[ax] - st)
		return fail(err, n, "slice_grad [%lld, +%lld) out of range for %s", (long long)st,
		            (long long)dy->sh.d[ax], TS(r));
	return 0;
}

/* clip(x) lo hi: x's type; lo <= hi. */
int
sh_clip(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (sh_unary(f, op, r, err, n))
		return -1;
	if (!(op->fa[0] <= op->fa[1]))
		return fail(err, n, "clip: lo (%g) must not exceed hi (%g)", op->fa[0], op->fa[1]);
	return 0;
}

/* ---------- convolution ---------- */

/* An output extent of a window (kernel k, stride s, padding p each side, dilation d) over an
 * input extent n: PyTorch's floor((n + 2p - d (k - 1) - 1) / s) + 1; 0 or less when the
 * window does not fit. */
int64_t
window_out(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d)
{
	int64_t span = d * (k - 1) + 1, room = n + 2 * p - span;
	return room < 0 ? 0 : room / s + 1;
}

/* A window's attributes kh kw sh sw ph pw (ia[0..6)) and dilations dh dw (ia[6..8), or 1 for
 * avg_pool2d) over an f32[N, C, H, W]: checks them and sets ho, wo. */
static int
window(const Func *f, const Op *op, const Type *x, int64_t *ho, int64_t *wo, char *err, size_t n)
{
	int avg = op->kind == OP_AVGPOOL || op->kind == OP_AVGPOOL_G;
	const int64_t a[8] = { op->ia[0], op->ia[1], op->ia[2], op->ia[3], op->ia[4], op->ia[5],
	                       avg ? 1 : op->ia[6], avg ? 1 : op->ia[7] };

	if (x->dt != F32 || x->sh.rank != 4)
		return fail(err, n, "%s needs an f32[N, C, H, W], got %s", opinfo[op->kind].name, TS(x));
	if (a[0] < 1 || a[1] < 1 || a[2] < 1 || a[3] < 1 || a[4] < 0 || a[5] < 0 || a[6] < 1 || a[7] < 1)
		return fail(err, n, "%s: kernel, stride and dilation must be positive, padding not negative",
		            opinfo[op->kind].name);
	if (a[4] > INT32_MAX || a[5] > INT32_MAX || a[0] * a[6] > INT32_MAX || a[1] * a[7] > INT32_MAX ||
	    a[2] > INT32_MAX || a[3] > INT32_MAX)
		return fail(err, n, "%s: window attributes out of range", opinfo[op->kind].name);
	*ho = window_out(x->sh.d[2], a[0], a[2], a[4], a[6]);
	*wo = window_out(x->sh.d[3], a[1], a[3], a[5], a[7]);
	(void)f;
	if (*ho < 1 || *wo < 1)
		return fail(err, n, "%s: a %lldx%lld window (dilation %lldx%lld) does not fit %s padded by "
		            "%lldx%lld", opinfo[op->kind].name, (long long)a[0], (long long)a[1],
		            (long long)a[6], (long long)a[7], TS(x), (long long)a[4], (long long)a[5]);
	return 0;
}

/* max_pool2d(x) kh kw sh sw ph pw dh dw, avg_pool2d(x) kh kw sh sw ph pw count_include_pad:
 * f32[N, C, Ho, Wo]; as PyTorch, padding at most half the (dilated) kernel, so that every
 * window holds an element of x. */
static int
pool_window(const Func *f, const Op *op, const Type *x, Type *r, char *err, size_t n)
{
	int avg = op->kind == OP_AVGPOOL || op->kind == OP_AVGPOOL_G;
	int64_t ho, wo;

	if (window(f, op, x, &ho, &wo, err, n))
		return -1;
	for (int k = 0; k < 2; k++) {
		int64_t span = (avg ? 1 : op->ia[6 + k]) * (op->ia[k] - 1) + 1;
		if (2 * op->ia[4 + k] > span)
			return fail(err, n, "%s: padding %lld is more than half of the kernel's %lld",
			            opinfo[op->kind].name, (long long)op->ia[4 + k], (long long)span);
	}
	if (avg && op->ia[6] != 0 && op->ia[6] != 1)
		return fail(err, n, "count_include_pad must be 0 or 1");
	*r = (Type){ F32, { 4, { x->sh.d[0], x->sh.d[1], ho, wo } } };
	return 0;
}

int
sh_pool(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	return pool_window(f, op, ARG(0), r, err, n);
}

/* max_pool2d_grad(x, dy) -> x's type; avg_pool2d_grad(dy) -> T (given: x's type); dy has the
 * pool's result shape. */
int
sh_poolgrad(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Type *x = op->kind == OP_MAXPOOL_G ? ARG(0) : r, *dy = ARG(op->kind == OP_MAXPOOL_G);
	Type y;

	if (pool_window(f, op, x, &y, err, n))
		return -1;
	if (dy->dt != F32 || !shape_eq(&dy->sh, &y.sh))
		return fail(err, n, "%s: gradient %s, the pool of %s is %s", opinfo[op->kind].name, TS(dy),
		            TS(x), TS(&y));
	*r = *x;
	return 0;
}

/* ---------- batch norm ---------- */

/* x f32[N, C, ...] and each of the n operands from `first` on f32[C]. */
static int
per_channel(const Func *f, const Op *op, int first, int n, char *err, size_t nerr)
{
	const Type *x = ARG(0);

	if (x->dt != F32 || x->sh.rank < 2)
		return fail(err, nerr, "%s needs an input f32[N, C, ...], got %s", opinfo[op->kind].name, TS(x));
	for (int i = first; i < first + n; i++)
		if (ARG(i)->dt != F32 || ARG(i)->sh.rank != 1 || ARG(i)->sh.d[0] != x->sh.d[1])
			return fail(err, nerr, "%s: operand %d must be f32[%lld] for the input %s, got %s",
			            opinfo[op->kind].name, i + 1, (long long)x->sh.d[1], TS(x), TS(ARG(i)));
	return 0;
}

/* batch_norm(x, gamma, beta, mean, var) training eps momentum: x's type. */
int
sh_batchnorm(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (per_channel(f, op, 1, 4, err, n))
		return -1;
	if (op->ia[0] != 0 && op->ia[0] != 1)
		return fail(err, n, "batch_norm: training must be 0 or 1");
	if (!(op->fa[0] > 0))
		return fail(err, n, "batch_norm: eps must be positive");
	*r = *ARG(0);
	return 0;
}

/* batch_norm_mean(x), batch_norm_var(x, mean): f32[C]. */
int
sh_bnstat(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (per_channel(f, op, 1, op->nargs - 1, err, n))
		return -1;
	*r = (Type){ F32, { 1, { ARG(0)->sh.d[1] } } };
	return 0;
}

/* batch_norm_dstats(x, mean, var, dy) eps: f32[2, C]. */
int
sh_bndstats(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (per_channel(f, op, 1, 2, err, n))
		return -1;
	if (ARG(3)->dt != F32 || !shape_eq(&ARG(3)->sh, &ARG(0)->sh))
		return fail(err, n, "%s: the gradient %s must have the input's shape %s",
		            opinfo[op->kind].name, TS(ARG(3)), TS(ARG(0)));
	*r = (Type){ F32, { 2, { 2, ARG(0)->sh.d[1] } } };
	return 0;
}

/* batch_norm_dx(x, gamma, mean, var, dy, dstats) training eps: x's type. */
int
sh_bndx(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	Type ds;

	if (per_channel(f, op, 1, 3, err, n))
		return -1;
	if (ARG(4)->dt != F32 || !shape_eq(&ARG(4)->sh, &ARG(0)->sh))
		return fail(err, n, "batch_norm_dx: the gradient %s must have the input's shape %s",
		            TS(ARG(4)), TS(ARG(0)));
	ds = (Type){ F32, { 2, { 2, ARG(0)->sh.d[1] } } };
	if (ARG(5)->dt != F32 || !shape_eq(&ARG(5)->sh, &ds.sh))
		return fail(err, n, "batch_norm_dx: the sums %s must be %s", TS(ARG(5)), TS(&ds));
	if (op->ia[0] != 0 && op->ia[0] != 1)
		return fail(err, n, "batch_norm_dx: training must be 0 or 1");
	*r = *ARG(0);
	return 0;
}

/* batch_norm_update(rmean, rvar, mean, var) count momentum: four f32[C], count >= 2. */
int
sh_bnupdate(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)r;
	for (int i = 0; i < 4; i++)
		if (ARG(i)->dt != F32 || ARG(i)->sh.rank != 1 || ARG(i)->sh.d[0] != ARG(0)->sh.d[0])
			return fail(err, n, "batch_norm_update: operand %d is %s, the running mean %s", i + 1,
			            TS(ARG(i)), TS(ARG(0)));
	if (op->ia[0] < 2)
		return fail(err, n, "batch_norm_update: count %lld; the unbiased variance needs 2 or more",
		            (long long)op->ia[0]);
	return 0;
}

/* dropout(x) key seed chunk parts part rankparts p: x's type (inference: the identity);
 * dropout(x, t): with the step counter t, an i32[] (training: the mask of passes/grad.c). */
int
sh_dropout(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n))
		return -1;
	if (op->nargs > 2 || (op->nargs == 2 && (ARG(1)->dt != I32 || ARG(1)->sh.rank != 0)))
		return fail(err, n, "dropout takes x and, in training, the step counter (i32[])");
	if (!(op->fa[0] >= 0 && op->fa[0] <= 1))
		return fail(err, n, "dropout: p must be in [0, 1], got %g", op->fa[0]);
	if (op->ia[0] < 0 || op->ia[0] > INT32_MAX)
		return fail(err, n, "dropout: key %lld out of range", (long long)op->ia[0]);
	/* a slice of the batch: chunk > 0 divides x; part (plus the rank's parts) < parts */
	if (op->ia[2] < 0 || op->ia[3] < 0 || op->ia[4] < 0 || op->ia[5] < 0 ||
	    (op->ia[2] == 0 ? op->ia[3] || op->ia[4] || op->ia[5] :
	     shape_numel(&ARG(0)->sh) % op->ia[2] || op->ia[3] < 2 || op->ia[3] > INT32_MAX ||
	     op->ia[4] >= (op->ia[5] ? op->ia[5] : op->ia[3]) ||
	     (op->ia[5] && op->ia[3] % op->ia[5])))
		return fail(err, n, "dropout: chunk=%lld parts=%lld part=%lld rankparts=%lld is no slice of "
		            "the batch for %lld elements", (long long)op->ia[2], (long long)op->ia[3],
		            (long long)op->ia[4], (long long)op->ia[5], (long long)shape_numel(&ARG(0)->sh));
	*r = *ARG(0);
	return 0;
}

/* A convolution's geometry (ops conv2d, conv2d_dx, conv2d_dx: attributes sh sw ph pw dh dw
 * groups): x f32[N, C, H, W] by w f32[Cout, C/groups, kh, kw] gives f32[N, Cout, Ho, Wo]. */
static int
conv_geom(const Op *op, const Type *x, const Type *w, Type *y, char *err, size_t n)
{
	const int64_t *a = op->ia;
	const char *nm = opinfo[op->kind].name;
	int64_t ho, wo;

	if (x->dt != F32 || x->sh.rank != 4)
		return fail(err, n, "%s needs an input f32[N, C, H, W], got %s", nm, TS(x));
	if (w->dt != F32 || w->sh.rank != 4)
		return fail(err, n, "%s: the weight must be f32[Cout, Cin/groups, kh, kw], got %s", nm, TS(w));
	if (a[0] < 1 || a[1] < 1 || a[2] < 0 || a[3] < 0 || a[4] < 1 || a[5] < 1 || a[6] < 1)
		return fail(err, n, "%s: stride, dilation and groups must be positive, padding not negative", nm);
	for (int k = 0; k < 6; k++)
		if (a[k] > INT32_MAX)
			return fail(err, n, "%s: attribute %d out of range", nm, k + 1);
	if (w->sh.d[0] % a[6] || w->sh.d[1] * a[6] != x->sh.d[1])
		return fail(err, n, "%s: weight %s with groups=%lld does not go with input %s", nm, TS(w),
		            (long long)a[6], TS(x));
	ho = window_out(x->sh.d[2], w->sh.d[2], a[0], a[2], a[4]);
	wo = window_out(x->sh.d[3], w->sh.d[3], a[1], a[3], a[5]);
	if (ho < 1 || wo < 1)
		return fail(err, n, "%s: the kernel of %s does not fit the input %s", nm, TS(w), TS(x));
	*y = (Type){ F32, { 4, { x->sh.d[0], w->sh.d[0], ho, wo } } };
	return 0;
}

static int
pointwise(const Shape *w, const int64_t *a)
{
	return w->d[2] == 1 && w->d[3] == 1 && a[0] == 1 && a[1] == 1 && a[2] == 0 && a[3] == 0;
}

/* Depthwise: a group per channel, one output channel each (the C target's direct loops). */
static int
depthwise(const Shape *x, const Shape *w, const int64_t *a)
{
	return a[6] == x->d[1] && w->d[0] == a[6];
}

/* A workspace of the images in chunks of k, k dividing N: columns and GEMM rows per image
 * (C*kh*kw + Cout) * Ho*Wo floats; k the most that keeps the workspace within twice the larger
 * of x and y, or, where that gives GEMMs of fewer than 256 columns, the fewest images that have
 * them (the planner cannot shrink a workspace: it stays in proportion to the activations
 * around it, but a BLAS runs a GEMM of a few columns slowly). At least 1. */
int
conv_workspace(const Shape *x, const Shape *w, const int64_t *a, Type *ws)
{
	int64_t p, r, cap, k = 1, act;

	if (pointwise(w, a) || depthwise(x, w, a))
		return 0;
	p = window_out(x->d[2], w->d[2], a[0], a[2], a[4]) * window_out(x->d[3], w->d[3], a[1], a[3], a[5]);
	r = (x->d[1] * w->d[2] * w->d[3] + w->d[0]) * p;
	act = x->d[1] * x->d[2] * x->d[3] > w->d[0] * p ? x->d[1] * x->d[2] * x->d[3] : w->d[0] * p;
	cap = 2 * x->d[0] * act;
	if (cap < r * ((256 + p - 1) / p))
		cap = r * ((256 + p - 1) / p);
	for (int64_t d = 2; d <= x->d[0]; d++)
		if (x->d[0] % d == 0 && d * r <= cap)
			k = d;
	*ws = (Type){ F32, { 2, { k, r } } };
	return 1;
}

/* A conv op's workspace: none for a pointwise or a depthwise convolution; else f32[k, R], k dividing
 * N (conv_workspace's R; k may be any divisor). */
static int
conv_ws(const Func *f, const Op *op, const Type *x, const Type *w, int nws, char *err, size_t n)
{
	const char *nm = opinfo[op->kind].name;
	Type want;

	if (op->nargs > nws + 1)
		return fail(err, n, "%s takes %d operands and a workspace", nm, nws);
	if (!conv_workspace(&x->sh, &w->sh, op->ia, &want)) {
		if (op->nargs > nws)
			return fail(err, n, "%s: a pointwise or depthwise convolution takes no workspace", nm);
		return 0;
	}
	if (op->nargs == nws)
		return fail(err, n, "%s needs a workspace f32[k, %lld] (k dividing %lld)", nm,
		            (long long)want.sh.d[1], (long long)x->sh.d[0]);
	if (ARG(nws)->dt != F32 || ARG(nws)->sh.rank != 2 || ARG(nws)->sh.d[1] != want.sh.d[1] ||
	    x->sh.d[0] % ARG(nws)->sh.d[0])
		return fail(err, n, "%s: workspace %s, want f32[k, %lld] with k dividing %lld", nm,
		            TS(ARG(nws)), (long long)want.sh.d[1], (long long)x->sh.d[0]);
	return 0;
}

/* workspace -> T (given): bytes for one op, contents undefined. */
int
sh_workspace(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)f;
	(void)op;
	if (r->dt != F32 || r->sh.rank < 1)
		return fail(err, n, "a workspace is f32 of rank 1 or more, not %s", TS(r));
	return 0;
}

/* conv2d(x, w, ws?) sh sw ph pw dh dw groups: f32[N, Cout, Ho, Wo]. */
int
sh_conv2d(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (conv_geom(op, ARG(0), ARG(1), r, err, n))
		return -1;
	return conv_ws(f, op, ARG(0), ARG(1), 2, err, n);
}

/* conv2d_dx(w, dy, ws?) -> T (given: x's type): dy has the shape of conv2d(T, w). */
int
sh_conv2d_dx(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	Type y;

	if (conv_geom(op, r, ARG(0), &y, err, n))
		return -1;
	if (ARG(1)->dt != F32 || !shape_eq(&ARG(1)->sh, &y.sh))
		return fail(err, n, "conv2d_dx: gradient %s, the convolution of %s by %s is %s", TS(ARG(1)),
		            TS(r), TS(ARG(0)), TS(&y));
	return conv_ws(f, op, r, ARG(0), 2, err, n);
}

/* conv2d_dw(x, dy, ws?) -> T (given: w's type): dy has the shape of conv2d(x, T). */
int
sh_conv2d_dw(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	Type y;

	if (conv_geom(op, ARG(0), r, &y, err, n))
		return -1;
	if (ARG(1)->dt != F32 || !shape_eq(&ARG(1)->sh, &y.sh))
		return fail(err, n, "conv2d_dw: gradient %s, the convolution of %s by %s is %s", TS(ARG(1)),
		            TS(ARG(0)), TS(r), TS(&y));
	return conv_ws(f, op, ARG(0), r, 2, err, n);
}

/* Optimizer updates: every operand but the step counter has the param's type. */
static int
same_as_param(const Func *f, const Op *op, int nsame, char *err, size_t n)
{
	for (int i = 0; i < nsame; i++)
		if (ARG(i)->dt != F32 || !shape_eq(&ARG(i)->sh, &ARG(0)->sh))
			return fail(err, n, "%s: operand %d is %s, the param is %s", opinfo[op->kind].name,
			            i + 1, TS(ARG(i)), TS(ARG(0)));
	return 0;
}

/* Operands from..nargs are hyperparameters: f32[] scalars. */
static int
scalars(const Func *f, const Op *op, int from, char *err, size_t n)
{
	for (int i = from; i < op->nargs; i++)
		if (ARG(i)->dt != F32 || ARG(i)->sh.rank != 0)
			return fail(err, n, "%s: operand %d (a hyperparameter) must be f32[], got %s",
			            opinfo[op->kind].name, i + 1, TS(ARG(i)));
	return 0;
}

/* sgd_update(p, g, lr, wd), sgd_momentum_update(p, v, g, lr, momentum, wd) */
int sh_sgd(const Func *f, const Op *op, Type *r, char *err, size_t n) { (void)r; return same_as_param(f, op, 2, err, n) || scalars(f, op, 2, err, n) ? -1 : 0; }
int sh_sgdm(const Func *f, const Op *op, Type *r, char *err, size_t n) { (void)r; return same_as_param(f, op, 3, err, n) || scalars(f, op, 3, err, n) ? -1 : 0; }

/* adam_update(p, m, v, g, t, lr, beta1, beta2, eps), adamw_update(..., weight_decay) */
int
sh_adam(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)r;
	if (same_as_param(f, op, 4, err, n))
		return -1;
	if (ARG(4)->dt != I32 || ARG(4)->sh.rank != 0)
		return fail(err, n, "%s: the step counter must be i32[], got %s", opinfo[op->kind].name,
		            TS(ARG(4)));
	return scalars(f, op, 5, err, n);
}

/* sumsq(x) -> f32[]: the sum of the squares of every element of an f32 tensor. */
int
sh_sumsq(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (ARG(0)->dt != F32)
		return fail(err, n, "sumsq of %s: wants f32", TS(ARG(0)));
	*r = (Type){ F32, { 0, {0} } };
	return 0;
}

/* copy_out(x) index start: the caller's output index gets x's elements from start on (the
 * verifier checks them against the forward's output). */
int
sh_copyout(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)r;
	if (op->ia[0] < 0 || op->ia[1] < 0)
		return fail(err, n, "copy_out: index %lld, start %lld must not be negative",
		            (long long)op->ia[0], (long long)op->ia[1]);
	(void)f;
	return 0;
}

int
sh_tick(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	(void)r;
	if (ARG(0)->dt != I32 || ARG(0)->sh.rank != 0)
		return fail(err, n, "tick: the counter must be i32[], got %s", TS(ARG(0)));
	return 0;
}

/* swap_home %d, %x: the device value x copied back into decl d's home in host memory. */
int
sh_home(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Value *d = ARGV(0), *x = ARGV(1);

	if (d->decl < 0 || !d->host)
		return fail(err, n, "swap_home into %%%s, which is not a declaration in host memory",
		            d->name);
	if (x->host)
		return fail(err, n, "swap_home of %%%s, which is in host memory already", x->name);
	if (d->ty.dt != x->ty.dt || !shape_eq(&d->ty.sh, &x->ty.sh))
		return fail(err, n, "swap_home of %s into %s", TS(&x->ty), TS(&d->ty));
	*r = d->ty;
	return 0;
}

int
sh_wait(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	int d = f->val[op->args[0]].def;
	(void)r;
	if (d < 0 || !(opinfo[f->op[d].kind].flags & (F_COPY | F_COLL)))
		return fail(err, n, "wait on %%%s, which no copy or collective produced",
		            f->val[op->args[0]].name);
	return 0;
}

int64_t
shard_len(int64_t numel, int64_t ranks)
{
	return ranks > 0 ? (numel + ranks - 1) / ranks : numel;
}

/* allreduce %g... ranks shards scale -> f32[N] in host memory: the f32 device operands packed
 * one after the other (N their elements), or with shards=1 as ranks blocks of their shards
 * (N = ranks * the sum of their shard_len); summed over `ranks` ranks, times scale.
 * reduce_scatter %g... ranks scale: the same packing as shards=1, this rank's block (the sum of
 * the shard_lens). allgather %s... ranks: the operands packed, ranks such blocks. */
int
sh_allreduce(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	int64_t tot = 0, ranks = op->ia[0];
	int blocks = op->kind == OP_REDSCAT || (op->kind == OP_ALLREDUCE && op->ia[1]);

	if (ranks < 1 || ranks > 1 << 20)
		return fail(err, n, "%s over %lld ranks", opinfo[op->kind].name, (long long)ranks);
	if (op->kind == OP_ALLREDUCE && op->ia[1] != 0 && op->ia[1] != 1)
		return fail(err, n, "allreduce: shards must be 0 or 1, not %lld", (long long)op->ia[1]);
	for (int k = 0; k < op->nargs; k++) {
		int64_t e = shape_numel(&ARG(k)->sh);
		if (want_f32(f, op, k, err, n))
			return -1;
		if (add64(tot, blocks ? shard_len(e, ranks) : e, &tot) || tot > 0x7fffffff)
			return fail(err, n, "%s of more than 2^31 - 1 elements", opinfo[op->kind].name);
	}
	if (tot == 0)
		return fail(err, n, "%s of no elements", opinfo[op->kind].name);
	/* the bucket holds every rank's block (a reduce-scatter in place keeps this rank's at its
	 * start) */
	if ((op->kind != OP_ALLREDUCE || op->ia[1]) &&
	    (mul64(tot, ranks, &tot) || tot > 0x7fffffff))
		return fail(err, n, "%s of more than 2^31 - 1 elements", opinfo[op->kind].name);
	*r = (Type){ F32, { 1, { tot } } };
	return 0;
}

/* shard %w ranks -> f32[shard_len(numel, ranks)]: this rank's elements of w, zeros past its end */
int
sh_shard(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	if (want_f32(f, op, 0, err, n))
		return -1;
	if (op->ia[0] < 1 || op->ia[0] > 1 << 20)
		return fail(err, n, "shard over %lld ranks", (long long)op->ia[0]);
	*r = (Type){ F32, { 1, { shard_len(shape_numel(&ARG(0)->sh), op->ia[0]) } } };
	return 0;
}

/* unshard %w, %b ranks start: w's shard of every rank q from b (an allgather's bucket: ranks
 * blocks), at start within block q, written into w */
int
sh_unshard(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Value *w = ARGV(0), *b = ARGV(1);
	int64_t ranks = op->ia[0], s;
	(void)r;

	if (want_f32(f, op, 0, err, n))
		return -1;
	if (b->def < 0 || f->op[b->def].kind != OP_ALLGATHER || !b->host)
		return fail(err, n, "unshard from %%%s, which no allgather produced", b->name);
	if (ranks != f->op[b->def].ia[0])
		return fail(err, n, "unshard over %lld ranks from an allgather over %lld", (long long)ranks,
		            (long long)f->op[b->def].ia[0]);
	s = shard_len(shape_numel(&w->ty.sh), ranks);
	if (op->ia[1] < 0 || s > shape_numel(&b->ty.sh) / ranks - op->ia[1])
		return fail(err, n, "unshard of %lld elements a rank from element %lld out of range for %s",
		            (long long)s, (long long)op->ia[1], TS(&b->ty));
	return 0;
}

/* unbucket %b start shard -> T (given): elements [start, start + numel(T)) of a collective's
 * bucket in host memory (of this rank's block of an allreduce of shards with shard=1), copied
 * onto the accelerator. */
int
sh_unbucket(const Func *f, const Op *op, Type *r, char *err, size_t n)
{
	const Value *b = ARGV(0);
	int d = b->def;

	int64_t len;

	if (d < 0 || !(opinfo[f->op[d].kind].flags & F_COLL) || f->op[d].kind == OP_ALLGATHER || !b->host)
		return fail(err, n, "unbucket of %%%s, which no allreduce or reduce_scatter produced", b->name);
	if (op->ia[1] != 0 && op->ia[1] != 1)
		return fail(err, n, "unbucket: shard must be 0 or 1, not %lld", (long long)op->ia[1]);
	if (op->ia[1] && (f->op[d].kind != OP_ALLREDUCE || !f->op[d].ia[1]))
		return fail(err, n, "unbucket shard=1 of %%%s, which is not an allreduce of shards", b->name);
	len = shape_numel(&b->ty.sh) / (op->ia[1] ? f->op[d].ia[0] : 1);
	if (r->dt != F32 || op->ia[0] < 0 || shape_numel(&r->sh) > len - op->ia[0])
		return fail(err, n, "unbucket of %s from element %lld out of range for %s%s", TS(r),
		            (long long)op->ia[0], TS(&b->ty), op->ia[1] ? "'s blocks" : "");
	return 0;
}
