/* backend.h: a code generation target as the driver sees it: its machine and its hooks.
 *
 * Targets sit below the driver: the driver runs the passes, lowers the module (passes/lower.h)
 * and hands the Lowered to a target with the few build options a target needs; a target
 * never sees the driver's options. What every target shares (MODEL.h, the typed C API's
 * names) is here too, so that no target includes another's header. Adding a target touches
 * its own folder and the table in driver/main.c. */
#ifndef MTC_BACKEND_H
#define MTC_BACKEND_H

#include "lower.h"

/* What a build needs beyond the Lowered: set by the driver from its command line. */
typedef struct BuildOpts {
	int opt_level;           /* -O0 .. -O3 of the generated code */
	const char *arch;        /* --arch=sm_XX (CUDA), NULL: the target's default */
	uint64_t seed;           /* seed of the params' initial values */
} BuildOpts;

typedef struct Backend {
	const char *name;             /* --target=NAME */
	const Target *mach;           /* its machine as the cost model knows it (passes/target.c) */
	const char *const *emits;     /* the --emit kinds it writes besides ir, NULL-terminated */
	/* --emit=KIND: write to out (NULL or "-" is standard output). 0, or 1 after a message. */
	int (*emit)(const Lowered *, const BuildOpts *, const char *kind, const char *out);
	/* Build the shared object at out and the header beside it. Returns 0 or 1. */
	int (*build)(const Lowered *, const BuildOpts *, const char *out);
	/* Its per-op kernel table (NOP entries), NULL where the target has none yet. */
	const void *kernels;
	/* A data-parallel module: --emit=KIND (kind non-NULL: the header, or the code of the
	 * variant for the most ranks and of the module around it) or build (kind NULL). 0 or 1
	 * after a message. NULL: the target has no data-parallel modules. */
	int (*dp)(const LowDp *, const BuildOpts *, const char *kind, const char *out);
} Backend;

/* backend-mt3000/ */
extern const Backend backend_mt3000;
/* backend-cuda/ (only when configure found NVRTC) */
extern const Backend backend_cuda;

/* capi.c: the typed C API every target exports: the model's name as a C identifier prefix,
 * C types, the typed functions' parameter lists and prototypes. */
const char *c_type(DType);
char *c_name(const char *name, char *buf, size_t n);
/* uses[d]: does f read input decl d (its array entry may be NULL otherwise)? */
void used_inputs(const Module *, const Func *, uint8_t *uses);
/* f's used inputs as ", const float *x" (array 0) or "\tconst void *mtc_in[] = {...};" (1). */
void typed_inputs(const Module *, const Func *, FILE *, int array);
/* Output k's parameter name: its own, unless an input or the loss already has it. */
const char *out_param(const Module *, int k);
/* A hyperparameter decl's name as the API spells it: "opt.lr" -> "lr". */
const char *hyper_name(const char *decl);
/* The prototypes of the typed API of model id (exported: with MTC_EXPORT). */
void api_protos(const Module *, const char *id, FILE *, int exported);

/* header.c: MODEL.h for target `target`: the typed API with the memory plan in a comment. */
/* May files go beside the output out (MODEL.h, F-dev.c)? Yes for a regular file's path or
 * one that does not exist yet; no for standard output ("-", NULL) and for a device or FIFO
 * (-o /dev/null): a target then writes no header and puts --emit=c's parts in out itself,
 * one after the other, as on standard output. */
int out_beside(const char *out);
void header_emit(const Lowered *, const char *id, const char *target, FILE *);
/* The same for a data-parallel module: each variant's plan, the whole batch's API, and
 * MODEL_create_comm(MPI_Comm). */
void header_emit_dp(const LowDp *, const char *id, const char *target, FILE *);

#endif
