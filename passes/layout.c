/* layout.c: static memory layout: an arena offset for every tensor on the accelerator.
 *
 * needs: Live of f (its current order). fills: Value.off of every value and Layout.
 * Module tensors are live throughout: they sit first, in decl order, at offsets that are the
 * same in every function of the module. The others are placed by greedy-by-size over live
 * intervals (TFLite, ExecuTorch): biggest first, each in the smallest gap between tensors
 * alive at the same time where it fits, else above them all. The greedy is run for a few
 * orders (by size, birth, interval length, size x length, death, latest birth) and the
 * smallest arena kept; its size is never below Live.peak (rounded to the alignment). Each
 * order costs time quadratic in the tensors, so a zone of more than BIGZONE tries the first
 * two only. With a goal (layout_to: the planner's budget) that the best greedy misses but
 * the bytes alive at once do not, a bounded local search over the order follows (search());
 * on the skip-connected MLP's floor plan (CUDA cost model) the greedy leaves 246 KB of a
 * 1.33 MB zone unused, the search 2.5 KB. Host values (swapped out) get offsets in a host zone the
 * same way.
 * A .mir that was laid out already (every value has at=) keeps its offsets after a check. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"

typedef struct {
	int v;
	int64_t sz, off;
	int b, e;        /* live interval [b, e] */
} T;

enum { BYSIZE, BYBIRTH, BYLEN, BYAREA, BYDEATH, BYLATE, NORDER, BIGZONE = 4000 };

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

/* Best-fit placement of t[0..n) in their current order; returns the zone's size. The tensors
 * placed so far are kept sorted by offset, so each placement is one linear scan of them
 * (a deep model keeps thousands of activations alive at once: sorting each one's live
 * neighbours anew made this n^2 log n). */
static int64_t
place(T *t, int n, int *topi)
{
	T **byoff = xcalloc(n + 1, sizeof *byoff);
	int64_t top = 0;

	*topi = 0;

	for (int i = 0; i < n; i++) {
		int64_t prev = 0, best = -1, bestgap = 0;
		int lo = 0, hi = i;

		for (int j = 0; j < i; j++) {
			const T *u = byoff[j];
			if (u->b > t[i].e || t[i].b > u->e)
				continue;
			int64_t gap = u->off - prev;
			if (gap >= t[i].sz && (best < 0 || gap < bestgap))
				best = prev, bestgap = gap;
			if (u->off + u->sz > prev)
				prev = u->off + u->sz;
		}
		t[i].off = best >= 0 ? best : prev;
		if (t[i].off + t[i].sz > top) {
			top = t[i].off + t[i].sz;
			*topi = i;
		}
		while (lo < hi) {       /* insert after every placed tensor at or below its offset */
			int mid = (lo + hi) / 2;
			if (byoff[mid]->off <= t[i].off)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(byoff + lo + 1, byoff + lo, (i - lo) * sizeof *byoff);
		byoff[lo] = &t[i];
	}
	free(byoff);
	return top;
}

static int64_t
roundup(int64_t x, int64_t a)
{
	return (x + a - 1) / a * a;
}

/* Is v a swap_home result, which is its decl's home and takes no bytes of its own? */
static int
is_home(const Func *f, int v)
{
	return f->val[v].def >= 0 && f->op[f->val[v].def].kind == OP_SWAPHOME;
}

/* The most bytes alive at once among t[0..n): no layout of them is smaller. */
static int64_t
alive(const T *t, int n, int nop)
{
	int64_t *d = xcalloc(nop + 2, sizeof *d), cur = 0, mx = 0;

	for (int i = 0; i < n; i++) {
		d[t[i].b] += t[i].sz;
		d[t[i].e + 1] -= t[i].sz;
	}
	for (int k = 0; k <= nop; k++) {
		cur += d[k];
		mx = cur > mx ? cur : mx;
	}
	free(d);
	return mx;
}

static unsigned
rnd(uint64_t *x, unsigned m)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((*x >> 33) % m);
}

