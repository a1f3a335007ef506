/* ilp-test.c: the integer program against an exhaustive search of the same model on small
 * random DAGs (<= 12 ops), its plans measured on the IR and checked op by op, and against
 * tso on chains. Deterministic: every limit is in nodes, none on the clock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"
#include "../check.h"

/* Chains at every budget from the unplanned peak down to below the floor (the smallest
 * budget, a multiple of the alignment, at which chain_opt fits): the ILP started from tso's
 * plan, deterministic (nodes only, no clock), against the exhaustive search. It is never
 * slower than its start, what it claims it measures, and where it reports gap 0 its time is
 * the exhaustive optimum; it must prove each (nodes enough for these sizes). */
static void
chain_budgets(const char *name, Module *m, const Target *tg)
{
	Prob *p = prob_new(m->step, tg);
	int64_t lo = 0, hi = 0, B;
	int proven = 0, nb = 0;

	for (int t = 0; t < p->n; t++)
		if (p->aprof[t] > hi)
			hi = p->aprof[t];
	B = hi;
	while (hi - lo > tg->align) {
		int64_t mid = (lo + hi) / 2 / tg->align * tg->align;
		if (chain_opt(p, mid, NULL) >= 0)
			hi = mid;
		else
			lo = mid;
	}
	p->nodes = 20000;
	for (int k = 0; k <= 10; k++, nb++) {
		int64_t b = k < 9 ? (B - (B - hi) * k / 8) / tg->align * tg->align : k == 9 ? hi : hi - tg->align;
		Plan *a = plan_new(p), *c = plan_new(p);
		double ex = stage_search(p, b);
		int ra = solve_tso(p, b, a), fa = ra == 0 && a->feasible;
		int rc = solve_ilp(p, b, 0, fa ? a : NULL, c), fc = rc == 0 && c->feasible;
		if (fa)
			check(fc && c->time <= a->time * (1 + 1e-12), "%s at %lld: ilp %.9g no slower than its start %.9g",
			      name, (long long)b, fc ? c->time : -1.0, a->time);
		if (fc) {
			check(ex >= 0 && c->peak <= b, "%s at %lld: ilp's plan fits (peak %lld; exhaustive %.9g)", name,
			      (long long)b, (long long)c->peak, ex);
			check(c->obj < 0 || fabs(c->time - c->obj) <= 1e-9 * c->time,
			      "%s at %lld: measured %.9g = objective %.9g", name, (long long)b, c->time, c->obj);
			check(c->gap == 0 && fabs(c->time - p->time - ex) <= 1e-9 * p->time,
			      "%s at %lld: ilp proves %.9g (gap %.3g), exhaustive %.9g", name, (long long)b,
			      c->time - p->time, c->gap, ex);
			proven += c->gap == 0;
		} else
			check(ex < 0, "%s at %lld: ilp finds nothing, exhaustive %.9g", name, (long long)b, ex);
		plan_free(a);
		plan_free(c);
	}
	printf("%-18s %d budgets down to below the floor %lld: ilp proven at %d\n", name, nb, (long long)hi,
	       proven);
	prob_free(p);
	mod_free(m);
}

/* Do a and b hold the same function (ops, values, outputs, loss)? 0, or -1 with why. */
static int
same_func(const Func *a, const Func *b, char *why, size_t n)
{
	if (a->nop != b->nop || a->nval != b->nval || a->nout != b->nout || a->loss != b->loss) {
		snprintf(why, n, "%d ops, %d values, %d outputs, loss %d against %d, %d, %d, %d", a->nop, a->nval,
		         a->nout, a->loss, b->nop, b->nval, b->nout, b->loss);
		return -1;
	}
	for (int i = 0; i < a->nop; i++) {
		const Op *x = &a->op[i], *y = &b->op[i];
		int d = x->kind != y->kind || x->phase != y->phase || x->res != y->res || x->nargs != y->nargs ||
		        x->nia != y->nia || x->of != y->of || memcmp(x->ia, y->ia, sizeof x->ia) ||
		        memcmp(x->fa, y->fa, sizeof x->fa);
		for (int k = 0; k < x->nargs && !d; k++)
			d = x->args[k] != y->args[k];
		if (d) {
			snprintf(why, n, "op %d differs", i);
			return -1;
		}
	}
	for (int v = 0; v < a->nval; v++) {
		const Value *x = &a->val[v], *y = &b->val[v];
		if (strcmp(x->name, y->name) || x->ty.dt != y->ty.dt || !shape_eq(&x->ty.sh, &y->ty.sh) ||
		    x->def != y->def || x->decl != y->decl || x->host != y->host ||
		    func_find(b, x->name) != v) {
			snprintf(why, n, "value %d (%%%s) differs", v, x->name);
			return -1;
		}
	}
	for (int k = 0; k < a->nout; k++)
		if (a->out[k] != b->out[k] || strcmp(a->outname[k], b->outname[k])) {
			snprintf(why, n, "output %d differs", k);
			return -1;
		}
	return 0;
}

