/* known.c: the analyses on small hand-written functions whose answers are worked out by hand. */
#include <string.h>

#include "../check.h"
#include "tb.h"

/* x, w: f32[4,4] (64 bytes each).
 *   0 a = relu x      1 b = a @ w      2 c = tanh b      3 d = c + a      4 e = relu d (output)
 * a lives 0..3, b 1..2, c 2..3, d 3..4, e 4..end. Live: 192 256 320 320 256 (+128 of decls). */
static void
chain(void)
{
	Module *m = mod_new("chain", "chain.c");
	int x = tb_decl(m, "x", R_INPUT, ty(F32, 2, 4, 4)), w = tb_decl(m, "w", R_PARAM, ty(F32, 2, 4, 4));
	Func *f = m->fwd = func_new(m, "forward");
	int a = tb_op1(f, OP_RELU, PH_FWD, x, "a"), b = tb_mm(f, PH_FWD, a, w, 0, 0, "b");
	int c = tb_op1(f, OP_TANH, PH_FWD, b, "c"), d = tb_op2(f, OP_ADD, PH_FWD, c, a, "d");
	int e = tb_op1(f, OP_RELU, PH_FWD, d, "e");
	static const int64_t at[] = { 192, 256, 320, 320, 256 }, after[] = { 192, 256, 256, 192, 192 };
	Live l;
	Layout lay;
	Target t;

	func_output(f, "e", e);
	live_fill(&l, f);
	CHECK(l.base == 128, "chain: base %lld", (long long)l.base);
	CHECK(l.birth[a] == 0 && l.last[a] == 3, "chain: a lives %d..%d", l.birth[a], l.last[a]);
	CHECK(l.birth[b] == 1 && l.last[b] == 2, "chain: b lives %d..%d", l.birth[b], l.last[b]);
	CHECK(l.birth[c] == 2 && l.last[c] == 3, "chain: c");
	CHECK(l.birth[e] == 4 && l.last[e] == 5, "chain: e lives to the end (%d)", l.last[e]);
	CHECK(l.birth[x] == -1 && l.last[x] == 5 && l.birth[w] == -1, "chain: decls live throughout");
	for (int i = 0; i < 5; i++)
		CHECK(l.at[i] == at[i] && l.after[i] == after[i], "chain: at[%d] = %lld, after %lld, want %lld, %lld",
		      i, (long long)l.at[i], (long long)l.after[i], (long long)at[i], (long long)after[i]);
	CHECK(l.peak == 320 && l.peakop == 2, "chain: peak %lld at %d", (long long)l.peak, l.peakop);
	CHECK(live_at(&l, a, 3) && !live_at(&l, a, 4) && !live_at(&l, b, 3), "chain: live_at");

	layout(&lay, f, &l, 64);
	CHECK(lay.persist == 128 && f->val[x].off == 0 && f->val[w].off == 64, "chain: decls first");
	CHECK(lay.arena == 320, "chain: arena %lld, want the lower bound 320", (long long)lay.arena);
	CHECK(f->val[a].off != f->val[b].off && f->val[a].off != f->val[c].off && f->val[b].off != f->val[c].off,
	      "chain: a, b, c alive together at different offsets");
	CHECK(f->val[a].off != f->val[d].off && f->val[c].off != f->val[d].off, "chain: a, c, d apart");
	layout(&lay, f, &l, 256);
	CHECK(lay.persist == 512 && lay.arena == 512 + 3 * 256, "chain: align 256 -> arena %lld", (long long)lay.arena);
	for (int v = 0; v < f->nval; v++)
		CHECK(f->val[v].off % 256 == 0, "chain: %%%s at %lld not aligned", f->val[v].name, (long long)f->val[v].off);

	/* schedules cannot change a chain */
	target_get(&t, "mt3000");
	for (int k = 0; sched_names[k]; k++) {
		schedule(f, &t, sched_names[k]);
		for (int i = 0; i < f->nop; i++)
			CHECK(f->op[i].loc.col == i + 1, "chain: %s moved op %d", sched_names[k], i);
	}
	live_free(&l);
	mod_free(m);
}

/* A swap: a's bytes must stay until the wait on its copy; host values take no accelerator
 * bytes; the swap_in's result is live from the swap_in.
 *   0 a = relu x   1 s = swap_out a   2 b = tanh x   3 wait s   4 r = swap_in s   5 wait r
 *   6 c = r + b (output) */
