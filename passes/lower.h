/* lower.h: the lowering after layout: everything a target needs to know of a module, once.
 *
 * The passes end here and the targets start: a target (backend/backend.h) reads a Lowered
 * and the IR it points to, never the driver's options, and computes nothing of this again.
 * What is target-independent lives here: addresses, lifetimes, fusion groups, dependences,
 * the persistent zone and the plan's report; what a target does with them is its own. */
#ifndef MTC_LOWER_H
#define MTC_LOWER_H

#include "passes.h"

/* A fused elementwise group has at most this many ops and this many outside operands. */
enum { MAXFUSE = 16 };

/* One function, lowered. */
typedef struct LowFunc {
	const Func *f;
	int64_t *off;        /* per value: device address (persistent zone + arena), or DDR offset */
	int64_t arena;       /* arena bytes (end of the last arena value, aligned) */
	int64_t ddr;         /* DDR (host) zone bytes, the host persistent zone included */
	int64_t peak;        /* planned peak of live bytes, persistent zone included */
	int *last;           /* per value: op after which it dies (nop: lives to the end); Live.last's */
	uint8_t *skip;       /* per op: not run (only passes/fault.c sets it: a test aid) */
	int *defer;          /* per op: -1, or run right after that later op instead (fault.c) */
	int *grp;            /* per op: first op of its fused group, or -1 */
	int *gend;           /* per op that starts a group: one past its last op */
	uint8_t *mat;        /* per value: stored in memory (not kept in a register of a fused loop) */
	int idbase;          /* check-mode id of value 0 */
	const Live *live;    /* liveness.c's: births, deaths, bytes */
	const Dag *dag;      /* deps.c's dependences after layout (arena edges included) */
	Live own_live;       /* what lower() computed itself when not handed them */
	Dag own_dag;
	int owns;
} LowFunc;

/* The memory plan as the user asked for it and as the planner took it. The one place that
 * turns `--mem-budget=N%` into bytes is the planner (N percent of the step's whole arena
 * without a budget, module tensors included); everyone else reads budget from here. */
typedef struct LowPlan {
	const char *solver;      /* the solver whose plan was taken; "none" when nothing was planned */
	int64_t budget;          /* bytes; 0: no budget */
	double budget_pct;       /* > 0: the budget as given, N percent of the unconstrained arena */
	const PlanReport *rep;   /* the planner's figures; NULL when it did not run */
} LowPlan;

typedef struct Lowered {
	const Module *m;
	const Target *tg;        /* the machine (after command-line overrides): align */
	int64_t *poff;           /* per decl: offset in the persistent zone (in the host one for
	                          * a Decl.host) */
	int64_t persist;         /* persistent zone bytes (inputs, params, optimizer state) */
	int64_t hpersist;        /* the host's: params and optimizer state living in host memory,
	                          * at the start of the DDR zone */
	int64_t param_bytes, state_bytes, hstate_bytes;   /* state_bytes: on the accelerator */
	int64_t hparam_bytes;    /* of param_bytes, those living in host memory */
	int64_t buffer_bytes;    /* buffers (batch norm's running statistics, counters) */
	LowFunc fwd, step;       /* step.f NULL without training */
	int64_t arena, ddr;      /* the device's: the larger of the two functions' */
	int nids;                /* check-mode names: the values of both functions */
	LowPlan plan;
} Lowered;

/* A data-parallel module (mtc --data-parallel): one variant of the step per number of ranks,
 * each lowered on its own (the model elaborated at its slice of the batch, collectives
 * inserted, planned), and the model at its whole batch, whose tables the module shows. */
typedef struct LowDp {
	const Module *whole;
	int64_t batch;           /* the leading dim of the first input */
	int nvar;
	const Lowered *var;      /* ascending in ranks */
	const int *ranks;
	const int *nslots;       /* the collectives each variant's step starts */
} LowDp;

/* lower.c: needs a module after the pipeline: ops in execution order, Value.off set by the
 * layout pass (values still at -1 get a slot of their own after everything placed, so they
 * share no byte: tests hand in modules the layout never saw). live[k] and dag[k] (k = 0
 * forward, 1 step) are the driver's analyses of the function as it will run, borrowed; NULL
 * (or a NULL array): lower() computes them with liveness.c and deps.c. plan may be NULL (no
 * budget). Everything lower() allocates is freed by lower_free. */
void lower(Lowered *, const Module *, const Target *, const Live *const live[2],
           const Dag *const dag[2], const LowPlan *plan);
void lower_free(Lowered *);

/* fault.c, a test aid (MTC_FAULT=KIND:N, docs/reliability.md): damage the lowered step the
 * way a wrong plan would, so that the tests measure whether check mode reports it. KIND is
 * wait (drop a wait), overlap (a value onto bytes another live value holds), early (free a
 * value before its last reader), late (a swap_in run after its first reader), norec (drop a
 * recomputation); N picks the candidate (modulo their number). Returns 0 with what it did in
 * what, or -1 (no candidate, bad spec) with why. */
int lower_fault(Lowered *, const char *spec, char *what, size_t nwhat);

/* The fusion rule: may op join a fused elementwise loop? The one entry point for it. */
int is_fusable(const Op *);
/* Bytes of value v; is v in the host (DDR) zone? */
int64_t vbytes(const Func *, int v);
int in_ddr(const Func *, int v);

#endif
