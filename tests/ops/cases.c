/* cases.c: the one table of op test cases (cases.h): every op kind of OPTAB, several shapes
 * each (broadcasting, empty and scalar shapes, sizes that split across threads), gradient
 * helpers and optimizer updates included. tests/ops/ops.c runs it on every target. */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cases.h"
#include "../build.h"

static Group gs[24];
static int ng;
static Group *g;              /* the group being filled */

static void
group(const char *name, int step)
{
	g = &gs[ng++];
	memset(g, 0, sizeof *g);
	g->name = name;
	g->step = step;
}

static Type
I(Type t)
{
	t.dt = I32;
	return t;
}

/* Add a case to the group: op k on operand types (fresh inputs). */
static Case *
add(Opk k, int nargs, ...)
{
	Case *c;
	va_list ap;

	if (g->ncase == MAXCASE)
		die("cases.c: group %s has more than %d cases", g->name, MAXCASE);
	c = &g->c[g->ncase++];
	memset(c, 0, sizeof *c);
	c->k = k;
	c->nargs = nargs;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++) {
		c->at[i] = va_arg(ap, Type);
		c->role[i] = R_INPUT;
		c->arg[i] = -1;
	}
	va_end(ap);
	return c;
}

static Case *
attrs(Case *c, int nia, ...)
{
	va_list ap;
	va_start(ap, nia);
	for (int i = 0; i < nia; i++)
		c->ia[i] = va_arg(ap, int);
	c->nia = nia;
	va_end(ap);
	return c;
}

static const Opk unary[] = { OP_RELU, OP_GELU, OP_TANH, OP_SIGMOID, OP_EXP, OP_NEG, OP_SIN, OP_COS,
                              OP_FLOOR, OP_CEIL, OP_ROUND };
static const Opk upos[] = { OP_LOG, OP_SQRT, OP_RSQRT };
static const Opk binary[] = { OP_ADD, OP_SUB, OP_MUL, OP_DIV };
static const Opk gbin[] = { OP_RELU_G, OP_GELU_G, OP_TANH_G, OP_SIGMOID_G, OP_SQRT_G, OP_RSQRT_G };

