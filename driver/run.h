/* run.h: mtc-run's options, shared by the interpreter mode (run.c) and the module mode (runso.c). */
#ifndef MTC_RUN_H
#define MTC_RUN_H

#include <stdint.h>

typedef struct RunOpts {
	const char *model, *params, *inputs, *save_params, *save_outputs;
	const char *lr_schedule, *save_state, *load_state, *trace;
	long steps;
	int forward;
	uint64_t seed;
	const char *defines[256];
	int ndefines;
	int micro;          /* --micro-batches=K (the interpreter; a module's are built in) */
} RunOpts;

/* run.c: "mtc-run: error: ..." on stderr, then exit 1. */
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* run.c: wall-clock milliseconds; the median of n step times (sorts them; 0 for none). */
double now_ms(void);
double median_ms(double *ms, long n);

/* lrsched.c: --lr-schedule, a file of learning rates (one a line; the last repeats) or a named
 * schedule (cosine:WARMUP:TOTAL, relative to the model's lr). lr_load fails with fatal();
 * lr_at is the lr of step k (from 1) of the whole training. n = 0 and !cosine: no schedule. */
typedef struct LrSched {
	double *v;
	long n;
	int cosine;
	long warmup, total;
} LrSched;
void lr_load(LrSched *, const char *spec);
double lr_at(const LrSched *, long k, double base);

/* runso.c: mtc-run MODEL.so: load the module with dlopen and drive it through mtc_module(). */
int run_so(const RunOpts *);

#endif
