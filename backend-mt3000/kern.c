/* kern.c: device kernels, one per op or fused elementwise group, and their host launches.
 *
 * Kernels take the hthreads argument array (pointers as uint64_t) and run on every
 * accelerator thread; each splits its work with mtc_split over items whose results do not
 * depend on the split (a whole reduction stays on one thread, in ascending order), so the bits
 * are the same for any MTC_THREADS. Shapes are constants in the code. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mt3000.h"
#include "mtc/mtc-rt.h"

#define VAL(v) (&p->f->val[v])
#define SH(v) (&p->f->val[v].ty.sh)

static void
K(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g->k, fmt, ap);
	va_end(ap);
}

static void
H(Gen *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g->h, fmt, ap);
	va_end(ap);
}

/* A float literal that reads back to exactly (float)v. */
static const char *
flit(double v, char *buf)
{
	float f = (float)v;
	if (isnan(f))
		return "NAN";
	if (isinf(f))
		return f > 0 ? "INFINITY" : "(-INFINITY)";
	snprintf(buf, 48, "%af", (double)f);
	return buf;
}
#define FL(v) flit((v), (char[48]){0})

static long long ll(int64_t x) { return (long long)x; }

/* Kernels whose bodies are the same text (an unrolled RNN's steps, a transformer's layers:
 * the same ops on the same shapes at the same offsets) are one function: each kernel is
 * written into a buffer, and where its body (all after its name) was written before, the
 * kernel table's entry points to that one's function and the text is dropped. The device
 * file's C then compiles in a fraction of the time (the 8-block transformer: 456 kernels
 * of 54 bodies). */
struct KernDedup {
	FILE *out;           /* the device translation unit */
	char *buf;           /* the text since the last kernel opened (g->k writes it) */
	size_t len;
	int cur;             /* the kernel it holds, -1: the file's prologue */
	int *map;            /* per kernel: the kernel whose function it runs */
	int cap;
	char **body;         /* the bodies written, */
	int *num;            /* the kernel that wrote each, */
	int nbody, *tab, tcap;   /* and their name table (ntab) */
};

static const char *
body_of(const void *o, int id)
{
	return ((const KernDedup *)o)->body[id];
}

/* Start buffering the device file's text (before its prologue). */
static void
kbuf_open(Gen *g)
{
	KernDedup *kd = g->kd;

	kd->buf = NULL;
	kd->len = 0;
	g->k = open_memstream(&kd->buf, &kd->len);
	if (!g->k)
		die("out of memory");
}

/* The buffered text to the device file, unless it is a kernel whose body is there already. */
static void
kbuf_flush(Gen *g)
{
	KernDedup *kd = g->kd;
	const char *b;
	int at;

	fclose(g->k);
	b = kd->cur < 0 ? NULL : strstr(kd->buf, "int nt)\n");
	if (kd->cur >= 0 && !b)
		die("kernel %d without its header", kd->cur);
	if (b && (at = ntab_find(kd->tab, kd->tcap, b, body_of, kd)) >= 0)
		kd->map[kd->cur] = kd->num[at];
	else {
		fwrite(kd->buf, 1, kd->len, kd->out);
		if (b) {
			kd->body = xrealloc(kd->body, (kd->nbody + 1) * sizeof *kd->body);
			kd->num = xrealloc(kd->num, (kd->nbody + 1) * sizeof *kd->num);
			kd->body[kd->nbody] = xstrdup(b);
			kd->num[kd->nbody] = kd->cur;
			ntab_add(&kd->tab, &kd->tcap, kd->nbody++, body_of, kd);
			kd->map[kd->cur] = kd->cur;
		}
	}
	free(kd->buf);
}

/* Open kernel number g->nk; the caller writes the body and closes it with "}\n". */
static int
kopen(Gen *g, const char *what)
{
	KernDedup *kd = g->kd;

	kbuf_flush(g);
	kbuf_open(g);
	if (g->nk == kd->cap) {
		kd->cap = kd->cap ? 2 * kd->cap : 64;
		kd->map = xrealloc(kd->map, kd->cap * sizeof *kd->map);
	}
	kd->cur = g->nk;
	K(g, "\n/* %s */\nstatic void\nk%d(const uint64_t *a, int tid, int nt)\n{\n", what, g->nk);
	return g->nk++;
}

/* Value v's address as the kernels see it: its bytes on the accelerator, or in host memory
 * where its readers read it there and its producer writes it there (g->inplace, host.c). */
static const char *
vaddr(const Gen *g, const LowFunc *p, int v, char buf[48])
{
	if (g->inplace && g->inplace[v] >= 0)
		snprintf(buf, 48, "HADDR(%lld)", ll(g->inplace[v]));
	else
		snprintf(buf, 48, "ADDR(%lld)", ll(p->off[v]));
	return buf;
}

/* The launch on the host: values' addresses in order, then the flag pointer if asked. */
static void
launch(Gen *g, const LowFunc *p, int k, const int *v, int nv, int flag, double work)
{
	char b[48];
	H(g, "\tmtc_run(d, KERN[%d], (const uint64_t[]){ ", k);
	for (int i = 0; i < nv; i++)
		H(g, "%s%s", i ? ", " : "", vaddr(g, p, v[i], b));
	if (flag)
		H(g, "%s(uint64_t)(uintptr_t)mtc_dev_flag(d)", nv ? ", " : "");
	H(g, " }, %lld);\n", ll(work > 9e18 ? (int64_t)9e18 : (int64_t)work));
}

/* launch(), the rank of a data-parallel module's instance after the values. */
static void
launch_rank(Gen *g, const LowFunc *p, int k, const int *v, int nv, double work)
{
	char b[48];

	if (!g->ranks)
		die("a rank's slice of the batch in a module that is not data-parallel");
	H(g, "\tmtc_run(d, KERN[%d], (const uint64_t[]){ ", k);
	for (int i = 0; i < nv; i++)
		H(g, "%s, ", vaddr(g, p, v[i], b));
	H(g, "(uint64_t)mtc_comm_rank(inst->c) }, %lld);\n", ll(work > 9e18 ? (int64_t)9e18 : (int64_t)work));
}

/* Pointer parameters: out (float *) or in (const float *) a[i]. */
static void
kptr(Gen *g, const char *name, int i, int out, int i32)
{
	K(g, "\t%s%s *%s = (%s%s *)(uintptr_t)a[%d];\n", out ? "" : "const ", i32 ? "int32_t" : "float",
	  name, out ? "" : "const ", i32 ? "int32_t" : "float", i);
}

static void
ksplit(Gen *g, int64_t n)
{
	K(g, "\tint64_t lo, hi;\n\tmtc_split(%lld, tid, nt, &lo, &hi);\n", ll(n));
}

/* ---------- elementwise groups ---------- */

/* A shape broadcast into R, as strides over R's dims with the size-1 dims of R dropped and
 * neighbours merged where every operand agrees (so the common cases become 1-D or 2-D). */
typedef struct Bc {
	int r;
	int64_t d[MAXRANK];
} Bc;

static int
isfull(const Shape *s, const Shape *R, int d)
{
	int k = d - (R->rank - s->rank);
	return k >= 0 && s->d[k] == R->d[d];
}

/* Collapse R for operand shapes sh[0..n); fills cd and each operand's strides st[q][]. */
static void
collapse(const Shape *R, const Shape **sh, int n, Bc *cd, int64_t st[][MAXRANK])
{
	int full[MAXFUSE][MAXRANK], keep[MAXRANK], nk = 0;

	for (int d = 0; d < R->rank; d++)
		if (R->d[d] != 1)
			keep[nk++] = d;
	cd->r = 0;
	for (int t = 0; t < nk; t++) {
		int d = keep[t], same = cd->r > 0;
		for (int q = 0; q < n && same; q++)
			same = isfull(sh[q], R, d) == full[q][cd->r - 1];
		if (same) {
			cd->d[cd->r - 1] *= R->d[d];
			continue;
		}
		for (int q = 0; q < n; q++)
			full[q][cd->r] = isfull(sh[q], R, d);
		cd->d[cd->r++] = R->d[d];
	}
	for (int q = 0; q < n; q++) {
		int64_t s = 1;
		for (int c = cd->r - 1; c >= 0; c--) {
			st[q][c] = full[q][c] ? s : 0;
			if (full[q][c])
				s *= cd->d[c];
		}
	}
}

/* The body of the loop for one element: loads of the external operands at their indices
 * (ix[q] is the C expression), each op into a register, stores of the materialized ones. */
static void
ew_body(Gen *g, const LowFunc *p, int first, int end, const int *ext, int next, char ix[][96],
        const int *outv, int nout, const char *oix, const char *ind)
{
	const Func *f = p->f;

	for (int q = 0; q < next; q++)
		K(g, "%sfloat x%d = i%d[%s];\n", ind, q, q, ix[q]);
	for (int i = first; i < end; i++) {
		const Op *o = &f->op[i];
		char an[3][16] = { "", "", "" }, c[2][16], n[32], e[256];
		const char *x[3] = { an[0], an[1], an[2] }, *cs[2] = { c[0], c[1] };

		for (int a = 0; a < o->nargs && a < 3; a++) {
			int v = o->args[a], q;
			int d = VAL(v)->def;
			if (d >= first && d < end) {
				snprintf(an[a], sizeof an[a], "t%d", d - first);
				continue;
			}
			for (q = 0; ext[q] != v; q++)
				;
			snprintf(an[a], sizeof an[a], "x%d", q);
		}
		snprintf(c[0], sizeof c[0], "c%d", i - first);
		snprintf(c[1], sizeof c[1], "d%d", i - first);
		snprintf(n, sizeof n, "%lld.0f", ll(shape_numel(SH(o->res))));
		K(g, "%sfloat t%d = %s;\n", ind, i - first, op_ew_expr(o->kind, x, cs, n, e, sizeof e));
	}
	for (int q = 0; q < nout; q++)
		K(g, "%so%d[%s] = t%d;\n", ind, q, oix, VAL(outv[q])->def - first);
}

