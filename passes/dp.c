/* dp.c: data parallelism: the step of one rank of an N-rank job, its gradients all-reduced in
 * buckets behind the backward.
 *
 * needs: the step, in execution order, of the model elaborated at its batch divided by N (one
 *        rank's slice), and N >= 2.
 * fills: a new step (the caller installs it and schedules it again): the params' gradients,
 *        in the order the backward completes them, fall into buckets of about `cap` bytes;
 *        right after a bucket's last gradient, `mem %bucket.K = allreduce %g... ranks=N
 *        scale=1/N` packs them into host memory and starts their mean over the ranks on the
 *        network (the gradients die there); every reader of a gradient (its update) reads
 *        instead `mem %g.r = unbucket %bucket.K start=E`, after `mem wait %bucket.K` and
 *        `mem wait %g.r`. The ops that read gradients come last in the new step, so list
 *        scheduling places them: each wait becomes ready when its collective is modeled to
 *        end (the cost model's network stream), so the rest of the backward runs meanwhile,
 *        and each update runs as soon as its bucket is in.
 *
 * The loss of the step stays the rank's (the mean over its slice); the module's host code
 * makes it the mean over the ranks at the end of the step (runtime/comm.c), which is the whole
 * batch's for a loss that is a mean over the batch. dp_choose picks the bucket size by the cost
 * model: smaller buckets start communicating earlier, each costs latencies. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The gradient an update reads (its first operand after those it writes), or -1. */
int
dp_update_grad(const Func *f, const Op *u)
{
	int nw = opinfo[u->kind].nwritten;

	if (!(opinfo[u->kind].flags & F_MUT) || u->kind == OP_TICK || nw >= u->nargs)
		return -1;
	return f->val[u->args[nw]].decl < 0 ? u->args[nw] : -1;
}

/* Is v a gradient that is all-reduced: what some update reads, made by the backward? */
static void
find_grads(const Func *f, uint8_t *isg)
{
	for (int i = 0; i < f->nop; i++) {
		int g = dp_update_grad(f, &f->op[i]);
		if (g >= 0 && f->val[g].def >= 0)
			isg[g] = 1;
	}
}

static int
by_def(const void *a, const void *b, void *f_)
{
	const Func *f = f_;
	int x = *(const int *)a, y = *(const int *)b, dx = f->val[x].def, dy = f->val[y].def;
	return dx != dy ? (dx > dy) - (dx < dy) : (x > y) - (x < y);
}

