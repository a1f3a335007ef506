/* remat.c: a plan into IR: recomputations, swaps and their waits inserted, late uses renamed.
 *
 * needs: a Prob of a step and a Plan of it.
 * fills: a new function (the caller installs it): before op t, the swap_ins that start there,
 *        the waits of the swap_ins first read there, then the plan's `rec` copies of forward ops
 *        (phase PH_REC, of = the value they recompute); op t itself; after it, the swap_outs
 *        that start there and the waits that end there. Every operand reads the latest
 *        instance of its value, so the plan decides which copy a use sees. Waits sit where
 *        the data is needed or the bytes are released, never after every copy. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static int
emit(Func *g, const Func *f, const Op *op, Phase ph, const int *cur, const char *name)
{
	int a[64], k;
	Type ty = {0};

	if (op->nargs > 64)
		die("remat: op with %d operands", op->nargs);
	for (int i = 0; i < op->nargs; i++)
		if ((a[i] = cur[op->args[i]]) < 0)
			die("remat: %%%s is used before the plan brings it back", f->val[op->args[i]].name);
	if (op->res >= 0)
		ty = f->val[op->res].ty;
	k = func_op(g, op->kind, ph, a, op->nargs, op->ia, op->nia, op->fa, &ty, name, op->loc);
	return k;
}

static int
mem_op(Func *g, Opk kind, int v, const char *name)
{
	Type ty = g->val[v].ty;
	int k = func_op(g, kind, PH_MEM, &v, 1, NULL, 0, NULL, &ty, name, (Loc){0, 0});
	return g->op[k].res;
}

static void
wait(Func *g, int v)
{
	func_op(g, OP_WAIT, PH_MEM, &v, 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
}

Func *
remat(const Prob *p, const Plan *pl)
{
	const Func *f = p->f;
	Func *g = func_new(f->mod, f->name);
	int n = p->n;
	int *cur = xmalloc(f->nval * sizeof *cur);
	int *orig = xmalloc((n + 1) * sizeof *orig);
	int *host = xmalloc((pl->nsw + 1) * sizeof *host);
	int *back = xmalloc((pl->nsw + 1) * sizeof *back);
	char nm[256];

	for (int v = 0; v < f->nval; v++)
		cur[v] = f->val[v].decl >= 0 ? v : -1;
	for (int t = 0; t < n; t++) {
		const Op *op = &f->op[t];
		int k;

		for (int s = 0; s < pl->nsw; s++) {
			const Swap *w = &pl->sw[s];
			int r = f->op[w->op].res;
			if (w->in == t) {
				snprintf(nm, sizeof nm, "%s.in", f->val[r].name);
				back[s] = cur[r] = mem_op(g, OP_SWAPIN, host[s], nm);
			}
		}
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].inwait == t)
				wait(g, back[s]);
		for (int i = 0; i < t; i++) {
			const Op *o;
			if (!pl->rec[(size_t)t * n + i])
				continue;
			o = &f->op[i];
			snprintf(nm, sizeof nm, "%s.rec", f->val[o->res].name);
			k = emit(g, f, o, PH_REC, cur, nm);
			g->op[k].of = orig[i];
			cur[o->res] = g->op[k].res;
		}
		k = emit(g, f, op, op->phase, cur, op->res >= 0 ? f->val[op->res].name : NULL);
		orig[t] = g->op[k].res;
		g->op[k].of = op->of >= 0 ? cur[op->of] : -1;
		if (op->res >= 0)
			cur[op->res] = g->op[k].res;
		for (int s = 0; s < pl->nsw; s++) {
			const Swap *w = &pl->sw[s];
			int r = f->op[w->op].res;
			if (w->out == t) {
				snprintf(nm, sizeof nm, "%s.host", f->val[r].name);
				host[s] = mem_op(g, OP_SWAPOUT, cur[r], nm);
			}
		}
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].outwait == t)
				wait(g, host[s]);
	}
	for (int k = 0; k < f->nout; k++)
		func_output(g, f->outname[k], cur[f->out[k]]);
	g->loss = f->loss >= 0 ? cur[f->loss] : -1;
	free(cur);
	free(orig);
	free(host);
	free(back);
	return g;
}

/* The heap parts of a function; its names and operand lists stay in the module's arena. */
void
func_free(Func *g)
{
	if (!g)
		return;
	free(g->val);
	free(g->op);
	free(g->htab);
	free(g->out);
	free(g->outname);
	memset(g, 0, sizeof *g);
}
