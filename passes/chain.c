/* chain.c: tso's exact dynamic program on the forward as a chain of stages (Rotor's, complete).
 *
 * needs: a Prob, the forward's segments (segments.c), the values tso decides outside (glong)
 *        and the bytes at each op that no decision here moves (base).
 * fills: for a budget, the recomputations of the cheapest plan whose bytes, counted op by op
 *        as liveness.c counts them, stay within it; or nothing (-1).
 *
 * The forward is cut into stages at the segments' cuts that no long-lived value crosses
 * (stages whose late reads interleave are merged), so one value (the checkpoint) crosses
 * into each. The late reads of a stage's candidates (its events) come in the reverse order of
 * the stages. A plan keeps some stages in the forward (their candidates, and the value out as a
 * checkpoint) or only their value out, or nothing more; every event not served by a kept
 * value is served by a batch of recomputations, placed before an op between the event before
 * it and itself (the op where the fewest bytes are live), from the nearest checkpoint below:
 * the batch again keeps stages or checkpoints, nested as deep as the budget needs; a kept
 * stage serves its events up to one, and the rest come from its checkpoint again. For each
 * choice of checkpoint, first event to serve and op of the batch, the DP keeps the whole
 * Pareto front of (bytes needed, seconds of recomputation), built from the shorter ones; the
 * bytes are exact: what no plan moves, the values held, and what a recomputation holds at
 * once (its input until its last read there, the values of the stage it runs still to be
 * read). On a chain of ops this is the optimum over every schedule (tests/planner/chain-test.c
 * holds it against an exhaustive search and against chainopt.c, written apart). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { FMAX = 128 };           /* the most entries a front keeps (thinned evenly beyond) */
enum { NSFULL = 120 };         /* the longest chain of stages any of whose values out may be
                                * a checkpoint */
#define WORK 4e5               /* stages squared times events beyond which checkpoints thin */
enum { VOUT, VKS, VALL };      /* what a recomputation of a stage makes: its value out, its
                                * candidates, both */
enum { B_KEEP, B_CK, B_NONE, B_GAP };  /* how an entry was made (back pointers) */

typedef struct St {
	int lo, hi;            /* fops[lo..hi) */
	int first, last;       /* its ops in the step (the forward from its first op to the next's) */
	int c;                 /* the value out (the next stage's checkpoint), -1: none */
	int64_t cb;            /* its bytes */
	int outc;              /* it is one of the stage's candidates */
	int ck;                /* the value out may be a checkpoint */
	int64_t ob;            /* bytes of the other candidates */
	int64_t ks;            /* bytes of every candidate */
	double tv[3];          /* seconds to recompute it, by what it makes (VOUT, VKS, VALL) */
	int64_t xv[3];         /* the most bytes that recomputation holds at once, its input aside */
	int64_t xi[3];         /* the same while its input is still read (to its last reader) */
	int clv[3];            /* the first op before which it can no longer be recomputed */
	int qs, qe;            /* its events (qs > qe: none) */
} St;

typedef struct Ent {
	int64_t need;
	double cost;
	int bp;
} Ent;

typedef struct Bp {
	int8_t kind;
	int j, r, t2;          /* first stage kept, last event it serves, op of the next batch */
	int ci, gi;            /* entries of the part above j and of the rest (-1: none) */
} Bp;

typedef struct Fr {
	int off, n;            /* entries pool[off .. off + n); n < 0: not computed */
} Fr;

struct Chain {
	const Prob *p;
	int n, ns, ne;
	St *s;
	int *evf, *ev, *ek;    /* events: the ops (first, last: reads of one stage's values that
	                        * are best served by one instance), the stage; by op */
	int *qend;             /* qend[a + 1]: the last event of the stages above a (-1: none) */
	int *tq, *ntq;         /* tq[q * TQ ..]: the ops a batch for event q may run before */
	int64_t *base, **rmq;
	int lg, lastf;
	int hold;              /* every recomputed stage's input counted to its end (sx) */
	int64_t bmax;          /* entries needing more are dropped */
	double ub;             /* and those costing more (< 0: none) */
	Ent *pool;
	Bp *bp;
	int np, capp, nbp, capb;
	Fr *f, *g, *top;       /* fronts: F(a, q, t, keep), G(a, q, keep), Top(a, keep) */
	struct Cand *tmp, *mrg;/* fronts being built, a stack of them; scratch of merge */
	int ntmp, captmp, capm;
	int *fops;             /* the forward ops (segments.c's) */
	ChWhy *seenw;          /* while walking for chain_warm: the choices met */
	int nw, capw;
	uint8_t *kset;         /* the candidates decided here */
	uint8_t *need[3];      /* by index into fops: recomputed by each kind of recomputation */
};

enum { TQ = 2 };               /* the ops tried for a batch */

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t
rmax(const Chain *c, int lo, int hi)
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
	return max64(c->rmq[k][lo], c->rmq[k][hi - (1 << k) + 1]);
}

/* bytes live before the recomputations placed before op t, of what no decision moves */
static int64_t bef(const Chain *c, int t) { return c->base[t] - c->p->ab[t]; }
static int64_t cbk(const Chain *c, int a) { return a >= 0 ? c->s[a].cb : 0; }
/* The most bytes recomputation v of stage j holds at once, its input (the value out of j - 1)
 * counted until its last read there, or throughout where the plan holds it after (held). */
static int64_t
sx(const Chain *c, int j, int v, int held)
{
	const St *s = &c->s[j];
	return held || c->hold ? cbk(c, j - 1) + s->xv[v] : max64(cbk(c, j - 1) + s->xi[v], s->xv[v]);
}

/* ---------- fronts ---------- */

/* A candidate entry while a front is built: tmp[mark ..] holds the front built so far. */
typedef struct Cand {
	int64_t need;
	double cost;
	Bp b;
} Cand;

/* Merge the candidates tmp[s0 ..] (need ascending, cost descending) into the front
 * tmp[mark .. s0): what stays is cheaper than everything needing no more. */
static void
merge(Chain *c, int mark, int s0)
{
	Cand *a = c->tmp + mark, *b = c->tmp + s0;
	int na = s0 - mark, nb = c->ntmp - s0, i = 0, j = 0, k = 0;

	if (c->capm < na + nb) {
		c->capm = 2 * (na + nb);
		c->mrg = xrealloc(c->mrg, c->capm * sizeof *c->mrg);
	}
	while (i < na || j < nb) {
		const Cand *x = j >= nb || (i < na && (a[i].need < b[j].need ||
		                (a[i].need == b[j].need && a[i].cost <= b[j].cost))) ? &a[i++] : &b[j++];
		if (k == 0 || x->cost < c->mrg[k - 1].cost)
			c->mrg[k++] = *x;
	}
	memcpy(a, c->mrg, k * sizeof *a);
	c->ntmp = mark + k;
}

