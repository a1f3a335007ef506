/* onnxcall.c: one expansion of an ONNX graph into IR ops, for a tdsl call of an import or for
 * `mtc MODEL.onnx`.
 *
 * needs: a checked graph (onnx.c), the arguments' values, the function to append to.
 * fills: ops of phase fwd for the graph's nodes, the outputs' values, and pending params
 *        (OnnxDecls) for the initializers the ops read, each initialised from the file.
 *
 * Nodes run in graph order, each in one of three ways. Every input known at import time
 * (Constant values, integer initializers, shapes): the node folds (onnxfold.c's tensors), so
 * the shape arithmetic exporters write never reaches the IR. Inputs that are float
 * initializers, or known values made from them: the node waits, and runs when a later node
 * asks for its output, folded where a value must be known (a mask compared at import time)
 * or as IR ops where a tensor is needed (a transposed weight, which must stay a function of
 * the trained param). Otherwise the node becomes IR ops now (onnxops.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "onnxint.h"
#include "passes.h"

/* ---------- names ---------- */

/* An ONNX name as an IR name: [A-Za-z0-9_.] kept, '/' becomes '.' (a leading one dropped),
 * anything else '_': "/layers.0/Add_output_0" is layers.0.Add_output_0. */
static char *
irname(Arena *a, const char *prefix, const char *s)
{
	size_t n = strlen(prefix), k = n;
	char *r = aalloc(a, n + strlen(s) + 2);

	memcpy(r, prefix, n);
	if (*s == '/')
		s++;
	if (n)
		r[k++] = '.';
	for (; *s; s++)
		r[k++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		         *s == '_' || *s == '.' ? *s : *s == '/' ? '.' : '_';
	if (k == n + (n != 0))
		r[k++] = '_';
	r[k] = 0;
	return r;
}

/* ---------- messages ---------- */

int
xerr(Ox *x, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	x->bad = 1;
	return ox_error(x->o, x->nd, "%s", msg);
}

int64_t
att_i(Ox *x, const char *name, int64_t def)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, name);
	return a && a->has_i ? a->i : def;
}

double
att_f(Ox *x, const char *name, double def)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, name);
	return a && a->has_f ? a->f : def;
}

int
att_is(Ox *x, const char *name, const char *def, const char *s)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, name);
	size_t n = strlen(s);

	if (!a || !a->has_s)
		return strcmp(def, s) == 0;
	return a->s.len == n && memcmp(a->s.data, s, n) == 0;
}

int
att_ints(Ox *x, const char *name, int64_t *v, int max)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, name);

	if (!a || (!a->n_ints && a->has_type && a->type != 7))
		return -1;
	if (a->n_ints > (size_t)max)
		return -2;
	if (a->n_ints)     /* an empty list may come with ints == NULL */
		memcpy(v, a->ints, a->n_ints * sizeof *v);
	return (int)a->n_ints;
}

int
axis_of(Ox *x, int64_t a, int r)
{
	if (a < -r || a >= r || (r == 0 && a != 0))
		return xerr(x, "axis %lld is out of range for rank %d", (long long)a, r);
	return (int)(a < 0 ? a + r : a);
}

/* ---------- values ---------- */

static const char *
vn(const Ox *x, int id)
{
	return x->o->name[id];
}

static int run(Ox *, int n, int fold);

typedef struct OxConst {
	uint64_t hash;
	Type ty;
	const void *vals;
	int v;
} OxConst;

/* The decls made so far belong to function pf: a new function starts afresh. */
static void
own(Onnx *o, const Func *f)
{
	if (o->pf == f)
		return;
	for (int i = 0; i < o->ninit; i++)
		o->pval[i] = -1;
	o->ncst = 0;
	o->pf = f;
}

/* A pending decl: value v stands for it until onnx_declare. */
static void
pending(OnnxDecls *d, int v, Role role, Init in, Loc loc)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 16;
		d->val = xrealloc(d->val, d->cap * sizeof *d->val);
		d->role = xrealloc(d->role, d->cap * sizeof *d->role);
		d->init = xrealloc(d->init, d->cap * sizeof *d->init);
		d->loc = xrealloc(d->loc, d->cap * sizeof *d->loc);
	}
	d->val[d->n] = v;
	d->role[d->n] = role;
	d->init[d->n] = in;
	d->loc[d->n++] = loc;
}

