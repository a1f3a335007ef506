/* kernels.c: every op kind's CUDA kernel compiles through NVRTC for the default architecture
 * and for sm_90, and ptxas (when configure found it) accepts the PTX. */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"

#ifndef PTXAS
#define PTXAS ""
#endif

#include "tally.h"

static Func *F;
static int ncase;
static int cases[256];        /* op indices to test */
static int covered[NOP];

static Type
ty(DType dt, int rank, ...)
{
	Type t = { dt, { rank, {0} } };
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		t.sh.d[i] = va_arg(ap, int);
	va_end(ap);
	return t;
}

/* Append an op, its result type inferred (or given for F_GIVEN kinds); dies on a bad case. */
static int
op(Opk k, int nargs, const int *args, int nia, const int64_t *ia, const double *fa, Type *given)
{
	Type r = given ? *given : (Type){0};
	char err[256];
	int64_t ia0[MAXIA] = {0};
	double fa0[MAXFA] = {0};
	int i;

	if (ia)
		memcpy(ia0, ia, nia * sizeof *ia);
	if (fa)
		memcpy(fa0, fa, sizeof fa0);
	if (op_infer(F, k, args, nargs, ia0, nia, fa0, &r, err, sizeof err))
		die("test case %s: %s", opinfo[k].name, err);
	i = func_op(F, k, PH_FWD, args, nargs, ia0, nia, fa0, &r, NULL, (Loc){0, 0});
	cases[ncase++] = i;
	covered[k] = 1;
	return F->op[i].res;
}

#define A(...) ((const int[]){__VA_ARGS__})
#define I(...) ((const int64_t[]){__VA_ARGS__})
#define D(...) ((const double[MAXFA]){__VA_ARGS__})
#define U(k, a) op(k, 1, A(a), 0, NULL, NULL, NULL)
#define B(k, a, b) op(k, 2, A(a, b), 0, NULL, NULL, NULL)

