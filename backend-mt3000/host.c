/* host.c: the host translation unit: the instance, the sequence of kernels and DMA of each
 * function, the typed API of MODEL.h and the mtc_module() description.
 *
 * DMA waits come from the dependences, not from a barrier after every copy: before each op
 * the host waits only for the copies in flight whose bytes the op reads or writes (RAW, WAW)
 * or whose source it overwrites (WAR); the plan's own `wait` ops are kept. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mt3000.h"
#include "mtc/mtc-rt.h"

static void
H(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g->h, fmt, ap);
	va_end(ap);
}

static long long ll(int64_t x) { return (long long)x; }

/* A double literal that reads back to v, infinities and NaN included (the host code has no
 * <math.h>: IEEE division makes them). */
static const char *
dlit(double v, char *buf)
{
	if (isnan(v))
		return "(0.0 / 0.0)";
	if (isinf(v))
		return v > 0 ? "(1.0 / 0.0)" : "(-1.0 / 0.0)";
	snprintf(buf, 32, "%.17g", v);
	return buf;
}

/* A file name as an assembler string inside a C string literal: '"' and '\\' escaped for
 * both, other bytes outside printable ASCII as the assembler's octal escapes. */
static void
asm_path(Gen *g, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			H(g, "\\\\\\%c", c);
		else if (c < ' ' || c > '~')
			H(g, "\\\\%03o", c);
		else
			H(g, "%c", c);
	}
}

/* Initial values that live in files (an imported model's weights, INIT_FILE): embedded in
 * the module as they are, by the assembler's .incbin, so the compiler never copies them and
 * MODEL.so needs the file no more once built. Values given in the IR (INIT_VALUES): their
 * bits as .long words, through the assembler too, so that the compiler never sees them: GCC
 * 12.2 with AVX-512 (-march=native on such a machine) built the memcpy of a C array holding
 * 1, 0, 1, 0, 1, 0, 0, 0, ... as a broadcast of its first two words, and the module's mask
 * was wrong at element 6. */
static void
file_inits(Gen *g)
{
	const Module *m = g->lo->m;

	for (int d = 0; d < m->ndecl; d++) {
		const Decl *dc = &m->decl[d];
		if (dc->init.kind == INIT_VALUES) {
			int64_t n = shape_numel(&dc->ty.sh);
			H(g, "__asm__(\".pushsection .rodata\\n\\t.balign 16\\nmtc_init_%d:", d);
			for (int64_t i = 0; i < (n ? n : 1); i++) {
				uint32_t w = 0;
				if (n)
					memcpy(&w, (const char *)dc->init.vals + 4 * i, 4);
				H(g, "%s0x%08x", i % 8 ? "," : "\\n\\t.long ", (unsigned)w);
				if (i % 8 == 7)
					H(g, "\"\n\t\"");
			}
			H(g, "\\n\\t.popsection\");\n");
			H(g, "extern const unsigned char mtc_init_%d[] __attribute__((visibility(\"hidden\")));\n", d);
		}
		if (dc->init.kind != INIT_FILE)
			continue;
		H(g, "__asm__(\".pushsection .rodata\\n\\t.balign 16\\nmtc_init_%d:\\n\\t.incbin \\\"", d);
		asm_path(g, dc->init.file);
		H(g, "\\\", %lld, %lld\\n\\t.popsection\");\n", ll(dc->init.off), ll(type_bytes(&dc->ty)));
		H(g, "extern const unsigned char mtc_init_%d[] __attribute__((visibility(\"hidden\")));\n", d);
	}
}

/* A copy in flight at this point of the host code. */
typedef struct Flight {
	int c;               /* its channel variable ch[c] */
	int src, dst;        /* values */
} Flight;

typedef struct Seq {
	Gen *g;
	const LowFunc *p;
	Flight fl[256];
	int nfl;
	int *chan;           /* per value: the copy channel that produced it, -1 */
	int ncopy;
	uint8_t *gone;       /* per value: handed its bytes over inside a fused group */
	int *slot;           /* per value: the collective's slot that produced it, -1 */
	int nslot, inflight; /* collectives started; started and not waited for */
} Seq;

static int
overlaps(const LowFunc *p, int a, int b)
{
	const Func *f = p->f;
	if (in_ddr(f, a) != in_ddr(f, b))
		return 0;
	return p->off[a] < p->off[b] + vbytes(f, b) && p->off[b] < p->off[a] + vbytes(f, a);
}

/* Wait for copy number c and, the queue being FIFO, every copy before it. */
static void
wait_upto(Seq *s, int c)
{
	int k = 0;
	H(s->g, "\tmtc_dma_wait(d, ch[%d]);\n", c);
	for (int i = 0; i < s->nfl; i++)
		if (s->fl[i].c > c)
			s->fl[k++] = s->fl[i];
	s->nfl = k;
}

/* Before an op reading rd[] and writing wr[]: wait for the conflicting copies. */
static void
hazards(Seq *s, const int *rd, int nrd, const int *wr, int nwr)
{
	int need = -1;
	for (int i = 0; i < s->nfl; i++) {
		Flight *x = &s->fl[i];
		for (int k = 0; k < nrd; k++)
			if (overlaps(s->p, x->dst, rd[k]))
				need = x->c > need ? x->c : need;
		for (int k = 0; k < nwr; k++)
			if (overlaps(s->p, x->dst, wr[k]) || overlaps(s->p, x->src, wr[k]))
				need = x->c > need ? x->c : need;
	}
	if (need >= 0)
		wait_upto(s, need);
}

/* Is v a tensor of the arena that the code stores (so check mode tracks it)? */
static int
tracked(const LowFunc *p, int v)
{
	return p->f->val[v].decl < 0 && !in_ddr(p->f, v) && p->mat[v];
}

static void
born(Seq *s, int v)
{
	if (v >= 0 && tracked(s->p, v))      /* v < 0: an op without a result (update) */
		H(s->g, "\tmtc_born(d, %d, %lld, %lld);\n", s->p->idbase + v, ll(s->p->off[v]),
		  ll(vbytes(s->p->f, v)));
}

/* Deaths of the values whose last use is in ops [i, j). */
static void
deaths(Seq *s, int i, int j)
{
	const LowFunc *p = s->p;
	for (int v = 0; v < p->f->nval; v++)
		if (p->last[v] >= i && p->last[v] < j && tracked(p, v) && !s->gone[v])
			H(s->g, "\tmtc_dead(d, %d, %lld, %lld);\n", p->idbase + v, ll(p->off[v]),
			  ll(vbytes(p->f, v)));
}

/* Births of the results of the fused group [i, end). A result in exactly the bytes of an
 * outside operand that dies in the group (passes/lower.c's same_place) takes them over. */
static void
group_births(Seq *s, int i, int end)
{
	const LowFunc *p = s->p;
	const Func *f = p->f;

	for (int k = i; k < end; k++) {
		int r = f->op[k].res, from = -1;
		for (int q = i; q < end && from < 0 && tracked(p, r); q++)
			for (int a = 0; a < f->op[q].nargs; a++) {
				int v = f->op[q].args[a];
				if (f->val[v].def < i && tracked(p, v) && !s->gone[v] && p->last[v] < end &&
				    p->off[v] == p->off[r] && vbytes(f, v) == vbytes(f, r))
					from = v;
			}
		if (from < 0) {
			born(s, r);
			continue;
		}
		H(s->g, "\tmtc_handover(d, %d, %d, %lld, %lld);\n", p->idbase + from, p->idbase + r,
		  ll(p->off[r]), ll(vbytes(f, r)));
		s->gone[from] = 1;
	}
}

