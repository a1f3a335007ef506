/* ops.c: the interpreter's kernels against hand-computed values and independent references.
 *
 * Each case builds a tiny module with func_op/op_infer, runs it, and compares. Forward ops
 * are checked against values worked out by hand or a double-precision reference written
 * here; gradient helpers against central finite differences of the interpreter's own
 * forward op (so the operand conventions of docs/ir.md are checked end to end). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "mtc/mtc-ops.h"
#include "../build.h"
#include "../check.h"

static Module *m;
static Func *f;
static Interp *in;
static void *data[32];        /* initial contents per decl, or NULL (then pseudo-random) */
static int covered[NOP];      /* op kinds some case has run */

static void
begin(void)
{
	if (in)
		interp_free(in);
	if (m)
		mod_free(m);
	in = NULL;
	f = NULL;
	m = mod_new("t", "t.tdsl");
	memset(data, 0, sizeof data);
}

static int
decl(const char *name, Type t, void *init)
{
	int d = mod_decl(m, name, R_INPUT, t, (Init){ .kind = INIT_NONE }, (Loc){0, 0});
	data[d] = init;
	return d;
}

static void
start(void)
{
	f = func_new(m, "forward");
	m->fwd = f;
}

/* Append a forward op; for F_GIVEN ops *given is the result type. Returns its value. */
static int
op(Opk k, const int *args, int nargs, const int64_t *ia, int nia, const double *fa, const Type *given)
{
	int i = build_op(f, k, PH_FWD, args, nargs, ia, nia, fa, given, NULL, (Loc){0, 0});

	return f->op[i].res;
}

#define A(...) ((const int[]){__VA_ARGS__})
/* the builder reads MAXIA integer and MAXFA float attributes */
#define I(...) ((const int64_t[MAXIA]){__VA_ARGS__})
#define F(...) ((const double[MAXFA]){__VA_ARGS__})
#define FL(...) ((float[]){__VA_ARGS__})
#define IL(...) ((int32_t[]){__VA_ARGS__})

static void
setup(void)
{
	in = interp_new(m, 1);
	for (int d = 0; d < m->ndecl; d++)
		if (data[d])
			memcpy(interp_decl(in, d)->data, data[d], type_bytes(&m->decl[d].ty));
}

/* Run the function; the output i afterwards is interp_out(in, i). */
static int
run(void)
{
	char err[256];

	if (!in)
		setup();
	for (int i = 0; i < f->nop; i++)
		covered[f->op[i].kind] = 1;
	if (interp_run(in, f, err, sizeof err)) {
		printf("  run error: %s\n", err);
		return -1;
	}
	return 0;
}

/* Output o equals want[0..n) within rel/abs tolerance tol. */
static void
expect(const char *what, int o, const float *want, int64_t n, double tol)
{
	const float *got;
	int ok = 1;

	if (run()) {
		check(0, "%s", what);
		return;
	}
	got = interp_out(in, o)->data;
	if (shape_numel(&interp_out(in, o)->ty.sh) != n) {
		printf("  %s: %lld elements, want %lld\n", what,
		       (long long)shape_numel(&interp_out(in, o)->ty.sh), (long long)n);
		ok = 0;
	}
	for (int64_t i = 0; ok && i < n; i++)
		if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
			printf("  %s[%lld] = %.9g, want %.9g\n", what, (long long)i, got[i], want[i]);
			ok = 0;
		}
	check(ok, "%s", what);
}

static void
expect_i(const char *what, int o, const int32_t *want, int64_t n)
{
	const int32_t *got;
	int ok = !run();

	got = ok ? interp_out(in, o)->data : NULL;
	for (int64_t i = 0; ok && i < n; i++)
		if (got[i] != want[i]) {
			printf("  %s[%lld] = %d, want %d\n", what, (long long)i, got[i], want[i]);
			ok = 0;
		}
	check(ok, "%s", what);
}

/* An op that must fail at run time with a message containing needle. */
static void
expect_error(const char *what, const char *needle)
{
	char err[256] = "";
	int rc;

	if (!in)
		setup();
	for (int i = 0; i < f->nop; i++)
		covered[f->op[i].kind] = 1;
	rc = interp_run(in, f, err, sizeof err);
	if (rc == 0 || !strstr(err, needle))
		printf("  %s: rc %d, message '%s'\n", what, rc, err);
	check(rc != 0 && strstr(err, needle) != NULL, "%s", what);
}

