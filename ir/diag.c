/* diag.c: diagnostics in GCC form: file:line:col: error: message, the line, a caret. */
#include <stdarg.h>
#include <string.h>

#include "ir.h"

/* Print the source line `line` of src and a caret under column col (tabs kept so it lines up). */
static void
quote(const Src *src, Loc loc)
{
	const char *p, *e, *end;
	int l, c;

	if (!src->text || loc.line <= 0)
		return;
	end = src->text + src->len;
	for (p = src->text, l = 1; p < end && l < loc.line; p++)
		if (*p == '\n')
			l++;
	if (l != loc.line)
		return;
	for (e = p; e < end && *e != '\n'; e++)
		;
	if (e - p > 200)        /* a 3 MB line is not worth quoting whole */
		e = p + 200;
	fprintf(stderr, " %.*s\n ", (int)(e - p), p);
	for (c = 1; c < loc.col && p + c - 1 < e; c++)
		fputc(p[c - 1] == '\t' ? '\t' : ' ', stderr);
	fputs("^\n", stderr);
}

void
diagv(Src *src, Loc loc, const char *kind, const char *fmt, va_list ap)
{
	if (loc.line > 0)
		fprintf(stderr, "%s:%d:%d: %s: ", src->name, loc.line, loc.col, kind);
	else
		fprintf(stderr, "%s: %s: ", src->name, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	quote(src, loc);
}

void
diag(Src *src, Loc loc, const char *fmt, ...)
{
	va_list ap;

	src->nerr++;
	if (src->nerr > MAXERR)
		return;
	va_start(ap, fmt);
	diagv(src, loc, "error", fmt, ap);
	va_end(ap);
	if (src->nerr == MAXERR)
		fprintf(stderr, "%s: note: too many errors, stopping\n", src->name);
}

void
note(Src *src, Loc loc, const char *fmt, ...)
{
	va_list ap;

	if (src->nerr > MAXERR)
		return;
	va_start(ap, fmt);
	diagv(src, loc, "note", fmt, ap);
	va_end(ap);
}

void
warn(Src *src, Loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	diagv(src, loc, "warning", fmt, ap);
	va_end(ap);
}
