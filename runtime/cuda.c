/* cuda.c: the runtime's CUDA part: libcuda and cuBLAS through dlopen, one device arena, a
 * compute stream and a copy stream each way, pinned host memory for swaps and for the params
 * and state that live there, a stream of updates on the host, events, check mode, the module
 * API.
 *
 * Nothing here links against CUDA: the few driver API types are declared below, so a module
 * loads everywhere and create() says plainly when there is no driver or no GPU. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtc/mtc-cuda.h"
#include "mtc/mtc-ops.h"
#include "mtc/mtc-rt.h"
#include "rt-impl.h"

/* ---------- the driver API, as far as we use it ---------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef void (*CUhostFn)(void *);
enum { CU_EVENT_DISABLE_TIMING = 2, CU_STREAM_NON_BLOCKING = 1,
       CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

#define DRIVER(X) \
	X(cuInit, (unsigned)) \
	X(cuDeviceGetCount, (int *)) \
	X(cuDeviceGet, (CUdevice *, int)) \
	X(cuDeviceGetAttribute, (int *, int, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice)) \
	X(cuCtxSetCurrent, (CUcontext)) \
	X(cuModuleLoadData, (CUmodule *, const void *)) \
	X(cuModuleUnload, (CUmodule)) \
	X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *)) \
	X(cuModuleGetGlobal_v2, (CUdeviceptr *, size_t *, CUmodule, const char *)) \
	X(cuMemAlloc_v2, (CUdeviceptr *, size_t)) \
	X(cuMemFree_v2, (CUdeviceptr)) \
	X(cuMemAllocHost_v2, (void **, size_t)) \
	X(cuMemFreeHost, (void *)) \
	X(cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream)) \
	X(cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream)) \
	X(cuStreamCreate, (CUstream *, unsigned)) \
	X(cuStreamDestroy_v2, (CUstream)) \
	X(cuStreamSynchronize, (CUstream)) \
	X(cuStreamWaitEvent, (CUstream, CUevent, unsigned)) \
	X(cuEventCreate, (CUevent *, unsigned)) \
	X(cuEventDestroy_v2, (CUevent)) \
	X(cuEventRecord, (CUevent, CUstream)) \
	X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
	                   unsigned, CUstream, void **, void **)) \
	X(cuLaunchHostFunc, (CUstream, CUhostFn, void *)) \
	X(cuGetErrorString, (CUresult, const char **))

static struct {
	void *lib;
#define X(name, args) CUresult (*name) args;
	DRIVER(X)
#undef X
} cu;

/* cuBLAS, when present: row-major GEMMs go through cublasSgemmStridedBatched. */
typedef struct cublasContext *cublasHandle_t;
static struct {
	void *lib;
	int (*create)(cublasHandle_t *);
	int (*destroy)(cublasHandle_t);
	int (*set_stream)(cublasHandle_t, CUstream);
	int (*sgemm)(cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
	             long long, const float *, int, long long, const float *, float *, int,
	             long long, int);
} blas;

/* cuEventElapsedTime(_v2), looked up only for a trace */
static CUresult (*elapsed)(float *, CUevent, CUevent);

/* ---------- the manifest ---------- */

typedef struct Tns {
	struct mtc_tensor_info info;
	int64_t shape[8];
	int64_t off;
	int init, use, host;      /* host: lives in pinned host memory, off is there */
	double a, b;
} Tns;

typedef struct Manifest {
	char model[128], solver[32], arch[32];
	int64_t budget, plan, peak, persist, arena, host, loss;
	int nevents, nrecords, nk, nhupd;
	char (*kname)[64];
	Tns *t[6];                /* input, param, state, output, buffer, hyper */
	int nt[6];
	struct mtc_module mod;
	struct mtc_tensor_info *info[6];
	int ok;
} Manifest;

static Manifest man;
static const char *const roles[6] = { "input", "param", "state", "output", "buffer", "hyper" };

static void
add_tensor(char *line)
{
	char role[16], name[256], dt[8];
	int rank, n, r;
	long long rg = 0;
	Tns t;
	char *p = line;

	memset(&t, 0, sizeof t);
	if (sscanf(p, "tensor %15s %255s %7s %d%n", role, name, dt, &rank, &n) != 4 || rank > 8)
		return;
	p += n;
	for (int i = 0; i < rank; i++) {
		long long d;
		if (sscanf(p, " %lld%n", &d, &n) != 1)
			return;
		t.shape[i] = d;
		p += n;
	}
	if (sscanf(p, " off %lld init %d %lf %lf use %d%n", (long long *)&t.off, &t.init, &t.a, &t.b,
	           &t.use, &n) < 5)
		return;
	p += n;
	if (sscanf(p, " range %lld%n", &rg, &n) == 1)
		p += n;
	t.host = strncmp(p, " host", 5) == 0;
	for (r = 0; r < 6 && strcmp(role, roles[r]); r++)
		;
	if (r == 6)
		return;
	/* hyperparameters as the API spells them: "opt.lr" is "lr" */
	t.info.name = strdup(r == 5 && strncmp(name, "opt.", 4) == 0 ? name + 4 : name);
	t.info.dtype = strcmp(dt, "i32") == 0 ? MTC_I32 : MTC_F32;
	t.info.rank = rank;
	t.info.numel = 1;
	for (int i = 0; i < rank; i++)
		t.info.numel *= t.shape[i];
	t.info.bytes = t.info.numel * 4;
	t.info.range = rg;
	man.t[r] = realloc(man.t[r], (man.nt[r] + 1) * sizeof *man.t[r]);
	man.t[r][man.nt[r]++] = t;
}

static int
kv(const char *line, const char *key, int64_t *v)
{
	size_t n = strlen(key);
	long long x;
	if (strncmp(line, key, n) || line[n] != ' ' || sscanf(line + n, "%lld", &x) != 1)
		return 0;
	*v = x;
	return 1;
}

static int api_step(void *, const void *const *, float *);
static int api_get(void *, int, void *);
static int api_set(void *, int, const void *);
static int api_stats(const void *, struct mtc_stats *);
static int api_set_hyper(void *, int, float);
static int api_get_hyper(void *, int, float *);
static int api_save(void *, const char *);
static int api_load(void *, const char *);
static int api_step_out(void *, const void *const *, float *, void *const *);

