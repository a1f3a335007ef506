/* mtc-math.h: exp, log, tanh, sin and cos in float, in plain branch-free C, shared by the
 * interpreter, the runtime and generated kernels of both targets (the CUDA target puts this
 * text into every NVRTC program, where __CUDACC_RTC__ replaces the C library headers).
 *
 * The C library's expf/logf/tanhf are opaque scalar calls: a loop that calls them does not
 * vectorize, and their bits depend on the libm at hand. These are straight-line float code
 * (range reduction, a polynomial, selects instead of branches), so gcc vectorizes loops that
 * call them at -O2/-O3 without -ffast-math, and every compilation of them gives the same bits
 * as long as nothing contracts a * b + c into an fma (-ffp-contract=off, as mtc compiles
 * everything that evaluates ops). Errors against the exact value are at most 2 ulp for normal
 * results; tests/backend/math.c measures them over every float in the tested ranges.
 * The polynomials are Cephes' (S. Moshier), with Cody-Waite splits of ln 2. Constants are
 * decimal, not hex floats: NVRTC reads this as C++14, which has none. */
#ifndef MTC_MTC_MATH_H
#define MTC_MTC_MATH_H

#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
typedef int int32_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
static inline float mtc_bits_f(uint32_t u) { return __uint_as_float(u); }
static inline uint32_t mtc_f_bits(float f) { return __float_as_uint(f); }
#else
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float mtc_bits_f(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
static inline uint32_t mtc_f_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
#endif

/* e^x: x = k ln2 + r with |r| <= ln2/2, e^r by a polynomial, then two exact scalings by 2^(k/2)
 * so that k from -150 to 128 needs no special case (overflow gives inf, underflow rounds into
 * the subnormals once). NaN stays NaN. */
static inline float
mtc_expf(float x)
{
	float xc = x > -104.0f ? x : -104.0f;        /* NaN goes to -104 here, back at the end */
	xc = xc < 89.0f ? xc : 89.0f;
	float k = xc * 1.44269504088896341f + 12582912.0f;   /* 1.5 * 2^23 */
	k = k - 12582912.0f;                         /* round to nearest without rintf */
	int32_t n = (int32_t)k, n1 = n / 2, n2 = n - n1;
	float r = xc - k * 0.693359375f;             /* exact: 9-bit constant, |k| < 2^8 */
	r = r - k * -2.12194440e-4f;
	float z = r * r, p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * z + r + 1.0f;
	p = p * mtc_bits_f((uint32_t)(n1 + 127) << 23) * mtc_bits_f((uint32_t)(n2 + 127) << 23);
	return x != x ? x : p;
}

/* log x: x = m 2^e with m in [sqrt(1/2), sqrt(2)) taken from the bits (subnormals scaled
 * first), log(1 + f) by a polynomial. 0 gives -inf, negative and NaN give NaN, inf gives inf. */
static inline float
mtc_logf(float x)
{
	int sub = x < 1.17549435082228750797e-38f;   /* 2^-126, the smallest normal */
	float xs = sub ? x * 8388608.0f : x;          /* 2^23 */
	uint32_t u = mtc_f_bits(xs) - 0x3f3504f3u;   /* the bits of sqrt(1/2) */
	int32_t e = ((int32_t)u >> 23) - (sub ? 23 : 0);
	float m = mtc_bits_f((u & 0x7fffffu) + 0x3f3504f3u);
	float f = m - 1.0f, z = f * f, fe = (float)e, y = 7.0376836292e-2f;
	y = y * f - 1.1514610310e-1f;
	y = y * f + 1.1676998740e-1f;
	y = y * f - 1.2420140846e-1f;
	y = y * f + 1.4249322787e-1f;
	y = y * f - 1.6668057665e-1f;
	y = y * f + 2.0000714765e-1f;
	y = y * f - 2.4999993993e-1f;
	y = y * f + 3.3333331174e-1f;
	y = y * f * z;
	y = y + -2.12194440e-4f * fe;
	y = y + -0.5f * z;
	y = f + y;
	y = y + 0.693359375f * fe;
	y = x > 0 ? y : x == 0 ? -INFINITY : NAN;
	return x == INFINITY ? x : y;
}

/* tanh x: an odd polynomial below |x| = 0.625, else 1 - 2 / (e^2|x| + 1); both are computed
 * on |x| and one is selected, so the loop has no branch; then x's sign bit (-0 stays -0). */
static inline float
mtc_tanhf(float x)
{
	uint32_t sign = mtc_f_bits(x) & 0x80000000u;
	float ax = mtc_bits_f(mtc_f_bits(x) ^ sign), z = ax * ax, s = -5.70498872745e-3f;
	s = s * z + 2.06390887954e-2f;
	s = s * z - 5.37397155531e-2f;
	s = s * z + 1.33314422036e-1f;
	s = s * z - 3.33332819422e-1f;
	s = s * z * ax + ax;
	float l = 1.0f - 2.0f / (mtc_expf(ax + ax) + 1.0f);
	return mtc_bits_f(mtc_f_bits(ax < 0.625f ? s : l) | sign);
}

/* sin x (q0 = 0) or cos x (q0 = 1): |x| = k pi/2 + r with |r| <= pi/4, in double: pi/2 split
 * into two 25-bit parts and a rest, so k times each part is exact for k < 2^28 and r keeps
 * double precision however close x is to a multiple of pi/2; Cephes' float polynomials of sin
 * and cos on [-pi/4, pi/4] evaluated in double, the quadrant (k + q0) mod 4 selecting one and
 * its sign, rounded to float once. Beyond |x| = 2^28 (268435456, where floats are 32 apart)
 * the result is NaN, as for inf and NaN: no reduction is attempted there. */
static inline float
mtc_sinqf(float x, int q0)
{
	uint32_t sx = mtc_f_bits(x) & 0x80000000u;
	float ax = mtc_bits_f(mtc_f_bits(x) ^ sx);
	double d = ax <= 268435456.0f ? (double)ax : 0.0;       /* NaN and inf go to 0 here */
	double k = d * 0.63661977236758134 + 6755399441055744.0;  /* 1.5 * 2^52: rint */
	k = k - 6755399441055744.0;
	double m = (k - 1.5) * 0.25 + 6755399441055744.0;        /* floor(k / 4) */
	m = m - 6755399441055744.0;
	double q = k - 4.0 * m + (double)q0;
	q = q >= 4.0 ? q - 4.0 : q;
	double r = d - k * 1.5707963109016418;
	r = r - k * 1.5893254712295857e-08;
	r = r - k * 6.123233995736766e-17;
	double z = r * r;
	double s = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
	double c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z -
	           0.5 * z + 1.0;
	double v = q == 1.0 || q == 3.0 ? c : s;
	int neg = (q >= 2.0) ^ (q0 == 0 && sx != 0);            /* sin is odd, cos even */
	v = neg ? -v : v;
	return ax <= 268435456.0f ? (float)v : NAN;
}

static inline float mtc_sinf(float x) { return mtc_sinqf(x, 0); }
static inline float mtc_cosf(float x) { return mtc_sinqf(x, 1); }

#endif