static void
elementwise(void)
{
	Type shapes[] = { ty(F32, 1, 7), ty(F32, 3, 3, 4, 5), ty(F32, 0), ty(F32, 2, 130, 150) };
	Type pa[][2] = { { ty(F32, 2, 4, 5), ty(F32, 2, 4, 5) }, { ty(F32, 2, 4, 5), ty(F32, 1, 5) }, { ty(F32, 3, 3, 1, 5), ty(F32, 2, 4, 1) },
	                 { ty(F32, 0), ty(F32, 2, 2, 3) }, { ty(F32, 2, 6, 1), ty(F32, 2, 1, 7) }, { ty(F32, 2, 200, 120), ty(F32, 1, 120) } };
	Case *c;

	group("unary", 0);
	for (int s = 0; s < 4; s++) {
		for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
			add(unary[i], 1, shapes[s]);
		for (size_t i = 0; i < sizeof upos / sizeof *upos; i++)
			add(upos[i], 1, shapes[s])->pos = 1;
		add(OP_POW, 1, shapes[s])->fa[0] = 2;
		add(OP_POW, 1, shapes[s])->fa[0] = 3;
		c = add(OP_POW, 1, shapes[s]);
		c->fa[0] = 0.5;
		c->pos = 1;
		add(OP_TOF32, 1, I(shapes[s]));      /* i32 values up to 2^31: rounded */
	}

	group("binary", 0);
	for (int s = 0; s < 6; s++) {
		for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
			add(binary[i], 2, pa[s][0], pa[s][1])->pos = binary[i] == OP_DIV;
		for (size_t i = 0; i < sizeof gbin / sizeof *gbin; i++)
			add(gbin[i], 2, pa[s][0], pa[s][1])->pos = gbin[i] == OP_SQRT_G || gbin[i] == OP_RSQRT_G;
		add(OP_POW_G, 2, pa[s][0], pa[s][1])->fa[0] = 3;
		add(OP_POW_G, 2, pa[s][0], pa[s][1])->fa[0] = 0;
	}

	/* A fused chain with broadcast operands, a result stored mid-chain, one kept in registers. */
	group("chain", 0);
	add(OP_ADD, 2, ty(F32, 2, 50, 40), ty(F32, 1, 40));
	c = add(OP_RELU, 1, ty(F32, 2, 50, 40));
	c->arg[0] = 0;
	c = add(OP_MUL, 2, ty(F32, 2, 50, 40), ty(F32, 2, 50, 1));
	c->arg[0] = 1;
	c = add(OP_TANH, 1, ty(F32, 2, 50, 40));
	c->arg[0] = 2;
	c = add(OP_SUB, 2, ty(F32, 2, 50, 40), ty(F32, 0));
	c->arg[0] = 3;
	c = add(OP_GELU_G, 2, ty(F32, 2, 50, 40), ty(F32, 2, 50, 40));
	c->arg[0] = 4;
	c->arg[1] = 1;

	/* Comparisons (of imported graphs) and select: x against relu(x), equal where x >= 0, so
	 * every outcome occurs; fresh operands broadcast; select by a comparison, its branches
	 * broadcast, one of them infinite (a masked fill). */
	group("compare", 0);
	add(OP_RELU, 1, ty(F32, 2, 30, 17));
	for (int k = 0; k < 3; k++) {
		c = add(k == 0 ? OP_EQ : k == 1 ? OP_LT : OP_LE, 2, ty(F32, 2, 30, 17), ty(F32, 2, 30, 17));
		c->arg[0] = -100 - 0;
		c->arg[1] = 0;
	}
	for (int s = 0; s < 6; s++) {
		add(OP_LT, 2, pa[s][0], pa[s][1]);
		add(OP_LE, 2, pa[s][0], pa[s][1]);
	}
	for (int s = 0; s < 6; s++) {
		add(OP_MAXIMUM, 2, pa[s][0], pa[s][1]);
		add(OP_MAXIMUM_G, 3, pa[s][0], pa[s][1], pa[s][0]);
	}
	/* cumsum: each axis, exclusive and reverse, a long column split across threads */
	for (int e = 0; e < 4; e++) {
		attrs(add(OP_CUMSUM, 1, ty(F32, 3, 3, 5, 7)), 3, e % 3, e & 1, e >> 1);
		attrs(add(OP_CUMSUM, 1, ty(F32, 2, 3, 700)), 3, 1, e & 1, e >> 1);
	}
	attrs(add(OP_CUMSUM, 1, ty(F32, 1, 1)), 3, 0, 1, 1);
	/* argmax: each axis, kept or not; of relu(x), ties of zeros (the first wins) */
	for (int e = 0; e < 3; e++)
		attrs(add(OP_ARGMAX, 1, ty(F32, 3, 3, 5, 7)), 2, e, e & 1);
	attrs(add(OP_ARGMAX, 1, ty(F32, 2, 3, 700)), 2, 1, 0);
	c = attrs(add(OP_ARGMAX, 1, ty(F32, 2, 30, 17)), 2, 1, 0);
	c->arg[0] = 0;
	/* to_i32: toward zero around 0; clamped past i32's range (x times 3e9) */
	add(OP_TOI32, 1, ty(F32, 2, 30, 17));
	add(OP_TOI32, 1, ty(F32, 2, 3, 700));
	c = add(OP_MUL, 2, ty(F32, 2, 30, 17), ty(F32, 0));
	c->role[1] = R_HYPER;
	c->hv[1] = 3e9;
	c = add(OP_TOI32, 1, ty(F32, 2, 30, 17));
	c->arg[0] = g->ncase - 2;
	/* maximum and its gradient at ties: x against relu(x) */
	c = add(OP_MAXIMUM, 2, ty(F32, 2, 30, 17), ty(F32, 2, 30, 17));
	c->arg[0] = -100 - 0;
	c->arg[1] = 0;
	c = add(OP_MAXIMUM_G, 3, ty(F32, 2, 30, 17), ty(F32, 2, 30, 17), ty(F32, 2, 30, 17));
	c->arg[0] = 0;
	c->arg[1] = -100 - 0;
	c = add(OP_SELECT, 3, ty(F32, 2, 30, 17), ty(F32, 2, 30, 17), ty(F32, 1, 17));
	c->arg[0] = 1;
	c = add(OP_SELECT, 3, ty(F32, 2, 30, 17), ty(F32, 0), ty(F32, 2, 30, 17));
	c->arg[0] = 2;
	c->role[1] = R_HYPER;
	c->hv[1] = -INFINITY;
	c = add(OP_SELECT, 3, ty(F32, 2, 6, 1), ty(F32, 3, 3, 6, 7), ty(F32, 0));
	c->arg[0] = 12;
}