static void
cand_add(Chain *c, int64_t need, double cost, Bp b)
{
	if (c->ntmp == c->captmp) {
		c->captmp = c->captmp ? 2 * c->captmp : 1024;
		c->tmp = xrealloc(c->tmp, c->captmp * sizeof *c->tmp);
	}
	c->tmp[c->ntmp++] = (Cand){ need, cost, b };
}

/* The front tmp[mark ..] into the pool, thinned to FMAX entries evenly; tmp cut back. */
static Fr
front_make(Chain *c, int mark)
{
	int k = c->ntmp - mark;
	const Cand *e = k > 0 ? c->tmp + mark : NULL;   /* tmp is NULL before the first entry */
	Fr fr;

	if (c->np + FMAX + 1 > c->capp) {
		c->capp = c->capp ? 2 * c->capp + FMAX : 4096;
		c->pool = xrealloc(c->pool, c->capp * sizeof *c->pool);
	}
	if (c->nbp + FMAX + 1 > c->capb) {
		c->capb = c->capb ? 2 * c->capb + FMAX : 4096;
		c->bp = xrealloc(c->bp, c->capb * sizeof *c->bp);
	}
	fr.off = c->np;
	fr.n = k <= FMAX ? k : FMAX;
	for (int i = 0; i < fr.n; i++) {
		const Cand *x = &e[k <= FMAX ? i : (int)((long)i * (k - 1) / (FMAX - 1))];
		c->bp[c->nbp] = x->b;
		c->pool[c->np++] = (Ent){ x->need, x->cost, c->nbp++ };
	}
	c->ntmp = mark;
	return fr;
}

/* Into the front at tmp[mark ..], every pair from fronts x and y (NULL: nothing to combine):
 * need max(k0, x.need + hx, y.need), cost c0 + both; those needing more than bmax left out. */
static void
combine(Chain *c, int mark, int64_t k0, double c0, const Fr *x, int64_t hx, const Fr *y, Bp b)
{
	int nx = x ? x->n : 1, ny = y ? y->n : 1, i = 0, jy = 0, s0 = c->ntmp, at = mark - 1;
	double least;

	if (nx <= 0 || ny <= 0 || k0 > c->bmax)
		return;
	least = c0 + (x ? c->pool[x->off + nx - 1].cost : 0) + (y ? c->pool[y->off + ny - 1].cost : 0);
	if (c->ub >= 0 && least > c->ub)
		return;
	/* walk the need levels upward: at each, the cheapest of each front within it */
	for (;;) {
		const Ent *ex = x ? &c->pool[x->off + i] : NULL, *ey = y ? &c->pool[y->off + jy] : NULL;
		int64_t nd = max64(k0, max64(ex ? ex->need + hx : 0, ey ? ey->need : 0));
		if (nd > c->bmax)
			break;
		double cost = c0 + (ex ? ex->cost : 0) + (ey ? ey->cost : 0);
		/* left out if the front so far has one needing no more at no more cost; once it
		 * has one as cheap as the cheapest of these, so are all the rest */
		while (at + 1 < s0 && c->tmp[at + 1].need <= nd)
			at++;
		if (at >= mark && c->tmp[at].cost <= least)
			break;
		if ((at < mark || c->tmp[at].cost > cost) && (c->ub < 0 || cost <= c->ub)) {
			b.ci = ex ? x->off + i : -1;
			b.gi = ey ? y->off + jy : -1;
			cand_add(c, nd, cost, b);
		}
		/* advance the front whose next entry needs less */
		if (i + 1 < nx && (jy + 1 >= ny || c->pool[x->off + i + 1].need + hx <= c->pool[y->off + jy + 1].need))
			i++;
		else if (jy + 1 < ny)
			jy++;
		else
			break;
	}
	if (c->ntmp > s0)
		merge(c, mark, s0);
}

/* ---------- the DP ---------- */

/* The most bytes at an op of stage j in the forward with its candidates kept: what no
 * decision moves, each candidate past its last early read, hb past op le. */
static int64_t
own_fwd(const Chain *c, int j, int le, int64_t hb)
{
	const St *sj = &c->s[j];
	int64_t pk = 0;

	for (int o = sj->first; o <= sj->last; o++) {
		int64_t x = c->base[o] + (o > le ? hb : 0);
		for (int k = sj->lo; k < sj->hi; k++) {
			int i = c->fops[k];
			if (c->kset[i] && i != sj->c && c->p->lastearly[i] < o)
				x += c->p->ab[i];
		}
		pk = max64(pk, x);
	}
	return pk;
}

static Fr *fr_f(Chain *c, int a, int q, int ti, int keep)
{
	return &c->f[(((size_t)q * (c->ns + 1) + (a + 1)) * TQ + ti) * 2 + keep];
}

/* One choice of a node of the recursion: the bytes it needs itself (k0), its seconds of
 * recomputation, the F node below it (fq < 0: none; hx bytes held across it) and the G node
 * after it (gq < 0: none). F builds its front from these, chain_model its columns. */
typedef struct Choice {
	Bp b;
	int64_t k0, hx;
	double cost;
	int fa, fq, fti, fkeep;
	int gq, gkeep;
} Choice;

typedef struct Chs {
	Choice *v;
	int n, cap;
} Chs;

static void
ch_add(Chs *x, Choice ch)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->v = xrealloc(x->v, x->cap * sizeof *x->v);
	}
	x->v[x->n++] = ch;
}

/* The choices of G(a, q, keep): the batch from a's checkpoint for events q.. at its best op
 * after the event before q, the checkpoint held in between. */
static void
choices_g(Chain *c, int a, int q, int keep, Chs *out)
{
	for (int ti = 0; ti < c->ntq[q]; ti++) {
		int t = c->tq[q * TQ + ti];
		int64_t gapn = rmax(c, c->ev[q - 1] + 1, t - 1) + cbk(c, a);
		ch_add(out, (Choice){ { B_GAP, -1, -1, t, -1, -1 }, gapn, 0, 0, a, q, ti, keep, -1, 0 });
	}
}

/* The choices of F(a, q, ti, keep): serving events q.. of the stages above a from a's
 * checkpoint, a batch before op t (ti: its index in tq[q], -1: the forward, the first pass),
 * the checkpoint counted while it is live (keep: it stays after, for reads of its own).
 * Those past a batch needing more than bmax are left out. */
