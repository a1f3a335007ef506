/* interp.c: the reference interpreter: runs any IR function op by op on host buffers.
 *
 * It is the oracle every later stage is checked against, so it favours plain, fixed-order
 * arithmetic over speed. Numerics, chosen to follow PyTorch's CPU float path:
 * - every value is computed in float (f32); exp, log and tanh are <mtc/mtc-math.h>'s (the
 *   same bits as generated code, whatever the libm), pow and sqrt the C library's;
 *   no fused multiply-add (ISO C mode: -ffp-contract=off);
 * - matmul accumulates each output element in float over k in increasing order
 *   (the i-k-j loop order keeps that order while streaming rows of the right operand);
 * - reductions (sum, mean, max, softmax's sum, layernorm's moments, the losses' means, sum_to)
 *   accumulate in float in increasing index order;
 * - optimizer updates use PyTorch's formulas and evaluation order (torch.optim, 1.13),
 *   bias corrections computed in double as Python does.
 * A value's buffer is freed right after its last use, so a deep model's step holds only
 * what is live; decl tensors (inputs, params, optimizer state) live in the Interp. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir.h"
#include "mtc/mtc-ops.h"
#include "mtc/mtc-rt.h"

struct Interp {
	const Module *m;
	uint64_t seed;
	Tensor *decl;             /* one per module decl, created on demand (autodiff adds state) */
	int ndecl;
	Tensor *out;
	int nout;
	int64_t live, peak;       /* bytes of decl tensors and live values; high-water mark */
	int64_t hostlive;         /* bytes of live host values (swap_out results) */
	int64_t limit;            /* the most bytes it may hold */
	InterpComm comm;          /* coll NULL: rank 0, the other ranks hold what it holds */
};

/* One run of one function: a buffer per value, the error message. */
typedef struct Run {
	Interp *in;
	const Func *f;
	void **buf;
	char *err;
	size_t nerr;
} Run;

typedef int Kern(Run *, const Op *);

#define TY(i) (&r->f->val[op->args[i]].ty)
#define RTY (&r->f->val[op->res].ty)
#define IN(i) ((const float *)r->buf[op->args[i]])
#define INI(i) ((const int32_t *)r->buf[op->args[i]])
#define OUT ((float *)r->buf[op->res])

static int
fail(Run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, r->nerr, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---------- walking broadcast and permuted layouts ---------- */

/* Element strides of x for each dim of r (x broadcasts to r): 0 where x has 1 or no dim. */
static void
bstrides(const Shape *x, const Shape *r, int64_t *st)
{
	int64_t s = 1;

	for (int i = r->rank - 1; i >= 0; i--) {
		int k = x->rank - r->rank + i;
		st[i] = k < 0 || x->d[k] == 1 ? 0 : s;
		if (k >= 0)
			s *= x->d[k];
	}
}

/* Advance the multi-index idx over dims [0, n) of d (last fastest), moving the offsets of
 * k operands with strides st[j]. */
static void
advance(int n, const int64_t *d, int64_t *idx, int k, int64_t (*st)[MAXRANK], int64_t *off)
{
	for (int i = n - 1; i >= 0; i--) {
		for (int j = 0; j < k; j++)
			off[j] += st[j][i];
		if (++idx[i] < d[i])
			return;
		for (int j = 0; j < k; j++)
			off[j] -= st[j][i] * d[i];
		idx[i] = 0;
	}
}

/* Rows of a shape: the last dim is the row, everything before counts rows. */
static int64_t
rowlen(const Shape *s)
{
	return s->rank ? s->d[s->rank - 1] : 1;
}

/* o = x laid out as r, reading x through strides st (per dim of r): broadcast, transpose. */
static void
gather(const uint32_t *x, int64_t (*st)[MAXRANK], const Shape *r, uint32_t *o)
{
	int64_t n = rowlen(r), rows = shape_numel(r) / n, idx[MAXRANK] = {0}, off = 0;
	int64_t s = r->rank ? st[0][r->rank - 1] : 0;

	for (int64_t i = 0; i < rows; i++, o += n) {
		for (int64_t j = 0; j < n; j++)
			o[j] = x[off + j * s];
		advance(r->rank - 1, r->d, idx, 1, st, &off);
	}
}

/* Axis decomposition: outer x n x inner around axis a. */
static void
around(const Shape *s, int64_t a, int64_t *outer, int64_t *n, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < s->rank; i++)
		if (i < a)
			*outer *= s->d[i];
		else if (i > a)
			*inner *= s->d[i];
	*n = s->d[a];
}

/* ---------- elementwise ---------- */

/* The scalar meaning of each elementwise op: OPTAB's formula compiled here, calling
 * <mtc/mtc-ops.h> as the generated kernels do, so the targets and the interpreter agree to
 * the bit. x0..x2 are the operands, c and d the first two float attributes, n the result's
 * elements. */
typedef float Ew(float x0, float x1, float x2, float c, float d, float n);
#define X(id, nm, na, fl, ia, fa, sh, gr, co, nw, ew) \
	static float ew_##id(float x0, float x1, float x2, float c, float d, float n) \
	{ \
		(void)x0; (void)x1; (void)x2; (void)c; (void)d; (void)n; \
		return ew; \
	}
OPTAB(X)
#undef X
static Ew *const ewfn[] = {
#define X(id, nm, na, fl, ia, fa, sh, gr, co, nw, ew) [OP_##id] = (fl) & F_EW ? ew_##id : NULL,
	OPTAB(X)
#undef X
};

/* o[rs] = fn(x0, x1, x2) over up to three operands broadcast into rs. */
static void
ewise(Ew *fn, float c, float d, int nx, const float *const *x, const Shape *const *xs,
      const Shape *rs, float *o)
{
	int64_t st[3][MAXRANK], off[3] = {0, 0, 0}, idx[MAXRANK] = {0}, s[3] = {0, 0, 0};
	int64_t n = rowlen(rs), rows = shape_numel(rs) / n;
	float fn_n = (float)shape_numel(rs), v[3] = {0, 0, 0};

	for (int k = 0; k < nx; k++) {
		bstrides(xs[k], rs, st[k]);
		s[k] = rs->rank ? st[k][rs->rank - 1] : 0;
	}
	for (int64_t i = 0; i < rows; i++, o += n) {
		for (int64_t j = 0; j < n; j++) {
			for (int k = 0; k < nx; k++)
				v[k] = x[k][off[k] + j * s[k]];
			o[j] = fn(v[0], v[1], v[2], c, d, fn_n);
		}
		advance(rs->rank - 1, rs->d, idx, nx, st, off);
	}
}

/* Every F_EW op but broadcast. */
static int
k_ew(Run *r, const Op *op)
{
	const float *x[3];
	const Shape *xs[3];

	for (int k = 0; k < op->nargs; k++) {
		x[k] = IN(k);
		xs[k] = &TY(k)->sh;
	}
	ewise(ewfn[op->kind], (float)op->fa[0], (float)op->fa[1], op->nargs, x, xs, &RTY->sh, OUT);
	return 0;
}

/* to_i32: toward zero, NaN 0, clamped (mtc_toi32, every target's). */
static int
k_toi32(Run *r, const Op *op)
{
	const float *x = IN(0);
	int32_t *o = r->buf[op->res];
	int64_t n = shape_numel(&RTY->sh);

	for (int64_t i = 0; i < n; i++)
		o[i] = mtc_toi32(x[i]);
	return 0;
}

/* to_f32: each i32 value rounded to the nearest f32 (C's conversion, as every target's). */
static int
k_tof32(Run *r, const Op *op)
{
	const int32_t *x = INI(0);
	float *o = OUT;
	int64_t n = shape_numel(&RTY->sh);

	for (int64_t i = 0; i < n; i++)
		o[i] = (float)x[i];
	return 0;
}

static int
k_const(Run *r, const Op *op)
{
	float v = (float)op->fa[0], *o = OUT;
	int64_t n = shape_numel(&RTY->sh);

	for (int64_t i = 0; i < n; i++)
		o[i] = v;
	return 0;
}

/* ---------- data movement (dtype-agnostic: 4-byte words) ---------- */

static int
k_copy(Run *r, const Op *op)
{
	memcpy(r->buf[op->res], r->buf[op->args[0]], type_bytes(RTY));
	return 0;
}

/* swap_home: the decl's home gets the value (the result is that home, as host memory). */
static int
k_home(Run *r, const Op *op)
{
	memcpy(r->buf[op->args[0]], r->buf[op->args[1]], type_bytes(RTY));
	memcpy(r->buf[op->res], r->buf[op->args[1]], type_bytes(RTY));
	return 0;
}

