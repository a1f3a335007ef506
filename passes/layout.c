/* layout.c: static memory layout: an arena offset for every tensor on the accelerator.
 *
 * needs: Live of f (its current order). fills: Value.off of every value and Layout.
 * Module tensors are live throughout: they sit first, in decl order, at offsets that are the
 * same in every function of the module. The others are placed by greedy-by-size over live
 * intervals (TFLite, ExecuTorch): biggest first, each in the smallest gap between tensors
 * alive at the same time where it fits, else above them all. The greedy is run for a few
 * orders (by size, birth, interval length, size x length, death, latest birth) and the
 * smallest arena kept; its size is never below Live.peak (rounded to the alignment). Host
 * values (swapped out) get offsets in a host zone the same way. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct {
	int v;
	int64_t sz, off;
	int b, e;        /* live interval [b, e] */
} T;

enum { BYSIZE, BYBIRTH, BYLEN, BYAREA, BYDEATH, BYLATE, NORDER };

static int order;

static int
cmp(const void *x, const void *y)
{
	const T *a = x, *b = y;
	double ka, kb;

	switch (order) {
	case BYBIRTH: ka = -a->b, kb = -b->b; break;
	case BYLEN: ka = a->e - a->b, kb = b->e - b->b; break;
	case BYAREA: ka = (double)a->sz * (a->e - a->b + 1), kb = (double)b->sz * (b->e - b->b + 1); break;
	case BYDEATH: ka = a->e, kb = b->e; break;
	case BYLATE: ka = a->b, kb = b->b; break;
	default: ka = kb = 0;
	}
	if (ka != kb)
		return ka < kb ? 1 : -1;
	if (a->sz != b->sz)
		return a->sz < b->sz ? 1 : -1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return a->v - b->v;
}

static int
byoff(const void *x, const void *y)
{
	const T *a = *(T *const *)x, *b = *(T *const *)y;
	return (a->off > b->off) - (a->off < b->off);
}

/* Best-fit placement of t[0..n) in their current order; returns the zone's size. */
static int64_t
place(T *t, int n)
{
	T **near = xcalloc(n + 1, sizeof *near);
	int64_t top = 0;

	for (int i = 0; i < n; i++) {
		int nn = 0;
		int64_t prev = 0, best = -1, bestgap = 0;

		for (int j = 0; j < i; j++)
			if (t[j].b <= t[i].e && t[i].b <= t[j].e)
				near[nn++] = &t[j];
		qsort(near, nn, sizeof *near, byoff);
		for (int j = 0; j < nn; j++) {
			int64_t gap = near[j]->off - prev;
			if (gap >= t[i].sz && (best < 0 || gap < bestgap))
				best = prev, bestgap = gap;
			if (near[j]->off + near[j]->sz > prev)
				prev = near[j]->off + near[j]->sz;
		}
		t[i].off = best >= 0 ? best : prev;
		if (t[i].off + t[i].sz > top)
			top = t[i].off + t[i].sz;
	}
	free(near);
	return top;
}

static int64_t
roundup(int64_t x, int64_t a)
{
	return (x + a - 1) / a * a;
}

/* Lay out the values of one zone (host or not) above base; returns the zone's top. */
static int64_t
zone(Func *f, const Live *l, int host, int64_t base, int64_t align)
{
	T *t = xcalloc(f->nval + 1, sizeof *t), *best = NULL;
	int n = 0;
	int64_t top = 0;

	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		if (x->decl >= 0 || !!x->host != host || l->birth[v] > l->last[v])
			continue;
		t[n].v = v;
		t[n].sz = roundup(type_bytes(&x->ty), align);
		t[n].b = l->birth[v];
		t[n].e = l->last[v];
		n++;
	}
	for (order = 0; order < NORDER; order++) {
		int64_t z;
		qsort(t, n, sizeof *t, cmp);
		z = place(t, n);
		if (!best || z < top) {
			top = z;
			free(best);
			best = xcalloc(n + 1, sizeof *best);
			memcpy(best, t, n * sizeof *t);
		}
	}
	for (int i = 0; i < n; i++)
		f->val[best[i].v].off = base + best[i].off;
	free(best);
	free(t);
	return base + top;
}

void
layout(Layout *lay, Func *f, const Live *l, int64_t align)
{
	int64_t p = 0;

	if (align < 1 || (align & (align - 1)))
		die("alignment %lld is not a power of two", (long long)align);
	for (int v = 0; v < f->nval; v++)
		f->val[v].off = -1;
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl >= 0) {
			f->val[v].off = p;
			p += roundup(type_bytes(&f->val[v].ty), align);
		}
	lay->persist = p;
	lay->arena = zone(f, l, 0, p, align);
	lay->host = zone(f, l, 1, 0, align);
}