/* Does value v lie in host memory over bytes [lo, hi)? */
static int
in_ddr_over(const LowFunc *p, int v, int64_t lo, int64_t hi)
{
	return in_ddr(p->f, v) && p->off[v] < hi && lo < p->off[v] + vbytes(p->f, v);
}

/* Is every reader of v (a gradient copied to host memory) its wait or an update on the host
 * that reads it as its gradient? */
static int
host_readers(const Func *f, int v)
{
	for (int k = f->val[v].def + 1; k < f->nop; k++)
		for (int a = 0; a < f->op[k].nargs; a++)
			if (f->op[k].args[a] == v && f->op[k].kind != OP_WAIT &&
			    (dp_update_grad(f, &f->op[k]) != v || !op_on_host(f, &f->op[k])))
				return 0;
	return 1;
}

/* Can the updates that read unbucket i's gradient read it where the bucket holds it (the
 * MT-3000's accelerator addresses DDR, as its kernels' DMA does), so that no copy brings it
 * back? Where its readers are the wait on it, updates on the accelerator, and copies back to
 * host memory (swap_out) that only their waits and updates on the host read (those read the
 * bucket too, and neither copy runs); and nothing writes host memory over it until the last
 * of them: the last reader on the accelerator, or the step's end where an update on the host
 * reads it (it runs on the host engine's thread until the step drains it). Liveness ends the
 * bucket at its last unbucket, so layout may place a later bucket or swap there. Not with
 * ops deferred (MTC_FAULT), whose order is not the step's. The plan keeps the gradient's
 * bytes all the same. */
static int
read_in_place(const Seq *s, int i)
{
	const LowFunc *p = s->p;
	const Func *f = p->f;
	const Op *o = &f->op[i];
	int r = o->res, last = -1;
	int64_t lo = p->off[o->args[0]] + 4 * o->ia[0], hi = lo + vbytes(f, r);

	if (o->ia[1] || !s->g->inplace)
		return 0;
	for (int k = 0; k < f->nop; k++)
		if (p->defer[k] >= 0)
			return 0;
	for (int k = i + 1; k < f->nop; k++) {
		const Op *u = &f->op[k];
		for (int a = 0; a < u->nargs; a++)
			if (u->args[a] != r)
				continue;
			else if (u->kind == OP_SWAPOUT) {
				if (!host_readers(f, u->res))
					return 0;
				last = f->nop - 1;
			} else if (u->kind != OP_WAIT && (dp_update_grad(f, u) != r || op_on_host(f, u) ||
			                                  (p->grp[k] >= 0 && p->gend[p->grp[k]] > p->grp[k] + 1)))
				return 0;
			else if (k > last)
				last = k;
	}
	for (int k = i + 1; k <= last; k++) {
		const Op *u = &f->op[k];
		int nw = opinfo[u->kind].flags & F_MUT ? opinfo[u->kind].nwritten : 0;
		/* the copies skipped with it write nothing */
		if (u->res >= 0 && !(u->kind == OP_SWAPOUT && u->args[0] == r) && in_ddr_over(p, u->res, lo, hi))
			return 0;
		for (int a = 0; a < nw && a < u->nargs; a++)
			if (in_ddr_over(p, u->args[a], lo, hi))
				return 0;
	}
	return last > i;
}

/* Does op o run as a kernel on the accelerator, addressing its values through kern.c's
 * launches, so that a value's bytes may be somewhere else? Not what the host does alone
 * (kern.c's table), a workspace (nothing runs) or an update on the host. */
static int
on_kernel(const Func *f, const Op *o)
{
	return mt3000_kern[o->kind] != mt3000_hostop && o->kind != OP_WORKSPACE && !op_on_host(f, o);
}

/* Can gradient v, packed by allreduce i (bucket b) into host bytes [lo, hi), be written there
 * by its producer, so that the pack copies nothing? Where a kernel makes it, kernels before
 * the allreduce read it (none writes it) and nothing after; and no other value in host memory
 * alive between the producer and the allreduce lies over those bytes (a swap's copy still to
 * come back, a bucket in flight or read in place by its updates, written by the other ranks
 * through their shared memory, are all such values; so the kernel writes nothing any of them
 * holds, and none of them writes over the gradient before it is packed). A value dead before
 * the producer runs (its last use, a copy's wait and a host update's reads included, is
 * liveness.c's) holds nothing any more: the layout gives its bytes to later values the same. */
static int
write_in_place(const LowFunc *p, int i, int v, int b, int64_t lo, int64_t hi)
{
	const Func *f = p->f;
	int d = f->val[v].def, n = 0;

	if (d < 0 || f->val[v].decl >= 0 || in_ddr(f, v) || !p->mat[v] || p->skip[d] ||
	    !on_kernel(f, &f->op[d]))
		return 0;
	for (int k = d + 1; k < f->nop; k++)
		for (int a = 0; a < f->op[k].nargs; a++)
			if (f->op[k].args[a] != v)
				continue;
			else if (k == i)
				n++;
			else if (k > i || !on_kernel(f, &f->op[k]) || (opinfo[f->op[k].kind].flags & F_MUT))
				return 0;
	if (n != 1)
		return 0;
	for (int x = 0; x < f->nval; x++)
		if (x != b && in_ddr(f, x) && f->val[x].def <= i && p->last[x] >= d && p->off[x] < hi &&
		    lo < p->off[x] + vbytes(f, x))
			return 0;
	return 1;
}

/* Before a function's code: the gradients written where their bucket holds them. Not with
 * ops deferred (MTC_FAULT), whose order is not the step's. */
static void
writes_in_place(Seq *s)
{
	const LowFunc *p = s->p;
	const Func *f = p->f;

	if (!s->g->ranks)
		return;
	for (int k = 0; k < f->nop; k++)
		if (p->defer[k] >= 0)
			return;
	for (int i = 0; i < f->nop; i++) {
		const Op *o = &f->op[i];
		int64_t at = 0;
		if (o->kind != OP_ALLREDUCE || o->ia[1])
			continue;
		for (int a = 0; a < o->nargs; a++) {
			int v = o->args[a];
			int64_t lo = p->off[o->res] + 4 * at, hi = lo + vbytes(f, v);
			if (write_in_place(p, i, v, o->res, lo, hi))
				s->g->inplace[v] = lo;
			at += vbytes(f, v) / 4;
		}
	}
}

static void
comment(Gen *g, const Func *f, const Op *o)
{
	H(g, "\t/* ");
	if (o->res >= 0)
		H(g, "%%%s = ", f->val[o->res].name);
	H(g, "%s", opinfo[o->kind].name);
	for (int a = 0; a < o->nargs; a++)
		H(g, "%s%%%s", a ? ", " : " ", f->val[o->args[a]].name);
	H(g, " */\n");
}

static const char *
zone(const Func *f, int v)
{
	return in_ddr(f, v) ? "H" : "M";
}

/* Check mode: op i is about to read v; a tensor the code stores must be live there. */
static void
use(Seq *s, int i, int v)
{
	if (tracked(s->p, v))
		H(s->g, "\tmtc_use(d, %d, %d, %lld, %lld);\n", i, s->p->idbase + v, ll(s->p->off[v]),
		  ll(vbytes(s->p->f, v)));
}

