/* gradcheck.c: every differentiable op's IR gradient against central finite differences.
 *
 * Each case builds a tiny forward in C (random values, shapes with broadcasting, batched and
 * transposed matmuls), takes loss = sum(op result * fixed random weights), runs autodiff and
 * simplify, evaluates the gradients with the interpreter, and compares them with
 * (L(x + e) - L(x - e)) / (x+e - x-e) in double, the loss evaluated by the interpreter in f32
 * with e = 1e-2 (the actual f32 perturbation is used as the denominator).
 * Bound: max_j |grad_j - fd_j| / max(max_j |fd_j|, 1e-3) <= 2e-3 for every param (observed:
 * at most 5e-4, the truncation error of pow(x, -1.5)); a case whose finite differences are
 * all below 1e-3 fails as degenerate. Kinks are kept farther
 * than e away: relu inputs have |x| >= 0.2, max inputs are distinct multiples of 0.1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "tb.h"

enum { MAXP = 8 };
static const double EPS = 1e-2, TOL = 2e-3;

static Tb *cur;    /* the case being built */
static int covered[NOP];   /* op kinds some case differentiates */
static int P(const char *nm, Shape sh, Vkind vk, double lo, double hi) { return tb_decl(cur, nm, R_PARAM, F32, sh, vk, lo, hi); }
static int U(const char *nm, Shape sh) { return P(nm, sh, V_UNIF, -1, 1); }
#define IA(...) (int64_t[MAXIA]){ __VA_ARGS__ }   /* op_infer reads every attribute */
#define FA(...) (double[MAXFA]){ __VA_ARGS__ }
#define ARGS(...) (int[]){ __VA_ARGS__ }, (int)(sizeof((int[]){ __VA_ARGS__ }) / sizeof(int))

static int c_add(Tb *t) { int a = U("a", SH(3, 4)), b = U("b", SH(4)); return tb_op2(t, OP_ADD, a, b); }
static int c_add2(Tb *t) { int a = U("a", SH(2, 1, 4)), b = U("b", SH(3, 1)); return tb_op2(t, OP_ADD, a, b); }
static int c_sub(Tb *t) { int a = U("a", SH(3, 4)), b = U("b", SH(3, 1)); return tb_op2(t, OP_SUB, a, b); }
static int c_sub2(Tb *t) { int a = U("a", SCALAR), b = U("b", SH(2, 3)); return tb_op2(t, OP_SUB, a, b); }
static int c_mul(Tb *t) { int a = U("a", SH(2, 3, 4)), b = U("b", SH(3, 1)); return tb_op2(t, OP_MUL, a, b); }
static int c_div(Tb *t) { int a = U("a", SH(3, 4)), b = P("b", SH(4), V_SIGNED, 0.5, 2); return tb_op2(t, OP_DIV, a, b); }
static int c_div2(Tb *t) { int a = U("a", SH(4)), b = P("b", SH(2, 1), V_UNIF, 0.5, 2); return tb_op2(t, OP_DIV, a, b); }

static int
mm(Tb *t, Shape sa, Shape sb, int ta, int tb)
{
	int a = U("a", sa), b = U("b", sb);
	return tb_op(t, OP_MATMUL, ARGS(a, b), IA(ta, tb), 0, NULL, NULL);
}
static int c_mm(Tb *t) { return mm(t, SH(3, 4), SH(4, 5), 0, 0); }
static int c_mm_ta(Tb *t) { return mm(t, SH(4, 3), SH(4, 5), 1, 0); }
static int c_mm_tb(Tb *t) { return mm(t, SH(3, 4), SH(5, 4), 0, 1); }
static int c_mm_tab(Tb *t) { return mm(t, SH(4, 3), SH(5, 4), 1, 1); }
static int c_bmm(Tb *t) { return mm(t, SH(2, 3, 4), SH(2, 4, 5), 0, 0); }
static int c_bmm_bc(Tb *t) { return mm(t, SH(3, 4), SH(2, 4, 5), 0, 0); }
static int c_bmm_bc2(Tb *t) { return mm(t, SH(2, 3, 4), SH(4, 2), 0, 0); }
static int c_bmm_w_tb(Tb *t) { return mm(t, SH(2, 3, 4), SH(5, 4), 0, 1); }
static int c_bmm_w_ta(Tb *t) { return mm(t, SH(2, 4, 3), SH(4, 5), 1, 0); }
static int c_bmm_bct(Tb *t) { return mm(t, SH(2, 1, 4, 3), SH(3, 2, 4), 1, 1); }
static int c_bmm_bct2(Tb *t) { return mm(t, SH(1, 3, 4), SH(2, 1, 3, 5), 1, 0); }

