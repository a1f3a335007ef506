/* error.c: a thread's last error, for creates that fail before an instance exists (every
 * target's runtime, so MT-3000 and CUDA modules report the same way). */
#include <stdarg.h>
#include <stdio.h>

#include "mtc/mtc-rt.h"

static _Thread_local char lasterr[512];

int
mtc_set_last_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lasterr, sizeof lasterr, fmt, ap);
	va_end(ap);
	return code;
}

const char *
mtc_rt_last_error(void)
{
	return lasterr;
}