static int
k_transpose(Run *r, const Op *op)
{
	const Shape *xs = &TY(0)->sh;
	int64_t cs[MAXRANK], st[1][MAXRANK], s = 1;

	for (int i = xs->rank - 1; i >= 0; i--) {
		cs[i] = s;
		s *= xs->d[i];
	}
	for (int i = 0; i < xs->rank; i++)
		st[0][i] = cs[op->ia[i]];
	gather(r->buf[op->args[0]], st, &RTY->sh, r->buf[op->res]);
	return 0;
}

static int
k_bcast(Run *r, const Op *op)
{
	int64_t st[1][MAXRANK];

	bstrides(&TY(0)->sh, &RTY->sh, st[0]);
	gather(r->buf[op->args[0]], st, &RTY->sh, r->buf[op->res]);
	return 0;
}

/* slice(x) axis start: x narrowed along axis to [start, start + r.d[axis]) */
static int
k_slice(Run *r, const Op *op)
{
	int64_t outer, n, inner, ax = op->ia[0], st = op->ia[1], xn = TY(0)->sh.d[ax];
	const uint32_t *x = r->buf[op->args[0]];
	uint32_t *o = r->buf[op->res];

	around(&RTY->sh, ax, &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		memcpy(o + i * n * inner, x + (i * xn + st) * inner, n * inner * 4);
	return 0;
}

/* slice_grad(dy) axis start: zeros, dy at [start, start + dy.d[axis]) along axis */
static int
k_slicegrad(Run *r, const Op *op)
{
	int64_t outer, n, inner, ax = op->ia[0], st = op->ia[1], rn = RTY->sh.d[ax];
	const float *x = IN(0);
	float *o = OUT;

	memset(o, 0, type_bytes(RTY));
	around(&TY(0)->sh, ax, &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		memcpy(o + (i * rn + st) * inner, x + i * n * inner, n * inner * 4);
	return 0;
}

static int
k_concat(Run *r, const Op *op)
{
	int64_t outer, n, inner, ax = op->ia[0];
	uint32_t *o = r->buf[op->res];

	around(&RTY->sh, ax, &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		for (int k = 0; k < op->nargs; k++) {
			int64_t blk = TY(k)->sh.d[ax] * inner;
			memcpy(o, (const uint32_t *)r->buf[op->args[k]] + i * blk, blk * 4);
			o += blk;
		}
	return 0;
}

/* ---------- matmul ---------- */

/* c[j] += a[0] b[j] + a[1] b[ld + j] + a[2] b[2 ld + j] + a[3] b[3 ld + j], left to right
 * (the same rounding as four single steps of k). Four columns at a time, written out, so
 * that -O2 turns them into vector instructions (SLP); restrict says c is not b. */
static void
axpy4(float *restrict c, const float *a, const float *restrict b, int64_t ld, int64_t n)
{
	const float *b0 = b, *b1 = b + ld, *b2 = b + 2 * ld, *b3 = b + 3 * ld;
	float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
	int64_t j = 0;

	for (; j + 4 <= n; j += 4) {
		c[j] = c[j] + a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
		c[j + 1] = c[j + 1] + a0 * b0[j + 1] + a1 * b1[j + 1] + a2 * b2[j + 1] + a3 * b3[j + 1];
		c[j + 2] = c[j + 2] + a0 * b0[j + 2] + a1 * b1[j + 2] + a2 * b2[j + 2] + a3 * b3[j + 2];
		c[j + 3] = c[j + 3] + a0 * b0[j + 3] + a1 * b1[j + 3] + a2 * b2[j + 3] + a3 * b3[j + 3];
	}
	for (; j < n; j++)
		c[j] = c[j] + a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
}

/* c[j] += a b[j] */
static void
axpy1(float *restrict c, float a, const float *restrict b, int64_t n)
{
	int64_t j = 0;

	for (; j + 4 <= n; j += 4) {
		c[j] += a * b[j];
		c[j + 1] += a * b[j + 1];
		c[j + 2] += a * b[j + 2];
		c[j + 3] += a * b[j + 3];
	}
	for (; j < n; j++)
		c[j] += a * b[j];
}

/* C[M,N] = op(A) op(B) per batch, batch dims broadcast; i-k-j order, float accumulation. */
static int
k_matmul(Run *r, const Op *op)
{
	const Shape *as = &TY(0)->sh, *bs = &TY(1)->sh, *rs = &RTY->sh;
	int ta = op->ia[0] != 0, tb = op->ia[1] != 0;
	int64_t M = rs->d[rs->rank - 2], N = rs->d[rs->rank - 1];
	int64_t K = ta ? as->d[as->rank - 2] : as->d[as->rank - 1];
	int64_t st[2][MAXRANK], off[2] = {0, 0}, idx[MAXRANK] = {0}, nb, lastb = -1;
	Shape ab = *as, bb = *bs, ob = *rs;
	const float *a = IN(0), *b = IN(1);
	float *o = OUT, *bt = NULL;

	ab.rank -= 2;
	bb.rank -= 2;
	ob.rank -= 2;
	bstrides(&ab, &ob, st[0]);
	bstrides(&bb, &ob, st[1]);
	nb = shape_numel(&ob);
	if (tb)
		bt = xmalloc(K * N * sizeof *bt);
	for (int64_t bi = 0; bi < nb; bi++, o += M * N) {
		const float *A = a + off[0] * M * K, *B = b + off[1] * K * N;
		if (tb) {
			/* B is stored [N, K]: transpose once per distinct batch matrix */
			if (off[1] != lastb)
				for (int64_t k = 0; k < K; k++)
					for (int64_t j = 0; j < N; j++)
						bt[k * N + j] = B[j * K + k];
			lastb = off[1];
			B = bt;
		}
		for (int64_t i = 0; i < M; i++) {
			float *c = o + i * N;
			int64_t k = 0;
			for (int64_t j = 0; j < N; j++)
				c[j] = 0;
			for (; k + 4 <= K; k += 4) {
				float av[4];
				for (int u = 0; u < 4; u++)
					av[u] = ta ? A[(k + u) * M + i] : A[i * K + k + u];
				axpy4(c, av, B + k * N, N, N);
			}
			for (; k < K; k++)
				axpy1(c, ta ? A[k * M + i] : A[i * K + k], B + k * N, N);
		}
		advance(ob.rank, ob.d, idx, 2, st, off);
	}
	free(bt);
	return 0;
}

/* ---------- convolution ---------- */

/* C[M,N] (ldc) = op(A) op(B), A [M,K] (lda; stored [K,M] when ta), B [K,N] (ldb; stored
 * [N,K] when tb): every element summed over k ascending in one float from 0, as k_matmul
 * does. */
static void
gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
     const float *B, int64_t ldb, float *C, int64_t ldc)
{
	float *bt = NULL;

	if (tb) {
		bt = xmalloc((K * N > 0 ? K * N : 1) * sizeof *bt);
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < N; j++)
				bt[k * N + j] = B[j * ldb + k];
		B = bt;
		ldb = N;
	}
	for (int64_t i = 0; i < M; i++) {
		float *c = C + i * ldc;
		int64_t k = 0;
		for (int64_t j = 0; j < N; j++)
			c[j] = 0;
		for (; k + 4 <= K; k += 4) {
			float av[4];
			for (int u = 0; u < 4; u++)
				av[u] = ta ? A[(k + u) * lda + i] : A[i * lda + k + u];
			axpy4(c, av, B + k * ldb, ldb, N);
		}
		for (; k < K; k++)
			axpy1(c, ta ? A[k * lda + i] : A[i * lda + k], B + k * ldb, N);
	}
	free(bt);
}

/* A window's geometry: kh kw sh sw ph pw dh dw over x [N, C, H, W], output Ho x Wo. */
typedef struct Win {
	int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
} Win;

/* A pool's window: the op's attributes kh kw sh sw ph pw dh dw; y its result (or gradient). */
static Win
win(const Op *op, const Shape *x, const Shape *y)
{
	const int64_t *a = op->ia;
	return (Win){ x->d[0], x->d[1], x->d[2], x->d[3], a[0], a[1], a[2], a[3], a[4], a[5], a[6],
	              a[7], y->d[2], y->d[3] };
}

/* A convolution's: x, the weight w (kh, kw), attributes sh sw ph pw dh dw groups. */
static Win
cwin(const Op *op, const Shape *x, const Shape *w)
{
	const int64_t *a = op->ia;
	Win g = { x->d[0], x->d[1], x->d[2], x->d[3], w->d[2], w->d[3], a[0], a[1], a[2], a[3], a[4],
	          a[5], 0, 0 };
	g.ho = window_out(g.h, g.kh, g.sh, g.ph, g.dh);
	g.wo = window_out(g.w, g.kw, g.sw, g.pw, g.dw);
	return g;
}

/* The columns of x (grad.c): cols[(c*kh + i)*kw + j, (n, oh, ow)], 0 in the padding. */
static float *
columns(const Win *g, const float *x)
{
	int64_t m = g->n * g->ho * g->wo;
	float *o = xmalloc((g->c * g->kh * g->kw * m > 0 ? g->c * g->kh * g->kw * m : 1) * sizeof *o), *p = o;

	for (int64_t c = 0; c < g->c; c++)
		for (int64_t i = 0; i < g->kh; i++)
			for (int64_t j = 0; j < g->kw; j++)
				for (int64_t n = 0; n < g->n; n++)
					for (int64_t oh = 0; oh < g->ho; oh++)
						for (int64_t ow = 0; ow < g->wo; ow++) {
							int64_t h = oh * g->sh - g->ph + i * g->dh, w = ow * g->sw - g->pw + j * g->dw;
							*p++ = h >= 0 && h < g->h && w >= 0 && w < g->w ?
							       x[((n * g->c + c) * g->h + h) * g->w + w] : 0;
						}
	return o;
}

/* t [C, N, P] <-> y [N, C, P]: to (1) or from (0) channels first. */
static void
chanfirst(float *t, float *y, int64_t n, int64_t c, int64_t p, int to)
{
	for (int64_t a = 0; a < n; a++)
		for (int64_t b = 0; b < c; b++)
			memcpy(to ? t + (b * n + a) * p : y + (a * c + b) * p, to ? y + (a * c + b) * p : t + (b * n + a) * p,
			       p * sizeof *t);
}

/* conv2d(x, w): per group the GEMM w_g [Cog, Kg] @ cols_g [Kg, N*Ho*Wo], then NCHW. */
static int
k_conv2d(Run *r, const Op *op)
{
	Win g = cwin(op, &TY(0)->sh, &TY(1)->sh);
	int64_t G = op->ia[6], co = TY(1)->sh.d[0], cog = co / G, kg = g.c / G * g.kh * g.kw;
	int64_t m = g.n * g.ho * g.wo;
	float *cols = columns(&g, IN(0)), *t = xmalloc((co * m > 0 ? co * m : 1) * sizeof *t);

	for (int64_t k = 0; k < G; k++)
		gemm(0, 0, cog, m, kg, IN(1) + k * cog * kg, kg, cols + k * kg * m, m, t + k * cog * m, m);
	chanfirst(t, OUT, g.n, co, g.ho * g.wo, 0);
	free(cols);
	free(t);
	return 0;
}

/* conv2d_dx(w, dy): dcols_g = w_g^T @ dy_g, then col2im (each x element sums its kernel
 * offsets, i then j). */
static int
k_conv2d_dx(Run *r, const Op *op)
{
	Win g = cwin(op, &RTY->sh, &TY(0)->sh);
	int64_t G = op->ia[6], co = TY(0)->sh.d[0], cog = co / G, kg = g.c / G * g.kh * g.kw;
	int64_t m = g.n * g.ho * g.wo;
	float *t = xmalloc((co * m > 0 ? co * m : 1) * sizeof *t), *dc = xmalloc((G * kg * m > 0 ? G * kg * m : 1) * sizeof *dc);
	float *o = OUT;

	chanfirst(t, (float *)IN(1), g.n, co, g.ho * g.wo, 1);
	for (int64_t k = 0; k < G; k++)
		gemm(1, 0, kg, m, cog, IN(0) + k * cog * kg, kg, t + k * cog * m, m, dc + k * kg * m, m);
	for (int64_t n = 0; n < g.n; n++)
		for (int64_t c = 0; c < g.c; c++)
			for (int64_t h = 0; h < g.h; h++)
				for (int64_t w = 0; w < g.w; w++) {
					float s = 0;
					for (int64_t i = 0; i < g.kh; i++)
						for (int64_t j = 0; j < g.kw; j++) {
							int64_t th = h + g.ph - i * g.dh, tw = w + g.pw - j * g.dw;
							if (th < 0 || tw < 0 || th % g.sh || tw % g.sw || th / g.sh >= g.ho ||
							    tw / g.sw >= g.wo)
								continue;
							s += dc[((c * g.kh + i) * g.kw + j) * m + (n * g.ho + th / g.sh) * g.wo + tw / g.sw];
						}
					*o++ = s;
				}
	free(t);
	free(dc);
	return 0;
}

/* conv2d_dw(x, dy): per group dy_g [Cog, M] @ cols_g^T [M, Kg]. */
static int
k_conv2d_dw(Run *r, const Op *op)
{
	Win g = cwin(op, &TY(0)->sh, &RTY->sh);
	int64_t G = op->ia[6], co = RTY->sh.d[0], cog = co / G, kg = g.c / G * g.kh * g.kw;
	int64_t m = g.n * g.ho * g.wo;
	float *cols = columns(&g, IN(0)), *t = xmalloc((co * m > 0 ? co * m : 1) * sizeof *t);

	chanfirst(t, (float *)IN(1), g.n, co, g.ho * g.wo, 1);
	for (int64_t k = 0; k < G; k++)
		gemm(0, 1, cog, kg, m, t + k * cog * m, m, cols + k * kg * m, m, OUT + k * cog * kg, kg);
	free(cols);
	free(t);
	return 0;
}

/* ---------- pooling ---------- */

/* A pool's window over x [N, C, H, W] with result or gradient shape y (avg pools: dilation 1). */
static Win
pwin(const Op *op, const Shape *x, const Shape *y)
{
	Win g = win(op, x, y);
	if (op->kind == OP_AVGPOOL || op->kind == OP_AVGPOOL_G)
		g.dh = g.dw = 1;
	return g;
}

/* The arg-max of output (oh, ow)'s window in plane xp, PyTorch's: the first offset greater
 * than every one before it, or a NaN (the last NaN: each one replaces the max). */
static int64_t
pool_argmax(const float *xp, const Win *g, int64_t oh, int64_t ow)
{
	int64_t best = -1;
	float m = -INFINITY;

	for (int64_t i = 0; i < g->kh; i++)
		for (int64_t j = 0; j < g->kw; j++) {
			int64_t h = oh * g->sh - g->ph + i * g->dh, w = ow * g->sw - g->pw + j * g->dw;
			if (h < 0 || h >= g->h || w < 0 || w >= g->w)
				continue;
			if (best < 0)
				best = h * g->w + w;
			if (xp[h * g->w + w] > m || isnan(xp[h * g->w + w])) {
				m = xp[h * g->w + w];
				best = h * g->w + w;
			}
		}
	return best;
}

/* The number avg_pool2d divides a window's sum by. */
static float
pool_div(const Op *op, const Win *g, int64_t oh, int64_t ow)
{
	int64_t h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw, h1 = h0 + g->kh, w1 = w0 + g->kw;

	if (op->ia[6])
		return (float)(g->kh * g->kw);
	h0 = h0 < 0 ? 0 : h0;
	w0 = w0 < 0 ? 0 : w0;
	h1 = h1 > g->h ? g->h : h1;
	w1 = w1 > g->w ? g->w : w1;
	return (float)((h1 - h0) * (w1 - w0));
}

/* max_pool2d and avg_pool2d, each plane in turn. */
static int
k_pool(Run *r, const Op *op)
{
	Win g = pwin(op, &TY(0)->sh, &RTY->sh);
	const float *x = IN(0);
	float *o = OUT;

	for (int64_t q = 0; q < g.n * g.c; q++) {
		const float *xp = x + q * g.h * g.w;
		for (int64_t oh = 0; oh < g.ho; oh++)
			for (int64_t ow = 0; ow < g.wo; ow++) {
				float s = 0;
				if (op->kind == OP_MAXPOOL) {
					*o++ = xp[pool_argmax(xp, &g, oh, ow)];
					continue;
				}
				for (int64_t i = 0; i < g.kh; i++)
					for (int64_t j = 0; j < g.kw; j++) {
						int64_t h = oh * g.sh - g.ph + i, w = ow * g.sw - g.pw + j;
						if (h >= 0 && h < g.h && w >= 0 && w < g.w)
							s += xp[h * g.w + w];
					}
				*o++ = s / pool_div(op, &g, oh, ow);
			}
	}
	return 0;
}

/* max_pool2d_grad(x, dy), avg_pool2d_grad(dy): the outputs' gradients spread back in order. */
static int
k_poolgrad(Run *r, const Op *op)
{
	int mx = op->kind == OP_MAXPOOL_G;
	Win g = pwin(op, &RTY->sh, &TY(mx)->sh);
	const float *dy = IN(mx);
	float *o = OUT;

	memset(o, 0, type_bytes(RTY));
	for (int64_t q = 0; q < g.n * g.c; q++) {
		float *op_ = o + q * g.h * g.w;
		for (int64_t oh = 0; oh < g.ho; oh++)
			for (int64_t ow = 0; ow < g.wo; ow++, dy++) {
				float v;
				if (mx) {
					op_[pool_argmax(IN(0) + q * g.h * g.w, &g, oh, ow)] += *dy;
					continue;
				}
				v = *dy / pool_div(op, &g, oh, ow);
				for (int64_t i = 0; i < g.kh; i++)
					for (int64_t j = 0; j < g.kw; j++) {
						int64_t h = oh * g.sh - g.ph + i, w = ow * g.sw - g.pw + j;
						if (h >= 0 && h < g.h && w >= 0 && w < g.w)
							op_[h * g.w + w] += v;
					}
			}
	}
	return 0;
}

/* ---------- dropout ---------- */

/* dropout(x, t): each element kept (times 1/(1-p)) where its draw, that of its place in the
 * whole batch, is at least p; dropout(x) (inference) copies x. */
static int
k_dropout(Run *r, const Op *op)
{
	int64_t n = shape_numel(&RTY->sh);
	const float *x = IN(0);
	float *o = OUT, p = (float)op->fa[0], sc = (float)(1.0 / (1.0 - op->fa[0]));
	int t = op->nargs > 1 ? INI(1)[0] : 0;
	long long q = op->ia[4] + (long long)r->in->comm.rank * op->ia[5];   /* this slice */

	for (int64_t i = 0; i < n; i++)
		o[i] = op->nargs < 2 ? x[i] :
		       mtc_dropout_u(mtc_dropout_at(i, op->ia[2], op->ia[3], q), (int)op->ia[0], t,
		                     (unsigned long long)op->ia[1]) >= p ? x[i] * sc : 0;
	return 0;
}

/* ---------- batch norm ---------- */

/* x [N, C, ...] as N x C x Q. */
static void
ncq(const Shape *x, int64_t *n, int64_t *c, int64_t *q)
{
	*n = x->d[0];
	*c = x->d[1];
	*q = shape_numel(x) / (*n * *c);
}

static float
invstd(float var, double eps)
{
	return (float)(1 / sqrt((double)var + eps));
}

/* batch_norm: y = x * a + b per channel, a = gamma * invstd, b = beta - mean * a. */
static int
k_batchnorm(Run *r, const Op *op)
{
	int64_t N, C, Q;
	const float *x = IN(0), *g = IN(1), *b = IN(2), *mu = IN(3), *var = IN(4);
	float *o = OUT;

	ncq(&TY(0)->sh, &N, &C, &Q);
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++) {
			float a = g[c] * invstd(var[c], op->fa[0]), sh = b[c] - mu[c] * a;
			const float *xp = x + (n * C + c) * Q;
			float *op_ = o + (n * C + c) * Q;
			for (int64_t q = 0; q < Q; q++)
				op_[q] = xp[q] * a + sh;
		}
	return 0;
}