int
xknown(Ox *x, const Kv *k, const char *name)
{
	OnnxCall *c = x->c;
	Onnx *o = x->o;
	Type ty = { k->dt == KF ? F32 : I32, k->sh };
	uint64_t h = 14695981039346656037ull;
	size_t bytes = (size_t)k->n * 4;
	OxConst *e;
	void *vals;
	int v;

	if (x->bad)
		return -1;
	if (k->n == 0)
		return xerr(x, "'%s' has no elements", name);
	if (k->dt == KF && kv_uniform(k))
		return xconst(x, k->f[0], &k->sh);
	own(o, c->f);
	vals = aalloc(c->m->arena, bytes);
	for (int64_t i = 0; i < k->n; i++)
		if (k->dt == KF) {
			((float *)vals)[i] = k->f[i];
		} else if (k->i[i] < INT32_MIN || k->i[i] > INT32_MAX) {
			return xerr(x, "'%s' holds %lld, which does not fit in i32", name, (long long)k->i[i]);
		} else {
			((int32_t *)vals)[i] = (int32_t)k->i[i];
		}
	for (size_t i = 0; i < bytes; i++)
		h = (h ^ ((const unsigned char *)vals)[i]) * 1099511628211ull;
	for (int i = 0; i < o->ncst; i++) {
		e = &o->cst[i];
		if (e->hash == h && e->ty.dt == ty.dt && shape_eq(&e->ty.sh, &ty.sh) &&
		    (bytes == 0 || memcmp(e->vals, vals, bytes) == 0))
			return e->v;
	}
	v = func_value(c->f, irname(c->m->arena, c->prefix, name), ty);
	c->f->val[v].loc = c->loc;
	pending(c->decls, v, R_STATE, (Init){ .kind = INIT_VALUES, .vals = vals }, c->loc);
	if (o->ncst == o->capcst)
		o->cst = xrealloc(o->cst, (o->capcst = o->capcst ? 2 * o->capcst : 8) * sizeof *o->cst);
	o->cst[o->ncst++] = (OxConst){ h, ty, vals, v };
	return v;
}

/* A float initializer as a param (or a buffer: role): a value standing for it until
 * onnx_declare. */
static int
param(Ox *x, int ii, Role role)
{
	Onnx *o = x->o;
	OxInit *in = &o->init[ii];
	OnnxCall *c = x->c;
	char *nm;
	int v;

	own(o, c->f);
	if (o->pval[ii] >= 0 && o->prole[ii] != role)
		return xerr(x, "initializer '%s' is read both as a weight and as a batch norm's running "
		            "statistic", in->name);
	if (o->pval[ii] >= 0)
		return o->pval[ii];
	if (in->n == 0)
		return xerr(x, "initializer '%s' has no elements and cannot be a param", in->name);
	if (!in->file)
		return xerr(x, "initializer '%s': its float data is stored in pieces that mtc cannot "
		            "refer to; save the model with raw_data (as torch.onnx.export does)", in->name);
	nm = irname(c->m->arena, c->prefix, in->name);
	if (func_find(c->f, nm) >= 0)
		return xerr(x, "initializer '%s' would be param '%s', a name already taken", in->name, nm);
	v = func_value(c->f, nm, (Type){ F32, in->sh });
	c->f->val[v].loc = c->loc;
	pending(c->decls, v, role,
	        (Init){ .kind = INIT_FILE, .file = astrdup(c->m->arena, in->file), .off = in->off }, c->loc);
	o->prole[ii] = role;
	return o->pval[ii] = v;
}

