/* mtc-ops.h: the scalar meaning of every elementwise op, one inline function each.
 *
 * Generated kernels call these, so fused and unfused code round the same way; the reference
 * interpreter may include this header too, which makes "same semantics" hold by construction.
 * Every function works in float (no double intermediates), compiled with -ffp-contract=off. */
#ifndef MTC_MTC_OPS_H
#define MTC_MTC_OPS_H

#include <math.h>

static inline float mtc_add(float a, float b) { return a + b; }
static inline float mtc_sub(float a, float b) { return a - b; }
static inline float mtc_mul(float a, float b) { return a * b; }
static inline float mtc_div(float a, float b) { return a / b; }
static inline float mtc_relu(float x) { return x > 0.0f ? x : 0.0f; }
/* gelu, the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static inline float
mtc_gelu(float x)
{
	float u = 0.7978845608f * (x + 0.044715f * x * x * x);
	return 0.5f * x * (1.0f + tanhf(u));
}
static inline float mtc_tanh(float x) { return tanhf(x); }
static inline float mtc_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float mtc_exp(float x) { return expf(x); }
static inline float mtc_log(float x) { return logf(x); }
static inline float mtc_sqrt(float x) { return sqrtf(x); }
static inline float mtc_rsqrt(float x) { return 1.0f / sqrtf(x); }
static inline float mtc_neg(float x) { return -x; }
static inline float mtc_pow(float x, float c) { return powf(x, c); }

/* Gradient helpers: (x or y, dy) -> dx, with the operand the autodiff rule passes first. */
static inline float mtc_relu_grad(float x, float g) { return x > 0.0f ? g : 0.0f; }
static inline float
mtc_gelu_grad(float x, float g)
{
	float u = 0.7978845608f * (x + 0.044715f * x * x * x);
	float t = tanhf(u);
	float du = 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
	return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
}
static inline float mtc_tanh_grad(float y, float g) { return g * (1.0f - y * y); }
static inline float mtc_sigmoid_grad(float y, float g) { return g * y * (1.0f - y); }
static inline float mtc_sqrt_grad(float y, float g) { return g * 0.5f / y; }
static inline float mtc_rsqrt_grad(float y, float g) { return g * -0.5f * y * y * y; }
static inline float mtc_pow_grad(float x, float g, float c) { return g * c * powf(x, c - 1.0f); }

#endif
