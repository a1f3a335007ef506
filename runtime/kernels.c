/* kernels.c: the kernel helpers generated code calls: GEMM rows, axis permutation, sum_to,
 * im2col and col2im, pooling. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rt-impl.h"

#ifdef HAVE_CBLAS
#include <cblas.h>
#endif

enum { KB = 256, NB = 1024 };

/* Rows of op(A) @ B with B not transposed: for each k (ascending, so every element sums in
 * the same order however rows are split), c[i, :] += a(i, k) * b[k, :], from zero unless add
 * (then the sums go on from c's values, in the same order). */
static void
gemm_nn(int add, int ta, int64_t r0, int64_t r1, int64_t n, int64_t k, const float *a, int64_t lda,
        const float *b, int64_t ldb, float *c, int64_t ldc)
{
	for (int64_t i = r0; i < r1 && !add; i++)
		memset(c + i * ldc, 0, sizeof(float) * (size_t)n);
	for (int64_t j0 = 0; j0 < n; j0 += NB) {
		int64_t j1 = j0 + NB < n ? j0 + NB : n;
		for (int64_t k0 = 0; k0 < k; k0 += KB) {
			int64_t k1 = k0 + KB < k ? k0 + KB : k;
			for (int64_t i = r0; i < r1; i++) {
				float *ci = c + i * ldc;
				for (int64_t p = k0; p < k1; p++) {
					float av = ta ? a[p * lda + i] : a[i * lda + p];
					const float *bp = b + p * ldb;
					for (int64_t j = j0; j < j1; j++)
						ci[j] += av * bp[j];
				}
			}
		}
	}
}

static void
sgemm(int add, int ta, int tb, int64_t r0, int64_t r1, int64_t n, int64_t k, const float *a,
      int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
	if (r1 <= r0)
		return;
#ifdef HAVE_CBLAS
	if (!mtc_blas_off) {
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		            (int)(r1 - r0), (int)n, (int)k, 1.0f, ta ? a + r0 : a + r0 * lda, (int)lda,
		            b, (int)ldb, add ? 1.0f : 0.0f, c + r0 * ldc, (int)ldc);
		return;
	}
#endif
	if (tb) {
		/* Transpose B once per call so the inner loop runs along contiguous rows. */
		float *bt = malloc(sizeof(float) * (size_t)(n * k));
		if (bt) {
			for (int64_t j = 0; j < n; j++)
				for (int64_t p = 0; p < k; p++)
					bt[p * n + j] = b[j * ldb + p];
			gemm_nn(add, ta, r0, r1, n, k, a, lda, bt, n, c, ldc);
			free(bt);
			return;
		}
		/* No memory for the copy: the same sums, in the same order, strided. */
		for (int64_t i = r0; i < r1; i++)
			for (int64_t j = 0; j < n; j++) {
				float s = add ? c[i * ldc + j] : 0;
				for (int64_t p = 0; p < k; p++)
					s += (ta ? a[p * lda + i] : a[i * lda + p]) * b[j * ldb + p];
				c[i * ldc + j] = s;
			}
		return;
	}
	gemm_nn(add, ta, r0, r1, n, k, a, lda, b, ldb, c, ldc);
}

void
mtc_sgemm_rows(int ta, int tb, int64_t r0, int64_t r1, int64_t n, int64_t k,
               const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
	sgemm(0, ta, tb, r0, r1, n, k, a, lda, b, ldb, c, ldc);
}

void
mtc_sgemm_rows_add(int ta, int tb, int64_t r0, int64_t r1, int64_t n, int64_t k,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
	sgemm(1, ta, tb, r0, r1, n, k, a, lda, b, ldb, c, ldc);
}

/* Rows shorter than SHORT floats are copied and zeroed by loops: a convolution's rows are
 * short (a 3x3 window with padding 1 zeroes one float at either end of its columns' rows, and
 * a deep network's late layers have planes of 8x8 to 2x2), and calls of memcpy and memset per
 * row of a few floats cost more than the copy (im2col 1.2-2x faster). */
enum { SHORT = 16 };

static void
copy_f32(float *d, const float *s, int64_t n)
{
	if (n < SHORT)
		for (int64_t i = 0; i < n; i++)
			d[i] = s[i];
	else
		memcpy(d, s, sizeof(float) * (size_t)n);
}

