/* relax.c: swaps placed for memory only where the budget needs them (the tight fallback).
 *
 * needs: a Prob, a budget (bytes of the arena after layout), start plans: fitting ones (the
 *        solvers' with every swap placed for memory) and ones that missed (placed for time).
 * fills: the fastest plan it finds whose arena fits, never slower than a start that fits.
 *        A plan is held as one mode per forward value (KEEP, REC, SWAP: plan_expand makes the
 *        schedule) and, for each swap, where its swap_in and its swap_out's wait sit between
 *        memory (0) and time (1) (plan_place_swap_at). A start that misses is tightened one
 *        value at a time around its peak until it fits; a plan that fits is relaxed one value
 *        at a time (a swap dropped, recomputed instead, or placed back toward time, by
 *        bisection), each change kept only when the measured plan (remat, liveness, layout,
 *        the cost model) still fits and is faster. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum {
	MAXEV = 4000,       /* evaluations per start: bounds the compile time on large steps */
	NBIS = 3,           /* bisection steps per end of a swap */
};

typedef struct St {
	Plan *pl;
	int64_t arena;
	int64_t excess;     /* live bytes over Rx.thr, summed over the ops: what is left to cut */
	int peak;           /* the step's op at the planned step's live peak */
} St;

typedef struct Rx {
	Prob *p;
	int64_t budget;
	int n, nev;
	int64_t thr;        /* the live bytes that would fit, at the current plan's fragmentation */
	uint8_t *mode;      /* of the current state; changed in place by a trial */
	float *lin, *lout;
	St cur, tr;
} Rx;

/* Build the plan of x's modes and placements into s and measure it as plan_step will. */
static void
build(Rx *x, St *s)
{
	const Prob *p = x->p;
	Plan *pl = s->pl;
	Func *g;
	Live l;
	Cost c;
	Layout lay;
	int t = -1;

	plan_expand(p, x->mode, pl);
	for (int k = 0; k < pl->nsw; k++) {
		Swap *w = &pl->sw[k];
		plan_place_swap_at(p, w->op, w->inwait, x->lin[w->op], x->lout[w->op], w);
	}
	g = remat(p, pl);
	live_fill(&l, g);
	cost_fill(&c, g, p->tg);
	pl->peak = l.peak;
	pl->time = c.total;
	/* The peak in the step's numbering: the ops the plan inserted do not count. */
	for (int k = 0; k <= l.peakop && k < g->nop; k++)
		t += g->op[k].phase != PH_REC && g->op[k].phase != PH_MEM;
	s->peak = t < 0 ? 0 : t;
	s->excess = 0;
	for (int k = 0; k < g->nop; k++)
		s->excess += l.at[k] > x->thr ? l.at[k] - x->thr : 0;
	layout(&lay, g, &l, p->tg->align);
	s->arena = lay.arena;
	pl->feasible = s->arena <= x->budget;
	live_free(&l);
	cost_free(&c);
	func_free(g);
	x->nev++;
}

/* The state of a solver's plan: its values' modes, its swaps' placements. */
static void
load(Rx *x, const Plan *src)
{
	const Prob *p = x->p;
	int n = x->n;

	memset(x->mode, KEEP, n + 1);
	for (int i = 0; i < n; i++)
		x->lin[i] = x->lout[i] = 1;
	for (size_t k = 0; k < (size_t)n * n; k++)
		if (src->rec[k])
			x->mode[k % n] = REC;
	for (int k = 0; k < src->nsw; k++) {
		const Swap *w = &src->sw[k];
		Swap tm;
		plan_place_swap_at(p, w->op, w->inwait, 1, 1, &tm);
		x->mode[w->op] = SWAP;
		if (tm.inwait > tm.in)
			x->lin[w->op] = (float)(w->inwait - w->in) / (float)(tm.inwait - tm.in);
		if (tm.outwait > tm.out)
			x->lout[w->op] = (float)(w->outwait - w->out) / (float)(tm.outwait - tm.out);
	}
	build(x, &x->cur);
}

/* Try value i in mode m placed at (li, lo): kept if ok() says the trial beats the current
 * state, else undone. */
static int
try(Rx *x, int i, int m, float li, float lo, int (*ok)(const Rx *))
{
	uint8_t om = x->mode[i];
	float oi = x->lin[i], oo = x->lout[i];
	St t;

	if (om == m && (m != SWAP || (oi == li && oo == lo)))
		return 0;
	x->mode[i] = (uint8_t)m;
	x->lin[i] = li;
	x->lout[i] = lo;
	build(x, &x->tr);
	if (ok(x)) {
		t = x->cur;
		x->cur = x->tr;
		x->tr = t;
		return 1;
	}
	x->mode[i] = om;
	x->lin[i] = oi;
	x->lout[i] = oo;
	return 0;
}