static int un(Tb *t, Opk k, Vkind vk, double lo, double hi) { return tb_op1(t, k, P("x", SH(3, 4), vk, lo, hi)); }
static int c_relu(Tb *t) { return un(t, OP_RELU, V_SIGNED, 0.2, 1); }
static int c_gelu(Tb *t) { return un(t, OP_GELU, V_UNIF, -2, 2); }
static int c_tanh(Tb *t) { return un(t, OP_TANH, V_UNIF, -2, 2); }
static int c_sigmoid(Tb *t) { return un(t, OP_SIGMOID, V_UNIF, -2, 2); }
static int c_exp(Tb *t) { return un(t, OP_EXP, V_UNIF, -1, 1); }
static int c_log(Tb *t) { return un(t, OP_LOG, V_UNIF, 0.5, 2); }
static int c_sqrt(Tb *t) { return un(t, OP_SQRT, V_UNIF, 0.5, 2); }
static int c_rsqrt(Tb *t) { return un(t, OP_RSQRT, V_UNIF, 0.5, 2); }
static int c_neg(Tb *t) { return un(t, OP_NEG, V_UNIF, -1, 1); }
static int c_sin(Tb *t) { return un(t, OP_SIN, V_UNIF, -4, 4); }
static int c_cos(Tb *t) { return un(t, OP_COS, V_UNIF, -4, 4); }

/* select by comparisons (|a| >= 0.2: no step moves within EPS): y = a where a < -a, else c
 * (broadcast); then a or c where a <= -a; then a * y where a == a (all of it). The
 * comparisons pass nothing back. */
static int
c_select(Tb *t)
{
	int a = P("a", SH(3, 4), V_SIGNED, 0.2, 1), c = U("c", SH(4)), na = tb_op1(t, OP_NEG, a);
	int y = tb_op(t, OP_SELECT, ARGS(tb_op2(t, OP_LT, a, na), a, c), NULL, 0, NULL, NULL);
	int z = tb_op(t, OP_SELECT, ARGS(tb_op2(t, OP_LE, a, na), c, y), NULL, 0, NULL, NULL);
	return tb_op2(t, OP_MUL, tb_op2(t, OP_MUL, z, tb_op2(t, OP_EQ, a, a)), a);
}

/* floor, ceil and round of 0.4 a (in [0.08, 0.4] in magnitude: no step within EPS), plus
 * a, times a: the steps pass nothing back. */
static int
c_steps(Tb *t)
{
	int a = P("a", SH(3, 4), V_SIGNED, 0.2, 1);
	int ac = tb_op2(t, OP_MUL, a, tb_op(t, OP_CONST, NULL, 0, NULL, 0, FA(0.4), &SCALAR));
	int s = tb_op2(t, OP_ADD, tb_op2(t, OP_ADD, tb_op1(t, OP_FLOOR, ac), tb_op1(t, OP_CEIL, ac)),
	               tb_op1(t, OP_ROUND, ac));
	return tb_op2(t, OP_MUL, tb_op2(t, OP_ADD, s, a), a);
}

/* cumsum along each axis, exclusive and reversed, times a weight (so every position's
 * gradient differs) */
