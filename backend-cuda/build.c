/* build.c: the CUDA target's driver: plan, kernels, NVRTC, host code, MODEL.h, MODEL.so.
 *
 * needs: a lowered module (passes/lower.h: offsets from the layout pass, lifetimes, fusion
 *        groups, dependences, the plan's report).
 * fills: --emit=cuda|ptx|llvm|h output, or MODEL.so and MODEL.h beside it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cuda.h"

static int
err(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "mtc: error: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

/* ---------- the plan ---------- */

/* Addresses, lifetimes, fusion groups and dependences come from the lowering
 * (passes/lower.c), which is target-independent; the CUDA target adds an event per copy. */
static void
plan(CuMod *c)
{
	const Lowered *lo = c->lo;
	const LowFunc *ps[2] = { &lo->fwd, c->m->step ? &lo->step : NULL };

	c->poff = lo->poff;
	c->persist = lo->persist;
	c->arena = lo->arena;
	c->host = lo->ddr;
	c->peak = lo->fwd.peak > lo->step.peak ? lo->fwd.peak : lo->step.peak;
	for (int k = 0; k < 2; k++) {
		const LowFunc *p = ps[k];
		if (!p)
			continue;
		c->fn[k].f = p->f;
		c->fn[k].off = p->off;
		c->fn[k].last = p->last;
		c->fn[k].grp = p->grp;
		c->fn[k].gend = p->gend;
		c->fn[k].ev = xcalloc(p->f->nval + 1, sizeof *c->fn[k].ev);
		c->fn[k].hu = xmalloc((p->f->nop + 1) * sizeof *c->fn[k].hu);
		for (int i = 0; i < p->f->nop; i++) {
			c->fn[k].hu[i] = op_on_host(p->f, &p->f->op[i]) ? c->nhupd++ : -1;
			if (opinfo[p->f->op[i].kind].flags & F_COPY)
				c->fn[k].ev[p->f->op[i].res] = c->nev++;
		}
		cuda_sync(&c->fn[k], p, &c->nrec);
	}
}

/* Does f read value v? */
int
cuda_reads(const Func *f, int v)
{
	if (!f)
		return 0;
	for (int i = 0; i < f->nop; i++)
		for (int a = 0; a < f->op[i].nargs; a++)
			if (f->op[i].args[a] == v)
				return 1;
	for (int k = 0; k < f->nout; k++)
		if (f->out[k] == v)
			return 1;
	return 0;
}

/* A manifest line; an initializer from a file (INIT_FILE) gives its offset in mtc_cu_data; an
 * i32 input, the values it may take: [0, range) (input_range; 0: any). */
static void
tensor(FILE *fp, const char *role, const char *name, const Type *t, int64_t off, const Init *in,
       int use, int64_t dataoff, int host, int64_t range)
{
	fprintf(fp, "tensor %s %s %s %d", role, name, dtype_name(t->dt), t->sh.rank);
	for (int k = 0; k < t->sh.rank; k++)
		fprintf(fp, " %lld", (long long)t->sh.d[k]);
	fprintf(fp, " off %lld init %d %.17g %.17g use %d", (long long)off,
	        in ? (in->kind == INIT_VALUES ? INIT_FILE : (int)in->kind) : 0,
	        in && (in->kind == INIT_FILE || in->kind == INIT_VALUES) ? (double)dataoff : in ? in->a : 0,
	        in ? in->b : 0, use);
	if (range > 0)
		fprintf(fp, " range %lld", (long long)range);
	fprintf(fp, host ? " host\n" : "\n");
}

/* The initial values that live in files or in the IR (INIT_FILE, INIT_VALUES), one after the
 * other in c->data (embedded as mtc_cu_data); off[d] is decl d's offset there. 0, or 1 after
 * a message. */
static int
file_data(CuMod *c, int64_t *off)
{
	const Module *m = c->m;
	char msg[512];

	for (int d = 0; d < m->ndecl; d++) {
		const Decl *dc = &m->decl[d];
		int64_t n = shape_numel(&dc->ty.sh);
		if (dc->init.kind != INIT_FILE && dc->init.kind != INIT_VALUES)
			continue;
		off[d] = (int64_t)c->ndata;
		c->data = xrealloc(c->data, c->ndata + (size_t)n * 4 + 1);
		if (dc->init.kind == INIT_VALUES)
			memcpy(c->data + c->ndata, dc->init.vals, (size_t)n * 4);
		else if (init_read(&dc->init, n, (float *)(void *)(c->data + c->ndata), msg, sizeof msg)) {
			fprintf(stderr, "mtc: error: the initial values of %s: %s\n", dc->name, msg);
			return 1;
		}
		c->ndata += (size_t)n * 4;
	}
	return 0;
}

static const char *ptx_arch(const char *arch, char *buf, size_t n);