static void
load_manifest(void)
{
	const char *p = mtc_cu_manifest;
	char line[1024];
	int64_t v;

	if (man.ok)
		return;
	while (*p) {
		size_t n = strcspn(p, "\n");
		snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
		p += n + (p[n] == '\n');
		if (sscanf(line, "model %127s", man.model) == 1 || sscanf(line, "solver %31s", man.solver) == 1 ||
		    sscanf(line, "arch %31s", man.arch) == 1)
			continue;
		if (kv(line, "budget", &man.budget) || kv(line, "plan", &man.plan) ||
		    kv(line, "peak", &man.peak) || kv(line, "persist", &man.persist) ||
		    kv(line, "arena", &man.arena) || kv(line, "host", &man.host) ||
		    kv(line, "loss", &man.loss))
			continue;
		if (kv(line, "events", &v)) {
			man.nevents = (int)v;
		} else if (kv(line, "records", &v)) {
			man.nrecords = (int)v;
		} else if (kv(line, "hostupd", &v)) {
			man.nhupd = (int)v;
		} else if (strncmp(line, "kernel ", 7) == 0) {
			man.kname = realloc(man.kname, (man.nk + 1) * sizeof *man.kname);
			snprintf(man.kname[man.nk++], 64, "%.63s", line + 7);
		} else if (strncmp(line, "tensor ", 7) == 0) {
			add_tensor(line);
		}
	}
	for (int r = 0; r < 6; r++) {
		man.info[r] = calloc(man.nt[r] + 1, sizeof *man.info[r]);
		for (int i = 0; i < man.nt[r]; i++) {
			man.info[r][i] = man.t[r][i].info;
			man.info[r][i].shape = man.t[r][i].shape;
		}
	}
	man.mod = (struct mtc_module){
		.abi = MTC_ABI, .name = man.model, .target = "cuda", .solver = man.solver,
		.ninputs = man.nt[0], .noutputs = man.nt[3], .nparams = man.nt[1], .nstate = man.nt[2],
		.inputs = man.info[0], .outputs = man.info[3], .params = man.info[1], .state = man.info[2],
		.trains = man.loss >= 0, .plan_bytes = man.plan, .arena_bytes = man.arena,
		.peak_bytes = man.peak, .budget_bytes = man.budget,
		.create = mtc_cu_create, .step = api_step, .forward = mtc_cu_forward,
		.destroy = mtc_cu_destroy, .error = mtc_cu_error, .get = api_get, .set = api_set,
		.stats = api_stats, .nbuffers = man.nt[4], .buffers = man.info[4],
		.nhypers = man.nt[5], .hypers = man.info[5],
		.set_hyper = api_set_hyper, .get_hyper = api_get_hyper,
		.save = api_save, .load = api_load, .step_out = api_step_out,
	};
	for (int i = 0; i < man.nt[4]; i++)
		man.mod.buffer_bytes += man.t[4][i].info.bytes;
	for (int i = 0; i < man.nt[1]; i++)
		man.mod.param_bytes += man.t[1][i].info.bytes;
	for (int r = 2; r <= 5; r += 3)      /* the optimizer's state and its settings */
		for (int i = 0; i < man.nt[r]; i++)
			man.mod.state_bytes += man.t[r][i].info.bytes;
	man.ok = 1;
}

/* The tables live while the module is loaded: freed when it is unloaded (dlclose or exit),
 * so a leak checker sees every allocation returned and a reload parses the manifest again. */
__attribute__((destructor)) static void
unload_manifest(void)
{
	for (int r = 0; r < 6; r++) {
		for (int i = 0; i < man.nt[r]; i++)
			free((char *)man.t[r][i].info.name);
		free(man.t[r]);
		free(man.info[r]);
	}
	free(man.kname);
	memset(&man, 0, sizeof man);
}

const struct mtc_module *
mtc_cu_module(void)
{
	load_manifest();
	return &man.mod;
}

/* ---------- an instance ---------- */

typedef struct Live {
	int64_t off, bytes;
} Live;

/* What an update on the host reads when its stream runs it: its operands' pinned host offsets,
 * and the hyperparameters' values as they were when the step queued it (the instance's
 * settings of that step; hv[k] for operand k tagged MTC_CU_HYPER). */
typedef struct Hupd {
	struct mtc_cu *c;
	int kind, nargs;
	int64_t n;
	uint64_t off[10];
	float hv[10];
	mtc_adam k;               /* Adam's scalars of this step, computed once per update */
} Hupd;

struct mtc_cu {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction *fn;
	CUdeviceptr mem;          /* persistent zone + arena */
	char *host;               /* pinned: swapped tensors */
	CUstream s[4];            /* compute, copies to the host, the host's updates, copies in */
	CUevent *ev;              /* per swap: its completion */
	CUevent *rec;             /* compute events: a position of the compute stream a copy waits for */
	Hupd *hu;                 /* per update on the host: its closure */
	int hubad;                /* an update on the host met Adam's counter below 1 */
	CUdeviceptr errp;         /* the kernels' mtc_err: a label or id out of range (0: none) */
	float *hyv;               /* the hyperparameters' settings, as uploaded (updates on the host
	                           * read them here: the host cannot read device memory) */
	cublasHandle_t blas;
	mtc_pool hpool;           /* the threads of updates on the host (MTC_THREADS, else every
	                           * online core), which split each update's elements */
	int check;
	CUevent drain[4];         /* check mode: streams 1-3's positions before a poisoning, and
	                           * the compute stream's after it */
	int64_t live, peak, steps;
	Live *lv;
	int nlv, caplv;
	int status;
	char err[512];
	void *const *out;         /* during step_out: the caller's output buffers */
	/* MTC_TRACE=FILE: a timing event before and after every kernel, copy and update on the
	 * host of a step (pool of 2 per span, reused each step), the file rewritten after it */
	char *trace;
	CUevent t0, *pool;
	int npool, nsp, insp;
	struct Span {
		int stream, what, blas;
		int64_t bytes;
		double work;          /* a kernel's threads, a GEMM's FLOPs */
		double hb, he;        /* the host's issue of it: seconds from the step's start */
	} *sp;                    /* what: kernel or SP_* */
	/* MTC_TRACE_HOLD=S: the compute stream held behind a host function until the host has
	 * issued the whole step (or MTC_TRACE_HOLD seconds passed), so that the spans time the
	 * GPU's work alone, not the launch gaps; the host's issue of each span is timed too */
	double hold, h0, hrel;
	int held, hstate;         /* hstate: 0 holding, 1 released by the host, 2 by the timeout */
	pthread_mutex_t hmu;
	pthread_cond_t hcv;
};

static void hold_release(mtc_cu *c);

/* Record the first error of a call; later ones are usually consequences. */
static int
fail(mtc_cu *c, int code, const char *fmt, ...)
{
	va_list ap;

	if (c->status)
		return code;
	c->status = code;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return code;
}

static const char *
cuerr(CUresult r)
{
	const char *s = NULL;
	if (cu.cuGetErrorString)
		cu.cuGetErrorString(r, &s);
	return s ? s : "unknown CUDA error";
}

/* A driver call that failed: an out-of-memory is MTC_ENOMEM, the rest MTC_ENODEV. */
#define CK(c, call, what) \
	do { CUresult r_ = (call); \
	     if (r_) return fail((c), r_ == 2 ? MTC_ENOMEM : MTC_ENODEV, "%s: %s (CUDA error %d)", \
	                         (what), cuerr(r_), r_); } while (0)