/* Between kernels, MPI moves the collectives in flight along (it has no thread of its own). */
static void
progress(Seq *s)
{
	if (s->inflight)
		H(s->g, "\tmtc_comm_progress(inst->c);\n");
}

/* One op that is not part of a fused group: a copy, a wait or a kernel. */
static void
one_op(Seq *s, int i)
{
	Gen *g = s->g;
	const LowFunc *p = s->p;
	const Func *f = p->f;
	const Op *o = &f->op[i];
	int rd[64], nrd = 0, wr[64], nwr = 0;

	switch (o->kind) {
	case OP_SWAPOUT:
	case OP_SWAPIN:
	case OP_SWAPHOME: {
		/* Copies are FIFO among themselves; they only wait for nothing here. swap_home's
		 * source is its second operand, its result the decl's home. */
		int src = o->args[o->kind == OP_SWAPHOME];
		if (o->kind == OP_SWAPOUT && g->inplace[o->res] >= 0) {
			/* a gradient its update on the host reads in its bucket (read_in_place) */
			H(g, "\t/* read in place by its update on the host: H + %lld */\n", ll(g->inplace[o->res]));
			break;
		}
		use(s, i, src);
		if (o->kind != OP_SWAPHOME)
			born(s, o->res);
		if (s->nfl == 256)
			wait_upto(s, s->fl[0].c);
		H(g, "\tch[%d] = mtc_dma(d, %s + %lld, %s + %lld, %lld);\n", s->ncopy, zone(f, o->res),
		  ll(p->off[o->res]), zone(f, src), ll(p->off[src]), ll(vbytes(f, o->res)));
		s->fl[s->nfl++] = (Flight){ s->ncopy, src, o->res };
		s->chan[o->res] = s->ncopy++;
		break;
	}
	case OP_COPYOUT: {
		/* the step's output, when the caller asked for outputs (MODEL_step_out) */
		int x = o->args[0];
		hazards(s, &x, 1, NULL, 0);
		use(s, i, x);
		H(g, "\tif (out && out[%lld])\n\t\tmemcpy((char *)out[%lld] + %lld, %s + %lld, %lld);\n",
		  ll(o->ia[0]), ll(o->ia[0]), ll(4 * o->ia[1]), zone(f, x), ll(p->off[x]), ll(vbytes(f, x)));
		break;
	}
	case OP_ALLREDUCE:
	case OP_REDSCAT:
	case OP_ALLGATHER: {
		/* the bucket packed by the host (as it writes the inputs), then its collective
		 * started: the network runs it while the kernels go on. ZeRO packs shards by rank
		 * (docs/ir.md); an allgather packs this rank's block */
		int64_t at = 0, ranks = o->ia[0], per = 0, n = vbytes(f, o->res) / 4;
		char sc[48];
		int blocks = o->kind == OP_REDSCAT || (o->kind == OP_ALLREDUCE && o->ia[1]);
		static const char *const kind[] = { "MTC_ALLREDUCE", "MTC_REDUCE_SCATTER", "MTC_ALLGATHER" };
		for (int a = 0; a < o->nargs; a++) {
			hazards(s, &o->args[a], 1, NULL, 0);
			per += vbytes(f, o->args[a]) / 4;
		}
		if (blocks) {
			per = 0;
			for (int a = 0; a < o->nargs; a++)
				per += shard_len(vbytes(f, o->args[a]) / 4, ranks);
		}
		hazards(s, NULL, 0, &o->res, 1);
		for (int a = 0; a < o->nargs; a++) {
			int v = o->args[a];
			use(s, i, v);
			if (blocks)
				H(g, "\tmtc_comm_pack_shards((float *)(H + %lld), (const float *)(M + %lld), %lld, %lld, %lld, %lld);\n",
				  ll(p->off[o->res]), ll(p->off[v]), ll(vbytes(f, v) / 4), ll(ranks), ll(per), ll(at));
			else if (o->kind == OP_ALLGATHER)
				H(g, "\tmemcpy(H + %lld + %lld * mtc_comm_rank(inst->c), M + %lld, %lld);\n",
				  ll(p->off[o->res] + 4 * at), ll(4 * per), ll(p->off[v]), ll(vbytes(f, v)));
			else if (g->inplace[v] >= 0)
				H(g, "\t/* %%%s written in place by its producer: H + %lld */\n", f->val[v].name,
				  ll(g->inplace[v]));
			else
				H(g, "\tmemcpy(H + %lld, M + %lld, %lld);\n", ll(p->off[o->res] + 4 * at), ll(p->off[v]),
				  ll(vbytes(f, v)));
			at += blocks ? shard_len(vbytes(f, v) / 4, ranks) : vbytes(f, v) / 4;
		}
		snprintf(sc, sizeof sc, "%af", o->kind == OP_ALLGATHER ? 1.0 : (double)(float)o->fa[0]);
		H(g, "\tmtc_comm_start(inst->c, %d, %s, (float *)(H + %lld), %lld, %s);\n", s->nslot,
		  kind[o->kind == OP_ALLREDUCE ? 0 : o->kind == OP_REDSCAT ? 1 : 2], ll(p->off[o->res]),
		  ll(o->kind == OP_ALLREDUCE ? n : per), sc);
		s->slot[o->res] = s->nslot++;
		s->inflight++;
		break;
	}
	case OP_SHARD:
		/* this rank's elements of the param: the host copies them, as it writes the inputs */
		hazards(s, o->args, 1, &o->res, 1);
		use(s, i, o->args[0]);
		born(s, o->res);
		H(g, "\tmtc_comm_shard((float *)(M + %lld), (const float *)(M + %lld), %lld, %lld, mtc_comm_rank(inst->c));\n",
		  ll(p->off[o->res]), ll(p->off[o->args[0]]), ll(vbytes(f, o->args[0]) / 4), ll(o->ia[0]));
		break;
	case OP_UNSHARD: {
		/* the param written from every rank's shard (the gathered bucket, waited for) */
		const Op *ag = &f->op[f->val[o->args[1]].def];
		hazards(s, &o->args[1], 1, &o->args[0], 1);
		H(g, "\tmtc_comm_unshard((float *)(M + %lld), (const float *)(H + %lld), %lld, %lld, %lld, %lld);\n",
		  ll(p->off[o->args[0]]), ll(p->off[o->args[1]]), ll(vbytes(f, o->args[0]) / 4), ll(o->ia[0]),
		  ll(vbytes(f, o->args[1]) / 4 / ag->ia[0]), ll(o->ia[1]));
		break;
	}
	case OP_UNBUCKET: {
		/* a part of a bucket back onto the accelerator: a copy like swap_in's, or none
		 * where its update can read it in the bucket (read_in_place) */
		int b = o->args[0];
		born(s, o->res);
		if (read_in_place(s, i)) {
			g->inplace[o->res] = p->off[b] + 4 * o->ia[0];
			for (int k = i + 1; k < f->nop; k++)
				if (f->op[k].kind == OP_SWAPOUT && f->op[k].args[0] == o->res)
					g->inplace[f->op[k].res] = g->inplace[o->res];
			H(g, "\t/* read in place by its update: H + %lld */\n", ll(g->inplace[o->res]));
			break;
		}
		if (s->nfl == 256)
			wait_upto(s, s->fl[0].c);
		if (o->ia[1]) {
			/* this rank's block of an all-reduced bucket of shards */
			const Op *c = &f->op[f->val[b].def];
			H(g, "\tch[%d] = mtc_dma(d, M + %lld, H + %lld + %lld * mtc_comm_rank(inst->c), %lld);\n",
			  s->ncopy, ll(p->off[o->res]), ll(p->off[b] + 4 * o->ia[0]), ll(vbytes(f, b) / c->ia[0]),
			  ll(vbytes(f, o->res)));
		} else
			H(g, "\tch[%d] = mtc_dma(d, M + %lld, H + %lld, %lld);\n", s->ncopy, ll(p->off[o->res]),
			  ll(p->off[b] + 4 * o->ia[0]), ll(vbytes(f, o->res)));
		s->fl[s->nfl++] = (Flight){ s->ncopy, b, o->res };
		s->chan[o->res] = s->ncopy++;
		break;
	}
	case OP_WAIT: {
		int c = s->chan[o->args[0]], v = o->args[0];
		if (s->slot[v] >= 0) {
			/* the sum scaled as its start said (a reduce-scatter's block at its start) */
			H(g, "\tmtc_comm_wait(inst->c, %d);\n", s->slot[v]);
			s->inflight--;
			break;
		}
		for (int k = 0; k < s->nfl; k++)
			if (s->fl[k].c == c) {
				wait_upto(s, c);
				break;
			}
		break;
	}
	default:
		if (op_on_host(f, o)) {
			/* on the host's thread, once the copies issued so far are done (the gradient's
			 * copy out last); every operand in host memory but the hyperparameters, which the
			 * host reads where they are; none reused in the step */
			int adam = o->kind == OP_ADAM || o->kind == OP_ADAMW;
			if (o->nargs + adam > MTC_CALL_ARGS)
				die("%s on the host with %d arguments", opinfo[o->kind].name, o->nargs + adam);
			H(g, "\tmtc_host_call(d, hu%d, (const uint64_t[]){ ", i);
			for (int a = 0; a < o->nargs; a++)
				H(g, "%s%s(%lld)", a ? ", " : "", in_ddr(f, o->args[a]) ? "HADDR" : "ADDR",
				  ll(g->inplace[o->args[a]] >= 0 ? g->inplace[o->args[a]] : p->off[o->args[a]]));
			if (adam)
				H(g, ", (uint64_t)(uintptr_t)mtc_dev_flag(d)");
			if (s->ncopy)
				H(g, " }, %d, ch[%d]);\n", o->nargs + adam, s->ncopy - 1);
			else
				H(g, " }, %d, 0);\n", o->nargs + adam);
			break;
		}
		for (int a = 0; a < o->nargs && a < 64; a++) {
			rd[nrd++] = o->args[a];
			if (opinfo[o->kind].flags & F_MUT)
				wr[nwr++] = o->args[a];
		}
		if (o->res >= 0)
			wr[nwr++] = o->res;
		hazards(s, rd, nrd, wr, nwr);
		for (int a = 0; a < o->nargs; a++)
			use(s, i, o->args[a]);
		born(s, o->res);
		kern_op(g, p, i);
		progress(s);
	}
}

