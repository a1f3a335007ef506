/* planner.c: the memory-planning pass: pick a solver, fit the budget after layout, install.
 *
 * needs: m->step in execution order; a budget: bytes of the whole arena, or N percent of
 *        the unconstrained arena (the interface's contract: params, inputs and optimizer
 *        state included, which no plan moves, so small percentages may be infeasible).
 * fills: m->step replaced by the planned step (rec, swap_out, swap_in, wait ops) whose arena
 *        fits the budget, and a report. The optimizer updates move up to their dependences
 *        first (gradients die early); for every solver but chen, tso plans the step as
 *        scheduled and with each weight's gradient moved up too (its copy out and its
 *        update then overlap the rest of the backward), the order of the faster plan is
 *        taken and the solver asked for plans it; nothing else is reordered. If the arena
 *        after layout
 *        exceeds the budget (the solvers count live bytes, the layout adds fragmentation),
 *        the solvers' budget is tightened by the excess and they run again; if nothing fits,
 *        again with swaps placed for memory, then loosened toward time swap by swap where the
 *        budget leaves room (relax.c, also from the time-placed plan that missed by the
 *        least). An infeasible budget is an error that states the floor (the smallest arena
 *        of floor_plan, a procedure independent of the budget and solver asked) and what
 *        holds its peak; --solver=chen that does not fit is an error of its own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { ILP_MAXN = 250 };      /* larger steps: the ILP in blocks (ilpblk.c) */
/* auto places by the ILP on larger steps where the search's plan costs this fraction over the
 * unplanned step or more (ResNet at 50% under mt3000: 31.3% -> 23.1%), and runs the ILP on
 * their activations (in blocks, or the chain's program) only there too */
static const double AUTO_PLACE = 0.10;

/* Does auto run the ILP on a step of n ops whose plan so far takes time seconds, the
 * unplanned step base? Always up to ILP_MAXN ops; above, where the plan costs AUTO_PLACE or
 * more. */
static int
auto_ilp(int n, double time, double base)
{
	return n <= ILP_MAXN || time >= base * (1 + AUTO_PLACE);
}
/* What a time limit tlim (0: none) leaves after spent seconds: at least 0.1 s, so that a
 * program still returns its start. */
static double
left(double tlim, double spent)
{
	return tlim <= 0 ? 0 : tlim - spent > 0.1 ? tlim - spent : 0.1;
}

/* A plan that swaps and costs more than POLISH_MIN of the unplanned step is relaxed
 * (relax.c) with POLISH_WORK measurements times ops at most. */
#define POLISH_MIN 0.005
enum { POLISH_WORK = 100000 };
/* Does op k have to stay before update u: it makes one of u's operands or waits on the
 * collective that makes one (ZeRO's unshard reads the gathered params, and the targets track
 * no hazard on a collective's bucket; a copy's readers they make wait themselves), or reads or
 * updates a decl u updates, or updates a decl u reads? */
