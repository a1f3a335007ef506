/* place-test.c: the ILP's placement of params and optimizer state (place.c's effects, ilp.c's
 * program) on the state-heavy examples made small, under the CUDA cost model with PCIe 5
 * copies and under mt3000's.
 *
 * The effects: every change is to a level home_allowed permits and not the base's, at most
 * NHOME - 1 a group, consecutive by group; a change measured around a placement undoes the
 * change that made it: the effect of moving group u to level l from everything on the
 * accelerator is, bytes at every op and seconds, the opposite of moving it back from the
 * placement {u: l}. The program: with no change allowed it changes nothing; otherwise it
 * changes at most kmax groups, one level each, never to a level the effects do not offer,
 * and its choice holds the budget in its own model (the profile plus corr less the changes'
 * bytes, at every op); at the unplanned peak it costs no more seconds than no change, and
 * below it by what one change takes off everywhere it finds a placement. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "../check.h"
#include "synth.h"

static const struct {
	const char *file;
	const char *defs[4];
	int ndefs;
} models[] = {
	{ "examples/widemlp.tdsl", { "B=16", "D=256" }, 2 },
	{ "examples/gpt.tdsl", { "B=2", "S=8", "D=64", "L=2" }, 4 },
	{ "examples/mlp.tdsl", { "B=64", "IN=16", "D=64", "L=4" }, 4 },
};

static int
same_effect(const PlaceEffect *a, const PlaceEffect *b, int n)
{
	for (int t = 0; t < n; t++)
		if (a->off[t] != -b->off[t])
			return 0;
	return fabs(a->dt + b->dt) <= 1e-12 + 1e-9 * fabs(a->dt);
}

static void
one(const char *top, int k, const Target *tg, const char *tname)
{
	char path[4096];
	Module *m;
	Func *f;
	PlaceEffect *pe;
	int npe, n, bad = 0, order = 1, undone = 0, tried = 0;

	snprintf(path, sizeof path, "%s/%s", top, models[k].file);
	m = synth_example(path, models[k].defs, models[k].ndefs, tg);
	if (!check(m != NULL, "%s compiles", path))
		return;
	f = m->step;
	plan_hoist_updates(f);
	n = f->nop;
	npe = place_effects(m, f, tg, NULL, &pe);
	check(npe > 0, "%s (%s): changes to place (%d)", path, tname, npe);
	for (int e = 0; e < npe; e++) {
		int mask = home_allowed(f, tg, pe[e].op);
		bad += !(mask & 1 << pe[e].lvl) || pe[e].lvl == HOME_DEV;
		if (e && pe[e].op < pe[e - 1].op)
			order = 0;
	}
	check(!bad, "%s (%s): every change to a level allowed, none to the accelerator from it", path, tname);
	check(order, "%s (%s): a group's changes consecutive", path, tname);
	for (int d = 0; d < m->ndecl; d++)
		bad += m->decl[d].host;
	check(!bad, "%s (%s): the marks as they were", path, tname);
	/* around {u: l}, the change back to the accelerator undoes it (every group's first
	 * level, and every level of the first group) */
	for (int e = 0; e < npe; e++) {
		uint8_t *base;
		PlaceEffect *q;
		int nq, found = 0;
		if (e && pe[e].op == pe[e - 1].op && pe[e].op != pe[0].op)
			continue;
		base = xcalloc(n + 1, 1);
		base[pe[e].op] = (uint8_t)pe[e].lvl;
		nq = place_effects(m, f, tg, base, &q);
		for (int j = 0; j < nq; j++)
			if (q[j].op == pe[e].op && q[j].lvl == HOME_DEV) {
				found = 1;
				undone += same_effect(&pe[e], &q[j], n);
			}
		tried++;
		check(found, "%s (%s): op %d at level %d: a change back offered", path, tname, pe[e].op, pe[e].lvl);
		place_effects_free(q, nq);
		free(base);
	}
	check(undone == tried, "%s (%s): a change back undoes the change (%d of %d)", path, tname, undone, tried);
	/* the program at the unplanned peak (no change needed), and below it by the most bytes
	 * one change takes off at every op (that change alone fits) */
	for (int s = 0; s < 2; s++) {
		Prob *p = prob_new(f, tg);
		int64_t budget = p->peak, most = 0, *corr = xcalloc(n + 1, sizeof *corr);
		uint8_t *mask = xcalloc(n + 1, 1), *lv = xcalloc(n + 1, 1);
		Plan *pl = plan_new(p);
		int r, ch = 0, over = 0, offered = 1;
		double secs = 0;

		p->nodes = PLAN_NODES;
		for (int e = 0; e < npe && s; e++) {
			int64_t lo = INT64_MAX;
			for (int i = 0; i < n; i++)
				if (pe[e].off[i] < lo)
					lo = pe[e].off[i];
			if (lo > most)
				most = lo;
		}
		budget -= most;
		r = solve_ilp_place(p, budget, 0, pe, npe, 0, mask, corr, pl, lv);
		for (int i = 0; i < n; i++)
			ch += lv[i] != 0;
		check(ch == 0, "%s (%s): no change allowed, none made (%d; %d)", path, tname, ch, r);
		plan_free(pl);
		pl = plan_new(p);
		memset(lv, 0, n + 1);
		r = solve_ilp_place(p, budget, 0, pe, npe, 3, mask, corr, pl, lv);
		if (check(r == 0, "%s (%s) at %lld bytes: the program found a placement", path, tname,
		          (long long)budget)) {
			for (int i = 0; i < n; i++) {
				int64_t b = p->aprof[i];
				ch += lv[i] != 0;
				for (int e = 0; e < npe; e++)
					if (lv[pe[e].op] == pe[e].lvl && lv[pe[e].op]) {
						if (i == 0)
							secs += pe[e].dt;
						b -= pe[e].off[i];
					}
				over += b > budget + 1024;      /* the program counts KiB */
			}
			for (int i = 0; i < n; i++) {
				int hit = !lv[i];
				for (int e = 0; e < npe && !hit; e++)
					hit = pe[e].op == i && pe[e].lvl == lv[i];
				offered &= hit;
			}
			check(ch <= 3, "%s (%s): at most 3 changes (%d)", path, tname, ch);
			check(offered, "%s (%s): every level chosen one the effects offer", path, tname);
			check(!over, "%s (%s): its choice within %lld bytes at every op in its model (%d over)",
			      path, tname, (long long)budget, over);
			if (p->peak <= budget)
				check(secs <= 1e-12, "%s (%s): no dearer than no change (%g s)", path, tname, secs);
		}
		plan_free(pl);
		prob_free(p);
		free(corr);
		free(mask);
		free(lv);
	}
	place_effects_free(pe, npe);
	mod_free(m);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	Target cu = target_cuda;

	cu.copybw = 50e9;
	for (int k = 0; k < (int)(sizeof models / sizeof *models); k++) {
		one(top ? top : ".", k, &cu, "cuda, PCIe 5");
		one(top ? top : ".", k, &target_mt3000, "mt3000");
	}
	return done();
}