/* One kernel for the elementwise ops [first, end): every operand from outside the group is
 * read once per element, every result used after the group is stored. */
void
kern_ew(Gen *g, const LowFunc *p, int first, int end)
{
	const Func *f = p->f;
	const Shape *R = SH(f->op[first].res), *sh[MAXFUSE];
	int ext[MAXFUSE], next = 0, outv[MAXFUSE], nout = 0, args[2 * MAXFUSE], na = 0, k;
	int64_t st[MAXFUSE][MAXRANK];
	char ix[MAXFUSE][96], what[160];
	Bc cd;
	double work = (double)shape_numel(R) * (end - first);

	for (int i = first; i < end; i++) {
		const Op *o = &f->op[i];
		for (int a = 0; a < o->nargs; a++) {
			int v = o->args[a], d = VAL(v)->def, q;
			if (d >= first && d < end)
				continue;
			for (q = 0; q < next && ext[q] != v; q++)
				;
			if (q == next) {
				if (next == MAXFUSE)
					die("fused group with more than 16 operands");
				ext[next++] = v;
			}
		}
		if (p->mat[o->res]) {
			if (nout == MAXFUSE)
				die("fused group with more than 16 results");
			outv[nout++] = o->res;
		}
	}
	snprintf(what, sizeof what, "%s: %s%s", f->name, opinfo[f->op[first].kind].name,
	         end - first > 1 ? " and the elementwise ops after it, fused" : "");
	k = kopen(g, what);
	for (int q = 0; q < nout; q++) {
		char nm[16];
		snprintf(nm, sizeof nm, "o%d", q);
		kptr(g, nm, q, 1, 0);
		args[na++] = outv[q];
	}
	for (int q = 0; q < next; q++) {
		char nm[16];
		snprintf(nm, sizeof nm, "i%d", q);
		kptr(g, nm, nout + q, 0, 0);
		args[na++] = ext[q];
		sh[q] = SH(ext[q]);
	}
	/* A float attribute (pow's exponent) through a volatile: the compiler would turn powf(x, 2)
	 * into x * x, which the C library's powf (the interpreter's) does not always round the same
	 * way. */
	for (int i = first; i < end; i++) {
		if (op_nfattr(f->op[i].kind) > 0)
			K(g, "\tstatic volatile float vc%d = %s;\n\tfloat c%d = vc%d;\n", i - first,
			  FL(f->op[i].fa[0]), i - first, i - first);
		if (op_nfattr(f->op[i].kind) > 1)
			K(g, "\tstatic volatile float vd%d = %s;\n\tfloat d%d = vd%d;\n", i - first,
			  FL(f->op[i].fa[1]), i - first, i - first);
	}
	collapse(R, sh, next, &cd, st);
	if (cd.r <= 1) {
		int64_t n = cd.r ? cd.d[0] : 1;
		ksplit(g, n);
		for (int q = 0; q < next; q++)
			snprintf(ix[q], sizeof ix[q], "%s", cd.r && st[q][0] ? "i" : "0");
		K(g, "\tfor (int64_t i = lo; i < hi; i++) {\n");
		ew_body(g, p, first, end, ext, next, ix, outv, nout, "i", "\t\t");
		K(g, "\t}\n");
	} else {
		int64_t rows = 1, inner = cd.d[cd.r - 1];
		for (int c = 0; c < cd.r - 1; c++)
			rows *= cd.d[c];
		ksplit(g, rows);
		K(g, "\tfor (int64_t r = lo; r < hi; r++) {\n");
		for (int q = 0; q < next; q++) {
			int64_t div = 1;
			K(g, "\t\tint64_t b%d = 0", q);
			for (int c = cd.r - 2; c >= 0; c--) {
				if (st[q][c])
					K(g, " + r / %lld %% %lld * %lld", ll(div), ll(cd.d[c]), ll(st[q][c]));
				div *= cd.d[c];
			}
			K(g, ";\n");
			snprintf(ix[q], sizeof ix[q], "b%d%s", q, st[q][cd.r - 1] ? " + j" : "");
		}
		K(g, "\t\tfor (int64_t j = 0; j < %lld; j++) {\n", ll(inner));
		{
			char oix[48];
			snprintf(oix, sizeof oix, "r * %lld + j", ll(inner));
			ew_body(g, p, first, end, ext, next, ix, outv, nout, oix, "\t\t\t");
		}
		K(g, "\t\t}\n\t}\n");
	}
	K(g, "}\n");
	launch(g, p, k, args, na, 0, work);
}

/* ---------- everything else ---------- */

/* x viewed as [outer, n, inner] around axis. */
static void
around(const Shape *s, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
	*outer = *inner = 1;
	for (int d = 0; d < axis; d++)
		*outer *= s->d[d];
	*n = s->d[axis];
	for (int d = axis + 1; d < s->rank; d++)
		*inner *= s->d[d];
}

/* C index expression of element `i` (a C expression) of R in a broadcast operand s. */
static void
bidx(const Shape *s, const Shape *R, const char *i, char *buf, size_t nbuf)
{
	int64_t div = 1, st = 1;
	size_t k = (size_t)snprintf(buf, nbuf, "0");
	for (int d = R->rank - 1; d >= 0; d--) {
		if (isfull(s, R, d) && R->d[d] != 1) {
			k += (size_t)snprintf(buf + k, nbuf - k, " + %s / %lld %% %lld * %lld", i, ll(div),
			                      ll(R->d[d]), ll(st));
			st *= R->d[d];
		}
		div *= R->d[d];
	}
}

/* The GEMM's fixed grid of tiles, from the shape alone (so the bits do not depend on the
 * thread count): as large as possible, since each tile is one BLAS call that packs its
 * operands again, but at least MINW tiles in all while a tile has more than MTC_GEMM_ROWS
 * rows, so that the threads have work to share. */
enum { MINW = 8, MAXCOLS = 512 };

static void
gemm_tile(int64_t nb, int64_t M, int64_t N, int64_t *tr, int64_t *tc)
{
	*tc = N <= MAXCOLS ? N : MAXCOLS;
	*tr = M;
	while (*tr > MTC_GEMM_ROWS && nb * ((M + *tr - 1) / *tr) * ((N + *tc - 1) / *tc) < MINW)
		*tr = (*tr / 2 + MTC_GEMM_ROWS - 1) / MTC_GEMM_ROWS * MTC_GEMM_ROWS;
}

static void
k_matmul(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *a = SH(o->args[0]), *b = SH(o->args[1]), *c = SH(o->res);
	int ta = (int)o->ia[0], tb = (int)o->ia[1], rc = c->rank, nbd = rc - 2;
	int64_t M = c->d[rc - 2], N = c->d[rc - 1], Kd = ta ? a->d[a->rank - 2] : a->d[a->rank - 1];
	int64_t nb = 1, tr, tc, mbl, nbl;
	int64_t asz = a->d[a->rank - 2] * a->d[a->rank - 1], bsz = b->d[b->rank - 2] * b->d[b->rank - 1];
	int v[3] = { o->res, o->args[0], o->args[1] };
	char what[32];
	int k = kopen(g, "matmul");

	for (int d = 0; d < nbd; d++)
		nb *= c->d[d];
	gemm_tile(nb, M, N, &tr, &tc);
	mbl = (M + tr - 1) / tr;
	nbl = (N + tc - 1) / tc;
	kptr(g, "C", 0, 1, 0);
	kptr(g, "A", 1, 0, 0);
	kptr(g, "B", 2, 0, 0);
	ksplit(g, nb * mbl * nbl);
	K(g, "\tfor (int64_t w = lo; w < hi; w++) {\n");
	K(g, "\t\tint64_t bt = w / %lld, r0 = w / %lld %% %lld * %lld, c0 = w %% %lld * %lld;\n",
	  ll(mbl * nbl), ll(nbl), ll(mbl), ll(tr), ll(nbl), ll(tc));
	K(g, "\t\tint64_t r1 = r0 + %lld < %lld ? r0 + %lld : %lld, c1 = c0 + %lld < %lld ? c0 + %lld : %lld;\n",
	  ll(tr), ll(M), ll(tr), ll(M), ll(tc), ll(N), ll(tc), ll(N));
	/* Batch offsets of A and B: their batch dims broadcast against C's. */
	for (int s = 0; s < 2; s++) {
		const Shape *x = s ? b : a;
		int64_t div = 1, st = s ? bsz : asz;
		K(g, "\t\tint64_t %co = 0", s ? 'b' : 'a');
		for (int d = nbd - 1; d >= 0; d--) {
			int kx = d - (nbd - (x->rank - 2));
			if (kx >= 0 && x->d[kx] == c->d[d] && c->d[d] != 1) {
				K(g, " + bt / %lld %% %lld * %lld", ll(div), ll(c->d[d]), ll(st));
			}
			if (kx >= 0)
				st *= x->d[kx];
			div *= c->d[d];
		}
		K(g, ";\n");
	}
	K(g, "\t\tmtc_sgemm_rows(%d, %d, r0, r1, c1 - c0, %lld, A + ao, %lld, B + bo + c0%s, %lld, "
	  "C + bt * %lld + c0, %lld);\n", ta, tb, ll(Kd), ll(ta ? M : Kd),
	  tb ? (snprintf(what, sizeof what, " * %lld", ll(Kd)), what) : "", ll(tb ? Kd : N), ll(M * N), ll(N));
	K(g, "\t}\n}\n");
	launch(g, p, k, v, 3, 0, 2.0 * (double)(nb * M) * (double)N * (double)Kd);
}

