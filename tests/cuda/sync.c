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
 * Copies run on two streams, one each way; updates on the host on a stream of their own,
 * after the copies they name; a copy waits on the other copy stream where they conflict. */
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
	int cwait;                 /* the other copy stream's event it waits for, -1 */
	int hu, huev, huin;        /* an update on the host (on a stream of its own) and the copy
	                            * events it waits for, to the host and in (-1: none) */
	int64_t dev, host, cb;
	int64_t dbytes;            /* dead()'s bytes: -1 inside a fused group, poison nothing */
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
			o->off = v[0], o->bytes = v[1], o->rec = -1, o->ev = -1, o->after = -1;
			o->cwait = o->huev = o->huin = -1;
		} else if (!o) {
			continue;
		} else if (strncmp(c, "launch(", 7) == 0 || strncmp(c, "gemm(", 5) == 0) {
			o->launch = 1;
		} else if (strncmp(c, "swap(", 5) == 0) {
			o->swap = 1, o->out = (int)v[0], o->dev = v[1], o->host = v[2], o->cb = v[3];
			o->ev = (int)v[4], o->after = (int)v[5], o->cwait = (int)v[6];
		} else if (strncmp(c, "host_update(", 12) == 0) {
			o->hu = 1, o->huev = (int)v[1], o->huin = (int)v[2];
		} else if (strncmp(c, "wait(", 5) == 0 && o->nwait < 4) {
			o->wait[o->nwait++] = (int)v[0];
		} else if (strncmp(c, "record(", 7) == 0) {
			o->rec = (int)v[0];
		} else if (strncmp(c, "dead(", 5) == 0) {
			o->dbytes = v[1];
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

	/* a workspace launches nothing: the one op that reads it writes its bytes, at its launch */
	if (o->kind == OP_WAIT || o->kind == OP_WORKSPACE)
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
		if ((opinfo[o->kind].flags & F_WS) && o->nargs > opinfo[o->kind].nargs)
			r[n++] = where(f, t, o->args[o->nargs - 1]);
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

/* The copy op whose event is ev, -1. */
static int
copy_of(const OpT *t, int n, int ev)
{
	for (int j = 0; ev >= 0 && j < n; j++)
		if (t[j].swap && t[j].ev == ev)
			return j;
	return -1;
}

/* The streams: compute, copies to the host, copies in, updates on the host. */
enum { SC, SO, SI, SH, NS };

static int
stream(const OpT *t, int i)
{
	return t[i].hu ? SH : !t[i].swap ? SC : t[i].out ? SO : SI;
}

/* Replay the streams with vector clocks: vc[s] is the last op of stream s known done when an op
 * starts (each stream runs in order, so every op of it before that one too). An op of a
 * stream starts after what its stream knew and what it waits for (a compute event: that
 * kernel's clock when recorded; a copy event: that copy's clock when done). Returns the
 * number of conflicting pairs on different streams the clocks leave unordered. */
static int
races(const Func *f, const OpT *t, int n, const char *what, int quiet)
{
	int (*done)[NS] = xmalloc((n + 1) * sizeof *done), (*recvc)[NS] = xmalloc((n + 1) * sizeof *recvc);
	int cur[NS][NS], (*at)[NS] = xmalloc((n + 1) * sizeof *at), bad = 0;

	for (int a = 0; a < NS; a++)
		for (int b = 0; b < NS; b++)
			cur[a][b] = -1;
	for (int i = 0; i < n; i++)
		for (int b = 0; b < NS; b++)
			done[i][b] = recvc[i][b] = at[i][b] = -1;
#define JOIN(v, w) do { for (int q_ = 0; q_ < NS; q_++) if ((w)[q_] > (v)[q_]) (v)[q_] = (w)[q_]; } while (0)
	for (int i = 0; i < n; i++) {
		int s = stream(t, i), *v = cur[s];
		/* the compute stream waits for copies before the op; a launch covers its group */
		for (int w = 0; w < t[i].nwait; w++) {
			int c = copy_of(t, n, t[i].wait[w]);
			if (c >= 0)
				JOIN(cur[SC], done[c]);
		}
		if (t[i].swap) {
			if (t[i].after >= 0 && t[i].after < n)
				JOIN(v, recvc[t[i].after]);
			if (t[i].cwait >= 0 && copy_of(t, n, t[i].cwait) >= 0)
				JOIN(v, done[copy_of(t, n, t[i].cwait)]);
		} else if (t[i].hu) {
			if (copy_of(t, n, t[i].huev) >= 0)
				JOIN(v, done[copy_of(t, n, t[i].huev)]);
			if (copy_of(t, n, t[i].huin) >= 0)
				JOIN(v, done[copy_of(t, n, t[i].huin)]);
		}
		/* a kernel runs at its group's launch: what the compute stream knew then */
		memcpy(at[i], s == SC && t[i].pos < i ? at[t[i].pos] : v, sizeof at[i]);
		memcpy(done[i], at[i], sizeof done[i]);
		done[i][s] = s == SC ? t[i].pos : i;
		if (s != SC || t[i].pos == i)
			memcpy(v, done[i], sizeof done[i]);
		if (t[i].rec >= 0 && t[i].rec < n)
			memcpy(recvc[t[i].rec], cur[SC], sizeof recvc[0]);
	}
#undef JOIN
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			int sa = stream(t, a), sb = stream(t, b);
			if (sa == sb || f->op[a].kind == OP_WAIT || f->op[b].kind == OP_WAIT ||
			    !conflict(f, t, a, b))
				continue;
			/* b starts after a is done: a's stream, as b's start knew it, got past a */
			if (at[b][sa] >= (sa == SC ? t[a].pos : a))
				continue;
			bad++;
			if (!quiet && bad <= 5)
				printf("%s: op %d (%s) and op %d (%s) conflict but are not ordered\n", what, a,
				       opinfo[f->op[a].kind].name, b, opinfo[f->op[b].kind].name);
		}
	free(done);
	free(recvc);
	free(at);
	return bad;
}

