/* plan-bench.c: the planner's benchmark (make bench): model x budget x solver -> feasible,
 * arena bytes, modeled overhead, solve seconds, ILP gap; then ILP runs with a long limit
 * (does it prove optimality on the ~150-op steps?) and tso's time on a 2000-op step.
 * Models are the examples as they are. The sweep's ILP limit is short so that the whole fits
 * `make bench`'s 20 minutes; the proof runs have theirs. Last, the chain table: the deep MLP
 * of examples/mlp.tdsl at L = 8, 16, 32, 64 with copies priced out (no plan swaps), at every
 * budget from its unplanned arena down to the true floor in steps of one activation (four at
 * L = 64, where each exact search takes 10-70 s), the exact
 * optimum by tests/planner/chainopt.c (a search written apart from the planner) against tso
 * and the ILP (started from tso's plan), with their solve times and the ILP's proven gap.
 * Environment: top_srcdir, BENCH_ILP_TIME (seconds per ILP run in the sweep and the chain
 * table, default 5), BENCH_PROOF_TIME (limit of the proof runs, default 60), BENCH_CHAINS
 * (the chain table's L, default "8 16 32 64"; empty: none), BENCH_CHAIN_ONLY (that table
 * alone). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "synth.h"

static Target tg;

static Module *
load(const char *top, const char *file, const char *const *defs, int ndefs)
{
	char path[4096];
	Module *m;

	snprintf(path, sizeof path, "%s/examples/%s", top, file);
	if (!(m = synth_example(path, defs, ndefs, &tg)))
		die("%s does not compile", path);
	return m;
}

/* plan_step without its diagnostics (an infeasible budget is a row of the table). */
static int
plan_opts(Module *m, const PlanOpts *o, PlanReport *r)
{
	FILE *err = stderr;
	int rc;

	stderr = fopen("/dev/null", "w");
	rc = plan_step(m, o, r);
	fclose(stderr);
	stderr = err;
	return rc;
}

static int
plan(Module *m, const char *solver, int pct, double tlim, PlanReport *r)
{
	PlanOpts o = { .solver = solver, .budget_pct = pct, .tlim = tlim, .tg = &tg };
	return plan_opts(m, &o, r);
}

/* The deep MLP at L layers, with copies priced out (t), up to the planner; the same with its
 * updates hoisted, as the planner's Prob sees it (what chain_opt takes). */
static Module *
deep_mlp(const char *top, int L, const Target *t)
{
	char path[4096], def[16];
	const char *defs[1] = { def };
	Module *m;

	snprintf(path, sizeof path, "%s/examples/mlp.tdsl", top);
	snprintf(def, sizeof def, "L=%d", L);
	if (!(m = synth_example(path, defs, 1, t)))
		die("%s with L=%d does not compile", path, L);
	return m;
}

/* The chain table at L layers: the true floor (the smallest budget, a multiple of the
 * alignment, at which chain_opt finds a plan), then every budget from the unplanned arena
 * down to it in steps of one activation (four from L = 64 on; the floor itself last): the
 * optimum, tso and the ILP, each with its solve seconds. */
static void
chain_table(const char *top, int L, double tlim)
{
	Target t = tg;
	Module *h;
	Prob *p;
	int64_t top_b, act = 0, fl;
	double t0;

	t.copybw = 1e3;
	t.copylat = 1;
	h = deep_mlp(top, L, &t);
	plan_hoist_updates(h->step);
	p = prob_new(h->step, &t);
	top_b = plan_arena(h->step, &t, NULL, 0);
	for (int i = 0; i < p->n; i++)           /* one activation: the chain's largest value */
		if (p->fwd[i] && p->b[i] > act)
			act = p->b[i];
	fl = chain_floor(p, top_b, t.align);
	printf("\nmlp L=%d (%d ops; activation %lld bytes): unplanned arena %lld, true floor %lld "
	       "(%.1f%%)\n\n", L, h->step->nop, (long long)act, (long long)top_b, (long long)fl,
	       100.0 * fl / top_b);
	printf("| L | budget | %% of arena | exact optimum | s | tso | s | ilp | s | ILP gap |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int64_t B = top_b; ; B -= (L >= 64 ? 4 : 1) * act) {
		int64_t b = B > fl ? B / t.align * t.align : fl;
		const char *sv[2] = { "tso", "ilp" };
		char col[2][64], gap[32] = "-";
		double opt, st[2] = { 0, 0 };

		t0 = plan_clock();
		opt = chain_opt(p, b, NULL);
		t0 = plan_clock() - t0;
		for (int k = 0; k < 2; k++) {
			Module *m = deep_mlp(top, L, &t);
			PlanOpts o = { .solver = sv[k], .budget = b, .tlim = k ? tlim : 0, .tg = &t };
			PlanReport r;
			double s0 = plan_clock();
			if (plan_opts(m, &o, &r))
				snprintf(col[k], sizeof col[k], "does not fit");
			else if (r.nswap)
				snprintf(col[k], sizeof col[k], "%.2f%% (%d swaps)", 100 * (r.time / r.base_time - 1),
				         r.nswap);
			else
				snprintf(col[k], sizeof col[k], "%.2f%%", 100 * (r.time / r.base_time - 1));
			st[k] = plan_clock() - s0;
			if (k == 1 && r.gap >= 0)
				snprintf(gap, sizeof gap, "%.1f%%%s", 100 * r.gap, r.gap == 0 ? " (proved)" : "");
			mod_free(m);
		}
		if (opt >= 0)
			printf("| %d | %lld | %.1f%% | %.2f%% | %.3f | %s | %.3f | %s | %.3f | %s |\n", L,
			       (long long)b, 100.0 * b / top_b, 100 * opt / p->time, t0, col[0], st[0], col[1],
			       st[1], gap);
		else
			printf("| %d | %lld | %.1f%% | none fits | %.3f | %s | %.3f | %s | %.3f | %s |\n", L,
			       (long long)b, 100.0 * b / top_b, t0, col[0], st[0], col[1], st[1], gap);
		fflush(stdout);
		if (b == fl)
			break;
	}
	prob_free(p);
	mod_free(h);
}

