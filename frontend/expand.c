/* expand.c: the program's items to a module: consts, declarations, statements, loops, defs.
 *
 * needs: the items of a parse without syntax errors. fills: a Module with its decls and
 * `forward` (ops in source order, outputs, fwd->loss and m->opt for trained models), or NULL
 * after diagnostics. Loops are unrolled and defs inlined as the statements run, so every
 * op is checked with the actual shapes of its operands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "mtc/mtc-rt.h"

static void exec(Ctx *, Stmt *, int top);

Val
inline_def(Ctx *c, Node *n, Ent *de, const char *hint)
{
	enum { NSMALL = 8 };    /* params of most defs: no allocation per call (hostile.sh's 2^23 calls) */
	const Item *d = de->p;
	Frame nf = { .up = NULL };
	Node **slot, *p, *slot1[NSMALL + 1];
	Kw *kw, kw1[NSMALL + 1];
	Ent names[2 * NSMALL];  /* the frame's map until it outgrows it */
	Val *vals, vals1[NSMALL + 1], v = ERR;
	int bad = 0, i, small = d->nparams <= NSMALL, st = de->state;

	/* B_BUSY marks a def being inlined: a recursion check without walking the frames. */
	if (de->state == B_BUSY)
		return err(c, n->loc, "recursive call of '%s' (defs are inlined; recursion is not allowed)",
		           d->name);
	if (c->ncall >= MAXCALL) {
		err(c, n->loc, "def calls nested more than %d deep", MAXCALL);
		c->stop = 1;
		return ERR;
	}
	kw = small ? memset(kw1, 0, sizeof kw1) : xcalloc(d->nparams + 1, sizeof *kw);
	slot = small ? memset(slot1, 0, sizeof slot1) : xcalloc(d->nparams + 1, sizeof *slot);
	vals = small ? memset(vals1, 0, sizeof vals1) : xcalloc(d->nparams + 1, sizeof *vals);
	for (p = d->params, i = 0; p; p = p->next, i++)
		kw[i] = (Kw){ p->name, 'v', 1, 0 };
	if (bind_args(c, n, d->name, 0, kw, d->nparams, NULL, NULL, slot))
		goto out;
	for (i = 0; i < d->nparams; i++)
		if ((vals[i] = eval(c, slot[i], NULL)).k == V_ERR)
			bad = 1;
	if (bad)
		goto out;
	memset(names, 0, sizeof names);
	nf.names = (Map){ names, 2 * NSMALL, 0, 1 };
	nf.up = c->fr;
	nf.def = d;
	nf.call = n->loc;
	nf.hint = hint;
	for (p = d->params, i = 0; p; p = p->next, i++) {
		Ent *e = mput(&nf.names, p->name);
		e->state = B_VAL;
		e->val = vals[i];
	}
	c->fr = &nf;
	c->ncall++;
	de->state = B_BUSY;
	exec(c, d->body, 0);
	de->state = st;
	c->ncall--;
	c->fr = nf.up;
	if (nf.ret)
		v = nf.rv;
	else
		err(c, n->loc, "'%s' ends without a return statement", d->name);
	mfree(&nf.names);
out:
	if (!small) {
		free(kw);
		free(slot);
		free(vals);
	}
	return v;
}

int
import_call(Ctx *c, Node *n, Ent *imp, Val *out, int nout)
{
	Onnx *o = (Onnx *)imp->p;
	int nin, nres, k = 0, bad = 0, *args, *res, rc = -1;
	char names[512];
	OnnxCall oc;

	if (!o)
		return -1;          /* the import failed, and said why */
	nin = onnx_ninputs(o);
	nres = onnx_noutputs(o);
	if (nres != nout) {
		if (nout == 1)
			err(c, n->loc, "'%s' returns %d values: bind them all, as in 'a, b = %s(...)'", n->name,
			    nres, n->name);
		else
			err(c, n->loc, "'%s' returns %d value%s, not %d", n->name, nres, nres == 1 ? "" : "s", nout);
		return -1;
	}
	for (Node *a = n->kid; a; a = a->next)
		if (a->kind == N_KW) {
			err(c, a->loc, "the arguments of an imported graph are positional");
			return -1;
		}
	if (n->nkid != nin) {
		size_t w = 0;
		names[0] = 0;
		for (int i = 0; i < nin && w < sizeof names - 8; i++)
			w += (size_t)snprintf(names + w, sizeof names - w, "%s%s", i ? ", " : "", onnx_input_name(o, i));
		err(c, n->loc, "'%s' takes %d argument%s (%s), got %d", n->name, nin, nin == 1 ? "" : "s",
		    names, n->nkid);
		return -1;
	}
	args = xcalloc(nin + 1, sizeof *args);
	res = xcalloc(nres + 1, sizeof *res);
	for (Node *a = n->kid; a; a = a->next, k++)
		if ((args[k] = tensor(c, eval(c, a, NULL), a->loc, NULL)) < 0)
			bad = 1;
	oc = (OnnxCall){ c->m, c->f, n->name, n->loc, args, nin, res, c->src, MAXOPS, &c->decls,
	                 &c->ndropout, 0 };
	if (!bad && !c->stop && onnx_call(o, &oc) == 0) {
		for (int i = 0; i < nres; i++)
			out[i] = (Val){ .k = V_TENSOR, .v = res[i] };
		rc = 0;
	}
	free(args);
	free(res);
	return rc;
}

