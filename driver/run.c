/* run.c: mtc-run, which trains or runs a model without writing C; here through the interpreter. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "frontend.h"
#include "onnx.h"
#include "passes.h"
#include "mtc/mtc-rt.h"
#include "safetensors.h"
#include "run.h"

static const char usage[] =
"usage: mtc-run MODEL.tdsl|MODEL.mir|MODEL.onnx|MODEL.so [options]\n"
"\n"
"Train a model for a few steps, or run its forward pass, on the reference interpreter\n"
"(MODEL.tdsl, MODEL.mir, MODEL.onnx: an ONNX graph alone, forward only) or a compiled\n"
"module (MODEL.so).\n"
"\n"
"options:\n"
"  --params FILE         initial params (safetensors; missing params use their initializers)\n"
"  --inputs FILE         inputs (safetensors; missing inputs are pseudo-random, labels in range)\n"
"  --steps N             training steps (default 1); prints 'step K loss V' for each\n"
"  --save-params FILE    write the params after the last step\n"
"  --forward             run the forward pass instead of training\n"
"  --save-outputs FILE   write the outputs: of the forward pass (--forward), or of the last\n"
"                        training step's forward pass, before its update (MODEL_step_out)\n"
"  --lr-schedule FILE|cosine:W:T  the learning rate of every step: FILE has one a line, line k\n"
"                        for step k of the whole training (the last one repeats); cosine:W:T\n"
"                        warms up linearly over W steps, then decays the model's lr to 0 at\n"
"                        step T (HuggingFace's get_cosine_schedule_with_warmup)\n"
"  --trace FILE          (CUDA modules) write the last step as Chrome trace-event JSON\n"
"                        (Perfetto, chrome://tracing): every kernel, copy and update on\n"
"                        the host on its stream, timed by CUDA events (MTC_TRACE=FILE);\n"
"                        MTC_TRACE_HOLD=S: the GPU held until the step is issued (docs/cuda.md)\n"
"  --save-state FILE     write the training state after the last step: params, optimizer\n"
"                        state, hyperparameters, step counter (what MODEL_save writes)\n"
"  --load-state FILE     start from a saved state (MODEL_load): training resumes bit for bit\n"
"  --seed N              seed of the initial values and the inputs (default 0)\n"
"  -D NAME=INT           override (or define) an integer const of the model\n"
"  --micro-batches=K     (MODEL.tdsl) train on K slices of the batch, gradients summed before\n"
"                        one update, as mtc --micro-batches=K builds a module\n"
"  --version             print the version and exit\n"
"  --help                print this help and exit\n"
"\n"
"At the end it prints 'peak_bytes P plan_bytes Q budget_bytes B step_ms T': for the\n"
"interpreter P is the high-water mark of the bytes it held (params, state, inputs, live\n"
"values), Q and B are 0; for a module P is the measured peak (the runtime's high-water mark\n"
"of live accelerator bytes), Q the arena the plan lays out (module tensors included), B the\n"
"budget it was built for (0: none); T is the median step time in milliseconds. The memory\n"
"words are defined in docs/glossary.md. A data-parallel module's training run prints before\n"
"it 'comm_ms C comm_wait_ms W': per step, the time its collectives were in flight and the\n"
"part of it the step waited for (the rest hid behind compute).\n"
"Options taking a value take it as --opt VALUE or --opt=VALUE.\n"
"A module's params start from the initial values of the seed it was built with (mtc --seed);\n"
"--seed changes its inputs only.\n";


_Noreturn void
fatal(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mtc-run: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
parse_args(RunOpts *o, int argc, char **argv)
{
	o->steps = -1;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = NULL;
		const char *eq = strchr(a, '=');
		size_t n = eq && a[0] == '-' && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
		/* --opt VALUE and --opt=VALUE */
