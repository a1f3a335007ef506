/* place.c: where each param's group lives between steps: the search the planner runs above
 * the activation solvers, and the effects of changing one group's level that the ILP's
 * placement decides from (place_effects: each change rewritten and measured alone).
 *
 * needs: m->step in execution order, its updates hoisted; a budget; a way to fit a step's
 *        activation plan (the planner's tso rounds, handed in: this file calls no solver).
 * fills: the levels (home.c's HOME_*) of the placement whose step, planned, is the fastest
 *        that fits, found by few plans: each group's levels are ranked by the bytes they take
 *        off the accelerator per second of copy stream they cost (copies in and home, the
 *        gradient out, the update on the host), the cheapest bytes first, and the search
 *        walks prefixes of that list: about the smallest prefix that fits (bisection), then
 *        prefixes between it and the whole list, spaced in log(1 + prefix), refined around the
 *        best. A prefix is measured as the
 *        pass will install it: home.c's rewrite, and the activation plan only if the
 *        rewritten step does not fit as it is. Deterministic: no clock decides anything.
 *        Its pieces (each group's points and hull, the walk over a list's prefixes) are
 *        dp.c's too, which puts ZeRO's shards on the same list. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { PAR_MINOPS = 200 };     /* the smallest step whose prefixes are planned side by side */

/* Under AddressSanitizer each fork copies the page tables of the shadow memory: the example
 * transformer at 50% compiled in 20.1 s in two processes against 17.9 s in one; there the
 * walk runs in one. */
#if defined(__SANITIZE_ADDRESS__)
#define PAR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAR_ASAN 1
#endif
#endif
#ifndef PAR_ASAN
#define PAR_ASAN 0
#endif

typedef struct S {
	Module *m;
	Func *f;
	const Target *tg;
	int64_t budget;
	PlaceFitFn *fit;
	PlaceUp *up;
	int nup;
	uint8_t *lvl;          /* scratch: the levels of one prefix */
	double *time;          /* per prefix: modeled seconds, INFINITY: does not fit, NAN: not yet */
	long nodes;
} S;

static double
cs(const Target *tg, int64_t b)
{
	return tg->copylat + (double)b / tg->copybw;
}

static int64_t
vb(const Func *f, int v)
{
	return type_bytes(&f->val[v].ty);
}

/* What level l of update u takes off the accelerator (*freed) and costs the copy stream and
 * the host's thread; an update on the host costs also what of its host time the compute
 * after it (slack seconds) cannot cover: run last in the backward, it would add to the step. */
static double
level_cost(const Func *f, const Target *tg, const Op *u, int l, double slack, int64_t *freed)
{
	int nw = opinfo[u->kind].nwritten;
	int64_t pb = vb(f, u->args[0]), sb = 0;
	double st = 0, c = 0;

	for (int k = 1; k < nw; k++) {
		sb += vb(f, u->args[k]);
		st += 2 * cs(tg, vb(f, u->args[k]));
	}
	switch (l) {
	case HOME_STATE:
		*freed = sb;
		return st;
	case HOME_PARAM:
		*freed = pb;
		return 3 * cs(tg, pb);          /* fetched, fetched again for the backward, home */
	case HOME_BOTH:
		*freed = pb + sb;
		return 3 * cs(tg, pb) + st;
	case HOME_HOSTUPD: {
		double fl = opinfo[u->kind].cost(f, u) / tg->hostflops;
		double mb = (double)(op_bytes(f, u) + vb(f, u->args[nw])) / tg->hostbw;
		*freed = pb + sb;
		c = 2 * cs(tg, pb) + cs(tg, vb(f, u->args[nw]));
		c += fl > mb ? fl : mb;
		return c + ((fl > mb ? fl : mb) > slack ? (fl > mb ? fl : mb) - slack : 0);
	}
	}
	*freed = 0;
	return 0;
}

int
place_points(const Func *f, const Target *tg, int u, double slack, PlacePt *pt)
{
	int mask = home_allowed(f, tg, u), n = 0;

	for (int l = HOME_STATE; l < NHOME; l++)
		if (mask & 1 << l) {
			pt[n].lvl = l;
			pt[n].shard = 0;
			pt[n].cost = level_cost(f, tg, &f->op[u], l, slack, &pt[n].bytes);
			n++;
		}
	return n;
}

