/* math.c: <mtc/mtc-math.h> against the C library: error in ulp, special values, and the same
 * bits from a vectorized loop as from a scalar call.
 *
 * Every 251st float (all signs and exponents; sin and cos up to |x| = 2^28, NaN beyond) is
 * checked against the double-precision libm result: at most 2 ulp of the exact value for
 * normal results, at most 2 ulp of the smallest subnormal below them. The C library's float
 * functions are measured the same way and printed beside, for the record. Built with the vectorizer on (local.mk), like modules. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>

#include "mtc/mtc-math.h"

#include "../check.h"

enum { STRIDE = 251, N = 4096 };

/* |got - exact| in units of the last place of exact as a float (huge when a special value
 * differs). */
static double
ulps(double exact, float got)
{
	float fe = (float)exact;
	int e;

	if (isnan(exact))
		return isnan(got) ? 0 : 1e30;
	if (isinf(fe))
		return got == fe ? 0 : isinf(got) ? 1e30 : fabs(got - exact) / 0x1p104;
	if (isnan(got) || isinf(got))
		return 1e30;
	if (fabs(exact) < 0x1p-126)
		return fabs(got - exact) / 0x1p-149;
	frexp(exact, &e);
	return fabs(got - exact) / ldexp(1, e - 24);
}

typedef struct Fn {
	const char *name;
	float (*ours)(float);
	float (*libm)(float);
	double (*exact)(double);
} Fn;

/* Not inlined: the scalar reference for the vectorized loops below. */
__attribute__((noinline)) static float one_exp(float x) { return mtc_expf(x); }
__attribute__((noinline)) static float one_log(float x) { return mtc_logf(x); }
__attribute__((noinline)) static float one_tanh(float x) { return mtc_tanhf(x); }
__attribute__((noinline)) static float one_sin(float x) { return mtc_sinf(x); }
__attribute__((noinline)) static float one_cos(float x) { return mtc_cosf(x); }

static void
loops(const float *x, float *e, float *l, float *t, float *sn, float *cs)
{
	for (int i = 0; i < N; i++)
		sn[i] = mtc_sinf(x[i]);
	for (int i = 0; i < N; i++)
		cs[i] = mtc_cosf(x[i]);
	for (int i = 0; i < N; i++)
		e[i] = mtc_expf(x[i]);
	for (int i = 0; i < N; i++)
		l[i] = mtc_logf(x[i]);
	for (int i = 0; i < N; i++)
		t[i] = mtc_tanhf(x[i]);
}

int
main(void)
{
	static const Fn fn[] = {
		{ "exp", one_exp, expf, exp },
		{ "log", one_log, logf, log },
		{ "tanh", one_tanh, tanhf, tanh },
		{ "sin", one_sin, sinf, sin },
		{ "cos", one_cos, cosf, cos },
	};
	static float x[N], e[N], l[N], t[N], sn[N], cs[N];

	for (int f = 0; f < 5; f++) {
		double worst = 0, lworst = 0;
		float at = 0;
		for (uint64_t b = 0; b < (1ull << 32); b += STRIDE) {
			float v = mtc_bits_f((uint32_t)b);
			if (f >= 3 && !(fabsf(v) <= 0x1p28f))
				continue;       /* sin and cos: NaN there (below) */
			double ex = fn[f].exact(v), u = ulps(ex, fn[f].ours(v)), lu = ulps(ex, fn[f].libm(v));
			if (u > worst)
				worst = u, at = v;
			if (lu > lworst)
				lworst = lu;
		}
		printf("%-5s max error %.3f ulp (at %a); the C library's %sf: %.3f ulp\n", fn[f].name,
		       worst, (double)at, fn[f].name, lworst);
		check(worst <= 2, "%s within 2 ulp (%.3f at %a)", fn[f].name, worst, (double)at);
	}

	check(mtc_expf(0) == 1 && mtc_expf(-INFINITY) == 0 && mtc_expf(INFINITY) == INFINITY &&
	      isnan(mtc_expf(NAN)) && mtc_expf(89) == INFINITY && mtc_expf(-104) == 0 &&
	      mtc_expf(-100) > 0, "exp special values");
	check(mtc_logf(1) == 0 && mtc_logf(0) == -INFINITY && mtc_logf(-0.0f) == -INFINITY &&
	      isnan(mtc_logf(-1)) && isnan(mtc_logf(NAN)) && mtc_logf(INFINITY) == INFINITY &&
	      fabsf(mtc_logf(0x1p-149f) - logf(0x1p-149f)) < 1e-5f, "log special values");
	check(mtc_tanhf(0) == 0 && signbit(mtc_tanhf(-0.0f)) && mtc_tanhf(INFINITY) == 1 &&
	      mtc_tanhf(-INFINITY) == -1 && isnan(mtc_tanhf(NAN)) && mtc_tanhf(20) == 1,
	      "tanh special values");
	check(mtc_sinf(0) == 0 && signbit(mtc_sinf(-0.0f)) && mtc_cosf(0) == 1 &&
	      mtc_cosf(-0.0f) == 1 && isnan(mtc_sinf(INFINITY)) && isnan(mtc_cosf(-INFINITY)) &&
	      isnan(mtc_sinf(NAN)) && isnan(mtc_cosf(NAN)) && isnan(mtc_sinf(0x1.000002p28f)) &&
	      isnan(mtc_cosf(-0x1p29f)) && !isnan(mtc_sinf(0x1p28f)) && mtc_sinf(-1) == -mtc_sinf(1) &&
	      mtc_cosf(-1) == mtc_cosf(1), "sin and cos special values");

	/* Vectorized loops against scalar calls: the bits must not depend on the code shape. */
	for (int i = 0; i < N; i++)
		x[i] = (i % 3 ? -1 : 1) * ldexpf(1 + (float)i / N, i % 40 - 20) + (i % 7 == 0 ? 0.3f : 0);
	x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0, x[4] = 0x1p-140f;
	loops(x, e, l, t, sn, cs);
	{
		int same = 1;
		for (int i = 0; i < N; i++) {
			uint32_t a[5] = { mtc_f_bits(e[i]), mtc_f_bits(l[i]), mtc_f_bits(t[i]),
			                  mtc_f_bits(sn[i]), mtc_f_bits(cs[i]) };
			uint32_t b[5] = { mtc_f_bits(one_exp(x[i])), mtc_f_bits(one_log(x[i])),
			                  mtc_f_bits(one_tanh(x[i])), mtc_f_bits(one_sin(x[i])),
			                  mtc_f_bits(one_cos(x[i])) };
			for (int k = 0; k < 5; k++)
				if (a[k] != b[k] && !(isnan(mtc_bits_f(a[k])) && isnan(mtc_bits_f(b[k]))))
					same = 0;
		}
		check(same, "loops give the bits of scalar calls");
	}
	return done();
}