static int
c_cumsum(Tb *t)
{
	int a = U("a", SH(3, 4)), w = U("w", SH(3, 4)), s = a;

	for (int e = 0; e < 4; e++)
		s = tb_op2(t, OP_ADD, s, tb_op(t, OP_CUMSUM, ARGS(a), IA(e & 1, e & 1, e >> 1), 3, NULL, NULL));
	return tb_op2(t, OP_MUL, s, w);
}

/* maximum of a and a broadcast b (|a - b| >= 0.1 apart), then of a with itself: a tie, whose
 * gradient is half to each side, 1 in all. */
static int
c_maximum(Tb *t)
{
	int a = P("a", SH(3, 2), V_SIGNED, 0.2, 1), b = P("b", SH(2), V_SIGNED, 0.05, 0.1);
	return tb_op2(t, OP_MUL, tb_op2(t, OP_MAXIMUM, a, b), tb_op2(t, OP_MAXIMUM, a, a));
}

static int
pw(Tb *t, double c, double lo, double hi)
{
	int x = P("x", SH(2, 3), V_UNIF, lo, hi);
	return tb_op(t, OP_POW, &x, 1, NULL, 0, FA(c), NULL);
}
static int c_pow3(Tb *t) { return pw(t, 3, -1, 1); }
static int c_pow_half(Tb *t) { return pw(t, 0.5, 0.5, 2); }
static int c_pow_neg(Tb *t) { return pw(t, -1.5, 0.5, 2); }

static int c_transpose(Tb *t) { int x = U("x", SH(2, 3, 4)); return tb_op(t, OP_TRANSPOSE, &x, 1, IA(2, 0, 1), 3, NULL, NULL); }
static int c_transpose2(Tb *t) { int x = U("x", SH(3, 4)); return tb_op(t, OP_TRANSPOSE, &x, 1, IA(1, 0), 2, NULL, NULL); }
static int c_reshape(Tb *t) { int x = U("x", SH(2, 3, 4)); return tb_op(t, OP_RESHAPE, &x, 1, NULL, 0, NULL, &SH(4, 6)); }

static int
c_concat(Tb *t)
{
	int a = U("a", SH(2, 3)), b = U("b", SH(2, 2)), c = U("c", SH(2, 4));
	return tb_op(t, OP_CONCAT, ARGS(a, b, c), IA(1), 0, NULL, NULL);
}
static int
c_concat0(Tb *t)
{
	int a = U("a", SH(1, 3, 2)), b = U("b", SH(2, 3, 2));
	return tb_op(t, OP_CONCAT, ARGS(a, b, a), IA(0), 0, NULL, NULL);
}

static int red(Tb *t, Opk k, Shape s, int ax, int keep, Vkind vk) { int x = P("x", s, vk, vk == V_GRID ? -1 : -1, vk == V_GRID ? 0.1 : 1); return tb_op(t, k, &x, 1, IA(ax, keep), 0, NULL, NULL); }
static int c_sum(Tb *t) { return red(t, OP_SUM, SH(2, 3, 4), 1, 0, V_UNIF); }
static int c_sum_keep(Tb *t) { return red(t, OP_SUM, SH(2, 3, 4), 2, 1, V_UNIF); }
static int c_mean(Tb *t) { return red(t, OP_MEAN, SH(3, 4), 0, 0, V_UNIF); }
static int c_mean_keep(Tb *t) { return red(t, OP_MEAN, SH(2, 3, 4), 2, 1, V_UNIF); }
static int c_max(Tb *t) { return red(t, OP_MAX, SH(3, 5), 1, 0, V_GRID); }
static int c_max_keep(Tb *t) { return red(t, OP_MAX, SH(4, 3, 2), 0, 1, V_GRID); }

