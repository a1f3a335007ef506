/* tso.c: the segmented dynamic program (Rotor/TSO): modes per segment under a discrete budget.
 *
 * needs: a Prob.
 * fills: a Plan. The forward is cut into segments where a single value crosses from one op to
 *        the next (long-lived values such as skip connections and residual streams do not
 *        count: they are kept or swapped as a whole). Between two boundaries j < k the DP
 *        takes one of: segment j kept, segment j swapped, segments j..k-1 recomputed from the
 *        checkpoint at boundary j (kept or swapped), or the same in nested levels (Rotor's:
 *        the first pass keeps one inner checkpoint, the part before it is recomputed again
 *        later, each part again in one level or nested). The state is the bytes stored across the turn by earlier segments, in
 *        cells of budget/NU holding exact bytes; each transition checks the memory of its own
 *        backward op by op: the rest of the step there, the bytes stored, the checkpoints, the
 *        values recomputed from their first late use to their last, the re-run's transients.
 *        The plans are then measured exactly (arena after layout), so the caller can tighten;
 *        swaps are then dropped or spread while the measured plan gets faster. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* NU: budget steps of the state. MAXG: the longest run of segments recomputed from one
 * checkpoint (48 plans as well as 96 did on the examples, deep MLPs and transformers under
 * both cost models, in three quarters of the time). NESTG: the longest run recomputed in
 * nested levels, fewer on large steps, where building the lists (segments x runs^2 x
 * choices^2) would cost more than NESTWORK; NESTL: the choices kept for each such run.
 * NLC: the most long-lived values whose keep/swap combinations are each a DP, fewer where
 * combinations x segments would pass LCWORK (an LSTM's step, 6 of them over 242 segments:
 * 8.4 s a solve, 2.1 min its compile at 50%, where 3 of them plan as fast in a sixth). */
enum { NU = 1024, MAXG = 48, NESTG = 48, NESTL = 6, NESTWORK = 5000000, NLC = 6, LCWORK = 2048 };

/* qsort_r's order: the indices by span[index], largest first. */
static int
cmp_desc(const void *a, const void *b, void *span)
{
	int x = ((int *)span)[*(const int *)a], y = ((int *)span)[*(const int *)b];
	return (x < y) - (x > y);
}

/* ---------- the DP ---------- */

typedef struct Seg {
	int lo, hi;            /* forward ops fops[lo..hi) */
	int b;                 /* the value crossing into the segment (an op), -1 if none */
	int64_t kin;           /* bytes of the segment's own candidates, its boundary out excepted */
	double trec;           /* recompute time of those ops, the boundary out's op excepted */
	double tsw;            /* unhidden copy time if its candidates are swapped */
	int late0, late1;      /* the ops where its candidates are used late */
	int64_t hold;          /* bytes of the values a recomputation of it holds to their late uses */
	int64_t xin, xlast;    /* the most a re-run of it holds at once, with and without its last op */
} Seg;

