/* sched.c: list scheduling of tensor ops: a topological order of the dependence DAG chosen by
 * priority, the compiler course's instruction scheduler with tensors for registers.
 *
 * needs: f in a valid order (taken as the program order) and a Target.
 * fills: f->op in the new execution order (Value.def relinked).
 *
 * The scheduler simulates the streams of the cost model: an op whose operand comes from a
 * copy or a collective becomes ready when it is modeled to end, so other work fills the gap. Among the
 * ready ops the priority picks:
 *   mem       memory-aware: the op that frees the most bytes net (operands it is the last
 *             user of, less its result). Two variants run: while every ready op allocates,
 *             one keeps the program order (so the forward never runs ahead) and the other
 *             takes the smallest allocation; the order of the lowest peak live bytes among
 *             them and the program order itself wins (measure, then choose: never worse than
 *             the program order), on a tie the one that holds bytes for less time.
 *   critical  the longest latency-weighted path from the op to the end (copies, being long,
 *             start early); ties in program order.
 *   program   the order as given. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

const char *const sched_names[] = { "mem", "critical", "program", NULL };

/* Priorities: program order; memory, falling back on program order while every ready op
 * allocates (the forward keeps its order); memory, pure greedy; critical path. */
enum { P_PROGRAM, P_MEM, P_GREEDY, P_CRIT };

typedef struct {
	const Func *f;
	int *users;          /* remaining uses of every value (waits count for copy operands) */
	int *pin;            /* value never freed: module tensor, output, loss */
} S;

/* Run body with v bound to every value op i uses, once each; a wait also uses the operand of
 * its copy (which must stay intact until the copy ends). */
#define USES(f, i, body) do { \
	const Op *op_ = &(f)->op[i]; \
	for (int k_ = 0; k_ < op_->nargs; k_++) { \
		int v = op_->args[k_], d_ = 0; \
		for (int j_ = 0; j_ < k_; j_++) \
			d_ |= op_->args[j_] == v; \
		if (!d_) { body; } \
		if (op_->kind == OP_WAIT && (f)->val[v].def >= 0 && \
		    (opinfo[(f)->op[(f)->val[v].def].kind].flags & F_COPY)) { \
			const Op *c_ = &(f)->op[(f)->val[v].def]; \
			for (int m_ = 0; m_ < c_->nargs; m_++) { \
				int v2_ = c_->args[m_]; \
				{ int v = v2_; body; } \
			} \
		} \
	} \
} while (0)

/* Bytes freed minus bytes allocated if op i ran now. */
static int64_t
gain(const S *s, int i)
{
	const Func *f = s->f;
	int64_t g = 0;

	if (f->op[i].res >= 0 && !f->val[f->op[i].res].host)
		g -= type_bytes(&f->val[f->op[i].res].ty);
	USES(f, i, if (!s->pin[v] && !f->val[v].host && s->users[v] == 1)
		g += type_bytes(&f->val[v].ty));
	return g;
}

/* The list scheduler: order[] gets f's ops (indices in f's current order) in the order prio
 * picks them. */
