/* tb.c: building IR for the analysis tests (hand-made training steps, random functions). */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

int
tb_decl(Module *m, const char *name, Role r, Type t)
{
	Init in = { .kind = INIT_ZEROS };
	Loc l = { 0, 0 };
	return mod_decl(m, name, r, t, in, l);
}

int
tb_op(Func *f, Opk k, Phase ph, const int *args, int nargs, const int64_t *ia, const double *fa,
      const Type *given, const char *name)
{
	int i = build_op(f, k, ph, args, nargs, ia, 0, fa, given, name, (Loc){ 1, f->nop + 1 });

	return f->op[i].res;
}

int tb_op1(Func *f, Opk k, Phase ph, int a, const char *nm) { return tb_op(f, k, ph, &a, 1, NULL, NULL, NULL, nm); }

int
tb_op2(Func *f, Opk k, Phase ph, int a, int b, const char *nm)
{
	int args[2] = { a, b };
	return tb_op(f, k, ph, args, 2, NULL, NULL, NULL, nm);
}

int
tb_mm(Func *f, Phase ph, int a, int b, int ta, int tb, const char *nm)
{
	int args[2] = { a, b };
	int64_t ia[MAXIA] = { ta, tb };
	return tb_op(f, OP_MATMUL, ph, args, 2, ia, NULL, NULL, nm);
}

Module *
tb_mlp(int B, int IN, int D, int L, int C)
{
	Module *m = mod_new("mlp", "mlp.c");
	char nm[64];
	int x, y, *w = xcalloc(L + 2, sizeof *w), *b = xcalloc(L + 2, sizeof *b), *mw = xcalloc(L + 2, sizeof *mw),
	    *mb = xcalloc(L + 2, sizeof *mb), *h = xcalloc(L + 3, sizeof *h), *u = xcalloc(L + 2, sizeof *u);
	int *gw = xcalloc(L + 2, sizeof *gw), *gb = xcalloc(L + 2, sizeof *gb);
	Func *f;
	int logits, loss, one, gl, gh;
	Type t1 = ty(F32, 0);
	double fone[MAXFA] = { 1 };

	/* layers 0..L: layer 0 maps IN -> D, layers 1..L D -> D; then wo: D -> C */
	x = tb_decl(m, "x", R_INPUT, ty(F32, 2, B, IN));
	y = tb_decl(m, "y", R_INPUT, ty(I32, 1, B));
	for (int i = 0; i <= L + 1; i++) {
		int in = i == 0 ? IN : D, out = i == L + 1 ? C : D;
		snprintf(nm, sizeof nm, "w.%d", i);
		w[i] = tb_decl(m, nm, R_PARAM, ty(F32, 2, in, out));
		snprintf(nm, sizeof nm, "b.%d", i);
		b[i] = tb_decl(m, nm, R_PARAM, ty(F32, 1, out));
	}
	for (int i = 0; i <= L + 1; i++) {
		snprintf(nm, sizeof nm, "mom.w.%d", i);
		mw[i] = tb_decl(m, nm, R_STATE, m->decl[w[i]].ty);
		snprintf(nm, sizeof nm, "mom.b.%d", i);
		mb[i] = tb_decl(m, nm, R_STATE, m->decl[b[i]].ty);
	}
	hyper_decl(m, "lr", 0.05);
	hyper_decl(m, "momentum", 0.9);
	hyper_decl(m, "weight_decay", 0);
	f = m->step = func_new(m, "step");
	h[0] = x;
	for (int i = 0; i <= L; i++) {
		int t = tb_mm(f, PH_FWD, h[i], w[i], 0, 0, "t");
		u[i] = tb_op2(f, OP_ADD, PH_FWD, t, b[i], "u");
		h[i + 1] = tb_op1(f, OP_RELU, PH_FWD, u[i], "h");
	}
	logits = tb_op2(f, OP_ADD, PH_FWD, tb_mm(f, PH_FWD, h[L + 1], w[L + 1], 0, 0, "t"), b[L + 1], "logits");
	loss = tb_op2(f, OP_XENT, PH_FWD, logits, y, "loss");
	one = tb_op(f, OP_CONST, PH_BWD, NULL, 0, NULL, fone, &t1, "one");
	{
		int a[3] = { logits, y, one };
		gl = tb_op(f, OP_XENT_G, PH_BWD, a, 3, NULL, NULL, NULL, "g.logits");
	}
	gw[L + 1] = tb_mm(f, PH_BWD, h[L + 1], gl, 1, 0, "g.w");
	gb[L + 1] = tb_op(f, OP_SUMTO, PH_BWD, &gl, 1, NULL, NULL, &m->decl[b[L + 1]].ty, "g.b");
	gh = tb_mm(f, PH_BWD, gl, w[L + 1], 0, 1, "g.h");
	for (int i = L; i >= 0; i--) {
		int gu = tb_op2(f, OP_RELU_G, PH_BWD, u[i], gh, "g.u");
		gw[i] = tb_mm(f, PH_BWD, h[i], gu, 1, 0, "g.w");
		gb[i] = tb_op(f, OP_SUMTO, PH_BWD, &gu, 1, NULL, NULL, &m->decl[b[i]].ty, "g.b");
		if (i > 0)
			gh = tb_mm(f, PH_BWD, gu, w[i], 0, 1, "g.h");
	}
	for (int i = 0; i <= L + 1; i++) {
		int hy[3] = { func_find(f, "opt.lr"), func_find(f, "opt.momentum"), func_find(f, "opt.weight_decay") };
		int a[6] = { w[i], mw[i], gw[i], hy[0], hy[1], hy[2] }, c[6] = { b[i], mb[i], gb[i], hy[0], hy[1], hy[2] };
		tb_op(f, OP_SGDM, PH_UPD, a, 6, NULL, NULL, NULL, NULL);
		tb_op(f, OP_SGDM, PH_UPD, c, 6, NULL, NULL, NULL, NULL);
	}
	f->loss = loss;
	func_output(f, "loss", loss);
	free(w), free(b), free(mw), free(mb), free(h), free(u), free(gw), free(gb);
	return m;
}

