/* driver.h: the compiler's options and the analyses main.c keeps for its dumps; no target
 * sees them (a target gets a Lowered and BuildOpts: backend/backend.h). */
#ifndef MTC_DRIVER_H
#define MTC_DRIVER_H

#include "passes.h"

typedef struct Opts {
	const char *input;        /* MODEL.tdsl or MODEL.mir */
	const char *output;       /* -o; NULL or "-" is standard output for --emit */
	const char *target;       /* "mt3000" or "cuda" */
	const char *emit;         /* NULL: build the .so */
	const char *dump_dir;
	const char *stop_after;   /* --stop-after: the last stage run, or NULL */
	const char *solver;       /* auto ilp tso chen none */
	const char *schedule;     /* list-scheduling priority: sched_names[] */
	Target tg;                /* the cost model's machine: --target, then overrides */
	const char *arch;         /* CUDA arch */
	int64_t budget;           /* bytes; 0: none */
	double budget_pct;        /* > 0: percent of the unconstrained arena */
	double solver_time;       /* seconds; 0: no wall-clock limit (the default) */
	long solver_nodes;        /* ILP nodes per program; 0: the planner's default */
	int nooffload;            /* --offload=none: params, grads, state stay on the accelerator */
	int opt_level;
	uint64_t seed;
	const char **defines;
	int ndefines;
} Opts;

/* What the analyses found about one function, for the dumps. */
typedef struct Anal {
	Live l;
	Cost c;
	Layout lay;
	Dag d;
} Anal;

#endif
