/* ilp.c: the Checkmate-style integer program (Jain et al., MLSys 2020) solved by GLPK.
 *
 * needs: a Prob, a budget, a time limit, optionally a plan to start from (tso's).
 * fills: a Plan: the recomputations R[t,i] (op i recomputed in stage t, the stage of op t)
 *        and the swaps X[i] the program chose, with its gap as measured: the part of the
 *        plan's measured overhead (plan_eval) above what GLPK proved below every plan.
 *
 * Stages are the ops of the step; only recomputable ops (Prob.fwd, function results
 * excepted) are decided: R[t,i] and S[t,i] (i resident entering stage t) exist for
 * i < t <= lastuse(i) (R also before any update of a decl i reads), the lower-triangular
 * structure that keeps the program small. The rest of the step takes the bytes it takes
 * (fixed[t]). Within a stage the computed ops run in index order; U[t,k] is the memory while
 * op k runs; FREE[t,i,k] frees i after k, its last user in the stage, unless S[t+1,i]
 * (Checkmate's linearisation, one row per hazard). A swap X[i] makes i resident again at its
 * first late use (or where the start's swap of i brings it back) without a recomputation;
 * the copy's source stays until the swap_out's wait (a fetched param's, copied from its home
 * again, until its last early use) and the swapped-in buffer from the swap_in on, both
 * placed as plan.c places them (or as the start places them). The objective is
 * the step's clock (below): the compute stream and the copy engines as cost.c runs them, so
 * copies that share an engine are priced as measured. (In blocks, ilpblk.c, each swap is
 * priced alone: the copy time not hidden behind compute, swap_cost.) Only what is measured
 * counts as proved. Bytes are counted in KiB, seconds in us.
 * MTC_ILP_TRACE=1 in the environment shows GLPK's log. */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* Without --solver-time the ILP's work is bounded by simplex iterations, which read no clock:
 * ILP_WORK iterations x nonzeros of the program in all (the relaxation's and the nodes',
 * counted where the callback runs; an iteration's cost grows with the program), at least
 * ILP_ITMIN iterations. A relaxation that took over half of it is not branched on: GLPK
 * cannot bound one node's LP, and on such programs (Checkmate's of a 16-layer MLP, 69k
 * nonzeros) those LPs ran for minutes between two calls of the callback. */
enum { ILP_ITMIN = 1000 };
static const double ILP_WORK = 5e8;
enum { CHAIN_COLS = 400000 };  /* the largest chain program (columns) solved: 0.5 GB */
enum { CHAIN_BUILD = 2000000 };/* the most columns built before pruning: 0.2 GB */

typedef struct Ilp {
	const Prob *p;
	int n;
	uint8_t *dec;          /* decided values (recomputable, not a function result) */
	int *s0, *x;           /* first column of S[.,i] (t = i+1 ..), X[i]; 0: none */
	int *rhi;              /* last stage of R[.,i] */
	int *shi;              /* last stage of S[.,i]: its last use, or a recomputation's */
	uint8_t *need;         /* need[t*n+i]: something in stage t may read i (R[t,i] exists) */
	int *rcol;             /* rcol[t*n+i]: the column of R[t,i] */
	Swap *sw;              /* the placement a swap of i would take */
	/* columns and rows, created in one go at the end */
	int nc, capc, nr, capr, nz, capz;
	char *ckind;           /* 'B' binary, 'C' continuous >= 0 */
	double *cobj, *clo, *chi;
	int *rtype;
	double *rlo, *rhi_;
	int *ia, *ja;
	double *ar;
	double *warm;          /* a start solution, one value per column (index 1..nc) */
	double lastgap;
	double bound;          /* the relaxation's optimum (-1: none) */
	long nodes, seen;      /* node limit (0: none), nodes selected so far */
	int itmax;             /* iteration limit of the whole search (0: none) */
	int hit;               /* the node limit (1) or the iteration limit (2) ended the search */
	int havewarm;          /* still to offer to GLPK */
	int warmok;            /* a start solution that satisfies the program */
	int trace;             /* MTC_ILP_TRACE is set: GLPK's log and ours on stderr */
	const uint8_t *mask;   /* only these values are decided (NULL: all) */
	const int64_t *fix;    /* bytes of everything else at each stage (NULL: the profile) */
	/* where params and optimizer state live (place.c's effects): a column Y per change of a
	 * group's level, at most one a group and kmax in all, taking its bytes off each stage's
	 * memory and adding its seconds */
	const PlaceEffect *pe;
	int npe, kmax;
	const int64_t *corr;   /* bytes added at each stage (NULL: none) */
	int *ycol;
	uint8_t *bas;          /* a start basis: the basic columns (1..nc; every row's slack
	                        * nonbasic), NULL: GLPK's own; an optimal one, given: no cuts */
	int tl;                /* the objective is the step's clock (step_clock), not each
	                        * recomputation's and swap's seconds alone: 1 where a copy may
	                        * run, 2 always */
	int tcol;              /* the clock's column of the step's end */
	/* valid inequalities (the engine's queue and windows): rows lo <= sum of coefficients
	 * that no plan breaks, for the relaxation only; kept apart so that a start solution
	 * (warm_ok) and ilp-test's clocked plans are held against them too */
	int ncut, capcut, cnz, capcnz;
	int *cbeg, *cja;       /* cut k's entries: cja[cbeg[k] .. cbeg[k+1]) */
	double *car, *cutlo;
	double obj0;           /* the objective's constant (us) */
} Ilp;

static double kib(int64_t b) { return (double)b / 1024; }


static int
col(Ilp *m, char kind, double lo, double hi, double obj)
{
	if (m->nc + 2 > m->capc) {
		m->capc = m->capc ? 2 * m->capc : 1024;
		m->ckind = xrealloc(m->ckind, m->capc);
		m->cobj = xrealloc(m->cobj, m->capc * sizeof *m->cobj);
		m->clo = xrealloc(m->clo, m->capc * sizeof *m->clo);
		m->chi = xrealloc(m->chi, m->capc * sizeof *m->chi);
		m->warm = xrealloc(m->warm, m->capc * sizeof *m->warm);
	}
	m->nc++;
	m->ckind[m->nc] = kind;
	m->cobj[m->nc] = obj;
	m->clo[m->nc] = lo;
	m->chi[m->nc] = hi;
	m->warm[m->nc] = 0;
	return m->nc;
}

static int
row(Ilp *m, int type, double lo, double hi)
{
	if (m->nr + 2 > m->capr) {
		m->capr = m->capr ? 2 * m->capr : 1024;
		m->rtype = xrealloc(m->rtype, m->capr * sizeof *m->rtype);
		m->rlo = xrealloc(m->rlo, m->capr * sizeof *m->rlo);
		m->rhi_ = xrealloc(m->rhi_, m->capr * sizeof *m->rhi_);
	}
	m->nr++;
	m->rtype[m->nr] = type;
	m->rlo[m->nr] = lo;
	m->rhi_[m->nr] = hi;
	return m->nr;
}

static void
coef(Ilp *m, int r, int c, double v)
{
	if (!c || v == 0)
		return;
	if (m->nz + 2 > m->capz) {
		m->capz = m->capz ? 2 * m->capz : 4096;
		m->ia = xrealloc(m->ia, m->capz * sizeof *m->ia);
		m->ja = xrealloc(m->ja, m->capz * sizeof *m->ja);
		m->ar = xrealloc(m->ar, m->capz * sizeof *m->ar);
	}
	m->nz++;
	m->ia[m->nz] = r;
	m->ja[m->nz] = c;
	m->ar[m->nz] = v;
}

/* A cut lo <= ... (its coefficients by cut_coef, which adds to a column the cut has). */
static void
cut_row(Ilp *m, double lo)
{
	if (m->ncut + 2 > m->capcut) {
		m->capcut = m->capcut ? 2 * m->capcut : 256;
		m->cbeg = xrealloc(m->cbeg, (m->capcut + 1) * sizeof *m->cbeg);
		m->cutlo = xrealloc(m->cutlo, m->capcut * sizeof *m->cutlo);
	}
	m->cbeg[m->ncut] = m->cnz;
	m->cutlo[m->ncut++] = lo;
	m->cbeg[m->ncut] = m->cnz;
}

static void
cut_coef(Ilp *m, int c, double v)
{
	if (!c || v == 0)
		return;
	for (int z = m->cbeg[m->ncut - 1]; z < m->cnz; z++)
		if (m->cja[z] == c) {
			m->car[z] += v;
			return;
		}
	if (m->cnz + 1 > m->capcnz) {
		m->capcnz = m->capcnz ? 2 * m->capcnz : 4096;
		m->cja = xrealloc(m->cja, m->capcnz * sizeof *m->cja);
		m->car = xrealloc(m->car, m->capcnz * sizeof *m->car);
	}
	m->cja[m->cnz] = c;
	m->car[m->cnz++] = v;
	m->cbeg[m->ncut] = m->cnz;
}

