/* init.c: deterministic initial values and input data, the recipe of the reference
 * interpreter (ir/interp.c, init_tensor) so every target starts from the same bits.
 *
 * key = splitmix64(fnv1a64(name) ^ splitmix64(seed)); draw j = splitmix64(key ^ splitmix64(j));
 * u(j) = (draw j >> 11) 2^-53; uniform(lo,hi) element i: lo + (hi-lo) u(i); normal element i:
 * mean + std sqrt(-2 ln(1 - u(2i))) cos(2 pi u(2i+1)), in double, then rounded to float;
 * f32 inputs: uniform(-1, 1); i32 inputs: (draw i >> 33) % range. Counter-based, so any
 * element is computable alone. */
#include <math.h>
#include <string.h>

#include "mtc/mtc-rt.h"

static uint64_t
splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t
bits(uint64_t key, uint64_t j)
{
	return splitmix64(key ^ splitmix64(j));
}

static double
unif(uint64_t key, uint64_t j)
{
	return (double)(bits(key, j) >> 11) * 0x1p-53;
}

static uint64_t
keyof(const char *name, uint64_t seed)
{
	uint64_t h = 14695981039346656037ull;
	for (const char *s = name ? name : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return splitmix64(h ^ splitmix64(seed));
}

void
mtc_init_f32(float *p, int64_t n, int kind, double a, double b, const char *name, uint64_t seed)
{
	const double pi = 3.14159265358979323846;
	uint64_t key = keyof(name, seed);

	for (int64_t i = 0; i < n; i++)
		switch (kind) {
		case 2: p[i] = 1; break;
		case 3: p[i] = (float)a; break;
		case 4:
			p[i] = (float)(a + b * sqrt(-2 * log(1 - unif(key, 2 * (uint64_t)i))) *
			                      cos(2 * pi * unif(key, 2 * (uint64_t)i + 1)));
			break;
		case 5: p[i] = (float)(a + (b - a) * unif(key, (uint64_t)i)); break;
		default: p[i] = 0;
		}
}

void
mtc_rand_input(void *p, int dtype, int64_t n, int32_t hi, const char *name, uint64_t seed)
{
	if (dtype == MTC_I32) {
		uint64_t key = keyof(name, seed);
		for (int64_t i = 0; i < n; i++) {
			int32_t v = (int32_t)(bits(key, (uint64_t)i) >> 33);
			((int32_t *)p)[i] = hi > 0 ? v % hi : v;
		}
	} else {
		mtc_init_f32(p, n, 5, -1.0, 1.0, name, seed);
	}
}