static int
conflicts(const Func *f, const Op *k, const Op *u)
{
	int nk = op_nmut(k->kind), nu = op_nmut(u->kind);

	for (int a = 0; a < u->nargs; a++) {
		int v = u->args[a];
		if (k->res == v || (k->kind == OP_WAIT && k->args[0] == v && f->val[v].def >= 0 &&
		                    (opinfo[f->op[f->val[v].def].kind].flags & F_COLL)))
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
void
plan_hoist_updates(Func *f)
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

/* Does op o consume gradients as a whole: an optimizer update (not Adam's tick), or the
 * collective that reduces a bucket of them over the ranks (dp.c)? */
static int
grad_sink(const Op *o)
{
	return ((opinfo[o->kind].flags & F_MUT) && o->kind != OP_TICK) || o->kind == OP_ALLREDUCE ||
	       o->kind == OP_REDSCAT;
}

/* The ops that make only what one optimizer update, or one bucket's collective, reads (a
 * weight's gradient, and the transposes and sums on its way): each such group moves up to
 * just after the last op it depends on, so the gradient is complete, and its update can run
 * (on the host: its copy out can start) or its bucket go out on the network, as early as the
 * backward allows, not where a memory-first list schedule left it (last, as a weight's
 * gradient allocates more than the activation it frees). A collective moves with its group,
 * never above another collective (every rank starts them in one order). Returns how many ops
 * moved up. The results are the same: no op moves above one it depends on or that writes
 * what it reads, and none moves down but by the ops that pass it. */
int
plan_hoist_grads(Func *f)
{
	int n = f->nop, moved = 0;
	int *own = xcalloc(n, sizeof *own), *vown = xcalloc(f->nval, sizeof *vown);
	int *perm = xcalloc(n, sizeof *perm), *own2 = xcalloc(n, sizeof *own2);
	Op *tmp = xcalloc(n, sizeof *tmp);

	/* backwards: the sink every use of an op's result leads to, if one (vown: -1 no use
	 * yet, -2 several or none) */
	for (int v = 0; v < f->nval; v++)
		vown[v] = f->val[v].decl >= 0 ? -2 : -1;
	for (int k = 0; k < f->nout; k++)
		vown[f->out[k]] = -2;
	if (f->loss >= 0)
		vown[f->loss] = -2;
	for (int i = n - 1; i >= 0; i--) {
		const Op *o = &f->op[i];
		int fl = opinfo[o->kind].flags, to;
		own[i] = -2;
		if (grad_sink(o))
			to = i;
		else {
			if (!(fl & (F_MUT | F_COPY | F_COLL)) && o->res >= 0 && vown[o->res] >= 0)
				own[i] = vown[o->res];
			to = own[i];
		}
		for (int k = 0; k < o->nargs; k++) {
			int v = o->args[k];
			vown[v] = vown[v] == -1 ? to : vown[v] == to ? to : -2;
		}
	}
	/* in program order, each sink's group: the owned ops after the last op outside the group
	 * that one of them depends on move up to just after it (and after the groups moved there
	 * before), a collective right after them */
	for (int u = 0; u < n; u++) {
		int to = -1, w = 0, any = 0, coll = opinfo[f->op[u].kind].flags & F_COLL;
		if (!grad_sink(&f->op[u]))
			continue;
		for (int i = 0; i < u; i++) {
			if (own[i] != u)
				continue;
			any = 1;
			for (int k = i - 1; k > to; k--)
				if (own[k] != u && conflicts(f, &f->op[k], &f->op[i])) {
					to = k;
					break;
				}
		}
		if (!any)
			continue;
		if (coll)
			for (int k = u - 1; k > to; k--)
				if (own[k] != u && (conflicts(f, &f->op[k], &f->op[u]) ||
				                    (opinfo[f->op[k].kind].flags & F_COLL))) {
					to = k;
					break;
				}
		while (to + 1 < u && own[to + 1] >= 0 && own[to + 1] < u)
			to++;
		for (int i = 0; i <= to; i++)
			perm[w++] = i;
		for (int i = to + 1; i < u; i++)
			if (own[i] == u)
				perm[w++] = i;
		if (coll)
			perm[w++] = u;
		for (int i = to + 1; i < u; i++)
			if (own[i] != u)
				perm[w++] = i;
		if (!coll)
			perm[w++] = u;        /* an update stays where it is, after its group */
		if (w != u + 1)
			die("plan_hoist_grads: %d ops placed of %d", w, u + 1);
		for (int i = to + 1, passed = 0; i <= u; i++) {
			passed |= own[i] != u && i < u;
			moved += (own[i] == u || (coll && i == u)) && passed;
		}
		if (coll)
			own[u] = u;       /* moves with its group from here on */
		for (int i = 0; i <= u; i++) {
			tmp[i] = f->op[perm[i]];
			own2[i] = own[perm[i]];
		}
		memcpy(f->op, tmp, (u + 1) * sizeof *tmp);
		memcpy(own, own2, (u + 1) * sizeof *own);
	}
	func_relink(f);
	free(own);
	free(vown);
	free(perm);
	free(own2);
	free(tmp);
	return moved;
}

/* The solvers, each a run at budget B: 0 with *a filled, or -1 if it found nothing. */
typedef int SolveFn(Prob *, int64_t B, double tlim, Plan *a);

static int
run_chen(Prob *p, int64_t B, double tlim, Plan *a)
{
	(void)tlim;
	return solve_chen(p, B, a);
}

static int
run_tso(Prob *p, int64_t B, double tlim, Plan *a)
{
	(void)tlim;
	return solve_tso(p, B, a);
}

/* The ILP started from warm (NULL: none): one program, or on large steps the chain's (where
 * the step is a chain), else in blocks. */
static int
ilp(Prob *p, int64_t B, double tlim, const Plan *warm, Plan *a)
{
	if (p->n <= ILP_MAXN)
		return solve_ilp(p, B, tlim, warm, a);
	return solve_ilp_chain(p, B, tlim, warm, a) == 0 ? 0 : solve_ilp_blocks(p, B, tlim, warm, a);
}

static int
run_ilp(Prob *p, int64_t B, double tlim, Plan *a)
{
	Plan *w = plan_new(p);
	int ok = solve_tso(p, B, w) == 0, r;

	/* a faster start the caller knows (p->start): GLPK prunes by its incumbent from the
	 * root on */
	if (p->start && p->start->feasible && p->start->peak <= B && (!ok || plan_better(p->start, w))) {
		double st = w->stime;
		plan_copy(w, p->start);
		w->stime = st;
		ok = 1;
	}
	r = ilp(p, B, tlim, ok ? w : NULL, a);

	/* Never worse than its start: GLPK may refuse the start (its memory model is not the
	 * measured one) and find nothing in time, or stop at a worse incumbent. The start is
	 * then the ILP's incumbent, with nothing proved (gap 100%); one that does not fit yet
	 * lets the caller tighten the budget, as tso's own does. Where the ILP's plan measures at
	 * what the ILP proved below every plan (gap 0; it may not fit after layout) and the start
	 * takes no longer, the start is an optimum too. */
	if (ok && (r || plan_better(w, a))) {
		double st = a->stime + w->stime, lb = r ? -1 : a->lb;
		const char *stop = a->stop;
		int proved = !r && a->gap == 0 && w->time <= a->time + 1e-9 * p->time;
		plan_copy(a, w);
		a->solver = "ilp";
		a->stop = stop;
		a->stime = st;
		a->gap = proved ? 0 : lb >= 0 ? plan_gap(p, a, lb) : 1;
		a->lb = lb;
		r = 0;
	}
	plan_free(w);
	return r;
}

/* Does the ILP's plan b take the place of tso's a? Where it is better measured, or proved
 * optimal and a is not better (optimal in the ILP's model, which prices each copy alone, is
 * not always faster measured: the copies share one engine). */
static int
ilp_takes(const Plan *b, const Plan *a)
{
	return b->feasible && ((b->gap >= 0 && b->gap <= 1e-9 && !plan_better(a, b)) || plan_better(b, a));
}

/* The auto policy, the only place it is written: tso, then the ILP started from tso's plan;
 * the ILP's plan when tso found none or it takes tso's place (ilp_takes); else tso's. On
 * steps over ILP_MAXN ops the ILP runs only where tso's plan costs AUTO_PLACE or more over
 * the unplanned step: there its blocks prove nothing, and below that it found no faster plan
 * on the examples (at 50%, 35% and 25%: the transformer at L = 8 and 24, MobileNet, the MLP
 * at L = 100), for 1.4 to 45 times the compile (up to 91 s more). */
static int
run_auto(Prob *p, int64_t B, double tlim, Plan *a)
{
	Plan *b;
	int ok = solve_tso(p, B, a) == 0;

	if (ok && a->feasible && !auto_ilp(p->n, a->time, p->time))
		return 0;
	b = plan_new(p);
	if (ilp(p, B, tlim, ok ? a : NULL, b) == 0 && (!ok || ilp_takes(b, a))) {
		b->stime += a->stime;
		plan_copy(a, b);
		plan_free(b);
		return 0;
	}
	a->stime += b->stime;       /* the time auto spent, the ILP's included */
	a->stop = b->stop;          /* what ended the ILP, whose plan was not taken */
	if (ok && b->lb >= 0) {
		/* tso's plan was the ILP's start, a plan of its program: what it proved bounds it */
		a->lb = b->lb;
		a->gap = plan_gap(p, a, b->lb);
	}
	plan_free(b);
	return ok ? 0 : -1;
}

static const struct {
	const char *name;
	SolveFn *run;
} solvers[] = {
	{ "auto", run_auto }, { "ilp", run_ilp }, { "tso", run_tso }, { "chen", run_chen },
};

/* One solver run at budget B; NULL if the solver found nothing. */
static Plan *
solve(Prob *p, const char *solver, int64_t B, double tlim)
{
	for (size_t k = 0; k < sizeof solvers / sizeof *solvers; k++)
		if (strcmp(solver, solvers[k].name) == 0) {
			Plan *a = plan_new(p);
			if (solvers[k].run(p, B, tlim, a) == 0)
				return a;
			plan_free(a);
			return NULL;
		}
	die("unknown solver %s", solver);
}

/* What holds the bytes at the peak of a function laid out in arena bytes: the line an
 * infeasible budget's error ends with, so the user sees why the floor is where it is. */
static void
explain(FILE *fp, const Func *g, int64_t arena)
{
	enum { NW = 11 };
	Live l;
	int64_t by[NW] = {0}, hp = 0, hs = 0;
	static const char *const what[NW] = {
		"params", "inputs", "optimizer state", "activations kept or recomputed",
		"activations swapped back in", "gradients", "update temporaries", "copies in flight",
		"params fetched from host memory", "optimizer state copied in for its update", "buffers",
	};
	int t, first = 1, nhost = 0;

	live_fill(&l, g);
	t = l.peakop;
	for (int v = 0; v < g->nval; v++) {
		const Value *x = &g->val[v];
		int k;
		if (!l.bytes[v] || !(x->decl >= 0 || (t >= 0 && live_at(&l, v, t))))
			continue;
		if (x->decl >= 0) {
			Role r = g->mod->decl[x->decl].role;
			k = r == R_PARAM ? 0 : r == R_INPUT ? 1 : r == R_BUFFER ? 10 : 2;
		} else {
			const Op *o = &g->op[x->def];
			int d = o->kind == OP_SWAPIN ? g->val[o->args[0]].decl : -1;
			if (d >= 0)
				k = g->mod->decl[d].role == R_PARAM ? 8 : 9;
			else
				k = o->phase == PH_FWD || o->phase == PH_REC ? 3 : o->phase == PH_BWD ? 5 :
				    o->phase == PH_UPD ? 6 : o->kind == OP_SWAPIN ? 4 : 7;
		}
		by[k] += l.bytes[v];
	}
	fprintf(fp, "mtc: note: at its peak (op %d of %d, %s", t, g->nop,
	        t >= 0 ? phase_name[g->op[t].phase] : "-");
	if (t >= 0 && g->op[t].res >= 0)
		fprintf(fp, " %%%s", g->val[g->op[t].res].name);
	fprintf(fp, ") it holds");
	for (int k = 0; k < NW; k++)
		if (by[k]) {
			fprintf(fp, "%s %lld bytes of %s", first ? "" : ",", (long long)by[k], what[k]);
			first = 0;
		}
	fprintf(fp, ", and %lld bytes of layout fragmentation", (long long)(arena - l.peak));
	for (int d = 0; d < g->mod->ndecl; d++)
		if (g->mod->decl[d].host) {
			int64_t b = type_bytes(&g->mod->decl[d].ty);
			*(g->mod->decl[d].role == R_PARAM ? &hp : &hs) += b;
		}
	for (int i = 0; i < g->nop; i++)
		nhost += op_on_host(g, &g->op[i]);
	if (hp || hs) {
		fprintf(fp, "; in host memory between steps: %lld bytes of params and %lld bytes of "
		        "optimizer state", (long long)hp, (long long)hs);
		if (nhost)
			fprintf(fp, ", %d updates run on the host", nhost);
	}
	fputc('\n', fp);
	live_free(&l);
}

/* Keep c in *best if its arena is smaller; c is freed otherwise. */
static void
least(const Prob *p, Plan *c, Plan **best, int64_t *ba)
{
	int64_t a = plan_arena_of(p, c, 0);

	if (a < *ba) {
		plan_free(*best);
		*best = c;
		*ba = a;
	} else
		plan_free(c);
}

/* The smallest arena the planner reaches, by one procedure that does not depend on the
 * budget asked for: every forward value recomputed, every one swapped, chen's smallest over
 * its group sizes, and tso bisected on its budget (a DP plan that fits its own budget moves
 * the bound down). Returns the plan (NULL if none) and its arena in *ba. */
static Plan *
floor_plan(Prob *p, int64_t hi, int64_t *ba)
{
	Plan *best = NULL, *c;
	uint8_t *mode = xmalloc(p->n + 1);
	int64_t lo = 0;

	*ba = INT64_MAX;
	for (int m = REC; m <= SWAP + 1; m++) {
		if (m >= SWAP && p->bw <= 0)
			continue;
		p->tight = m > SWAP;
		for (int i = 0; i < p->n; i++)
			mode[i] = p->cand[i] ? (m > SWAP ? SWAP : m) : REC;
		c = plan_new(p);
		plan_expand(p, mode, c);
		c->solver = "tso";
		plan_eval(p, c, 0);
		least(p, c, &best, ba);
	}
	p->tight = 0;
	free(mode);
	c = plan_new(p);
	solve_chen(p, 1, c);
	least(p, c, &best, ba);
	p->tight = p->bw > 0;
	for (int it = 0; it < 12 && hi - lo > hi / 256; it++) {
		int64_t mid = lo + (hi - lo) / 2;
		c = plan_new(p);
		if (solve_tso(p, mid, c) == 0 && c->feasible)
			hi = mid;
		else
			lo = mid;
		if (c->peak < INT64_MAX)
			least(p, c, &best, ba);
		else
			plan_free(c);
	}
	p->tight = 0;
	return best;
}

/* Solve; tighten by what the layout added; solve again. The plan whose arena fits, or NULL;
 * *stime accumulates the solve time (the ILP's limit holds for all the rounds together).
 * miss, if not NULL, gets the round's plan that missed by the least (the caller frees it). */
static Plan *
fit(Prob *p, const char *solver, int64_t budget, double tlim, double *stime, int64_t *arena,
    Plan **miss)
{
	int64_t target = budget, ma = INT64_MAX, last = INT64_MAX;

	for (int it = 0; it < 8 && target > 0; it++) {
		Plan *pl = solve(p, solver, target, left(tlim, *stime));
		int64_t a;
		if (!pl)
			return NULL;
		*stime += pl->stime;
		a = plan_arena_of(p, pl, budget);
		if (a <= budget) {
			*arena = a;
			return pl;
		}
		target -= (a - budget) > budget / 64 ? a - budget : budget / 64;
		if (miss && a < ma) {
			plan_free(*miss);
			*miss = pl;
			ma = a;
		} else
			plan_free(pl);
		if (a >= last)
			break;
		last = a;
	}
	return NULL;
}

/* The tight fallback's plan tb (arena *arena), or a faster one relax.c finds from it and from
 * the time-placed plan that missed by the least: each swap placed for memory only where the
 * budget needs it. Frees what it does not return; counts its time in *stime. */
static Plan *
loosen(Prob *p, int64_t budget, Plan *tb, Plan *miss, int64_t *arena, double *stime)
{
	double t0 = plan_clock();
	int64_t ra;
	Plan *st[2] = { tb, miss };
	Plan *rb = plan_relax(p, budget, st, 2, 0, &ra);

	*stime += plan_clock() - t0;
	plan_free(miss);
	if (rb && (!tb || rb->time < tb->time)) {
		plan_free(tb);
		*arena = ra;
		return rb;
	}
	plan_free(rb);
	return tb;
}

/* Do a and b recompute and swap the same? */
static int
same_plan(const Plan *a, const Plan *b)
{
	return a->n == b->n && a->nsw == b->nsw && !memcmp(a->rec, b->rec, (size_t)a->n * a->n) &&
	       !memcmp(a->sw, b->sw, (size_t)a->nsw * sizeof *a->sw);
}

/* The name of a solver's plan that relax.c made faster. */
static const char *
relaxed(const char *solver)
{
	static const char *const nm[][2] = {
		{ "tso", "tso+relax" }, { "ilp", "ilp+relax" }, { "ilp-blocks", "ilp-blocks+relax" },
	};
	for (size_t k = 0; k < sizeof nm / sizeof nm[0]; k++)
		if (strcmp(solver, nm[k][0]) == 0)
			return nm[k][1];
	return solver;
}

/* The plan that fits the budget on p: the solvers', tightened by what the layout added; if
 * none fits, with swaps placed for memory, loosened where the budget leaves room (relax.c).
 * NULL if nothing fits; prints nothing. */
static Plan *
solve_fit(Prob *p, const PlanOpts *o, int64_t budget, double tlim, int tight_only, double *stime,
          int64_t *arena)
{
	Plan *miss = NULL, *best;

	best = fit(p, o->solver, budget, tlim, stime, arena, &miss);
	/* None fits, or one that costs time and swaps nothing though the machine can (tso's
	 * recomputation-only plans reach lower than its swaps placed for time): again with the
	 * swaps placed for memory (auto: by tso alone, the ILP has had its turn), loosened where
	 * the budget leaves room; the faster is taken. */
	if ((!best || (best->nsw == 0 && best->time > p->time)) && p->bw > 0 && strcmp(o->solver, "chen")) {
		Plan *tb;
		int64_t ta = 0;
		p->tight = 1;
		tb = fit(p, best && !strcmp(o->solver, "auto") ? "tso" : o->solver, budget, tlim, stime, &ta, NULL);
		p->tight = 0;
		if (!tight_only) {
			tb = loosen(p, budget, tb, miss, &ta, stime);
			miss = NULL;
		}
		if (tb && (!best || tb->time < best->time)) {
			if (best && !tb->stop)
				tb->stop = best->stop;    /* what ended the ILP, whose plan was not taken */
			plan_free(best);
			best = tb;
			*arena = ta;
		} else
			plan_free(tb);
	}
	plan_free(miss);
	/* A plan that swaps and costs time: the solvers price each copy alone, but the copies
	 * share one engine; relax.c measures each swap dropped, recomputed instead or placed
	 * otherwise. The ILP's plan is relaxed beside tso's, so it stays no slower than tso's. */
	if (best && best->nsw > 0 && best->time > p->time * (1 + POLISH_MIN) && !tight_only &&
	    strcmp(o->solver, "chen")) {
		int64_t ra, ta = 0;
		double t0;
		Plan *st[2] = { best, NULL }, *rb;
		if (strcmp(o->solver, "tso"))
			st[1] = fit(p, "tso", budget, 0, stime, &ta, NULL);
		if (st[1] && same_plan(st[0], st[1])) {
			plan_free(st[1]);
			st[1] = NULL;
		}
		t0 = plan_clock();
		rb = plan_relax(p, budget, st, st[1] ? 2 : 1, POLISH_WORK, &ra);
		*stime += plan_clock() - t0;
		plan_free(st[1]);
		if (rb && rb->time < best->time) {
			rb->stop = best->stop;
			rb->solver = relaxed(rb->solver);
			plan_free(best);
			best = rb;
			*arena = ra;
		} else
			plan_free(rb);
	}
	return best;
}

/* tso's rounds at budget B: how the placement search prices a placement. */
static Plan *
fit_tso(Prob *p, int64_t B, double *stime, int64_t *arena)
{
	return fit(p, "tso", B, 0, stime, arena, NULL);
}

/* Does a decl live in host memory already (a planned .mir read back)? */
static int
placed_before(const Module *m)
{
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].host)
			return 1;
	return 0;
}

