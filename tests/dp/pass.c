/* pass.c: the data-parallel pass (passes/dp.c) on the examples' steps, without MPI: the step of
 * one of 2 ranks verifies, prints and parses back, packs every gradient into exactly one
 * bucket, feeds every update the reduced gradient, and runs in the interpreter (whose other
 * ranks hold what this one holds: x + x scaled by 1/2 is x exactly) to the same bits as the
 * step without collectives, unplanned and under a budget. With ZeRO (stage 1 and 2) two
 * interpreters on threads are the two ranks (their collectives through a shared buffer, as
 * MPI's): each updates its shard, and the params gathered are those of the step without
 * collectives, bit for bit. The bucket size follows the cost model: one bucket when messages
 * are costly, several (communication hidden behind the backward) when bandwidth is the cost,
 * smaller ones under a tight budget. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../build.h"
#include "../check.h"
#include "../planner/synth.h"

static const Target *tg = &target_mt3000;

/* Three steps of a and b in the interpreter: the same losses and decls, bit for bit. */
static int
same_steps(Module *a, Module *b, char *why, size_t nw)
{
	Interp *ia = interp_new(a, 7), *ib = interp_new(b, 7);
	char err[256];
	int ok = 1;

	for (int k = 0; k < 3 && ok; k++) {
		if (interp_run(ia, a->step, err, sizeof err) || interp_run(ib, b->step, err, sizeof err)) {
			snprintf(why, nw, "interp: %s", err);
			ok = 0;
		} else if (memcmp(interp_out(ia, 0)->data, interp_out(ib, 0)->data, 4)) {
			snprintf(why, nw, "loss of step %d differs", k + 1);
			ok = 0;
		}
	}
	for (int d = 0; d < a->ndecl && ok; d++)
		if (memcmp(interp_decl(ia, d)->data, interp_decl(ib, d)->data, type_bytes(&a->decl[d].ty))) {
			snprintf(why, nw, "%s differs after 3 steps", a->decl[d].name);
			ok = 0;
		}
	interp_free(ia);
	interp_free(ib);
	return ok;
}

/* Ranks on threads: the interpreter's collectives (InterpComm) as MPI does them in place. */
enum { NR = 2 };
typedef struct Shared {
	pthread_barrier_t bar;
	float *ptr[NR];
} Shared;
typedef struct Rank {
	Shared *sh;
	int rank, nsteps, rc;
	Module *m;
	Interp *in;
	float loss[3];
	char err[256];
} Rank;

static int
coll_cb(void *ctx, int kind, float *buf, int64_t count)
{
	Rank *r = ctx;
	Shared *sh = r->sh;
	int64_t n = kind == 0 ? count : kind == 1 ? count : NR * count;
	float *tmp = xmalloc((n + 1) * sizeof *tmp);

	sh->ptr[r->rank] = buf;
	pthread_barrier_wait(&sh->bar);
	for (int64_t i = 0; i < n; i++) {
		if (kind == 2) {
			tmp[i] = sh->ptr[i / count][i];
			continue;
		}
		tmp[i] = sh->ptr[0][(kind == 1 ? r->rank * count : 0) + i];
		for (int q = 1; q < NR; q++)
			tmp[i] += sh->ptr[q][(kind == 1 ? r->rank * count : 0) + i];
	}
	pthread_barrier_wait(&sh->bar);
	memcpy(buf, tmp, n * sizeof *tmp);
	free(tmp);
	return 0;
}

static void *
rank_main(void *p)
{
	Rank *r = p;
	InterpComm c = { r->rank, NR, coll_cb, r };

	interp_set_comm(r->in, &c);
	for (int k = 0; k < r->nsteps && !r->rc; k++) {
		r->rc = interp_run(r->in, r->m->step, r->err, sizeof r->err);
		if (!r->rc)
			r->loss[k] = *(float *)interp_out(r->in, 0)->data;
	}
	return NULL;
}

/* m's step on NR ranks (threads, each the same data) in the interpreter: 3 steps whose
 * losses and params are m0's single process's bit for bit? */
