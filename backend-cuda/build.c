/* build.c: the CUDA target's driver: plan, kernels, NVRTC, host code, MODEL.h, MODEL.so.
 *
 * needs: a module after the pipeline (ops in execution order; Value.off from the layout pass
 *        where it ran: values still at -1 get a slot of their own, which is always correct).
 * fills: --emit=cuda|ptx|llvm|h output, or MODEL.so and MODEL.h beside it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cuda.h"

enum { ALIGN = 256 };        /* cudaMalloc's alignment: every tensor starts on one */

static int64_t
align(int64_t x)
{
	return (x + ALIGN - 1) & ~(int64_t)(ALIGN - 1);
}

static int
err(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "mtc: error: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

/* ---------- the plan ---------- */

static void
plan_fn(CuMod *c, CuFn *p, const Func *f)
{
	int64_t arena = 0, host = 0, live = 0, peak = 0, *dying;
	int n = f->nop;

	p->f = f;
	p->off = xcalloc(f->nval, sizeof *p->off);
	p->last = xcalloc(f->nval, sizeof *p->last);
	p->ev = xcalloc(f->nval, sizeof *p->ev);
	dying = xcalloc(n + 1, sizeof *dying);
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl < 0 && f->val[v].off >= 0) {
			int64_t end = f->val[v].off + type_bytes(&f->val[v].ty);
			int64_t *z = f->val[v].host ? &host : &arena;
			if (end > *z)
				*z = end;
		}
	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		int64_t *z = x->host ? &host : &arena;
		if (x->decl >= 0) {
			p->off[v] = c->poff[x->decl];
			continue;
		}
		if (x->off >= 0) {
			p->off[v] = x->off;
		} else {
			p->off[v] = *z = align(*z);
			*z += type_bytes(&x->ty);
		}
		if (!x->host)
			p->off[v] += c->persist;
	}
	/* lifetimes: a swap_out's source lives until the wait on its copy; outputs to the end */
	for (int v = 0; v < f->nval; v++)
		p->last[v] = f->val[v].def;
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		for (int a = 0; a < o->nargs; a++) {
			int v = o->args[a], d = f->val[v].def;
			p->last[v] = i;
			if (o->kind == OP_WAIT && d >= 0 && f->op[d].kind == OP_SWAPOUT)
				p->last[f->op[d].args[0]] = i;
		}
		if (opinfo[o->kind].flags & F_COPY)
			p->ev[o->res] = c->nev++;
	}
	for (int k = 0; k < f->nout; k++)
		p->last[f->out[k]] = n;
	if (f->loss >= 0)
		p->last[f->loss] = n;
	for (int v = 0; v < f->nval; v++)
		if (f->val[v].decl < 0 && !f->val[v].host && f->val[v].def >= 0)
			dying[p->last[v]] += type_bytes(&f->val[v].ty);
	for (int i = 0; i < n; i++) {
		int r = f->op[i].res;
		if (r >= 0 && !f->val[r].host)
			live += type_bytes(&f->val[r].ty);
		if (live > peak)
			peak = live;
		live -= dying[i];
	}
	free(dying);
	if (align(arena) > c->arena)
		c->arena = align(arena);
	if (host > c->host)
		c->host = align(host);
	if (c->persist + peak > c->peak)
		c->peak = c->persist + peak;
}

static void
plan(CuMod *c)
{
	const Module *m = c->m;

	c->poff = xcalloc(m->ndecl + 1, sizeof *c->poff);
	for (int d = 0; d < m->ndecl; d++) {
		c->poff[d] = c->persist;
		c->persist = align(c->persist + type_bytes(&m->decl[d].ty));
	}
	c->peak = c->persist;
	plan_fn(c, &c->fn[0], m->fwd);
	if (m->step)
		plan_fn(c, &c->fn[1], m->step);
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
	return 0;
}