static void
matmul(void)
{
	int mm[][6] = { { 5, 7, 7, 3, 0, 0 }, { 7, 5, 7, 3, 1, 0 }, { 5, 7, 3, 7, 0, 1 },
	                { 7, 5, 3, 7, 1, 1 }, { 70, 130, 130, 90, 0, 0 }, { 130, 70, 90, 130, 1, 1 },
	                { 100, 33, 33, 200, 0, 0 } };

	group("matmul", 0);
	for (int i = 0; i < 7; i++)
		attrs(add(OP_MATMUL, 2, ty(F32, 2, mm[i][0], mm[i][1]), ty(F32, 2, mm[i][2], mm[i][3])), 2, mm[i][4], mm[i][5]);
	attrs(add(OP_MATMUL, 2, ty(F32, 4, 2, 3, 4, 5), ty(F32, 4, 2, 3, 5, 6)), 2, 0, 0);
	attrs(add(OP_MATMUL, 2, ty(F32, 4, 2, 1, 4, 5), ty(F32, 3, 3, 5, 6)), 2, 0, 0);     /* batch broadcast */
	attrs(add(OP_MATMUL, 2, ty(F32, 3, 4, 16, 8), ty(F32, 3, 4, 16, 8)), 2, 0, 1);
	attrs(add(OP_MATMUL, 2, ty(F32, 3, 4, 8, 16), ty(F32, 2, 8, 24)), 2, 1, 0);
}

static void
movement(void)
{
	Case *c;

	group("layout", 0);
	attrs(add(OP_TRANSPOSE, 1, ty(F32, 3, 2, 3, 4)), 3, 2, 0, 1);
	attrs(add(OP_TRANSPOSE, 1, ty(F32, 2, 5, 6)), 2, 1, 0);
	attrs(add(OP_TRANSPOSE, 1, ty(F32, 4, 2, 3, 4, 5)), 4, 0, 2, 1, 3);
	attrs(add(OP_TRANSPOSE, 1, ty(F32, 2, 300, 200)), 2, 1, 0);
	attrs(add(OP_TRANSPOSE, 1, I(ty(F32, 2, 4, 3))), 2, 1, 0);                  /* i32 data */
	add(OP_RESHAPE, 1, ty(F32, 2, 4, 6))->given = ty(F32, 3, 2, 3, 4);
	add(OP_RESHAPE, 1, ty(F32, 2, 300, 100))->given = ty(F32, 1, 30000);
	attrs(add(OP_CONCAT, 2, ty(F32, 2, 2, 3), ty(F32, 2, 4, 3)), 1, 0);
	attrs(add(OP_CONCAT, 3, ty(F32, 2, 2, 3), ty(F32, 2, 2, 5), ty(F32, 2, 2, 1)), 1, 1);
	attrs(add(OP_CONCAT, 2, ty(F32, 3, 2, 3, 4), ty(F32, 3, 2, 3, 2)), 1, 2);
	c = attrs(add(OP_SLICE, 1, ty(F32, 2, 5, 8)), 2, 1, 2);
	c->given = ty(F32, 2, 5, 3);
	c = attrs(add(OP_SLICE, 1, ty(F32, 2, 6, 4)), 2, 0, 1);
	c->given = ty(F32, 2, 4, 4);
	c = add(OP_CONST, 0);
	c->fa[0] = 0.3;
	c->given = ty(F32, 2, 3, 4);
	add(OP_BCAST, 1, ty(F32, 1, 5))->given = ty(F32, 2, 4, 5);
	add(OP_BCAST, 1, ty(F32, 2, 4, 1))->given = ty(F32, 3, 3, 4, 6);
	add(OP_BCAST, 1, ty(F32, 0))->given = ty(F32, 2, 2, 2);
	add(OP_SUMTO, 1, ty(F32, 2, 4, 5))->given = ty(F32, 1, 5);
	add(OP_SUMTO, 1, ty(F32, 3, 3, 4, 5))->given = ty(F32, 2, 4, 1);
	add(OP_SUMTO, 1, ty(F32, 2, 2, 3))->given = ty(F32, 0);
	add(OP_SUMTO, 1, ty(F32, 2, 6, 7))->given = ty(F32, 2, 6, 1);
	add(OP_SUMTO, 1, ty(F32, 2, 300, 100))->given = ty(F32, 1, 100);
}