static int
ranks_match(Module *m0, Module *m)
{
	Shared sh;
	Rank rk[NR];
	pthread_t th[NR];
	Interp *i0;
	char err[256];
	int ok = 1, same = 1;

	pthread_barrier_init(&sh.bar, NULL, NR);
	for (int q = 0; q < NR; q++) {
		rk[q] = (Rank){ &sh, q, 3, 0, m, interp_new(m, 7), {0}, "" };
		pthread_create(&th[q], NULL, rank_main, &rk[q]);
	}
	for (int q = 0; q < NR; q++)
		pthread_join(th[q], NULL);
	pthread_barrier_destroy(&sh.bar);
	i0 = interp_new(m0, 7);
	for (int k = 0; k < 3 && ok; k++) {
		if (interp_run(i0, m0->step, err, sizeof err) || rk[0].rc || rk[1].rc) {
			ok = 0;
			printf("  %s %s %s\n", err, rk[0].err, rk[1].err);
			break;
		}
		for (int q = 0; q < NR; q++)
			same &= !memcmp(&rk[q].loss[k], interp_out(i0, 0)->data, 4);
	}
	for (int d = 0; d < m0->ndecl && ok; d++)
		if (m0->decl[d].role == R_PARAM)
			for (int q = 0; q < NR; q++)
				same &= !memcmp(interp_decl(rk[q].in, d)->data, interp_decl(i0, d)->data,
				                type_bytes(&m0->decl[d].ty));
	for (int q = 0; q < NR; q++)
		interp_free(rk[q].in);
	interp_free(i0);
	return ok && same;
}

/* ZeRO stage z on NR ranks (threads, each the same data): losses and params after 3 steps
 * bit-identical to the step without collectives. mixed: every other param sharded (what
 * --zero=auto may choose), in buckets of both kinds. */
static void
zero(const char *top, const char *file, const char *const *defs, int ndefs, int z, int mixed)
{
	char path[4096];
	Module *m0, *m;
	DpReport r;

	snprintf(path, sizeof path, "%s/examples/%s", top, file);
	m0 = synth_example(path, defs, ndefs, tg);
	m = synth_example(path, defs, ndefs, tg);
	if (m0 && m && mixed) {
		uint8_t *sel = calloc(m->ndecl + 1, 1);
		int nb, kinds = 0, ns = 0;
		Func *g;
		for (int d = 0, k = 0; d < m->ndecl; d++)
			if (m->decl[d].role == R_PARAM)
				ns += sel[d] = k++ % 2;
		dp_shard_state(m, NR, sel);
		g = dp_step(m->step, NR, 1LL << 40, z, sel, &nb);
		schedule(g, tg, "mem");
		func_adopt(m->step, g);
		for (int i = 0; i < m->step->nop; i++) {
			const Op *o = &m->step->op[i];
			if (o->kind == OP_REDSCAT || (o->kind == OP_ALLREDUCE && o->ia[1]))
				kinds |= 1;
			else if (o->kind == OP_ALLREDUCE)
				kinds |= 2;
		}
		check(kinds == 3 && ns > 0, "%s ZeRO %d, %d params sharded: buckets of sharded and of whole "
		      "gradients (%d of %d kinds)", file, z, ns, (kinds & 1) + (kinds >> 1), 2);
		free(sel);
	} else if (!m0 || !m || dp_choose(m, NR, 0, z, 0, NULL, tg, "mem", NULL, &r, NULL)) {
		check(0, "%s ZeRO %d: compiles", file, z);
		return;
	}
	check(ir_verify(m, "zero") == 0, "%s ZeRO %d%s: verifies", file, z, mixed ? " mixed" : "");
	check(roundtrips(m, "dp.mir"), "%s ZeRO %d%s: prints and parses back", file, z, mixed ? " mixed" : "");
	check(ranks_match(m0, m), "%s ZeRO %d%s on %d ranks: 3 interpreter steps, losses and params bit-identical",
	      file, z, mixed ? " mixed" : "", NR);
	mod_free(m0);
	mod_free(m);
}

/* The collectives' structure: every gradient in one bucket, every update on its reduction. */
static int
structure(const Func *orig, const Func *f, char *why, size_t nw)
{
	int64_t want = 0, got = 0;
	int nupd = 0;

	for (int i = 0; i < orig->nop; i++) {
		int g = dp_update_grad(orig, &orig->op[i]);
		if (g >= 0)
			want += shape_numel(&orig->val[g].ty.sh), nupd++;
	}
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		int g = dp_update_grad(f, o);
		if (o->kind == OP_ALLREDUCE) {
			got += shape_numel(&f->val[o->res].ty.sh);
			if (o->ia[0] != 2 || o->fa[0] != 0.5) {
				snprintf(why, nw, "allreduce ranks=%lld scale=%g", (long long)o->ia[0], o->fa[0]);
				return 0;
			}
		}
		if ((opinfo[o->kind].flags & F_MUT) && o->kind != OP_TICK &&
		    (g < 0 || f->op[f->val[g].def].kind != OP_UNBUCKET)) {
			snprintf(why, nw, "op %d (%s) does not read a reduced gradient", i, opinfo[o->kind].name);
			return 0;
		}
		nupd -= g >= 0;
	}
	if (got != want || nupd) {
		snprintf(why, nw, "buckets hold %lld elements, the gradients %lld (%d updates left)",
		         (long long)got, (long long)want, nupd);
		return 0;
	}
	return 1;
}