/* The program's clock (its objective on steps of the examples) is the cost model's step for
 * every plan in the program: random modes on each example, expanded as the planner expands
 * them (recomputations on demand, swaps as plan_expand places them, every other one moved
 * between memory and time), measured (plan_eval, cost_fill on the planned IR) and clocked
 * (ilp_clock), under mt3000 (one copy engine for both ways) and cuda (one each way), each
 * step as it is and placed (its params and state at random levels, updates on the host among
 * them: home.c's step, where a recomputation reading a fetched param fetches it again). Plans
 * the program cannot hold are counted apart. */
static void
clock_step(const char *name, const char *tgname, const Func *f, const Target *tg, int placed, uint64_t *s)
{
	Prob *p = prob_new(f, tg);
	Func *again = NULL;
	uint8_t *mode = xcalloc(p->n + 1, 1);
	int held = 0, out = 0, swaps = 0, moved = 0, early = 0, recs = 0, refetches = 0, refetch;

	for (int k = 0; k < 40; k++) {
		Plan *pl = plan_new(p);
		double c;
		for (int i = 0; i < p->n; i++) {
			uint64_t r = synth_rnd(s);
			mode[i] = r % 3 == 0 ? REC : r % 3 == 1 && p->cand[i] ? SWAP : KEEP;
		}
		plan_expand(p, mode, pl);
		/* every other swap placed between memory and time as relax.c places them (the
		 * program takes the start's placements); a recomputation that reads the value
		 * before its first late use brings it back there */
		for (int a = 0; a < pl->nsw; a++) {
			Swap *w = &pl->sw[a];
			uint64_t r = synth_rnd(s);
			if (r % 2)
				plan_place_swap_at(p, w->op, w->inwait, (double)(r / 2 % 5) / 4,
				                   (double)(r / 16 % 5) / 4, w);
		}
		plan_eval(p, pl, 0);
		/* remat_again (relax.c's measurements): the plan built into the function of the
		 * one before is the plan built new */
		{
			Func *fresh = remat(p, pl);
			char why[128];
			again = again ? remat_again(p, pl, again) : remat(p, pl);
			check(same_func(fresh, again, why, sizeof why) == 0, "%s under %s, plan %d: rebuilt "
			      "into the last plan's function: %s", name, tgname, k, why);
			func_free(fresh);
		}
		if (ilp_clock(p, pl, &c)) {
			out++;
			plan_free(pl);
			continue;
		}
		held++;
		swaps += pl->nsw;
		for (int a = 0; a < pl->nsw; a++) {
			Swap w;
			plan_place_swap(p, pl->sw[a].op, p->split[pl->sw[a].op], &w);
			moved += memcmp(&w, &pl->sw[a], sizeof w) != 0;
			early += pl->sw[a].inwait < p->split[pl->sw[a].op];
		}
		refetch = 0;
		for (int t = 0; t < p->n; t++)
			for (int i = 0; i < t; i++)
				if (pl->rec[(size_t)t * p->n + i]) {
					recs++;
					refetch |= (opinfo[f->op[i].kind].flags & F_COPY) != 0;
				}
		refetches += refetch;
		check(fabs(c - pl->time) <= 1e-9 * pl->time, "%s under %s, plan %d (%d swaps%s): clock %.12g s, "
		      "measured %.12g s", name, tgname, k, pl->nsw, refetch ? ", a param fetched again" : "", c,
		      pl->time);
		plan_free(pl);
	}
	check(held >= 20 && moved > 0 && recs > 0 && (!placed || refetches > 0), "%s under %s: %d of 40 "
	      "plans in the program (%d fetching a param again), %d swaps (%d placed elsewhere), %d "
	      "recomputations", name, tgname, held, refetches, swaps, moved, recs);
	printf("clock: %-17s %-6s %2d plans in the program (%d fetching a param again; %d swaps, %d placed "
	       "elsewhere, %d brought back early; %d recomputations) clocked as measured, %d outside\n",
	       name, tgname, held, refetches, swaps, moved, early, recs, out);
	func_free(again);       /* its struct is the module arena's */
	free(mode);
	prob_free(p);
}