/* ---------- convolution ---------- */

/* ---------- convolution ---------- */

/* A GEMM kernel over a batch: for bt < nb, C_bt (+)= sum over s < ns of op(A) op(B), M x N
 * over K, in k_matmul's fixed tile grid (a tile's sum over s on one thread, in order, so the
 * bits do not depend on the thread count). Operands: A at bt % amod * astr + s * asum, B at
 * bt * bstr + s * bsum, C at bt * cstr, from the pointers a[1], a[2], a[0]; with addarg, the
 * sums go on from C when a[3] is not 0 (a chunk after the first). Returns the kernel. */
typedef struct Gemm {
	int64_t nb, ns, M, N, K, lda, ldb, ldc;
	int ta, tb, addarg;
	int64_t amod, astr, asum, bstr, bsum, cstr;
} Gemm;

static int
gemm_kernel(Gen *g, const char *what, const Gemm *m)
{
	int64_t tr, tc, mbl, nbl;
	int k = kopen(g, what);
	char bcol[32] = "";

	if (m->tb)       /* a column tile of op(B) starts at a row of the stored B */
		snprintf(bcol, sizeof bcol, " * %lld", ll(m->ldb));
	gemm_tile(m->nb, m->M, m->N, &tr, &tc);
	mbl = (m->M + tr - 1) / tr;
	nbl = (m->N + tc - 1) / tc;
	kptr(g, "C", 0, 1, 0);
	kptr(g, "A", 1, 0, 0);
	kptr(g, "B", 2, 0, 0);
	K(g, "\tint add = %s;\n", m->addarg ? "a[3] != 0" : "0");
	ksplit(g, m->nb * mbl * nbl);
	K(g, "\tfor (int64_t w = lo; w < hi; w++) {\n");
	K(g, "\t\tint64_t bt = w / %lld, r0 = w / %lld %% %lld * %lld, c0 = w %% %lld * %lld;\n",
	  ll(mbl * nbl), ll(nbl), ll(mbl), ll(tr), ll(nbl), ll(tc));
	K(g, "\t\tint64_t r1 = r0 + %lld < %lld ? r0 + %lld : %lld, c1 = c0 + %lld < %lld ? c0 + %lld : %lld;\n",
	  ll(tr), ll(m->M), ll(tr), ll(m->M), ll(tc), ll(m->N), ll(tc), ll(m->N));
	K(g, "\t\tfor (int64_t s = 0; s < %lld; s++)\n", ll(m->ns));
	K(g, "\t\t\t(s || add ? mtc_sgemm_rows_add : mtc_sgemm_rows)(%d, %d, r0, r1, c1 - c0, %lld, "
	  "A + bt %% %lld * %lld + s * %lld, %lld, B + bt * %lld + s * %lld + c0%s, %lld, "
	  "C + bt * %lld + c0, %lld);\n\t}\n}\n", m->ta, m->tb, ll(m->K), ll(m->amod), ll(m->astr),
	  ll(m->asum), ll(m->lda), ll(m->bstr), ll(m->bsum), bcol, ll(m->ldb), ll(m->cstr), ll(m->ldc));
	return k;
}

/* A kernel of the runtime's over the units [0, n) (planes of im2col/col2im, pairs of
 * mtc_chanfirst): its call's text `call`, with lo and hi. */
static int
loop_kernel(Gen *g, const char *what, int64_t n, const char *call)
{
	int k = kopen(g, what);

	kptr(g, "p0", 0, 1, 0);
	kptr(g, "p1", 1, 0, 0);
	ksplit(g, n);
	K(g, "\t%s\n}\n", call);
	return k;
}

/* The host's launch of kernel k on pointers given as C expressions. */
static void
launch_ptrs(Gen *g, int k, const char *const *ptr, int n, double work)
{
	H(g, "\t\tmtc_run(d, KERN[%d], (const uint64_t[]){ ", k);
	for (int i = 0; i < n; i++)
		H(g, "%s%s", i ? ", " : "", ptr[i]);
	H(g, " }, %lld);\n", ll(work > 9e18 ? (int64_t)9e18 : (int64_t)work));
}

/* The work a launch of im2col or col2im, and of mtc_chanfirst, declares per element, in the
 * units of the runtime's threshold for splitting a launch over the threads (about 0.2 ns on
 * one core, an element of a plain elementwise op): strided copies of short rows, each element
 * a few ns, and whole rows by memcpy. Declared as one, every im2col of ResNet's later layers
 * (147 456 elements, 250-450 us) ran on one thread. */
enum { IM2COLW = 10, CHANW = 2 };

/* conv2d, conv2d_dx, conv2d_dw (passes/grad.c). A pointwise one is one launch of GEMMs on the
 * tensors as they are, per image and group; a depthwise one the runtime's direct loops
 * (mtc_dwconv*: the GEMMs' sums, in their order). Any other works through its workspace a chunk of
 * k images at a time (ops.c's conv_workspace): region A the columns [C*kh*kw, k*P], region B
 * the GEMM's other side channels first [Cout, k*P]; per chunk: im2col into A, the GEMM, y out of
 * B (conv2d); dy into B, the GEMM into A, col2im (conv2d_dx); im2col into A, dy into B, the GEMM
 * adding into dw (conv2d_dw). */