/* Can s bind name (not a loop variable, not a const)? */
static int
bindable(Ctx *c, const char *name, Loc loc)
{
	Ent *e = mget(&c->fr->names, name);

	if (e && e->state == B_LOOP) {
		err(c, loc, "cannot assign to the loop variable '%s'", name);
		return 0;
	}
	if ((!e || e->state == B_NONE) && mget(&c->consts, name)) {
		err(c, loc, "cannot assign to the const '%s'", name);
		return 0;
	}
	return 1;
}

/* a, b, ... = NAME(...): the results of an imported graph. */
static void
assign_many(Ctx *c, Stmt *s)
{
	int n = 0, k = 0;
	Ent *e;
	Val *out;

	for (Node *a = s->names; a; a = a->next, n++) {
		if (!bindable(c, a->name, a->loc))
			return;
		for (Node *b = s->names; b != a; b = b->next)
			if (strcmp(a->name, b->name) == 0) {
				err(c, a->loc, "'%s' is bound twice", a->name);
				return;
			}
	}
	if (s->e->kind != N_CALL || !(e = mget(&c->imports, s->e->name))) {
		err(c, s->e->loc, "only a call of an imported graph gives several values");
		return;
	}
	out = xcalloc(n, sizeof *out);
	if (import_call(c, s->e, e, out, n))
		for (int i = 0; i < n; i++)
			out[i] = ERR;
	for (Node *a = s->names; a; a = a->next, k++) {
		e = mput(&c->fr->names, a->name);
		e->state = B_VAL;
		e->val = out[k];
	}
	free(out);
}

static void
assign(Ctx *c, Stmt *s)
{
	Ent *e;
	Val v;
	int t;

	if (s->names) {
		assign_many(c, s);
		return;
	}
	if (!bindable(c, s->name, s->nameloc))
		return;
	v = eval(c, s->e, s->name);
	/* a bound name is a tensor: numbers become f32[] consts here */
	if (v.k == V_INT || v.k == V_NUM)
		v = (t = tensor(c, v, s->e->loc, s->name)) < 0 ? ERR : (Val){ .k = V_TENSOR, .v = t };
	e = mput(&c->fr->names, s->name);
	e->state = B_VAL;
	e->val = v;
}

static void
loop(Ctx *c, Stmt *s)
{
	int64_t lo, hi;
	Ent *e, saved;
	int bad = ieval(c, s->e, &lo);

	bad |= ieval(c, s->e2, &hi);        /* both bounds reported */
	if (bad)
		return;
	e = mput(&c->fr->names, s->name);
	saved = *e;
	for (int64_t i = lo; i < hi && !c->stop && !c->fr->ret; i++) {
		if (++c->work > MAXWORK) {
			err(c, s->loc, "the program expands to more than %d steps (loops or calls too large)", MAXWORK);
			c->stop = 1;
			break;
		}
		e = mput(&c->fr->names, s->name);      /* the body may have grown the map */
		e->state = B_LOOP;
		e->val = (Val){ .k = V_INT, .i = i };
		exec(c, s->body, 0);
	}
	*mput(&c->fr->names, s->name) = saved;
}

