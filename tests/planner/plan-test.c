/* plan-test.c: every solver on every example at 75, 50 and 35% of the unconstrained arena: the
 * planned step verifies, prints and parses back to the same text, its arena fits the budget,
 * and three steps in the interpreter give bit-identical losses and params to the unplanned
 * step. The examples run smaller (-D) to keep the interpreter quick, still activation-heavy
 * as the examples are (deep, large batch), so every budget must fit for tso, ilp and auto;
 * chen, the baseline, may not fit, and must then say so. Below the budgets placed for time,
 * the swaps placed for memory are loosened where the budget leaves room: never slower. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../build.h"
#include "../check.h"
#include "synth.h"

static Target tg;

/* One check of a plan: a failure names the model, the solver, the budget and why if known. */
static void
pcheck(int ok, const char *what, const char *model, const char *solver, int pct, const char *why)
{
	check(ok, "%s: %s %s %d%%%s%s", what, model, solver, pct, why ? ": " : "", why ? why : "");
}

/* What three steps of the unplanned step give (the losses, then every decl), run once per
 * model: the plans of every solver and budget are checked against it. */
typedef struct Ref {
	float loss[3];
	int ndecl;
	void **decl;
	char err[256];         /* empty where the run went through */
} Ref;

static void
ref_run(const Module *a, Ref *r)
{
	Interp *ia = interp_new(a, 7);

	memset(r, 0, sizeof *r);
	for (int k = 0; k < 3 && !*r->err; k++)
		if (interp_run(ia, a->step, r->err, sizeof r->err) == 0)
			memcpy(&r->loss[k], interp_out(ia, 0)->data, 4);
		else if (!*r->err)
			snprintf(r->err, sizeof r->err, "failed");
	r->ndecl = a->ndecl;
	r->decl = xcalloc(a->ndecl + 1, sizeof *r->decl);
	for (int d = 0; d < a->ndecl && !*r->err; d++) {
		r->decl[d] = xmalloc(type_bytes(&a->decl[d].ty) + 1);
		memcpy(r->decl[d], interp_decl(ia, d)->data, type_bytes(&a->decl[d].ty));
	}
	interp_free(ia);
}

static void
ref_free(Ref *r)
{
	for (int d = 0; d < r->ndecl; d++)
		free(r->decl[d]);
	free(r->decl);
}

/* Three steps of b against the reference's: the losses and every decl afterwards, bit for bit. */
static int
same_as(const Ref *r, const Module *b, char *why, size_t nw)
{
	Interp *ib = interp_new(b, 7);
	char err[256];
	int ok = 1;

	if (*r->err) {
		snprintf(why, nw, "interp: %s", r->err);
		ok = 0;
	}
	for (int k = 0; k < 3 && ok; k++) {
		if (interp_run(ib, b->step, err, sizeof err)) {
			snprintf(why, nw, "interp: %s", err);
			ok = 0;
			break;
		}
		if (memcmp(&r->loss[k], interp_out(ib, 0)->data, 4)) {
			snprintf(why, nw, "loss of step %d differs", k + 1);
			ok = 0;
		}
	}
	for (int d = 0; d < r->ndecl && ok; d++)
		if (memcmp(r->decl[d], interp_decl(ib, d)->data, type_bytes(&b->decl[d].ty))) {
			snprintf(why, nw, "%s differs after 3 steps", b->decl[d].name);
			ok = 0;
		}
	interp_free(ib);
	return ok;
}

/* Three steps of both, bit for bit. */
static int
same_run(const Module *a, const Module *b, char *why, size_t nw)
{
	Ref r;
	int ok;

	ref_run(a, &r);
	ok = same_as(&r, b, why, nw);
	ref_free(&r);
	return ok;
}

/* The ILP starts from tso's plan: whatever GLPK does in its time (refuse the start, stop at a
 * worse incumbent), the plan it hands back is never slower than that start. On the deep MLP
 * under the CPU cost model the bench uses (copies priced out) it once handed back chen's. */
