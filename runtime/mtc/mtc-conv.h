/* mtc-conv.h: the convolutions' loops, inline in the C target's generated kernels: im2col,
 * col2im and the channels-first transposition of a convolution through its workspace, and the
 * depthwise convolutions' direct loops.
 *
 * Every call a kernel makes has the convolution's shape as constants, so the compiler
 * specializes each one to its plane (rows of known length, the padding's branches settled) and
 * vectorizes it for the machine the module is built on (-march=native), where one compiled
 * copy in the runtime served every shape. The data movement only moves floats, and every sum
 * keeps its order (col2im adds each element's contributions kernel offset i then j; the
 * depthwise loops sum as the interpreter's GEMMs do), whatever the compiler does with the
 * loops: the bits are those of the interpreter (no fma: -ffp-contract=off). */
#ifndef MTC_MTC_CONV_H
#define MTC_MTC_CONV_H

#include <stdint.h>
#include <string.h>

/* Rows shorter than MTC_SHORT floats are copied and zeroed by loops: a convolution's rows are
 * short (a 3x3 window with padding 1 zeroes one float at either end of its columns' rows, and
 * a deep network's late layers have planes of 8x8 to 2x2), and calls of memcpy and memset per
 * row of a few floats cost more than the copy (im2col 1.2-2x faster). */
enum { MTC_SHORT = 16 };

static inline void
mtc_copy_f32(float *d, const float *s, int64_t n)
{
	if (n < MTC_SHORT)
		for (int64_t i = 0; i < n; i++)
			d[i] = s[i];
	else
		memcpy(d, s, sizeof(float) * (size_t)n);
}

static inline void
mtc_zero_f32(float *d, int64_t n)
{
	if (n < MTC_SHORT)
		for (int64_t i = 0; i < n; i++)
			d[i] = 0;
	else
		memset(d, 0, sizeof(float) * (size_t)n);
}

/* Between y [N, C, P] and t [C, N, P] (to: into t), the pairs (n, c) in [lo, hi). */
static inline void
mtc_chanfirst(float *t, float *y, int64_t n, int64_t c, int64_t p, int to, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++) {
		float *yp = y + q * p, *tp = t + (q % c * n + q / c) * p;
		mtc_copy_f32(to ? tp : yp, to ? yp : tp, p);
	}
}

/* The output columns [w0, w1) of a row whose tap at column offset kw_off (kernel column j:
 * j*dw - pw) reads inside the input row, 0 <= ow*sw + kw_off < W; the rest read the padding. */
static inline void
mtc_conv_seg(int64_t W, int64_t kw_off, int64_t sw, int64_t wo, int64_t *w0, int64_t *w1)
{
	*w0 = kw_off >= 0 ? 0 : (-kw_off + sw - 1) / sw;
	*w1 = W - 1 - kw_off < 0 ? 0 : (W - 1 - kw_off) / sw + 1;
	*w0 = *w0 < wo ? *w0 : wo;
	*w1 = *w1 < wo ? *w1 : wo;
	*w1 = *w1 > *w0 ? *w1 : *w0;
}

/* im2col of the planes q = n*C + c in [lo, hi) of x [N, C, H, W]: plane (n, c) fills image n's
 * Ho*Wo columns of its kh*kw rows (c*kh + i)*kw + j, each a shifted, strided copy of the
 * plane, zero where it reads the padding. */
static inline void
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
				mtc_conv_seg(W, off, sw, wo, &w0, &w1);
				cp = cp0 + (i * kw + j) * N * ho * wo;
				for (int64_t oh = 0; oh < ho; oh++, cp += wo) {
					int64_t h = oh * sh - ph + i * dh, b = h * W + off;
					if (h < 0 || h >= H) {
						mtc_zero_f32(cp, wo);
						continue;
					}
					mtc_zero_f32(cp, w0);
					if (sw == 1)
						mtc_copy_f32(cp + w0, xp + b + w0, w1 - w0);
					else
						for (int64_t ow = w0; ow < w1; ow++)
							cp[ow] = xp[b + ow * sw];
					mtc_zero_f32(cp + w1, wo - w1);
				}
			}
	}
}

/* col2im of the planes [lo, hi): the plane zeroed, then each kernel offset's row segment of
 * the columns added where it came from, offsets in order (so every element sums them i then j,
 * as the interpreter's gather does). */
