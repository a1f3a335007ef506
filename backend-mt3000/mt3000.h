/* mt3000.h: the MT-3000 backend's internals: host sequencing, device kernels, MODEL.h, build. */
#ifndef MTC_MT3000_H
#define MTC_MT3000_H

#include "backend.h"

/* A fused elementwise group has at most this many ops and this many outside operands. */
enum { MAXFUSE = 16 };

/* What the backend knows about one function after preparing it. */
typedef struct FnPlan {
	const Func *f;
	int64_t *off;        /* per value: device address (persistent zone + arena), or DDR offset */
	int64_t arena;       /* arena bytes (end of the last arena value) */
	int64_t ddr;         /* DDR zone bytes */
	int64_t peak;        /* planned peak of live bytes, persistent zone included */
	int *last;           /* per value: op after which it dies (nop: lives to the end) */
	int *grp;            /* per op: first op of its fused group, or -1 */
	int *gend;           /* per op that starts a group: one past its last op */
	uint8_t *mat;        /* per value: stored in memory (not kept in a register of a fused loop) */
	int idbase;          /* check-mode id of value 0 */
} FnPlan;

typedef struct Gen {
	const Module *m;
	const Opts *o;
	const char *id;      /* the model's C prefix */
	FILE *h;             /* host translation unit */
	FILE *k;             /* device translation unit */
	int nk;              /* kernels emitted */
	int64_t *poff;       /* per decl: offset in the persistent zone */
	int64_t persist;     /* persistent zone bytes */
	int64_t param_bytes, state_bytes;
	FnPlan fwd, step;    /* step.f NULL without training */
	int64_t arena, ddr;  /* the device's: the larger of the two functions' */
	int nids;            /* check-mode names */
} Gen;

/* plan.c: offsets (from the layout pass, or the temporary one), lifetimes, fusion groups. */
void gen_plan(Gen *);
void gen_free(Gen *);
int is_fusable(const Op *);
int64_t vbytes(const Func *, int v);
int in_ddr(const Func *, int v);

/* kern.c: one device kernel per op or fused group, and its launch in the host code. */
void kern_ew(Gen *, const FnPlan *, int first, int end);
void kern_op(Gen *, const FnPlan *, int op);
/* One kernel rule per op kind (checked against NOP): the kernel and its launch.
 * mt3000_hostop marks the ops the host code does alone (copies, waits). */
typedef void KernRule(Gen *, const FnPlan *, const Op *);
extern KernRule *const mt3000_kern[];
KernRule mt3000_hostop;
void kern_prologue(Gen *);
void kern_epilogue(Gen *);

/* host.c: the host translation unit: the instance, sequencing, the API and mtc_module. */
void host_emit(Gen *);
void api_protos(Gen *, FILE *, int exported);
/* header.c: MODEL.h. */
void header_emit(Gen *, FILE *);
/* The model's name as a C identifier prefix; arg lists of the typed API. */
const char *c_type(DType);
char *c_name(const char *name, char *buf, size_t n);

#endif