static void
reductions(void)
{
	Opk red[] = { OP_SUM, OP_MEAN, OP_MAX };
	Opk sm[] = { OP_SOFTMAX, OP_LOGSOFTMAX };
	Opk sg[] = { OP_SOFTMAX_G, OP_LOGSOFTMAX_G };
	int kd[3][2] = { { 1, 0 }, { 1, 1 }, { 2, 0 } };

	group("reduce", 0);
	for (int r = 0; r < 3; r++) {
		for (int ax = 0; ax < 3; ax++)
			for (int k = 0; k < 2; k++)
				attrs(add(red[r], 1, ty(F32, 3, 3, 4, 5)), 2, ax, k);
		attrs(add(red[r], 1, ty(F32, 2, 200, 300)), 2, 1, 0);
	}
	/* max_grad(x, max(x), dy): y really is the max, so dy lands somewhere */
	for (int i = 0; i < 3; i++) {
		Shape s = { 3, { 3, 4, 5 } }, rs = s;
		int mx = g->ncase;
		Case *c;
		attrs(add(OP_MAX, 1, (Type){ F32, s }), 2, kd[i][0], kd[i][1]);
		if (kd[i][1])
			rs.d[kd[i][0]] = 1;
		else {
			for (int d = kd[i][0]; d < 2; d++)
				rs.d[d] = rs.d[d + 1];
			rs.rank = 2;
		}
		c = attrs(add(OP_MAX_G, 3, (Type){ F32, s }, (Type){ F32, rs }, (Type){ F32, rs }), 2,
		          kd[i][0], kd[i][1]);
		c->arg[0] = -100 - mx;
		c->arg[1] = mx;
	}

	group("softmax", 0);
	for (int i = 0; i < 2; i++) {
		attrs(add(sm[i], 1, ty(F32, 2, 4, 10)), 1, 1);
		attrs(add(sm[i], 1, ty(F32, 3, 3, 4, 5)), 1, 0);            /* not the last axis */
		attrs(add(sm[i], 1, ty(F32, 3, 3, 4, 5)), 1, 1);
		attrs(add(sm[i], 1, ty(F32, 2, 256, 128)), 1, 1);
		attrs(add(sg[i], 2, ty(F32, 2, 4, 10), ty(F32, 2, 4, 10)), 1, 1);
		attrs(add(sg[i], 2, ty(F32, 3, 3, 4, 5), ty(F32, 3, 3, 4, 5)), 1, 0);
		attrs(add(sg[i], 2, ty(F32, 2, 256, 128), ty(F32, 2, 256, 128)), 1, 1);
	}
}

