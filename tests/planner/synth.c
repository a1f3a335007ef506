/* synth.c: hand-built training steps and a semantic equivalence check for planner tests. */
#include <stdlib.h>
#include <string.h>

#include "synth.h"

typedef struct B {
	Module *m;
	Func *f;
	Phase ph;
} B;

static Type
ty2(int64_t a, int64_t b)
{
	Type t = { F32, { 2, { a, b } } };
	return t;
}

static Type
ty1(int64_t a)
{
	Type t = { F32, { 1, { a } } };
	return t;
}

static int
op(B *b, Opk k, const int *a, int na, const int64_t *ia, int nia, const double *fa, Type *given)
{
	char err[256];
	Type r = given ? *given : (Type){0};
	int i;

	if (op_infer(b->f, k, a, na, ia, nia, fa, &r, err, sizeof err))
		die("synth: %s", err);
	i = func_op(b->f, k, b->ph, a, na, ia, nia, fa, &r, NULL, (Loc){0, 0});
	return b->f->op[i].res;
}

static int op1(B *b, Opk k, int x) { return op(b, k, &x, 1, NULL, 0, NULL, NULL); }
static int op2(B *b, Opk k, int x, int y) { int a[2] = { x, y }; return op(b, k, a, 2, NULL, 0, NULL, NULL); }
static int op3(B *b, Opk k, int x, int y, int z) { int a[3] = { x, y, z }; return op(b, k, a, 3, NULL, 0, NULL, NULL); }

static int
mm(B *b, int x, int y, int ta, int tb)
{
	int a[2] = { x, y };
	int64_t ia[MAXIA] = { ta, tb };
	return op(b, OP_MATMUL, a, 2, ia, 2, NULL, NULL);
}

static int
sumto(B *b, int x, Type t)
{
	return op(b, OP_SUMTO, &x, 1, NULL, 0, NULL, &t);
}

static int
one(B *b)
{
	double fa[MAXFA] = { 1.0 };
	Type t = { F32, { 0, { 0 } } };
	return op(b, OP_CONST, NULL, 0, NULL, 0, fa, &t);
}

static void
sgd(B *b, int w, int g)
{
	double fa[MAXFA] = { 0.01 };
	int a[2] = { w, g };
	char err[256];
	Type r;

	if (op_infer(b->f, OP_SGD, a, 2, NULL, 0, fa, &r, err, sizeof err))
		die("synth: %s", err);
	func_op(b->f, OP_SGD, PH_UPD, a, 2, NULL, 0, fa, &r, NULL, (Loc){0, 0});
}

static Init normal = { INIT_NORMAL, 0, 0.05 };

static int
param(Module *m, const char *nm, int k, Type t)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s.%d", nm, k);
	return mod_decl(m, buf, R_PARAM, t, normal, (Loc){0, 0});
}

Module *
synth_mlp(int L, int batch, int width)
{
	Module *m = mod_new("mlp", "synth");
	B b = { m, NULL, PH_FWD };
	int x = mod_decl(m, "x", R_INPUT, ty2(batch, width), (Init){0}, (Loc){0, 0});
	int y = mod_decl(m, "y", R_INPUT, ty2(batch, 10), (Init){0}, (Loc){0, 0});
	int *w = xmalloc(L * sizeof *w), *bb = xmalloc(L * sizeof *bb), wo;
	int *a = xmalloc(L * sizeof *a), *h = xmalloc((L + 1) * sizeof *h), out, loss, g, gl;

	for (int i = 0; i < L; i++) {
		w[i] = param(m, "w", i, ty2(width, width));
		bb[i] = param(m, "b", i, ty1(width));
	}
	wo = param(m, "wo", 0, ty2(width, 10));
	b.f = m->step = func_new(m, "step");
	h[0] = x;
	for (int i = 0; i < L; i++) {
		a[i] = op2(&b, OP_ADD, mm(&b, h[i], w[i], 0, 0), bb[i]);
		h[i + 1] = op1(&b, OP_RELU, a[i]);
	}
	out = mm(&b, h[L], wo, 0, 0);
	loss = op2(&b, OP_MSE, out, y);
	b.ph = PH_BWD;
	gl = one(&b);
	g = op3(&b, OP_MSE_G, out, y, gl);
	{
		int gwo = mm(&b, h[L], g, 1, 0);
		g = mm(&b, g, wo, 0, 1);
		b.ph = PH_UPD;
		sgd(&b, wo, gwo);
		b.ph = PH_BWD;
	}
	for (int i = L - 1; i >= 0; i--) {
		int ga = op2(&b, OP_RELU_G, a[i], g);
		int gb = sumto(&b, ga, ty1(width));
		int gw = mm(&b, h[i], ga, 1, 0);
		if (i > 0)
			g = mm(&b, ga, w[i], 0, 1);
		b.ph = PH_UPD;
		sgd(&b, w[i], gw);
		sgd(&b, bb[i], gb);
		b.ph = PH_BWD;
	}
	m->step->loss = loss;
	free(w); free(bb); free(a); free(h);
	return m;
}