static void
choices_f(Chain *c, int a, int q, int ti, int keep, Chs *out)
{
	const Prob *p = c->p;
	int t = ti >= 0 ? c->tq[q * TQ + ti] : -1, e = c->ek[q], qa = c->qend[a + 1];
	int64_t ca = cbk(c, a), pair = 0;
	double tr = 0;
	int le = a >= 0 && c->s[a].c >= 0 ? p->lastearly[c->s[a].c] : -1;

	for (int j = a + 1, stop = 0; j <= e && !stop; j++) {
		St *sj = &c->s[j];
		int qj = j < e ? c->qend[j + 1] : q - 1;
		if (t >= 0) {
			if (j > a + 1) {
				const St *sp = &c->s[j - 1];
				if (t >= sp->clv[VOUT])
					break;
				tr += sp->tv[VOUT];
				if (j - 1 > a + 1)
					pair = max64(pair, sx(c, j - 1, VOUT, 0));
			}
		}
		for (int v = VOUT; v <= VALL; v++) {
			/* VOUT: j's value out a checkpoint only (j < e); VKS: j kept, the top (j = e);
			 * VALL: j kept with its checkpoint (j < e, j has events) */
			int rlo, rhi;
			int64_t bn[2];
			double trj;
			if ((v == VKS) != (j == e) || (v == VALL && sj->qs > sj->qe))
				continue;
			if (v != VKS && !sj->ck)
				continue;
			rlo = v == VKS ? q : v == VALL ? sj->qs : qj;
			rhi = v == VOUT ? qj : sj->qe;
			/* the batch (or the forward) up to j, with and without the checkpoint held */
			if (t >= 0) {
				if (t >= sj->clv[v])
					continue;
				trj = tr + sj->tv[v];
				/* a's checkpoint, the input of stage a + 1, held after or not (h) */
				for (int h = 0; h < 2; h++) {
					int64_t hb = h ? ca : 0;
					if (j == a + 1)
						bn[h] = bef(c, t) + sx(c, j, v, h);
					else
						bn[h] = bef(c, t) + max64(sx(c, a + 1, VOUT, h), hb + max64(pair, sx(c, j, v, 0)));
				}
			} else {
				/* the forward: a's checkpoint held past its last early read; j's candidates
				 * past theirs if j is kept */
				int lo = a >= 0 ? c->s[a + 1].first : 0, mid = sj->first - 1;
				trj = 0;
				for (int h = 0; h < 2; h++) {
					int64_t hb = h ? ca : 0;
					bn[h] = max64(rmax(c, lo, mid < le ? mid : le), rmax(c, le + 1, mid) + hb);
					if (v == VOUT || sj->ob == 0)
						bn[h] = max64(bn[h], max64(rmax(c, sj->first, sj->last < le ? sj->last : le),
						                           rmax(c, le + 1 > sj->first ? le + 1 : sj->first, sj->last) + hb));
					else
						bn[h] = max64(bn[h], own_fwd(c, j, le, hb));
				}
			}
			/* the batch only grows with j */
			if (bn[0] > c->bmax && v == VOUT) {
				stop = 1;
				break;
			}
			for (int r = rlo; r <= rhi; r++) {
				int rest = r + 1 <= qa, ha = a >= 0 && (keep || rest);
				int64_t hold = ha ? ca : 0, k0 = bn[ha];
				Choice ch = { { v == VOUT ? B_CK : B_KEEP, j, r, -1, -1, -1 }, 0, 0, trj,
				              -1, -1, -1, 0, rest ? r + 1 : -1, keep };
				if (v == VKS) {
					/* j held from the batch (or past its last early reads) to event r */
					int fr0 = t >= 0 ? t : sj->last + 1, lc = sj->outc ? p->lastearly[sj->c] : -1;
					if (t < 0 && sj->outc && lc >= fr0) {
						k0 = max64(k0, rmax(c, fr0, lc) + sj->ob + hold);
						fr0 = lc + 1;
					}
					k0 = max64(k0, rmax(c, fr0, c->ev[r]) + sj->ks + hold);
				} else {
					ch.fa = j;
					ch.fq = q;
					ch.fti = ti;
					ch.fkeep = v == VALL && sj->outc;
					ch.hx = hold + (v == VALL ? sj->ob : 0);
					/* then j serves its own events up to r */
					if (r > qj)
						k0 = max64(k0, rmax(c, c->ev[qj] + 1, c->ev[r]) + sj->ks + hold);
				}
				ch.k0 = k0;
				ch_add(out, ch);
			}
		}
	}
	if (t < 0)
		/* the forward keeps nothing more: the first batch after it */
		for (int ti2 = 0; ti2 < c->ntq[q]; ti2++) {
			int u = c->tq[q * TQ + ti2];
			int lo = a >= 0 ? c->s[a + 1].first : 0;
			int64_t k0 = max64(rmax(c, lo, u - 1), rmax(c, le + 1, u - 1) + ca);
			ch_add(out, (Choice){ { B_NONE, c->ns, -1, u, -1, -1 }, k0, 0, 0, a, q, ti2, keep, -1, 0 });
		}
}

static Fr F(Chain *c, int a, int q, int ti, int keep);
static Fr G(Chain *c, int a, int q, int keep);

/* The front of a node (*fp, computed once) from its choices and the fronts of the nodes they
 * need. */
static Fr
front(Chain *c, Fr *fp, int g, int a, int q, int ti, int keep)
{
	Chs ch = { 0 };
	int from = c->ntmp;

	if (fp->n >= 0)
		return *fp;
	fp->n = 0;              /* a cycle would be a bug; an empty front stops it */
	if (g)
		choices_g(c, a, q, keep, &ch);
	else
		choices_f(c, a, q, ti, keep, &ch);
	for (int k = 0; k < ch.n; k++) {
		const Choice *x = &ch.v[k];
		Fr fx, fy;
		if (x->fq >= 0)
			fx = F(c, x->fa, x->fq, x->fti, x->fkeep);
		if (x->gq >= 0)
			fy = G(c, a, x->gq, x->gkeep);
		if (x->k0 > c->bmax)
			continue;
		combine(c, from, x->k0, x->cost, x->fq >= 0 ? &fx : NULL, x->hx, x->gq >= 0 ? &fy : NULL, x->b);
	}
	free(ch.v);
	*fp = front_make(c, from);
	return *fp;
}

static Fr
G(Chain *c, int a, int q, int keep)
{
	return front(c, &c->g[((size_t)q * (c->ns + 1) + (a + 1)) * 2 + keep], 1, a, q, -1, keep);
}

static Fr
F(Chain *c, int a, int q, int ti, int keep)
{
	return front(c, ti >= 0 ? fr_f(c, a, q, ti, keep) : &c->top[(a + 1) * 2 + keep], 0, a, q, ti, keep);
}

/* ---------- the plan ---------- */

