/* planner.c: the memory-planning pass: pick a solver, fit the budget after layout, install.
 *
 * needs: m->step in execution order; a budget: bytes of the whole arena, or N percent of
 *        the unconstrained arena (the interface's contract: params, inputs and optimizer
 *        state included, which no plan moves, so small percentages may be infeasible).
 * fills: m->step replaced by the planned step (rec, swap_out, swap_in, wait ops) whose arena
 *        fits the budget, and a report. The optimizer updates move up to their dependences
 *        first (gradients die early); nothing else is reordered. If the arena after layout exceeds the budget (the
 *        solvers count live bytes, the layout adds fragmentation), the solvers' budget is
 *        tightened by the excess and they run again. An infeasible budget is an error that
 *        states the smallest arena the solvers reached. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { ILP_MAXN = 400 };      /* larger steps: the ILP only inside auto's blocks (not yet) */
int64_t
plan_arena(Func *f, const Target *tg, int64_t *persist)
{
	Live l;
	Layout lay;

	live_fill(&l, f);
	layout(&lay, f, &l, tg->align);
	live_free(&l);
	if (persist)
		*persist = lay.persist;
	return lay.arena;
}

/* Does op k have to stay before update u: it makes one of u's operands, or reads or updates
 * a decl u updates, or updates a decl u reads? */
static int
conflicts(const Func *f, const Op *k, const Op *u)
{
	int nk = op_nmut(k->kind), nu = op_nmut(u->kind);

	for (int a = 0; a < u->nargs; a++) {
		int v = u->args[a];
		if (k->res == v)
			return 1;
		if (f->val[v].decl < 0)
			continue;
		for (int b = 0; b < k->nargs; b++)
			if (k->args[b] == v && (a < nu || b < nk))
				return 1;
	}
	return 0;
}

/* Each optimizer update moves up to just after the last op it depends on, so its gradient
 * dies as soon as it can: no live set grows (an update allocates nothing), the results are
 * the same (every dependence on the decls it updates is kept), and what the planner has to
 * fit is the forward's and backward's values, not all the gradients at once. */
static void
hoist_updates(Func *f)
{
	for (int i = 0; i < f->nop; i++) {
		Op u = f->op[i];
		int to = i;
		if (!(opinfo[u.kind].flags & F_MUT))
			continue;
		while (to > 0 && !conflicts(f, &f->op[to - 1], &u))
			to--;
		if (to == i)
			continue;
		memmove(&f->op[to + 1], &f->op[to], (i - to) * sizeof *f->op);
		f->op[to] = u;
	}
	func_relink(f);
}

static int
better(const Plan *a, const Plan *b)
{
	if (!b)
		return 1;
	if (a->feasible != b->feasible)
		return a->feasible;
	return a->feasible ? a->time < b->time : a->peak < b->peak;
}

/* One solver run at budget B; NULL if the solver found nothing. */
static Plan *
solve(const Prob *p, const char *solver, int64_t B, double tlim)
{
	Plan *a = plan_new(p), *b = NULL;

	if (strcmp(solver, "chen") == 0) {
		if (solve_chen(p, B, a) == 0)
			return a;
	} else if (strcmp(solver, "tso") == 0) {
		if (solve_tso(p, B, a) == 0)
			return a;
	} else if (strcmp(solver, "ilp") == 0) {
		Plan *w = plan_new(p);
		int ok = solve_tso(p, B, w) == 0;
		int r = solve_ilp(p, B, tlim, ok ? w : NULL, a);
		plan_free(w);
		if (r == 0)
			return a;
	} else if (strcmp(solver, "auto") == 0) {
		int ok = solve_tso(p, B, a) == 0;
		if (p->n <= ILP_MAXN) {
			b = plan_new(p);
			if (solve_ilp(p, B, tlim, ok ? a : NULL, b) == 0 &&
			    (!ok || (b->feasible && (b->gap <= 1e-9 || better(b, a))))) {
				b->stime += a->stime;
				plan_free(a);
				return b;
			}
			a->stime += b->stime;       /* the time auto spent, the ILP's included */
			plan_free(b);
		}
		if (ok)
			return a;
	} else
		die("unknown solver %s", solver);
	plan_free(a);
	return NULL;
}

static void
count(const Prob *p, const Plan *pl, PlanReport *r)
{
	r->nrec = 0;
	for (size_t k = 0; k < (size_t)p->n * p->n; k++)
		r->nrec += pl->rec[k];
	r->nswap = pl->nsw;
}