typedef struct Dp {
	const Prob *p;
	int ns, nf, *fops;
	Seg *s;
	uint8_t *lng;          /* left out of the cut test */
	uint8_t *glong;        /* spanning much of the forward: kept or swapped outside the DP */
	int *endp;             /* the last forward op (index into fops) of each value's early uses */
	int64_t *base;         /* bytes at each op that no mode decision moves */
	int64_t *abase;        /* the same in the arena's bytes (Prob.ab), chain.c's */
	int noswap;            /* this run plans recomputation only */
	int lg;                /* log table for the range maximum */
	int64_t **rmq;
	struct Grp *grp;       /* group_costs of every start, MAXG ends each */
	struct Nest *nest;     /* nested recomputations of every start, NESTG ends each */
	int nestg;             /* the longest nested run on this step (<= NESTG) */
	struct NestC *nscr;    /* scratch of nest_costs, twice its candidates (the sort's too) */
	struct Cell *cells;    /* run_dp's table, (ns + 1) x (NU + 1), made once a solve */
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
enum { T_KEEP, T_SWAP, T_REC, T_NEST };

typedef struct Cell {
	double cost;
	int64_t by;            /* bytes stored across the turn */
	int from, fm;          /* previous boundary and its cell */
	uint8_t kind, bswap;   /* transition and whether the checkpoint is swapped */
	int split;             /* T_NEST: 1 + the choice in its Nest list */
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
	int64_t fw;            /* the rest of the step over its forward, plus its checkpoint */
	int64_t late;          /* a bound of rlate that grows with k: the recomputed values only */
	int64_t rlate;         /* the peak over its backward: the rest of the step, what it holds,
	                        * the re-run's own peak at its first late use */
	int64_t keep;          /* the same for the segment kept (k = j + 1 only) */
	int64_t fpass;         /* the most a re-run of it holds at once, holding nothing after */
	int r;                 /* the op before which it is recomputed, -1 if nothing is */
	int64_t esc;           /* bytes of its values read early beyond it: kept */
} Grp;

/* A value a group holds through its backward: from the group's first late use (recomputed
 * or swapped in on demand, or kept) to its own last use. */
typedef struct Held {
	int last;
	int64_t b;
} Held;

/* A value defined in segments j..k-1 read early beyond them cannot wait for their
 * recomputation: it is kept. */
static int
escapes(const Dp *d, int i, int k)
{
	return d->lng[i] && !d->glong[i] && d->p->cand[i] && k < d->ns && d->endp[i] >= d->s[k].lo;
}

static int
hold(Held *h, int nh, int last, int64_t b)
{
	int q = nh;

	if (b <= 0)
		return nh;
	while (q > 0 && h[q - 1].last > last) {
		h[q] = h[q - 1];
		q--;
	}
	h[q] = (Held){ last, b };
	return nh + 1;
}

/* The peak over late ops lo..hi with the held values h[0..nh) (ascending by last use):
 * at op t the rest of the step plus every value whose last use is t or later. */
static int64_t
late_peak(const Dp *d, const Held *h, int nh, int lo, int hi)
{
	int64_t pk = rmax(d, lo, hi), suf = 0;

	for (int q = nh - 1; q >= 0; q--) {
		int a = q > 0 ? h[q - 1].last + 1 : lo;
		suf += h[q].b;
		if (a < lo)
			a = lo;
		if (a <= h[q].last)
			pk = max64(pk, rmax(d, a, h[q].last) + suf);
	}
	return pk;
}

/* Costs of the groups starting at j, grp[k - j - 1] for each end k; h, h2: scratch of one
 * entry per op. The checkpoints at both ends are kept: held from the group's first late op
 * on; the values recomputed are held from the first late use of any of them (a chain's
 * recomputation runs at once, on the first demand) to their own last uses. */
static void
group_costs(const Dp *d, int j, Grp *grp, Held *h, Held *h2)
{
	const Prob *p = d->p;
	int lo = d->s[j].late0, hi = d->s[j].late1, rlo = p->n, nh = 0;
	double tr = 0;
	int64_t fwk = 0, hacc = 0, xi = 0, fp = 0;
	Held kj = { d->s[j].b >= 0 ? p->lastuse[d->s[j].b] : -1, cbytes(d, j) };

	for (int k = j + 1; k <= d->ns && k - j <= MAXG; k++) {
		Seg *sk = &d->s[k - 1];
		Grp *g = &grp[k - j - 1];
		int bout = k < d->ns ? d->s[k].b : -1, r, n2, nk = 0;
		Held kk = { bout >= 0 ? p->lastuse[bout] : -1, cbytes(d, k) }, kept[2];
		tr += sk->trec;
		if (k - 1 > j) {
			tr += sk->b >= 0 ? p->t[sk->b] : 0;
			if (cbytes(d, k - 1)) {
				nh = hold(h, nh, p->lastuse[sk->b], cbytes(d, k - 1));
				rlo = rlo < p->split[sk->b] ? rlo : p->split[sk->b];
			}
		}
		for (int q = sk->lo; q < sk->hi; q++) {
			int i = d->fops[q];
			if (p->cand[i] && !d->glong[i] && i != bout) {
				nh = hold(h, nh, p->lastuse[i], p->b[i]);
				rlo = rlo < p->split[i] ? rlo : p->split[i];
			}
		}
		if (sk->late0 < lo) lo = sk->late0;
		if (sk->late1 > hi) hi = sk->late1;
		fwk = max64(fwk, rmax(d, d->fops[sk->lo], d->fops[sk->hi - 1]));
		g->tr = tr;
		g->fw = fwk + cbytes(d, j);
		g->esc = 0;
		for (int q = d->s[j].lo; q < sk->hi; q++)
			if (escapes(d, d->fops[q], k))
				g->esc += p->b[d->fops[q]];
		r = rlo < lo ? lo : rlo;
		memcpy(h2, h, nh * sizeof *h);
		n2 = hold(h2, nh, kj.last, kj.b);
		/* grows with k: what the recomputed values and the first checkpoint take */
		g->late = r <= hi ? late_peak(d, h2, n2, r, hi) : 0;
		n2 = hold(h2, n2, kk.last, kk.b);
		if (k == j + 1)        /* the segment kept: everything held from the start */
			g->keep = late_peak(d, h2, n2, lo, hi);
		nk = hold(kept, nk, kj.last, kj.b);
		nk = hold(kept, nk, kk.last, kk.b);
		g->rlate = max64(late_peak(d, kept, nk, lo, (r <= hi ? r : hi + 1) - 1),
		                 r <= hi ? late_peak(d, h2, n2, r, hi) : 0);
		/* At the recomputation: the checkpoint, whatever the re-run holds at its fullest (a
		 * boundary not read late lives until its next op is re-run), and the next
		 * checkpoint if it is still needed. */
		int64_t cross = k - 1 > j && sk->b >= 0 && !p->cand[sk->b] ? p->b[sk->b] : 0;
		int64_t x = max64(xi, hacc + cross + sk->xlast);
		if (r <= hi || x > 0)
			g->rlate = max64(g->rlate, rmax(d, r, r) + bbytes(d, j) + x +
			                 (kk.b && kk.last >= r ? kk.b : 0));
		g->r = r <= hi ? r : -1;
		fp = max64(fp, cross + sk->xin);
		g->fpass = fp;
		xi = max64(xi, hacc + cross + sk->xin);
		hacc += sk->hold;
	}
}

/* The most bytes a re-run of segment g holds at once, its boundary in aside: the values it
 * holds to their late uses, the others until their last early use; without its last op (the
 * boundary out, not re-run when the segment ends a group) if nob. */
static int64_t
seg_excess(const Dp *d, const Seg *g, int bout, int nob)
{
	const Prob *p = d->p;
	int64_t pk = 0;

	for (int q = g->lo; q < g->hi; q++) {
		int64_t live = 0;
		if (nob && d->fops[q] == bout)
			continue;
		for (int r = g->lo; r <= q; r++) {
			int i = d->fops[r];
			if (!(nob && i == bout) && ((p->cand[i] && !d->glong[i]) || d->endp[i] >= q))
				live += p->b[i];
		}
		pk = max64(pk, live);
	}
	return pk;
}

/* Segments j..k-1 recomputed in nested levels, as Rotor's DP does: a first pass from the
 * checkpoint at j runs through them holding only the value entering segment i and what
 * i..k-1 hold (itself in one level or nested); when the backward reaches segment i, j..i-1
 * are recomputed again (in one level or nested). For each (j, k) the choices that are
 * cheapest for what they need, need ascending; a and b index the choices of i..k-1 and
 * j..i-1 in their own lists, -1 for one level. */
typedef struct Nest {
	int n;
	struct { int64_t need; double cost; int i; int8_t a, b; } e[NESTL];
} Nest;

typedef struct NestC {
	int64_t need;
	double cost;
	int i, a, b;
} NestC;

/* y before x: less need, or as much for less */
static int
nest_before(const NestC *y, const NestC *x)
{
	return y->need < x->need || (y->need == x->need && y->cost < x->cost);
}

/* Sort c[0..n) by need, then cost, keeping the order of equals (a stable merge sort, bottom
 * up; tmp holds n): the same order on every machine, whatever the C library's qsort. */
static void
sort_nest(NestC *c, NestC *tmp, int n)
{
	NestC *from = c, *to = tmp;

	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int a = lo, b = mid, k = lo;
			while (a < mid && b < hi)
				to[k++] = nest_before(&from[b], &from[a]) ? from[b++] : from[a++];
			while (a < mid)
				to[k++] = from[a++];
			while (b < hi)
				to[k++] = from[b++];
		}
		NestC *t = from;
		from = to;
		to = t;
	}
	if (from != c)
		memcpy(c, from, (size_t)n * sizeof *c);
}

