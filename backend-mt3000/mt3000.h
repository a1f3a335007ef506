/* mt3000.h: the MT-3000 backend's internals: host sequencing, device kernels, build. */
#ifndef MTC_MT3000_H
#define MTC_MT3000_H

#include "backend.h"

typedef struct KernDedup KernDedup;

/* One generation: the Lowered's plan (copied: fwd, step, poff, ... point into it) and the
 * files being written. */
typedef struct Gen {
	const Module *m;
	const Lowered *lo;
	const BuildOpts *bo;
	const char *id;      /* the model's C prefix */
	FILE *h;             /* host translation unit */
	FILE *k;             /* device translation unit: a buffer of the kernel being written */
	int nk;              /* kernels emitted */
	KernDedup *kd;       /* kern.c's: the kernels written, each body once */
	int64_t *poff;       /* per decl: offset in the persistent zone */
	int64_t persist;     /* persistent zone bytes */
	int64_t param_bytes, state_bytes;
	LowFunc fwd, step;    /* step.f NULL without training */
	int64_t arena, ddr;  /* the device's: the larger of the two functions' */
	int nids;            /* check-mode names */
	int ranks;           /* > 0: a variant of a data-parallel module, for this many ranks: no
	                      * exported symbol, its collectives on the instance's communicator */
	int nslots;          /* the collectives' slots its step uses (host_emit fills it) */
	int64_t *inplace;    /* per value of the function being emitted: the offset in host
	                      * memory its readers (and its producer) address instead of its
	                      * own bytes (an all-reduced gradient its update reads in the
	                      * bucket, a gradient its kernel writes there), -1 */
} Gen;

/* kern.c: one device kernel per op or fused group, and its launch in the host code. */
void kern_ew(Gen *, const LowFunc *, int first, int end);
void kern_op(Gen *, const LowFunc *, int op);
/* One kernel rule per op kind (checked against NOP): the kernel and its launch.
 * mt3000_hostop marks the ops the host code does alone (copies, waits). */
typedef void KernRule(Gen *, const LowFunc *, const Op *);
extern KernRule *const mt3000_kern[];
KernRule mt3000_hostop;
/* An update on the host (op_on_host): the same code as its kernel, as function hu<id> of the
 * host translation unit, which the host code queues with mtc_host_call. */
void kern_host_update(Gen *, const LowFunc *, int op, int id);
void kern_prologue(Gen *);
void kern_epilogue(Gen *);

/* host.c: the host translation unit: the instance, sequencing, the API and mtc_module. */
void host_emit(Gen *);
/* The data-parallel module's own translation unit: its variants' table, the whole model's
 * description, mtc_module() and the typed API (runtime/dp.c does the rest). */
void host_emit_dp(FILE *, const LowDp *, const BuildOpts *, const char *id, const char *const *vid);

#endif
