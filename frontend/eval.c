/* eval.c: expressions to IR ops: constant folding, built-in calls and their keyword arguments.
 *
 * needs: a Ctx whose frame binds the visible names. fills: ops appended to ctx->f, each after
 * op_infer computed (or rejected) its type; shape errors come from op_infer's message. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"

const Val ERR = { V_ERR, 0, 0, 0, 0, 0 };

Val
err(Ctx *c, Loc loc, const char *fmt, ...)
{
	char msg[1024], key[32];
	va_list ap;
	int k = 0;

	if (c->stop)
		return ERR;
	/* An error inside a def or a loop would repeat at every expansion: say it once. */
	if (loc.line > 0) {
		snprintf(key, sizeof key, "%d:%d", loc.line, loc.col);
		if (mget(&c->seen, key))
			return ERR;
		mput(&c->seen, astrdup(c->a, key))->state = B_VAL;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag(c->src, loc, "%s", msg);
	for (Frame *fr = c->fr; fr && fr->def && k < 4; fr = fr->up, k++)
		note(c->src, fr->call, "in the call of '%s' here", fr->def->name);
	if (c->src->nerr >= MAXERR)
		c->stop = 1;
	return ERR;
}

static Val vint(int64_t i) { return (Val){ .k = V_INT, .i = i }; }
static Val vnum(double f) { return (Val){ .k = V_NUM, .f = f }; }
static Val vten(int v) { return (Val){ .k = V_TENSOR, .v = v }; }

static void fold_const(Ctx *, Ent *, Loc);

/* Find a name: the current frame (locals, def parameters, loop variables), then the consts.
 * 0 if it is not bound. */
int
lookup(Ctx *c, const char *name, Loc loc, Val *out)
{
	Ent *e;

	if (c->fr && (e = mget(&c->fr->names, name)) && e->state != B_NONE) {
		*out = e->val;
		return 1;
	}
	if (!(e = mget(&c->consts, name)))
		return 0;
	e->used = 1;
	if (e->state == B_UNFOLDED)
		fold_const(c, e, loc);
	else if (e->state == B_BUSY) {
		err(c, loc, "const '%s' is defined in terms of itself", name);
		*out = ERR;
		return 1;
	}
	*out = e->val;
	return 1;
}

/* The keys of m's bound entries, appended to l (grown as needed). */
static void
keys(const Map *m, const char ***l, int *n, int *cap)
{
	for (int i = 0; i < m->cap; i++)
		if (m->e[i].key && m->e[i].state != B_NONE) {
			if (*n == *cap)
				*l = xrealloc(*l, (*cap = *cap ? 2 * *cap : 64) * sizeof **l);
			(*l)[(*n)++] = m->e[i].key;
		}
}

/* "undefined name": with the closest name in scope (locals, then consts). */
Val
undefined_name(Ctx *c, Loc loc, const char *name)
{
	const char **l = NULL, *near;
	int n = 0, cap = 0;

	if (c->fr)
		keys(&c->fr->names, &l, &n, &cap);
	keys(&c->consts, &l, &n, &cap);
	near = nearest(name, l, n);
	free(l);
	if (near)
		return err(c, loc, "undefined name '%s'; did you mean '%s'?", name, near);
	return err(c, loc, "undefined name '%s'", name);
}

/* Consts are folded on first use, in the global scope, so they may be written in any order. */
static void
fold_const(Ctx *c, Ent *e, Loc use)
{
	const Item *it = e->p;
	Frame *fr = c->fr;
	Func *f = c->f;
	int64_t v;

	(void)use;
	e->state = B_BUSY;
	c->fr = NULL;
	c->f = NULL;
	Val r = eval(c, it->e, NULL);
	c->fr = fr;
	c->f = f;
	e->val = int_of(c, r, it->e->loc, &v) ? ERR : vint(v);
	e->state = B_VAL;
}

int
size_check(Ctx *c, const Type *t, Loc loc)
{
	char ts[MAXRANK * 24 + 8];
	int64_t n = 1;

	for (int i = 0; i < t->sh.rank; i++)
		if (mul64(n, t->sh.d[i], &n)) {
			err(c, loc, "the element count of %s overflows 64 bits", type_str(t, ts, sizeof ts));
			return -1;
		}
	if (n > MAXBYTES / 4) {
		err(c, loc, "%s takes %lld elements, which exceeds the target's memory outright "
		    "(the limit is 2^40 bytes)", type_str(t, ts, sizeof ts), (long long)n);
		return -1;
	}
	return 0;
}