static void
tensor(FILE *fp, const char *role, const char *name, const Type *t, int64_t off, const Init *in,
       int use)
{
	fprintf(fp, "tensor %s %s %s %d", role, name, dtype_name(t->dt), t->sh.rank);
	for (int k = 0; k < t->sh.rank; k++)
		fprintf(fp, " %lld", (long long)t->sh.d[k]);
	fprintf(fp, " off %lld init %d %.17g %.17g use %d\n", (long long)off, in ? (int)in->kind : 0,
	        in ? in->a : 0, in ? in->b : 0, use);
}

/* The description the runtime reads (runtime/mtc/mtc-cuda.h). */
static void
manifest(CuMod *c)
{
	const Module *m = c->m;
	static const char *const role[] = { "input", "param", "state" };
	size_t n;
	FILE *fp = open_memstream(&c->manifest, &n);
	const Func *st = c->fn[1].f;

	if (!fp)
		die("out of memory");
	fprintf(fp, "model %s\nsolver %s\nbudget %lld\nplan %lld\npeak %lld\npersist %lld\n"
	        "arena %lld\nhost %lld\nevents %d\nloss %lld\n", m->name,
	        c->o->solver ? c->o->solver : "none", (long long)c->o->budget,
	        (long long)(c->persist + c->arena), (long long)c->peak, (long long)c->persist,
	        (long long)c->arena, (long long)c->host, c->nev,
	        st && st->loss >= 0 ? (long long)c->fn[1].off[st->loss] : -1LL);
	for (int k = 0; k < c->prog->nfn; k++)
		fprintf(fp, "kernel %s\n", c->prog->fname[k]);
	for (int d = 0; d < m->ndecl; d++)
		tensor(fp, role[m->decl[d].role], m->decl[d].name, &m->decl[d].ty, c->poff[d],
		       &m->decl[d].init, cuda_reads(m->fwd, d) | cuda_reads(st, d) << 1);
	for (int k = 0; k < m->fwd->nout; k++) {
		int v = m->fwd->out[k];
		tensor(fp, "output", m->fwd->outname[k], &m->fwd->val[v].ty, c->fn[0].off[v], NULL, 0);
	}
	fclose(fp);
}

/* ---------- MODEL.h ---------- */

static const char *
ctype(DType t)
{
	return t == F32 ? "float" : "int32_t";
}

/* The typed API, as the C backend declares it (docs/interfaces.md). */
static void
header(const CuMod *c, FILE *fp)
{
	const Module *m = c->m;
	const char *id = c->id;

	fprintf(fp, "/* %s.h: generated by mtc --target=cuda from %s. Link with %s.so. */\n"
	        "#ifndef MTC_MODEL_%s_H\n#define MTC_MODEL_%s_H\n\n#include <stdint.h>\n\n"
	        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", id, m->file, id, id, id);
	fprintf(fp, "/* plan: %lld device bytes (persistent %lld, arena %lld), peak %lld, "
	        "pinned host %lld */\n", (long long)(c->persist + c->arena), (long long)c->persist,
	        (long long)c->arena, (long long)c->peak, (long long)c->host);
	fprintf(fp, "typedef struct %s %s;\n\n%s *%s_create(void);\n", id, id, id, id);
	if (c->fn[1].f) {
		fprintf(fp, "int %s_step(%s *", id, id);
		for (int d = 0; d < m->ndecl; d++)
			if (m->decl[d].role == R_INPUT && cuda_reads(c->fn[1].f, d))
				fprintf(fp, ", const %s *%s", ctype(m->decl[d].ty.dt), m->decl[d].name);
		fprintf(fp, ", float *loss);\n");
	}
	fprintf(fp, "int %s_forward(%s *", id, id);
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_INPUT && cuda_reads(m->fwd, d))
			fprintf(fp, ", const %s *%s", ctype(m->decl[d].ty.dt), m->decl[d].name);
	for (int k = 0; k < m->fwd->nout; k++)
		fprintf(fp, ", %s *%s", ctype(m->fwd->val[m->fwd->out[k]].ty.dt), m->fwd->outname[k]);
	fprintf(fp, ");\nvoid %s_destroy(%s *);\nconst char *%s_error(const %s *);\n\n"
	        "struct mtc_module;\nconst struct mtc_module *mtc_module(void);\n"
	        "const char *mtc_last_error(void);\n\n#ifdef __cplusplus\n}\n#endif\n#endif\n",
	        id, id, id, id);
}

