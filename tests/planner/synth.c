/* synth.c: hand-built training steps and a semantic equivalence check for planner tests. */
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "synth.h"
#include "../build.h"

typedef struct B {
	Module *m;
	Func *f;
	Phase ph;
} B;

static int
op(B *b, Opk k, const int *a, int na)
{
	int i = build_op(b->f, k, b->ph, a, na, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	return b->f->op[i].res;
}

static int op1(B *b, Opk k, int x) { return op(b, k, &x, 1); }
static int op2(B *b, Opk k, int x, int y) { int a[2] = { x, y }; return op(b, k, a, 2); }

/* The update reads its hyperparameters from constants made just before it: no module bytes
 * (the chains' budgets, fractions of the peak, stay those the tests were written for). */
static void
sgd(B *b, int w, int g)
{
	Type sc = { F32, { 0, {0} } };
	double lr[MAXFA] = { 0.01 }, wd[MAXFA] = { 0 };
	int a[4] = { w, g }, i;

	i = build_op(b->f, OP_CONST, PH_BWD, NULL, 0, NULL, 0, lr, &sc, "lr", (Loc){0, 0});
	a[2] = b->f->op[i].res;
	i = build_op(b->f, OP_CONST, PH_BWD, NULL, 0, NULL, 0, wd, &sc, "wd", (Loc){0, 0});
	a[3] = b->f->op[i].res;
	build_op(b->f, OP_SGD, PH_UPD, a, 4, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
}

static const Init normal = { .kind = INIT_NORMAL, .b = 0.05 };

static int
param(Module *m, const char *nm, int k, Type t)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s.%d", nm, k);
	return mod_decl(m, buf, R_PARAM, t, normal, (Loc){0, 0});
}

uint64_t
synth_rnd(uint64_t *s)
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
	int x = mod_decl(m, "x", R_INPUT, ty(F32, 2, 8, width), (Init){0}, (Loc){0, 0});
	int w = param(m, "w", 0, ty(F32, 2, 8, width));
	int *v = xmalloc((n + 1) * sizeof *v), g, loss;
	static const Opk un[] = { OP_TANH, OP_RELU, OP_EXP, OP_SIGMOID };
	static const Opk bin[] = { OP_ADD, OP_MUL, OP_SUB };

	seed = seed * 2654435761u + 1;
	b.f = m->step = func_new(m, "step");
	v[0] = op2(&b, OP_MUL, x, w);
	for (int i = 1; i < n; i++) {
		int a = v[i - 1 - (window > 1 ? (int)(synth_rnd(&seed) % (i < window ? i : window)) : 0)];
		/* Widths vary so that memory and time differ between values. */
		if (window == 1 || synth_rnd(&seed) % 2)
			v[i] = op1(&b, un[synth_rnd(&seed) % 4], a);
		else {
			int c = v[i - 1 - (int)(synth_rnd(&seed) % (i < window ? i : window))];
			v[i] = op2(&b, bin[synth_rnd(&seed) % 3], a, c);
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

/* The key of decl d as it stands after ver updates (negative: apart from op keys). */
static int
snap(const int *key, int d, const int *ver)
{
	return -2 - (key[d] * 1000 + ver[d]);
}

/* Keys of every value; results of F_MUT ops give keys in mk[op]. A copy of a decl (a param
 * fetched from host memory, state copied in for its update, Adam's counter sent to the host)
 * is the decl as it stands then; an update of such a copy updates the decl (its copy goes
 * home after); swap_home moves nothing new. Returns -1 on misuse. */
static int
keys(const Func *f, Tab *t, int *key, int *mk, char *err, size_t ne)
{
	int nd = f->mod->ndecl;
	int *ver = xcalloc(nd + 1, sizeof *ver), *of = xmalloc((f->nval + 1) * sizeof *of);
	uint8_t *waited = xcalloc(f->nval + 1, 1);

	for (int v = 0; v < f->nval; v++)
		of[v] = -1;

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
			if (key[v] == -1) {
				snprintf(err, ne, "op %d reads %%%s before it is made", i, f->val[v].name);
				free(ver);
				free(of);
				free(waited);
				return -1;
			}
			if (f->val[v].def >= 0 && f->op[f->val[v].def].kind == OP_SWAPIN && !waited[v] &&
			    op->kind != OP_WAIT) {
				snprintf(err, ne, "op %d reads %%%s before its wait", i, f->val[v].name);
				free(ver);
				free(of);
				free(waited);
				return -1;
			}
		}
		if (op->kind == OP_WAIT) {
			waited[op->args[0]] = 1;
			mk[i] = -1;
			continue;
		}
		if (op->kind == OP_SWAPOUT || op->kind == OP_SWAPIN) {
			int v = op->args[0], d = f->val[v].decl;
			key[op->res] = d >= 0 ? snap(key, d, ver) : key[v];
			of[op->res] = d >= 0 ? d : of[v];
			mk[i] = -1;
			continue;
		}
		if (op->kind == OP_SWAPHOME) {
			key[op->res] = key[op->args[1]];
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
				k.args[a] = snap(key, f->val[v].decl, ver);
		}
		mk[i] = intern(t, &k);
		if (op->res >= 0)
			key[op->res] = mk[i];
		for (int a = 0; a < opinfo[op->kind].nwritten && a < op->nargs; a++) {
			int v = op->args[a], d = f->val[v].decl >= 0 ? f->val[v].decl : of[v];
			if (d >= 0)
				ver[d]++;
		}
	}
	free(ver);
	free(of);
	free(waited);
	return 0;
}

static int
cmpint(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
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
	/* The step's ops, in any order (the planner may move updates up): the same multiset. */
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
		if (j >= f->nop) {
			snprintf(err, ne, "the plan has more ops than the step");
			goto out;
		}
		mg[j++] = mg[i];
	}
	if (j != f->nop) {
		snprintf(err, ne, "the plan has %d of the step's %d ops", j, f->nop);
		goto out;
	}
	qsort(mf, f->nop, sizeof *mf, cmpint);
	qsort(mg, j, sizeof *mg, cmpint);
	for (int i = 0; i < j; i++)
		if (mf[i] != mg[i]) {
			snprintf(err, ne, "an op of the step computes something no op of the plan does");
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

/* ---------- examples ---------- */

Module *
synth_source(const char *name, const char *text, const char *const *defs, int ndefs, const Target *tg)
{
	FeOpts fo = { .defines = (const char **)defs, .ndefines = ndefs };
	Src src = { name, text, strlen(text), 0 };
	Module *m = fe_compile(&src, &fo);

	if (m && (m->fwd->loss < 0 || autodiff(m, &src))) {
		mod_free(m);
		m = NULL;
	}
	if (m) {
		simplify(m->fwd);
		simplify(m->step);
		schedule(m->step, tg, "mem");
		schedule(m->fwd, tg, "mem");
	}
	return m;
}

Module *
synth_example(const char *path, const char *const *defs, int ndefs, const Target *tg)
{
	size_t len;
	char *text = slurp(path, &len);
	Module *m;

	if (!text)
		return NULL;
	m = synth_source(path, text, defs, ndefs, tg);
	free(text);
	return m;
}

Module *
synth_mlp(const int *width, int nl, int batch, const char *const *act, const Target *tg)
{
	char *s = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&s, &n);
	Module *m;

	fprintf(fp, "model chain {\n  input x : f32[%d, %d];\n  input y : i32[%d];\n", batch, width[0], batch);
	for (int l = 1; l <= nl; l++)
		fprintf(fp, "  param w%d : f32[%d, %d] = normal(0.0, 0.1);\n  param b%d : f32[%d] = zeros();\n",
		        l, width[l - 1], width[l], l, width[l]);
	fprintf(fp, "  param wo : f32[%d, 10] = normal(0.0, 0.1);\n  h0 = x;\n", width[nl]);
	for (int l = 1; l <= nl; l++)
		fprintf(fp, "  h%d = %s(h%d @ w%d + b%d);\n", l, act ? act[(l - 1) % 3] : "relu", l - 1, l, l);
	fprintf(fp, "  logits = h%d @ wo;\n  loss = cross_entropy(logits, y);\n  output logits;\n"
	        "  train loss with sgd(lr = 0.05, momentum = 0.9);\n}\n", nl);
	fclose(fp);
	m = synth_source("chain.tdsl", s, NULL, 0, tg);
	free(s);
	return m;
}