/* Does initializer ii hold an infinity or a NaN (read where param() will point its decl)? */
static int
nonfinite(const Onnx *o, const OxInit *in)
{
	enum { CHUNK = 1 << 14 };
	float f[CHUNK];
	FILE *fp = NULL;
	int bad = 0;

	if (!in->file)
		return 0;
	if (in->ext && (!(fp = fopen(in->file, "rb")) || fseeko(fp, (off_t)in->off, SEEK_SET))) {
		if (fp)
			fclose(fp);
		return 0;       /* unreadable: the module's build says so */
	}
	for (int64_t i = 0; i < in->n && !bad; i += CHUNK) {
		size_t k = (size_t)(in->n - i < CHUNK ? in->n - i : CHUNK);
		if (fp) {
			if (fread(f, 4, k, fp) != k)
				break;
		} else {
			memcpy(f, o->buf + in->off + 4 * i, 4 * k);
		}
		for (size_t j = 0; j < k && !bad; j++)
			bad = !isfinite(f[j]);
	}
	if (fp)
		fclose(fp);
	return bad;
}

/* What a float initializer read as a tensor becomes: a param, or a buffer where the caller
 * froze it (onnx_freeze) or it holds an infinity or a NaN (an additive mask, as
 * nn.Transformer.generate_square_subsequent_mask's, registered as a buffer: trained, its
 * zeros would move). */
static Role
weight_role(Ox *x, int ii)
{
	Onnx *o = x->o;

	if (!o->frozen[ii])
		o->frozen[ii] = nonfinite(o, &o->init[ii]) ? 2 : 3;
	return o->frozen[ii] == 3 ? R_PARAM : R_BUFFER;
}

/* Is op type `op`, on values made from initializers alone, a table PyTorch computes from a
 * buffer? Sin and Cos of the positions' angles: rotary embeddings' inv_freq, a buffer that the
 * export writes as it does a param, trained by mtc unless frozen, and so not PyTorch's. The
 * import refuses it unfrozen (a param learned through a sine table is rarer than a forgotten
 * freeze). Comparisons, Floor and Ceil of a param fold (no gradient flows through them): a
 * mask made so (a tril buffer compared with 0) folds, as before freezing existed. */
static int
table_op(const char *op)
{
	return strcmp(op, "Sin") == 0 || strcmp(op, "Cos") == 0;
}

/* The values of an ONNX value, known at import time; NULL after an error. */
static Kv *
want_k(Ox *x, int id)
{
	Xv *v = &x->x[id];
	int ii = x->o->initof[id];

	if (v->k)
		return v->k;
	if (ii >= 0)
		return v->k = kv_tensor(x->o, x->nd, x->o->init[ii].t, x->a);
	if (v->wait && run(x, x->o->defnode[id], 1) == 0 && v->k)
		return v->k;
	if (!x->bad)
		xerr(x, "input '%s' must be known at import time here (a shape, an axis, indices), but "
		     "it is computed at run time: a shape that cannot be made static", vn(x, id));
	return NULL;
}

/* An ONNX value as an IR value; -1 after an error. */
static int
want_t(Ox *x, int id)
{
	Xv *v = &x->x[id];
	int ii = x->o->initof[id];
	Kv *k;

	if (v->v >= 0)
		return v->v;
	if (ii >= 0 && x->o->init[ii].dt == DT_FLOAT)
		return v->v = param(x, ii, weight_role(x, ii));
	if (v->wait && v->trained && table_op(x->o->node[x->o->defnode[id]].op))
		return xerr(x, "input '%s' is computed by %s from float initializers alone, one of them "
		            "trained (a param): PyTorch makes such a table from a buffer (rotary "
		            "embeddings' inv_freq), which an export cannot tell from a param; freeze it "
		            "(import \"...\" as NAME frozen \"INITIALIZER\";)", vn(x, id),
		            x->o->node[x->o->defnode[id]].op);
	if (v->wait) {
		const OxOp *op = ox_op(x->o->node[x->o->defnode[id]].op);
		if (op->emit) {
			if (run(x, x->o->defnode[id], 0))
				return -1;
			if (v->v >= 0)
				return v->v;
		}
	}
	if (!(k = want_k(x, id)))
		return -1;
	return v->v = xknown(x, k, vn(x, id));
}

int
has_in(Ox *x, int i)
{
	return i < x->nd->nin && x->nd->in[i] >= 0;
}

static int
in_id(Ox *x, int i)
{
	if (!has_in(x, i))
		return xerr(x, "input %d is missing", i + 1);
	return x->nd->in[i];
}

