/* run.h: mtc-run's options, shared by the interpreter mode (run.c) and the module mode (runso.c). */
#ifndef MTC_RUN_H
#define MTC_RUN_H

#include <stdint.h>

typedef struct RunOpts {
	const char *model, *params, *inputs, *save_params, *save_outputs;
	long steps;
	int forward;
	uint64_t seed;
	const char *defines[256];
	int ndefines;
} RunOpts;

/* run.c: "mtc-run: error: ..." on stderr, then exit 1. */
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* run.c: wall-clock milliseconds; the median of n step times (sorts them; 0 for none). */
double now_ms(void);
double median_ms(double *ms, long n);

/* runso.c: mtc-run MODEL.so: load the module with dlopen and drive it through mtc_module(). */
int run_so(const RunOpts *);

#endif