static Nest *
nest_at(const Dp *d, int j, int k)
{
	return &d->nest[(size_t)j * NESTG + (k - j - 1)];
}

/* Nest(j, k) from the lists of the shorter runs (computed before it). */
static void
nest_costs(const Dp *d, int j, int k)
{
	const Grp *gjk = &d->grp[(size_t)j * MAXG + (k - j - 1)];
	Nest *ne = nest_at(d, j, k);
	NestC *c = d->nscr;
	int nc = 0, nf = 0;

	ne->n = 0;
	for (int i = j + 1; i < k; i++) {
		const Grp *gj = &d->grp[(size_t)j * MAXG + (i - j - 1)];
		const Grp *gi = &d->grp[(size_t)i * MAXG + (k - i - 1)];
		const Nest *na = k - i >= 2 ? nest_at(d, i, k) : NULL, *nb = i - j >= 2 ? nest_at(d, j, i) : NULL;
		int64_t first;
		/* the second pass must come after the first */
		if (gi->r < 0 || gj->r <= gi->r)
			continue;
		first = rmax(d, gi->r, gi->r) + bbytes(d, j) + gj->fpass;
		for (int a = -1; a < (na ? na->n : 0); a++)
			for (int b = -1; b < (nb ? nb->n : 0); b++) {
				c[nc].need = max64(max64((a < 0 ? gi->rlate : na->e[a].need) + bbytes(d, j),
				                         b < 0 ? gj->rlate : nb->e[b].need), first);
				c[nc].cost = gjk->tr - gi->tr + (a < 0 ? gi->tr : na->e[a].cost) +
				             (b < 0 ? gj->tr : nb->e[b].cost);
				c[nc].i = i;
				c[nc].a = a;
				c[nc].b = b;
				nc++;
			}
	}
	/* the Pareto front (cheaper than everything needing less), then at most NESTL of it,
	 * spread from the least need to the cheapest. Only what lies inside the box of the
	 * front's two ends can be on it, so only that is sorted: m, the first in the sort's
	 * order, comes before everything and keeps out all that costs as much; z, the first of
	 * the cheapest, comes before everything needing as much or more (those of its need cost
	 * as much or more) and keeps them out. What is left out sits behind m or z in the order,
	 * or after every candidate it keeps out, so the front is the same. */
	if (nc > 2) {
		int m = 0, z = 0, n = 0;
		for (int q = 1; q < nc; q++) {
			if (nest_before(&c[q], &c[m]))
				m = q;
			if (c[q].cost < c[z].cost || (c[q].cost == c[z].cost && c[q].need < c[z].need))
				z = q;
		}
		for (int q = 0; q < nc; q++)
			if (q == m || q == z || (c[q].need < c[z].need && c[q].cost < c[m].cost))
				c[n++] = c[q];
		nc = n;
	}
	sort_nest(c, c + nc, nc);
	for (int q = 0; q < nc; q++)
		if (nf == 0 || c[q].cost < c[nf - 1].cost)
			c[nf++] = c[q];
	for (int q = 0; q < nf && q < NESTL; q++) {
		const NestC *x = &c[nf <= NESTL ? q : (int)((long)q * (nf - 1) / (NESTL - 1))];
		ne->e[q].need = x->need;
		ne->e[q].cost = x->cost;
		ne->e[q].i = x->i;
		ne->e[q].a = (int8_t)x->a;
		ne->e[q].b = (int8_t)x->b;
		ne->n++;
	}
}