static int sm(Tb *t, Opk k, Shape s, int ax) { int x = P("x", s, V_UNIF, -2, 2); return tb_op(t, k, &x, 1, IA(ax), 0, NULL, NULL); }
static int c_softmax(Tb *t) { return sm(t, OP_SOFTMAX, SH(3, 5), 1); }
static int c_softmax_mid(Tb *t) { return sm(t, OP_SOFTMAX, SH(2, 4, 3), 1); }
static int c_logsoftmax(Tb *t) { return sm(t, OP_LOGSOFTMAX, SH(3, 5), 1); }
static int c_logsoftmax0(Tb *t) { return sm(t, OP_LOGSOFTMAX, SH(4, 3), 0); }

static int
ln(Tb *t, Shape s)
{
	int d = (int)s.d[s.rank - 1];
	int x = P("x", s, V_UNIF, -2, 2), g = P("g", SH(d), V_UNIF, 0.5, 1.5), b = U("b", SH(d));
	return tb_op(t, OP_LAYERNORM, ARGS(x, g, b), NULL, 0, FA(1e-5), NULL);
}
static int c_layernorm(Tb *t) { return ln(t, SH(3, 6)); }
static int c_layernorm3(Tb *t) { return ln(t, SH(2, 2, 5)); }

static int
c_embedding(Tb *t)
{
	int e = U("e", SH(5, 3)), ids = tb_decl(t, "ids", R_INPUT, I32, SH(2, 4), V_INT, 0, 5);
	return tb_op2(t, OP_EMBEDDING, e, ids);
}

static int
c_xent(Tb *t)
{
	int x = P("x", SH(6, 5), V_UNIF, -2, 2), y = tb_decl(t, "y", R_INPUT, I32, SH(6), V_INT, 0, 5);
	return tb_op2(t, OP_XENT, x, y);
}
static int
c_xent3(Tb *t)
{
	int x = P("x", SH(2, 3, 4), V_UNIF, -2, 2), y = tb_decl(t, "y", R_INPUT, I32, SH(2, 3), V_INT, 0, 4);
	return tb_op2(t, OP_XENT, x, y);
}
static int c_mse(Tb *t) { int a = U("a", SH(3, 4)), b = U("b", SH(3, 4)); return tb_op2(t, OP_MSE, a, b); }
static int c_mse_bc(Tb *t) { int a = U("a", SH(3, 4)), b = U("b", SH(4)); return tb_op2(t, OP_MSE, a, b); }

/* clip: inputs 0.1 or more from its bounds (-3 and 0.5), half of them clipped. */
static int c_clip(Tb *t) { int x = P("x", SH(3, 4), V_SIGNED, 0.6, 1); return tb_op(t, OP_CLIP, &x, 1, NULL, 0, FA(-3, 0.5), NULL); }
static int c_slice(Tb *t) { int x = U("x", SH(3, 4, 5)); return tb_op(t, OP_SLICE, &x, 1, IA(1, 1), 0, NULL, &SH(3, 2, 5)); }
/* several slices of one value: disjoint (out of order, a gap between; autodiff's concat of
 * their gradients, no slice_grad left), and overlapping (their slice_grads added) */
static int
c_slices(Tb *t)
{
	int x = U("x", SH(3, 7, 2));
	int a = tb_op(t, OP_SLICE, &x, 1, IA(1, 0), 0, NULL, &SH(3, 2, 2));
	int b = tb_op(t, OP_SLICE, &x, 1, IA(1, 4), 0, NULL, &SH(3, 3, 2));
	int c = tb_op(t, OP_SLICE, &x, 1, IA(1, 2), 0, NULL, &SH(3, 1, 2));
	return tb_op(t, OP_CONCAT, ARGS(tb_op1(t, OP_TANH, a), b, tb_op2(t, OP_MUL, c, c)), IA(1), 0, NULL, NULL);
}
static int
c_slices_ov(Tb *t)
{
	int x = U("x", SH(3, 7, 2));
	int a = tb_op(t, OP_SLICE, &x, 1, IA(1, 0), 0, NULL, &SH(3, 4, 2));
	int b = tb_op(t, OP_SLICE, &x, 1, IA(1, 2), 0, NULL, &SH(3, 4, 2));
	return tb_op2(t, OP_MUL, tb_op1(t, OP_TANH, a), b);
}