/* A placement not taken after all (an error): the decls back on the accelerator, its step
 * and levels freed. */
static void
unhome(Module *m, const Func *f, Func *hf, uint8_t *lv)
{
	if (lv)
		home_mark(m, f, lv, 0);
	func_free(hf);
	free(lv);
}

static void
count(const Prob *p, const Plan *pl, PlanReport *r)
{
	r->nrec = 0;
	for (size_t k = 0; k < (size_t)p->n * p->n; k++)
		r->nrec += pl->rec[k];
	r->nswap = pl->nsw;
}

/* One order of the step, planned: where its params and state live and its plan. */
typedef struct Try {
	Func *f;                 /* the step in this order */
	Prob *p;                 /* on f, or on hf */
	Plan *best;              /* the plan that fits, or NULL */
	Func *hf;                /* f rewritten for where params and state live, or NULL */
	uint8_t *lv;             /* its levels (home.c), one per op of f; their decls marked */
	int *map;                /* the index in hf of each op of f */
	const char *placer;      /* who chose lv: "search" (place.c), "ilp" or "zero" (given) */
	int64_t arena;
	double stime;
	int early;               /* ops plan_hoist_grads moved up in f */
	int devfit;              /* tso's plan with everything on the accelerator fits */
} Try;

/* Plan f, in its order, at the budget: where params and optimizer state live (place.c), where
 * the target can keep them in host memory and tso's plan with everything on the accelerator
 * does not fit or costs time: the placement whose tso plan is the fastest that fits. With
 * everything on the accelerator the solver asked for plans as ever; else it plans the step
 * rewritten for the placement (home.c) with tso, for auto and ilp too (Checkmate's program on
 * such steps took 13 to 208 s on skipnet; the ILP decides the placement after, try_ilp_place).
 * Then, whichever step:
 * if nothing fits, again with swaps placed for memory rather than time (their copies then
 * stall the compute), then loosened where the budget leaves room (relax.c), from that plan
 * and from the time-placed one that missed by the least. chen, the activation-only baseline,
 * moves nothing; nor does a try without search. The placement's decls stay marked
 * (try_drop unmarks them). */
