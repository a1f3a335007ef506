/* deps.c: the dependence DAG of a function's ops, as instruction schedulers build it.
 *
 * needs: f in execution order (memory dependences point the way the current order runs);
 * the duration of every op (Cost.dur) for latencies; after layout, Live and Value.off.
 * fills: Dag: RAW edges from SSA operands, and from the wait on a copy to the other users of
 * the copy's result; through module tensors that optimizer updates mutate, RAW/WAR/WAW edges
 * between the mutation and the other accesses; with a layout,
 * WAR/WAW edges between the ops of tensors that share arena (or host-zone) bytes at
 * different times, so no op overwrites bytes an earlier op still reads. Transitively implied
 * arena edges are left out. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

const char *const dep_name[] = { "RAW", "WAR", "WAW" };

typedef struct {
	Dag *d;
	int cap;
	const double *dur;
} B;

static void
edge(B *b, int from, int to, DepKind k, int arena)
{
	Edge *e;

	if (from == to)
		return;
	if (from > to)
		die("dependence %d -> %d runs against the op order", from, to);
	if (b->d->ne == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->d->e = xrealloc(b->d->e, b->cap * sizeof *b->d->e);
	}
	e = &b->d->e[b->d->ne++];
	e->from = from;
	e->to = to;
	e->kind = k;
	e->arena = arena;
	e->lat = b->dur ? b->dur[from] : 0;
}

/* Does op i write (mutate) value v? */
static int
writes(const Func *f, int i, int v)
{
	const Op *op = &f->op[i];
	for (int k = 0; k < opinfo[op->kind].nwritten && k < op->nargs; k++)
		if (op->args[k] == v)
			return 1;
	return 0;
}

/* Memory dependences through one module tensor: a write depends on the reads since the last
 * write (WAR) or on that write (WAW); a read on the last write (RAW). */
static void
decl_edges(B *b, const Func *f, int v, const int *users, int nu)
{
	int lastw = -1, from = 0;

	for (int u = 0; u < nu; u++) {
		int i = users[u];
		if (!writes(f, i, v)) {
			if (lastw >= 0)
				edge(b, lastw, i, D_RAW, 0);
			continue;
		}
		if (lastw >= 0)
			edge(b, lastw, i, D_WAW, 0);
		for (int r = from; r < u; r++)
			if (users[r] != lastw)
				edge(b, users[r], i, D_WAR, 0);
		lastw = i;
		from = u + 1;
	}
}

typedef struct { int v; int64_t lo, hi; } Blk;

static int
bybirth(const void *a, const void *b, void *lv)
{
	const Live *l = lv;
	int x = l->birth[((const Blk *)a)->v], y = l->birth[((const Blk *)b)->v];
	return (x > y) - (x < y);
}

/* Ops that read v: its users, plus the op that ends its life (a wait on its copy). */
static void
reader_edges(B *b, const Live *l, int v, int to, int *const *use, const int *nuse)
{
	for (int k = 0; k < nuse[v]; k++)
		edge(b, use[v][k], to, D_WAR, 1);
	if (l->last[v] > l->birth[v] && l->last[v] < l->nop)
		edge(b, l->last[v], to, D_WAR, 1);
}

/* Candidates by death, latest first (arena_edges' sweep). */
static int
bydeath(const void *a, const void *b, void *lv)
{
	const Live *l = lv;
	int x = l->last[((const Blk *)a)->v], y = l->last[((const Blk *)b)->v];
	return (x < y) - (x > y);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Tensors in one zone that share bytes at different times. For b, a tensor a that died
 * before b is born and overlaps it needs edges unless a later such tensor c, itself after a,
 * covers the shared bytes: then a -> c -> b already orders them.
 * Whether some c covers a is found in O(log n), not by trying every c (cubic: 24 s for a
 * 1000-layer mlp, minutes for 4000): the candidates, latest death first, admit every c born
 * after that death into a Fenwick tree over the c's low byte that keeps the highest high
 * byte; a is covered if some admitted c starting at or below the shared bytes' start reaches
 * their end. */
static void
arena_edges(B *b, const Func *f, const Live *l, int host, int *const *use, const int *nuse)
{
	Blk *t = xcalloc(f->nval + 1, sizeof *t), *c, *byd;
	int64_t *los, *fen;
	int n = 0, nc;

	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		int64_t sz = type_bytes(&x->ty);
		if (x->decl >= 0 || x->off < 0 || !!x->host != host || sz == 0)
			continue;
		t[n].v = v;
		t[n].lo = x->off;
		t[n].hi = x->off + sz;
		n++;
	}
	qsort_r(t, n, sizeof *t, bybirth, (void *)l);
	c = xcalloc(n + 1, sizeof *c);
	byd = xcalloc(n + 1, sizeof *byd);
	los = xcalloc(n + 1, sizeof *los);
	fen = xcalloc(n + 2, sizeof *fen);
	for (int j = 0; j < n; j++) {
		int bv = t[j].v, nl = 0, p;
		nc = 0;
		for (int i = 0; i < j; i++)
			if (l->last[t[i].v] < l->birth[bv] && t[i].lo < t[j].hi && t[j].lo < t[i].hi)
				c[nc++] = t[i];         /* in birth order */
		if (!nc)
			continue;
		for (int i = 0; i < nc; i++)
			los[i] = c[i].lo;
		qsort(los, nc, sizeof *los, cmp64);
		for (int i = 0; i < nc; i++)
			if (!nl || los[nl - 1] != los[i])
				los[nl++] = los[i];
		for (int i = 0; i <= nl; i++)
			fen[i] = INT64_MIN;
		memcpy(byd, c, nc * sizeof *c);
		qsort_r(byd, nc, sizeof *byd, bydeath, (void *)l);
		p = nc - 1;
		for (int i = 0; i < nc; i++) {
			int av = byd[i].v, r;
			int64_t lo = byd[i].lo > t[j].lo ? byd[i].lo : t[j].lo;
			int64_t hi = byd[i].hi < t[j].hi ? byd[i].hi : t[j].hi, top = INT64_MIN;
			for (; p >= 0 && l->birth[c[p].v] > l->last[av]; p--) {
				int lo_ = 0, hi_ = nl;      /* rank of c[p].lo: 1-based */
				while (lo_ < hi_) {
					int m = (lo_ + hi_) / 2;
					if (los[m] < c[p].lo)
						lo_ = m + 1;
					else
						hi_ = m;
				}
				for (r = lo_ + 1; r <= nl; r += r & -r)
					if (fen[r] < c[p].hi)
						fen[r] = c[p].hi;
			}
			{
				int lo_ = 0, hi_ = nl;      /* candidates with lo <= the shared start */
				while (lo_ < hi_) {
					int m = (lo_ + hi_) / 2;
					if (los[m] <= lo)
						lo_ = m + 1;
					else
						hi_ = m;
				}
				for (r = lo_; r > 0; r -= r & -r)
					if (top < fen[r])
						top = fen[r];
			}
			if (top >= hi)
				continue;
			/* the readers of a follow its producer, so edges from them imply the WAW */
			if (l->last[av] == l->birth[av])
				edge(b, l->birth[av], l->birth[bv], D_WAW, 1);
			else
				reader_edges(b, l, av, l->birth[bv], use, nuse);
		}
	}
	free(fen);
	free(los);
	free(byd);
	free(c);
	free(t);
}

