/* plan-test.c: every solver on every model at 75, 50 and 35% of the unconstrained arena:
 * the plan verifies, its arena fits, and it computes the same step (semantic equivalence:
 * every op, recomputation and copy computes the same expression of the decls). */
#include <stdlib.h>
#include <string.h>

#include "synth.h"

static int npass, nfail;

static void
check(int ok, const char *what, const char *model, const char *solver, int pct, const char *why)
{
	if (ok) {
		npass++;
		return;
	}
	nfail++;
	printf("FAIL %s: %s %s %d%%%s%s\n", what, model, solver, pct, why ? ": " : "", why ? why : "");
}

typedef Module *Mk(void);
static Module *mk_mlp(void) { return synth_mlp(8, 256, 128); }
static Module *mk_skip(void) { return synth_skip(6, 256, 64); }
static Module *mk_attn(void) { return synth_attn(2, 8, 32, 32); }

static Target tg;

int
main(void)
{
	static const struct { const char *name; Mk *mk; } models[] = {
		{ "mlp", mk_mlp }, { "skipnet", mk_skip }, { "attn", mk_attn },
	};
	static const char *const solvers[] = { "chen", "tso", "ilp", "auto" };
	static const int pcts[] = { 75, 50, 35 };

	if (target_get(&tg, "mt3000"))
		die("no mt3000 target");

	for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++)
		for (size_t si = 0; si < sizeof solvers / sizeof *solvers; si++)
			for (size_t bi = 0; bi < sizeof pcts / sizeof *pcts; bi++) {
				Module *m = models[mi].mk(), *ref = models[mi].mk();
				PlanOpts o = { solvers[si], 0, pcts[bi], 5, &tg };
				PlanReport r;
				char err[512];
				int rc = plan_step(m, &o, &r);
				const char *mn = models[mi].name, *sn = solvers[si];

				/* Recompute and swap reach 75% on every model; below, what the solvers
				 * reach depends on the model (params and the widest op set a floor). */
				if (rc && pcts[bi] < 75)
					printf("%-8s %-5s %3d%%  infeasible\n", mn, sn, pcts[bi]);
				else
					check(rc == 0, "plan", mn, sn, pcts[bi], NULL);
				if (rc == 0) {
					check(ir_verify(m, "plan") == 0, "verify", mn, sn, pcts[bi], NULL);
					check(r.arena <= r.budget, "fits", mn, sn, pcts[bi], NULL);
					check(plan_arena(m->step, &tg) == r.arena, "arena", mn, sn, pcts[bi], NULL);
					err[0] = 0;
					check(synth_equiv(ref->step, m->step, err, sizeof err) == 0, "equiv", mn,
					      sn, pcts[bi], err);
					printf("%-8s %-5s %3d%%  %-5s peak %9lld / %9lld  overhead %6.2f%%  rec %3d swap %2d  %.3fs\n",
					       mn, sn, pcts[bi], r.solver, (long long)r.peak, (long long)r.base_peak,
					       100 * (r.time / r.base_time - 1), r.nrec, r.nswap, r.stime);
				}
				mod_free(m);
				mod_free(ref);
			}
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}