static void
nn(void)
{
	group("nn", 0);
	add(OP_LAYERNORM, 3, ty(F32, 2, 6, 16), ty(F32, 1, 16), ty(F32, 1, 16))->fa[0] = 1e-5;
	add(OP_LAYERNORM, 3, ty(F32, 3, 2, 3, 8), ty(F32, 1, 8), ty(F32, 1, 8))->fa[0] = 1e-3;
	add(OP_LAYERNORM, 3, ty(F32, 2, 512, 64), ty(F32, 1, 64), ty(F32, 1, 64))->fa[0] = 1e-5;
	add(OP_LN_DX, 3, ty(F32, 2, 6, 16), ty(F32, 1, 16), ty(F32, 2, 6, 16))->fa[0] = 1e-5;
	add(OP_LN_DX, 3, ty(F32, 2, 512, 64), ty(F32, 1, 64), ty(F32, 2, 512, 64))->fa[0] = 1e-5;
	add(OP_LN_DGAMMA, 2, ty(F32, 2, 6, 16), ty(F32, 2, 6, 16))->fa[0] = 1e-5;
	add(OP_LN_DGAMMA, 2, ty(F32, 3, 2, 3, 8), ty(F32, 3, 2, 3, 8))->fa[0] = 1e-3;
	/* the CUDA kernel's chunks of rows (64 here), and two column tiles with a ragged one */
	add(OP_LN_DGAMMA, 2, ty(F32, 2, 512, 64), ty(F32, 2, 512, 64))->fa[0] = 1e-5;
	add(OP_LN_DGAMMA, 2, ty(F32, 2, 96, 1100), ty(F32, 2, 96, 1100))->fa[0] = 1e-5;
	add(OP_EMBEDDING, 2, ty(F32, 2, 10, 4), I(ty(F32, 1, 6)));
	add(OP_EMBEDDING, 2, ty(F32, 2, 50, 8), I(ty(F32, 2, 2, 3)));
	add(OP_EMBED_G, 2, I(ty(F32, 1, 6)), ty(F32, 2, 6, 4))->given = ty(F32, 2, 10, 4);
	add(OP_EMBED_G, 2, I(ty(F32, 2, 64, 16)), ty(F32, 3, 64, 16, 32))->given = ty(F32, 2, 20, 32);
	add(OP_XENT, 2, ty(F32, 2, 8, 10), I(ty(F32, 1, 8)));
	add(OP_XENT, 2, ty(F32, 3, 2, 3, 5), I(ty(F32, 2, 2, 3)));
	add(OP_XENT_G, 3, ty(F32, 2, 8, 10), I(ty(F32, 1, 8)), ty(F32, 0));
	add(OP_XENT_G, 3, ty(F32, 2, 300, 50), I(ty(F32, 1, 300)), ty(F32, 0));
	add(OP_MSE, 2, ty(F32, 2, 4, 5), ty(F32, 2, 4, 5));
	add(OP_MSE, 2, ty(F32, 2, 4, 5), ty(F32, 1, 5));
	add(OP_MSE_G, 3, ty(F32, 2, 4, 5), ty(F32, 1, 5), ty(F32, 0));
	add(OP_MSE_G, 3, ty(F32, 2, 300, 70), ty(F32, 2, 300, 70), ty(F32, 0));
}

/* Convolutional networks' ops (docs/tdsl.md): clip and its gradient, slices' gradient. */
static void
cnn(void)
{
	Type sh[] = { ty(F32, 1, 7), ty(F32, 4, 2, 3, 4, 5), ty(F32, 2, 130, 150) };
	Case *c;

	group("cnn", 0);
	for (int s = 0; s < 3; s++) {
		c = add(OP_CLIP, 1, sh[s]);
		c->fa[0] = 0, c->fa[1] = 0.5;
		c = add(OP_CLIP, 1, sh[s]);
		c->fa[0] = -0.25, c->fa[1] = 0.25;
		/* from clip's result, which sits on the bounds where it clipped */
		c = add(OP_CLIP_G, 2, sh[s], sh[s]);
		c->arg[0] = g->ncase - 3;
		c->fa[0] = 0, c->fa[1] = 0.5;
	}
	add(OP_CLIP_G, 2, ty(F32, 2, 4, 5), ty(F32, 1, 5))->fa[1] = 6;     /* broadcast dy */
	c = attrs(add(OP_SLICE_G, 1, ty(F32, 2, 5, 3)), 2, 1, 2);
	c->given = ty(F32, 2, 5, 8);
	c = attrs(add(OP_SLICE_G, 1, ty(F32, 2, 4, 4)), 2, 0, 0);
	c->given = ty(F32, 2, 6, 4);
	c = attrs(add(OP_SLICE_G, 1, ty(F32, 3, 3, 2, 5)), 2, 1, 1);
	c->given = ty(F32, 3, 3, 4, 5);
	c = attrs(add(OP_SLICE_G, 1, ty(F32, 2, 100, 200)), 2, 0, 200);
	c->given = ty(F32, 2, 300, 200);
	/* dropout: with a step counter (any i32[]: the draws are a function of it) and without */
	for (int s = 0; s < 3; s++) {
		c = attrs(add(OP_DROPOUT, 2, sh[s], I(ty(F32, 0))), 2, s, 12345 + s);
		c->fa[0] = s == 2 ? 0.9 : 0.3;
	}
	attrs(add(OP_DROPOUT, 1, sh[1]), 2, 7, 0)->fa[0] = 0.5;
	/* a slice of the batch: slice `part` of `parts`, one block per chunk elements */
	attrs(add(OP_DROPOUT, 2, sh[1], I(ty(F32, 0))), 5, 4, 99, 60, 3, 2)->fa[0] = 0.4;
	attrs(add(OP_DROPOUT, 2, sh[2], I(ty(F32, 0))), 5, 5, 1, 1950, 4, 1)->fa[0] = 0.3;
	attrs(add(OP_DROPOUT, 2, sh[2], I(ty(F32, 0))), 5, 6, 2, 150, 7, 6)->fa[0] = 0.6;
}

