/* autodiff.c: reverse-mode differentiation of the forward into the training step.
 *
 * needs: m->fwd with fwd->loss (an f32[] value) and m->opt.
 * fills: the optimizer's state decls (sgd with momentum: "mom.P" of P; adam, adamw: "m.P",
 *        "v.P" of P and one "adam.t" i32[] counter) and its hyperparameter decls ("opt.lr" ...,
 *        role hyper, f32[] = full(the model's value)), for dropouts the buffer "dropout.step"
 *        (i32[], the number of the step: `tick`ed first, read by every dropout, so a
 *        recomputation or the gradient draws the same mask), m->step = the forward ops the loss
 *        or an output needs (PH_FWD; each output copied out right after it is made, for
 *        MODEL_step_out), the gradient of the loss w.r.t. every param that reaches it (PH_BWD,
 *        rules from the op table, grad.c), with clip_norm the clipping ops (PH_BWD: sumsq of
 *        each gradient, their total, clip_coef, each gradient times it), and the in-place
 *        updates (PH_UPD) that read the hyperparameters; then clears fwd->loss, so the forward
 *        keeps only what its outputs need once simplified.
 *
 * Decls must come first in every function's value table, and functions exist already: the
 * state decls are added, then the forward is rebuilt (copy.c) so its values renumber. Params
 * that do not reach the loss get neither state nor update (PyTorch: their grad is None).
 * A forward value that a backward op reads is an activation the step saves; every other
 * forward value dies at its last forward use: the ops' phases show which is which.
 *
 * The forward is in inference form, the step gets the training form of the ops that have one
 * (PyTorch's eval() and train()): a batch_norm on its running statistics becomes one on the
 * batch's (batch_norm_mean, batch_norm_var), whose values batch_norm_update folds into the
 * running statistics' buffers among the updates. An update is not recomputable, so a plan
 * that recomputes the batch norm never repeats it. A dropout (the identity in inference)
 * gets the step counter and the build's seed (m->seed). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* ---------- the context API of the gradient rules ---------- */

int d_grad(Diff *d, int v) { d_flush(d, v); return d->grad[v]; }
int d_need(Diff *d, int v) { return d->need[v] && d->f->val[v].ty.dt == F32; }

int
d_emit(Diff *d, Opk k, const int *args, int n, const int64_t *ia, int nia, const double *fa,
       const Type *given)
{
	int64_t a[MAXIA] = {0};
	double f[MAXFA] = {0};
	Type t = {0};
	char err[256];
	int none = -1, i;

	if (ia)   /* only the attributes the kind has: callers pass arrays of that length */
		memcpy(a, ia, (op_iattr_is_list(k) ? (size_t)nia : (size_t)op_niattr(k)) * sizeof *a);
	if (fa)
		memcpy(f, fa, op_nfattr(k) * sizeof *f);
	if (given)
		t = *given;
	if (!args)
		args = &none;
	if (op_infer(d->f, k, args, n, a, nia, f, &t, err, sizeof err))
		die("autodiff made a bad %s: %s", opinfo[k].name, err);
	i = func_op(d->f, k, PH_BWD, args, n, a, nia, f, &t,
	            asprintf_a(d->f->mod->arena, "d.%s", d->base), d->loc);
	return d->f->op[i].res;
}

int d_op1(Diff *d, Opk k, int a) { return d_emit(d, k, &a, 1, NULL, 0, NULL, NULL); }
int d_op2(Diff *d, Opk k, int a, int b) { int x[2] = { a, b }; return d_emit(d, k, x, 2, NULL, 0, NULL, NULL); }

int
d_sumto(Diff *d, int g, int v)
{
	const Type *t = &d->f->val[v].ty;

	if (shape_eq(&d->f->val[g].ty.sh, &t->sh))
		return g;
	return d_emit(d, OP_SUMTO, &g, 1, NULL, 0, NULL, t);
}