int
in_t(Ox *x, int i)
{
	int id = in_id(x, i);
	return id < 0 ? -1 : want_t(x, id);
}

int
in_buffer(Ox *x, int i)
{
	int id = in_id(x, i), ii;

	if (id < 0)
		return -1;
	if ((ii = x->o->initof[id]) < 0 || x->o->init[ii].dt != DT_FLOAT)
		return xerr(x, "input '%s' must be a float initializer (a running statistic)", vn(x, id));
	return param(x, ii, R_BUFFER);
}

Kv *
in_k(Ox *x, int i)
{
	int id = in_id(x, i);
	return id < 0 ? NULL : want_k(x, id);
}

int
in_type(Ox *x, int i, Type *t)
{
	int id = in_id(x, i), ii;
	Xv *v;

	if (id < 0)
		return -1;
	v = &x->x[id];
	ii = x->o->initof[id];
	if (v->v >= 0) {
		*t = x->c->f->val[v->v].ty;
		return 0;
	}
	if (ii >= 0) {
		t->dt = x->o->init[ii].dt == DT_FLOAT || x->o->init[ii].dt == DT_DOUBLE ? F32 : I32;
		t->sh = x->o->init[ii].sh;
		return 0;
	}
	if (!v->k && v->wait && ox_op(x->o->node[x->o->defnode[id]].op)->emit)
		return want_t(x, id) < 0 ? -1 : in_type(x, i, t);
	if (!v->k && !want_k(x, id))
		return -1;
	t->dt = v->k->dt == KF ? F32 : I32;
	t->sh = v->k->sh;
	return 0;
}

void
out_t(Ox *x, int j, int v)
{
	if (j < x->nd->nout && x->nd->out[j] >= 0) {
		x->x[x->nd->out[j]].v = v;
		x->x[x->nd->out[j]].made = 1;
	}
}

void
out_k(Ox *x, int j, Kv *k)
{
	if (j < x->nd->nout && x->nd->out[j] >= 0) {
		x->x[x->nd->out[j]].k = k;
		x->x[x->nd->out[j]].made = 1;
	}
}

/* ---------- ops ---------- */

int
xemit(Ox *x, Opk k, const int *args, int nargs, const int64_t *ia, int nia, const double *fa,
     const Type *given)
{
	OnnxCall *c = x->c;
	Type r = given ? *given : (Type){ F32, { 0, { 0 } } };
	char e[512], ts[MAXRANK * 24 + 8];
	int none = -1, o;

	if (x->bad)
		return -1;
	for (int i = 0; i < nargs; i++)
		if (args[i] < 0)
			return -1;
	if (c->f->nop >= c->maxops)
		return xerr(x, "the model expands to more than %d ops", c->maxops);
	if (!args)
		args = &none;
	if (op_infer(c->f, k, args, nargs, ia, nia, fa, &r, e, sizeof e))
		return xerr(x, "%s", e);
	{                       /* a shape from the file may be absurd: checked without overflow */
		int64_t n = 1;
		for (int i = 0; i < r.sh.rank; i++)
			if (r.sh.d[i] < 1 || mul64(n, r.sh.d[i], &n) || n > MAXBYTES / 4)
				return xerr(x, "a result of type %s %s", type_str(&r, ts, sizeof ts),
				            r.sh.d[i] < 1 ? "has an empty dimension" :
				            "exceeds the target's memory outright");
	}
	o = func_op(c->f, k, PH_FWD, args, nargs, ia, nia, fa, &r,
	            x->nd && x->nd->nout && x->nd->out[0] >= 0 ?
	            irname(x->a, c->prefix, vn(x, x->nd->out[0])) : NULL, c->loc);
	return c->f->op[o].res;
}

int
xemit1(Ox *x, Opk k, int a)
{
	return xemit(x, k, &a, 1, NULL, 0, NULL, NULL);
}

int
xemit2(Ox *x, Opk k, int a, int b)
{
	int v[2] = { a, b };
	return xemit(x, k, v, 2, NULL, 0, NULL, NULL);
}

int
xconst(Ox *x, double v, const Shape *sh)
{
	Type t = { F32, *sh };
	double fa[MAXFA] = { v };
	return xemit(x, OP_CONST, NULL, 0, NULL, 0, fa, &t);
}