/* Convolutions: im2col and col2im with strides, padding and dilation; the GEMMs with groups
 * (depthwise included) and sizes that split across threads. */
static void
conv(void)
{
	/* N C H W, kh kw sh sw ph pw dh dw, groups, Cout: each conv op with its workspace (the
	 * pointwise and depthwise ones have none) */
	static const int cv[][14] = {
		{ 2, 3, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 6 },
		{ 1, 4, 7, 9, 3, 2, 2, 1, 1, 0, 1, 2, 2, 6 },
		{ 2, 6, 6, 6, 3, 3, 2, 2, 2, 2, 2, 2, 6, 6 },      /* depthwise, dilated: no workspace */
		{ 3, 5, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 5, 5 },      /* depthwise, strided */
		{ 2, 40, 9, 9, 3, 5, 1, 1, 1, 2, 1, 1, 40, 40 },   /* depthwise across threads */
		{ 2, 12, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1, 12, 12 },  /* depthwise 3x3: inner columns */
		{ 2, 4, 7, 11, 3, 3, 1, 2, 0, 2, 1, 1, 4, 4 },     /* depthwise 3x3: unpadded rows */
		{ 1, 3, 8, 10, 3, 3, 1, 1, 2, 0, 2, 1, 3, 3 },     /* depthwise 3x3: stride 1, dilated rows */
		{ 2, 3, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3, 6 },      /* two outputs per channel */
		{ 2, 8, 5, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1, 4 },      /* strided 1x1 shortcut */
		{ 3, 8, 4, 3, 1, 1, 1, 1, 0, 0, 1, 1, 2, 6 },      /* pointwise: no workspace */
		{ 2, 4, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 2 },    /* in chunks of one image */
		{ 3, 16, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 40 },    /* split across threads */
	};
	Case *c;

	group("conv", 0);
	for (size_t i = 0; i < sizeof cv / sizeof *cv; i++) {
		const int *v = cv[i];
		int ho = (int)window_out(v[2], v[4], v[6], v[8], v[10]);
		int wo = (int)window_out(v[3], v[5], v[7], v[9], v[11]);
		int64_t a[MAXIA] = { v[6], v[7], v[8], v[9], v[10], v[11], v[12] };
		Type x = ty(F32, 4, v[0], v[1], v[2], v[3]), w = ty(F32, 4, v[13], v[1] / v[12], v[4], v[5]);
		Type y = ty(F32, 4, v[0], v[13], ho, wo), ws;
		int has = conv_workspace(&x.sh, &w.sh, a, &ws);
		for (int k = 0; k < 3; k++) {
			static const Opk ks[3] = { OP_CONV2D, OP_CONV2D_DX, OP_CONV2D_DW };
			int wc = g->ncase;
			if (has)
				add(OP_WORKSPACE, 0)->given = ws;
			c = k == 0 ? add(ks[k], 2 + has, x, w, ws) : k == 1 ? add(ks[k], 2 + has, w, y, ws) :
			             add(ks[k], 2 + has, x, y, ws);
			attrs(c, 7, v[6], v[7], v[8], v[9], v[10], v[11], v[12]);
			c->given = k == 1 ? x : k == 2 ? w : (Type){ 0 };
			if (has)
				c->arg[2] = wc;
		}
	}
	/* pools: N C H W, kh kw sh sw ph pw, dh dw (max) or count_include_pad (avg) */
	static const int pl[][12] = {
		{ 2, 3, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1 },
		{ 1, 4, 7, 9, 2, 3, 1, 2, 0, 1, 2, 1 },
		{ 2, 2, 6, 6, 2, 2, 2, 2, 0, 0, 1, 1 },
		{ 3, 16, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1 },
	};
	for (size_t i = 0; i < sizeof pl / sizeof *pl; i++) {
		const int *v = pl[i];
		Type x = ty(F32, 4, v[0], v[1], v[2], v[3]);
		int ho = (int)window_out(v[2], v[4], v[6], v[8], v[10]), wo = (int)window_out(v[3], v[5], v[7], v[9], v[11]);
		int ah = (int)window_out(v[2], v[4], v[6], v[8], 1), aw = (int)window_out(v[3], v[5], v[7], v[9], 1);
		Type y = ty(F32, 4, v[0], v[1], ho, wo), ya = ty(F32, 4, v[0], v[1], ah, aw);
		attrs(add(OP_MAXPOOL, 1, x), 8, v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);
		c = attrs(add(OP_MAXPOOL_G, 2, x, y), 8, v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);
		c->arg[0] = -100 - (g->ncase - 2);          /* the pool's own input */
		for (int cip = 0; cip < 2; cip++) {
			attrs(add(OP_AVGPOOL, 1, x), 7, v[4], v[5], v[6], v[7], v[8], v[9], cip);
			c = attrs(add(OP_AVGPOOL_G, 1, ya), 7, v[4], v[5], v[6], v[7], v[8], v[9], cip);
			c->given = x;
		}
	}
	/* batch norm: inputs positive (so are the variances); the statistics of x itself */
	{
		Type bs[] = { ty(F32, 4, 2, 3, 4, 5), ty(F32, 2, 6, 4), ty(F32, 3, 3, 16, 200), ty(F32, 4, 2, 7, 3, 3) };
		for (size_t i = 0; i < sizeof bs / sizeof *bs; i++) {
			Type x = bs[i], cc = ty(F32, 1, (int)x.sh.d[1]), d2 = ty(F32, 2, 2, (int)x.sh.d[1]);
			int mu = g->ncase, vr = mu + 1, ds = mu + 2;
			add(OP_BN_MEAN, 1, x)->pos = 1;
			c = add(OP_BN_VAR, 2, x, cc);
			c->arg[0] = -100 - mu;
			c->arg[1] = mu;
			c->pos = 1;
			c = add(OP_BN_DSTATS, 4, x, cc, cc, x);
			c->arg[0] = -100 - mu;
			c->arg[1] = mu;
			c->arg[2] = vr;
			c->fa[0] = 1e-5;
			for (int tr = 0; tr < 2; tr++) {
				c = attrs(add(OP_BATCHNORM, 5, x, cc, cc, cc, cc), 1, tr);
				c->arg[0] = -100 - mu;
				c->arg[3] = tr ? mu : -1;
				c->arg[4] = tr ? vr : -1;
				c->fa[0] = tr ? 1e-5 : 1e-3;
				c->fa[1] = 0.1;
				c->pos = 1;
				c = attrs(add(OP_BN_DX, 6, x, cc, cc, cc, x, d2), 1, tr);
				c->arg[0] = -100 - mu;
				c->arg[2] = mu;
				c->arg[3] = vr;
				c->arg[5] = ds;
				c->fa[0] = 1e-5;
			}
		}
	}
}