static void
list_order(const Func *f, const Target *t, int prio, int *order)
{
	int n = f->nop, nready = 0, *ready, *npred, *nsucc, **succ;
	double *dur, *est, *bl, comp = 0, copy = 0, net = 0;
	Dag d;
	S s = { f, NULL, NULL };
	int crit = prio == P_CRIT;
	dur = xcalloc(n, sizeof *dur);
	for (int i = 0; i < n; i++)
		dur[i] = op_time(t, f, &f->op[i]);
	dag_build(&d, f, NULL, dur);
	npred = xcalloc(n, sizeof *npred);
	nsucc = xcalloc(n, sizeof *nsucc);
	succ = xcalloc(n, sizeof *succ);
	for (int i = 0; i < d.ne; i++) {
		Edge *e = &d.e[i];
		npred[e->to]++;
		succ[e->from] = xrealloc(succ[e->from], (nsucc[e->from] + 1) * sizeof **succ);
		succ[e->from][nsucc[e->from]++] = e->to;
	}
	/* bottom levels: edges run forward in the program order, so go backwards */
	bl = xcalloc(n, sizeof *bl);
	for (int i = n - 1; i >= 0; i--) {
		double m = 0;
		for (int k = 0; k < nsucc[i]; k++)
			if (bl[succ[i][k]] > m)
				m = bl[succ[i][k]];
		bl[i] = dur[i] + op_net_time(t, f, &f->op[i]) + m;
	}
	s.users = xcalloc(f->nval, sizeof *s.users);
	s.pin = xcalloc(f->nval, sizeof *s.pin);
	for (int v = 0; v < f->nval; v++)
		s.pin[v] = f->val[v].decl >= 0;
	for (int k = 0; k < f->nout; k++)
		s.pin[f->out[k]] = 1;
	if (f->loss >= 0)
		s.pin[f->loss] = 1;
	for (int i = 0; i < n; i++)
		USES(f, i, s.users[v]++);

	est = xcalloc(n, sizeof *est);
	ready = xcalloc(n, sizeof *ready);
	for (int i = 0; i < n; i++)
		if (!npred[i])
			ready[nready++] = i;
	for (int done = 0; done < n; done++) {
		int best = -1, bk = -1;
		double soonest = -1;
		int64_t bg = 0;

		if (!nready)
			die("schedule: the dependence graph has a cycle");
		/* ops that could start now; if none, those that can start soonest */
		for (int k = 0; k < nready; k++)
			if (soonest < 0 || est[ready[k]] < soonest)
				soonest = est[ready[k]];
		if (soonest < comp)
			soonest = comp;
		for (int k = 0; k < nready; k++) {
			int i = ready[k], better;
			int64_t g;
			if (est[i] > soonest)
				continue;
			if (best < 0) {
				best = i, bk = k, bg = gain(&s, i);
				continue;
			}
			if (crit) {
				better = bl[i] > bl[best] || (bl[i] == bl[best] && i < best);
			} else {
				g = gain(&s, i);
				if (g >= 0 || bg >= 0 || prio == P_GREEDY)
					better = g > bg || (g == bg && i < best);
				else
					better = i < best;
			}
			if (better)
				best = i, bk = k, bg = crit ? 0 : gain(&s, i);
		}
		ready[bk] = ready[--nready];
		order[done] = best;
		USES(f, best, s.users[v]--);
		/* the two streams, as cost_fill models them */
		{
			double st = est[best], en;
			if (opinfo[f->op[best].kind].flags & F_COLL) {
				st = st > comp ? st : comp;
				comp = st + dur[best];
				net = (comp > net ? comp : net) + op_net_time(t, f, &f->op[best]);
				en = net;
			} else if (opinfo[f->op[best].kind].flags & F_COPY) {
				st = st > copy ? st : copy;
				st = st > comp ? st : comp;
				copy = en = st + dur[best];
			} else {
				st = st > comp ? st : comp;
				comp = en = st + dur[best];
			}
			for (int k = 0; k < nsucc[best]; k++) {
				int j = succ[best][k];
				if (en > est[j])
					est[j] = en;
				if (!--npred[j])
					ready[nready++] = j;
			}
		}
	}
	for (int i = 0; i < n; i++)
		free(succ[i]);
	free(succ);
	free(nsucc);
	free(npred);
	free(bl);
	free(dur);
	free(est);
	free(ready);
	free(s.users);
	free(s.pin);
	dag_free(&d);
}

/* f's ops in the order order[] lists (indices into orig, f's ops before any permutation). */
static void
apply(Func *f, const Op *orig, const int *order)
{
	for (int i = 0; i < f->nop; i++)
		f->op[i] = orig[order[i]];
	func_relink(f);
}

void
schedule(Func *f, const Target *t, const char *how)
{
	int n = f->nop, *order, *best;
	int64_t bestpeak = -1;
	double bestarea = 0;
	Op *orig;
	Live l;

	if (strcmp(how, "program") == 0 || n < 2)
		return;
	order = xcalloc(n, sizeof *order);
	if (strcmp(how, "critical") == 0) {
		orig = xcalloc(n, sizeof *orig);
		memcpy(orig, f->op, n * sizeof *orig);
		list_order(f, t, P_CRIT, order);
		apply(f, orig, order);
		free(orig);
		free(order);
		return;
	}
	if (strcmp(how, "mem"))
		die("unknown schedule '%s'", how);
	/* Measure, then choose: both memory priorities and the program order, the lowest peak;
	 * on a tie the least bytes summed over the ops (memory held for less time leaves the
	 * planner more room), then the first of mem, greedy, program. */
	orig = xcalloc(n, sizeof *orig);
	best = xcalloc(n, sizeof *best);
	memcpy(orig, f->op, n * sizeof *orig);
	for (int k = 0; k < 3; k++) {
		static const int prio[] = { P_MEM, P_GREEDY, P_PROGRAM };
		double area = 0;
		for (int i = 0; i < n; i++)
			order[i] = i;
		apply(f, orig, order);
		if (prio[k] != P_PROGRAM)
			list_order(f, t, prio[k], order);
		apply(f, orig, order);
		live_fill(&l, f);
		for (int i = 0; i < n; i++)
			area += (double)l.at[i];
		if (bestpeak < 0 || l.peak < bestpeak || (l.peak == bestpeak && area < bestarea)) {
			bestpeak = l.peak;
			bestarea = area;
			memcpy(best, order, n * sizeof *best);
		}
		live_free(&l);
	}
	apply(f, orig, best);
	free(orig);
	free(best);
	free(order);
}
