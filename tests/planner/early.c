/* early.c: early optimizer updates for SGD, momentum and Adam: under a budget each update
 * runs right after the last op it depends on, its gradient dies at it, and the results are
 * the same bits.
 *
 * One example per optimizer (skipnet: plain SGD, mlp: momentum, transformer: Adam), made
 * small with -D, at a budget of 100% (the updates hoisted, nothing planned) and of 65%
 * (planned with tso, params and state on the accelerator: --offload=none): the step verifies; before every update
 * (skipping copies, waits and the other updates hoisted to the same place) stands an op it
 * depends on; its gradient's last use is the update in the step's liveness and in the
 * lowering both targets generate code from (mt3000 and CUDA); the mt3000 host code frees the
 * gradient (check mode's mtc_dead) right after the update's kernel; the hoisted step's live
 * peak is no higher than the unhoisted one's; the CUDA module's host code and kernels build
 * (NVRTC and LLVM, where configure found them; no GPU runs them here); five steps in the interpreter give the same
 * losses and decls, bit for bit, as the step without a budget. Then plan_hoist_grads (each
 * weight's gradient made as early as it can be, which the planner tries too): the same ops
 * in an order that verifies, more gradients earlier than later, idempotent, the same bits. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "../check.h"
#include "backend.h"
#include "synth.h"

static const struct {
	const char *file, *opt;
	const char *defs[4];
	int ndefs;
	int heavy;          /* params and state over 65% of the arena: no budget test */
} models[] = {
	{ "examples/skipnet.tdsl", "sgd", { "B=512", "IN=16", "D=32", "N=4" }, 4, 0 },
	{ "examples/mlp.tdsl", "momentum", { "B=512", "IN=16", "D=32", "L=4" }, 4, 0 },
	{ "examples/transformer.tdsl", "adam", { "B=2", "D=32", "L=2" }, 3, 0 },
	{ "examples/gpt.tdsl", "adam (gpt)", { "B=2", "S=8", "D=32", "L=2" }, 4, 1 },
};

/* The update's gradient: its first operand it does not write (tick has none). */
static int
grad_of(const Op *u)
{
	return u->kind == OP_TICK ? -1 : u->args[opinfo[u->kind].nwritten];
}

/* Must op k stay before update u (planner.c's rule): it makes one of u's operands, or reads
 * or updates a decl u updates, or updates a decl u reads. */
static int
depends(const Func *f, const Op *k, const Op *u)
{
	int nk = opinfo[k->kind].nwritten, nu = opinfo[u->kind].nwritten;

	for (int a = 0; a < u->nargs; a++) {
		int v = u->args[a];
		if (k->res == v)
			return 1;
		if (f->val[v].decl < 0)
			continue;
		for (int b = 0; b < k->nargs; b++)
			if (k->args[b] == v && (a < nu || b < nk))
				return 1;
	}
	return 0;
}

/* Five steps of both: the losses and every decl afterwards, bit for bit. */
static int
same_run(const Module *a, const Module *b)
{
	Interp *ia = interp_new(a, 7), *ib = interp_new(b, 7);
	char err[256];
	int ok = ia && ib;

	for (int k = 0; k < 5 && ok; k++)
		ok = !interp_run(ia, a->step, err, sizeof err) && !interp_run(ib, b->step, err, sizeof err) &&
		     !memcmp(interp_out(ia, 0)->data, interp_out(ib, 0)->data, 4);
	for (int d = 0; d < a->ndecl && ok; d++)
		ok = !memcmp(interp_decl(ia, d)->data, interp_decl(ib, d)->data, type_bytes(&a->decl[d].ty));
	interp_free(ia);
	interp_free(ib);
	return ok;
}

/* The mt3000 host code of lo (host part only), or NULL. */
static char *
host_code(const Lowered *lo)
{
	char path[] = "/tmp/mtc-earlyXXXXXX", dev[64], *text;
	BuildOpts bo = { 2, NULL, 1 };
	size_t n;
	int fd = mkstemp(path);

	if (fd < 0)
		return NULL;
	close(fd);
	text = backend_mt3000.emit(lo, &bo, "c", path) ? NULL : slurp(path, &n);
	snprintf(dev, sizeof dev, "%s-dev.c", path);
	unlink(path);
	unlink(dev);
	return text;
}