/* The description the runtime reads (runtime/mtc/mtc-cuda.h). 0, or 1 after a message. */
static int
manifest(CuMod *c)
{
	char vbuf[64];
	const Module *m = c->m;
	static const char *const role[] = { "input", "param", "state", "buffer", "hyper" };
	size_t n;
	FILE *fp = open_memstream(&c->manifest, &n);
	const Func *st = c->fn[1].f;
	int64_t *doff = xcalloc(m->ndecl + 1, sizeof *doff);

	if (!fp)
		die("out of memory");
	if (file_data(c, doff)) {
		fclose(fp);
		free(doff);
		return 1;
	}
	fprintf(fp, "model %s\nsolver %s\nbudget %lld\nplan %lld\npeak %lld\npersist %lld\n"
	        "arena %lld\nhost %lld\nevents %d\nrecords %d\nhostupd %d\nloss %lld\narch %s\n", m->name,
	        c->lo->plan.solver, (long long)c->lo->plan.budget,
	        (long long)(c->persist + c->arena), (long long)c->peak, (long long)c->persist,
	        (long long)c->arena, (long long)c->host, c->nev, c->nrec, c->nhupd,
	        st && st->loss >= 0 ? (long long)c->fn[1].off[st->loss] : -1LL,
	        ptx_arch(c->o->arch, vbuf, sizeof vbuf));
	for (int k = 0; k < c->prog->nfn; k++)
		fprintf(fp, "kernel %s\n", c->prog->fname[k]);
	for (int d = 0; d < m->ndecl; d++)
		tensor(fp, role[m->decl[d].role], m->decl[d].name, &m->decl[d].ty, c->poff[d],
		       &m->decl[d].init, cuda_reads(m->fwd, d) | cuda_reads(st, d) << 1, doff[d], m->decl[d].host,
		       m->decl[d].role == R_INPUT && m->decl[d].ty.dt == I32 ? input_range(m, d) : 0);
	for (int k = 0; k < m->fwd->nout; k++) {
		int v = m->fwd->out[k];
		tensor(fp, "output", m->fwd->outname[k], &m->fwd->val[v].ty, c->fn[0].off[v], NULL, 0, 0, 0, 0);
	}
	fclose(fp);
	free(doff);
	return 0;
}

/* ---------- MODEL.h ---------- */

/* The same API as every target's (backend/header.c), with the CUDA plan. */
static void
header(CuMod *c, FILE *fp)
{
	header_emit(c->lo, c->id, "cuda", fp);
}

/* ---------- the pipeline of the target ---------- */

/* The PTX's virtual architecture: compute_XX for --arch=sm_XX (as nvcc -arch=sm_XX does: the
 * PTX then JIT-compiles for that GPU and newer ones), else the broadly supported default. */
static const char *
ptx_arch(const char *arch, char *buf, size_t n)
{
	if (!arch)
		return cuda_default_arch;
	snprintf(buf, n, "compute_%s", arch + 3);
	return buf;
}

/* PTX for --arch (or the default); with want_cubin and --arch also a cubin for it. */
static int
compile(CuMod *c, int want_cubin)
{
	char *log = NULL, vbuf[64];
	const char *arch = c->o->arch, *varch = ptx_arch(arch, vbuf, sizeof vbuf);

	c->ptx = cuda_compile(c->prog->src, "model.cu", varch, 0, &c->ptxlen, &log);
	if (!c->ptx) {
		fprintf(stderr, "mtc: error: NVRTC could not compile the kernels for %s:\n%s\n",
		        varch, log ? log : "");
		free(log);
		return 1;
	}
	free(log);
	if (arch && want_cubin) {
		c->cubin = cuda_compile(c->prog->src, "model.cu", arch, 1, &c->cubinlen, &log);
		if (!c->cubin) {
			fprintf(stderr, "mtc: error: NVRTC could not compile the kernels for %s:\n%s\n",
			        arch, log ? log : "");
			free(log);
			return 1;
		}
		free(log);
		c->cubin_arch = atoi(arch + 3);
	}
	return 0;
}

/* 0, or 1 after a message (an initializer's file cannot be read). */
static int
prepare(CuMod *c, const Lowered *lo, const BuildOpts *o)
{
	const Module *m = lo->m;

	memset(c, 0, sizeof *c);
	c->m = m;
	c->lo = lo;
	c->o = o;
	c->id = m->name;
	plan(c);
	c->prog = cuda_kernels(m, (const LowFunc *const[2]){ &lo->fwd, m->step ? &lo->step : NULL });
	return manifest(c);
}

static void
release(CuMod *c)
{
	for (int i = 0; i < 2; i++) {
		free(c->fn[i].ev);
		free(c->fn[i].hu);
		free(c->fn[i].after);
		free(c->fn[i].rec);
		free(c->fn[i].xwait);
		free(c->fn[i].cwait);
		free(c->fn[i].hout);
	}
	free(c->ptx);
	free(c->cubin);
	free(c->manifest);
	free(c->data);
	cuprog_free(c->prog);
}

static FILE *
out_open(const char *out)
{
	if (!out || strcmp(out, "-") == 0)
		return stdout;
	return fopen(out, "w");
}