static void
k_conv(Gen *g, const LowFunc *p, const Op *o)
{
	int dx = o->kind == OP_CONV2D_DX, dw = o->kind == OP_CONV2D_DW;
	const Shape *x = SH(dx ? o->res : o->args[0]), *w = SH(dx ? o->args[0] : dw ? o->res : o->args[1]);
	const int64_t *a = o->ia;
	int64_t N = x->d[0], C = x->d[1], H_ = x->d[2], W_ = x->d[3], G = a[6], co = w->d[0], cog = co / G;
	int64_t kh = w->d[2], kw = w->d[3], cg = C / G, kg = cg * kh * kw, kc = C * kh * kw;
	int64_t ho = window_out(H_, kh, a[0], a[2], a[4]), wo = window_out(W_, kw, a[1], a[3], a[5]), P = ho * wo;
	int vx = dx ? o->res : o->args[0], vw = dx ? o->args[0] : dw ? o->res : o->args[1];
	int vy = o->kind == OP_CONV2D ? o->res : o->args[1];
	char ax[48], aw[48], ay[48];
	double fl = 2.0 * (double)(N * co * P) * (double)kg;
	char ptr[4][96], call[512];
	const char *pp[4] = { ptr[0], ptr[1], ptr[2], ptr[3] };
	Gemm m;
	int kg1, kg2;

	if (o->nargs == 2 && G == C && co == G && !(kh == 1 && kw == 1 && a[0] == 1 && a[1] == 1 &&
	                                              a[2] == 0 && a[3] == 0)) {
		/* depthwise: the runtime's direct loops over planes (dw: over channels) */
		int k = kopen(g, opinfo[o->kind].name);
		kptr(g, "o", 0, 1, 0);
		kptr(g, "p", 1, 0, 0);
		kptr(g, "q", 2, 0, 0);
		ksplit(g, dw ? C : N * C);
		if (dw)
			K(g, "	mtc_dwconv_dw(o, p, q, %lld, ", ll(N));
		else
			K(g, "	%s(o, p, q, ", dx ? "mtc_dwconv_dx" : "mtc_dwconv");
		K(g, "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, lo, hi);\n}\n",
		  ll(C), ll(H_), ll(W_), ll(kh), ll(kw), ll(a[0]), ll(a[1]), ll(a[2]), ll(a[3]), ll(a[4]),
		  ll(a[5]), ll(ho), ll(wo));
		/* o the result; p, q: x, w (conv2d), w, dy (conv2d_dx), x, dy (conv2d_dw) */
		launch(g, p, k, (int[]){ o->res, o->args[0], o->args[1] }, 3, 0, fl);
		return;
	}
	if (o->nargs == 2) {      /* pointwise: x and y are the GEMMs' operands as they are */
		if (o->kind == OP_CONV2D)
			m = (Gemm){ N * G, 1, cog, P, cg, cg, P, P, 0, 0, 0, G, cog * cg, 0, cg * P, 0, cog * P };
		else if (dx)
			m = (Gemm){ N * G, 1, cg, P, cog, cg, P, P, 1, 0, 0, G, cog * cg, 0, cog * P, 0, cg * P };
		else
			m = (Gemm){ G, N, cog, cg, P, P, P, cg, 0, 1, 0, G, cog * P, co * P, cg * P, C * P, cog * cg };
		kg1 = gemm_kernel(g, opinfo[o->kind].name, &m);
		H(g, "\t{\n");
		snprintf(ptr[0], sizeof ptr[0], "%s", dx ? vaddr(g, p, vx, ax) : dw ? vaddr(g, p, vw, aw) : vaddr(g, p, vy, ay));
		snprintf(ptr[1], sizeof ptr[1], "%s", o->kind == OP_CONV2D || dx ? vaddr(g, p, vw, aw) : vaddr(g, p, vy, ay));
		snprintf(ptr[2], sizeof ptr[2], "%s", dx ? vaddr(g, p, vy, ay) : vaddr(g, p, vx, ax));
		launch_ptrs(g, kg1, pp, 3, fl);
		H(g, "\t}\n");
		return;
	}
	{
		int64_t k = SH(o->args[2])->d[0], kp = k * P, ws = p->off[o->args[2]], wb = ws + 4 * kc * kp;
		int64_t xc = 4 * k * C * H_ * W_, yc = 4 * k * co * P;     /* a chunk's bytes of x, y */
		int im, tr;

		snprintf(call, sizeof call, "mtc_im2col(p0, p1, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, "
		         "%lld, %lld, %lld, %lld, %lld, %lld, lo, hi);", ll(k), ll(C), ll(H_), ll(W_), ll(kh),
		         ll(kw), ll(a[0]), ll(a[1]), ll(a[2]), ll(a[3]), ll(a[4]), ll(a[5]), ll(ho), ll(wo));
		if (dx)
			memcpy(call + 4, "col2im", 6);      /* mtc_col2im: the same arguments, the other way */
		im = loop_kernel(g, dx ? "col2im" : "im2col", k * C, call);
		/* a[0] the destination, a[1] the source: B out into y, or dy into B */
		if (o->kind == OP_CONV2D)
			snprintf(call, sizeof call, "mtc_chanfirst((float *)p1, p0, %lld, %lld, %lld, 0, lo, hi);",
			         ll(k), ll(co), ll(P));
		else
			snprintf(call, sizeof call, "mtc_chanfirst(p0, (float *)p1, %lld, %lld, %lld, 1, lo, hi);",
			         ll(k), ll(co), ll(P));
		tr = loop_kernel(g, o->kind == OP_CONV2D ? "conv2d: out of channels first" : "channels first", k * co, call);
		if (o->kind == OP_CONV2D)
			m = (Gemm){ G, 1, cog, kp, kg, kg, kp, kp, 0, 0, 0, G, cog * kg, 0, kg * kp, 0, cog * kp };
		else if (dx)
			m = (Gemm){ G, 1, kg, kp, cog, kg, kp, kp, 1, 0, 0, G, cog * kg, 0, cog * kp, 0, kg * kp };
		else
			m = (Gemm){ G, 1, cog, kg, kp, kp, kp, kg, 0, 1, 1, G, cog * kp, 0, kg * kp, 0, cog * kg };
		kg2 = gemm_kernel(g, opinfo[o->kind].name, &m);
		H(g, "\tfor (int64_t c = 0; c < %lld; c++) {\n", ll(N / k));
		if (o->kind == OP_CONV2D) {
			snprintf(ptr[0], sizeof ptr[0], "ADDR(%lld)", ll(ws));
			snprintf(ptr[1], sizeof ptr[1], "%s + c * %lld", vaddr(g, p, vx, ax), ll(xc));
			launch_ptrs(g, im, pp, 2, IM2COLW * (double)(kc * kp));
			snprintf(ptr[0], sizeof ptr[0], "ADDR(%lld)", ll(wb));
			snprintf(ptr[1], sizeof ptr[1], "%s", vaddr(g, p, vw, aw));
			snprintf(ptr[2], sizeof ptr[2], "ADDR(%lld)", ll(ws));
			launch_ptrs(g, kg2, pp, 3, fl / (double)(N / k));
			/* out of B into y: mtc_chanfirst(t = B, y = chunk of y, to 0) */
			snprintf(ptr[0], sizeof ptr[0], "%s + c * %lld", vaddr(g, p, vy, ay), ll(yc));
			snprintf(ptr[1], sizeof ptr[1], "ADDR(%lld)", ll(wb));
			launch_ptrs(g, tr, pp, 2, CHANW * (double)(co * kp));
		} else {
			/* dy into B: mtc_chanfirst(t = B, y = chunk of dy, to 1) */
			snprintf(ptr[0], sizeof ptr[0], "ADDR(%lld)", ll(wb));
			snprintf(ptr[1], sizeof ptr[1], "%s + c * %lld", vaddr(g, p, vy, ay), ll(yc));
			launch_ptrs(g, tr, pp, 2, CHANW * (double)(co * kp));
			if (dw) {
				snprintf(ptr[0], sizeof ptr[0], "ADDR(%lld)", ll(ws));
				snprintf(ptr[1], sizeof ptr[1], "%s + c * %lld", vaddr(g, p, vx, ax), ll(xc));
				launch_ptrs(g, im, pp, 2, IM2COLW * (double)(kc * kp));
				snprintf(ptr[0], sizeof ptr[0], "%s", vaddr(g, p, vw, aw));
				snprintf(ptr[1], sizeof ptr[1], "ADDR(%lld)", ll(wb));
				snprintf(ptr[2], sizeof ptr[2], "ADDR(%lld)", ll(ws));
				snprintf(ptr[3], sizeof ptr[3], "(uint64_t)c");
				launch_ptrs(g, kg2, pp, 4, fl / (double)(N / k));
			} else {
				snprintf(ptr[0], sizeof ptr[0], "ADDR(%lld)", ll(ws));
				snprintf(ptr[1], sizeof ptr[1], "%s", vaddr(g, p, vw, aw));
				snprintf(ptr[2], sizeof ptr[2], "ADDR(%lld)", ll(wb));
				launch_ptrs(g, kg2, pp, 3, fl / (double)(N / k));
				snprintf(ptr[0], sizeof ptr[0], "%s + c * %lld", vaddr(g, p, vx, ax), ll(xc));
				snprintf(ptr[1], sizeof ptr[1], "ADDR(%lld)", ll(ws));
				launch_ptrs(g, im, pp, 2, IM2COLW * (double)(kc * kp));
			}
		}
		H(g, "\t}\n");
	}
}

/* workspace: bytes and nothing to run. */
static void
k_workspace(Gen *g, const LowFunc *p, const Op *o)
{
	(void)g, (void)p, (void)o;
}

/* max_pool2d, avg_pool2d and their gradients: the runtime's loops over planes (n, c). */
static void
k_pool(Gen *g, const LowFunc *p, const Op *o)
{
	int grad = o->kind == OP_MAXPOOL_G || o->kind == OP_AVGPOOL_G;
	int avg = o->kind == OP_AVGPOOL || o->kind == OP_AVGPOOL_G, mx = o->kind == OP_MAXPOOL_G;
	const Shape *x = SH(grad ? o->res : o->args[0]), *y = SH(grad ? o->args[mx] : o->res);
	const int64_t *a = o->ia;
	int v[3] = { o->res, o->args[0], mx ? o->args[1] : 0 }, k = kopen(g, opinfo[o->kind].name);

	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	if (mx)
		kptr(g, "dy", 2, 0, 0);
	ksplit(g, x->d[0] * x->d[1]);
	if (grad)
		K(g, "\tmtc_pool2d_grad(r, %s, %s, ", mx ? "x" : "0", mx ? "dy" : "x");
	else
		K(g, "\tmtc_pool2d(r, x, ");
	K(g, "%d, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, lo, hi);\n}\n",
	  avg ? 2 - (int)a[6] : 0, ll(x->d[2]), ll(x->d[3]), ll(a[0]), ll(a[1]), ll(a[2]), ll(a[3]),
	  ll(a[4]), ll(a[5]), avg ? 1LL : ll(a[6]), avg ? 1LL : ll(a[7]), ll(y->d[2]), ll(y->d[3]));
	launch(g, p, k, v, mx ? 3 : 2, 0, (double)shape_numel(y) * (double)(a[0] * a[1]));
}

/* batch norm's ops: the runtime's loops, over planes (n, c) for the elementwise parts and
 * channels for the statistics (a channel's sum on one thread, in order). */
static void
k_bn(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *x = SH(o->args[0]);      /* the input; batch_norm_update's running mean */
	int upd = o->kind == OP_BN_UPDATE;
	int64_t N = upd ? 1 : x->d[0], C = upd ? x->d[0] : x->d[1], Q = shape_numel(x) / (N * C);
	int v[7], k = kopen(g, opinfo[o->kind].name), nv = 0;
	char fa[64];       /* eps, or batch_norm_update's momentum */

	if (o->res >= 0)
		v[nv++] = o->res;
	for (int i = 0; i < o->nargs; i++)
		v[nv++] = o->args[i];
	for (int i = 0; i < nv; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "p%d", i);
		kptr(g, nm, i, i == 0 || (o->kind == OP_BN_UPDATE && i == 1), 0);
	}
	snprintf(fa, sizeof fa, "%.17g", o->fa[0]);
	switch (o->kind) {
	case OP_BATCHNORM:
		ksplit(g, N * C);
		K(g, "\tmtc_bn_apply(p0, p1, p2, p3, p4, p5, %s, %lld, %lld, lo, hi);\n", fa, ll(C), ll(Q));
		break;
	case OP_BN_MEAN:
	case OP_BN_VAR:
		ksplit(g, C);
		K(g, "\tmtc_bn_stat(p0, p1, %s, %lld, %lld, %lld, lo, hi);\n", o->kind == OP_BN_VAR ? "p2" : "0",
		  ll(N), ll(C), ll(Q));
		break;
	case OP_BN_DSTATS:
		ksplit(g, C);
		K(g, "\tmtc_bn_dstats(p0, p1, p2, p3, p4, %s, %lld, %lld, %lld, lo, hi);\n", fa, ll(N), ll(C), ll(Q));
		break;
	case OP_BN_DX:
		ksplit(g, N * C);
		K(g, "\tmtc_bn_dx(p0, p1, p2, p3, p4, p5, p6, %d, %s, %lld, %lld, %lld, lo, hi);\n",
		  (int)o->ia[0], fa, ll(N), ll(C), ll(Q));
		break;
	default:      /* batch_norm_update: operands only, the first two written */
		ksplit(g, C);
		K(g, "\tmtc_bn_update(p0, p1, p2, p3, %s, %lld.0, lo, hi);\n", fa, ll(o->ia[0]));
	}
	K(g, "}\n");
	launch(g, p, k, v, nv, 0, (double)shape_numel(x) * 2);
}