/* The DP's memory model is approximate (conservative where copies and recomputations
 * overlap, optimistic about fragmentation): it runs at a few budgets around the real one and
 * the plans are measured. */
enum { NSCALE = 9 };
static const double scale[NSCALE] = { 1.0, 0.9, 1.1, 0.8, 1.25, 0.7, 1.5, 1.75, 2.0 };
/* chain.c's model is exact on chains, but a plan whose live bytes fit can miss the budget
 * after layout: then the same budget once more with each recomputed stage's input held to
 * its end (chain_hold_inputs: plans that leave the layout room); where a long-lived value or
 * a swap makes the model less exact, a little below the budget. */
enum { NCSCALE = 4 };
static const double cscale[NCSCALE] = { 1.0, 0.97, 0.93, 0.85 };

/* Put a state into cell row k: the cell of its stored bytes keeps the cheapest. */
static void
relax(Cell *row, double unit, int64_t by, Cell c)
{
	double u = (double)by / unit;
	Cell *to;

	if (u > NU)
		return;
	to = &row[(int)u];
	c.by = by;
	if (c.cost < to->cost || (c.cost == to->cost && by < to->by))
		*to = c;
}

/* Run the DP for one choice of long-lived modes (d->grp, d->nest filled for it); write the
 * modes and, for each run recomputed in nested levels from segment j, 1 + its choice in
 * nsplit[j] (0: none) and its end in nend[j]; return the cost. */