static inline void
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
				mtc_conv_seg(W, off, sw, wo, &w0, &w1);
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
 * the sums in the order of the interpreter's GEMMs over the columns, so the same bits. */

/* The output columns [*oa, *ob) whose 3x3 window lies inside the row: the first tap's segment
 * starts them, the last tap's ends them. */
static inline void
mtc_dw_inner3(int64_t W, int64_t sw, int64_t pw, int64_t dw, int64_t wo, int64_t *oa, int64_t *ob)
{
	int64_t t;
	mtc_conv_seg(W, -pw, sw, wo, oa, &t);
	mtc_conv_seg(W, 2 * dw - pw, sw, wo, &t, ob);
	*ob = *ob > *oa ? *ob : *oa;
}

/* Output columns [oa, ob) of a 3x3 depthwise row whose window lies inside input rows r0-r2,
 * weights a: each output's nine products summed in order (i, j) from 0. */
static inline void
mtc_dwconv3_row(float *yr, const float *r0, const float *r1, const float *r2, const float *a,
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
 * inside the row (on rows whose window does) without tests (mtc_dwconv3_row): the same bits. */
static inline void
mtc_dwconv3(float *y, const float *x, const float *w, int64_t C, int64_t H, int64_t W, int64_t sh,
        int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho, int64_t wo,
        int64_t lo, int64_t hi)
{
	int64_t oa, ob;

	mtc_dw_inner3(W, sw, pw, dw, wo, &oa, &ob);
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
#define MTC_TAP(in, h, v) ((in) && (v) >= 0 && (v) < W ? xp[(h) * W + (v)] : 0.0f)
#define MTC_EDGE(ow) do { \
		int64_t v0 = (ow) * sw - pw, v1 = v0 + dw, v2 = v0 + 2 * dw; \
		float s = 0; \
		s += a[0] * MTC_TAP(i0, h0, v0), s += a[1] * MTC_TAP(i0, h0, v1), s += a[2] * MTC_TAP(i0, h0, v2); \
		s += a[3] * MTC_TAP(i1, h1, v0), s += a[4] * MTC_TAP(i1, h1, v1), s += a[5] * MTC_TAP(i1, h1, v2); \
		s += a[6] * MTC_TAP(i2, h2, v0), s += a[7] * MTC_TAP(i2, h2, v1), s += a[8] * MTC_TAP(i2, h2, v2); \
		yr[ow] = s; \
	} while (0)
			for (int64_t ow = 0; ow < ea; ow++)
				MTC_EDGE(ow);
			for (int64_t ow = eb; ow < wo; ow++)
				MTC_EDGE(ow);
#undef MTC_EDGE
#undef MTC_TAP
			if (!inner)
				continue;
			/* stride 1 apart: with the stride a constant the loop runs 1.5 times faster */
			if (sw == 1)
				mtc_dwconv3_row(yr, xp + h0 * W, xp + h1 * W, xp + h2 * W, a, oa, ob, 1, pw, dw);
			else
				mtc_dwconv3_row(yr, xp + h0 * W, xp + h1 * W, xp + h2 * W, a, oa, ob, sw, pw, dw);
		}
	}
}

/* mtc_dwconv_dx for a 3x3 kernel at stride 1: each element of dx gathers the products it was
 * scattered, in the same order (i, j) from 0, without the taps whose output is outside; the
 * columns every tap reaches (on rows every tap reaches) without tests: the same bits. */
static inline void
mtc_dwconv3_dx(float *dx, const float *w, const float *dy, int64_t C, int64_t H, int64_t W,
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
#define MTC_ADD(in, o, a, u) if ((in) && (u) >= 0 && (u) < wo) s += (a) * yp[(o) * wo + (u)]
#define MTC_EDGE(c) do { \
		int64_t u0 = (c) + pw, u1 = u0 - dw, u2 = u0 - 2 * dw; \
		float s = 0; \
		MTC_ADD(i0, o0, a0, u0); MTC_ADD(i0, o0, a1, u1); MTC_ADD(i0, o0, a2, u2); \
		MTC_ADD(i1, o1, a3, u0); MTC_ADD(i1, o1, a4, u1); MTC_ADD(i1, o1, a5, u2); \
		MTC_ADD(i2, o2, a6, u0); MTC_ADD(i2, o2, a7, u1); MTC_ADD(i2, o2, a8, u2); \
		xr[c] = s; \
	} while (0)
			for (int64_t c = 0; c < ea; c++)
				MTC_EDGE(c);
			for (int64_t c = eb; c < W; c++)
				MTC_EDGE(c);
