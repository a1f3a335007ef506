/* sync.c: the events of CUDA modules with swaps, checked without a GPU by simulating the two
 * streams over the generated LLVM IR.
 *
 * `sync MODEL.mir MODEL.ll...`: the .mir is the planned module (`mtc --emit=ir`), the .ll its
 * host code (`mtc --emit=llvm`, same options). From the .ll's schedule functions it reads, op
 * by op, the calls the GPU would see (born/launch/swap/wait/record/dead) and replays their
 * ordering rules: the compute stream runs its ops in order, the copy stream its copies in
 * order, a copy runs after the compute event it names, a compute wait makes later kernels
 * follow that copy (and every copy before it). Against that it checks every pair of a copy
 * and a kernel whose bytes conflict (one writes what the other reads or writes; offsets and
 * sizes from the IR's own calls, operands from the .mir), so it trusts neither passes/deps.c
 * nor backend-cuda/sync.c:
 * - race-free: each such pair is ordered as in the program;
 * - minimal: a copy waits on the compute event of an op it conflicts with (never a barrier
 *   on everything issued), and events are recorded before anything waits on them;
 * - the check can fail: dropping any copy's compute event must make some pair race.
 * Updates on the host are host functions on a stream of their own, after the copy they name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "passes.h"

#include "../check.h"

typedef struct OpT {
	int64_t off, bytes;        /* born(): the result's device bytes */
	int launch;
	int swap, out, ev, after;  /* a copy: direction, its event, the compute event it waits */
	int hu, huev;              /* an update on the host (on a stream of its own) and the copy
	                            * event it waits for (-1: none) */
	int64_t dev, host, cb;
	int nwait, wait[4];        /* copy events the compute stream waits for before the op */
	int rec;                   /* compute event recorded after it, -1 */
	int pos;                   /* the op whose launch runs this op's work */
} OpT;

typedef struct Rng { int zone; int64_t lo, hi; } Rng;

/* The integer arguments of a call line, in order (pointers skipped). */
static int
ints(const char *line, int64_t *v, int max)
{
	const char *p = strchr(line, '(');
	int n = 0;

	while (p && *p && n < max) {
		p++;
		while (*p == ' ')
			p++;
		if (strncmp(p, "i32 ", 4) == 0 || strncmp(p, "i64 ", 4) == 0)
			v[n++] = strtoll(p + 4, NULL, 10);
		p = strchr(p, ',');
	}
	return n;
}

/* The schedule function `name` of the IR text as one OpT per op; NULL when absent. */
static OpT *
trace(const char *ll, const char *name, int *nop)
{
	char hdr[128];
	const char *p, *end;
	OpT *t = NULL;
	int n = 0, cap = 0;

	snprintf(hdr, sizeof hdr, "@%s(", name);
	if (!(p = strstr(ll, hdr)) || !(end = strstr(p, "\n}\n")))
		return NULL;
	for (; p && p < end; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *c = strstr(p, "call i32 @mtc_cu_");
		const char *nl = strchr(p, '\n');
		int64_t v[8];
		OpT *o = n ? &t[n - 1] : NULL;

		if (!c || (nl && c > nl))
			continue;
		c += strlen("call i32 @mtc_cu_");
		ints(c, v, 8);
		if (strncmp(c, "born(", 5) == 0) {
			if (n == cap)
				t = xrealloc(t, (cap = cap ? 2 * cap : 64) * sizeof *t);
			o = &t[n++];
			memset(o, 0, sizeof *o);
			o->off = v[0], o->bytes = v[1], o->rec = -1, o->ev = -1, o->after = -1, o->huev = -1;
		} else if (!o) {
			continue;
		} else if (strncmp(c, "launch(", 7) == 0 || strncmp(c, "gemm(", 5) == 0) {
			o->launch = 1;
		} else if (strncmp(c, "swap(", 5) == 0) {
			o->swap = 1, o->out = (int)v[0], o->dev = v[1], o->host = v[2], o->cb = v[3];
			o->ev = (int)v[4], o->after = (int)v[5];
		} else if (strncmp(c, "host_update(", 12) == 0) {
			o->hu = 1, o->huev = (int)v[1];
		} else if (strncmp(c, "wait(", 5) == 0 && o->nwait < 4) {
			o->wait[o->nwait++] = (int)v[0];
		} else if (strncmp(c, "record(", 7) == 0) {
			o->rec = (int)v[0];
		}
	}
	*nop = n;
	return t;
}