int
xoneminus(Ox *x, int v)
{
	const Shape one = { 0, { 0 } };

	return xemit2(x, OP_SUB, xconst(x, 1, &one), v);
}

int
xreshape(Ox *x, int a, const Shape *sh)
{
	Type t;

	if (a < 0)
		return -1;
	t.dt = x->c->f->val[a].ty.dt;
	t.sh = *sh;
	if (shape_eq(&x->c->f->val[a].ty.sh, sh))
		return a;
	return xemit(x, OP_RESHAPE, &a, 1, NULL, 0, NULL, &t);
}

/* ---------- nodes ---------- */

/* Run node n now: fold it (every input known) or emit it. 0, or -1 after an error. */
static int
run(Ox *x, int n, int fold)
{
	const OxNode *nd = &x->o->node[n], *save = x->nd;
	const OxOp *op = ox_op(nd->op);
	int rc;

	if (x->bad)
		return -1;
	x->nd = nd;
	if (++x->depth > MAXCHAIN) {
		x->depth = 0;
		rc = xerr(x, "more than %d nodes wait on one another (initializers feeding a chain of "
		          "ops)", MAXCHAIN);
	} else {
		rc = fold ? op->fold(x) : op->emit(x);
		x->depth--;
		if (!rc && !fold && op->moves && nd->nin && nd->in[0] >= 0)
			for (int j = 0; j < nd->nout; j++)
				if (nd->out[j] >= 0) {
					x->x[nd->out[j]].boolean |= x->x[nd->in[0]].boolean;
					x->x[nd->out[j]].count = x->x[nd->in[0]].count;
				}
	}
	x->nd = save;
	return rc || x->bad ? -1 : 0;
}

/* Node n in graph order: fold, wait or emit (the file's comment). */
static int
step(Ox *x, int n)
{
	const OxNode *nd = &x->o->node[n];
	const OxOp *op = ox_op(nd->op);
	int known = 1, param = 0, trained = 0, late = -1;

	x->nd = nd;
	if (!op)
		return xerr(x, "this op is not supported by mtc (docs/onnx.md lists the ones it imports)");
	for (int i = 0; i < nd->nin; i++) {
		int id = nd->in[i];
		Xv *v;
		if (id < 0)
			continue;
		v = &x->x[id];
		if (!v->made)
			return xerr(x, "input '%s' is an output that mtc does not compute", vn(x, id));
		if (!v->k && !v->wait && x->o->initof[id] < 0 && late < 0)
			known = 0, late = id;
		param |= v->param;
		trained |= v->trained;
	}
	x->nd = NULL;
	if (op->typeonly || (op->fold && known && !param))
		return run(x, n, 1);
	if (op->fold && known) {
		for (int j = 0; j < nd->nout; j++)
			if (nd->out[j] >= 0) {
				Xv *v = &x->x[nd->out[j]];
				v->made = v->wait = v->param = 1;
				v->trained = (uint8_t)trained;
			}
		return 0;
	}
	if (!op->emit) {
		x->nd = nd;
		return xerr(x, "every input must be known at import time, but '%s' is computed at run "
		            "time", vn(x, late));
	}
	return run(x, n, 0);
}

/* The arguments against the graph's inputs: dtypes, ranks, fixed dims, and symbolic dims
 * bound consistently. 0, or -1 after a diagnostic at the call. */