/* dropout(x, t): Philox's draw per element (<mtc/mtc-ops.h>) at its place in the whole batch,
 * the same bits as the interpreter's; dropout(x) copies. */
static void
k_dropout(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t n = shape_numel(SH(o->res));
	int v[3] = { o->res, o->args[0], o->nargs > 1 ? o->args[1] : 0 }, k = kopen(g, "dropout");

	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, n);
	if (o->nargs < 2) {
		K(g, "\tif (hi > lo)\n\t\tmemcpy(r + lo, x + lo, sizeof(float) * (size_t)(hi - lo));\n}\n");
	} else {
		kptr(g, "t", 2, 0, 1);
		/* a rank's slice: the host passes the rank after the operands */
		K(g, "\tlong long q = %lldLL", ll(o->ia[4]));
		if (o->ia[5])
			K(g, " + (long long)a[3] * %lldLL", ll(o->ia[5]));
		K(g, ";\n");
		K(g, "\tfor (int64_t i = lo; i < hi; i++)\n"
		  "\t\tr[i] = mtc_dropout_u(mtc_dropout_at(i, %lldLL, %lldLL, q), %d, t[0], %lluull) >= %s ?\n"
		  "\t\t       x[i] * %s : 0.0f;\n}\n", ll(o->ia[2]), ll(o->ia[3]), (int)o->ia[0],
		  (unsigned long long)o->ia[1], FL(o->fa[0]), FL(1.0 / (1.0 - o->fa[0])));
	}
	if (o->ia[5])
		launch_rank(g, p, k, v, o->nargs + 1, 10.0 * (double)n);
	else
		launch(g, p, k, v, o->nargs + 1, 0, 10.0 * (double)n);
}

static void
k_const(Gen *g, const LowFunc *p, const Op *o)
{
	int v = o->res, k = kopen(g, "const");
	kptr(g, "r", 0, 1, 0);
	ksplit(g, shape_numel(SH(v)));
	K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tr[i] = %s;\n}\n", FL(o->fa[0]));
	launch(g, p, k, &v, 1, 0, (double)shape_numel(SH(v)));
}

/* reshape: a copy of the bytes (f32 or i32). */
static void
k_copy(Gen *g, const LowFunc *p, const Op *o)
{
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "reshape");
	int64_t n = shape_numel(SH(o->res));
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, n);
	K(g, "\tif (hi > lo)\n\t\tmemcpy(r + lo, x + lo, sizeof(float) * (size_t)(hi - lo));\n}\n");
	launch(g, p, k, v, 2, 0, (double)n);
}

/* to_f32: each int32 rounded to the nearest float (C's conversion); to_i32: toward zero, NaN
 * 0, clamped (mtc_toi32); the interpreter's. */
static void
k_convert(Gen *g, const LowFunc *p, const Op *o)
{
	int toi = o->kind == OP_TOI32, v[2] = { o->res, o->args[0] };
	int k = kopen(g, toi ? "to_i32" : "to_f32");
	int64_t n = shape_numel(SH(o->res));
	kptr(g, "r", 0, 1, toi);
	kptr(g, "x", 1, 0, !toi);
	ksplit(g, n);
	K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tr[i] = %s;\n}\n",
	  toi ? "mtc_toi32(x[i])" : "(float)x[i]");
	launch(g, p, k, v, 2, 0, (double)n);
}

/* slice(x) axis start: x narrowed along axis to [start, start + n), n from the result. */
static void
k_slice(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner, m = SH(o->res)->d[o->ia[0]];
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "slice");

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, outer);
	K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tmemcpy(r + i * %lld, x + i * %lld + %lld, %lld);\n}\n",
	  ll(m * inner), ll(n * inner), ll(o->ia[1] * inner), ll(m * inner * 4));
	launch(g, p, k, v, 2, 0, (double)shape_numel(SH(o->res)));
}

/* slice_grad(dy) axis start: zeros with dy at [start, start + n) along axis. */
static void
k_slicegrad(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner, m = SH(o->res)->d[o->ia[0]], st = o->ia[1];
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "slice_grad");

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, outer);
	K(g, "\tfor (int64_t i = lo; i < hi; i++) {\n\t\tfloat *ri = r + i * %lld;\n", ll(m * inner));
	if (st > 0)
		K(g, "\t\tmemset(ri, 0, %lld);\n", ll(st * inner * 4));
	K(g, "\t\tmemcpy(ri + %lld, x + i * %lld, %lld);\n", ll(st * inner), ll(n * inner), ll(n * inner * 4));
	if (m - st - n > 0)
		K(g, "\t\tmemset(ri + %lld, 0, %lld);\n", ll((st + n) * inner), ll((m - st - n) * inner * 4));
	K(g, "\t}\n}\n");
	launch(g, p, k, v, 2, 0, (double)shape_numel(SH(o->res)));
}

static void
k_transpose(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *x = SH(o->args[0]), *r = SH(o->res);
	int64_t sst[MAXRANK], n = shape_numel(r);
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "transpose");

	sst[x->rank - 1] = 1;
	for (int d = x->rank - 1; d > 0; d--)
		sst[d - 1] = sst[d] * x->d[d];
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	K(g, "\tstatic const int64_t shape[] = {");
	for (int d = 0; d < r->rank; d++)
		K(g, " %lld,", ll(r->d[d]));
	K(g, " 0 }, st[] = {");
	for (int d = 0; d < r->rank; d++)
		K(g, " %lld,", ll(sst[o->ia[d]]));
	K(g, " 0 };\n");
	ksplit(g, n);
	K(g, "\tmtc_permute(r, x, %d, shape, st, lo, hi);\n}\n", r->rank);
	launch(g, p, k, v, 2, 0, (double)n);
}

static void
k_concat(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, tot, inner, col = 0;
	int v[o->nargs + 1], k = kopen(g, "concat");

	around(SH(o->res), (int)o->ia[0], &outer, &tot, &inner);
	v[0] = o->res;
	kptr(g, "r", 0, 1, 0);
	ksplit(g, outer);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n");
	for (int i = 0; i < o->nargs; i++) {
		int64_t n = SH(o->args[i])->d[o->ia[0]] * inner;
		v[i + 1] = o->args[i];
		K(g, "\t\tmemcpy(r + o * %lld + %lld, (const float *)(uintptr_t)a[%d] + o * %lld, %lld);\n",
		  ll(tot * inner), ll(col), i + 1, ll(n), ll(n * 4));
		col += n;
	}
	K(g, "\t}\n}\n");
	launch(g, p, k, v, o->nargs + 1, 0, (double)shape_numel(SH(o->res)));
}

/* sum, mean, max over one axis: each output element on one thread, k ascending. */
static void
k_reduce(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner;
	int v[2] = { o->res, o->args[0] }, k = kopen(g, opinfo[o->kind].name);

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, outer * inner);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n");
	K(g, "\t\tconst float *xp = x + o / %lld * %lld + o %% %lld;\n", ll(inner), ll(n * inner), ll(inner));
	K(g, "\t\tfloat s = xp[0];\n\t\tfor (int64_t k = 1; k < %lld; k++)\n", ll(n));
	if (o->kind == OP_MAX)
		K(g, "\t\t\ts = xp[k * %lld] > s ? xp[k * %lld] : s;\n", ll(inner), ll(inner));
	else
		K(g, "\t\t\ts = s + xp[k * %lld];\n", ll(inner));
	if (o->kind == OP_MEAN)
		K(g, "\t\tr[o] = s / %s;\n", FL((double)n));
	else
		K(g, "\t\tr[o] = s;\n");
	K(g, "\t}\n}\n");
	launch(g, p, k, v, 2, 0, (double)(outer * n * inner));
}

/* argmax (passes/grad.c): the first largest, or the first NaN, per (outer, inner) column. */
static void
k_argmax(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner;
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "argmax");

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 1);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, outer * inner);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n");
	K(g, "\t\tconst float *c = x + o / %lld * %lld + o %% %lld;\n\t\tint64_t b = 0;\n",
	  ll(inner), ll(n * inner), ll(inner));
	K(g, "\t\tfor (int64_t k = 1; k < %lld && c[b * %lld] == c[b * %lld]; k++)\n"
	  "\t\t\tif (c[k * %lld] > c[b * %lld] || c[k * %lld] != c[k * %lld])\n\t\t\t\tb = k;\n",
	  ll(n), ll(inner), ll(inner), ll(inner), ll(inner), ll(inner), ll(inner));
	K(g, "\t\tr[o] = (int32_t)b;\n\t}\n}\n");
	launch(g, p, k, v, 2, 0, (double)(outer * n * inner));
}

/* cumsum (passes/grad.c): one column per (outer, inner), summed in double. */
static void
k_cumsum(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner;
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "cumsum");

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	ksplit(g, outer * inner);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n");
	K(g, "\t\tint64_t b = o / %lld * %lld + o %% %lld;\n\t\tdouble s = 0;\n", ll(inner), ll(n * inner), ll(inner));
	K(g, "\t\tfor (int64_t t = 0; t < %lld; t++) {\n", ll(n));
	if (o->ia[2])
		K(g, "\t\t\tint64_t at = b + (%lld - t) * %lld;\n", ll(n - 1), ll(inner));
	else
		K(g, "\t\t\tint64_t at = b + t * %lld;\n", ll(inner));
	K(g, o->ia[1] ? "\t\t\tr[at] = (float)s;\n\t\t\ts += x[at];\n" : "\t\t\ts += x[at];\n\t\t\tr[at] = (float)s;\n");
	K(g, "\t\t}\n\t}\n}\n");
	launch(g, p, k, v, 2, 0, (double)(outer * n * inner));
}