static void
zero_f32(float *d, int64_t n)
{
	if (n < SHORT)
		for (int64_t i = 0; i < n; i++)
			d[i] = 0;
	else
		memset(d, 0, sizeof(float) * (size_t)n);
}

/* Between y [N, C, P] and t [C, N, P] (to: into t), the pairs (n, c) in [lo, hi). */
void
mtc_chanfirst(float *t, float *y, int64_t n, int64_t c, int64_t p, int to, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		float *yp = y + q * p, *tp = t + (q % c * n + q / c) * p;
		copy_f32(to ? tp : yp, to ? yp : tp, p);
	}
}

/* im2col of the planes q = n*C + c in [lo, hi) of x [N, C, H, W]: plane (n, c) fills image n's
 * Ho*Wo columns of its kh*kw rows (c*kh + i)*kw + j, each a shifted, strided copy of the
 * plane, zero where it reads the padding. */
void
mtc_im2col(float *col, const float *x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh,
           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
           int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		const float *xp = x + q * H * W;
		float *cp0 = col + (q % C * kh * kw * N + q / C) * ho * wo, *cp;
		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++) {
				int64_t off = j * dw - pw, w0, w1;
				/* ow in [w0, w1) reads inside the row: 0 <= ow*sw + off < W */
				w0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
				w1 = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
				w0 = w0 < wo ? w0 : wo;
				w1 = w1 < wo ? w1 : wo;
				w1 = w1 > w0 ? w1 : w0;
				cp = cp0 + (i * kw + j) * N * ho * wo;
				for (int64_t oh = 0; oh < ho; oh++, cp += wo) {
					int64_t h = oh * sh - ph + i * dh, b = h * W + off;
					if (h < 0 || h >= H) {
						zero_f32(cp, wo);
						continue;
					}
					zero_f32(cp, w0);
					if (sw == 1)
						copy_f32(cp + w0, xp + b + w0, w1 - w0);
					else
						for (int64_t ow = w0; ow < w1; ow++)
							cp[ow] = xp[b + ow * sw];
					zero_f32(cp + w1, wo - w1);
				}
			}
	}
}

/* col2im of the planes [lo, hi): the plane zeroed, then each kernel offset's row segment of
 * the columns added where it came from, offsets in order (so every element sums them i then j,
 * as the interpreter's gather does). */
void
mtc_col2im(float *x, const float *col, int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh,
           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
           int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		float *xp = x + q * H * W;
		const float *cp0 = col + (q % C * kh * kw * N + q / C) * ho * wo, *cp;
		memset(xp, 0, sizeof(float) * (size_t)(H * W));
		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++) {
				int64_t off = j * dw - pw, w0, w1;
				w0 = off >= 0 ? 0 : (-off + sw - 1) / sw;
				w1 = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
				w0 = w0 < wo ? w0 : wo;
				w1 = w1 < wo ? w1 : wo;
				cp = cp0 + (i * kw + j) * N * ho * wo;
				for (int64_t oh = 0; oh < ho; oh++, cp += wo) {
					int64_t h = oh * sh - ph + i * dh, b = h * W + off;
					if (h < 0 || h >= H)
						continue;
					if (sw == 1)
						for (int64_t ow = w0; ow < w1; ow++)
							xp[b + ow] += cp[ow];
					else
						for (int64_t ow = w0; ow < w1; ow++)
							xp[b + ow * sw] += cp[ow];
				}
			}
	}
}

/* A depthwise convolution (groups = C = Cout, ops.c's conv_workspace: no workspace), directly:
 * the sums in the order of the interpreter's GEMMs over the columns, so the same bits. Row
 * segment [w0, w1) of output row oh reads inside the input row for kernel column j: the
 * rest reads the padding, 0. */
static void
dw_seg(int64_t W, int64_t kw_off, int64_t sw, int64_t wo, int64_t *w0, int64_t *w1)
{
	*w0 = kw_off >= 0 ? 0 : (-kw_off + sw - 1) / sw;
	*w1 = W - 1 - kw_off < 0 ? 0 : (W - 1 - kw_off) / sw + 1;
	*w0 = *w0 < wo ? *w0 : wo;
	*w1 = *w1 < wo ? *w1 : wo;
	*w1 = *w1 > *w0 ? *w1 : *w0;
}

/* The output columns [*oa, *ob) whose 3x3 window lies inside the row: the first tap's segment
 * starts them, the last tap's ends them. */