/* h0 = sigmoid(x W); N blocks h += tanh(h W_i + b_i); out = relu(concat(h, h0) Wm) Wo. */
Module *
synth_skip(int N, int batch, int width)
{
	Module *m = mod_new("skipnet", "synth");
	B b = { m, NULL, PH_FWD };
	int x = mod_decl(m, "x", R_INPUT, ty2(batch, width), (Init){0}, (Loc){0, 0});
	int y = mod_decl(m, "y", R_INPUT, ty2(batch, 8), (Init){0}, (Loc){0, 0});
	int win = param(m, "win", 0, ty2(width, width));
	int *w = xmalloc(N * sizeof *w), *bb = xmalloc(N * sizeof *bb);
	int *h = xmalloc((N + 1) * sizeof *h), *t = xmalloc(N * sizeof *t);
	int wmix, wout, h0, u, r, out, loss, g, gu, gh, gh0;
	int64_t ax[MAXIA] = { 1 };

	for (int i = 0; i < N; i++) {
		w[i] = param(m, "w", i, ty2(width, width));
		bb[i] = param(m, "b", i, ty1(width));
	}
	wmix = param(m, "wmix", 0, ty2(2 * width, width));
	wout = param(m, "wout", 0, ty2(width, 8));
	b.f = m->step = func_new(m, "step");
	h0 = h[0] = op1(&b, OP_SIGMOID, mm(&b, x, win, 0, 0));
	for (int i = 0; i < N; i++) {
		t[i] = op1(&b, OP_TANH, op2(&b, OP_ADD, mm(&b, h[i], w[i], 0, 0), bb[i]));
		h[i + 1] = op2(&b, OP_ADD, h[i], t[i]);
	}
	{
		int a[2] = { h[N], h0 };
		u = op(&b, OP_CONCAT, a, 2, ax, 1, NULL, NULL);
	}
	r = op1(&b, OP_RELU, mm(&b, u, wmix, 0, 0));
	out = mm(&b, r, wout, 0, 0);
	loss = op2(&b, OP_MSE, out, y);
	b.ph = PH_BWD;
	g = op3(&b, OP_MSE_G, out, y, one(&b));
	{
		int gwout = mm(&b, r, g, 1, 0);
		int gr = op2(&b, OP_RELU_G, r, mm(&b, g, wout, 0, 1));
		int gwmix = mm(&b, u, gr, 1, 0);
		gu = mm(&b, gr, wmix, 0, 1);
		b.ph = PH_UPD;
		sgd(&b, wout, gwout);
		sgd(&b, wmix, gwmix);
		b.ph = PH_BWD;
	}
	/* The concat's gradient halves: multiply by a fixed mask stand-in (a slice is not an op). */
	{
		Type half = ty2(batch, width);
		gh = sumto(&b, op2(&b, OP_MUL, gu, gu), ty2(batch, 2 * width));
		gh = op2(&b, OP_ADD, mm(&b, gh, wmix, 0, 0), mm(&b, gu, wmix, 0, 0));
		gh0 = op2(&b, OP_MUL, gh, h0);
		(void)half;
	}
	for (int i = N - 1; i >= 0; i--) {
		int gt = op2(&b, OP_TANH_G, t[i], gh);
		int gb = sumto(&b, gt, ty1(width));
		int gw = mm(&b, h[i], gt, 1, 0);
		gh = op2(&b, OP_ADD, gh, mm(&b, gt, w[i], 0, 1));
		b.ph = PH_UPD;
		sgd(&b, w[i], gw);
		sgd(&b, bb[i], gb);
		b.ph = PH_BWD;
	}
	gh = op2(&b, OP_ADD, gh, gh0);
	{
		int gs = op2(&b, OP_SIGMOID_G, h0, gh);
		int gwin = mm(&b, x, gs, 1, 0);
		b.ph = PH_UPD;
		sgd(&b, win, gwin);
	}
	m->step->loss = loss;
	free(w); free(bb); free(h); free(t);
	return m;
}

