/* home.c: params and optimizer state that live in host memory: the step and the forward
 * rewritten for where each param's group lives.
 *
 * needs: a step in execution order (its updates hoisted); a level per update op (HOME_*:
 *        where its param and the optimizer state it writes live between steps, and where it
 *        runs), each one home_allowed permits; Decl.host set by home_mark (so the new
 *        functions' values mirror it).
 * fills: new functions (the caller installs them). In the step, for each update u:
 *        - a param in host memory (or a buffer, batch norm's running variance, for the ops other
 *          than its update) is fetched, `mem %w.in = swap_in %w`, early enough that the
 *          compute before its first reader covers the copy, and awaited right before it; every
 *          reader reads the fetch (the activation planner may drop it after the forward and
 *          fetch it again for the backward: plan.c counts a fetch as recomputable, remat.c
 *          turns its swap into a second fetch);
 *        - a device update of state in host memory: `mem %m.in = swap_in %m` early enough
 *          that the compute before u covers the copy, awaited right before u, u on %m.in;
 *        - after a device update, every operand it wrote that lives in host memory goes home,
 *          `mem %x.home = swap_home %x, %x.in`, awaited where the compute after u covers the
 *          copy (its bytes on the accelerator are freed there), or last;
 *        - an update on the host: its gradient goes out, `mem %g.host = swap_out %g`, u runs
 *          on the param and state in their homes and %g.host (queued behind the copies, so it
 *          needs no wait), and the wait on %g.host frees the gradient where the compute after
 *          covers the copy; Adam's step counter goes out once, right after tick.
 *        In the forward, every param and buffer in host memory is fetched before its first
 *        reader.
 *        Nothing else moves; every update computes the same bits where it runs. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

int
home_candidate(const Func *f, int d)
{
	const Module *m = f->mod;
	int writer = -1;

	if (m->decl[d].role == R_INPUT || type_bytes(&m->decl[d].ty) == 0)
		return 0;
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		for (int k = 0; k < o->nargs; k++) {
			if (o->args[k] != d)
				continue;
			if (!(opinfo[o->kind].flags & F_MUT) || o->kind == OP_TICK || k >= opinfo[o->kind].nwritten) {
				/* state is read by its update only; a param by anything */
				if (m->decl[d].role == R_STATE)
					return 0;
				continue;
			}
			if (writer >= 0)
				return 0;
			writer = i;
		}
	}
	return writer >= 0;
}

int
home_allowed(const Func *f, const Target *tg, int u)
{
	const Op *o = &f->op[u];
	int nw = opinfo[o->kind].nwritten, st = nw > 1, par, mask = 1 << HOME_DEV;

	/* ZeRO's unshard writes the param from the gathered shards: not an update whose group
	 * moves (the shard's update is, its state alone: its param is a shard of one) */
	if (!tg->hoststate || tg->copybw <= 0 || !(opinfo[o->kind].flags & F_MUT) || o->kind == OP_TICK ||
	    o->kind == OP_UNSHARD)
		return mask;
	par = f->val[o->args[0]].decl >= 0 && f->mod->decl[o->args[0]].role == R_PARAM &&
	      !f->mod->decl[o->args[0]].host && home_candidate(f, o->args[0]);
	/* optimizer state only: a buffer (batch norm's running statistics) is read by the forward
	 * too, which has no copies of state to read */
	for (int k = 1; k < nw; k++)
		if (f->val[o->args[k]].decl < 0 || f->mod->decl[o->args[k]].role != R_STATE ||
		    f->mod->decl[o->args[k]].host || !home_candidate(f, o->args[k]))
			st = 0;
	if (st)
		mask |= 1 << HOME_STATE;
	if (par)
		mask |= 1 << HOME_PARAM;
	if (par && st)
		mask |= 1 << HOME_BOTH;
	if (par && (st || nw == 1) && tg->hostflops > 0 && tg->hostbw > 0)
		mask |= 1 << HOME_HOSTUPD;
	return mask;
}

int
home_key(const Func *f, int u)
{
	const Op *o = &f->op[u];

	if (!(opinfo[o->kind].flags & F_MUT))
		return -1;
	for (int k = 0; k < opinfo[o->kind].nwritten; k++)
		if (f->val[o->args[k]].decl >= 0)
			return f->val[o->args[k]].decl;
	return -1;
}

static int
moves_param(int l)
{
	return l == HOME_PARAM || l == HOME_BOTH || l == HOME_HOSTUPD;
}

static int
moves_state(int l)
{
	return l == HOME_STATE || l == HOME_BOTH || l == HOME_HOSTUPD;
}

int
home_mark(Module *m, const Func *f, const uint8_t *lvl, int on)
{
	int n = 0;

	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		if (!lvl[i])
			continue;
		for (int k = 0; k < opinfo[o->kind].nwritten; k++)
			if (k ? moves_state(lvl[i]) : moves_param(lvl[i])) {
				m->decl[o->args[k]].host = (uint8_t)on;
				n++;
			}
	}
	return n;
}