/* A fresh value name for `base`: base, base.1, base.2, ... The counter per name keeps a
 * loop that rebinds h a million times linear (func_value alone would probe h.1, h.2, ...). */
static const char *
fresh(Ctx *c, const char *base)
{
	Ent *e;
	char *nm;

	if (!base)
		return NULL;
	e = mput(&c->ren, base);
	if (e->state == B_NONE) {
		e->state = B_VAL;
		e->val.i = 1;
		if (func_find(c->f, base) < 0)
			return base;
	}
	do
		nm = asprintf_a(c->a, "%s.%lld", base, (long long)e->val.i++);
	while (func_find(c->f, nm) >= 0);
	return nm;
}

Val
emit(Ctx *c, Opk k, const int *args, int na, const int64_t *ia, int nia, const double *fa,
     Type *r, const char *hint, Loc loc)
{
	char e[512];
	int o;

	if (op_infer(c->f, k, args, na, ia, nia, fa, r, e, sizeof e))
		return err(c, loc, "%s", e);
	if (size_check(c, r, loc))
		return ERR;
	if (c->f->nop >= MAXOPS) {
		err(c, loc, "the model expands to more than %d ops", MAXOPS);
		c->stop = 1;
		return ERR;
	}
	o = func_op(c->f, k, PH_FWD, args, na, ia, nia, fa, r, fresh(c, hint), loc);
	return vten(c->f->op[o].res);
}

int
tensor(Ctx *c, Val v, Loc loc, const char *hint)
{
	Type r = { F32, { 0, { 0 } } };
	double x, fa[MAXFA] = { 0 };
	int none[1] = { 0 };    /* func_op copies the operands even when there are none */

	switch (v.k) {
	case V_TENSOR:
		return v.v;
	case V_INT:
	case V_NUM:
		if (!c->f) {
			err(c, loc, "expected an integer constant expression");
			return -1;
		}
		x = v.k == V_INT ? (double)v.i : v.f;
		if (fabs(x) > FLT_MAX) {
			err(c, loc, "the number %g is out of range for f32", x);
			return -1;
		}
		fa[0] = x;
		v = emit(c, OP_CONST, none, 0, NULL, 0, fa, &r, hint, loc);
		return v.k == V_TENSOR ? v.v : -1;
	case V_ARRAY:
		err(c, loc, "a param array must be indexed, like w[i]");
		return -1;
	default:
		return -1;
	}
}

int
int_of(Ctx *c, Val v, Loc loc, int64_t *out)
{
	switch (v.k) {
	case V_INT:
		*out = v.i;
		return 0;
	case V_NUM:
		if (v.den)
			err(c, loc, "%lld / %lld does not divide exactly; an integer is needed here",
			    (long long)v.num, (long long)v.den);
		else
			err(c, loc, "expected an integer, got the number %g", v.f);
		return -1;
	case V_TENSOR:
	case V_ARRAY:
		err(c, loc, "expected an integer constant expression, not a tensor");
		return -1;
	default:
		return -1;
	}
}

int
ieval(Ctx *c, Node *n, int64_t *out)
{
	return int_of(c, eval(c, n, NULL), n->loc, out);
}

int
neval(Ctx *c, Node *n, double *out)
{
	Val v = eval(c, n, NULL);

	if (v.k == V_INT || v.k == V_NUM) {
		*out = v.k == V_INT ? (double)v.i : v.f;
		return 0;
	}
	if (v.k != V_ERR)
		err(c, n->loc, "expected a number here, not a tensor");
	return -1;
}

/* Fold a binary operator over two compile-time numbers: integers stay integers while they
 * can (overflow is an error); a division that is not exact gives a number. */
static Val
fold(Ctx *c, Node *n, Val a, Val b)
{
	int64_t r;
	double x, y, z;

	if (a.k == V_INT && b.k == V_INT) {
		switch (n->op) {
		case '+': if (!add64(a.i, b.i, &r)) return vint(r); break;
		case '-': if (!__builtin_sub_overflow(a.i, b.i, &r)) return vint(r); break;
		case '*': if (!mul64(a.i, b.i, &r)) return vint(r); break;
		case '/':
			if (b.i == 0)
				return err(c, n->loc, "division by zero");
			if (a.i == INT64_MIN && b.i == -1)
				break;
			if (a.i % b.i == 0)
				return vint(a.i / b.i);
			Val q = vnum((double)a.i / (double)b.i);
			q.num = a.i;
			q.den = b.i;
			return q;
		}
		return err(c, n->loc, "integer overflow: %lld %c %lld does not fit in 64 bits",
		           (long long)a.i, n->op, (long long)b.i);
	}
	x = a.k == V_INT ? (double)a.i : a.f;
	y = b.k == V_INT ? (double)b.i : b.f;
	switch (n->op) {
	case '+': z = x + y; break;
	case '-': z = x - y; break;
	case '*': z = x * y; break;
	default:
		if (y == 0)
			return err(c, n->loc, "division by zero");
		z = x / y;
	}
	if (!isfinite(z))
		return err(c, n->loc, "the constant %g %c %g is out of range", x, n->op, y);
	return vnum(z);
}