/* Check mode in program order: every accelerator byte starts poisoned; a kernel, at its
 * group's launch, reads its operands and then writes the results of every op of the group;
 * a swap_in writes its bytes, a swap_out or copy_out reads them where they sit in the
 * program (the runtime drains the copy streams before it poisons); after each op dead()
 * poisons the values whose last use it is, outside the op's result, unless told -1 (inside
 * a fused group, whose kernel already wrote later members' results). A read of poisoned
 * bytes is a wrong result that check mode itself caused. Returns the number of such reads. */
typedef struct Pz { int64_t *lo, *hi; int n, cap; } Pz;

static void
pz_push(Pz *z, int64_t lo, int64_t hi)
{
	if (z->n == z->cap) {
		z->cap = 2 * z->cap + 16;
		z->lo = xrealloc(z->lo, z->cap * sizeof *z->lo);
		z->hi = xrealloc(z->hi, z->cap * sizeof *z->hi);
	}
	z->lo[z->n] = lo, z->hi[z->n++] = hi;
}

static void
pz_cut(Pz *z, int64_t lo, int64_t hi)
{
	for (int k = 0; k < z->n; k++) {
		if (z->hi[k] <= lo || hi <= z->lo[k])
			continue;
		if (z->lo[k] < lo && hi < z->hi[k]) {            /* split in two */
			pz_push(z, hi, z->hi[k]);
			z->hi[k] = lo;
		} else if (z->lo[k] < lo) {
			z->hi[k] = lo;
		} else if (hi < z->hi[k]) {
			z->lo[k] = hi;
		} else {
			z->lo[k] = z->lo[--z->n], z->hi[k] = z->hi[z->n];
			k--;
		}
	}
}

static void
pz_add(Pz *z, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return;
	pz_cut(z, lo, hi);
	pz_push(z, lo, hi);
}

static int
pz_hit(const Pz *z, int64_t lo, int64_t hi)
{
	for (int k = 0; k < z->n; k++)
		if (z->lo[k] < hi && lo < z->hi[k])
			return 1;
	return 0;
}

/* An op whose work a launch at an earlier op of its group does (not a copy, a wait, an
 * update on the host, an output's copy or a reshape sharing its operand's bytes). */
static int
member(const Func *f, const OpT *t, int i)
{
	const Op *o = &f->op[i];
	if (t[i].launch || t[i].swap || t[i].hu || o->kind == OP_WAIT || o->kind == OP_COPYOUT ||
	    o->kind == OP_WORKSPACE || o->res < 0)
		return 0;
	return !(o->kind == OP_RESHAPE && f->val[o->args[0]].decl < 0 && !f->val[o->args[0]].host &&
	         t[f->val[o->args[0]].def].off == t[i].off);
}