/* libcuda.so.1 through dlopen; 0 or a status with the thread's last error set. */
static int
open_driver(void)
{
	if (cu.lib)
		return 0;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return mtc_set_last_error(MTC_ENODEV, "no CUDA driver (libcuda.so.1) found: %s", dlerror());
#define X(name, args) \
	if (!(*(void **)&cu.name = dlsym(lib, #name))) { \
		dlclose(lib); \
		return mtc_set_last_error(MTC_ENODEV, "the CUDA driver lacks %s; it is too old", #name); \
	}
	DRIVER(X)
#undef X
	cu.lib = lib;
	return 0;
}

/* cuBLAS is optional: without it the generated tiled kernel runs. MTC_NO_CUBLAS=1 skips it. */
static void
open_blas(void)
{
	static const char *const names[] = { "libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL };
	const char *no = getenv("MTC_NO_CUBLAS");

	if (blas.lib || (no && *no && strcmp(no, "0")))
		return;
	for (int i = 0; names[i] && !blas.lib; i++)
		blas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!blas.lib)
		return;
	*(void **)&blas.create = dlsym(blas.lib, "cublasCreate_v2");
	*(void **)&blas.destroy = dlsym(blas.lib, "cublasDestroy_v2");
	*(void **)&blas.set_stream = dlsym(blas.lib, "cublasSetStream_v2");
	*(void **)&blas.sgemm = dlsym(blas.lib, "cublasSgemmStridedBatched");
	if (!blas.create || !blas.destroy || !blas.set_stream || !blas.sgemm) {
		dlclose(blas.lib);
		memset(&blas, 0, sizeof blas);
	}
}

/* Deterministic initial values, shared with the interpreter and the C runtime (init.c). */
void mtc_init_f32(float *p, int64_t n, int kind, double a, double b, const char *name, uint64_t seed);

static int
upload(mtc_cu *c, int64_t off, const void *src, int64_t bytes)
{
	CK(c, cu.cuMemcpyHtoDAsync_v2(c->mem + off, src, bytes, c->s[0]), "copying to the GPU");
	CK(c, cu.cuStreamSynchronize(c->s[0]), "copying to the GPU");
	return 0;
}

/* Params, buffers and hyperparameters from their initializers, state zeroed (i32 buffers,
 * counters, too); in pinned host memory for those living there. */
static int
init_tensors(mtc_cu *c)
{
	for (int r = 1; r <= 5; r++)
		for (int i = 0; r != 3 && i < man.nt[r]; i++) {
			Tns *t = &man.t[r][i];
			float *h = t->host ? (float *)(c->host + t->off) : calloc(t->info.numel ? t->info.numel : 1, 4);
			int rc = 0;
			if (!h)
				return fail(c, MTC_ENOMEM, "out of host memory");
			if (t->host)
				memset(h, 0, (size_t)t->info.bytes);
			if (t->init == 6)       /* INIT_FILE: the values embedded at offset a */
				memcpy(h, mtc_cu_data + (int64_t)t->a, (size_t)t->info.bytes);
			else if (r != 2 && t->init && t->info.dtype == MTC_F32)
				mtc_init_f32(h, t->info.numel, t->init, t->a, t->b, t->info.name, 0);
			if (r == 5)
				c->hyv[i] = h[0];
			if (!t->host) {
				rc = upload(c, t->off, h, t->info.bytes);
				free(h);
			}
			if (rc)
				return rc;
		}
	return 0;
}

static int
open_instance(mtc_cu *c)
{
	int n = 0, major = 0, minor = 0;
	CUresult r;

	if ((r = cu.cuInit(0)))
		return fail(c, MTC_ENODEV, "no usable GPU: cuInit failed: %s (CUDA error %d)", cuerr(r), r);
	CK(c, cu.cuDeviceGetCount(&n), "counting GPUs");
	if (n < 1)
		return fail(c, MTC_ENODEV, "no GPU found");
	CK(c, cu.cuDeviceGet(&c->dev, 0), "opening GPU 0");
	CK(c, cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev), "creating a context");
	CK(c, cu.cuCtxSetCurrent(c->ctx), "creating a context");
	cu.cuDeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, c->dev);
	cu.cuDeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, c->dev);
	/* the cubin when it was built for this GPU, else the PTX, which the driver compiles */
	if (!(mtc_cu_cubin_len > 0 && mtc_cu_cubin_arch == 10 * major + minor &&
	      cu.cuModuleLoadData(&c->mod, mtc_cu_cubin) == 0) &&
	    (r = cu.cuModuleLoadData(&c->mod, mtc_cu_ptx)))
		return fail(c, MTC_ENODEV, "loading the kernels (PTX for %s) on a GPU of compute "
		            "capability %d.%d: %s (CUDA error %d); PTX runs on that architecture and "
		            "newer ones with a driver as new as the CUDA that built it", man.arch, major,
		            minor, cuerr(r), r);
	c->fn = calloc(man.nk + 1, sizeof *c->fn);
	c->ev = calloc(man.nevents + 1, sizeof *c->ev);
	c->rec = calloc(man.nrecords + 1, sizeof *c->rec);
	c->hu = calloc(man.nhupd + 1, sizeof *c->hu);
	c->hyv = calloc(man.nt[5] + 1, sizeof *c->hyv);
	if (!c->fn || !c->ev || !c->rec || !c->hu || !c->hyv)
		return fail(c, MTC_ENOMEM, "out of host memory");
	for (int i = 0; i < man.nk; i++)
		CK(c, cu.cuModuleGetFunction(&c->fn[i], c->mod, man.kname[i]), man.kname[i]);
	/* the range flag, read after each call only where an input holds labels or ids */
	for (int i = 0; i < man.nt[0]; i++)
		if (man.t[0][i].info.range > 0) {
			size_t sz = 0;
			if (cu.cuModuleGetGlobal_v2(&c->errp, &sz, c->mod, "mtc_err") || sz < 4 * sizeof(long long))
				c->errp = 0;
			break;
		}
	if ((r = cu.cuMemAlloc_v2(&c->mem, man.persist + man.arena > 0 ? man.persist + man.arena : 1)))
		return fail(c, MTC_ENOMEM, "cannot allocate %lld bytes of GPU memory for the plan: %s",
		            (long long)(man.persist + man.arena), cuerr(r));
	if (man.host > 0 && (r = cu.cuMemAllocHost_v2((void **)&c->host, man.host)))
		return fail(c, MTC_ENOMEM, "cannot allocate %lld bytes of pinned host memory: %s",
		            (long long)man.host, cuerr(r));
	for (int i = 0; i < 4; i++)
		CK(c, cu.cuStreamCreate(&c->s[i], CU_STREAM_NON_BLOCKING), "creating a stream");
	for (int i = 0; i < man.nevents; i++)
		CK(c, cu.cuEventCreate(&c->ev[i], CU_EVENT_DISABLE_TIMING), "creating an event");
	for (int i = 0; i < man.nrecords; i++)
		CK(c, cu.cuEventCreate(&c->rec[i], CU_EVENT_DISABLE_TIMING), "creating an event");
	for (int i = 0; c->check && i < 4; i++)
		CK(c, cu.cuEventCreate(&c->drain[i], CU_EVENT_DISABLE_TIMING), "creating an event");
	if (mtc_pool_start(&c->hpool, man.nhupd > 0 ? mtc_thread_count() : 1)) {
		c->hpool.thr = NULL;
		return fail(c, MTC_ENOMEM, "cannot start the threads of updates on the host");
	}
	if (c->trace) {
		if (!elapsed)
			*(void **)&elapsed = dlsym(cu.lib, "cuEventElapsedTime_v2");
		if (!elapsed)
			*(void **)&elapsed = dlsym(cu.lib, "cuEventElapsedTime");
		if (!elapsed || cu.cuEventCreate(&c->t0, 0))
			c->trace = NULL;
	}
	open_blas();
	if (blas.lib && (blas.create(&c->blas) || blas.set_stream(c->blas, c->s[0])))
		c->blas = NULL;
	/* check mode: every byte poisoned with NaN until written */
	if (c->check)
		CK(c, cu.cuMemsetD32Async(c->mem, 0x7fc00000u, (man.persist + man.arena) / 4, c->s[0]),
		   "poisoning");
	return init_tensors(c);
}

