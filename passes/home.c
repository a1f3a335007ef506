/* home.c: optimizer state that lives in host memory: the copies around each update.
 *
 * needs: a step in execution order (its updates hoisted); the state decls moving home
 *        (Decl.host set by the caller, so that the new function's values mirror it).
 * fills: a new function (the caller installs it): for each update u of such a state d,
 *        `mem %d.in = swap_in %d` early enough that the compute before u covers the copy
 *        (its bytes occupy the accelerator from there), `mem wait %d.in` right before u,
 *        u on %d.in, `mem %d.home = swap_home %d, %d.in` right after u, and its wait where
 *        the compute after u covers that copy (the bytes of %d.in are freed there), or last.
 *        Nothing else moves; the update computes the same bits on the copy. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

int
home_candidate(const Func *f, int d)
{
	const Module *m = f->mod;
	int writer = -1;

	if (m->decl[d].role != R_STATE || type_bytes(&m->decl[d].ty) == 0)
		return 0;
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		for (int k = 0; k < o->nargs; k++) {
			if (o->args[k] != d)
				continue;
			if (!(opinfo[o->kind].flags & F_MUT) || o->kind == OP_TICK || k >= opinfo[o->kind].nwritten ||
			    writer >= 0)
				return 0;
			writer = i;
		}
	}
	return writer >= 0;
}

/* Which operand of op o is a moving state decl (-1: none), from k on. */
static int
moving_arg(const Func *f, const Op *o, int k)
{
	if (!(opinfo[o->kind].flags & F_MUT))
		return -1;
	for (; k < o->nargs && k < opinfo[o->kind].nwritten; k++)
		if (f->val[o->args[k]].decl >= 0 && f->mod->decl[o->args[k]].host)
			return k;
	return -1;
}

Func *
home_state(const Func *f, const Target *tg)
{
	Func *g = func_new(f->mod, f->name);
	int n = f->nop, *cur = xmalloc((f->nval + 1) * sizeof *cur);
	int *inat = xmalloc((n + 1) * sizeof *inat), *wat = xmalloc((n + 1) * sizeof *wat);
	int *copy = xcalloc(f->nval + 1, sizeof *copy), *home = xcalloc(f->nval + 1, sizeof *home);
	double *t = xmalloc((n + 1) * sizeof *t);
	char nm[256];

	for (int i = 0; i < n; i++)
		t[i] = op_time(tg, f, &f->op[i]);
	/* where each update's copies start (in) and end (wait on the way back); -1: none */
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		double c = 0, need;
		int j;
		inat[i] = wat[i] = -1;
		if (moving_arg(f, o, 0) < 0)
			continue;
		need = 0;
		for (int k = moving_arg(f, o, 0); k >= 0; k = moving_arg(f, o, k + 1))
			need += tg->copylat + (double)type_bytes(&f->val[o->args[k]].ty) / tg->copybw;
		for (j = i; j > 0 && c < need; j--)
			c += t[j - 1];
		inat[i] = j;
		for (c = 0, j = i + 1; j < n && c < need; j++)
			c += t[j];
		wat[i] = j - 1 > i ? j - 1 : i;
	}
	for (int v = 0; v < f->nval; v++)
		cur[v] = f->val[v].decl >= 0 ? v : -1;
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		int a[64], k;
		Type ty = {0};

		/* swap_ins that start here, for the updates at or after op i */
		for (int u = i; u < n; u++) {
			if (inat[u] != i)
				continue;
			for (int m = moving_arg(f, &f->op[u], 0); m >= 0; m = moving_arg(f, &f->op[u], m + 1)) {
				int d = f->op[u].args[m];
				Type dt = f->val[d].ty;
				snprintf(nm, sizeof nm, "%s.in", f->val[d].name);
				k = func_op(g, OP_SWAPIN, PH_MEM, &d, 1, NULL, 0, NULL, &dt, nm, (Loc){0, 0});
				copy[d] = g->op[k].res;
			}
		}
		if (o->nargs > 64)
			die("home: op with %d operands", o->nargs);
		for (int m = moving_arg(f, o, 0); m >= 0; m = moving_arg(f, o, m + 1))
			func_op(g, OP_WAIT, PH_MEM, &copy[o->args[m]], 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
		for (int q = 0; q < o->nargs; q++) {
			a[q] = cur[o->args[q]];
			if (f->val[o->args[q]].decl >= 0 && f->mod->decl[o->args[q]].host && (opinfo[o->kind].flags & F_MUT))
				a[q] = copy[o->args[q]];
			if (a[q] < 0)
				die("home: %%%s has no instance", f->val[o->args[q]].name);
		}
		if (o->res >= 0)
			ty = f->val[o->res].ty;
		k = func_op(g, o->kind, o->phase, a, o->nargs, o->ia, o->nia, o->fa, &ty,
		            o->res >= 0 ? f->val[o->res].name : NULL, o->loc);
		g->op[k].of = o->of >= 0 ? cur[o->of] : -1;
		if (o->res >= 0)
			cur[o->res] = g->op[k].res;
		for (int m = moving_arg(f, o, 0); m >= 0; m = moving_arg(f, o, m + 1)) {
			int d = o->args[m], h2[2] = { d, copy[d] };
			Type dt = f->val[d].ty;
			snprintf(nm, sizeof nm, "%s.home", f->val[d].name);
			k = func_op(g, OP_SWAPHOME, PH_MEM, h2, 2, NULL, 0, NULL, &dt, nm, (Loc){0, 0});
			home[d] = g->op[k].res;
		}
		/* waits on the copies home that end here */
		for (int u = 0; u <= i; u++) {
			if (wat[u] != i)
				continue;
			for (int m = moving_arg(f, &f->op[u], 0); m >= 0; m = moving_arg(f, &f->op[u], m + 1))
				func_op(g, OP_WAIT, PH_MEM, &home[f->op[u].args[m]], 1, NULL, 0, NULL, NULL, NULL,
				        (Loc){0, 0});
		}
	}
	for (int k = 0; k < f->nout; k++)
		func_output(g, f->outname[k], cur[f->out[k]]);
	g->loss = f->loss >= 0 ? cur[f->loss] : -1;
	free(cur);
	free(inat);
	free(wat);
	free(copy);
	free(home);
	free(t);
	return g;
}