/* softmax, log_softmax and their gradients along an axis: one vector per (outer, inner). */
static void
k_softmax(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner;
	int grad = o->kind == OP_SOFTMAX_G || o->kind == OP_LOGSOFTMAX_G;
	int v[3] = { o->res, o->args[0], grad ? o->args[1] : 0 }, k = kopen(g, opinfo[o->kind].name);

	around(SH(o->res), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, grad ? "y" : "x", 1, 0, 0);
	if (grad)
		kptr(g, "dy", 2, 0, 0);
	ksplit(g, outer * inner);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n");
	K(g, "\t\tint64_t b = o / %lld * %lld + o %% %lld;\n", ll(inner), ll(n * inner), ll(inner));
	K(g, "\t\tfloat s = 0;\n");
	switch (o->kind) {
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
		K(g, "\t\tfloat m = x[b];\n\t\tfor (int64_t k = 1; k < %lld; k++)\n"
		  "\t\t\tm = x[b + k * %lld] > m ? x[b + k * %lld] : m;\n", ll(n), ll(inner), ll(inner));
		/* The exponentials in their own loop (it vectorizes), the sum in order after it. */
		K(g, "\t\tfor (int64_t k = 0; k < %lld; k++)\n\t\t\tr[b + k * %lld] = mtc_expf(x[b + k * %lld] - m);\n"
		  "\t\tfor (int64_t k = 0; k < %lld; k++)\n\t\t\ts = s + r[b + k * %lld];\n",
		  ll(n), ll(inner), ll(inner), ll(n), ll(inner));
		if (o->kind == OP_SOFTMAX)
			K(g, "\t\tfor (int64_t k = 0; k < %lld; k++)\n"
			  "\t\t\tr[b + k * %lld] = r[b + k * %lld] / s;\n", ll(n), ll(inner), ll(inner));
		else
			K(g, "\t\tfloat ls = mtc_logf(s);\n\t\tfor (int64_t k = 0; k < %lld; k++)\n"
			  "\t\t\tr[b + k * %lld] = x[b + k * %lld] - m - ls;\n", ll(n), ll(inner), ll(inner));
		break;
	case OP_SOFTMAX_G:       /* dx = y (dy - sum(dy y)) */
		K(g, "\t\tfor (int64_t k = 0; k < %lld; k++)\n\t\t\ts = s + dy[b + k * %lld] * y[b + k * %lld];\n"
		  "\t\tfor (int64_t k = 0; k < %lld; k++)\n"
		  "\t\t\tr[b + k * %lld] = y[b + k * %lld] * (dy[b + k * %lld] - s);\n",
		  ll(n), ll(inner), ll(inner), ll(n), ll(inner), ll(inner), ll(inner));
		break;
	default:                 /* log_softmax_grad: dx = dy - exp(y) sum(dy) */
		K(g, "\t\tfor (int64_t k = 0; k < %lld; k++)\n\t\t\ts = s + dy[b + k * %lld];\n"
		  "\t\tfor (int64_t k = 0; k < %lld; k++)\n"
		  "\t\t\tr[b + k * %lld] = dy[b + k * %lld] - mtc_expf(y[b + k * %lld]) * s;\n",
		  ll(n), ll(inner), ll(n), ll(inner), ll(inner), ll(inner));
	}
	K(g, "\t}\n}\n");
	launch(g, p, k, v, grad ? 3 : 2, 0, 4.0 * (double)(outer * n * inner));
}

/* Row statistics of layernorm, written into the kernel: mean, then rstd from the centred
 * second moment. */
static void
ln_stats(Gen *g, int64_t D, const char *eps)
{
	K(g, "\t\tfloat mu = 0, var = 0;\n\t\tfor (int64_t j = 0; j < %lld; j++)\n\t\t\tmu = mu + xr[j];\n"
	  "\t\tmu = mu / %s;\n\t\tfor (int64_t j = 0; j < %lld; j++)\n"
	  "\t\t\tvar = var + (xr[j] - mu) * (xr[j] - mu);\n\t\tvar = var / %s;\n"
	  "\t\tfloat rs = 1.0f / sqrtf(var + %s);\n", ll(D), FL((double)D), ll(D), FL((double)D), eps);
}

static void
k_layernorm(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *x = SH(o->args[0]);
	int64_t D = x->d[x->rank - 1], rows = shape_numel(x) / D;
	char eps[48];
	int k = kopen(g, opinfo[o->kind].name);

	flit(o->fa[0], eps);
	if (o->kind == OP_LN_DGAMMA) {
		/* Columns split over threads; each sums its columns over all rows in order. */
		int v[3] = { o->res, o->args[0], o->args[1] };
		kptr(g, "r", 0, 1, 0);
		kptr(g, "x", 1, 0, 0);
		kptr(g, "dy", 2, 0, 0);
		ksplit(g, D);
		K(g, "\tif (lo >= hi)\n\t\treturn;\n\tfor (int64_t j = lo; j < hi; j++)\n\t\tr[j] = 0;\n");
		K(g, "\tfor (int64_t i = 0; i < %lld; i++) {\n\t\tconst float *xr = x + i * %lld;\n", ll(rows), ll(D));
		ln_stats(g, D, eps);
		K(g, "\t\tfor (int64_t j = lo; j < hi; j++)\n\t\t\tr[j] = r[j] + dy[i * %lld + j] * ((xr[j] - mu) * rs);\n"
		  "\t}\n}\n", ll(D));
		launch(g, p, k, v, 3, 0, 4.0 * (double)(rows * D));
		return;
	}
	int v[4] = { o->res, o->args[0], o->args[1], o->args[2] };
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	kptr(g, "gm", 2, 0, 0);
	kptr(g, o->kind == OP_LAYERNORM ? "bt" : "dy", 3, 0, 0);
	ksplit(g, rows);
	K(g, "\tfor (int64_t i = lo; i < hi; i++) {\n\t\tconst float *xr = x + i * %lld;\n"
	  "\t\tfloat *rr = r + i * %lld;\n", ll(D), ll(D));
	ln_stats(g, D, eps);
	if (o->kind == OP_LAYERNORM) {
		K(g, "\t\tfor (int64_t j = 0; j < %lld; j++)\n\t\t\trr[j] = (xr[j] - mu) * rs * gm[j] + bt[j];\n", ll(D));
	} else {
		/* dx = rs (dxh - mean(dxh) - xh mean(dxh xh)), dxh = dy gamma */
		K(g, "\t\tconst float *dr = dy + i * %lld;\n\t\tfloat m1 = 0, m2 = 0;\n"
		  "\t\tfor (int64_t j = 0; j < %lld; j++) {\n\t\t\tfloat dxh = dr[j] * gm[j];\n"
		  "\t\t\tm1 = m1 + dxh;\n\t\t\tm2 = m2 + dxh * ((xr[j] - mu) * rs);\n\t\t}\n"
		  "\t\tm1 = m1 / %s;\n\t\tm2 = m2 / %s;\n\t\tfor (int64_t j = 0; j < %lld; j++)\n"
		  "\t\t\trr[j] = rs * (dr[j] * gm[j] - m1 - (xr[j] - mu) * rs * m2);\n",
		  ll(D), ll(D), FL((double)D), FL((double)D), ll(D));
	}
	K(g, "\t}\n}\n");
	launch(g, p, k, v, 4, 0, 8.0 * (double)(rows * D));
}

/* The call a kernel makes on an id out of range (mtc_range_error): the op, its kind, the
 * input that holds the ids (operand a), the element (variable ix) and the value (variable v),
 * the bound. In a static buffer: used at once by the K() that prints it. */