void
mtc_cu_destroy(void *p)
{
	mtc_cu *c = p;

	if (!c)
		return;
	hold_release(c);
	if (cu.lib && c->ctx) {
		cu.cuCtxSetCurrent(c->ctx);
		for (int i = 0; i < 4; i++)
			if (c->s[i])
				cu.cuStreamSynchronize(c->s[i]);
		if (c->blas)
			blas.destroy(c->blas);
		for (int i = 0; c->ev && i < man.nevents; i++)
			if (c->ev[i])
				cu.cuEventDestroy_v2(c->ev[i]);
		for (int i = 0; c->rec && i < man.nrecords; i++)
			if (c->rec[i])
				cu.cuEventDestroy_v2(c->rec[i]);
		for (int i = 0; i < c->npool; i++)
			cu.cuEventDestroy_v2(c->pool[i]);
		for (int i = 0; i < 4; i++)
			if (c->drain[i])
				cu.cuEventDestroy_v2(c->drain[i]);
		if (c->t0)
			cu.cuEventDestroy_v2(c->t0);
		for (int i = 0; i < 4; i++)
			if (c->s[i])
				cu.cuStreamDestroy_v2(c->s[i]);
		if (c->host)
			cu.cuMemFreeHost(c->host);
		if (c->mem)
			cu.cuMemFree_v2(c->mem);
		if (c->mod)
			cu.cuModuleUnload(c->mod);
		cu.cuDevicePrimaryCtxRelease_v2(c->dev);
	}
	mtc_pool_stop(&c->hpool);
	free(c->fn);
	free(c->ev);
	free(c->rec);
	free(c->hu);
	free(c->hyv);
	free(c->lv);
	free(c->pool);
	free(c->sp);
	pthread_mutex_destroy(&c->hmu);
	pthread_cond_destroy(&c->hcv);
	free(c);
}

