/* chen.c: sqrt(n) checkpointing (Chen et al. 2016), the baseline the other solvers must beat.
 *
 * needs: a Prob.
 * fills: a Plan: the forward's segments (tso.c's cuts) in groups of about sqrt(#segments);
 *        the value entering each group is kept, everything else the backward reads is
 *        recomputed from it; long-lived values are kept. If that does not fit the budget,
 *        other group sizes are tried (the best that fits, else the smallest peak). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static void
chen_modes(const Prob *p, int g, int ns, const int *bnd, const uint8_t *lng, uint8_t *mode)
{
	/* lng here: values spanning a third of the forward or more. */
	for (int i = 0; i < p->n; i++)
		mode[i] = p->cand[i] && lng[i] ? KEEP : REC;
	for (int s = g; s < ns; s += g)
		if (bnd[s] >= 0)
			mode[bnd[s]] = KEEP;
}

int
solve_chen(const Prob *p, int64_t budget, Plan *pl)
{
	int *fops, nf, *cuts, *bnd, *endp, ns, g0;
	uint8_t *lng, *mode = xmalloc(p->n + 1);
	Plan *tmp = plan_new(p);
	double t0 = plan_clock();

	ns = plan_segments(p, &fops, &nf, &cuts, &bnd, &endp, &lng);
	for (int q = 0; q < nf; q++)
		lng[fops[q]] = lng[fops[q]] && endp[fops[q]] - q >= (nf / 3 > 8 ? nf / 3 : 8);
	g0 = (int)ceil(sqrt((double)ns));
	if (g0 < 1)
		g0 = 1;
	pl->feasible = 0;
	pl->peak = INT64_MAX;
	/* sqrt first; other group sizes (a geometric few) only if it does not fit. */
	for (int g = g0, k = 0; g <= ns || k == 0; g = k == 0 ? 1 : g + (g + 3) / 4, k++) {
		if (k == 1 && pl->feasible)
			break;
		if (k > 0 && g == g0)
			continue;
		chen_modes(p, g, ns, bnd, lng, mode);
		plan_expand(p, mode, tmp);
		plan_eval(p, tmp, budget);
		if (plan_better(tmp, pl))
			plan_copy(pl, tmp);
	}
	pl->solver = "chen";
	pl->stime = plan_clock() - t0;
	free(fops); free(cuts); free(bnd); free(endp); free(lng); free(mode);
	plan_free(tmp);
	return 0;
}