/* Operand a of c: a hyperparameter decl of value v. */
static void
hyper(Case *c, int a, double v)
{
	c->at[a] = ty(F32, 0);
	c->role[a] = R_HYPER;
	c->hv[a] = v;
}

/* The updates, in a step function: its loss first, then each update on fresh params, state
 * and hyperparameters; adam reads the counter the tick advanced. Then clipping's ops. */
static void
updates(void)
{
	Type sh[] = { ty(F32, 2, 4, 8), ty(F32, 2, 130, 150) }, f0 = ty(F32, 0);
	Case *c;

	group("update", 1);
	add(OP_MSE, 2, ty(F32, 2, 4, 8), ty(F32, 2, 4, 8));
	c = add(OP_TICK, 1, I(ty(F32, 0)));
	c->role[0] = R_STATE;
	c = add(OP_TICK, 1, I(ty(F32, 0)));
	c->role[0] = R_BUFFER;                /* dropout's counter is a buffer */
	for (int s = 0; s < 2; s++) {
		Type cc = ty(F32, 1, s ? 300 : 7);
		c = attrs(add(OP_BN_UPDATE, 4, cc, cc, cc, cc), 1, s ? 2 : 40);
		c->role[0] = c->role[1] = R_BUFFER;
		c->fa[0] = s ? 0.5 : 0.1;
	}
	for (int s = 0; s < 2; s++) {
		c = add(OP_SGD, 4, sh[s], sh[s], f0, f0);
		c->role[0] = R_PARAM;
		hyper(c, 2, 0.1);
		hyper(c, 3, s ? 0.01 : 0);
		c = add(OP_SGDM, 6, sh[s], sh[s], sh[s], f0, f0, f0);
		c->role[0] = R_PARAM;
		c->role[1] = R_STATE;
		hyper(c, 3, 0.1);
		hyper(c, 4, 0.9);
		hyper(c, 5, s ? 0 : 0.05);
		/* v >= 0 as adam keeps it */
		for (int w = 0; w < 2; w++) {
			c = add(w ? OP_ADAMW : OP_ADAM, 9 + w, sh[s], sh[s], sh[s], sh[s], I(ty(F32, 0)), f0, f0, f0, f0, f0);
			c->role[0] = R_PARAM;
			c->role[1] = c->role[2] = R_STATE;
			c->arg[4] = -100 - 1;
			hyper(c, 5, 1e-3);
			hyper(c, 6, 0.9);
			hyper(c, 7, 0.999);
			hyper(c, 8, 1e-8);
			if (w)
				hyper(c, 9, 0.1);
			c->pos = 1;
		}
	}
	/* clipping: sumsq of a few sizes (one that splits across threads elsewhere), clip_coef
	 * of a sum of squares over and under the clip norm */
	add(OP_SUMSQ, 1, ty(F32, 2, 4, 8));
	add(OP_SUMSQ, 1, ty(F32, 2, 300, 170));
	add(OP_SUMSQ, 1, ty(F32, 0));
	c = add(OP_CLIPCOEF, 2, f0, f0);
	c->arg[0] = g->ncase - 3;
	hyper(c, 1, 1.0);
	c = add(OP_CLIPCOEF, 2, f0, f0);
	c->arg[0] = g->ncase - 4;
	hyper(c, 1, 1e4);
}