static int
bind(Ox *x)
{
	const Onnx *o = x->o;
	OnnxCall *c = x->c;
	const char *sym[MAXRANK * 16];
	int64_t val[MAXRANK * 16];
	int nsym = 0;
	char a[MAXRANK * 24 + 8];

	for (int i = 0; i < o->nin; i++) {
		const OxIn *in = &o->in[i];
		const Type *t = &c->f->val[c->args[i]].ty;
		DType want = in->dt == DT_FLOAT ? F32 : I32;
		const char *what = asprintf_a(x->a, "argument %d of '%s' (graph input '%s')", i + 1,
		                              c->prefix, o->name[in->id]);
		if (t->dt != want || (in->rank >= 0 && t->sh.rank != in->rank)) {
			if (in->rank >= 0)
				diag(c->src, c->loc, "%s is %s; the graph takes %s of rank %d", what,
				     type_str(t, a, sizeof a), dtype_name(want), in->rank);
			else
				diag(c->src, c->loc, "%s is %s; the graph takes %s", what, type_str(t, a, sizeof a),
				     dtype_name(want));
			return -1;
		}
		for (int k = 0; k < in->rank; k++) {
			int s;
			if (in->d[k] > 0 && in->d[k] != t->sh.d[k]) {
				diag(c->src, c->loc, "%s is %s; the graph fixes its dimension %d to %lld", what,
				     type_str(t, a, sizeof a), k, (long long)in->d[k]);
				return -1;
			}
			if (!in->sym[k])
				continue;
			for (s = 0; s < nsym && strcmp(sym[s], in->sym[k]); s++)
				;
			if (s < nsym && val[s] != t->sh.d[k]) {
				diag(c->src, c->loc, "%s is %s, but the graph's dimension '%s' is %lld in an "
				     "earlier argument", what, type_str(t, a, sizeof a), in->sym[k], (long long)val[s]);
				return -1;
			}
			if (s == nsym && nsym < MAXRANK * 16) {
				sym[nsym] = in->sym[k];
				val[nsym++] = t->sh.d[k];
			}
		}
		x->x[in->id].v = c->args[i];
		x->x[in->id].made = 1;
	}
	return 0;
}

int
onnx_call(Onnx *o, OnnxCall *c)
{
	Ox x = { .o = o, .c = c };
	int rc = 0;

	if (c->nargs != o->nin)
		die("onnx_call with %d arguments for %d inputs", c->nargs, o->nin);
	x.a = arena_new();
	x.x = xcalloc(o->nname + 1, sizeof *x.x);
	for (int id = 0; id < o->nname; id++) {
		x.x[id].v = -1;
		if (o->initof[id] >= 0) {
			x.x[id].made = 1;
			x.x[id].param = o->init[o->initof[id]].dt == DT_FLOAT;
			x.x[id].trained = x.x[id].param && o->frozen[o->initof[id]] != 1 && !c->fwdonly;
		}
	}
	if (bind(&x)) {
		rc = -1;
		goto out;
	}
	for (int n = 0; n < o->nnode && !x.bad; n++)
		if (step(&x, n))
			x.bad = 1;
	x.nd = NULL;
	for (int i = 0; i < o->nout && !x.bad; i++) {
		int id = o->out[i];
		if (!x.x[id].made) {
			ox_error(o, NULL, "graph output '%s' is an output that mtc does not compute", o->name[id]);
			x.bad = 1;
		} else if ((c->res[i] = want_t(&x, id)) >= 0 && c->f->val[c->res[i]].ty.dt != F32 &&
		           c->f->val[c->res[i]].ty.dt != I32) {
			x.bad = 1;
		}
	}
	if (x.bad) {
		rc = -1;
		if (c->src && c->src != o->err) {
			c->src->nerr++;
			note(c->src, c->loc, "in the call of '%s' here", c->prefix);
		}
	}
out:
	free(x.x);
	arena_free(x.a);
	return rc;
}

/* ---------- decls ---------- */

void
onnx_declare(Func *f, OnnxDecls *d)
{
	Module *m = f->mod;

	if (d->n) {
		m->fwd = NULL;      /* mod_decl takes decls only before functions exist */
		for (int i = 0; i < d->n; i++) {
			const Value *v = &f->val[d->val[i]];
			int k = mod_decl(m, v->name, d->role[i], v->ty, d->init[i], d->loc[i]);
			f->val[d->val[i]].decl = k;
		}
		m->fwd = f;
		func_adopt(f, func_rebuild(f, NULL, NULL));
	}
	onnx_decls_free(d);
}

void
onnx_decls_free(OnnxDecls *d)
{
	free(d->val);
	free(d->role);
	free(d->init);
	free(d->loc);
	memset(d, 0, sizeof *d);
}

/* ---------- mtc MODEL.onnx ---------- */