static int
overlap(Rng a, Rng b)
{
	return a.zone == b.zone && a.lo < b.hi && b.lo < a.hi;
}

/* The bytes value v occupies: a module tensor on the accelerator is a zone of its own; one in
 * host memory sits at its offset there (the .mir's `place`). */
static Rng
where(const Func *f, const OpT *t, int v)
{
	const Value *x = &f->val[v];
	if (x->decl >= 0 && x->host)
		return (Rng){ 1, x->off, x->off + type_bytes(&x->ty) };
	if (x->decl >= 0)
		return (Rng){ 2 + x->decl, 0, 1 };
	if (x->host)
		return (Rng){ 1, t[x->def].host, t[x->def].host + t[x->def].cb };
	return (Rng){ 0, t[x->def].off, t[x->def].off + t[x->def].bytes };
}

/* What op i reads (w = 0) or writes (w = 1); n returned. */
static int
access(const Func *f, const OpT *t, int i, int w, Rng *r)
{
	const Op *o = &f->op[i];
	int n = 0;

	if (o->kind == OP_WAIT)
		return 0;
	if (o->nargs > 60)
		die("op %d has %d operands", i, o->nargs);
	/* a copy reads a decl (Adam's counter sent out, a param fetched) where the decl is */
	if (w) {
		if (o->kind == OP_SWAPOUT)
			r[n++] = (Rng){ 1, t[i].host, t[i].host + t[i].cb };
		else if (o->kind == OP_SWAPIN)
			r[n++] = (Rng){ 0, t[i].dev, t[i].dev + t[i].cb };
		else if (o->res >= 0 && o->kind != OP_SWAPHOME)
			r[n++] = where(f, t, o->res);
		for (int a = 0; a < opinfo[o->kind].nwritten && a < o->nargs; a++)
			r[n++] = where(f, t, o->args[a]);
		return n;
	}
	if (o->kind == OP_SWAPOUT)
		r[n++] = f->val[o->args[0]].decl >= 0 ? where(f, t, o->args[0]) :
		         (Rng){ 0, t[i].dev, t[i].dev + t[i].cb };
	else if (o->kind == OP_SWAPIN)
		r[n++] = f->val[o->args[0]].decl >= 0 ? where(f, t, o->args[0]) :
		         (Rng){ 1, t[i].host, t[i].host + t[i].cb };
	else if (o->kind == OP_SWAPHOME)
		r[n++] = (Rng){ 0, t[i].dev, t[i].dev + t[i].cb };
	else
		for (int a = 0; a < o->nargs; a++)
			r[n++] = where(f, t, o->args[a]);
	return n;
}

/* Do ops a and b conflict: one writes bytes the other reads or writes? */
static int
conflict(const Func *f, const OpT *t, int a, int b)
{
	Rng ra[2][64], rb[2][64];
	int na[2], nb[2];

	for (int w = 0; w < 2; w++) {
		na[w] = access(f, t, a, w, ra[w]);
		nb[w] = access(f, t, b, w, rb[w]);
	}
	for (int i = 0; i < na[1]; i++)
		for (int j = 0; j < nb[0] + nb[1]; j++)
			if (overlap(ra[1][i], j < nb[0] ? rb[0][j] : rb[1][j - nb[0]]))
				return 1;
	for (int i = 0; i < nb[1]; i++)
		for (int j = 0; j < na[0]; j++)
			if (overlap(rb[1][i], ra[0][j]))
				return 1;
	return 0;
}

