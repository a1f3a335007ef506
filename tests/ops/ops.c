/* ops.c: every op case of the one table (cases.c) on every target against the reference
 * interpreter, as ggml's test-backend-ops does.
 *
 * Each group of cases becomes one module (one declaration per fresh operand, one output per
 * case, a step function for the updates), the interpreter runs it, and each target builds it
 * into a .so (its own build hook, real arena layout), which is loaded with dlopen and run
 * twice with the interpreter's inputs, params and state:
 *   mt3000: with OpenBLAS within 1e-5 (1 + |ref|) (its GEMM sums in another order), then with
 *           the portable GEMM (MTC_BLAS=0) bit for bit. Check mode is on (MTC_CHECK=1).
 *   cuda:   (when configured) with the tiled GEMM kernels (MTC_NO_CUBLAS=1), then cuBLAS:
 *           within 1e-5 (1 + |ref|) for elementwise ops and updates, 1e-4 for the others
 *           (reductions, GEMMs). It runs only where a GPU is (cuInit and cuDeviceGetCount
 *           succeed); elsewhere each case's run counts as skipped, and every kernel still
 *           compiles through NVRTC (the default arch, and an sm_90 cubin), ptxas accepting the
 *           PTX for sm_75 and sm_90 when configure found it.
 * Every op kind must have a case on every target, or be named in op_elsewhere.
 *
 *   ops                     all of the above; the .so files go to $OUTDIR (default .)
 *   ops --prepare DIR       also writes every CUDA module and its expected results into DIR
 *   ops --replay DIR        runs DIR's CUDA modules against their expected results: no
 *                           compiler needed (tests/cuda/gpu.sh runs it on a GPU machine)
 * The skip counter is local to this file until tests/check.h counts skips. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "mt3000.h"
#include "mtc/mtc.h"
#ifdef HAVE_CUDA
#include "cuda.h"
#endif
#include "../check.h"
#include "cases.h"

#ifndef PTXAS
#define PTXAS ""
#endif

/* A target: its backend, and the two runs of each module (an environment variable chosen). */
typedef struct Tgt {
	const Backend *be;
	const char *env, *val[2], *how[2];
	double tol[2][2];         /* per run: [elementwise and updates, the others]; 0: same bits */
	int runs;                 /* can its modules run here? */
	int covered[NOP];         /* op kinds some case has run or compiled */
} Tgt;

static Tgt targets[] = {
	{ &backend_mt3000, "MTC_BLAS", { "1", "0" }, { "OpenBLAS", "portable GEMM" },
	  { { 1e-5, 1e-5 }, { 0, 0 } }, 1, {0} },
#ifdef HAVE_CUDA
	{ &backend_cuda, "MTC_NO_CUBLAS", { "1", "0" }, { "tiled GEMM kernels", "cuBLAS" },
	  { { 1e-5, 1e-4 }, { 1e-5, 1e-4 } }, 0, {0} },
#endif
};
enum { NTGT = sizeof targets / sizeof *targets };

/* ---------- the module of a group ---------- */

typedef struct Mod {
	Module *m;
	int dcl[MAXCASE][MAXCARG];   /* fresh operand a of case c: its decl */
} Mod;

/* The cases into f (the updates only in a step function); res[c]: case c's value or -1. */
static void
emit(const Group *g, Mod *b, Func *f, int step, int *res)
{
	char err[512], nm[32];

	for (int c = 0; c < g->ncase; c++) {
		const Case *k = &g->c[c];
		int args[MAXCARG], op, mut = opinfo[k->k].flags & F_MUT;
		int64_t ia[MAXIA];
		double fa[MAXFA];
		Type r = k->given;

		res[c] = -1;
		if (mut && !step)
			continue;
		memcpy(ia, k->ia, sizeof ia);
		memcpy(fa, k->fa, sizeof fa);
		for (int a = 0; a < k->nargs; a++)
			args[a] = k->arg[a] <= -100 ? b->dcl[-100 - k->arg[a]][0] :
			          k->arg[a] < 0 ? b->dcl[c][a] : res[k->arg[a]];
		if (op_infer(f, k->k, args, k->nargs, ia, k->nia, fa, &r, err, sizeof err))
			die("%s case %d: %s", g->name, c, err);
		snprintf(nm, sizeof nm, "r%d", c);
		op = func_op(f, k->k, mut ? PH_UPD : PH_FWD, args, k->nargs, ia, k->nia, fa, &r,
		             mut ? NULL : nm, (Loc){0});
		res[c] = f->op[op].res;
		if (!step && res[c] >= 0 && !(opinfo[k->k].flags & F_SCRATCH))
			func_output(f, nm, res[c]);     /* a workspace's bytes mean nothing */
	}
}