static unsigned
rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

enum { NW = 4 };
static const int widths[NW] = { 8, 24, 64, 200 };

Module *
tb_random(unsigned seed, int nops)
{
	Module *m = mod_new("random", "random.c");
	int p[NW][NW], *val = xcalloc(nops * 4 + 8, sizeof *val), *wid = xcalloc(nops * 4 + 8, sizeof *wid), nv = 0;
	unsigned s = seed;
	char nm[32];
	Func *f;
	static const Opk un[] = { OP_RELU, OP_TANH, OP_EXP, OP_NEG };

	val[nv] = tb_decl(m, "x", R_INPUT, ty(F32, 2, 4, widths[0]));
	wid[nv++] = 0;
	for (int a = 0; a < NW; a++)
		for (int b = 0; b < NW; b++) {
			snprintf(nm, sizeof nm, "p%d%d", a, b);
			p[a][b] = tb_decl(m, nm, R_PARAM, ty(F32, 2, widths[a], widths[b]));
		}
	hyper_decl(m, "lr", 0.1);
	hyper_decl(m, "weight_decay", 0);
	f = m->fwd = func_new(m, "forward");
	while (f->nop < nops) {
		int r = rnd(&s) % 100, i = rnd(&s) % nv, v = val[i], w = wid[i];
		Phase ph = rnd(&s) % 2 ? PH_FWD : PH_BWD;
		if (r < 30) {
			val[nv] = tb_op1(f, un[rnd(&s) % 4], ph, v, NULL);
			wid[nv++] = w;
		} else if (r < 50) {
			int j = rnd(&s) % nv, tries = 0;
			while (wid[j] != w && tries++ < 20)
				j = rnd(&s) % nv;
			val[nv] = wid[j] == w ? tb_op2(f, OP_ADD, ph, v, val[j], NULL) : tb_op1(f, OP_RELU, ph, v, NULL);
			wid[nv++] = w;
		} else if (r < 80) {
			int w2 = rnd(&s) % NW;
			val[nv] = tb_mm(f, ph, v, p[w][w2], 0, 0, NULL);
			wid[nv++] = w2;
		} else if (r < 88) {
			/* a round trip through host memory */
			int h = tb_op1(f, OP_SWAPOUT, PH_MEM, v, NULL);
			tb_op1(f, OP_WAIT, PH_MEM, h, NULL);
			if (rnd(&s) % 2)
				val[nv] = tb_op1(f, OP_TANH, ph, v, NULL), wid[nv++] = w;
			val[nv] = tb_op1(f, OP_SWAPIN, PH_MEM, h, NULL);
			tb_op1(f, OP_WAIT, PH_MEM, val[nv], NULL);
			wid[nv++] = w;
		} else {
			/* an in-place update of a param from a gradient-like product */
			int j = rnd(&s) % nv, a[4];
			a[0] = p[w][wid[j]];
			a[1] = tb_mm(f, PH_BWD, v, val[j], 1, 0, NULL);
			a[2] = func_find(f, "opt.lr");
			a[3] = func_find(f, "opt.weight_decay");
			tb_op(f, OP_SGD, PH_UPD, a, 4, NULL, NULL, NULL, NULL);
		}
	}
	func_output(f, "out", val[nv - 1]);
	if (nv > 2)
		func_output(f, "other", val[nv / 2]);
	free(val);
	free(wid);
	return m;
}

void
tb_analyze(An *a, Func *f, const Target *t, const char *sched)
{
	schedule(f, t, sched);
	live_fill(&a->l, f);
	cost_fill(&a->c, f, t);
	layout(&a->lay, f, &a->l, t->align);
	dag_build(&a->d, f, &a->l, a->c.dur);
}

void
tb_free(An *a)
{
	live_free(&a->l);
	cost_free(&a->c);
	dag_free(&a->d);
}