static void try_levels(Module *, const PlanOpts *, int64_t budget, double tlim, int tight_only,
                       Try *);
static void try_drop(Module *, Try *);

static void
try_plan(Module *m, Func *f, const PlanOpts *o, int64_t budget, double tlim, int tight_only,
         int search, Try *t)
{
	memset(t, 0, sizeof *t);
	t->f = f;
	t->p = prob_new(f, o->tg);
	t->p->nodes = o->nodes > 0 ? o->nodes : tlim > 0 ? 0 : PLAN_NODES;
	if (search && !o->levels && !o->nooffload && o->tg->hoststate && t->p->bw > 0 && strcmp(o->solver, "chen") &&
	    !placed_before(m)) {
		int64_t ta;
		int lvfits = 0;
		Plan *t0 = fit(t->p, "tso", budget, 0, &t->stime, &ta, NULL);
		t->devfit = t0 != NULL;
		if (!t0 || t0->time > t->p->time)
			t->lv = place_search(m, f, o->tg, budget, t->p->nodes, t0 ? t0->time : INFINITY,
			                     fit_tso, o->jobs, &t->stime, &lvfits);
		plan_free(t0);
	}
	if (search && o->levels && !o->nooffload && o->tg->hoststate && t->p->bw > 0 && strcmp(o->solver, "chen") &&
	    !placed_before(m)) {
		/* given with the shards (dp.c): each group at its level, no search */
		uint8_t *lv = xcalloc(f->nop + 1, 1);
		int any = 0;
		for (int i = 0; i < f->nop; i++) {
			int k = home_key(f, i);
			if (k >= 0 && o->levels[k] && home_allowed(f, o->tg, i) & 1 << o->levels[k])
				lv[i] = o->levels[k], any = 1;
		}
		if (any) {
			t->lv = lv;
			t->placer = "zero";
			try_levels(m, o, budget, tlim, tight_only, t);
			return;
		}
		free(lv);
	}
	if (!t->lv) {
		t->best = solve_fit(t->p, o, budget, tlim, tight_only, &t->stime, &t->arena);
		return;
	}
	t->placer = "search";
	try_levels(m, o, budget, tlim, tight_only, t);
}