#define OPT(s) (strlen(s) == n && strncmp(a, s, n) == 0 && \
		((v = eq ? (char *)eq + 1 : (i + 1 < argc ? argv[++i] : NULL)) != NULL || \
		 (fatal("%s needs an argument", s), 0)))
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			exit(0);
		} else if (strcmp(a, "--version") == 0) {
			printf("mtc-run %s\n", PACKAGE_VERSION);
			exit(0);
		} else if (strcmp(a, "--forward") == 0) {
			o->forward = 1;
		} else if (OPT("--params")) {
			o->params = v;
		} else if (OPT("--inputs")) {
			o->inputs = v;
		} else if (OPT("--save-params")) {
			o->save_params = v;
		} else if (OPT("--save-outputs")) {
			o->save_outputs = v;
		} else if (OPT("--lr-schedule")) {
			o->lr_schedule = v;
		} else if (OPT("--micro-batches")) {
			char *e;
			errno = 0;
			long k = strtol(v, &e, 10);
			if (*e || !*v || errno || k < 1 || k > 1 << 20)
				fatal("invalid --micro-batches '%s': expected a count (1 or more)", v);
			o->micro = (int)k;
		} else if (OPT("--trace")) {
			o->trace = v;
		} else if (OPT("--save-state")) {
			o->save_state = v;
		} else if (OPT("--load-state")) {
			o->load_state = v;
		} else if (OPT("--steps")) {
			char *e;
			errno = 0;
			o->steps = strtol(v, &e, 10);
			if (*e || !*v || errno || o->steps < 0 || o->steps > 1000000000)
				fatal("invalid --steps '%s': expected a count", v);
		} else if (OPT("--seed")) {
			char *e;
			errno = 0;
			o->seed = strtoull(v, &e, 10);
			if (*e || !*v || errno || *v == '-')
				fatal("invalid --seed '%s'", v);
		} else if (strcmp(a, "-D") == 0 || (strncmp(a, "-D", 2) == 0 && a[2])) {
			const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
			if (!d || !strchr(d, '='))
				fatal("-D needs NAME=INT, got '%s'", d ? d : "");
			if (o->ndefines == 256)
				fatal("too many -D options");
			o->defines[o->ndefines++] = d;
		} else if (a[0] == '-' && a[1]) {
			fatal("unknown option '%s' (see mtc-run --help)", a);
		} else {
			if (o->model)
				fatal("more than one model ('%s')", a);
			o->model = a;
		}
#undef OPT
	}
	if (!o->model)
		fatal("no model (see mtc-run --help)");
	if (o->lr_schedule && o->forward)
		fatal("--lr-schedule needs training, not --forward");
	if (o->params && o->load_state)
		fatal("--params and --load-state both set the params: give one of them");
}

/* "opt.lr" -> "lr": the hyperparameter a decl holds */
static const char *
hyper_key(const char *decl)
{
	return strncmp(decl, "opt.", 4) == 0 ? decl + 4 : decl;
}

static int
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && strcmp(s + n - k, suf) == 0;
}

static const char *const rolename[] = { "input", "param", "optimizer state", "buffer" };

/* Copy the tensors of a safetensors file into the interpreter's decls: every name must be a
 * decl of an allowed role (inputs; or params and buffers), with the decl's dtype and shape. */
