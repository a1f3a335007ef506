/* module.c: a CUDA MODEL.so end to end without a frontend: a small trained model built with
 * the IR builder (with a swap), every --emit kind, the .so and its exports, and create():
 * on a machine without a GPU it must fail with a clear message; with one, steps must run. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"
#include "mtc/mtc.h"

#include "../build.h"
#include "../check.h"

/* Append an op of the forward phase; its result value. */
static int
add(Func *f, Opk k, const int *args, int n, int64_t ia0, int64_t ia1, double fa0, double fa1,
    const Type *given)
{
	int64_t ia[MAXIA] = { ia0, ia1 };
	double fa[MAXFA] = { fa0, fa1 };
	int i = build_op(f, k, PH_FWD, args, n, ia, op_niattr(k), fa, given, NULL, (Loc){0, 0});

	return f->op[i].res;
}

#define A(...) ((const int[]){__VA_ARGS__})

/* model tiny: logits = x @ w; step: relu, a swap of the activation, cross-entropy, SGD. */
static Module *
tiny(void)
{
	Module *m = mod_new("tiny", "module.c");
	Init nrm = { .kind = INIT_NORMAL, .b = 0.1 }, z = { .kind = INIT_ZEROS };
	int x, y, w, mo, h, r, s, si, l, one, g, gr, gw;
	Func *f;
	Type sc = { F32, { 0, {0} } };

	x = mod_decl(m, "x", R_INPUT, ty(F32, 2, 8, 16), z, (Loc){0, 0});
	y = mod_decl(m, "y", R_INPUT, ty(I32, 1, 8), z, (Loc){0, 0});
	w = mod_decl(m, "w", R_PARAM, ty(F32, 2, 16, 10), nrm, (Loc){0, 0});
	mo = mod_decl(m, "mom.w", R_STATE, ty(F32, 2, 16, 10), z, (Loc){0, 0});
	m->decl[mo].of = w;
	m->opt = (Optim){ OPT_SGD, 0.1, 0.9, 0, 0, 0, 0, 0, {0, 0} };
	hyper_decl(m, "lr", 0.1);
	hyper_decl(m, "momentum", 0.9);
	hyper_decl(m, "weight_decay", 0);

	f = m->fwd = func_new(m, "forward");
	func_output(f, "logits", add(f, OP_MATMUL, A(x, w), 2, 0, 0, 0, 0, NULL));

	f = m->step = func_new(m, "step");
	h = add(f, OP_MATMUL, A(x, w), 2, 0, 0, 0, 0, NULL);
	r = add(f, OP_RELU, A(h), 1, 0, 0, 0, 0, NULL);
	s = add(f, OP_SWAPOUT, A(r), 1, 0, 0, 0, 0, NULL);
	add(f, OP_WAIT, A(s), 1, 0, 0, 0, 0, NULL);
	si = add(f, OP_SWAPIN, A(s), 1, 0, 0, 0, 0, NULL);
	add(f, OP_WAIT, A(si), 1, 0, 0, 0, 0, NULL);
	l = add(f, OP_XENT, A(si, y), 2, 0, 0, 0, 0, NULL);
	one = add(f, OP_CONST, NULL, 0, 0, 0, 1.0, 0, &sc);
	g = add(f, OP_XENT_G, A(si, y, one), 3, 0, 0, 0, 0, NULL);
	gr = add(f, OP_RELU_G, A(h, g), 2, 0, 0, 0, 0, NULL);
	gw = add(f, OP_MATMUL, A(x, gr), 2, 1, 0, 0, 0, NULL);
	add(f, OP_SGDM, A(w, mo, gw, func_find(f, "opt.lr"), func_find(f, "opt.momentum"),
	                  func_find(f, "opt.weight_decay")), 6, 0, 0, 0, 0, NULL);
	f->loss = l;
	return m;
}