/* Is op o's operand k a decl living in host memory? */
static int
hostdecl(const Func *f, const Op *o, int k)
{
	int v = o->args[k];
	return f->val[v].decl >= 0 && f->mod->decl[v].host;
}

/* Does op o read its operand k, a decl in host memory, through a fetch: a param, or a buffer
 * that an op other than its update reads (batch norm's running statistics, in the forward)?
 * Otherwise it is state or a buffer that an update copies in and home. */
static int
fetched(const Func *f, const Op *o, int k)
{
	Role r = f->mod->decl[o->args[k]].role;

	return r == R_PARAM || (r == R_BUFFER && !((opinfo[o->kind].flags & F_MUT) &&
	                                           k < opinfo[o->kind].nwritten));
}

static double
copy_s(const Target *tg, const Func *f, int v)
{
	return tg->copylat + (double)type_bytes(&f->val[v].ty) / tg->copybw;
}

/* The op before which a copy of `need` seconds starts so that the compute of the ops before
 * op `use` covers it. */
static int
early(const double *t, int use, double need)
{
	double c = 0;
	int j;

	for (j = use; j > 0 && c < need; j--)
		c += t[j - 1];
	return j;
}

/* The op after which the wait on a copy of `need` seconds issued after op i goes: where the
 * compute after i covers it, or the last op. */
static int
late(const double *t, int n, int i, double need)
{
	double c = 0;
	int j;

	for (j = i + 1; j < n && c < need; j++)
		c += t[j];
	return j - 1 > i ? j - 1 : i;
}

/* The fetches of a function: for every param in host memory that a device op reads (not its
 * update on the host), the first op reading it (first[d], -1: none) and the op before which
 * its fetch starts (at[d]): early enough for the compute before to cover the copy, but not
 * before the previous fetch's first reader, so that at most one fetch is held ahead of the
 * compute (where the compute is short, every fetch would otherwise start at op 0). */
static void
fetches(const Func *f, const double *t, const Target *tg, const uint8_t *lvl, int *first, int *at)
{
	const Module *m = f->mod;
	int prev = 0;

	for (int d = 0; d < m->ndecl; d++)
		first[d] = at[d] = -1;
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		if (lvl && lvl[i] == HOME_HOSTUPD)
			continue;
		for (int k = 0; k < o->nargs; k++) {
			int d = o->args[k];
			if (!hostdecl(f, o, k) || first[d] >= 0 || !fetched(f, o, k))
				continue;
			first[d] = i;
			at[d] = early(t, i, copy_s(tg, f, d));
			if (at[d] < prev)
				at[d] = prev;
			prev = i;
		}
	}
}

/* The instance a device op reads of operand k: a fetched param, a state's own copy. */
static int
instance(const Func *f, const Op *o, int k, const int *cur, const int *inst, const int *copy)
{
	int v = o->args[k];

	if (!hostdecl(f, o, k))
		return cur[v];
	return fetched(f, o, k) ? inst[v] : copy[v];
}

static int
mem(Func *g, Opk k, const int *a, int na, const char *base, const char *suffix, Phase ph)
{
	char nm[256];
	Type t = g->val[a[na - 1]].ty;
	int i;

	snprintf(nm, sizeof nm, "%s%s", base, suffix);
	i = func_op(g, k, ph, a, na, NULL, 0, NULL, &t, nm, (Loc){0, 0});
	return g->op[i].res;
}