/* Write the recomputations of entry x of F(a, q, t, keep) (t: the op, -1: the forward). */
static void
walk(Chain *c, int x, int a, int q, int t, int keep, Plan *pl)
{
	const Bp *b = &c->bp[c->pool[x].bp];
	int e = c->ek[q];

	if (c->seenw) {
		/* the choice, as the integer program's columns name it */
		int ti = -1;
		for (int k = 0; t >= 0 && b->kind != B_GAP && k < c->ntq[q]; k++)
			if (c->tq[q * TQ + k] == t)
				ti = k;
		if (c->nw == c->capw) {
			c->capw = c->capw ? 2 * c->capw : 64;
			c->seenw = xrealloc(c->seenw, c->capw * sizeof *c->seenw);
		}
		c->seenw[c->nw++] = (ChWhy){ b->kind, a, q, ti, keep, b->j, b->r, b->t2 };
	}

	if (b->kind == B_NONE || b->kind == B_GAP) {
		walk(c, b->ci, a, q, b->t2, keep, pl);
		return;
	}
	if (t >= 0)
		for (int k = a + 1; k <= b->j; k++) {
			const St *sk = &c->s[k];
			int v = k < b->j || b->kind == B_CK ? VOUT : b->j == e ? VKS : VALL;
			for (int f = sk->lo; f < sk->hi; f++)
				if (c->need[v][f])
					pl->rec[(size_t)t * c->n + c->fops[f]] = 1;
		}
	if (b->j < e)
		walk(c, b->ci, b->j, q, t, b->kind == B_KEEP && c->s[b->j].outc, pl);
	if (b->gi >= 0)
		walk(c, b->gi, a, b->r + 1, -1, keep, pl);
}

/* Fronts for entries needing at most bmax (the old ones dropped). */
static void
reset(Chain *c, int64_t bmax, double ub)
{
	size_t nf = (size_t)c->ne * (c->ns + 1) * TQ * 2, ng = (size_t)c->ne * (c->ns + 1) * 2;

	for (size_t k = 0; k < nf; k++)
		c->f[k].n = -1;
	for (size_t k = 0; k < ng; k++)
		c->g[k].n = -1;
	for (int k = 0; k < 2 * (c->ns + 1); k++)
		c->top[k].n = -1;
	c->np = c->nbp = c->ntmp = 0;
	c->bmax = bmax;
	c->ub = ub;
}

double
chain_solve(Chain *c, int64_t budget, double ub, Plan *pl)
{
	Fr top;
	int best = -1;
	int64_t tail;

	if (!c)
		return -1;
	if (budget > c->bmax || c->np == 0 || (c->ub >= 0 && (ub < 0 || ub > c->ub)))
		reset(c, budget, ub);
	top = F(c, -1, 0, -1, 0);
	tail = rmax(c, c->ev[c->ne - 1] + 1, c->n - 1);
	for (int i = 0; i < top.n; i++) {
		const Ent *x = &c->pool[top.off + i];
		if (max64(x->need, tail) <= budget && (best < 0 || x->cost < c->pool[best].cost))
			best = top.off + i;
	}
	if (best < 0)
		return -1;
	memset(pl->rec, 0, (size_t)c->n * c->n + 1);
	pl->nsw = 0;
	walk(c, best, -1, 0, -1, 0, pl);
	return c->pool[best].cost;
}

void
chain_hold_inputs(Chain *c)
{
	c->hold = 1;
	c->bmax = -1;           /* the fronts made again at the next solve */
}

/* ---------- the same plans as an integer program (ilp.c solves it) ---------- */

/* A node: F(a, q, ti, keep) (ti -1: the forward) or G(a, q, keep). */
static int
node_f(const Chain *c, int a, int q, int ti, int keep)
{
	return ti >= 0 ? (int)((((size_t)q * (c->ns + 1) + (a + 1)) * TQ + ti) * 2 + keep) :
	       c->ne * (c->ns + 1) * TQ * 2 + (a + 1) * 2 + keep;
}

static int
node_g(const Chain *c, int a, int q, int keep)
{
	return c->ne * (c->ns + 1) * TQ * 2 + (c->ns + 1) * 2 + (int)(((size_t)q * (c->ns + 1) + (a + 1)) * 2 + keep);
}

/* The program being built: its states (a node and the bytes its plan may use), found by a
 * hash of both, each expanded once in the order found; each node's choices made once. */
typedef struct Mb {
	Chain *c;
	ChModel *m;
	double ub;
	int maxcol;
	int *hs;                /* hash slots: state + 1, 0 empty */
	size_t hcap;
	int64_t *lev;           /* by state: its bytes */
	int *nd, caps;          /* by state: its node */
	int (*np)[5];           /* by node: g, a, q, ti, keep */
	Chs *ch;                /* by node: its choices (v NULL: not yet made) */
	int64_t *most;          /* by node: the most bytes any plan of it needs (-1: not known) */
	uint8_t *made;
} Mb;

static size_t
hash2(int nd, int64_t lev)
{
	uint64_t x = (uint64_t)lev * 0x9e3779b97f4a7c15u ^ (uint64_t)nd * 0xbf58476d1ce4e5b9u;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebu;
	return (size_t)(x ^ (x >> 29));
}

/* The choices of node nd (g, a, q, ti, keep), made once. */
static const Chs *
node_choices(Mb *x, int nd, int g, int a, int q, int ti, int keep)
{
	Chs *ch = &x->ch[nd];

	if (!ch->v) {
		if (g)
			choices_g(x->c, a, q, keep, ch);
		else
			choices_f(x->c, a, q, ti, keep, ch);
		if (!ch->v)
			ch->v = xmalloc(sizeof *ch->v);
	}
	return ch;
}

/* The most bytes any plan of node nd needs (its choices within the budget and the nodes they
 * need): with at least that many, the node's plans are all there are, so its states with more
 * are one. */
static int64_t
most(Mb *x, int nd, int g, int a, int q, int ti, int keep)
{
	const Chain *c = x->c;
	const Chs *ch;
	int64_t mx = 0;

	if (x->most[nd] >= 0)
		return x->most[nd];
	x->most[nd] = 0;        /* a cycle would be a bug */
	ch = node_choices(x, nd, g, a, q, ti, keep);
	for (int k = 0; k < ch->n; k++) {
		const Choice *o = &ch->v[k];
		int64_t need = o->k0;
		if (o->fq >= 0)
			need = max64(need, o->hx + most(x, node_f(c, o->fa, o->fq, o->fti, o->fkeep), 0, o->fa, o->fq,
			                                o->fti, o->fkeep));
		if (o->gq >= 0)
			need = max64(need, most(x, node_g(c, a, o->gq, o->gkeep), 1, a, o->gq, -1, o->gkeep));
		mx = max64(mx, need);
	}
	return x->most[nd] = mx;
}

/* The state of node nd (g, a, q, ti, keep) with lev bytes (at most what its plans need),
 * made if new. */