static void emit_deferred(Seq *, int);

/* The ops MTC_FAULT deferred to after ops [i, j). */
static void
deferred(Seq *s, int i, int j)
{
	for (int k = 0; k < s->p->f->nop; k++)
		if (s->p->defer[k] >= i && s->p->defer[k] < j)
			emit_deferred(s, k);
}

static void
emit_deferred(Seq *s, int k)
{
	H(s->g, "\t/* deferred here: MTC_FAULT */\n");
	comment(s->g, s->p->f, &s->p->f->op[k]);
	one_op(s, k);
}

static void
emit_func(Gen *g, const LowFunc *p)
{
	const Func *f = p->f;
	const Module *m = g->m;
	int train = f == m->step, ncopy = 0, nin = 0, i;
	Seq s = { .g = g, .p = p };
	uint8_t *uses = malloc((size_t)m->ndecl + 1);

	for (i = 0; i < f->nop; i++)
		ncopy += (opinfo[f->op[i].kind].flags & F_COPY) != 0;
	s.chan = malloc(sizeof *s.chan * (size_t)f->nval);
	s.slot = malloc(sizeof *s.slot * (size_t)f->nval);
	s.gone = calloc((size_t)f->nval + 1, 1);
	if (!s.chan || !s.gone || !s.slot)
		die("out of memory");
	g->inplace = malloc(sizeof *g->inplace * (size_t)(f->nval + 1));
	if (!g->inplace)
		die("out of memory");
	for (int v = 0; v < f->nval; v++)
		s.chan[v] = s.slot[v] = -1, g->inplace[v] = -1;
	writes_in_place(&s);
	used_inputs(m, f, uses);

	H(g, "\nstatic int\nrun_%s(struct %s *inst, const void *const *in, %svoid *const *out)\n{\n", f->name,
	  g->id, train ? "float *loss, " : "");
	H(g, "\tmtc_dev *d = inst->d;\n\tchar *M = mtc_dev_mem(d), *H = mtc_dev_ddr(d);\n"
	  "\tint64_t ch[%d] = {0};\n\n\t(void)M;\n\t(void)H;\n\t(void)ch;\n", ncopy + 1);
	/* The host writes inputs into device-visible memory itself (as hthreads' shared buffers
	 * allow): a DMA round trip per call would only add a thread hand-off. */
	H(g, "\t/* Inputs into the persistent zone. */\n");
	for (int d = 0; d < m->ndecl; d++)
		if (uses[d]) {
			H(g, "\tmemcpy(M + %lld, in[%d], %lld);\n", ll(g->poff[d]), nin,
			  ll(type_bytes(&m->decl[d].ty)));
			nin++;
		} else if (m->decl[d].role == R_INPUT)
			nin++;

	for (i = 0; i < f->nop;) {
		const Op *o = &f->op[i];
		int rd[64], nrd = 0, wr[64], nwr = 0;

		comment(g, f, o);
		if (p->grp[i] == i && p->gend[i] > i + 1) {
			int end = p->gend[i];
			for (int k = i; k < end; k++) {
				for (int a = 0; a < f->op[k].nargs && nrd < 64; a++)
					rd[nrd++] = f->op[k].args[a];
				if (p->mat[f->op[k].res] && nwr < 64)
					wr[nwr++] = f->op[k].res;
				if (k > i)
					comment(g, f, &f->op[k]);
			}
			hazards(&s, rd, nrd, wr, nwr);
			for (int k = i; k < end; k++)
				for (int a = 0; a < f->op[k].nargs; a++)
					if (f->val[f->op[k].args[a]].def < i)
						use(&s, k, f->op[k].args[a]);
			group_births(&s, i, end);
			kern_ew(g, p, i, end);
			progress(&s);
			deaths(&s, i, end);
			deferred(&s, i, end);
			i = end;
			continue;
		}
		if (p->skip[i]) {
			H(g, "\t/* left out: MTC_FAULT */\n");
		} else if (p->defer[i] < 0) {
			one_op(&s, i);
		}
		deaths(&s, i, i + 1);
		deferred(&s, i, i + 1);
		i++;
	}

	/* Results back to the host, after every copy still in flight. */
	H(g, "\t/* Results to the host. */\n");
	if (s.nfl)
		wait_upto(&s, s.fl[s.nfl - 1].c);
	if (train) {
		H(g, "\tmemcpy(loss, %s + %lld, 4);\n", zone(f, f->loss), ll(p->off[f->loss]));
	} else {
		for (int k = 0; k < f->nout; k++)
			H(g, "\tmemcpy(out[%d], %s + %lld, %lld);\n", k, zone(f, f->out[k]),
			  ll(p->off[f->out[k]]), ll(vbytes(f, f->out[k])));
	}
	deaths(&s, f->nop, f->nop + 1);
	if (s.inflight)
		die("%s: %d collectives never waited for", f->name, s.inflight);
	if (g->ranks && train) {
		/* every rank learns whether any failed; the loss becomes the ranks' mean */
		H(g, "\t{\n\t\tchar e[512] = \"\";\n\t\tint rc = mtc_dev_finish(d);\n"
		  "\t\tint all = mtc_comm_finish(inst->c, rc, loss, e, sizeof e);\n"
		  "\t\treturn all && !rc ? mtc_fail(d, all, \"%%s\", e) : rc;\n\t}\n}\n");
	} else
		H(g, "\treturn mtc_dev_finish(d);\n}\n");
	if (train && s.nslot > g->nslots)
		g->nslots = s.nslot;
	free(s.slot);
	free(s.chan);
	free(g->inplace);
	g->inplace = NULL;
	free(s.gone);
	free(uses);
}