static int
out_close(FILE *fp, const char *out)
{
	int bad = ferror(fp);
	if (fp != stdout)
		bad |= fclose(fp) != 0;
	else
		fflush(fp);
	return bad ? err("cannot write '%s'%s", out ? out : "-", "") : 0;
}

/* --emit=cuda|ptx|llvm|h */
int
cuda_emit(const Lowered *lo, const BuildOpts *o, const char *kind, const char *out)
{
	CuMod c;
	FILE *fp;
	int rc = 0;

	if (prepare(&c, lo, o)) {
		release(&c);
		return 1;
	}
	if (!(fp = out_open(out))) {
		release(&c);
		return err("cannot write '%s'%s", out, "");
	}
	if (strcmp(kind, "cuda") == 0) {
		fputs(c.prog->src, fp);
	} else if (strcmp(kind, "h") == 0) {
		header(&c, fp);
	} else if (strcmp(kind, "ptx") == 0) {
		if (!(rc = compile(&c, 0)))
			fputs(c.ptx, fp);
	} else if (strcmp(kind, "llvm") == 0) {
		if (!(rc = compile(&c, 1)))
			rc = cuda_host(&c, fp, NULL);
	} else {
		die("cuda_emit: unknown kind %s", kind);
	}
	rc |= out_close(fp, out);
	release(&c);
	return rc;
}

/* The directory holding libmtccuda.a and libmtcrt.a: $MTC_RUNTIME_DIR (or its lib/), the
 * build tree this mtc was built in, the configured $libdir. */
static const char *
rtdir(void)
{
	static char path[4200];
	const char *e = getenv("MTC_RUNTIME_DIR");
	const char *dirs[] = { e, e, MTC_BUILD_RTDIR, MTC_LIBDIR };
	const char *sub[] = { "", "/lib", "", "" };

	for (int i = 0; i < 4; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof path, "%s%s/libmtccuda.a", dirs[i], sub[i]);
		if (access(path, R_OK) == 0) {
			path[strlen(path) - strlen("/libmtccuda.a")] = 0;
			return path;
		}
	}
	return NULL;
}

/* MODEL.so (out) and MODEL.h beside it (none beside a device such as /dev/null, whose host
 * object goes to the temporary directory instead). */
int
cuda_build(const Lowered *lo, const BuildOpts *o, const char *out)
{
	CuMod c;
	char obj[4096], hdr[4096], cmd[4 * 4200 + 1024];
	const char *dir = rtdir(), *dot, *slash, *tmp = getenv("TMPDIR");
	FILE *fp;
	int rc, beside = out_beside(out);

	if (strlen(out) > 4000 || strchr(out, '\''))
		return err("unusable output name '%s'%s", out, "");
	if (!dir)
		return err("the mtc runtime (libmtccuda.a) is not in the build tree nor in %s: run 'make "
		           "install' or set MTC_RUNTIME_DIR%s", MTC_LIBDIR, "");
	if ((rc = prepare(&c, lo, o)) || (rc = compile(&c, 1))) {
		release(&c);
		return rc;
	}
	if (beside)
		snprintf(obj, sizeof obj, "%s.o", out);
	else {
		int fd;
		snprintf(obj, sizeof obj, "%s/mtc-XXXXXX.o", tmp && *tmp ? tmp : "/tmp");
		if ((fd = mkstemps(obj, 2)) < 0) {
			release(&c);
			return err("cannot create '%s'%s", obj, "");
		}
		close(fd);
	}
	if ((rc = cuda_host(&c, NULL, obj))) {
		release(&c);
		unlink(obj);
		return rc;
	}
	/* MODEL.h: the output's name with .h for its extension */
	slash = strrchr(out, '/');
	dot = strrchr(out, '.');
	if (!dot || (slash && dot < slash))
		dot = out + strlen(out);
	snprintf(hdr, sizeof hdr, "%.*s.h", (int)(dot - out), out);
	if (beside) {
		if (!(fp = fopen(hdr, "w"))) {
			release(&c);
			unlink(obj);
			return err("cannot write '%s'%s", hdr, "");
		}
		header(&c, fp);
		if ((rc = out_close(fp, hdr))) {
			release(&c);
			unlink(obj);
			return rc;
		}
	}
	/* the runtime's CUDA part, then the common runtime (initial values); nothing undefined */
	snprintf(cmd, sizeof cmd, "%s -shared -Wl,-z,defs -o '%s' '%s' '%s/libmtccuda.a' "
	         "'%s/libmtcrt.a' -ldl %s", MTC_CC, out, obj, dir, dir, MTC_RT_LIBS);
	rc = system(cmd);
	unlink(obj);
	release(&c);
	if (rc != 0)
		return err("linking '%s' failed (%s)", out, cmd);
	return 0;
}

static const char *const emits[] = { "cuda", "ptx", "llvm", "h", NULL };
const Backend backend_cuda = { "cuda", &target_cuda, emits, cuda_emit, cuda_build, NULL, NULL };