static Module *
build(const Group *g, Mod *b)
{
	Module *m = mod_new(g->name, "cases.c");
	int res[MAXCASE];

	for (int c = 0; c < g->ncase; c++)
		for (int a = 0; a < g->c[c].nargs; a++)
			if (g->c[c].arg[a] == -1) {
				const Case *k = &g->c[c];
				Init in = { .kind = k->role[a] == R_INPUT ? INIT_NONE : k->role[a] == R_HYPER ?
				            INIT_FULL : k->at[a].dt == I32 ? INIT_ZEROS : INIT_NORMAL, .a = 0, .b = 1 };
				if (k->role[a] == R_HYPER)
					in.a = k->hv[a];
				char nm[32];
				snprintf(nm, sizeof nm, "c%d_%d", c, a);
				b->dcl[c][a] = mod_decl(m, nm, k->role[a], k->at[a], in, (Loc){0});
			}
	m->fwd = func_new(m, "forward");
	emit(g, b, m->fwd, 0, res);
	if (g->step) {
		m->opt = (Optim){ .kind = OPT_SGD, .lr = 0.1 };
		m->step = func_new(m, "step");
		emit(g, b, m->step, 1, res);
		m->step->loss = res[0];
	}
	if (ir_verify(m, "test"))
		die("%s does not verify", g->name);
	b->m = m;
	return m;
}

/* The case whose result is forward output k. */
static const Case *
out_case(const Group *g, int k)
{
	for (int c = 0; c < g->ncase; c++)
		if (!(opinfo[g->c[c].k].flags & (F_MUT | F_SCRATCH)) && k-- == 0)
			return &g->c[c];
	die("%s has no output %d", g->name, k);
}

/* ---------- what a module must give: the interpreter's results, in its own order ---------- */

typedef struct Ref {
	void **in;                /* per module input */
	void **ps0, **ps1;        /* params then state: before and (step) after the step */
	void **out;               /* per forward output */
	float loss;
} Ref;

static void
ref_free(Ref *r, const struct mtc_module *md)
{
	int nps = md->nparams + md->nstate + md->nbuffers;
	for (int i = 0; i < md->ninputs; i++)
		free(r->in[i]);
	for (int i = 0; i < nps; i++) {
		free(r->ps0[i]);
		free(r->ps1[i]);
	}
	for (int k = 0; k < md->noutputs; k++)
		free(r->out[k]);
	free(r->in);
	free(r->ps0);
	free(r->ps1);
	free(r->out);
}

static const struct mtc_tensor_info *
ps_info(const struct mtc_module *md, int i)
{
	return i < md->nparams ? &md->params[i] : i < md->nparams + md->nstate ? &md->state[i - md->nparams] :
	       &md->buffers[i - md->nparams - md->nstate];
}

static void *
copy(const void *p, int64_t n)
{
	void *q = xcalloc(1, n + 4);
	memcpy(q, p, n);
	return q;
}

/* From the interpreter's tensors: decl data before the step (d0) and after it (d1). */
static void
ref_of(Ref *r, const struct mtc_module *md, const Module *m, void **d0, void **d1, Interp *in,
       float loss)
{
	int nps = md->nparams + md->nstate + md->nbuffers;

	r->in = xcalloc(md->ninputs + 1, sizeof *r->in);
	r->ps0 = xcalloc(nps + 1, sizeof *r->ps0);
	r->ps1 = xcalloc(nps + 1, sizeof *r->ps1);
	r->out = xcalloc(md->noutputs + 1, sizeof *r->out);
	for (int i = 0; i < md->ninputs; i++)
		r->in[i] = copy(d0[mod_find_decl(m, md->inputs[i].name)], md->inputs[i].bytes);
	for (int i = 0; i < nps; i++) {
		int d = mod_find_decl(m, ps_info(md, i)->name);
		r->ps0[i] = copy(d0[d], ps_info(md, i)->bytes);
		r->ps1[i] = copy(d1[d], ps_info(md, i)->bytes);
	}
	for (int k = 0; k < md->noutputs; k++)
		r->out[k] = copy(interp_out(in, k)->data, md->outputs[k].bytes);
	r->loss = loss;
}