static double
run_dp(Dp *d, int64_t budget, uint8_t *mode, int *nsplit, int *nend)
{
	const Prob *p = d->p;
	int ns = d->ns, bi = -1, turn = p->turn;
	double unit = (double)budget / NU, best = 1e300;
	Cell *c = d->cells;

	for (size_t k = 0; k < (size_t)(ns + 1) * (NU + 1); k++)
		c[k].cost = 1e300;
	memset(nsplit, 0, (ns + 1) * sizeof *nsplit);
	c[0].cost = 0;
	c[0].by = 0;
	for (int j = 0; j < ns; j++) {
		Seg *sj = &d->s[j];
		Grp *grp = &d->grp[(size_t)j * MAXG];
		int64_t bj = bbytes(d, j);
		int bcand = sj->b >= 0 && p->cand[sj->b];
		int bswok = bcand && p->bw > 0 && !d->noswap;
		double bsw = bswok ? swap_cost(p, sj->b) : 0;
		/* segment j alone, its values held: the group of one with them kept */
		int64_t need1 = max64(grp[0].fw + sj->kin, grp[0].keep);
		double front = 1e300;
		for (int m = 0; m <= NU; m++) {
			Cell *from = &c[(size_t)j * (NU + 1) + m];
			int64_t mb = from->by;
			/* A state storing more bytes at no lower cost than one storing fewer can only
			 * lead to the same or worse: only the Pareto front of (bytes, cost) goes on. */
			if (from->cost >= front)
				continue;
			front = from->cost;
			/* Segment j alone, kept or swapped; its checkpoint kept or swapped if it is
			 * needed late anyway. */
			if (mb + need1 <= budget)
				for (int kind = T_KEEP; kind <= T_SWAP; kind++)
					for (int bs = 0; bs < 2; bs++) {
						double cost = from->cost;
						int64_t stored = 0;
						if (kind == T_SWAP && (p->bw <= 0 || d->noswap || sj->kin == 0))
							continue;
						if (bs && !bswok)
							continue;
						cost += kind == T_SWAP ? sj->tsw : 0;
						cost += bs ? bsw : 0;
						stored += (bcand && !bs ? bj : 0) + (kind == T_KEEP ? sj->kin : 0);
						relax(&c[(size_t)(j + 1) * (NU + 1)], unit, mb + stored,
						      (Cell){ cost, 0, j, m, (uint8_t)kind, (uint8_t)bs, 0 });
					}
			/* Segments j..k-1 recomputed from the checkpoint at j, in one level or two. */
			for (int k = j + 1; k <= ns && k - j <= MAXG; k++) {
				Grp *gr = &grp[k - j - 1];
				/* the one level's backward peak only grows with k: no longer group fits
				 * either, in one level */
				int one = mb + gr->late <= budget && mb + gr->rlate <= budget;
				if (mb + gr->late > budget && k - j >= d->nestg)
					break;
				if (mb + gr->fw + gr->esc > budget)
					continue;
				for (int bs = 0; bs < 2; bs++) {
					if (bs && !bswok)
						continue;
					if (one)
						relax(&c[(size_t)k * (NU + 1)], unit, mb + (bs ? 0 : bj) + gr->esc,
						      (Cell){ from->cost + gr->tr + (bs ? bsw : 0), 0, j, m, T_REC, (uint8_t)bs, 0 });
					if (k - j >= 2 && k - j <= d->nestg) {
						Nest *ne = nest_at(d, j, k);
						int q = ne->n - 1;
						while (q >= 0 && mb + ne->e[q].need > budget)
							q--;
						if (q >= 0)
							relax(&c[(size_t)k * (NU + 1)], unit, mb + (bs ? 0 : bj) + gr->esc,
							      (Cell){ from->cost + ne->e[q].cost + (bs ? bsw : 0), 0, j, m, T_NEST,
							              (uint8_t)bs, q + 1 });
					}
				}
			}
		}
	}
	for (int m = 0; m <= NU; m++) {
		Cell *e = &c[(size_t)ns * (NU + 1) + m];
		if (e->cost < best && d->base[turn] + e->by <= budget)
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
					if (e->kind >= T_REC && escapes(d, i, k))
						mode[i] = KEEP;
				}
				if (s > j && ss->b >= 0)
					mode[ss->b] = REC;
			}
			if (d->s[j].b >= 0) {
				int b = d->s[j].b;
				if (e->bswap)
					mode[b] = SWAP;
				else if (p->cand[b] || e->kind >= T_REC)
					mode[b] = KEEP;
			}
			nsplit[j] = e->kind == T_NEST ? e->split : 0;
			nend[j] = k;
			k = j;
			m = e->fm;
		}
	}
	return bi >= 0 ? best : -1;
}

/* A run a..c-1 recomputed in nested levels by its choice q: what the first pass recomputed
 * of a..i-1 is recomputed again where the backward first needs any of it (only what is read
 * from there on, and what that needs), so that the first pass's instances die with it; then
 * the same within each part, the outer pass first. Not past an update of what an op reads:
 * that instance is then held instead. need: scratch of one byte per op, zero. */
static void
patch(const Dp *d, int a, int c, int q, Plan *pl, uint8_t *need)
{
	const Prob *p = d->p;
	const Nest *ne = nest_at(d, a, c);
	size_t n = p->n;
	int i = ne->e[q].i, r2 = d->grp[(size_t)a * MAXG + (i - a - 1)].r;

	for (int x = d->s[i].lo - 1; x >= d->s[a].lo; x--) {
		int o = d->fops[x], first = 0;
		need[o] = 0;
		if (o == d->s[i].b || r2 >= p->clob[o])
			continue;
		for (int t = 0; t < r2 && !first; t++)
			first = pl->rec[t * n + o];
		need[o] = first && p->cand[o] && p->lastuse[o] >= r2;
		for (int u = 0; first && u < p->nuse[o] && !need[o]; u++)
			need[o] = need[p->use[o][u]];
		if (need[o])
			pl->rec[r2 * n + o] = 1;
	}
	for (int x = d->s[a].lo; x < d->s[i].lo; x++)
		need[d->fops[x]] = 0;
	if (ne->e[q].a >= 0)
		patch(d, i, c, ne->e[q].a, pl, need);
	if (ne->e[q].b >= 0)
		patch(d, a, i, ne->e[q].b, pl, need);
}

/* Modes into a schedule; then the runs recomputed in nested levels (nsplit, nend as run_dp
 * writes them; nsplit may be NULL). */
static void
expand(const Dp *d, const uint8_t *mode, const int *nsplit, const int *nend, Plan *pl)
{
	uint8_t *need = NULL;

	plan_expand(d->p, mode, pl);
	for (int j = 0; nsplit && j < d->ns; j++)
		if (nsplit[j]) {
			if (!need)
				need = xcalloc(d->p->n + 1, 1);
			patch(d, j, nend[j], nsplit[j] - 1, pl, need);
		}
	free(need);
}

/* Expand and measure modes; keep the plan in pl if it is the fastest that fits (the arena
 * after layout, which the budget holds) or, while none fits, the smallest. 1 if kept. */
