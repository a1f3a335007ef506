/* fetest.c: unit tests of the frontend: small programs in, the IR it builds checked field by
 * field (const folding, -D, SSA names, defaults and normalized axes, defs, loops, arrays). */
#include <math.h>
#include <string.h>

#include "frontend.h"

#include "../check.h"

/* A check that prints its own expression when it fails. */
#define EXPECT(c) CHECK((c), "%s", #c)

static Module *
compile_d(const char *text, const char **defs, int ndefs)
{
	Src src = { "t.tdsl", text, strlen(text), 0 };
	FeOpts o = { .defines = defs, .ndefines = ndefs };
	return fe_compile(&src, &o);
}

static Module *
compile(const char *text)
{
	return compile_d(text, NULL, 0);
}

/* the op that defines value `name` of forward, or NULL */
static Op *
def(Module *m, const char *name)
{
	int v = m ? func_find(m->fwd, name) : -1;
	return v >= 0 && m->fwd->val[v].def >= 0 ? &m->fwd->op[m->fwd->val[v].def] : NULL;
}

static int
has_type(Module *m, const char *name, const char *ty)
{
	char buf[256];
	int v = m ? func_find(m->fwd, name) : -1;
	return v >= 0 && strcmp(type_str(&m->fwd->val[v].ty, buf, sizeof buf), ty) == 0;
}

static const char *
argname(Module *m, Op *op, int i)
{
	return op && i < op->nargs ? m->fwd->val[op->args[i]].name : "";
}

static void
consts(void)
{
	Module *m = compile(
		"const A = 2 * (3 + 4);\n"
		"const D = E * 2;            # a forward reference\n"
		"const E = 3;\n"
		"const B = A / 7 - 1;\n"
		"model m {\n"
		"  input x : f32[A, B, D];\n"
		"  h = x * E + 0.5;\n"
		"  output h;\n"
		"}\n");
	Op *op;

	if (!EXPECT(m != NULL))
		return;
	EXPECT(m->ndecl == 1 && strcmp(m->decl[0].name, "x") == 0);
	EXPECT(has_type(m, "x", "f32[14,1,6]"));
	EXPECT(m->decl[0].role == R_INPUT && m->decl[0].loc.line == 6 && m->decl[0].loc.col == 9);
	/* x * E: the const becomes an f32[] const op with its value */
	op = &m->fwd->op[0];
	EXPECT(op->kind == OP_CONST && op->fa[0] == 3 && op->nargs == 0);
	EXPECT(m->fwd->val[op->res].ty.sh.rank == 0 && m->fwd->val[op->res].ty.dt == F32);
	EXPECT(m->fwd->op[1].kind == OP_MUL && m->fwd->op[2].kind == OP_CONST && m->fwd->op[2].fa[0] == 0.5);
	EXPECT((op = def(m, "h")) && op->kind == OP_ADD && op->loc.line == 7 && op->loc.col == 13);
	EXPECT(m->fwd->nout == 1 && strcmp(m->fwd->outname[0], "h") == 0 && m->fwd->loss == -1);
	EXPECT(m->opt.kind == OPT_NONE && m->step == NULL);
	mod_free(m);
}

static void
defines(void)
{
	const char *d[] = { "A=5", "Z=3" };
	Module *m = compile_d(
		"const A = 2 * 1000000000000000000 * 1000;   # overridden: never evaluated\n"
		"const B = A + 1;\n"
		"model m { input x : f32[A, B, Z]; output x; }\n", d, 2);

	if (EXPECT(m != NULL))
		EXPECT(has_type(m, "x", "f32[5,6,3]"));
	mod_free(m);
}

static void
ssa_names(void)
{
	Module *m = compile(
		"model m {\n"
		"  input x : f32[4];\n"
		"  h = relu(x);\n"
		"  h = relu(h);\n"
		"  g = h;\n"
		"  x = -x;\n"
		"  c = 2;\n"
		"  output g, h, x, c;\n"
		"}\n");
	Op *op;

	if (!EXPECT(m != NULL))
		return;
	EXPECT((op = def(m, "h")) && op->kind == OP_RELU && strcmp(argname(m, op, 0), "x") == 0);
	EXPECT((op = def(m, "h.1")) && op->kind == OP_RELU && strcmp(argname(m, op, 0), "h") == 0);
	EXPECT(func_find(m->fwd, "g") < 0);      /* an alias makes no value */
	EXPECT(m->fwd->nout == 4 && m->fwd->out[0] == func_find(m->fwd, "h.1") && m->fwd->out[1] == m->fwd->out[0]);
	EXPECT((op = def(m, "x.1")) && op->kind == OP_NEG && m->fwd->out[2] == op->res);
	EXPECT((op = def(m, "c")) && op->kind == OP_CONST && op->fa[0] == 2);
	mod_free(m);
}