/* The file --prepare writes and --replay reads: the buffers in the order of the Ref. */
static int
ref_io(Ref *r, const struct mtc_module *md, FILE *fp, int wr)
{
	int nps = md->nparams + md->nstate + md->nbuffers, ok = 1;
#define IO(p, n) (ok = ok && (wr ? fwrite(p, 1, n, fp) : fread(p, 1, n, fp)) == (size_t)(n))

	if (!wr) {
		r->in = xcalloc(md->ninputs + 1, sizeof *r->in);
		r->ps0 = xcalloc(nps + 1, sizeof *r->ps0);
		r->ps1 = xcalloc(nps + 1, sizeof *r->ps1);
		r->out = xcalloc(md->noutputs + 1, sizeof *r->out);
		for (int i = 0; i < md->ninputs; i++)
			r->in[i] = xcalloc(1, md->inputs[i].bytes + 4);
		for (int i = 0; i < nps; i++) {
			r->ps0[i] = xcalloc(1, ps_info(md, i)->bytes + 4);
			r->ps1[i] = xcalloc(1, ps_info(md, i)->bytes + 4);
		}
		for (int k = 0; k < md->noutputs; k++)
			r->out[k] = xcalloc(1, md->outputs[k].bytes + 4);
	}
	for (int i = 0; i < md->ninputs; i++)
		IO(r->in[i], md->inputs[i].bytes);
	for (int i = 0; i < nps; i++) {
		IO(r->ps0[i], ps_info(md, i)->bytes);
		IO(r->ps1[i], ps_info(md, i)->bytes);
	}
	for (int k = 0; k < md->noutputs; k++)
		IO(r->out[k], md->outputs[k].bytes);
	IO(&r->loss, 4);
#undef IO
	return ok;
}

/* ---------- running a module and comparing ---------- */

/* got against want: equal bits (NaN where NaN), or within tol (1 + |want|) when tol > 0.
 * Returns the first element that differs, -1 if none. */
static int64_t
differ(const void *got, const void *want, const struct mtc_tensor_info *t, double tol)
{
	for (int64_t i = 0; i < t->numel; i++) {
		uint32_t x, y;
		float a, b;
		memcpy(&x, (const char *)got + 4 * i, 4);
		memcpy(&y, (const char *)want + 4 * i, 4);
		memcpy(&a, &x, 4);
		memcpy(&b, &y, 4);
		if (x == y)
			continue;
		if (t->dtype != MTC_F32)
			return i;
		if (isnan(a) || isnan(b) ? !(isnan(a) && isnan(b)) : !(tol > 0 && fabs(a - b) <= tol * (1 + fabs(b))))
			return i;
	}
	return -1;
}

static void
compare(const char *what, const void *got, const void *want, const struct mtc_tensor_info *t,
        double tol)
{
	int64_t bad = differ(got, want, t, tol);
	float a = 0, b = 0;

	if (bad >= 0) {
		memcpy(&a, (const char *)got + 4 * bad, 4);
		memcpy(&b, (const char *)want + 4 * bad, 4);
	}
	check(bad < 0, "%s: element %lld is %.9g, the interpreter's %.9g", what, (long long)bad, a, b);
}

static double
tol_of(const Tgt *t, int run, Opk k)
{
	return t->tol[run][!(opinfo[k].flags & (F_EW | F_MUT))];
}