static int
state(Mb *x, int nd, int g, int a, int q, int ti, int keep, int64_t lev)
{
	ChModel *m = x->m;
	int64_t mx = most(x, nd, g, a, q, ti, keep);
	size_t h;

	lev = lev < mx ? lev : mx;
	if (2 * (size_t)m->nnode + 2 > x->hcap) {
		size_t nc = x->hcap ? 2 * x->hcap : 4096;
		int *hs = xcalloc(nc, sizeof *hs);
		for (size_t i = 0; i < x->hcap; i++)
			if (x->hs[i]) {
				int s = x->hs[i] - 1;
				for (h = hash2(x->nd[s], x->lev[s]) & (nc - 1); hs[h]; h = (h + 1) & (nc - 1))
					;
				hs[h] = s + 1;
			}
		free(x->hs);
		x->hs = hs;
		x->hcap = nc;
	}
	for (h = hash2(nd, lev) & (x->hcap - 1); x->hs[h]; h = (h + 1) & (x->hcap - 1)) {
		int s = x->hs[h] - 1;
		if (x->nd[s] == nd && x->lev[s] == lev)
			return s;
	}
	if (m->nnode == x->caps) {
		x->caps = x->caps ? 2 * x->caps : 1024;
		x->lev = xrealloc(x->lev, x->caps * sizeof *x->lev);
		x->nd = xrealloc(x->nd, x->caps * sizeof *x->nd);
	}
	x->hs[h] = m->nnode + 1;
	x->lev[m->nnode] = lev;
	x->nd[m->nnode] = nd;
	if (!x->made[nd]) {
		x->made[nd] = 1;
		memcpy(x->np[nd], (int[5]){ g, a, q, ti, keep }, sizeof x->np[nd]);
	}
	return m->nnode++;
}

/* The columns of state s: each choice of its node whose own bytes fit, costing at most ub. */
static void
expand(Mb *x, int s)
{
	Chain *c = x->c;
	ChModel *m = x->m;
	int nd = x->nd[s], *np = x->np[nd], g = np[0], a = np[1], q = np[2], ti = np[3], keep = np[4];
	int64_t lev = x->lev[s];
	const Chs *ch = node_choices(x, nd, g, a, q, ti, keep);

	m->c0[s] = m->ncol;
	for (int k = 0; k < ch->n && m->ncol <= x->maxcol; k++) {
		const Choice *o = &ch->v[k];
		int n1 = -1, n2 = -1;
		if (o->k0 > lev || (x->ub >= 0 && o->cost > x->ub) || (o->fq >= 0 && o->hx > lev))
			continue;
		if (o->fq >= 0)
			n1 = state(x, node_f(c, o->fa, o->fq, o->fti, o->fkeep), 0, o->fa, o->fq, o->fti, o->fkeep,
			           lev - o->hx);
		if (o->gq >= 0)
			n2 = state(x, node_g(c, a, o->gq, o->gkeep), 1, a, o->gq, -1, o->gkeep, lev);
		if (m->ncol == m->capc) {
			m->capc = m->capc ? 2 * m->capc : 1024;
			m->col = xrealloc(m->col, m->capc * sizeof *m->col);
			m->why = xrealloc(m->why, m->capc * sizeof *m->why);
		}
		m->col[m->ncol] = (ChCol){ o->cost, s, { n1, n2 } };
		m->why[m->ncol++] = (ChWhy){ o->b.kind, a, q, g ? -1 : ti, keep, o->b.j, o->b.r, o->b.t2 };
	}
	m->nc[s] = m->ncol - m->c0[s];
}

/* The least seconds of state s's plans (the DP again, over the program's own states) into
 * v[s], its cheapest column into m->best[s]; -1 if no plan serves it (no column, or each
 * needs a state none serves). */
static double
cheapest(ChModel *m, double *v, uint8_t *done, int s)
{
	double least = -1;

	if (done[s])
		return v[s];
	done[s] = 1;
	v[s] = -1;              /* a cycle would be a bug: served by nothing */
	m->best[s] = -1;
	for (int k = m->c0[s]; k < m->c0[s] + m->nc[s]; k++) {
		double x = m->col[k].cost;
		for (int i = 0; i < 2 && x >= 0; i++)
			if (m->col[k].need[i] >= 0) {
				double y = cheapest(m, v, done, m->col[k].need[i]);
				x = y < 0 ? -1 : x + y;
			}
		if (x >= 0 && (least < 0 || x < least)) {
			least = x;
			m->best[s] = k;
		}
	}
	return v[s] = least;
}

/* Drop the columns in no solution of the program costing at most ub (>= 0; < 0: none):
 * those needing a state no plan serves, and those whose seconds with the least of the states
 * they need are over ub (a solution with the column costs at least that); then the states
 * the root no longer reaches. The optimum at most ub is the same, so is what the relaxation
 * proves. Each state's cheapest column is kept in best (an optimal basis of the relaxation:
 * the columns' reduced costs against the states' least seconds are what Bellman's
 * inequalities say, >= 0). */
static void
prune(ChModel *m, double ub)
{
	double *v = xmalloc((m->nnode + 1) * sizeof *v);
	uint8_t *done = xcalloc(m->nnode + 1, 1), *live = xcalloc(m->ncol + 1, 1);
	int *nid = xmalloc((m->nnode + 1) * sizeof *nid), *ncid = xmalloc((m->ncol + 1) * sizeof *ncid);
	int *stack = xmalloc((m->nnode + 1) * sizeof *stack), ns = 0, nk = 0, sp = 0;

	m->best = xmalloc((m->nnode + 1) * sizeof *m->best);
	for (int s = m->nnode - 1; s >= 0; s--)
		cheapest(m, v, done, s);
	for (int k = 0; k < m->ncol; k++) {
		const ChCol *o = &m->col[k];
		double x = o->cost;
		for (int i = 0; i < 2 && x >= 0; i++)
			if (o->need[i] >= 0)
				x = v[o->need[i]] < 0 ? -1 : x + v[o->need[i]];
		live[k] = x >= 0 && (ub < 0 || x <= ub);
	}
	/* the states the root reaches through live columns */
	memset(done, 0, m->nnode + 1);
	if (v[m->root] >= 0 && (ub < 0 || v[m->root] <= ub)) {
		done[m->root] = 1;
		stack[sp++] = m->root;
	}
	while (sp > 0) {
		int s = stack[--sp];
		for (int k = m->c0[s]; k < m->c0[s] + m->nc[s]; k++)
			for (int i = 0; live[k] && i < 2; i++) {
				int c = m->col[k].need[i];
				if (c >= 0 && !done[c]) {
					done[c] = 1;
					stack[sp++] = c;
				}
			}
	}
	for (int s = 0; s < m->nnode; s++)
		nid[s] = done[s] ? ns++ : -1;
	for (int k = 0; k < m->ncol; k++)
		ncid[k] = live[k] && nid[m->col[k].node] >= 0 ? nk++ : -1;
	for (int s = 0; s < m->nnode; s++)
		if (nid[s] >= 0) {
			int c0 = -1, n = 0;
			for (int k = m->c0[s]; k < m->c0[s] + m->nc[s]; k++)
				if (ncid[k] >= 0) {
					c0 = c0 < 0 ? ncid[k] : c0;
					n++;
				}
			m->c0[nid[s]] = c0;
			m->nc[nid[s]] = n;
			m->best[nid[s]] = ncid[m->best[s]];
		}
	for (int k = 0; k < m->ncol; k++)
		if (ncid[k] >= 0) {
			ChCol o = m->col[k];
			o.node = nid[o.node];
			for (int i = 0; i < 2; i++)
				o.need[i] = o.need[i] >= 0 ? nid[o.need[i]] : -1;
			m->col[ncid[k]] = o;
			m->why[ncid[k]] = m->why[k];
		}
	m->root = nid[m->root];
	m->nnode = ns;
	m->ncol = nk;
	free(v); free(done); free(nid); free(ncid); free(live); free(stack);
}

