/* check.h: the counters of a C test, its checks and skips, and the closing line. */
#ifndef MTC_TESTS_CHECK_H
#define MTC_TESTS_CHECK_H

/*
 * Every C test under tests/ counts with these and closes with one line:
 *   done()        "N passed, N failed"              a test that never skips
 *   done_skips()  "N passed, N failed, N skipped"   a test that can skip
 * The rule: a test that can skip (a GPU it may not have) closes with done_skips(), which
 * prints the skipped count always, 0 included, so a test's closing line has one shape on
 * every machine; every other test closes with done(). Both return the exit status.
 *
 *   check(ok, fmt, ...)   count one check; a failure prints "FAIL: <fmt...>"
 *   CHECK(ok, fmt, ...)   the same with the place: "file:line: FAIL: <fmt...>"
 *   skip(fmt, ...)        count one skip and print "skipped: <fmt...>"
 * check_echo = 1 makes passes print "ok <fmt...>" too (a log of every check's numbers).
 * The counters are plain variables: a test may add to them (nskip += n) or count a check
 * it made some other way (npass++).
 */
#include <stdarg.h>
#include <stdio.h>

static int npass, nfail, nskip, check_echo;

/* Count one check and, if it failed (or passes echo), say what it checked. Returns ok. */
static inline int
check_count(const char *file, int line, int ok, const char *fmt, va_list ap)
{
	ok = ok != 0;
	if (ok)
		npass++;
	else
		nfail++;
	if (!ok || check_echo) {
		if (file)
			printf("%s:%d: ", file, line);
		printf("%s", ok ? "ok " : "FAIL: ");
		vprintf(fmt, ap);
		putchar('\n');
	}
	return ok;
}

/* Count one check; a failure (and with check_echo, a pass) prints what it checked.
 * Returns ok. */
__attribute__((format(printf, 2, 3))) static inline int
check(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ok = check_count(NULL, 0, ok, fmt, ap);
	va_end(ap);
	return ok;
}

/* check() with the file and line of the check in the failure. */
__attribute__((format(printf, 4, 5))) static inline int
check_at(const char *file, int line, int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ok = check_count(file, line, ok, fmt, ap);
	va_end(ap);
	return ok;
}
#define CHECK(ok, ...) check_at(__FILE__, __LINE__, (ok), __VA_ARGS__)

/* Count one skip; says what was skipped and why. */
__attribute__((format(printf, 1, 2))) static inline void
skip(const char *fmt, ...)
{
	va_list ap;

	nskip++;
	printf("skipped: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The closing line of a test that never skips; the exit status of the test. */
static inline int
done(void)
{
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}

/* The closing line of a test that can skip (the count always printed). */
static inline int
done_skips(void)
{
	printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
	return nfail != 0;
}

#endif