static void
ops_and_defaults(void)
{
	Module *m = compile(
		"model m {\n"
		"  input x : f32[2, 3, 4];\n"
		"  input a : f32[4, 1];\n"
		"  input b : f32[3];\n"
		"  input t : i32[2, 3];\n"
		"  param g : f32[4] = ones();\n"
		"  param be : f32[4] = full(0.5);\n"
		"  param e : f32[10, 4] = uniform(-1, 1);\n"
		"  s1 = sum(x, axis = -1);\n"
		"  s2 = mean(x, axis = 1, keepdims = 1);\n"
		"  s3 = max(x, 0, 1);\n"
		"  sm = softmax(x);\n"
		"  ls = log_softmax(x, axis = 0);\n"
		"  ln = layernorm(x, g, be);\n"
		"  ln2 = layernorm(x, g, be, eps = 1e-6);\n"
		"  r = reshape(x, [2, -1]);\n"
		"  r0 = reshape(sum(sum(s1, axis = 0), axis = 0), []);\n"
		"  tr = transpose(x, [-1, 0, 1]);\n"
		"  cc = concat(x, x, x, axis = -2);\n"
		"  bc = a + b;\n"
		"  p1 = pow(x, 2);\n"
		"  p2 = pow(x, c = 0.5);\n"
		"  em = embedding(e, t);\n"
		"  mm = x @ transpose(x, [0, 2, 1]);\n"
		"  u = gelu(tanh(sigmoid(exp(log(sqrt(rsqrt(neg(x))))))));\n"
		"  output s1;\n"
		"}\n");
	Op *op;

	if (!EXPECT(m != NULL))
		return;
	EXPECT((op = def(m, "s1")) && op->ia[0] == 2 && op->ia[1] == 0 && has_type(m, "s1", "f32[2,3]"));
	EXPECT((op = def(m, "s2")) && op->kind == OP_MEAN && op->ia[0] == 1 && op->ia[1] == 1 && has_type(m, "s2", "f32[2,1,4]"));
	EXPECT((op = def(m, "s3")) && op->kind == OP_MAX && op->ia[0] == 0 && op->ia[1] == 1 && has_type(m, "s3", "f32[1,3,4]"));
	EXPECT((op = def(m, "sm")) && op->kind == OP_SOFTMAX && op->ia[0] == 2);
	EXPECT((op = def(m, "ls")) && op->kind == OP_LOGSOFTMAX && op->ia[0] == 0);
	EXPECT((op = def(m, "ln")) && op->kind == OP_LAYERNORM && op->fa[0] == 1e-5 && op->nargs == 3);
	EXPECT((op = def(m, "ln2")) && op->fa[0] == 1e-6);
	EXPECT((op = def(m, "r")) && op->kind == OP_RESHAPE && has_type(m, "r", "f32[2,12]"));
	EXPECT(has_type(m, "r0", "f32[]"));
	EXPECT((op = def(m, "tr")) && op->nia == 3 && op->ia[0] == 2 && op->ia[1] == 0 && has_type(m, "tr", "f32[4,2,3]"));
	EXPECT((op = def(m, "cc")) && op->nargs == 3 && op->ia[0] == 1 && has_type(m, "cc", "f32[2,9,4]"));
	EXPECT(has_type(m, "bc", "f32[4,3]"));
	EXPECT((op = def(m, "p1")) && op->kind == OP_POW && op->fa[0] == 2);
	EXPECT((op = def(m, "p2")) && op->fa[0] == 0.5);
	EXPECT(has_type(m, "em", "f32[2,3,4]"));
	EXPECT((op = def(m, "mm")) && op->kind == OP_MATMUL && op->ia[0] == 0 && op->ia[1] == 0 && has_type(m, "mm", "f32[2,3,3]"));
	EXPECT((op = def(m, "u")) && op->kind == OP_GELU);
	EXPECT(m->decl[4].init.kind == INIT_ONES && m->decl[5].init.kind == INIT_FULL && m->decl[5].init.a == 0.5);
	EXPECT(m->decl[6].init.kind == INIT_UNIFORM && m->decl[6].init.a == -1 && m->decl[6].init.b == 1);
	mod_free(m);
}