/* static const struct mtc_tensor_info NAME[] for the decls of one role (or the outputs). */
static void
infos(Gen *g, const char *name, int role)
{
	const Module *m = g->m;
	const Func *f = m->fwd;
	int n = 0;

	H(g, "static const struct mtc_tensor_info %s[] = {\n", name);
	for (int i = 0; i < (role < 0 ? f->nout : m->ndecl); i++) {
		const Type *t = role < 0 ? &f->val[f->out[i]].ty : &m->decl[i].ty;
		const char *nm = role < 0 ? f->outname[i] : role == R_HYPER ? hyper_name(m->decl[i].name) : m->decl[i].name;
		if (role >= 0 && (int)m->decl[i].role != role)
			continue;
		H(g, "\t{ \"%s\", %s, %d, (const int64_t[]){", nm, t->dt == F32 ? "MTC_F32" : "MTC_I32",
		  t->sh.rank);
		for (int d = 0; d < t->sh.rank; d++)
			H(g, " %lld,", ll(t->sh.d[d]));
		H(g, " 0 }, %lld, %lld, %lld },\n", ll(shape_numel(&t->sh)), ll(type_bytes(t)),
		  ll(role == R_INPUT && t->dt == I32 ? input_range(m, i) : 0));
		n++;
	}
	if (!n)
		H(g, "\t{ 0 },\n");
	H(g, "};\n");
}

static int
count(const Module *m, int role)
{
	int n = 0;
	for (int d = 0; d < m->ndecl; d++)
		n += (int)m->decl[d].role == role;
	return n;
}

/* Checks of the array API: the instance, then every buffer the function reads or writes. */
static void
api_checks(Gen *g, const Func *f, const char *fn)
{
	const Module *m = g->m;
	uint8_t *uses = malloc((size_t)m->ndecl + 1);
	int k = 0;

	used_inputs(m, f, uses);
	H(g, "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s_%s: the instance is NULL\");\n"
	  "\tmtc_dev_clear(inst->d);\n", g->id, fn);
	for (int d = 0; d < m->ndecl; d++) {
		if (m->decl[d].role != R_INPUT)
			continue;
		if (uses[d])
			H(g, "\tif (!in || !in[%d])\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s_%s: input %s is NULL\");\n",
			  k, g->id, fn, m->decl[d].name);
		k++;
	}
	free(uses);
}