static void
dw_inner3(int64_t W, int64_t sw, int64_t pw, int64_t dw, int64_t wo, int64_t *oa, int64_t *ob)
{
	int64_t t;
	dw_seg(W, -pw, sw, wo, oa, &t);
	dw_seg(W, 2 * dw - pw, sw, wo, &t, ob);
	*ob = *ob > *oa ? *ob : *oa;
}

/* Output columns [oa, ob) of a 3x3 depthwise row whose window lies inside input rows r0-r2,
 * weights a: each output's nine products summed in order (i, j) from 0. */
static inline void
dwconv3_row(float *yr, const float *r0, const float *r1, const float *r2, const float *a,
            int64_t oa, int64_t ob, int64_t sw, int64_t pw, int64_t dw)
{
	for (int64_t ow = oa; ow < ob; ow++) {
		int64_t v = ow * sw - pw;
		float s = 0;
		s += a[0] * r0[v], s += a[1] * r0[v + dw], s += a[2] * r0[v + 2 * dw];
		s += a[3] * r1[v], s += a[4] * r1[v + dw], s += a[5] * r1[v + 2 * dw];
		s += a[6] * r2[v], s += a[7] * r2[v + dw], s += a[8] * r2[v + 2 * dw];
		yr[ow] = s;
	}
}

/* mtc_dwconv for a 3x3 kernel: each output's nine products summed in the same order (i, j)
 * from 0, an output at a time, the weights in registers, and the columns whose window lies
 * inside the row (on rows whose window does) without tests (dwconv3_row): the same bits. */
static void
dwconv3(float *y, const float *x, const float *w, int64_t C, int64_t H, int64_t W, int64_t sh,
        int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho, int64_t wo,
        int64_t lo, int64_t hi)
{
	int64_t oa, ob;

	dw_inner3(W, sw, pw, dw, wo, &oa, &ob);
	for (int64_t q = lo; q < hi; q++) {
		const float *xp = x + q * H * W;
		float *yp = y + q * ho * wo, a[9];     /* the weights: a copy the compiler keeps in registers */
		memcpy(a, w + q % C * 9, sizeof a);
		for (int64_t oh = 0; oh < ho; oh++) {
			int64_t h0 = oh * sh - ph, h1 = h0 + dh, h2 = h0 + 2 * dh;
			int i0 = h0 >= 0 && h0 < H, i1 = h1 >= 0 && h1 < H, i2 = h2 >= 0 && h2 < H;
			int inner = i0 && i1 && i2;
			int64_t ea = inner ? oa : wo, eb = inner ? ob : wo;    /* the edges: [0, ea), [eb, wo) */
			float *yr = yp + oh * wo;
			/* at the edges a tap in the padding adds its weight times 0, as there */
#define TAP(in, h, v) ((in) && (v) >= 0 && (v) < W ? xp[(h) * W + (v)] : 0.0f)
#define EDGE(ow) do { \
		int64_t v0 = (ow) * sw - pw, v1 = v0 + dw, v2 = v0 + 2 * dw; \
		float s = 0; \
		s += a[0] * TAP(i0, h0, v0), s += a[1] * TAP(i0, h0, v1), s += a[2] * TAP(i0, h0, v2); \
		s += a[3] * TAP(i1, h1, v0), s += a[4] * TAP(i1, h1, v1), s += a[5] * TAP(i1, h1, v2); \
		s += a[6] * TAP(i2, h2, v0), s += a[7] * TAP(i2, h2, v1), s += a[8] * TAP(i2, h2, v2); \
		yr[ow] = s; \
	} while (0)
			for (int64_t ow = 0; ow < ea; ow++)
				EDGE(ow);
			for (int64_t ow = eb; ow < wo; ow++)
				EDGE(ow);
#undef EDGE
#undef TAP
			if (!inner)
				continue;
			/* stride 1 apart: with the stride a constant the loop runs 1.5 times faster */
			if (sw == 1)
				dwconv3_row(yr, xp + h0 * W, xp + h1 * W, xp + h2 * W, a, oa, ob, 1, pw, dw);
			else
				dwconv3_row(yr, xp + h0 * W, xp + h1 * W, xp + h2 * W, a, oa, ob, sw, pw, dw);
		}
	}
}

/* mtc_dwconv_dx for a 3x3 kernel at stride 1: each element of dx gathers the products it was
 * scattered, in the same order (i, j) from 0, without the taps whose output is outside; the
 * columns every tap reaches (on rows every tap reaches) without tests: the same bits. */