static void
output(Ctx *c, Stmt *s)
{
	Func *f = c->f;
	Val v;

	for (Node *n = s->names; n; n = n->next) {
		if (!lookup(c, n->name, n->loc, &v)) {
			undefined_name(c, n->loc, n->name);
			continue;
		}
		if (v.k == V_ERR)
			continue;
		if (v.k != V_TENSOR) {
			err(c, n->loc, "output '%s' is not a tensor", n->name);
			continue;
		}
		for (int i = 0; i < f->nout; i++)
			if (strcmp(f->outname[i], n->name) == 0) {
				err(c, n->loc, "'%s' is already an output", n->name);
				v.k = V_ERR;
			}
		if (v.k == V_TENSOR)
			func_output(f, n->name, v.v);
	}
}

static void
train(Ctx *c, Stmt *s)
{
	char ts[MAXRANK * 24 + 8];
	const Builtin *b = findb(optims, s->e->name);
	Node *kv[6] = { 0 };
	double x[6];
	Optim o = { 0 };
	Val v;
	int nk;

	if (c->trained) {
		err(c, s->loc, "a second train statement (the first is at %d:%d)", c->trainloc.line,
		    c->trainloc.col);
		return;
	}
	c->trained = 1;
	c->trainloc = s->loc;
	if (!lookup(c, s->name, s->nameloc, &v)) {
		undefined_name(c, s->nameloc, s->name);
		return;
	}
	if (v.k == V_ERR)
		return;
	if (v.k != V_TENSOR || c->f->val[v.v].ty.dt != F32 || c->f->val[v.v].ty.sh.rank != 0) {
		err(c, s->nameloc, "the loss must be f32[], but '%s' is %s", s->name,
		    v.k == V_TENSOR ? type_str(&c->f->val[v.v].ty, ts, sizeof ts) : "not a tensor");
		return;
	}
	if (!b) {
		err(c, s->e->loc, "unknown optimizer '%s' (sgd, adam or adamw)", s->e->name);
		return;
	}
	nk = nkws(b);
	if (bind_args(c, s->e, b->name, 0, b->kw, nk, NULL, NULL, kv))
		return;
	for (int i = 0; i < nk; i++) {
		x[i] = b->kw[i].def;
		if (kv[i] && neval(c, kv[i], &x[i]))
			return;
		/* the ranges the runtime's setters enforce too (runtime/hyper.c) */
		if (!mtc_hyper_ok(b->kw[i].name, x[i])) {
			err(c, kv[i] ? kv[i]->loc : s->e->loc, "%s must be %s, got %g", b->kw[i].name,
			    mtc_hyper_range(b->kw[i].name), x[i]);
			return;
		}
	}
	o.kind = b->k;
	o.lr = x[0];
	o.loc = s->e->loc;
	o.clip_norm = x[nk - 1];
	if (b->k == OPT_SGD) {
		o.momentum = x[1];
		o.weight_decay = x[2];
	} else {
		o.beta1 = x[1];
		o.beta2 = x[2];
		o.eps = x[3];
		if (b->k == OPT_ADAMW)
			o.weight_decay = x[4];
	}
	c->m->opt = o;
	c->f->loss = v.v;
}

static void
exec(Ctx *c, Stmt *s, int top)
{
	const char *where = c->fr->def ? "a def" : "a loop";

	for (; s && !c->stop && !c->fr->ret; s = s->next) {
		if (++c->work > MAXWORK) {
			err(c, s->loc, "the program expands to more than %d steps (loops or calls too large)", MAXWORK);
			c->stop = 1;
			return;
		}
		switch (s->kind) {
		case S_ASSIGN:
			assign(c, s);
			break;
		case S_FOR:
			loop(c, s);
			break;
		case S_RETURN:
			if (!c->fr->def) {
				err(c, s->loc, "return outside a def");
				break;
			}
			c->fr->rv = eval(c, s->e, c->fr->hint);
			c->fr->ret = 1;
			break;
		case S_OUTPUT:
			if (c->fr->def)
				err(c, s->loc, "output is only allowed in the model");
			else
				output(c, s);
			break;
		case S_TRAIN:
			if (c->fr->def)
				err(c, s->loc, "train is only allowed in the model");
			else
				train(c, s);
			break;
		case S_INPUT:
		case S_PARAM:
			if (!top)       /* top-level declarations were made before the body ran */
				err(c, s->loc, "%s declarations are only allowed at the top level of the model, not in %s",
				    s->kind == S_INPUT ? "input" : "param", where);
			break;
		}
	}
}

/* ---------- declarations ---------- */