const Elsewhere op_elsewhere[] = {
	{ OP_SWAPOUT, "tests/backend/swap.sh, tests/cuda/module.c" },
	{ OP_SWAPIN, "tests/backend/swap.sh, tests/cuda/module.c" },
	{ OP_WAIT, "tests/backend/swap.sh, tests/cuda/module.c" },
	{ OP_SWAPHOME, "tests/backend/state.sh (never on CUDA: its Target.hoststate is 0)" },
	{ OP_COPYOUT, "tests/train/api.c and state.sh (step_out; on CUDA built, run with a GPU)" },
	{ OP_ALLREDUCE, "tests/dp/dp.sh (mpirun), tests/interp/ops.c" },
	{ OP_UNBUCKET, "tests/dp/dp.sh (mpirun), tests/interp/ops.c" },
	{ OP_REDSCAT, "tests/dp/dp.sh (mpirun, ZeRO), tests/dp/pass.c" },
	{ OP_ALLGATHER, "tests/dp/dp.sh (mpirun, ZeRO), tests/dp/pass.c" },
	{ OP_SHARD, "tests/dp/dp.sh (mpirun, ZeRO), tests/dp/pass.c" },
	{ OP_UNSHARD, "tests/dp/dp.sh (mpirun, ZeRO), tests/dp/pass.c" },
};
const int nop_elsewhere = sizeof op_elsewhere / sizeof *op_elsewhere;

const Group *
op_cases(int *n)
{
	if (!ng) {
		elementwise();
		matmul();
		movement();
		reductions();
		nn();
		cnn();
		conv();
		updates();
	}
	*n = ng;
	return gs;
}
