/* check.h: the counters of a C test, a printf-style check, and the closing line. */
#ifndef MTC_TESTS_CHECK_H
#define MTC_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int npass, nfail;

/* Count one check; a failure prints what failed. */
__attribute__((format(printf, 2, 3))) static void
check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		npass++;
		return;
	}
	nfail++;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The closing line; the exit status of the test. */
static int
done(void)
{
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}

#endif