static int
try_modes(const Dp *d, const uint8_t *mode, const int *nsplit, const int *nend,
          int64_t budget, Plan *tmp, Plan *pl)
{
	const Prob *p = d->p;

	expand(d, mode, nsplit, nend, tmp);
	plan_eval(p, tmp, budget);
	if (tmp->feasible && plan_better(tmp, pl))
		plan_fits(p, tmp, budget);
	if (plan_better(tmp, pl)) {
		plan_copy(pl, tmp);
		return 1;
	}
	return 0;
}

/* The copies share one engine, which the DP's cost of a swap leaves out: swaps of
 * neighbouring values queue behind each other. While the measured plan gets faster, drop a
 * swap the budget does without, or move it to a value kept far from the other swaps (of no
 * fewer bytes); at most MAXMOVE tries. */
enum { MAXMOVE = 48 };

static void
spread_swaps(const Dp *d, int64_t budget, uint8_t *best, const int *nsplit, const int *nend,
             Plan *tmp, Plan *pl)
{
	const Prob *p = d->p;
	int n = p->n, tries = 0, *dist = xmalloc((n + 1) * sizeof *dist), *ord = xmalloc((n + 1) * sizeof *ord);
	uint8_t *mode = xmalloc(n + 1);

	for (int moved = 1; moved && tries < MAXMOVE; ) {
		int no = 0;
		moved = 0;
		/* distance of each kept candidate to the nearest swapped value, in ops */
		for (int i = 0, last = -n; i < n; i++) {
			if (best[i] == SWAP && p->cand[i])
				last = i;
			dist[i] = i - last;
		}
		for (int i = n - 1, next = 2 * n; i >= 0; i--) {
			if (best[i] == SWAP && p->cand[i])
				next = i;
			if (next - i < dist[i])
				dist[i] = next - i;
			if (p->cand[i] && best[i] == KEEP && !d->glong[i])
				ord[no++] = i;
		}
		qsort_r(ord, no, sizeof *ord, cmp_desc, dist);
		for (int v = 0; v < n && !moved && tries < MAXMOVE; v++) {
			if (best[v] != SWAP || !p->cand[v] || d->glong[v])
				continue;
			/* dropped, if the budget does without it */
			memcpy(mode, best, n);
			mode[v] = KEEP;
			tries++;
			if (try_modes(d, mode, nsplit, nend, budget, tmp, pl) && pl->feasible) {
				memcpy(best, mode, n);
				moved = 1;
			}
			for (int q = 0; q < no && !moved && tries < MAXMOVE; q++) {
				int u = ord[q];
				if (p->b[u] < p->b[v] || dist[u] < 2)
					continue;
				memcpy(mode, best, n);
				mode[v] = KEEP;
				mode[u] = SWAP;
				tries++;
				if (try_modes(d, mode, nsplit, nend, budget, tmp, pl) && pl->feasible) {
					memcpy(best, mode, n);
					moved = 1;
				}
			}
		}
	}
	free(dist); free(ord); free(mode);
}

/* Values spanning a third of the forward or more are decided outside the DP: kept or
 * swapped as a whole (d->glong). */
static void
glong_mark(Dp *d)
{
	for (int q = 0; q < d->nf; q++) {
		int i = d->fops[q], lim = d->nf / 3 > 8 ? d->nf / 3 : 8;
		d->glong[i] = d->lng[i] && d->p->cand[i] && d->endp[i] - q >= lim;
	}
}

/* The long-lived values whose modes the DP's runs combine (into lc; returns how many): the
 * largest (of equal bytes the earliest), at most NLC, and at most LCWORK / 2 ^ n segments. */
static int
long_pick(const Dp *d, int *lc)
{
	const Prob *p = d->p;
	int n = 0;

	for (int i = 0; i < p->n; i++) {
		int at;
		if (!p->cand[i] || !d->glong[i])
			continue;
		for (at = n; at > 0 && p->b[lc[at - 1]] < p->b[i]; at--)
			if (at < NLC)
				lc[at] = lc[at - 1];
		if (at < NLC)
			lc[at] = i;
		n += n < NLC;
	}
	while (n > 0 && (1 << n) * d->ns > LCWORK)
		n--;
	return n;
}

/* The bytes no decision moves (d->base, d->abase: the profile less the candidates' late parts, plus the
 * long-lived values as combo has them: bit q of it swaps lc[q], the others are kept) and the
 * modes that makes (the rest KEEP); returns the swaps' cost. */
static double
long_modes(Dp *d, const int64_t *free_, int combo, const int *lc, int nlc, uint8_t *mode)
{
	const Prob *p = d->p;
	int64_t acc = 0, aacc = 0;
	double extra = 0;

	for (int i = 0; i < p->n; i++) {
		acc += free_[2 * i];
		aacc += free_[2 * i + 1];
		d->base[i] = p->prof[i] - acc;
		d->abase[i] = p->aprof[i] - aacc;
	}
	for (int i = 0; i < p->n; i++)
		mode[i] = p->cand[i] ? KEEP : REC;
	for (int i = 0; i < p->n; i++) {
		int sw = 0;
		if (!p->cand[i] || !d->glong[i])
			continue;
		for (int q = 0; q < nlc; q++)
			if (lc[q] == i && (combo >> q & 1))
				sw = 1;
		mode[i] = sw ? SWAP : KEEP;
		extra += sw ? swap_cost(p, i) : 0;
		for (int k = sw ? p->split[i] : p->lastearly[i] + 1; k <= p->lastuse[i]; k++) {
			d->base[k] += p->b[i];
			d->abase[k] += p->ab[i];
		}
	}
	return extra;
}