int
plan_step(Module *m, const PlanOpts *o, PlanReport *r)
{
	Func *f = m->step;
	Prob *p;
	Plan *pl = NULL, *best = NULL;
	int64_t budget, target, arena0, persist, minarena = INT64_MAX;
	double tlim = o->tlim > 0 ? o->tlim : 60, stime = 0;

	memset(r, 0, sizeof *r);
	snprintf(r->solver, sizeof r->solver, "none");
	r->gap = -1;
	if (!f) {
		/* A model without training: nothing to recompute or swap around a backward. */
		int64_t a = plan_arena(m->fwd, o->tg, &persist);
		budget = o->budget ? o->budget : (int64_t)((double)a * o->budget_pct / 100);
		r->budget = budget;
		r->arena = a;
		if (a > budget) {
			fprintf(stderr, "mtc: error: the forward needs %lld bytes, over the budget of %lld "
			        "bytes; the planner plans training steps only\n", (long long)a, (long long)budget);
			return -1;
		}
		return 0;
	}
	arena0 = plan_arena(f, o->tg, &persist);
	if (o->budget || o->budget_pct > 0)
		hoist_updates(f);
	p = prob_new(f, o->tg);
	/* A percentage is of the whole unconstrained arena, module tensors included. */
	budget = o->budget ? o->budget : o->budget_pct > 0 ?
	         (int64_t)((double)arena0 * o->budget_pct / 100) : 0;
	r->budget = budget;
	r->base_peak = p->peak;
	r->peak = p->peak;
	r->arena = arena0;
	r->base_time = r->time = p->time;
	if (!budget || arena0 <= budget) {
		prob_free(p);
		return 0;
	}
	if (strcmp(o->solver, "none") == 0) {
		fprintf(stderr, "mtc: error: the step needs %lld bytes, over the budget of %lld bytes, "
		        "and --solver=none plans nothing\n", (long long)arena0, (long long)budget);
		prob_free(p);
		return -1;
	}
	/* Solve; tighten by what the layout added; solve again. */
	target = budget;
	for (int it = 0; it < 8 && target > 0; it++) {
		Func *g;
		int64_t a;
		/* The ILP's time limit holds for all the rounds together. */
		if (!(pl = solve(p, o->solver, target, tlim - stime > 0.1 ? tlim - stime : 0.1)))
			break;
		stime += pl->stime;
		g = remat(p, pl);
		a = plan_arena(g, p->tg, NULL);
		func_free(g);
		if (a < minarena)
			minarena = a;
		if (a <= budget) {
			best = pl;
			r->arena = a;
			break;
		}
		target -= (a - budget) > budget / 64 ? a - budget : budget / 64;
		plan_free(pl);
		pl = NULL;
	}
	if (!best && strcmp(o->solver, "tso") && strcmp(o->solver, "auto")) {
		/* The solver asked for found nothing: tso's plan, if it fits, with a note. */
		Plan *t = plan_new(p);
		int64_t tb = budget;
		for (int it = 0; it < 8 && !best && tb > 0; it++) {
			Func *g;
			int64_t a;
			if (solve_tso(p, tb, t))
				break;
			g = remat(p, t);
			a = plan_arena(g, p->tg, NULL);
			func_free(g);
			if (a < minarena)
				minarena = a;
			if (a <= budget) {
				fprintf(stderr, "mtc: note: %s found no plan within the budget; taking tso's\n",
				        o->solver);
				best = t;
				t = NULL;
				r->arena = a;
			}
			tb -= (a - budget) > budget / 64 ? a - budget : budget / 64;
		}
		plan_free(t);
	}
	if (!best) {
		/* The smallest arena any plan reached: chen's smallest over its group sizes. If
		 * that one fits after all, it is the plan. */
		Plan *c = plan_new(p);
		solve_chen(p, 1, c);
		if (c->peak < minarena) {
			Func *g = remat(p, c);
			int64_t a = plan_arena(g, p->tg, NULL);
			func_free(g);
			if (a < minarena)
				minarena = a;
			if (a <= budget) {
				fprintf(stderr, "mtc: note: %s found no plan within the budget; taking chen's\n",
				        o->solver);
				best = c;
				c = NULL;
				r->arena = a;
			}
		}
		plan_free(c);
	}
	if (!best) {
		fprintf(stderr, "mtc: error: the budget of %lld bytes cannot be met: the smallest arena "
		        "the solvers reached is %lld bytes (unconstrained %lld, of which %lld params, "
		        "inputs and optimizer state; --mem-budget=%.0f%% or more)\n",
		        (long long)budget, (long long)minarena, (long long)arena0, (long long)persist,
		        ceil(100.0 * (double)minarena / (double)arena0));
		prob_free(p);
		return -1;
	}
	snprintf(r->solver, sizeof r->solver, "%s", best->solver);
	r->peak = best->peak;
	r->time = best->time;
	r->stime = stime;
	r->gap = best->gap;
	count(p, best, r);
	m->step = remat(p, best);
	plan_free(best);
	prob_free(p);
	func_free(f);
	return 0;
}

void
plan_report_print(FILE *fp, const PlanReport *r)
{
	fprintf(fp, "solver %s\n", r->solver);
	fprintf(fp, "budget_bytes %lld\n", (long long)r->budget);
	fprintf(fp, "unplanned_peak_bytes %lld\n", (long long)r->base_peak);
	fprintf(fp, "planned_peak_bytes %lld\n", (long long)r->peak);
	fprintf(fp, "arena_bytes %lld\n", (long long)r->arena);
	fprintf(fp, "recomputed_ops %d\nswapped_values %d\n", r->nrec, r->nswap);
	fprintf(fp, "modeled_step_s %.9g\nunplanned_step_s %.9g\n", r->time, r->base_time);
	fprintf(fp, "overhead %.2f%%\n", r->base_time > 0 ? 100 * (r->time / r->base_time - 1) : 0);
	fprintf(fp, "solve_s %.3f\n", r->stime);
	if (r->gap >= 0)
		fprintf(fp, "ilp_gap %.4f%%\n", 100 * r->gap);
	else
		fprintf(fp, "ilp_gap -\n");
}