static void
ilp_vs_start(const char *top)
{
	static const char *const Ls[] = { "L=8", "L=20" };
	static const int pcts[] = { 75, 60 };
	Target cpu = tg;
	char path[4096];

	cpu.flops = 3e9, cpu.bw = 10e9, cpu.copybw = 1e6, cpu.copylat = 1e-3, cpu.launch = 5e-6;
	snprintf(path, sizeof path, "%s/examples/mlp.tdsl", top ? top : ".");
	for (size_t l = 0; l < sizeof Ls / sizeof *Ls; l++)
		for (size_t b = 0; b < sizeof pcts / sizeof *pcts; b++) {
			double tm[2];
			int rc[2];
			for (int s = 0; s < 2; s++) {
				Module *m = synth_example(path, &Ls[l], 1, &cpu);
				PlanOpts o = { .solver = s ? "ilp" : "tso", .budget_pct = pcts[b], .tlim = 1, .tg = &cpu };
				PlanReport r;
				rc[s] = m ? plan_step(m, &o, &r) : -1;
				tm[s] = rc[s] ? 0 : r.time;
				mod_free(m);
			}
			pcheck(rc[0] != 0 || (rc[1] == 0 && tm[1] <= tm[0] * (1 + 1e-9)), "ilp no worse than tso",
			      Ls[l], "ilp", pcts[b], NULL);
			printf("mlp %-5s %3d%%  tso %s %.6f s, ilp %s %.6f s\n", Ls[l], pcts[b],
			       rc[0] ? "infeasible" : "", tm[0], rc[1] ? "infeasible" : "", tm[1]);
		}
}

/* Below the budgets the time-placed plans reach, the fallback places swaps for memory and
 * relax.c loosens them where the budget leaves room: the mixed plan is checked as every plan
 * is, never slower than the all-tight plan of the same budget, and far faster where the
 * budget leaves room (the bounds hold with a margin; the all-tight figures are 10677% and
 * 58%). */
static void
tight_vs_loose(const char *top)
{
	static const struct {
		const char *file, *solver;
		int pct, cpu;
		double bound;      /* overhead bound, percent */
	} c[] = {
		{ "transformer.tdsl", "tso", 78, 1, 200 },
		{ "transformer.tdsl", "auto", 78, 1, 200 },
		{ "transformer.tdsl", "tso", 76, 1, 500 },
		{ "skipnet.tdsl", "tso", 30, 0, 40 },
		{ "skipnet.tdsl", "ilp", 33, 0, 40 },
		{ "skipnet.tdsl", "tso", 27, 0, 65 },
	};
	Target cpu = tg;
	char path[4096], why[512] = "";

	cpu.flops = 3e9, cpu.bw = 10e9, cpu.copybw = 1e6, cpu.copylat = 1e-3, cpu.launch = 5e-6;
	for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
		const Target *t = c[k].cpu ? &cpu : &tg;
		Module *m[2], *ref;
		PlanReport r[2];
		PlanOpts o = { .solver = c[k].solver, .budget_pct = c[k].pct, .tlim = 1, .tg = t, .nooffload = 1 };   /* the activations alone */
		const char *mn = c[k].file, *sn = c[k].solver;
		int rc[2], pct = c[k].pct;
		double ov[2];

		snprintf(path, sizeof path, "%s/examples/%s", top ? top : ".", mn);
		for (int s = 0; s < 2; s++) {
			m[s] = synth_example(path, NULL, 0, t);
			rc[s] = !m[s] ? -1 : s ? plan_step(m[s], &o, &r[s]) : plan_step_tight(m[s], &o, &r[s]);
			ov[s] = rc[s] ? -1 : 100 * (r[s].time / r[s].base_time - 1);
		}
		ref = synth_example(path, NULL, 0, t);
		pcheck(rc[0] == 0 && rc[1] == 0 && ref, "tight and mixed plans", mn, sn, pct, NULL);
		if (rc[0] == 0 && rc[1] == 0 && ref) {
			pcheck(r[1].time <= r[0].time * (1 + 1e-9), "mixed no slower than tight", mn, sn, pct, NULL);
			pcheck(ov[1] < c[k].bound, "mixed overhead bound", mn, sn, pct, NULL);
			pcheck(ir_verify(m[1], "plan") == 0, "verify", mn, sn, pct, NULL);
			pcheck(roundtrips(m[1], "planned.mir"), "print/parse", mn, sn, pct, NULL);
			pcheck(r[1].arena <= r[1].budget, "fits", mn, sn, pct, NULL);
			pcheck(plan_arena(m[1]->step, t, NULL, r[1].budget) == r[1].arena, "arena", mn, sn, pct, NULL);
			pcheck(synth_equiv(ref->step, m[1]->step, why, sizeof why) == 0, "same ops", mn, sn, pct, why);
			pcheck(same_run(ref, m[1], why, sizeof why), "bit-identical", mn, sn, pct, why);
			printf("%-17s %-5s %3d%% %s  all-tight %9.2f%%  mixed %7.2f%%  arena %lld / %lld  "
			       "rec %d swap %d  %.2fs\n", mn, sn, pct, c[k].cpu ? "cpu" : "mt3000", ov[0], ov[1],
			       (long long)r[1].arena, (long long)r[1].budget, r[1].nrec, r[1].nswap, r[1].stime);
		}
		mod_free(m[0]);
		mod_free(m[1]);
		mod_free(ref);
	}
}

