/* nn.c: the convolutional built-ins of tdsl, each expanded into IR ops.
 *
 * needs: a Ctx inside a model body and a call whose operands eval.c evaluated and bound.
 * fills: the ops (docs/ir.md, "Convolutional networks"), checked at the language's level first
 * so that a mistake is reported in the terms of the call, not of the ops it expands to. */
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "passes.h"      /* func_rebuild: the running statistics are declared after the body */

#define TS(t) type_str((t), (char[MAXRANK * 24 + 8]){0}, MAXRANK * 24 + 8)

/* An integer or a pair [h, w] (argument `what` of `fn`), each at least min; def when absent. */
static int
pair_arg(Ctx *c, Node *e, const char *fn, const char *what, int64_t def, int64_t min, int64_t *v)
{
	v[0] = v[1] = def;
	if (!e)
		return 0;
	if (e->kind == N_LIST) {
		if (e->nkid != 2)
			return err(c, e->loc, "%s: %s takes an integer or a pair [h, w], not %d values", fn,
			           what, e->nkid), -1;
		if (ieval(c, e->kid, &v[0]) || ieval(c, e->kid->next, &v[1]))
			return -1;
	} else if (ieval(c, e, &v[0])) {
		return -1;
	} else {
		v[1] = v[0];
	}
	if (v[0] < min || v[1] < min || v[0] > INT32_MAX || v[1] > INT32_MAX)
		return err(c, e->loc, "%s: %s must be %s, got [%lld, %lld]", fn, what,
		           min ? "positive" : "0 or more", (long long)v[0], (long long)v[1]), -1;
	return 0;
}

/* An NCHW input: f32 of rank 4. */
static int
nchw(Ctx *c, Loc loc, const char *fn, const Type *t)
{
	if (t->dt != F32 || t->sh.rank != 4)
		return err(c, loc, "%s needs an input f32[N, C, H, W], got %s", fn, TS(t)), -1;
	return 0;
}

/* Does a window (kernel k, stride s, padding p, dilation d; pairs) fit an NCHW x? */
static int
fits(Ctx *c, Loc loc, const char *fn, const Type *x, const int64_t *k, const int64_t *s,
     const int64_t *p, const int64_t *d)
{
	if (window_out(x->sh.d[2], k[0], s[0], p[0], d[0]) < 1 || window_out(x->sh.d[3], k[1], s[1], p[1], d[1]) < 1)
		return err(c, loc, "%s: a %lldx%lld kernel (dilation %lldx%lld) does not fit the input %s "
		           "padded by %lldx%lld", fn, (long long)k[0], (long long)k[1], (long long)d[0],
		           (long long)d[1], TS(x), (long long)p[0], (long long)p[1]), -1;
	return 0;
}

/* conv2d(x, w, b?, stride, padding, dilation, groups), PyTorch's: the op conv2d, with its
 * workspace (the columns of a chunk of images: none for a pointwise or depthwise convolution), then the
 * bias added as f32[Cout, 1, 1]. */