/* conv2d as the frontend makes it, with its workspace (none for a pointwise or depthwise
 * one); dx and dw each get a workspace of their own in the backward. */
static int
cv(Tb *t, Shape xs, Shape wsh, const int64_t *a)
{
	int x = U("x", xs), w = U("w", wsh);
	Type ws;
	if (conv_workspace(&xs, &wsh, a, &ws)) {
		int k = tb_op(t, OP_WORKSPACE, (int[]){ 0 }, 0, NULL, 0, NULL, &ws.sh);
		return tb_op(t, OP_CONV2D, ARGS(x, w, k), a, 0, NULL, NULL);
	}
	return tb_op(t, OP_CONV2D, ARGS(x, w), a, 0, NULL, NULL);
}
static int c_conv(Tb *t) { return cv(t, SH(2, 3, 5, 4), SH(4, 3, 3, 3), IA(2, 1, 1, 1, 1, 1, 1)); }
static int c_conv_dil(Tb *t) { return cv(t, SH(2, 4, 6, 6), SH(4, 2, 2, 3), IA(1, 2, 0, 2, 2, 1, 2)); }
static int c_conv_dw(Tb *t) { return cv(t, SH(2, 3, 4, 4), SH(3, 1, 3, 3), IA(1, 1, 1, 1, 1, 1, 3)); }
static int c_conv_1x1s2(Tb *t) { return cv(t, SH(2, 4, 3, 3), SH(5, 4, 1, 1), IA(2, 2, 0, 0, 1, 1, 1)); }
static int c_conv_pw(Tb *t) { return cv(t, SH(2, 4, 3, 2), SH(6, 2, 1, 1), IA(1, 1, 0, 0, 1, 1, 2)); }

/* conv2d_dx in the forward, a transposed convolution (ONNX's ConvTranspose): x has the shape
 * of the convolution of the result (ys) by w */
static int
cvt(Tb *t, Shape ys, Shape wsh, Shape xs, const int64_t *a)
{
	int x = U("x", xs), w = U("w", wsh);
	Type ws;
	if (conv_workspace(&ys, &wsh, a, &ws)) {
		int k = tb_op(t, OP_WORKSPACE, (int[]){ 0 }, 0, NULL, 0, NULL, &ws.sh);
		return tb_op(t, OP_CONV2D_DX, ARGS(w, x, k), a, 0, NULL, &ys);
	}
	return tb_op(t, OP_CONV2D_DX, ARGS(w, x), a, 0, NULL, &ys);
}
static int c_convt(Tb *t) { return cvt(t, SH(2, 3, 6, 4), SH(4, 3, 3, 3), SH(2, 4, 3, 4), IA(2, 1, 1, 1, 1, 1, 1)); }
static int c_convt_dil(Tb *t) { return cvt(t, SH(2, 4, 6, 6), SH(4, 2, 2, 3), SH(2, 4, 4, 4), IA(1, 2, 0, 2, 2, 1, 2)); }
static int c_convt_dw(Tb *t) { return cvt(t, SH(2, 3, 4, 4), SH(3, 1, 3, 3), SH(2, 3, 4, 4), IA(1, 1, 1, 1, 1, 1, 3)); }