/* batch_norm_mean, batch_norm_var: per channel, in double over (n, q) in order. */
static int
k_bnstat(Run *r, const Op *op)
{
	int64_t N, C, Q;
	const float *x = IN(0);
	float *o = OUT;

	ncq(&TY(0)->sh, &N, &C, &Q);
	for (int64_t c = 0; c < C; c++) {
		double s = 0, mu = op->kind == OP_BN_VAR ? IN(1)[c] : 0;
		for (int64_t n = 0; n < N; n++)
			for (int64_t q = 0; q < Q; q++) {
				double v = x[(n * C + c) * Q + q];
				s += op->kind == OP_BN_VAR ? (v - mu) * (v - mu) : v;
			}
		o[c] = (float)(s / (double)(N * Q));
	}
	return 0;
}

/* batch_norm_dstats(x, mean, var, dy): [sum dy (x - mean) * invstd; sum dy] per channel. */
static int
k_bndstats(Run *r, const Op *op)
{
	int64_t N, C, Q;
	const float *x = IN(0), *mu = IN(1), *var = IN(2), *dy = IN(3);
	float *o = OUT;

	ncq(&TY(0)->sh, &N, &C, &Q);
	for (int64_t c = 0; c < C; c++) {
		double dot = 0, s = 0;
		for (int64_t n = 0; n < N; n++)
			for (int64_t q = 0; q < Q; q++) {
				int64_t e = (n * C + c) * Q + q;
				dot += (double)dy[e] * ((double)x[e] - mu[c]);
				s += dy[e];
			}
		o[c] = (float)(dot * invstd(var[c], op->fa[0]));
		o[C + c] = (float)s;
	}
	return 0;
}