static void
dwconv3_dx(float *dx, const float *w, const float *dy, int64_t C, int64_t H, int64_t W,
           int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho, int64_t wo, int64_t lo,
           int64_t hi)
{
	/* column c's tap j reads output column c + pw - j*dw: inside for every j on [ca, cb) */
	int64_t ca = 2 * dw - pw > 0 ? 2 * dw - pw : 0, cb = wo - pw < W ? wo - pw : W;
	ca = ca < W ? ca : W;
	cb = cb > ca ? cb : ca;
	for (int64_t q = lo; q < hi; q++) {
		float *xp = dx + q * H * W;
		const float *yp = dy + q * ho * wo, *wp = w + q % C * 9;
		float a0 = wp[0], a1 = wp[1], a2 = wp[2], a3 = wp[3], a4 = wp[4], a5 = wp[5], a6 = wp[6],
		      a7 = wp[7], a8 = wp[8];
		for (int64_t h = 0; h < H; h++) {
			int64_t o0 = h + ph, o1 = o0 - dh, o2 = o0 - 2 * dh;
			int i0 = o0 >= 0 && o0 < ho, i1 = o1 >= 0 && o1 < ho, i2 = o2 >= 0 && o2 < ho;
			int inner = i0 && i1 && i2;
			int64_t ea = inner ? ca : W, eb = inner ? cb : W;      /* the edges: [0, ea), [eb, W) */
			float *xr = xp + h * W;
#define ADD(in, o, a, u) if ((in) && (u) >= 0 && (u) < wo) s += (a) * yp[(o) * wo + (u)]
#define EDGE(c) do { \
		int64_t u0 = (c) + pw, u1 = u0 - dw, u2 = u0 - 2 * dw; \
		float s = 0; \
		ADD(i0, o0, a0, u0); ADD(i0, o0, a1, u1); ADD(i0, o0, a2, u2); \
		ADD(i1, o1, a3, u0); ADD(i1, o1, a4, u1); ADD(i1, o1, a5, u2); \
		ADD(i2, o2, a6, u0); ADD(i2, o2, a7, u1); ADD(i2, o2, a8, u2); \
		xr[c] = s; \
	} while (0)
			for (int64_t c = 0; c < ea; c++)
				EDGE(c);
			for (int64_t c = eb; c < W; c++)
				EDGE(c);
#undef EDGE
#undef ADD
			if (!inner)
				continue;
			const float *r0 = yp + o0 * wo, *r1 = yp + o1 * wo, *r2 = yp + o2 * wo;
			for (int64_t c = ca; c < cb; c++) {
				int64_t u = c + pw;
				float s = 0;
				s += a0 * r0[u], s += a1 * r0[u - dw], s += a2 * r0[u - 2 * dw];
				s += a3 * r1[u], s += a4 * r1[u - dw], s += a5 * r1[u - 2 * dw];
				s += a6 * r2[u], s += a7 * r2[u - dw], s += a8 * r2[u - 2 * dw];
				xr[c] = s;
			}
		}
	}
}

/* y's planes q = n*C + c in [lo, hi): each element 0 plus w[c, i, j] * x (0 in the padding),
 * over i then j. */
void
mtc_dwconv(float *y, const float *x, const float *w, int64_t C, int64_t H, int64_t W, int64_t kh,
           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
           int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3) {
		dwconv3(y, x, w, C, H, W, sh, sw, ph, pw, dh, dw, ho, wo, lo, hi);
		return;
	}
	for (int64_t q = lo; q < hi; q++) {
		const float *xp = x + q * H * W, *wp = w + q % C * kh * kw;
		float *yp = y + q * ho * wo;
		memset(yp, 0, sizeof(float) * (size_t)(ho * wo));
		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++) {
				int64_t off = j * dw - pw, w0, w1;
				float a = wp[i * kw + j];
				dw_seg(W, off, sw, wo, &w0, &w1);
				for (int64_t oh = 0; oh < ho; oh++) {
					int64_t h = oh * sh - ph + i * dh, b = h * W + off;
					float *yr = yp + oh * wo;
					if (h < 0 || h >= H) {
						for (int64_t ow = 0; ow < wo; ow++)
							yr[ow] += a * 0.0f;
						continue;
					}
					for (int64_t ow = 0; ow < w0; ow++)
						yr[ow] += a * 0.0f;
					if (sw == 1)
						for (int64_t ow = w0; ow < w1; ow++)
							yr[ow] += a * xp[b + ow];
					else
						for (int64_t ow = w0; ow < w1; ow++)
							yr[ow] += a * xp[b + ow * sw];
					for (int64_t ow = w1; ow < wo; ow++)
						yr[ow] += a * 0.0f;
				}
			}
	}
}