static const Opk binop[128] = { ['+'] = OP_ADD, ['-'] = OP_SUB, ['*'] = OP_MUL, ['/'] = OP_DIV,
                                ['@'] = OP_MATMUL };

static Val call(Ctx *, Node *, const char *hint);

/* One bound of a slice: an integer, negative from the end, clamped into [0, len] as Python
 * and PyTorch clamp it; a missing one is def. */
static int
bound(Ctx *c, Node *e, int64_t len, int64_t def, int64_t *out)
{
	int64_t v = def;

	if (e && ieval(c, e, &v))
		return -1;
	if (e && v < 0)
		v = v < -len ? 0 : v + len;
	*out = v > len ? len : v;
	return 0;
}

/* x[s0, s1, ...] on a tensor: each subscript takes the next axis; an index i (negative from
 * the end) keeps element i and drops the axis, a slice a:b keeps [a, b) (Python's bounds);
 * axes not subscripted are kept whole. One slice op per narrowed axis, then one reshape
 * without the indexed axes (PyTorch's basic indexing, without steps). */
static Val
slice_tensor(Ctx *c, Node *n, int x, const char *hint)
{
	const Type *t = &c->f->val[x].ty;
	char ts[MAXRANK * 24 + 8];
	int64_t st[MAXRANK], len[MAXRANK];
	uint8_t drop[MAXRANK] = { 0 };
	Type r = *t;
	int ax = 0, nop = 0, dropped = 0;
	Val v = { .k = V_TENSOR, .v = x };

	if (n->nkid > t->sh.rank)
		return err(c, n->kid->loc, "%d subscripts for %s of rank %d", n->nkid,
		           type_str(t, ts, sizeof ts), t->sh.rank);
	for (Node *s = n->kid; s; s = s->next, ax++) {
		int64_t d = t->sh.d[ax], i, b;
		if (s->kind != N_SLICE) {
			if (ieval(c, s, &i))
				return ERR;
			if (i < -d || i >= d)
				return err(c, s->loc, "index %lld is out of range for axis %d of %s", (long long)i,
				           ax, type_str(t, ts, sizeof ts));
			st[ax] = i < 0 ? i + d : i;
			len[ax] = 1;
			drop[ax] = 1;
			dropped = 1;
		} else {
			if (bound(c, s->a, d, 0, &i) || bound(c, s->b, d, d, &b))
				return ERR;
			if (b <= i)
				return err(c, s->loc, "the slice is empty: axis %d of %s has no elements in [%lld, %lld)",
				           ax, type_str(t, ts, sizeof ts), (long long)i, (long long)b);
			st[ax] = i;
			len[ax] = b - i;
		}
		nop += len[ax] != d;
	}
	nop += dropped;
	for (int k = 0; k < ax; k++) {
		int64_t ia[MAXIA] = { k, st[k] };
		if (len[k] == t->sh.d[k])
			continue;
		r.sh.d[k] = len[k];
		v = emit(c, OP_SLICE, &v.v, 1, ia, 0, NULL, &(Type){ r.dt, r.sh }, --nop ? NULL : hint,
		         n->loc);
		if (v.k == V_ERR)
			return ERR;
	}
	{
		Type q = { r.dt, { 0, { 0 } } };
		for (int k = 0; k < r.sh.rank; k++)
			if (!(k < ax && drop[k]))
				q.sh.d[q.sh.rank++] = r.sh.d[k];
		if (dropped)
			v = emit(c, OP_RESHAPE, &v.v, 1, NULL, 0, NULL, &q, hint, n->loc);
	}
	return v;
}