/* The .so at path, run twice against r. */
static void
run_module(Tgt *t, const Group *g, const struct mtc_module *md, const Ref *r)
{
	const char *name = g->name, *tn = t->be->name;
	char what[256];

	for (int run = 0; run < 2; run++) {
		void *inst, **outs;
		int rc, nps = md->nparams + md->nstate + md->nbuffers;

		setenv(t->env, t->val[run], 1);
		inst = md->create();
		check(inst != NULL, "%s %s: create: %s", tn, name, md->error(NULL));
		if (!inst)
			continue;
		for (int i = 0; i < nps; i++)
			check(md->set(inst, i, r->ps0[i]) == 0, "%s %s: set %s: %s", tn, name,
			      ps_info(md, i)->name, md->error(inst));
		outs = xcalloc(md->noutputs + 1, sizeof *outs);
		for (int k = 0; k < md->noutputs; k++)
			outs[k] = xcalloc(1, md->outputs[k].bytes + 4);
		rc = md->forward(inst, (const void *const *)r->in, outs);
		check(rc == 0, "%s %s: forward: %s", tn, name, md->error(inst));
		for (int k = 0; k < md->noutputs && rc == 0; k++) {
			const Case *c = out_case(g, k);
			snprintf(what, sizeof what, "%s %s %s (%s): %s", tn, name, md->outputs[k].name,
			         opinfo[c->k].name, t->how[run]);
			compare(what, outs[k], r->out[k], &md->outputs[k], tol_of(t, run, c->k));
		}
		if (md->trains) {
			float loss = 0;
			struct mtc_tensor_info li = { "loss", MTC_F32, 0, NULL, 1, 4, 0 };
			rc = md->step(inst, (const void *const *)r->in, &loss);
			check(rc == 0, "%s %s: step: %s", tn, name, md->error(inst));
			snprintf(what, sizeof what, "%s %s: the step's loss (%s): %s", tn, name,
			         opinfo[g->c[0].k].name, t->how[run]);
			if (rc == 0)
				compare(what, &loss, &r->loss, &li, tol_of(t, run, g->c[0].k));
			for (int i = 0; i < nps && rc == 0; i++) {
				const struct mtc_tensor_info *pi = ps_info(md, i);
				void *buf = xcalloc(1, pi->bytes + 4);
				check(md->get(inst, i, buf) == 0, "%s %s: get %s", tn, name, pi->name);
				snprintf(what, sizeof what, "%s %s: %s after the updates: %s", tn, name, pi->name,
				         t->how[run]);
				compare(what, buf, r->ps1[i], pi, tol_of(t, run, OP_SGD));
				free(buf);
			}
		}
		for (int k = 0; k < md->noutputs; k++)
			free(outs[k]);
		free(outs);
		md->destroy(inst);
	}
}

static const struct mtc_module *
open_module(const char *path, void **dl)
{
	const struct mtc_module *(*modf)(void);
	const struct mtc_module *md;

	if (!(*dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		check(0, "dlopen %s: %s", path, dlerror());
		return NULL;
	}
	*(void **)&modf = dlsym(*dl, "mtc_module");
	md = modf ? modf() : NULL;
	check(md && md->abi == MTC_ABI, "%s: mtc_module()", path);
	if (!md || md->abi != MTC_ABI) {
		dlclose(*dl);
		return NULL;
	}
	return md;
}

#ifdef HAVE_CUDA
/* ---------- CUDA without running: NVRTC and ptxas ---------- */

/* 1 when a GPU is usable here; else a line says why. */
static int
gpu_present(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(unsigned), (*count)(int *), n = 0;

	if (!h) {
		printf("note: no GPU: no libcuda.so.1 (%s); the CUDA modules build, their runs are skipped\n",
		       dlerror());
		return 0;
	}
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	if (!init || !count || init(0) || count(&n) || n < 1) {
		printf("note: no usable GPU (cuInit or cuDeviceGetCount failed, or no device); "
		       "the CUDA modules' runs are skipped\n");
		dlclose(h);
		return 0;
	}
	return 1;
}

/* ptxas over a PTX text for a real architecture; 1 when it accepts it. */
static int
ptxas_ok(const char *ptx, size_t len, const char *sm, char **msg)
{
	char in[] = "/tmp/mtc-ptxXXXXXX", cmd[512];
	int fd = mkstemp(in), rc;
	FILE *p;
	static char out[4096];
	size_t n;

	if (fd < 0 || write(fd, ptx, len) != (ssize_t)len) {
		*msg = "cannot write a temporary file";
		if (fd >= 0)
			close(fd), unlink(in);
		return 0;
	}
	close(fd);
	snprintf(cmd, sizeof cmd, "'%s' -arch=%s -o /dev/null %s 2>&1", PTXAS, sm, in);
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof out - 1, p) : 0;
	out[n] = 0;
	rc = p ? pclose(p) : -1;
	unlink(in);
	*msg = out;
	return rc == 0;
}

