/* plan-bench.c: the planner's benchmark (make bench): model x budget x solver -> feasible,
 * arena bytes, modeled overhead, solve seconds, ILP gap; then ILP runs with a long limit
 * (does it prove optimality on the ~150-op steps?) and tso's time on a 2000-op step.
 * Models are the examples as they are. The sweep's ILP limit is short so that the whole fits
 * `make bench`'s 20 minutes; the proof runs have theirs.
 * Environment: top_srcdir, BENCH_ILP_TIME (seconds per ILP run in the sweep, default 5),
 * BENCH_PROOF_TIME (limit of the proof runs, default 60). */
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
plan(Module *m, const char *solver, int pct, double tlim, PlanReport *r)
{
	PlanOpts o = { solver, 0, pct, tlim, &tg };
	FILE *err = stderr;
	int rc;

	stderr = fopen("/dev/null", "w");
	rc = plan_step(m, &o, r);
	fclose(stderr);
	stderr = err;
	return rc;
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

	(void)argc;
	(void)argv;
	target_get(&tg, "mt3000");
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
		int64_t persist, arena = plan_arena(m->step, &tg, &persist);
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
	return 0;
}