static void
defs_loops_arrays(void)
{
	Module *m = compile(
		"const N = 3;\n"
		"def lin(x, w, b) { h = x @ w; return h + b; }\n"
		"def split(x, n) { return reshape(x, [n, -1]); }\n"
		"def pick(ws, i) { return ws[i]; }\n"
		"model m {\n"
		"  input x : f32[2, 4];\n"
		"  input y : i32[2];\n"
		"  param w[N] : f32[4, 4] = normal(0.0, 0.02);\n"
		"  param b[N] : f32[4] = zeros();\n"
		"  h = x;\n"
		"  for i in 0..N {\n"
		"    h = lin(b = b[i], w = w[i], x = h);\n"
		"  }\n"
		"  for i in 1..3 { for j in 0..i { h = h * j; } }\n"
		"  for i in 5..2 { h = relu(h); }\n"
		"  last = h @ w[N - 1];\n"
		"  q = h @ pick(w, 1);\n"
		"  s = split(h, 4);\n"
		"  z = h * (1 / 2);\n"
		"  loss = cross_entropy(h, y);\n"
		"  output h;\n"
		"  train loss with adam(0.01);\n"
		"}\n");
	Op *op;
	int n = 0;

	if (!EXPECT(m != NULL))
		return;
	EXPECT(m->ndecl == 8 && strcmp(m->decl[2].name, "w.0") == 0 && strcmp(m->decl[4].name, "w.2") == 0);
	EXPECT(strcmp(m->decl[7].name, "b.2") == 0 && m->decl[2].init.kind == INIT_NORMAL && m->decl[2].init.b == 0.02);
	/* three inlined calls: h (a local of lin) is renamed, the return takes the caller's name */
	EXPECT((op = def(m, "h")) && op->kind == OP_MATMUL && strcmp(argname(m, op, 0), "x") == 0);
	EXPECT((op = def(m, "h.1")) && op->kind == OP_ADD && strcmp(argname(m, op, 1), "b.0") == 0);
	EXPECT((op = def(m, "h.2")) && op->kind == OP_MATMUL && strcmp(argname(m, op, 1), "w.1") == 0);
	EXPECT((op = def(m, "h.5")) && op->kind == OP_ADD && strcmp(argname(m, op, 1), "b.2") == 0);
	EXPECT(op && op->loc.line == 2 && op->loc.col == 40);
	/* the nested loop: i = 1: j = 0; i = 2: j = 0, 1 -- three multiplications by consts 0, 0, 1 */
	for (int k = 0; k < m->fwd->nop; k++)
		if (m->fwd->op[k].kind == OP_CONST)
			n++;
	EXPECT(n == 4);
	EXPECT((op = def(m, "last")) && strcmp(argname(m, op, 1), "w.2") == 0);
	EXPECT((op = def(m, "q")) && strcmp(argname(m, op, 1), "w.1") == 0);
	EXPECT(has_type(m, "s", "f32[4,2]"));
	EXPECT((op = def(m, "z")) && m->fwd->op[op - m->fwd->op - 1].kind == OP_CONST && m->fwd->op[op - m->fwd->op - 1].fa[0] == 0.5);
	EXPECT(m->fwd->loss == func_find(m->fwd, "loss") && m->fwd->loss >= 0);
	EXPECT(m->opt.kind == OPT_ADAM && m->opt.lr == 0.01 && m->opt.beta1 == 0.9 && m->opt.beta2 == 0.999 && m->opt.eps == 1e-8);
	EXPECT(m->opt.loc.line == 22 && m->opt.loc.col == 19);
	for (int k = 0; k < m->fwd->nop; k++)
		EXPECT(m->fwd->op[k].kind != OP_RELU);
	mod_free(m);
}

static void
sgd_default(void)
{
	Module *m = compile(
		"model m { input x : f32[3]; input y : f32[3]; param w : f32[3] = zeros();\n"
		"  l = mse(x * w, y); train l with sgd(lr = 0.1); }\n");

	if (EXPECT(m != NULL))
		EXPECT(m->opt.kind == OPT_SGD && m->opt.lr == 0.1 && m->opt.momentum == 0 && m->fwd->nout == 0);
	mod_free(m);
}

/* Bad programs return NULL; their messages are the business of tests/frontend/bad. */
static void
rejects(void)
{
	static const char *bad[] = {
		"",
		"model m { input x : f32[4]; h = x + ; }",
		"const A = 1; const A = 2; model m { input x : f32[A]; output x; }",
		"model m { input x : f32[4]; h = x @ x; output h; }",
		"model m { input x : f32[4]; } model n { input x : f32[4]; }",
	};

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		Module *m = compile(bad[i]);
		EXPECT(m == NULL);
		mod_free(m);
	}
}

int
main(void)
{
	consts();
	defines();
	ssa_names();
	ops_and_defaults();
	defs_loops_arrays();
	sgd_default();
	rejects();
	return done();
}