/* t's step rewritten for its levels t->lv (marked here) and planned: unplanned where it fits,
 * else by the solver asked for, tso in place of auto and ilp. */
static void
try_levels(Module *m, const PlanOpts *o, int64_t budget, double tlim, int tight_only, Try *t)
{
	PlanOpts qo = *o;

	home_mark(m, t->f, t->lv, 1);
	t->map = xmalloc((t->f->nop + 1) * sizeof *t->map);
	t->hf = home_step(t->f, o->tg, t->lv, t->map);
	prob_free(t->p);
	t->p = prob_new(t->hf, o->tg);
	t->p->nodes = o->nodes > 0 ? o->nodes : tlim > 0 ? 0 : PLAN_NODES;
	if (strcmp(o->solver, "auto") == 0 || strcmp(o->solver, "ilp") == 0)
		qo.solver = "tso";
	if ((t->arena = plan_arena(t->hf, o->tg, NULL, budget)) <= budget) {
		/* it fits unplanned with params and state where they are */
		t->best = plan_new(t->p);
		plan_eval(t->p, t->best, budget);
		t->best->solver = qo.solver;
	} else
		t->best = solve_fit(t->p, &qo, budget, tlim, tight_only, &t->stime, &t->arena);
}

/* What t's step holds at each op of t->f (n entries), as planned. */
static void
try_profile(const Try *t, const Target *tg, int64_t *out)
{
	int n = t->f->nop, *cm = xmalloc((n + 1) * sizeof *cm), *rm = NULL;
	const Func *h = t->hf ? t->hf : t->f;
	Func *g = NULL;

	for (int i = 0; i < n; i++)
		cm[i] = t->map ? t->map[i] : i;
	if (t->best) {
		rm = xmalloc((t->p->n + 1) * sizeof *rm);
		h = g = remat_map(t->p, t->best, rm);
		for (int i = 0; i < n; i++)
			cm[i] = rm[cm[i]];
	}
	plan_profile_back(h, tg->align, cm, n, out);
	func_free(g);
	free(rm);
	free(cm);
}

enum { PLACE_ROUNDS = 4 };

/* The ILP's placement of t's step: a program whose columns are the changes of one group's
 * level from t's placement (place.c's effects, each measured alone on the step as placed:
 * the program is linear around it), its memory the measured one of t's plan, the activations
 * as that plan holds them. The step its levels make is planned by tso (the activations for
 * the new placement) and taken if it fits and is faster; then the program is made again
 * around it, or with half as many changes allowed where it was not faster (PLACE_ROUNDS
 * programs at most). (With the activations decided in the same program, Checkmate's, GLPK
 * took 85 s for 51 nodes on the 160-op MLP; docs/planner.md.) */
