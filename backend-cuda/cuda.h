/* cuda.h: the CUDA backend's internal header: kernel generation, NVRTC, host code, linking.
 *
 * The backend turns every op of a module's functions into one CUDA C kernel specialised for
 * the op's static shapes (kern.c), compiles them with NVRTC into PTX and optionally a cubin
 * (nvrtc.c), and emits the schedule that launches them as LLVM IR (host.c). */
#ifndef MTC_CUDA_H
#define MTC_CUDA_H

#include "ir.h"

/* How the host launches one op. Ops without a kernel (swaps, waits) have fn < 0. */
typedef struct Launch {
	int fn;                   /* index of the kernel function in the program, -1: none */
	unsigned grid[3], block[3];
	/* matmul: row-major C[m,n] = op(A)[m,k] @ op(B)[k,n] over `batch` matrices whose starts
	 * are sa, sb, sc elements apart; gemm = 0 when the batch broadcast has no such form,
	 * and then only the generated kernel runs. */
	int gemm, ta, tb;
	int64_t m, n, k, batch, sa, sb, sc;
} Launch;

/* The device program of a module: CUDA C source and one launch per op of each function. */
typedef struct CuProg {
	char *src;                /* NUL-terminated CUDA C */
	size_t len;
	char **fname;             /* kernel function names, deduplicated */
	int nfn;
	Launch *launch[2];        /* [0] forward, [1] step: one per op, NULL if the func is absent */
} CuProg;

/* kern.c: needs a module whose functions are complete (shapes known);
 * fills a CuProg with one kernel per distinct op instance. */
CuProg *cuda_kernels(const Module *);
/* The kernel (source text appended to fp) and its launch for one op of f; for tests. */
int cuda_kernel_op(FILE *fp, const Func *f, const Op *op, const char *name, Launch *l);
void cuda_prelude(FILE *fp);
void cuprog_free(CuProg *);

/* nvrtc.c: compile CUDA C to PTX for a virtual architecture ("compute_75") or to a cubin
 * for a real one ("sm_90"). Returns a malloc'ed image (*len bytes, PTX NUL-terminated) or
 * NULL, with NVRTC's log in *log (malloc'ed; may be set on success too, with warnings). */
char *cuda_compile(const char *src, const char *name, const char *arch, int cubin,
                   size_t *len, char **log);
/* The default architecture: PTX for it runs on every GPU CUDA 12 and 13 support. */
extern const char cuda_default_arch[];

#endif
