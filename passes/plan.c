/* plan.c: the planner's view of a step (Prob), measuring IR, and modes into schedules.
 *
 * needs: a step function in execution order (forward ops marked PH_FWD).
 * fills: Prob (times, bytes, uses, the early/late split of every forward value), and for a
 *        plan its measured peak and modeled time. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes.h"

double
plan_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double
copy_time(const Prob *p, int64_t bytes)
{
	return p->bw > 0 ? p->tg->copylat + (double)bytes / p->bw : 0;
}

static int
is_result(const Func *f, int v)
{
	if (v == f->loss)
		return 1;
	for (int k = 0; k < f->nout; k++)
		if (f->out[k] == v)
			return 1;
	return 0;
}

int
plan_is_fetch(const Func *f, const Op *op)
{
	int d = op->kind == OP_SWAPIN ? f->val[op->args[0]].decl : -1;
	return d >= 0 && f->mod->decl[d].role == R_PARAM && f->mod->decl[d].host;
}

/* Append x to the ascending unique list l of length *n (x is never smaller than its tail). */
static void
push(int **l, int *n, int x)
{
	if (*n && (*l)[*n - 1] == x)
		return;
	*l = xrealloc(*l, (*n + 1) * sizeof **l);
	(*l)[(*n)++] = x;
}

void
plan_measure(const Func *f, const Target *tg, Meas *m)
{
	Live l;
	Cost c;

	live_fill(&l, f);
	cost_fill(&c, f, tg);
	m->peak = l.peak;
	m->peakop = l.peakop;
	m->time = c.total;
	if (m->prof)
		for (int i = 0; i < f->nop; i++)
			m->prof[i] = l.at[i];
	live_free(&l);
	cost_free(&c);
}

void
plan_aprofile(const Func *f, int64_t align, int64_t *prof)
{
	Live l;
	int64_t acc = 0;

	live_fill(&l, f);
	for (int i = 0; i < f->nop; i++)
		prof[i] = 0;
	for (int v = 0; v < f->nval; v++) {
		int64_t b = (l.bytes[v] + align - 1) / align * align;
		if (f->val[v].decl >= 0)
			acc += b;
		else if (l.birth[v] >= 0 && l.birth[v] <= l.last[v] && l.birth[v] < f->nop) {
			prof[l.birth[v]] += b;
			if (l.last[v] + 1 < f->nop)
				prof[l.last[v] + 1] -= b;
		}
	}
	for (int i = 0; i < f->nop; i++)
		prof[i] = acc += prof[i];
	live_free(&l);
}

void
plan_profile_back(const Func *g, int64_t align, const int *map, int n, int64_t *out)
{
	int64_t *pg = xmalloc((g->nop + 1) * sizeof *pg);

	plan_aprofile(g, align, pg);
	for (int t = 0, j = 0; t < n; t++) {
		out[t] = INT64_MIN;
		for (; j <= map[t]; j++)
			if (pg[j] > out[t])
				out[t] = pg[j];
	}
	free(pg);
}