int
place_chain(const PlacePt *pt, int n, int tail, int op, PlaceUp *up)
{
	int64_t fb = 0;
	double fc = 0;
	int at = -1, k = 0;

	for (;;) {
		int best = -1;
		double br = 0;
		for (int j = 0; j < n; j++) {
			double r;
			if (pt[j].bytes <= fb)
				continue;
			r = pt[j].cost <= fc ? INFINITY : (double)(pt[j].bytes - fb) / (pt[j].cost - fc);
			if (best < 0 || r > br || (r == br && pt[j].bytes > pt[best].bytes)) {
				best = j;
				br = r;
			}
		}
		if (best < 0)
			break;
		up[k] = (PlaceUp){ op, pt[best].lvl, pt[best].shard, br, pt[best].bytes - fb, k };
		k++;
		at = best;
		fb = pt[best].bytes;
		fc = pt[best].cost;
	}
	/* Updating on the host takes no more off between steps than the homes do, so the hull
	 * may stop at HOME_BOTH (HOME_PARAM without state); but then the update fetches the param
	 * and the state for itself, and an update on the host holds neither: the last resort, at
	 * the end of the list (ratio 0), so that the whole list is the least the step can hold
	 * whatever the cost model says. */
	if (tail >= 0 && at != tail) {
		up[k] = (PlaceUp){ op, pt[tail].lvl, pt[tail].shard, 0, 0, k };
		k++;
	}
	return k;
}

static int
cmp_up(const void *x, const void *y)
{
	const PlaceUp *a = x, *b = y;

	if (a->ratio != b->ratio)
		return a->ratio > b->ratio ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->op != b->op)
		return a->op - b->op;
	return a->rank - b->rank;
}

void
place_sort(PlaceUp *up, int n)
{
	/* a stable order: the ranks within a chain decrease in ratio, so sorting keeps them */
	qsort(up, n, sizeof *up, cmp_up);
}

/* Each group's chain of levels (the lower hull of cost against bytes: from where it stands,
 * the level that takes the most bytes off per second more), all chains in one list, cheapest
 * bytes first; a group's steps keep their order (each cheaper per byte than the next). */
static void
upgrades(S *s)
{
	const Func *f = s->f;
	Cost co;

	cost_fill(&co, f, s->tg);
	s->up = xcalloc((size_t)f->nop * NHOME + 1, sizeof *s->up);
	for (int i = 0; i < f->nop; i++) {
		PlacePt pt[NHOME];
		int n = place_points(f, s->tg, i, co.total - co.end[i], pt), tail = -1;
		for (int j = 0; j < n; j++)
			if (pt[j].lvl == HOME_HOSTUPD)
				tail = j;
		s->nup += place_chain(pt, n, tail, i, s->up + s->nup);
	}
	cost_free(&co);
	place_sort(s->up, s->nup);
}

/* The levels of prefix k into s->lvl. */
static void
levels(S *s, int k)
{
	memset(s->lvl, 0, s->f->nop + 1);
	for (int j = 0; j < k; j++)
		s->lvl[s->up[j].op] = (uint8_t)s->up[j].lvl;
}

/* Prefix k's step as the pass would plan it: its modeled seconds, INFINITY if it does not fit.
 * With bound > 0, a step whose unplanned time (which a plan only adds to) is not below bound
 * is not planned: the next double above bound is its time, worse than the best known
 * (bound itself let such a prefix win the tie with the best, and best_of takes the smallest
 * of equal times: widemlp at 50% took a prefix no better than the one 40% took). */
static void
eval(void *ctx, int k, double bound, PlaceVal *v)
{
	S *s = ctx;
	Func *g;
	int64_t a;
	Meas me = {0};

	levels(s, k);
	home_mark(s->m, s->f, s->lvl, 1);
	g = home_step(s->f, s->tg, s->lvl, NULL);
	a = plan_arena(g, s->tg, NULL, 0);
	plan_measure(g, s->tg, &me);
	v->stime = 0;
	v->floor = a <= s->budget ? -INFINITY : me.time;
	if (a <= s->budget)
		v->time = me.time;
	else if (bound > 0 && me.time >= bound)
		v->time = nextafter(bound, INFINITY);
	else {
		Prob *q = prob_new(g, s->tg);
		int64_t qa;
		Plan *pl;
		q->nodes = s->nodes;
		pl = s->fit(q, s->budget, &v->stime, &qa);
		v->time = pl ? pl->time : INFINITY;
		plan_free(pl);
		prob_free(q);
	}
	home_mark(s->m, s->f, s->lvl, 0);
	func_free(g);
}