/* grad[v] += g, g of v's shape */
static void
add_grad(Diff *d, int v, int g)
{
	int a[2], i;

	if (d->grad[v] < 0) {
		d->grad[v] = g;
		return;
	}
	a[0] = d->grad[v];
	a[1] = g;
	i = func_op(d->f, OP_ADD, PH_BWD, a, 2, NULL, 0, NULL, &d->f->val[v].ty,
	            asprintf_a(d->f->mod->arena, "g.%s", d->f->val[v].name), d->loc);
	d->grad[v] = d->f->op[i].res;
}

/* The slice_grad's operand, axis, start and length, g being one. */
static const Op *
sliceg(const Diff *d, int g)
{
	const Op *op = d->f->val[g].def >= 0 ? &d->f->op[d->f->val[g].def] : NULL;
	return op && op->kind == OP_SLICE_G ? op : NULL;
}

/* Slices' gradients wait (pend) until v's gradient is read: those of disjoint slices along one
 * axis become one concat of their dy, zeros between, instead of a sum of slice_grads, each a
 * whole tensor of v's size (an unrolled RNN slices its inputs step by step: T of them held
 * and added). The slice_grads left are dead and go with simplify. Others are added in the
 * order they came. */
void
d_flush(Diff *d, int v)
{
	int n = d->npend && v < d->nv ? d->npend[v] : 0, *g, ok = n > 1, ax, parts = 0, *pc;
	const Type *t = &d->f->val[v].ty;
	int64_t at = 0;

	if (!n)
		return;
	d->npend[v] = 0;
	g = d->pend[v];
	ax = (int)sliceg(d, g[0])->ia[0];
	for (int k = 1; k < n; k++) {          /* by start (insertion: few, mostly in order) */
		int x = g[k], j = k;
		for (; j > 0 && sliceg(d, g[j - 1])->ia[1] > sliceg(d, x)->ia[1]; j--)
			g[j] = g[j - 1];
		g[j] = x;
	}
	for (int k = 0; k < n && ok; k++) {
		const Op *op = sliceg(d, g[k]);
		ok = op->ia[0] == ax && op->ia[1] >= at;
		at = op->ia[1] + d->f->val[op->args[0]].ty.sh.d[ax];
	}
	if (!ok) {
		for (int k = 0; k < n; k++)
			add_grad(d, v, g[k]);
		return;
	}
	pc = xmalloc((2 * (size_t)n + 1) * sizeof *pc);
	at = 0;
	for (int k = 0; k <= n; k++) {
		const Op *op = k < n ? sliceg(d, g[k]) : NULL;
		int64_t st = op ? op->ia[1] : t->sh.d[ax];
		if (st > at) {
			Type z = *t;
			z.sh.d[ax] = st - at;
			pc[parts++] = d_emit(d, OP_CONST, NULL, 0, NULL, 0, (double[MAXFA]){ 0 }, &z);
		}
		if (op) {
			pc[parts++] = op->args[0];
			at = st + d->f->val[op->args[0]].ty.sh.d[ax];
		}
	}
	add_grad(d, v, d_emit(d, OP_CONCAT, pc, parts, (int64_t[MAXIA]){ ax }, 1, NULL, NULL));
	free(pc);
}

void
d_acc(Diff *d, int v, int g)
{
	if (!d_need(d, v))
		return;
	g = d_sumto(d, g, v);
	if (d->npend && v < d->nv && sliceg(d, g)) {
		d->pend[v] = xrealloc(d->pend[v], (d->npend[v] + 1) * sizeof **d->pend);
		d->pend[v][d->npend[v]++] = g;
		return;
	}
	d_flush(d, v);
	add_grad(d, v, g);
}

static void
diff_free_pend(Diff *d)
{
	for (int v = 0; d->pend && v < d->nv; v++)
		free(d->pend[v]);
	free(d->pend);
	free(d->npend);
}

/* ---------- the pass ---------- */

