/* segments.c: the forward cut into segments where a single value crosses from one op to the
 * next, the skeleton both tso.c (its DP's stages) and chen.c (sqrt(n) checkpoints) plan on.
 *
 * needs: a Prob. fills: the forward ops, the cuts, the value crossing each cut, each value's
 * last early use, and which values are long-lived (skip connections, residual streams: left
 * out of the cut test, kept or swapped as a whole). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static int
cmp_desc(const void *a, const void *b, void *span)
{
	int x = ((int *)span)[*(const int *)a], y = ((int *)span)[*(const int *)b];
	return (x < y) - (x > y);
}

/* Boundary k lies after forward op fops[k]; pos[i] is i's index among the forward ops. */
int
plan_segments(const Prob *p, int **fopsp, int *nfp, int **segp, int **bndp, int **endpp,
             uint8_t **longp)
{
	int n = p->n, nf = 0, nl = 0, bestk = 0, maxcuts = -1, ns;
	int *fops = xmalloc((n + 1) * sizeof *fops), *pos = xmalloc((n + 1) * sizeof *pos);
	int *endp = xmalloc((n + 1) * sizeof *endp), *span = xcalloc(n + 1, sizeof *span);
	int *lst = xmalloc((n + 1) * sizeof *lst), *cross = xmalloc((n + 1) * sizeof *cross);
	int *cuts = xmalloc((n + 1) * sizeof *cuts);
	uint8_t *lng = xcalloc(n + 1, 1);

	for (int i = 0; i < n; i++)
		if (p->fwd[i])
			pos[i] = nf, fops[nf++] = i;
	/* A value crosses the boundaries from its own to before its last early forward use. */
	for (int i = 0; i < n; i++) {
		int e = pos[i];
		if (!p->fwd[i])
			continue;
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			if (u <= p->lastearly[i] && p->fwd[u] && pos[u] > e)
				e = pos[u];
		}
		endp[i] = e;
		span[i] = e - pos[i];
		if (span[i] >= 3)
			lst[nl++] = i;
	}
	qsort_r(lst, nl, sizeof *lst, cmp_desc, span);
	if (nl > 32)
		nl = 32;
	if (nl > nf / 4)
		nl = nf / 4;
	/* Leave out the k longest spans; take the smallest k that gets 90% of the most cuts. */
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k <= nl; k++) {
			int nc = 0;
			memset(cross, 0, (nf + 1) * sizeof *cross);
			memset(lng, 0, n + 1);
			for (int j = 0; j < k; j++)
				lng[lst[j]] = 1;
			for (int i = 0; i < n; i++)
				if (p->fwd[i] && !lng[i] && span[i] > 0) {
					cross[pos[i]]++;
					cross[endp[i]]--;
				}
			for (int b = 0, c = 0; b + 1 < nf; b++) {
				c += cross[b];
				nc += c <= 1;
			}
			if (pass == 0 && nc > maxcuts)
				maxcuts = nc;
			if (pass == 1 && 10 * nc >= 9 * maxcuts) {
				bestk = k;
				break;
			}
		}
	}
	memset(cross, 0, (nf + 1) * sizeof *cross);
	memset(lng, 0, n + 1);
	for (int j = 0; j < bestk; j++)
		lng[lst[j]] = 1;
	for (int i = 0; i < n; i++)
		if (p->fwd[i] && !lng[i] && span[i] > 0) {
			cross[pos[i]]++;
			cross[endp[i]]--;
		}
	ns = 0;
	cuts[ns++] = 0;
	for (int b = 0, c = 0; b + 1 < nf; b++) {
		c += cross[b];
		if (c <= 1)
			cuts[ns++] = b + 1;
	}
	if (nf == 0)
		ns = 0;
	/* The boundary value of each cut: the one value still crossing there. */
	*bndp = xmalloc((ns + 1) * sizeof **bndp);
	for (int s = 0; s < ns; s++) {
		(*bndp)[s] = -1;
		for (int i = 0; s > 0 && i < n; i++)
			if (p->fwd[i] && !lng[i] && pos[i] < cuts[s] && endp[i] >= cuts[s])
				(*bndp)[s] = i;
	}
	free(pos); free(span); free(lst); free(cross);
	*endpp = endp;
	*fopsp = fops;
	*nfp = nf;
	*segp = cuts;
	*longp = lng;
	return ns;
}