/* The greedy's placement of best[0..n) (top bytes) is over goal: search orders near it,
 * deterministically. Short runs from each greedy order: move the tensor that set the top, or
 * another, to a random place in the order; keep a move that does not raise the top. Stops at
 * goal or after SEARCHWORK tensor pairs compared. Returns the top, best the order that has it. */
static int64_t
search(const T *t, int n, T *best, int64_t top, int64_t goal)
{
	enum { RUN = 300 };
	const double SEARCHWORK = 2e7;
	T *cur = xcalloc(n + 1, sizeof *cur), *try = xcalloc(n + 1, sizeof *try), *sw;
	uint64_t x = 1;
	double work = 0, each = (double)n * n / 2 + 1;

	for (int r = 0; top > goal && work + each <= SEARCHWORK; r++) {
		int64_t z;
		int ti;
		memcpy(cur, t, n * sizeof *t);
		order = r % NORDER;
		qsort(cur, n, sizeof *cur, cmp);
		z = place(cur, n, &ti);
		work += each;
		for (int it = 0; it < RUN && top > goal && work + each <= SEARCHWORK; it++) {
			int i = rnd(&x, 2) ? ti : (int)rnd(&x, n), j = (int)rnd(&x, n), tj;
			int64_t y;
			T m;
			memcpy(try, cur, n * sizeof *cur);
			m = try[i];
			if (j < i)
				memmove(try + j + 1, try + j, (i - j) * sizeof *try);
			else
				memmove(try + i, try + i + 1, (j - i) * sizeof *try);
			try[j] = m;
			y = place(try, n, &tj);
			work += each;
			if (y > z)
				continue;
			sw = cur, cur = try, try = sw;
			z = y, ti = tj;
			if (z < top) {
				top = z;
				memcpy(best, cur, n * sizeof *cur);
			}
		}
	}
	free(cur);
	free(try);
	return top;
}

/* Lay out the values of one zone (host or not) above base; returns the zone's top. */
static int64_t
zone(Func *f, const Live *l, int host, int64_t base, int64_t align, int64_t goal, int64_t *greedy)
{
	T *t = xcalloc(f->nval + 1, sizeof *t), *best = NULL;
	int n = 0, ti;
	int64_t top = 0;

	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		if (x->decl >= 0 || !!x->host != host || l->birth[v] > l->last[v] || is_home(f, v))
			continue;
		t[n].v = v;
		t[n].sz = roundup(type_bytes(&x->ty), align);
		t[n].b = l->birth[v];
		t[n].e = l->last[v];
		n++;
	}
	for (order = 0; order < (n > BIGZONE ? 2 : NORDER); order++) {
		int64_t z;
		qsort(t, n, sizeof *t, cmp);
		z = place(t, n, &ti);
		if (!best || z < top) {
			top = z;
			free(best);
			best = xcalloc(n + 1, sizeof *best);
			memcpy(best, t, n * sizeof *t);
		}
	}
	*greedy = base + top;
	/* over the goal where the bytes alive at once are not: worth a search (goal < 0: toward
	 * those bytes) */
	if (goal) {
		int64_t lo = base + alive(t, n, f->nop);
		goal = goal < 0 ? lo : goal;
		if (base + top > goal && lo <= goal)
			top = search(t, n, best, top, goal - base);
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
	layout_to(lay, f, l, align, 0);
}

void
layout_to(Layout *lay, Func *f, const Live *l, int64_t align, int64_t goal)
{
	int64_t p = 0, h = 0, g;

	if (align < 1 || (align & (align - 1)))
		die("alignment %lld is not a power of two", (long long)align);
	for (int v = 0; v < f->nval; v++)
		f->val[v].off = -1;
	/* module tensors: on the accelerator from 0, those living in host memory from 0 there */
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl >= 0) {
			int64_t *z = f->val[v].host ? &h : &p;
			f->val[v].off = *z;
			*z += roundup(type_bytes(&f->val[v].ty), align);
		}
	/* swap_home's result is its decl's home */
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_SWAPHOME)
			f->val[f->op[i].res].off = f->val[f->op[i].args[0]].off;
	lay->persist = p;
	lay->hpersist = h;
	lay->arena = zone(f, l, 0, p, align, goal, &lay->greedy);
	lay->host = zone(f, l, 1, h, align, 0, &g);
}