static int
decl_type(Ctx *c, Stmt *s, Type *t)
{
	TypeEx *x = s->ty;
	int k = 0;

	if (strcmp(x->dt, "f32") == 0)
		t->dt = F32;
	else if (strcmp(x->dt, "i32") == 0)
		t->dt = I32;
	else {
		err(c, x->dtloc, "unknown dtype '%s' (f32 or i32)", x->dt);
		return -1;
	}
	if (s->kind == S_PARAM && t->dt != F32) {
		err(c, x->dtloc, "a param must be f32, not %s", x->dt);
		return -1;
	}
	if (x->ndims > MAXRANK) {
		err(c, x->dims->loc, "rank %d exceeds the limit of %d", x->ndims, MAXRANK);
		return -1;
	}
	t->sh.rank = x->ndims;
	for (Node *d = x->dims; d; d = d->next, k++) {
		if (ieval(c, d, &t->sh.d[k]))
			return -1;
		if (t->sh.d[k] <= 0) {
			err(c, d->loc, "a dimension must be positive, got %lld", (long long)t->sh.d[k]);
			return -1;
		}
	}
	return size_check(c, t, s->nameloc);
}

static int
decl_init(Ctx *c, Stmt *s, Init *in)
{
	const Builtin *b;
	Node *kv[4] = { 0 };
	double x[2] = { 0, 0 };
	int nkw;

	if (!s->init) {
		err(c, s->nameloc, "param '%s' needs an initializer, like = zeros()", s->name);
		return -1;
	}
	if (!(b = findb(inits, s->init->name))) {
		err(c, s->init->loc, "unknown initializer '%s' (zeros, ones, full, normal or uniform)",
		    s->init->name);
		return -1;
	}
	nkw = b->k == INIT_FULL ? 1 : b->k == INIT_NORMAL || b->k == INIT_UNIFORM ? 2 : 0;
	if (bind_args(c, s->init, b->name, 0, b->kw, nkw, NULL, NULL, kv))
		return -1;
	for (int i = 0; i < nkw; i++)
		if (neval(c, kv[i], &x[i]))
			return -1;
	if (b->k == INIT_NORMAL && !(x[1] >= 0)) {
		err(c, kv[1]->loc, "normal: std must not be negative, got %g", x[1]);
		return -1;
	}
	if (b->k == INIT_UNIFORM && !(x[0] <= x[1])) {
		err(c, kv[0]->loc, "uniform: lo %g is above hi %g", x[0], x[1]);
		return -1;
	}
	*in = (Init){ .kind = b->k, .a = x[0], .b = x[1] };
	return 0;
}

/* Declare the model's inputs and params; bind their names in the model frame. */
static void
declare(Ctx *c, const Item *model, Frame *fr)
{
	for (Stmt *s = model->body; s && !c->stop; s = s->next) {
		Type t = { F32, { 0, { 0 } } };
		Init in = { .kind = INIT_NONE };
		int64_t n = 0;
		Ent *e, *k;
		int d;

		if (s->kind != S_INPUT && s->kind != S_PARAM)
			continue;
		if ((e = mget(&fr->names, s->name))) {
			err(c, s->nameloc, "duplicate declaration of '%s' (the first is at %d:%d)", s->name,
			    e->loc.line, e->loc.col);
			continue;
		}
		if ((k = mget(&c->consts, s->name)) && k->loc.line) {
			err(c, s->nameloc, "'%s' is already a const (at %d:%d)", s->name, k->loc.line, k->loc.col);
			continue;
		}
		e = mput(&fr->names, s->name);
		e->state = B_VAL;
		e->loc = s->nameloc;
		e->val = ERR;
		if (s->e) {
			if (ieval(c, s->e, &n))
				continue;
			if (n <= 0 || n > MAXDECL - c->m->ndecl) {
				err(c, s->e->loc, n <= 0 ? "a param array needs a positive size, got %lld"
				    : "a param array of %lld elements is more than this compiler takes", (long long)n);
				continue;
			}
		}
		/* type and initializer are both checked, so both can be reported */
		if (decl_type(c, s, &t) | (s->kind == S_PARAM && decl_init(c, s, &in)))
			continue;
		if (!s->e) {
			if (c->m->ndecl >= MAXDECL) {
				err(c, s->nameloc, "more than %d inputs and params", MAXDECL);
				c->stop = 1;
				return;
			}
			d = mod_decl(c->m, s->name, s->kind == S_INPUT ? R_INPUT : R_PARAM, t, in, s->nameloc);
			e->val = (Val){ .k = V_TENSOR, .v = d };
			continue;
		}
		d = c->m->ndecl;
		for (int64_t i = 0; i < n; i++) {
			char *nm = asprintf_a(c->a, "%s.%lld", s->name, (long long)i);
			mod_decl(c->m, nm, R_PARAM, t, in, s->nameloc);
		}
		e = mput(&fr->names, s->name);
		e->val = (Val){ .k = V_ARRAY, .v = d, .i = n };
	}
}