/* dx's planes [lo, hi): 0, then w[c, i, j] * dy added where each offset's window came from,
 * offsets in order (col2im's order). */
void
mtc_dwconv_dx(float *dx, const float *w, const float *dy, int64_t C, int64_t H, int64_t W,
              int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
              int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3 && sh == 1 && sw == 1) {
		dwconv3_dx(dx, w, dy, C, H, W, ph, pw, dh, dw, ho, wo, lo, hi);
		return;
	}
	for (int64_t q = lo; q < hi; q++) {
		float *xp = dx + q * H * W;
		const float *yp = dy + q * ho * wo, *wp = w + q % C * kh * kw;
		memset(xp, 0, sizeof(float) * (size_t)(H * W));
		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++) {
				int64_t off = j * dw - pw, w0, w1;
				float a = wp[i * kw + j];
				dw_seg(W, off, sw, wo, &w0, &w1);
				for (int64_t oh = 0; oh < ho; oh++) {
					int64_t h = oh * sh - ph + i * dh, b = h * W + off;
					const float *yr = yp + oh * wo;
					if (h < 0 || h >= H)
						continue;
					if (sw == 1)
						for (int64_t ow = w0; ow < w1; ow++)
							xp[b + ow] += a * yr[ow];
					else
						for (int64_t ow = w0; ow < w1; ow++)
							xp[b + ow * sw] += a * yr[ow];
				}
			}
	}
}

/* mtc_dwconv_dw for a 3x3 kernel: the same sums in the same order (n, oh, ow), the nine in
 * registers rather than in dw (which the compiler must assume x and dy may alias), and the
 * columns whose window lies inside the row without tests: 3 to 7 times faster (MobileNet's
 * layers), the same bits. */
static void
dwdw3(float *dwt, const float *x, const float *dy, int64_t N, int64_t C, int64_t H, int64_t W,
      int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho,
      int64_t wo, int64_t lo, int64_t hi)
{
	int64_t oa, ob;

	dw_inner3(W, sw, pw, dw, wo, &oa, &ob);
	for (int64_t c = lo; c < hi; c++) {
		float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0, s8 = 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * H * W, *yp = dy + (n * C + c) * ho * wo;
			for (int64_t oh = 0; oh < ho; oh++) {
				int64_t h0 = oh * sh - ph, h1 = h0 + dh, h2 = h0 + 2 * dh;
				int i0 = h0 >= 0 && h0 < H, i1 = h1 >= 0 && h1 < H, i2 = h2 >= 0 && h2 < H;
				const float *g = yp + oh * wo;
				/* a column at the edge: each tap 0 where it reads the padding, as there */
#define TAP(in, h, v) ((in) && (v) >= 0 && (v) < W ? xp[(h) * W + (v)] : 0.0f)
#define EDGE(ow) do { \
		int64_t v0 = (ow) * sw - pw, v1 = v0 + dw, v2 = v0 + 2 * dw; \
		float gg = g[ow]; \
		s0 += gg * TAP(i0, h0, v0); s1 += gg * TAP(i0, h0, v1); s2 += gg * TAP(i0, h0, v2); \
		s3 += gg * TAP(i1, h1, v0); s4 += gg * TAP(i1, h1, v1); s5 += gg * TAP(i1, h1, v2); \
		s6 += gg * TAP(i2, h2, v0); s7 += gg * TAP(i2, h2, v1); s8 += gg * TAP(i2, h2, v2); \
	} while (0)
				int64_t ow = 0;
				for (; ow < oa; ow++)
					EDGE(ow);
				if (i0 && i1 && i2) {
					const float *r0 = xp + h0 * W, *r1 = xp + h1 * W, *r2 = xp + h2 * W;
					for (; ow < ob; ow++) {
						int64_t v = ow * sw - pw;
						float gg = g[ow];
						s0 += gg * r0[v]; s1 += gg * r0[v + dw]; s2 += gg * r0[v + 2 * dw];
						s3 += gg * r1[v]; s4 += gg * r1[v + dw]; s5 += gg * r1[v + 2 * dw];
						s6 += gg * r2[v]; s7 += gg * r2[v + dw]; s8 += gg * r2[v + 2 * dw];
					}
				}
				for (; ow < wo; ow++)
					EDGE(ow);
			}
		}
		float *o = dwt + c * 9;
		o[0] = s0, o[1] = s1, o[2] = s2, o[3] = s3, o[4] = s4, o[5] = s5, o[6] = s6, o[7] = s7, o[8] = s8;
	}