static void
load(Interp *in, const Module *m, const char *path, int inputs)
{
	char err[512], a[160], b[160];
	mtc_st_file *f = mtc_st_read(path, err, sizeof err);

	if (!f)
		fatal("%s", err);
	for (int i = 0; i < f->n; i++) {
		const mtc_st_tensor *t = &f->t[i];
		int d = mod_find_decl(m, t->name);
		Type ty;
		if (d < 0)
			fatal("%s: tensor '%s' is not %s of model %s", path, t->name,
			      inputs ? "an input" : "a param", m->name);
		if (inputs ? m->decl[d].role != R_INPUT : m->decl[d].role != R_PARAM && m->decl[d].role != R_BUFFER)
			fatal("%s: tensor '%s' is %s %s, not %s", path, t->name,
			      m->decl[d].role == R_INPUT ? "an" : "a", rolename[m->decl[d].role],
			      inputs ? "an input" : "a param or buffer (give inputs with --inputs)");
		ty.dt = t->dtype == MTC_ST_I32 ? I32 : F32;
		ty.sh.rank = t->rank;
		memcpy(ty.sh.d, t->shape, sizeof ty.sh.d);
		if (ty.dt != m->decl[d].ty.dt || !shape_eq(&ty.sh, &m->decl[d].ty.sh))
			fatal("%s: tensor '%s' is %s, the model's %s '%s' is %s", path, t->name,
			      type_str(&ty, a, sizeof a), rolename[m->decl[d].role], t->name,
			      type_str(&m->decl[d].ty, b, sizeof b));
		memcpy(interp_decl(in, d)->data, t->data, t->nbytes);
	}
	mtc_st_free(f);
}

static void
save(const char *path, const char **names, Tensor **ts, int n)
{
	mtc_st_tensor *t = xcalloc(n ? n : 1, sizeof *t);
	char err[512];

	for (int i = 0; i < n; i++) {
		t[i].name = (char *)names[i];
		t[i].dtype = ts[i]->ty.dt == I32 ? MTC_ST_I32 : MTC_ST_F32;
		t[i].rank = ts[i]->ty.sh.rank;
		memcpy(t[i].shape, ts[i]->ty.sh.d, sizeof t[i].shape);
		t[i].data = ts[i]->data;
	}
	if (mtc_st_write(path, t, n, err, sizeof err))
		fatal("%s", err);
	free(t);
}

/* The interpreter's training state as a state file holds it: params, optimizer state and
 * hyperparameters (each role in declaration order, as a module lists them), then the step
 * counter; the entries point into the interpreter's tensors. Returns the count. */
static int
state_entries(Interp *in, const Module *m, mtc_state_entry *e, int32_t *step)
{
	static const int64_t scalar[1] = { 0 };
	int n = 0;

	for (int r = R_PARAM; r <= R_HYPER; r++)
		for (int d = 0; d < m->ndecl; d++)
			if ((int)m->decl[d].role == r) {
				Tensor *t = interp_decl(in, d);
				e[n++] = (mtc_state_entry){ m->decl[d].name, t->ty.dt == I32 ? MTC_I32 : MTC_F32,
				                            t->ty.sh.rank, t->ty.sh.d, type_bytes(&t->ty), t->data };
			}
	if (m->step)
		e[n++] = (mtc_state_entry){ "opt.step", MTC_I32, 0, scalar, 4, step };
	return n;
}