/* live[v]: the loss (outs: or an output) needs v; need[v]: v depends on a param. */
static void
mark(const Func *f, int loss, int outs, uint8_t *live, uint8_t *need)
{
	memset(live, 0, f->nval);
	memset(need, 0, f->nval);
	live[loss] = 1;
	for (int k = 0; outs && k < f->nout; k++)
		live[f->out[k]] = 1;
	for (int i = f->nop - 1; i >= 0; i--) {
		const Op *op = &f->op[i];
		if (op->res >= 0 && live[op->res])
			for (int k = 0; k < op->nargs; k++)
				live[op->args[k]] = 1;
	}
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl >= 0 && f->mod->decl[f->val[v].decl].role == R_PARAM)
			need[v] = 1;
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		for (int k = 0; k < op->nargs && op->res >= 0; k++)
			if (need[op->args[k]] && f->val[op->args[k]].ty.dt == F32)
				need[op->res] = 1;
	}
}

/* A decl made by the optimizer: state (zeros, of param p or none) or a hyperparameter
 * (full(v)), named pfx.P or pfx. Returns its index, or -1 after a diagnostic. */
static int
add_decl(Module *m, Src *src, const char *pfx, int p, Type ty, Role role, double v)
{
	char *nm = asprintf_a(m->arena, "%s%s%s", pfx, p >= 0 ? "." : "", p >= 0 ? m->decl[p].name : "");
	Init in = { .kind = role == R_HYPER ? INIT_FULL : INIT_ZEROS, .a = v };
	int i;

	if (mod_find_decl(m, nm) >= 0) {
		diag(src, m->opt.loc, "optimizer %s '%s' clashes with a declaration of that name",
		     role == R_HYPER ? "setting" : role == R_BUFFER ? "buffer" : "state", nm);
		return -1;
	}
	/* mod_decl refuses decls once functions exist; the forward is rebuilt after. */
	{
		Func *fw = m->fwd;
		m->fwd = NULL;
		i = mod_decl(m, nm, role, ty, in, m->opt.loc);
		m->fwd = fw;
	}
	m->decl[i].of = p;
	return i;
}

static int
add_state(Module *m, Src *src, const char *pfx, int p, Type ty, Role role)
{
	return add_decl(m, src, pfx, p, ty, role, 0);
}

/* The hyperparameters, in the order the updates take them. */
enum { HLR, HMOM, HB1, HB2, HEPS, HWD, HCLIP, NHYP };
static const char *const hypname[NHYP] = { "opt.lr", "opt.momentum", "opt.beta1", "opt.beta2",
                                           "opt.eps", "opt.weight_decay", "opt.clip_norm" };

/* The hyperparameter decls the optimizer's updates read: hy[k] their indices, -1 for those
 * it has not. Returns 0, or -1 after a diagnostic. */
static int
add_hypers(Module *m, Src *src, int *hy)
{
	const Optim *o = &m->opt;
	double v[NHYP] = { o->lr, o->momentum, o->beta1, o->beta2, o->eps, o->weight_decay, o->clip_norm };
	int on[NHYP] = { 1, o->kind == OPT_SGD && o->momentum != 0, o->kind != OPT_SGD, o->kind != OPT_SGD,
	                 o->kind != OPT_SGD, o->kind != OPT_ADAM, o->clip_norm > 0 };
	Type sc = { F32, { 0, {0} } };
	int bad = 0;

	for (int k = 0; k < NHYP; k++)
		hy[k] = on[k] ? add_decl(m, src, hypname[k], -1, sc, R_HYPER, v[k]) : -1;
	for (int k = 0; k < NHYP; k++)
		bad |= on[k] && hy[k] < 0;
	return bad ? -1 : 0;
}

/* Renames, applied once the step is complete (the builder's name table must not change
 * under it): value v[i] becomes name[i]. */
typedef struct Names {
	int *v;
	char **name;
	int n;
} Names;