/* pools; max_pool2d's inputs distinct multiples of 0.1 so that its arg-maxes stay put */
static int c_maxpool(Tb *t) { int x = P("x", SH(2, 2, 5, 5), V_GRID, -2.5, 0.1); return tb_op(t, OP_MAXPOOL, &x, 1, IA(3, 3, 2, 2, 1, 1, 1, 1), 0, NULL, NULL); }
static int c_maxpool_dil(Tb *t) { int x = P("x", SH(1, 2, 5, 6), V_GRID, -3, 0.1); return tb_op(t, OP_MAXPOOL, &x, 1, IA(2, 2, 1, 2, 0, 1, 2, 1), 0, NULL, NULL); }
static int c_avgpool(Tb *t) { int x = U("x", SH(2, 2, 5, 4)); return tb_op(t, OP_AVGPOOL, &x, 1, IA(3, 2, 2, 1, 1, 1, 1), 0, NULL, NULL); }
static int c_avgpool_ex(Tb *t) { int x = U("x", SH(2, 2, 5, 4)); return tb_op(t, OP_AVGPOOL, &x, 1, IA(3, 3, 1, 2, 1, 1, 0), 0, NULL, NULL); }

/* batch_norm in its training form (the step's): the batch's statistics, so dx includes their
 * dependence on x; over NCHW and over [N, C]. */
static int
bn(Tb *t, Shape xs)
{
	int64_t c = xs.d[1];
	int x = P("x", xs, V_UNIF, -2, 2), g = P("g", (Shape){ 1, { c } }, V_UNIF, 0.5, 1.5);
	int b = U("b", (Shape){ 1, { c } });
	int mu = tb_op(t, OP_BN_MEAN, &x, 1, NULL, 0, NULL, NULL);
	int vr = tb_op(t, OP_BN_VAR, ARGS(x, mu), NULL, 0, NULL, NULL);
	return tb_op(t, OP_BATCHNORM, ARGS(x, g, b, mu, vr), IA(1), 0, FA(1e-5, 0.1), NULL);
}
static int c_bn(Tb *t) { return bn(t, SH(3, 2, 2, 3)); }
static int c_bn1d(Tb *t) { return bn(t, SH(5, 3)); }

/* dropout in its training form, the counter an input: the mask is fixed, the gradient the
 * same dropout of dy */
static int
c_dropout(Tb *t)
{
	int x = U("x", SH(4, 6)), c = tb_decl(t, "t", R_INPUT, I32, SCALAR, V_INT, 0, 100);
	return tb_op(t, OP_DROPOUT, ARGS(x, c), IA(2, 9), 0, FA(0.4), NULL);
}

/* Compositions: a param used several times (its gradients accumulate), an input operand
 * (no gradient wanted), an attention-like chain. */
static int
c_twice(Tb *t)
{
	int w = U("w", SH(3, 3)), x = tb_decl(t, "in", R_INPUT, F32, SH(3, 3), V_UNIF, -1, 1);
	int a = tb_op(t, OP_MATMUL, ARGS(w, w), IA(0, 1), 0, NULL, NULL);
	return tb_op2(t, OP_ADD, tb_op1(t, OP_TANH, tb_op2(t, OP_MUL, w, x)), tb_op2(t, OP_MUL, a, w));
}
static int
c_attn(Tb *t)
{
	int q = U("q", SH(2, 3, 4)), k = U("k", SH(2, 3, 4)), v = U("v", SH(2, 3, 4));
	int s = tb_op(t, OP_MATMUL, ARGS(q, k), IA(0, 1), 0, NULL, NULL);
	int p = tb_op(t, OP_SOFTMAX, &s, 1, IA(2), 0, NULL, NULL);
	int o = tb_op(t, OP_MATMUL, ARGS(p, v), IA(0, 0), 0, NULL, NULL);
	int r = tb_op(t, OP_TRANSPOSE, &o, 1, IA(1, 0, 2), 3, NULL, NULL);
	return tb_op(t, OP_RESHAPE, &r, 1, NULL, 0, NULL, &SH(3, 8));
}