#undef TAP
#undef EDGE
}

/* dw's channels [lo, hi) of N images: each of the kh*kw weights 0 plus dy * x (0 in the
 * padding) over n, oh, ow in order, the weights of a channel side by side. */
void
mtc_dwconv_dw(float *dwt, const float *x, const float *dy, int64_t N, int64_t C, int64_t H,
              int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
              int64_t dh, int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3) {
		dwdw3(dwt, x, dy, N, C, H, W, sh, sw, ph, pw, dh, dw, ho, wo, lo, hi);
		return;
	}
	for (int64_t c = lo; c < hi; c++) {
		float *o = dwt + c * kh * kw;
		for (int64_t t = 0; t < kh * kw; t++)
			o[t] = 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * H * W, *yp = dy + (n * C + c) * ho * wo;
			for (int64_t oh = 0; oh < ho; oh++)
				for (int64_t ow = 0; ow < wo; ow++) {
					float g = yp[oh * wo + ow];
					for (int64_t i = 0; i < kh; i++) {
						int64_t h = oh * sh - ph + i * dh;
						int in = h >= 0 && h < H;
						for (int64_t j = 0; j < kw; j++) {
							int64_t v = ow * sw - pw + j * dw;
							o[i * kw + j] += g * (in && v >= 0 && v < W ? xp[h * W + v] : 0.0f);
						}
					}
				}
		}
	}
}

/* The arg-max of output (oh, ow)'s window in plane xp, PyTorch's: the first offset greater
 * than every one before it, or a NaN. */
static int64_t
pool_argmax(const float *xp, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
            int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oh, int64_t ow)
{
	int64_t best = -1;
	float m = -INFINITY;

	for (int64_t i = 0; i < kh; i++)
		for (int64_t j = 0; j < kw; j++) {
			int64_t h = oh * sh - ph + i * dh, w = ow * sw - pw + j * dw;
			if (h < 0 || h >= H || w < 0 || w >= W)
				continue;
			if (best < 0)
				best = h * W + w;
			if (xp[h * W + w] > m || xp[h * W + w] != xp[h * W + w]) {
				m = xp[h * W + w];
				best = h * W + w;
			}
		}
	return best;
}

/* avg_pool2d's divisor: kh*kw, or (cip 0) the window's elements inside the plane. */
static float
pool_div(int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t h0, int64_t w0, int cip)
{
	int64_t h1 = h0 + kh, w1 = w0 + kw;

	if (cip)
		return (float)(kh * kw);
	h0 = h0 < 0 ? 0 : h0;
	w0 = w0 < 0 ? 0 : w0;
	h1 = h1 > H ? H : h1;
	w1 = w1 > W ? W : w1;
	return (float)((h1 - h0) * (w1 - w0));
}

void
mtc_pool2d(float *y, const float *x, int kind, int64_t H, int64_t W, int64_t kh, int64_t kw,
         int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho,
         int64_t wo, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		const float *xp = x + q * H * W;
		float *yp = y + q * ho * wo;
		for (int64_t oh = 0; oh < ho; oh++)
			for (int64_t ow = 0; ow < wo; ow++) {
				int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
				float s = 0;
				if (kind == 0) {
					*yp++ = xp[pool_argmax(xp, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)];
					continue;
				}
				for (int64_t i = 0; i < kh; i++)
					for (int64_t j = 0; j < kw; j++)
						if (h0 + i >= 0 && h0 + i < H && w0 + j >= 0 && w0 + j < W)
							s += xp[(h0 + i) * W + w0 + j];
				*yp++ = s / pool_div(H, W, kh, kw, h0, w0, kind == 1);
			}
	}
}