int
main(void)
{
	static const struct { const char *file; const char *defs[4]; int ndefs; } ex[] = {
		{ "mlp.tdsl", { "B=512", "IN=32", "D=32", "L=16" }, 4 },
		{ "skipnet.tdsl", { "B=256", "IN=16", "D=32" }, 3 },
		{ "transformer.tdsl", { "B=8", "D=32" }, 2 },
	};
	static const char *const solvers[] = { "chen", "tso", "ilp", "auto" };
	static const int pcts[] = { 75, 50, 35 };
	const char *top = getenv("top_srcdir");
	/* MTC_QUICK (CI's sanitizer run, docs/reliability.md): auto left out, which chooses tso
	 * or the ILP, both run here */
	size_t nsolver = getenv("MTC_QUICK") && *getenv("MTC_QUICK") ? 3 : 4;
	char path[4096];

	if (target_get(&tg, "mt3000"))
		die("no mt3000 target");
	for (size_t e = 0; e < sizeof ex / sizeof *ex; e++) {
		double tsotime[3] = { -1, -1, -1 };
		Module *ref;
		Ref run0 = { .err = "no module" };
		snprintf(path, sizeof path, "%s/examples/%s", top ? top : ".", ex[e].file);
		/* the unplanned step, and its three steps, once for every solver and budget */
		if ((ref = synth_example(path, ex[e].defs, ex[e].ndefs, &tg)))
			ref_run(ref, &run0);
		for (size_t si = 0; si < nsolver; si++)
			for (size_t bi = 0; bi < sizeof pcts / sizeof *pcts; bi++) {
				Module *m = synth_example(path, ex[e].defs, ex[e].ndefs, &tg);
				PlanOpts o = { .solver = solvers[si], .budget_pct = pcts[bi], .tlim = 1, .tg = &tg };
				PlanReport r;
				char why[512] = "";
				const char *mn = ex[e].file, *sn = solvers[si];
				int pct = pcts[bi], rc;

				if (!m || !ref) {
					pcheck(0, "compile", mn, sn, pct, path);
					mod_free(m);
					continue;
				}
				rc = plan_step(m, &o, &r);
				/* The ILP (whole or in blocks) starts from tso's plan: never slower. */
				if (strcmp(sn, "tso") == 0)
					tsotime[bi] = rc ? -1 : r.time;
				else if (strcmp(sn, "chen") && tsotime[bi] > 0)
					pcheck(rc == 0 && r.time <= tsotime[bi] * (1 + 1e-9), "no slower than tso", mn, sn,
					      pct, NULL);
				if (rc && strcmp(sn, "chen") == 0) {
					printf("%-17s %-5s %3d%%  infeasible\n", mn, sn, pct);
					npass++;
				} else
					pcheck(rc == 0, "plan", mn, sn, pct, NULL);
				if (rc == 0) {
					Func *f = ref->step;
					pcheck(ir_verify(m, "plan") == 0, "verify", mn, sn, pct, NULL);
					pcheck(roundtrips(m, "planned.mir"), "print/parse", mn, sn, pct, NULL);
					pcheck(r.arena <= r.budget, "fits", mn, sn, pct, NULL);
					pcheck(plan_arena(m->step, &tg, NULL, r.budget) == r.arena, "arena", mn, sn, pct, NULL);
					pcheck(synth_equiv(f, m->step, why, sizeof why) == 0, "same ops", mn, sn, pct, why);
					pcheck(same_as(&run0, m, why, sizeof why), "bit-identical", mn, sn, pct, why);
					printf("%-17s %-5s %3d%%  %-5s arena %8lld / %8lld  overhead %6.2f%%  rec %3d swap %2d  %.3fs\n",
					       mn, sn, pct, r.solver, (long long)r.arena, (long long)plan_arena(f, &tg, NULL, 0),
					       100 * (r.time / r.base_time - 1), r.nrec, r.nswap, r.stime);
				}
				mod_free(m);
			}
		ref_free(&run0);
		mod_free(ref);
	}
	ilp_vs_start(top);
	tight_vs_loose(top);
	return done();
}