static void
build(void)
{
	Module *m = mod_new("ops", "kernels.c");
	Init z = { INIT_ZEROS, 0, 0 };
	int x, y, c, b3, b4, g, bt, tab, ids, lab, t, p, mo, v, dl, x3, mx, sm, ls, e;
	Type tt;

	mod_decl(m, "x", R_INPUT, ty(F32, 2, 4, 8), z, (Loc){0, 0});
	mod_decl(m, "y", R_INPUT, ty(F32, 1, 8), z, (Loc){0, 0});
	mod_decl(m, "c", R_INPUT, ty(F32, 2, 4, 1), z, (Loc){0, 0});
	mod_decl(m, "b3", R_INPUT, ty(F32, 3, 2, 4, 8), z, (Loc){0, 0});
	mod_decl(m, "b4", R_INPUT, ty(F32, 4, 3, 1, 8, 6), z, (Loc){0, 0});
	mod_decl(m, "g", R_PARAM, ty(F32, 1, 8), z, (Loc){0, 0});
	mod_decl(m, "bt", R_PARAM, ty(F32, 1, 8), z, (Loc){0, 0});
	mod_decl(m, "tab", R_PARAM, ty(F32, 2, 10, 8), z, (Loc){0, 0});
	mod_decl(m, "ids", R_INPUT, ty(I32, 2, 4, 3), z, (Loc){0, 0});
	mod_decl(m, "lab", R_INPUT, ty(I32, 1, 4), z, (Loc){0, 0});
	mod_decl(m, "t", R_STATE, ty(I32, 0), z, (Loc){0, 0});
	mod_decl(m, "p", R_PARAM, ty(F32, 2, 4, 8), z, (Loc){0, 0});
	mod_decl(m, "mo", R_STATE, ty(F32, 2, 4, 8), z, (Loc){0, 0});
	mod_decl(m, "v", R_STATE, ty(F32, 2, 4, 8), z, (Loc){0, 0});
	mod_decl(m, "dl", R_INPUT, ty(F32, 0), z, (Loc){0, 0});
	F = m->fwd = func_new(m, "forward");
	x = 0, y = 1, c = 2, b3 = 3, b4 = 4, g = 5, bt = 6, tab = 7, ids = 8, lab = 9, t = 10;
	p = 11, mo = 12, v = 13, dl = 14;

	tt = ty(F32, 2, 4, 8);
	op(OP_CONST, 0, NULL, 0, NULL, D(0.5), &tt);
	B(OP_ADD, x, y);
	B(OP_ADD, x, c);
	B(OP_ADD, c, y);                    /* both operands broadcast */
	B(OP_SUB, b3, y);
	B(OP_MUL, x, dl);
	B(OP_DIV, x, y);
	B(OP_MATMUL, x, op(OP_TRANSPOSE, 1, A(x), 2, I(1, 0), NULL, NULL));
	op(OP_MATMUL, 2, A(x, x), 2, I(1, 0), NULL, NULL);             /* ta */
	op(OP_MATMUL, 2, A(x, x), 2, I(0, 1), NULL, NULL);             /* tb */
	op(OP_MATMUL, 2, A(b3, b3), 2, I(1, 0), NULL, NULL);           /* batched, transposed */
	x3 = op(OP_RESHAPE, 1, A(b3), 0, NULL, NULL, (tt = ty(F32, 4, 1, 2, 4, 8), &tt));
	B(OP_MATMUL, x3, b4);                                          /* batch broadcast */
	for (int k = OP_RELU; k <= OP_NEG; k++)
		U(k, x);
	op(OP_POW, 1, A(x), 0, NULL, D(3.0), NULL);
	op(OP_TRANSPOSE, 1, A(b3), 3, I(2, 0, 1), NULL, NULL);
	op(OP_TRANSPOSE, 1, A(ids), 2, I(1, 0), NULL, NULL);           /* i32 */
	op(OP_RESHAPE, 1, A(x), 0, NULL, NULL, (tt = ty(F32, 2, 8, 4), &tt));
	op(OP_CONCAT, 3, A(x, x, c), 1, I(1), NULL, NULL);
	op(OP_CONCAT, 2, A(b3, b3), 1, I(0), NULL, NULL);
	op(OP_SLICE, 1, A(b3), 2, I(2, 3), NULL, (tt = ty(F32, 3, 2, 4, 4), &tt));
	op(OP_SLICE, 1, A(x), 2, I(0, 1), NULL, (tt = ty(F32, 2, 2, 8), &tt));
	op(OP_SUM, 1, A(x), 2, I(0, 0), NULL, NULL);
	op(OP_SUM, 1, A(b3), 2, I(2, 1), NULL, NULL);
	op(OP_MEAN, 1, A(x), 2, I(1, 1), NULL, NULL);
	mx = op(OP_MAX, 1, A(b3), 2, I(1, 0), NULL, NULL);
	sm = op(OP_SOFTMAX, 1, A(x), 1, I(1), NULL, NULL);
	op(OP_SOFTMAX, 1, A(b3), 1, I(1), NULL, NULL);                 /* not the last axis */
	ls = op(OP_LOGSOFTMAX, 1, A(x), 1, I(1), NULL, NULL);
	op(OP_LAYERNORM, 3, A(x, g, bt), 0, NULL, D(1e-5), NULL);
	op(OP_LAYERNORM, 3, A(b3, g, bt), 0, NULL, D(1e-5), NULL);
	e = B(OP_EMBEDDING, tab, ids);
	op(OP_XENT, 2, A(x, lab), 0, NULL, NULL, NULL);
	B(OP_MSE, x, y);
	op(OP_SUMTO, 1, A(b3), 0, NULL, NULL, (tt = ty(F32, 1, 8), &tt));
	op(OP_SUMTO, 1, A(x), 0, NULL, NULL, (tt = ty(F32, 2, 4, 1), &tt));
	op(OP_SUMTO, 1, A(b3), 0, NULL, NULL, (tt = ty(F32, 0), &tt));
	op(OP_BCAST, 1, A(y), 0, NULL, NULL, (tt = ty(F32, 3, 2, 4, 8), &tt));
	for (int k = OP_RELU_G; k <= OP_RSQRT_G; k++)
		B(k, x, x);
	op(OP_POW_G, 2, A(x, x), 0, NULL, D(3.0), NULL);
	op(OP_MAX_G, 3, A(b3, mx, mx), 2, I(1, 0), NULL, NULL);
	op(OP_SOFTMAX_G, 2, A(sm, x), 1, I(1), NULL, NULL);
	op(OP_LOGSOFTMAX_G, 2, A(ls, x), 1, I(1), NULL, NULL);
	op(OP_LN_DX, 3, A(x, g, x), 0, NULL, D(1e-5), NULL);
	op(OP_LN_DGAMMA, 2, A(b3, b3), 0, NULL, D(1e-5), NULL);
	op(OP_EMBED_G, 2, A(ids, e), 0, NULL, NULL, (tt = ty(F32, 2, 10, 8), &tt));
	op(OP_XENT_G, 3, A(x, lab, dl), 0, NULL, NULL, NULL);
	op(OP_MSE_G, 3, A(x, y, dl), 0, NULL, NULL, NULL);
	op(OP_SGD, 2, A(p, x), 0, NULL, D(0.1), NULL);
	op(OP_SGDM, 3, A(p, mo, x), 0, NULL, D(0.1, 0.9), NULL);
	op(OP_TICK, 1, A(t), 0, NULL, NULL, NULL);
	op(OP_ADAM, 5, A(p, mo, v, x, t), 0, NULL, D(1e-3, 0.9, 0.999, 1e-8), NULL);
	{
		int s = U(OP_SWAPOUT, x);
		int in = U(OP_SWAPIN, s);
		U(OP_WAIT, in);
	}
}