/* The best prefix measured so far (the smallest of equal times). */
static int
best_of(const double *time, int K)
{
	int b = 0;

	for (int k = 1; k <= K; k++)
		if (!isnan(time[k]) && time[k] < time[b])
			b = k;
	return b;
}

typedef struct Walk {
	PlaceEvalFn *ev;
	void *ctx;
	int K, jobs;
	double *time, *stime;
	const int *ks;         /* the prefixes measured side by side, */
	double bound;          /* under this bound */
} Walk;

static void
walk_one(int i, void *ctx, void *out)
{
	Walk *w = ctx;
	w->ev(w->ctx, w->ks[i], w->bound, out);
}

/* Measure prefixes ks[0..n) (distinct, not measured yet) as the walk would one after another,
 * each under bound or, with follow, under the best time known before it. Side by side, each
 * is measured under the bound before all of them (no tighter), then they are taken in order:
 * one whose unplanned step is no faster than its own bound gets the time just above it, as if
 * it had not been planned. So the times are the same for any number of jobs. */
static void
walk_batch(Walk *w, const int *ks, int n, double bound, int follow)
{
	PlaceVal *v = xcalloc(n + 1, sizeof *v);

	if (w->jobs > 1 && n > 1) {
		w->ks = ks;
		w->bound = follow ? w->time[best_of(w->time, w->K)] : bound;
		par_map(n, w->jobs, walk_one, w, v, sizeof *v);
	}
	for (int i = 0; i < n; i++) {
		double b = follow ? w->time[best_of(w->time, w->K)] : bound;
		if (w->jobs <= 1 || n <= 1)
			w->ev(w->ctx, ks[i], b, &v[i]);
		w->time[ks[i]] = b > 0 && v[i].floor >= b ? nextafter(b, INFINITY) : v[i].time;
		if (w->stime)
			*w->stime += v[i].stime;
	}
	free(v);
}

/* Prefix k measured, unless it is already. */
static double
walk_at(Walk *w, int k, double bound)
{
	if (isnan(w->time[k]))
		walk_batch(w, &k, 1, bound, 0);
	return w->time[k];
}

int
place_walk(int K, double t0, PlaceEvalFn *ev, void *ctx, int jobs, double *time, double *stime)
{
	Walk w = { ev, ctx, K, PAR_ASAN ? 1 : par_width(jobs), time, stime, NULL, 0 };
	int lo, hi, best, ks[6], n;

	for (int k = 0; k <= K; k++)
		time[k] = NAN;
	time[0] = t0;
	if (isinf(t0) && isinf(walk_at(&w, K, 0)))
		return -1;
	/* about the smallest prefix that fits (fitting grows with the prefix), to a sixteenth of
	 * the list */
	lo = 0;
	hi = K;
	if (isinf(t0))
		while (hi - lo > (K / 16 > 1 ? K / 16 : 1)) {
			int mid = lo + (hi - lo) / 2;
			if (isinf(walk_at(&w, mid, 0)))
				lo = mid;
			else
				hi = mid;
		}
	else
		hi = 0;
	/* Between it and the whole list the step's time falls as the activations get room and
	 * rises with the copies, not smoothly, and the least is most often early in the list:
	 * six prefixes spaced evenly in log(1 + prefix), then twice the midpoints on either side
	 * of the best; a prefix whose step, unplanned, is already slower than the best need not
	 * be planned (bound). Those of a row are measured side by side. */
	n = 0;
	for (int j = 0; j <= 5; j++) {
		int k = hi + (int)lround(expm1(log1p(K - hi) * j / 5)), dup = 0;
		for (int i = 0; i < n; i++)
			dup |= ks[i] == k;
		if (isnan(time[k]) && !dup)
			ks[n++] = k;
	}
	walk_batch(&w, ks, n, 0, 1);
	for (int round = 0; round < 2; round++) {
		int l = -1, rr = K + 1;
		best = best_of(time, K);
		for (int k = best - 1; k >= 0 && l < 0; k--)
			if (!isnan(time[k]))
				l = k;
		for (int k = best + 1; k <= K && rr > K; k++)
			if (!isnan(time[k]))
				rr = k;
		n = 0;
		if (l >= 0 && best - l > 1)
			ks[n++] = (l + best) / 2;
		if (rr <= K && rr - best > 1)
			ks[n++] = (best + rr) / 2;
		walk_batch(&w, ks, n, time[best], 0);
	}
	return best_of(time, K);
}