Func *
dp_step(const Func *f, int ranks, int64_t cap, int *nbuckets)
{
	int nv = f->nval, ng = 0, nb = 0, *grads, *bk, *close, *map, *red, *bval;
	int64_t *start, *bn;
	uint8_t *isg = xcalloc(nv + 1, 1), *late = xcalloc(f->nop + 1, 1), *dep = xcalloc(nv + 1, 1);
	uint8_t *waited;
	Func *g = func_new(f->mod, f->name);
	char nm[256];

	if (ranks < 2)
		die("dp_step over %d ranks", ranks);
	find_grads(f, isg);
	grads = xmalloc((nv + 1) * sizeof *grads);
	for (int v = 0; v < nv; v++)
		if (isg[v])
			grads[ng++] = v;
	qsort_r(grads, ng, sizeof *grads, by_def, (void *)f);
	/* buckets in completion order: each closes once it holds cap bytes */
	bk = xmalloc((nv + 1) * sizeof *bk);
	start = xcalloc(nv + 1, sizeof *start);
	close = xmalloc((ng + 1) * sizeof *close);
	bn = xcalloc(ng + 1, sizeof *bn);
	for (int k = 0, b = 0; k < ng; k++) {
		int v = grads[k];
		int64_t n = shape_numel(&f->val[v].ty.sh);
		if (b == nb)
			nb++;
		bk[v] = b;
		start[v] = bn[b];
		bn[b] += n;
		close[b] = f->val[v].def;
		/* no bucket over the collectives' int count */
		if (bn[b] * 4 >= cap || (k + 1 < ng && bn[b] + shape_numel(&f->val[grads[k + 1]].ty.sh) > 0x7fffffff))
			b++;
	}
	/* the ops that read a gradient, and everything after that depends on them, go last */
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		for (int k = 0; k < o->nargs; k++)
			late[i] |= isg[o->args[k]] || dep[o->args[k]];
		if (late[i] && o->res >= 0)
			dep[o->res] = 1;
	}
	map = xmalloc((nv + 1) * sizeof *map);
	red = xmalloc((nv + 1) * sizeof *red);
	bval = xmalloc((nb + 1) * sizeof *bval);
	waited = xcalloc(nb + 1, 1);
	for (int v = 0; v < nv; v++)
		map[v] = red[v] = f->val[v].decl >= 0 ? v : -1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < f->nop; i++) {
			const Op *o = &f->op[i];
			if (late[i] != pass)
				continue;
			if (pass) {
				/* the reduced gradients this op reads, brought in first */
				for (int k = 0; k < o->nargs; k++) {
					int v = o->args[k], b, q;
					Type t = f->val[v].ty;
					int64_t ia[MAXIA] = { 0 };
					if (!isg[v] || red[v] >= 0)
						continue;
					b = bk[v];
					if (!waited[b]) {
						func_op(g, OP_WAIT, PH_MEM, &bval[b], 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
						waited[b] = 1;
					}
					ia[0] = start[v];
					snprintf(nm, sizeof nm, "%s.r", f->val[v].name);
					q = func_op(g, OP_UNBUCKET, PH_MEM, &bval[b], 1, ia, 0, NULL, &t, nm, (Loc){0, 0});
					red[v] = g->op[q].res;
					func_op(g, OP_WAIT, PH_MEM, &red[v], 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
				}
				for (int k = 0; k < o->nargs; k++)
					if (isg[o->args[k]])
						map[o->args[k]] = red[o->args[k]];
			}
			copy_op(g, f, o, map, -1);
			if (pass)
				continue;
			/* buckets whose last gradient this op made */
			for (int b = 0; b < nb; b++) {
				int args[ng ? ng : 1], na = 0, q;
				int64_t ia[MAXIA] = { ranks };
				double fa[MAXFA] = { 1.0 / ranks };
				Type t;
				if (close[b] != i)
					continue;
				for (int k = 0; k < ng; k++)
					if (bk[grads[k]] == b)
						args[na++] = map[grads[k]];
				t = (Type){ F32, { 1, { bn[b] } } };
				snprintf(nm, sizeof nm, "bucket.%d", b);
				q = func_op(g, OP_ALLREDUCE, PH_MEM, args, na, ia, 0, fa, &t, nm, (Loc){0, 0});
				bval[b] = g->op[q].res;
			}
		}
	for (int k = 0; k < f->nout; k++)
		func_output(g, f->outname[k], map[f->out[k]]);
	g->loss = f->loss >= 0 ? map[f->loss] : -1;
	*nbuckets = nb;
	free(isg);
	free(late);
	free(dep);
	free(grads);
	free(bk);
	free(start);
	free(close);
	free(bn);
	free(map);
	free(red);
	free(bval);
	free(waited);
	return g;
}

/* The step's modeled figures: time, network time, and the time the compute stream loses
 * waiting for collectives (the step's time less its time with a network of no cost). */
static void
measure(const Func *f, const Target *tg, DpReport *r)
{
	Target free_net = *tg;
	Cost c;

	cost_fill(&c, f, tg);
	r->modeled_s = c.total;
	r->net_s = 0;
	r->bytes = 0;
	for (int i = 0; i < f->nop; i++)
		if (opinfo[f->op[i].kind].flags & F_COLL) {
			r->net_s += op_net_time(tg, f, &f->op[i]);
			r->bytes += op_bytes(f, &f->op[i]);
		}
	cost_free(&c);
	free_net.netlat = 0;
	free_net.netbw = 1e30;
	cost_fill(&c, f, &free_net);
	r->exposed_s = r->modeled_s - c.total;
	if (r->exposed_s < 0)
		r->exposed_s = 0;
	cost_free(&c);
}

/* The modeled time of g planned under the budget by tso, or -1 when it does not fit: g is
 * installed as m's step for the trial, then m (its forward, its decls' homes) is as it was. */
static double
probe(Module *m, Func *g, const PlanOpts *po)
{
	Func *keep = m->step, *fwd = func_rebuild(m->fwd, NULL, NULL);
	uint8_t *host = xmalloc(m->ndecl + 1);
	PlanOpts o = *po;
	PlanReport pr;
	double t;

	for (int d = 0; d < m->ndecl; d++)
		host[d] = m->decl[d].host;
	o.solver = "tso";
	o.quiet = 1;
	m->step = func_rebuild(g, NULL, NULL);
	t = plan_step(m, &o, &pr) ? -1 : pr.time;
	func_free(m->step);
	m->step = keep;
	/* the planner may have moved params to host memory, the forward fetching them */
	for (int d = 0; d < m->ndecl; d++)
		m->decl[d].host = host[d];
	func_adopt(m->fwd, fwd);
	for (int d = 0; d < m->ndecl; d++)
		m->fwd->val[d].host = m->step->val[d].host = host[d];
	free(host);
	return t;
}

int
dp_choose(Module *m, int ranks, int64_t cap, const Target *tg, const char *sched, const PlanOpts *po,
          DpReport *r)
{
	Func *f = m->step, *best = NULL;
	int64_t tot = 0, small = 0, c, bpeak = 0;
	double bt = 0;
	DpReport br = {0};
	uint8_t *isg;
	int fits = 0;

	if (!f)
		die("dp_choose of a model without a step");
	isg = xcalloc(f->nval + 1, 1);
	find_grads(f, isg);
	for (int v = 0; v < f->nval; v++)
		if (isg[v]) {
			int64_t b = type_bytes(&f->val[v].ty);
			tot += b;
			small = !small || b < small ? b : small;
		}
	free(isg);
	if (!tot)
		return -1;
	/* The candidates: the given cap, or one bucket, then halving down to one per gradient.
	 * Without a budget the fastest step; with one the fastest once planned (tso), and if
	 * none fits the one of the least live bytes, whose plan the caller's error explains. */
	for (c = cap > 0 ? cap : tot;; c /= 2) {
		DpReport x = { .ranks = ranks, .cap = c };
		Func *g = dp_step(f, ranks, c, &x.nbuckets);
		double t;
		int64_t peak;
		Live l;

		schedule(g, tg, sched);
		measure(g, tg, &x);
		live_fill(&l, g);
		peak = l.peak;
		live_free(&l);
		t = po && cap <= 0 ? probe(m, g, po) : x.modeled_s;
		/* on a tie the fewest buckets (the first seen) */
		if (!best || (t >= 0 && (!fits || t < bt * (1 - 1e-9))) || (t < 0 && !fits && peak < bpeak)) {
			if (best)
				func_free(best);
			best = g;
			br = x;
			bt = t;
			bpeak = peak;
			fits |= t >= 0;
		} else
			func_free(g);
		if (cap > 0 || c < small || x.nbuckets == 0)
			break;
	}
	func_adopt(f, best);        /* best's tables move into f; its struct stays in the arena */
	*r = br;
	return 0;
}

void
dp_report_print(FILE *fp, const DpReport *r)
{
	fprintf(fp, "# data-parallel: ranks %d buckets %d bucket_bytes %lld allreduce_bytes %lld "
	        "network_ms %.6f exposed_ms %.6f hidden %.1f%%\n", r->ranks, r->nbuckets,
	        (long long)r->cap, (long long)r->bytes, r->net_s * 1e3, r->exposed_s * 1e3,
	        r->net_s > 0 && r->exposed_s < r->net_s ? 100 * (1 - r->exposed_s / r->net_s) :
	        r->net_s > 0 ? 0.0 : 100.0);
}
