/* exhaust.c: every schedule of a small step searched, for the tests to hold the solvers
 * against: Checkmate's model (ilp.c's), stage by stage (a stage is an op of the step and
 * the recomputations right before it), every set of recomputations and every set of values
 * kept into the next stage, from every set of resident values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

static double kib(int64_t b) { return (double)b / 1024; }

double
stage_search(const Prob *p, int64_t budget)
{
	int n = p->n, nd = 0, id[32], at[64];
	int shi[64], rhi[64];
	uint8_t dec[64] = {0}, need[64][64];
	double *cost, *next, best = -1, B = kib(budget);

	if (n > 64)
		die("exhaustive: too many ops");
	memset(need, 0, sizeof need);
	for (int i = 0; i < n; i++) {
		dec[i] = p->fwd[i] && !p->isres[i] && p->b[i] > 0;
		at[i] = -1;
		if (dec[i])
			at[i] = nd, id[nd++] = i;
	}
	if (nd > 12)
		die("exhaustive: too many values");
	for (int i = n - 1; i >= 0; i--) {
		if (!dec[i])
			continue;
		shi[i] = p->lastuse[i];
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			if (dec[u] && rhi[u] > shi[i])
				shi[i] = rhi[u];
		}
		rhi[i] = shi[i] < p->clob[i] - 1 ? shi[i] : p->clob[i] - 1;
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			need[u][i] = 1;
			if (dec[u])
				for (int t = u + 1; t <= rhi[u]; t++)
					if (need[t][u])
						need[t][i] = 1;
		}
	}
	cost = xmalloc(((size_t)1 << nd) * sizeof *cost);
	next = xmalloc(((size_t)1 << nd) * sizeof *next);
	for (int s = 0; s < 1 << nd; s++)
		cost[s] = INFINITY;
	cost[0] = 0;
	for (int t = 0; t < n; t++) {
		int rc = 0, sn = 0;
		double fixed = kib(p->aprof[t]);
		for (int q = 0; q < nd; q++) {
			int i = id[q];
			if (i < t && t <= rhi[i] && need[t][i])
				rc |= 1 << q;
			if (i < t + 1 && t + 1 <= shi[i])
				sn |= 1 << q;
			if (i <= t && t <= p->lastuse[i])
				fixed -= kib(p->ab[i]);
		}
		for (int s = 0; s < 1 << nd; s++)
			next[s] = INFINITY;
		for (int s = 0; s < 1 << nd; s++) {
			if (cost[s] == INFINITY)
				continue;
			for (int c = rc;; c = (c - 1) & rc) {
				int have = s | c, ok = 1, ks[64], nk = 0;
				double ct = 0;
				/* every computed op's operands are there */
				for (int q = 0; q < nd; q++)
					if (c >> q & 1)
						ks[nk++] = id[q], ct += p->t[id[q]];
				ks[nk++] = t;
				for (int a = 0; a < nk && ok; a++)
					for (int d = 0; d < p->ndep[ks[a]] && ok; d++) {
						int i = p->dep[ks[a]][d];
						ok = !dec[i] || (have >> at[i] & 1);
					}
				if (ok) {
					int keep = (s | c | (dec[t] ? 1 << at[t] : 0)) & sn;
					for (int s2 = keep;; s2 = (s2 - 1) & keep) {
						/* before op t, its own result is not there yet */
						double u = fixed - (dec[t] ? 0 : kib(p->ab[t])), top = 0;
						for (int q = 0; q < nd; q++)
							if (s >> q & 1)
								u += kib(p->ab[id[q]]);
						for (int a = 0; a < nk; a++) {
							int k = ks[a];
							if (a > 0) {
								/* frees after the previous op */
								int pk = ks[a - 1];
								for (int q = 0; q < nd; q++) {
									int i = id[q], used = i == pk, later = 0;
									if (i > pk || t > shi[i] + (i == t) || (s2 >> q & 1))
										continue;
									for (int d = 0; d < p->ndep[pk]; d++)
										used |= p->dep[pk][d] == i;
									for (int b = a; b < nk && used; b++)
										for (int d = 0; d < p->ndep[ks[b]]; d++)
											later |= p->dep[ks[b]][d] == i;
									if (used && !later)
										u -= kib(p->ab[i]);
								}
							}
							u += kib(p->ab[k]);
							if (u > top)
								top = u;
						}
						if (top <= B + 1e-9 && cost[s] + ct < next[s2])
							next[s2] = cost[s] + ct;
						if (!s2)
							break;
					}
				}
				if (!c)
					break;
			}
		}
		memcpy(cost, next, ((size_t)1 << nd) * sizeof *cost);
	}
	for (int s = 0; s < 1 << nd; s++)
		if (cost[s] < INFINITY && (best < 0 || cost[s] < best))
			best = cost[s];
	free(cost);
	free(next);
	return best;
}