/* ---------- the program ---------- */

/* import "PATH" as NAME: the model read now (PATH relative to the tdsl file). */
static void
import_item(Ctx *c, const Item *it)
{
	const char *f = c->src->name, *slash = strrchr(f, '/');
	size_t n = strlen(it->path);
	char *path;
	Ent *e;

	if ((e = mget(&c->imports, it->name)) || (e = mget(&c->defs, it->name))) {
		err(c, it->loc, "'%s' is already %s (at %d:%d)", it->name,
		    mget(&c->imports, it->name) ? "an import" : "a def", e->loc.line, e->loc.col);
		return;
	}
	if (isbuiltin(it->name)) {
		err(c, it->loc, "'%s' is a built-in and cannot name an import", it->name);
		return;
	}
	if (n < 5 || strcmp(it->path + n - 5, ".onnx")) {
		err(c, it->pathloc, "import takes an ONNX model, a file named *.onnx");
		return;
	}
	path = it->path[0] == '/' || !slash ? astrdup(c->a, it->path) :
	       asprintf_a(c->a, "%.*s/%s", (int)(slash - f), f, it->path);
	e = mput(&c->imports, it->name);
	e->loc = it->loc;
	e->state = B_VAL;
	if (!(e->p = onnx_open(path, NULL, 0, NULL))) {
		c->src->nerr++;
		note(c->src, it->pathloc, "in the import of '%s' here", it->name);
		return;
	}
	for (const Node *f = it->params; f; f = f->next)
		if (!onnx_freeze((Onnx *)e->p, f->name))
			err(c, f->loc, "frozen: '%s' names no float initializer of %s%s", f->name, it->path,
			    strchr(f->name, '*') && f->name[strlen(f->name) - 1] != '*' ?
			    " ('*' stands for any ending, at the end of a name only)" : "");
}

static void
register_items(Ctx *c, Parser *p, const Item **model)
{
	for (Item *it = p->items; it; it = it->next) {
		Map *m = it->kind == I_CONST ? &c->consts : &c->defs;
		Ent *e;

		if (it->kind == I_IMPORT) {
			import_item(c, it);
			continue;
		}
		if (it->kind == I_MODEL) {
			if (*model)
				err(c, it->loc, "a second model '%s' (the first is '%s' at %d:%d)", it->name,
				    (*model)->name, (*model)->loc.line, (*model)->loc.col);
			else
				*model = it;
			continue;
		}
		if ((e = mget(m, it->name))) {
			err(c, it->loc, "duplicate %s '%s' (the first is at %d:%d)",
			    it->kind == I_CONST ? "const" : "def", it->name, e->loc.line, e->loc.col);
			continue;
		}
		if (it->kind == I_DEF && isbuiltin(it->name)) {
			err(c, it->loc, "'%s' is a built-in and cannot be redefined", it->name);
			continue;
		}
		if (it->kind == I_DEF && (e = mget(&c->imports, it->name))) {
			err(c, it->loc, "'%s' is already an import (at %d:%d)", it->name, e->loc.line, e->loc.col);
			continue;
		}
		if (it->kind == I_DEF) {
			Map ps = { 0 };
			for (Node *q = it->params; q; q = q->next) {
				if (mget(&ps, q->name))
					err(c, q->loc, "duplicate parameter '%s' of '%s'", q->name, it->name);
				mput(&ps, q->name);
			}
			mfree(&ps);
		}
		e = mput(m, it->name);
		e->p = it;
		e->loc = it->loc;
		e->state = B_UNFOLDED;
	}
}

