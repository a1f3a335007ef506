/* init.c: deterministic initial values and input data, shared by the interpreter and modules.
 *
 * A tensor's numbers depend only on its name, the seed and its initializer, so every target
 * and every run start from the same bits: a splitmix64 stream keyed by FNV-1a(name) and the
 * seed; normals by Box-Muller in double, rounded once to float. */
#include <math.h>
#include <string.h>

#include "mtc/mtc-rt.h"

static uint64_t
next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 bits. */
static double
unif(uint64_t *s)
{
	return (double)(next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t
key(const char *name, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = name ? name : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	h ^= seed * 0x9e3779b97f4a7c15ull;
	next(&h);
	return h;
}

void
mtc_init_f32(float *p, int64_t n, int kind, double a, double b, const char *name, uint64_t seed)
{
	uint64_t s = key(name, seed);
	int64_t i;

	switch (kind) {
	case 2: a = 1; /* fall through */
	case 3:
		for (i = 0; i < n; i++)
			p[i] = (float)a;
		break;
	case 4:
		for (i = 0; i < n; i += 2) {
			double u1 = 1.0 - unif(&s), u2 = unif(&s);
			double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
			p[i] = (float)(a + b * r * cos(t));
			if (i + 1 < n)
				p[i + 1] = (float)(a + b * r * sin(t));
		}
		break;
	case 5:
		for (i = 0; i < n; i++)
			p[i] = (float)(a + (b - a) * unif(&s));
		break;
	default:
		memset(p, 0, sizeof(float) * (size_t)n);
	}
}

void
mtc_rand_input(void *p, int dtype, int64_t n, int32_t hi, const char *name, uint64_t seed)
{
	if (dtype == MTC_I32) {
		uint64_t s = key(name, seed);
		for (int64_t i = 0; i < n; i++)
			((int32_t *)p)[i] = hi > 0 ? (int32_t)(next(&s) % (uint64_t)hi) : 0;
	} else {
		mtc_init_f32(p, n, 4, 0.0, 1.0, name, seed);
	}
}