static const char *
range_error(Gen *g, const LowFunc *p, const Op *o, int a, const char *ix, const char *v,
            int64_t bound)
{
	static char b[512];
	const char *in = p->f->val[o->args[a]].name;

	(void)g;
	if (strspn(in, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != strlen(in))
		in = "?";
	snprintf(b, sizeof b, "mtc_range_error(flag, %d, \"%s\", \"%s\", %s, %s, %lld);",
	         (int)(o - p->f->op), opinfo[o->kind].name, in, ix, v, ll(bound));
	return b;
}

static void
k_embedding(Gen *g, const LowFunc *p, const Op *o)
{
	int grad = o->kind == OP_EMBED_G;
	const Shape *t = grad ? SH(o->res) : SH(o->args[0]);
	int64_t V = t->d[0], D = t->d[1], P = shape_numel(SH(o->args[grad ? 0 : 1]));
	int v[3] = { o->res, o->args[0], o->args[1] }, k = kopen(g, opinfo[o->kind].name);

	kptr(g, "r", 0, 1, 0);
	if (grad) {
		/* Columns split over threads; positions added in ascending order. */
		kptr(g, "ids", 1, 0, 1);
		kptr(g, "dy", 2, 0, 0);
		K(g, "\tint *flag = (int *)(uintptr_t)a[3];\n");
		ksplit(g, D);
		K(g, "\tfor (int64_t v = 0; v < %lld; v++)\n\t\tfor (int64_t j = lo; j < hi; j++)\n"
		  "\t\t\tr[v * %lld + j] = 0;\n", ll(V), ll(D));
		K(g, "\tfor (int64_t q = 0; q < %lld; q++) {\n\t\tint32_t id = ids[q];\n"
		  "\t\tif (id < 0 || id >= %lld) {\n\t\t\t%s\n\t\t\tcontinue;\n\t\t}\n"
		  "\t\tfor (int64_t j = lo; j < hi; j++)\n\t\t\tr[id * %lld + j] = r[id * %lld + j] + dy[q * %lld + j];\n\t}\n}\n",
		  ll(P), ll(V), range_error(g, p, o, 1, "q", "id", V), ll(D), ll(D), ll(D));
	} else {
		kptr(g, "tab", 1, 0, 0);
		kptr(g, "ids", 2, 0, 1);
		K(g, "\tint *flag = (int *)(uintptr_t)a[3];\n");
		ksplit(g, P);
		K(g, "\tfor (int64_t q = lo; q < hi; q++) {\n\t\tint32_t id = ids[q];\n"
		  "\t\tif (id < 0 || id >= %lld) {\n\t\t\t%s\n"
		  "\t\t\tmemset(r + q * %lld, 0, %lld);\n\t\t\tcontinue;\n\t\t}\n"
		  "\t\tmemcpy(r + q * %lld, tab + id * %lld, %lld);\n\t}\n}\n",
		  ll(V), range_error(g, p, o, 2, "q", "id", V), ll(D), ll(D * 4), ll(D), ll(D), ll(D * 4));
	}
	launch(g, p, k, v, 3, 1, (double)(P * D));
}

/* cross_entropy: the mean over rows of logsumexp(row) - row[label], summed in row order on
 * one thread; its gradient (softmax - onehot) * g / rows, split by rows. */
static void
k_xent(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *lg = SH(o->args[0]);
	int64_t C = lg->d[lg->rank - 1], rows = shape_numel(lg) / C;
	int grad = o->kind == OP_XENT_G;
	int v[4] = { o->res, o->args[0], o->args[1], grad ? o->args[2] : 0 }, k = kopen(g, opinfo[o->kind].name);

	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	kptr(g, "lab", 2, 0, 1);
	if (grad)
		kptr(g, "gl", 3, 0, 0);
	K(g, "\tint *flag = (int *)(uintptr_t)a[%d];\n", grad ? 4 : 3);
	if (grad)
		ksplit(g, rows);
	else
		K(g, "\tint64_t lo = 0, hi = %lld;\n\tfloat tot = 0;\n\tif (tid)\n\t\treturn;\n", ll(rows));
	K(g, "\tfor (int64_t i = lo; i < hi; i++) {\n\t\tconst float *xr = x + i * %lld;\n"
	  "\t\tint32_t y = lab[i];\n\t\tfloat m = xr[0], s = 0;\n"
	  "\t\tfor (int64_t c = 1; c < %lld; c++)\n\t\t\tm = xr[c] > m ? xr[c] : m;\n", ll(C), ll(C));
	/* The exponentials in a loop of their own (it vectorizes; the gradient's row holds them,
	 * the loss uses blocks of a local array), then summed in order. */
	if (grad)
		K(g, "\t\tfloat *e = r + i * %lld;\n\t\tfor (int64_t c = 0; c < %lld; c++)\n"
		  "\t\t\te[c] = mtc_expf(xr[c] - m);\n\t\tfor (int64_t c = 0; c < %lld; c++)\n"
		  "\t\t\ts = s + e[c];\n", ll(C), ll(C), ll(C));
	else
		K(g, "\t\tfor (int64_t c0 = 0; c0 < %lld; c0 += 256) {\n\t\t\tfloat e[256];\n"
		  "\t\t\tint64_t nc = %lld - c0 < 256 ? %lld - c0 : 256;\n"
		  "\t\t\tfor (int64_t c = 0; c < nc; c++)\n\t\t\t\te[c] = mtc_expf(xr[c0 + c] - m);\n"
		  "\t\t\tfor (int64_t c = 0; c < nc; c++)\n\t\t\t\ts = s + e[c];\n\t\t}\n",
		  ll(C), ll(C), ll(C));
	K(g, "\t\tif (y < 0 || y >= %lld) {\n\t\t\t%s\n\t\t\ty = 0;\n\t\t}\n", ll(C),
	  range_error(g, p, o, 1, "i", "y", C));
	if (grad)
		K(g, "\t\tfloat sc = gl[0] / %s;\n\t\tfor (int64_t c = 0; c < %lld; c++)\n"
		  "\t\t\te[c] = (e[c] / s - (c == y ? 1.0f : 0.0f)) * sc;\n\t}\n}\n",
		  FL((double)rows), ll(C));
	else
		K(g, "\t\ttot += -(xr[y] - m - mtc_logf(s));\n\t}\n\tr[0] = tot / %s;\n}\n", FL((double)rows));
	launch(g, p, k, v, grad ? 4 : 3, 1, grad ? 4.0 * (double)(rows * C) : 0);
}

/* mse: the mean of squared differences over the broadcast shape, summed in order, one thread. */
static void
k_mse(Gen *g, const LowFunc *p, const Op *o)
{
	Shape R;
	char ia[256], ib[256];
	int v[3] = { o->res, o->args[0], o->args[1] }, k = kopen(g, "mse");

	shape_broadcast(SH(o->args[0]), SH(o->args[1]), &R);
	bidx(SH(o->args[0]), &R, "i", ia, sizeof ia);
	bidx(SH(o->args[1]), &R, "i", ib, sizeof ib);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	kptr(g, "y", 2, 0, 0);
	K(g, "\tfloat s = 0;\n\tif (tid)\n\t\treturn;\n\tfor (int64_t i = 0; i < %lld; i++) {\n"
	  "\t\tfloat e = x[%s] - y[%s];\n\t\ts = s + e * e;\n\t}\n\tr[0] = s / %s;\n}\n",
	  ll(shape_numel(&R)), ia, ib, FL((double)shape_numel(&R)));
	launch(g, p, k, v, 3, 0, 0);
}

/* Dim d of x's shape in r, a shape broadcast into x (1 where r has fewer dims). */
static int64_t
rdim(const Shape *x, const Shape *r, int d)
{
	int k = d - (x->rank - r->rank);
	return k >= 0 ? r->d[k] : 1;
}

static void
k_sumto(Gen *g, const LowFunc *p, const Op *o)
{
	const Shape *x = SH(o->args[0]), *r = SH(o->res);
	int64_t n = shape_numel(r);
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "sum_to");

	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	/* Reduced dims all leading (a bias gradient): whole rows added into r in row order,
	 * which is each element's order in mtc_sum_to, with a contiguous, vectorizable inner loop. */
	int lead = 0;
	int64_t rows = 1;
	while (lead < x->rank && rdim(x, r, lead) == 1)
		rows *= x->d[lead++];
	for (int d = lead; d < x->rank; d++)
		if (x->d[d] != rdim(x, r, d))
			rows = 0;
	if (rows > 1) {
		ksplit(g, n);
		K(g, "\tfor (int64_t j = lo; j < hi; j++)\n\t\tr[j] = 0;\n"
		  "\tfor (int64_t i = 0; i < %lld; i++) {\n\t\tconst float *xr = x + i * %lld;\n"
		  "\t\tfor (int64_t j = lo; j < hi; j++)\n\t\t\tr[j] = r[j] + xr[j];\n\t}\n}\n",
		  ll(rows), ll(n));
		launch(g, p, k, v, 2, 0, (double)shape_numel(x));
		return;
	}
	K(g, "\tstatic const int64_t xs[] = {");
	for (int d = 0; d < x->rank; d++)
		K(g, " %lld,", ll(x->d[d]));
	K(g, " 0 }, rs[] = {");
	for (int d = 0; d < x->rank; d++) {
		int kr = d - (x->rank - r->rank);
		K(g, " %lld,", ll(kr >= 0 ? r->d[kr] : 1));
	}
	K(g, " 0 };\n");
	ksplit(g, n);
	K(g, "\tmtc_sum_to(r, x, %d, xs, rs, lo, hi);\n}\n", x->rank);
	launch(g, p, k, v, 2, 0, (double)shape_numel(x));
}

/* max_grad(x, y, dy): dy flows to the first arg-max of x along the axis (recomputed from x,
 * as the interpreter does; with y = max(x) that is the first index where x == y). */
static void
k_maxgrad(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t outer, n, inner;
	int v[4] = { o->res, o->args[0], o->args[1], o->args[2] }, k = kopen(g, "max_grad");

	around(SH(o->args[0]), (int)o->ia[0], &outer, &n, &inner);
	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	kptr(g, "dy", 3, 0, 0);
	ksplit(g, outer * inner);
	K(g, "\tfor (int64_t o = lo; o < hi; o++) {\n"
	  "\t\tint64_t b = o / %lld * %lld + o %% %lld, best = 0;\n"
	  "\t\tfor (int64_t k = 1; k < %lld; k++)\n\t\t\tif (x[b + k * %lld] > x[b + best * %lld])\n"
	  "\t\t\t\tbest = k;\n"
	  "\t\tfor (int64_t k = 0; k < %lld; k++)\n"
	  "\t\t\tr[b + k * %lld] = k == best ? dy[o] : 0.0f;\n\t}\n}\n",
	  ll(inner), ll(n * inner), ll(inner), ll(n), ll(inner), ll(inner), ll(n), ll(inner));
	launch(g, p, k, v, 4, 0, (double)(outer * n * inner));
}

/* The code of an update after its first pointer w, over the elements [lo, hi) of its split:
 * <mtc/mtc-ops.h>'s formulas (PyTorch's rules), the hyperparameters f32[] operands read once. */