Val
nn_conv2d(Ctx *c, Node *n, const int *args, Node **kv, const char *hint)
{
	const Type *x = &c->f->val[args[0]].ty, *w = &c->f->val[args[1]].ty;
	int64_t st[2], pd[2], dl[2], g = 1, k[2];
	int b = -1, ops[3] = { args[0], args[1], -1 };
	Type r = { F32, { 0, { 0 } } }, ws;
	Val y;

	if (nchw(c, n->loc, "conv2d", x))
		return ERR;
	if (w->dt != F32 || w->sh.rank != 4)
		return err(c, n->kid->next->loc, "conv2d needs a weight f32[Cout, Cin/groups, kh, kw], got %s",
		           TS(w));
	if (pair_arg(c, kv[1], "conv2d", "stride", 1, 1, st) || pair_arg(c, kv[2], "conv2d", "padding", 0, 0, pd) ||
	    pair_arg(c, kv[3], "conv2d", "dilation", 1, 1, dl) || (kv[4] && ieval(c, kv[4], &g)))
		return ERR;
	if (g < 1 || x->sh.d[1] % g || w->sh.d[0] % g)
		return err(c, kv[4] ? kv[4]->loc : n->loc, "conv2d: groups=%lld must divide the input's %lld "
		           "channels and the weight's %lld", (long long)g, (long long)x->sh.d[1],
		           (long long)w->sh.d[0]);
	if (w->sh.d[1] * g != x->sh.d[1])
		return err(c, n->kid->next->loc, "conv2d: the weight %s with groups=%lld takes %lld input "
		           "channels, the input %s has %lld", TS(w), (long long)g,
		           (long long)(w->sh.d[1] * g), TS(x), (long long)x->sh.d[1]);
	k[0] = w->sh.d[2];
	k[1] = w->sh.d[3];
	if (fits(c, n->loc, "conv2d", x, k, st, pd, dl))
		return ERR;
	if (kv[0]) {
		const Type *bt;
		if ((b = tensor(c, eval(c, kv[0], NULL), kv[0]->loc, NULL)) < 0)
			return ERR;
		bt = &c->f->val[b].ty;
		if (bt->dt != F32 || bt->sh.rank != 1 || bt->sh.d[0] != w->sh.d[0])
			return err(c, kv[0]->loc, "conv2d: the bias must be f32[%lld] for the weight %s, got %s",
			           (long long)w->sh.d[0], TS(w), TS(bt));
	}
	{
		int64_t ia[MAXIA] = { st[0], st[1], pd[0], pd[1], dl[0], dl[1], g };
		if (conv_workspace(&x->sh, &w->sh, ia, &ws)) {
			int none[1] = { 0 };      /* func_op copies operands even when there are none */
			Val v = emit(c, OP_WORKSPACE, none, 0, NULL, 0, NULL, &ws, NULL, n->loc);
			if (v.k == V_ERR)
				return ERR;
			ops[2] = v.v;
		}
		y = emit(c, OP_CONV2D, ops, ops[2] < 0 ? 2 : 3, ia, 7, NULL, &r, b < 0 ? hint : NULL, n->loc);
	}
	if (y.k == V_ERR || b < 0)
		return y;
	ops[0] = y.v;
	r = (Type){ F32, { 3, { w->sh.d[0], 1, 1 } } };
	if ((y = emit(c, OP_RESHAPE, &b, 1, NULL, 0, NULL, &r, NULL, n->loc)).k == V_ERR)
		return ERR;
	ops[1] = y.v;
	r = (Type){ F32, { 0, { 0 } } };
	return emit(c, OP_ADD, ops, 2, NULL, 0, NULL, &r, hint, n->loc);
}

/* max_pool2d(x, kernel, stride = kernel, padding = 0, dilation = 1) and avg_pool2d(x, kernel,
 * stride = kernel, padding = 0, count_include_pad = 1), PyTorch's (ceil_mode off). */
Val
nn_pool2d(Ctx *c, Node *n, Opk k, int x, Node **kv, const char *hint)
{
	const Type *t = &c->f->val[x].ty;
	const char *fn = opinfo[k].name;
	int64_t kn[2], st[2], pd[2], dl[2] = { 1, 1 }, cip = 1;
	Type r = { F32, { 0, { 0 } } };

	if (nchw(c, n->loc, fn, t))
		return ERR;
	if (pair_arg(c, kv[0], fn, "kernel", 1, 1, kn) || pair_arg(c, kv[1], fn, "stride", 0, 1, st) ||
	    pair_arg(c, kv[2], fn, "padding", 0, 0, pd))
		return ERR;
	if (!kv[1])
		st[0] = kn[0], st[1] = kn[1];
	if (k == OP_MAXPOOL && pair_arg(c, kv[3], fn, "dilation", 1, 1, dl))
		return ERR;
	if (k == OP_AVGPOOL && kv[3] && ieval(c, kv[3], &cip))
		return ERR;
	if (cip != 0 && cip != 1)
		return err(c, kv[3]->loc, "count_include_pad must be 0 or 1, got %lld", (long long)cip);
	for (int i = 0; i < 2; i++)
		if (2 * pd[i] > dl[i] * (kn[i] - 1) + 1)
			return err(c, kv[2]->loc, "%s: padding %lld is more than half of the kernel's %lld", fn,
			           (long long)pd[i], (long long)(dl[i] * (kn[i] - 1) + 1));
	if (fits(c, n->loc, fn, t, kn, st, pd, dl))
		return ERR;
	{
		int64_t ia[MAXIA] = { kn[0], kn[1], st[0], st[1], pd[0], pd[1],
		                      k == OP_MAXPOOL ? dl[0] : cip, dl[1] };
		return emit(c, k, &x, 1, ia, k == OP_MAXPOOL ? 8 : 7, NULL, &r, hint, n->loc);
	}
}

/* batch_norm(x, gamma, beta, eps = 1e-5, momentum = 0.1), PyTorch's BatchNorm over every axis
 * but 1 of x [N, C, ...] (BatchNorm1d and 2d alike). The forward is inference (eval()): the op
 * normalizes with the running statistics; autodiff gives the step the training form. Until
 * the model's end the statistics' operands hold gamma (nn_buffers puts the buffers there). */