Prob *
prob_new(const Func *f, const Target *tg)
{
	Prob *p = xcalloc(1, sizeof *p);
	int n = f->nop, turn = 0;

	/* the plan is measured on functions made from the marks (remat: func_new), so the
	 * step's own idea of where each decl lives must be theirs */
	for (int d = 0; d < f->mod->ndecl && d < f->nval; d++)
		if (f->val[d].host != f->mod->decl[d].host)
			die("prob_new: %%%s is %s in %s but marked %s", f->val[d].name,
			    f->val[d].host ? "in host memory" : "on the accelerator", f->name,
			    f->mod->decl[d].host ? "host" : "accelerator");
	p->f = f;
	p->n = n;
	p->tg = tg;
	p->bw = tg->copybw;
	p->t = xcalloc(n + 1, sizeof *p->t);
	p->b = xcalloc(n + 1, sizeof *p->b);
	p->ab = xcalloc(n + 1, sizeof *p->ab);
	p->fwd = xcalloc(n + 1, 1);
	p->cand = xcalloc(n + 1, 1);
	p->isres = xcalloc(n + 1, 1);
	p->dep = xcalloc(n + 1, sizeof *p->dep);
	p->ndep = xcalloc(n + 1, sizeof *p->ndep);
	p->use = xcalloc(n + 1, sizeof *p->use);
	p->nuse = xcalloc(n + 1, sizeof *p->nuse);
	p->split = xmalloc((n + 1) * sizeof *p->split);
	p->lastearly = xmalloc((n + 1) * sizeof *p->lastearly);
	p->lastuse = xmalloc((n + 1) * sizeof *p->lastuse);
	p->clob = xmalloc((n + 1) * sizeof *p->clob);
	p->prof = xcalloc(n + 1, sizeof *p->prof);
	p->aprof = xcalloc(n + 1, sizeof *p->aprof);
	for (int i = 0; i < n; i++) {
		const Op *op = &f->op[i];
		int fl = opinfo[op->kind].flags;
		int tmp[64], nt = 0;

		p->t[i] = op_time(tg, f, op);
		if (op->res >= 0 && !f->val[op->res].host) {
			p->b[i] = type_bytes(&f->val[op->res].ty);
			p->ab[i] = (p->b[i] + tg->align - 1) / tg->align * tg->align;
		}
		/* Recomputable: a forward op, or a backward reshape or transpose of recomputable
		 * values (list scheduling may hoist those into the forward, where they hold memory
		 * across the turn like any activation). Gradients are not: recomputing them would
		 * re-run the backward. */
		p->fwd[i] = ((op->phase == PH_FWD ||
		              (op->phase == PH_BWD && (op->kind == OP_RESHAPE || op->kind == OP_TRANSPOSE))) &&
		             op->res >= 0 && !(fl & (F_MUT | F_COPY | F_NORES))) || plan_is_fetch(f, op);
		for (int a = 0; a < op->nargs && p->fwd[i]; a++) {
			int d = f->val[op->args[a]].def;
			if (d >= 0 && !p->fwd[d])
				p->fwd[i] = 0;
		}
		/* deps: defining ops of the operands, ascending, unique */
		for (int a = 0; a < op->nargs && nt < 64; a++) {
			int d = f->val[op->args[a]].def, k;
			if (d < 0)
				continue;
			for (k = nt; k > 0 && tmp[k - 1] > d; k--)
				tmp[k] = tmp[k - 1];
			tmp[k] = d;
			nt++;
		}
		for (int k = 0; k < nt; k++) {
			push(&p->dep[i], &p->ndep[i], tmp[k]);
			if (!p->nuse[tmp[k]] || p->use[tmp[k]][p->nuse[tmp[k]] - 1] != i)
				push(&p->use[tmp[k]], &p->nuse[tmp[k]], i);
		}
	}
	/* The turn: the first op of the backward proper, the loss's gradient (a constant such as
	 * its seed may come first, and list scheduling hoists backward reshapes of forward
	 * values into the forward). */
	while (turn + 1 < n && (f->op[turn].phase == PH_FWD || p->fwd[turn] || p->ndep[turn] == 0))
		turn++;
	p->turn = turn;
	for (int i = 0; i < n; i++) {
		const Op *op = &f->op[i];
		int gap = 0, prev = i;

		p->split[i] = n;
		p->lastearly[i] = i;
		p->lastuse[i] = p->nuse[i] ? p->use[i][p->nuse[i] - 1] : i;
		p->clob[i] = n;
		if (op->res >= 0 && is_result(f, op->res)) {
			p->isres[i] = 1;
			p->lastuse[i] = p->lastearly[i] = n - 1;
			continue;
		}
		if (!p->fwd[i])
			continue;
		/* The longest gap between two uses splits them into early and late. */
		p->lastearly[i] = p->lastuse[i];
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			if (u - prev > gap) {
				gap = u - prev;
				p->lastearly[i] = prev;
				p->split[i] = u;
			}
			prev = u;
		}
		/* Only values read again after the turn are worth planning: one read again only
		 * later in the forward (a backward reshape list scheduling hoisted) would be
		 * recomputed for that read and held from there, saving nothing. */
		p->cand[i] = p->split[i] < n && gap >= 2 && p->lastuse[i] >= turn;
		/* A workspace holds nothing before or after the one op that takes it: it is made
		 * again (remat.c gives a recomputation its own), never kept or moved. */
		if (op->kind == OP_WORKSPACE)
			p->cand[i] = 0;
		if (!p->cand[i]) {
			p->split[i] = n;
			p->lastearly[i] = p->lastuse[i];
		}
		/* Recomputing i is wrong once an update has changed a decl it reads, or the fetched
		 * param it reads; a fetch itself may be fetched again right before the update that
		 * changes it, not after. */
		for (int k = i + 1; k < n && p->clob[i] == n; k++) {
			const Op *u = &f->op[k];
			if (!(opinfo[u->kind].flags & F_MUT))
				continue;
			for (int a = 0; a < u->nargs; a++) {
				int v = u->args[a], dv = f->val[v].def;
				if (a < opinfo[u->kind].nwritten && v == op->res)
					p->clob[i] = k + 1;
				for (int b = 0; b < op->nargs; b++)
					if (v == op->args[b] && (f->val[v].decl >= 0 ||
					    (a < opinfo[u->kind].nwritten && dv >= 0 && plan_is_fetch(f, &f->op[dv]))))
						p->clob[i] = k;
			}
		}
	}
	{
		Meas me = { .prof = p->prof };
		plan_measure(f, tg, &me);
		plan_aprofile(f, tg->align, p->aprof);
		p->peak = me.peak;
		p->time = me.time;
	}
	return p;
}