static void
try_ilp_place(Module *m, const PlanOpts *o, int64_t budget, double tlim, int tight_only, Try *t)
{
	Func *f = t->f;
	int n = f->nop, npe = 0, kmax = n, fresh = 1;
	PlaceEffect *pe = NULL;
	Prob *p;
	uint8_t *mask = xcalloc(n + 1, 1);       /* no activation decided */
	int64_t *corr = xmalloc((n + 1) * sizeof *corr);

	if (t->lv)
		home_mark(m, f, t->lv, 0);
	p = prob_new(f, o->tg);         /* everything on the accelerator */
	if (t->lv)
		home_mark(m, f, t->lv, 1);
	p->nodes = t->p->nodes;
	p->nocuts = n > ILP_MAXN && strcmp(o->solver, "ilp") != 0;   /* auto's, on larger steps */
	for (int round = 0; round < PLACE_ROUNDS && kmax > 0; round++) {
		Plan *pl;
		uint8_t *lv = xcalloc(n + 1, 1);
		int nch = 0;
		Try x;

		if (t->lv)
			memcpy(lv, t->lv, n);
		if (fresh) {
			/* the program around t's placement and plan */
			try_profile(t, o->tg, corr);
			for (int i = 0; i < n; i++)
				corr[i] -= p->aprof[i];
			if (t->lv)
				home_mark(m, f, t->lv, 0);
			place_effects_free(pe, npe);
			npe = place_effects(m, f, o->tg, t->lv, &pe);
			if (t->lv)
				home_mark(m, f, t->lv, 1);
			fresh = 0;
		}
		pl = plan_new(p);
		if (npe && solve_ilp_place(p, budget, left(tlim, t->stime), pe, npe, kmax, mask, corr, pl,
		                           lv) == 0)
			for (int i = 0; i < n; i++)
				nch += lv[i] != (t->lv ? t->lv[i] : 0);
		t->stime += pl->stime;
		plan_free(pl);
		if (!nch) {
			free(lv);
			break;
		}
		if (t->lv)
			home_mark(m, f, t->lv, 0);
		memset(&x, 0, sizeof x);
		x.f = f;
		x.lv = lv;
		x.placer = "ilp";
		x.early = t->early;
		x.devfit = t->devfit;
		try_levels(m, o, budget, left(tlim, t->stime), tight_only, &x);
		if (getenv("MTC_ILP_TRACE")) {
			int c[NHOME] = {0};
			for (int i = 0; i < n; i++)
				c[lv[i]]++;
			fprintf(stderr, "ilp: placement round %d of %d changes, %d changed (at most %d): %d state, "
			        "%d param, %d both, %d on the host: %s, %.6g s against %.6g s\n", round, npe,
			        nch, kmax, c[HOME_STATE], c[HOME_PARAM], c[HOME_BOTH], c[HOME_HOSTUPD],
			        x.best ? "fits" : "does not fit", x.best ? x.best->time : 0,
			        t->best ? t->best->time : 0);
		}
		x.stime += t->stime;
		if (x.best && (!t->best || x.best->time < t->best->time)) {
			try_drop(m, t);
			home_mark(m, f, x.lv, 1);
			*t = x;
			fresh = 1;
		} else {
			t->stime = x.stime;
			try_drop(m, &x);
			if (t->lv)
				home_mark(m, f, t->lv, 1);
			kmax = nch / 2;
		}
	}
	place_effects_free(pe, npe);
	prob_free(p);
	free(mask);
	free(corr);
}

/* Does ilp_placed run on t: for ilp, on a step placed and planned of up to ILP_MAXN ops
 * (on the examples it found no faster plan, so auto does without). */
static int
placed_ilp(const PlanOpts *o, const Try *t)
{
	return t->lv && t->best && !o->probe && t->p->n <= ILP_MAXN && strcmp(o->solver, "ilp") == 0;
}

/* The activations of t's step as placed (home.c's rewrite, tso's plan) by the ILP started
 * from that plan (Checkmate's program, or the chain's), taken as auto takes it (ilp_takes).
 * Once, on the placement taken (in the placement's rounds it took 13 to 208 s on skipnet at
 * 25-35%). What it proves is about the activations, the placement given. */
static void
ilp_placed(const PlanOpts *o, int64_t budget, double tlim, int tight_only, Try *t)
{
	PlanOpts qo = *o;
	int64_t arena = 0;
	Plan *b;

	if (t->best->time <= t->p->time) {
		/* the activations' plan costs nothing on the step as placed: nothing is cheaper */
		t->best->gap = 0;
		return;
	}
	qo.solver = "ilp";
	/* started from the plan taken (tso's, loosened or polished by relax.c) where it is in the
	 * program and faster than tso's plan: the classifier under mt3000 at 50%, placed, was
	 * proved optimal in 7 nodes from it, and not in 1000 from tso's plan (40.4 us over the
	 * step against the optimum's 19.7) */
	t->p->start = t->best;
	b = solve_fit(t->p, &qo, budget, tlim, tight_only, &t->stime, &arena);
	t->p->start = NULL;
	if (b && ilp_takes(b, t->best)) {
		plan_free(t->best);
		t->best = b;
		t->arena = arena;
	} else {
		if (b && b->stop)
			t->best->stop = b->stop;  /* what ended the ILP, whose plan was not taken */
		/* The ILP's answer is the plan taken, its start (nothing faster found): what the ILP
		 * proved below every plan of its program, the plan taken one of them, is its gap
		 * (skipnet under mt3000 at 50%: "-" before, though the relaxation's bound stood) */
		if (b && b->lb >= 0 && same_plan(b, t->best)) {
			t->best->gap = b->gap;
			t->best->lb = b->lb;
		}
		plan_free(b);
	}
}

/* A try not taken: its plan and problem freed, its placement's decls back on the accelerator. */
static void
try_drop(Module *m, Try *t)
{
	plan_free(t->best);
	prob_free(t->p);
	unhome(m, t->f, t->hf, t->lv);
	free(t->map);
	memset(t, 0, sizeof *t);
}

/* The smallest plan the planner knows on a try's step (floor_plan), its arena in *fa. */
static Plan *
try_floor(Try *t, int64_t arena0, int64_t budget, int64_t *fa)
{
	Plan *fl = floor_plan(t->p, arena0, fa);
	if (fl && *fa > budget)
		*fa = plan_arena_of(t->p, fl, budget);       /* a layout's search may fit it */
	return fl;
}

