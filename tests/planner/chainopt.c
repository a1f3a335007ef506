/* chainopt.c: the least recomputation of a chain under a budget, by a search written apart
 * from the planner's solvers, for the tests and the benchmark to hold them against.
 *
 * A chain: the forward values v_0 .. v_{N-1} (every recomputable op with bytes, the function
 * results excepted), each read in the forward only by the next (and, the last, by ops that
 * are not recomputed), each one read late (a candidate) in a window of the backward
 * [F_k, L_k], the windows in the reverse order of the values. A plan is Rotor's: the forward
 * keeps some values (none, possibly); each window is served by a value kept, or by a batch of recomputations
 * from the nearest value below it that is resident (the checkpoint), placed before any op of
 * the backward between the end of the window served before and the window's first use; the
 * batch keeps some of what it makes (each kept value is then a checkpoint for the windows
 * between it and the next one kept, and serves its own window), the rest dies as soon as the
 * next op of the batch has read it. Every instance lives from its op to its last read, as
 * liveness.c counts it, so the bytes at every op are exact sums: what no plan moves (the
 * unplanned profile less the late parts of the candidates), the values held, and the two
 * values a recomputation reads and writes. The search tries every such plan (memoised on the
 * bytes left to it): exact within this family, which tests/planner/chain-test.c holds against
 * an exhaustive search of every schedule on small chains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

typedef struct Ent {
	int64_t key[2];        /* (a, e, t) packed, and the bytes left; key[0] 0: empty */
	double cost;
	int j, r, t2;          /* the choice: first value kept (N: none, in the forward), the
	                        * last read it serves, the op before which the rest's batch runs */
} Ent;

typedef struct Ch {
	const Prob *p;
	int n, N;
	int *o;                /* op of chain value k */
	int ne, *ev, *ek;      /* the late reads (events): op, chain value; by op */
	int *qe;               /* last event of candidate k */
	int *qend;             /* qend[a + 1]: the last event of the candidates above v_a (-1) */
	int64_t *base;         /* bytes at each op that no plan moves */
	int lg;
	int64_t **rmq;
	Ent *tab;
	size_t cap, used;
} Ch;

static const double INF = 1e300;

static int64_t
rmax(const Ch *c, int lo, int hi)
{
	int k = 0;

	if (lo < 0)
		lo = 0;
	if (hi > c->n - 1)
		hi = c->n - 1;
	if (lo > hi)
		return 0;
	while ((2 << k) <= hi - lo + 1)
		k++;
	return c->rmq[k][lo] > c->rmq[k][hi - (1 << k) + 1] ? c->rmq[k][lo] : c->rmq[k][hi - (1 << k) + 1];
}

static int64_t sz(const Ch *c, int k) { return k >= 0 ? c->p->ab[c->o[k]] : 0; }
static int cand(const Ch *c, int k) { return k >= 0 && c->p->cand[c->o[k]]; }
/* bytes free before the recomputations placed at op t */
static int64_t bef(const Ch *c, int t) { return c->base[t] - c->p->ab[t]; }

static Ent *
slot(Ch *c, int a, int q, int t, int keep, int64_t avail, int make)
{
	int64_t k0 = (((((int64_t)a + 2) * (c->ne + 1) + q) * (c->n + 2) + (t + 1)) * 2 + keep) + 1;
	size_t h = (size_t)(k0 * 0x9E3779B97F4A7C15ull ^ (uint64_t)avail * 0xC2B2AE3D27D4EB4Full);

	if (make && 2 * (c->used + 1) > c->cap) {
		Ent *old = c->tab;
		size_t oc = c->cap;
		c->cap = c->cap ? 2 * c->cap : 1 << 16;
		c->tab = xcalloc(c->cap, sizeof *c->tab);
		c->used = 0;
		for (size_t i = 0; i < oc; i++)
			if (old[i].key[0]) {
				size_t g = (size_t)(old[i].key[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)old[i].key[1] * 0xC2B2AE3D27D4EB4Full);
				while (c->tab[g & (c->cap - 1)].key[0])
					g++;
				c->tab[g & (c->cap - 1)] = old[i];
				c->used++;
			}
		free(old);
	}
	if (!c->cap)
		return NULL;
	for (;; h++) {
		Ent *x = &c->tab[h & (c->cap - 1)];
		if (!x->key[0]) {
			if (!make)
				return NULL;
			x->key[0] = k0;
			x->key[1] = avail;
			c->used++;
			return x;
		}
		if (x->key[0] == k0 && x->key[1] == avail)
			return x;
	}
}

/* The best batch from v_a for the late reads from event q on, placed before an op after op
 * `end` (the last read served before): the op in *t2; INF if none fits. */
static double best(Ch *, int a, int q, int t, int keep, int64_t avail);

static double
gap(Ch *c, int a, int q, int end, int keep, int64_t avail, int *t2)
{
	double s = INF;

	for (int u = end + 1; u <= c->ev[q]; u++) {
		double v;
		if (rmax(c, end + 1, u - 1) + sz(c, a) > avail)
			break;
		v = best(c, a, q, u, keep, avail);
		if (v < s)
			s = v, *t2 = u;
	}
	return s;
}