void *
mtc_cu_create(void)
{
	mtc_cu *c;
	const char *chk = getenv("MTC_CHECK"), *hold;
	int rc;

	load_manifest();
	if ((rc = open_driver()))
		return NULL;
	if (!(c = calloc(1, sizeof *c))) {
		mtc_set_last_error(MTC_ENOMEM, "out of host memory");
		return NULL;
	}
	c->check = chk && *chk && strcmp(chk, "0");
	c->trace = getenv("MTC_TRACE");
	if (c->trace && !*c->trace)
		c->trace = NULL;
	if (c->trace && (hold = getenv("MTC_TRACE_HOLD")) && *hold) {
		c->hold = strtod(hold, NULL);
		if (!(c->hold > 0 && c->hold <= 60))
			c->hold = 0;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* hold_fn's deadline is monotonic */
	pthread_mutex_init(&c->hmu, NULL);
	pthread_cond_init(&c->hcv, &ca);
	pthread_condattr_destroy(&ca);
	if (open_instance(c)) {
		mtc_set_last_error(c->status, "%s: %s", man.model, c->err);
		mtc_cu_destroy(c);
		return NULL;
	}
	return c;
}

const char *
mtc_cu_error(const void *p)
{
	const mtc_cu *c = p;
	return c ? c->err : mtc_rt_last_error();
}

/* ---------- what the schedules call ---------- */

uint64_t
mtc_cu_base(mtc_cu *c)
{
	return c->mem;
}

/* ---------- the trace (MTC_TRACE=FILE) ---------- */

/* The hold's host function, first on the compute stream: it returns once the host released
 * it (at the step's end of issue) or after c->hold seconds. */
static void
hold_fn(void *arg)
{
	mtc_cu *c = arg;
	double until = mtc_now() + c->hold;
	struct timespec t;

	t.tv_sec = (time_t)until;
	t.tv_nsec = (long)((until - (double)t.tv_sec) * 1e9);
	pthread_mutex_lock(&c->hmu);
	while (!c->hstate)
		if (pthread_cond_timedwait(&c->hcv, &c->hmu, &t) && !c->hstate)
			c->hstate = 2;
	pthread_mutex_unlock(&c->hmu);
}

static void
hold_release(mtc_cu *c)
{
	if (!c->held)
		return;
	c->held = 0;
	pthread_mutex_lock(&c->hmu);
	c->hrel = mtc_now() - c->h0;
	if (!c->hstate)
		c->hstate = 1;
	pthread_cond_signal(&c->hcv);
	pthread_mutex_unlock(&c->hmu);
}

/* Open a span on stream s (a kernel fn >= 0, or SP_*); its index, -1 when not tracing. */
enum { SP_OUT = -1, SP_IN = -2, SP_HOST = -3 };
static int
span_begin(mtc_cu *c, int s, int what, int64_t bytes)
{
	if (!c->trace || c->insp)
		return -1;
	if (2 * c->nsp + 2 > c->npool) {
		int n = c->npool ? 2 * c->npool : 256;
		CUevent *p = realloc(c->pool, n * sizeof *p);
		struct Span *q = realloc(c->sp, n / 2 * sizeof *q);
		if (p)
			c->pool = p;
		if (q)
			c->sp = q;
		if (!p || !q)
			return -1;
		for (int i = c->npool; i < n; i++)
			if (cu.cuEventCreate(&c->pool[i], 0)) {
				c->npool = i & ~1;
				return -1;
			}
		c->npool = n;
	}
	c->sp[c->nsp] = (struct Span){ s, what, 0, bytes, 0, 0, 0 };
	if (cu.cuEventRecord(c->pool[2 * c->nsp], c->s[s]))
		return -1;
	c->insp = 1;
	c->sp[c->nsp].hb = mtc_now() - c->h0;
	return c->nsp++;
}

static void
span_end(mtc_cu *c, int k)
{
	if (k < 0)
		return;
	c->sp[k].he = mtc_now() - c->h0;
	c->insp = 0;
	if (cu.cuEventRecord(c->pool[2 * k + 1], c->s[c->sp[k].stream]))
		c->nsp = k;
}

/* After a traced step, its streams synchronized: the spans as Chrome trace-event JSON (open it
 * in Perfetto or chrome://tracing), one row per stream, microseconds from the step's start. */
static void
write_trace(mtc_cu *c)
{
	static const char *const sname[4] = { "compute", "copies to the host", "updates on the host",
	                                      "copies in" };
	FILE *fp;
	float a, b;

	if (!c->trace || !elapsed || !(fp = fopen(c->trace, "w")))
		return;
	fprintf(fp, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": \"%s\", \"step\": %lld, "
	        "\"peak_bytes\": %lld, \"budget_bytes\": %lld, \"hold\": \"%s\", \"issue_us\": %.3f}, "
	        "\"traceEvents\": [\n", man.model, (long long)c->steps, (long long)(man.persist + c->peak),
	        (long long)man.budget, !c->hold ? "none" : c->hstate == 1 ? "held" : "timed out",
	        1e6 * c->hrel);
	for (int s = 0; s < 4; s++)
		fprintf(fp, "{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
		        "\"args\": {\"name\": \"%s\"}},\n", s, sname[s]);
	for (int k = 0; k < c->nsp; k++) {
		const struct Span *p = &c->sp[k];
		const char *nm = p->what >= 0 ? man.kname[p->what] : p->what == SP_OUT ? "swap_out"
		                 : p->what == SP_IN ? "swap_in" : "update on the host";
		const char *via = p->blas ? " (cuBLAS)" : "";
		if (elapsed(&a, c->t0, c->pool[2 * k]) || elapsed(&b, c->t0, c->pool[2 * k + 1]))
			continue;
		fprintf(fp, "{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"name\": \"%s%s\", \"ts\": %.3f, "
		        "\"dur\": %.3f, \"args\": {\"seq\": %d, \"bytes\": %lld, \"work\": %.0f, "
		        "\"issue_at\": %.3f, \"issue\": %.3f}},\n", p->stream, nm, via, 1e3 * a,
		        1e3 * (b - a), k, (long long)p->bytes, p->work, 1e6 * p->hb, 1e6 * (p->he - p->hb));
	}
	fprintf(fp, "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": "
	        "\"%s step\"}}\n]}\n", man.model);
	fclose(fp);
}

int
mtc_cu_launch(mtc_cu *c, int fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
              unsigned bz, uint64_t *args, int nargs)
{
	void *small[16], **pa = nargs <= 16 ? small : malloc(nargs * sizeof *pa);
	CUresult r;

	if (fn < 0 || fn >= man.nk || nargs < 0 || !pa)
		return fail(c, MTC_EINVAL, "bad launch of kernel %d", fn);
	for (int i = 0; i < nargs; i++)
		pa[i] = &args[i];
	int sp = span_begin(c, 0, fn, 0);
	if (sp >= 0)
		c->sp[sp].work = (double)gx * gy * gz * bx * by * bz;
	r = cu.cuLaunchKernel(c->fn[fn], gx, gy, gz, bx, by, bz, 0, c->s[0], pa, NULL);
	span_end(c, sp);
	if (pa != small)
		free(pa);
	if (r)
		return fail(c, MTC_ENODEV, "launching %s: %s (CUDA error %d)", man.kname[fn], cuerr(r), r);
	return 0;
}

int
mtc_cu_gemm(mtc_cu *c, int fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
            unsigned bz, uint64_t *args, int ta, int tb, int64_t m, int64_t n, int64_t k,
            int64_t batch, int64_t sa, int64_t sb, int64_t sc)
{
	static const float one = 1, zero = 0;
	int sp, ok;

	/* Row-major C = A B is column-major C^T = B^T A^T: swap the operands. */
	if (c->blas && batch < 1LL << 31) {
		if ((sp = span_begin(c, 0, fn, 0)) >= 0) {
			c->sp[sp].blas = 1;
			c->sp[sp].work = 2.0 * (double)m * (double)n * (double)k * (double)batch;
		}
		ok = blas.sgemm(c->blas, tb, ta, (int)n, (int)m, (int)k, &one, (const float *)args[2],
		                tb ? (int)k : (int)n, sb, (const float *)args[1], ta ? (int)m : (int)k,
		                sa, &zero, (float *)args[0], (int)n, sc, (int)batch) == 0;
		span_end(c, sp);
		if (ok)
			return 0;
	}
	return mtc_cu_launch(c, fn, gx, gy, gz, bx, by, bz, args, 3);
}

int
mtc_cu_swap(mtc_cu *c, int out, int64_t dev, int64_t host, int64_t bytes, int ev, int after,
            int cwait)
{
	CUstream s = c->s[out ? 1 : 3];

	if (ev < 0 || ev >= man.nevents || after < -1 || after >= man.nrecords || cwait < -1 ||
	    cwait >= man.nevents || host < 0 || host + bytes > man.host)
		return fail(c, MTC_EINVAL, "bad swap (event %d after %d)", ev, after);
	if (after >= 0)
		CK(c, cu.cuStreamWaitEvent(s, c->rec[after], 0), "ordering a swap");
	if (cwait >= 0)
		CK(c, cu.cuStreamWaitEvent(s, c->ev[cwait], 0), "ordering a swap");
	int sp = span_begin(c, out ? 1 : 3, out ? SP_OUT : SP_IN, bytes);
	if (out)
		CK(c, cu.cuMemcpyDtoHAsync_v2(c->host + host, c->mem + dev, bytes, s), "swap out");
	else
		CK(c, cu.cuMemcpyHtoDAsync_v2(c->mem + dev, c->host + host, bytes, s), "swap in");
	span_end(c, sp);
	CK(c, cu.cuEventRecord(c->ev[ev], s), "recording a swap");
	return 0;
}

/* The host function of an update on the host: <mtc/mtc-ops.h>'s formulas, as every target's
 * kernels and the interpreter run them, on the pinned homes and the gradient sent there,
 * elements [lo, hi) of part tid of nt (an update is elementwise: any split gives the same
 * bits). */
static void
host_part(const uint64_t *args, int tid, int nt)
{
	Hupd *u = (Hupd *)(uintptr_t)args[0];
	char *h = u->c->host;
	float *w = (float *)(h + u->off[0]);
	int64_t lo = u->n * tid / nt, hi = u->n * (tid + 1) / nt;

	switch (u->kind) {
	case MTC_CU_SGD: {
		const float *g = (const float *)(h + u->off[1]);
		for (int64_t i = lo; i < hi; i++)
			mtc_sgd_update(w + i, g[i], u->hv[2], u->hv[3]);
		break;
	}
	case MTC_CU_SGDM: {
		float *m = (float *)(h + u->off[1]);
		const float *g = (const float *)(h + u->off[2]);
		for (int64_t i = lo; i < hi; i++)
			mtc_sgdm_update(w + i, m + i, g[i], u->hv[3], u->hv[4], u->hv[5]);
		break;
	}
	default: {
		float *m = (float *)(h + u->off[1]), *v = (float *)(h + u->off[2]);
		const float *g = (const float *)(h + u->off[3]);
		for (int64_t i = lo; i < hi; i++)
			if (u->kind == MTC_CU_ADAMW)
				mtc_adamw_update(w + i, m + i, v + i, g[i], &u->k);
			else
				mtc_adam_update(w + i, m + i, v + i, g[i], &u->k);
	}
	}
}

/* On the CUDA driver's callback thread, in stream order: the update split over the pool
 * (one thread below the pool's threshold of work: about 32 768 elements of Adam). */
static void
host_update(void *arg)
{
	Hupd *u = arg;
	uint64_t a[1] = { (uint64_t)(uintptr_t)u };

	if (u->kind == MTC_CU_ADAM || u->kind == MTC_CU_ADAMW) {
		int32_t t = *(const int32_t *)(u->c->host + u->off[4]);
		u->k = mtc_adam_scalars(t, u->hv[5], u->hv[6], u->hv[7], u->hv[8],
		                        u->kind == MTC_CU_ADAMW ? u->hv[9] : 0);
		if (u->k.bad) {
			u->c->hubad = 1;
			return;
		}
	}
	/* work: the words it touches (SGD 3 per element, momentum 5, Adam 8), as mtc_run counts */
	mtc_pool_run(&u->c->hpool, host_part, a,
	             u->n * (u->kind == MTC_CU_SGD ? 3 : u->kind == MTC_CU_SGDM ? 5 : 8));
}

int
mtc_cu_host_update(mtc_cu *c, int kind, int out, int in, int64_t n, const uint64_t *off, int nargs,
                   int slot)
{
	static const int want[] = { 0, 4, 6, 9, 10 };     /* operands per kind */
	/* the operands in host memory (tensors), then the hyperparameters (scalars) */
	static const int ntens[] = { 0, 2, 3, 5, 5 };
	Hupd *u;

	if (slot < 0 || slot >= man.nhupd || kind < MTC_CU_SGD || kind > MTC_CU_ADAMW ||
	    nargs != want[kind] || out < -1 || out >= man.nevents || in < -1 || in >= man.nevents)
		return fail(c, MTC_EINVAL, "bad update on the host (%d)", slot);
	u = &c->hu[slot];
	memset(u, 0, sizeof *u);
	u->c = c, u->kind = kind, u->nargs = nargs, u->n = n;
	for (int k = 0; k < nargs; k++) {
		int hyp = (off[k] & MTC_CU_HYPER) != 0;
		uint64_t i = off[k] & ~(uint64_t)MTC_CU_HYPER;
		if (k < ntens[kind] ? hyp || i >= (uint64_t)man.host || (k == 4 ? 4 : n * 4) >
		                                   man.host - (int64_t)i
		                    : !hyp || i >= (uint64_t)man.nt[5])
			return fail(c, MTC_EINVAL, "bad update on the host (%d): operand %d outside host memory "
			            "or not a hyperparameter", slot, k);
		u->off[k] = i;
		if (hyp)
			u->hv[k] = c->hyv[i];
	}
	if (out >= 0)
		CK(c, cu.cuStreamWaitEvent(c->s[2], c->ev[out], 0), "ordering an update on the host");
	if (in >= 0)
		CK(c, cu.cuStreamWaitEvent(c->s[2], c->ev[in], 0), "ordering an update on the host");
	int sp = span_begin(c, 2, SP_HOST, n * 4);
	CK(c, cu.cuLaunchHostFunc(c->s[2], host_update, u), "queueing an update on the host");
	span_end(c, sp);
	return 0;
}

int
mtc_cu_record(mtc_cu *c, int k)
{
	if (k < 0 || k >= man.nrecords)
		return fail(c, MTC_EINVAL, "bad record (event %d)", k);
	CK(c, cu.cuEventRecord(c->rec[k], c->s[0]), "recording a kernel's completion");
	return 0;
}

int
mtc_cu_wait(mtc_cu *c, int ev)
{
	if (ev < 0 || ev >= man.nevents)
		return fail(c, MTC_EINVAL, "bad wait (event %d)", ev);
	CK(c, cu.cuStreamWaitEvent(c->s[0], c->ev[ev], 0), "waiting for a swap");
	return 0;
}

static int
dying(const int64_t *d, int n, int64_t off)
{
	for (int i = 0; i < n; i++)
		if (d[2 * i] == off)
			return 1;
	return 0;
}

int
mtc_cu_born(mtc_cu *c, int64_t off, int64_t bytes, const int64_t *dy, int ndy)
{
	c->live += bytes;
	if (c->live > c->peak)
		c->peak = c->live;
	if (!c->check || bytes <= 0)
		return 0;
	for (int i = 0; i < c->nlv; i++)
		if (c->lv[i].off < off + bytes && off < c->lv[i].off + c->lv[i].bytes &&
		    !dying(dy, ndy, c->lv[i].off))
			return fail(c, MTC_ECHECK, "check: a result at [%lld, +%lld) overlaps the live "
			            "value at [%lld, +%lld)", (long long)off, (long long)bytes,
			            (long long)c->lv[i].off, (long long)c->lv[i].bytes);
	if (c->nlv == c->caplv) {
		Live *n = realloc(c->lv, (c->caplv = c->caplv ? 2 * c->caplv : 64) * sizeof *n);
		if (!n)
			return fail(c, MTC_ENOMEM, "out of host memory");
		c->lv = n;
	}
	c->lv[c->nlv++] = (Live){ off, bytes };
	return 0;
}

/* Poison [lo, hi) on the compute stream, after the kernels that read it and after everything
 * the other streams were given so far: a copy still reading these bytes (a swap_out or a
 * swap_home whose source dies at its op) must not see the poison, as the C runtime drains
 * its DMA engine first. And before everything the other streams are given later: a copy in
 * that waits for an event the compute stream recorded before the poison (the end of the
 * bytes' last reader) would otherwise race with it and could find its new value poisoned
 * (seen on an H200: gpt, ResNet, skipnet NaN or wrong in check mode alone). Check mode only,
 * so the cost of the barriers does not matter. */
static int
poison(mtc_cu *c, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return 0;
	for (int i = 1; i < 4; i++) {
		CK(c, cu.cuEventRecord(c->drain[i - 1], c->s[i]), "poisoning");
		CK(c, cu.cuStreamWaitEvent(c->s[0], c->drain[i - 1], 0), "poisoning");
	}
	CK(c, cu.cuMemsetD32Async(c->mem + lo, 0x7fc00000u, (hi - lo) / 4, c->s[0]), "poisoning");
	CK(c, cu.cuEventRecord(c->drain[3], c->s[0]), "poisoning");
	for (int i = 1; i < 4; i++)
		CK(c, cu.cuStreamWaitEvent(c->s[i], c->drain[3], 0), "poisoning");
	return 0;
}

int
mtc_cu_dead(mtc_cu *c, int64_t off, int64_t bytes, const int64_t *dy, int ndy)
{
	for (int k = 0; k < ndy; k++) {
		int64_t lo = dy[2 * k], hi = lo + dy[2 * k + 1];
		int born = 0;
		c->live -= dy[2 * k + 1];
		if (!c->check)
			continue;
		for (int i = 0; i < c->nlv && !born; i++)
			if (c->lv[i].off == lo && c->lv[i].bytes == hi - lo) {
				c->lv[i] = c->lv[--c->nlv];
				born = 1;
			}
		/* Only bytes a result took are poisoned: a dying view of a param or of state (a
		 * reshape) shares its bytes, which live on. bytes < 0: an op inside a fused group,
		 * whose kernel already wrote later members' results, maybe into these bytes. */
		if (!born || lo < man.persist || bytes < 0)
			continue;
		/* the result may have taken some of these bytes */
		if (bytes > 0 && off < hi && lo < off + bytes) {
			if (poison(c, lo, off) || poison(c, off + bytes, hi))
				return c->status;
		} else if (poison(c, lo, hi)) {
			return c->status;
		}
	}
	return 0;
}

/* ---------- the module API ---------- */

/* Upload the inputs the function reads (use bit fn); the others may be NULL. */
static int
begin(mtc_cu *c, const void *const *in, int fn)
{
	if (!c)
		return mtc_set_last_error(MTC_EINVAL, "NULL instance");
	c->status = 0;
	c->err[0] = 0;
	c->live = 0;
	c->nlv = 0;
	c->hubad = 0;
	if (cu.cuCtxSetCurrent(c->ctx))
		return fail(c, MTC_ENODEV, "cannot make the GPU context current");
	c->nsp = c->insp = 0;
	if (c->trace)
		c->h0 = mtc_now();
	if (c->trace && !c->hold && cu.cuEventRecord(c->t0, c->s[0]))
		c->trace = NULL;
	for (int i = 0; i < man.nt[0]; i++) {
		if (!(man.t[0][i].use & 1 << fn))
			continue;
		if (!in || !in[i])
			return fail(c, MTC_EINVAL, "input %s is NULL", man.t[0][i].info.name);
		if (upload(c, man.t[0][i].off, in[i], man.t[0][i].info.bytes))
			return c->status;
	}
	/* the hold: after the inputs' uploads (which wait for the compute stream) */
	if (c->trace && c->hold) {
		c->hstate = 0;
		c->hrel = 0;
		c->held = 1;
		CK(c, cu.cuLaunchHostFunc(c->s[0], hold_fn, c), "holding the compute stream");
		c->h0 = mtc_now();
		if (cu.cuEventRecord(c->t0, c->s[0]))
			c->trace = NULL;
	}
	return 0;
}

/* Finish a schedule: wait for both streams, turn a failure into the call's status. */
static int
finish(mtc_cu *c, int rc)
{
	static const char *const what[] = { "an id", "embedding: id", "cross_entropy: label",
	                                    "cross_entropy_grad: label" };
	CUresult r = 0;
	long long e[4] = { 0 };  /* the kernels' range flag (the prelude's mtc_range) */

	hold_release(c);
	/* read behind the schedule on the compute stream: the waits below cover it */
	if (c->errp && !rc)
		r = cu.cuMemcpyDtoHAsync_v2(e, c->errp, sizeof e, c->s[0]);
	for (int i = 0; i < 4; i++) {
		CUresult ri = cu.cuStreamSynchronize(c->s[i]);
		if (!r)
			r = ri;
	}
	if (rc)
		return c->status ? c->status : rc;
	if (r)
		return fail(c, MTC_ENODEV, "a kernel or copy failed: %s", cuerr(r));
	if (e[0]) {
		CK(c, cu.cuMemsetD32Async(c->errp, 0, sizeof e / 4, c->s[0]), "clearing the range flag");
		CK(c, cu.cuStreamSynchronize(c->s[0]), "clearing the range flag");
		return fail(c, MTC_ERANGE, "%s: %s %lld at element %lld of its input is out of range [0, %lld)",
		            man.model, what[e[0] > 0 && e[0] < 4 ? e[0] : 0], e[1], e[2], e[3]);
	}
	if (c->hubad)
		return fail(c, MTC_EINVAL, "adam's step counter is below 1 (the state was set wrongly)");
	return c->status;
}

/* A step's output (copy_out): into the caller's buffer k from byte start, when asked. */
int
mtc_cu_copy_out(mtc_cu *c, int k, int64_t start, int64_t dev, int64_t bytes)
{
	if (k < 0 || k >= man.nt[3] || start < 0 || start + bytes > man.t[3][k].info.bytes)
		return fail(c, MTC_EINVAL, "bad copy_out (output %d at %lld)", k, (long long)start);
	if (c->out && c->out[k])
		CK(c, cu.cuMemcpyDtoHAsync_v2((char *)c->out[k] + start, c->mem + dev, bytes, c->s[0]),
		   "reading an output of the step");
	return 0;
}

int
mtc_cu_step(void *p, const void *const *in, float *loss)
{
	return mtc_cu_step_out(p, in, loss, NULL);
}

int
mtc_cu_step_out(void *p, const void *const *in, float *loss, void *const *out)
{
	mtc_cu *c = p;
	int rc;

	if (man.loss < 0)
		return c ? fail(c, MTC_ENOTRAIN, "%s has no train statement", man.model) : MTC_ENOTRAIN;
	if ((rc = begin(c, in, 1)))
		return rc;
	for (int i = 0; out && i < man.nt[3]; i++)
		if (!out[i])
			return fail(c, MTC_EINVAL, "step_out: output %s is NULL", man.t[3][i].info.name);
	c->out = out;
	rc = finish(c, mtc_cu_sched_step(c));
	c->out = NULL;
	if (rc)
		return rc;
	write_trace(c);
	if (loss) {
		CK(c, cu.cuMemcpyDtoHAsync_v2(loss, c->mem + man.loss, 4, c->s[0]), "reading the loss");
		CK(c, cu.cuStreamSynchronize(c->s[0]), "reading the loss");
	}
	c->steps++;
	return 0;
}

static int
api_step(void *p, const void *const *in, float *loss)
{
	return mtc_cu_step(p, in, loss);
}

static int
api_step_out(void *p, const void *const *in, float *loss, void *const *out)
{
	return mtc_cu_step_out(p, in, loss, out);
}

/* The training state (runtime/ckpt.c through this module's entry points). */
int
mtc_cu_save(void *p, const char *path)
{
	mtc_cu *c = p;
	char err[512];
	int rc;

	if (!c)
		return mtc_set_last_error(MTC_EINVAL, "%s_save: the instance is NULL", man.model);
	if ((rc = mtc_state_save(&man.mod, c, path, c->steps, err, sizeof err)))
		return fail(c, rc, "%s", err);
	return 0;
}

int
mtc_cu_load(void *p, const char *path)
{
	mtc_cu *c = p;
	int64_t steps = 0;
	char err[512];
	int rc;

	if (!c)
		return mtc_set_last_error(MTC_EINVAL, "%s_load: the instance is NULL", man.model);
	if ((rc = mtc_state_load(&man.mod, c, path, &steps, err, sizeof err)))
		return fail(c, rc, "%s", err);
	c->steps = steps;
	return 0;
}

static int api_save(void *p, const char *path) { return mtc_cu_save(p, path); }
static int api_load(void *p, const char *path) { return mtc_cu_load(p, path); }

int
mtc_cu_forward(void *p, const void *const *in, void *const *out)
{
	mtc_cu *c = p;
	int rc;

	if ((rc = begin(c, in, 0)))
		return rc;
	if ((rc = finish(c, mtc_cu_sched_forward(c))))
		return rc;
	for (int i = 0; i < man.nt[3]; i++) {
		if (!out || !out[i])
			return fail(c, MTC_EINVAL, "output %s is NULL", man.t[3][i].info.name);
		CK(c, cu.cuMemcpyDtoHAsync_v2(out[i], c->mem + man.t[3][i].off, man.t[3][i].info.bytes,
		                              c->s[0]), "reading an output");
	}
	CK(c, cu.cuStreamSynchronize(c->s[0]), "reading the outputs");
	return 0;
}

/* get and set's tensor i: params, state, buffers. */
static Tns *
nth(int i)
{
	if (i >= 0 && i < man.nt[1])
		return &man.t[1][i];
	if (i >= man.nt[1] && i < man.nt[1] + man.nt[2])
		return &man.t[2][i - man.nt[1]];
	if (i >= man.nt[1] + man.nt[2] && i < man.nt[1] + man.nt[2] + man.nt[4])
		return &man.t[4][i - man.nt[1] - man.nt[2]];
	return NULL;
}

static int
api_get(void *p, int i, void *dst)
{
	mtc_cu *c = p;
	Tns *t = nth(i);

	if (!c || !t || !dst)
		return c ? fail(c, MTC_EINVAL, "get: bad tensor %d", i) : MTC_EINVAL;
	c->status = 0;
	CK(c, cu.cuCtxSetCurrent(c->ctx), "get");
	if (t->host) {
		/* in pinned host memory, where the copies home and the updates on the host write
		 * and the fetches read */
		for (int k = 1; k < 4; k++)
			CK(c, cu.cuStreamSynchronize(c->s[k]), "get");
		memcpy(dst, c->host + t->off, (size_t)t->info.bytes);
		return 0;
	}
	CK(c, cu.cuMemcpyDtoHAsync_v2(dst, c->mem + t->off, t->info.bytes, c->s[0]), "get");
	CK(c, cu.cuStreamSynchronize(c->s[0]), "get");
	return 0;
}

static int
api_set(void *p, int i, const void *src)
{
	mtc_cu *c = p;
	Tns *t = nth(i);

	if (!c || !t || !src)
		return c ? fail(c, MTC_EINVAL, "set: bad tensor %d", i) : MTC_EINVAL;
	c->status = 0;
	CK(c, cu.cuCtxSetCurrent(c->ctx), "set");
	if (t->host) {
		for (int k = 1; k < 4; k++)
			CK(c, cu.cuStreamSynchronize(c->s[k]), "set");
		memcpy(c->host + t->off, src, (size_t)t->info.bytes);
		return 0;
	}
	return upload(c, t->off, src, t->info.bytes);
}

/* The hyperparameters (manifest role hyper): checked as every target checks them. */
int
mtc_cu_set_hyper(void *p, int i, float v)
{
	mtc_cu *c = p;
	char err[256];

	if (!c)
		return mtc_set_last_error(MTC_EINVAL, "%s set_hyper: the instance is NULL", man.model);
	c->status = 0;
	c->err[0] = 0;
	if (i < 0 || i >= man.nt[5])
		return fail(c, MTC_EINVAL, "%s set_hyper: bad index %d", man.model, i);
	if (mtc_hyper_check(man.model, man.t[5][i].info.name, v, err, sizeof err))
		return fail(c, MTC_EINVAL, "%s", err);
	CK(c, cu.cuCtxSetCurrent(c->ctx), "set_hyper");
	if (upload(c, man.t[5][i].off, &v, 4))
		return c->status;
	c->hyv[i] = v;
	return 0;
}

static int
api_set_hyper(void *p, int i, float v)
{
	return mtc_cu_set_hyper(p, i, v);
}

static int
api_get_hyper(void *p, int i, float *v)
{
	mtc_cu *c = p;

	if (!c)
		return mtc_set_last_error(MTC_EINVAL, "%s get_hyper: the instance is NULL", man.model);
	c->status = 0;
	c->err[0] = 0;
	if (i < 0 || i >= man.nt[5] || !v)
		return fail(c, MTC_EINVAL, "%s get_hyper: bad index %d or NULL buffer", man.model, i);
	CK(c, cu.cuCtxSetCurrent(c->ctx), "get_hyper");
	CK(c, cu.cuMemcpyDtoHAsync_v2(v, c->mem + man.t[5][i].off, 4, c->s[0]), "get_hyper");
	CK(c, cu.cuStreamSynchronize(c->s[0]), "get_hyper");
	return 0;
}

static int
api_stats(const void *p, struct mtc_stats *s)
{
	const mtc_cu *c = p;

	if (!c || !s)
		return MTC_EINVAL;
	memset(s, 0, sizeof *s);
	s->peak_bytes = man.persist + c->peak;
	s->device_bytes = man.persist + man.arena;
	s->ddr_bytes = man.host;
	s->steps = c->steps;
	s->check = c->check;
	s->nranks = 1;
	return 0;
}