/* -D NAME=INT overrides a const (its expression is not evaluated) or adds one. */
static void
defines(Ctx *c, const FeOpts *o)
{
	for (int i = 0; o && i < o->ndefines; i++) {
		const char *d = o->defines[i], *eq = strchr(d, '=');
		size_t n = eq ? (size_t)(eq - d) : 0;
		char *name, *end;
		long long v;
		Ent *e;

		if (!eq || !n || n > MAXIDENT || strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") < n ||
		    (d[0] >= '0' && d[0] <= '9')) {
			err(c, (Loc){ 0, 0 }, "-D %s: expected NAME=INT", d);
			continue;
		}
		errno = 0;
		v = strtoll(eq + 1, &end, 0);
		if (!eq[1] || *end || errno) {
			err(c, (Loc){ 0, 0 }, "-D %s: '%s' is not a 64-bit integer", d, eq + 1);
			continue;
		}
		name = aalloc(c->a, n + 1);
		memcpy(name, d, n);
		e = mput(&c->consts, name);
		e->state = B_VAL;
		e->val = (Val){ .k = V_INT, .i = v };
	}
}

/* A -D for a const the file does not declare, and that nothing read, is likely misspelt. */
static void
unused_defines(Ctx *c, const FeOpts *o)
{
	for (int i = 0; o && i < o->ndefines && !c->src->nerr; i++) {
		const char *d = o->defines[i];
		char name[MAXIDENT + 1];
		size_t n = strcspn(d, "=");
		Ent *e;
		if (n > MAXIDENT)
			continue;
		memcpy(name, d, n);
		name[n] = 0;
		if ((e = mget(&c->consts, name)) && !e->p && !e->used)
			fprintf(stderr, "%s: warning: -D %s: the model has no const %s\n",
			        program_invocation_short_name, name, name);
	}
}

/* FeOpts.batch_div: fold the batch const (the leading dim of the model's first input) as its
 * value divided by batch_div, before any const that uses it is folded. */
static void
divide_batch(Ctx *c, const Item *model, const FeOpts *o)
{
	const Stmt *s;
	const Node *d0;
	const char *why = o->batch_why ? o->batch_why : "dividing the batch";
	Ent *e;
	Val v;

	for (s = model->body; s && s->kind != S_INPUT; s = s->next)
		;
	if (!s) {
		err(c, model->loc, "%s: model %s has no input, so no batch to divide", why, model->name);
		return;
	}
	d0 = s->ty && s->ty->ndims ? s->ty->dims : NULL;
	if (!d0 || d0->kind != N_NAME || !(e = mget(&c->consts, d0->name))) {
		err(c, d0 ? d0->loc : s->nameloc, "%s: the batch, the leading dim of the first input '%s', "
		    "must be a const's name (input %s : f32[B, ...])", why, s->name, s->name);
		return;
	}
	if (!lookup(c, d0->name, d0->loc, &v) || v.k != V_INT)
		return;
	if (v.i <= 0 || v.i % o->batch_div) {
		err(c, d0->loc, "%s does not divide the batch %s = %lld (the leading dim of input '%s')",
		    why, d0->name, (long long)v.i, s->name);
		return;
	}
	e->val.i = v.i / o->batch_div;
}

Module *
fe_expand(Parser *p, const FeOpts *o)
{
	Ctx c = { 0 };
	Frame top = { .up = NULL };
	const Item *model = NULL;
	Val v;

	c.src = p->src;
	c.a = p->a;
	register_items(&c, p, &model);
	defines(&c, o);
	if (model && o && o->batch_div > 1 && !c.src->nerr)
		divide_batch(&c, model, o);
	for (Item *it = p->items; it && !c.stop; it = it->next)
		if (it->kind == I_CONST)
			lookup(&c, it->name, it->loc, &v);
	if (!model)
		err(&c, p->end, "no model in this file");
	else if (!c.stop) {
		c.m = mod_new(model->name, p->src->name);
		declare(&c, model, &top);
		c.f = c.m->fwd = func_new(c.m, "forward");
		c.fr = &top;
		exec(&c, model->body, 1);
		c.fr = NULL;
		if (!p->src->nerr)
			nn_buffers(&c);
	}
	unused_defines(&c, o);
	if (c.m && !p->src->nerr)
		onnx_declare(c.m->fwd, &c.decls);
	onnx_decls_free(&c.decls);
	for (int i = 0; i < c.imports.cap; i++)
		if (c.imports.e[i].key)
			onnx_close((Onnx *)c.imports.e[i].p);
	mfree(&c.imports);
	mfree(&top.names);
	mfree(&c.consts);
	mfree(&c.defs);
	mfree(&c.seen);
	mfree(&c.ren);
	free(c.bn);
	if (p->src->nerr && c.m) {
		mod_free(c.m);
		c.m = NULL;
	}
	return c.m;
}