static int
plan(Module *m, const PlanOpts *o, PlanReport *r, int tight_only)
{
	Func *f = m->step, *g = NULL;
	Prob *p;
	Plan *best;
	Try t, u;
	int hbuf = 0, fresh = !placed_before(m);
	int64_t budget, arena0, persist;
	double tlim = o->tlim > 0 ? o->tlim : 0;

	tight_only |= o->probe;
	memset(r, 0, sizeof *r);
	snprintf(r->solver, sizeof r->solver, "none");
	snprintf(r->stop, sizeof r->stop, "-");
	r->tlim = tlim;
	r->gap = -1;
	if (!f) {
		/* A model without training: nothing to recompute or swap around a backward. */
		int64_t a = plan_arena(m->fwd, o->tg, &persist, 0);
		budget = o->budget ? o->budget : (int64_t)((double)a * o->budget_pct / 100);
		r->budget = budget;
		r->arena = a;
		if (a > budget) {
			if (!o->quiet)
				fprintf(stderr, "mtc: error: the forward needs %lld bytes, over the budget of %lld "
				        "bytes; the planner plans training steps only\n", (long long)a, (long long)budget);
			return -1;
		}
		return 0;
	}
	arena0 = plan_arena(f, o->tg, &persist, 0);
	if (o->budget || o->budget_pct > 0)
		plan_hoist_updates(f);
	p = prob_new(f, o->tg);
	/* A percentage is of the whole unconstrained arena, module tensors included. */
	budget = o->budget ? o->budget : o->budget_pct > 0 ?
	         (int64_t)((double)arena0 * o->budget_pct / 100) : 0;
	r->budget = budget;
	r->base_peak = p->peak;
	r->peak = p->peak;
	r->arena = arena0;
	r->base_time = r->time = p->time;
	prob_free(p);
	if (!budget || arena0 <= budget)
		return 0;
	if (strcmp(o->solver, "none") == 0) {
		if (!o->quiet)
			fprintf(stderr, "mtc: error: the step needs %lld bytes, over the budget of %lld bytes, "
			        "and --solver=none plans nothing\n", (long long)arena0, (long long)budget);
		return -1;
	}
	/* The step as the list schedule left it and the same step with each weight's gradient
	 * made as early as it can be (plan_hoist_grads), both planned by tso: in the second,
	 * updates, and the copies of a placement in host memory, overlap the rest of the
	 * backward, at the cost of the gradients' bytes sooner. The order of the faster plan
	 * that fits is taken (the first on a tie, or when neither fits), and planned by the
	 * solver asked for, if not tso, with everything on the accelerator; where params or
	 * state moved (tso plans those), that plan is taken only if faster. chen plans the
	 * first order only. */
	memset(&u, 0, sizeof u);
	if (strcmp(o->solver, "chen") == 0)
		try_plan(m, f, o, budget, tlim, tight_only, 1, &t);
	else {
		PlanOpts qo = *o;
		int early;
		qo.solver = "tso";
		try_plan(m, f, &qo, budget, tlim, tight_only, 1, &t);
		/* (a plan that costs nothing over the unplanned step is kept as it is); the copy is
		 * made with t's placement unmarked: a function's decls take their homes from the
		 * marks when it is made, and g is the step with everything on the accelerator */
		g = NULL;
		if (!(t.best && t.best->time <= r->base_time)) {
			if (t.lv)
				home_mark(m, f, t.lv, 0);
			g = func_rebuild(f, NULL, NULL);
			if ((early = plan_hoist_grads(g)) > 0) {
				plan_hoist_updates(g);
				try_plan(m, g, &qo, budget, tlim, tight_only, 1, &u);
				u.early = early;
				if (u.lv)
					home_mark(m, g, u.lv, 0);
				if (u.best && (!t.best || u.best->time < t.best->time)) {
					Try x = t;
					t = u;
					u = x;
				}
			}
			if (t.lv)
				home_mark(m, t.f, t.lv, 1);
		}
		/* the ILP's placement: for ilp, and for auto on steps the ILP plans whole, or on
		 * larger ones where the search's plan costs AUTO_PLACE or more of the step (on the
		 * others it found nothing, and took a compile of the GPT from 1.9 to 6.9 s); not in
		 * a probe, which only ranks candidate steps */
		if ((strcmp(o->solver, "ilp") == 0 || (strcmp(o->solver, "auto") == 0 &&
		     (t.best ? auto_ilp(t.f->nop, t.best->time, r->base_time) : t.f->nop <= ILP_MAXN))) &&
		    fresh && !o->probe && !o->levels &&
		    !o->nooffload && o->tg->hoststate && o->tg->copybw > 0 &&
		    !(t.best && t.best->time <= r->base_time))
			try_ilp_place(m, o, budget, tlim, tight_only, &t);
		if (strcmp(o->solver, "tso") && (!t.lv || t.devfit)) {
			/* the solver asked for, on the order taken, with everything on the
			 * accelerator: in place of tso's plan, or of the placement's where that is
			 * slower (the ILP may find a faster activation plan than tso's) */
			Try x;
			/* with --solver-time, what is left, or half of it where the ILP on the step
			 * as placed (ilp_placed) follows: it took the whole limit, and the ILP as
			 * placed got 0.1 s (skipnet under mt3000 at 50%, --solver-time=10: ilp_gap
			 * 100% against 53.7% without a limit) */
			double xlim = left(tlim, t.stime);
			if (tlim > 0 && placed_ilp(o, &t))
				xlim = left(tlim, t.stime + xlim / 2);
			if (t.lv)
				home_mark(m, t.f, t.lv, 0);
			try_plan(m, t.f, o, budget, xlim, tight_only, 0, &x);
			x.early = t.early;
			x.stime += t.stime;
			if (x.best && (!t.lv || !t.best || x.best->time < t.best->time)) {
				try_drop(m, &t);
				t = x;
			} else {
				/* nothing fits (the floor below looks at both tso tries), or tso's is kept */
				t.stime = x.stime;
				try_drop(m, &x);
				if (t.lv)
					home_mark(m, t.f, t.lv, 1);
			}
		}
		if (placed_ilp(o, &t))
			ilp_placed(o, budget, tlim, tight_only, &t);
		t.stime += u.stime;
		u.stime = 0;
	}
	if (!t.best && strcmp(o->solver, "chen") == 0) {
		/* The baseline was asked for: no other solver's plan stands in for it. */
		Plan *c = plan_new(t.p);
		int64_t ca;
		solve_chen(t.p, 1, c);
		ca = plan_arena_of(t.p, c, budget);
		if (!o->quiet)
			fprintf(stderr, "mtc: error: --solver=chen: sqrt(n) checkpointing needs an arena of %lld "
			        "bytes at the least (%.1f%% of the unconstrained %lld), over the budget of %lld "
			        "bytes (%.1f%%); --solver=tso, ilp or auto may fit it\n", (long long)ca,
			        100.0 * (double)ca / (double)arena0, (long long)arena0, (long long)budget,
			        100.0 * (double)budget / (double)arena0);
		plan_free(c);
		try_drop(m, &t);
		return -1;
	}
	if (!t.best && o->probe) {
		try_drop(m, &t);
		try_drop(m, &u);
		func_free(g);
		return -1;
	}
	if (!t.best) {
		/* The floor, by a procedure of its own, on each order tried: if its plan fits after
		 * all, it is the plan. */
		int64_t fa, fb = INT64_MAX;
		Plan *fl = try_floor(&t, arena0, budget, &fa), *fu = u.p ? try_floor(&u, arena0, budget, &fb) : NULL;
		if (fu && (!fl || fb < fa)) {
			Try x = t;
			if (t.lv)
				home_mark(m, t.f, t.lv, 0);
			t = u;
			u = x;
			if (t.lv)
				home_mark(m, t.f, t.lv, 1);
			plan_free(fl);
			fl = fu;
			fa = fb;
		} else
			plan_free(fu);
		if (fl && fa <= budget) {
			if (!o->quiet)
				fprintf(stderr, "mtc: note: %s found no plan within the budget; taking the "
				        "smallest plan the planner knows (%s's)\n", o->solver, fl->solver);
			t.arena = fa;
			t.best = tight_only ? fl : loosen(t.p, budget, fl, NULL, &t.arena, &t.stime);
		} else {
			/* the floor: its plan's arena as low as a layout's search gets it, toward the
			 * bytes alive at its peak (a budget of that arena or more takes this plan: the
			 * search with a higher goal is the same search, stopped earlier) */
			int64_t of = o->pct_of > 0 ? o->pct_of : arena0;
			double need;
			char hint[48];
			if (fl)
				fa = plan_arena_of(t.p, fl, -1);
			/* a percentage over 100 is no --mem-budget: then the bytes */
			need = ceil(100.0 * (double)fa / (double)of);
			if (need <= 100)
				snprintf(hint, sizeof hint, "%.0f%%", need);
			else
				snprintf(hint, sizeof hint, "%lld", (long long)fa);
			if (!o->quiet)
				fprintf(stderr, "mtc: error: the budget of %lld bytes (%.1f%% of the unconstrained "
				        "arena of %lld%s) cannot be met: the smallest arena the planner reaches is "
				        "%lld bytes (%.1f%%; --mem-budget=%s or more)\n",
				        (long long)budget, 100.0 * (double)budget / (double)of, (long long)of,
				        o->pct_of > 0 ? ", the step on the whole batch at once" : "", (long long)fa,
				        100.0 * (double)fa / (double)of, hint);
			if (fl && !o->quiet) {
				Func *h = remat(t.p, fl);
				plan_arena(h, t.p->tg, NULL, -1);
				explain(stderr, h, fa);
				func_free(h);
			}
			plan_free(fl);
			try_drop(m, &t);
			try_drop(m, &u);
			func_free(g);
			return -1;
		}
	}
	try_drop(m, &u);
	if (t.lv)
		home_mark(m, t.f, t.lv, 1);
	best = t.best;
	snprintf(r->solver, sizeof r->solver, "%s", best->solver);
	if (best->stop)
		snprintf(r->stop, sizeof r->stop, "%s", best->stop);
	r->peak = best->peak;
	r->time = best->time;
	r->stime = t.stime;
	r->gap = best->gap;
	r->arena = t.arena;
	r->nearly = t.early;
	count(t.p, best, r);
	m->step = remat(t.p, best);
	plan_free(best);
	prob_free(t.p);
	if (t.hf) {
		/* the forward fetches the params that live in host memory, as the step does */
		for (int d = 0; d < m->ndecl; d++)
			if (m->decl[d].host) {
				mod_set_host(m, d);
				if (m->decl[d].role == R_PARAM)
					r->hparam += type_bytes(&m->decl[d].ty);
				else
					r->hstate += type_bytes(&m->decl[d].ty);
			}
		for (int i = 0; i < t.f->nop; i++)
			r->nhostupd += t.lv[i] == HOME_HOSTUPD;
		snprintf(r->placer, sizeof r->placer, "%s", t.placer ? t.placer : "search");
		/* and the running statistics in host memory that its batch norms read */
		for (int d = 0; d < m->ndecl; d++)
			hbuf |= m->decl[d].host && m->decl[d].role == R_BUFFER;
		if (r->hparam || hbuf)
			func_adopt(m->fwd, home_fwd(m->fwd, o->tg));
		func_free(t.hf);
	}
	free(t.lv);
	free(t.map);
	func_free(f);
	func_free(g);
	return 0;
}

