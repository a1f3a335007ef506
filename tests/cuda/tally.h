/* tally.h: the pass/fail/skip counters of the CUDA tests and their closing line. */
#ifndef MTC_TESTS_CUDA_TALLY_H
#define MTC_TESTS_CUDA_TALLY_H

#include <stdio.h>

static int pass, fail, skip;

/* Count one check; a failure prints what failed and, when given, why. */
static void
check(int ok, const char *what, const char *detail)
{
	if (ok) {
		pass++;
		return;
	}
	fail++;
	printf("FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

/* The closing line; the exit status of the test. */
static int
tally(void)
{
	printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
	return fail != 0;
}

#endif