/* The final gradient of v, left by a rule as an intermediate "d.*", becomes "g.<v>". */
static void
gname(Diff *d, int v, Names *nm)
{
	int g = d->grad[v];

	if (g < 0 || strncmp(d->f->val[g].name, "d.", 2) != 0)
		return;
	for (int i = 0; i < nm->n; i++)
		if (nm->v[i] == g)
			return;
	nm->v = xrealloc(nm->v, (nm->n + 1) * sizeof *nm->v);
	nm->name = xrealloc(nm->name, (nm->n + 1) * sizeof *nm->name);
	nm->v[nm->n] = g;
	nm->name[nm->n++] = asprintf_a(d->f->mod->arena, "g.%s", d->f->val[v].name);
}

/* The update of param p with gradient g; state decls st[] as add_state made them, hy[] the
 * hyperparameters' (passes/grad.c lists each update's operands). */
static void
update(Func *s, const Optim *o, int p, int g, const int *st, int t, const int *hy)
{
	int a[10] = { p, g, hy[HLR], hy[HWD] };

	switch (o->kind) {
	case OPT_SGD:
		if (hy[HMOM] < 0) {
			func_op(s, OP_SGD, PH_UPD, a, 4, NULL, 0, NULL, NULL, NULL, o->loc);
			break;
		}
		a[1] = st[0], a[2] = g, a[3] = hy[HLR], a[4] = hy[HMOM], a[5] = hy[HWD];
		func_op(s, OP_SGDM, PH_UPD, a, 6, NULL, 0, NULL, NULL, NULL, o->loc);
		break;
	case OPT_ADAM:
	case OPT_ADAMW:
		a[1] = st[0], a[2] = st[1], a[3] = g, a[4] = t;
		a[5] = hy[HLR], a[6] = hy[HB1], a[7] = hy[HB2], a[8] = hy[HEPS], a[9] = hy[HWD];
		func_op(s, o->kind == OPT_ADAMW ? OP_ADAMW : OP_ADAM, PH_UPD, a,
		        o->kind == OPT_ADAMW ? 10 : 9, NULL, 0, NULL, NULL, NULL, o->loc);
		break;
	case OPT_NONE:
		die("no optimizer");
	}
}

/* Why autodiff cannot run on this module (after a diagnostic), or 0. */
static int
refuse(Module *m, Src *src)
{
	Func *fw = m->fwd;
	int loss = fw->loss;

	if (m->step) {
		diag(src, m->opt.loc, "the module already has a training step");
		return -1;
	}
	if (m->opt.kind == OPT_NONE) {
		diag(src, fw->val[loss].loc, "a trained loss needs an optimizer");
		return -1;
	}
	for (int i = 0; i < fw->nop; i++)
		if (fw->op[i].phase != PH_FWD || (opinfo[fw->op[i].kind].flags & (F_COPY | F_MUT))) {
			diag(src, fw->op[i].loc, "autodiff needs a forward of plain fwd ops, not '%s %s'",
			     phase_name[fw->op[i].phase], opinfo[fw->op[i].kind].name);
			return -1;
		}
	if (fw->val[loss].ty.dt != F32 || fw->val[loss].ty.sh.rank != 0) {
		diag(src, fw->val[loss].loc, "the loss must be f32[]");
		return -1;
	}
	return 0;
}

/* The optimizer state of every param that reaches the loss: st[2p], st[2p+1] its decls (or
 * -1), *tick adam's counter, *drop dropout's (or -1), hy[] the hyperparameters'. The forward
 * is rebuilt so its values make room for the decls. Returns 0, or -1 after a diagnostic. */