static void
example(const char *top, const char *file, const char *const *defs, int ndefs)
{
	char path[4096], why[512] = "";
	Module *m0, *m;
	DpReport r;
	int rc;

	snprintf(path, sizeof path, "%s/examples/%s", top, file);
	m0 = synth_example(path, defs, ndefs, tg);
	m = synth_example(path, defs, ndefs, tg);
	if (!m0 || !m) {
		check(0, "%s: compiles", file);
		return;
	}
	rc = dp_choose(m, 2, 0, 0, 0, NULL, tg, "mem", NULL, &r, NULL);
	check(rc == 0 && r.nbuckets >= 1, "%s: dp_choose (%d buckets of %lld bytes)", file, r.nbuckets,
	      (long long)r.cap);
	check(ir_verify(m, "dp") == 0, "%s: verifies", file);
	check(roundtrips(m, "dp.mir"), "%s: prints and parses back", file);
	check(structure(m0->step, m->step, why, sizeof why), "%s: buckets %s", file, why);
	check(r.exposed_s <= r.net_s * (1 + 1e-9) + 1e-12 && r.net_s > 0,
	      "%s: exposed %.3g s of %.3g s on the network", file, r.exposed_s, r.net_s);
	check(same_steps(m0, m, why, sizeof why), "%s: 3 interpreter steps bit-identical %s", file, why);
	/* under a budget (70% of the arena of the step without collectives, which that step
	 * meets): the buckets chosen by the plans they allow, the planner taking the collectives
	 * as they are */
	mod_free(m);
	m = synth_example(path, defs, ndefs, tg);
	{
		int64_t b = plan_arena(m0->step, tg, NULL, 0) * 70 / 100;
		PlanOpts o = { "tso", b, 0, 0, tg, 0, 0, 0, 0, 0, 0, NULL };
		PlanReport pr;
		rc = dp_choose(m, 2, 0, 0, 0, NULL, tg, "mem", &o, &r, NULL) || plan_step(m, &o, &pr);
		check(rc == 0, "%s: %d buckets of %lld bytes, planned at 70%%", file, r.nbuckets, (long long)r.cap);
		if (rc == 0) {
			check(pr.arena <= b, "%s at 70%%: arena %lld within %lld", file, (long long)pr.arena, (long long)b);
			check(ir_verify(m, "plan") == 0, "%s at 70%%: verifies", file);
			check(roundtrips(m, "dp.mir"), "%s at 70%%: prints and parses back", file);
			check(same_steps(m0, m, why, sizeof why), "%s at 70%%: 3 interpreter steps bit-identical %s",
			      file, why);
		}
	}
	mod_free(m0);
	mod_free(m);
}

/* The bucket size is the cost model's: latency-bound, one bucket; bandwidth-bound, several,
 * and more of the network time hidden than with one. */
