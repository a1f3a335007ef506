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
 * Batch norm normalizes with each rank's own statistics (PyTorch's DDP without SyncBatchNorm;
 * the same as the single process with --micro-batches=N), but its running statistics are the
 * whole batch's, as the single process's: the batch mean and the mean of squares (var +
 * mean * mean) its update reads are averaged over the ranks like gradients, in buckets of
 * their own (`stats.K`, never sharded), and the update reads the mean and var = E[x^2] -
 * mean^2 of the whole batch, with its count times N. Every rank holds the same buffers.
 *
 * The loss of the step stays the rank's (the mean over its slice); the module's host code
 * makes it the mean over the ranks at the end of the step (runtime/comm.c), which is the whole
 * batch's for a loss that is a mean over the batch. dp_choose picks the bucket size by the cost
 * model: smaller buckets start communicating earlier, each costs latencies; and for each, the
 * step as list scheduling orders it or with the gradients and their collectives moved up
 * (plan_hoist_grads: a memory-first schedule makes weights' gradients last, so no bucket
 * would go out before the backward ends). Under a budget each distinct candidate is planned
 * once, side by side in child processes (fork.c, PlanOpts.jobs): the choice is the same for
 * any number of them. With ZeRO under --zero=auto it also picks which params to shard: by
 * bisection over the params ordered by bytes saved per second (the planner's search placing
 * params and state), and with one list of each param's choices, sharded or not and at which
 * of the placement's levels (place.c's hull and walk; the levels handed to the planner). */
#include <math.h>
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

/* What is all-reduced: G_PARAM, a param's gradient (what its update reads, made by the
 * backward); G_STAT, a batch statistic a buffer's update reads (batch norm's running mean and
 * variance). Only the updates read the reduced statistics; the step's other readers keep the
 * rank's own. */
enum { G_PARAM = 1, G_STAT = 2 };
/* A bucket's class: whole gradients, sharded ones (ZeRO), batch statistics. */
enum { B_WHOLE, B_SHARD, B_STAT };

static int
writes_buffer(const Func *f, const Op *u)
{
	return (opinfo[u->kind].flags & F_MUT) && u->kind != OP_TICK && u->nargs > 0 &&
	       f->val[u->args[0]].decl >= 0 && f->mod->decl[f->val[u->args[0]].decl].role == R_BUFFER;
}

static void
find_grads(const Func *f, uint8_t *isg)
{
	for (int i = 0; i < f->nop; i++) {
		const Op *u = &f->op[i];
		if (writes_buffer(f, u)) {
			for (int k = opinfo[u->kind].nwritten; k < u->nargs; k++)
				if (f->val[u->args[k]].decl < 0 && f->val[u->args[k]].def >= 0)
					isg[u->args[k]] = G_STAT;
		} else {
			int g = dp_update_grad(f, u);
			if (g >= 0 && f->val[g].def >= 0)
				isg[g] = G_PARAM;
		}
	}
}

static int
by_def(const void *a, const void *b, void *f_)
{
	const Func *f = f_;
	int x = *(const int *)a, y = *(const int *)b, dx = f->val[x].def, dy = f->val[y].def;
	return dx != dy ? (dx > dy) - (dx < dy) : (x > y) - (x < y);
}

/* The param an update writes (its first operand), or -1 (a buffer's update: none). */
static int
update_param(const Func *f, const Op *u)
{
	return dp_update_grad(f, u) >= 0 && !writes_buffer(f, u) && f->val[u->args[0]].decl >= 0 ?
	       u->args[0] : -1;
}

/* The state of param p (decl index) as sharded (1) or whole (0). */
static void
state_type(Module *m, int x, int ranks, int sharded)
{
	Decl *s = &m->decl[x];
	const Type *w = &m->decl[s->of].ty;

	s->ty = sharded ? (Type){ F32, { 1, { shard_len(shape_numel(&w->sh), ranks) } } } : *w;
	m->fwd->val[x].ty = s->ty;
	if (m->step)
		m->step->val[x].ty = s->ty;
}

static int
shardable(const Module *m, int x)
{
	const Decl *s = &m->decl[x];
	return s->role == R_STATE && s->of >= 0 && s->ty.dt == F32;
}

/* The bytes a tensor of type w saves on each rank as its shard. */
static double
shard_saves(const Type *w, int ranks)
{
	return (double)(type_bytes(w) - 4 * shard_len(shape_numel(&w->sh), ranks));
}

int
dp_shard_state(Module *m, int ranks, const uint8_t *sel)
{
	int n = 0;

	for (int d = 0; d < m->ndecl; d++)
		if (shardable(m, d)) {
			int on = !sel || sel[m->decl[d].of];
			state_type(m, d, ranks, on);
			n += on;
		}
	return n;
}