static void
update_code(Gen *g, const Op *o, int64_t n)
{
	kptr(g, "w", 0, 1, 0);
	switch (o->kind) {
	case OP_SGD:
		kptr(g, "gr", 1, 0, 0);
		K(g, "\tfloat lr = *(const float *)(uintptr_t)a[2], wd = *(const float *)(uintptr_t)a[3];\n");
		ksplit(g, n);
		K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tmtc_sgd_update(&w[i], gr[i], lr, wd);\n");
		break;
	case OP_SGDM:
		kptr(g, "m", 1, 1, 0);
		kptr(g, "gr", 2, 0, 0);
		K(g, "\tfloat lr = *(const float *)(uintptr_t)a[3], mu = *(const float *)(uintptr_t)a[4],"
		  " wd = *(const float *)(uintptr_t)a[5];\n");
		ksplit(g, n);
		K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tmtc_sgdm_update(&w[i], &m[i], gr[i], lr, mu, wd);\n");
		break;
	default: /* adam, adamw: bias corrections from the step counter, which tick advanced */
		kptr(g, "m", 1, 1, 0);
		kptr(g, "s", 2, 1, 0);
		kptr(g, "gr", 3, 0, 0);
		kptr(g, "tc", 4, 0, 1);
		K(g, "\tint *flag = (int *)(uintptr_t)a[%d];\n"
		  "\tmtc_adam c = mtc_adam_scalars(tc[0], *(const float *)(uintptr_t)a[5], *(const float *)(uintptr_t)a[6],\n"
		  "\t                              *(const float *)(uintptr_t)a[7], *(const float *)(uintptr_t)a[8], %s);\n"
		  "\tif (c.bad) {\n\t\t*flag = MTC_EINVAL;\n\t\treturn;\n\t}\n",
		  o->nargs, o->kind == OP_ADAMW ? "*(const float *)(uintptr_t)a[9]" : "0");
		ksplit(g, n);
		K(g, "\tfor (int64_t i = lo; i < hi; i++)\n\t\tmtc_%s_update(&w[i], &m[i], &s[i], gr[i], &c);\n",
		  o->kind == OP_ADAMW ? "adamw" : "adam");
	}
	K(g, "}\n");
}

/* Optimizer updates, in place. */
static void
k_update(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t n = shape_numel(SH(o->args[0]));
	int v[16], k = kopen(g, opinfo[o->kind].name);

	if (o->nargs > 16)
		die("%s with %d operands", opinfo[o->kind].name, o->nargs);
	for (int i = 0; i < o->nargs; i++)
		v[i] = o->args[i];
	if (o->kind == OP_TICK) {
		kptr(g, "t", 0, 1, 1);
		K(g, "\tif (tid == 0)\n\t\tt[0] = t[0] + 1;\n}\n");
		launch(g, p, k, v, 1, 0, 0);
		return;
	}
	update_code(g, o, n);
	launch(g, p, k, v, o->nargs, o->kind == OP_ADAM || o->kind == OP_ADAMW, 4.0 * (double)n);
}

/* sumsq: one thread, in double, in element order: the interpreter's bits. */
static void
k_sumsq(Gen *g, const LowFunc *p, const Op *o)
{
	int64_t n = shape_numel(SH(o->args[0]));
	int v[2] = { o->res, o->args[0] }, k = kopen(g, "sumsq");

	kptr(g, "r", 0, 1, 0);
	kptr(g, "x", 1, 0, 0);
	K(g, "\tdouble s = 0;\n\tif (tid != 0)\n\t\treturn;\n"
	  "\tfor (int64_t i = 0; i < %lld; i++)\n\t\ts += (double)x[i] * x[i];\n\tr[0] = (float)s;\n}\n",
	  ll(n));
	launch(g, p, k, v, 2, 0, 0);
}

void
kern_host_update(Gen *g, const LowFunc *p, int i, int id)
{
	const Op *o = &p->f->op[i];
	FILE *k = g->k;

	g->k = g->h;
	K(g, "\n/* %s on the host, run by the host's thread */\nstatic void\n"
	  "hu%d(const uint64_t *a, int tid, int nt)\n{\n", opinfo[o->kind].name, id);
	update_code(g, o, shape_numel(SH(o->args[0])));
	g->k = k;
}

/* An F_EW op alone: a group of one. */
static void
k_ew(Gen *g, const LowFunc *p, const Op *o)
{
	int i = (int)(o - p->f->op);
	kern_ew(g, p, i, i + 1);
}

/* Copies, waits and the step's output copies: the host code does them (host.c); no kernel. */
void
mt3000_hostop(Gen *g, const LowFunc *p, const Op *o)
{
	(void)g, (void)p;
	die("%s has no kernel: the host does it", opinfo[o->kind].name);
}

/* One rule per op kind; every F_EW op is k_ew over its OPTAB formula. An OPTAB op missing
 * here fails the build (OP_HAS, OP_NEEDS: ir.h). */
#define KERNELS(K) \
	K(CONST, k_const) K(ADD, k_ew) K(SUB, k_ew) K(MUL, k_ew) K(DIV, k_ew) \
	K(MATMUL, k_matmul) K(RELU, k_ew) K(GELU, k_ew) K(TANH, k_ew) K(SIGMOID, k_ew) \
	K(SIN, k_ew) K(COS, k_ew) K(TOF32, k_convert) K(TOI32, k_convert) \
	K(EQ, k_ew) K(LT, k_ew) K(LE, k_ew) K(SELECT, k_ew) K(MAXIMUM, k_ew) K(MAXIMUM_G, k_ew) \
	K(FLOOR, k_ew) K(CEIL, k_ew) K(ROUND, k_ew) K(CUMSUM, k_cumsum) K(ARGMAX, k_argmax) \
	K(EXP, k_ew) K(LOG, k_ew) K(SQRT, k_ew) K(RSQRT, k_ew) K(NEG, k_ew) K(POW, k_ew) \
	K(TRANSPOSE, k_transpose) K(RESHAPE, k_copy) K(CONCAT, k_concat) K(SUM, k_reduce) \
	K(MEAN, k_reduce) K(MAX, k_reduce) K(SOFTMAX, k_softmax) K(LOGSOFTMAX, k_softmax) \
	K(LAYERNORM, k_layernorm) K(EMBEDDING, k_embedding) K(XENT, k_xent) K(MSE, k_mse) \
	K(SUMTO, k_sumto) K(BCAST, k_ew) K(RELU_G, k_ew) K(GELU_G, k_ew) K(TANH_G, k_ew) \
	K(SIGMOID_G, k_ew) K(SQRT_G, k_ew) K(RSQRT_G, k_ew) K(POW_G, k_ew) K(MAX_G, k_maxgrad) \
	K(SOFTMAX_G, k_softmax) K(LOGSOFTMAX_G, k_softmax) K(LN_DX, k_layernorm) \
	K(LN_DGAMMA, k_layernorm) K(EMBED_G, k_embedding) K(XENT_G, k_xent) K(MSE_G, k_ew) \
	K(CLIP, k_ew) K(WORKSPACE, k_workspace) K(CONV2D, k_conv) K(MAXPOOL, k_pool) K(AVGPOOL, k_pool) \
	K(BATCHNORM, k_bn) K(BN_MEAN, k_bn) K(BN_VAR, k_bn) K(BN_DSTATS, k_bn) K(BN_DX, k_bn) \
	K(BN_UPDATE, k_bn) K(DROPOUT, k_dropout) \
	K(SLICE, k_slice) K(SLICE_G, k_slicegrad) K(CLIP_G, k_ew) \
	K(CONV2D_DX, k_conv) K(CONV2D_DW, k_conv) K(MAXPOOL_G, k_pool) K(AVGPOOL_G, k_pool) \
	K(SGD, k_update) K(SGDM, k_update) K(ADAM, k_update) K(ADAMW, k_update) K(TICK, k_update) \
	K(SUMSQ, k_sumsq) K(CLIPCOEF, k_ew) K(COPYOUT, mt3000_hostop) \
	K(SWAPOUT, mt3000_hostop) K(SWAPIN, mt3000_hostop) K(SWAPHOME, mt3000_hostop) \
	K(WAIT, mt3000_hostop) K(ALLREDUCE, mt3000_hostop) K(UNBUCKET, mt3000_hostop) \
	K(REDSCAT, mt3000_hostop) K(ALLGATHER, mt3000_hostop) K(SHARD, mt3000_hostop) K(UNSHARD, mt3000_hostop)
KERNELS(OP_HAS)
OPTAB(OP_NEEDS)
KernRule *const mt3000_kern[NOP] = { KERNELS(OP_ENTRY) };

void
kern_op(Gen *g, const LowFunc *p, int i)
{
	const Op *o = &p->f->op[i];
	mt3000_kern[o->kind](g, p, o);
}

void
kern_prologue(Gen *g)
{
	g->kd = xcalloc(1, sizeof *g->kd);
	g->kd->out = g->k;
	g->kd->cur = -1;
	kbuf_open(g);
	K(g, "/* %s-dev.c: device kernels of model %s, generated by mtc %s for the MT-3000 target.\n"
	  " * Each kernel runs on every accelerator thread with the hthreads argument array. */\n"
	  "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n"
	  "#include <mtc/mtc-rt.h>\n#include <mtc/mtc-ops.h>\n#include <mtc/mtc-conv.h>\n", g->id, g->m->name, PACKAGE_VERSION);
}

void
kern_epilogue(Gen *g)
{
	KernDedup *kd = g->kd;

	kbuf_flush(g);
	g->k = kd->out;
	K(g, "\n/* The kernel table the host executes by index (kernels of one body share its"
	  " function). */\nconst mtc_kernel %s__kernels[] = {", g->id);
	for (int i = 0; i < g->nk; i++)
		K(g, "%sk%d,", i % 8 ? " " : "\n\t", kd->map[i]);
	K(g, "%s\n};\n", g->nk ? "" : "\n\t0,");
	for (int i = 0; i < kd->nbody; i++)
		free(kd->body[i]);
	free(kd->body);
	free(kd->num);
	free(kd->tab);
	free(kd->map);
	free(kd);
	g->kd = NULL;
}