static int
checkmode(const Func *f, const OpT *t, int n, const char *what, int quiet)
{
	Pz z = { 0 };
	Live lv;
	int bad = 0;

	live_fill(&lv, f);
	pz_add(&z, 0, INT64_MAX);
#define ARENA(v) (f->val[v].decl < 0 && !f->val[v].host && f->val[v].def >= 0)
#define READ(v, i) do { \
		Rng r_ = ARENA(v) ? where(f, t, v) : (Rng){ 0, 0, 0 }; \
		if (ARENA(v) && f->op[f->val[v].def].kind != OP_WORKSPACE && pz_hit(&z, r_.lo, r_.hi)) { \
			bad++; \
			if (!quiet && bad <= 5) \
				printf("%s: check mode: op %d (%s) reads %%%s at [%lld, %lld), poisoned\n", what, \
				       i, opinfo[f->op[i].kind].name, f->val[v].name, (long long)r_.lo, (long long)r_.hi); \
		} } while (0)
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		if (t[i].launch) {
			/* the group: this op and the members after it */
			int e = i + 1;
			while (e < n && member(f, t, e))
				e++;
			for (int k = i; k < e; k++)
				for (int a = 0; a < f->op[k].nargs; a++) {
						int v = f->op[k].args[a], d = f->val[v].def;
						if (d >= i && d < k)
							continue;       /* made by the same kernel */
						READ(v, k);
					}
			for (int k = i; k < e; k++)
				if (f->op[k].res >= 0 && ARENA(f->op[k].res))
					pz_cut(&z, t[k].off, t[k].off + t[k].bytes);
		} else if (o->kind == OP_SWAPIN) {
			pz_cut(&z, t[i].dev, t[i].dev + t[i].cb);
		} else if ((o->kind == OP_SWAPOUT || o->kind == OP_COPYOUT) && o->nargs > 0) {
			READ(o->args[0], i);
		}
		if (t[i].dbytes < 0)
			continue;
		for (int v = 0; v < f->nval; v++) {
			Rng r;
			if (!ARENA(v) || lv.last[v] != i)
				continue;
			r = where(f, t, v);
			if (o->res >= 0 && ARENA(o->res) && t[i].bytes > 0 && r.lo < t[i].off + t[i].bytes &&
			    t[i].off < r.hi) {
				pz_add(&z, r.lo, t[i].off);
				pz_add(&z, t[i].off + t[i].bytes, r.hi);
			} else {
				pz_add(&z, r.lo, r.hi);
			}
		}
	}
#undef READ
#undef ARENA
	live_free(&lv);
	free(z.lo);
	free(z.hi);
	return bad;
}

static void
one(const Func *f, const char *ll, const char *sched, const char *file, int *ncopy, int *early,
    int *grouped, int *caught)
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
		for (int w = 0; w < t[i].nwait + 3; w++) {
			int e = w < t[i].nwait ? t[i].wait[w] : w == t[i].nwait ? t[i].cwait :
			        w == t[i].nwait + 1 ? t[i].huev : t[i].huin, ok = 0;
			if (e < 0)
				continue;
			for (int j = 0; j < i; j++)
				ok |= t[j].swap && t[j].ev == e;
			check(ok, "%s: op %d waits for copy event %d, not issued before", what, i, e);
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
	check(bad == 0, "%s: %d conflicting pairs run unordered", what, bad);
	bad = checkmode(f, t, n, what, 0);
	check(bad == 0, "%s: check mode poisons %d reads", what, bad);
	/* and the simulation notices poison inside a fused group (the bug the -1 fixed) */
	for (int i = 0; i < n; i++)
		if (t[i].dbytes < 0) {
			(*grouped)++;
			t[i].dbytes = 0;
			*caught += checkmode(f, t, n, what, 1) > 0;
			t[i].dbytes = -1;
		}
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
	int ncopy = 0, early = 0, grouped = 0, caught = 0;

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
			one(m->fwd, ll, "mtc_cu_sched_forward", argv[a], &ncopy, &early, &grouped, &caught);
			if (m->step)
				one(m->step, ll, "mtc_cu_sched_step", argv[a], &ncopy, &early, &grouped, &caught);
			mod_free(m);
		}
		free((char *)src.text);
		free(ll);
	}
	printf("%d copies; %d of them wait for less than every kernel issued before them\n", ncopy,
	       early);
	printf("%d ops inside fused groups poison nothing; poisoning there would poison a read "
	       "%d times\n", grouped, caught);
	check(ncopy > 0, "the inputs have copies");
	check(caught > 0, "check mode's simulation sees poison inside a fused group");
	check(early > 0, "some copy overlaps a kernel issued before it (no barrier)");
	return done_skips();
}