/* Updates on the host run on a stream of their own after the copy event each names (the copy
 * stream being in order, every copy up to it): each must follow every copy it conflicts
 * with, and nothing else may conflict with it. The number of such pairs left unordered. */
static int
host_races(const Func *f, const OpT *t, int n, const char *what)
{
	int bad = 0;

	for (int h = 0; h < n; h++) {
		int upto = -1;
		if (!t[h].hu)
			continue;
		for (int j = 0; j < h; j++)
			if (t[j].swap && t[j].ev == t[h].huev)
				upto = j;
		for (int k = 0; k < n; k++) {
			if (k == h || f->op[k].kind == OP_WAIT || !conflict(f, t, h, k))
				continue;
			if (t[k].hu || (t[k].swap && k <= upto))
				continue;       /* in order on its stream, or a copy it waited for */
			bad++;
			if (bad <= 5)
				printf("%s: update on the host %d and op %d (%s) conflict but are not ordered\n",
				       what, h, k, opinfo[f->op[k].kind].name);
		}
	}
	return bad;
}

/* Replay the streams: the number of conflicting copy/kernel pairs left unordered. */
static int
races(const Func *f, const OpT *t, int n, const char *what, int quiet)
{
	int *recat = xmalloc((n + 1) * sizeof *recat), *copyof = xmalloc((n + 1) * sizeof *copyof);
	int bad = 0;

	for (int i = 0; i < n; i++)
		recat[i] = copyof[i] = -1;
	for (int i = 0; i < n; i++) {
		if (t[i].rec >= 0 && t[i].rec < n)
			recat[t[i].rec] = i;
		if (t[i].swap && t[i].ev >= 0 && t[i].ev < n)
			copyof[t[i].ev] = i;
	}
	for (int c = 0; c < n; c++) {
		int s1 = -1;              /* the compute stream's progress the copy stream waited for */
		if (!t[c].swap)
			continue;
		for (int j = 0; j <= c; j++)
			if (t[j].swap && t[j].after >= 0 && recat[t[j].after] >= 0 &&
			    recat[t[j].after] < j && recat[t[j].after] > s1)
				s1 = recat[t[j].after];
		for (int k = 0; k < n; k++) {
			int ok;
			if (t[k].swap || t[k].hu || f->op[k].kind == OP_WAIT || !conflict(f, t, c, k))
				continue;
			if (k < c) {
				ok = s1 >= t[k].pos;
			} else {
				/* a compute wait, issued before k's launch, on c or a later copy before it */
				ok = 0;
				for (int j = c + 1; j <= t[k].pos && !ok; j++)
					for (int w = 0; w < t[j].nwait; w++) {
						int cc = t[j].wait[w] >= 0 && t[j].wait[w] < n ? copyof[t[j].wait[w]] : -1;
						ok |= cc >= c && cc < j;
					}
			}
			if (!ok) {
				bad++;
				if (!quiet && bad <= 5)
					printf("%s: copy %d (%s) and op %d (%s) conflict but are not ordered\n", what,
					       c, opinfo[f->op[c].kind].name, k, opinfo[f->op[k].kind].name);
			}
		}
	}
	free(recat);
	free(copyof);
	return bad;
}