static int
states(Module *m, Src *src, int *st, int *tick, int *hy, int *drop)
{
	Func *fw = m->fwd;
	int nd = m->ndecl, bad = 0;
	uint8_t *live = xcalloc(fw->nval, 1), *need = xcalloc(fw->nval, 1);

	mark(fw, fw->loss, 0, live, need);
	*tick = -1;
	for (int p = 0; p < nd; p++) {
		Type ty = m->decl[p].ty;
		st[2 * p] = st[2 * p + 1] = -1;
		if (m->decl[p].role == R_PARAM && !live[p])
			warn(src, m->decl[p].loc, "param '%s' does not reach the loss '%s': it gets no "
			     "gradient and is never trained", m->decl[p].name, fw->val[fw->loss].name);
		if (m->decl[p].role != R_PARAM || !live[p])
			continue;
		if (m->opt.kind == OPT_SGD && m->opt.momentum != 0)
			bad |= (st[2 * p] = add_state(m, src, "mom", p, ty, R_STATE)) < 0;
		if (m->opt.kind == OPT_ADAM || m->opt.kind == OPT_ADAMW) {
			if (*tick < 0)
				bad |= (*tick = add_state(m, src, "adam.t", -1, (Type){ I32, { 0, {0} } }, R_STATE)) < 0;
			bad |= (st[2 * p] = add_state(m, src, "m", p, ty, R_STATE)) < 0;
			bad |= (st[2 * p + 1] = add_state(m, src, "v", p, ty, R_STATE)) < 0;
		}
	}
	*drop = -1;
	for (int i = 0; i < fw->nop && *drop < 0 && !bad; i++)
		if (fw->op[i].kind == OP_DROPOUT && fw->op[i].nargs == 1 && live[fw->op[i].res])
			bad |= (*drop = add_state(m, src, "dropout.step", -1, (Type){ I32, { 0, {0} } }, R_BUFFER)) < 0;
	if (!bad)
		bad = add_hypers(m, src, hy) < 0;
	if (m->ndecl > nd)
		func_adopt(fw, func_rebuild(fw, NULL, NULL));
	free(live);
	free(need);
	return bad ? -1 : 0;
}

/* The running statistics a training batch_norm updates: buffers rm, rv from the batch's
 * statistics mean, var (values of the step). */
typedef struct BnUpd {
	int rm, rv, mean, var;
	int64_t count;
	double momentum;
	Loc loc;
} BnUpd;

/* Copy fw's op o into the step in its training form where it has one (see the top); returns
 * 1 if it did, 0 for an op to copy as it is. A batch_norm update is appended to *bn. */
static int
train_form(Func *s, const Func *fw, const Op *o, int *map, int drop, BnUpd **bn, int *nbn)
{
	const Type *x;
	int a[5], st[2], i;

	if (o->kind == OP_DROPOUT && o->nargs == 1) {
		int64_t ia[MAXIA] = { o->ia[0], (int64_t)s->mod->seed };
		a[0] = map[o->args[0]];
		a[1] = drop;
		i = func_op(s, OP_DROPOUT, PH_FWD, a, 2, ia, 0, o->fa, &fw->val[o->res].ty,
		            fw->val[o->res].name, o->loc);
		map[o->res] = s->op[i].res;
		return 1;
	}
	if (o->kind != OP_BATCHNORM || o->ia[0] != 0)
		return 0;
	x = &fw->val[o->args[0]].ty;
	for (int k = 0; k < 5; k++)
		a[k] = map[o->args[k]];
	for (int k = 0; k < 2; k++) {
		Type c = { F32, { 1, { x->sh.d[1] } } };
		int b[2] = { a[0], st[0] };
		i = func_op(s, k ? OP_BN_VAR : OP_BN_MEAN, PH_FWD, b, k + 1, NULL, 0, NULL, &c,
		            asprintf_a(s->mod->arena, "%s.%s", fw->val[o->res].name, k ? "var" : "mean"), o->loc);
		st[k] = s->op[i].res;
	}
	*bn = xrealloc(*bn, (*nbn + 1) * sizeof **bn);
	(*bn)[(*nbn)++] = (BnUpd){ a[3], a[4], st[0], st[1], shape_numel(&x->sh) / x->sh.d[1], o->fa[1], o->loc };
	a[3] = st[0];
	a[4] = st[1];
	i = func_op(s, OP_BATCHNORM, PH_FWD, a, 5, (int64_t[MAXIA]){ 1 }, 0, o->fa,
	            &fw->val[o->res].ty, fw->val[o->res].name, o->loc);
	map[o->res] = s->op[i].res;
	return 1;
}