/* Relaxing: the trial fits and is faster. */
static int
faster(const Rx *x)
{
	return x->tr.pl->feasible && x->tr.pl->time < x->cur.pl->time * (1 - 1e-12);
}

typedef struct Mv {
	int i, m;
	float li, lo;
	double score;       /* seconds saved per byte it costs */
} Mv;

static int
by_score(const void *a, const void *b)
{
	double x = ((const Mv *)a)->score, y = ((const Mv *)b)->score;
	return x < y ? 1 : x > y ? -1 : ((const Mv *)a)->i - ((const Mv *)b)->i;
}

/* Each round scores every single change toward time (a swap dropped, recomputed instead or
 * placed for time; a recomputation dropped) by the seconds it saves per byte it adds, then
 * applies them best first, each kept if the plan still fits and is faster (a greedy
 * knapsack: a cheap early change must not take the room of a better one); then each swap
 * left placed for memory has its ends moved toward time by bisection. */
static void
relax(Rx *x)
{
	const Prob *p = x->p;
	Mv *mv = xmalloc((3 * x->n + 1) * sizeof *mv);
	static const float tm[2] = { 1, 1 };

	for (int round = 0, any = 1; any && round < 4 && x->nev < MAXEV; round++) {
		int nm = 0;
		any = 0;
		for (int i = 0; i < x->n && x->nev < MAXEV; i++) {
			uint8_t om = x->mode[i];
			if (!p->cand[i] || om == KEEP)
				continue;
			for (int m = KEEP; m <= SWAP; m++) {
				float oi = x->lin[i], oo = x->lout[i];
				int64_t db;
				if (m == om && (m != SWAP || (oi == tm[0] && oo == tm[1])))
					continue;
				if ((m == REC && om != SWAP) || (m == SWAP && p->bw <= 0))
					continue;
				x->mode[i] = (uint8_t)m;
				x->lin[i] = tm[0];
				x->lout[i] = tm[1];
				build(x, &x->tr);
				x->mode[i] = om;
				x->lin[i] = oi;
				x->lout[i] = oo;
				if (!faster(x))
					continue;
				db = x->tr.arena - x->cur.arena;
				if (x->tr.pl->peak - x->cur.pl->peak > db)
					db = x->tr.pl->peak - x->cur.pl->peak;
				mv[nm++] = (Mv){ i, m, tm[0], tm[1],
				                 (x->cur.pl->time - x->tr.pl->time) / (double)(db > 1 ? db : 1) };
			}
		}
		qsort(mv, nm, sizeof *mv, by_score);
		for (int k = 0; k < nm && x->nev < MAXEV; k++)
			any |= try(x, mv[k].i, mv[k].m, mv[k].li, mv[k].lo, faster);
		/* Each end by bisection: as close to time as still fits. */
		for (int i = 0; i < x->n && x->nev < MAXEV; i++) {
			if (x->mode[i] != SWAP)
				continue;
			for (int e = 0; e < 2; e++) {
				float lo = e ? x->lout[i] : x->lin[i], hi = 1;
				for (int b = 0; b < NBIS && hi - lo > 1e-3; b++) {
					float mid = (lo + hi) / 2;
					if (e ? try(x, i, SWAP, x->lin[i], mid, faster) :
					    try(x, i, SWAP, mid, x->lout[i], faster)) {
						lo = mid;
						any = 1;
					} else
						hi = mid;
				}
			}
		}
	}
	free(mv);
}

/* Tightening: the trial's arena is smaller, or as large with less live memory over what
 * would fit (a peak that several ops reach goes down one op at a time). */
static int
smaller(const Rx *x)
{
	return x->tr.arena < x->cur.arena ||
	       (x->tr.arena == x->cur.arena && x->tr.excess < x->cur.excess);
}

/* Does the current plan hold i's value on the accelerator at op t (or t + 1: the peak may
 * be at an op the plan inserted) beyond its early uses, so a change to i can lower it? */
static int
held(const Rx *x, int i, int t)
{
	const Prob *p = x->p;
	const Plan *pl = x->cur.pl;

	if (t + 1 <= p->lastearly[i] || t > p->lastuse[i])
		return 0;
	if (x->mode[i] == REC) {
		for (int u = 0; u <= t + 1 && u < x->n; u++)
			if (pl->rec[(size_t)u * x->n + i])
				return 1;
		return 0;
	}
	if (x->mode[i] == SWAP)
		for (int k = 0; k < pl->nsw; k++)
			if (pl->sw[k].op == i)
				return t <= pl->sw[k].outwait || t + 1 >= pl->sw[k].in;
	return 1;
}

/* One step down: of the changes to the values live across the peak (a value swapped, placed
 * for memory, recomputed), the one that buys the most bytes per second it costs (greedy, as
 * a knapsack by ratio); the fastest trial that fits on the way is kept in *fit. 0 if no
 * change shrinks the plan. */