void
prob_free(Prob *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		free(p->dep[i]);
		free(p->use[i]);
	}
	free(p->t); free(p->b); free(p->ab); free(p->aprof); free(p->fwd); free(p->cand); free(p->isres); free(p->dep); free(p->ndep);
	free(p->use); free(p->nuse); free(p->split); free(p->lastearly); free(p->lastuse);
	free(p->clob); free(p->prof);
	free(p);
}

Plan *
plan_new(const Prob *p)
{
	Plan *pl = xcalloc(1, sizeof *pl);

	pl->n = p->n;
	pl->rec = xcalloc((size_t)p->n * p->n + 1, 1);
	pl->sw = xcalloc(p->n + 1, sizeof *pl->sw);
	pl->solver = "none";
	pl->feasible = 1;
	pl->gap = -1;
	pl->lb = -1;
	pl->obj = -1;
	pl->peak = p->peak;
	pl->time = p->time;
	return pl;
}

void
plan_free(Plan *pl)
{
	if (!pl)
		return;
	free(pl->rec);
	free(pl->sw);
	free(pl);
}

void
plan_copy(Plan *d, const Plan *s)
{
	uint8_t *rec = d->rec;
	Swap *sw = d->sw;

	if (d->n != s->n)
		die("plan_copy: plans of different steps");
	memcpy(rec, s->rec, (size_t)s->n * s->n + 1);
	memcpy(sw, s->sw, (s->n + 1) * sizeof *sw);
	*d = *s;
	d->rec = rec;
	d->sw = sw;
}

/* ---------- modes into a schedule ---------- */

typedef struct Ex {
	const Prob *p;
	Plan *pl;
	uint8_t *mode, *late, *memo;
	int *stamp, *fd, now;
} Ex;

/* Can i be read at op t without new work? */
static int
avail(Ex *e, int i, int t)
{
	return !e->p->fwd[i] || e->late[i] || e->mode[i] == KEEP || t <= e->p->lastearly[i];
}

/* Could i be brought back for op t (recomputed from what is there, or swapped in)? */
static int
can(Ex *e, int i, int t)
{
	const Prob *p = e->p;
	int ok = 1;

	if (avail(e, i, t) || e->mode[i] == SWAP)
		return 1;
	if (e->stamp[i] == e->now)
		return e->memo[i];
	e->stamp[i] = e->now;
	e->memo[i] = 1;         /* a DAG: no cycles, the mark only saves work */
	if (t >= p->clob[i])
		ok = 0;
	for (int k = 0; ok && k < p->ndep[i]; k++)
		ok = can(e, p->dep[i][k], t);
	return e->memo[i] = ok;
}

static void
ensure(Ex *e, int i, int t)
{
	const Prob *p = e->p;

	if (avail(e, i, t))
		return;
	e->late[i] = 1;
	if (e->mode[i] == SWAP) {
		e->fd[i] = t;
		return;
	}
	for (int k = 0; k < p->ndep[i]; k++)
		ensure(e, p->dep[i][k], t);
	e->pl->rec[(size_t)t * p->n + i] = 1;
}