/* copy_out of every output that value v of fw is (the step's outputs, MODEL_step_out). */
static void
copy_outs(Func *s, const Func *fw, int v, const int *map)
{
	for (int k = 0; k < fw->nout; k++)
		if (fw->out[k] == v) {
			int64_t ia[MAXIA] = { k, 0 };
			func_op(s, OP_COPYOUT, PH_FWD, &map[v], 1, ia, 0, NULL, NULL, NULL, fw->val[v].loc);
		}
}

/* The step's forward: fw's ops the loss or an output needs, as PH_FWD (in training form),
 * after the tick of dropout's counter drop (if >= 0), each output copied out right after it is
 * made; d->need from fw's marks. */
static void
forward(Diff *d, Func *fw, int drop, BnUpd **bn, int *nbn)
{
	Func *s = d->f;
	int *map = xmalloc(fw->nval * sizeof *map);
	uint8_t *live = xcalloc(fw->nval, 1), *need = xcalloc(fw->nval, 1);

	mark(fw, fw->loss, 1, live, need);
	for (int v = 0; v < fw->nval; v++)
		map[v] = fw->val[v].decl >= 0 ? fw->val[v].decl : -1;
	if (drop >= 0)
		func_op(s, OP_TICK, PH_UPD, &drop, 1, NULL, 0, NULL, NULL, NULL, s->mod->opt.loc);
	for (int v = 0; v < fw->mod->ndecl; v++)
		copy_outs(s, fw, v, map);
	for (int i = 0; i < fw->nop; i++)
		if (fw->op[i].res >= 0 && live[fw->op[i].res]) {
			if (!train_form(s, fw, &fw->op[i], map, drop, bn, nbn))
				copy_op(s, fw, &fw->op[i], map, PH_FWD);
			copy_outs(s, fw, fw->op[i].res, map);
		}
	s->loss = map[fw->loss];
	d->grad = xmalloc(s->nval * sizeof *d->grad);
	d->need = xcalloc(s->nval, 1);
	d->npend = xcalloc(s->nval, sizeof *d->npend);
	d->pend = xcalloc(s->nval, sizeof *d->pend);
	d->nv = s->nval;
	for (int v = 0; v < s->nval; v++)
		d->grad[v] = -1;
	for (int v = 0; v < fw->nval; v++)
		if (map[v] >= 0)
			d->need[map[v]] = need[v];
	free(map);
	free(live);
	free(need);
}

/* The seed d(loss) = 1 and the reverse sweep over the step's nfwd forward ops. d->grad and
 * d->need cover the forward values only: values made here are never differentiated.
 * Returns 0, or -1 after a diagnostic. */
static int
sweep(Diff *d, Src *src, Names *names)
{
	Func *s = d->f;
	int nfwd = s->nop, nv = s->nval, i;
	Type sc = { F32, { 0, {0} } };
	double one[MAXFA] = { 1 };

	d->base = s->val[s->loss].name;
	d->loc = s->val[s->loss].loc;
	if (d->need[s->loss]) {
		i = func_op(s, OP_CONST, PH_BWD, &nfwd, 0, NULL, 0, one, &sc,
		            asprintf_a(s->mod->arena, "g.%s", d->base), d->loc);
		d->grad[s->loss] = s->op[i].res;
	}
	for (i = nfwd - 1; i >= 0; i--) {
		Op o = s->op[i];     /* a copy: the rules append ops, s->op moves */
		if (o.res >= 0)
			d_flush(d, o.res);
		if (o.res < 0 || d->grad[o.res] < 0 || !d->need[o.res])
			continue;
		if (opinfo[o.kind].grad == gr_none) {
			diag(src, o.loc, "%s cannot be differentiated", opinfo[o.kind].name);
			return -1;
		}
		d->base = s->val[o.res].name;
		d->loc = o.loc;
		gname(d, o.res, names);
		opinfo[o.kind].grad(d, &o);
	}
	for (int v = 0; v < nv && v < d->nv; v++)          /* the params' gradients */
		d_flush(d, v);
	return 0;
}