ChModel *
chain_model(Chain *c, int64_t budget, double ub, int maxcol)
{
	ChModel *m = xcalloc(1, sizeof *m);
	int nn = node_g(c, c->ns - 1, c->ne - 1, 1) + 1;
	int64_t bmax = c->bmax;
	Mb x = { .c = c, .m = m, .ub = ub, .maxcol = maxcol };

	x.np = xmalloc((nn + 1) * sizeof *x.np);
	x.ch = xcalloc(nn + 1, sizeof *x.ch);
	x.made = xcalloc(nn + 1, 1);
	x.most = xmalloc((nn + 1) * sizeof *x.most);
	for (int k = 0; k <= nn; k++)
		x.most[k] = -1;
	/* the choices leave out batches over the budget (the stop in choices_f) */
	c->bmax = budget;
	m->root = -1;
	if (rmax(c, c->ev[c->ne - 1] + 1, c->n - 1) <= budget) {
		m->root = state(&x, node_f(c, -1, 0, -1, 0), 0, -1, 0, -1, 0, budget);
		for (int s = 0; s < m->nnode && m->ncol <= maxcol; s++) {
			if (s >= m->capn) {
				m->capn = m->capn ? 2 * m->capn : 1024;
				m->c0 = xrealloc(m->c0, m->capn * sizeof *m->c0);
				m->nc = xrealloc(m->nc, m->capn * sizeof *m->nc);
			}
			expand(&x, s);
		}
	}
	c->bmax = bmax;
	for (int k = 0; k < nn; k++)
		free(x.ch[k].v);
	free(x.ch); free(x.np); free(x.made); free(x.hs); free(x.lev); free(x.nd); free(x.most);
	if (m->root >= 0 && m->ncol <= maxcol)
		prune(m, ub);
	return m;
}

void
chain_model_free(ChModel *m)
{
	if (!m)
		return;
	free(m->col); free(m->why); free(m->c0); free(m->nc); free(m->best);
	free(m);
}

/* The recomputations of the plan whose columns are chosen (pick[col] set) into pl. */
void
chain_model_plan(Chain *c, const ChModel *m, const uint8_t *pick, Plan *pl)
{
	int *by = xmalloc((m->nnode + 1) * sizeof *by), *stack = xmalloc((m->ncol + 2) * sizeof *stack), ns = 0;

	for (int i = 0; i < m->nnode; i++)
		by[i] = -1;
	for (int k = 0; k < m->ncol; k++)
		if (pick[k])
			by[m->col[k].node] = k;
	memset(pl->rec, 0, (size_t)c->n * c->n + 1);
	pl->nsw = 0;
	if (by[m->root] >= 0)
		stack[ns++] = by[m->root];
	while (ns > 0) {
		int k = stack[--ns];
		const ChWhy *w = &m->why[k];
		int t = w->ti >= 0 ? c->tq[w->q * TQ + w->ti] : -1;
		if (w->kind == B_KEEP || w->kind == B_CK)
			for (int s = w->a + 1; t >= 0 && s <= w->j; s++) {
				const St *sk = &c->s[s];
				int v = s < w->j || w->kind == B_CK ? VOUT : w->j == c->ek[w->q] ? VKS : VALL;
				for (int f = sk->lo; f < sk->hi; f++)
					if (c->need[v][f])
						pl->rec[(size_t)t * c->n + c->fops[f]] = 1;
			}
		for (int i = 0; i < 2; i++)
			if (m->col[k].need[i] >= 0 && by[m->col[k].need[i]] >= 0)
				stack[ns++] = by[m->col[k].need[i]];
	}
	free(by);
	free(stack);
}

/* The columns of m that make the DP's cheapest plan within budget into pick: from the root,
 * at each state the column of the choice the DP made at its node (each node is met once in a
 * plan). 0, or -1 if the DP found none or m lacks one of them. */
int
chain_warm(Chain *c, int64_t budget, const ChModel *m, uint8_t *pick)
{
	Plan pl = { .n = c->n };
	int ok = 0, *stack = xmalloc((2 * m->nnode + 2) * sizeof *stack), ns = 0;

	pl.rec = xcalloc((size_t)c->n * c->n + 1, 1);
	pl.sw = xcalloc(c->n + 1, sizeof *pl.sw);
	c->capw = 64;
	c->nw = 0;
	c->seenw = xmalloc(c->capw * sizeof *c->seenw);
	memset(pick, 0, m->ncol + 1);
	if (chain_solve(c, budget, -1, &pl) < 0 || m->root < 0)
		ok = -1;
	else
		stack[ns++] = m->root;
	while (ns > 0 && ok == 0) {
		int s = stack[--ns], k = m->c0[s], w = 0;
		for (; k < m->c0[s] + m->nc[s]; k++) {
			for (w = 0; w < c->nw && memcmp(&m->why[k], &c->seenw[w], sizeof *m->why); w++)
				;
			if (w < c->nw)
				break;
		}
		if (k == m->c0[s] + m->nc[s] || pick[k]) {
			ok = -1;
			break;
		}
		pick[k] = 1;
		for (int i = 0; i < 2; i++)
			if (m->col[k].need[i] >= 0)
				stack[ns++] = m->col[k].need[i];
	}
	free(stack);
	free(c->seenw);
	c->seenw = NULL;
	free(pl.rec);
	free(pl.sw);
	return ok;
}

/* Needed ops of stage s (into need[f] for its fops) to make the values in want (by op). */
static void
ancestors(Chain *c, const St *s, const uint8_t *want, uint8_t *need)
{
	const Prob *p = c->p;

	for (int f = s->hi - 1; f >= s->lo; f--) {
		int i = c->fops[f];
		if (!want[i]) {
			/* needed if a needed op of the stage reads it */
			for (int u = 0; u < p->nuse[i] && !need[f]; u++) {
				int o = p->use[i][u];
				for (int g = f + 1; g < s->hi; g++)
					if (c->fops[g] == o && need[g])
						need[f] = 1;
			}
		} else
			need[f] = 1;
	}
}

/* A stage's recomputation of the ops in need: seconds, the most bytes it holds at once (its
 * input aside: each value until its last read by a needed op of the stage, those in keep to
 * the end), and the first op before which it cannot run. */