static void
buckets(const char *top)
{
	static const char *const defs[] = { "L=8" };
	char path[4096];
	Target lat = *tg, bw = *tg;
	DpReport r1, r2, one;
	Module *m;

	snprintf(path, sizeof path, "%s/examples/mlp.tdsl", top);
	lat.netlat = 1e-2;                  /* 10 ms a message */
	bw.netlat = 0;
	bw.netbw = 1e8;                      /* 100 MB/s */
	if ((m = synth_example(path, defs, 1, &lat))) {
		dp_choose(m, 2, 0, 0, 0, NULL, &lat, "mem", NULL, &r1, NULL);
		check(r1.nbuckets == 1, "latency-bound: one bucket (%d)", r1.nbuckets);
		mod_free(m);
	}
	if ((m = synth_example(path, defs, 1, &bw))) {
		dp_choose(m, 2, 0, 0, 0, NULL, &bw, "mem", NULL, &r2, NULL);
		mod_free(m);
		m = synth_example(path, defs, 1, &bw);
		dp_choose(m, 2, 1LL << 40, 0, 0, NULL, &bw, "mem", NULL, &one, NULL);
		check(one.nbuckets == 1, "a cap above the gradients' bytes: one bucket (%d)", one.nbuckets);
		check(r2.nbuckets > 1 && r2.exposed_s < one.exposed_s && r2.modeled_s < one.modeled_s,
		      "bandwidth-bound: %d buckets, %.3g s exposed against %.3g s with one bucket",
		      r2.nbuckets, r2.exposed_s, one.exposed_s);
		mod_free(m);
	}
	/* a tight budget takes smaller buckets, whose gradients die sooner: at 35% of the arena
	 * one bucket does not fit (its gradients wait for the last), the buckets taken do */
	{
		static const char *const small[] = { "B=64", "L=4" };
		Module *m0 = synth_example(path, small, 2, tg), *m1 = synth_example(path, small, 2, tg);
		Module *m2 = synth_example(path, small, 2, tg);
		int64_t b = m0 ? plan_arena(m0->step, tg, NULL, 0) * 35 / 100 : 0;
		PlanOpts o = { "tso", b, 0, 0, tg, 0, 0, 1, 0, 0, 0, NULL };
		PlanReport pr;
		if (m0 && m1 && m2) {
			dp_choose(m0, 2, 0, 0, 0, NULL, tg, "mem", NULL, &r1, NULL);
			dp_choose(m1, 2, 0, 0, 0, NULL, tg, "mem", &o, &r2, NULL);
			dp_choose(m2, 2, 1LL << 40, 0, 0, NULL, tg, "mem", NULL, &one, NULL);
			check(r2.nbuckets > r1.nbuckets && plan_step(m1, &o, &pr) == 0,
			      "mlp at 35%%: %d buckets fit, %d without a budget", r2.nbuckets, r1.nbuckets);
			check(plan_step(m2, &o, &pr) != 0, "mlp at 35%%: one bucket does not fit");
		}
		mod_free(m0);
		mod_free(m1);
		mod_free(m2);
	}
	/* the candidates planned in 3 processes (fork.c): the same choice as one after the other,
	 * with ZeRO's choice param by param too */
	for (int z = 0; z <= 1; z++) {
		static const char *const small[] = { "B=64", "L=4" };
		Module *m0 = synth_example(path, small, 2, tg), *m1 = synth_example(path, small, 2, tg);
		int64_t b = m0 ? plan_arena(m0->step, tg, NULL, 0) * (z ? 30 : 35) / 100 : 0;
		PlanOpts o1 = { "tso", b, 0, 0, tg, 0, z, 1, 0, 0, 1, NULL }, o3 = o1;
		o3.jobs = 3;
		if (m0 && m1) {
			dp_choose(m0, 2, 0, z, 1, NULL, tg, "mem", &o1, &r1, NULL);
			dp_choose(m1, 2, 0, z, 1, NULL, tg, "mem", &o3, &r2, NULL);
			check(func_same(m0->step, m1->step) && r1.nbuckets == r2.nbuckets && r1.cap == r2.cap &&
			      r1.early == r2.early && r1.nsharded == r2.nsharded && r1.modeled_s == r2.modeled_s,
			      "zero %d: 3 jobs choose as 1 (%d and %d buckets, %d and %d sharded)", z, r1.nbuckets,
			      r2.nbuckets, r1.nsharded, r2.nsharded);
		}
		mod_free(m0);
		mod_free(m1);
	}
}

/* ZeRO weighed with the placement (--zero=auto under a budget): where dp_choose takes a prefix
 * of its list of shards and levels (the 2-layer transformer at 35%, ZeRO 1: a placement of
 * the list's, faster than every param sharded with the planner's), the same choice made again
 * from its report (take) is the same step with the same levels; planned with them it fits
 * and moves state to host memory, and on NR ranks in the interpreter 3 steps give the single
 * process's losses and params bit for bit. The same of levels given on a step with every
 * other param sharded (what the list may choose): each group's state in host memory, the
 * shards' and the whole params'. */