/* Blocks of x += softmax(xWq (xWk)^T) xWv Wo; x += gelu(x W1) W2, 2-D for brevity. */
Module *
synth_attn(int L, int batch, int seq, int width)
{
	Module *m = mod_new("attn", "synth");
	B b = { m, NULL, PH_FWD };
	int rows = batch * seq, F = 4 * width;
	int x0 = mod_decl(m, "x", R_INPUT, ty2(rows, width), (Init){0}, (Loc){0, 0});
	int y = mod_decl(m, "y", R_INPUT, ty2(rows, width), (Init){0}, (Loc){0, 0});
	int (*W)[6] = xmalloc(L * sizeof *W);
	int (*A)[10] = xmalloc(L * sizeof *A);
	int x = x0, loss, g;
	int64_t ax[MAXIA] = { 1 };

	for (int i = 0; i < L; i++) {
		W[i][0] = param(m, "wq", i, ty2(width, width));
		W[i][1] = param(m, "wk", i, ty2(width, width));
		W[i][2] = param(m, "wv", i, ty2(width, width));
		W[i][3] = param(m, "wo", i, ty2(width, width));
		W[i][4] = param(m, "w1", i, ty2(width, F));
		W[i][5] = param(m, "w2", i, ty2(F, width));
	}
	b.f = m->step = func_new(m, "step");
	for (int i = 0; i < L; i++) {
		int q, k, v, s, p, o, h1, f1;
		A[i][0] = x;
		q = mm(&b, x, W[i][0], 0, 0);
		k = mm(&b, x, W[i][1], 0, 0);
		v = mm(&b, x, W[i][2], 0, 0);
		s = mm(&b, q, k, 0, 1);
		p = op(&b, OP_SOFTMAX, &s, 1, ax, 1, NULL, NULL);
		o = mm(&b, mm(&b, p, v, 0, 0), W[i][3], 0, 0);
		x = op2(&b, OP_ADD, x, o);
		A[i][1] = q; A[i][2] = k; A[i][3] = v; A[i][4] = p; A[i][5] = x;
		h1 = mm(&b, x, W[i][4], 0, 0);
		f1 = op1(&b, OP_GELU, h1);
		A[i][6] = h1; A[i][7] = f1;
		x = op2(&b, OP_ADD, x, mm(&b, f1, W[i][5], 0, 0));
	}
	loss = op2(&b, OP_MSE, x, y);
	b.ph = PH_BWD;
	g = op3(&b, OP_MSE_G, x, y, one(&b));
	for (int i = L - 1; i >= 0; i--) {
		int gf, gh, gx, gp, gs, gq, gk, gv, ga;
		int gw2 = mm(&b, A[i][7], g, 1, 0);
		gf = mm(&b, g, W[i][5], 0, 1);
		gh = op2(&b, OP_GELU_G, A[i][6], gf);
		int gw1 = mm(&b, A[i][5], gh, 1, 0);
		gx = op2(&b, OP_ADD, g, mm(&b, gh, W[i][4], 0, 1));
		ga = mm(&b, gx, W[i][3], 0, 1);
		int gwo = mm(&b, mm(&b, A[i][4], A[i][3], 0, 0), gx, 1, 0);
		gp = mm(&b, ga, A[i][3], 0, 1);
		gv = mm(&b, A[i][4], ga, 1, 0);
		{
			int a2[2] = { A[i][4], gp };
			int64_t sa[MAXIA] = { 1 };
			gs = op(&b, OP_SOFTMAX_G, a2, 2, sa, 1, NULL, NULL);
		}
		gq = mm(&b, gs, A[i][2], 0, 0);
		gk = mm(&b, gs, A[i][1], 1, 0);
		int gwq = mm(&b, A[i][0], gq, 1, 0);
		int gwk = mm(&b, A[i][0], gk, 1, 0);
		int gwv = mm(&b, A[i][0], gv, 1, 0);
		g = op2(&b, OP_ADD, gx, op2(&b, OP_ADD, mm(&b, gq, W[i][0], 0, 1),
		        op2(&b, OP_ADD, mm(&b, gk, W[i][1], 0, 1), mm(&b, gv, W[i][2], 0, 1))));
		b.ph = PH_UPD;
		sgd(&b, W[i][5], gw2); sgd(&b, W[i][4], gw1); sgd(&b, W[i][3], gwo);
		sgd(&b, W[i][0], gwq); sgd(&b, W[i][1], gwk); sgd(&b, W[i][2], gwv);
		b.ph = PH_BWD;
	}
	m->step->loss = loss;
	free(W); free(A);
	return m;
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Forward ops over [8, width] values; each op reads one or two of the last three values
 * (a chain when the window is 1). The backward reads the forward values in reverse. */
static Module *
synth_rand(int n, int width, uint64_t seed, int window)
{
	Module *m = mod_new(window == 1 ? "chain" : "dag", "synth");
	B b = { m, NULL, PH_FWD };
	int x = mod_decl(m, "x", R_INPUT, ty2(8, width), (Init){0}, (Loc){0, 0});
	int w = param(m, "w", 0, ty2(8, width));
	int *v = xmalloc((n + 1) * sizeof *v), g, loss;
	static const Opk un[] = { OP_TANH, OP_RELU, OP_EXP, OP_SIGMOID };
	static const Opk bin[] = { OP_ADD, OP_MUL, OP_SUB };

	seed = seed * 2654435761u + 1;
	b.f = m->step = func_new(m, "step");
	v[0] = op2(&b, OP_MUL, x, w);
	for (int i = 1; i < n; i++) {
		int a = v[i - 1 - (window > 1 ? (int)(rnd(&seed) % (i < window ? i : window)) : 0)];
		/* Widths vary so that memory and time differ between values. */
		if (window == 1 || rnd(&seed) % 2)
			v[i] = op1(&b, un[rnd(&seed) % 4], a);
		else {
			int c = v[i - 1 - (int)(rnd(&seed) % (i < window ? i : window))];
			v[i] = op2(&b, bin[rnd(&seed) % 3], a, c);
		}
	}
	loss = op2(&b, OP_MSE, v[n - 1], x);
	b.ph = PH_BWD;
	g = op1(&b, OP_TANH, v[n - 1]);
	for (int i = n - 2; i >= 0; i--)
		g = op2(&b, i % 2 ? OP_MUL : OP_TANH_G, v[i], g);
	b.ph = PH_UPD;
	sgd(&b, w, g);
	m->step->loss = loss;
	free(v);
	return m;
}

Module *synth_chain(int n, int width, uint64_t seed) { return synth_rand(n, width, seed, 1); }
Module *synth_dag(int n, int width, uint64_t seed) { return synth_rand(n, width, seed, 3); }

/* ---------- equivalence ---------- */

typedef struct Key {
	int kind;
	int64_t ia[MAXIA];
	double fa[MAXFA];
	int nargs;
	int args[8];
} Key;

typedef struct Tab {
	Key *k;
	int n, cap;
} Tab;

static int
intern(Tab *t, const Key *k)
{
	for (int i = 0; i < t->n; i++)
		if (memcmp(&t->k[i], k, sizeof *k) == 0)
			return i;
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->k = xrealloc(t->k, t->cap * sizeof *t->k);
	}
	t->k[t->n] = *k;
	return t->n++;
}

