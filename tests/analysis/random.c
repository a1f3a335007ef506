/* random.c: properties of the analyses over random functions (seeded): every schedule is a
 * topological order that keeps in-place updates where they were against other accesses;
 * live bytes add up; tensors alive together never share arena bytes; the arena is never
 * below the lower bound; the DAG orders every pair of tensors that share bytes; the memory-
 * aware schedule never peaks above the program order. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "tb.h"

enum { NSEED = 150 };

/* ops that access module tensor v, and whether they write it */
static int
touches(const Func *f, const Op *op, int v, int *w)
{
	int r = 0;
	*w = 0;
	for (int k = 0; k < op->nargs; k++)
		if (op->args[k] == v) {
			r = 1;
			*w |= k < opinfo[op->kind].nwritten;
		}
	return r;
}

static void
check_order(const Func *f, const Func *orig, const char *how, unsigned seed)
{
	int bad = 0, *pos = xcalloc(f->nop + 1, sizeof *pos);

	/* operands exist before use; values relinked */
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		pos[op->loc.col - 1] = i;
		for (int k = 0; k < op->nargs; k++) {
			int d = f->val[op->args[k]].def;
			bad |= f->val[op->args[k]].decl < 0 && !(d >= 0 && d < i);
		}
		bad |= op->res >= 0 && f->val[op->res].def != i;
	}
	CHECK(!bad, "seed %u %s: not topological", seed, how);
	/* a copy's result is used only after the wait on it */
	bad = 0;
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_WAIT)
			for (int j = 0; j < i; j++)
				for (int k = 0; k < f->op[j].nargs; k++)
					bad |= f->op[j].args[k] == f->op[i].args[0] && f->op[j].res != f->op[i].args[0] &&
					       f->val[f->op[i].args[0]].def != j;
	CHECK(!bad, "seed %u %s: a copy's result used before its wait", seed, how);
	/* accesses to a mutated module tensor keep their order when one of them writes */
	bad = 0;
	for (int v = 0; v < f->mod->ndecl; v++)
		for (int i = 0; i < orig->nop; i++)
			for (int j = i + 1; j < orig->nop; j++) {
				int wi, wj;
				if (touches(orig, &orig->op[i], v, &wi) && touches(orig, &orig->op[j], v, &wj) && (wi || wj))
					bad |= pos[i] > pos[j];
			}
	CHECK(!bad, "seed %u %s: an in-place update moved past an access", seed, how);
	free(pos);
}

/* reach[i*n + j]: j is reachable from i in the DAG */
static char *
closure(const Dag *d, int n)
{
	char *r = xcalloc((size_t)n * n + 1, 1);
	for (int j = 0; j < n; j++)
		for (int e = d->in[j]; e < d->in[j + 1]; e++) {
			int i = d->e[e].from;
			r[(size_t)i * n + j] = 1;
			for (int k = 0; k < i; k++)
				if (r[(size_t)k * n + i])
					r[(size_t)k * n + j] = 1;
		}
	return r;
}

static void
check_analyses(const Func *f, const An *a, const Target *t, const char *how, unsigned seed)
{
	const Live *l = &a->l;
	int n = f->nop, bad = 0, badlay = 0, baddep = 0;
	char *reach;

	/* live bytes add up */
	for (int i = 0; i < n; i++) {
		int64_t s = 0, t = 0;
		for (int v = 0; v < f->nval; v++) {
			if (live_at(l, v, i))
				s += l->bytes[v];
			if (live_at(l, v, i) && l->last[v] > i)
				t += l->bytes[v];
		}
		bad |= s != l->at[i] || t != l->after[i] || l->at[i] > l->peak;
	}
	CHECK(!bad, "seed %u %s: live bytes do not add up", seed, how);
	CHECK(a->lay.arena >= l->peak, "seed %u %s: arena %lld below bound %lld", seed, how,
	      (long long)a->lay.arena, (long long)l->peak);
	/* no two values alive together (in the same zone) overlap; offsets aligned */
	reach = closure(&a->d, n);
	for (int u = 0; u < f->nval; u++) {
		const Value *x = &f->val[u];
		int64_t xs = type_bytes(&x->ty);
		badlay |= x->off < 0 || x->off % t->align || (!x->host && x->off + xs > a->lay.arena) ||
		          (x->host && x->off + xs > a->lay.host);
		for (int v = u + 1; v < f->nval; v++) {
			const Value *y = &f->val[v];
			int64_t ys = type_bytes(&y->ty);
			int share = x->host == y->host && x->off < y->off + ys && y->off < x->off + xs;
			int first, second;
			if (!share)
				continue;
			if (l->birth[u] <= l->last[v] && l->birth[v] <= l->last[u]) {
				badlay = 1;
				continue;
			}
			/* disjoint lifetimes: every op touching the first precedes the second's birth */
			first = l->last[u] < l->birth[v] ? u : v;
			second = first == u ? v : u;
			for (int i = 0; i < n; i++) {
				int uses = f->op[i].res == first;
				for (int k = 0; k < f->op[i].nargs; k++)
					uses |= f->op[i].args[k] == first;
				if (uses && !reach[(size_t)i * n + l->birth[second]])
					baddep = 1;
			}
		}
	}
	CHECK(!badlay, "seed %u %s: layout overlaps or misaligned", seed, how);
	CHECK(!baddep, "seed %u %s: shared bytes not ordered by the DAG", seed, how);
	/* cost: every op starts after its operands' producers end */
	bad = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < f->op[i].nargs; k++) {
			int d = f->val[f->op[i].args[k]].def;
			bad |= d >= 0 && a->c.start[i] < a->c.end[d] - 1e-15;
		}
	CHECK(!bad && a->c.total > 0, "seed %u %s: cost model out of order", seed, how);
	free(reach);
}

int
main(void)
{
	Target t;
	double worst = 1;
	int64_t sum[3] = { 0 };

	target_get(&t, "mt3000");
	for (unsigned seed = 1; seed <= NSEED; seed++) {
		int nops = 5 + seed % 120;
		int64_t peak[3];
		for (int k = 0; sched_names[k]; k++) {
			Module *m = tb_random(seed, nops), *o = tb_random(seed, nops);
			Func *f = m->fwd;
			An a;
			if (seed % 3 == 0)
				t.align = 256;
			else
				t.align = seed % 3 == 1 ? 64 : 4;
			tb_analyze(&a, f, &t, sched_names[k]);
			check_order(f, o->fwd, sched_names[k], seed);
			check_analyses(f, &a, &t, sched_names[k], seed);
			if ((double)a.lay.arena / a.l.peak > worst)
				worst = (double)a.lay.arena / a.l.peak;
			sum[k] += a.l.peak;
			peak[k] = a.l.peak;
			tb_free(&a);
			mod_free(m);
			mod_free(o);
		}
		CHECK(peak[0] <= peak[2], "seed %u: mem peak %lld above program order %lld", seed,
		      (long long)peak[0], (long long)peak[2]);
	}
	printf("worst arena / lower bound over %d random functions: %.4f\n", NSEED * 3, worst);
	printf("sum of peaks: mem %lld critical %lld program %lld\n", (long long)sum[0], (long long)sum[1],
	       (long long)sum[2]);
	return done();
}