/* ---------- the pipeline of the target ---------- */

static int
compile(CuMod *c, int want_cubin)
{
	char *log = NULL;
	const char *arch = c->o->arch;

	c->ptx = cuda_compile(c->prog->src, "model.cu", cuda_default_arch, 0, &c->ptxlen, &log);
	if (!c->ptx) {
		fprintf(stderr, "mtc: error: NVRTC could not compile the kernels for %s:\n%s\n",
		        cuda_default_arch, log ? log : "");
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

static void
prepare(CuMod *c, const Module *m, const Opts *o)
{
	memset(c, 0, sizeof *c);
	c->m = m;
	c->o = o;
	c->id = m->name;
	plan(c);
	c->prog = cuda_kernels(m);
	manifest(c);
}

static void
release(CuMod *c)
{
	for (int i = 0; i < 2; i++) {
		free(c->fn[i].off);
		free(c->fn[i].last);
		free(c->fn[i].ev);
	}
	free(c->poff);
	free(c->ptx);
	free(c->cubin);
	free(c->manifest);
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
cuda_emit(const Module *m, const Opts *o, const char *kind, const char *out)
{
	CuMod c;
	FILE *fp;
	int rc = 0;

	prepare(&c, m, o);
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

/* Where the runtime libraries are: $MTC_RUNTIME_DIR, the build tree, the install. */
static const char *
rtdir(void)
{
	static const char *const dirs[] = { MTC_BUILD_RTDIR, MTC_INSTALL_RTDIR };
	const char *e = getenv("MTC_RUNTIME_DIR");
	static char path[4096];

	if (e && *e)
		return e;
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/libmtccuda.a", dirs[i]);
		if (access(path, R_OK) == 0)
			return dirs[i];
	}
	return MTC_INSTALL_RTDIR;
}

/* MODEL.so (out) and MODEL.h beside it. */
int
cuda_build(const Module *m, const Opts *o, const char *out)
{
	CuMod c;
	char obj[4096], hdr[4096], cmd[3 * 4096 + 512];
	const char *dir = rtdir(), *dot, *slash;
	FILE *fp;
	int rc;

	if (strlen(out) > 4000)
		return err("output name too long: '%s'%s", out, "");
	prepare(&c, m, o);
	if ((rc = compile(&c, 1))) {
		release(&c);
		return rc;
	}
	snprintf(obj, sizeof obj, "%s.o", out);
	if ((rc = cuda_host(&c, NULL, obj))) {
		release(&c);
		return rc;
	}
	/* MODEL.h: the output's name with .h for its extension */
	slash = strrchr(out, '/');
	dot = strrchr(out, '.');
	if (!dot || (slash && dot < slash))
		dot = out + strlen(out);
	snprintf(hdr, sizeof hdr, "%.*s.h", (int)(dot - out), out);
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
	/* the runtime's CUDA part, then the common runtime (initial values) when present */
	snprintf(cmd, sizeof cmd, "%s -shared -o '%s' '%s' '%s/libmtccuda.a' %s%s%s -ldl -lm",
	         MTC_CC, out, obj, dir, access(MTC_BUILD_RTDIR "/libmtcrt.a", R_OK) == 0 ? "'" : "",
	         access(MTC_BUILD_RTDIR "/libmtcrt.a", R_OK) == 0 ? MTC_BUILD_RTDIR "/libmtcrt.a" : "",
	         access(MTC_BUILD_RTDIR "/libmtcrt.a", R_OK) == 0 ? "'" : "");
	rc = system(cmd);
	unlink(obj);
	release(&c);
	if (rc != 0)
		return err("linking '%s' failed (%s)", out, cmd);
	return 0;
}