/* Cut k's left side at the values v[1..nc]. */
static double
cut_act(const Ilp *m, int k, const double *v)
{
	double a = 0;

	for (int z = m->cbeg[k]; z < m->cbeg[k + 1]; z++)
		a += m->car[z] * v[m->cja[z]];
	return a;
}

/* Column of R[t,i] or S[t,i]; 0 if it is not a variable. */
static int
R(const Ilp *m, int t, int i)
{
	return m->dec[i] && t > i && t <= m->rhi[i] ? m->rcol[(size_t)t * m->n + i] : 0;
}

static int
S(const Ilp *m, int t, int i)
{
	return m->dec[i] && t > i && t <= m->shi[i] ? m->s0[i] + t - i - 1 : 0;
}

/* The last stage a swap of i holds its source: the swap_out's wait, or for a fetch
 * (plan_is_fetch: its swap copies nothing out, remat.c fetches it again from its home) its
 * last early use. */
static int
src_until(const Ilp *m, int i)
{
	return plan_is_fetch(m->p->f, &m->p->f->op[i]) ? m->p->lastearly[i] : m->sw[i].outwait;
}

/* A swap of i in the program's model: its copies (out and back; a fetch's one) less the
 * compute between its last early use and the use it is brought back for (fd: its first late
 * one, or the start's), which hides them. */
static double
swap_cost(const Prob *p, int i, int fd)
{
	double ct = copy_time(p, p->b[i]) * (plan_is_fetch(p->f, &p->f->op[i]) ? 1 : 2), hide = 0;

	for (int k = p->lastearly[i] + 1; k < fd; k++)
		hide += p->t[k];
	return ct > hide ? ct - hide : 0;
}

/* Op k reads value i (i among its operands). */
static int
reads_dep(const Prob *p, int k, int i)
{
	for (int a = 0; a < p->ndep[k]; a++)
		if (p->dep[k][a] == i)
			return 1;
	return 0;
}

/* Value of a column in the start solution, constants for what is not a column. */
static double
wv(const Ilp *m, int c)
{
	return c ? m->warm[c] : 0;
}

/* The start solution's R, S and X from a plan, as the planned IR's liveness has them: an
 * instance of i (made at its own stage, recomputed at a stage, or swapped in at its first
 * late use) is resident from the stage after it is made until its last read, which a later
 * instance ends; a swapped value's source until the swap_out's wait. */
static void
warm_rs(Ilp *m, const Plan *pl)
{
	const Prob *p = m->p;
	int n = m->n;

	for (int s = 0; s < pl->nsw; s++)
		if (m->x[pl->sw[s].op])
			m->warm[m->x[pl->sw[s].op]] = 1;
	for (int i = 0; i < n; i++) {
		int swapped = m->x[i] && m->warm[m->x[i]] > 0.5;
		if (!m->dec[i])
			continue;
		for (int t = i + 1; t <= m->rhi[i]; t++)
			if (R(m, t, i))
				m->warm[R(m, t, i)] = pl->rec[(size_t)t * n + i];
		for (int a = i; a <= m->shi[i]; a++) {
			int made = a == i || (a <= m->rhi[i] && pl->rec[(size_t)a * n + i]);
			int sw = swapped && a == m->sw[i].inwait, nx, last = -1;
			if (!made && !sw)
				continue;
			for (nx = a + 1; nx <= m->shi[i]; nx++)
				if ((nx <= m->rhi[i] && pl->rec[(size_t)nx * n + i]) || (swapped && nx == m->sw[i].inwait))
					break;
			for (int k = 0; k < p->nuse[i]; k++) {
				int u = p->use[i][k];
				if (u >= a && u < nx && u > last)
					last = u;
				for (int st = a; st < nx; st++)
					if (st > u && st <= m->rhi[u] && pl->rec[(size_t)st * n + u] && st > last)
						last = st;
			}
			if (a == i && swapped && src_until(m, i) > last)
				last = src_until(m, i);
			for (int t = sw ? a : a + 1; t <= last; t++)
				if (S(m, t, i))
					m->warm[S(m, t, i)] = 1;
		}
	}
}

/* Does the start solution satisfy every row and bound? GLPK takes a heuristic solution on
 * trust, so an infeasible one is never offered. */
static int
warm_ok(const Ilp *m)
{
	double *act = xcalloc(m->nr + 1, sizeof *act);
	int ok = 1;

	for (int z = 1; z <= m->nz; z++)
		act[m->ia[z]] += m->ar[z] * m->warm[m->ja[z]];
	for (int r = 1; r <= m->nr && ok; r++) {
		double a = act[r], e = 1e-6 * (1 + (a < 0 ? -a : a));
		if ((m->rtype[r] == GLP_FX && (a < m->rlo[r] - e || a > m->rlo[r] + e)) ||
		    (m->rtype[r] == GLP_UP && a > m->rhi_[r] + e) ||
		    (m->rtype[r] == GLP_LO && a < m->rlo[r] - e)) {
			ok = 0;
			if (m->trace)
				fprintf(stderr, "ilp: start solution breaks row %d (type %d, %g..%g): %g\n", r,
				        m->rtype[r], m->rlo[r], m->rhi_[r], a);
		}
	}
	for (int k = 0; k < m->ncut && ok; k++) {
		double a = cut_act(m, k, m->warm);
		if (a < m->cutlo[k] - 1e-6 * (1 + fabs(a))) {
			ok = 0;
			if (m->trace)
				fprintf(stderr, "ilp: start solution breaks cut %d (%g..): %g\n", k, m->cutlo[k], a);
		}
	}
	for (int c = 1; c <= m->nc && ok; c++)
		if (m->warm[c] < m->clo[c] - 1e-9 || (m->ckind[c] == 'C' && m->chi[c] >= 0 && m->warm[c] > m->chi[c] + 1e-6)) {
			ok = 0;
			if (m->trace)
				fprintf(stderr, "ilp: start solution breaks column %d's bounds: %g\n", c, m->warm[c]);
		}
	free(act);
	return ok;
}

/* Branch on a swap first, taken first: the most fractional X column (the first of equals).
 * A swap fixed either way holds the clock's rows exactly (their big M lets go only of a swap
 * not taken), where a recomputation's or a residency's column fixed leaves the engine's rows
 * as loose as before. The classifier under mt3000 at 50% (placed, updates on the host) with
 * --solver-time=60: its optimum proved in 7 nodes and 0.8 s, against 3461 nodes and 9.7 s on
 * the first fractional column. Not the placement's Y columns: branched on first, they changed
 * the default plans of the GPT and ResNet, better and worse (the GPT under cuda at 35% from
 * 10.12% to 12.55% over the step, ResNet under cuda at 35% from 96.64% to 85.66%). None
 * fractional: GLPK's own choice. */
static void
branch(glp_tree *tree, const Ilp *m)
{
	glp_prob *lp = glp_ios_get_prob(tree);
	int best = 0;
	double bf = 1e-6;

	for (int i = 0; i < m->n; i++) {
		int c = m->x[i];
		double v, fr;
		if (!c || !glp_ios_can_branch(tree, c))
			continue;
		v = glp_get_col_prim(lp, c);
		fr = fmin(v, 1 - v);
		if (fr > bf + 1e-9)
			bf = fr, best = c;
	}
	if (best)
		glp_ios_branch_upon(tree, best, GLP_UP_BRNCH);
}

static void
callback(glp_tree *tree, void *info)
{
	Ilp *m = info;

	if (m->itmax && glp_get_it_cnt(glp_ios_get_prob(tree)) > m->itmax) {
		m->hit = 2;
		glp_ios_terminate(tree);
		return;
	}
	switch (glp_ios_reason(tree)) {
	case GLP_IHEUR:
		if (m->havewarm) {
			int r = glp_ios_heur_sol(tree, m->warm);
			m->havewarm = 0;
			if (m->trace)
				fprintf(stderr, "ilp: start solution %s\n", r ? "rejected" : "taken");
		}
		break;
	case GLP_ISELECT:
		if (++m->seen > m->nodes && m->nodes) {
			m->hit = 1;
			glp_ios_terminate(tree);
			break;
		}
		/* fall through */
	case GLP_IBINGO:
		m->lastgap = glp_ios_mip_gap(tree);
		break;
	case GLP_IBRANCH:
		branch(tree, m);
		break;
	default:
		break;
	}
}

static void
ilp_free(Ilp *m)
{
	free(m->dec); free(m->s0); free(m->x); free(m->rhi); free(m->shi); free(m->sw); free(m->need); free(m->rcol);
	free(m->ckind); free(m->cobj); free(m->clo); free(m->chi); free(m->warm);
	free(m->rtype); free(m->rlo); free(m->rhi_);
	free(m->ia); free(m->ja); free(m->ar);
	free(m->ycol); free(m->bas);
	free(m->cbeg); free(m->cja); free(m->car); free(m->cutlo);
}