static void
swap(void)
{
	Module *m = mod_new("swap", "swap.c");
	int x = tb_decl(m, "x", R_INPUT, ty(F32, 2, 4, 4));
	Func *f = m->fwd = func_new(m, "forward");
	int a = tb_op1(f, OP_RELU, PH_FWD, x, "a"), s = tb_op1(f, OP_SWAPOUT, PH_MEM, a, "s");
	int b = tb_op1(f, OP_TANH, PH_FWD, x, "b");
	int r, c;
	static const int64_t at[] = { 128, 128, 192, 192, 192, 192, 256 };
	Live l;
	Cost co;
	Layout lay;
	Dag d;
	Target t;

	tb_op1(f, OP_WAIT, PH_MEM, s, NULL);
	r = tb_op1(f, OP_SWAPIN, PH_MEM, s, "r");
	tb_op1(f, OP_WAIT, PH_MEM, r, NULL);
	c = tb_op2(f, OP_ADD, PH_FWD, r, b, "c");
	func_output(f, "c", c);
	live_fill(&l, f);
	CHECK(f->val[s].host && l.bytes[s] == 0, "swap: host value takes no accelerator bytes");
	CHECK(l.last[a] == 3, "swap: a lives until the wait on its copy (%d)", l.last[a]);
	CHECK(l.birth[r] == 4 && l.last[s] == 5, "swap: r born at the swap_in, s kept until the wait on r");
	for (int i = 0; i < 7; i++)
		CHECK(l.at[i] == at[i], "swap: at[%d] = %lld, want %lld", i, (long long)l.at[i], (long long)at[i]);
	CHECK(l.peak == 256, "swap: peak");
	layout(&lay, f, &l, 64);
	CHECK(lay.host == 64 && f->val[s].off == 0, "swap: host zone %lld", (long long)lay.host);
	CHECK(lay.arena == 256, "swap: arena %lld", (long long)lay.arena);

	/* the copy overlaps compute; the wait ends with it */
	target_get(&t, "mt3000");
	t.copylat = 1e-3;
	cost_fill(&co, f, &t);
	CHECK(co.start[1] >= co.end[0], "swap: the copy starts after its operand exists");
	CHECK(co.start[2] == co.end[0], "swap: compute goes on while the copy runs");
	CHECK(co.end[3] == co.end[1] && co.end[3] > co.end[2], "swap: the wait blocks until the copy ends");
	CHECK(co.dur[1] > 1e-3 && co.dur[3] == 0, "swap: copy time %g", co.dur[1]);
	CHECK(co.total >= co.end[6] && co.total > 2e-3, "swap: total %g", co.total);

	dag_build(&d, f, NULL, co.dur);
	{
		/* SSA, and each wait before the other users of the copy's result */
		static const int want[][2] = { { 0, 1 }, { 1, 3 }, { 1, 4 }, { 4, 5 }, { 4, 6 }, { 2, 6 },
		                               { 3, 4 }, { 5, 6 } };
		int n = sizeof want / sizeof *want, found = 0;
		for (int k = 0; k < n; k++)
			for (int i = 0; i < d.ne; i++)
				found += d.e[i].from == want[k][0] && d.e[i].to == want[k][1] && d.e[i].kind == D_RAW;
		CHECK(found == n && d.ne == n, "swap: RAW edges (%d found, %d edges)", found, d.ne);
		CHECK(d.e[0].lat == co.dur[d.e[0].from], "swap: edge latency is its source's time");
	}
	dag_free(&d);
	cost_free(&co);
	live_free(&l);
	mod_free(m);
}

static int
has_edge(const Dag *d, int from, int to, DepKind k)
{
	for (int i = d->in[to]; i < d->in[to + 1]; i++)
		if (d->e[i].from == from && d->e[i].kind == k)
			return 1;
	return 0;
}

/* In-place updates: readers of a param before its update (WAR), after it (RAW), two updates
 * (WAW); schedules keep them.
 *   0 a = relu p   1 g = tanh a   2 sgd p, g   3 b = relu p   4 sgd p, b   5 c = a + b */
static void
mutation(void)
{
	Module *m = mod_new("mut", "mut.c");
	int p = tb_decl(m, "p", R_PARAM, ty(F32, 2, 4, 4)), lr = hyper_decl(m, "lr", 0.1);
	int wd = hyper_decl(m, "weight_decay", 0);
	Func *f = m->fwd = func_new(m, "forward");
	int a = tb_op1(f, OP_RELU, PH_FWD, p, "a"), g = tb_op1(f, OP_TANH, PH_BWD, a, "g"), b, c;
	int args[4] = { p, g, lr, wd };
	Dag d;
	Target t;

	tb_op(f, OP_SGD, PH_UPD, args, 4, NULL, NULL, NULL, NULL);
	b = tb_op1(f, OP_RELU, PH_FWD, p, "b");
	args[1] = b;
	tb_op(f, OP_SGD, PH_UPD, args, 4, NULL, NULL, NULL, NULL);
	c = tb_op2(f, OP_ADD, PH_FWD, a, b, "c");
	func_output(f, "c", c);
	CHECK(opinfo[OP_SGD].nwritten == 1 && opinfo[OP_ADAM].nwritten == 3 && opinfo[OP_RELU].nwritten == 0,
	      "nwritten");
	dag_build(&d, f, NULL, NULL);
	CHECK(has_edge(&d, 0, 2, D_WAR), "mut: relu p -> sgd p is WAR");
	CHECK(has_edge(&d, 2, 3, D_RAW), "mut: sgd p -> relu p is RAW");
	/* b is also the second update's operand: the SSA edge stands for the WAR */
	CHECK(has_edge(&d, 3, 4, D_RAW) && !has_edge(&d, 3, 4, D_WAR), "mut: one edge per pair, RAW first");
	CHECK(has_edge(&d, 2, 4, D_WAW), "mut: second update WAW");
	CHECK(!has_edge(&d, 0, 4, D_WAR), "mut: no WAR past an intervening write");
	dag_free(&d);
	target_get(&t, "cuda");
	for (int k = 0; sched_names[k]; k++) {
		int pos[8];
		schedule(f, &t, sched_names[k]);
		for (int i = 0; i < f->nop; i++)
			pos[f->op[i].loc.col - 1] = i;
		CHECK(pos[0] < pos[2] && pos[2] < pos[3] && pos[3] < pos[4], "mut: %s reordered updates", sched_names[k]);
		CHECK(f->val[a].def == pos[0] && f->val[c].def == pos[5], "mut: relinked");
	}
	mod_free(m);
}