/* base[subscripts]: an element of a param array (one integer index), or a slice of a tensor. */
static Val
subscript(Ctx *c, Node *n, const char *hint)
{
	Val a = eval(c, n->a, NULL), i;
	int64_t k;
	const char *nm = n->a->kind == N_NAME ? n->a->name : NULL;

	if (a.k == V_ERR)
		return ERR;
	if (a.k == V_TENSOR)
		return slice_tensor(c, n, a.v, hint);
	if (a.k != V_ARRAY) {
		if (nm)
			return err(c, n->loc, "'%s' is a number and cannot be indexed", nm);
		return err(c, n->loc, "a number cannot be indexed");
	}
	if (n->nkid != 1 || n->kid->kind == N_SLICE)
		return err(c, n->kid->loc, "a param array takes one integer index, like %s[i]", nm ? nm : "w");
	i = eval(c, n->kid, NULL);
	if (int_of(c, i, n->kid->loc, &k))
		return ERR;
	if (k < 0 || k >= a.i)
		return err(c, n->kid->loc, "index %lld is out of range for param array '%s' of %lld elements",
		           (long long)k, nm ? nm : "?", (long long)a.i);
	return vten(a.v + (int)k);
}

static Val
eval1(Ctx *c, Node *n, const char *hint)
{
	Val a, b;
	int x, y;
	Type r = { F32, { 0, { 0 } } };

	switch (n->kind) {
	case N_INT:
		return vint(n->ival);
	case N_FLOAT:
		return vnum(n->fval);
	case N_NAME:
		if (!lookup(c, n->name, n->loc, &a))
			return undefined_name(c, n->loc, n->name);
		return a;
	case N_INDEX:
		return subscript(c, n, hint);
	case N_SLICE:
		die("a slice outside [ ]: the grammar allows none");
	case N_CALL:
		return call(c, n, hint);
	case N_LIST:
		return err(c, n->loc, "a list is only allowed as the axes of transpose or the shape of reshape");
	case N_KW:
		return err(c, n->loc, "a keyword argument is only allowed in a call");
	case N_NEG:
		a = eval(c, n->a, NULL);
		if (a.k == V_INT) {
			if (a.i == INT64_MIN)
				return err(c, n->loc, "integer overflow: -(%lld) does not fit in 64 bits", (long long)a.i);
			return vint(-a.i);
		}
		if (a.k == V_NUM)
			return vnum(-a.f);
		if ((x = tensor(c, a, n->a->loc, NULL)) < 0)
			return ERR;
		return emit(c, OP_NEG, &x, 1, NULL, 0, NULL, &r, hint, n->loc);
	case N_BIN:
		a = eval(c, n->a, NULL);
		b = eval(c, n->b, NULL);
		if (a.k == V_ERR || b.k == V_ERR)
			return ERR;
		if (n->op != '@' && (a.k == V_INT || a.k == V_NUM) && (b.k == V_INT || b.k == V_NUM))
			return fold(c, n, a, b);
		if ((x = tensor(c, a, n->a->loc, NULL)) < 0 || (y = tensor(c, b, n->b->loc, NULL)) < 0)
			return ERR;
		int args[2] = { x, y };
		int64_t ia[MAXIA] = { 0 };
		return emit(c, binop[n->op], args, 2, ia, n->op == '@' ? 2 : 0, NULL, &r, hint, n->loc);
	}
	return ERR;
}

Val
eval(Ctx *c, Node *n, const char *hint)
{
	Val v;

	if (c->stop)
		return ERR;
	if (++c->work > MAXWORK) {
		err(c, n->loc, "the program expands to more than %d steps (loops or calls too large)", MAXWORK);
		c->stop = 1;
		return ERR;
	}
	if (c->depth >= MAXEVAL) {
		err(c, n->loc, "expressions and calls nested more than %d deep", MAXEVAL);
		c->stop = 1;
		return ERR;
	}
	c->depth++;
	v = eval1(c, n, hint);
	c->depth--;
	return v;
}

/* ---------- built-in calls ---------- */

/* Built-ins that expand to more than one op (or none): their Builtin.k, past the op kinds. */
enum { B_FLATTEN = NOP, B_CONV2D, B_POOL, B_BATCHNORM, B_DROPOUT };