/* The placement's columns and rows (before the stages', whose memory rows take Y's bytes):
 * a change costs its seconds. */
static void
place_cols(Ilp *m)
{
	int r = row(m, GLP_UP, 0, m->kmax);

	m->ycol = xcalloc(m->npe + 1, sizeof *m->ycol);
	for (int e = 0; e < m->npe; e++) {
		m->ycol[e] = col(m, 'B', 0, 1, 1e6 * m->pe[e].dt);
		coef(m, r, m->ycol[e], 1);
	}
	/* at most one change a group (a group's are consecutive in pe) */
	for (int e = 0; e < m->npe;) {
		int rg = row(m, GLP_UP, 0, 1), e2 = e;
		for (; e2 < m->npe && m->pe[e2].op == m->pe[e].op; e2++)
			coef(m, rg, m->ycol[e2], 1);
		e = e2;
	}
}

/* ---------- the step's clock ----------
 * With m->tl the objective is the step's modeled seconds over the unplanned step, written as
 * cost.c computes them, in remat.c's order: at each stage the swap_ins issued there, the waits
 * of those first read there, the recomputations and the op, the swap_outs issued after it and
 * the waits that end there. A stage's compute starts when the last one's ends and its waits
 * are over; a copy starts when the compute before it has ended and the copy before it on its
 * engine (one each way on a duplex target, else one for both; copies issued together in the
 * plan's order, ascending ops) has; a swap_in on a duplex target also after its swap_out; a
 * copy of the step's own (a param's fetch) likewise, and the ops reading it after it. Every
 * row is one cost_fill's clocks meet for any plan of the program, and for a fixed plan the
 * least clocks that meet them are cost_fill's, updates on the host (host_update) and params
 * fetched again for a recomputation (refetch) included, where the step has no collectives or
 * host issue: left out, so the clock can only be lower; the program's optimum is a bound on
 * every plan as measured, and a plan at it is proved. ilp-test holds the clock against
 * plan_eval on random plans of the examples, as they are and placed (ilp_clock). A row of a
 * swap the plan does not take is let go by a big M (all the copies' seconds: no engine runs
 * further ahead of the compute); each copy alone also holds its wait without it, which keeps
 * the relaxation from ignoring a fractional swap's copy, and rows that need no M tighten the
 * relaxation, which the big M leaves loose: the engine's queue before each wait and its
 * energy over each window, rounded (queue_rows, window_rows; at 50% the relaxation's bound
 * went from 0 to 16.4 us over the step on skipnet under cuda, 0 to 56.6 us under mt3000).
 * Seconds are in us. */

/* A clock column: no upper bound, its start value raised by its rows. */
static int
tvar(Ilp *m)
{
	return col(m, 'C', 0, -1, 0);
}

/* Row a - b - kx x >= k; a's start value raised to meet it. With k - M and kx M (M big
 * enough that with x = 0 the row holds for any clocks the plan has): a >= b + k when x is
 * taken. */
static void
ge(Ilp *m, int a, int b, double k, int x, double kx)
{
	int r = row(m, GLP_LO, k, 0);
	double v = wv(m, b) + k + kx * wv(m, x);

	coef(m, r, a, 1);
	coef(m, r, b, -1);
	coef(m, r, x, -kx);
	if (v > m->warm[a])
		m->warm[a] = v;
}

/* A copy of ct us, taken when x is (always, x 0), issued with its engine's clock at e and the
 * compute's at c: the engine's clock after it (its end, when taken). */
static int
copy(Ilp *m, int e, int c, int x, double ct)
{
	int a = tvar(m);

	ge(m, a, e, x ? 0 : ct, x, ct);
	ge(m, a, c, x ? 0 : ct, x, ct);
	return a;
}

/* The copies in the order they are issued on the engines: the compute's clock at the issue
 * (c), the copy's column (x, 0: always taken) and seconds, its engine, and the unplanned
 * compute before the issue (base). */
typedef struct Cq {
	int c, x, eng;
	double ct, base;
	int ip, w, wp;         /* the place on the compute's chain; the column and place
	                        * of the clock the copy must have ended by (0: none) */
} Cq;

/* Rows for the wait a of copy k (taken when q[k].x is), the unplanned compute before it cw:
 * from the issue of each copy j before it on its engine, the engine runs j .. k before k
 * ends, a >= c_j + sum of their seconds when taken; were k not taken, the compute alone
 * brings a to c_j + (cw - base_j). Written so that a pair (l, k) counts when both are taken
 * (x_l + x_k - 1), it is valid for every plan and needs no big M, which in the relaxation
 * lets a swap taken at 0.95 skip 5% of every copy's queue (skipnet: its bound stayed at 0 us
 * over the step). Only where the copies' seconds exceed the window's compute (else the
 * compute's rows hold it), at most QMAX copies back. */
enum { QMAX = 24 };

static void
queue_rows(Ilp *m, int a, const Cq *q, int k, double cw)
{
	double sum = q[k].ct, var = 0;

	for (int j = k - 1, seen = 0; j >= 0 && seen < QMAX; j--) {
		double w0;

		if (q[j].eng != q[k].eng)
			continue;
		seen++;
		sum += q[j].ct;
		if (q[j].x && q[j].x != q[k].x)   /* k's own other copy: x_k x_k = x_k */
			var += q[j].ct;
		w0 = cw - q[j].base;
		if (sum <= w0 + 1e-9)
			continue;
		cut_row(m, w0 - var);
		cut_coef(m, a, 1);
		cut_coef(m, q[j].c, -1);
		cut_coef(m, q[k].x, -(sum - w0));
		for (int l = j; l < k; l++)
			if (q[l].eng == q[k].eng && q[l].x && q[l].x != q[k].x)
				cut_coef(m, q[l].x, -q[l].ct);
	}
}

/* The unplanned compute before a place on the compute's chain: 3t the clock before stage
 * t's swap_ins, 3t+1 after their waits, 3t+2 after op t, 3t+3 after the swap_outs' waits. */
static double
base_at(const double *cum, int pos)
{
	return cum[pos / 3 + (pos % 3 == 2)];
}

/* The cut P2 - P1 - sum over the copies ord[0..no) of k x >= lo (k: each copy's seconds, or
 * f where f > 0), a swap's two copies (one engine both ways) one column. */
static void
window_row(Ilp *m, const Cq *q, const int *ord, int no, int p1, int p2, double lo, double f)
{
	cut_row(m, lo);
	cut_coef(m, p2, 1);
	cut_coef(m, p1, -1);
	for (int a = 0; a < no; a++)
		if (q[ord[a]].x)
			cut_coef(m, q[ord[a]].x, -(f > 0 ? f : q[ord[a]].ct));
}

/* Energy: the copies on one engine issued at or after place P1 and ended by place P2 run
 * one after the other between the two clocks, whatever else the engine does: P2 >= P1 +
 * their seconds when taken. Linear in the swaps, valid for every plan; written for each
 * issue P1 and wait P2 where the copies' seconds exceed the unplanned compute between them
 * (else the compute's rows hold it), at most QMAX waits from each issue. */
static void
window_rows(Ilp *m, const Cq *q, int nq, const double *cum)
{
	int *ord = xmalloc((nq + 1) * sizeof *ord);

	for (int j = 0; j < nq; j++) {
		int no = 0, done = 0;
		double sum = 0, fixed = 0, cmin = 1e30;
		if (j > 0 && q[j - 1].ip == q[j].ip && q[j - 1].eng == q[j].eng)
			continue;  /* the same issue place: its rows are the first's */
		/* the copies issued from P1 on, by the place they end by (then their order) */
		for (int l = 0; l < nq; l++)
			if (q[l].w && q[l].eng == q[j].eng && q[l].ip >= q[j].ip) {
				int b = no++;
				for (; b > 0 && q[ord[b - 1]].wp > q[l].wp; b--)
					ord[b] = ord[b - 1];
				ord[b] = l;
			}
		for (int a = 0; a < no && done < QMAX;) {
			int wp = q[ord[a]].wp;
			double w0, f, kk;
			for (; a < no && q[ord[a]].wp == wp; a++) {
				const Cq *c = &q[ord[a]];
				sum += c->ct;
				if (!c->x)
					fixed += c->ct;
				else if (c->ct < cmin)
					cmin = c->ct;
			}
			w0 = base_at(cum, wp) - base_at(cum, q[j].ip);
			/* copies always taken alone: the engine's own rows hold them exactly */
			if (sum <= w0 + 1e-9 || cmin == 1e30)
				continue;
			done++;
			window_row(m, q, ord, a, q[j].c, q[ord[a - 1]].w, fixed, 0);
			/* Rounded: with cmin the shortest copy taken there, the copies' count y (an
			 * integer), the window's compute w0 and the always-taken copies' seconds F, P2 - P1
			 * >= max(w0, F + cmin y); at y = k = floor((w0 - F) / cmin) and k + 1 the line
			 * w0 + f (y - k), f = F + (k + 1) cmin - w0, meets that, and below it at every
			 * other integer y. Where the engine has room for k copies and a fraction, the
			 * relaxation no longer hides the fraction: every plan waits f or swaps k+1
			 * copies' worth of time. */
			if (cmin > 0 && w0 >= fixed) {
				kk = floor((w0 - fixed) / cmin);
				f = fixed + (kk + 1) * cmin - w0;
				if (f > 1e-9)
					window_row(m, q, ord, a, q[j].c, q[ord[a - 1]].w, w0 - f * kk, f);
			}
		}
	}
	free(ord);
}