/* s, or "(nothing)" for NULL: a message to print. */
static const char *
or_none(const char *s)
{
	return s ? s : "(nothing)";
}

/* Does the line at p end with suf? */
static int
line_ends(const char *p, const char *suf)
{
	size_t n = strcspn(p, "\n"), k = strlen(suf);
	return n >= k && memcmp(p + n - k, suf, k) == 0;
}

/* Capture what fn writes to a temporary file. */
static char *
emit(const Lowered *m, const BuildOpts *o, const char *kind, int *rc)
{
	char path[] = "/tmp/mtc-emitXXXXXX";
	int fd = mkstemp(path);
	char *buf;
	FILE *fp;
	long n;

	close(fd);
	*rc = cuda_emit(m, o, kind, path);
	fp = fopen(path, "rb");
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = xmalloc(n + 1);
	buf[fread(buf, 1, n, fp)] = 0;
	fclose(fp);
	unlink(path);
	return buf;
}

static int
has_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h)
		dlclose(h);
	return h != NULL;
}

int
main(void)
{
	Module *m = tiny();
	BuildOpts o = { .arch = "sm_90", .opt_level = 2 };
	Lowered lo;
	char dir[] = "/tmp/mtc-cudaXXXXXX", so[256], hdr[256], cmd[512], *t;
	int rc;

	if (!mkdtemp(dir))
		die("mkdtemp");
	lower(&lo, m, &target_cuda, NULL, NULL, NULL);
	t = emit(&lo, &o, "cuda", &rc);
	check(rc == 0 && strstr(t, "__global__") && strstr(t, "k0_"), "--emit=cuda");
	free(t);
	t = emit(&lo, &o, "ptx", &rc);
	check(rc == 0 && strstr(t, ".target sm_90") && strstr(t, ".entry k0_"), "--emit=ptx for --arch=sm_90");
	free(t);
	t = emit(&lo, &o, "h", &rc);
	check(rc == 0 && strstr(t, "int tiny_step(tiny *, const float *x, const int32_t *y, float *loss);"),
	      "--emit=h: step: %s", or_none(t));
	check(strstr(t, "int tiny_forward(tiny *, const float *x, float *logits);") != NULL,
	      "--emit=h: forward: %s", or_none(t));
	free(t);
	t = emit(&lo, &o, "llvm", &rc);
	check(rc == 0 && strstr(t, "define hidden i32 @mtc_cu_sched_step") &&
	      strstr(t, "@mtc_cu_swap") && strstr(t, "@mtc_cu_wait") && strstr(t, "@mtc_cu_gemm") &&
	      strstr(t, "@mtc_cu_cubin") && strstr(t, "define i32 @tiny_step"), "--emit=llvm");
	/* the swap-out waits for relu's compute event 0 (recorded once, after the relu), the
	 * swap-in for no compute event (its bytes are new) but, on the other copy stream, for
	 * the swap-out's copy event 0: it reads what that wrote */
	{
		const char *rec = strstr(t, "call i32 @mtc_cu_record(");
		const char *out = strstr(t, "call i32 @mtc_cu_swap(");
		const char *in = out ? strstr(out + 1, "call i32 @mtc_cu_swap(") : NULL;
		int nrec = 0;
		for (const char *q = t; (q = strstr(q, "call i32 @mtc_cu_record(")); q++)
			nrec++;
		check(rec && out && in && rec < out && nrec == 1 && line_ends(rec, ", i32 0)"),
		      "--emit=llvm: one compute event, before the swap-out");
		check(out && in && line_ends(out, ", i32 0, i32 0, i32 -1)") &&
		      line_ends(in, ", i32 1, i32 -1, i32 0)"),
		      "--emit=llvm: the swaps' copy and compute events");
	}
	free(t);

	snprintf(so, sizeof so, "%s/tiny.so", dir);
	snprintf(hdr, sizeof hdr, "%s/tiny.h", dir);
	check(cuda_build(&lo, &o, so) == 0 && access(so, R_OK) == 0 && access(hdr, R_OK) == 0,
	      "build tiny.so and tiny.h");
	/* the API is exported, the runtime is not */
	snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", so);
	{
		FILE *p = popen(cmd, "r");
		char buf[65536];
		size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
		buf[n] = 0;
		if (p)
			pclose(p);
		for (const char *const *s = (const char *const[]){ " tiny_create\n", " tiny_step\n",
		     " tiny_forward\n", " tiny_destroy\n", " tiny_error\n", " mtc_module\n",
		     " mtc_last_error\n", NULL }; *s; s++)
			check(strstr(buf, *s) != NULL, "exported: %s", *s);
		check(strstr(buf, "mtc_cu_") == NULL, "runtime symbols are hidden");
	}
	/* the header compiles against the .so */
	snprintf(cmd, sizeof cmd, "cd '%s' && printf '#include \"tiny.h\"\\nint main(void){tiny *t = "
	         "tiny_create(); if (t) tiny_destroy(t); return 0;}\\n' > use.c && cc -std=c11 -Wall "
	         "-Werror -o use use.c ./tiny.so", dir);
	check(system(cmd) == 0, "tiny.h compiles and links against tiny.so: %s", cmd);

	{
		void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
		const struct mtc_module *(*modf)(void);
		const struct mtc_module *md;
		void *inst;

		check(h != NULL, "dlopen tiny.so without a GPU: %s", or_none(h ? "" : dlerror()));
		if (!h)
			goto out;
		*(void **)&modf = dlsym(h, "mtc_module");
		md = modf ? modf() : NULL;
		check(md && md->abi == MTC_ABI && strcmp(md->name, "tiny") == 0 &&
		      strcmp(md->target, "cuda") == 0 && md->ninputs == 2 && md->nparams == 1 &&
		      md->nstate == 1 && md->noutputs == 1 && md->trains &&
		      md->inputs[0].shape[1] == 16 && md->params[0].bytes == 640, "mtc_module() describes it");
		/* mtc-run draws an i32 input's values below its range: labels past the classes are NaN */
		check(md && md->inputs[1].range == 10 && md->inputs[0].range == 0,
		      "the labels' range is the classes: %lld", md ? (long long)md->inputs[1].range : -1LL);
		if (!md)
			goto out;
		inst = md->create();
		if (!has_driver()) {
			const char *e = md->error(NULL);
			check(inst == NULL, "create() fails without libcuda");
			check(e && strstr(e, "no CUDA driver (libcuda.so.1) found"), "create() says why: %s",
			      or_none(e));
			printf("note: %s\n", e ? e : "");
			skip("running tiny.so needs a GPU (no libcuda.so.1 here)");
		} else if (!inst) {
			const char *e = md->error(NULL);
			check(e && *e, "create() without a usable GPU says why: %s", or_none(e));
			skip("running tiny.so needs a GPU: %s", e ? e : "");
		} else {
			float x[8 * 16], loss[5], logits[80];
			int32_t y[8];
			const void *in[2] = { x, y };
			void *out[1] = { logits };
			for (int i = 0; i < 8 * 16; i++)
				x[i] = (float)((i * 37 % 17) - 8) / 8;
			for (int i = 0; i < 8; i++)
				y[i] = i % 10;
			for (int s = 0; s < 5; s++)
				check(md->step(inst, in, &loss[s]) == 0 && isfinite(loss[s]), "step on the GPU: %s",
				      or_none(md->error(inst)));
			check(loss[4] < loss[0], "the loss falls");
			check(md->forward(inst, in, out) == 0 && isfinite(logits[0]), "forward on the GPU: %s",
			      or_none(md->error(inst)));
			md->destroy(inst);
		}
		dlclose(h);
	}
out:
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		printf("note: could not remove %s\n", dir);
	lower_free(&lo);
	mod_free(m);
	return done_skips();
}