static const Builtin builtins[] = {
	{ "relu", OP_RELU, 1, { { 0 } } },
	{ "gelu", OP_GELU, 1, { { 0 } } },
	{ "tanh", OP_TANH, 1, { { 0 } } },
	{ "sigmoid", OP_SIGMOID, 1, { { 0 } } },
	{ "exp", OP_EXP, 1, { { 0 } } },
	{ "log", OP_LOG, 1, { { 0 } } },
	{ "sqrt", OP_SQRT, 1, { { 0 } } },
	{ "rsqrt", OP_RSQRT, 1, { { 0 } } },
	{ "neg", OP_NEG, 1, { { 0 } } },
	{ "pow", OP_POW, 1, { { "c", 'f', 1, 0 } } },
	{ "transpose", OP_TRANSPOSE, 1, { { "perm", 'l', 1, 0 } } },
	{ "reshape", OP_RESHAPE, 1, { { "shape", 'l', 1, 0 } } },
	{ "concat", OP_CONCAT, -1, { { "axis", 'a', 1, 0 } } },
	{ "sum", OP_SUM, 1, { { "axis", 'a', 1, 0 }, { "keepdims", 'b', 0, 0 } } },
	{ "mean", OP_MEAN, 1, { { "axis", 'a', 1, 0 }, { "keepdims", 'b', 0, 0 } } },
	{ "max", OP_MAX, 1, { { "axis", 'a', 1, 0 }, { "keepdims", 'b', 0, 0 } } },
	{ "softmax", OP_SOFTMAX, 1, { { "axis", 'a', 0, -1 } } },
	{ "log_softmax", OP_LOGSOFTMAX, 1, { { "axis", 'a', 0, -1 } } },
	{ "layernorm", OP_LAYERNORM, 3, { { "eps", 'f', 0, 1e-5 } } },
	{ "embedding", OP_EMBEDDING, 2, { { 0 } } },
	{ "cross_entropy", OP_XENT, 2, { { 0 } } },
	{ "mse", OP_MSE, 2, { { 0 } } },
	{ "clip", OP_CLIP, 1, { { "lo", 'f', 1, 0 }, { "hi", 'f', 1, 0 } } },
	{ "flatten", B_FLATTEN, 1, { { "axis", 'a', 0, 1 } } },
	{ "conv2d", B_CONV2D, 2, { { "b", 'v', 0, 0 }, { "stride", 'p', 0, 1 }, { "padding", 'p', 0, 0 },
	                           { "dilation", 'p', 0, 1 }, { "groups", 'i', 0, 1 } } },
	{ "max_pool2d", B_POOL, 1, { { "kernel", 'p', 1, 0 }, { "stride", 'p', 0, 0 }, { "padding", 'p', 0, 0 },
	                             { "dilation", 'p', 0, 1 } } },
	{ "avg_pool2d", B_POOL, 1, { { "kernel", 'p', 1, 0 }, { "stride", 'p', 0, 0 }, { "padding", 'p', 0, 0 },
	                             { "count_include_pad", 'b', 0, 1 } } },
	{ "batch_norm", B_BATCHNORM, 3, { { "eps", 'f', 0, 1e-5 }, { "momentum", 'f', 0, 0.1 } } },
	{ "dropout", B_DROPOUT, 1, { { "p", 'f', 1, 0 } } },
	{ NULL, 0, 0, { { 0 } } },
};

const Builtin inits[] = {
	{ "zeros", INIT_ZEROS, 0, { { 0 } } },
	{ "ones", INIT_ONES, 0, { { 0 } } },
	{ "full", INIT_FULL, 0, { { "v", 'f', 1, 0 } } },
	{ "normal", INIT_NORMAL, 0, { { "mean", 'f', 1, 0 }, { "std", 'f', 1, 0 } } },
	{ "uniform", INIT_UNIFORM, 0, { { "lo", 'f', 1, 0 }, { "hi", 'f', 1, 0 } } },
	{ NULL, 0, 0, { { 0 } } },
};

const Builtin optims[] = {
	{ "sgd", OPT_SGD, 0, { { "lr", 'f', 1, 0 }, { "momentum", 'f', 0, 0 } } },
	{ "adam", OPT_ADAM, 0, { { "lr", 'f', 1, 0 }, { "beta1", 'f', 0, 0.9 }, { "beta2", 'f', 0, 0.999 },
	                         { "eps", 'f', 0, 1e-8 } } },
	{ NULL, 0, 0, { { 0 } } },
};