/* The compute's clock after c and the waits at op t of the swaps whose copies end at fe[k],
 * issued as q[qk[k]] (the swap_ins' waits before op t, in; else the swap_outs' after it), cw
 * the unplanned compute before the wait. */
static int
waits(Ilp *m, int c, int t, int in, const int *fe, Cq *q, const int *qk, double cw, double big)
{
	int a = tvar(m);

	ge(m, a, c, 0, 0, 0);
	for (int k = 0; k < m->n; k++)
		if (m->x[k] && fe[k] && (in ? m->sw[k].inwait : m->sw[k].outwait) == t) {
			const Cq *e = &q[qk[k]];
			double w0 = cw - e->base;  /* the window's unplanned compute */
			ge(m, a, fe[k], -big, m->x[k], big);
			/* a >= issue + ct when taken, issue + w0 when not (the compute's rows): the two in
			 * one row, x ct + (1 - x) w0, where a >= issue + x ct let a swap taken in part
			 * hide that part behind the window for nothing */
			ge(m, a, e->c, w0, m->x[k], e->ct - w0);
			queue_rows(m, a, q, qk[k], cw);
			q[qk[k]].w = a;
			q[qk[k]].wp = 3 * t + (in ? 1 : 3);
		}
	return a;
}

static int
is_comp(const Func *f, const Op *op)
{
	return !(opinfo[op->kind].flags & F_COPY) && !op_on_host(f, op);
}

/* An update on the host (op t), as cost.c runs it: on the host's thread after the update
 * before it (clock host), once the copies to the host issued before it (the engine's clock
 * eout) and the compute before it (c) are done, and the fetches of what it writes (fx): the
 * host's clock after it. */
static int
host_update(Ilp *m, int t, int host, int eout, int c, const int *fx)
{
	const Func *f = m->p->f;
	const Op *op = &f->op[t];
	int s = tvar(m), e = tvar(m);

	ge(m, s, host, 0, 0, 0);
	ge(m, s, eout, 0, 0, 0);
	ge(m, s, c, 0, 0, 0);
	for (int a = 0; a < op->nargs; a++) {
		int d = f->val[op->args[a]].def;
		if (d >= 0 && d < t && fx[d])
			ge(m, s, fx[d], 0, 0, 0);
	}
	for (int j = 0; j < t; j++)
		if (f->op[j].kind == OP_SWAPIN && fx[j])
			for (int k = 0; k < op_nmut(op->kind); k++)
				if (f->op[j].args[0] == op->args[k])
					ge(m, s, fx[j], 0, 0, 0);
	ge(m, e, s, 1e6 * m->p->t[t], 0, 0);
	return e;
}

static int
is_copy(const Func *f, int i)
{
	return (opinfo[f->op[i].kind].flags & F_COPY) != 0;
}

/* A param fetched again for a recomputation in stage t (R[t,i], a copy op), as remat.c
 * emits it among the recomputations and cost_fill runs it: on its engine (clock *eng) from
 * the compute's clock c and the host's update of its home (hx), awaited at once; the
 * compute's clock after it. */
static int
refetch(Ilp *m, int t, int i, int c, int *eng, const int *hx, double big)
{
	const Func *f = m->p->f;
	const Op *op = &f->op[i];
	double ct = 1e6 * m->p->t[i];
	int x = R(m, t, i), a = tvar(m);

	*eng = copy(m, *eng, c, x, ct);
	for (int k = 0; k < op->nargs; k++) {
		int d = f->val[op->args[k]].def;
		if (d >= 0 && d < t && hx[d])
			ge(m, *eng, hx[d], ct - big, x, big);
	}
	ge(m, a, c, 0, x, ct);
	ge(m, a, *eng, -big, x, big);
	return a;
}

static void
step_clock(Ilp *m)
{
	const Prob *p = m->p;
	const Func *f = p->f;
	int n = m->n, duplex = p->tg->duplex;
	int ein = 0, eout = 0, host = 0, cprev = 0, *eng, T;    /* columns; 0 is the constant 0 */
	int *fin = xcalloc(n + 1, sizeof *fin), *fout = xcalloc(n + 1, sizeof *fout);
	int *fx = xcalloc(n + 1, sizeof *fx), *hx = xcalloc(n + 1, sizeof *hx);
	double *ct = xcalloc(n + 1, sizeof *ct), big = 0;
	double *cum = xcalloc(n + 2, sizeof *cum);
	Cq *q = xcalloc(3 * n + 1, sizeof *q);
	int nq = 0, *qin = xcalloc(n + 1, sizeof *qin), *qout = xcalloc(n + 1, sizeof *qout);
	int *qfx = xcalloc(n + 1, sizeof *qfx);

	/* cum[t]: the unplanned compute before op t; a window's compute is at least its share */
	for (int t = 0; t < n; t++)
		cum[t + 1] = cum[t] + (is_comp(f, &f->op[t]) ? 1e6 * p->t[t] : 0);
	for (int i = 0; i < n; i++) {
		if (m->x[i]) {
			ct[i] = 1e6 * copy_time(p, p->b[i]);
			big += 2 * ct[i];
		}
		if (is_copy(f, i))
			for (int t = i; t < n; t++)
				if (t == i || R(m, t, i))
					big += 1e6 * p->t[i];    /* and each time it may be fetched again */
	}
	for (int t = 0; t < n; t++) {
		const Op *op = &f->op[t];
		int A, D, r;
		double w;

		/* the swap_ins issued before op t (in ascending ops, as remat.c issues them), on the
		 * engine to the accelerator */
		eng = duplex ? &ein : &eout;
		for (int k = 0; k < n; k++)
			if (m->x[k] && m->sw[k].in == t) {
				fin[k] = *eng = copy(m, *eng, cprev, m->x[k], ct[k]);
				q[nq] = (Cq){ cprev, m->x[k], eng == &ein, ct[k], cum[t], 3 * t, 0, 0 };
				qin[k] = nq++;
				if (duplex && fout[k])
					ge(m, fin[k], fout[k], ct[k] - big, m->x[k], big);
			}
		/* their waits, then the recomputations and op t: the compute from A (cur) to each
		 * param fetched again (a copy, awaited at once: refetch) and on to op t's end, D */
		A = waits(m, cprev, t, 1, fin, q, qin, cum[t], big);
		D = A;
		for (int i = 0, cur = A, first = 0; i <= t; i++) {
			if (i < t && !(R(m, t, i) && is_copy(f, i)))
				continue;
			D = tvar(m);
			r = row(m, GLP_LO, i == t && is_comp(f, op) ? 1e6 * p->t[t] : 0, 0);
			coef(m, r, D, 1);
			coef(m, r, cur, -1);
			w = wv(m, cur) + m->rlo[r];
			for (int j = first; j < i; j++)
				if (R(m, t, j)) {
					coef(m, r, R(m, t, j), -1e6 * p->t[j]);
					w += 1e6 * p->t[j] * wv(m, R(m, t, j));
				}
			if (w > m->warm[D])
				m->warm[D] = w;
			if (i < t) {
				eng = op_copy_in(p->tg, &f->op[i]) ? &ein : &eout;
				cur = refetch(m, t, i, D, eng, hx, big);
				first = i + 1;
			}
		}
		if (is_comp(f, op))
			for (int a = 0; a < op->nargs; a++) {
				int d = f->val[op->args[a]].def;
				if (d >= 0 && d < t && fx[d]) {
					ge(m, D, fx[d], 1e6 * p->t[t], 0, 0);
					if (!q[qfx[d]].w)
						q[qfx[d]].w = D, q[qfx[d]].wp = 3 * t + 2;
				}
				if (d >= 0 && d < t && hx[d])
					ge(m, D, hx[d], 1e6 * p->t[t], 0, 0);
			}
		if (is_copy(f, t)) {
			/* a copy of the step itself (a param's fetch): op t on its engine */
			eng = op_copy_in(p->tg, op) ? &ein : &eout;
			fx[t] = *eng = copy(m, *eng, D, 0, 1e6 * p->t[t]);
			qfx[t] = nq;
			q[nq++] = (Cq){ D, 0, eng == &ein, 1e6 * p->t[t], cum[t + 1], 3 * t + 2, 0, 0 };
			for (int a = 0; a < op->nargs; a++) {
				int d = f->val[op->args[a]].def;
				if (d >= 0 && d < t && hx[d])
					ge(m, fx[t], hx[d], 1e6 * p->t[t], 0, 0);
			}
		}
		if (op_on_host(f, op))
			host = hx[t] = host_update(m, t, host, eout, D, fx);
		/* the swap_outs issued after it, then the waits that end there */
		for (int k = 0; k < n; k++)
			if (m->x[k] && m->sw[k].out == t && !plan_is_fetch(f, &f->op[k])) {
				fout[k] = eout = copy(m, eout, D, m->x[k], ct[k]);
				q[nq] = (Cq){ D, m->x[k], 0, ct[k], cum[t + 1], 3 * t + 2, 0, 0 };
				qout[k] = nq++;
			}
		cprev = waits(m, D, t, 0, fout, q, qout, cum[t + 1], big);
	}
	window_rows(m, q, nq, cum);
	T = tvar(m);
	ge(m, T, cprev, 0, 0, 0);
	ge(m, T, ein, 0, 0, 0);
	ge(m, T, eout, 0, 0, 0);
	ge(m, T, host, 0, 0, 0);
	m->cobj[T] = 1;
	m->tcol = T;
	m->obj0 = -1e6 * p->time;
	free(fin), free(fout), free(fx), free(hx), free(ct);
	free(cum), free(q), free(qin), free(qout), free(qfx);
}