static int have_ptxas;
static int nfused;            /* fused groups' kernels over all modules */

/* One kernel alone through NVRTC and ptxas: to name the op when a whole program fails. */
static void
one_kernel(const char *gname, const Func *f, const Op *o)
{
	char *src = NULL, *img, *log;
	size_t n = 0, len;
	FILE *fp = open_memstream(&src, &n);
	Launch l;

	cuda_prelude(fp);
	cuda_kernel_op(fp, f, o, "k", &l);
	fclose(fp);
	img = cuda_compile(src, "k.cu", cuda_default_arch, 0, &len, &log);
	check(img && strstr(img, ".entry k("), "cuda %s: the kernel of %s alone: %s", gname,
	      opinfo[o->kind].name, log ? log : "no PTX");
	if (img && have_ptxas) {
		char *msg;
		int ok = ptxas_ok(img, len, "sm_90", &msg);
		check(ok, "cuda %s: %s: ptxas sm_90: %s", gname, opinfo[o->kind].name, msg);
	}
	free(img);
	free(log);
	free(src);
}

/* A program's PTX for the default arch (every kernel an .entry; ptxas for each sm of sms)
 * and, when cubin, its sm_90 cubin. 1 when all passed. */
static int
program(const char *what, const CuProg *p, const char *const *sms, int cubin)
{
	char *img, *log, e[160];
	size_t len;
	int ok, all;

	img = cuda_compile(p->src, "ops.cu", cuda_default_arch, 0, &len, &log);
	check(img != NULL, "%s: PTX for %s: %s", what, cuda_default_arch, log ? log : "");
	all = img != NULL;
	for (int k = 0; img && k < p->nfn; k++) {
		snprintf(e, sizeof e, ".entry %s(", p->fname[k]);
		ok = strstr(img, e) != NULL;
		check(ok, "%s: the PTX has kernel %s", what, p->fname[k]);
		all &= ok;
	}
	for (int s = 0; img && have_ptxas && sms[s]; s++) {
		char *msg;
		ok = ptxas_ok(img, len, sms[s], &msg);
		check(ok, "%s: ptxas %s: %s", what, sms[s], msg);
		all &= ok;
	}
	free(img);
	free(log);
	if (cubin) {
		img = cuda_compile(p->src, "ops.cu", "sm_90", 1, &len, &log);
		ok = img && len > 4 && memcmp(img, "\177ELF", 4) == 0;
		check(ok, "%s: sm_90 cubin: %s", what, log ? log : "");
		all &= ok;
		free(img);
		free(log);
	}
	return all;
}

/* Every op's kernel and launch, one kernel per op and as the backend fuses them. */
static void
cuda_offline(const Group *g, const Module *m, const Lowered *lo)
{
	const Func *fs[2] = { m->fwd, m->step };
	const LowFunc *pl[2] = { &lo->fwd, m->step ? &lo->step : NULL };
	char what[160];
	CuProg *p = cuda_kernels(m, NULL);
	int nop = 0;

	for (int j = 0; j < 2; j++)
		for (int i = 0; fs[j] && i < fs[j]->nop; i++) {
			const Op *o = &fs[j]->op[i];
			const Launch *l = &p->launch[j][i];
			if (cuda_kern[o->kind] == cuda_hostop)     /* a workspace: bytes, no kernel */
				continue;
			nop++;
			check(l->fn >= 0 && l->block[0] * l->block[1] * l->block[2] <= 256 && l->grid[0] >= 1,
			      "cuda %s: %s op %d (%s): a kernel with a launch of at most 256 threads", g->name,
			      fs[j]->name, i, opinfo[o->kind].name);
		}
	check(p->nfn > 0 && p->nfn <= nop, "cuda %s: kernels deduplicated (%d for %d ops)", g->name,
	      p->nfn, nop);
	snprintf(what, sizeof what, "cuda %s, one kernel per op", g->name);
	if (!program(what, p, (const char *const[]){ "sm_75", "sm_90", NULL }, 0))
		for (int j = 0; j < 2; j++)
			for (int i = 0; fs[j] && i < fs[j]->nop; i++)
				if (cuda_kern[fs[j]->op[i].kind] != cuda_hostop)
					one_kernel(g->name, fs[j], &fs[j]->op[i]);
	cuprog_free(p);
	p = cuda_kernels(m, pl);
	for (int j = 0; j < 2; j++)
		for (int i = 0; fs[j] && i < fs[j]->nop; i++)
			nfused += p->launch[j][i].argv != NULL;
	snprintf(what, sizeof what, "cuda %s, fused", g->name);
	program(what, p, (const char *const[]){ "sm_90", NULL }, 1);
	cuprog_free(p);
}