/* Run ptxas over a PTX text for a real architecture; 1 when it accepts it. */
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

/* ---------- on a GPU: every op against the interpreter ---------- */

typedef unsigned long long Dptr;
static struct {
	int (*init)(unsigned);
	int (*dev)(int *, int);
	int (*ctx)(void **, int);
	int (*setctx)(void *);
	int (*load)(void **, const void *);
	int (*getfn)(void **, void *, const char *);
	int (*alloc)(Dptr *, size_t);
	int (*h2d)(Dptr, const void *, size_t);
	int (*d2h)(void *, Dptr, size_t);
	int (*d2d)(Dptr, Dptr, size_t);
	int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	              void *, void **, void **);
	int (*sync)(void);
} cu;

/* 1 when a GPU is usable; else a message says why and the GPU tests are skipped. */
static int
open_gpu(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *c;
	int d;

	if (!h) {
		printf("skipped: every op on the GPU against the interpreter: no libcuda.so.1 (%s)\n",
		       dlerror());
		return 0;
	}
	*(void **)&cu.init = dlsym(h, "cuInit");
	*(void **)&cu.dev = dlsym(h, "cuDeviceGet");
	*(void **)&cu.ctx = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.setctx = dlsym(h, "cuCtxSetCurrent");
	*(void **)&cu.load = dlsym(h, "cuModuleLoadData");
	*(void **)&cu.getfn = dlsym(h, "cuModuleGetFunction");
	*(void **)&cu.alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&cu.h2d = dlsym(h, "cuMemcpyHtoD_v2");
	*(void **)&cu.d2h = dlsym(h, "cuMemcpyDtoH_v2");
	*(void **)&cu.d2d = dlsym(h, "cuMemcpyDtoD_v2");
	*(void **)&cu.launch = dlsym(h, "cuLaunchKernel");
	*(void **)&cu.sync = dlsym(h, "cuCtxSynchronize");
	if (!cu.init || !cu.sync || cu.init(0) || cu.dev(&d, 0) || cu.ctx(&c, d) || cu.setctx(c)) {
		printf("skipped: every op on the GPU against the interpreter: no usable GPU\n");
		return 0;
	}
	return 1;
}

/* Equal within 1e-4 relative (1e-5 absolute near zero); NaN only where the reference has it. */
static int
close_to(float a, float b)
{
	if (isnan(b) || isnan(a))
		return isnan(a) && isnan(b);
	return fabsf(a - b) <= 1e-4f * fmaxf(fabsf(b), 0.1f);
}

/* The GPU's copy of a tensor against the interpreter's. */
static void
same(Dptr d, const Tensor *t, const char *what)
{
	int64_t n = shape_numel(&t->ty.sh), bad = -1;
	float *g = xmalloc(n * 4 + 4), *r = t->data;
	char msg[128] = "";

	cu.d2h(g, d, n * 4);
	for (int64_t e = 0; e < n && bad < 0; e++)
		if (t->ty.dt == F32 ? !close_to(g[e], r[e]) : ((int32_t *)g)[e] != ((int32_t *)r)[e])
			bad = e;
	if (bad >= 0)
		snprintf(msg, sizeof msg, "element %lld: %.9g, expected %.9g", (long long)bad, g[bad], r[bad]);
	check(bad < 0, what, msg);
	free(g);
}