Func *
dp_step(const Func *f, int ranks, int64_t cap, int zero, const uint8_t *sel, int *nbuckets)
{
	int nv = f->nval, ng = 0, np, nb = 0, *grads, *bk, *close, *map, *red, *bval, *left, *gval, *sh;
	int64_t *start, *bn;
	uint8_t *isg = xcalloc(nv + 1, 1), *late = xcalloc(f->nop + 1, 1), *dep = xcalloc(nv + 1, 1);
	uint8_t *waited, *bs, *shg, *cls;
	int *vmean, *e2;        /* a batch variance's mean; its var + mean * mean in g */
	Func *g = func_new(f->mod, f->name);
	char nm[256];

	if (ranks < 2)
		die("dp_step over %d ranks", ranks);
	find_grads(f, isg);
	grads = xmalloc((nv + 1) * sizeof *grads);
	for (int v = 0; v < nv; v++)
		if (isg[v] == G_PARAM)
			grads[ng++] = v;
	qsort_r(grads, ng, sizeof *grads, by_def, (void *)f);
	np = ng;
	for (int v = 0; v < nv; v++)
		if (isg[v] == G_STAT)
			grads[ng++] = v;
	qsort_r(grads + np, ng - np, sizeof *grads, by_def, (void *)f);
	/* the gradient of a param (gval), and whether ZeRO shards that param (shg[gradient];
	 * sel: which params; NULL: all) */
	gval = xmalloc((nv + 1) * sizeof *gval);
	shg = xcalloc(nv + 1, 1);
	for (int v = 0; v < nv; v++)
		gval[v] = -1;
	for (int i = 0; i < f->nop; i++) {
		int p = update_param(f, &f->op[i]);
		if (p >= 0) {
			gval[p] = dp_update_grad(f, &f->op[i]);
			shg[gval[p]] = zero && (!sel || sel[p]);
		}
	}
	cls = xmalloc((ng + 1) * sizeof *cls);
	for (int k = 0; k < ng; k++)
		cls[k] = k >= np ? B_STAT : shg[grads[k]] ? B_SHARD : B_WHOLE;
	/* buckets in completion order, one open per class (bs[b]: B_WHOLE gradients, B_SHARD
	 * gradients of sharded params, B_STAT statistics, never sharded): each closes once it
	 * holds cap bytes; start[v] is where gradient v sits in its bucket (in a sharded one, in
	 * each rank's block: its shard) */
	bk = xmalloc((nv + 1) * sizeof *bk);
	start = xcalloc(nv + 1, sizeof *start);
	close = xmalloc((ng + 1) * sizeof *close);
	bn = xcalloc(ng + 1, sizeof *bn);
	bs = xcalloc(ng + 1, 1);
	for (int k = 0, cur[3] = { -1, -1, -1 }; k < ng; k++) {
		int v = grads[k], c = cls[k], z = c == B_SHARD ? ranks : 1, b, nx = k + 1;
		int64_t n = shape_numel(&f->val[v].ty.sh), e = z > 1 ? shard_len(n, ranks) : n;
		if (cur[c] < 0)
			bs[cur[c] = nb++] = c;
		b = cur[c];
		bk[v] = b;
		start[v] = bn[b];
		bn[b] += e;
		close[b] = f->val[v].def;
		while (nx < ng && cls[nx] != c)      /* the next gradient of its class */
			nx++;
		/* no bucket over the collectives' int count */
		if (bn[b] * 4 * z >= cap ||
		    (nx < ng && (bn[b] + shape_numel(&f->val[grads[nx]].ty.sh)) * z > 0x7fffffff))
			cur[c] = -1;
	}
	/* the ops that read a gradient, and everything after that depends on them, go last; so
	 * do the buffers' updates, which read reduced statistics */
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		for (int k = 0; k < o->nargs; k++)
			late[i] |= isg[o->args[k]] == G_PARAM || dep[o->args[k]] ||
			           (isg[o->args[k]] == G_STAT && writes_buffer(f, o));
		if (late[i] && o->res >= 0)
			dep[o->res] = 1;
	}
	map = xmalloc((nv + 1) * sizeof *map);
	red = xmalloc((nv + 1) * sizeof *red);
	bval = xmalloc((nb + 1) * sizeof *bval);
	waited = xcalloc(nb + 1, 1);
	left = xcalloc(nb + 1, sizeof *left);     /* ZeRO: updates of the bucket still to come */
	sh = xmalloc((nv + 1) * sizeof *sh);      /* ZeRO: a param's shard, as its update wrote it */
	vmean = xmalloc((nv + 1) * sizeof *vmean);
	e2 = xmalloc((nv + 1) * sizeof *e2);
	for (int v = 0; v < nv; v++)
		map[v] = red[v] = f->val[v].decl >= 0 ? v : -1, sh[v] = vmean[v] = e2[v] = -1;
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_BN_UPDATE && writes_buffer(f, &f->op[i]))
			vmean[f->op[i].args[3]] = f->op[i].args[2];
	for (int p = 0; p < nv; p++)
		if (gval[p] >= 0)
			left[bk[gval[p]]]++;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < f->nop; i++) {
			const Op *o = &f->op[i];
			int p = pass ? update_param(f, o) : -1, q;
			if (late[i] != pass)
				continue;
			if (pass) {
				/* the reduced gradients this op reads, brought in first */
				for (int k = 0; k < o->nargs; k++) {
					int v = o->args[k], b;
					Type t = f->val[v].ty;
					int64_t ia[MAXIA] = { 0 };
					if (!isg[v] || red[v] >= 0 || (isg[v] == G_STAT && !writes_buffer(f, o)))
						continue;
					b = bk[v];
					if (!waited[b]) {
						func_op(g, OP_WAIT, PH_MEM, &bval[b], 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
						waited[b] = 1;
					}
					ia[0] = start[v];
					ia[1] = zero == 1 && bs[b] == B_SHARD;
					if (bs[b] == B_SHARD)
						t = (Type){ F32, { 1, { shard_len(shape_numel(&t.sh), ranks) } } };
					snprintf(nm, sizeof nm, "%s.r", f->val[v].name);
					q = func_op(g, OP_UNBUCKET, PH_MEM, &bval[b], 1, ia, 0, NULL, &t, nm, (Loc){0, 0});
					red[v] = g->op[q].res;
					func_op(g, OP_WAIT, PH_MEM, &red[v], 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
				}
				for (int k = 0; k < o->nargs; k++)
					if (isg[o->args[k]] == G_PARAM)
						map[o->args[k]] = red[o->args[k]];
				if (p >= 0 && shg[gval[p]]) {
					/* the update writes this rank's shard of the param */
					int64_t ia[MAXIA] = { ranks };
					Type t;
					snprintf(nm, sizeof nm, "%s.shard", f->val[p].name);
					t = (Type){ F32, { 1, { shard_len(shape_numel(&f->val[p].ty.sh), ranks) } } };
					q = func_op(g, OP_SHARD, PH_UPD, &p, 1, ia, 0, NULL, &t, nm, o->loc);
					sh[p] = map[p] = g->op[q].res;
				}
			}
			if (pass && writes_buffer(f, o)) {
				/* this update alone reads the reduced statistics: a variance from the
				 * whole batch's mean of squares, over the whole batch's count */
				int was[o->nargs ? o->nargs : 1];
				for (int k = 0; k < o->nargs; k++) {
					int v = o->args[k];
					was[k] = map[v];
					if (isg[v] != G_STAT)
						continue;
					map[v] = red[v];
					if (vmean[v] >= 0) {
						int a[2] = { red[vmean[v]], red[vmean[v]] }, b[2] = { red[v], -1 };
						Type t = f->val[v].ty;
						snprintf(nm, sizeof nm, "%s.m2", f->val[v].name);
						q = func_op(g, OP_MUL, PH_UPD, a, 2, NULL, 0, NULL, &t, nm, o->loc);
						b[1] = g->op[q].res;
						snprintf(nm, sizeof nm, "%s.all", f->val[v].name);
						q = func_op(g, OP_SUB, PH_UPD, b, 2, NULL, 0, NULL, &t, nm, o->loc);
						map[v] = g->op[q].res;
					}
				}
				q = copy_op(g, f, o, map, -1);
				if (o->kind == OP_BN_UPDATE)
					g->op[q].ia[0] *= ranks;
				for (int k = o->nargs - 1; k >= 0; k--)
					map[o->args[k]] = was[k];
				continue;
			}
			copy_op(g, f, o, map, -1);
			if (p >= 0 && shg[gval[p]]) {
				/* the bucket's last update: its params' shards gathered, the params written */
				int b = bk[gval[p]], args[ng ? ng : 1], na = 0, pv[ng ? ng : 1];
				int64_t ia[MAXIA] = { ranks }, at = 0;
				Type t;
				map[p] = p;
				if (--left[b])
					continue;
				for (int k = 0; k < ng; k++)
					for (int d = 0; d < f->mod->ndecl; d++)
						if (gval[d] == grads[k] && bk[grads[k]] == b) {
							args[na] = sh[d];
							pv[na++] = d;
						}
				t = (Type){ F32, { 1, { 0 } } };
				for (int k = 0; k < na; k++)
					t.sh.d[0] += shape_numel(&g->val[args[k]].ty.sh);
				t.sh.d[0] *= ranks;
				snprintf(nm, sizeof nm, "params.%d", b);
				q = func_op(g, OP_ALLGATHER, PH_MEM, args, na, ia, 0, NULL, &t, nm, (Loc){0, 0});
				q = g->op[q].res;
				func_op(g, OP_WAIT, PH_MEM, &q, 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
				for (int k = 0; k < na; k++) {
					int a[2] = { pv[k], q };
					int64_t ua[MAXIA] = { ranks, at };
					func_op(g, OP_UNSHARD, PH_UPD, a, 2, ua, 0, NULL, NULL, NULL, (Loc){0, 0});
					at += shape_numel(&g->val[args[k]].ty.sh);
				}
				continue;
			}
			if (pass)
				continue;
			/* a batch variance goes into its bucket as var + mean * mean */
			if (o->res >= 0 && vmean[o->res] >= 0 && map[vmean[o->res]] >= 0) {
				int v = o->res, a[2] = { map[vmean[v]], map[vmean[v]] }, b[2] = { map[v], -1 };
				Type t = f->val[v].ty;
				snprintf(nm, sizeof nm, "%s.sq", f->val[v].name);
				q = func_op(g, OP_MUL, o->phase, a, 2, NULL, 0, NULL, &t, nm, o->loc);
				b[1] = g->op[q].res;
				snprintf(nm, sizeof nm, "%s.e2", f->val[v].name);
				q = func_op(g, OP_ADD, o->phase, b, 2, NULL, 0, NULL, &t, nm, o->loc);
				e2[v] = g->op[q].res;
			}
			/* buckets whose last gradient this op made */
			for (int b = 0; b < nb; b++) {
				int args[ng ? ng : 1], na = 0, z = bs[b] == B_SHARD ? zero : 0;
				int64_t ia[MAXIA] = { ranks, z == 1 };
				double fa[MAXFA] = { 1.0 / ranks };
				Type t;
				if (close[b] != i)
					continue;
				for (int k = 0; k < ng; k++)
					if (bk[grads[k]] == b)
						args[na++] = e2[grads[k]] >= 0 ? e2[grads[k]] : map[grads[k]];
				t = (Type){ F32, { 1, { bn[b] * (z ? ranks : 1) } } };
				snprintf(nm, sizeof nm, bs[b] == B_STAT ? "stats.%d" : "bucket.%d", b);
				q = func_op(g, z == 2 ? OP_REDSCAT : OP_ALLREDUCE, PH_MEM, args, na, ia, 0, fa, &t, nm,
				            (Loc){0, 0});
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
	free(bs);
	free(shg);
	free(cls);
	free(vmean);
	free(e2);
	free(left);
	free(gval);
	free(sh);
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
probe(Module *m, Func *g, const PlanOpts *po, double *base)
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
	o.probe = 1;
	m->step = func_rebuild(g, NULL, NULL);
	t = plan_step(m, &o, &pr) ? -1 : pr.time;
	if (base)
		*base = pr.base_time;
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

/* A candidate step of dp_choose: its figures, peak, and planned time. */
typedef struct Cand {
	Func *e;
	DpReport x;
	int64_t peak;
	int g;               /* the early order: its step as scheduled (a candidate), -1 */
	double t, base;      /* planned (-1: does not fit; -2: not planned; -3: not weighed), and
	                      * its unplanned time as the planner saw it */
} Cand;

typedef struct ProbeCtx {
	Module *m;
	const PlanOpts *po;
	const Cand *cd;
	const int *which;
} ProbeCtx;

static void
probe_one(int i, void *ctx, void *out)
{
	ProbeCtx *p = ctx;
	double *r = out;

	r[0] = probe(p->m, p->cd[p->which[i]].e, p->po, &r[1]);
}

/* ZeRO under a budget, param by param: sharding a param saves, on every rank, all but its
 * share of its optimizer state (and with stage 2 of its gradient), and costs its shard and
 * unshard copies less what its update saves on a shard. Into sv[p] and dt[p] (decl-indexed)
 * for each param with a gradient (upd[p] >= 0: the seconds of p's whole update, measured on
 * the step before sharding); g: the step with every param sharded. */
static void
shard_costs(const Module *m, const Func *g, const Target *tg, int ranks, int zero, const double *upd,
            double *dt, double *sv)
{
	int nd = m->ndecl;
	int *of = xmalloc((g->nval + 1) * sizeof *of);

	memset(dt, 0, (nd + 1) * sizeof *dt);
	memset(sv, 0, (nd + 1) * sizeof *sv);
	for (int v = 0; v < g->nval; v++)
		of[v] = -1;
	for (int i = 0; i < g->nop; i++) {
		const Op *o = &g->op[i];
		int p = -1;
		if (o->kind == OP_SHARD) {
			p = o->args[0];
			of[o->res] = p;
		} else if (o->kind == OP_UNSHARD)
			p = o->args[0];
		else if (opinfo[o->kind].flags & F_MUT && o->nargs > 0 && of[o->args[0]] >= 0)
			p = of[o->args[0]];     /* the update of a shard */
		if (p >= 0 && p < nd)
			dt[p] += op_time(tg, g, o);
	}
	for (int d = 0; d < nd; d++)
		if (shardable(m, d))
			sv[m->decl[d].of] += shard_saves(&m->decl[m->decl[d].of].ty, ranks);
	for (int d = 0; d < nd; d++) {
		if (upd[d] < 0)
			continue;
		dt[d] -= upd[d];
		if (zero == 2)
			sv[d] += shard_saves(&m->decl[d].ty, ranks);
	}
	free(of);
}

/* The params with a gradient into ord, cheapest seconds per byte saved first (dt, sv:
 * shard_costs'; those whose sharding costs nothing lead), ties in declaration order; *nfree:
 * how many lead. Their count. */
static int
shard_order(const Module *m, const double *upd, const double *dt, const double *sv, int *ord, int *nfree)
{
	int n = 0;

	for (int d = 0; d < m->ndecl; d++) {
		double k;
		int j;
		if (upd[d] < 0)
			continue;
		/* insertion by seconds per byte; nothing saved goes last */
		k = sv[d] > 0 ? dt[d] / sv[d] : 1e300;
		for (j = n++; j > 0; j--) {
			int q = ord[j - 1];
			if ((sv[q] > 0 ? dt[q] / sv[q] : 1e300) <= k)
				break;
			ord[j] = q;
		}
		ord[j] = d;
	}
	*nfree = 0;
	while (*nfree < n && sv[ord[*nfree]] > 0 && dt[ord[*nfree]] <= 0)
		(*nfree)++;
	return n;
}

/* s (decl-indexed marks): the first k params of ord. */
static void
mark_prefix(const Module *m, const int *ord, int k, uint8_t *s)
{
	memset(s, 0, m->ndecl + 1);
	for (int i = 0; i < k; i++)
		s[ord[i]] = 1;
}

/* The step with the params of s sharded (decl-indexed marks; m's state typed so), on the
 * buckets and order of *br; its figures in *x. */
static Func *
shard_step(Module *m, const uint8_t *s, int zero, const DpReport *br, const Target *tg, const char *sched,
           DpReport *x)
{
	Func *e;

	dp_shard_state(m, br->ranks, s);
	*x = *br;
	x->nsharded = 0;
	for (int d = 0; d < m->ndecl; d++)
		x->nsharded += s[d] != 0;
	e = dp_step(m->step, br->ranks, br->cap, zero, s, &x->nbuckets);
	schedule(e, tg, sched);
	if (br->early)
		plan_hoist_grads(e);
	measure(e, tg, x);
	return e;
}

/* ZeRO weighed with the placement (--zero=auto under a budget): one list of steps up each
 * param's chain of (sharded or not, level) points, place.c's hull: sharding (sv, dt above),
 * its shard's state in host memory as well, or the param left whole and its group at one of
 * the placement's levels (measured on the step with no param sharded); the prefixes walked as
 * the placement search walks its own (place_walk), each a plan of the step with its shards,
 * the levels given (PlanOpts.levels). */
typedef struct Joint {
	Module *m;
	const PlanOpts *po;
	const DpReport *br;
	const Target *tg;
	const char *sched;
	int zero;
	int *par;              /* a chain's param (decl) */
	PlaceUp *up;           /* op: the index into par */
	int nup;
	uint8_t *sel, *lvl;    /* prefix k's: decl-indexed */
} Joint;

/* The update op of decl p's group in g: p's update, or the update of p's shard. */
static int
group_op(const Func *g, int p)
{
	int sh = -1;

	for (int i = 0; i < g->nop; i++) {
		const Op *o = &g->op[i];
		if (o->kind == OP_SHARD && o->args[0] == p)
			sh = o->res;
		else if (opinfo[o->kind].flags & F_MUT && o->kind != OP_UNSHARD && o->nargs > 0 &&
		         (o->args[0] == p || (sh >= 0 && o->args[0] == sh)) && dp_update_grad(g, o) >= 0)
			return i;
	}
	return -1;
}

static void
joint_list(Joint *j, const Func *s0, const Func *s1, const double *dt, const double *sv, const double *upd)
{
	const Module *m = j->m;
	Cost c0, c1;
	int np = 0;

	cost_fill(&c0, s0, j->tg);
	cost_fill(&c1, s1, j->tg);
	j->par = xmalloc((m->ndecl + 1) * sizeof *j->par);
	/* a param's points: its shard, with each level of the shard's update, and each level of
	 * its own; its chain at most one step a point and the tail */
	j->up = xcalloc((size_t)(m->ndecl + 1) * (2 * NHOME + 1), sizeof *j->up);
	for (int d = 0; d < m->ndecl; d++) {
		PlacePt pt[2 * NHOME];
		int n = 0, tail = -1, u0, u1;
		if (upd[d] < 0)
			continue;
		if (sv[d] > 0) {
			pt[n++] = (PlacePt){ HOME_DEV, 1, dt[d], (int64_t)sv[d] };
			if (!j->po->nooffload && (u1 = group_op(s1, d)) >= 0) {
				PlacePt q[NHOME];
				int nq = place_points(s1, j->tg, u1, c1.total - c1.end[u1], q);
				for (int k = 0; k < nq; k++)
					pt[n++] = (PlacePt){ q[k].lvl, 1, dt[d] + q[k].cost, (int64_t)sv[d] + q[k].bytes };
			}
		}
		if (!j->po->nooffload && (u0 = group_op(s0, d)) >= 0) {
			int n0 = n;
			n += place_points(s0, j->tg, u0, c0.total - c0.end[u0], pt + n);
			for (int k = n0; k < n; k++)
				if (pt[k].lvl == HOME_HOSTUPD)
					tail = k;
		}
		j->par[np] = d;
		j->nup += place_chain(pt, n, tail, np, j->up + j->nup);
		np++;
	}
	cost_free(&c0);
	cost_free(&c1);
	place_sort(j->up, j->nup);
}

/* Prefix k's shards and levels into j->sel and j->lvl. */
static void
joint_prefix(Joint *j, int k)
{
	const Module *m = j->m;

	memset(j->sel, 0, m->ndecl + 1);
	memset(j->lvl, 0, m->ndecl + 1);
	for (int i = 0; i < k; i++) {
		const PlaceUp *u = &j->up[i];
		int p = j->par[u->op];
		j->sel[p] = (uint8_t)u->shard;
		/* a group's key (home_key): the param, or for a shard's update its state */
		j->lvl[p] = u->shard ? 0 : (uint8_t)u->lvl;
		for (int d = 0; d < m->ndecl; d++)
			if (shardable(m, d) && m->decl[d].of == p)
				j->lvl[d] = u->shard ? (uint8_t)u->lvl : 0;
	}
}

static void
joint_eval(void *ctx, int k, double bound, PlaceVal *v)
{
	Joint *j = ctx;
	PlanOpts q = *j->po;
	DpReport x;
	Func *e;
	double t;

	(void)bound;
	joint_prefix(j, k);
	e = shard_step(j->m, j->sel, j->zero, j->br, j->tg, j->sched, &x);
	q.levels = j->lvl;
	t = probe(j->m, e, &q, NULL);
	func_free(e);
	v->time = t < 0 ? INFINITY : t;
	v->floor = -INFINITY;          /* bound unheeded */
	v->stime = 0;
}

int
dp_choose(Module *m, int ranks, int64_t cap, int zero, int each, const DpReport *take, const Target *tg,
          const char *sched, const PlanOpts *po, DpReport *r, uint8_t **levels)
{
	Func *f = m->step, *best = NULL;
	int64_t tot = 0, small = 0, c, bpeak = 0;
	double bt = 0;
	DpReport br = {0};
	uint8_t *isg;
	int fits = 0, nc = 0;
	Cand *cd = NULL;             /* the candidate steps */
	double *upd;
	int nooff = po && po->nooffload;

	if (!f)
		die("dp_choose of a model without a step");
	if (levels)
		*levels = NULL;
	isg = xcalloc(f->nval + 1, 1);
	find_grads(f, isg);
	for (int v = 0; v < f->nval; v++)
		if (isg[v] == G_PARAM) {
			int64_t b = type_bytes(&f->val[v].ty);
			tot += b;
			small = !small || b < small ? b : small;
		}
	free(isg);
	if (!tot)
		return -1;
	/* a param's whole update, before its state is sharded */
	upd = xmalloc((m->ndecl + 1) * sizeof *upd);
	for (int d = 0; d < m->ndecl; d++)
		upd[d] = -1;
	for (int i = 0; i < f->nop; i++) {
		int p = update_param(f, &f->op[i]);
		if (p >= 0)
			upd[p] = op_time(tg, f, &f->op[i]);
	}
	if (zero)
		dp_shard_state(m, ranks, NULL);
	/* The candidates: the given cap, or one bucket, then halving down to one per gradient.
	 * Without a budget the fastest step; with one the fastest once planned (tso), and if
	 * none fits the one of the least live bytes, whose plan the caller's error explains.
	 * take: that choice, made before on the same step, made again without a plan. */
	if (take) {
		cap = take->cap;
		po = NULL;
	}
	for (c = cap > 0 ? cap : tot;; c /= 2) {
		DpReport x = { .ranks = ranks, .zero = zero, .cap = c };
		Func *g = dp_step(f, ranks, c, zero, NULL, &x.nbuckets), *h;
		int nb = x.nbuckets, gi = -1;

		schedule(g, tg, sched);
		/* as scheduled, and with the gradients and their collectives made as early as they
		 * can be (plan_hoist_grads): the buckets then go out during the backward */
		h = func_rebuild(g, NULL, NULL);
		if (plan_hoist_grads(h) == 0) {
			func_free(h);
			h = NULL;
		}
		for (int k = 0; k < 2; k++) {
			Func *e = k ? h : g;
			Cand *d;
			Live l;
			int dup = 0;
			if (!e || (take && k != take->early)) {
				func_free(e);
				continue;
			}
			/* a step made before (halving the cap often leaves the buckets as they were)
			 * plans the same, and would not be taken over the first */
			for (int j = 0; j < nc && !dup; j++)
				dup = func_same(e, cd[j].e);
			if (dup) {
				func_free(e);
				continue;
			}
			cd = xrealloc(cd, (nc + 1) * sizeof *cd);
			d = &cd[nc];
			d->e = e;
			d->x = x;
			d->x.early = k;
			d->g = k ? gi : -1;
			d->t = -2;
			measure(e, tg, &d->x);
			live_fill(&l, e);
			d->peak = l.peak;
			live_free(&l);
			if (!k)
				gi = nc;
			nc++;
		}
		if (cap > 0 || c < small || nb == 0)
			break;
	}
	/* Under a budget each candidate is planned (side by side: fork.c), those as scheduled
	 * first. The planner weighs a step as scheduled in both orders unless its plan costs
	 * nothing over the unplanned step: only then is the early order planned on its own
	 * (where the other did not fit, neither does it) */
	for (int k = 0; k < 2; k++) {
		int n = 0, *which = xmalloc((nc + 1) * sizeof *which);
		ProbeCtx pc = { m, po, cd, which };
		double (*res)[2];
		for (int j = 0; j < nc; j++) {
			Cand *d = &cd[j];
			if (d->x.early != k)
				continue;
			if (!po || cap > 0)
				d->t = d->x.modeled_s;
			else if (d->g >= 0 && cd[d->g].t >= 0 && cd[d->g].t > cd[d->g].base)
				d->t = -3;
			else if (d->g >= 0 && cd[d->g].t == -1)
				d->t = -1;
			else
				which[n++] = j;
		}
		res = xmalloc((n + 1) * sizeof *res);
		par_map(n, po ? po->jobs : 1, probe_one, &pc, res, sizeof *res);
		for (int j = 0; j < n; j++) {
			cd[which[j]].t = res[j][0];
			cd[which[j]].base = res[j][1];
		}
		free(res);
		free(which);
	}
	for (int j = 0; j < nc; j++) {
		const Cand *d = &cd[j];
		double t = d->t;
		if (t < -2)
			continue;       /* not weighed: its plan would not be the faster */
		/* on a tie the fewest buckets (the first seen), as scheduled */
		if (!best || (t >= 0 && (!fits || t < bt * (1 - 1e-9))) || (t < 0 && !fits && d->peak < bpeak)) {
			best = d->e;
			br = d->x;
			bt = t;
			bpeak = d->peak;
			fits |= t >= 0;
		}
	}
	for (int j = 0; j < nc; j++)
		if (cd[j].e != best)
			func_free(cd[j].e);
	free(cd);
	if (zero) {
		br.nparams = 0;
		for (int d = 0; d < m->ndecl; d++)
			br.nparams += upd[d] >= 0;
		br.nsharded = br.nparams;
	}
	/* ZeRO param by param (each), under a budget: the fewest params sharded that fit, by four
	 * steps of bisection over the order of seconds per byte saved (shard_order), on the
	 * buckets and order taken above (each try is a plan, the planner's search placing), and
	 * the shards weighed with the placement in one list (Joint, its levels given); the
	 * fastest once planned of those and every param sharded. take: the bisection's prefix
	 * (nsharded) or the list's (joint) made again */
	if (zero && br.nparams > 1 &&
	    (take ? take->nsharded < br.nparams || take->joint > 0 : each && po && cap <= 0 && fits)) {
		double *dt = xmalloc((m->ndecl + 1) * sizeof *dt), *sv = xmalloc((m->ndecl + 1) * sizeof *sv);
		int *ord = xmalloc((m->ndecl + 1) * sizeof *ord), nfree, n, lo, hi, kb = -1;
		uint8_t *s = xcalloc(m->ndecl + 1, 1), *sel = xmalloc(m->ndecl + 1);
		PlanOpts q = po ? *po : (PlanOpts){0};
		DpReport all = br, x;
		Joint j = { m, &q, &all, tg, sched, zero, NULL, NULL, 0, NULL, NULL };
		Func *s0;
		q.nooffload = nooff;
		shard_costs(m, best, tg, ranks, zero, upd, dt, sv);
		n = shard_order(m, upd, dt, sv, ord, &nfree);
		memset(sel, 1, m->ndecl + 1);
		if (!take || take->joint > 0) {
			s0 = shard_step(m, s, zero, &all, tg, sched, &x);
			joint_list(&j, s0, best, dt, sv, upd);
			func_free(s0);
			j.sel = xcalloc(m->ndecl + 1, 1);
			j.lvl = xcalloc(m->ndecl + 1, 1);
		}
		if (take && take->joint > 0) {
			if ((kb = take->joint - 1) > j.nup)
				die("ZeRO's list made again has %d steps, fewer than the %d taken", j.nup, kb);
		} else if (take) {
			mark_prefix(m, ord, take->nsharded, sel);
			func_free(best);
			best = shard_step(m, sel, zero, &all, tg, sched, &br);
		}
		lo = nfree;
		hi = n;
		for (int k = 0; !take && k < 4 && lo < hi; k++) {
			int mid = lo + (hi - lo) / 2;
			Func *e;
			double t;
			mark_prefix(m, ord, mid, s);
			e = shard_step(m, s, zero, &all, tg, sched, &x);
			t = probe(m, e, po, NULL);
			if (t >= 0 && t < bt * (1 - 1e-9)) {
				func_free(best);
				best = e;
				br = x;
				bt = t;
				memcpy(sel, s, m->ndecl + 1);
			} else
				func_free(e);
			if (t >= 0)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (!take && j.nup) {
			double *time = xmalloc((j.nup + 1) * sizeof *time);
			kb = place_walk(j.nup, INFINITY, joint_eval, &j, j.po->jobs, time, NULL);
			if (kb >= 0 && !(time[kb] < bt * (1 - 1e-9)))
				kb = -1;
			free(time);
		}
		if (kb >= 0) {
			joint_prefix(&j, kb);
			func_free(best);
			best = shard_step(m, j.sel, zero, &all, tg, sched, &br);
			br.joint = kb + 1;
			if (levels) {
				*levels = j.lvl;
				j.lvl = NULL;
			}
		} else
			dp_shard_state(m, ranks, sel);
		free(j.sel);
		free(j.lvl);
		free(j.par);
		free(j.up);
		free(s);
		free(sel);
		free(ord);
		free(dt);
		free(sv);
	}
	func_adopt(f, best);        /* best's tables move into f; its struct stays in the arena */
	*r = br;
	free(upd);
	return 0;
}

void
dp_report_print(FILE *fp, const DpReport *r)
{
	fprintf(fp, "# data-parallel: ranks %d zero %d buckets %d bucket_bytes %lld collective_bytes %lld "
	        "network_ms %.6f exposed_ms %.6f hidden %.1f%%%s", r->ranks, r->zero, r->nbuckets,
	        (long long)r->cap, (long long)r->bytes, r->net_s * 1e3, r->exposed_s * 1e3,
	        r->net_s > 0 && r->exposed_s < r->net_s ? 100 * (1 - r->exposed_s / r->net_s) :
	        r->net_s > 0 ? 0.0 : 100.0, r->early ? " gradients early" : "");
	if (r->zero)
		fprintf(fp, " sharded %d of %d", r->nsharded, r->nparams);
	fputc('\n', fp);
}
