/* ilpblk.c: the ILP in blocks, for steps too large for one integer program (after Rockmate).
 *
 * needs: a Prob, a budget, a time limit, a plan that fits (tso's).
 * fills: a Plan never slower than that start. The forward's decided values are cut into
 *        blocks of consecutive ops; for each block in turn the ILP re-decides that block's
 *        recomputations and swaps (solve_ilp_part) with every other value as the current plan
 *        has it: the bytes those take at each stage, measured on the current plan's IR, are
 *        the program's fixed profile. The merged plan is measured and kept when it fits and
 *        is faster. A recomputation the rest of the plan makes may read a block value the
 *        program let go: remat then reads the latest instance, which liveness keeps alive, so
 *        the plan stays correct and the measurement decides. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { BLK = 24 };          /* decided values per block */

/* For every op of remat(p, pl), in the order remat emits them: the stage (the op of p it
 * belongs to) and the op of p whose value it holds (-1: none, or a host copy). */
static int
walk(const Prob *p, const Plan *pl, int *stage, int *orig)
{
	int k = 0, n = p->n;

	for (int t = 0; t < n; t++) {
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].in == t)
				stage[k] = t, orig[k++] = pl->sw[s].op;
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].inwait == t)
				stage[k] = t, orig[k++] = -1;
		for (int i = 0; i < t; i++)
			if (pl->rec[(size_t)t * n + i])
				stage[k] = t, orig[k++] = i;
		stage[k] = t, orig[k++] = t;
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].out == t)
				stage[k] = t, orig[k++] = -1;
		for (int s = 0; s < pl->nsw; s++)
			if (pl->sw[s].outwait == t)
				stage[k] = t, orig[k++] = -1;
	}
	return k;
}

/* fix[t]: the most bytes live in stage t of pl's IR that are not instances of masked values. */
static void
fixed_profile(const Prob *p, const Plan *pl, const uint8_t *mask, int64_t *fix)
{
	Func *g = remat(p, pl);
	Live l;
	int *stage = xmalloc((g->nop + 1) * sizeof *stage), *orig = xmalloc((g->nop + 1) * sizeof *orig);
	int64_t *d = xcalloc(g->nop + 2, sizeof *d), acc = 0;

	live_fill(&l, g);
	if (walk(p, pl, stage, orig) != g->nop)
		die("ilpblk: the plan's IR is not what remat emits");
	for (int k = 0; k < g->nop; k++) {
		int v = g->op[k].res;
		if (v < 0 || orig[k] < 0 || !mask[orig[k]] || l.birth[v] > l.last[v])
			continue;
		d[l.birth[v]] += l.bytes[v];
		d[l.last[v] < g->nop ? l.last[v] + 1 : g->nop] -= l.bytes[v];
	}
	for (int t = 0; t < p->n; t++)
		fix[t] = 0;
	for (int k = 0; k < g->nop; k++) {
		int64_t b;
		acc += d[k];
		b = l.at[k] - acc;
		if (b > fix[stage[k]])
			fix[stage[k]] = b;
	}
	live_free(&l);
	func_free(g);
	free(stage);
	free(orig);
	free(d);
}

/* cur with the masked values' decisions taken from part. */
static void
merge(const Prob *p, const Plan *cur, const Plan *part, const uint8_t *mask, Plan *out)
{
	int n = p->n;

	plan_copy(out, cur);
	for (int t = 0; t < n; t++)
		for (int i = 0; i < t; i++)
			if (mask[i])
				out->rec[(size_t)t * n + i] = part->rec[(size_t)t * n + i];
	out->nsw = 0;
	for (int s = 0; s < cur->nsw; s++)
		if (!mask[cur->sw[s].op])
			out->sw[out->nsw++] = cur->sw[s];
	for (int s = 0; s < part->nsw; s++)
		if (mask[part->sw[s].op])
			out->sw[out->nsw++] = part->sw[s];
}

int
solve_ilp_blocks(const Prob *p, int64_t budget, double tlim, const Plan *warm, Plan *pl)
{
	int n = p->n, nd = 0, nb;
	int *dv = xmalloc((n + 1) * sizeof *dv);
	uint8_t *mask = xcalloc(n + 1, 1);
	int64_t *fix = xmalloc((n + 1) * sizeof *fix);
	Plan *part, *try;
	double t0 = plan_clock();
	const char *stop = "optimal";

	if (!warm || !warm->feasible) {
		free(dv); free(mask); free(fix);
		return -1;
	}
	plan_copy(pl, warm);
	for (int i = 0; i < n; i++)
		if (p->fwd[i] && !p->isres[i] && p->b[i] > 0)
			dv[nd++] = i;
	nb = (nd + BLK - 1) / BLK;
	part = plan_new(p);
	try = plan_new(p);
	for (int b = 0; b < nb; b++) {
		/* a share of the time left when there is a clock; else each block's node limit */
		double left = tlim - (plan_clock() - t0);
		memset(mask, 0, n + 1);
		for (int q = b * BLK; q < nd && q < (b + 1) * BLK; q++)
			mask[dv[q]] = 1;
		if (tlim > 0 && left <= 0.05) {
			stop = "time limit";
			break;
		}
		fixed_profile(p, pl, mask, fix);
		if (solve_ilp_part(p, budget, tlim > 0 ? left / (nb - b) : 0, pl, mask, fix, part)) {
			stop = part->stop ? part->stop : "no incumbent";   /* a block not improved */
			continue;
		}
		if (part->stop && strcmp(part->stop, "optimal"))
			stop = part->stop;      /* the last block that was not solved to the end */
		merge(p, pl, part, mask, try);
		plan_eval(p, try, budget);
		if (try->feasible && try->time < pl->time)
			plan_copy(pl, try);
	}
	/* Each block's program is solved to optimality or to its share of the time; nothing
	 * bounds the whole: no gap is claimed. */
	pl->solver = "ilp-blocks";
	pl->stop = stop;
	pl->gap = -1;
	pl->obj = -1;
	pl->stime = plan_clock() - t0;
	plan_free(part);
	plan_free(try);
	free(dv);
	free(mask);
	free(fix);
	return 0;
}