double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double
median_ms(double *ms, long n)
{
	if (n <= 0)
		return 0;
	qsort(ms, (size_t)n, sizeof *ms, cmp_double);
	return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

#ifdef HAVE_CBLAS
char *openblas_get_corename(void);

/* OpenBLAS picks its kernels when it loads, by the CPU's model; a model it does not know (Debian
 * 12's 0.3.21 on a Xeon of family 6, model 207) gets the generic Prescott (SSE3) kernels,
 * three times slower than its AVX-512 ones on a ResNet step. Unless OPENBLAS_CORETYPE says
 * which, mtc-run then runs itself again with the kernels of what the CPU supports. Not under
 * valgrind, whose CPU has no AVX-512 and which would not follow the exec. */
static void
blas_kernels(char **argv)
{
	const char *ct = NULL, *pre = getenv("LD_PRELOAD"), *name;

	if (getenv("OPENBLAS_CORETYPE") || (pre && strstr(pre, "vgpreload")) ||
	    !(name = openblas_get_corename()) || strcmp(name, "Prescott") != 0)
		return;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		ct = "SkylakeX";
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		ct = "Haswell";
	if (!ct || setenv("OPENBLAS_CORETYPE", ct, 1))
		return;
	execv("/proc/self/exe", argv);    /* if it fails, on with the kernels loaded */
	unsetenv("OPENBLAS_CORETYPE");
}
#else
static void blas_kernels(char **argv) { (void)argv; }
#endif

int
main(int argc, char **argv)
{
	RunOpts o = {0};
	Src src = {0};
	FeOpts fe = {0};
	Module *m;
	Interp *in;
	const Func *f;
	char err[512];
	double *ms, med = 0, lr0 = 0;
	long nrun, step = 0;
	LrSched lrs;
	int lrd = -1, nents;
	mtc_state_entry *ents;
	int32_t step32 = 0;

	parse_args(&o, argc, argv);
	if (has_suffix(o.model, ".so")) {
		int rc;
		blas_kernels(argv);
		/* the CUDA runtime reads MTC_TRACE when the instance is made */
		if (o.trace && (remove(o.trace), setenv("MTC_TRACE", o.trace, 1)))
			fatal("--trace: %s", strerror(errno));
		rc = run_so(&o);
		if (o.trace && access(o.trace, F_OK) != 0)
			fprintf(stderr, "mtc-run: warning: no trace written to '%s': only CUDA modules "
			        "write one\n", o.trace);
		return rc;
	}
	if (o.trace)
		fatal("--trace needs a compiled CUDA module (MODEL.so), not the interpreter");
	src.name = o.model;
	if (!(src.text = slurp(o.model, &src.len)))
		fatal("cannot read '%s': %s", o.model, strerror(errno));
	fe.defines = o.defines;
	fe.ndefines = o.ndefines;
	m = has_suffix(o.model, ".mir") ? ir_parse(&src) :
	    has_suffix(o.model, ".onnx") ? onnx_compile(&src, &fe) : fe_compile(&src, &fe);
	if (!m)
		return 1;
	if (!m->fwd || (!o.forward && m->fwd->loss < 0 && !m->step)) {
		if (!o.forward && o.steps >= 0)
			fatal("%s: model %s has no 'train' statement: run it with --forward", o.model, m->name);
		o.forward = 1;
	}
	m->seed = o.seed;
	if (o.micro > 1 && (has_suffix(o.model, ".mir") || has_suffix(o.model, ".onnx") || o.forward ||
	                    m->fwd->loss < 0))
		fatal("%s: --micro-batches needs a tdsl model that trains", o.model);
	if (!o.forward && !m->step && o.micro > 1) {
		/* the model again at a k-th of its batch: micro.c's step from both (as mtc builds it) */
		FeOpts mf = fe;
		char why[64];
		Module *mu;
		snprintf(why, sizeof why, "--micro-batches=%d", o.micro);
		mf.batch_div = o.micro;
		mf.batch_why = why;
		if (!(mu = fe_compile(&src, &mf)))
			return 1;
		mu->seed = m->seed;
		if (micro_batch(m, mu, o.micro, &src))
			return 1;
		mod_free(mu);
		m->micro = o.micro;
		simplify(m->step);
	} else if (!o.forward && !m->step) {
		if (autodiff(m, &src))
			return 1;
		simplify(m->step);
	} else if (o.forward) {
		simplify(m->fwd);
	}
	f = o.forward ? m->fwd : m->step;
	if (!o.forward && f->loss < 0)
		fatal("%s: the step function has no loss", o.model);
	if (o.steps < 0)
		o.steps = 1;

	if (!(in = interp_new(m, o.seed)) && errno == EIO)
		fatal("%s: cannot set up model %s (above)", o.model, m->name);
	if (!in)
		fatal("%s: the params, inputs and optimizer state of model %s do not fit in this "
		      "machine's memory", o.model, m->name);
	if (o.params)
		load(in, m, o.params, 0);
	if (o.inputs)
		load(in, m, o.inputs, 1);
	ents = xcalloc(m->ndecl + 2, sizeof *ents);
	nents = state_entries(in, m, ents, &step32);
	if (o.load_state) {
		if (mtc_state_read(o.load_state, ents, nents, err, sizeof err))
			fatal("%s", err);
		for (int d = 0; d < m->ndecl; d++)
			if (m->decl[d].role == R_HYPER) {
				float v = *(float *)interp_decl(in, d)->data;
				if (!mtc_hyper_ok(hyper_key(m->decl[d].name), v))
					fatal("%s: %s is %g: it must be %s", o.load_state, m->decl[d].name, v,
					      mtc_hyper_range(hyper_key(m->decl[d].name)));
			}
		if (step32 < 0)
			fatal("%s: opt.step is %d: it must not be negative", o.load_state, (int)step32);
		step = step32;
	}

	lr_load(&lrs, o.lr_schedule);
	if (o.lr_schedule) {
		if ((lrd = mod_find_decl(m, "opt.lr")) < 0 || m->decl[lrd].role != R_HYPER)
			fatal("%s: --lr-schedule: model %s has no learning rate", o.model, m->name);
		lr0 = (float)m->decl[lrd].init.a;    /* the instance's initial lr, as a module's */
	}
	nrun = o.forward ? (o.steps ? 1 : 0) : o.steps;
	ms = xcalloc(nrun ? nrun : 1, sizeof *ms);
	for (long k = 0; k < nrun; k++) {
		double t0 = now_ms();
		if (o.lr_schedule)
			*(float *)interp_decl(in, lrd)->data = (float)lr_at(&lrs, step + k + 1, lr0);
		if (interp_run(in, f, err, sizeof err))
			fatal("%s: %s", o.model, err);
		ms[k] = now_ms() - t0;
		if (!o.forward)
			printf("step %ld loss %.9g\n", step + k + 1, ((float *)interp_out(in, 0)->data)[0]);
		fflush(stdout);
	}
	med = median_ms(ms, nrun);

	if (o.save_outputs) {
		/* the forward's outputs; after training, those of the last step (after its loss) */
		const Func *fo = m->fwd;
		const char **nm = xcalloc(fo->nout + 1, sizeof *nm);
		Tensor **ts = xcalloc(fo->nout + 1, sizeof *ts);
		if (!nrun)
			fatal("--save-outputs needs at least one run (--steps 0 given)");
		for (int i = 0; i < fo->nout; i++) {
			nm[i] = fo->outname[i];
			ts[i] = interp_out(in, i + !o.forward);
		}
		save(o.save_outputs, nm, ts, fo->nout);
		free(nm);
		free(ts);
	}
	if (o.save_state) {
		if (step + nrun > INT32_MAX)
			fatal("--save-state: step %ld does not fit the file's i32 counter", step + nrun);
		step32 = (int32_t)(step + nrun);
		if (mtc_state_write(o.save_state, ents, nents, err, sizeof err))
			fatal("%s", err);
	}
	free(ents);
	if (o.save_params) {
		const char **nm = xcalloc(m->ndecl, sizeof *nm);
		Tensor **ts = xcalloc(m->ndecl, sizeof *ts);
		int n = 0;
		for (int r = R_PARAM; r <= R_BUFFER; r += R_BUFFER - R_PARAM)    /* params, then buffers */
			for (int d = 0; d < m->ndecl; d++)
				if (m->decl[d].role == (Role)r) {
					nm[n] = m->decl[d].name;
					ts[n++] = interp_decl(in, d);
				}
		save(o.save_params, nm, ts, n);
		free(nm);
		free(ts);
	}
	printf("peak_bytes %lld plan_bytes 0 budget_bytes 0 step_ms %.3f\n",
	       (long long)interp_peak(in), med);
	free(ms);
	free(lrs.v);
	interp_free(in);
	mod_free(m);
	free((char *)src.text);
	return 0;
}