static void
one(const Func *f, const char *ll, const char *sched, const char *file, int *ncopy, int *early)
{
	char what[512];
	int n = 0, launch = -1, bad, *seen;
	OpT *t = trace(ll, sched, &n);

	snprintf(what, sizeof what, "%s %s", file, f->name);
	check(t != NULL, "%s: no schedule function in the IR", what);
	if (!t)
		return;
	check(n == f->nop, "%s: %d ops in the IR, %d in the .mir", what, n, f->nop);
	if (n != f->nop) {
		free(t);
		return;
	}
	seen = xcalloc(2 * n + 2, sizeof *seen);
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		int copy = (opinfo[o->kind].flags & F_COPY) != 0, hu = op_on_host(f, o);
		if (t[i].launch)
			launch = i;
		t[i].pos = launch >= 0 ? launch : i;
		check(copy == t[i].swap && hu == t[i].hu && (!copy || t[i].out == (o->kind != OP_SWAPIN)),
		      "%s: op %d (%s)", what, i, opinfo[o->kind].name);
		if (t[i].rec >= 0 && t[i].rec < n)
			seen[t[i].rec] = 1;
		/* an event waited for must have been recorded earlier in this schedule, else the
		 * wait is a no-op on the GPU */
		if (t[i].swap && t[i].after >= 0) {
			int r = -1;
			for (int j = 0; j < i; j++)
				if (t[j].rec == t[i].after)
					r = j;
			check(r >= 0, "%s: copy %d waits for compute event %d, recorded at op %d", what, i,
			      t[i].after, r);
			/* minimal: that op is one the copy conflicts with, not just the latest kernel */
			check(r >= 0 && conflict(f, t, i, r), "%s: copy %d (%s) waits on op %d (%s), which it "
			      "does not depend on", what, i, opinfo[o->kind].name, r,
			      r >= 0 ? opinfo[f->op[r].kind].name : "-");
		}
		for (int w = 0; w < t[i].nwait; w++) {
			int ok = 0;
			for (int j = 0; j < i; j++)
				ok |= t[j].swap && t[j].ev == t[i].wait[w];
			check(ok, "%s: op %d waits for copy event %d, not issued before", what, i, t[i].wait[w]);
		}
		if (t[i].swap) {
			int prev = -1;
			(*ncopy)++;
			for (int j = i - 1; j >= 0 && prev < 0; j--)
				if (t[j].launch)
					prev = j;
			/* the coarse barrier would wait for the latest kernel, prev */
			for (int j = 0; j < i; j++)
				if (t[j].rec >= 0 && t[j].rec == t[i].after && j < prev)
					(*early)++;
			if (t[i].after < 0 && prev >= 0)
				(*early)++;
		}
	}
	bad = races(f, t, n, what, 0);
	check(bad == 0, "%s: %d conflicting copy/kernel pairs run unordered", what, bad);
	bad = host_races(f, t, n, what);
	check(bad == 0, "%s: %d ops conflict with an update on the host unordered", what, bad);
	/* the simulation must notice a missing event */
	for (int i = 0; i < n; i++) {
		int a = t[i].after;
		if (!t[i].swap || a < 0)
			continue;
		t[i].after = -1;
		check(races(f, t, n, what, 1) > 0, "%s: dropping copy %d's compute event %d goes unnoticed",
		      what, i, a);
		t[i].after = a;
	}
	free(seen);
	free(t);
}

int
main(int argc, char **argv)
{
	int ncopy = 0, early = 0;

	if (argc < 3 || argc % 2 == 0) {
		fprintf(stderr, "usage: sync MODEL.mir MODEL.ll...\n");
		return 2;
	}
	for (int a = 1; a + 1 < argc; a += 2) {
		Src src = { 0 };
		char *ll;
		size_t n;
		Module *m;

		src.name = argv[a];
		src.text = slurp(argv[a], &src.len);
		ll = slurp(argv[a + 1], &n);
		check(src.text && ll, "%s: cannot read it or its .ll", argv[a]);
		if (!src.text || !ll)
			continue;
		m = ir_parse(&src);
		check(m != NULL, "%s: does not parse", argv[a]);
		if (m) {
			one(m->fwd, ll, "mtc_cu_sched_forward", argv[a], &ncopy, &early);
			if (m->step)
				one(m->step, ll, "mtc_cu_sched_step", argv[a], &ncopy, &early);
			mod_free(m);
		}
		free((char *)src.text);
		free(ll);
	}
	printf("%d copies; %d of them wait for less than every kernel issued before them\n", ncopy,
	       early);
	check(ncopy > 0, "the inputs have copies");
	check(early > 0, "some copy overlaps a kernel issued before it (no barrier)");
	return done_skips();
}