/* Clipping by global norm (PyTorch's clip_grad_norm_): each gradient's sum of squares, their
 * total, and the coefficient from it and the clip_norm hyperparameter. Every update then takes
 * its gradient scaled by the coefficient, so no update can run before the last gradient is
 * complete: the IR states that dependence, and liveness and the planner price the gradients
 * held until then. Returns the coefficient's value. */
static int
clip_coef(Module *m, Func *s, const int *grad, const int *hy)
{
	Type sc = { F32, { 0, {0} } };
	int tot = -1;

	for (int p = 0; p < m->ndecl; p++) {
		int g = grad[p], i, a[2];
		if (m->decl[p].role != R_PARAM || g < 0)
			continue;
		i = func_op(s, OP_SUMSQ, PH_BWD, &g, 1, NULL, 0, NULL, &sc,
		            asprintf_a(m->arena, "gn.%s", m->decl[p].name), m->opt.loc);
		if (tot < 0) {
			tot = s->op[i].res;
			continue;
		}
		a[0] = tot;
		a[1] = s->op[i].res;
		i = func_op(s, OP_ADD, PH_BWD, a, 2, NULL, 0, NULL, &sc, "gnorm2", m->opt.loc);
		tot = s->op[i].res;
	}
	if (tot < 0)
		return -1;
	{
		int a[2] = { tot, hy[HCLIP] };
		int i = func_op(s, OP_CLIPCOEF, PH_BWD, a, 2, NULL, 0, NULL, &sc, "clip.coef", m->opt.loc);
		return s->op[i].res;
	}
}

/* The optimizer's decls of a module, as states() made them. */
struct OptDecls {
	int *st;          /* st[2p], st[2p+1]: param p's state decls, or -1 */
	int tick;         /* adam's counter, or -1 */
	int hy[NHYP];     /* the hyperparameters' decls, or -1 */
	int drop;         /* dropout's step counter (a buffer), or -1 */
};

OptDecls *
autodiff_opt_decls(Module *m, Src *src)
{
	OptDecls *od = xcalloc(1, sizeof *od);

	od->st = xmalloc((2 * m->ndecl + 1) * sizeof *od->st);   /* params' decls: state comes after */
	if (states(m, src, od->st, &od->tick, od->hy, &od->drop)) {
		autodiff_opt_free(od);
		return NULL;
	}
	return od;
}

void
autodiff_opt_free(OptDecls *od)
{
	if (od)
		free(od->st);
	free(od);
}

/* The updates, params in declaration order; adam ticks its counter first. With clipping, the
 * scaled gradients come first (bwd), so the phases stay in order. */
void
autodiff_updates(Module *m, Func *s, const int *grad, const OptDecls *od)
{
	int first = 1, coef = od->hy[HCLIP] >= 0 ? clip_coef(m, s, grad, od->hy) : -1;
	int *g = xmalloc((m->ndecl + 1) * sizeof *g);

	for (int p = 0; p < m->ndecl; p++) {
		g[p] = m->decl[p].role == R_PARAM ? grad[p] : -1;
		if (g[p] < 0 || coef < 0)
			continue;
		int a[2] = { g[p], coef };
		int i = func_op(s, OP_MUL, PH_BWD, a, 2, NULL, 0, NULL, &s->val[g[p]].ty,
		                asprintf_a(m->arena, "gc.%s", m->decl[p].name), m->opt.loc);
		g[p] = s->op[i].res;
	}
	for (int p = 0; p < m->ndecl; p++) {
		if (g[p] < 0)
			continue;
		if ((m->opt.kind == OPT_ADAM || m->opt.kind == OPT_ADAMW) && first)
			func_op(s, OP_TICK, PH_UPD, &od->tick, 1, NULL, 0, NULL, NULL, NULL, m->opt.loc);
		first = 0;
		update(s, &m->opt, p, g[p], &od->st[2 * p], od->tick, od->hy);
	}
	free(g);
}