/* Does value v need bytes of a zone (accelerator or host) in f's current order? */
static int
placed(const Func *f, const Live *l, int v)
{
	return f->val[v].decl >= 0 || l->birth[v] <= l->last[v];
}

int
layout_given(const Func *f, const Live *l)
{
	int any = 0;

	for (int v = 0; v < f->nval; v++)
		if (placed(f, l, v)) {
			if (f->val[v].off < 0)
				return 0;
			any = 1;
		}
	return any;
}

typedef struct {
	int v;
	int64_t lo, hi;  /* bytes [lo, hi) */
} G;

static int
cmp_lo(const void *x, const void *y)
{
	const G *a = x, *b = y;
	return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : a->v - b->v;
}

int
layout_keep(Layout *lay, const Func *f, const Live *l, int64_t align, char *err, size_t nerr)
{
	G *g = xcalloc(f->nval + 1, sizeof *g);
	int64_t pz[2] = { 0, 0 }, top[2] = { 0, 0 }, p;
	int rc = 0;

	memset(lay, 0, sizeof *lay);
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl >= 0) {
			int64_t *z = &pz[!!f->val[v].host];
			if (f->val[v].off != *z) {
				snprintf(err, nerr, "%%%s is at=%lld, but module tensors sit in decl order "
				         "(expected at=%lld)", f->val[v].name, (long long)f->val[v].off, (long long)*z);
				free(g);
				return -1;
			}
			*z += roundup(type_bytes(&f->val[v].ty), align);
		}
	p = pz[0];
	lay->persist = top[0] = p;
	lay->hpersist = top[1] = pz[1];
	for (int v = 0; v < f->nval; v++)
		if (is_home(f, v) && f->val[v].off != f->val[f->op[f->val[v].def].args[0]].off) {
			snprintf(err, nerr, "%%%s is at=%lld, but a swap_home result sits at its decl's home",
			         f->val[v].name, (long long)f->val[v].off);
			free(g);
			return -1;
		}
	for (int host = 0; host < 2 && !rc; host++) {
		int n = 0;
		for (int v = 0; v < f->nval; v++) {
			const Value *x = &f->val[v];
			if (x->decl >= 0 || !!x->host != host || !placed(f, l, v) || is_home(f, v))
				continue;
			if (x->off % align || x->off < pz[host]) {
				snprintf(err, nerr, "%%%s at=%lld: %s", x->name, (long long)x->off,
				         x->off % align ? "not a multiple of the target's alignment" :
				         "inside the module tensors' zone");
				rc = -1;
				break;
			}
			g[n].v = v;
			g[n].lo = x->off;
			g[n].hi = x->off + roundup(type_bytes(&x->ty), align);
			if (g[n].hi > top[host])
				top[host] = g[n].hi;
			n++;
		}
		/* sorted by start, each value against those that start before its end */
		qsort(g, n, sizeof *g, cmp_lo);
		for (int i = 0; i < n && !rc; i++)
			for (int j = i + 1; j < n && g[j].lo < g[i].hi && !rc; j++) {
				int a = g[i].v, b = g[j].v;
				int from = l->birth[a] > l->birth[b] ? l->birth[a] : l->birth[b];
				int to = l->last[a] < l->last[b] ? l->last[a] : l->last[b];
				if (from <= to) {
					snprintf(err, nerr, "%%%s at=%lld and %%%s at=%lld share bytes while both are "
					         "live (op %d, %s)", f->val[a].name, (long long)f->val[a].off,
					         f->val[b].name, (long long)f->val[b].off, from,
					         from >= 0 && from < f->nop ? opinfo[f->op[from].kind].name : "entry");
					rc = -1;
				}
			}
	}
	free(g);
	lay->arena = lay->greedy = top[0];
	lay->host = top[1];
	return rc;
}
