/* mtc-ops.h: the scalar meaning of every elementwise op and optimizer update, one inline
 * function each.
 *
 * OPTAB's formula column (ir/ir.h) is written in these functions: the interpreter compiles it,
 * the C target prints it into kernels that include this header, and the CUDA target prints it
 * into programs that carry this header's text (compiled by NVRTC, __CUDACC_RTC__ defined), so
 * fused and unfused code, every target and the interpreter compute the same bits.
 * Every function works in float and nothing is contracted into an fma (-ffp-contract=off for C,
 * --fmad=false for NVRTC). exp, log and tanh are mtc-math.h's, not a math library's: the same
 * bits everywhere, and loops vectorize. The one exception is powf (pow, pow_grad): the C
 * library's on the host, CUDA's on the GPU, which may differ in the last bits. */
#ifndef MTC_MTC_OPS_H
#define MTC_MTC_OPS_H

#ifndef __CUDACC_RTC__
#include <math.h>

#include "mtc-math.h"
#endif

static inline float mtc_add(float a, float b) { return a + b; }
static inline float mtc_sub(float a, float b) { return a - b; }
static inline float mtc_mul(float a, float b) { return a * b; }
static inline float mtc_div(float a, float b) { return a / b; }
static inline float mtc_relu(float x) { return x > 0 ? x : 0; }
/* gelu, the tanh approximation, as PyTorch writes it. */
#define MTC_GELU_BETA ((float)(1.41421356237309504880 * 1.12837916709551257390 * 0.5))
#define MTC_GELU_KAPPA 0.044715f
static inline float
mtc_gelu(float x)
{
	float in = MTC_GELU_BETA * (x + MTC_GELU_KAPPA * (x * x * x));
	return 0.5f * x * (1 + mtc_tanhf(in));
}
static inline float mtc_tanh(float x) { return mtc_tanhf(x); }
static inline float mtc_sigmoid(float x) { return 1 / (1 + mtc_expf(-x)); }
static inline float mtc_exp(float x) { return mtc_expf(x); }
static inline float mtc_sin(float x) { return mtc_sinf(x); }
static inline float mtc_cos(float x) { return mtc_cosf(x); }
static inline float mtc_log(float x) { return mtc_logf(x); }
static inline float mtc_sqrt(float x) { return sqrtf(x); }
static inline float mtc_rsqrt(float x) { return 1 / sqrtf(x); }
static inline float mtc_neg(float x) { return -x; }
/* The comparisons of imported graphs, 1 or 0 (ONNX's booleans at run time; NaN compares
 * false), and their Where: a where c is not 0, else b. */
static inline float mtc_eq(float a, float b) { return a == b ? 1.0f : 0.0f; }
static inline float mtc_lt(float a, float b) { return a < b ? 1.0f : 0.0f; }
static inline float mtc_le(float a, float b) { return a <= b ? 1.0f : 0.0f; }
static inline float mtc_select(float c, float a, float b) { return c != 0 ? a : b; }
/* to_i32: toward zero (C's conversion, PyTorch's .long() in range), NaN 0, clamped to the
 * range of int32_t, where C's conversion is undefined. */
static inline int32_t
mtc_toi32(float x)
{
	return x != x ? 0 : x >= 2147483648.0f ? 2147483647
	     : x <= -2147483648.0f ? -2147483647 - 1 : (int32_t)x;
}
/* Floor, Ceil and Round (half to even, as torch.round and ONNX's), steps without gradient. */
static inline float mtc_floor(float x) { return floorf(x); }
static inline float mtc_ceil(float x) { return ceilf(x); }
static inline float mtc_round(float x) { return rintf(x); }
/* torch.maximum: the larger, a NaN operand itself; its gradient for a, PyTorch's: dy where
 * a > b (or either is NaN), half of it where they are equal, 0 where a < b (b's: swapped). */
static inline float mtc_maximum(float a, float b) { return a != a || a > b ? a : b; }
static inline float mtc_maximum_grad(float a, float b, float dy) { return a < b ? 0.0f : a == b ? dy / 2 : dy; }
static inline float mtc_pow(float x, float c) { return powf(x, c); }
/* clip (ReLU6 is clip(x, 0, 6)): max then min as torch.clamp, so NaN stays NaN and lo > hi
 * gives hi. */
static inline float
mtc_clip(float x, float lo, float hi)
{
	float y = x < lo ? lo : x;
	return y > hi ? hi : y;
}

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), word 0
 * of the block of counter (c0, c1, c2, c3) under key (k0, k1): dropout's generator. Counter
 * based, so any element of any mask is drawn alone, the same on every target. */