static void
zero_joint(const char *top)
{
	static const char *const tr[] = { "B=4", "L=2" };
	char path[4096];
	Module *m0, *m, *m2;

	snprintf(path, sizeof path, "%s/examples/transformer.tdsl", top);
	m0 = synth_example(path, tr, 2, tg);
	m = synth_example(path, tr, 2, tg);
	m2 = synth_example(path, tr, 2, tg);
	/* (not under MTC_QUICK, the sanitizers' run: its search is two thirds of this test) */
	if (m0 && m && m2 && !getenv("MTC_QUICK")) {
		int64_t b = plan_arena(m->step, tg, NULL, 0) * 35 / 100;
		PlanOpts o = { "tso", b, 0, 0, tg, 0, 0, 1, 0, 0, 1, NULL };
		DpReport r = {0}, r2 = {0};
		PlanReport pr;
		uint8_t *lv = NULL, *lv2 = NULL;
		int taken = !dp_choose(m, NR, 0, 1, 1, NULL, tg, "mem", &o, &r, &lv) && r.joint > 0 && lv;
		check(taken, "transformer at 35%%, ZeRO 1 param by param: the list's choice taken (prefix %d, "
		      "%d of %d sharded)", r.joint - 1, r.nsharded, r.nparams);
		if (taken) {
			dp_choose(m2, NR, 0, 1, 1, &r, tg, "mem", &o, &r2, &lv2);
			check(r2.joint == r.joint && lv2 && !memcmp(lv, lv2, m->ndecl) && func_same(m->step, m2->step),
			      "the list's choice made again from its report: the same step and levels");
			o.levels = lv;
			check(!plan_step(m, &o, &pr) && !strcmp(pr.placer, "zero") && pr.hstate > 0 &&
			      pr.arena <= b, "planned with its levels: fits (%lld of %lld bytes), state in host "
			      "memory (%lld bytes), placed_by %s", (long long)pr.arena, (long long)b,
			      (long long)pr.hstate, pr.placer);
			check(ranks_match(m0, m), "the list's choice on %d ranks: 3 interpreter steps, losses and "
			      "params bit-identical", NR);
		}
		free(lv);
		free(lv2);
	}
	mod_free(m);
	mod_free(m2);
	m = synth_example(path, tr, 2, tg);
	if (m0 && m) {
		uint8_t *sel = xcalloc(m->ndecl + 1, 1), *lv = xcalloc(m->ndecl + 1, 1);
		int64_t b = plan_arena(m->step, tg, NULL, 0) * 90 / 100;
		PlanOpts o = { "tso", b, 0, 0, tg, 0, 0, 1, 0, 0, 1, lv };
		PlanReport pr;
		int nb, ns = 0;
		Func *g;
		for (int d = 0, k = 0; d < m->ndecl; d++) {
			if (m->decl[d].role == R_PARAM)
				ns += sel[d] = k++ % 2;
			if (m->decl[d].role == R_PARAM || m->decl[d].role == R_STATE)
				lv[d] = HOME_STATE;
		}
		dp_shard_state(m, NR, sel);
		g = dp_step(m->step, NR, 1LL << 40, 1, sel, &nb);
		schedule(g, tg, "mem");
		func_adopt(m->step, g);
		check(!plan_step(m, &o, &pr) && pr.hstate > 0 && ns > 0, "every other param sharded, levels "
		      "given: state in host memory (%lld bytes)", (long long)pr.hstate);
		check(ranks_match(m0, m), "every other param sharded, state in host memory, on %d ranks: 3 "
		      "interpreter steps, losses and params bit-identical", NR);
		free(sel);
		free(lv);
	}
	mod_free(m0);
	mod_free(m);
}

/* par_map: results in order for any number of jobs; a child's changes stay in it; a child
 * that ends without its result has its trial run here */
static int parent, ran_here;

static void
square(int i, void *ctx, void *out)
{
	(void)ctx;
	if (getpid() != parent && i == 2)
		_exit(3);           /* a child dies: the trial is run again here */
	if (getpid() == parent)
		ran_here++;
	*(long *)out = (long)i * i;
}

static void
forks(void)
{
	long one[7], three[7];
	int ok = 1;

	parent = getpid();
	par_map(7, 1, square, NULL, one, sizeof *one);
	check(ran_here == 7, "par_map with 1 job runs here (%d)", ran_here);
	ran_here = 0;
	par_map(7, 3, square, NULL, three, sizeof *three);
	for (int i = 0; i < 7; i++)
		ok &= one[i] == (long)i * i && three[i] == one[i];
	check(ok, "par_map: the same results in order with 1 and 3 jobs");
	check(ran_here == 1, "par_map: only the trial whose child died ran here (%d)", ran_here);
}

int
main(int argc, char **argv)
{
	const char *top = argc > 1 ? argv[1] : getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	static const char *const mlp[] = { "B=64", "L=4" }, *const tr[] = { "B=4", "L=2" };
	static const char *const sk[] = { "B=64" };

	setvbuf(stdout, NULL, _IOLBF, 0);

	example(top, "mlp.tdsl", mlp, 2);
	example(top, "transformer.tdsl", tr, 2);
	example(top, "skipnet.tdsl", sk, 1);
	for (int z = 0; z <= 2; z++) {
		zero(top, "mlp.tdsl", mlp, 2, z, 0);
		zero(top, "transformer.tdsl", tr, 2, z, 0);
		if (z) {
			zero(top, "mlp.tdsl", mlp, 2, z, 1);
			zero(top, "transformer.tdsl", tr, 2, z, 1);
		}
	}
	buckets(top);
	zero_joint(top);
	forks();
	return done();
}