#undef MTC_EDGE
#undef MTC_ADD
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
static inline void
mtc_dwconv(float *y, const float *x, const float *w, int64_t C, int64_t H, int64_t W, int64_t kh,
           int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
           int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3) {
		mtc_dwconv3(y, x, w, C, H, W, sh, sw, ph, pw, dh, dw, ho, wo, lo, hi);
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
				mtc_conv_seg(W, off, sw, wo, &w0, &w1);
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
static inline void
mtc_dwconv_dx(float *dx, const float *w, const float *dy, int64_t C, int64_t H, int64_t W,
              int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
              int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3 && sh == 1 && sw == 1) {
		mtc_dwconv3_dx(dx, w, dy, C, H, W, ph, pw, dh, dw, ho, wo, lo, hi);
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
				mtc_conv_seg(W, off, sw, wo, &w0, &w1);
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
static inline void
mtc_dwdw3(float *dwt, const float *x, const float *dy, int64_t N, int64_t C, int64_t H, int64_t W,
      int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho,
      int64_t wo, int64_t lo, int64_t hi)
{
	int64_t oa, ob;

	mtc_dw_inner3(W, sw, pw, dw, wo, &oa, &ob);
	for (int64_t c = lo; c < hi; c++) {
		float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0, s8 = 0;
		for (int64_t n = 0; n < N; n++) {
			const float *xp = x + (n * C + c) * H * W, *yp = dy + (n * C + c) * ho * wo;
			for (int64_t oh = 0; oh < ho; oh++) {
				int64_t h0 = oh * sh - ph, h1 = h0 + dh, h2 = h0 + 2 * dh;
				int i0 = h0 >= 0 && h0 < H, i1 = h1 >= 0 && h1 < H, i2 = h2 >= 0 && h2 < H;
				const float *g = yp + oh * wo;
				/* a column at the edge: each tap 0 where it reads the padding, as there */
#define MTC_TAP(in, h, v) ((in) && (v) >= 0 && (v) < W ? xp[(h) * W + (v)] : 0.0f)
#define MTC_EDGE(ow) do { \
		int64_t v0 = (ow) * sw - pw, v1 = v0 + dw, v2 = v0 + 2 * dw; \
		float gg = g[ow]; \
		s0 += gg * MTC_TAP(i0, h0, v0); s1 += gg * MTC_TAP(i0, h0, v1); s2 += gg * MTC_TAP(i0, h0, v2); \
		s3 += gg * MTC_TAP(i1, h1, v0); s4 += gg * MTC_TAP(i1, h1, v1); s5 += gg * MTC_TAP(i1, h1, v2); \
		s6 += gg * MTC_TAP(i2, h2, v0); s7 += gg * MTC_TAP(i2, h2, v1); s8 += gg * MTC_TAP(i2, h2, v2); \
	} while (0)
				int64_t ow = 0;
				for (; ow < oa; ow++)
					MTC_EDGE(ow);
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
					MTC_EDGE(ow);
			}
		}
		float *o = dwt + c * 9;
		o[0] = s0, o[1] = s1, o[2] = s2, o[3] = s3, o[4] = s4, o[5] = s5, o[6] = s6, o[7] = s7, o[8] = s8;
	}
#undef MTC_TAP
#undef MTC_EDGE
}

/* dw's channels [lo, hi) of N images: each of the kh*kw weights 0 plus dy * x (0 in the
 * padding) over n, oh, ow in order, the weights of a channel side by side. */
static inline void
mtc_dwconv_dw(float *dwt, const float *x, const float *dy, int64_t N, int64_t C, int64_t H,
              int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
              int64_t dh, int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi)
{
	if (kh == 3 && kw == 3) {
		mtc_dwdw3(dwt, x, dy, N, C, H, W, sh, sw, ph, pw, dh, dw, ho, wo, lo, hi);
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

#endif