uint8_t *
place_search(Module *m, Func *f, const Target *tg, int64_t budget, long nodes, double t0,
             PlaceFitFn *fit, int jobs, double *stime, int *fits)
{
	S s = { m, f, tg, budget, fit, NULL, 0, NULL, NULL, nodes };
	int best, K;
	uint8_t *r = NULL;

	*fits = 0;
	upgrades(&s);
	K = s.nup;
	if (!K) {
		free(s.up);
		return NULL;
	}
	s.lvl = xcalloc(f->nop + 1, 1);
	s.time = xmalloc((K + 1) * sizeof *s.time);
	/* side by side only on larger steps: on skipnet's 114 ops two processes took 12% longer
	 * than one (fork's cost and its copied pages), on the transformer's 372 ops 11% less */
	best = place_walk(K, t0, eval, &s, f->nop >= PAR_MINOPS ? jobs : 1, s.time, stime);
	if (best < 0) {
		/* nothing fits as planned: the most that can move, for the planner's fallbacks */
		levels(&s, K);
		r = s.lvl;
		s.lvl = NULL;
	} else if (best > 0) {
		*fits = 1;
		levels(&s, best);
		r = s.lvl;
		s.lvl = NULL;
	} else
		*fits = 1;
	free(s.lvl);
	free(s.time);
	free(s.up);
	return r;
}

/* The step f rewritten for the levels lvl, unplanned: its modeled seconds, and into prof (f->nop
 * entries) its bytes at each op of f: at op t the most held from just after op t-1's image to
 * op t's. */
static double
measure(Module *m, const Func *f, const Target *tg, const uint8_t *lvl, int *map, int64_t *prof)
{
	Func *g;
	Meas me = {0};

	home_mark(m, f, lvl, 1);
	g = home_step(f, tg, lvl, map);
	plan_profile_back(g, tg->align, map, f->nop, prof);
	plan_measure(g, tg, &me);
	home_mark(m, f, lvl, 0);
	func_free(g);
	return me.time;
}

/* The effects of changing each group's level from base's, for the ILP (ilp.c decides them with
 * the activations): each change rewritten on its own (home.c) and measured against base's. */
int
place_effects(Module *m, const Func *f, const Target *tg, const uint8_t *base, PlaceEffect **out)
{
	int n = f->nop, ne = 0, cap = 0, *map = xmalloc((n + 1) * sizeof *map);
	int64_t *p0 = xmalloc((n + 1) * sizeof *p0), *pl = xmalloc((n + 1) * sizeof *pl);
	uint8_t *lvl = xcalloc(n + 1, 1);
	PlaceEffect *pe = NULL;
	double t0;

	if (base)
		memcpy(lvl, base, n);
	t0 = measure(m, f, tg, lvl, map, p0);
	for (int u = 0; u < n; u++) {
		int mask = home_allowed(f, tg, u), b = lvl[u];
		if (mask == 1 << HOME_DEV)
			continue;
		for (int l = HOME_DEV; l < NHOME; l++) {
			PlaceEffect *e;
			if (!(mask & 1 << l) || l == b)
				continue;
			if (ne == cap) {
				cap = cap ? 2 * cap : 64;
				pe = xrealloc(pe, cap * sizeof *pe);
			}
			e = &pe[ne++];
			e->op = u;
			e->lvl = l;
			lvl[u] = (uint8_t)l;
			e->dt = measure(m, f, tg, lvl, map, pl) - t0;
			e->off = xmalloc((n + 1) * sizeof *e->off);
			for (int t = 0; t < n; t++)
				e->off[t] = p0[t] - pl[t];
		}
		lvl[u] = (uint8_t)b;
	}
	free(map);
	free(p0);
	free(pl);
	free(lvl);
	*out = pe;
	return ne;
}

void
place_effects_free(PlaceEffect *pe, int n)
{
	for (int i = 0; i < n; i++)
		free(pe[i].off);
	free(pe);
}