/* Keys of every value; results of F_MUT ops give keys in mk[op]. Returns -1 on misuse. */
static int
keys(const Func *f, Tab *t, int *key, int *mk, char *err, size_t ne)
{
	int nd = f->mod->ndecl;
	int *ver = xcalloc(nd + 1, sizeof *ver);
	uint8_t *waited = xcalloc(f->nval + 1, 1);

	for (int v = 0; v < f->nval; v++)
		key[v] = -1;
	for (int d = 0; d < nd; d++) {
		Key k;
		memset(&k, 0, sizeof k);
		k.kind = -1 - d;
		key[d] = intern(t, &k);
	}
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		Key k;
		memset(&k, 0, sizeof k);
		for (int a = 0; a < op->nargs; a++) {
			int v = op->args[a];
			if (key[v] < 0) {
				snprintf(err, ne, "op %d reads %%%s before it is made", i, f->val[v].name);
				return -1;
			}
			if (f->val[v].def >= 0 && f->op[f->val[v].def].kind == OP_SWAPIN && !waited[v] &&
			    op->kind != OP_WAIT) {
				snprintf(err, ne, "op %d reads %%%s before its wait", i, f->val[v].name);
				return -1;
			}
		}
		if (op->kind == OP_WAIT) {
			waited[op->args[0]] = 1;
			mk[i] = -1;
			continue;
		}
		if (op->kind == OP_SWAPOUT || op->kind == OP_SWAPIN) {
			key[op->res] = key[op->args[0]];
			mk[i] = -1;
			continue;
		}
		k.kind = op->kind;
		memcpy(k.ia, op->ia, sizeof k.ia);
		memcpy(k.fa, op->fa, sizeof k.fa);
		k.nargs = op->nargs;
		for (int a = 0; a < op->nargs && a < 8; a++) {
			int v = op->args[a];
			k.args[a] = key[v];
			/* A decl's key changes with each update of it. */
			if (f->val[v].decl >= 0)
				k.args[a] = key[v] * 1000 + ver[f->val[v].decl];
		}
		mk[i] = intern(t, &k);
		if (op->res >= 0)
			key[op->res] = mk[i];
		if (opinfo[op->kind].flags & F_MUT)
			for (int a = 0; a < op->nargs; a++)
				if (f->val[op->args[a]].decl >= 0)
					ver[f->val[op->args[a]].decl]++;
	}
	free(ver);
	free(waited);
	return 0;
}