/* Build the program. With a warm plan, also the start solution (FREE and U follow from R, S). */
static void
build(Ilp *m, const Prob *p, int64_t budget, const Plan *warm)
{
	int n = p->n;
	double B = kib(budget);
	int *kt = xmalloc((n + 1) * sizeof *kt), nk;
	int *ucol = xmalloc((n + 1) * sizeof *ucol);

	m->p = p;
	m->n = n;
	m->dec = xcalloc(n + 1, 1);
	m->s0 = xcalloc(n + 1, sizeof *m->s0);
	m->x = xcalloc(n + 1, sizeof *m->x);
	m->rhi = xcalloc(n + 1, sizeof *m->rhi);
	m->shi = xcalloc(n + 1, sizeof *m->shi);
	m->sw = xcalloc(n + 1, sizeof *m->sw);
	for (int i = 0; i < n; i++)
		m->dec[i] = p->fwd[i] && !p->isres[i] && p->b[i] > 0 && (!m->mask || m->mask[i]);
	/* i may be needed until its last use, or to recompute a user as late as that can be. */
	for (int i = n - 1; i >= 0; i--) {
		if (!m->dec[i])
			continue;
		m->shi[i] = p->lastuse[i];
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			if (m->dec[u] && m->rhi[u] > m->shi[i])
				m->shi[i] = m->rhi[u];
		}
		m->rhi[i] = m->shi[i] < p->clob[i] - 1 ? m->shi[i] : p->clob[i] - 1;
	}
	/* Stages that may read i: its users' stages, and those where a user may be recomputed. */
	m->need = xcalloc((size_t)n * n + 1, 1);
	m->rcol = xcalloc((size_t)n * n + 1, sizeof *m->rcol);
	for (int i = n - 1; i >= 0; i--) {
		if (!m->dec[i])
			continue;
		for (int k = 0; k < p->nuse[i]; k++) {
			int u = p->use[i][k];
			m->need[(size_t)u * n + i] = 1;
			if (m->dec[u])
				for (int t = u + 1; t <= m->rhi[u]; t++)
					if (m->need[(size_t)t * n + u])
						m->need[(size_t)t * n + i] = 1;
		}
	}
	/* The clock where a copy may run (tl 2: always); without copies it is the sum of the
	 * recomputations' seconds, and Checkmate's objective is that sum: the same programs,
	 * which GLPK solves faster without the clock's columns (ilp-test, whose chains and DAGs
	 * copy nothing: 55 s with them, 18 s without) */
	if (m->tl == 1) {
		int copies = 0;
		for (int i = 0; i < n && !copies; i++)
			copies = (p->bw > 0 && m->dec[i] && p->cand[i]) || (opinfo[p->f->op[i].kind].flags & F_COPY);
		m->tl = copies;
	}
	/* R, S and X columns; recomputing i costs its time. */
	for (int i = 0; i < n; i++) {
		if (!m->dec[i])
			continue;
		for (int t = i + 1; t <= m->rhi[i]; t++)
			if (m->need[(size_t)t * n + i])
				m->rcol[(size_t)t * n + i] = col(m, 'B', 0, 1, m->tl ? 0 : 1e6 * p->t[i]);
		for (int t = i + 1; t <= m->shi[i]; t++) {
			int c = col(m, 'B', 0, 1, 0);
			if (t == i + 1)
				m->s0[i] = c;
		}
		if (p->bw > 0 && p->cand[i]) {
			plan_place_swap(p, i, p->split[i], &m->sw[i]);
			/* where the start swaps i, as it places the copies, so that the start is in
			 * the program: relax.c moves a swap_in later than plan_place_swap's (the
			 * classifier under cuda at 50%, placed: four swap_ins one op later, which the
			 * program read as 47 KiB over the budget), and a recomputation that reads i
			 * before its first late use brings it back there (skipnet under mt3000 at
			 * 50%, placed) */
			for (int s = 0; warm && s < warm->nsw; s++)
				if (warm->sw[s].op == i && warm->sw[s].inwait > p->lastearly[i] &&
				    warm->sw[s].inwait <= p->split[i])
					m->sw[i] = warm->sw[s];
			m->x[i] = col(m, 'B', 0, 1, m->tl ? 0 : 1e6 * swap_cost(p, i, m->sw[i].inwait));
		}
	}
	if (warm)
		warm_rs(m, warm);
	if (m->npe)
		place_cols(m);
	for (int t = 0; t < n; t++) {
		double fixed = kib(m->fix ? m->fix[t] : p->aprof[t]) + (m->corr ? kib(m->corr[t]) : 0);
		int first = 1, prevk = -1, ur;

		/* The ops computed in stage t, in the order they run. */
		nk = 0;
		for (int i = 0; i < t; i++)
			if (R(m, t, i))
				kt[nk++] = i;
		kt[nk++] = t;
		for (int i = 0; i < n && i <= t; i++)
			if (m->dec[i] && t <= p->lastuse[i] && !m->fix)
				fixed -= kib(p->ab[i]);
		/* Swap buffers: the swapped-in copy from its swap_in, the source until its wait. */
		for (int q = 0; q < nk; q++) {
			int k = kt[q], rk = k == t ? 0 : R(m, t, k);
			for (int a = 0; a < p->ndep[k]; a++) {
				int i = p->dep[k][a];
				if (!m->dec[i])
					continue;
				if (k == t) {
					/* op t reads i: computed here or resident */
					int r = row(m, GLP_LO, 1, 0);
					coef(m, r, R(m, t, i), 1);
					coef(m, r, S(m, t, i), 1);
					if (!R(m, t, i) && !S(m, t, i) && i != t)
						die("ilp: %d reads %d with nothing to bring it", t, i);
				} else {
					int r = row(m, GLP_UP, 0, 0);
					coef(m, r, rk, 1);
					coef(m, r, R(m, t, i), -1);
					coef(m, r, S(m, t, i), -1);
				}
			}
		}
		/* S[t+1,i] <= S[t,i] + R[t,i] (+ X[i] where the swap brings i back). */
		for (int i = 0; i < t + 1 && i < n; i++) {
			int c = S(m, t + 1, i), r;
			if (!c)
				continue;
			r = row(m, GLP_UP, 0, 0);
			coef(m, r, c, 1);
			coef(m, r, S(m, t, i), -1);
			coef(m, r, R(m, t, i), -1);
			if (m->x[i] && t + 1 == m->sw[i].inwait)
				coef(m, r, m->x[i], -1);
			if (i == t)
				m->rlo[r] = 0, m->rhi_[r] = 1;     /* computed at its own stage */
		}
		/* A swap's source stays resident until the copy's wait. */
		for (int i = 0; i < t; i++)
			if (m->x[i] && t > p->lastearly[i] && t <= src_until(m, i) && S(m, t, i)) {
				int r = row(m, GLP_LO, 0, 0);
				coef(m, r, S(m, t, i), 1);
				coef(m, r, m->x[i], -1);
			}
		/* Memory while each computed op runs. */
		for (int q = 0; q < nk; q++) {
			int k = kt[q], rk = k == t ? 0 : R(m, t, k);
			double w = 0;
			ucol[q] = col(m, 'C', 0, B, 0);
			ur = row(m, GLP_FX, 0, 0);
			coef(m, ur, ucol[q], 1);
			if (first) {
				/* U = fixed + resident + the first op's result; before op t, its own result
				 * is not there yet (it is added at op t) */
				double f0 = fixed - (m->dec[t] || m->fix ? 0 : kib(p->ab[t]));
				m->rlo[ur] = m->rhi_[ur] = f0;
				w = f0;
				for (int e = 0; e < m->npe; e++) {
					coef(m, ur, m->ycol[e], kib(m->pe[e].off[t]));
					w -= kib(m->pe[e].off[t]) * m->warm[m->ycol[e]];
				}
				for (int i = 0; i < t; i++) {
					int c = S(m, t, i);
					coef(m, ur, c, -kib(p->ab[i]));
					w += kib(p->ab[i]) * wv(m, c);
					if (m->x[i] && t >= m->sw[i].in && t < m->sw[i].inwait) {
						coef(m, ur, m->x[i], -kib(p->ab[i]));
						w += kib(p->ab[i]) * wv(m, m->x[i]);
					}
				}
				first = 0;
			} else {
				coef(m, ur, ucol[q - 1], -1);
				w = m->warm[ucol[q - 1]];
				/* frees after the previous op */
				for (int i = 0; i <= prevk; i++) {
					int fc, r1, r2;
					double hzw;
					if (!m->dec[i] || t > m->shi[i] + (i == t))
						continue;
					if (i != prevk && !reads_dep(p, prevk, i))
						continue;
					/* FREE[t,i,prevk]: i freed after prevk, its last reader in the stage:
					 * prevk computed, i not kept into t+1, no later reader in the stage
					 * computed (op t, always computed and last, reading it: never, no column). One
					 * row per hazard, FREE <= 1 - hazard, and FREE >= 1 - their sum.
					 * Checkmate sums the first into one, hz FREE + hazards <= hz, whose
					 * relaxation frees part of a value kept or still read: skipnet under
					 * mt3000 at 50%, placed, its bound 56.4 us over the step, 62.6 so. */
					if (reads_dep(p, t, i))
						continue;
					fc = col(m, 'B', 0, 1, 0);
					r2 = row(m, GLP_LO, prevk == t ? 1 : 0, 0);
					coef(m, r2, fc, 1);
					coef(m, r2, S(m, t + 1, i), 1);
					hzw = wv(m, S(m, t + 1, i));
					if (S(m, t + 1, i)) {
						r1 = row(m, GLP_UP, 0, 1);
						coef(m, r1, fc, 1);
						coef(m, r1, S(m, t + 1, i), 1);
					}
					if (prevk != t) {
						coef(m, r2, R(m, t, prevk), -1);
						hzw += 1 - wv(m, R(m, t, prevk));
						r1 = row(m, GLP_UP, 0, 0);
						coef(m, r1, fc, 1);
						coef(m, r1, R(m, t, prevk), -1);
					}
					for (int q2 = q; q2 < nk; q2++) {
						int j = kt[q2];
						if (!reads_dep(p, j, i))
							continue;
						coef(m, r2, R(m, t, j), 1);
						hzw += wv(m, R(m, t, j));
						r1 = row(m, GLP_UP, 0, 1);
						coef(m, r1, fc, 1);
						coef(m, r1, R(m, t, j), 1);
					}
					m->warm[fc] = hzw < 0.5;
					coef(m, ur, fc, kib(p->ab[i]));
					w -= kib(p->ab[i]) * m->warm[fc];
				}
			}
			/* the op's own result */
			if (k == t) {
				if (m->dec[t] || !m->fix) {
					m->rlo[ur] += kib(p->ab[t]);
					m->rhi_[ur] += kib(p->ab[t]);
					w += kib(p->ab[t]);
				}
			} else {
				coef(m, ur, rk, -kib(p->ab[k]));
				w += kib(p->ab[k]) * wv(m, rk);
			}
			m->warm[ucol[q]] = w;
			prevk = k;
		}
	}
	if (m->tl)
		step_clock(m);
	free(kt);
	free(ucol);
}