/* The module's name: the file's, without directories and .onnx, as a C identifier. */
static char *
model_name(Arena *a, const char *path)
{
	const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(b);
	char *r;

	if (n > 5 && strcmp(b + n - 5, ".onnx") == 0)
		n -= 5;
	r = aalloc(a, n + 2);
	for (size_t i = 0, k = 0; i < n; i++)
		r[k++] = (b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') || b[i] == '_' ||
		         (i && b[i] >= '0' && b[i] <= '9') ? b[i] : '_';
	if (!n)
		strcpy(r, "model");
	return r;
}

/* -D NAME=INT for a symbolic dimension; 0 with *v, or -1. */
static int
define(const FeOpts *fo, const char *name, int64_t *v)
{
	size_t n = strlen(name);

	for (int i = 0; fo && i < fo->ndefines; i++)
		if (strncmp(fo->defines[i], name, n) == 0 && fo->defines[i][n] == '=') {
			char *e;
			long long x = strtoll(fo->defines[i] + n + 1, &e, 10);
			if (*e || x <= 0)
				return -1;
			*v = x;
			return 0;
		}
	return -1;
}

Module *
onnx_compile(Src *src, const FeOpts *fo)
{
	Onnx *o = onnx_open(src->name, src->text ? src->text : "", src->len, src);
	OnnxDecls decls = { 0 };
	OnnxCall c = { 0 };
	Module *m;
	Arena *a;
	int *args, *res, ndropout = 0;

	if (!o)
		return NULL;
	a = arena_new();
	m = mod_new(model_name(a, src->name), src->name);
	args = xcalloc(o->nin + 1, sizeof *args);
	res = xcalloc(o->nout + 1, sizeof *res);
	for (int i = 0; i < o->nin; i++) {
		const OxIn *in = &o->in[i];
		Type t = { in->dt == DT_FLOAT ? F32 : I32, { in->rank, { 0 } } };
		if (in->rank < 0) {
			diag(src, (Loc){ 0, 0 }, "graph input '%s' has no shape; mtc needs one to compile the "
			     "graph alone", o->name[in->id]);
			continue;
		}
		for (int k = 0; k < in->rank; k++) {
			t.sh.d[k] = in->d[k];
			if (in->d[k] > 0)
				continue;
			if (!in->sym[k])
				diag(src, (Loc){ 0, 0 }, "graph input '%s': dimension %d has no size", o->name[in->id], k);
			else if (define(fo, in->sym[k], &t.sh.d[k]))
				diag(src, (Loc){ 0, 0 }, "graph input '%s': dimension %d is '%s'; give its size "
				     "with -D %s=N", o->name[in->id], k, in->sym[k], in->sym[k]);
		}
		if (!src->nerr) {       /* the file's sizes, checked without overflow */
			int64_t n = 1;
			for (int k = 0; k < in->rank; k++)
				if (mul64(n, t.sh.d[k], &n) || n > MAXBYTES / 4) {
					diag(src, (Loc){ 0, 0 }, "graph input '%s' exceeds the target's memory outright",
					     o->name[in->id]);
					break;
				}
		}
		if (!src->nerr)
			args[i] = mod_decl(m, irname(a, "", o->name[in->id]), R_INPUT, t,
			                   (Init){ .kind = INIT_NONE }, (Loc){ 0, 0 });
	}
	if (!src->nerr) {
		m->fwd = func_new(m, "forward");
		c = (OnnxCall){ m, m->fwd, "", { 0, 0 }, args, o->nin, res, src, MAXOPS, &decls, &ndropout, 1 };
		if (onnx_call(o, &c) == 0)
			for (int i = 0; i < o->nout; i++) {
				const char *nm = irname(a, "", o->name[o->out[i]]);
				for (int k = 0; k < m->fwd->nout; k++)
					if (strcmp(m->fwd->outname[k], nm) == 0)
						diag(src, (Loc){ 0, 0 }, "graph outputs %d and %d are both named '%s'",
						     k + 1, i + 1, nm);
				func_output(m->fwd, nm, res[i]);
			}
		if (!src->nerr)
			onnx_declare(m->fwd, &decls);
	}
	onnx_decls_free(&decls);
	free(args);
	free(res);
	arena_free(a);
	onnx_close(o);
	if (src->nerr) {
		mod_free(m);
		return NULL;
	}
	return m;
}