/* Does the host code free value v (check mode's mtc_dead) among the lines after the comment
 * of the step's op i and before the next op's comment? */
static int
freed_after(const char *text, const LowFunc *p, int i, int v)
{
	const Func *f = p->f;
	const Op *o = &f->op[i];
	const char *at, *end;
	char want[64], cmt[512];

	snprintf(cmt, sizeof cmt, "\t/* %s", opinfo[o->kind].name);
	for (int a = 0; a < o->nargs; a++)
		snprintf(cmt + strlen(cmt), sizeof cmt - strlen(cmt), "%s%%%s", a ? ", " : " ",
		         f->val[o->args[a]].name);
	strcat(cmt, " */\n");
	/* the step is emitted after the forward */
	at = text ? strstr(text, "run_step(") : NULL;
	at = at ? strstr(at, cmt) : NULL;
	end = at ? strstr(at + strlen(cmt), "\t/* ") : NULL;
	snprintf(want, sizeof want, "mtc_dead(d, %d,", p->idbase + v);
	return at && end && (at = strstr(at, want)) && at < end;
}

/* The CUDA target's host code (LLVM IR) and kernels (through NVRTC) of lo build: 0. */
static int
cuda_builds(const Lowered *lo)
{
#ifdef HAVE_CUDA
	char path[] = "/tmp/mtc-earlyXXXXXX";
	BuildOpts bo = { 2, NULL, 1 };
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return -1;
	close(fd);
	rc = backend_cuda.emit(lo, &bo, "llvm", path);
	unlink(path);
	return rc;
#else
	(void)lo;
	return 0;
#endif
}

/* Lowered for target tg, after liveness and layout as the driver runs them. */
static void
lowered(Lowered *lo, Module *m, const Target *tg)
{
	Func *fs[2] = { m->fwd, m->step };
	for (int k = 0; k < 2; k++) {
		Live l;
		Layout lay;
		live_fill(&l, fs[k]);
		layout(&lay, fs[k], &l, tg->align);
		live_free(&l);
	}
	lower(lo, m, tg, NULL, NULL, NULL);
}

/* plan_hoist_grads on the step without a budget: the same ops in another order that verifies,
 * more gradients made earlier than later (one moves down only by the groups that pass it),
 * a second run moves nothing, and five steps give the same bits. */
static void
grads(const char *top, int k)
{
	char path[4096];
	const char *nm = models[k].opt;
	Module *m0, *m;
	int n, *pos, later = 0, earlier = 0, lost = 0;

	snprintf(path, sizeof path, "%s/%s", top, models[k].file);
	m0 = synth_example(path, models[k].defs, models[k].ndefs, &target_mt3000);
	m = synth_example(path, models[k].defs, models[k].ndefs, &target_mt3000);
	if (!check(m0 && m, "%s: %s compiles", nm, path))
		goto out;
	n = m->step->nop;
	check(plan_hoist_grads(m->step) > 0, "%s: gradients hoisted", nm);
	check(ir_verify(m, "hoist") == 0, "%s: the hoisted step verifies", nm);
	check(m->step->nop == n, "%s: as many ops (%d, %d)", nm, m->step->nop, n);
	/* op i of the hoisted step is op pos[i] of the old one: by result, or for an op without
	 * one by its kind and operands */
	pos = xcalloc(n, sizeof *pos);
	for (int i = 0; i < n; i++) {
		const Op *a = &m->step->op[i];
		pos[i] = -1;
		for (int j = 0; j < n && pos[i] < 0; j++) {
			const Op *b = &m0->step->op[j];
			if (a->kind == b->kind && a->nargs == b->nargs && a->res == b->res &&
			    !memcmp(a->args, b->args, a->nargs * sizeof *a->args))
				pos[i] = j;
		}
		lost += pos[i] < 0;
	}
	check(!lost, "%s: every op of the hoisted step is one of the step's (%d not)", nm, lost);
	for (int i = 0; i < n && !lost; i++) {
		const Op *u = &m->step->op[i];
		int g = grad_of(u), d, d0;
		if (!(opinfo[u->kind].flags & F_MUT) || g < 0)
			continue;
		d = m->step->val[g].def;
		d0 = m0->step->val[g].def;
		later += d > d0;
		earlier += d < d0;
	}
	free(pos);
	/* a gradient moves down only by the groups that pass it */
	check(earlier > later, "%s: more gradients made earlier (%d) than later (%d)", nm, earlier, later);
	check(plan_hoist_grads(m->step) == 0, "%s: hoisting again moves nothing", nm);
	check(same_run(m0, m), "%s: 5 steps bit-identical to the step as scheduled", nm);
out:
	mod_free(m0);
	mod_free(m);
}