static void
gpu_ops(const FnPlan *const plans[2], const char *how)
{
	Module *m = F->mod;
	CuProg *p;
	Interp *in;
	Dptr *buf;
	void *mod, **fn;
	char *ptx, *log, err[256], what[128];
	size_t len;

	if (!open_gpu()) {
		skip++;
		return;
	}
	p = cuda_kernels(m, plans);
	ptx = cuda_compile(p->src, "ops.cu", cuda_default_arch, 0, &len, &log);
	check(ptx && cu.load(&mod, ptx) == 0, "GPU: load the PTX", log);
	if (!ptx)
		return;
	fn = xcalloc(p->nfn, sizeof *fn);
	for (int k = 0; k < p->nfn; k++)
		check(cu.getfn(&fn[k], mod, p->fname[k]) == 0, "GPU: kernel", p->fname[k]);
	/* the same inputs on both sides: the interpreter's, ids and labels in range */
	in = interp_new(m, 1);
	buf = xcalloc(F->nval, sizeof *buf);
	for (int d = 0; d < m->ndecl; d++) {
		Tensor *t = interp_decl(in, d);
		int64_t n = shape_numel(&m->decl[d].ty.sh);
		if (m->decl[d].ty.dt == I32)
			for (int64_t i = 0; i < n; i++)
				((int32_t *)t->data)[i] = strcmp(m->decl[d].name, "t") == 0 ? 0 :
				                          (int32_t)(i * 7 % (strcmp(m->decl[d].name, "ids") ? 8 : 10));
	}
	for (int v = 0; v < F->nval; v++) {
		size_t b = type_bytes(&F->val[v].ty);
		check(cu.alloc(&buf[v], b ? b : 4) == 0, "GPU: alloc", NULL);
		if (v < m->ndecl)
			cu.h2d(buf[v], interp_decl(in, v)->data, b);
	}
	for (int i = 0; i < F->nop; i++) {
		const Op *o = &F->op[i];
		const Launch *l = &p->launch[0][i];
		Dptr a[16];
		void *pa[16];
		int na = 0;
		if (opinfo[o->kind].flags & F_COPY) {
			cu.d2d(buf[o->res], buf[o->args[0]], type_bytes(&F->val[o->res].ty));
			continue;
		}
		if (l->fn < 0)
			continue;
		if (l->argv) {
			for (int k = 0; k < l->nargv && na < 16; k++)
				a[na++] = buf[l->argv[k]];
		} else {
			if (o->res >= 0)
				a[na++] = buf[o->res];
			for (int k = 0; k < o->nargs; k++)
				a[na++] = buf[o->args[k]];
		}
		for (int k = 0; k < na; k++)
			pa[k] = &a[k];
		snprintf(what, sizeof what, "GPU: launch op %d (%s)", i, opinfo[o->kind].name);
		check(cu.launch(fn[l->fn], l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
		                l->block[2], 0, NULL, pa, NULL) == 0 && cu.sync() == 0, what, NULL);
	}
	check(interp_run(in, F, err, sizeof err) == 0, "interpreter", err);
	/* every result, then the state the updates changed */
	for (int v = m->ndecl; v < F->nval; v++) {
		snprintf(what, sizeof what, "GPU (%s) = interpreter: %%%s (%s)", how, F->val[v].name,
		         opinfo[F->op[F->val[v].def].kind].name);
		same(buf[v], interp_out(in, v - m->ndecl), what);
	}
	for (int d = 0; d < m->ndecl; d++) {
		snprintf(what, sizeof what, "GPU = interpreter after the updates: %s", m->decl[d].name);
		same(buf[d], interp_decl(in, d), what);
	}
	printf("note: every op ran on the GPU (%s) and matched the interpreter within 1e-4\n", how);
	interp_free(in);
	free(buf);
	free(fn);
	free(ptx);
	free(log);
	cuprog_free(p);
}

