/* kernels.c: the kernel helpers generated code calls: GEMM rows, axis permutation, sum_to,
 * pooling, batch norm (the convolutions' loops are <mtc/mtc-conv.h>'s, inline in the kernels). */
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