/* Load m into GLPK and solve it within the limits (tlim > 0: seconds from t0; else m->nodes
 * branch-and-bound nodes and ILP_ITERS simplex iterations, no clock), started from m->warm
 * when m->warmok. Sets pl->stop, pl->gap, pl->obj (the objective's seconds, base added by the
 * caller); 0 with the columns' values in val[1..nc], or -1 if no solution was found. */
static int
run(Ilp *m, double tlim, double t0, Plan *pl, double *val)
{
	glp_prob *lp;
	glp_smcp sp;
	glp_iocp ip;
	int ret, st, ok = -1;

	m->havewarm = m->warmok;
	m->lastgap = -1;
	glp_term_out(m->trace ? GLP_ON : GLP_OFF);
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	glp_set_obj_coef(lp, 0, m->obj0);
	if (m->nc)
		glp_add_cols(lp, m->nc);
	for (int c = 1; c <= m->nc; c++) {
		glp_set_col_kind(lp, c, m->ckind[c] == 'B' ? GLP_BV : GLP_CV);
		if (m->ckind[c] == 'C' && m->chi[c] < 0)
			glp_set_col_bnds(lp, c, GLP_LO, m->clo[c], 0);
		else if (m->ckind[c] == 'C')
			glp_set_col_bnds(lp, c, GLP_DB, m->clo[c], m->chi[c] > 0 ? m->chi[c] : 0);
		glp_set_obj_coef(lp, c, m->cobj[c]);
	}
	if (m->nr)
		glp_add_rows(lp, m->nr);
	for (int r = 1; r <= m->nr; r++) {
		int ty = m->rtype[r];
		if (ty == GLP_FX)
			glp_set_row_bnds(lp, r, GLP_FX, m->rlo[r], m->rlo[r]);
		else if (ty == GLP_UP)
			glp_set_row_bnds(lp, r, GLP_UP, 0, m->rhi_[r]);
		else
			glp_set_row_bnds(lp, r, GLP_LO, m->rlo[r], 0);
	}
	glp_load_matrix(lp, m->nz, m->ia, m->ja, m->ar);
	/* the cuts, as rows: added only where the relaxation broke them, the relaxation solved
	 * again took longer than with them all from the start (skipnet under cuda at 50%: 4.1 s
	 * against 1.3 s) */
	if (m->ncut) {
		int r0 = glp_add_rows(lp, m->ncut), *ind = xmalloc((m->cnz + 1) * sizeof *ind);
		double *val = xmalloc((m->cnz + 1) * sizeof *val);
		for (int k = 0; k < m->ncut; k++) {
			int nz = m->cbeg[k + 1] - m->cbeg[k];
			for (int z = 0; z < nz; z++)
				ind[z + 1] = m->cja[m->cbeg[k] + z], val[z + 1] = m->car[m->cbeg[k] + z];
			glp_set_mat_row(lp, r0 + k, nz, ind, val);
			glp_set_row_bnds(lp, r0 + k, GLP_LO, m->cutlo[k], 0);
		}
		free(ind);
		free(val);
	}
	glp_scale_prob(lp, GLP_SF_AUTO);
	if (m->bas) {
		for (int r = 1; r <= m->nr; r++)
			glp_set_row_stat(lp, r, GLP_NS);
		for (int c = 1; c <= m->nc; c++)
			glp_set_col_stat(lp, c, m->bas[c] ? GLP_BS : GLP_NL);
	}
	glp_init_smcp(&sp);
	sp.msg_lev = m->trace ? GLP_MSG_ON : GLP_MSG_OFF;
	/* Without --solver-time no limit reads a clock: simplex iterations (ILP_WORK) and nodes,
	 * both counted in the callback, so the plan is the same on any machine. */
	m->itmax = tlim > 0 ? 0 : (int)fmax(ILP_ITMIN, fmin(ILP_WORK / (m->nz + m->cnz + 1), INT_MAX / 2));
	sp.tm_lim = tlim > 0 ? (int)(tlim * 1000) : INT_MAX;
	sp.it_lim = tlim > 0 ? INT_MAX : m->itmax;
	sp.meth = GLP_DUALP;     /* much faster than the primal on these programs */
	glp_init_iocp(&ip);
	ip.msg_lev = m->trace ? GLP_MSG_ON : GLP_MSG_OFF;
	ip.tm_lim = tlim > 0 ? (int)(tlim * 1000) : INT_MAX;
	ip.cb_func = callback;
	ip.cb_info = m;
	ip.mip_gap = 1e-9;
	/* Cuts close Checkmate's weak relaxation far faster than branching alone. */
	ip.mir_cuts = ip.gmi_cuts = ip.cov_cuts = ip.clq_cuts = m->bas || m->p->nocuts ? GLP_OFF : GLP_ON;
	/* Proximity search from the start: where the start leaves copies unhidden in this
	 * model and the relaxation's bound is far below it, branch and cut alone may not find
	 * the better plans next to it in the time (skipnet at 35%: none in 60 s; with it, the
	 * optimum and its proof in 2 s). A quarter of the time, at most 5 s. GLPK bounds it by
	 * time alone, so it runs only when the user gave a time (--solver-time), and not on the
	 * placement's programs (m->npe): small ones, solved in a few nodes, where it took another
	 * of their optima than branch and cut without a time takes (their objective is linearized
	 * around a placement; the optima measure apart): with --solver-time=30 the classifier
	 * under cuda at 50% ended 2.71% over the step (0.34% without a time, and now with one),
	 * widemlp under cuda at 50% 364.38% (321.19%) and at 35% 477.07% (480.65%). */
	ip.ps_heur = tlim > 0 && !m->npe ? GLP_ON : GLP_OFF;
	ip.fp_heur = tlim > 0 ? GLP_OFF : GLP_ON;
	ip.ps_tm_lim = (int)(tlim * 250) < 5000 ? (int)(tlim * 250) : 5000;
	/* The clock's programs: GLPK's default branching (Driebeck-Tomlin) computes tableau rows
	 * for every fractional column at every node, and its feasibility pump ran at every node:
	 * skipnet under cuda at 50%, 50 nodes, took 42.6 s with both, 3.6 s with neither (the
	 * first fractional column branched on), and 2.0 s without the cuts too; the same plans on
	 * every example at 50% and 35% under both targets, proved or not the same */
	if (m->tl) {
		ip.fp_heur = GLP_OFF;
		ip.br_tech = GLP_BR_FFV;
		ip.mir_cuts = ip.gmi_cuts = ip.cov_cuts = ip.clq_cuts = GLP_OFF;
	}
	if (m->trace) {
		fprintf(stderr, "ilp: %d columns, %d rows and %d cuts, %d nonzeros; ", m->nc, m->nr,
		        m->ncut, m->nz + m->cnz);
		if (tlim > 0)
			fprintf(stderr, "time limit %.3f s\n", tlim);
		else
			fprintf(stderr, "iteration limit %d\n", m->itmax);
	}
	m->bound = -1;
	ret = glp_simplex(lp, &sp);
	if (ret == 0 && glp_get_status(lp) == GLP_OPT)
		m->bound = glp_get_obj_val(lp);
	if (m->trace)
		fprintf(stderr, "ilp: relaxation %.3f s, %d iterations, simplex %d, status %d, bound %g\n",
		        plan_clock() - t0, glp_get_it_cnt(lp), ret, glp_get_status(lp), glp_get_obj_val(lp));
	pl->stop = ret == GLP_EITLIM ? "iteration limit" : ret == GLP_ETMLIM ? "time limit" :
	           ret == 0 && glp_get_status(lp) == GLP_NOFEAS ? "no incumbent" : "no relaxation";
	/* a relaxation that took over half the work is not branched on (ILP_WORK) */
	if (ret == 0 && glp_get_status(lp) == GLP_OPT && m->itmax &&
	    (double)glp_get_it_cnt(lp) * (m->nz + m->cnz + 1) > ILP_WORK / 2)
		pl->stop = "iteration limit";
	else if (ret == 0 && glp_get_status(lp) == GLP_OPT) {
		double left = tlim - (plan_clock() - t0);
		if (tlim > 0)
			ip.tm_lim = left > 0.05 ? (int)(left * 1000) : 50;
		glp_intopt(lp, &ip);
		st = glp_mip_status(lp);
		if (m->trace)
			fprintf(stderr, "ilp: branch and cut %.3f s, %d iterations in all, %ld nodes\n",
			        plan_clock() - t0, glp_get_it_cnt(lp), m->seen);
		pl->stop = st == GLP_OPT ? "optimal" : m->hit == 2 ? "iteration limit" : m->hit ? "node limit" :
		           st == GLP_FEAS ? "time limit" : "no incumbent";
		if (st == GLP_OPT || st == GLP_FEAS) {
			for (int c = 1; c <= m->nc; c++)
				val[c] = glp_mip_col_val(lp, c);
			pl->obj = glp_mip_obj_val(lp) / 1e6;
			/* GLPK's gap is huge or infinite before it has a bound: nothing proved. */
			pl->gap = st == GLP_OPT ? 0 : m->lastgap >= 0 && m->lastgap < 1 ? m->lastgap : 1;
			ok = 0;
		}
	}
	glp_delete_prob(lp);
	/* GLPK's environment is the calling thread's (mtc plans on a thread of its own, which
	 * ends before the process): freed with each solve, made again by the next */
	glp_free_env();
	return ok;
}