/* The least recomputation time serving the late reads (events) from q on of the candidates
 * above v_a, v_a resident (a = -1: the step's input) and counted here while it is (keep: it
 * stays after, to serve reads of its own), every op within avail bytes over what no plan
 * moves; t: the op before which the batch runs (-1: the forward, the first pass). INF if
 * none fits. A kept value serves its reads up to some r and is let go; the rest come from v_a
 * again. */
static double
best(Ch *c, int a, int q, int t, int keep, int64_t avail)
{
	const Prob *p = c->p;
	Ent *x = slot(c, a, q, t, keep, avail, 0);
	double res = INF, tr = 0;
	int bj = -1, br = -1, bt = -1, e = c->ek[q], qa = c->qend[a + 1];
	int64_t sa = sz(c, a), pair = 0;

	if (x)
		return x->cost;
	for (int j = a + 1; j <= e; j++) {
		int okb[2], qj = j < e ? c->qend[j + 1] : q - 1, rhi = j == e || cand(c, j) ? c->qe[j] : qj;
		if (t >= 0) {
			/* the batch: op k reads v_{k-1} and writes v_k; v_a stays if needed later */
			if (t >= p->clob[c->o[j]])
				break;
			tr += p->t[c->o[j]];
			if (j > a + 1 && sz(c, j - 1) + sz(c, j) > pair)
				pair = sz(c, j - 1) + sz(c, j);
			for (int h = 0; h < 2; h++)
				okb[h] = bef(c, t) + sa + sz(c, a + 1) <= avail &&
				         (j == a + 1 || bef(c, t) + (h ? sa : 0) + pair <= avail);
		} else {
			/* the forward from v_a to v_j: v_a is held past its last early read */
			int le = a >= 0 ? p->lastearly[c->o[a]] : -1;
			for (int h = 0; h < 2; h++)
				okb[h] = rmax(c, a >= 0 ? c->o[a] + 1 : 0, c->o[j]) <= avail &&
				         rmax(c, le + 1, c->o[j]) + (h ? sa : 0) <= avail;
		}
		/* v_j serves its own reads up to r (none: r = qj; j = e: from q) */
		for (int r = j == e ? q : qj; r <= rhi; r++) {
			int rest = r + 1 <= qa, ha = a >= 0 && (keep || rest), t2 = -1, end;
			int64_t hold = ha ? sa : 0;
			double sub = 0;
			if (!okb[ha])
				continue;
			if (j == e) {
				int from = t >= 0 ? t : p->lastearly[c->o[e]] + 1;
				if (t < 0 && rmax(c, c->o[e] + 1, from - 1) + hold > avail)
					continue;
				if (rmax(c, from, c->ev[r]) + sz(c, e) + hold > avail)
					continue;
				end = c->ev[r];
			} else {
				sub = best(c, j, q, t, r > qj, avail - hold);
				if (sub >= INF)
					continue;
				end = c->ev[qj];
				if (r > qj) {
					if (rmax(c, end + 1, c->ev[r]) + sz(c, j) + hold > avail)
						continue;
					end = c->ev[r];
				}
			}
			if (rest) {
				double s2 = gap(c, a, r + 1, end, keep, avail, &t2);
				if (s2 >= INF)
					continue;
				sub += s2;
			}
			if ((t >= 0 ? tr : 0) + sub < res)
				res = (t >= 0 ? tr : 0) + sub, bj = j, br = r, bt = t2;
		}
	}
	if (t < 0) {
		/* the forward keeps nothing more: every read above v_a by batches from it, the
		 * first after the forward */
		int last = c->o[c->N - 1], le = a >= 0 ? p->lastearly[c->o[a]] : -1;
		for (int u = last + 1; u <= c->ev[q]; u++) {
			double v;
			if (rmax(c, a >= 0 ? c->o[a] + 1 : 0, u - 1) > avail || rmax(c, le + 1, u - 1) + sa > avail)
				break;
			v = best(c, a, q, u, keep, avail);
			if (v < res)
				res = v, bj = c->N, bt = u;
		}
	}
	x = slot(c, a, q, t, keep, avail, 1);
	x->cost = res;
	x->j = bj;
	x->r = br;
	x->t2 = bt;
	return res;
}

/* Write the recomputations of best(a, q, t, keep, avail)'s plan into pl. */
static void
emit(Ch *c, int a, int q, int t, int keep, int64_t avail, Plan *pl)
{
	Ent *x = slot(c, a, q, t, keep, avail, 0);
	int j, rest, ha;

	if (!x || x->j < 0)
		die("chainopt: no plan recorded");
	j = x->j;
	if (j == c->N) {
		emit(c, a, q, x->t2, keep, avail, pl);
		return;
	}
	rest = x->r + 1 <= c->qend[a + 1];
	ha = a >= 0 && (keep || rest);
	for (int k = a + 1; t >= 0 && k <= j; k++)
		pl->rec[(size_t)t * c->n + c->o[k]] = 1;
	if (j < c->ek[q])
		emit(c, j, q, t, x->r > (j < c->ek[q] ? c->qend[j + 1] : q - 1), avail - (ha ? sz(c, a) : 0), pl);
	if (rest)
		emit(c, a, x->r + 1, x->t2, keep, avail, pl);
}