static inline unsigned int
mtc_philox(unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3, unsigned int k0,
           unsigned int k1)
{
	for (int r = 0; r < 10; r++) {
		unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
		unsigned int h0 = (unsigned int)(p0 >> 32), l0 = (unsigned int)p0;
		unsigned int h1 = (unsigned int)(p1 >> 32), l1 = (unsigned int)p1;
		c0 = h1 ^ c1 ^ k0;
		c1 = l1;
		c2 = h0 ^ c3 ^ k1;
		c3 = l0;
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	return c0;
}

/* dropout's uniform draw for element i of the dropout `key` at step t under `seed`: the top 24
 * bits of Philox's word as a float in [0, 1) (exact). */
static inline float
mtc_dropout_u(long long i, int key, int t, unsigned long long seed)
{
	unsigned int r = mtc_philox((unsigned int)i, (unsigned int)((unsigned long long)i >> 32),
	                            (unsigned int)key, (unsigned int)t, (unsigned int)seed,
	                            (unsigned int)(seed >> 32));
	return (float)(r >> 8) * 5.9604644775390625e-8f;
}

/* Where element i of a slice of the batch (micro-batch or rank q of `parts`) sits in the
 * whole batch's tensor, whose mask it draws (docs/ir.md, dropout's chunk parts part
 * rankparts): per `chunk` elements the slice holds one block of `parts` consecutive ones;
 * chunk 0: the tensor is the whole batch's (or does not depend on it). */
static inline long long
mtc_dropout_at(long long i, long long chunk, long long parts, long long q)
{
	return chunk ? i / chunk * parts * chunk + q * chunk + i % chunk : i;
}

/* Gradient helpers: (saved forward value, dy) -> dx; which forward value each takes (x or
 * y) is in docs/ir.md. */
static inline float mtc_relu_grad(float x, float dy) { return x > 0 ? dy : 0; }
static inline float
mtc_gelu_grad(float x, float dy)
{
	float x2 = x * x, in = MTC_GELU_BETA * (x + MTC_GELU_KAPPA * x2 * x), t = mtc_tanhf(in);
	float left = 0.5f * x, right = 1 + t;
	float dleft = 0.5f * right;
	float dright = left * (1 - t * t) * (MTC_GELU_BETA * (1 + 3 * MTC_GELU_KAPPA * x2));
	return dy * (dleft + dright);
}
static inline float mtc_tanh_grad(float y, float dy) { return dy * (1 - y * y); }
static inline float mtc_sigmoid_grad(float y, float dy) { return dy * (1 - y) * y; }
static inline float mtc_sqrt_grad(float y, float dy) { return dy / (2 * y); }
static inline float mtc_rsqrt_grad(float y, float dy) { return -0.5f * dy * (y * y * y); }
static inline float mtc_pow_grad(float x, float dy, float c) { return c == 0 ? 0 : dy * (c * powf(x, c - 1)); }
/* From clip's result y: dy where lo < y < hi (strictly, as PyTorch's hardtanh, ReLU6's
 * backward; y is strictly inside exactly where the input is). */
static inline float mtc_clip_grad(float y, float dy, float lo, float hi) { return y > lo && y < hi ? dy : 0; }

/* Gradient clipping (torch.nn.utils.clip_grad_norm_): the coefficient that scales every
 * gradient, from the sum of their squares ss and the clip norm c: min(c / (norm + 1e-6), 1),
 * NaN kept (a NaN norm scales by NaN, as PyTorch's clamp does). */
static inline float
mtc_clip_coef(float ss, float c)
{
	float k = c / (sqrtf(ss) + 1e-6f);
	return k > 1 ? 1.0f : k;
}

/* Optimizer updates, one element of a param at a time, in place, PyTorch 1.13's single-tensor
 * rules (passes/grad.c defines them). The interpreter, both targets' update kernels and the
 * updates run on the host call these, so an update computes the same bits wherever it runs. Hyperparameters arrive as floats (the instance's settings); the scalars that
 * depend only on them and the step (Adam's bias corrections, AdamW's decay) are computed once
 * per update by mtc_adam_scalars, in double as Python computes them. */
static inline void
mtc_sgd_update(float *p, float g, float lr, float wd)
{
	if (wd != 0)
		g = g + wd * *p;
	*p = *p + -lr * g;
}

static inline void
mtc_sgdm_update(float *p, float *v, float g, float lr, float mu, float wd)
{
	if (wd != 0)
		g = g + wd * *p;
	*v = *v * mu + g;
	*p = *p + -lr * *v;
}

typedef struct mtc_adam {
	float step, bc2s, b1, a1, b2, a2, eps, decay;
	int bad;                  /* the step counter is below 1: tick must precede the update */
} mtc_adam;

static inline mtc_adam
mtc_adam_scalars(int32_t t, float lr, float b1, float b2, float eps, float wd)
{
	mtc_adam s;
	double dt = t;

	s.bad = t < 1;
	s.step = (float)((double)lr / (1 - pow((double)b1, dt)));
	s.bc2s = (float)sqrt(1 - pow((double)b2, dt));
	s.b1 = b1;
	s.a1 = (float)(1 - (double)b1);
	s.b2 = b2;
	s.a2 = (float)(1 - (double)b2);
	s.eps = eps;
	s.decay = (float)(1 - (double)lr * (double)wd);
	return s;
}

/* Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= (lr/bc1) m / (sqrt(v)/sqrt(bc2) + eps).
 * AdamW first decays the param: p *= 1 - lr wd (decoupled weight decay). */
static inline void
mtc_adam_update(float *p, float *m, float *v, float g, const mtc_adam *s)
{
	*m = *m * s->b1 + s->a1 * g;
	*v = *v * s->b2 + s->a2 * g * g;
	*p = *p + -s->step * (*m / (sqrtf(*v) / s->bc2s + s->eps));
}

static inline void
mtc_adamw_update(float *p, float *m, float *v, float g, const mtc_adam *s)
{
	*p = *p * s->decay;
	mtc_adam_update(p, m, v, g, s);
}

#endif
