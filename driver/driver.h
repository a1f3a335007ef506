/* driver.h: the compiler's options and the analyses main.c keeps for its dumps; no target
 * sees them (a target gets a Lowered and BuildOpts: backend/backend.h). */
#ifndef MTC_DRIVER_H
#define MTC_DRIVER_H

#include "passes.h"

enum { ZERO_AUTO = -1, MAXALSO = 16 };

typedef struct Opts {
	const char *input;        /* MODEL.tdsl or MODEL.mir */
	const char *output;       /* -o; NULL or "-" is standard output for --emit */
	const char *target;       /* "mt3000" or "cuda" */
	const char *emit;         /* NULL: build the .so */
	const char *also[MAXALSO][2];  /* --also-emit=KIND:FILE: kind, file, in the order given */
	int nalso;
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
	int jobs;                 /* --jobs: processes for the planner's independent trials */
	int opt_level;
	uint64_t seed;
	const char **defines;
	int ndefines;
	int dp;                   /* --data-parallel */
	const char *ranks;        /* --ranks=LIST; NULL: the divisors of the batch up to 8 */
	int64_t bucket;           /* --bucket-bytes; 0: the cost model's choice */
	int zero;                 /* --zero: 0 none, 1 optimizer state sharded, 2 and gradients;
	                           * ZERO_AUTO: the planner's choice under a budget */
	int micro;                /* --micro-batches=K; 0 or 1: none; MICRO_AUTO: the planner's choice */
} Opts;
enum { MICRO_AUTO = -1 };

/* What the analyses found about one function, for the dumps. */
typedef struct Anal {
	Live l;
	Cost c;
	Layout lay;
	Dag d;
} Anal;

#endif