/* The seconds over the unplanned step proved below every plan: GLPK's bound where it found a
 * plan (its objective less the gap), else the relaxation's (0: nothing proved). */
static double
proved_lb(const Ilp *m, const Plan *pl, int found)
{
	if (found)
		return fmax(0, pl->obj * (1 - pl->gap));
	return m->bound > 0 ? m->bound / 1e6 : 0;
}

/* The gap of a plan as measured (plan_eval) against lb, the seconds over the unplanned step
 * proved below every plan: 0 where it takes no more, else the part of its measured overhead
 * not proved necessary. The program's own objective is not the measure: it prices each copy
 * alone, and a plan optimal in it may measure slower (the copies share an engine). */
double
plan_gap(const Prob *p, const Plan *pl, double lb)
{
	double over = pl->time - p->time;

	if (over <= lb + 1e-9 * p->time)
		return 0;
	return lb > 0 ? 1 - lb / over : 1;
}

/* The program over the chain's stages (chain.c's flow): a binary per choice at a state, each
 * state chosen as often as the columns that need it (the root once). The columns of the DP's
 * own plan are the start. -1 if the model has no root. */
static int
build_chain(Ilp *m, Chain *ch, const ChModel *cm, int64_t budget)
{
	int *nrow = xcalloc(cm->nnode + 1, sizeof *nrow);
	uint8_t *pick = xcalloc(cm->ncol + 1, 1);

	if (cm->root < 0) {
		free(nrow);
		free(pick);
		return -1;
	}
	for (int k = 0; k < cm->ncol; k++)
		col(m, 'B', 0, 1, 1e6 * cm->col[k].cost);
	/* each state: its columns, less the columns that need it, = 1 at the root, else 0 */
	for (int k = 0; k < cm->ncol; k++) {
		int nds[3] = { cm->col[k].node, cm->col[k].need[0], cm->col[k].need[1] };
		for (int i = 0; i < 3; i++) {
			int nd = nds[i];
			if (nd < 0)
				continue;
			if (!nrow[nd])
				nrow[nd] = row(m, GLP_FX, nd == cm->root, nd == cm->root);
			coef(m, nrow[nd], k + 1, i == 0 ? 1 : -1);
		}
	}
	if (!nrow[cm->root])
		nrow[cm->root] = row(m, GLP_FX, 1, 1);
	/* the start basis: each state's cheapest column (one a state, as there is a row a state) */
	m->bas = xcalloc(m->nc + 2, 1);
	for (int s = 0; s < cm->nnode; s++)
		m->bas[cm->best[s] + 1] = 1;
	m->warmok = chain_warm(ch, budget, cm, pick) == 0;
	for (int k = 0; k < cm->ncol; k++)
		m->warm[k + 1] = pick[k];
	if (m->warmok)
		m->warmok = warm_ok(m);
	free(nrow);
	free(pick);
	return 0;
}

/* Could a swap beat a plan ub seconds over the unplanned step? Not if each costs more than
 * that in the program's model (swap_cost). */
static int
swaps_pay(const Prob *p, double ub)
{
	for (int i = 0; p->bw > 0 && i < p->n; i++)
		if (p->cand[i] && swap_cost(p, i, p->split[i]) < ub)
			return 1;
	return 0;
}

