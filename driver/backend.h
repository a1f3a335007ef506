/* backend.h: a code generation target (backend) as the driver sees it: a struct of function pointers.
 * Adding a target touches its own folder and the table in main.c. */
#ifndef MTC_BACKEND_H
#define MTC_BACKEND_H

#include "driver.h"

typedef struct Backend {
	const char *name;             /* --target=NAME */
	const char *const *emits;     /* the --emit kinds it writes besides ir, NULL-terminated */
	/* --emit=KIND: write to out (the -o file; NULL or "-" is standard output).
	 * Returns 0, or 1 after a message. */
	int (*emit)(const Module *, const Opts *, const char *kind, const char *out);
	/* Build the shared object at out and the header beside it. Returns 0 or 1. */
	int (*build)(const Module *, const Opts *, const char *out);
} Backend;

/* backend-mt3000/ */
extern const Backend backend_mt3000;
/* backend-cuda/ (only when configure found NVRTC) */
extern const Backend backend_cuda;

#endif
