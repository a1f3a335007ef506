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
 *        the cost model) still fits and is faster. Layout, the costly part, runs only for
 *        trials whose live peak fits and that would be kept. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum {
	WORK = 1600000,     /* measurements times ops per start: bounds the compile time */
	NBIS = 3,           /* bisection steps per end of a swap */
	NCAND = 32,         /* values tried per step of tightening */
};

typedef struct St {
	Plan *pl;
	Func *g;            /* the planned step, kept for its layout */
	int64_t arena;      /* -1 until laid out */
	int64_t excess;     /* live bytes over Rx.thr, summed over the ops: what is left to cut */
	int peak;           /* the step's op at the planned step's live peak */
} St;

typedef struct Rx {
	Prob *p;
	int64_t budget;
	int n, nev, maxev;
	int64_t thr;        /* the live bytes that would fit, at the current plan's fragmentation */
	uint8_t *mode;      /* of the current state; changed in place by a trial */
	float *lin, *lout;
	int *cv;            /* the values a step of tightening tries */
	int64_t *prof;      /* live bytes per op of the last plan measured (nprof entries) */
	int nprof;
	int batch;          /* tightening applies every change that cuts, not the best alone */
	St cur, tr, fit;    /* fit: the fastest trial that fitted while tightening */
} Rx;

static void
drop(St *s)
{
	func_free(s->g);          /* its struct and names stay in the module's arena */
	s->g = NULL;
}

/* Build the plan of x's modes and placements into s and measure its time and live bytes as
 * plan_step will (plan_measure); its arena waits for arena(). */
static void
build(Rx *x, St *s)
{
	const Prob *p = x->p;
	Plan *pl = s->pl;
	Meas me;
	int t = -1;

	plan_expand(p, x->mode, pl);
	for (int k = 0; k < pl->nsw; k++) {
		Swap *w = &pl->sw[k];
		plan_place_swap_at(p, w->op, w->inwait, x->lin[w->op], x->lout[w->op], w);
	}
	/* the function of s's last build, if any, takes this one: its arrays, mapped and
	 * faulted in once, are kept */
	s->g = s->g ? remat_again(p, pl, s->g) : remat(p, pl);
	if (s->g->nop + 1 > x->nprof) {
		x->nprof = 2 * (s->g->nop + 1);
		x->prof = xrealloc(x->prof, x->nprof * sizeof *x->prof);
	}
	me.prof = x->prof;
	plan_measure(s->g, p->tg, &me);
	pl->peak = me.peak;
	pl->time = me.time;
	pl->feasible = 0;
	/* The peak in the step's numbering: the ops the plan inserted do not count. */
	for (int k = 0; k <= me.peakop && k < s->g->nop; k++)
		t += s->g->op[k].phase != PH_REC && s->g->op[k].phase != PH_MEM;
	s->peak = t < 0 ? 0 : t;
	s->excess = 0;
	for (int k = 0; k < s->g->nop; k++)
		s->excess += me.prof[k] > x->thr ? me.prof[k] - x->thr : 0;
	s->arena = -1;
	x->nev++;
}

/* Does s fit? Its arena is laid out once (plan_arena), only if its live peak fits. */
static int
fits(Rx *x, St *s)
{
	if (s->pl->peak > x->budget)
		return 0;
	if (s->arena < 0) {
		s->arena = plan_arena(s->g, x->p->tg, NULL, 0);
		s->pl->feasible = s->arena <= x->budget;
		x->nev++;
	}
	return s->pl->feasible;
}

static int64_t
arena(Rx *x, St *s)
{
	int64_t b = x->budget;

	x->budget = INT64_MAX;
	fits(x, s);
	x->budget = b;
	s->pl->feasible = s->arena <= b;
	return s->arena;
}

static void
swap_st(St *a, St *b)
{
	St t = *a;
	*a = *b;
	*b = t;
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
	arena(x, &x->cur);
}

/* Set value i to mode m placed at (li, lo); returns the old setting in *o. */
static void
set(Rx *x, int i, int m, float li, float lo, float o[3])
{
	if (o) {
		o[0] = x->mode[i];
		o[1] = x->lin[i];
		o[2] = x->lout[i];
	}
	x->mode[i] = (uint8_t)m;
	x->lin[i] = li;
	x->lout[i] = lo;
}

/* Relaxing: the trial is faster and fits. */
static int
faster(Rx *x)
{
	return x->tr.pl->time < x->cur.pl->time * (1 - 1e-12) && fits(x, &x->tr);
}

/* Try value i in mode m placed at (li, lo): kept if faster, else undone. */
static int
try(Rx *x, int i, int m, float li, float lo)
{
	float o[3];

	if (x->mode[i] == m && (m != SWAP || (x->lin[i] == li && x->lout[i] == lo)))
		return 0;
	set(x, i, m, li, lo, o);
	build(x, &x->tr);
	if (faster(x)) {
		swap_st(&x->cur, &x->tr);
		return 1;
	}
	set(x, i, (int)o[0], o[1], o[2], NULL);
	return 0;
}

