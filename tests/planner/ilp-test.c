/* ilp-test.c: the integer program against an exhaustive search of the same model on small
 * random DAGs (<= 12 ops), its plans measured on the IR and checked op by op, and against
 * tso on chains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"
#include "../check.h"

static double kib(int64_t b) { return (double)b / 1024; }

/* The model of ilp.c, searched exhaustively: stage by stage, every set of recomputations and
 * every set of values kept into the next stage, from every set of resident values.
 * Returns the least recompute seconds, or -1 if no schedule fits. */
static double
exhaustive(const Prob *p, int64_t budget)
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
		double fixed = kib(p->prof[t]);
		for (int q = 0; q < nd; q++) {
			int i = id[q];
			if (i < t && t <= rhi[i] && need[t][i])
				rc |= 1 << q;
			if (i < t + 1 && t + 1 <= shi[i])
				sn |= 1 << q;
			if (i <= t && t <= p->lastuse[i])
				fixed -= kib(p->b[i]);
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
						double u = fixed, top = 0;
						for (int q = 0; q < nd; q++)
							if (s >> q & 1)
								u += kib(p->b[id[q]]);
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
										u -= kib(p->b[i]);
								}
							}
							if (k != t || dec[t])
								u += kib(p->b[k]);
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

int
main(void)
{
	Target tg;
	static const double fr[] = { 0.95, 0.85, 0.75, 0.65, 0.55 };

	if (target_get(&tg, "mt3000"))
		die("no mt3000 target");
	tg.copybw = 0;            /* recomputation only: the exhaustive search has no swaps */
	/* Random DAGs of 12 ops: 5 forward, the loss, 5 backward, 1 update. */
	for (int seed = 1; seed <= 12; seed++) {
		Module *m = synth_dag(5, 32 + 16 * (seed % 4), seed);
		Prob *p = prob_new(m->step, &tg);
		for (size_t b = 0; b < sizeof fr / sizeof *fr; b++) {
			int64_t B = (int64_t)(fr[b] * (double)p->peak);
			Plan *pl = plan_new(p);
			double ex = exhaustive(p, B);
			int r = solve_ilp(p, B, 20, NULL, pl);
			char why[256] = "";
			if (ex < 0) {
				check(r != 0, "dag %d at %.0f%%: the ILP found a plan the search says cannot be", seed, 100 * fr[b]);
			} else {
				Func *g;
				check(r == 0 && pl->gap == 0, "dag %d at %.0f%%: the ILP proves an optimum", seed, 100 * fr[b]);
				if (r == 0) {
					double ov = pl->obj - p->time;
					check(fabs(ov - ex) <= 1e-6 * (p->time + ex), "dag %d at %.0f%%: ILP %.9g, exhaustive %.9g",
					      seed, 100 * fr[b], ov, ex);
					check(pl->peak <= B, "dag %d at %.0f%%: the plan's measured peak %lld fits %lld", seed,
					      100 * fr[b], (long long)pl->peak, (long long)B);
					check(fabs(pl->time - pl->obj) <= 1e-9 * pl->time, "dag %d at %.0f%%: measured time %.9g = objective %.9g",
					      seed, 100 * fr[b], pl->time, pl->obj);
					g = remat(p, pl);
					check(synth_equiv(m->step, g, why, sizeof why) == 0, "dag %d at %.0f%%: %s", seed, 100 * fr[b], why);
					func_free(g);
				}
			}
			plan_free(pl);
		}
		prob_free(p);
		mod_free(m);
	}
	/* Chains: tso's objective equals the ILP's. Whatever tso fits, the ILP fits at least as
	 * fast (tso's plans lie in the ILP's space); whatever the ILP fits, tso fits as fast (to
	 * 0.01%): one level of recomputation is not enough at the tightest budgets, where the
	 * optimum recomputes part of a run twice (Rotor's nesting). */
	for (int len = 4; len <= 16; len += 2) {
		static const double cf[] = { 0.95, 0.85, 0.75, 0.65, 0.55, 0.5 };
		Module *m = synth_chain(len, 64, len);
		Prob *p = prob_new(m->step, &tg);
		for (size_t b = 0; b < sizeof cf / sizeof *cf; b++) {
			int64_t B = (int64_t)(cf[b] * (double)p->peak);
			Plan *a = plan_new(p), *c = plan_new(p);
			int ra = solve_tso(p, B, a), rc = solve_ilp(p, B, 4, ra == 0 && a->feasible ? a : NULL, c);
			int fa = ra == 0 && a->feasible, fc = rc == 0 && c->feasible;
			if (fa)
				check(fc && c->time <= a->time * (1 + 1e-12), "chain %d at %.0f%%: tso %.9g, ilp %.9g",
				      len, 100 * cf[b], a->time, fc ? c->time : -1.0);
			if (fc)
				check(fa && a->time <= c->time * (1 + 1e-4), "chain %d at %.0f%%: ilp %.9g, tso %.9g",
				      len, 100 * cf[b], c->time, fa ? a->time : -1.0);
			printf("chain %2d at %2.0f%%: tso %s, ilp %s", len, 100 * cf[b], fa ? "fits" : "does not fit",
			       fc ? "fits" : "does not fit");
			if (fa && fc)
				printf(", tso overhead %.2f%%, ilp %.2f%%", 100 * (a->time / p->time - 1),
				       100 * (c->time / p->time - 1));
			putchar('\n');
			plan_free(a);
			plan_free(c);
		}
		prob_free(p);
		mod_free(m);
	}
	return done();
}