static void
clock_plans(const char *top)
{
	static const struct {
		const char *file, *defs[4];
		int nd;
	} ex[] = {
		{ "mlp", { "L=4", "B=32" }, 2 },
		{ "skipnet", { "B=16" }, 1 },
		{ "classifier", { "B=8" }, 1 },
		{ "widemlp", { "B=16", "D=256" }, 2 },
	};
	static const char *const tgs[] = { "mt3000", "cuda" };
	uint64_t s = 88172645463325252ull;

	for (size_t e = 0; e < sizeof ex / sizeof *ex; e++)
		for (int g = 0; g < 2; g++) {
			char path[4096], name[64];
			Target tg;
			Module *m;
			Func *f, *h;
			uint8_t *lv;
			int nhost = 0;
			if (target_get(&tg, tgs[g]))
				die("no %s target", tgs[g]);
			snprintf(path, sizeof path, "%s/examples/%s.tdsl", top, ex[e].file);
			if (!(m = synth_example(path, ex[e].defs, ex[e].nd, &tg)))
				die("%s does not compile", path);
			f = m->step;
			clock_step(ex[e].file, tgs[g], f, &tg, 0, &s);
			/* placed: each update's group at a random level it allows, every other one on
			 * the host (the host's thread in the clock) */
			lv = xcalloc(f->nop + 1, 1);
			for (int u = 0, k = 0; u < f->nop; u++) {
				int al = home_allowed(f, &tg, u), l;
				uint64_t r;
				if (al == 1 << HOME_DEV)
					continue;
				r = synth_rnd(&s);
				l = k++ % 2 && (al >> HOME_HOSTUPD & 1) ? HOME_HOSTUPD : (int)(r % NHOME);
				lv[u] = al >> l & 1 ? l : HOME_DEV;
				nhost += lv[u] == HOME_HOSTUPD;
			}
			check(nhost > 0, "%s under %s: placed with updates on the host", ex[e].file, tgs[g]);
			home_mark(m, f, lv, 1);
			h = home_step(f, &tg, lv, NULL);
			snprintf(name, sizeof name, "%s placed", ex[e].file);
			clock_step(name, tgs[g], h, &tg, 1, &s);
			home_mark(m, f, lv, 0);
			func_free(h);
			free(lv);
			mod_free(m);
		}
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
			double ex = stage_search(p, B);
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
		p->nodes = PLAN_NODES;            /* the compiler's default: deterministic, no clock */
		for (size_t b = 0; b < sizeof cf / sizeof *cf; b++) {
			int64_t B = (int64_t)(cf[b] * (double)p->peak);
			Plan *a = plan_new(p), *c = plan_new(p);
			int ra = solve_tso(p, B, a), rc = solve_ilp(p, B, 0, ra == 0 && a->feasible ? a : NULL, c);
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
	for (int n = 4; n <= 7; n++) {
		static const int w1[] = { 16, 32, 8 }, w2[] = { 24, 8, 40 };
		static const char *const acts[] = { "tanh", "sigmoid", "relu" };
		char name[32];
		snprintf(name, sizeof name, "chain %d", n);
		chain_budgets(name, synth_chain(n, 32 + 16 * (n % 3), n), &tg);
		if (n == 4)
			chain_budgets("mlp 16-32-8", synth_mlp(w1, 2, 64, NULL, &tg), &tg);
		if (n == 5)
			chain_budgets("mlp 24-8-40 tanh", synth_mlp(w2, 2, 64, acts, &tg), &tg);
	}
	clock_plans(getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	return done();
}
