/* tso.c: the segmented dynamic program (Rotor/TSO): modes per segment under a discrete budget.
 *
 * needs: a Prob.
 * fills: a Plan. The forward is cut into segments where a single value crosses from one op to
 *        the next (long-lived values such as skip connections and residual streams do not
 *        count: they are kept or swapped as a whole). Between two boundaries j < k the DP
 *        takes one of: segment j kept, segment j swapped, or segments j..k-1 recomputed from
 *        the checkpoint at boundary j (kept or swapped). The state is the bytes stored across
 *        the turn by earlier segments; each transition checks the memory of its own backward
 *        (stored bytes + what it brings back + the rest of the step there). Bytes are counted
 *        in budget/NU units; the plan is then measured exactly, so the caller can tighten. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* NU: budget steps of the state. MAXG: the longest run of segments recomputed from one
 * checkpoint (48 plans as well as 96 did on the examples, deep MLPs and transformers under
 * both cost models, in three quarters of the time). */
enum { NU = 1024, MAXG = 48 };

static int
cmp_desc(const void *a, const void *b, void *span)
{
	int x = ((int *)span)[*(const int *)a], y = ((int *)span)[*(const int *)b];
	return (x < y) - (x > y);
}

/* Boundary k lies after forward op fops[k]; pos[i] is i's index among the forward ops. */
int
tso_segments(const Prob *p, int **fopsp, int *nfp, int **segp, int **bndp, int **endpp,
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

/* ---------- the DP ---------- */

typedef struct Seg {
	int lo, hi;            /* forward ops fops[lo..hi) */
	int b;                 /* the value crossing into the segment (an op), -1 if none */
	int64_t kin;           /* bytes of the segment's own candidates, its boundary out excepted */
	double trec;           /* recompute time of those ops, the boundary out's op excepted */
	double tsw;            /* unhidden copy time if its candidates are swapped */
	int late0, late1;      /* the ops where its candidates are used late */
} Seg;

typedef struct Dp {
	const Prob *p;
	int ns, nf, *fops;
	Seg *s;
	uint8_t *lng;          /* left out of the cut test */
	uint8_t *glong;        /* spanning much of the forward: kept or swapped outside the DP */
	int *endp;             /* the last forward op (index into fops) of each value's early uses */
	int64_t *base;         /* bytes at each op that no mode decision moves */
	int noswap;            /* this run plans recomputation only */
	int lg;                /* log table for the range maximum */
	int64_t **rmq;
} Dp;

static double
swap_cost(const Prob *p, int i)
{
	double ct = copy_time(p, p->b[i]), hide = 0;

	if (p->bw <= 0)
		return 1e30;
	for (int k = p->lastearly[i] + 1; k < p->split[i] && hide < 2 * ct; k++)
		hide += p->t[k];
	/* A little for the copy engine the swaps share. */
	return (2 * ct > hide ? 2 * ct - hide : 0) + 0.02 * ct;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t
rmax(const Dp *d, int lo, int hi)
{
	int k;

	if (lo < 0)
		lo = 0;
	if (hi >= d->p->n)
		hi = d->p->n - 1;
	if (lo > hi)
		return 0;
	for (k = 0; (2 << k) <= hi - lo + 1; k++)
		;
	return d->rmq[k][lo] > d->rmq[k][hi - (1 << k) + 1] ? d->rmq[k][lo] : d->rmq[k][hi - (1 << k) + 1];
}

static void
build_rmq(Dp *d)
{
	int n = d->p->n;

	for (d->lg = 1; (1 << d->lg) <= n; d->lg++)
		;
	d->rmq = xcalloc(d->lg + 1, sizeof *d->rmq);
	d->rmq[0] = xmalloc((n + 1) * sizeof **d->rmq);
	memcpy(d->rmq[0], d->base, n * sizeof **d->rmq);
	for (int k = 1; k <= d->lg; k++) {
		d->rmq[k] = xmalloc((n + 1) * sizeof **d->rmq);
		for (int i = 0; i + (1 << k) <= n; i++) {
			int64_t a = d->rmq[k - 1][i], b = d->rmq[k - 1][i + (1 << (k - 1))];
			d->rmq[k][i] = a > b ? a : b;
		}
	}
}

/* Transition kinds. */
enum { T_KEEP, T_SWAP, T_REC };

typedef struct Cell {
	double cost;
	int from, fm;          /* previous boundary and stored units */
	uint8_t kind, bswap;   /* transition and whether the checkpoint is swapped */
} Cell;

static int64_t
bbytes(const Dp *d, int s)
{
	return s < d->ns && d->s[s].b >= 0 ? d->p->b[d->s[s].b] : 0;
}

/* The same, if the value is read late (held through the backward), else 0. */
static int64_t
cbytes(const Dp *d, int s)
{
	return s < d->ns && d->s[s].b >= 0 && d->p->cand[d->s[s].b] ? d->p->b[d->s[s].b] : 0;
}

/* What recomputing segments j..k-1 from the checkpoint at j costs, for each k. */
typedef struct Grp {
	double tr;             /* recompute seconds */
	int64_t inner;         /* bytes it brings back and holds through its backward */
	int64_t esc;           /* bytes of its values read early beyond it: kept */
	int64_t base;          /* the rest of the step over its forward and backward */
} Grp;

/* A value defined in segments j..k-1 read early beyond them cannot wait for their
 * recomputation: it is kept. */
static int
escapes(const Dp *d, int i, int k)
{
	return d->lng[i] && !d->glong[i] && d->p->cand[i] && k < d->ns && d->endp[i] >= d->s[k].lo;
}

static void
group_costs(const Dp *d, int j, Grp *grp)
{
	const Prob *p = d->p;
	int lo = d->s[j].late0, hi = d->s[j].late1;
	double tr = 0;
	int64_t inner = 0, fwk = 0;

	for (int k = j + 1; k <= d->ns && k - j <= MAXG; k++) {
		Seg *sk = &d->s[k - 1];
		Grp *g = &grp[k - j - 1];
		tr += sk->trec;
		inner += sk->kin;
		if (k - 1 > j) {
			tr += sk->b >= 0 ? p->t[sk->b] : 0;
			inner += cbytes(d, k - 1);
		}
		if (sk->late0 < lo) lo = sk->late0;
		if (sk->late1 > hi) hi = sk->late1;
		fwk = max64(fwk, rmax(d, d->fops[sk->lo], d->fops[sk->hi - 1]));
		g->tr = tr;
		g->inner = inner;
		g->base = max64(fwk, rmax(d, lo, hi));
		g->esc = 0;
		for (int q = d->s[j].lo; q < sk->hi; q++)
			if (escapes(d, d->fops[q], k))
				g->esc += p->b[d->fops[q]];
	}
}

/* The DP's memory model is approximate (conservative where copies and recomputations
 * overlap, optimistic about fragmentation): it runs at a few budgets around the real one and
 * the plans are measured. */
enum { NSCALE = 9 };
static const double scale[NSCALE] = { 1.0, 0.9, 1.1, 0.8, 1.25, 0.7, 1.5, 1.75, 2.0 };

/* Run the DP for one choice of long-lived modes; write the modes, return the cost. */
static double
run_dp(Dp *d, int64_t budget, uint8_t *mode)
{
	const Prob *p = d->p;
	int ns = d->ns, bi = -1, turn = 0;
	double unit = (double)budget / NU, best = 1e300;
	Cell *c = xmalloc((size_t)(ns + 1) * (NU + 1) * sizeof *c);
	Grp grp[MAXG];

	for (size_t k = 0; k < (size_t)(ns + 1) * (NU + 1); k++)
		c[k].cost = 1e300;
	c[0].cost = 0;
	while (turn + 1 < p->n && p->f->op[turn].phase == PH_FWD)
		turn++;
	for (int j = 0; j < ns; j++) {
		Seg *sj = &d->s[j];
		int64_t bj = bbytes(d, j);
		int bcand = sj->b >= 0 && p->cand[sj->b];
		int bswok = bcand && p->bw > 0 && !d->noswap;
		double bsw = bswok ? swap_cost(p, sj->b) : 0;
		int64_t fw = rmax(d, d->fops[sj->lo], d->fops[sj->hi - 1]);
		group_costs(d, j, grp);
		double front = 1e300;
		for (int m = 0; m <= NU; m++) {
			Cell *from = &c[(size_t)j * (NU + 1) + m];
			double mb = m * unit;
			/* A state storing more bytes at no lower cost than one storing fewer can only
			 * lead to the same or worse: only the Pareto front of (bytes, cost) goes on. */
			if (from->cost >= front)
				continue;
			front = from->cost;
			/* Segment j alone, kept or swapped; its checkpoint kept or swapped if it is
			 * needed late anyway. */
			for (int kind = T_KEEP; kind <= T_SWAP; kind++)
				for (int bs = 0; bs < 2; bs++) {
					double cost = from->cost;
					int64_t stored = 0, need;
					int m2;
					if (kind == T_SWAP && (p->bw <= 0 || d->noswap || sj->kin == 0))
						continue;
					if (bs && !bswok)
						continue;
					cost += kind == T_SWAP ? sj->tsw : 0;
					cost += bs ? bsw : 0;
					stored += (bcand && !bs ? bj : 0) + (kind == T_KEEP ? sj->kin : 0);
					need = max64(fw, rmax(d, sj->late0, sj->late1)) + (int64_t)mb + cbytes(d, j) + sj->kin + cbytes(d, j + 1);
					if (need > budget)
						continue;
					m2 = m + (int)((double)stored / unit + 0.5);
					if (m2 > NU)
						continue;
					Cell *to = &c[(size_t)(j + 1) * (NU + 1) + m2];
					if (cost < to->cost)
						*to = (Cell){ cost, j, m, (uint8_t)kind, (uint8_t)bs };
				}
			/* Segments j..k-1 recomputed from the checkpoint at j. */
			for (int k = j + 1; k <= ns && k - j <= MAXG; k++) {
				Grp *gr = &grp[k - j - 1];
				/* base and inner only grow with k: no longer group fits either */
				if (gr->base + (int64_t)mb + bj + gr->inner > budget)
					break;
				for (int bs = 0; bs < 2; bs++) {
					double cost = from->cost + gr->tr + (bs ? bsw : 0);
					int64_t need;
					int m2;
					if (bs && !bswok)
						continue;
					need = gr->base + (int64_t)mb + bj + gr->inner + cbytes(d, k);
					if (need > budget)
						continue;
					m2 = m + (int)((double)((bs ? 0 : bj) + gr->esc) / unit + 0.5);
					if (m2 > NU)
						continue;
					Cell *to = &c[(size_t)k * (NU + 1) + m2];
					if (cost < to->cost)
						*to = (Cell){ cost, j, m, T_REC, (uint8_t)bs };
				}
			}
		}
	}
	for (int m = 0; m <= NU; m++) {
		Cell *e = &c[(size_t)ns * (NU + 1) + m];
		if (e->cost < best && d->base[turn] + (int64_t)(m * unit) <= budget)
			best = e->cost, bi = m;
	}
	if (bi >= 0) {
		/* Walk back, writing modes. */
		int k = ns, m = bi;
		while (k > 0) {
			Cell *e = &c[(size_t)k * (NU + 1) + m];
			int j = e->from;
			for (int s = j; s < k; s++) {
				Seg *ss = &d->s[s];
				for (int q = ss->lo; q < ss->hi; q++) {
					int i = d->fops[q];
					if (!p->cand[i] || d->glong[i] || (s + 1 < ns && i == d->s[s + 1].b))
						continue;
					mode[i] = e->kind == T_KEEP ? KEEP : e->kind == T_SWAP ? SWAP : REC;
					if (e->kind == T_REC && escapes(d, i, k))
						mode[i] = KEEP;
				}
				if (s > j && ss->b >= 0)
					mode[ss->b] = REC;
			}
			if (d->s[j].b >= 0) {
				int b = d->s[j].b;
				if (e->bswap)
					mode[b] = SWAP;
				else if (p->cand[b] || e->kind == T_REC)
					mode[b] = KEEP;
			}
			k = j;
			m = e->fm;
		}
	}
	free(c);
	return bi >= 0 ? best : -1;
}

int
solve_tso(const Prob *p, int64_t budget, Plan *pl)
{
	Dp d;
	memset(&d, 0, sizeof d);
	d.p = p;
	int *cuts, *bnd, nlc = 0, lc[6], ok = 0;
	int64_t *free_;
	uint8_t *mode = xmalloc(p->n + 1);
	Plan *tmp = plan_new(p);
	double t0 = plan_clock();

	d.ns = tso_segments(p, &d.fops, &d.nf, &cuts, &bnd, &d.endp, &d.lng);
	/* Values spanning a third of the forward or more are decided outside the DP. */
	d.glong = xcalloc(p->n + 1, 1);
	for (int q = 0; q < d.nf; q++) {
		int i = d.fops[q], lim = d.nf / 3 > 8 ? d.nf / 3 : 8;
		d.glong[i] = d.lng[i] && p->cand[i] && d.endp[i] - q >= lim;
	}
	d.s = xcalloc(d.ns + 1, sizeof *d.s);
	for (int s = 0; s < d.ns; s++) {
		Seg *g = &d.s[s];
		g->lo = cuts[s];
		g->hi = s + 1 < d.ns ? cuts[s + 1] : d.nf;
		g->b = -1;
		g->late0 = p->n;
		g->late1 = -1;
	}
	for (int s = 0; s < d.ns; s++)
		d.s[s].b = bnd[s];
	for (int s = 0; s < d.ns; s++) {
		Seg *g = &d.s[s];
		int bout = s + 1 < d.ns ? d.s[s + 1].b : -1;
		for (int q = g->lo; q < g->hi; q++) {
			int i = d.fops[q];
			if (i != bout)
				g->trec += p->t[i];
			if (!p->cand[i] || d.glong[i])
				continue;
			if (p->split[i] < g->late0) g->late0 = p->split[i];
			if (p->lastuse[i] > g->late1) g->late1 = p->lastuse[i];
			if (i == bout)
				continue;
			g->kin += p->b[i];
			g->tsw += swap_cost(p, i);
		}
		if (g->b >= 0 && p->cand[g->b]) {
			if (p->split[g->b] < g->late0) g->late0 = p->split[g->b];
			if (p->lastuse[g->b] > g->late1) g->late1 = p->lastuse[g->b];
		}
	}
	/* What no decision moves: live bytes less the late parts of the candidates. */
	free_ = xcalloc(p->n + 2, sizeof *free_);
	for (int i = 0; i < p->n; i++)
		if (p->cand[i]) {
			free_[p->lastearly[i] + 1] += p->b[i];
			free_[p->lastuse[i] + 1] -= p->b[i];
		}
	for (int i = 0; i < p->n; i++)
		if (p->cand[i] && d.glong[i] && nlc < 6)
			lc[nlc++] = i;
	d.base = xmalloc((p->n + 1) * sizeof *d.base);
	pl->feasible = 0;
	pl->peak = INT64_MAX;
	/* Long-lived values: every keep/swap combination of the longest few; the rest kept.
	 * Each also without any swap: the copy engine the swaps share is modeled only roughly,
	 * the measured time decides. */
	for (int run = 0; run < (2 << nlc) * NSCALE; run++) {
		int64_t acc = 0, dpb = (int64_t)((double)budget * scale[run / (2 << nlc)]);
		double extra = 0, cost;
		int combo = (run % (2 << nlc)) >> 1;
		/* A plan that fits as fast as the unplanned step cannot be beaten. */
		if (pl->feasible && pl->time <= p->time)
			break;
		d.noswap = run & 1;
		if (dpb > p->peak && scale[run / (2 << nlc)] > 1)
			continue;
		if ((combo || !d.noswap) && p->bw <= 0)
			continue;
		if (combo && d.noswap)
			continue;
		for (int i = 0; i < p->n; i++) {
			acc += free_[i];
			d.base[i] = p->prof[i] - acc;
		}
		for (int i = 0; i < p->n; i++)
			mode[i] = p->cand[i] ? KEEP : REC;
		for (int i = 0; i < p->n; i++) {
			int sw = 0;
			if (!p->cand[i] || !d.glong[i])
				continue;
			for (int q = 0; q < nlc; q++)
				if (lc[q] == i && (combo >> q & 1))
					sw = 1;
			mode[i] = sw ? SWAP : KEEP;
			extra += sw ? swap_cost(p, i) : 0;
			for (int k = sw ? p->split[i] : p->lastearly[i] + 1; k <= p->lastuse[i]; k++)
				d.base[k] += p->b[i];
		}
		if (!d.rmq)
			build_rmq(&d);
		else {
			memcpy(d.rmq[0], d.base, p->n * sizeof *d.base);
			for (int k = 1; k <= d.lg; k++)
				for (int i = 0; i + (1 << k) <= p->n; i++) {
					int64_t a = d.rmq[k - 1][i], b = d.rmq[k - 1][i + (1 << (k - 1))];
					d.rmq[k][i] = a > b ? a : b;
				}
		}
		cost = run_dp(&d, dpb, mode);
		if (cost < 0)
			continue;
		plan_expand(p, mode, tmp);
		plan_eval(p, tmp, budget);
		tmp->obj = cost + extra;
		/* The best measured plan that fits; failing that, the smallest. */
		if ((tmp->feasible && (!pl->feasible || tmp->time < pl->time)) ||
		    (!pl->feasible && !tmp->feasible && tmp->peak < pl->peak)) {
			plan_copy(pl, tmp);
			ok = 1;
		}
	}
	pl->solver = "tso";
	pl->stime = plan_clock() - t0;
	for (int k = 0; d.rmq && k <= d.lg; k++)
		free(d.rmq[k]);
	free(d.rmq);
	free(d.base); free(free_); free(d.s); free(d.fops); free(cuts); free(bnd); free(d.lng); free(d.glong); free(d.endp); free(mode);
	plan_free(tmp);
	return ok ? 0 : -1;
}