typedef int Build(Tb *);
static const struct { const char *name; Build *fn; } cases[] = {
	{ "add", c_add }, { "add-bcast-both", c_add2 }, { "sub", c_sub }, { "sub-scalar", c_sub2 },
	{ "mul", c_mul }, { "div", c_div }, { "div-bcast", c_div2 },
	{ "matmul", c_mm }, { "matmul-ta", c_mm_ta }, { "matmul-tb", c_mm_tb }, { "matmul-ta-tb", c_mm_tab },
	{ "matmul-batched", c_bmm }, { "matmul-bcast-a", c_bmm_bc }, { "matmul-bcast-b", c_bmm_bc2 },
	{ "matmul-weight-tb", c_bmm_w_tb }, { "matmul-weight-ta", c_bmm_w_ta },
	{ "matmul-bcast-ta-tb", c_bmm_bct }, { "matmul-bcast-ta", c_bmm_bct2 },
	{ "relu", c_relu }, { "gelu", c_gelu }, { "tanh", c_tanh }, { "sigmoid", c_sigmoid },
	{ "exp", c_exp }, { "log", c_log }, { "sqrt", c_sqrt }, { "rsqrt", c_rsqrt }, { "neg", c_neg },
	{ "sin", c_sin }, { "cos", c_cos }, { "select", c_select }, { "maximum", c_maximum }, { "steps", c_steps }, { "cumsum", c_cumsum },
	{ "pow3", c_pow3 }, { "pow0.5", c_pow_half }, { "pow-1.5", c_pow_neg },
	{ "transpose", c_transpose }, { "transpose2", c_transpose2 }, { "reshape", c_reshape },
	{ "concat", c_concat }, { "concat-axis0-repeat", c_concat0 },
	{ "sum", c_sum }, { "sum-keepdims", c_sum_keep }, { "mean", c_mean }, { "mean-keepdims", c_mean_keep },
	{ "max", c_max }, { "max-keepdims", c_max_keep },
	{ "softmax", c_softmax }, { "softmax-mid-axis", c_softmax_mid },
	{ "log_softmax", c_logsoftmax }, { "log_softmax-axis0", c_logsoftmax0 },
	{ "layernorm", c_layernorm }, { "layernorm-rank3", c_layernorm3 },
	{ "embedding", c_embedding }, { "cross_entropy", c_xent }, { "cross_entropy-rank3", c_xent3 },
	{ "mse", c_mse }, { "mse-bcast", c_mse_bc },
	{ "clip", c_clip }, { "slice", c_slice }, { "slices-disjoint", c_slices },
	{ "slices-overlapping", c_slices_ov },
	{ "conv2d", c_conv }, { "conv2d-dilated-groups", c_conv_dil }, { "conv2d-depthwise", c_conv_dw },
	{ "conv2d-1x1-stride2", c_conv_1x1s2 }, { "conv2d-pointwise-groups", c_conv_pw },
	{ "conv2d_dx", c_convt }, { "conv2d_dx-dilated-groups", c_convt_dil },
	{ "conv2d_dx-depthwise", c_convt_dw },
	{ "max_pool2d", c_maxpool }, { "max_pool2d-dilated", c_maxpool_dil }, { "avg_pool2d", c_avgpool },
	{ "avg_pool2d-without-padding", c_avgpool_ex }, { "batch_norm", c_bn }, { "batch_norm-1d", c_bn1d },
	{ "dropout", c_dropout },
	{ "param-used-twice", c_twice }, { "attention", c_attn },
};

static double
run_loss(Interp *in, Func *fw)
{
	char err[256];
	if (interp_run(in, fw, err, sizeof err))
		die("forward: %s", err);
	return ((float *)interp_out(in, 0)->data)[0];
}