static void
elementwise(void)
{
	float x[] = {-2, -0.5f, 0, 0.5f, 1, 3};
	float y[] = {1, 2, 4, -1, 0.25f, 3};
	struct { Opk k; double (*ref)(double); const char *name; } un[] = {
		{OP_TANH, tanh, "tanh"}, {OP_EXP, exp, "exp"}, {OP_SIN, sin, "sin"}, {OP_COS, cos, "cos"},
	};
	float want[6];
	int a, b, r;

	begin();
	a = decl("a", ty(F32, 2, 2, 3), x);
	b = decl("b", ty(F32, 2, 2, 3), y);
	start();
	func_output(f, "add", op(OP_ADD, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "sub", op(OP_SUB, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "mul", op(OP_MUL, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "div", op(OP_DIV, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "relu", op(OP_RELU, A(a), 1, NULL, 0, NULL, NULL));
	func_output(f, "neg", op(OP_NEG, A(a), 1, NULL, 0, NULL, NULL));
	func_output(f, "pow", op(OP_POW, A(b), 1, NULL, 0, F(2), NULL));
	func_output(f, "sqrt", op(OP_SQRT, A(r = op(OP_RELU, A(b), 1, NULL, 0, NULL, NULL)), 1, NULL, 0, NULL, NULL));
	expect("add", 0, FL(-1, 1.5f, 4, -0.5f, 1.25f, 6), 6, 0);
	expect("sub", 1, FL(-3, -2.5f, -4, 1.5f, 0.75f, 0), 6, 0);
	expect("mul", 2, FL(-2, -1, 0, -0.5f, 0.25f, 9), 6, 0);
	expect("div", 3, FL(-2, -0.25f, 0, -0.5f, 4, 1), 6, 0);
	expect("relu", 4, FL(0, 0, 0, 0.5f, 1, 3), 6, 0);
	expect("neg", 5, FL(2, 0.5f, 0, -0.5f, -1, -3), 6, 0);
	expect("pow 2", 6, FL(1, 4, 16, 1, 0.0625f, 9), 6, 0);
	expect("sqrt (relu'd)", 7, FL(1, 1.41421356f, 2, 0, 0.5f, 1.7320508f), 6, 1e-6);

	for (size_t u = 0; u < sizeof un / sizeof un[0]; u++) {
		begin();
		a = decl("a", ty(F32, 1, 6), x);
		start();
		func_output(f, un[u].name, op(un[u].k, A(a), 1, NULL, 0, NULL, NULL));
		for (int i = 0; i < 6; i++)
			want[i] = (float)un[u].ref(x[i]);
		expect(un[u].name, 0, want, 6, 1e-6);
	}

	begin();
	a = decl("a", ty(F32, 1, 6), x);
	start();
	func_output(f, "sigmoid", op(OP_SIGMOID, A(a), 1, NULL, 0, NULL, NULL));
	func_output(f, "gelu", op(OP_GELU, A(a), 1, NULL, 0, NULL, NULL));
	func_output(f, "rsqrt", op(OP_RSQRT, A(op(OP_EXP, A(a), 1, NULL, 0, NULL, NULL)), 1, NULL, 0, NULL, NULL));
	func_output(f, "log", op(OP_LOG, A(op(OP_EXP, A(a), 1, NULL, 0, NULL, NULL)), 1, NULL, 0, NULL, NULL));
	for (int i = 0; i < 6; i++)
		want[i] = (float)(1 / (1 + exp(-x[i])));
	expect("sigmoid", 0, want, 6, 1e-6);
	for (int i = 0; i < 6; i++) {
		double v = x[i];
		want[i] = (float)(0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
	}
	expect("gelu (tanh approximation)", 1, want, 6, 1e-6);
	for (int i = 0; i < 6; i++)
		want[i] = (float)exp(-x[i] / 2);
	expect("rsqrt", 2, want, 6, 1e-6);
	expect("log", 3, x, 6, 1e-6);
}

static void
broadcasting(void)
{
	int a, b, c;

	begin();
	a = decl("a", ty(F32, 2, 2, 3), FL(1, 2, 3, 4, 5, 6));
	b = decl("b", ty(F32, 1, 3), FL(10, 20, 30));
	c = decl("c", ty(F32, 2, 2, 1), FL(100, 200));
	start();
	func_output(f, "a+b", op(OP_ADD, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "c-b", op(OP_SUB, A(c, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "b*c", op(OP_MUL, A(b, c), 2, NULL, 0, NULL, NULL));
	expect("add [2,3]+[3]", 0, FL(11, 22, 33, 14, 25, 36), 6, 0);
	expect("sub [2,1]-[3] -> [2,3]", 1, FL(90, 80, 70, 190, 180, 170), 6, 0);
	expect("mul [3]*[2,1]", 2, FL(1000, 2000, 3000, 2000, 4000, 6000), 6, 0);

	begin();
	a = decl("a", ty(F32, 3, 2, 1, 3), FL(1, 2, 3, 4, 5, 6));
	b = decl("s", ty(F32, 0), FL(2));
	start();
	func_output(f, "a/s", op(OP_DIV, A(a, b), 2, NULL, 0, NULL, NULL));
	{
		Type t = ty(F32, 3, 2, 2, 3);
		int bc = op(OP_BCAST, A(a), 1, NULL, 0, NULL, &t);
		Type t1 = ty(F32, 3, 2, 1, 1), t2 = ty(F32, 1, 3), t0 = ty(F32, 0);
		func_output(f, "broadcast", bc);
		func_output(f, "sum_to [2,1,1]", op(OP_SUMTO, A(bc), 1, NULL, 0, NULL, &t1));
		func_output(f, "sum_to [3]", op(OP_SUMTO, A(bc), 1, NULL, 0, NULL, &t2));
		func_output(f, "sum_to []", op(OP_SUMTO, A(bc), 1, NULL, 0, NULL, &t0));
		func_output(f, "const", op(OP_CONST, A(0), 0, NULL, 0, F(1.5), &t2));
	}
	expect("div by scalar", 0, FL(0.5f, 1, 1.5f, 2, 2.5f, 3), 6, 0);
	expect("broadcast [2,1,3] -> [2,2,3]", 1, FL(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6), 12, 0);
	expect("sum_to [2,2,3] -> [2,1,1]", 2, FL(12, 30), 2, 0);
	expect("sum_to [2,2,3] -> [3]", 3, FL(10, 14, 18), 3, 0);
	expect("sum_to [2,2,3] -> []", 4, FL(42), 1, 0);
	expect("const", 5, FL(1.5f, 1.5f, 1.5f), 3, 0);
}

static void
matmul(void)
{
	/* a [2,3] = 1..6, b [3,2] = 1..6; a@b = [[22,28],[49,64]] */
	int a, b, at, bt, ba;

	begin();
	a = decl("a", ty(F32, 2, 2, 3), FL(1, 2, 3, 4, 5, 6));
	b = decl("b", ty(F32, 2, 3, 2), FL(1, 2, 3, 4, 5, 6));
	at = decl("at", ty(F32, 2, 3, 2), FL(1, 4, 2, 5, 3, 6));     /* a transposed */
	bt = decl("bt", ty(F32, 2, 2, 3), FL(1, 3, 5, 2, 4, 6));     /* b transposed */
	ba = decl("ba", ty(F32, 3, 2, 2, 3), FL(1, 2, 3, 4, 5, 6, 0, 0, 1, 1, 0, 0));
	start();
	func_output(f, "ab", op(OP_MATMUL, A(a, b), 2, I(0, 0), 2, NULL, NULL));
	func_output(f, "at'b", op(OP_MATMUL, A(at, b), 2, I(1, 0), 2, NULL, NULL));
	func_output(f, "ab't", op(OP_MATMUL, A(a, bt), 2, I(0, 1), 2, NULL, NULL));
	func_output(f, "at'bt'", op(OP_MATMUL, A(at, bt), 2, I(1, 1), 2, NULL, NULL));
	func_output(f, "batched", op(OP_MATMUL, A(ba, b), 2, I(0, 0), 2, NULL, NULL));
	expect("matmul", 0, FL(22, 28, 49, 64), 4, 0);
	expect("matmul ta", 1, FL(22, 28, 49, 64), 4, 0);
	expect("matmul tb", 2, FL(22, 28, 49, 64), 4, 0);
	expect("matmul ta tb", 3, FL(22, 28, 49, 64), 4, 0);
	expect("matmul [2,2,3]@[3,2] (batch broadcast)", 4, FL(22, 28, 49, 64, 5, 6, 1, 2), 8, 0);

	/* [2,1,2,2] @ [3,2,2] -> [2,3,2,2]: both sides broadcast */
	begin();
	a = decl("a", ty(F32, 4, 2, 1, 2, 2), FL(1, 0, 0, 1, 2, 0, 0, 2));
	b = decl("b", ty(F32, 3, 3, 2, 2), FL(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
	start();
	func_output(f, "bb", op(OP_MATMUL, A(a, b), 2, I(0, 1), 2, NULL, NULL));
	expect("matmul tb, both batches broadcast", 0,
	       FL(1, 3, 2, 4, 5, 7, 6, 8, 9, 11, 10, 12, 2, 6, 4, 8, 10, 14, 12, 16, 18, 22, 20, 24), 24, 0);
}

static void
layout(void)
{
	int a, b, ids;

	begin();
	a = decl("a", ty(F32, 3, 2, 3, 2), FL(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
	b = decl("b", ty(F32, 3, 2, 1, 2), FL(-1, -2, -3, -4));
	ids = decl("ids", ty(I32, 2, 2, 3), IL(1, 2, 3, 4, 5, 6));
	start();
	func_output(f, "t", op(OP_TRANSPOSE, A(a), 1, I(2, 0, 1), 3, NULL, NULL));
	{
		Type t = ty(F32, 2, 4, 3);
		func_output(f, "r", op(OP_RESHAPE, A(a), 1, NULL, 0, NULL, &t));
	}
	func_output(f, "c1", op(OP_CONCAT, A(a, b), 2, I(1), 1, NULL, NULL));
	func_output(f, "c0", op(OP_CONCAT, A(b, b), 2, I(0), 1, NULL, NULL));
	func_output(f, "ti", op(OP_TRANSPOSE, A(ids), 1, I(1, 0), 2, NULL, NULL));
	expect("transpose [2,0,1]", 0, FL(0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11), 12, 0);
	expect("reshape", 1, FL(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 12, 0);
	expect("concat axis 1", 2, FL(0, 1, 2, 3, 4, 5, -1, -2, 6, 7, 8, 9, 10, 11, -3, -4), 16, 0);
	expect("concat axis 0", 3, FL(-1, -2, -3, -4, -1, -2, -3, -4), 8, 0);
	expect_i("transpose i32", 4, IL(1, 4, 2, 5, 3, 6), 6);

	begin();
	a = decl("a", ty(F32, 3, 2, 3, 2), FL(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
	start();
	{
		Type t1 = ty(F32, 3, 2, 2, 2), t2 = ty(F32, 3, 2, 3, 1), t0 = ty(F32, 3, 1, 3, 2);
		func_output(f, "s1", op(OP_SLICE, A(a), 1, I(1, 1), 0, NULL, &t1));
		func_output(f, "s2", op(OP_SLICE, A(a), 1, I(2, 1), 0, NULL, &t2));
		func_output(f, "s0", op(OP_SLICE, A(a), 1, I(0, 1), 0, NULL, &t0));
	}
	expect("slice axis 1 from 1", 0, FL(2, 3, 4, 5, 8, 9, 10, 11), 8, 0);
	expect("slice axis 2 from 1", 1, FL(1, 3, 5, 7, 9, 11), 6, 0);
	expect("slice axis 0 from 1", 2, FL(6, 7, 8, 9, 10, 11), 6, 0);
}

static void
reductions(void)
{
	int a;

	begin();
	a = decl("a", ty(F32, 2, 2, 3), FL(1, 5, 3, 4, 2, 6));
	start();
	func_output(f, "s0", op(OP_SUM, A(a), 1, I(0, 0), 2, NULL, NULL));
	func_output(f, "s1", op(OP_SUM, A(a), 1, I(1, 1), 2, NULL, NULL));
	func_output(f, "m1", op(OP_MEAN, A(a), 1, I(1, 0), 2, NULL, NULL));
	func_output(f, "x0", op(OP_MAX, A(a), 1, I(0, 0), 2, NULL, NULL));
	func_output(f, "x1", op(OP_MAX, A(a), 1, I(1, 1), 2, NULL, NULL));
	expect("sum axis 0", 0, FL(5, 7, 9), 3, 0);
	expect("sum axis 1 keepdims", 1, FL(9, 12), 2, 0);
	expect("mean axis 1", 2, FL(3, 4), 2, 0);
	expect("max axis 0", 3, FL(4, 5, 6), 3, 0);
	expect("max axis 1", 4, FL(5, 6), 2, 0);

	/* max_grad goes to the first arg-max only */
	begin();
	a = decl("a", ty(F32, 2, 2, 3), FL(7, 1, 7, 2, 9, 9));
	decl("dy", ty(F32, 1, 2), FL(10, 20));
	start();
	{
		int y = op(OP_MAX, A(a), 1, I(1, 0), 2, NULL, NULL);
		func_output(f, "g", op(OP_MAX_G, A(a, y, 1), 3, I(1, 0), 2, NULL, NULL));
	}
	expect("max_grad to the first arg-max", 0, FL(10, 0, 0, 0, 20, 0), 6, 0);
}

static void
softmax_layernorm(void)
{
	float x[] = {1, 2, 3, -1, 0, 4};
	float want[6];
	int a, g, b;

	begin();
	a = decl("a", ty(F32, 2, 2, 3), x);
	start();
	func_output(f, "sm", op(OP_SOFTMAX, A(a), 1, I(1), 1, NULL, NULL));
	func_output(f, "lsm", op(OP_LOGSOFTMAX, A(a), 1, I(1), 1, NULL, NULL));
	func_output(f, "sm0", op(OP_SOFTMAX, A(a), 1, I(0), 1, NULL, NULL));
	for (int r = 0; r < 2; r++) {
		double s = 0;
		for (int k = 0; k < 3; k++)
			s += exp(x[r * 3 + k]);
		for (int k = 0; k < 3; k++)
			want[r * 3 + k] = (float)(exp(x[r * 3 + k]) / s);
	}
	expect("softmax axis -1", 0, want, 6, 1e-6);
	for (int i = 0; i < 6; i++)
		want[i] = logf(want[i]);
	expect("log_softmax", 1, want, 6, 1e-6);
	for (int k = 0; k < 3; k++) {
		double s = exp(x[k]) + exp(x[3 + k]);
		want[k] = (float)(exp(x[k]) / s);
		want[3 + k] = (float)(exp(x[3 + k]) / s);
	}
	expect("softmax axis 0", 2, want, 6, 1e-6);

	/* large logits stay finite */
	begin();
	a = decl("a", ty(F32, 1, 3), FL(1000, 1001, 1002));
	start();
	func_output(f, "lsm", op(OP_LOGSOFTMAX, A(a), 1, I(0), 1, NULL, NULL));
	expect("log_softmax of large logits", 0, FL(-2.40760596f, -1.40760596f, -0.40760596f), 3, 1e-6);

	begin();
	a = decl("a", ty(F32, 2, 2, 4), FL(1, 2, 3, 4, -1, 1, -1, 1));
	g = decl("g", ty(F32, 1, 4), FL(1, 2, 1, 1));
	b = decl("b", ty(F32, 1, 4), FL(0, 0, 0, 1));
	start();
	func_output(f, "ln", op(OP_LAYERNORM, A(a, g, b), 3, NULL, 0, F(1e-5), NULL));
	/* row 1: mean 2.5, biased var 1.25; row 2: mean 0, var 1 */
	{
		double s1 = 1 / sqrt(1.25 + 1e-5), s2 = 1 / sqrt(1 + 1e-5);
		float w[8] = {(float)(-1.5 * s1), (float)(-0.5 * s1 * 2), (float)(0.5 * s1), (float)(1.5 * s1 + 1),
		              (float)(-s2), (float)(2 * s2), (float)(-s2), (float)(s2 + 1)};
		expect("layernorm (biased variance)", 0, w, 8, 1e-6);
	}
}

/* The ops only imported graphs make: to_f32 rounds to nearest (ties to even); comparisons
 * are 1 or 0, NaN false, -0 equal to 0; select takes a where c is not 0 (NaN is not 0). */
static void
imported_ops(void)
{
	int a, b, c;

	begin();
	a = decl("ids", ty(I32, 1, 4), IL(0, -7, 16777217, 2147483647));
	start();
	func_output(f, "r", op(OP_TOF32, A(a), 1, NULL, 0, NULL, NULL));
	expect("to_f32", 0, FL(0, -7, 16777216.0f, 2147483648.0f), 4, 0);

	for (int k = 0; k < 3; k++) {
		static const char *const nm[3] = { "equal", "less", "less_equal" };
		static const float want[3][4] = { { 1, 0, 0, 1 }, { 0, 1, 0, 0 }, { 1, 1, 0, 1 } };
		begin();
		a = decl("a", ty(F32, 1, 4), FL(1, 2, NAN, -0.0f));
		b = decl("b", ty(F32, 1, 4), FL(1, 3, NAN, 0.0f));
		start();
		func_output(f, "r", op(k == 0 ? OP_EQ : k == 1 ? OP_LT : OP_LE, A(a, b), 2, NULL, 0, NULL, NULL));
		expect(nm[k], 0, want[k], 4, 0);
	}

	begin();
	c = decl("c", ty(F32, 2, 2, 2), FL(1, 0, NAN, -0.0f));
	a = decl("a", ty(F32, 1, 2), FL(10, 20));
	b = decl("b", ty(F32, 0), FL(5));
	start();
	func_output(f, "r", op(OP_SELECT, A(c, a, b), 3, NULL, 0, NULL, NULL));
	expect("select, broadcast", 0, FL(10, 5, 10, 5), 4, 0);

	/* to_i32: toward zero, NaN 0, clamped to i32's range */
	begin();
	a = decl("x", ty(F32, 1, 8), FL(2.9f, -2.9f, -0.0f, NAN, 2147483520.0f, 2147483648.0f, -2147483648.0f, -INFINITY));
	start();
	func_output(f, "r", op(OP_TOI32, A(a), 1, NULL, 0, NULL, NULL));
	expect_i("to_i32", 0, IL(2, -2, 0, 0, 2147483520, 2147483647, -2147483647 - 1, -2147483647 - 1), 8);

	/* argmax: the first largest, or the first NaN; along axis 1, kept */
	begin();
	a = decl("x", ty(F32, 2, 4, 3), FL(1, 3, 3, 2, 0, 0, 0, 0, NAN, 5, NAN, 2));
	start();
	func_output(f, "r", op(OP_ARGMAX, A(a), 1, I(1, 1), 2, NULL, NULL));
	func_output(f, "c", op(OP_ARGMAX, A(a), 1, I(0, 0), 2, NULL, NULL));
	expect_i("argmax: first of ties, first NaN", 0, IL(1, 0, 2, 1), 4);
	expect_i("argmax along axis 0", 1, IL(3, 3, 2), 3);

	/* cumsum in double, each result rounded once: 2^24 + 1 + 1 is 2^24 + 2 */
	for (int k = 0; k < 5; k++) {
		static const char *const nm[5] = { "cumsum", "cumsum exclusive", "cumsum reverse",
		                                   "cumsum exclusive reverse", "cumsum in double" };
		static const float want[5][4] = { { 1, 3, 6, 10 }, { 0, 1, 3, 6 }, { 10, 9, 7, 4 },
		                                   { 9, 7, 4, 0 }, { 16777216.0f, 16777216.0f, 16777218.0f, 16777220.0f } };
		begin();
		a = decl("x", ty(F32, 1, 4), k < 4 ? FL(1, 2, 3, 4) : FL(16777216.0f, 1, 1, 2));
		start();
		func_output(f, "r", op(OP_CUMSUM, A(a), 1, I(0, k < 4 ? k & 1 : 0, k < 4 ? k >> 1 : 0), 3, NULL, NULL));
		expect(nm[k], 0, want[k], 4, 0);
	}

	/* floor, ceil, round (half to even) */
	for (int k = 0; k < 3; k++) {
		static const char *const nm[3] = { "floor", "ceil", "round" };
		static const float want[3][7] = { { -2, -1, 0, 0, 1, 2, 2 }, { -1, -0.0f, 1, 1, 2, 3, 2 },
		                                   { -2, -0.0f, 0, 0, 2, 2, 2 } };
		begin();
		a = decl("x", ty(F32, 1, 7), FL(-1.5f, -0.5f, 0.5f, 0.25f, 1.5f, 2.5f, 2.0f));
		start();
		func_output(f, "r", op(k == 0 ? OP_FLOOR : k == 1 ? OP_CEIL : OP_ROUND, A(a), 1, NULL, 0, NULL, NULL));
		expect(nm[k], 0, want[k], 7, 0);
	}

	/* maximum: the larger, NaN from either side; its gradient dy, dy / 2 at a tie, 0 */
	begin();
	a = decl("a", ty(F32, 1, 5), FL(1, 2, NAN, 3, -0.0f));
	b = decl("b", ty(F32, 1, 5), FL(0, 3, 1, NAN, 0.0f));
	c = decl("dy", ty(F32, 1, 5), FL(8, 8, 8, 8, 8));
	start();
	func_output(f, "r", op(OP_MAXIMUM, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "g", op(OP_MAXIMUM_G, A(a, b, c), 3, NULL, 0, NULL, NULL));
	if (run() == 0) {
		const float *r = interp_out(in, 0)->data, *g = interp_out(in, 1)->data;
		check(r[0] == 1 && r[1] == 3 && isnan(r[2]) && isnan(r[3]) && r[4] == 0,
		      "maximum: %g %g %g %g %g", r[0], r[1], r[2], r[3], r[4]);
		check(g[0] == 8 && g[1] == 0 && g[2] == 8 && g[3] == 8 && g[4] == 4,
		      "maximum_grad: %g %g %g %g %g", g[0], g[1], g[2], g[3], g[4]);
	} else {
		check(0, "maximum runs");
	}
}

static void
embedding_losses(void)
{
	int t, ids, lg, lb, a, b;

	begin();
	t = decl("t", ty(F32, 2, 3, 2), FL(0, 1, 10, 11, 20, 21));
	ids = decl("ids", ty(I32, 2, 2, 2), IL(2, 0, 1, 2));
	start();
	func_output(f, "e", op(OP_EMBEDDING, A(t, ids), 2, NULL, 0, NULL, NULL));
	expect("embedding", 0, FL(20, 21, 0, 1, 10, 11, 20, 21), 8, 0);

	begin();
	t = decl("t", ty(F32, 2, 3, 2), FL(0, 1, 10, 11, 20, 21));
	ids = decl("ids", ty(I32, 1, 2), IL(1, 3));
	start();
	func_output(f, "e", op(OP_EMBEDDING, A(t, ids), 2, NULL, 0, NULL, NULL));
	expect_error("embedding id out of range is an error", "out of range");

	begin();
	ids = decl("ids", ty(I32, 1, 3), IL(2, 0, 2));
	decl("dy", ty(F32, 2, 3, 2), FL(1, 2, 3, 4, 5, 6));
	start();
	{
		Type r = ty(F32, 2, 4, 2);
		func_output(f, "g", op(OP_EMBED_G, A(ids, 1), 2, NULL, 0, NULL, &r));
	}
	expect("embedding_grad scatter-adds repeated ids", 0, FL(3, 4, 0, 0, 6, 8, 0, 0), 8, 0);

	/* cross_entropy: rows [0,0,0] label 1 and [ln 1, ln 2, ln 1]... */
	begin();
	lg = decl("lg", ty(F32, 2, 2, 3), FL(0, 0, 0, 1, 2, 3));
	lb = decl("lb", ty(I32, 1, 2), IL(1, 2));
	decl("one", ty(F32, 0), FL(1));
	start();
	func_output(f, "l", op(OP_XENT, A(lg, lb), 2, NULL, 0, NULL, NULL));
	func_output(f, "g", op(OP_XENT_G, A(lg, lb, 2), 3, NULL, 0, NULL, NULL));
	{
		double l1 = log(3.0), s = exp(1) + exp(2) + exp(3), l2 = log(s) - 3;
		float g[6] = {(float)(1 / 6.0), (float)(-1 / 3.0), (float)(1 / 6.0),
		              (float)(exp(1) / s / 2), (float)(exp(2) / s / 2), (float)((exp(3) / s - 1) / 2)};
		expect("cross_entropy mean over positions", 0, FL((float)((l1 + l2) / 2)), 1, 1e-6);
		expect("cross_entropy_grad", 1, g, 6, 1e-6);
	}

	begin();
	lg = decl("lg", ty(F32, 2, 1, 3), FL(0, 0, 0));
	lb = decl("lb", ty(I32, 1, 1), IL(-1));
	start();
	func_output(f, "l", op(OP_XENT, A(lg, lb), 2, NULL, 0, NULL, NULL));
	expect_error("cross_entropy label out of range is an error", "out of range");

	begin();
	a = decl("a", ty(F32, 2, 2, 2), FL(1, 2, 3, 4));
	b = decl("b", ty(F32, 1, 2), FL(1, 1));
	decl("dl", ty(F32, 0), FL(2));
	start();
	func_output(f, "l", op(OP_MSE, A(a, b), 2, NULL, 0, NULL, NULL));
	func_output(f, "g", op(OP_MSE_G, A(a, b, 2), 3, NULL, 0, NULL, NULL));
	expect("mse, broadcasting", 0, FL((0 + 1 + 4 + 9) / 4.0f), 1, 1e-7);
	expect("mse_grad = 2 (a-b) dl / n", 1, FL(0, 1, 2, 3), 4, 1e-7);
}

/* The hyperparameters as f32[] decls: lr, momentum or beta1, beta2, eps, weight_decay. */
static int
hyp(const char *name, float v)
{
	static float keep[64][1];
	static int n;
	keep[n % 64][0] = v;
	return decl(name, ty(F32, 0), keep[n++ % 64]);
}

static void
optimizers(void)
{
	int p, v, g, mm, vv, t, lr, mu, wd, b1, b2, eps, ss, c;

	begin();
	p = decl("p", ty(F32, 1, 2), FL(1, 2));
	g = decl("g", ty(F32, 1, 2), FL(0.5f, -1));
	lr = hyp("lr", 0.1f);
	wd = hyp("wd", 0);
	start();
	func_op(f, OP_SGD, PH_UPD, A(p, g, lr, wd), 4, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_output(f, "p", p);
	expect("sgd_update", 0, FL(0.95f, 2.1f), 2, 1e-7);
	/* a new lr between steps (MODEL_set_lr), read at the next step */
	*(float *)interp_decl(in, lr)->data = 1;
	expect("sgd_update with the lr set at run time", 0, FL(0.45f, 3.1f), 2, 1e-7);

	/* weight decay, PyTorch's: g += wd p, then the step */
	begin();
	p = decl("p", ty(F32, 1, 2), FL(1, 2));
	g = decl("g", ty(F32, 1, 2), FL(0.5f, -1));
	lr = hyp("lr", 0.1f);
	wd = hyp("wd", 0.5f);
	start();
	func_op(f, OP_SGD, PH_UPD, A(p, g, lr, wd), 4, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_output(f, "p", p);
	expect("sgd_update with weight_decay: p -= lr (g + wd p)", 0, FL(1 - 0.1f * 1.0f, 2 - 0.1f * 0.0f), 2, 1e-7);

	begin();
	p = decl("p", ty(F32, 1, 2), FL(1, 2));
	v = decl("v", ty(F32, 1, 2), FL(0, 0));
	g = decl("g", ty(F32, 1, 2), FL(1, -1));
	lr = hyp("lr", 0.1f);
	mu = hyp("mu", 0.9f);
	wd = hyp("wd", 0);
	start();
	func_op(f, OP_SGDM, PH_UPD, A(p, v, g, lr, mu, wd), 6, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_output(f, "p", p);
	func_output(f, "v", v);
	expect("sgd_momentum_update step 1: p", 0, FL(0.9f, 2.1f), 2, 1e-7);
	expect("sgd_momentum_update step 2: v = 0.9 v + g", 1, FL(1.9f, -1.9f), 2, 1e-7);
	expect("sgd_momentum_update step 3: p", 0, FL(0.9f - 0.19f - 0.271f, 2.1f + 0.19f + 0.271f), 2, 1e-6);

	begin();
	p = decl("p", ty(F32, 1, 1), FL(2));
	v = decl("v", ty(F32, 1, 1), FL(1));
	g = decl("g", ty(F32, 1, 1), FL(1));
	lr = hyp("lr", 0.1f);
	mu = hyp("mu", 0.5f);
	wd = hyp("wd", 0.25f);
	start();
	func_op(f, OP_SGDM, PH_UPD, A(p, v, g, lr, mu, wd), 6, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_output(f, "p", p);
	func_output(f, "v", v);
	/* g' = 1 + 0.25 * 2 = 1.5; v = 0.5 + 1.5 = 2; p = 2 - 0.2 */
	expect("sgd_momentum_update with weight_decay: v", 1, FL(2), 1, 1e-7);
	expect("sgd_momentum_update with weight_decay: p", 0, FL(1.8f - 0.1f * (0.5f * 2 + 1 + 0.25f * 1.8f)), 1, 1e-6);

	/* adam: after tick, t = 1: m = 0.1 g, v = 0.001 g^2, update = lr * g/|g| (eps aside) */
	begin();
	p = decl("p", ty(F32, 1, 2), FL(1, 2));
	mm = decl("m", ty(F32, 1, 2), FL(0, 0));
	vv = decl("v", ty(F32, 1, 2), FL(0, 0));
	g = decl("g", ty(F32, 1, 2), FL(0.5f, -2));
	t = decl("t", ty(I32, 0), IL(0));
	lr = hyp("lr", 0.01f);
	b1 = hyp("b1", 0.9f);
	b2 = hyp("b2", 0.999f);
	eps = hyp("eps", 1e-8f);
	start();
	func_op(f, OP_TICK, PH_UPD, A(t), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_op(f, OP_ADAM, PH_UPD, A(p, mm, vv, g, t, lr, b1, b2, eps), 9, NULL, 0, NULL, NULL,
	        NULL, (Loc){0, 0});
	func_output(f, "p", p);
	func_output(f, "t", t);
	expect("adam_update step 1 moves each p by lr", 0, FL(0.99f, 2.01f), 2, 1e-6);
	{
		/* step 2 with the same g: m = 0.19 g, v = 0.001999 g^2, bc1 = 0.19, bc2 = 0.001999 */
		float w[2] = {0.99f - 0.01f, 2.01f + 0.01f};
		expect("adam_update step 2 (bias correction)", 0, w, 2, 1e-6);
		expect_i("tick counts steps", 1, IL(3), 1);
	}

	/* adamw: the param decays by 1 - lr wd first (decoupled), then Adam's step */
	begin();
	p = decl("p", ty(F32, 1, 2), FL(1, 2));
	mm = decl("m", ty(F32, 1, 2), FL(0, 0));
	vv = decl("v", ty(F32, 1, 2), FL(0, 0));
	g = decl("g", ty(F32, 1, 2), FL(0.5f, -2));
	t = decl("t", ty(I32, 0), IL(0));
	lr = hyp("lr", 0.01f);
	b1 = hyp("b1", 0.9f);
	b2 = hyp("b2", 0.999f);
	eps = hyp("eps", 1e-8f);
	wd = hyp("wd", 0.5f);
	start();
	func_op(f, OP_TICK, PH_UPD, A(t), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_op(f, OP_ADAMW, PH_UPD, A(p, mm, vv, g, t, lr, b1, b2, eps, wd), 10, NULL, 0, NULL, NULL,
	        NULL, (Loc){0, 0});
	func_output(f, "p", p);
	expect("adamw_update step 1: p (1 - lr wd) - lr sign(g)", 0, FL(1 * 0.995f - 0.01f, 2 * 0.995f + 0.01f), 2, 1e-6);

	begin();
	p = decl("p", ty(F32, 1, 1), FL(1));
	mm = decl("m", ty(F32, 1, 1), FL(0));
	vv = decl("v", ty(F32, 1, 1), FL(0));
	g = decl("g", ty(F32, 1, 1), FL(1));
	t = decl("t", ty(I32, 0), IL(0));
	lr = hyp("lr", 0.01f);
	b1 = hyp("b1", 0.9f);
	b2 = hyp("b2", 0.999f);
	eps = hyp("eps", 1e-8f);
	start();
	func_op(f, OP_ADAM, PH_UPD, A(p, mm, vv, g, t, lr, b1, b2, eps), 9, NULL, 0, NULL, NULL,
	        NULL, (Loc){0, 0});
	expect_error("adam_update before any tick is an error", "tick");

	/* clipping: sumsq, then clip_coef = min(C / (sqrt(ss) + 1e-6), 1) */
	begin();
	g = decl("g", ty(F32, 2, 2, 2), FL(3, 0, 0, 4));
	c = hyp("c", 1);
	start();
	ss = op(OP_SUMSQ, A(g), 1, NULL, 0, NULL, NULL);
	func_output(f, "ss", ss);
	func_output(f, "k", op(OP_CLIPCOEF, A(ss, c), 2, NULL, 0, NULL, NULL));
	expect("sumsq", 0, FL(25), 1, 0);
	expect("clip_coef when the norm exceeds the clip norm", 1, FL(1 / (5 + 1e-6f)), 1, 1e-7);
	*(float *)interp_decl(in, c)->data = 10;
	expect("clip_coef is 1 below the clip norm", 1, FL(1), 1, 0);
}

/* copy_out: a step's output, here in two slices of rows as micro-batches make it, lands in the
 * step's output slot after the loss (interp_out(in, 1)) at its start. */
static void
copy_out(void)
{
	int a, y, s0, s1, l;
	Type h = ty(F32, 2, 2, 2);

	begin();
	a = decl("a", ty(F32, 2, 4, 2), FL(1, -2, 3, -4, 5, -6, 7, -8));
	start();
	y = op(OP_RELU, A(a), 1, NULL, 0, NULL, NULL);
	func_output(f, "y", y);
	f = m->step = func_new(m, "step");
	s0 = op(OP_RELU, A(op(OP_SLICE, A(a), 1, I(0, 2), 0, NULL, &h)), 1, NULL, 0, NULL, NULL);
	s1 = op(OP_RELU, A(op(OP_SLICE, A(a), 1, I(0, 0), 0, NULL, &h)), 1, NULL, 0, NULL, NULL);
	func_op(f, OP_COPYOUT, PH_FWD, A(s0), 1, I(0, 4), 0, NULL, NULL, NULL, (Loc){0, 0});
	func_op(f, OP_COPYOUT, PH_FWD, A(s1), 1, I(0, 0), 0, NULL, NULL, NULL, (Loc){0, 0});
	l = op(OP_MSE, A(s0, s1), 2, NULL, 0, NULL, NULL);
	f->loss = l;
	expect("copy_out: the step's loss first", 0, FL((16 + 0 + 16 + 0) / 4.0f), 1, 1e-7);
	expect("copy_out: then its output, each slice at its start", 1, FL(1, 0, 3, 0, 5, 0, 7, 0), 8, 0);
}

/* ---------- gradient helpers against finite differences ---------- */

/* L(x) = sum(fwd(x, extra...) * w) run through the interpreter, in double from float. */
static int fd_x, fd_w, fd_loss;

static double
loss_at(void)
{
	run();
	return ((float *)interp_out(in, 0)->data)[0];
}

/* Central differences of L with respect to decl x (f32, n elements) against the analytic
 * gradient g (n floats). h and the tolerance suit float: |fd - g| <= tol (1 + |g|). */
static void
fd_check(const char *what, const float *grad, int64_t n, double h, double tol)
{
	float *x = interp_decl(in, fd_x)->data;
	int ok = 1;

	for (int64_t i = 0; i < n; i++) {
		float x0 = x[i];
		double lp, lm, fd;
		x[i] = x0 + (float)h;
		lp = loss_at();
		x[i] = x0 - (float)h;
		lm = loss_at();
		x[i] = x0;
		fd = (lp - lm) / (2 * h);
		if (!(fabs(fd - grad[i]) <= tol * (1 + fabs(grad[i])))) {
			printf("  %s: d/dx[%lld] finite difference %.6g, gradient %.6g\n", what,
			       (long long)i, fd, grad[i]);
			ok = 0;
		}
	}
	check(ok, "%s", what);
}

/* Build L = sum(y * w) for y = the last op's result; returns nothing, sets fd_loss. */
static void
finish_loss(int y)
{
	int p = op(OP_MUL, A(y, fd_w), 2, NULL, 0, NULL, NULL);
	Type t0 = ty(F32, 0);
	fd_loss = op(OP_SUMTO, A(p), 1, NULL, 0, NULL, &t0);
}

static float xs[24] = {0.3f, -1.2f, 0.8f, 2.0f, -0.4f, 0.1f, 1.5f, -2.2f, 0.05f, -0.7f, 0.9f, 1.1f,
                       -1.6f, 0.6f, 0.25f, -0.05f, 1.3f, -0.9f, 0.45f, 2.4f, -1.1f, 0.7f, -0.3f, 0.2f};
static float ws[24] = {1.0f, -0.5f, 0.25f, 0.75f, -1.5f, 0.3f, 0.6f, -0.2f, 1.2f, -0.8f, 0.4f, 0.9f,
                       -0.6f, 0.35f, 1.1f, -0.45f, 0.15f, 0.55f, -1.0f, 0.65f, 0.2f, -0.3f, 0.8f, -0.7f};

/* Gradient from a graph built on x and w: grad = helper(...), evaluated once. */
static void
unary_grad(const char *what, Opk fwd, Opk g, int use_y, double c)
{
	int y, gr;

	begin();
	fd_x = decl("x", ty(F32, 2, 2, 3), xs);
	fd_w = decl("w", ty(F32, 2, 2, 3), ws);
	start();
	y = op(fwd, A(fd_x), 1, NULL, 0, F(c), NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	gr = op(g, A(use_y ? y : fd_x, fd_w), 2, NULL, 0, F(c), NULL);
	func_output(f, "grad", gr);
	run();
	{
		float g6[6];
		memcpy(g6, interp_out(in, 1)->data, sizeof g6);
		fd_check(what, g6, 6, 1e-2, 2e-3);
	}
}

static void
grads(void)
{
	float gbuf[24];
	int y, gr, aux;

	unary_grad("relu_grad(x, dy)", OP_RELU, OP_RELU_G, 0, 0);
	unary_grad("gelu_grad(x, dy)", OP_GELU, OP_GELU_G, 0, 0);
	unary_grad("tanh_grad(y, dy)", OP_TANH, OP_TANH_G, 1, 0);
	unary_grad("sigmoid_grad(y, dy)", OP_SIGMOID, OP_SIGMOID_G, 1, 0);
	unary_grad("pow_grad(x, dy) c=3", OP_POW, OP_POW_G, 0, 3);

	/* sqrt and rsqrt on positive x: x = exp(xs) built as a decl */
	{
		float ex[6];
		for (int i = 0; i < 6; i++)
			ex[i] = expf(xs[i]);
		for (int k = 0; k < 2; k++) {
			begin();
			fd_x = decl("x", ty(F32, 2, 2, 3), ex);
			fd_w = decl("w", ty(F32, 2, 2, 3), ws);
			start();
			y = op(k ? OP_RSQRT : OP_SQRT, A(fd_x), 1, NULL, 0, NULL, NULL);
			finish_loss(y);
			func_output(f, "loss", fd_loss);
			func_output(f, "grad", op(k ? OP_RSQRT_G : OP_SQRT_G, A(y, fd_w), 2, NULL, 0, NULL, NULL));
			run();
			memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
			fd_check(k ? "rsqrt_grad(y, dy)" : "sqrt_grad(y, dy)", gbuf, 6, 1e-3, 2e-3);
		}
	}

	for (int ax = 0; ax < 2; ax++)
		for (int lg = 0; lg < 2; lg++) {
			char what[64];
			begin();
			fd_x = decl("x", ty(F32, 2, 2, 3), xs);
			fd_w = decl("w", ty(F32, 2, 2, 3), ws);
			start();
			y = op(lg ? OP_LOGSOFTMAX : OP_SOFTMAX, A(fd_x), 1, I(ax), 1, NULL, NULL);
			finish_loss(y);
			func_output(f, "loss", fd_loss);
			func_output(f, "grad", op(lg ? OP_LOGSOFTMAX_G : OP_SOFTMAX_G, A(y, fd_w), 2, I(ax), 1,
			                          NULL, NULL));
			run();
			memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
			snprintf(what, sizeof what, "%s(y, dy) axis %d", lg ? "log_softmax_grad" : "softmax_grad", ax);
			fd_check(what, gbuf, 6, 1e-2, 2e-3);
		}

	/* max_grad: distinct values, so the arg-max is stable under small steps */
	begin();
	fd_x = decl("x", ty(F32, 2, 2, 3), xs);
	fd_w = decl("w", ty(F32, 1, 3), ws);
	start();
	y = op(OP_MAX, A(fd_x), 1, I(0, 0), 2, NULL, NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	func_output(f, "grad", op(OP_MAX_G, A(fd_x, y, fd_w), 3, I(0, 0), 2, NULL, NULL));
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
	fd_check("max_grad(x, y, dy)", gbuf, 6, 1e-3, 2e-3);

	/* layernorm: dx and dgamma; x [4,6] */
	begin();
	fd_x = decl("x", ty(F32, 2, 4, 6), xs);
	fd_w = decl("w", ty(F32, 2, 4, 6), ws);
	aux = decl("gamma", ty(F32, 1, 6), FL(1.5f, -0.5f, 0.8f, 1.0f, 2.0f, 0.3f));
	decl("beta", ty(F32, 1, 6), FL(0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f));
	start();
	y = op(OP_LAYERNORM, A(fd_x, aux, aux + 1), 3, NULL, 0, F(1e-5), NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	func_output(f, "dx", op(OP_LN_DX, A(fd_x, aux, fd_w), 3, NULL, 0, F(1e-5), NULL));
	func_output(f, "dgamma", op(OP_LN_DGAMMA, A(fd_x, fd_w), 2, NULL, 0, F(1e-5), NULL));
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 24 * sizeof *gbuf);
	fd_check("layernorm_dx(x, gamma, dy)", gbuf, 24, 1e-2, 3e-3);
	run();   /* the differences left the outputs of a perturbed run */
	memcpy(gbuf, interp_out(in, 2)->data, 6 * sizeof *gbuf);
	fd_x = aux;
	fd_check("layernorm_dgamma(x, dy)", gbuf, 6, 1e-2, 3e-3);

	/* cross_entropy_grad and mse_grad against differences of the losses */
	begin();
	fd_x = decl("x", ty(F32, 2, 2, 3), xs);
	decl("lb", ty(I32, 1, 2), IL(2, 0));
	aux = decl("dl", ty(F32, 0), FL(1));
	start();
	func_output(f, "loss", op(OP_XENT, A(fd_x, 1), 2, NULL, 0, NULL, NULL));
	func_output(f, "grad", op(OP_XENT_G, A(fd_x, 1, aux), 3, NULL, 0, NULL, NULL));
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
	fd_check("cross_entropy_grad(logits, labels, dl)", gbuf, 6, 1e-2, 2e-3);

	begin();
	fd_x = decl("x", ty(F32, 2, 2, 3), xs);
	decl("b", ty(F32, 1, 3), ws);
	aux = decl("dl", ty(F32, 0), FL(1));
	start();
	func_output(f, "loss", op(OP_MSE, A(fd_x, 1), 2, NULL, 0, NULL, NULL));
	gr = op(OP_MSE_G, A(fd_x, 1, aux), 3, NULL, 0, NULL, NULL);
	func_output(f, "grad", gr);
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
	fd_check("mse_grad(a, b, dl)", gbuf, 6, 1e-2, 2e-3);
}

/* ---------- convolutional networks ---------- */

/* clip, and the gradients of clip and slice against finite differences. */
static void
cnn_basic(void)
{
	float gbuf[24];
	int x, y, gr;

	begin();
	x = decl("x", ty(F32, 1, 6), FL(-1.5f, 0.0f, 0.3f, 6.0f, 7.25f, NAN));
	start();
	func_output(f, "y", op(OP_CLIP, A(x), 1, NULL, 0, F(0, 6), NULL));
	run();
	{
		const float *o = interp_out(in, 0)->data;
		check(o[0] == 0 && o[1] == 0 && o[2] == 0.3f && o[3] == 6 && o[4] == 6 && isnan(o[5]),
		      "clip(x, 0, 6): ReLU6, NaN stays NaN");
	}

	begin();
	fd_x = decl("x", ty(F32, 2, 2, 3), xs);
	fd_w = decl("w", ty(F32, 2, 2, 3), ws);
	start();
	y = op(OP_CLIP, A(fd_x), 1, NULL, 0, F(-1, 1), NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	gr = op(OP_CLIP_G, A(y, fd_w), 2, NULL, 0, F(-1, 1), NULL);
	func_output(f, "grad", gr);
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 6 * sizeof *gbuf);
	fd_check("clip_grad(y, dy) lo=-1 hi=1", gbuf, 6, 1e-2, 2e-3);

	/* slice_grad: L = sum(slice(x) * w) along each axis of x [4, 6] */
	for (int ax = 0; ax < 2; ax++) {
		Type ts = ty(F32, 2, ax ? 4 : 2, ax ? 3 : 6), tx = ty(F32, 2, 4, 6);
		char what[64];
		begin();
		fd_x = decl("x", tx, xs);
		fd_w = decl("w", ts, ws);
		start();
		y = op(OP_SLICE, A(fd_x), 1, I(ax, ax ? 2 : 1), 2, NULL, &ts);
		finish_loss(y);
		func_output(f, "loss", fd_loss);
		func_output(f, "grad", op(OP_SLICE_G, A(fd_w), 1, I(ax, ax ? 2 : 1), 2, NULL, &tx));
		run();
		memcpy(gbuf, interp_out(in, 1)->data, 24 * sizeof *gbuf);
		snprintf(what, sizeof what, "slice_grad(dy) axis %d", ax);
		fd_check(what, gbuf, 24, 1e-2, 2e-3);
	}
}

/* The direct convolution of PyTorch's definition, in double: x [N, C, H, W], w [Co, C/G, kh,
 * kw], attributes a = kh kw sh sw ph pw dh dw, into y [N, Co, Ho, Wo]. */
static void
conv_ref(const float *x, const float *w, const int64_t *a, int64_t G, const int64_t *xs,
         int64_t co, int64_t ho, int64_t wo, double *y)
{
	int64_t cg = xs[1] / G, og = co / G;

	for (int64_t n = 0; n < xs[0]; n++)
		for (int64_t o = 0; o < co; o++)
			for (int64_t oh = 0; oh < ho; oh++)
				for (int64_t ow = 0; ow < wo; ow++) {
					double s = 0;
					for (int64_t c = 0; c < cg; c++)
						for (int64_t i = 0; i < a[0]; i++)
							for (int64_t j = 0; j < a[1]; j++) {
								int64_t h = oh * a[2] - a[4] + i * a[6], v = ow * a[3] - a[5] + j * a[7];
								int64_t ci = o / og * cg + c;
								if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3])
									continue;
								s += (double)x[((n * xs[1] + ci) * xs[2] + h) * xs[3] + v] *
								     w[((o * cg + c) * a[0] + i) * a[1] + j];
							}
					*y++ = s;
				}
}

/* A conv op on f with its workspace (none for a pointwise or depthwise convolution); returns
 * its value. */
static int
conv_op(Opk k, int a0, int a1, const Type *x, const Type *w, const int64_t *a, const Type *given)
{
	Type ws;
	if (conv_workspace(&x->sh, &w->sh, a, &ws)) {
		int s = op(OP_WORKSPACE, A(0), 0, NULL, 0, NULL, &ws);
		return op(k, A(a0, a1, s), 3, a, 7, NULL, given);
	}
	return op(k, A(a0, a1), 2, a, 7, NULL, given);
}

/* conv2d by hand and against the direct convolution; conv2d_dx and conv2d_dw against finite
 * differences of conv2d. */
static void
cnn_conv(void)
{
	static float xv[300], wv[162], cw[2048], gbuf[2048];
	int x, w, y;

	for (int i = 0; i < 300; i++)
		xv[i] = xs[i % 24] * (1 + (float)(i / 24) * 0.1f);
	for (int i = 0; i < 162; i++)       /* w [6, 3, 3, 3] of config 0 at most */
		wv[i] = ws[i % 24] * (1 - (float)(i / 24) * 0.15f);
	for (int i = 0; i < 2048; i++)
		cw[i] = ws[(i * 7) % 24];

	/* a 2x2 kernel of ones over 1..9: the sums of the four 2x2 windows */
	begin();
	{
		Type tx = ty(F32, 4, 1, 1, 3, 3), tw = ty(F32, 4, 1, 1, 2, 2);
		x = decl("x", tx, FL(1, 2, 3, 4, 5, 6, 7, 8, 9));
		w = decl("w", tw, FL(1, 1, 1, 1));
		start();
		func_output(f, "y", conv_op(OP_CONV2D, x, w, &tx, &tw, I(1, 1, 0, 0, 1, 1, 1), NULL));
		expect("conv2d of a 2x2 kernel of ones", 0, FL(12, 16, 24, 28), 4, 0);
	}

	/* x [4, 3, 5, 5], w [6, 3/G, kh, kw]: padding, strides, dilation, groups, a pointwise
	 * one; batches in chunks where the workspace says so */
	static const int64_t cfg[][9] = {
		{ 3, 3, 1, 1, 1, 1, 1, 1, 1 },
		{ 3, 2, 2, 1, 1, 0, 1, 2, 3 },
		{ 3, 3, 2, 2, 2, 2, 2, 2, 1 },
		{ 1, 1, 1, 1, 0, 0, 1, 1, 3 },
	};
	for (int k = 0; k < 4; k++) {
		const int64_t *c = cfg[k], G = c[8];
		int64_t xs4[4] = { 4, 3, 5, 5 }, at[MAXIA] = { c[2], c[3], c[4], c[5], c[6], c[7], G };
		int64_t ho = window_out(5, c[0], c[2], c[4], c[6]), wo = window_out(5, c[1], c[3], c[5], c[7]);
		int64_t ny = 4 * 6 * ho * wo;
		double yr[600];
		float want[600];
		char what[128];
		Type tw = ty(F32, 4, 6, (int)(3 / G), (int)c[0], (int)c[1]), tx = ty(F32, 4, 4, 3, 5, 5);
		Type ty4 = ty(F32, 4, 4, 6, (int)ho, (int)wo);

		conv_ref(xv, wv, c, G, xs4, 6, ho, wo, yr);
		for (int64_t i = 0; i < ny; i++)
			want[i] = (float)yr[i];
		begin();
		x = decl("x", tx, xv);
		w = decl("w", tw, wv);
		start();
		func_output(f, "y", conv_op(OP_CONV2D, x, w, &tx, &tw, at, NULL));
		snprintf(what, sizeof what, "conv2d kernel %lldx%lld stride %lldx%lld pad %lldx%lld "
		         "dil %lldx%lld groups %lld", (long long)c[0], (long long)c[1], (long long)c[2],
		         (long long)c[3], (long long)c[4], (long long)c[5], (long long)c[6], (long long)c[7],
		         (long long)G);
		expect(what, 0, want, ny, 1e-5);

		/* conv2d_dx and conv2d_dw: L = sum(conv2d(x, w) * cw) over x and over w */
		for (int dw = 0; dw < 2; dw++) {
			begin();
			fd_x = decl(dw ? "w" : "x", dw ? tw : tx, dw ? wv : xv);
			w = decl(dw ? "x" : "w", dw ? tx : tw, dw ? xv : wv);
			fd_w = decl("dy", ty4, cw);
			start();
			y = conv_op(OP_CONV2D, dw ? w : fd_x, dw ? fd_x : w, &tx, &tw, at, NULL);
			finish_loss(y);
			func_output(f, "loss", fd_loss);
			if (dw)
				func_output(f, "grad", conv_op(OP_CONV2D_DW, w, fd_w, &tx, &tw, at, &tw));
			else
				func_output(f, "grad", conv_op(OP_CONV2D_DX, w, fd_w, &tx, &tw, at, &tx));
			run();
			memcpy(gbuf, interp_out(in, 1)->data, type_bytes(&interp_out(in, 1)->ty));
			snprintf(what, sizeof what, "%s, config %d", dw ? "conv2d_dw(x, dy)" : "conv2d_dx(w, dy)", k);
			fd_check(what, gbuf, shape_numel(&interp_out(in, 1)->ty.sh), 0.1, 2e-3);
		}
	}
}

/* max_pool2d and avg_pool2d by hand; their gradients against finite differences. */
static void
cnn_pool(void)
{
	static float xv[32], cw[64], gbuf[64];
	static const int64_t mx[MAXIA] = { 3, 3, 2, 2, 1, 1, 1, 1 }, av[2][MAXIA] = {
		{ 3, 2, 2, 1, 1, 0, 1 }, { 3, 2, 2, 1, 1, 0, 0 } };
	Type tx = ty(F32, 4, 1, 2, 4, 4);
	int x, y;

	/* distinct values 0.1 apart: the arg-maxes stay put under the differences' steps */
	for (int i = 0; i < 32; i++)
		xv[i] = (float)((i * 7) % 32) * 0.1f - 1.6f;
	for (int i = 0; i < 64; i++)
		cw[i] = ws[(i * 5) % 24];

	begin();
	x = decl("x", ty(F32, 4, 1, 1, 3, 3), FL(1, 5, 2, 7, 3, 9, 4, 8, 6));
	start();
	func_output(f, "m", op(OP_MAXPOOL, A(x), 1, I(2, 2, 1, 1, 0, 0, 1, 1), 8, NULL, NULL));
	func_output(f, "p", op(OP_MAXPOOL, A(x), 1, I(3, 3, 2, 2, 1, 1, 1, 1), 8, NULL, NULL));
	func_output(f, "a", op(OP_AVGPOOL, A(x), 1, I(2, 2, 2, 2, 1, 1, 1), 7, NULL, NULL));
	func_output(f, "e", op(OP_AVGPOOL, A(x), 1, I(2, 2, 2, 2, 1, 1, 0), 7, NULL, NULL));
	expect("max_pool2d 2x2 stride 1", 0, FL(7, 9, 8, 9), 4, 0);
	expect("max_pool2d 3x3 stride 2 padding 1 (padding never wins)", 1, FL(7, 9, 8, 9), 4, 0);
	expect("avg_pool2d 2x2 stride 2 padding 1, count_include_pad", 2, FL(0.25f, 1.75f, 2.75f, 6.5f), 4, 1e-7);
	expect("avg_pool2d 2x2 stride 2 padding 1, without the padding", 3, FL(1, 3.5f, 5.5f, 6.5f), 4, 1e-7);

	for (int k = 0; k < 3; k++) {
		const int64_t *a = k ? av[k - 1] : mx;
		Opk fk = k ? OP_AVGPOOL : OP_MAXPOOL, gk = k ? OP_AVGPOOL_G : OP_MAXPOOL_G;
		char what[64];
		begin();
		fd_x = decl("x", tx, xv);
		fd_w = decl("w", ty(F32, 4, 1, 2, 2, k ? 3 : 2), cw);     /* the pool's result shape */
		start();
		y = op(fk, A(fd_x), 1, a, k ? 7 : 8, NULL, NULL);
		finish_loss(y);
		func_output(f, "loss", fd_loss);
		if (k)
			func_output(f, "grad", op(gk, A(fd_w), 1, a, 7, NULL, &tx));
		else
			func_output(f, "grad", op(gk, A(fd_x, fd_w), 2, a, 8, NULL, NULL));
		run();
		memcpy(gbuf, interp_out(in, 1)->data, 32 * sizeof *gbuf);
		snprintf(what, sizeof what, "%s", opinfo[gk].name);
		if (k)
			snprintf(what, sizeof what, "%s count_include_pad=%d", opinfo[gk].name, k == 1);
		fd_check(what, gbuf, 32, 1e-2, 2e-3);
	}
}

/* Batch norm: the training form against a double-precision reference; its gradients (dx in
 * both forms, gamma's and beta's rows of dstats) against finite differences; the update by
 * hand. */
static void
cnn_bn(void)
{
	static float gv[3] = { 1.5f, -0.5f, 0.8f }, bv[3] = { 0.1f, 0.2f, -0.3f }, xv[60], wv[60];
	static float rm[3] = { 0.5f, -1, 2 }, rv[3] = { 1, 4, 0.25f };
	float want[60], gbuf[60];
	Type tx = ty(F32, 4, 2, 3, 2, 5), tc = ty(F32, 1, 3);
	int x, g, b, mu, vr, y, ds;

	for (int i = 0; i < 60; i++) {
		xv[i] = xs[i % 24] * (1 + (float)(i / 24) * 0.3f);
		wv[i] = ws[(i * 5) % 24];
	}
	for (int c = 0; c < 3; c++) {
		double s = 0, v = 0, m;
		for (int n = 0; n < 2; n++)
			for (int q = 0; q < 10; q++)
				s += xv[(n * 3 + c) * 10 + q];
		m = s / 20;
		for (int n = 0; n < 2; n++)
			for (int q = 0; q < 10; q++)
				v += (xv[(n * 3 + c) * 10 + q] - m) * (xv[(n * 3 + c) * 10 + q] - m);
		v /= 20;
		for (int n = 0; n < 2; n++)
			for (int q = 0; q < 10; q++)
				want[(n * 3 + c) * 10 + q] = (float)((xv[(n * 3 + c) * 10 + q] - m) / sqrt(v + 1e-5) * gv[c] + bv[c]);
	}
	begin();
	x = decl("x", tx, xv);
	g = decl("g", tc, gv);
	b = decl("b", tc, bv);
	start();
	mu = op(OP_BN_MEAN, A(x), 1, NULL, 0, NULL, NULL);
	vr = op(OP_BN_VAR, A(x, mu), 2, NULL, 0, NULL, NULL);
	func_output(f, "y", op(OP_BATCHNORM, A(x, g, b, mu, vr), 5, I(1), 1, F(1e-5, 0.1), NULL));
	expect("batch_norm on the batch's statistics", 0, want, 60, 2e-6);

	/* the training form's gradients: L = sum(batch_norm(x, g, b, mean(x), var(x)) * w) */
	for (int k = 0; k < 3; k++) {
		static const char *const what[] = { "batch_norm_dx(x, gamma, mean, var, dy, ds) training=1",
		                                     "batch_norm_dstats row 0 (gamma's gradient)",
		                                     "batch_norm_dstats row 1 (beta's gradient)" };
		begin();
		x = decl("x", tx, xv);
		g = decl("g", tc, gv);
		b = decl("b", tc, bv);
		fd_w = decl("w", tx, wv);
		start();
		mu = op(OP_BN_MEAN, A(x), 1, NULL, 0, NULL, NULL);
		vr = op(OP_BN_VAR, A(x, mu), 2, NULL, 0, NULL, NULL);
		y = op(OP_BATCHNORM, A(x, g, b, mu, vr), 5, I(1), 1, F(1e-5, 0.1), NULL);
		finish_loss(y);
		func_output(f, "loss", fd_loss);
		ds = op(OP_BN_DSTATS, A(x, mu, vr, fd_w), 4, NULL, 0, F(1e-5), NULL);
		func_output(f, "ds", ds);
		func_output(f, "dx", op(OP_BN_DX, A(x, g, mu, vr, fd_w, ds), 6, I(1), 1, F(1e-5), NULL));
		run();
		if (k == 0)
			memcpy(gbuf, interp_out(in, 2)->data, 60 * sizeof *gbuf);
		else
			memcpy(gbuf, (float *)interp_out(in, 1)->data + 3 * (k - 1), 3 * sizeof *gbuf);
		fd_x = k == 0 ? x : k == 1 ? g : b;
		fd_check(what[k], gbuf, k ? 3 : 60, 1e-2, 3e-3);
	}

	/* the inference form: constant statistics */
	begin();
	fd_x = decl("x", tx, xv);
	g = decl("g", tc, gv);
	b = decl("b", tc, bv);
	mu = decl("rm", tc, rm);
	vr = decl("rv", tc, rv);
	fd_w = decl("w", tx, wv);
	start();
	y = op(OP_BATCHNORM, A(fd_x, g, b, mu, vr), 5, I(0), 1, F(1e-5, 0.1), NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	ds = op(OP_BN_DSTATS, A(fd_x, mu, vr, fd_w), 4, NULL, 0, F(1e-5), NULL);
	func_output(f, "dx", op(OP_BN_DX, A(fd_x, g, mu, vr, fd_w, ds), 6, I(0), 1, F(1e-5), NULL));
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 60 * sizeof *gbuf);
	fd_check("batch_norm_dx training=0 (running statistics)", gbuf, 60, 1e-2, 2e-3);

	/* the running statistics' update, twice (two batch norms of one module) */
	begin();
	mu = mod_decl(m, "rm", R_BUFFER, tc, (Init){ .kind = INIT_ZEROS }, (Loc){0, 0});
	vr = mod_decl(m, "rv", R_BUFFER, tc, (Init){ .kind = INIT_ONES }, (Loc){0, 0});
	x = decl("m", tc, FL(1, 2, 3));
	y = decl("v", tc, FL(2, 4, 8));
	m->opt.kind = OPT_SGD;
	f = m->step = func_new(m, "step");
	m->fwd = func_new(m, "forward");
	for (int k = 0; k < 2; k++)
		func_op(f, OP_BN_UPDATE, PH_UPD, A(mu, vr, x, y), 4, I(5), 1, F(0.1), NULL, NULL, (Loc){0, 0});
	run();
	{
		const float *a = interp_decl(in, mu)->data, *v = interp_decl(in, vr)->data;
		/* m: 0 -> 0.1 m -> 0.1 m + 0.9 * 0.1 m = 0.19 m; v: 1 -> 0.1 * 1.25 v + 0.9 -> ... */
		int ok = 1;
		for (int c = 0; c < 3; c++) {
			double mm = (c + 1), vv = (double)(c == 0 ? 2 : c == 1 ? 4 : 8) * 5 / 4;
			double r1 = 0.1 * vv + 0.9, r2 = 0.1 * vv + 0.9 * r1;
			ok &= fabs(a[c] - 0.19 * mm) < 1e-6 && fabs(v[c] - r2) < 1e-6;
		}
		check(ok, "batch_norm_update twice: momentum 0.1, unbiased variance (count 5)");
	}
}

/* dropout: Philox against Random123's known answers; the mask's rate, scale and independence
 * of key, step and seed; the gradient (the same mask) by finite differences; inference. */
static void
cnn_dropout(void)
{
	enum { NE = 20000 };
	static float xv[NE], wv[NE], o1[NE];
	float gbuf[24];
	int x, t, y;
	int64_t kept = 0, same = 0;

	check(mtc_philox(0, 0, 0, 0, 0, 0) == 0x6627e8d5u &&
	      mtc_philox(~0u, ~0u, ~0u, ~0u, ~0u, ~0u) == 0x408f276du &&
	      mtc_philox(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u) == 0xd16cfe09u,
	      "Philox4x32-10 gives Random123's known answers");
	for (int i = 0; i < NE; i++)
		xv[i] = 1 + (float)(i % 7);

	begin();
	x = decl("x", ty(F32, 2, 100, 200), xv);
	t = mod_decl(m, "t", R_INPUT, ty(I32, 0), (Init){ .kind = INIT_NONE }, (Loc){0, 0});
	data[t] = IL(5);
	start();
	func_output(f, "a", op(OP_DROPOUT, A(x, t), 2, I(3, 11), 2, F(0.3), NULL));
	func_output(f, "b", op(OP_DROPOUT, A(x, t), 2, I(4, 11), 2, F(0.3), NULL));
	func_output(f, "c", op(OP_DROPOUT, A(x, t), 2, I(3, 12), 2, F(0.3), NULL));
	func_output(f, "e", op(OP_DROPOUT, A(x), 1, I(3, 11), 2, F(0.3), NULL));
	run();
	{
		const float *a = interp_out(in, 0)->data, *b = interp_out(in, 1)->data;
		const float *c = interp_out(in, 2)->data, *e = interp_out(in, 3)->data;
		float sc = (float)(1.0 / 0.7);
		int ok = 1, eq = 1;
		int64_t sb = 0, sc2 = 0;
		for (int i = 0; i < NE; i++) {
			kept += a[i] != 0;
			ok &= a[i] == 0 || a[i] == xv[i] * sc;
			ok &= (a[i] != 0) == (mtc_dropout_u(i, 3, 5, 11) >= 0.3f);
			sb += (a[i] != 0) == (b[i] != 0);
			sc2 += (a[i] != 0) == (c[i] != 0);
			eq &= e[i] == xv[i];
			o1[i] = a[i];
		}
		/* 70% kept: 14000 of 20000, the binomial's sd about 65 */
		check(ok && kept > 14000 - 400 && kept < 14000 + 400,
		      "dropout p=0.3: %lld of %d kept, each x/(1-p), as mtc_dropout_u says", (long long)kept, NE);
		/* independent masks agree on 0.7^2 + 0.3^2 = 58% of the elements */
		check(sb > 11600 - 500 && sb < 11600 + 500 && sc2 > 11600 - 500 && sc2 < 11600 + 500,
		      "another key or seed draws another mask (agreement %lld, %lld of %d)", (long long)sb,
		      (long long)sc2, NE);
		check(eq, "dropout without a step counter (inference) is the identity");
	}
	data[t] = IL(6);
	interp_free(in);
	in = NULL;
	run();
	{
		const float *a = interp_out(in, 0)->data;
		for (int i = 0; i < NE; i++)
			same += (a[i] != 0) == (o1[i] != 0);
		check(same > 11600 - 500 && same < 11600 + 500, "the next step draws another mask (agreement %lld)",
		      (long long)same);
	}

	/* the gradient: dropout of dy with the same counter and attributes */
	for (int i = 0; i < 24; i++)
		wv[i] = ws[i];
	begin();
	fd_x = decl("x", ty(F32, 2, 4, 6), xs);
	fd_w = decl("w", ty(F32, 2, 4, 6), wv);
	t = mod_decl(m, "t", R_INPUT, ty(I32, 0), (Init){ .kind = INIT_NONE }, (Loc){0, 0});
	data[t] = IL(2);
	start();
	y = op(OP_DROPOUT, A(fd_x, t), 2, I(1, 7), 2, F(0.5), NULL);
	finish_loss(y);
	func_output(f, "loss", fd_loss);
	func_output(f, "grad", op(OP_DROPOUT, A(fd_w, t), 2, I(1, 7), 2, F(0.5), NULL));
	run();
	memcpy(gbuf, interp_out(in, 1)->data, 24 * sizeof *gbuf);
	fd_check("dropout's gradient: dropout(dy, t)", gbuf, 24, 1e-2, 2e-3);
}

/* swap_out/swap_in/wait and rec ops give the same values; buffers die after their last use. */
static void
planner_ops(void)
{
	int a, b, s, i;
	int64_t peak1, peak2;

	begin();
	a = decl("a", ty(F32, 1, 1024), NULL);
	start();
	b = op(OP_RELU, A(a), 1, NULL, 0, NULL, NULL);
	s = op(OP_SWAPOUT, A(b), 1, NULL, 0, NULL, NULL);
	func_op(f, OP_WAIT, PH_MEM, A(s), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	i = op(OP_SWAPIN, A(s), 1, NULL, 0, NULL, NULL);
	f->op[f->nop - 1].phase = PH_MEM;
	{
		int rec = op(OP_RELU, A(a), 1, NULL, 0, NULL, NULL);
		f->op[f->nop - 1].phase = PH_REC;
		f->op[f->nop - 1].of = b;
		func_output(f, "sum", op(OP_ADD, A(i, rec), 2, NULL, 0, NULL, NULL));
	}
	run();
	{
		const float *x = interp_decl(in, a)->data, *o = interp_out(in, 0)->data;
		int ok = 1;
		for (int k = 0; k < 1024; k++)
			ok &= o[k] == 2 * (x[k] > 0 ? x[k] : 0);
		check(ok, "swap_out, wait, swap_in, rec");
	}
	/* swap_home: the copy of a state living in host memory goes back to its home */
	begin();
	a = decl("a", ty(F32, 1, 1024), NULL);
	s = mod_decl(m, "m", R_STATE, ty(F32, 1, 1024), (Init){ .kind = INIT_ZEROS }, (Loc){0, 0});
	mod_set_host(m, s);
	start();
	i = op(OP_SWAPIN, A(s), 1, NULL, 0, NULL, NULL);
	b = op(OP_RELU, A(a), 1, NULL, 0, NULL, NULL);
	{
		int h = op(OP_SWAPHOME, A(s, b), 2, NULL, 0, NULL, NULL);
		func_op(f, OP_WAIT, PH_MEM, A(h), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
		func_output(f, "y", op(OP_ADD, A(i, b), 2, NULL, 0, NULL, NULL));
	}
	run();
	{
		const float *x = interp_decl(in, a)->data, *home = interp_decl(in, s)->data;
		const float *o = interp_out(in, 0)->data;
		int ok = 1;
		for (int k = 0; k < 1024; k++)
			ok &= home[k] == (x[k] > 0 ? x[k] : 0) && o[k] == home[k];
		check(ok, "swap_in of a state in host memory, swap_home");
	}
	/* a chain of 16 relus holds at most two 4 KiB values at a time */
	begin();
	a = decl("a", ty(F32, 1, 1024), NULL);
	start();
	b = a;
	for (int k = 0; k < 16; k++)
		b = op(OP_RELU, A(b), 1, NULL, 0, NULL, NULL);
	func_output(f, "y", b);
	run();
	peak1 = interp_peak(in);
	check(peak1 == 3 * 4096, "values die after their last use (peak = input + 2 values)");
	run();
	peak2 = interp_peak(in);
	check(peak2 == peak1, "a second run does not grow the peak");
}

/* allreduce packs its operands and sums them over the ranks (the interpreter's other ranks hold
 * what this one holds), times scale; unbucket copies a part back after the wait. */
static void
collectives(void)
{
	static const int64_t ranks[] = { 1, 2, 3 };
	static const double scale[] = { 1, 0.5, 1 };

	for (int k = 0; k < 3; k++) {
		int a, b, bk, u0, u1;
		Type ta = ty(F32, 2, 2, 3), tb = ty(F32, 1, 5);
		char what[96];
		float want[11], x[6] = { 1, -2, 3.5f, 4, 5, 6 }, y[5] = { 0.25f, 7, -8, 9, 10 };

		begin();
		a = decl("a", ta, x);
		b = decl("b", tb, y);
		start();
		bk = op(OP_ALLREDUCE, A(a, b), 2, I(ranks[k]), 0, F(scale[k]), NULL);
		f->op[f->nop - 1].phase = PH_MEM;
		func_op(f, OP_WAIT, PH_MEM, A(bk), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
		u0 = op(OP_UNBUCKET, A(bk), 1, I(0), 0, NULL, &tb);
		u1 = op(OP_UNBUCKET, A(bk), 1, I(5), 0, NULL, &ta);
		func_output(f, "u0", u0);
		func_output(f, "u1", u1);
		func_output(f, "bucket", op(OP_UNBUCKET, A(bk), 1, I(0), 0, NULL, &(Type){ F32, { 1, { 11 } } }));
		for (int i = 0; i < 11; i++)
			want[i] = (float)((i < 6 ? x[i] : y[i - 6]) * (double)ranks[k] * scale[k]);
		snprintf(what, sizeof what, "allreduce ranks=%lld scale=%g: the bucket", (long long)ranks[k], scale[k]);
		expect(what, 2, want, 11, 0);
		snprintf(what, sizeof what, "allreduce ranks=%lld: unbucket start=0", (long long)ranks[k]);
		expect(what, 0, want, 5, 0);
		snprintf(what, sizeof what, "allreduce ranks=%lld: unbucket start=5", (long long)ranks[k]);
		expect(what, 1, want + 5, 6, 0);
		check(f->val[bk].host, "allreduce ranks=%lld: the bucket lives in host memory",
		      (long long)ranks[k]);
	}
}

/* ZeRO's ops on rank 0 of 2 (the other rank holding what it holds): a 6- and a 5-element
 * tensor have shards of 3 (the second zero padded); reduce_scatter packs ranks blocks of
 * their shards, sums over the ranks and keeps this rank's block first; allgather puts this
 * rank's shards in its block and takes every rank's; unshard writes each rank's shard back. */
static void
zero_ops(void)
{
	int a, b, sa, sb, rs, ag;
	float x[6] = { 1, -2, 3.5f, 4, 5, 6 }, y[5] = { 0.25f, 7, -8, 9, 10 };
	Type t6 = ty(F32, 1, 6);

	begin();
	a = decl("a", ty(F32, 2, 2, 3), x);
	b = decl("b", ty(F32, 1, 5), y);
	start();
	sa = op(OP_SHARD, A(a), 1, I(2), 0, NULL, NULL);
	sb = op(OP_SHARD, A(b), 1, I(2), 0, NULL, NULL);
	rs = op(OP_REDSCAT, A(a, b), 2, I(2), 0, F(0.25), NULL);
	f->op[f->nop - 1].phase = PH_MEM;
	func_op(f, OP_WAIT, PH_MEM, A(rs), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	ag = op(OP_ALLGATHER, A(sa, sb), 2, I(2), 0, NULL, NULL);
	f->op[f->nop - 1].phase = PH_MEM;
	func_op(f, OP_WAIT, PH_MEM, A(ag), 1, NULL, 0, NULL, NULL, NULL, (Loc){0, 0});
	func_op(f, OP_UNSHARD, PH_UPD, A(a, ag), 2, I(2, 0), 0, NULL, NULL, NULL, (Loc){0, 0});
	func_op(f, OP_UNSHARD, PH_UPD, A(b, ag), 2, I(2, 3), 0, NULL, NULL, NULL, (Loc){0, 0});
	func_output(f, "sa", sa);
	func_output(f, "sb", sb);
	func_output(f, "rs", op(OP_UNBUCKET, A(rs), 1, I(0), 0, NULL, &t6));
	func_output(f, "a", a);
	func_output(f, "b", b);
	check(shape_numel(&f->val[rs].ty.sh) == 12 && shape_numel(&f->val[ag].ty.sh) == 12 &&
	      shape_numel(&f->val[sb].ty.sh) == 3, "ZeRO ops: a shard is ceil(numel / ranks), a bucket every rank's blocks");
	expect("shard of 6 over 2: rank 0's 3", 0, x, 3, 0);
	expect("shard of 5 over 2: rank 0's 3", 1, y, 3, 0);
	expect("reduce_scatter: this rank's block, summed and scaled", 2, FL(0.5f, -1, 1.75f, 0.125f, 3.5f, -4), 6, 0);
	/* both ranks' blocks are rank 0's here: the params come back as its shards twice */
	expect("allgather, unshard: every rank's shard of a", 3, FL(1, -2, 3.5f, 1, -2, 3.5f), 6, 0);
	expect("allgather, unshard at start 3: every rank's shard of b, padding dropped", 4,
	       FL(0.25f, 7, -8, 0.25f, 7), 5, 0);
}

static void
init_values(void)
{
	Module *m2;
	Tensor t1, t2;
	float b1[1000], b2[1000];
	int32_t lab[64];
	double s = 0, s2 = 0;
	int d, ok;

	begin();
	d = mod_decl(m, "w", R_PARAM, ty(F32, 1, 1000), (Init){ .kind = INIT_NORMAL, .a = 1.0, .b = 0.5 }, (Loc){0, 0});
	t1.data = b1;
	t2.data = b2;
	init_tensor(&m->decl[d], 7, &t1);
	init_tensor(&m->decl[d], 7, &t2);
	check(memcmp(b1, b2, sizeof b1) == 0, "init is deterministic");
	for (int i = 0; i < 1000; i++) {
		s += b1[i];
		s2 += (b1[i] - 1.0) * (b1[i] - 1.0);
	}
	check(fabs(s / 1000 - 1) < 0.05 && fabs(sqrt(s2 / 1000) - 0.5) < 0.05, "normal(1, 0.5): sample mean and std");
	init_tensor(&m->decl[d], 8, &t2);
	check(memcmp(b1, b2, sizeof b1) != 0, "another seed gives other values");
	/* the value depends on the name and the seed only, not on the module around it */
	m2 = mod_new("other", "o.tdsl");
	mod_decl(m2, "pad", R_PARAM, ty(F32, 1, 3), (Init){ .kind = INIT_ZEROS }, (Loc){0, 0});
	d = mod_decl(m2, "w", R_PARAM, ty(F32, 1, 1000), (Init){ .kind = INIT_NORMAL, .a = 1.0, .b = 0.5 }, (Loc){0, 0});
	init_tensor(&m2->decl[d], 7, &t2);
	check(memcmp(b1, b2, sizeof b1) == 0, "init depends on (name, seed) only");
	mod_free(m2);
	d = mod_decl(m, "u", R_PARAM, ty(F32, 1, 1000), (Init){ .kind = INIT_UNIFORM, .a = -2, .b = 3 }, (Loc){0, 0});
	init_tensor(&m->decl[d], 0, &t1);
	ok = 1;
	for (int i = 0; i < 1000; i++)
		ok &= b1[i] >= -2 && b1[i] < 3;
	check(ok, "uniform(-2, 3) in range");

	/* i32 inputs: labels in range of the classes, ids in range of the table */
	begin();
	d = decl("ids", ty(I32, 1, 64), NULL);
	decl("tab", ty(F32, 2, 7, 2), NULL);
	decl("lab", ty(I32, 1, 64), NULL);
	decl("lg", ty(F32, 2, 64, 5), NULL);
	start();
	{
		Type t = ty(I32, 2, 8, 8);
		int r = op(OP_RESHAPE, A(d), 1, NULL, 0, NULL, &t);
		func_output(f, "e", op(OP_EMBEDDING, A(1, r), 2, NULL, 0, NULL, NULL));
		func_output(f, "l", op(OP_XENT, A(3, 2), 2, NULL, 0, NULL, NULL));
	}
	check(input_range(m, 0) == 7, "input_range: embedding rows through a reshape");
	check(input_range(m, 2) == 5, "input_range: cross_entropy classes");
	check(input_range(m, 1) == 0, "input_range: f32 input is unbounded");
	setup();
	memcpy(lab, interp_decl(in, 0)->data, sizeof lab);
	ok = 1;
	for (int i = 0; i < 64; i++)
		ok &= lab[i] >= 0 && lab[i] < 7;
	memcpy(lab, interp_decl(in, 2)->data, sizeof lab);
	for (int i = 0; i < 64; i++)
		ok &= lab[i] >= 0 && lab[i] < 5;
	check(ok, "pseudo-random i32 inputs are in range");
	{
		const float *x = interp_decl(in, 1)->data;
		ok = 1;
		for (int i = 0; i < 14; i++)
			ok &= x[i] >= -1 && x[i] < 1;
		check(ok, "pseudo-random f32 inputs in [-1, 1)");
	}
	check(run() == 0, "the model runs on them");
}

int
main(void)
{
	check_echo = 1;     /* the log lists every case */
	elementwise();
	broadcasting();
	matmul();
	layout();
	reductions();
	softmax_layernorm();
	embedding_losses();
	imported_ops();
	optimizers();
	copy_out();
	grads();
	cnn_basic();
	cnn_conv();
	cnn_pool();
	cnn_bn();
	cnn_dropout();
	planner_ops();
	collectives();
	zero_ops();
	init_values();
	{
		int all = 1;
		for (int k = 0; k < NOP; k++)
			if (!covered[k]) {
				printf("  no case runs %s\n", opinfo[k].name);
				all = 0;
			}
		check(all, "every op kind of OPTAB has a case");
	}
	begin();
	mod_free(m);
	return done();
}