void
mtc_pool2d_grad(float *dx, const float *x, const float *dy, int kind, int64_t H, int64_t W,
              int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
              int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		float *dp = dx + q * H * W;
		const float *dq = dy + q * ho * wo;
		memset(dp, 0, sizeof(float) * (size_t)(H * W));
		for (int64_t oh = 0; oh < ho; oh++)
			for (int64_t ow = 0; ow < wo; ow++, dq++) {
				int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
				float v;
				if (kind == 0) {
					dp[pool_argmax(x + q * H * W, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)] += *dq;
					continue;
				}
				v = *dq / pool_div(H, W, kh, kw, h0, w0, kind == 1);
				for (int64_t i = 0; i < kh; i++)
					for (int64_t j = 0; j < kw; j++)
						if (h0 + i >= 0 && h0 + i < H && w0 + j >= 0 && w0 + j < W)
							dp[(h0 + i) * W + w0 + j] += v;
			}
	}
}

/* Batch norm over x [N, C, Q] (passes/grad.c defines each): statistics per channel c in
 * [lo, hi), in double in index order; the elementwise parts per plane n*C + c in [lo, hi). */
static float
invstd(float var, double eps)
{
	return (float)(1 / sqrt((double)var + eps));
}

void
mtc_bn_apply(float *y, const float *x, const float *g, const float *b, const float *mu,
             const float *var, double eps, int64_t C, int64_t Q, int64_t lo, int64_t hi)
{
	for (int64_t p = lo; p < hi; p++) {
		int64_t c = p % C;
		float a = g[c] * invstd(var[c], eps), sh = b[c] - mu[c] * a;
		const float *xp = x + p * Q;
		float *yp = y + p * Q;
		for (int64_t q = 0; q < Q; q++)
			yp[q] = xp[q] * a + sh;
	}
}

/* Batch norm's statistics are sums in double over n then q, one chain of dependent adds per
 * channel, which one core runs at one add per add's latency. LANES channels side by side make
 * LANES independent chains that overlap, each summed in its own order as before: the same
 * bits, 2-3 times faster. */
enum { LANES = 4 };

void
mtc_bn_stat(float *o, const float *x, const float *mu, int64_t N, int64_t C, int64_t Q,
            int64_t lo, int64_t hi)
{
	int64_t c = lo;

	for (; c + LANES <= hi; c += LANES) {
		double s[LANES] = {0}, m[LANES];
		for (int k = 0; k < LANES; k++)
			m[k] = mu ? mu[c + k] : 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * Q;
			if (mu)
				for (int64_t q = 0; q < Q; q++)
					for (int k = 0; k < LANES; k++)
						s[k] += ((double)xp[k * Q + q] - m[k]) * ((double)xp[k * Q + q] - m[k]);
			else
				for (int64_t q = 0; q < Q; q++)
					for (int k = 0; k < LANES; k++)
						s[k] += xp[k * Q + q];
		}
		for (int k = 0; k < LANES; k++)
			o[c + k] = (float)(s[k] / (double)(N * Q));
	}
	for (; c < hi; c++) {
		double s = 0, m = mu ? mu[c] : 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * Q;
			if (mu)
				for (int64_t q = 0; q < Q; q++)
					s += ((double)xp[q] - m) * ((double)xp[q] - m);
			else
				for (int64_t q = 0; q < Q; q++)
					s += xp[q];
		}
		o[c] = (float)(s / (double)(N * Q));
	}
}

void
mtc_bn_dstats(float *o, const float *x, const float *mu, const float *var, const float *dy,
              double eps, int64_t N, int64_t C, int64_t Q, int64_t lo, int64_t hi)
{
	int64_t c = lo;

	for (; c + LANES <= hi; c += LANES) {
		double dot[LANES] = {0}, s[LANES] = {0};
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * Q, *dp = dy + (n * C + c) * Q;
			for (int64_t q = 0; q < Q; q++)
				for (int k = 0; k < LANES; k++) {
					dot[k] += (double)dp[k * Q + q] * ((double)xp[k * Q + q] - mu[c + k]);
					s[k] += dp[k * Q + q];
				}
		}
		for (int k = 0; k < LANES; k++) {
			o[c + k] = (float)(dot[k] * invstd(var[c + k], eps));
			o[C + c + k] = (float)s[k];
		}
	}
	for (; c < hi; c++) {
		double dot = 0, s = 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * Q, *dp = dy + (n * C + c) * Q;
			for (int64_t q = 0; q < Q; q++) {
				dot += (double)dp[q] * ((double)xp[q] - mu[c]);
				s += dp[q];
			}
		}
		o[c] = (float)(dot * invstd(var[c], eps));
		o[C + c] = (float)s;
	}
}

