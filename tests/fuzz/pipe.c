/* pipe.c: fuzz harness of the compile pipeline up to planning, as driver/main.c runs it:
 * frontend, autodiff, simplify, schedule, plan (a small budget, a solver picked from the
 * input's length, the ILP limited to 0.05 s), liveness, cost, layout, dependences. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static const char *const solvers[] = { "tso", "chen", "auto", "none" };
	static const char *const orders[] = { "mem", "critical", "program" };
	Src src = {0};
	FeOpts fe = {0};
	Target tg;
	Module *m;
	char *text;
	Func *fs[2];

	if (n > 4096)           /* small models: the planner is superlinear */
		return 0;
	text = malloc(n + 1);
	memcpy(text, data, n);
	text[n] = 0;
	src.name = "fuzz.tdsl";
	src.text = text;
	src.len = n;
	if (!(m = fe_compile(&src, &fe)))
		goto out;
	if (m->fwd->loss >= 0 && !m->step && autodiff(m, &src))
		goto done;
	simplify(m->fwd);
	if (m->step)
		simplify(m->step);
	target_get(&tg, "mt3000");
	fs[0] = m->step;
	fs[1] = m->fwd;
	for (int k = 0; k < 2; k++)
		if (fs[k])
			schedule(fs[k], &tg, orders[n % 3]);
	if (m->step) {
		PlanOpts po = { .solver = solvers[n % 4], .budget_pct = 50, .tlim = 0.05, .tg = &tg };
		PlanReport rep;
		if (plan_step(m, &po, &rep))
			goto done;
		fs[0] = m->step;
	}
	for (int k = 0; k < 2; k++) {
		Live l;
		Cost c;
		Layout lay;
		Dag d;
		if (!fs[k])
			continue;
		if (ir_verify(m, "fuzz"))
			abort();
		live_fill(&l, fs[k]);
		cost_fill(&c, fs[k], &tg);
		layout(&lay, fs[k], &l, tg.align);
		dag_build(&d, fs[k], &l, c.dur);
		live_free(&l);
		cost_free(&c);
		dag_free(&d);
	}
done:
	mod_free(m);
out:
	free(text);
	return 0;
}