void
host_emit(Gen *g)
{
	const Module *m = g->m;
	const char *id = g->id;
	int nin = count(m, R_INPUT), npar = count(m, R_PARAM), nst = count(m, R_STATE), hstate = 0, hupd = 0;
	int nbuf = count(m, R_BUFFER), nhy = count(m, R_HYPER);
	const char *zsel;

	for (int d = 0; d < m->ndecl; d++)
		hstate |= m->decl[d].host;
	for (int i = 0; m->step && i < m->step->nop; i++)
		hupd |= op_on_host(m->step, &m->step->op[i]);
	zsel = hstate ? "(pzone[i] ? mtc_dev_ddr(inst->d) : mtc_dev_mem(inst->d))" : "mtc_dev_mem(inst->d)";
	H(g, "/* %s.c: host code of model %s, generated by mtc %s for the MT-3000 target.\n"
	  " * It owns the device, sequences the kernels of %s-dev.c and the DMA copies, and exports\n"
	  " * the API of %s.h and mtc_module(). */\n", id, m->name, PACKAGE_VERSION, id, id);
	H(g, "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include <mtc/mtc-rt.h>\n%s%s\n",
	  hupd ? "#include <mtc/mtc-ops.h>\n" : "", g->ranks ? "#include <mtc/mtc-comm.h>\n" : "");
	H(g, "typedef struct %s %s;\n", id, id);
	if (g->ranks)
		H(g, "/* The step of one of %d ranks of a data-parallel module: its API is the module's. */\n"
		  "extern const struct mtc_module %s__module;\nvoid *%s__create(mtc_comm *);\n", g->ranks, id, id);
	else
		api_protos(g->m, g->id, g->h, 1);
	H(g, "\n#define ADDR(off) ((uint64_t)(uintptr_t)(M + (off)))\n"
	  "#define HADDR(off) ((uint64_t)(uintptr_t)(H + (off)))\n#define KERN %s__kernels\n"
	  "extern const mtc_kernel %s__kernels[];\n\nstruct %s {\n\tmtc_dev *d;\n%s};\n\n", id, id, id,
	  g->ranks ? "\tmtc_comm *c;                  /* the module's: it runs the collectives */\n" : "");

	H(g, "/* Check-mode names of the tensors, by id. */\nstatic const char *const names[] = {");
	for (int v = 0; v < m->fwd->nval; v++)
		H(g, "%s\"forward %%%s\",", v % 4 ? " " : "\n\t", m->fwd->val[v].name);
	if (m->step)
		for (int v = 0; v < m->step->nval; v++)
			H(g, "%s\"step %%%s\",", v % 4 ? " " : "\n\t", m->step->val[v].name);
	H(g, "\n};\n\n");
	infos(g, "inputs", R_INPUT);
	infos(g, "outputs", -1);
	infos(g, "params", R_PARAM);
	infos(g, "state", R_STATE);
	infos(g, "buffers", R_BUFFER);
	infos(g, "hypers", R_HYPER);
	/* Persistent offsets of params, state and buffers, for get and set. */
	H(g, "static const int64_t poff[] = {");
	for (int r = R_PARAM; r <= R_BUFFER; r++)
		for (int d = 0; d < m->ndecl; d++)
			if ((int)m->decl[d].role == r)
				H(g, " %lld,", ll(g->poff[d]));
	H(g, " 0 };\n");
	H(g, "/* Persistent offsets of the hyperparameters. */\nstatic const int64_t hoff[] = {");
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_HYPER)
			H(g, " %lld,", ll(g->poff[d]));
	H(g, " 0 };\n");
	if (hstate) {
		H(g, "/* and their zones: 1 for optimizer state living in host memory */\nstatic const char pzone[] = {");
		for (int r = R_PARAM; r <= R_BUFFER; r++)
			for (int d = 0; d < m->ndecl; d++)
				if ((int)m->decl[d].role == r)
					H(g, " %d,", m->decl[d].host);
		H(g, " 0 };\n");
	}

	/* the updates the host runs, before the code that queues them */
	for (int i = 0; m->step && i < m->step->nop; i++)
		if (op_on_host(m->step, &m->step->op[i]))
			kern_host_update(g, &g->step, i, i);
	emit_func(g, &g->fwd);
	if (m->step)
		emit_func(g, &g->step);

	file_inits(g);
	/* create: the device, the persistent tensors born, params and state initialised. */
	H(g, "\nstatic void *\ncreate(void)\n{\n"
	  "\tstatic const struct mtc_dev_desc desc = { \"%s\", %lld, %lld, %lld, names, %d };\n"
	  "\tstruct %s *inst = mtc_fail_alloc() ? NULL : calloc(1, sizeof *inst);\n\tchar *M;\n\n"
	  "\tif (!inst) {\n\t\tmtc_set_last_error(MTC_ENOMEM, \"%s_create: out of memory\");\n\t\treturn NULL;\n\t}\n"
	  "\tif (!(inst->d = mtc_dev_open(&desc))) {\n\t\tfree(inst);\n\t\treturn NULL;\n\t}\n"
	  "\tM = mtc_dev_mem(inst->d);\n\t(void)M;\n",
	  m->name, ll(g->persist), ll(g->arena), ll(g->ddr), g->nids, id, id);
	if (hstate)
		H(g, "\tchar *H = mtc_dev_ddr(inst->d);\n");
	for (int d = 0; d < m->ndecl; d++) {
		const Decl *dc = &m->decl[d];
		const char *z = dc->host ? "H" : "M";
		if (!dc->host)
			H(g, "\tmtc_born(inst->d, %d, %lld, %lld);\n", d, ll(g->poff[d]), ll(type_bytes(&dc->ty)));
		if (dc->role == R_INPUT)
			continue;
		if (dc->init.kind == INIT_FILE || dc->init.kind == INIT_VALUES)
			H(g, "\tmemcpy(%s + %lld, mtc_init_%d, %lld);\n", z, ll(g->poff[d]), d, ll(type_bytes(&dc->ty)));
		else if (dc->ty.dt == F32)
			H(g, "\tmtc_init_f32((float *)(%s + %lld), %lld, %d, %s, %s, \"%s\", %lluull);\n",
			  z, ll(g->poff[d]), ll(shape_numel(&dc->ty.sh)), (int)dc->init.kind,
			  dlit(dc->init.a, (char[32]){0}), dlit(dc->init.b, (char[32]){0}), dc->name,
			  (unsigned long long)g->bo->seed);
		else
			H(g, "\tmemset(%s + %lld, 0, %lld);\n", z, ll(g->poff[d]), ll(type_bytes(&dc->ty)));
	}
	H(g, "\treturn inst;\n}\n");

	H(g, "\nstatic void\ndestroy(void *p)\n{\n\tstruct %s *inst = p;\n\tif (!inst)\n\t\treturn;\n"
	  "\tmtc_dev_close(inst->d);\n\tfree(inst);\n}\n", id);
	H(g, "\nstatic const char *\nerror(const void *p)\n{\n\tconst struct %s *inst = p;\n"
	  "\treturn inst ? mtc_dev_error(inst->d) : mtc_rt_last_error();\n}\n", id);
	H(g, "\nstatic int\nforward(void *p, const void *const *in, void *const *out)\n{\n\tstruct %s *inst = p;\n", id);
	api_checks(g, m->fwd, "forward");
	for (int k = 0; k < m->fwd->nout; k++)
		H(g, "\tif (!out || !out[%d])\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s_forward: output %s is NULL\");\n",
		  k, id, m->fwd->outname[k]);
	H(g, "\treturn run_forward(inst, in, out);\n}\n");
	/* step_out: the step, and with out the declared outputs of its forward pass; step: the same
	 * without them */
	H(g, "\nstatic int\nstep_out(void *p, const void *const *in, float *loss, void *const *out)\n{\n"
	  "\tstruct %s *inst = p;\n", id);
	if (m->step) {
		api_checks(g, m->step, "step");
		for (int k = 0; k < m->fwd->nout; k++)
			H(g, "\tif (out && !out[%d])\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s_step_out: output %s is NULL\");\n",
			  k, id, m->fwd->outname[k]);
		H(g, "\tif (!loss)\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s_step: loss is NULL\");\n"
		  "\tint rc = run_step(inst, in, loss, out);\n\tif (!rc)\n\t\tmtc_dev_count_step(inst->d);\n"
		  "\treturn rc;\n}\n", id);
	} else {
		H(g, "\t(void)in;\n\t(void)loss;\n\t(void)out;\n\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_ENOTRAIN, "
		  "\"%s_step: the model does not train\");\n"
		  "\treturn mtc_fail(inst->d, MTC_ENOTRAIN, \"%s_step: the model does not train\");\n}\n", id, id);
	}
	H(g, "\nstatic int\nstep(void *p, const void *const *in, float *loss)\n{\n\treturn step_out(p, in, loss, NULL);\n}\n");
	H(g, "\n/* Bytes of tensor i of get and set: params, state, buffers. */\nstatic int64_t\nbytes(int i)\n{\n"
	  "\treturn i < %d ? params[i].bytes : i < %d ? state[i - %d].bytes : buffers[i - %d].bytes;\n}\n",
	  npar, npar + nst, npar, npar + nst);
	H(g, "\nstatic int\nget(void *p, int i, void *dst)\n{\n\tstruct %s *inst = p;\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s get: the instance is NULL\");\n"
	  "\tmtc_dev_clear(inst->d);\n"
	  "\tif (i < 0 || i >= %d || !dst)\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s get: bad index %%d or NULL buffer\", i);\n"
	  "\tmemcpy(dst, %s + poff[i], (size_t)bytes(i));\n"
	  "\treturn 0;\n}\n", id, id, npar + nst + nbuf, id, zsel);
	H(g, "\nstatic int\nset(void *p, int i, const void *src)\n{\n\tstruct %s *inst = p;\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s set: the instance is NULL\");\n"
	  "\tmtc_dev_clear(inst->d);\n"
	  "\tif (i < 0 || i >= %d || !src)\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s set: bad index %%d or NULL buffer\", i);\n"
	  "\tmemcpy(%s + poff[i], src, (size_t)bytes(i));\n"
	  "\treturn 0;\n}\n", id, id, npar + nst + nbuf, id, zsel);
	/* The hyperparameters: checked against the ranges PyTorch accepts (runtime/hyper.c). */
	H(g, "\nstatic int\nset_hyper(void *p, int i, float v)\n{\n\tstruct %s *inst = p;\n\tchar err[256];\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s set_hyper: the instance is NULL\");\n"
	  "\tmtc_dev_clear(inst->d);\n"
	  "\tif (i < 0 || i >= %d)\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s set_hyper: bad index %%d\", i);\n"
	  "\tif (mtc_hyper_check(\"%s\", hypers[i].name, v, err, sizeof err))\n"
	  "\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%%s\", err);\n"
	  "\tmemcpy(mtc_dev_mem(inst->d) + hoff[i], &v, 4);\n\treturn 0;\n}\n", id, id, nhy, id, id);
	H(g, "\nstatic int\nget_hyper(void *p, int i, float *v)\n{\n\tstruct %s *inst = p;\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s get_hyper: the instance is NULL\");\n"
	  "\tmtc_dev_clear(inst->d);\n"
	  "\tif (i < 0 || i >= %d || !v)\n\t\treturn mtc_fail(inst->d, MTC_EINVAL, \"%s get_hyper: bad index %%d or NULL buffer\", i);\n"
	  "\tmemcpy(v, mtc_dev_mem(inst->d) + hoff[i], 4);\n\treturn 0;\n}\n", id, id, nhy, id);
	/* The training state in one file (runtime/ckpt.c, through this module's entry points). */
	const char *mod = g->ranks ? asprintf_a(m->arena, "%s__module", id) : "module";
	H(g, "\n%sconst struct mtc_module %s;\n", g->ranks ? "extern " : "static ", mod);
	H(g, "\nstatic int\nsave(void *p, const char *path)\n{\n\tstruct %s *inst = p;\n\tstruct mtc_stats st;\n"
	  "\tchar err[512];\n\tint rc;\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s_save: the instance is NULL\");\n"
	  "\tmtc_dev_stats(inst->d, &st);\n"
	  "\tif ((rc = mtc_state_save(&%s, p, path, st.steps, err, sizeof err)))\n"
	  "\t\treturn mtc_fail(inst->d, rc, \"%%s\", err);\n\treturn 0;\n}\n", id, id, mod);
	H(g, "\nstatic int\nload(void *p, const char *path)\n{\n\tstruct %s *inst = p;\n\tint64_t steps = 0;\n"
	  "\tchar err[512];\n\tint rc;\n"
	  "\tif (!inst)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s_load: the instance is NULL\");\n"
	  "\tif ((rc = mtc_state_load(&%s, p, path, &steps, err, sizeof err)))\n"
	  "\t\treturn mtc_fail(inst->d, rc, \"%%s\", err);\n"
	  "\tmtc_dev_set_steps(inst->d, steps);\n\treturn 0;\n}\n", id, id, mod);
	H(g, "\nstatic int\nstats(const void *p, struct mtc_stats *s)\n{\n\tconst struct %s *inst = p;\n"
	  "\tif (!inst || !s)\n\t\treturn mtc_set_last_error(MTC_EINVAL, \"%s stats: NULL argument\");\n"
	  "\tmtc_dev_stats(inst->d, s);\n\treturn 0;\n}\n", id, id);

	if (g->ranks) {
		/* created by the data-parallel module only, on its communicator */
		H(g, "\nstatic void *\norphan(void)\n{\n\tmtc_set_last_error(MTC_EINVAL, \"%s: a variant of a "
		  "data-parallel module is created by the module\");\n\treturn NULL;\n}\n", id);
		/* every rank shares its host arena, or none (collective: a rank whose create failed
		 * takes part too) */
		H(g, "\nvoid *\n%s__create(mtc_comm *c)\n{\n\tstruct %s *inst = create();\n\tif (inst)\n"
		  "\t\tinst->c = c;\n\tif (mtc_comm_share_ddr(c, inst ? inst->d : NULL) && inst) {\n"
		  "\t\tdestroy(inst);\n\t\tinst = NULL;\n\t}\n\treturn inst;\n}\n", id, id);
	}
	H(g, "\n%sconst struct mtc_module %s = {\n\tMTC_ABI, \"%s\", \"mt3000\", \"%s\",\n"
	  "\t%d, %d, %d, %d, inputs, outputs, params, state,\n\t%d, %lld, %lld, %lld, %lld, %lld, %lld, %lluull,\n"
	  "\t%s, step, forward, destroy, error, get, set, stats,\n\t%d, buffers, %lld,\n"
	  "\t0, NULL,\n\t%d, hypers, set_hyper, get_hyper,\n\tsave, load, step_out,\n};\n",
	  g->ranks ? "" : "static ", g->ranks ? asprintf_a(m->arena, "%s__module", id) : "module",
	  m->name, g->lo->plan.solver, nin, m->fwd->nout, npar, nst, m->step != NULL,
	  ll(g->persist + g->arena), ll(m->step ? g->step.arena : g->fwd.arena),
	  ll(m->step ? g->step.peak : g->fwd.peak), ll(g->param_bytes), ll(g->state_bytes),
	  ll(g->lo->plan.budget), (unsigned long long)g->bo->seed, g->ranks ? "orphan" : "create", nbuf,
	  ll(g->lo->buffer_bytes), nhy);
	if (g->ranks)
		return;
	H(g, "\nMTC_EXPORT const struct mtc_module *\nmtc_module(void)\n{\n\treturn &module;\n}\n");
	H(g, "\nMTC_EXPORT const char *\nmtc_last_error(void)\n{\n\treturn mtc_rt_last_error();\n}\n");

	/* The typed API. */
	H(g, "\nMTC_EXPORT %s *\n%s_create(void)\n{\n\treturn create();\n}\n", id, id);
	if (m->step) {
		H(g, "\nMTC_EXPORT int\n%s_step(%s *mtc_self", id, id);
		typed_inputs(g->m, m->step, g->h, 0);
		H(g, ", float *loss)\n{\n");
		typed_inputs(g->m, m->step, g->h, 1);
		H(g, "\treturn step(mtc_self, mtc_in, loss);\n}\n");
	}
	if (m->step) {
		H(g, "\nMTC_EXPORT int\n%s_step_out(%s *mtc_self", id, id);
		typed_inputs(g->m, m->step, g->h, 0);
		H(g, ", float *loss");
		for (int k = 0; k < m->fwd->nout; k++)
			H(g, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(g->m, k));
		H(g, ")\n{\n");
		typed_inputs(g->m, m->step, g->h, 1);
		H(g, "\tvoid *mtc_out[] = {");
		for (int k = 0; k < m->fwd->nout; k++)
			H(g, " %s,", out_param(g->m, k));
		H(g, " NULL };\n\treturn step_out(mtc_self, mtc_in, loss, mtc_out);\n}\n");
	}
	H(g, "\nMTC_EXPORT int\n%s_save(%s *mtc_self, const char *path)\n{\n\treturn save(mtc_self, path);\n}\n", id, id);
	H(g, "\nMTC_EXPORT int\n%s_load(%s *mtc_self, const char *path)\n{\n\treturn load(mtc_self, path);\n}\n", id, id);
	for (int d = 0, k = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_HYPER) {
			char nm[300];
			c_name(hyper_name(m->decl[d].name), nm, sizeof nm);
			H(g, "\nMTC_EXPORT int\n%s_set_%s(%s *mtc_self, float v)\n{\n\treturn set_hyper(mtc_self, %d, v);\n}\n",
			  id, nm, id, k++);
		}
	H(g, "\nMTC_EXPORT int\n%s_forward(%s *mtc_self", id, id);
	typed_inputs(g->m, m->fwd, g->h, 0);
	for (int k = 0; k < m->fwd->nout; k++)
		H(g, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(g->m, k));
	H(g, ")\n{\n");
	typed_inputs(g->m, m->fwd, g->h, 1);
	H(g, "\tvoid *mtc_out[] = {");
	for (int k = 0; k < m->fwd->nout; k++)
		H(g, " %s,", out_param(g->m, k));
	H(g, " NULL };\n\treturn forward(mtc_self, mtc_in, mtc_out);\n}\n");
	H(g, "\nMTC_EXPORT void\n%s_destroy(%s *inst)\n{\n\tdestroy(inst);\n}\n", id, id);
	H(g, "\nMTC_EXPORT const char *\n%s_error(const %s *inst)\n{\n\treturn error(inst);\n}\n", id, id);
}