void
mtc_bn_dx(float *dx, const float *x, const float *g, const float *mu, const float *var,
          const float *dy, const float *ds, int train, double eps, int64_t N, int64_t C,
          int64_t Q, int64_t lo, int64_t hi)
{
	for (int64_t p = lo; p < hi; p++) {
		int64_t c = p % C;
		float is = invstd(var[c], eps), w = is * g[c];
		float gm = (float)((double)ds[C + c] / (double)(N * Q));
		float pj = (float)((double)ds[c] * is / (double)(N * Q));
		const float *xp = x + p * Q, *dp = dy + p * Q;
		float *op = dx + p * Q;
		if (train)
			for (int64_t q = 0; q < Q; q++)
				op[q] = (dp[q] - gm - (xp[q] - mu[c]) * pj) * w;
		else
			for (int64_t q = 0; q < Q; q++)
				op[q] = dp[q] * w;
	}
}

void
mtc_bn_update(float *rm, float *rv, const float *mu, const float *var, double m, double count,
              int64_t lo, int64_t hi)
{
	for (int64_t c = lo; c < hi; c++) {
		rm[c] = (float)(m * mu[c] + (1 - m) * rm[c]);
		rv[c] = (float)(m * ((double)var[c] * count / (count - 1)) + (1 - m) * rv[c]);
	}
}

int mtc_blas_off;

/* Kernels call the BLAS from every accelerator thread: it must not start threads of its own.
 * MTC_BLAS=0 selects the portable blocked GEMM (as in builds without OpenBLAS). */
void
mtc_blas_init(void)
{
	const char *s = getenv("MTC_BLAS");
	mtc_blas_off = s && strcmp(s, "0") == 0;
#ifdef HAVE_CBLAS
	openblas_set_num_threads(1);
#endif
}

void
mtc_permute(float *dst, const float *src, int rank, const int64_t *shape, const int64_t *sstride,
            int64_t lo, int64_t hi)
{
	int64_t co[8], off = 0, rem = lo, last = rank - 1, sl = sstride[rank - 1];

	if (lo >= hi)
		return;
	for (int d = last; d >= 0; d--) {
		co[d] = rem % shape[d];
		rem /= shape[d];
		off += co[d] * sstride[d];
	}
	/* A run along the last dim at a time (a plain copy where it is contiguous in src), then
	 * the outer coordinates advance like an odometer. */
	for (int64_t i = lo; i < hi;) {
		int64_t m = shape[last] - co[last] < hi - i ? shape[last] - co[last] : hi - i;
		if (sl == 1)
			memcpy(dst + i, src + off, sizeof(float) * (size_t)m);
		else
			for (int64_t t = 0; t < m; t++)
				dst[i + t] = src[off + t * sl];
		i += m;
		off += m * sl;
		co[last] += m;
		for (int d = last; d > 0 && co[d] == shape[d]; d--) {
			off -= co[d] * sstride[d];
			co[d] = 0;
			off += sstride[d - 1];
			co[d - 1]++;
		}
	}
}

void
mtc_sum_to(float *r, const float *x, int rank, const int64_t *xs, const int64_t *rs,
           int64_t lo, int64_t hi)
{
	int64_t xst[8], red[8], rst[8], nred = 1;
	int nr = 0;

	xst[rank - 1 < 0 ? 0 : rank - 1] = 1;
	for (int d = rank - 1; d > 0; d--)
		xst[d - 1] = xst[d] * xs[d];
	for (int d = 0; d < rank; d++)
		if (rs[d] == 1 && xs[d] != 1) {
			red[nr] = xs[d];
			rst[nr++] = xst[d];
			nred *= xs[d];
		}
	for (int64_t o = lo; o < hi; o++) {
		int64_t base = 0, rem = o, co[8] = {0}, off;
		float s = 0;
		for (int d = rank - 1; d >= 0; d--) {
			base += (rem % rs[d]) * xst[d];
			rem /= rs[d];
		}
		/* Reduced coordinates in row-major order: a fixed summation order. */
		off = base;
		for (int64_t t = 0; t < nred; t++) {
			s += x[off];
			for (int q = nr - 1; q >= 0; q--) {
				off += rst[q];
				if (++co[q] < red[q])
					break;
				off -= co[q] * rst[q];
				co[q] = 0;
			}
		}
		r[o] = s;
	}
}