int
synth_equiv(const Func *f, const Func *g, char *err, size_t ne)
{
	Tab t = { NULL, 0, 0 };
	int *kf = xmalloc((f->nval + 1) * sizeof *kf), *kg = xmalloc((g->nval + 1) * sizeof *kg);
	int *mf = xmalloc((f->nop + 1) * sizeof *mf), *mg = xmalloc((g->nop + 1) * sizeof *mg);
	int r = -1, j = 0;

	if (keys(f, &t, kf, mf, err, ne) || keys(g, &t, kg, mg, err, ne))
		goto out;
	for (int i = 0; i < g->nop; i++) {
		const Op *op = &g->op[i];
		if (op->phase == PH_MEM)
			continue;
		if (op->phase == PH_REC) {
			if (op->of < 0 || kg[op->res] != kg[op->of]) {
				snprintf(err, ne, "rec op %d (%%%s) does not recompute its value", i,
				         g->val[op->res].name);
				goto out;
			}
			continue;
		}
		if (j >= f->nop || mg[i] != mf[j]) {
			snprintf(err, ne, "op %d of the plan differs from op %d of the step", i, j);
			goto out;
		}
		j++;
	}
	if (j != f->nop) {
		snprintf(err, ne, "the plan has %d of the step's %d ops", j, f->nop);
		goto out;
	}
	if (f->loss >= 0 && (g->loss < 0 || kf[f->loss] != kg[g->loss])) {
		snprintf(err, ne, "the loss differs");
		goto out;
	}
	r = 0;
out:
	free(kf); free(kg); free(mf); free(mg); free(t.k);
	return r;
}
