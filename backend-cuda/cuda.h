/* cuda.h: the CUDA backend's internal header: kernel generation, NVRTC, host code, linking.
 *
 * The backend turns every op of a module's functions into one CUDA C kernel specialised for
 * the op's static shapes (kern.c), compiles them with NVRTC into PTX and optionally a cubin
 * (nvrtc.c), and emits the schedule that launches them as LLVM IR (host.c). */
#ifndef MTC_CUDA_H
#define MTC_CUDA_H

#include "backend.h"

/* How the host launches one op. Ops without a kernel (swaps, waits) have fn < 0. */
typedef struct Launch {
	int fn;                   /* index of the kernel function in the program, -1: none */
	unsigned grid[3], block[3];
	/* matmul: row-major C[m,n] = op(A)[m,k] @ op(B)[k,n] over `batch` matrices whose starts
	 * are sa, sb, sc elements apart; gemm = 0 when the batch broadcast has no such form,
	 * and then only the generated kernel runs. */
	int gemm, ta, tb;
	int64_t m, n, k, batch, sa, sb, sc;
	/* a fused group's kernel (launched at its first op; the others have fn < 0) takes these
	 * values: its stored results, then its operands from outside; NULL: result, operands */
	int *argv, nargv;
} Launch;

/* The device program of a module: CUDA C source and one launch per op of each function. */
typedef struct CuProg {
	char *src;                /* NUL-terminated CUDA C */
	size_t len;
	char **fname;             /* kernel function names, deduplicated */
	int nfn;
	Launch *launch[2];        /* [0] forward, [1] step: one per op, NULL if the func is absent */
	int nlaunch[2];
} CuProg;

/* kern.c: needs a module whose functions are complete (shapes known), and optionally the
 * plans of its functions (plans[0] forward, plans[1] step) whose fusion groups become one
 * kernel each; fills a CuProg with one kernel per distinct op instance or group. */
CuProg *cuda_kernels(const Module *, const LowFunc *const plans[2]);
/* The kernel (source text appended to fp) and its launch for one op of f; for tests. */
int cuda_kernel_op(FILE *fp, const Func *f, const Op *op, const char *name, Launch *l);
void cuda_prelude(FILE *fp);
void cuprog_free(CuProg *);
/* One kernel rule per op kind (checked against NOP): writes the kernel's body after its
 * signature and fills the launch. cuda_hostop marks the ops the host does alone (copies, waits). */
typedef void CuKern(FILE *, const Func *, const Op *, Launch *);
extern CuKern *const cuda_kern[];
CuKern cuda_hostop;

/* nvrtc.c: compile CUDA C to PTX for a virtual architecture ("compute_75") or to a cubin
 * for a real one ("sm_90"). Returns a malloc'ed image (*len bytes, PTX NUL-terminated) or
 * NULL, with NVRTC's log in *log (malloc'ed; may be set on success too, with warnings). */
char *cuda_compile(const char *src, const char *name, const char *arch, int cubin,
                   size_t *len, char **log);
/* The default architecture: PTX for it runs on every GPU CUDA 12 and 13 support. */
extern const char cuda_default_arch[];

/* The memory plan as the host code uses it (views of the Lowered's functions). One device
 * allocation: the persistent zone (inputs, params, state at fixed offsets shared by both
 * functions), then the arena. */
typedef struct CuFn {
	const Func *f;
	const int64_t *off;       /* per value: device offset, or pinned host offset (host values) */
	const int *last;          /* per value: the op after which it is dead; nop: never */
	const int *grp, *gend;    /* lower.c's fusion groups: per op its group's first op or -1;
	                           * per first op one past its group's last */
	int *ev;                  /* per value a copy makes: the event of its completion */
	int *hu;                  /* per op: its slot among the updates on the host, -1: none */
	/* sync.c: events between the streams (-1: none). after: per copy, the compute event it
	 * waits for; cwait: per copy, a copy op of the other copy stream whose event it waits
	 * for, and per update on the host the copy in it waits for; hout: per update on the
	 * host, the copy to the host it waits for; rec: per op, the compute event recorded once
	 * it is issued; xwait[2 op + s - 1]: per launching op, a copy op of copy stream s whose
	 * event the compute stream waits for before it. */
	int *after, *rec, *xwait, *cwait, *hout;
} CuFn;

typedef struct CuMod {
	const Module *m;
	const Lowered *lo;        /* the plan (passes/lower.c) */
	const BuildOpts *o;
	const char *id;           /* the model's C prefix */
	CuProg *prog;
	int64_t *poff, persist;   /* per decl: offset in the persistent zone */
	int64_t arena, host, peak;
	CuFn fn[2];               /* forward, step (f NULL without training) */
	int nev;                  /* copy events */
	int nrec;                 /* compute events */
	int nhupd;                /* updates on the host (their slots in the runtime) */
	char *ptx, *cubin;
	size_t ptxlen, cubinlen;
	int cubin_arch;           /* 90 for sm_90; 0: no cubin */
	char *manifest;
	char *data;               /* the initial values that live in files (INIT_FILE), one after */
	size_t ndata;             /* the other: mtc_cu_data, which the manifest's offsets index */
} CuMod;

/* build.c: the target's entry points (struct target's emit and build), and a helper. */
int cuda_emit(const Lowered *, const BuildOpts *, const char *kind, const char *out);
int cuda_build(const Lowered *, const BuildOpts *, const char *out);
int cuda_reads(const Func *, int v);     /* does some op of f (may be NULL) read v? */

/* sync.c: needs p->f after layout and its plan (fusion groups, and the dependence DAG of
 * passes/deps.c that lowering holds); fills p->after, p->rec, p->xwait, p->cwait and p->hout,
 * numbering compute events from *nrec. cuda_cstream: the copy stream of op i, CS_OUT (to the
 * host) or CS_IN (to the GPU), 0 for the rest. */
enum { CS_OUT = 1, CS_IN = 2 };
void cuda_sync(CuFn *p, const LowFunc *pl, int *nrec);
int cuda_cstream(const Func *, int i);

/* host.c: the schedules, the images and the typed API as LLVM IR. Writes the IR text to
 * ir (when not NULL) and an object file to obj (when not NULL). 0, or 1 after a message. */
int cuda_host(const CuMod *, FILE *ir, const char *obj);

#endif
