/* remat.c: a plan into IR: recomputations, swaps and their waits inserted, late uses renamed.
 *
 * needs: a Prob of a step and a Plan of it.
 * fills: a new function (the caller installs it): before op t, the swap_ins that start there,
 *        the waits of the swap_ins first read there, then the plan's `rec` copies of forward ops
 *        (phase PH_REC, of = the value they recompute); op t itself; after it, the swap_outs
 *        that start there and the waits that end there. Every operand reads the latest
 *        instance of its value, so the plan decides which copy a use sees. Waits sit where
 *        the data is needed or the bytes are released, never after every copy. A workspace
 *        belongs to the one op that reads it: where the plan hands one instance of a
 *        workspace to two ops (an op and its recomputation), the second gets a new workspace
 *        right before it, which holds no bytes longer than the instance the plan kept. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static int
emit(Func *g, const Func *f, const Op *op, Phase ph, const int *cur, const char *name)
{
	int a[op->nargs ? op->nargs : 1], k;   /* a bucket's collective reads every gradient in it */
	Type ty = {0};

	for (int i = 0; i < op->nargs; i++)
		if ((a[i] = cur[op->args[i]]) < 0)
			die("remat: %%%s is used before the plan brings it back", f->val[op->args[i]].name);
	if (op->res >= 0)
		ty = f->val[op->res].ty;
	k = func_op(g, op->kind, ph, a, op->nargs, op->ia, op->nia, op->fa, &ty, name, op->loc);
	return k;
}

/* Before emitting op (of f) into g: if its workspace (F_WS, the operand after its own) is an
 * instance an earlier op already took (got[w] == cur[w]), a new `workspace` op (a
 * recomputation of f's, phase rec, when rec) takes its place in cur; got[w] records the
 * instance op takes. orig: g's value of each op of f emitted so far. */