const Builtin *
findb(const Builtin *t, const char *name)
{
	for (; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

int
isbuiltin(const char *name)
{
	return findb(builtins, name) || findb(inits, name) || findb(optims, name);
}

static int
nkws(const Builtin *b)
{
	int n = 0;
	while (n < MAXKW && b->kw[n].name)
		n++;
	return n;
}

/* Match a call's arguments to its signature: nt tensor operands (positional; nt < 0: all the
 * positional ones), then the named arguments kw, by position or by name. t[] gets the operands
 * (*ntp of them), kv[] the named ones (NULL: not given). 0, or -1 after diagnostics. */
int
bind_args(Ctx *c, Node *n, const char *what, int nt, const Kw *kw, int nkw, Node **t, int *ntp,
          Node **kv)
{
	int npos = 0, seenkw = 0, bad = 0, nreq = 0;

	for (Node *a = n->kid; a; a = a->next) {
		if (a->kind == N_KW) {
			int j;
			for (j = 0; j < nkw && strcmp(kw[j].name, a->name); j++)
				;
			seenkw = 1;
			if (j == nkw) {
				err(c, a->loc, "unknown keyword argument '%s' for %s", a->name, what);
				bad = 1;
			} else if (kv[j]) {
				err(c, a->loc, "argument '%s' of %s is given twice", a->name, what);
				bad = 1;
			} else {
				kv[j] = a->a;
			}
		} else if (seenkw) {
			err(c, a->loc, "a positional argument after keyword arguments");
			bad = 1;
		} else if (nt < 0 || npos < nt) {
			t[npos++] = a;
		} else {
			if (npos - nt < nkw)
				kv[npos - nt] = a;
			npos++;
		}
	}
	for (int j = 0; j < nkw; j++)
		nreq += kw[j].req;
	if (bad)
		return -1;
	/* a def's parameters are all required: a missing one is a wrong count */
	for (int j = 0; j < nkw; j++)
		if (kw[j].req && !kv[j] && kw[j].ty == 'v')
			npos = -1;
	if (nt >= 0 ? npos < nt || npos > nt + nkw : npos < 1) {
		int lo = (nt < 0 ? 1 : nt) + nreq, hi = nt + nkw, got = 0;
		for (Node *a = n->kid; a; a = a->next)
			got++;
		if (nt < 0)
			err(c, n->loc, "%s takes one or more operands, got none", what);
		else if (lo == hi)
			err(c, n->loc, "%s takes %d argument%s, got %d", what, hi, hi == 1 ? "" : "s", got);
		else
			err(c, n->loc, "%s takes %d to %d arguments, got %d", what, lo, hi, got);
		return -1;
	}
	for (int j = 0; j < nkw; j++)
		if (kw[j].req && !kv[j]) {
			err(c, n->loc, "%s needs the argument '%s'", what, kw[j].name);
			return -1;
		}
	if (ntp)
		*ntp = nt < 0 ? npos : nt;
	return 0;
}

/* An axis argument (or its default) for a tensor of type t, normalized to 0..rank-1. */
static int
axis_arg(Ctx *c, Node *e, double def, Loc callloc, const char *op, const Type *t, int64_t *out)
{
	char ts[MAXRANK * 24 + 8];
	int64_t a = (int64_t)def, r = t->sh.rank;

	if (e && ieval(c, e, &a))
		return -1;
	if (a < -r || a >= r) {
		err(c, e ? e->loc : callloc, "axis %lld is out of range for %s of %s (rank %lld)",
		    (long long)a, op, type_str(t, ts, sizeof ts), (long long)r);
		return -1;
	}
	*out = a < 0 ? a + r : a;
	return 0;
}

/* An integer list [a, b, ...] into v (at most MAXRANK elements). */
static int
list_arg(Ctx *c, Node *e, const char *what, int64_t *v, int *n)
{
	int k = 0, bad = 0;

	if (e->kind != N_LIST) {
		err(c, e->loc, "%s needs a list of integers, like [0, 1]", what);
		return -1;
	}
	if (e->nkid > MAXRANK) {
		err(c, e->loc, "%s: a list of %d elements exceeds the rank limit of %d", what, e->nkid, MAXRANK);
		return -1;
	}
	for (Node *x = e->kid; x; x = x->next, k++)
		bad |= ieval(c, x, &v[k]);
	*n = k;
	return bad ? -1 : 0;
}

/* reshape's target: positive dimensions and at most one -1, which takes what is left. */
static int
reshape_type(Ctx *c, Node *e, const Type *in, Type *r)
{
	char ts[MAXRANK * 24 + 8];
	int64_t d[MAXRANK], prod = 1, total = 1;
	int n, hole = -1, k = 0;

	if (list_arg(c, e, "reshape", d, &n))
		return -1;
	for (Node *x = e->kid; x; x = x->next, k++) {
		if (d[k] == -1 && hole < 0) {
			hole = k;
			continue;
		}
		if (d[k] == -1) {
			err(c, x->loc, "reshape allows at most one -1");
			return -1;
		}
		if (d[k] <= 0) {
			err(c, x->loc, "a reshape dimension must be positive or -1, got %lld", (long long)d[k]);
			return -1;
		}
		if (mul64(prod, d[k], &prod)) {
			err(c, e->loc, "the element count of the reshape overflows 64 bits");
			return -1;
		}
	}
	for (int i = 0; i < in->sh.rank; i++)
		total *= in->sh.d[i];           /* checked when the operand was made */
	if (hole >= 0) {
		if (total % prod) {
			err(c, e->loc, "-1 does not divide: %s has %lld elements, not a multiple of %lld",
			    type_str(in, ts, sizeof ts), (long long)total, (long long)prod);
			return -1;
		}
		d[hole] = total / prod;
	}
	r->dt = in->dt;
	r->sh.rank = n;
	memcpy(r->sh.d, d, n * sizeof *d);
	return 0;
}

/* sum or mean over the axes of a list (distinct, negative from the end): one sum per axis,
 * the highest axis first so the others keep their numbers, then for mean one division by
 * the number of elements summed. */
static Val
reduce_axes(Ctx *c, Node *n, const Builtin *b, int x, Node **kv, const char *hint)
{
	const Type *t = &c->f->val[x].ty;
	int64_t ax[MAXRANK], keep = 0, cnt = 1;
	int na, seen[MAXRANK] = { 0 };
	Val v = { .k = V_TENSOR, .v = x };
	Node *e = kv[0]->kid;

	if (kv[1] && ieval(c, kv[1], &keep))
		return ERR;
	if (keep != 0 && keep != 1)
		return err(c, kv[1]->loc, "keepdims must be 0 or 1, got %lld", (long long)keep);
	if (list_arg(c, kv[0], b->name, ax, &na))
		return ERR;
	if (na == 0)
		return err(c, kv[0]->loc, "%s needs at least one axis", b->name);
	for (int i = 0; i < na; i++, e = e->next) {
		char ts[MAXRANK * 24 + 8];
		if (ax[i] < -t->sh.rank || ax[i] >= t->sh.rank)
			return err(c, e->loc, "axis %lld is out of range for %s of %s (rank %d)",
			           (long long)ax[i], b->name, type_str(t, ts, sizeof ts), t->sh.rank);
		if (ax[i] < 0)
			ax[i] += t->sh.rank;
		if (seen[ax[i]]++)
			return err(c, e->loc, "axis %lld is given twice", (long long)ax[i]);
		cnt *= t->sh.d[ax[i]];
	}
	for (int a = t->sh.rank - 1, left = na; a >= 0; a--) {
		Type r = { F32, { 0, { 0 } } };
		int64_t ia[MAXIA] = { a, keep };
		if (!seen[a])
			continue;
		left--;
		v = emit(c, OP_SUM, &v.v, 1, ia, 2, NULL, &r, !left && b->k == OP_SUM ? hint : NULL, n->loc);
		if (v.k == V_ERR)
			return ERR;
	}
	if (b->k == OP_MEAN) {
		Type r = { F32, { 0, { 0 } } };
		int d[2] = { v.v, tensor(c, vnum((double)cnt), n->loc, NULL) };
		if (d[1] < 0)
			return ERR;
		v = emit(c, OP_DIV, d, 2, NULL, 0, NULL, &r, hint, n->loc);
	}
	return v;
}

/* flatten(x, axis): PyTorch's flatten(x, start_dim = axis): the axes from axis on merged
 * into one (a reshape; x itself when nothing merges). */
static Val
flatten(Ctx *c, Node *n, int x, Node *axis, const char *hint)
{
	const Type *t = &c->f->val[x].ty;
	Type r = *t;
	int64_t a = 1;

	if (t->sh.rank == 0) {
		r.sh.rank = 1;
		r.sh.d[0] = 1;
		return emit(c, OP_RESHAPE, &x, 1, NULL, 0, NULL, &r, hint, n->loc);
	}
	if (axis_arg(c, axis, 1, n->loc, "flatten", t, &a))
		return ERR;
	if (a == t->sh.rank - 1)
		return (Val){ .k = V_TENSOR, .v = x };
	r.sh.rank = (int)a + 1;
	r.sh.d[a] = shape_numel(&t->sh);
	for (int k = 0; k < a; k++)
		r.sh.d[a] /= t->sh.d[k];
	return emit(c, OP_RESHAPE, &x, 1, NULL, 0, NULL, &r, hint, n->loc);
}

static Val
builtin_call(Ctx *c, Node *n, const Builtin *b, const char *hint)
{
	Node *kv[MAXKW] = { 0 }, **t = xcalloc(n->nkid + 1, sizeof *t);
	int nt = 0, *args = NULL, bad = 0, nia;
	int64_t ia[MAXIA] = { 0 };
	double fa[MAXFA] = { 0 };
	Type r = { F32, { 0, { 0 } } };
	const Type *t0;
	int k = b->k;       /* an Opk, or a B_ kind past them */
	Val v = ERR;

	if (bind_args(c, n, b->name, b->nt, b->kw, nkws(b), t, &nt, kv))
		goto out;
	args = xcalloc(nt, sizeof *args);
	for (int i = 0; i < nt; i++)
		if ((args[i] = tensor(c, eval(c, t[i], NULL), t[i]->loc, NULL)) < 0)
			bad = 1;
	if (bad)
		goto out;
	t0 = &c->f->val[args[0]].ty;
	nia = k < NOP ? op_niattr(k) : 0;
	switch (k) {
	case OP_POW:
		bad = neval(c, kv[0], &fa[0]);
		break;
	case OP_TRANSPOSE:
		bad = list_arg(c, kv[0], "transpose", ia, &nia);
		for (int i = 0; !bad && i < nia; i++)
			if (ia[i] < 0 && ia[i] >= -t0->sh.rank)
				ia[i] += t0->sh.rank;
		break;
	case OP_RESHAPE:
		bad = reshape_type(c, kv[0], t0, &r);
		break;
	case OP_CONCAT:
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
		bad = axis_arg(c, kv[0], b->kw[0].def, n->loc, b->name, t0, &ia[0]);
		break;
	case OP_SUM:
	case OP_MEAN:
		if (kv[0] && kv[0]->kind == N_LIST) {
			v = reduce_axes(c, n, b, args[0], kv, hint);
			goto out;
		}
		/* fall through */
	case OP_MAX:
		bad = axis_arg(c, kv[0], 0, n->loc, b->name, t0, &ia[0]);
		if (!bad && kv[1] && !(bad = ieval(c, kv[1], &ia[1])) && ia[1] != 0 && ia[1] != 1) {
			err(c, kv[1]->loc, "keepdims must be 0 or 1, got %lld", (long long)ia[1]);
			bad = 1;
		}
		break;
	case OP_LAYERNORM:
		fa[0] = b->kw[0].def;
		if (kv[0])
			bad = neval(c, kv[0], &fa[0]);
		break;
	case OP_CLIP:
		bad = neval(c, kv[0], &fa[0]) | neval(c, kv[1], &fa[1]);
		break;
	case B_FLATTEN:
		v = flatten(c, n, args[0], kv[0], hint);
		goto out;
	case B_CONV2D:
		v = nn_conv2d(c, n, args, kv, hint);
		goto out;
	case B_POOL:
		v = nn_pool2d(c, n, b->name[0] == 'm' ? OP_MAXPOOL : OP_AVGPOOL, args[0], kv, hint);
		goto out;
	case B_BATCHNORM:
		v = nn_batchnorm(c, n, args, kv, hint);
		goto out;
	case B_DROPOUT:
		v = nn_dropout(c, n, args[0], kv, hint);
		goto out;
	default:
		break;
	}
	if (!bad)
		v = emit(c, k, args, nt, ia, nia, fa, &r, hint, n->loc);
out:
	free(t);
	free(args);
	return v;
}

/* "undefined function": with the closest built-in or def. */
static Val
undefined_function(Ctx *c, Node *n)
{
	const char **l = NULL, *near;
	int k = 0, cap = 0;

	keys(&c->defs, &l, &k, &cap);
	keys(&c->imports, &l, &k, &cap);
	for (const Builtin *b = builtins; b->name; b++) {
		if (k == cap)
			l = xrealloc(l, (cap = cap ? 2 * cap : 64) * sizeof *l);
		l[k++] = b->name;
	}
	near = nearest(n->name, l, k);
	free(l);
	if (near)
		return err(c, n->loc, "undefined function '%s'; did you mean '%s'?", n->name, near);
	return err(c, n->loc, "undefined function '%s'", n->name);
}

static Val
call(Ctx *c, Node *n, const char *hint)
{
	const Builtin *b;
	Ent *d = mget(&c->defs, n->name);
	Val v;

	if (!c->f)
		return err(c, n->loc, "a call is not allowed in a constant expression");
	if (d)
		return inline_def(c, n, d, hint);
	if ((d = mget(&c->imports, n->name))) {
		(void)hint;         /* an imported graph names its values itself */
		return import_call(c, n, d, &v, 1) ? ERR : v;
	}
	if ((b = findb(builtins, n->name)))
		return builtin_call(c, n, b, hint);
	if (findb(inits, n->name))
		return err(c, n->loc, "'%s' is only allowed as a param initializer", n->name);
	if (findb(optims, n->name))
		return err(c, n->loc, "'%s' is only allowed in a train statement", n->name);
	if (lookup(c, n->name, n->loc, &v))
		return err(c, n->loc, "'%s' is not a function", n->name);
	return undefined_function(c, n);
}