/* The batch norms' running statistics, folded in after the backward (buffers, not trained). */
static void
bn_updates(Func *s, const BnUpd *bn, int nbn)
{
	for (int k = 0; k < nbn; k++) {
		int a[4] = { bn[k].rm, bn[k].rv, bn[k].mean, bn[k].var };
		int64_t ia[MAXIA] = { bn[k].count };
		double fa[MAXFA] = { bn[k].momentum };
		char err[256];
		if (op_infer(s, OP_BN_UPDATE, a, 4, ia, 0, fa, &(Type){0}, err, sizeof err))
			die("autodiff made a bad batch_norm_update: %s", err);
		func_op(s, OP_BN_UPDATE, PH_UPD, a, 4, ia, 0, fa, NULL, NULL, bn[k].loc);
	}
}

/* The forward and backward of m's loss into d->f (the batch norms' updates in *bn); the final
 * gradients renamed g.P. */
static int
differentiate(Module *m, Diff *d, Src *src, int drop, BnUpd **bn, int *nbn)
{
	Names names = {0};
	int ok;

	forward(d, m->fwd, drop, bn, nbn);
	ok = sweep(d, src, &names);
	for (int p = 0; ok == 0 && p < m->ndecl; p++)
		if (m->decl[p].role == R_PARAM)
			gname(d, p, &names);
	for (int i = 0; ok == 0 && i < names.n; i++)
		d->f->val[names.v[i]].name = names.name[i];
	free(names.v);
	free(names.name);
	return ok;
}

Func *
autodiff_grads(Module *m, Src *src, const OptDecls *od, int *grad, int *seed)
{
	Diff d = {0};
	int *map = NULL, ok, nbn = 0;
	Func *r = NULL;
	BnUpd *bn = NULL;

	if (m->fwd->loss < 0)
		die("autodiff of a model without a loss");
	if (refuse(m, src))
		return NULL;
	d.f = func_new(m, "step");
	ok = differentiate(m, &d, src, od->drop, &bn, &nbn);
	if (ok == 0) {
		bn_updates(d.f, bn, nbn);
		map = xmalloc((d.f->nval + 1) * sizeof *map);
		r = func_rebuild(d.f, NULL, map);
		for (int v = 0; v < m->ndecl; v++)
			grad[v] = m->decl[v].role == R_PARAM && d.grad[v] >= 0 ? map[d.grad[v]] : -1;
		*seed = d.need[d.f->loss] ? map[d.grad[d.f->loss]] : -1;
	}
	func_free(d.f);
	free(map);
	free(bn);
	free(d.grad);
	free(d.need);
	diff_free_pend(&d);
	return r;
}

int
autodiff(Module *m, Src *src)
{
	OptDecls *od;
	Diff d = {0};
	int ok, *grad, nbn = 0;
	BnUpd *bn = NULL;

	if (m->fwd->loss < 0)
		die("autodiff of a model without a loss");
	if (refuse(m, src) || !(od = autodiff_opt_decls(m, src)))
		return -1;
	d.f = func_new(m, "step");
	ok = differentiate(m, &d, src, od->drop, &bn, &nbn);
	if (ok == 0) {
		grad = xmalloc((m->ndecl + 1) * sizeof *grad);
		for (int p = 0; p < m->ndecl; p++)
			grad[p] = d.grad[p];
		autodiff_updates(m, d.f, grad, od);
		bn_updates(d.f, bn, nbn);
		free(grad);
		func_adopt(d.f, func_rebuild(d.f, NULL, NULL));   /* rehash the new names */
		m->step = d.f;
		m->fwd->loss = -1;
	} else {
		func_free(d.f);
	}
	autodiff_opt_free(od);
	free(bn);
	free(d.grad);
	free(d.need);
	diff_free_pend(&d);
	return ok;
}