/* batch_norm_dx(x, gamma, mean, var, dy, ds) training: PyTorch's formula (grad.c). */
static int
k_bndx(Run *r, const Op *op)
{
	int64_t N, C, Q;
	const float *x = IN(0), *g = IN(1), *mu = IN(2), *var = IN(3), *dy = IN(4), *ds = IN(5);
	float *o = OUT;

	ncq(&TY(0)->sh, &N, &C, &Q);
	for (int64_t c = 0; c < C; c++) {
		float is = invstd(var[c], op->fa[0]), w = is * g[c];
		float gm = (float)((double)ds[C + c] / (double)(N * Q));
		float pj = (float)((double)ds[c] * is / (double)(N * Q));
		for (int64_t n = 0; n < N; n++)
			for (int64_t q = 0; q < Q; q++) {
				int64_t e = (n * C + c) * Q + q;
				o[e] = op->ia[0] ? (dy[e] - gm - (x[e] - mu[c]) * pj) * w : dy[e] * w;
			}
	}
	return 0;
}

/* batch_norm_update(rmean, rvar, mean, var) count momentum, in place, in double. */
static int
k_bnupdate(Run *r, const Op *op)
{
	float *rm = r->buf[op->args[0]], *rv = r->buf[op->args[1]];
	const float *mu = IN(2), *var = IN(3);
	double m = op->fa[0], cnt = (double)op->ia[0];
	int64_t C = TY(0)->sh.d[0];

	for (int64_t c = 0; c < C; c++) {
		rm[c] = (float)(m * mu[c] + (1 - m) * rm[c]);
		rv[c] = (float)(m * ((double)var[c] * cnt / (cnt - 1)) + (1 - m) * rv[c]);
	}
	return 0;
}

/* ---------- reductions ---------- */

static int
k_reduce(Run *r, const Op *op)
{
	int64_t outer, n, inner;
	const float *x = IN(0);
	float *o = OUT;

	around(&TY(0)->sh, op->ia[0], &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++, o += inner) {
		const float *xi = x + i * n * inner;
		for (int64_t j = 0; j < inner; j++)
			o[j] = xi[j];
		for (int64_t k = 1; k < n; k++) {
			const float *xk = xi + k * inner;
			if (op->kind == OP_MAX) {
				for (int64_t j = 0; j < inner; j++)
					if (xk[j] > o[j])
						o[j] = xk[j];
			} else {
				for (int64_t j = 0; j < inner; j++)
					o[j] += xk[j];
			}
		}
		if (op->kind == OP_MEAN)
			for (int64_t j = 0; j < inner; j++)
				o[j] /= (float)n;
	}
	return 0;
}