static void
stage_cost(Chain *c, St *s, const uint8_t *need, const uint8_t *keep, int v)
{
	const Prob *p = c->p;
	int m = s->hi - s->lo, *lr = xmalloc((m + 1) * sizeof *lr), in = s > c->s ? s[-1].c : -1;
	int lin = s->hi - 1;   /* the last needed op of the stage that reads its input */
	int64_t live = 0, pk = 0, pki = 0;

	s->tv[v] = 0;
	s->clv[v] = c->n;
	/* the last needed op of the stage that reads each value (-1: none) */
	for (int f = s->lo; f < s->hi; f++) {
		int i = c->fops[f];
		lr[f - s->lo] = -1;
		for (int g = f + 1; need[f] && g < s->hi; g++)
			for (int u = 0; need[g] && u < p->ndep[c->fops[g]]; u++)
				if (p->dep[c->fops[g]][u] == i)
					lr[f - s->lo] = g;
	}
	if (in >= 0) {
		lin = -1;
		for (int f = s->lo; f < s->hi; f++)
			for (int u = 0; need[f] && u < p->ndep[c->fops[f]]; u++)
				if (p->dep[c->fops[f]][u] == in)
					lin = f;
	}
	for (int f = s->lo; f < s->hi; f++) {
		int i = c->fops[f];
		if (!need[f])
			continue;
		s->tv[v] += p->t[i];
		if (p->clob[i] < s->clv[v])
			s->clv[v] = p->clob[i];
		live += p->ab[i];
		pk = max64(pk, live);
		if (f <= lin)
			pki = max64(pki, live);
		/* after op f: what it read for the last time, and its result if nothing reads it */
		for (int g = s->lo; g <= f; g++)
			if (need[g] && !keep[c->fops[g]] && (lr[g - s->lo] == f || (g == f && lr[g - s->lo] < 0)))
				live -= p->ab[c->fops[g]];
	}
	s->xv[v] = pk;
	s->xi[v] = pki;
	free(lr);
}

/* The stages between the cuts marked clean, their events (reads of their candidates, by op;
 * reads of one stage best served by one instance glued) and the checkpoints. 0, or -1 if
 * the events are not in the stages' reverse order or some come before the forward's end. */
static int
stages(Chain *c, const uint8_t *clean, const int *seg, const int *bnd, int nseg, int nf)
{
	const Prob *p = c->p;
	const int *fops = c->fops;
	int ns = 0, nev = 0, *evs = xmalloc((c->n + 1) * 2 * sizeof *evs), ok = 1;
	int64_t gmax = 0;

	free(c->s); free(c->ev); free(c->evf); free(c->ek); free(c->qend);
	c->s = xcalloc(nseg + 1, sizeof *c->s);
	for (int k = 0; k < nseg; k++)
		if (clean[k]) {
			St *st = &c->s[ns++];
			st->lo = seg[k];
			if (ns > 1)
				c->s[ns - 2].c = bnd[k];
		}
	c->ns = ns;
	c->lastf = fops[nf - 1];
	for (int s = 0; s < ns; s++) {
		St *st = &c->s[s];
		st->hi = s + 1 < ns ? c->s[s + 1].lo : nf;
		st->first = s == 0 ? 0 : fops[st->lo];
		if (s + 1 == ns)
			st->c = -1;
		st->cb = st->c >= 0 ? p->ab[st->c] : 0;
		st->outc = st->c >= 0 && c->kset[st->c];
		st->ck = st->c >= 0;
		for (int f = st->lo; f < st->hi; f++)
			if (fops[f] != st->c && c->kset[fops[f]])
				st->ob += p->ab[fops[f]];
		st->ks = st->ob + (st->outc ? st->cb : 0);
	}
	for (int s = 0; s < ns; s++)
		c->s[s].last = s + 1 < ns ? c->s[s + 1].first - 1 : c->lastf;
	for (int f = 0; f < nf; f++) {
		int i = fops[f];
		for (int u = 0; c->kset[i] && u < p->nuse[i]; u++)
			if (p->use[i][u] >= p->split[i]) {
				evs[2 * nev] = p->use[i][u];
				evs[2 * nev + 1] = f;
				nev++;
			}
	}
	/* by op (then by value: one op may read two candidates) */
	for (int x = 1; x < nev; x++)
		for (int y = x; y > 0 && (evs[2 * y] < evs[2 * y - 2] ||
		                          (evs[2 * y] == evs[2 * y - 2] && evs[2 * y + 1] > evs[2 * y - 1])); y--) {
			int t0 = evs[2 * y], t1 = evs[2 * y + 1];
			evs[2 * y] = evs[2 * y - 2], evs[2 * y + 1] = evs[2 * y - 1];
			evs[2 * y - 2] = t0, evs[2 * y - 1] = t1;
		}
	c->ev = xmalloc((nev + 1) * sizeof *c->ev);
	c->evf = xmalloc((nev + 1) * sizeof *c->evf);
	c->ek = xmalloc((nev + 1) * sizeof *c->ek);
	c->ne = 0;
	for (int q = 0; q < nev; q++) {
		int o = evs[2 * q], s = ns - 1, glue = c->ne > 0;
		while (s > 0 && c->s[s].lo > evs[2 * q + 1])
			s--;
		/* reads of the same stage's values with no op in between needing more than those
		 * before: letting them go in between never helps, one event */
		glue = glue && c->ek[c->ne - 1] == s;
		for (int t = glue ? c->ev[c->ne - 1] + 1 : o; t < o; t++)
			glue = glue && c->base[t] <= gmax;
		if (glue)
			c->ev[c->ne - 1] = o;
		else {
			c->evf[c->ne] = c->ev[c->ne] = o;
			c->ek[c->ne++] = s;
			gmax = 0;
		}
		gmax = max64(gmax, c->base[o]);
	}
	free(evs);
	for (int s = 0; s < ns; s++)
		c->s[s].qs = c->ne, c->s[s].qe = -1;
	for (int q = 0; q < c->ne; q++) {
		St *st = &c->s[c->ek[q]];
		if (q < st->qs) st->qs = q;
		if (q > st->qe) st->qe = q;
		if ((q > 0 && c->ek[q] > c->ek[q - 1]) || c->evf[q] <= c->lastf)
			ok = 0;
	}
	c->qend = xmalloc((ns + 2) * sizeof *c->qend);
	c->qend[ns] = -1;
	for (int s = ns - 1; s >= 0; s--)
		c->qend[s] = c->s[s].qe >= 0 ? c->s[s].qe : c->qend[s + 1];
	return ok ? 0 : -1;
}