static int
byto(const void *a, const void *b)
{
	const Edge *x = a, *y = b;
	if (x->to != y->to)
		return (x->to > y->to) - (x->to < y->to);
	if (x->from != y->from)
		return (x->from > y->from) - (x->from < y->from);
	if (x->kind != y->kind)
		return (x->kind > y->kind) - (x->kind < y->kind);
	return x->arena - y->arena;
}

void
dag_build(Dag *d, const Func *f, const Live *l, const double *dur)
{
	B b = { d, 0, dur };
	int **use = xcalloc(f->nval + 1, sizeof *use), *nuse = xcalloc(f->nval + 1, sizeof *nuse);
	int ne = 0;

	memset(d, 0, sizeof *d);
	d->nop = f->nop;
	/* users of every value, in op order, each op once */
	for (int i = 0; i < f->nop; i++)
		for (int k = 0; k < f->op[i].nargs; k++) {
			int a = f->op[i].args[k];
			if (nuse[a] && use[a][nuse[a] - 1] == i)
				continue;
			use[a] = xrealloc(use[a], (nuse[a] + 1) * sizeof **use);
			use[a][nuse[a]++] = i;
		}
	for (int i = 0; i < f->nop; i++)
		for (int k = 0; k < f->op[i].nargs; k++) {
			int dv = f->val[f->op[i].args[k]].def;
			if (dv >= 0)
				edge(&b, dv, i, D_RAW, 0);
		}
	/* A copy's result is usable once waited on: its other users follow the wait. */
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_WAIT) {
			int s = f->op[i].args[0];
			for (int u = 0; u < nuse[s]; u++)
				if (use[s][u] > i)
					edge(&b, i, use[s][u], D_RAW, 0);
		}
	/* module tensors, and the copies of host-homed state an update writes in place */
	for (int v = 0; v < f->nval; v++) {
		int w = 0;
		for (int u = 0; u < nuse[v] && !w; u++)
			w = writes(f, use[v][u], v);
		if (w)
			decl_edges(&b, f, v, use[v], nuse[v]);
	}
	if (l) {
		arena_edges(&b, f, l, 0, use, nuse);
		arena_edges(&b, f, l, 1, use, nuse);
	}
	/* one edge per pair of ops: the first kind (RAW, then WAR, then WAW), SSA before arena */
	if (d->ne)           /* d->e is NULL without edges; qsort wants a pointer */
		qsort(d->e, d->ne, sizeof *d->e, byto);
	for (int i = 0; i < d->ne; i++)
		if (!ne || d->e[ne - 1].from != d->e[i].from || d->e[ne - 1].to != d->e[i].to)
			d->e[ne++] = d->e[i];
	d->ne = ne;
	d->in = xcalloc(f->nop + 2, sizeof *d->in);
	for (int i = 0; i < d->ne; i++)
		d->in[d->e[i].to + 1]++;
	for (int i = 0; i < f->nop; i++)
		d->in[i + 1] += d->in[i];
	for (int v = 0; v < f->nval; v++)
		free(use[v]);
	free(use);
	free(nuse);
}

void
dag_free(Dag *d)
{
	free(d->e);
	free(d->in);
	memset(d, 0, sizeof *d);
}
