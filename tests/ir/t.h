/* t.h: the little a C test of the IR needs: types from text, counters, the closing line. */
#ifndef MTC_TESTS_IR_T_H
#define MTC_TESTS_IR_T_H

#include <stdlib.h>
#include <string.h>

#include "ir.h"

static int npass, nfail;

#define CHECK(c, ...) \
	((c) ? (void)npass++ : (nfail++, fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__), \
	 fprintf(stderr, __VA_ARGS__), (void)fputc('\n', stderr)))

/* "f32[2,3]" -> a type (the test's own text, trusted). */
static inline Type
T(const char *s)
{
	Type t = { .dt = s[0] == 'i' ? I32 : F32 };
	const char *p = strchr(s, '[') + 1;

	while (*p && *p != ']') {
		t.sh.d[t.sh.rank++] = strtoll(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
	return t;
}

static int
done(void)
{
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail != 0;
}

#endif