static void
wait(Func *g, int v)
{
	func_op(g, OP_WAIT, PH_MEM, &v, 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
}

/* The rewrite of f (step or forward) for the Decl.host marks and, in a step, the levels. */
static Func *
rewrite(const Func *f, const Target *tg, const uint8_t *lvl, int *map)
{
	const Module *m = f->mod;
	Func *g = func_new(f->mod, f->name);
	int n = f->nop, th = -1, anyadam = 0;
	int *cur = xmalloc((f->nval + 1) * sizeof *cur), *inst = xmalloc((m->ndecl + 1) * sizeof *inst);
	int *first = xmalloc((m->ndecl + 1) * sizeof *first), *at = xmalloc((m->ndecl + 1) * sizeof *at);
	int *inat = xmalloc((n + 1) * sizeof *inat), *wat = xmalloc((n + 1) * sizeof *wat);
	int *copy = xcalloc(f->nval + 1, sizeof *copy), *out = xmalloc((n + 1) * 8 * sizeof *out);
	int *nout = xcalloc(n + 1, sizeof *nout);
	double *t = xmalloc((n + 1) * sizeof *t);

	for (int i = 0; i < n; i++)
		t[i] = op_time(tg, f, &f->op[i]);
	fetches(f, t, tg, lvl, first, at);
	/* Where each device update's state copies come in (not before the update before it, as
	 * for fetches), where each update's copies out are awaited (-1: none). */
	for (int i = 0, prev = 0; i < n; i++) {
		const Op *o = &f->op[i];
		int nw = opinfo[o->kind].nwritten;
		double need = 0, back = 0;
		inat[i] = wat[i] = -1;
		if (!lvl || !lvl[i])
			continue;
		if (lvl[i] == HOME_HOSTUPD) {
			wat[i] = late(t, n, i, copy_s(tg, f, o->args[nw]));
			anyadam |= o->kind == OP_ADAM || o->kind == OP_ADAMW;
			continue;
		}
		for (int k = 0; k < nw; k++)
			if (hostdecl(f, o, k)) {
				if (k)
					need += copy_s(tg, f, o->args[k]);
				back += copy_s(tg, f, o->args[k]);
			}
		if (need > 0) {
			inat[i] = early(t, i, need);
			if (inat[i] < prev)
				inat[i] = prev;
			prev = i;
		}
		if (back > 0)
			wat[i] = late(t, n, i, back);
	}
	/* and not after the next update that sends copies out: at most one is held waiting for
	 * its copy (where the compute is short, every wait would otherwise be the last op) */
	for (int i = n - 1, next = -1; i >= 0; i--)
		if (wat[i] >= 0) {
			if (next >= 0 && wat[i] > next)
				wat[i] = next;
			next = i;
		}
	for (int v = 0; v < f->nval; v++)
		cur[v] = f->val[v].decl >= 0 ? v : -1;
	for (int d = 0; d < m->ndecl; d++)
		inst[d] = -1;
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		int a[o->nargs ? o->nargs : 1], k, nw = opinfo[o->kind].nwritten;
		int host = lvl && lvl[i] == HOME_HOSTUPD;
		Type ty = {0};

		/* fetches of params that start here, then the state copies for updates at or after i */
		for (int d = 0; d < m->ndecl; d++)
			if (at[d] == i)
				inst[d] = mem(g, OP_SWAPIN, &d, 1, m->decl[d].name, ".in", PH_MEM);
		for (int u = i; lvl && u < n; u++) {
			const Op *q = &f->op[u];
			if (inat[u] != i)
				continue;
			for (int s = 1; s < opinfo[q->kind].nwritten; s++)
				if (hostdecl(f, q, s))
					copy[q->args[s]] = mem(g, OP_SWAPIN, &q->args[s], 1, m->decl[q->args[s]].name, ".in",
					                       PH_MEM);
		}
		/* the copies this op reads, awaited */
		for (int d = 0; d < m->ndecl; d++)
			if (first[d] == i)
				wait(g, inst[d]);
		for (k = 1; !host && k < nw; k++)
			if (hostdecl(f, o, k))
				wait(g, copy[o->args[k]]);
		for (int q = 0; q < o->nargs; q++)
			if ((a[q] = host && q < nw ? o->args[q] : instance(f, o, q, cur, inst, copy)) < 0)
				die("home: %%%s has no instance", f->val[o->args[q]].name);
		if (host) {
			/* the gradient (and Adam's counter) in host memory */
			int gh = mem(g, OP_SWAPOUT, &a[nw], 1, f->val[o->args[nw]].name, ".host", PH_MEM);
			a[nw] = gh;
			if ((o->kind == OP_ADAM || o->kind == OP_ADAMW) && (a[4] = th) < 0)
				die("home: adam_update on the host before tick");
			out[8 * i + nout[i]++] = gh;
		}
		if (o->res >= 0)
			ty = f->val[o->res].ty;
		k = func_op(g, o->kind, o->phase, a, o->nargs, o->ia, o->nia, o->fa, &ty,
		            o->res >= 0 ? f->val[o->res].name : NULL, o->loc);
		if (map)
			map[i] = k;
		g->op[k].of = o->of >= 0 ? cur[o->of] : -1;
		if (o->res >= 0)
			cur[o->res] = g->op[k].res;
		if (o->kind == OP_TICK && anyadam)
			th = mem(g, OP_SWAPOUT, &a[0], 1, f->val[o->args[0]].name, ".host", PH_MEM);
		/* after a device update, what it wrote goes home */
		for (k = 0; !host && (opinfo[o->kind].flags & F_MUT) && k < nw; k++)
			if (hostdecl(f, o, k)) {
				int h2[2] = { o->args[k], a[k] };
				out[8 * i + nout[i]++] = mem(g, OP_SWAPHOME, h2, 2, m->decl[o->args[k]].name, ".home",
				                             PH_MEM);
			}
		/* waits on the copies out that end here */
		for (int u = 0; u <= i; u++)
			if (wat[u] == i)
				for (int c = 0; c < nout[u]; c++)
					wait(g, out[8 * u + c]);
	}
	for (int k = 0; k < f->nout; k++)
		func_output(g, f->outname[k], cur[f->out[k]]);
	g->loss = f->loss >= 0 ? cur[f->loss] : -1;
	free(cur);
	free(inst);
	free(first);
	free(at);
	free(inat);
	free(wat);
	free(copy);
	free(out);
	free(nout);
	free(t);
	return g;
}

Func *
home_step(const Func *f, const Target *tg, const uint8_t *lvl, int *map)
{
	return rewrite(f, tg, lvl, map);
}

Func *
home_fwd(const Func *f, const Target *tg)
{
	return rewrite(f, tg, NULL, NULL);
}