/* argmax (passes/grad.c): the first largest, or the first NaN, per column. */
static int
k_argmax(Run *r, const Op *op)
{
	int64_t outer, n, inner;
	const float *x = IN(0);
	int32_t *o = r->buf[op->res];

	around(&TY(0)->sh, op->ia[0], &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		for (int64_t j = 0; j < inner; j++) {
			const float *c = x + i * n * inner + j;
			int32_t best = 0;
			for (int64_t k = 1; k < n && c[best * inner] == c[best * inner]; k++)
				if (c[k * inner] > c[best * inner] || c[k * inner] != c[k * inner])
					best = (int32_t)k;
			o[i * inner + j] = best;
		}
	return 0;
}

/* cumsum (passes/grad.c): a sum in double per column, from the start the reverse flag says. */
static int
k_cumsum(Run *r, const Op *op)
{
	int64_t outer, n, inner, ex = op->ia[1], rev = op->ia[2];
	const float *x = IN(0);
	float *o = OUT;

	around(&TY(0)->sh, op->ia[0], &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		for (int64_t j = 0; j < inner; j++) {
			double s = 0;
			for (int64_t t = 0; t < n; t++) {
				int64_t at = (i * n + (rev ? n - 1 - t : t)) * inner + j;
				double v = x[at];
				if (!ex)
					s += v;
				o[at] = (float)s;
				if (ex)
					s += v;
			}
		}
	return 0;
}

/* max_grad(x, y, dy): along the axis, dy goes to the first arg-max of x; every other element
 * is 0. With y = max(x), as autodiff makes it, that is grad.c's "first index where x == y";
 * recomputing the arg-max from x (as the backends do) keeps them equal on any operands. */
static int
k_maxgrad(Run *r, const Op *op)
{
	int64_t outer, n, inner;
	const float *x = IN(0), *dy = IN(2);
	float *o = OUT;

	around(&TY(0)->sh, op->ia[0], &outer, &n, &inner);
	memset(o, 0, type_bytes(RTY));
	for (int64_t i = 0; i < outer; i++)
		for (int64_t j = 0; j < inner; j++) {
			const float *xi = x + i * n * inner + j;
			int64_t best = 0;
			for (int64_t k = 1; k < n; k++)
				if (xi[k * inner] > xi[best * inner])
					best = k;
			o[i * n * inner + best * inner + j] = dy[i * inner + j];
		}
	return 0;
}

/* sum_to(x): the sum of x over the dims its (given) result type broadcasts along. */
static int
k_sumto(Run *r, const Op *op)
{
	const Shape *xs = &TY(0)->sh;
	int64_t st[1][MAXRANK], off = 0, idx[MAXRANK] = {0}, n = rowlen(xs), rows = shape_numel(xs) / n, s;
	const float *x = IN(0);
	float *o = OUT;

	memset(o, 0, type_bytes(RTY));
	bstrides(&RTY->sh, xs, st[0]);
	s = xs->rank ? st[0][xs->rank - 1] : 0;
	for (int64_t i = 0; i < rows; i++, x += n) {
		for (int64_t j = 0; j < n; j++)
			o[off + j * s] += x[j];
		advance(xs->rank - 1, xs->d, idx, 1, st, &off);
	}
	return 0;
}

/* ---------- softmax family ---------- */

static int
k_softmax(Run *r, const Op *op)
{
	int64_t outer, n, inner;
	const float *x = IN(0);
	float *o = OUT;
	int lg = op->kind == OP_LOGSOFTMAX;

	around(&TY(0)->sh, op->ia[0], &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		for (int64_t j = 0; j < inner; j++) {
			const float *xi = x + i * n * inner + j;
			float *oi = o + i * n * inner + j, m = xi[0], s = 0;
			for (int64_t k = 1; k < n; k++)
				if (xi[k * inner] > m)
					m = xi[k * inner];
			for (int64_t k = 0; k < n; k++)
				s += mtc_expf(xi[k * inner] - m);
			if (lg) {
				float ls = mtc_logf(s);
				for (int64_t k = 0; k < n; k++)
					oi[k * inner] = xi[k * inner] - m - ls;
			} else {
				for (int64_t k = 0; k < n; k++)
					oi[k * inner] = mtc_expf(xi[k * inner] - m) / s;
			}
		}
	return 0;
}

/* softmax_grad(y, dy) = y (dy - sum(dy y)); log_softmax_grad(y, dy) = dy - exp(y) sum(dy). */
static int
k_softmaxgrad(Run *r, const Op *op)
{
	int64_t outer, n, inner;
	const float *y = IN(0), *dy = IN(1);
	float *o = OUT;
	int lg = op->kind == OP_LOGSOFTMAX_G;

	if (!shape_eq(&TY(0)->sh, &TY(1)->sh))
		return fail(r, "%s needs operands of one shape", opinfo[op->kind].name);
	around(&RTY->sh, op->ia[0], &outer, &n, &inner);
	for (int64_t i = 0; i < outer; i++)
		for (int64_t j = 0; j < inner; j++) {
			int64_t b = i * n * inner + j;
			float s = 0;
			for (int64_t k = 0; k < n; k++)
				s += lg ? dy[b + k * inner] : dy[b + k * inner] * y[b + k * inner];
			for (int64_t k = 0; k < n; k++) {
				int64_t e = b + k * inner;
				o[e] = lg ? dy[e] - mtc_expf(y[e]) * s : y[e] * (dy[e] - s);
			}
		}
	return 0;
}

/* ---------- layernorm ---------- */

/* Mean and 1/sqrt(biased variance + eps) of one row. */
static void
moments(const float *x, int64_t d, float eps, float *mean, float *rstd)
{
	float s = 0, v = 0;

	for (int64_t k = 0; k < d; k++)
		s += x[k];
	s /= (float)d;
	for (int64_t k = 0; k < d; k++)
		v += (x[k] - s) * (x[k] - s);
	v /= (float)d;
	*mean = s;
	*rstd = 1 / sqrtf(v + eps);
}

static int
k_layernorm(Run *r, const Op *op)
{
	const float *x = IN(0), *g = IN(1), *b = IN(2);
	float *o = OUT, eps = (float)op->fa[0];
	int64_t d = rowlen(&RTY->sh), rows = shape_numel(&RTY->sh) / d;

	for (int64_t i = 0; i < rows; i++, x += d, o += d) {
		float mu, rs;
		moments(x, d, eps, &mu, &rs);
		for (int64_t k = 0; k < d; k++)
			o[k] = (x[k] - mu) * rs * g[k] + b[k];
	}
	return 0;
}

/* layernorm_dx(x, gamma, dy) = rstd (dxh - mean(dxh) - xh mean(dxh xh)), dxh = dy gamma. */
static int
k_lndx(Run *r, const Op *op)
{
	const float *x = IN(0), *g = IN(1), *dy = IN(2);
	float *o = OUT, eps = (float)op->fa[0];
	int64_t d = rowlen(&RTY->sh), rows = shape_numel(&RTY->sh) / d;

	for (int64_t i = 0; i < rows; i++, x += d, dy += d, o += d) {
		float mu, rs, s1 = 0, s2 = 0;
		moments(x, d, eps, &mu, &rs);
		for (int64_t k = 0; k < d; k++) {
			float dxh = dy[k] * g[k];
			s1 += dxh;
			s2 += dxh * ((x[k] - mu) * rs);
		}
		s1 /= (float)d;
		s2 /= (float)d;
		for (int64_t k = 0; k < d; k++)
			o[k] = rs * (dy[k] * g[k] - s1 - (x[k] - mu) * rs * s2);
	}
	return 0;
}

/* layernorm_dgamma(x, dy) = sum over rows of dy xh */
static int
k_lndgamma(Run *r, const Op *op)
{
	const float *x = IN(0), *dy = IN(1);
	float *o = OUT, eps = (float)op->fa[0];
	int64_t d = rowlen(&TY(0)->sh), rows = shape_numel(&TY(0)->sh) / d;

	memset(o, 0, d * sizeof *o);
	for (int64_t i = 0; i < rows; i++, x += d, dy += d) {
		float mu, rs;
		moments(x, d, eps, &mu, &rs);
		for (int64_t k = 0; k < d; k++)
			o[k] += dy[k] * ((x[k] - mu) * rs);
	}
	return 0;
}

/* ---------- embedding ---------- */

/* An id or label out of range: which tensor (an input by its name), which element. */
static int
bad_id(Run *r, const Op *op, int arg, int64_t i, int64_t lim)
{
	const Value *v = &r->f->val[op->args[arg]];
	const int32_t *ids = INI(arg);
	char at[MAXRANK * 22 + 4];
	int64_t rem = i;
	size_t k = 0;

	at[0] = 0;
	for (int d = v->ty.sh.rank - 1; d >= 0; d--) {      /* the index, last dim first */
		char t[sizeof at];
		snprintf(t, sizeof t, "%lld%s%s", (long long)(rem % v->ty.sh.d[d]), k ? ", " : "", at);
		snprintf(at, sizeof at, "%s", t);
		rem /= v->ty.sh.d[d];
		k = 1;
	}
	return fail(r, "%s: %s %d at %s '%s'[%s] is out of range [0, %lld)", opinfo[op->kind].name,
	            op->kind == OP_EMBEDDING || op->kind == OP_EMBED_G ? "id" : "label", ids[i],
	            v->decl >= 0 && r->f->mod->decl[v->decl].role == R_INPUT ? "input" : "value", v->name,
	            at, (long long)lim);
}

static int
k_embedding(Run *r, const Op *op)
{
	const Shape *ts = &TY(0)->sh;
	int64_t v = ts->d[0], d = ts->d[1], n = shape_numel(&TY(1)->sh);
	const int32_t *ids = INI(1);
	const float *t = IN(0);
	float *o = OUT;

	for (int64_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= v)
			return bad_id(r, op, 1, i, v);
		memcpy(o + i * d, t + (int64_t)ids[i] * d, d * sizeof *o);
	}
	return 0;
}

/* embedding_grad(ids, dy): scatter-add the rows of dy into a zero [V, D] table. */
static int
k_embedgrad(Run *r, const Op *op)
{
	int64_t v = RTY->sh.d[0], d = RTY->sh.d[1], n = shape_numel(&TY(0)->sh);
	const int32_t *ids = INI(0);
	const float *dy = IN(1);
	float *o = OUT;

	memset(o, 0, type_bytes(RTY));
	for (int64_t i = 0; i < n; i++) {
		float *row;
		if (ids[i] < 0 || ids[i] >= v)
			return bad_id(r, op, 0, i, v);
		row = o + (int64_t)ids[i] * d;
		for (int64_t k = 0; k < d; k++)
			row[k] += dy[i * d + k];
	}
	return 0;
}

/* ---------- losses ---------- */

static int
label_ok(Run *r, const Op *op, int64_t i, int64_t c)
{
	const int32_t *lb = INI(1);

	if (lb[i] < 0 || lb[i] >= c)
		return bad_id(r, op, 1, i, c);
	return 0;
}

/* cross_entropy(logits, labels) = mean over rows of logsumexp(row) - row[label] */
static int
k_xent(Run *r, const Op *op)
{
	const float *x = IN(0);
	const int32_t *lb = INI(1);
	int64_t c = rowlen(&TY(0)->sh), rows = shape_numel(&TY(0)->sh) / c;
	float tot = 0;

	for (int64_t i = 0; i < rows; i++, x += c) {
		float m = x[0], s = 0;
		if (label_ok(r, op, i, c))
			return -1;
		for (int64_t k = 1; k < c; k++)
			if (x[k] > m)
				m = x[k];
		for (int64_t k = 0; k < c; k++)
			s += mtc_expf(x[k] - m);
		tot += -(x[lb[i]] - m - mtc_logf(s));
	}
	OUT[0] = tot / (float)rows;
	return 0;
}

/* cross_entropy_grad(logits, labels, dl) = (softmax(row) - onehot(label)) dl / rows */
static int
k_xentgrad(Run *r, const Op *op)
{
	const float *x = IN(0);
	const int32_t *lb = INI(1);
	int64_t c = rowlen(&TY(0)->sh), rows = shape_numel(&TY(0)->sh) / c;
	float *o = OUT, g = IN(2)[0] / (float)rows;

	for (int64_t i = 0; i < rows; i++, x += c, o += c) {
		float m = x[0], s = 0;
		if (label_ok(r, op, i, c))
			return -1;
		for (int64_t k = 1; k < c; k++)
			if (x[k] > m)
				m = x[k];
		for (int64_t k = 0; k < c; k++)
			s += mtc_expf(x[k] - m);
		for (int64_t k = 0; k < c; k++)
			o[k] = (mtc_expf(x[k] - m) / s - (k == lb[i])) * g;
	}
	return 0;
}

/* mse(a, b) = mean of (a - b)^2 over the broadcast shape */
static float
sqdiff(float a, float b, float x2, float c, float d, float n)
{
	(void)x2, (void)c, (void)d, (void)n;
	return (a - b) * (a - b);
}

static int
k_mse(Run *r, const Op *op)
{
	Shape bs;
	int64_t n;
	float *t, s = 0;

	if (shape_broadcast(&TY(0)->sh, &TY(1)->sh, &bs))
		die("mse operands do not broadcast");
	n = shape_numel(&bs);
	t = xmalloc(n * sizeof *t);
	ewise(sqdiff, 0, 0, 2, (const float *[]){ IN(0), IN(1) },
	      (const Shape *[]){ &TY(0)->sh, &TY(1)->sh }, &bs, t);
	for (int64_t i = 0; i < n; i++)
		s += t[i];
	free(t);
	OUT[0] = s / (float)n;
	return 0;
}

/* ---------- optimizer updates, in place ---------- */

/* The updates: mtc-ops.h's formulas over every element; hyperparameters are f32[] operands. */
#define HYP(i) (IN(i)[0])

/* sgd_update(p, g, lr, wd) */
static int
k_sgd(Run *r, const Op *op)
{
	float *p = r->buf[op->args[0]], lr = HYP(2), wd = HYP(3);
	const float *g = IN(1);
	int64_t n = shape_numel(&TY(0)->sh);

	for (int64_t i = 0; i < n; i++)
		mtc_sgd_update(&p[i], g[i], lr, wd);
	return 0;
}

/* sgd_momentum_update(p, v, g, lr, momentum, wd) */
static int
k_sgdm(Run *r, const Op *op)
{
	float *p = r->buf[op->args[0]], *v = r->buf[op->args[1]];
	float lr = HYP(3), mu = HYP(4), wd = HYP(5);
	const float *g = IN(2);
	int64_t n = shape_numel(&TY(0)->sh);

	for (int64_t i = 0; i < n; i++)
		mtc_sgdm_update(&p[i], &v[i], g[i], lr, mu, wd);
	return 0;
}

/* adam_update(p, m, v, g, t, lr, beta1, beta2, eps) and adamw_update(..., wd) */
static int
k_adam(Run *r, const Op *op)
{
	float *p = r->buf[op->args[0]], *m = r->buf[op->args[1]], *v = r->buf[op->args[2]];
	const float *g = IN(3);
	int32_t t = INI(4)[0];
	int w = op->kind == OP_ADAMW;
	mtc_adam s = mtc_adam_scalars(t, HYP(5), HYP(6), HYP(7), HYP(8), w ? HYP(9) : 0);
	int64_t n = shape_numel(&TY(0)->sh);

	if (s.bad)
		return fail(r, "%s: step counter is %d; tick must precede the update", opinfo[op->kind].name, t);
	for (int64_t i = 0; i < n; i++)
		if (w)
			mtc_adamw_update(&p[i], &m[i], &v[i], g[i], &s);
		else
			mtc_adam_update(&p[i], &m[i], &v[i], g[i], &s);
	return 0;
}

/* sumsq(x): in double, in element order (every target's kernel sums the same way) */
static int
k_sumsq(Run *r, const Op *op)
{
	const float *x = IN(0);
	int64_t n = shape_numel(&TY(0)->sh);
	double s = 0;

	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	OUT[0] = (float)s;
	return 0;
}

/* copy_out(x) index start: into the step's output slot 1 + index (interp_out), from start on */
static int
k_copyout(Run *r, const Op *op)
{
	Tensor *o;
	int64_t k = op->ia[0];

	if (!r->f->mod || r->f != r->f->mod->step)
		return 0;            /* a function made from a step (a test's): nobody asked */
	if (1 + k >= r->in->nout)
		die("copy_out into output %lld of %d", (long long)k, r->in->nout - 1);
	o = &r->in->out[1 + k];
	if ((op->ia[1] + shape_numel(&TY(0)->sh)) * 4 > type_bytes(&o->ty))
		die("copy_out beyond its output");
	memcpy((char *)o->data + op->ia[1] * 4, r->buf[op->args[0]], type_bytes(TY(0)));
	return 0;
}

static int
k_tick(Run *r, const Op *op)
{
	((int32_t *)r->buf[op->args[0]])[0]++;
	return 0;
}

/* Pack the operands of collective op into o: one after the other, or (blocks) as `ranks`
 * blocks, block q holding shard q of each operand (zeros past its end). */
static void
pack(Run *r, const Op *op, float *o, int blocks)
{
	int64_t ranks = op->ia[0], at = 0, per = 0;

	for (int k = 0; k < op->nargs; k++)
		per += shard_len(shape_numel(&TY(k)->sh), ranks);
	for (int k = 0; k < op->nargs; k++) {
		int64_t m = shape_numel(&TY(k)->sh), s = shard_len(m, ranks);
		if (!blocks) {
			memcpy(o + at, IN(k), m * 4);
			at += m;
			continue;
		}
		for (int64_t q = 0; q < ranks; q++)
			for (int64_t e = 0; e < s; e++)
				o[q * per + at + e] = q * s + e < m ? IN(k)[q * s + e] : 0.0f;
		at += s;
	}
}

/* The collective over the ranks, in place: through the hook, or with the other ranks holding
 * what this one holds (sums in rank order). */
static int
coll(Run *r, int kind, float *buf, int64_t count, int64_t ranks)
{
	InterpComm *c = &r->in->comm;

	if (c->coll) {
		if (c->size != ranks)
			return fail(r, "a collective over %lld ranks on a communicator of %d", (long long)ranks, c->size);
		return c->coll(c->ctx, kind, buf, count) ? fail(r, "the collective failed") : 0;
	}
	if (kind == 2) {
		for (int64_t q = 1; q < ranks; q++)
			memcpy(buf + q * count, buf, count * 4);
		return 0;
	}
	for (int64_t i = 0; i < count; i++) {
		float x = buf[i], acc = x;
		for (int64_t q = 1; q < ranks; q++)
			acc += x;
		buf[i] = acc;
	}
	return 0;
}

static int
rank_of(Run *r)
{
	return r->in->comm.coll ? r->in->comm.rank : 0;
}

/* allreduce, reduce_scatter: the operands packed into the bucket, summed over the ranks, times
 * scale (one rank, or scale 1/ranks with ranks a power of two and the default ranks, give back
 * the operands' bits); allgather: every rank's shards. */
static int
k_allreduce(Run *r, const Op *op)
{
	float *o = OUT, sc = op->kind == OP_ALLGATHER ? 1.0f : (float)op->fa[0];
	int64_t n = shape_numel(&RTY->sh), ranks = op->ia[0], per;
	int rc;

	if (op->kind == OP_ALLGATHER) {
		/* this rank's block in place, then every rank's */
		per = n / ranks;
		pack(r, op, o + rank_of(r) * per, 0);
		return coll(r, 2, o, per, ranks);
	}
	if (op->kind == OP_ALLREDUCE) {
		pack(r, op, o, op->ia[1] != 0);
		rc = coll(r, 0, o, n, ranks);
	} else {
		/* in place: this rank's block left first */
		pack(r, op, o, 1);
		n /= ranks;
		rc = coll(r, 1, o, n, ranks);
	}
	for (int64_t i = 0; i < n && sc != 1.0f; i++)
		o[i] *= sc;
	return rc;
}

static int
k_unbucket(Run *r, const Op *op)
{
	const Op *c = &r->f->op[r->f->val[op->args[0]].def];
	int64_t at = op->ia[0];
	if (op->ia[1])
		at += rank_of(r) * (shape_numel(&TY(0)->sh) / c->ia[0]);
	memcpy(OUT, IN(0) + at, type_bytes(RTY));
	return 0;
}

static int
k_shard(Run *r, const Op *op)
{
	int64_t m = shape_numel(&TY(0)->sh), s = shape_numel(&RTY->sh), lo = rank_of(r) * s;
	for (int64_t e = 0; e < s; e++)
		OUT[e] = lo + e < m ? IN(0)[lo + e] : 0.0f;
	return 0;
}

static int
k_unshard(Run *r, const Op *op)
{
	float *w = r->buf[op->args[0]];
	int64_t m = shape_numel(&TY(0)->sh), ranks = op->ia[0], s = shard_len(m, ranks);
	int64_t per = shape_numel(&TY(1)->sh) / ranks;
	for (int64_t q = 0; q < ranks; q++)
		for (int64_t e = 0; e < s && q * s + e < m; e++)
			w[q * s + e] = IN(1)[q * per + op->ia[1] + e];
	return 0;
}

static int
k_nothing(Run *r, const Op *op)
{
	(void)r;
	(void)op;
	return 0;
}

/* One kernel per op kind. swap_out/swap_in copy into a buffer of their own (the host and
 * the accelerator copy); wait has nothing to wait for in a synchronous interpreter. An OPTAB op
 * missing here fails the build (OP_HAS, OP_NEEDS: ir.h). */
#define KERNELS(K) \
	K(CONST, k_const) K(ADD, k_ew) K(SUB, k_ew) K(MUL, k_ew) K(DIV, k_ew) \
	K(MATMUL, k_matmul) K(RELU, k_ew) K(GELU, k_ew) K(TANH, k_ew) K(SIGMOID, k_ew) \
	K(SIN, k_ew) K(COS, k_ew) K(TOF32, k_tof32) K(TOI32, k_toi32) \
	K(EQ, k_ew) K(LT, k_ew) K(LE, k_ew) K(SELECT, k_ew) K(MAXIMUM, k_ew) K(MAXIMUM_G, k_ew) \
	K(FLOOR, k_ew) K(CEIL, k_ew) K(ROUND, k_ew) K(CUMSUM, k_cumsum) K(ARGMAX, k_argmax) \
	K(EXP, k_ew) K(LOG, k_ew) K(SQRT, k_ew) K(RSQRT, k_ew) K(NEG, k_ew) K(POW, k_ew) \
	K(TRANSPOSE, k_transpose) K(RESHAPE, k_copy) K(CONCAT, k_concat) K(SUM, k_reduce) \
	K(MEAN, k_reduce) K(MAX, k_reduce) K(SOFTMAX, k_softmax) K(LOGSOFTMAX, k_softmax) \
	K(LAYERNORM, k_layernorm) K(EMBEDDING, k_embedding) K(XENT, k_xent) K(MSE, k_mse) \
	K(SUMTO, k_sumto) K(BCAST, k_bcast) K(RELU_G, k_ew) K(GELU_G, k_ew) K(TANH_G, k_ew) \
	K(SIGMOID_G, k_ew) K(SQRT_G, k_ew) K(RSQRT_G, k_ew) K(POW_G, k_ew) K(MAX_G, k_maxgrad) \
	K(SOFTMAX_G, k_softmaxgrad) K(LOGSOFTMAX_G, k_softmaxgrad) K(LN_DX, k_lndx) \
	K(LN_DGAMMA, k_lndgamma) K(EMBED_G, k_embedgrad) K(XENT_G, k_xentgrad) K(MSE_G, k_ew) \
	K(CLIP, k_ew) K(WORKSPACE, k_nothing) K(CONV2D, k_conv2d) K(MAXPOOL, k_pool) K(AVGPOOL, k_pool) \
	K(BATCHNORM, k_batchnorm) K(BN_MEAN, k_bnstat) K(BN_VAR, k_bnstat) K(BN_DSTATS, k_bndstats) \
	K(BN_DX, k_bndx) K(BN_UPDATE, k_bnupdate) K(DROPOUT, k_dropout) \
	K(SLICE, k_slice) K(SLICE_G, k_slicegrad) K(CLIP_G, k_ew) \
	K(CONV2D_DX, k_conv2d_dx) K(CONV2D_DW, k_conv2d_dw) K(MAXPOOL_G, k_poolgrad) \
	K(AVGPOOL_G, k_poolgrad) K(SGD, k_sgd) K(SGDM, k_sgdm) K(ADAM, k_adam) K(ADAMW, k_adam) \
	K(TICK, k_tick) K(SUMSQ, k_sumsq) K(CLIPCOEF, k_ew) K(COPYOUT, k_copyout) \
	K(SWAPOUT, k_copy) K(SWAPIN, k_copy) K(SWAPHOME, k_home) K(WAIT, k_nothing) \
	K(ALLREDUCE, k_allreduce) K(UNBUCKET, k_unbucket) K(REDSCAT, k_allreduce) \
	K(ALLGATHER, k_allreduce) K(SHARD, k_shard) K(UNSHARD, k_unshard)
KERNELS(OP_HAS)
OPTAB(OP_NEEDS)
static Kern *const kern[NOP] = { KERNELS(OP_ENTRY) };

/* ---------- deterministic initial values ---------- */

/* The recipe lives in runtime/init.c (mtc_init_f32, mtc_rand_input), which every generated
 * module links too, so the interpreter and all targets start from the same bits. Raw i32 input
 * draws (0 .. 2^31-1) are brought into range by the caller with % input_range(). */
_Static_assert(INIT_ZEROS == 1 && INIT_ONES == 2 && INIT_FULL == 3 && INIT_NORMAL == 4 &&
               INIT_UNIFORM == 5, "InitKind must match mtc_init_f32's kinds");

int
init_tensor(const Decl *d, uint64_t seed, Tensor *t)
{
	int64_t n = shape_numel(&d->ty.sh);
	int32_t *iv = t->data;
	char err[512];

	t->ty = d->ty;
	if (d->init.kind == INIT_FILE && init_read(&d->init, n, t->data, err, sizeof err)) {
		fprintf(stderr, "mtc: error: the initial values of %s: %s\n", d->name, err);
		return -1;
	}
	if (d->init.kind == INIT_FILE)
		;
	else if (d->init.kind == INIT_VALUES)
		memcpy(t->data, d->init.vals, (size_t)n * 4);
	else if (d->role == R_INPUT)
		mtc_rand_input(t->data, d->ty.dt == I32 ? MTC_I32 : MTC_F32, n, 0, d->name, seed);
	else if (d->ty.dt == I32)       /* i32 state (adam's step counter): zeros or a constant */
		for (int64_t i = 0; i < n; i++)
			iv[i] = d->init.kind == INIT_FULL ? (int32_t)d->init.a : d->init.kind == INIT_ONES;
	else
		mtc_init_f32(t->data, n, d->init.kind, d->init.a, d->init.b, d->name, seed);
	return 0;
}

/* Follow an i32 value back through layout-only ops to the decl it comes from, or -1. */
static int
source_decl(const Func *f, int v)
{
	while (f->val[v].decl < 0) {
		int d = f->val[v].def;
		if (d < 0)
			return -1;
		switch (f->op[d].kind) {
		case OP_RESHAPE: case OP_TRANSPOSE: case OP_SLICE: case OP_SWAPOUT: case OP_SWAPIN:
			v = f->op[d].args[0];
			break;
		default:
			return -1;
		}
	}
	return f->val[v].decl;
}

int64_t
input_range(const Module *m, int decl)
{
	const Func *fs[2] = { m->fwd, m->step };
	int64_t best = 0;

	for (int k = 0; k < 2; k++)
		for (int i = 0; fs[k] && i < fs[k]->nop; i++) {
			const Func *f = fs[k];
			const Op *op = &f->op[i];
			int64_t r = 0;
			if (op->kind == OP_EMBEDDING && source_decl(f, op->args[1]) == decl)
				r = f->val[op->args[0]].ty.sh.d[0];
			else if (op->kind == OP_EMBED_G && source_decl(f, op->args[0]) == decl)
				r = f->val[op->res].ty.sh.d[0];
			else if ((op->kind == OP_XENT || op->kind == OP_XENT_G) &&
			         source_decl(f, op->args[1]) == decl)
				r = rowlen(&f->val[op->args[0]].ty.sh);
			if (r > 0 && (best == 0 || r < best))
				best = r;
		}
	return best;
}

/* ---------- the interpreter ---------- */

/* The bytes the interpreter may hold: the machine's physical memory, so that a model too
 * big for it is an error instead of a swap storm or the OOM killer. */
static int64_t
phys_bytes(void)
{
	long p = sysconf(_SC_PHYS_PAGES), s = sysconf(_SC_PAGE_SIZE);
	return p > 0 && s > 0 && p < INT64_MAX / s ? (int64_t)p * s : INT64_MAX;
}

/* A tensor's buffer, or NULL when it does not fit. Host values (swap_out results) do not
 * count toward the peak, which measures accelerator memory. */
static void *
talloc(Interp *in, const Type *t, int host)
{
	int64_t b = type_bytes(t);
	void *p;

	if (b > in->limit - in->live - in->hostlive || !(p = malloc(b ? b : 1)))
		return NULL;
	if (host) {
		in->hostlive += b;
	} else {
		in->live += b;
		if (in->live > in->peak)
			in->peak = in->live;
	}
	return p;
}

static void
tfree(Interp *in, const Type *t, int host, void *p)
{
	if (host)
		in->hostlive -= type_bytes(t);
	else
		in->live -= type_bytes(t);
	free(p);
}

/* Create the tensors of decls added since the last call (autodiff adds optimizer state).
 * -1 when they do not fit in memory (errno ENOMEM) or a file's values cannot be read (EIO). */
static int
grow(Interp *in)
{
	const Module *m = in->m;

	if (in->ndecl >= m->ndecl)
		return 0;
	in->decl = xrealloc(in->decl, m->ndecl * sizeof *in->decl);
	for (int i = in->ndecl; i < m->ndecl; i++) {
		const Decl *d = &m->decl[i];
		Tensor *t = &in->decl[i];
		int bad = 0;
		if (!(t->data = talloc(in, &d->ty, 0)) || (bad = init_tensor(d, in->seed, t))) {
			if (bad)
				tfree(in, &d->ty, 0, t->data);
			for (int k = in->ndecl; k < i; k++)
				tfree(in, &m->decl[k].ty, 0, in->decl[k].data);
			errno = bad ? EIO : ENOMEM;
			return -1;
		}
		if (d->role == R_INPUT && d->ty.dt == I32) {
			int64_t rg = input_range(m, i), n = shape_numel(&d->ty.sh);
			int32_t *v = t->data;
			for (int64_t k = 0; rg > 0 && k < n; k++)
				v[k] %= (int32_t)rg;
		}
	}
	in->ndecl = m->ndecl;
	return 0;
}

void
interp_set_comm(Interp *in, const InterpComm *c)
{
	in->comm = *c;
}

Interp *
interp_new(const Module *m, uint64_t seed)
{
	Interp *in = xcalloc(1, sizeof *in);

	in->m = m;
	in->seed = seed;
	in->limit = phys_bytes();
	if (grow(in)) {
		free(in);
		return NULL;
	}
	return in;
}

static void
free_outs(Interp *in)
{
	for (int i = 0; i < in->nout; i++)
		free(in->out[i].data);
	free(in->out);
	in->out = NULL;
	in->nout = 0;
}

void
interp_free(Interp *in)
{
	if (!in)
		return;
	free_outs(in);
	for (int i = 0; i < in->ndecl; i++)
		free(in->decl[i].data);
	free(in->decl);
	free(in);
}

Tensor *
interp_decl(Interp *in, int decl)
{
	if (grow(in))
		die("out of memory for the decls added to the module");
	if (decl < 0 || decl >= in->ndecl)
		die("decl %d out of range", decl);
	return &in->decl[decl];
}

Tensor *
interp_out(Interp *in, int i)
{
	if (i < 0 || i >= in->nout)
		die("output %d out of range", i);
	return &in->out[i];
}

int64_t
interp_peak(const Interp *in)
{
	return in->peak;
}

/* What the caller reads: the loss of a step, the outputs of anything else. */
static int
results(const Func *f, const int **vals)
{
	if (f->mod && f == f->mod->step && f->loss >= 0) {
		*vals = &f->loss;
		return 1;
	}
	*vals = f->out;
	return f->nout;
}

int
interp_run(Interp *in, const Func *f, char *err, size_t nerr)
{
	Run r = { in, f, NULL, err, nerr };
	int *last, rc = 0, nres;
	const int *res;

	if (grow(in))
		return fail(&r, errno == EIO ? "the initial values of a decl cannot be read (above)"
		            : "out of memory: the decls of the module do not fit in memory");
	last = xmalloc((f->nval ? f->nval : 1) * sizeof *last);
	free_outs(in);
	nres = results(f, &res);
	r.buf = xcalloc(f->nval, sizeof *r.buf);
	/* results (copies for the caller, not counted) after the run; a step's copy_out ops fill
	 * the forward's outputs, after its loss, as it runs */
	in->nout = nres + (f->mod && f == f->mod->step && f->loss >= 0 && f->mod->fwd ? f->mod->fwd->nout : 0);
	in->out = xcalloc(in->nout ? in->nout : 1, sizeof *in->out);
	for (int k = nres; k < in->nout && rc == 0; k++) {
		const Type *t = &f->mod->fwd->val[f->mod->fwd->out[k - nres]].ty;
		in->out[k].ty = *t;
		if (!(in->out[k].data = calloc(1, type_bytes(t) ? type_bytes(t) : 1)))
			rc = fail(&r, "out of memory: output %s needs %lld bytes", f->mod->fwd->outname[k - nres],
			          (long long)type_bytes(t));
	}
	/* last[v]: the index of the op after which v dies; nop for values kept to the end */
	for (int v = 0; v < f->nval; v++)
		last[v] = -1;
	for (int i = 0; i < f->nop; i++)
		for (int k = 0; k < f->op[i].nargs; k++)
			last[f->op[i].args[k]] = i;
	for (int k = 0; k < nres; k++)
		last[res[k]] = f->nop;
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl >= 0) {
			if (f->val[v].decl >= in->ndecl)
				die("value %%%s names decl %d of %d", f->val[v].name, f->val[v].decl, in->ndecl);
			r.buf[v] = in->decl[f->val[v].decl].data;
		}
	for (int i = 0; i < f->nop && rc == 0; i++) {
		const Op *op = &f->op[i];
		for (int k = 0; k < op->nargs; k++)
			if (!r.buf[op->args[k]])
				die("op %d (%s) reads %%%s before it is computed", i, opinfo[op->kind].name,
				    f->val[op->args[k]].name);
		if (op->res >= 0 && !(r.buf[op->res] = talloc(in, &f->val[op->res].ty, f->val[op->res].host))) {
			char ts[MAXRANK * 24 + 8];
			rc = fail(&r, "out of memory: %%%s : %s needs %lld bytes, %lld are held", f->val[op->res].name,
			          type_str(&f->val[op->res].ty, ts, sizeof ts), (long long)type_bytes(&f->val[op->res].ty),
			          (long long)(in->live + in->hostlive));
			break;
		}
		rc = kern[op->kind](&r, op);
		/* free operands at their last use, and results nobody reads */
		for (int k = 0; k <= op->nargs; k++) {
			int v = k < op->nargs ? op->args[k] : op->res;
			if (v >= 0 && f->val[v].decl < 0 && last[v] <= i && r.buf[v]) {
				tfree(in, &f->val[v].ty, f->val[v].host, r.buf[v]);
				r.buf[v] = NULL;
			}
		}
	}
	if (rc == 0) {
		for (int k = 0; k < nres; k++) {
			const Type *t = &f->val[res[k]].ty;
			if (!r.buf[res[k]])
				die("result %%%s was never computed", f->val[res[k]].name);
			in->out[k].ty = *t;
			in->out[k].data = xmalloc(type_bytes(t));
			memcpy(in->out[k].data, r.buf[res[k]], type_bytes(t));
		}
	} else {
		free_outs(in);
	}
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl < 0 && r.buf[v])
			tfree(in, &f->val[v].ty, f->val[v].host, r.buf[v]);
	free(r.buf);
	free(last);
	return rc;
}