/* An NVRTC failure returns its log, naming the error. */
static void
nvrtc_error(void)
{
	char *img, *log;
	size_t len;

	img = cuda_compile("extern \"C\" __global__ void k() { undeclared_x = 1; }", "bad.cu",
	                   cuda_default_arch, 0, &len, &log);
	check(!img && log && strstr(log, "undeclared_x"), "NVRTC failure returns its log: %s",
	      log ? log : "(none)");
	free(img);
	free(log);
}
#endif

/* ---------- one group on every target ---------- */

static const char *outdir, *prepdir;

static void
group(const Group *g)
{
	Mod b;
	Module *m = build(g, &b);
	Interp *in = interp_new(m, 7);
	void **d0 = xcalloc(m->ndecl + 1, sizeof *d0), **d1 = xcalloc(m->ndecl + 1, sizeof *d1);
	float loss = 0;
	char err[512];

	/* The interpreter's inputs, made positive where the op needs it. */
	for (int c = 0; c < g->ncase; c++)
		for (int a = 0; g->c[c].pos && a < g->c[c].nargs; a++)
			if (g->c[c].arg[a] == -1 && g->c[c].at[a].dt == F32 && g->c[c].role[a] != R_HYPER) {
				Tensor *t = interp_decl(in, b.dcl[c][a]);
				for (int64_t i = 0; i < shape_numel(&t->ty.sh); i++)
					((float *)t->data)[i] = fabsf(((float *)t->data)[i]) + 0.25f;
			}
	for (int d = 0; d < m->ndecl; d++)
		d0[d] = copy(interp_decl(in, d)->data, type_bytes(&m->decl[d].ty));
	if (interp_run(in, m->fwd, err, sizeof err))
		die("%s: interpreter: %s", g->name, err);
	for (int d = 0; d < m->ndecl; d++)
		d1[d] = d0[d];
	if (m->step) {
		/* the forward's outputs first: the step's loss takes output slot 0 */
		Interp *is = interp_new(m, 7);
		for (int d = 0; d < m->ndecl; d++)
			memcpy(interp_decl(is, d)->data, d0[d], type_bytes(&m->decl[d].ty));
		if (interp_run(is, m->step, err, sizeof err))
			die("%s: interpreter: %s", g->name, err);
		loss = *(float *)interp_out(is, 0)->data;
		for (int d = 0; d < m->ndecl; d++)
			d1[d] = copy(interp_decl(is, d)->data, type_bytes(&m->decl[d].ty));
		interp_free(is);
	}

	for (int ti = 0; ti < NTGT; ti++) {
		Tgt *t = &targets[ti];
		BuildOpts o = { .opt_level = 2 };
		Lowered lo;
		char path[512];
		int failed;
		void *dl;
		const struct mtc_module *md;
		Ref r;

		for (int c = 0; c < g->ncase; c++)
			t->covered[g->c[c].k] = 1;
		snprintf(path, sizeof path, "%s/%s-%s.so", prepdir && ti > 0 ? prepdir : outdir, g->name,
		         t->be->name);
		lower(&lo, m, t->be->mach, NULL, NULL, NULL);
		failed = t->be->build(&lo, &o, path);
#ifdef HAVE_CUDA
		if (t->be == &backend_cuda)
			cuda_offline(g, m, &lo);
#endif
		lower_free(&lo);
		check(!failed, "%s %s: building %s", t->be->name, g->name, path);
		if (failed || (!t->runs && !(prepdir && ti > 0))) {
			nskip += g->ncase;
			continue;
		}
		if (!(md = open_module(path, &dl)))
			continue;
		ref_of(&r, md, m, d0, d1, in, loss);
		if (prepdir && ti > 0) {
			FILE *fp;
			snprintf(path + strlen(path) - 3, 5, ".ref");
			fp = fopen(path, "wb");
			check(fp && ref_io(&r, md, fp, 1) && fclose(fp) == 0, "writing %s", path);
		}
		if (t->runs)
			run_module(t, g, md, &r);
		else
			nskip += g->ncase;
		ref_free(&r, md);
		dlclose(dl);
	}
	for (int d = 0; d < m->ndecl; d++) {
		if (d1[d] != d0[d])
			free(d1[d]);
		free(d0[d]);
	}
	free(d0);
	free(d1);
	interp_free(in);
	mod_free(m);
}