/* The program over the chain's stages; 0 with pl filled, -1 if none was found. */
static int
chain_program(const Prob *p, Chain *ch, int64_t budget, double tlim, double ub, Plan *pl)
{
	Ilp m;
	double t0 = plan_clock(), *val, lb = 0;
	ChModel *cm = chain_model(ch, budget, ub, CHAIN_BUILD);
	int ok = -1, trace = getenv("MTC_ILP_TRACE") != NULL;

	/* Past CHAIN_COLS: Checkmate's over the ops, as without it. */
	if (cm->ncol > CHAIN_COLS) {
		if (trace)
			fprintf(stderr, "ilp: chain program too large (%d columns, over %d)\n", cm->ncol, CHAIN_COLS);
		chain_model_free(cm);
		return -1;
	}
	memset(&m, 0, sizeof m);
	m.p = p;
	m.trace = trace;
	m.nodes = p->nodes;
	if (build_chain(&m, ch, cm, budget) < 0) {
		ilp_free(&m);
		chain_model_free(cm);
		return -1;
	}
	if (m.trace)
		fprintf(stderr, "ilp: chain program, %d columns of choices, %d states, start %s\n", cm->ncol,
		        cm->nnode, m.warmok ? "taken" : "none");
	val = xcalloc(m.nc + 2, sizeof *val);
	if (run(&m, tlim, t0, pl, val) == 0) {
		uint8_t *pick = xcalloc(cm->ncol + 1, 1);
		for (int k = 0; k < cm->ncol; k++)
			pick[k] = val[k + 1] > 0.5;
		chain_model_plan(ch, cm, pick, pl);
		lb = proved_lb(&m, pl, 1);
		pl->obj += p->time;
		free(pick);
		ok = 0;
	} else if (m.warmok) {
		/* nothing found in the limits: the start, with what the relaxation proved */
		uint8_t *pick = xcalloc(cm->ncol + 1, 1);
		for (int k = 0; k < cm->ncol; k++)
			pick[k] = m.warm[k + 1] > 0.5;
		chain_model_plan(ch, cm, pick, pl);
		pl->obj = -1;
		lb = proved_lb(&m, pl, 0);
		free(pick);
		ok = 0;
	}
	free(val);
	ilp_free(&m);
	chain_model_free(cm);
	if (ok == 0) {
		plan_eval(p, pl, budget);
		pl->gap = plan_gap(p, pl, lb);
		pl->lb = m.warmok ? lb : -1;
	}
	pl->solver = "ilp";
	pl->stime = plan_clock() - t0;
	return ok;
}

int
solve_ilp_chain(const Prob *p, int64_t budget, double tlim, const Plan *warm, Plan *pl)
{
	/* only where no swap can pay: the chain's plans recompute */
	double ub = warm && warm->feasible ? (warm->time - p->time) * (1 + 1e-9) : -1;
	Chain *ch = ub >= 0 && !swaps_pay(p, ub) ? tso_chain(p) : NULL;
	int r = -1;

	if (ch) {
		r = chain_program(p, ch, budget, tlim, ub, pl);
		/* Its plan's live bytes fit but its layout does not: the program again with each
		 * recomputed stage's input held to the stage's end (plans that leave the layout
		 * room, chain_hold_inputs), its plan measured against the first program's bound,
		 * which holds below every plan whose live bytes fit */
		if (r == 0 && pl->peak <= budget && !plan_fits(p, pl, budget)) {
			Plan *h = plan_new(p);
			double lb = pl->lb;
			chain_hold_inputs(ch);
			if (chain_program(p, ch, budget, tlim, ub, h) == 0 && plan_fits(p, h, budget)) {
				h->lb = lb;
				h->gap = plan_gap(p, h, lb);
				h->stime += pl->stime;
				plan_copy(pl, h);
			}
			plan_free(h);
		}
		chain_free(ch);
	}
	return r;
}

int
solve_ilp(const Prob *p, int64_t budget, double tlim, const Plan *warm, Plan *pl)
{
	/* On a chain, the program over the chain's stages; else Checkmate's over the ops. */
	if (solve_ilp_chain(p, budget, tlim, warm, pl) == 0)
		return 0;
	return solve_ilp_part(p, budget, tlim, warm, NULL, NULL, pl);
}

/* Checkmate's program over the ops, of the values mask decides (NULL: all), the rest fix's
 * bytes (NULL: the profile), with the placement's columns where npe > 0 (their levels into
 * lvl, the plan then of f with everything on the accelerator, not measured). */
static int
solve_ops(const Prob *p, int64_t budget, double tlim, const Plan *warm, const uint8_t *mask,
          const int64_t *fix, const PlaceEffect *pe, int npe, int kmax, const int64_t *corr,
          Plan *pl, uint8_t *lvl)
{
	Ilp m;
	int ok = -1;
	double t0 = plan_clock(), *val, lb = 0;

	memset(&m, 0, sizeof m);
	m.trace = getenv("MTC_ILP_TRACE") != NULL;
	m.mask = mask;
	m.fix = fix;
	m.pe = pe;
	m.npe = npe;
	m.kmax = kmax;
	m.corr = corr;
	m.tl = !mask;
	build(&m, p, budget, warm);
	m.warmok = (warm || npe) && warm_ok(&m);
	if (m.trace)
		fprintf(stderr, "ilp: start solution %s\n", !warm && !npe ? "none" : m.warmok ? "feasible" : "infeasible");
	if (mask && warm && !m.warmok) {
		/* A block's program that does not hold the plan it is to improve: GLPK then
		 * searches from nothing, and on MobileNet's blocks (10k columns) its 50 nodes took
		 * 53 s and found no plan at all. The block keeps its plan. */
		ilp_free(&m);
		pl->stop = "start outside the program";
		pl->stime = plan_clock() - t0;
		return -1;
	}
	m.nodes = p->nodes;
	val = xcalloc(m.nc + 2, sizeof *val);
	if (run(&m, tlim, t0, pl, val) == 0) {
		memset(pl->rec, 0, (size_t)p->n * p->n + 1);
		pl->nsw = 0;
		for (int i = 0; i < p->n; i++) {
			if (!m.dec[i])
				continue;
			for (int t = i + 1; t <= m.rhi[i]; t++)
				if (R(&m, t, i))
					pl->rec[(size_t)t * p->n + i] = val[R(&m, t, i)] > 0.5;
			if (m.x[i] && val[m.x[i]] > 0.5)
				pl->sw[pl->nsw++] = m.sw[i];
		}
		for (int e = 0; e < npe; e++)
			if (val[m.ycol[e]] > 0.5)
				lvl[pe[e].op] = (uint8_t)pe[e].lvl;
		lb = proved_lb(&m, pl, 1);
		pl->obj += p->time;
		ok = 0;
	}
	free(val);
	/* Out of time before GLPK had an incumbent: the start solution is the incumbent, with
	 * what the relaxation proved about it (gap 100%: nothing). */
	if (ok && m.warmok) {
		const char *stop = pl->stop;
		if (warm) {
			plan_copy(pl, warm);
			pl->stop = stop;
		}
		for (int e = 0; e < npe; e++)
			if (m.warm[m.ycol[e]] > 0.5)
				lvl[pe[e].op] = (uint8_t)pe[e].lvl;
		pl->obj = -1;
		lb = proved_lb(&m, pl, 0);
		pl->gap = 1;
		ok = 0;
	}
	ilp_free(&m);
	if (ok == 0 && !npe) {
		plan_eval(p, pl, budget);
		if (m.trace)
			fprintf(stderr, "ilp: the plan's objective %.9g s, measured %.9g s\n", pl->obj, pl->time);
		pl->gap = plan_gap(p, pl, lb);
		pl->lb = !mask && warm && m.warmok ? lb : -1;
	}
	pl->solver = "ilp";
	pl->stime = plan_clock() - t0;
	return ok;
}

int
solve_ilp_part(const Prob *p, int64_t budget, double tlim, const Plan *warm, const uint8_t *mask,
               const int64_t *fix, Plan *pl)
{
	return solve_ops(p, budget, tlim, warm, mask, fix, NULL, 0, 0, NULL, pl, NULL);
}

int
solve_ilp_place(const Prob *p, int64_t budget, double tlim, const PlaceEffect *pe, int npe,
                int kmax, const uint8_t *mask, const int64_t *corr, Plan *pl, uint8_t *lvl)
{
	return solve_ops(p, budget, tlim, NULL, mask, NULL, pe, npe, kmax, corr, pl, lvl);
}

/* The clock's seconds for pl (the least clocks its rows allow) into *sec; -1 where pl is
 * outside the program (a recomputation it has no column for, a swap brought back after its
 * first late use, a row it breaks). The program takes pl's swaps as pl places them. */
int
ilp_clock(const Prob *p, const Plan *pl, double *sec)
{
	Ilp m;
	int ok = 0;

	memset(&m, 0, sizeof m);
	m.tl = 2;
	build(&m, p, p->peak * 16 + (1 << 30), pl);
	for (int t = 0; t < p->n && ok == 0; t++)
		for (int i = 0; i < t && ok == 0; i++)
			if (pl->rec[(size_t)t * p->n + i] && !R(&m, t, i))
				ok = -1;
	for (int s = 0; s < pl->nsw && ok == 0; s++) {
		const Swap *a = &pl->sw[s], *b = &m.sw[a->op];
		if (!m.x[a->op] || a->out != b->out || a->outwait != b->outwait || a->in != b->in ||
		    a->inwait != b->inwait)
			ok = -1;
	}
	if (ok == 0 && !warm_ok(&m))
		ok = -1;
	*sec = m.warm[m.tcol] / 1e6;
	ilp_free(&m);
	return ok;
}