/* The wait of a swap_out goes where the compute since the copy began covers it, the swap_in
 * starts just early enough to hide behind the compute before the first use: no earlier, as
 * the bytes it brings back occupy the accelerator while it waits. lin and lout place each end
 * between memory (0: the swap_in right before the use, the swap_out awaited at once) and time
 * (1: as above), so one plan can hide some copies and stall on others. */
void
plan_place_swap_at(const Prob *p, int i, int fd, double lin, double lout, Swap *s)
{
	double ct = copy_time(p, p->b[i]), acc = 0;
	int ow, in;

	s->op = i;
	s->out = ow = p->lastearly[i];
	while (acc < ct && ow + 1 < fd - 1) {
		ow++;
		acc += p->t[ow];
	}
	in = fd;
	for (acc = 0; acc < ct && in - 1 > ow; acc += p->t[in])
		in--;
	s->outwait = s->out + (int)(lout * (ow - s->out) + 0.5);
	s->in = fd - (int)(lin * (fd - in) + 0.5);
	s->inwait = fd;
}

void
plan_place_swap(const Prob *p, int i, int fd, Swap *s)
{
	plan_place_swap_at(p, i, fd, !p->tight, !p->tight, s);
}

void
plan_expand(const Prob *p, const uint8_t *mode, Plan *pl)
{
	int n = p->n;
	Ex e = { p, pl, NULL, NULL, NULL, NULL, NULL, 0 };

	e.mode = xmalloc(n + 1);
	e.late = xcalloc(n + 1, 1);
	e.memo = xcalloc(n + 1, 1);
	e.stamp = xcalloc(n + 1, sizeof *e.stamp);
	e.fd = xmalloc((n + 1) * sizeof *e.fd);
	memset(pl->rec, 0, (size_t)n * n + 1);
	pl->nsw = 0;
	for (int i = 0; i < n; i++) {
		e.mode[i] = mode[i];
		if (p->fwd[i] && !p->cand[i] && p->split[i] < n)
			e.mode[i] = KEEP;
		if (e.mode[i] == SWAP && (p->bw <= 0 || !p->cand[i]))
			e.mode[i] = p->cand[i] ? KEEP : REC;
		e.fd[i] = -1;
	}
	for (int t = 0; t < n; t++)
		for (int k = 0; k < p->ndep[t]; k++) {
			int a = p->dep[t][k];
			if (avail(&e, a, t))
				continue;
			e.now++;
			if (!can(&e, a, t))
				e.mode[a] = KEEP;     /* keeping is always possible */
			else
				ensure(&e, a, t);
		}
	for (int i = 0; i < n; i++)
		if (e.mode[i] == SWAP && e.fd[i] >= 0)
			plan_place_swap(p, i, e.fd[i], &pl->sw[pl->nsw++]);
	free(e.mode);
	free(e.late);
	free(e.memo);
	free(e.stamp);
	free(e.fd);
}

int64_t
plan_arena(Func *f, const Target *tg, int64_t *persist, int64_t goal)
{
	Live l;
	Layout lay;

	live_fill(&l, f);
	layout_to(&lay, f, &l, tg->align, goal);
	live_free(&l);
	if (persist)
		*persist = lay.persist;
	return lay.arena;
}

/* One order of plans for every solver: one that fits the budget before one that does not;
 * of two that fit, the faster; of two that do not, the one with fewer live bytes at its
 * peak. NULL is the worst. */
int
plan_better(const Plan *a, const Plan *b)
{
	if (!b)
		return 1;
	if (a->feasible != b->feasible)
		return a->feasible;
	return a->feasible ? a->time < b->time : a->peak < b->peak;
}

int64_t
plan_arena_of(const Prob *p, const Plan *pl, int64_t goal)
{
	Func *g = remat(p, pl);
	int64_t a = plan_arena(g, p->tg, NULL, goal);

	func_free(g);
	return a;
}

void
plan_eval(const Prob *p, Plan *pl, int64_t budget)
{
	Func *g = remat(p, pl);
	Meas me = {0};

	plan_measure(g, p->tg, &me);
	pl->peak = me.peak;
	pl->time = me.time;
	pl->feasible = budget <= 0 || pl->peak <= budget;
	func_free(g);
}

int
plan_fits(const Prob *p, Plan *pl, int64_t budget)
{
	if (pl->feasible)
		pl->feasible = plan_arena_of(p, pl, 0) <= budget;
	return pl->feasible;
}