/* --replay DIR: the CUDA modules --prepare wrote, against the results it wrote. */
static void
replay(const char *dir, const Group *gs, int ng)
{
#ifdef HAVE_CUDA
	Tgt *t = &targets[NTGT - 1];

	t->runs = gpu_present();
	for (int i = 0; i < ng; i++) {
		char path[512];
		void *dl;
		const struct mtc_module *md;
		FILE *fp;
		Ref r;

		if (!t->runs) {
			nskip += gs[i].ncase;
			continue;
		}
		snprintf(path, sizeof path, "%s/%s-cuda.so", dir, gs[i].name);
		if (!(md = open_module(path, &dl)))
			continue;
		snprintf(path, sizeof path, "%s/%s-cuda.ref", dir, gs[i].name);
		fp = fopen(path, "rb");
		check(fp && ref_io(&r, md, fp, 0), "reading %s", path);
		if (fp) {
			fclose(fp);
			run_module(t, &gs[i], md, &r);
			ref_free(&r, md);
		}
		dlclose(dl);
	}
#else
	(void)dir, (void)gs, (void)ng;
	check(0, "--replay: this build has no CUDA target");
#endif
}

int
main(int argc, char **argv)
{
	int ng;
	const Group *gs = op_cases(&ng);

	outdir = getenv("OUTDIR") ? getenv("OUTDIR") : ".";
	setenv("MTC_CHECK", "1", 1);
	if (argc == 3 && strcmp(argv[1], "--replay") == 0) {
		replay(argv[2], gs, ng);
		return done_skips();
	}
	if (argc == 3 && strcmp(argv[1], "--prepare") == 0)
		prepdir = argv[2];
	else if (argc != 1) {
		fprintf(stderr, "usage: ops [--prepare DIR | --replay DIR]\n");
		return 1;
	}
	{
		int nc = 0;
		for (int i = 0; i < ng; i++)
			nc += gs[i].ncase;
		printf("%d cases in %d groups on every target against the interpreter: mt3000 with OpenBLAS\n"
		       "within 1e-5 (1 + |ref|), with the portable GEMM (MTC_BLAS=0) bit-identical\n", nc, ng);
	}
#ifdef HAVE_CUDA
	have_ptxas = PTXAS[0] && access(PTXAS, X_OK) == 0;
	printf("cuda (tiled GEMM kernels, then cuBLAS) within 1e-5 (1 + |ref|) elementwise, 1e-4\n"
	       "otherwise; every kernel through NVRTC%s\n",
	       have_ptxas ? " and ptxas" : " (ptxas not found: the PTX is not validated)");
	targets[NTGT - 1].runs = gpu_present();
	nvrtc_error();
#endif
	for (int i = 0; i < ng; i++)
		group(&gs[i]);
	for (int ti = 0; ti < NTGT; ti++) {
		Tgt *t = &targets[ti];
		for (int i = 0; i < nop_elsewhere; i++)
			t->covered[op_elsewhere[i].k] = 1;
		for (int k = 0; k < NOP; k++)
			check(t->covered[k], "%s: every op kind has a test case: %s", t->be->name, opinfo[k].name);
	}
	for (int k = 0; k < NOP; k++) {
		check(mt3000_kern[k] != NULL, "mt3000_kern[] has a rule for %s", opinfo[k].name);
#ifdef HAVE_CUDA
		check(cuda_kern[k] != NULL, "cuda_kern[] has a rule for %s", opinfo[k].name);
#endif
	}
#ifdef HAVE_CUDA
	check(nfused > 0, "cuda: some elementwise ops fused into one kernel");
#endif
	return done_skips();
}