static void
own_ws(Func *g, const Func *f, const Op *op, int *cur, int *got, const int *orig)
{
	const Op *wo;
	int w, d, k;
	char nm[256];

	if (!(opinfo[op->kind].flags & F_WS) || op->nargs <= opinfo[op->kind].nargs)
		return;
	w = op->args[op->nargs - 1];
	d = f->val[w].def;
	if (d < 0 || f->op[d].kind != OP_WORKSPACE)
		return;
	if (got[w] == cur[w]) {
		wo = &f->op[d];
		snprintf(nm, sizeof nm, "%s.ws", f->val[w].name);
		k = func_op(g, wo->kind, PH_REC, NULL, 0, wo->ia, wo->nia, wo->fa, &f->val[w].ty, nm, wo->loc);
		g->op[k].of = orig[d];
		cur[w] = g->op[k].res;
	}
	got[w] = cur[w];
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

/* The swaps by the op one of their ends is at (the int at offset off of a Swap): those at op
 * t are ix[first[t] .. first[t + 1]), in the plan's order. */
typedef struct Bk {
	int *first, *ix;
} Bk;

static void
bucket(Bk *b, const Plan *pl, size_t off, int n)
{
	int *at = xcalloc(n + 2, sizeof *at);

	b->first = xcalloc(n + 2, sizeof *b->first);
	b->ix = xmalloc((pl->nsw + 1) * sizeof *b->ix);
	for (int s = 0; s < pl->nsw; s++) {
		int t;
		memcpy(&t, (const char *)&pl->sw[s] + off, sizeof t);
		if (t < 0 || t >= n)
			die("remat: a swap at op %d of %d", t, n);
		b->first[t + 1]++;
	}
	for (int t = 0; t <= n; t++)
		at[t + 1] = b->first[t + 1] += b->first[t];
	for (int s = 0; s < pl->nsw; s++) {
		int t;
		memcpy(&t, (const char *)&pl->sw[s] + off, sizeof t);
		b->ix[at[t]++] = s;
	}
	free(at);
}

/* The plan into g, an empty function (its decls' values only). */
static Func *
build(const Prob *p, const Plan *pl, int *map, Func *g)
{
	const Func *f = p->f;
	int n = p->n;
	int *cur = xmalloc(f->nval * sizeof *cur);
	int *orig = xmalloc((n + 1) * sizeof *orig);
	int *host = xmalloc((pl->nsw + 1) * sizeof *host);
	int *back = xmalloc((pl->nsw + 1) * sizeof *back);
	int *got = xmalloc(f->nval * sizeof *got);
	char nm[256];
	Bk in, inw, out, outw;

	/* room for each op, twice (recomputations, workspaces, waits), and each swap's two copies
	 * and two waits: a plan with more recomputation grows it; remat_again keeps what it grew */
	func_reserve(g, 2 * n + 4 * pl->nsw + 64, g->nval + 2 * n + 2 * pl->nsw + 64);

	/* Large steps have many swaps and few recomputations per op: find both without a walk
	 * over all of them at every op (relax.c measures thousands of plans). */
	bucket(&in, pl, offsetof(Swap, in), n);
	bucket(&inw, pl, offsetof(Swap, inwait), n);
	bucket(&out, pl, offsetof(Swap, out), n);
	bucket(&outw, pl, offsetof(Swap, outwait), n);
	for (int v = 0; v < f->nval; v++) {
		cur[v] = f->val[v].decl >= 0 ? v : -1;
		got[v] = -1;
	}
	for (int t = 0; t < n; t++) {
		const Op *op = &f->op[t];
		const uint8_t *row = &pl->rec[(size_t)t * n];
		int k;

		for (int j = in.first[t]; j < in.first[t + 1]; j++) {
			int s = in.ix[j], r = f->op[pl->sw[s].op].res;
			snprintf(nm, sizeof nm, "%s.in", f->val[r].name);
			back[s] = cur[r] = mem_op(g, OP_SWAPIN, host[s], nm);
		}
		for (int j = inw.first[t]; j < inw.first[t + 1]; j++)
			wait(g, back[inw.ix[j]]);
		for (int i = 0; i < t; i++) {
			const Op *o;
			uint64_t w;
			if (!(i & 7) && i + 8 <= t && (memcpy(&w, row + i, 8), w == 0)) {
				i += 7;
				continue;
			}
			if (!row[i])
				continue;
			o = &f->op[i];
			snprintf(nm, sizeof nm, "%s.rec", f->val[o->res].name);
			own_ws(g, f, o, cur, got, orig);
			k = emit(g, f, o, PH_REC, cur, nm);
			g->op[k].of = orig[i];
			cur[o->res] = g->op[k].res;
			/* a param fetched again (plan_is_fetch): its copy is awaited at once */
			if (opinfo[o->kind].flags & F_COPY)
				wait(g, cur[o->res]);
		}
		own_ws(g, f, op, cur, got, orig);
		k = emit(g, f, op, op->phase, cur, op->res >= 0 ? f->val[op->res].name : NULL);
		orig[t] = g->op[k].res;
		if (map)
			map[t] = k;
		g->op[k].of = op->of >= 0 ? cur[op->of] : -1;
		if (op->res >= 0)
			cur[op->res] = g->op[k].res;
		for (int j = out.first[t]; j < out.first[t + 1]; j++) {
			int s = out.ix[j], r = f->op[pl->sw[s].op].res;
			const Op *so = &f->op[pl->sw[s].op];
			snprintf(nm, sizeof nm, "%s.host", f->val[r].name);
			/* A fetched param is not copied out: its home holds it; the swap_in fetches
			 * it from there again. */
			host[s] = so->kind == OP_SWAPIN ? so->args[0] : mem_op(g, OP_SWAPOUT, cur[r], nm);
		}
		for (int j = outw.first[t]; j < outw.first[t + 1]; j++)
			if (f->op[pl->sw[outw.ix[j]].op].kind != OP_SWAPIN)
				wait(g, host[outw.ix[j]]);
	}
	for (int k = 0; k < f->nout; k++)
		func_output(g, f->outname[k], cur[f->out[k]]);
	g->loss = f->loss >= 0 ? cur[f->loss] : -1;
	free(cur);
	free(orig);
	free(host);
	free(back);
	free(got);
	free(in.first), free(in.ix), free(inw.first), free(inw.ix);
	free(out.first), free(out.ix), free(outw.first), free(outw.ix);
	return g;
}

Func *
remat(const Prob *p, const Plan *pl)
{
	return remat_map(p, pl, NULL);
}

Func *
remat_map(const Prob *p, const Plan *pl, int *map)
{
	/* its names and operand lists in its own arena, freed with it: the planner builds and
	 * measures thousands of plans, which the module's arena would keep to the end (until
	 * 2026-12-02 the decls' value names, made before the arena, still went there) */
	Func *g = func_new_own(p->f->mod, p->f->name);

	return build(p, pl, map, g);
}

Func *
remat_again(const Prob *p, const Plan *pl, Func *g)
{
	/* g came from remat_map: the last build's names and operand lists, in g's own arena,
	 * are let go with it, and the arena's pages reused */
	if (!g->own)
		die("remat_again of a function remat did not make");
	arena_reset(g->own);
	func_reset(g);
	return build(p, pl, NULL, g);
}