Chain *
tso_chain(const Prob *p)
{
	Dp d;
	int *cuts, *bnd, lc[1] = { 0 };
	int64_t *free_ = xcalloc(2 * p->n + 4, sizeof *free_);
	uint8_t *mode = xmalloc(p->n + 1);
	Chain *c;

	memset(&d, 0, sizeof d);
	d.p = p;
	d.ns = plan_segments(p, &d.fops, &d.nf, &cuts, &bnd, &d.endp, &d.lng);
	d.glong = xcalloc(p->n + 1, 1);
	glong_mark(&d);
	for (int i = 0; i < p->n; i++)
		if (p->cand[i]) {
			free_[2 * (p->lastearly[i] + 1)] += p->b[i];
			free_[2 * (p->lastuse[i] + 1)] -= p->b[i];
			free_[2 * (p->lastearly[i] + 1) + 1] += p->ab[i];
			free_[2 * (p->lastuse[i] + 1) + 1] -= p->ab[i];
		}
	d.base = xmalloc((p->n + 1) * sizeof *d.base);
	d.abase = xmalloc((p->n + 1) * sizeof *d.abase);
	long_modes(&d, free_, 0, lc, 0, mode);
	c = chain_new(p, d.fops, d.nf, cuts, bnd, d.ns, d.endp, d.lng, d.glong, d.abase);
	free(d.base); free(d.abase); free(free_); free(mode); free(d.fops); free(cuts); free(bnd);
	free(d.endp); free(d.lng); free(d.glong);
	return c;
}