typedef struct Mv {
	int i, m;
	float li, lo;
	double score;       /* relaxing: seconds saved per byte it costs; tightening: bytes cut
	                     * per second it costs */
} Mv;

static int
by_score(const void *a, const void *b)
{
	double x = ((const Mv *)a)->score, y = ((const Mv *)b)->score;
	return x < y ? 1 : x > y ? -1 : ((const Mv *)a)->i - ((const Mv *)b)->i;
}

/* Each round scores every single change toward time (a swap dropped, recomputed instead or
 * placed for time; a recomputation dropped) by the seconds it saves per live byte it adds,
 * then applies them best first, each kept if the plan still fits and is faster (a greedy
 * knapsack: a cheap early change must not take the room of a better one); then each swap
 * left placed for memory has its ends moved toward time by bisection. */
static void
relax(Rx *x)
{
	const Prob *p = x->p;
	Mv *mv = xmalloc((3 * x->n + 1) * sizeof *mv);

	for (int round = 0, any = 1; any && round < 4 && x->nev < x->maxev; round++) {
		int nm = 0;
		any = 0;
		for (int i = 0; i < x->n && x->nev < x->maxev; i++) {
			int om = x->mode[i];
			if (!p->cand[i] || om == KEEP)
				continue;
			for (int m = KEEP; m <= SWAP; m++) {
				float o[3];
				int64_t db;
				if (m == om && (m != SWAP || (x->lin[i] == 1 && x->lout[i] == 1)))
					continue;
				if ((m == REC && om != SWAP) || (m == SWAP && p->bw <= 0))
					continue;
				set(x, i, m, 1, 1, o);
				build(x, &x->tr);
				set(x, i, (int)o[0], o[1], o[2], NULL);
				if (x->tr.pl->time >= x->cur.pl->time * (1 - 1e-12) || x->tr.pl->peak > x->budget)
					continue;
				db = x->tr.pl->peak - x->cur.pl->peak;
				mv[nm++] = (Mv){ i, m, 1, 1, (x->cur.pl->time - x->tr.pl->time) / (double)(db > 1 ? db : 1) };
			}
		}
		qsort(mv, nm, sizeof *mv, by_score);
		for (int k = 0; k < nm && x->nev < x->maxev; k++)
			any |= try(x, mv[k].i, mv[k].m, 1, 1);
		/* Each end by bisection: as close to time as still fits. */
		for (int i = 0; i < x->n && x->nev < x->maxev; i++) {
			if (x->mode[i] != SWAP)
				continue;
			for (int e = 0; e < 2; e++) {
				float lo = e ? x->lout[i] : x->lin[i], hi = 1;
				for (int b = 0; b < NBIS && hi - lo > 1e-3; b++) {
					float mid = (lo + hi) / 2;
					if (e ? try(x, i, SWAP, x->lin[i], mid) : try(x, i, SWAP, mid, x->lout[i])) {
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

/* Keep the trial in x->fit if it is the fastest that fitted so far (mode, li, lo: value
 * i's setting in it; fmode, flin, flout get all of them). */
static void
keep_fit(Rx *x, int i, int m, float li, float lo, uint8_t *fmode, float *flin, float *flout)
{
	if ((x->fit.pl->feasible && x->tr.pl->time >= x->fit.pl->time) || !fits(x, &x->tr))
		return;
	plan_copy(x->fit.pl, x->tr.pl);      /* a copy: the trial goes on being scored */
	drop(&x->fit);                       /* laid out already: its step is not needed */
	x->fit.arena = x->tr.arena;
	x->fit.excess = x->tr.excess;
	x->fit.peak = x->tr.peak;
	memcpy(fmode, x->mode, x->n + 1);
	memcpy(flin, x->lin, (x->n + 1) * sizeof *flin);
	memcpy(flout, x->lout, (x->n + 1) * sizeof *flout);
	fmode[i] = (uint8_t)m;
	flin[i] = li;
	flout[i] = lo;
}

static const Prob *cvp;     /* for by_bytes */

/* Larger values first, then the longer held, then in order. */
static int
by_bytes(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;
	int64_t d = cvp->b[j] - cvp->b[i];
	int g = (cvp->lastuse[j] - cvp->lastearly[j]) - (cvp->lastuse[i] - cvp->lastearly[i]);

	return d ? (d > 0 ? 1 : -1) : g ? g : i - j;
}

/* One step down: every change to the values held at the peak (all values if all) (a value
 * swapped, placed for memory, recomputed) is scored by the live bytes over what would fit
 * that it cuts per second it costs; they are applied best first (greedy, as a knapsack by
 * ratio), each kept if it still cuts, until the plan fits. The fastest trial that fits on
 * the way is kept in x->fit. 0 if no change cuts. */
static int
tighten_step(Rx *x, int all, Mv *mv, uint8_t *fmode, float *flin, float *flout)
{
	const Prob *p = x->p;
	int t = x->cur.peak, nm = 0, any = 0, nc = 0, single;
	static const float pl[][2] = { { 1, 1 }, { 0, 1 }, { 1, 0 }, { 0, 0 } };

	x->thr = x->cur.pl->peak - (x->cur.arena - x->budget);
	build(x, &x->cur);         /* its excess over the new threshold */
	arena(x, &x->cur);
	/* The best change alone (the next step scores again: a change moves the peak); past half
	 * the measurements allowed, all of them that still cut. */
	single = !x->batch && 2 * x->nev < x->maxev;
	for (int i = 0; (all || i <= t + 1) && i < x->n; i++)
		if (p->cand[i] && (all || held(x, i, t)))
			x->cv[nc++] = i;
	/* On a large step, the largest values only when one change is applied per step: each
	 * trial is a measurement. */
	if (single && nc > NCAND) {
		cvp = p;
		qsort(x->cv, nc, sizeof *x->cv, by_bytes);
		nc = NCAND;
	}
	for (int c = 0; c < nc && x->nev < x->maxev; c++) {
		int i = x->cv[c];
		for (int m = REC; m <= SWAP; m++)
			for (int k = 0; k < (m == SWAP ? 4 : 1); k++) {
				int om = x->mode[i];
				float o[3], li = pl[k][0], lo = pl[k][1];
				double dt;
				if (m == SWAP && p->bw <= 0)
					continue;
				if (om == m && (m != SWAP || (li >= x->lin[i] && lo >= x->lout[i])))
					continue;
				if (om == SWAP && m == SWAP && (li > x->lin[i] || lo > x->lout[i]))
					continue;
				set(x, i, m, li, lo, o);
				build(x, &x->tr);
				set(x, i, (int)o[0], o[1], o[2], NULL);
				if (x->tr.excess >= x->cur.excess)
					continue;
				keep_fit(x, i, m, li, lo, fmode, flin, flout);
				dt = x->tr.pl->time - x->cur.pl->time;
				mv[nm++] = (Mv){ i, m, li, lo,
				                 (double)(x->cur.excess - x->tr.excess) / (dt > 1e-12 ? dt : 1e-12) };
			}
	}
	qsort(mv, nm, sizeof *mv, by_score);
	for (int k = 0; k < nm && x->nev < x->maxev && !x->cur.pl->feasible && !(single && any); k++) {
		float o[3];
		set(x, mv[k].i, mv[k].m, mv[k].li, mv[k].lo, o);
		build(x, &x->tr);
		if (x->tr.excess < x->cur.excess) {
			keep_fit(x, mv[k].i, mv[k].m, mv[k].li, mv[k].lo, fmode, flin, flout);
			swap_st(&x->cur, &x->tr);
			fits(x, &x->cur);
			any = 1;
		} else
			set(x, mv[k].i, (int)o[0], o[1], o[2], NULL);
	}
	return any;
}

Plan *
plan_relax(Prob *p, int64_t budget, Plan **start, int nstart, long work, int64_t *ba)
{
	Rx x;
	Plan *best = NULL;
	int tight = p->tight, n = p->n;
	uint8_t *fmode = xmalloc(n + 1);
	float *flin = xmalloc((n + 1) * sizeof *flin), *flout = xmalloc((n + 1) * sizeof *flout);
	Mv *mv = xmalloc((5 * n + 1) * sizeof *mv);

	memset(&x, 0, sizeof x);
	x.p = p;
	x.budget = budget;
	x.n = n;
	if (work <= 0)
		work = WORK;
	x.maxev = work / (n + 1) > 100 ? work / (n + 1) : 100;
	p->tight = 0;
	x.mode = xmalloc(n + 1);
	x.lin = xmalloc((n + 1) * sizeof *x.lin);
	x.lout = xmalloc((n + 1) * sizeof *x.lout);
	x.cv = xmalloc((n + 1) * sizeof *x.cv);
	x.cur.pl = plan_new(p);
	x.tr.pl = plan_new(p);
	x.fit.pl = plan_new(p);
	/* A start that misses is tightened twice: the best change at a time (small steps: close
	 * to what fits, slow) and every change at a time (large cuts; on the examples now one,
	 * now the other is faster). */
	for (int ks = 0; ks < 2 * nstart; ks++) {
		int k = ks / 2;
		x.batch = ks % 2;
		if (!start[k])
			continue;
		x.nev = 0;
		x.thr = INT64_MAX;
		x.fit.pl->feasible = 0;
		load(&x, start[k]);
		if (x.batch && x.cur.pl->feasible)
			continue;
		while (!x.cur.pl->feasible && x.nev < x.maxev &&
		       (tighten_step(&x, 0, mv, fmode, flin, flout) ||
		        tighten_step(&x, 1, mv, fmode, flin, flout)))
			;
		if (x.fit.pl->feasible && (!x.cur.pl->feasible || x.fit.pl->time < x.cur.pl->time)) {
			swap_st(&x.cur, &x.fit);
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
			*ba = x.cur.arena;
		}
	}
	drop(&x.cur);
	drop(&x.tr);
	drop(&x.fit);
	plan_free(x.cur.pl);
	plan_free(x.tr.pl);
	plan_free(x.fit.pl);
	free(x.mode);
	free(x.lin);
	free(x.lout);
	free(x.cv);
	free(x.prof);
	free(fmode);
	free(flin);
	free(flout);
	free(mv);
	p->tight = tight;
	return best;
}