int
main(void)
{
	char what[128];
	int have_ptxas = PTXAS[0] && access(PTXAS, X_OK) == 0;

	build();
	/* the CUDA target never gets swap_home: its Target.hoststate is 0 (passes/target.c) */
	covered[OP_SWAPHOME] = 1;
	for (int k = 0; k < NOP; k++) {
		check(covered[k], "every op kind has a test case", opinfo[k].name);
		check(cuda_kern[k] != NULL, "cuda_kern[] has a rule", opinfo[k].name);
	}
	if (!have_ptxas)
		printf("note: ptxas not found; PTX is not validated\n");
	for (int c = 0; c < ncase; c++) {
		const Op *o = &F->op[cases[c]];
		char *src = NULL, *img, *log;
		size_t n = 0, len;
		FILE *fp = open_memstream(&src, &n);
		Launch l;
		int has;

		cuda_prelude(fp);
		has = cuda_kernel_op(fp, F, o, "k", &l);
		fclose(fp);
		snprintf(what, sizeof what, "op %d (%s)", cases[c], opinfo[o->kind].name);
		if (!has) {
			check(o->kind == OP_SWAPOUT || o->kind == OP_SWAPIN || o->kind == OP_WAIT, what,
			      "no kernel");
			free(src);
			continue;
		}
		check(l.block[0] * l.block[1] * l.block[2] <= 256 && l.grid[0] >= 1, what, "bad launch");
		img = cuda_compile(src, "k.cu", cuda_default_arch, 0, &len, &log);
		check(img && strstr(img, ".entry k("), what, log ? log : "no PTX");
		if (img && have_ptxas) {
			char *msg = NULL;
			check(ptxas_ok(img, len, "sm_75", &msg), what, msg);
			check(ptxas_ok(img, len, "sm_90", &msg), what, msg);
		}
		if (!img)
			printf("--- source ---\n%s\n", src);
		free(img);
		free(log);
		free(src);
	}

	/* the whole program, deduplicated, as the backend builds it: PTX and an sm_90 cubin */
	{
		CuProg *p = cuda_kernels(F->mod, NULL);
		char *img, *log;
		size_t len;

		check(p->nfn > 0 && p->nfn <= ncase, "whole program: kernels deduplicated", NULL);
		if (getenv("MTC_TEST_DUMP"))
			fputs(p->src, stderr);
		img = cuda_compile(p->src, "model.cu", cuda_default_arch, 0, &len, &log);
		check(img != NULL, "whole program: PTX for the default arch", log);
		free(img);
		free(log);
		img = cuda_compile(p->src, "model.cu", "sm_90", 1, &len, &log);
		check(img && len > 4 && memcmp(img, "\177ELF", 4) == 0, "whole program: sm_90 cubin", log);
		free(img);
		free(log);
		/* a broken source reports NVRTC's log, naming the error */
		img = cuda_compile("extern \"C\" __global__ void k() { undeclared_x = 1; }", "bad.cu",
		                   cuda_default_arch, 0, &len, &log);
		check(!img && log && strstr(log, "undeclared_x"), "NVRTC failure returns its log", log);
		free(img);
		free(log);
		cuprog_free(p);
	}
	/* fused: the C backend's groups of elementwise ops, one kernel each */
	{
		Lowered lo;
		const FnPlan *pl[2] = { &lo.fwd, NULL };
		CuProg *p;
		char *img, *log;
		size_t len;
		int ngroup = 0;

		/* every result an output, so that the GPU run can compare them all */
		for (int v = F->mod->ndecl; v < F->nval; v++)
			func_output(F, F->val[v].name, v);
		lower(&lo, F->mod, &target_cuda, NULL, NULL, NULL);
		p = cuda_kernels(F->mod, pl);
		for (int i = 0; i < F->nop; i++)
			ngroup += p->launch[0][i].argv != NULL;
		check(ngroup > 0, "fused groups exist", NULL);
		img = cuda_compile(p->src, "fused.cu", cuda_default_arch, 0, &len, &log);
		check(img != NULL, "fused program: PTX for the default arch", log);
		if (img && have_ptxas) {
			char *msg = NULL;
			check(ptxas_ok(img, len, "sm_90", &msg), "fused program: ptxas", msg);
		}
		free(img);
		free(log);
		img = cuda_compile(p->src, "fused.cu", "sm_90", 1, &len, &log);
		check(img != NULL, "fused program: sm_90 cubin", log);
		free(img);
		free(log);
		cuprog_free(p);
		gpu_ops(NULL, "one kernel per op");
		gpu_ops(pl, "fused");
		lower_free(&lo);
	}
	mod_free(F->mod);
	return tally();
}