Val
nn_batchnorm(Ctx *c, Node *n, const int *args, Node **kv, const char *hint)
{
	const Type *x = &c->f->val[args[0]].ty;
	double fa[MAXFA] = { 1e-5, 0.1 };
	int64_t ia[MAXIA] = { 0 };
	int a[5] = { args[0], args[1], args[2], args[1], args[1] };
	Type r = { F32, { 0, { 0 } } };
	Val v;

	if (x->dt != F32 || x->sh.rank < 2)
		return err(c, n->loc, "batch_norm needs an input f32[N, C, ...], got %s", TS(x));
	for (int i = 1; i < 3; i++) {
		const Type *t = &c->f->val[args[i]].ty;
		const Node *a = i == 1 ? n->kid->next : n->kid->next->next;
		if (t->dt != F32 || t->sh.rank != 1 || t->sh.d[0] != x->sh.d[1])
			return err(c, a->loc, "batch_norm: %s must be f32[%lld] for the input %s, got %s",
			           i == 1 ? "gamma" : "beta", (long long)x->sh.d[1], TS(x), TS(t));
	}
	if (c->f->val[args[1]].decl < 0 || c->m->decl[c->f->val[args[1]].decl].role != R_PARAM)
		return err(c, n->kid->next->loc, "batch_norm: gamma must be a param (its running "
		           "statistics are named after it)");
	if ((kv[0] && neval(c, kv[0], &fa[0])) || (kv[1] && neval(c, kv[1], &fa[1])))
		return ERR;
	if (!(fa[0] > 0))
		return err(c, kv[0]->loc, "batch_norm: eps must be positive, got %g", fa[0]);
	if (!(fa[1] >= 0 && fa[1] <= 1))
		return err(c, kv[1]->loc, "batch_norm: momentum must be in [0, 1], got %g", fa[1]);
	if (shape_numel(&x->sh) / x->sh.d[1] < 2)
		return err(c, n->loc, "batch_norm needs more than one value per channel to train, %s "
		           "has one", TS(x));
	v = emit(c, OP_BATCHNORM, a, 5, ia, 1, fa, &r, hint, n->loc);
	if (v.k == V_TENSOR) {
		c->bn = xrealloc(c->bn, (c->nbn + 1) * sizeof *c->bn);
		c->bn[c->nbn++] = c->f->val[v.v].def;
	}
	return v;
}

/* dropout(x, p): zeros with probability p, the rest scaled by 1/(1-p), in training (the
 * step); the forward (inference) is the identity. Each dropout of the model gets its own key
 * (its number in the order of expansion) for the mask (passes/grad.c). */
Val
nn_dropout(Ctx *c, Node *n, int x, Node **kv, const char *hint)
{
	double fa[MAXFA] = { 0 };
	int64_t ia[MAXIA] = { c->ndropout, 0 };
	Type r = { F32, { 0, { 0 } } };

	if (neval(c, kv[0], &fa[0]))
		return ERR;
	if (!(fa[0] >= 0 && fa[0] <= 1))
		return err(c, kv[0]->loc, "dropout: p must be in [0, 1], got %g", fa[0]);
	if (c->ndropout == INT32_MAX)
		return err(c, n->loc, "more than %d dropouts", INT32_MAX);
	c->ndropout++;
	return emit(c, OP_DROPOUT, &x, 1, ia, 2, fa, &r, hint, n->loc);
}

void
nn_buffers(Ctx *c)
{
	Module *m = c->m;
	Func *f = m->fwd;
	int nd = m->ndecl, *st = xmalloc((2 * c->nbn + 1) * sizeof *st);

	m->fwd = NULL;        /* decls are added before functions: the forward is rebuilt below */
	for (int k = 0; k < c->nbn; k++) {
		const Op *o = &f->op[c->bn[k]];
		const Decl *g = &m->decl[f->val[o->args[1]].decl];
		Type t = g->ty;
		for (int s = 0; s < 2; s++) {
			char *nm = asprintf_a(m->arena, "%s.%s", g->name, s ? "running_var" : "running_mean");
			Loc loc = g->loc;
			if ((st[2 * k + s] = mod_find_decl(m, nm)) < 0)
				st[2 * k + s] = mod_decl(m, nm, R_BUFFER, t, (Init){ .kind = s ? INIT_ONES : INIT_ZEROS }, loc);
			g = &m->decl[f->val[o->args[1]].decl];     /* mod_decl may move the decls */
		}
	}
	m->fwd = f;
	if (m->ndecl > nd)
		func_adopt(f, func_rebuild(f, NULL, NULL));
	for (int k = 0; k < c->nbn; k++) {
		f->op[c->bn[k]].args[3] = st[2 * k];
		f->op[c->bn[k]].args[4] = st[2 * k + 1];
	}
	free(st);
}