static void
grad_case(const char *name, Build *fn)
{
	Tb tb, *t = &tb;
	Src src = { name, "", 0, 0 };
	int y, w, l, pars[MAXP], np, nparam = 0;
	Func *gf, *fw;
	Interp *in;
	char err[256];
	float *g[MAXP];

	tb_init(t, name);
	cur = t;
	y = fn(t);
	w = tb_late_input(t, "wts", t->m->fwd->val[y].ty, &y);
	l = tb_op2(t, OP_MUL, y, w);
	while (t->m->fwd->val[l].ty.sh.rank > 0)
		l = tb_op(t, OP_SUM, &l, 1, IA(0, 0), 0, NULL, NULL);
	fw = t->m->fwd;
	for (int i = 0; i < fw->nop; i++)
		covered[fw->op[i].kind] = 1;
	fw->loss = l;
	func_output(fw, "loss", l);
	t->m->opt = (Optim){ .kind = OPT_SGD, .lr = 1 };
	if (autodiff(t->m, &src)) {
		check(0, "%s: autodiff failed", name);
		tb_free(t);
		return;
	}
	simplify(fw);
	simplify(t->m->step);
	check(ir_verify(t->m, "gradcheck") == 0, "%s: the IR verifies", name);
	{
		/* workspaces are never saved: each lives for its one op */
		const Func *s = t->m->step;
		int saved = 0;
		for (int i = 0; i < s->nop; i++)
			for (int k = 0; k < s->op[i].nargs && s->op[i].phase == PH_BWD; k++) {
				int d = s->val[s->op[i].args[k]].def;
				saved |= d >= 0 && s->op[d].phase == PH_FWD && (opinfo[s->op[d].kind].flags & F_SCRATCH);
			}
		if (saved)
			check(0, "%s: a backward op reads a forward workspace", name);
	}
	if (strncmp(name, "slices-", 7) == 0) {
		/* disjoint slices' gradients are one concat; overlapping ones slice_grads added */
		const Func *s = t->m->step;
		int sg = 0, want = strcmp(name, "slices-disjoint") ? 2 : 0;
		for (int i = 0; i < s->nop; i++)
			sg += s->op[i].kind == OP_SLICE_G;
		check(sg == want, "%s: %d slice_grads in the step, want %d", name, sg, want);
	}
	for (int i = 0; i < t->m->ndecl; i++)
		nparam += t->m->decl[i].role == R_PARAM;
	gf = tb_gradfunc(t->m, pars, &np);
	check(np == nparam, "%s: %d of %d params updated", name, np, nparam);
	in = tb_interp(t);
	if (interp_run(in, gf, err, sizeof err))
		die("%s: gradients: %s", name, err);
	for (int i = 0; i < np; i++) {
		Tensor *o = interp_out(in, i);
		g[i] = xmalloc(type_bytes(&o->ty));
		memcpy(g[i], o->data, type_bytes(&o->ty));
	}
	for (int i = 0; i < np; i++) {
		Tensor *p = interp_decl(in, pars[i]);
		float *x = p->data;
		int64_t n = shape_numel(&p->ty.sh);
		double maxfd = 0, maxerr = 0;

		for (int64_t j = 0; j < n; j++) {
			float x0 = x[j], xp = (float)(x0 + EPS), xm = (float)(x0 - EPS);
			double lp, lm, fd;
			x[j] = xp;
			lp = run_loss(in, fw);
			x[j] = xm;
			lm = run_loss(in, fw);
			x[j] = x0;
			fd = (lp - lm) / ((double)xp - (double)xm);
			maxfd = fmax(maxfd, fabs(fd));
			maxerr = fmax(maxerr, fabs(fd - g[i][j]));
		}
		maxerr /= fmax(maxfd, 1e-3);
		check(maxerr <= TOL && maxfd > 1e-3, "%s: d%s rel err %.2e (max |fd| %.3g)", name,
		         t->m->decl[pars[i]].name, maxerr, maxfd);
		free(g[i]);
	}
	interp_free(in);
	tb_funcfree(gf);
	tb_free(t);
}

int
main(void)
{
	check_echo = 1;         /* the log shows every check's numbers */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		grad_case(cases[i].name, cases[i].fn);
	for (int k = 0; k < NOP; k++)
		if (opinfo[k].grad != gr_none)
			check(covered[k], "%s has a gradient check", opinfo[k].name);
	return done();
}