/* The hand-made MLP step: the memory-aware schedule moves each update next to its gradient,
 * so gradients do not pile up until the end; both reorderings stay valid. */
static void
mlp(void)
{
	Target t;
	int64_t peak[3];

	target_get(&t, "mt3000");
	for (int k = 0; sched_names[k]; k++) {
		Module *m = tb_mlp(32, 784, 256, 8, 10);
		Func *f = m->step;
		An a;
		tb_analyze(&a, f, &t, sched_names[k]);
		peak[k] = a.l.peak;
		CHECK(a.lay.arena >= a.l.peak, "mlp %s: arena below the bound", sched_names[k]);
		CHECK(a.lay.arena <= a.l.peak * 1.05, "mlp %s: arena %lld vs bound %lld over 5%%", sched_names[k],
		      (long long)a.lay.arena, (long long)a.l.peak);
		printf("mlp step, %-8s: peak_live_bytes %lld arena_bytes %lld (%.4f) modeled_ms %.4f\n",
		       sched_names[k], (long long)a.l.peak, (long long)a.lay.arena, (double)a.lay.arena / a.l.peak,
		       a.c.total * 1e3);
		tb_free(&a);
		mod_free(m);
	}
	CHECK(peak[0] < peak[2], "mlp: mem schedule %lld not below program order %lld", (long long)peak[0],
	      (long long)peak[2]);
	CHECK(peak[0] <= peak[1], "mlp: mem schedule above critical");
}

static void
targets(void)
{
	Target t;
	char err[128];

	CHECK(target_get(&t, "mt3000") == 0 && t.flops > 0 && t.align == 64, "target mt3000");
	CHECK(target_get(&t, "cuda") == 0 && t.bw > 1e12, "target cuda");
	CHECK(target_get(&t, "tpu") == -1, "unknown target");
	CHECK(target_option(&t, "--target-flops=2e12", err, sizeof err) == 0 && t.flops == 2e12, "--target-flops");
	CHECK(target_option(&t, "--copy-latency=0", err, sizeof err) == 0 && t.copylat == 0, "--copy-latency=0");
	CHECK(target_option(&t, "--accel-bytes=1024", err, sizeof err) == 0 && t.capacity == 1024, "--accel-bytes");
	CHECK(target_option(&t, "--align=128", err, sizeof err) == 0 && t.align == 128, "--align");
	CHECK(target_option(&t, "--align=96", err, sizeof err) == -1, "--align=96 rejected");
	CHECK(target_option(&t, "--target-bw=0", err, sizeof err) == -1, "--target-bw=0 rejected");
	CHECK(target_option(&t, "--copy-bw=x", err, sizeof err) == -1 && strstr(err, "--copy-bw"), "bad value: %s", err);
	CHECK(target_option(&t, "--accel-bytes=1.5", err, sizeof err) == -1, "--accel-bytes=1.5 rejected");
	CHECK(target_option(&t, "--seed=1", err, sizeof err) == 1, "not a target option");
}

/* The roofline: a big matmul is compute bound, a big add memory bound. */
static void
roofline(void)
{
	Module *m = mod_new("r", "r.c");
	int x = tb_decl(m, "x", R_INPUT, ty(F32, 2, 1024, 1024));
	Func *f = m->fwd = func_new(m, "forward");
	int mm = tb_mm(f, PH_FWD, x, x, 0, 0, "mm"), ad = tb_op2(f, OP_ADD, PH_FWD, x, x, "ad");
	Target t;
	double tm, ta;

	(void)mm, (void)ad;
	target_get(&t, "cuda");
	tm = op_time(&t, f, &f->op[0]);
	ta = op_time(&t, f, &f->op[1]);
	CHECK(op_bytes(f, &f->op[1]) == 3 * 4 << 20, "add bytes %lld", (long long)op_bytes(f, &f->op[1]));
	CHECK(tm > 2.0 * 1024 * 1024 * 1024 / t.flops && tm < 2.0 * 1024 * 1024 * 1024 / t.flops + 2 * t.launch,
	      "matmul time %g", tm);
	CHECK(ta > 3.0 * 4 * (1 << 20) / t.bw && ta < 3.0 * 4 * (1 << 20) / t.bw + 2 * t.launch, "add time %g", ta);
	mod_free(m);
}

int
main(void)
{
	chain();
	swap();
	mutation();
	mlp();
	targets();
	roofline();
	return done();
}
