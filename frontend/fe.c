/* fe.c: the frontend's entry: parse a tdsl file, then expand it into a module. */
#include <limits.h>

#include "ast.h"

Module *
fe_compile(Src *src, const FeOpts *o)
{
	Parser p = { 0 };
	Module *m = NULL;

	if (src->len > INT_MAX / 2) {
		diag(src, (Loc){ 0, 0 }, "the file is too large (%zu bytes)", src->len);
		return NULL;
	}
	p.src = src;
	p.a = arena_new();
	p.tail = &p.items;
	/* Expansion runs only on a clean parse: after a syntax error the tree has holes, and
	 * what it would say about them is noise. */
	if (fe_parse(&p) == 0 && src->nerr == 0)
		m = fe_expand(&p, o);
	arena_free(p.a);
	return m;
}