static int
tighten_step(Rx *x, St *fit, uint8_t *fmode, float *flin, float *flout, int all)
{
	const Prob *p = x->p;
	int t = x->cur.peak, bi = -1, bm = KEEP;
	float bl = 0, bo = 0;
	double bs = -1;
	static const float pl[][2] = { { 1, 1 }, { 0, 1 }, { 1, 0 }, { 0, 0 } };

	x->thr = x->cur.pl->peak - (x->cur.arena - x->budget);
	build(x, &x->cur);

	for (int i = 0; (all || i <= t) && i < x->n && x->nev < MAXEV; i++) {
		if (!p->cand[i] || (!all && !held(x, i, t)))
			continue;
		for (int m = REC; m <= SWAP; m++)
			for (int k = 0; k < (m == SWAP ? 4 : 1); k++) {
				uint8_t om = x->mode[i];
				float oi = x->lin[i], oo = x->lout[i], li = pl[k][0], lo = pl[k][1];
				double s, dt;
				int sm;
				if (m == SWAP && p->bw <= 0)
					continue;
				if (om == m && (m != SWAP || (li >= oi && lo >= oo)))
					continue;
				if (om == SWAP && m == SWAP && (li > oi || lo > oo))
					continue;
				x->mode[i] = (uint8_t)m;
				x->lin[i] = li;
				x->lout[i] = lo;
				build(x, &x->tr);
				dt = x->tr.pl->time - x->cur.pl->time;
				s = (double)(8 * (x->cur.arena - x->tr.arena) + x->cur.excess - x->tr.excess) /
				    (dt > 1e-12 ? dt : 1e-12);
				sm = smaller(x) && (bi < 0 || s > bs);
				if (x->tr.pl->feasible && (!fit->pl->feasible || x->tr.pl->time < fit->pl->time)) {
					St u = *fit;
					*fit = x->tr;
					x->tr = u;
					memcpy(fmode, x->mode, x->n + 1);
					memcpy(flin, x->lin, (x->n + 1) * sizeof *flin);
					memcpy(flout, x->lout, (x->n + 1) * sizeof *flout);
				}
				x->mode[i] = om;
				x->lin[i] = oi;
				x->lout[i] = oo;
				if (!sm)
					continue;
				bi = i, bm = m, bl = li, bo = lo, bs = s;
			}
	}
	if (bi < 0)
		return 0;
	x->mode[bi] = (uint8_t)bm;
	x->lin[bi] = bl;
	x->lout[bi] = bo;
	build(x, &x->cur);
	return 1;
}

Plan *
plan_relax(Prob *p, int64_t budget, Plan **start, int nstart, int64_t *arena)
{
	Rx x = { p, budget, p->n, 0, 0, NULL, NULL, NULL, { NULL, 0, 0, 0 }, { NULL, 0, 0, 0 } };
	St fit = { NULL, 0, 0, 0 };
	Plan *best = NULL;
	int tight = p->tight, n = p->n;
	uint8_t *fmode = xmalloc(n + 1);
	float *flin = xmalloc((n + 1) * sizeof *flin), *flout = xmalloc((n + 1) * sizeof *flout);

	p->tight = 0;
	x.mode = xmalloc(n + 1);
	x.lin = xmalloc((n + 1) * sizeof *x.lin);
	x.lout = xmalloc((n + 1) * sizeof *x.lout);
	x.cur.pl = plan_new(p);
	x.tr.pl = plan_new(p);
	fit.pl = plan_new(p);
	for (int k = 0; k < nstart; k++) {
		if (!start[k])
			continue;
		x.nev = 0;
		fit.pl->feasible = 0;
		load(&x, start[k]);
		while (!x.cur.pl->feasible && x.nev < MAXEV &&
		       (tighten_step(&x, &fit, fmode, flin, flout, 0) ||
		        tighten_step(&x, &fit, fmode, flin, flout, 1)))
			;
		if (fit.pl->feasible && (!x.cur.pl->feasible || fit.pl->time < x.cur.pl->time)) {
			St u = x.cur;
			x.cur = fit;
			fit = u;
			memcpy(x.mode, fmode, n + 1);
			memcpy(x.lin, flin, (n + 1) * sizeof *flin);
			memcpy(x.lout, flout, (n + 1) * sizeof *flout);
		}
		if (!x.cur.pl->feasible)
			continue;
		relax(&x);
		if (!best || x.cur.pl->time < best->time) {
			if (!best)
				best = plan_new(p);
			plan_copy(best, x.cur.pl);
			best->solver = start[k]->solver;
			best->gap = start[k]->gap;
			*arena = x.cur.arena;
		}
	}
	plan_free(x.cur.pl);
	plan_free(x.tr.pl);
	plan_free(fit.pl);
	free(x.mode);
	free(x.lin);
	free(x.lout);
	free(fmode);
	free(flin);
	free(flout);
	p->tight = tight;
	return best;
}