int
main(int argc, char **argv)
{
	static const struct { const char *name, *file; const char *defs[4]; int ndefs; } ex[] = {
		{ "mlp", "mlp.tdsl", { NULL }, 0 },
		{ "skipnet", "skipnet.tdsl", { NULL }, 0 },
		{ "transformer", "transformer.tdsl", { NULL }, 0 },
	};
	static const char *const solvers[] = { "chen", "tso", "ilp", "auto" };
	static const int pcts[] = { 100, 75, 50, 35, 25 };
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	double tlim = getenv("BENCH_ILP_TIME") ? atof(getenv("BENCH_ILP_TIME")) : 5;
	double plim = getenv("BENCH_PROOF_TIME") ? atof(getenv("BENCH_PROOF_TIME")) : 60;
	const char *chains = getenv("BENCH_CHAINS") ? getenv("BENCH_CHAINS") : "8 16 32 64";

	(void)argc;
	(void)argv;
	target_get(&tg, "mt3000");
	if (getenv("BENCH_CHAIN_ONLY"))
		goto chain;
	printf("| model | ops | budget | solver | feasible | arena bytes | overhead | solve s | ILP gap |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (size_t e = 0; e < sizeof ex / sizeof *ex && !getenv("BENCH_BIG_ONLY"); e++)
		for (size_t b = 0; b < sizeof pcts / sizeof *pcts; b++)
			for (size_t s = 0; s < sizeof solvers / sizeof *solvers; s++) {
				Module *m = load(top, ex[e].file, ex[e].defs, ex[e].ndefs);
				PlanReport r;
				int nop = m->step->nop;
				double t0 = plan_clock();

				if (plan(m, solvers[s], pcts[b], tlim, &r))
					printf("| %s | %d | %d%% | %s | no | - | - | %.3f | - |\n", ex[e].name, nop,
					       pcts[b], solvers[s], plan_clock() - t0);
				else {
					char gap[32] = "-";
					if (r.gap >= 0)
						snprintf(gap, sizeof gap, "%.1f%%", 100 * r.gap);
					printf("| %s | %d | %d%% | %s%s%s | yes | %lld | %.2f%% | %.3f | %s |\n", ex[e].name,
					       nop, pcts[b], solvers[s], strcmp(solvers[s], "auto") ? "" : " -> ",
					       strcmp(solvers[s], "auto") ? "" : r.solver, (long long)r.arena,
					       100 * (r.time / r.base_time - 1), r.stime, gap);
				}
				fflush(stdout);
				mod_free(m);
			}
	/* The ILP's proof of optimality on the ~150-op steps, with a long limit: the MLP (its
	 * optimum is free), skipnet at 50% and 35% (its optimum costs copies). */
	for (int run = 0; run < 3; run++) {
		int e = run > 0, pct = run == 2 ? 35 : 50;
		Module *m = load(top, ex[e].file, NULL, 0);
		PlanReport r;
		int nop = m->step->nop;

		if (plan(m, "ilp", pct, plim, &r))
			printf("\nilp on %s (%d ops) at %d%%, limit %.0f s: no plan\n", ex[e].name, nop,
			       pct, plim);
		else
			printf("\nilp on %s (%d ops) at %d%%, limit %.0f s: %s, %.2f%% overhead, "
			       "%.3f s, gap %.1f%% (%s)\n", ex[e].name, nop, pct, plim, r.solver,
			       100 * (r.time / r.base_time - 1), r.stime, 100 * r.gap,
			       r.gap == 0 ? "optimal, proved" : r.gap < 0 ? "no bound" : "not proved");
		mod_free(m);
	}
	/* tso on a large step: the 2000-op goal. */
	{
		static const char *const defs[] = { "L=220" };
		Module *m = load(top, "mlp.tdsl", defs, 1);
		Prob *p = prob_new(m->step, &tg);
		Plan *pl = plan_new(p);
		int64_t persist, arena = plan_arena(m->step, &tg, &persist, 0);
		double t0 = plan_clock();
		clock_t c0 = clock();
		int rc = solve_tso(p, arena / 2, pl), nf = 0;
		for (int i = 0; i < p->n; i++)
			nf += p->fwd[i];
		(void)persist;
		printf("\ntso on mlp L=220 (%d ops, %d recomputable) at 50%%: %.3f s wall, %.3f s CPU (%s)\n",
		       p->n, nf, plan_clock() - t0, (double)(clock() - c0) / CLOCKS_PER_SEC,
		       rc == 0 && pl->feasible ? "fits" : "does not fit");
		plan_free(pl);
		prob_free(p);
		mod_free(m);
	}
chain:
	/* The chain table (issue 17's, from our own exact solver). */
	for (const char *c = chains; *c; ) {
		char *end;
		long L = strtol(c, &end, 10);
		if (end == c)
			break;
		chain_table(top, (int)L, tlim);
		c = end;
	}
	return 0;
}