static void
one(const char *top, int k, int pct)
{
	char path[4096];
	const char *nm = models[k].opt;
	Module *m0, *m;
	PlanOpts o = { "tso", 0, pct, 0, &target_mt3000, 0, 1, 0, 0, 0, 0, NULL };
	PlanReport r;
	Live l0, l;
	int nupd = 0, late = 0, alive = 0, lowfail[2] = { 0, 0 }, notfreed = 0, cudarc = 0;

	snprintf(path, sizeof path, "%s/%s", top, models[k].file);
	m0 = synth_example(path, models[k].defs, models[k].ndefs, &target_mt3000);
	m = synth_example(path, models[k].defs, models[k].ndefs, &target_mt3000);
	if (!check(m0 && m, "%s: %s compiles", nm, path))
		return;
	if (!check(plan_step(m, &o, &r) == 0, "%s %d%%: planned", nm, pct) ||
	    !check(ir_verify(m, "early") == 0, "%s %d%%: the step verifies", nm, pct))
		goto out;
	live_fill(&l0, m0->step);
	live_fill(&l, m->step);
	for (int i = 0; i < m->step->nop; i++) {
		const Func *f = m->step;
		const Op *u = &f->op[i];
		int j = i - 1, g = grad_of(u);
		if (!(opinfo[u->kind].flags & F_MUT) || g < 0)
			continue;
		nupd++;
		while (j >= 0 && ((opinfo[f->op[j].kind].flags & F_MUT) || f->op[j].phase == PH_MEM))
			j--;
		late += j >= 0 && !depends(f, &f->op[j], u);
		alive += l.last[g] != i;
	}
	check(nupd > 0, "%s %d%%: the step has updates", nm, pct);
	check(!late, "%s %d%%: every update right after an op it depends on (%d not)", nm, pct, late);
	check(!alive, "%s %d%%: every gradient's last use is its update (%d not)", nm, pct, alive);
	check(l.peak <= l0.peak, "%s %d%%: live peak %lld, unhoisted %lld", nm, pct, (long long)l.peak,
	      (long long)l0.peak);
	live_free(&l0);
	live_free(&l);
	for (int t = 0; t < 2; t++) {
		Lowered lo;
		const Target *tg = t ? &target_cuda : &target_mt3000;
		char *text;
		lowered(&lo, m, tg);
		text = t ? NULL : host_code(&lo);
		for (int i = 0; i < lo.step.f->nop; i++) {
			const Op *u = &lo.step.f->op[i];
			int g = grad_of(u);
			if (!(opinfo[u->kind].flags & F_MUT) || g < 0)
				continue;
			lowfail[t] += lo.step.last[g] != i;
			if (!t && !notfreed && !freed_after(text, &lo.step, i, g))
				notfreed = i + 1;
		}
		if (t && pct < 100)
			cudarc = cuda_builds(&lo);
		free(text);
		lower_free(&lo);
	}
	check(!lowfail[0], "%s %d%%: mt3000's lowering frees every gradient at its update", nm, pct);
	check(!lowfail[1], "%s %d%%: CUDA's lowering frees every gradient at its update", nm, pct);
	check(!cudarc, "%s %d%%: the CUDA module's code builds (NVRTC, LLVM)", nm, pct);
	check(!notfreed, "%s %d%%: the mt3000 host code frees the gradient right after the update (op %d)",
	      nm, pct, notfreed - 1);
	check(same_run(m0, m), "%s %d%%: 5 steps bit-identical to the step without a budget", nm, pct);
out:
	mod_free(m0);
	mod_free(m);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");

	for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
		if (!models[k].heavy) {
			one(top ? top : ".", (int)k, 100);
			one(top ? top : ".", (int)k, 65);
		}
		grads(top ? top : ".", (int)k);
	}
	return done();
}