Chain *
chain_new(const Prob *p, const int *fops, int nf, const int *seg, const int *bnd, int nseg,
          const int *endp, const uint8_t *lng, const uint8_t *glong, const int64_t *base)
{
	Chain *c;
	int n = p->n, *pos, ok = 1, *cut;
	uint8_t *clean, *want, *keep;
	double w;

	if (nf == 0 || nseg == 0)
		return NULL;
	c = xcalloc(1, sizeof *c);
	c->p = p;
	c->n = n;
	c->fops = xmalloc((nf + 1) * sizeof *c->fops);
	memcpy(c->fops, fops, nf * sizeof *fops);
	fops = c->fops;
	c->base = xmalloc((n + 1) * sizeof *c->base);
	memcpy(c->base, base, n * sizeof *base);
	pos = xmalloc((n + 1) * sizeof *pos);
	cut = xmalloc((nseg + 1) * sizeof *cut);
	clean = xmalloc(nseg + 1);
	want = xcalloc(n + 1, 1);
	keep = xcalloc(n + 1, 1);
	for (int f = 0; f < nf; f++)
		pos[fops[f]] = f;
	/* cuts no long-lived value crosses, whose value out is made in the segment before */
	for (int k = 0; k < nseg; k++)
		clean[k] = k == 0 || bnd[k] < 0 || pos[bnd[k]] >= seg[k - 1];
	for (int i = 0; i < n; i++)
		if (p->fwd[i] && lng[i] && !glong[i])
			for (int k = 1; k < nseg; k++)
				if (pos[i] < seg[k] && seg[k] <= endp[i])
					clean[k] = 0;
	c->kset = xcalloc(n + 1, 1);
	for (int f = 0; f < nf; f++)
		c->kset[fops[f]] = p->cand[fops[f]] && !glong[fops[f]];
	/* stages whose late reads interleave merged */
	for (int merged = 1; merged; ) {
		int ns = 0, *fe, *le;
		merged = 0;
		for (int k = 0; k < nseg; k++)
			if (clean[k])
				cut[ns++] = k;
		fe = xmalloc((ns + 1) * sizeof *fe);
		le = xmalloc((ns + 1) * sizeof *le);
		for (int s = 0; s < ns; s++) {
			int lo = seg[cut[s]], hi = s + 1 < ns ? seg[cut[s + 1]] : nf;
			fe[s] = n;
			le[s] = -1;
			for (int f = lo; f < hi; f++)
				for (int u = 0; c->kset[fops[f]] && u < p->nuse[fops[f]]; u++)
					if (p->use[fops[f]][u] >= p->split[fops[f]]) {
						int o = p->use[fops[f]][u];
						fe[s] = fe[s] < o ? fe[s] : o;
						le[s] = le[s] > o ? le[s] : o;
					}
		}
		for (int s = 0; s < ns && !merged; s++)
			for (int s2 = s + 1; s2 < ns && !merged; s2++)
				if (le[s] >= 0 && le[s2] >= 0 && fe[s] <= le[s2]) {
					for (int k = s + 1; k <= s2; k++)
						clean[cut[k]] = 0;
					merged = 1;
				}
		free(fe);
		free(le);
	}
	ok = stages(c, clean, seg, bnd, nseg, nf) == 0;
	/* On long chains (the DP's work grows as the checkpoints squared times the events) the
	 * checkpoints are the values read late, and those smaller than the next value out that is
	 * (a bottleneck); the stages in between merged. */
	if (ok && c->ns > NSFULL) {
		int ns = 0;
		for (int k = 0; k < nseg; k++)
			if (clean[k])
				cut[ns++] = k;
		for (int s = ns - 2, nextc = c->s[ns - 1].outc ? ns - 1 : -1; s >= 0; s--) {
			St *st = &c->s[s];
			if (!st->outc && !(nextc >= 0 && st->c >= 0 && st->cb < c->s[nextc].cb))
				clean[cut[s + 1]] = 0;
			if (st->outc)
				nextc = s;
		}
		ok = stages(c, clean, seg, bnd, nseg, nf) == 0;
	}
	/* still too much work: every g-th checkpoint */
	w = (double)c->ns * c->ns * c->ne;
	if (ok && w > WORK) {
		int g = 2, k2 = 0;
		while ((double)g * g * g < w / WORK)
			g++;
		for (int k = 1; k < nseg; k++)
			if (clean[k] && ++k2 % g)
				clean[k] = 0;
		ok = stages(c, clean, seg, bnd, nseg, nf) == 0;
	}
	free(pos); free(cut); free(clean);
	if (!ok || c->ne == 0) {
		free(want); free(keep);
		chain_free(c);
		return NULL;
	}
	/* what each kind of recomputation of a stage makes and holds */
	for (int v = 0; v < 3; v++)
		c->need[v] = xcalloc(nf + 1, 1);
	for (int s = 0; s < c->ns; s++) {
		St *st = &c->s[s];
		for (int v = 0; v < 3; v++) {
			for (int f = st->lo; f < st->hi; f++) {
				int i = fops[f];
				want[i] = (v != VKS && i == st->c) || (v != VOUT && c->kset[i]);
				keep[i] = want[i];
			}
			ancestors(c, st, want, c->need[v]);
			stage_cost(c, st, c->need[v], keep, v);
			for (int f = st->lo; f < st->hi; f++)
				want[fops[f]] = keep[fops[f]] = 0;
		}
	}
	free(want); free(keep);
	/* the ops a batch for each event may run before: from the event, each where fewer
	 * bytes are live than at every later one */
	c->tq = xmalloc((size_t)(c->ne + 1) * TQ * sizeof *c->tq);
	c->ntq = xcalloc(c->ne + 1, sizeof *c->ntq);
	for (int q = 0; q < c->ne; q++) {
		int64_t lo = INT64_MAX;
		int lim = q ? c->ev[q - 1] : c->lastf;
		for (int t = c->evf[q]; t > lim; t--)
			if (bef(c, t) < lo) {
				lo = bef(c, t);
				if (c->ntq[q] < TQ)
					c->tq[q * TQ + c->ntq[q]++] = t;
				else
					c->tq[q * TQ + TQ - 1] = t;
			}
	}
	for (c->lg = 1; (1 << c->lg) <= n; c->lg++)
		;
	c->rmq = xcalloc(c->lg + 1, sizeof *c->rmq);
	for (int k = 0; k <= c->lg; k++) {
		c->rmq[k] = xmalloc((n + 1) * sizeof **c->rmq);
		for (int i = 0; i + (1 << k) <= n; i++)
			c->rmq[k][i] = k == 0 ? c->base[i] : max64(c->rmq[k - 1][i], c->rmq[k - 1][i + (1 << (k - 1))]);
	}
	c->f = xmalloc(((size_t)c->ne * (c->ns + 1) * TQ * 2 + 1) * sizeof *c->f);
	c->g = xmalloc(((size_t)c->ne * (c->ns + 1) * 2 + 1) * sizeof *c->g);
	c->top = xmalloc((2 * (c->ns + 1) + 1) * sizeof *c->top);
	c->bmax = -1;
	return c;
}

void
chain_free(Chain *c)
{
	if (!c)
		return;
	for (int k = 0; c->rmq && k <= c->lg; k++)
		free(c->rmq[k]);
	for (int v = 0; v < 3; v++)
		free(c->need[v]);
	free(c->rmq); free(c->s); free(c->ev); free(c->evf); free(c->ek); free(c->qend); free(c->tq); free(c->ntq);
	free(c->base); free(c->pool); free(c->bp); free(c->f); free(c->g); free(c->top); free(c->tmp); free(c->mrg);
	free(c->kset); free(c->fops);
	free(c);
}