void
host_emit_dp(FILE *fp, const LowDp *dp, const BuildOpts *bo, const char *id, const char *const *vid)
{
	const Module *m = dp->whole;
	Gen w = { .m = m, .h = fp, .id = id, .bo = bo };
	int64_t plan = 0, arena = 0, peak = 0, st = 0, pb = 0;

	H(&w, "/* %s-dp.c: the data-parallel module %s, generated by mtc %s for the MT-3000 target:\n"
	  " * one variant of the step per number of ranks (%s-rN.c), the whole model's description,\n"
	  " * mtc_module() and the API of %s.h; runtime/dp.c picks the variant at create. */\n",
	  id, m->name, PACKAGE_VERSION, id, id);
	H(&w, "#include <stdint.h>\n#include <mpi.h>\n\n#include <mtc/mtc-rt.h>\n#include <mtc/mtc-comm.h>\n\n");
	H(&w, "typedef struct %s %s;\n", id, id);
	api_protos(m, id, fp, 1);
	H(&w, "MTC_EXPORT %s *%s_create_comm(MPI_Comm comm);\n\n", id, id);
	for (int v = 0; v < dp->nvar; v++) {
		const Lowered *lo = &dp->var[v];
		const LowFunc *p = lo->m->step ? &lo->step : &lo->fwd;
		H(&w, "extern const struct mtc_module %s__module;\nvoid *%s__create(mtc_comm *);\n", vid[v], vid[v]);
		plan = lo->persist + lo->arena > plan ? lo->persist + lo->arena : plan;
		arena = p->arena > arena ? p->arena : arena;
		peak = p->peak > peak ? p->peak : peak;
		st = lo->state_bytes > st ? lo->state_bytes : st;
		pb = lo->param_bytes;
	}
	H(&w, "\nstatic const struct mtc_dp_variant variants[] = {\n");
	for (int v = 0; v < dp->nvar; v++)
		H(&w, "\t{ %d, %d, &%s__module, %s__create },\n", dp->ranks[v], dp->nslots[v], vid[v], vid[v]);
	H(&w, "};\n\n/* The whole batch's tensors. */\n");
	infos(&w, "inputs", R_INPUT);
	infos(&w, "outputs", -1);
	infos(&w, "params", R_PARAM);
	infos(&w, "state", R_STATE);
	infos(&w, "buffers", R_BUFFER);
	/* the plan's figures: those of the largest variant, a bound for every rank */
	H(&w, "\nstatic const struct mtc_module whole = {\n\tMTC_ABI, \"%s\", \"mt3000\", \"%s\",\n"
	  "\t%d, %d, %d, %d, inputs, outputs, params, state,\n\t%d, %lld, %lld, %lld, %lld, %lld, %lld, %lluull,\n"
	  "\tNULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,\n\t%d, buffers, %lld,\n};\n",
	  m->name, dp->var[0].plan.solver, count(m, R_INPUT), m->fwd->nout, count(m, R_PARAM),
	  count(m, R_STATE), m->step != NULL, ll(plan), ll(arena), ll(peak), ll(pb), ll(st),
	  ll(dp->var[0].plan.budget), (unsigned long long)bo->seed, count(m, R_BUFFER),
	  ll(dp->var[0].buffer_bytes));
	H(&w, "static const struct mtc_dp_desc desc = { &whole, %lld, variants, %d };\n", ll(dp->batch),
	  dp->nvar);
	H(&w, "\nMTC_EXPORT const struct mtc_module *\nmtc_module(void)\n{\n\treturn mtc_dp_module(&desc);\n}\n");
	H(&w, "\nMTC_EXPORT const char *\nmtc_last_error(void)\n{\n\treturn mtc_rt_last_error();\n}\n");
	/* The typed API, through the module. */
	H(&w, "\nMTC_EXPORT %s *\n%s_create(void)\n{\n\treturn mtc_module()->create();\n}\n", id, id);
	H(&w, "\nMTC_EXPORT %s *\n%s_create_comm(MPI_Comm comm)\n{\n\treturn mtc_module()->create_comm(&comm);\n}\n",
	  id, id);
	if (m->step) {
		H(&w, "\nMTC_EXPORT int\n%s_step(%s *mtc_self", id, id);
		typed_inputs(m, m->step, fp, 0);
		H(&w, ", float *loss)\n{\n");
		typed_inputs(m, m->step, fp, 1);
		H(&w, "\treturn mtc_module()->step(mtc_self, mtc_in, loss);\n}\n");
	}
	if (m->step) {
		H(&w, "\nMTC_EXPORT int\n%s_step_out(%s *mtc_self", id, id);
		typed_inputs(m, m->step, fp, 0);
		H(&w, ", float *loss");
		for (int k = 0; k < m->fwd->nout; k++)
			H(&w, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(m, k));
		H(&w, ")\n{\n");
		typed_inputs(m, m->step, fp, 1);
		H(&w, "\tvoid *mtc_out[] = {");
		for (int k = 0; k < m->fwd->nout; k++)
			H(&w, " %s,", out_param(m, k));
		H(&w, " NULL };\n\treturn mtc_module()->step_out(mtc_self, mtc_in, loss, mtc_out);\n}\n");
	}
	H(&w, "\nMTC_EXPORT int\n%s_save(%s *mtc_self, const char *path)\n{\n"
	  "\treturn mtc_module()->save(mtc_self, path);\n}\n", id, id);
	H(&w, "\nMTC_EXPORT int\n%s_load(%s *mtc_self, const char *path)\n{\n"
	  "\treturn mtc_module()->load(mtc_self, path);\n}\n", id, id);
	for (int d = 0, k = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_HYPER) {
			char nm[300];
			c_name(hyper_name(m->decl[d].name), nm, sizeof nm);
			H(&w, "\nMTC_EXPORT int\n%s_set_%s(%s *mtc_self, float v)\n{\n"
			  "\treturn mtc_module()->set_hyper(mtc_self, %d, v);\n}\n", id, nm, id, k++);
		}
	H(&w, "\nMTC_EXPORT int\n%s_forward(%s *mtc_self", id, id);
	typed_inputs(m, m->fwd, fp, 0);
	for (int k = 0; k < m->fwd->nout; k++)
		H(&w, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(m, k));
	H(&w, ")\n{\n");
	typed_inputs(m, m->fwd, fp, 1);
	H(&w, "\tvoid *mtc_out[] = {");
	for (int k = 0; k < m->fwd->nout; k++)
		H(&w, " %s,", out_param(m, k));
	H(&w, " NULL };\n\treturn mtc_module()->forward(mtc_self, mtc_in, mtc_out);\n}\n");
	H(&w, "\nMTC_EXPORT void\n%s_destroy(%s *inst)\n{\n\tmtc_module()->destroy(inst);\n}\n", id, id);
	H(&w, "\nMTC_EXPORT const char *\n%s_error(const %s *inst)\n{\n\treturn mtc_module()->error(inst);\n}\n",
	  id, id);
}