int
plan_step(Module *m, const PlanOpts *o, PlanReport *r)
{
	return plan(m, o, r, 0);
}

int
plan_step_tight(Module *m, const PlanOpts *o, PlanReport *r)
{
	return plan(m, o, r, 1);
}

void
plan_report_print(FILE *fp, const PlanReport *r)
{
	fprintf(fp, "solver %s\n", r->solver);
	if (r->micro > 1)
		fprintf(fp, "micro_batches %d\n", r->micro);
	fprintf(fp, "budget_bytes %lld\n", (long long)r->budget);
	fprintf(fp, "unplanned_peak_bytes %lld\n", (long long)r->base_peak);
	fprintf(fp, "planned_peak_bytes %lld\n", (long long)r->peak);
	fprintf(fp, "arena_bytes %lld\n", (long long)r->arena);
	fprintf(fp, "recomputed_ops %d\nswapped_values %d\n", r->nrec, r->nswap);
	if (r->hparam)
		fprintf(fp, "params_in_host_bytes %lld\n", (long long)r->hparam);
	if (r->hstate)
		fprintf(fp, "state_in_host_bytes %lld\n", (long long)r->hstate);
	if (r->nhostupd)
		fprintf(fp, "updates_on_host %d\n", r->nhostupd);
	if (r->placer[0])
		fprintf(fp, "placed_by %s\n", r->placer);
	if (r->nearly)
		fprintf(fp, "early_gradient_ops %d\n", r->nearly);
	fprintf(fp, "modeled_step_s %.9g\nunplanned_step_s %.9g\n", r->time, r->base_time);
	fprintf(fp, "overhead %.2f%%\n", r->base_time > 0 ? 100 * (r->time / r->base_time - 1) : 0);
	/* what ended the ILP (optimal, node limit, time limit, ...; "-": none ran); the time
	 * it took only when a time limit was asked for: the rest is the same on any machine */
	fprintf(fp, "ilp_stop %s\n", r->stop);
	if (r->tlim > 0)
		fprintf(fp, "solve_s %.3f\n", r->stime);
	if (r->gap >= 0)
		fprintf(fp, "ilp_gap %.4f%%\n", 100 * r->gap);
	else
		fprintf(fp, "ilp_gap -\n");
}