int
chain_check(const Prob *p, char *why, size_t nwhy)
{
	int prev = -1, prevc = -1;

	for (int i = 0; i < p->n; i++) {
		if (!p->fwd[i] || p->isres[i] || p->b[i] == 0)
			continue;
		if (p->ndep[i] != (prev >= 0) || (prev >= 0 && p->dep[i][0] != prev)) {
			snprintf(why, nwhy, "op %d reads more than the value before it", i);
			return -1;
		}
		if (prev >= 0 && p->lastearly[prev] != i) {
			snprintf(why, nwhy, "op %d is read early after the next op", prev);
			return -1;
		}
		if (p->cand[i]) {
			if (prevc >= 0 && p->lastuse[i] >= p->split[prevc]) {
				snprintf(why, nwhy, "the late reads of op %d overlap those of op %d", i, prevc);
				return -1;
			}
			prevc = i;
		}
		prev = i;
	}
	return 0;
}

double
chain_opt(const Prob *p, int64_t budget, Plan *pl)
{
	Ch c;
	int64_t acc = 0, *d;
	double r;
	char why[128];

	if (chain_check(p, why, sizeof why))
		die("chain_opt: not a chain: %s", why);
	memset(&c, 0, sizeof c);
	c.p = p;
	c.n = p->n;
	c.o = xmalloc((p->n + 1) * sizeof *c.o);
	for (int i = 0; i < p->n; i++)
		if (p->fwd[i] && !p->isres[i] && p->b[i] > 0)
			c.o[c.N++] = i;
	/* the late reads, by op: the candidates' in the reverse order of the chain */
	c.ev = xmalloc((p->n + 1) * sizeof *c.ev);
	c.ek = xmalloc((p->n + 1) * sizeof *c.ek);
	c.qe = xmalloc((c.N + 1) * sizeof *c.qe);
	c.qend = xmalloc((c.N + 2) * sizeof *c.qend);
	for (int k = c.N - 1; k >= 0; k--) {
		c.qe[k] = c.ne - 1;
		for (int u = 0; cand(&c, k) && u < p->nuse[c.o[k]]; u++)
			if (p->use[c.o[k]][u] >= p->split[c.o[k]]) {
				c.ev[c.ne] = p->use[c.o[k]][u];
				c.ek[c.ne++] = k;
				c.qe[k] = c.ne - 1;
			}
	}
	c.qend[c.N] = -1;
	for (int k = c.N - 1; k >= 0; k--)
		c.qend[k] = cand(&c, k) ? c.qe[k] : c.qend[k + 1];
	/* what no plan moves: the profile less every candidate's late part */
	d = xcalloc(p->n + 2, sizeof *d);
	for (int k = 0; k < c.N; k++)
		if (cand(&c, k)) {
			d[p->lastearly[c.o[k]] + 1] += sz(&c, k);
			d[p->lastuse[c.o[k]] + 1] -= sz(&c, k);
		}
	c.base = xmalloc((p->n + 1) * sizeof *c.base);
	for (int t = 0; t < p->n; t++)
		c.base[t] = p->aprof[t] - (acc += d[t]);
	free(d);
	for (c.lg = 1; (1 << c.lg) <= p->n; c.lg++)
		;
	c.rmq = xcalloc(c.lg + 1, sizeof *c.rmq);
	for (int k = 0; k <= c.lg; k++) {
		c.rmq[k] = xmalloc((p->n + 1) * sizeof **c.rmq);
		for (int i = 0; i + (1 << k) <= p->n; i++)
			c.rmq[k][i] = k == 0 ? c.base[i] : c.rmq[k - 1][i] > c.rmq[k - 1][i + (1 << (k - 1))] ?
			              c.rmq[k - 1][i] : c.rmq[k - 1][i + (1 << (k - 1))];
	}
	if (c.ne == 0)
		r = rmax(&c, 0, p->n - 1) <= budget ? 0 : -1;
	else {
		r = best(&c, -1, 0, -1, 0, budget);
		/* after the last read, what no plan moves */
		if (r >= INF || rmax(&c, c.ev[c.ne - 1] + 1, p->n - 1) > budget)
			r = -1;
		else if (pl) {
			memset(pl->rec, 0, (size_t)p->n * p->n + 1);
			pl->nsw = 0;
			emit(&c, -1, 0, -1, 0, budget, pl);
		}
	}
	for (int k = 0; k <= c.lg; k++)
		free(c.rmq[k]);
	free(c.rmq); free(c.base); free(c.o); free(c.ev); free(c.ek); free(c.qe); free(c.qend); free(c.tab);
	return r;
}

int64_t
chain_floor(const Prob *p, int64_t hi, int64_t align)
{
	int64_t lo = 0;

	while (hi - lo > align) {
		int64_t mid = (lo + hi) / 2 / align * align;
		if (chain_opt(p, mid, NULL) >= 0)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}