int
solve_tso(const Prob *p, int64_t budget, Plan *pl)
{
	Dp d;
	memset(&d, 0, sizeof d);
	d.p = p;
	int *cuts, *bnd, nlc, lc[NLC], ok = 0, fromchain = 0;
	int64_t *free_;
	Held *h, *h2;
	uint8_t *mode = xmalloc(p->n + 1), *best = xmalloc(p->n + 1);
	int *nsplit, *bestsplit, *nend, *bestend;
	Plan *tmp = plan_new(p);
	double t0 = plan_clock();

	d.ns = plan_segments(p, &d.fops, &d.nf, &cuts, &bnd, &d.endp, &d.lng);
	d.glong = xcalloc(p->n + 1, 1);
	glong_mark(&d);
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
		g->hold = g->kin + (bout >= 0 && p->cand[bout] ? p->b[bout] : 0);
		g->xin = seg_excess(&d, g, bout, 0);
		g->xlast = seg_excess(&d, g, bout, 1);
	}
	/* What no decision moves: live bytes less the late parts of the candidates. */
	free_ = xcalloc(2 * p->n + 4, sizeof *free_);
	for (int i = 0; i < p->n; i++)
		if (p->cand[i]) {
			free_[2 * (p->lastearly[i] + 1)] += p->b[i];
			free_[2 * (p->lastuse[i] + 1)] -= p->b[i];
			free_[2 * (p->lastearly[i] + 1) + 1] += p->ab[i];
			free_[2 * (p->lastuse[i] + 1) + 1] -= p->ab[i];
		}
	nlc = long_pick(&d, lc);
	d.base = xmalloc((p->n + 1) * sizeof *d.base);
	d.abase = xmalloc((p->n + 1) * sizeof *d.abase);
	d.grp = xmalloc(((size_t)d.ns * MAXG + 1) * sizeof *d.grp);
	d.nest = xmalloc(((size_t)d.ns * NESTG + 1) * sizeof *d.nest);
	d.nscr = xmalloc(2 * (size_t)NESTG * (NESTL + 1) * (NESTL + 1) * sizeof *d.nscr);
	/* one table for every run of the DP: a fresh one each run was mapped, faulted in and
	 * unmapped again, 24 times a solve */
	d.cells = xmalloc((size_t)(d.ns + 1) * (NU + 1) * sizeof *d.cells);
	for (d.nestg = NESTG; d.nestg > 2 &&
	     (double)d.ns * d.nestg * d.nestg * (NESTL + 1) * (NESTL + 1) > NESTWORK; d.nestg--)
		;
	nsplit = xcalloc(d.ns + 1, sizeof *nsplit);
	bestsplit = xcalloc(d.ns + 1, sizeof *bestsplit);
	nend = xcalloc(d.ns + 1, sizeof *nend);
	bestend = xcalloc(d.ns + 1, sizeof *bestend);
	h = xmalloc((p->n + 1) * sizeof *h);
	h2 = xmalloc((p->n + 1) * sizeof *h2);
	pl->feasible = 0;
	pl->peak = INT64_MAX;
	/* Long-lived values: every keep/swap combination of the largest few (long_pick); the
	 * rest kept. Each also without any swap: the copy engine the swaps share is modeled only roughly,
	 * the measured time decides. */
	for (int run = 0, last = -1; run < (1 << nlc) * NSCALE * 2; run++) {
		int combo = run / (NSCALE * 2), si = run / 2 % NSCALE;
		int64_t dpb = (int64_t)((double)budget * scale[si]);
		double extra, cost;
		/* A plan that fits as fast as the unplanned step cannot be beaten. */
		if (pl->feasible && pl->time <= p->time)
			break;
		d.noswap = run & 1;
		if (dpb > p->peak && scale[si] > 1)
			continue;
		if ((combo || !d.noswap) && p->bw <= 0)
			continue;
		if (combo && d.noswap)
			continue;
		extra = long_modes(&d, free_, combo, lc, nlc, mode);
		/* The groups' costs depend on the long-lived modes only. */
		if (combo != last) {
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
			for (int j = 0; j < d.ns; j++)
				group_costs(&d, j, &d.grp[(size_t)j * MAXG], h, h2);
			for (int len = 2; len <= d.nestg; len++)
				for (int j = 0; j + len <= d.ns; j++)
					nest_costs(&d, j, j + len);
			last = combo;
		}
		cost = run_dp(&d, dpb, mode, nsplit, nend);
		if (cost < 0)
			continue;
		if (try_modes(&d, mode, nsplit, nend, budget, tmp, pl)) {
			pl->obj = cost + extra;
			fromchain = 0;
			memcpy(best, mode, p->n);
			memcpy(bestsplit, nsplit, (d.ns + 1) * sizeof *nsplit);
			memcpy(bestend, nend, (d.ns + 1) * sizeof *nend);
			ok = 1;
		}
	}
	/* The exact DP over the chain of stages (chain.c), for each choice of long-lived modes,
	 * where the plans above are slower than the unplanned step; what costs more than the
	 * fastest of them (measured, without swaps) is left out of its fronts. */
	for (int combo = 0; combo < 1 << nlc && !(pl->feasible && pl->time <= p->time); combo++) {
		double extra, ub;
		Chain *ch;
		if (combo && p->bw <= 0)
			break;
		extra = long_modes(&d, free_, combo, lc, nlc, mode);
		ub = pl->feasible && extra == 0 ? (pl->time - p->time) * (1 + 1e-9) : -1;
		ch = chain_new(p, d.fops, d.nf, cuts, bnd, d.ns, d.endp, d.lng, d.glong, d.abase);
		for (int k = 0, held = 0; ch && k < NCSCALE; k++) {
			double cc = chain_solve(ch, (int64_t)((double)budget * cscale[k]), ub, tmp);
			if (cc < 0)
				break;
			for (int i = 0; i < p->n; i++)
				if (mode[i] == SWAP && d.glong[i] && p->cand[i])
					plan_place_swap(p, i, p->split[i], &tmp->sw[tmp->nsw++]);
			plan_eval(p, tmp, budget);
			if (tmp->feasible && plan_better(tmp, pl))
				plan_fits(p, tmp, budget);
			if (plan_better(tmp, pl)) {
				plan_copy(pl, tmp);
				pl->obj = cc + extra;
				ok = fromchain = 1;
			}
			if (tmp->feasible)
				break;
			if (tmp->peak <= budget && !held) {
				chain_hold_inputs(ch);
				held = 1;
				k--;
			}
		}
		chain_free(ch);
	}
	/* Plans of equal peak differ in what the layout makes of them: if none fit, the
	 * extremes are candidates too, every value swapped or every one recomputed. */
	for (int m = SWAP; m >= REC && !pl->feasible; m--) {
		if (m == SWAP && p->bw <= 0)
			continue;
		for (int i = 0; i < p->n; i++)
			mode[i] = p->cand[i] ? m : REC;
		if (try_modes(&d, mode, NULL, NULL, budget, tmp, pl)) {
			fromchain = 0;
			memcpy(best, mode, p->n);
			memset(bestsplit, 0, (d.ns + 1) * sizeof *bestsplit);
			ok = 1;
		}
	}
	if (pl->feasible && pl->nsw > 1 && p->n <= 1500 && !fromchain)
		spread_swaps(&d, budget, best, bestsplit, bestend, tmp, pl);
	pl->solver = "tso";
	pl->stime = plan_clock() - t0;
	for (int k = 0; d.rmq && k <= d.lg; k++)
		free(d.rmq[k]);
	free(d.rmq);
	free(d.grp); free(d.nest); free(d.nscr); free(d.cells); free(nsplit); free(bestsplit); free(nend); free(bestend); free(h); free(h2);
	free(d.base); free(d.abase); free(free_); free(d.s); free(d.fops); free(cuts); free(bnd); free(d.lng); free(d.glong); free(d.endp); free(mode); free(best);
	plan_free(tmp);
	return ok ? 0 : -1;
}
