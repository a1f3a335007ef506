/* frontend.h: tdsl source to IR: lexer, parser, AST, expansion (consts, defs, loops), shapes. */
#ifndef MTC_FRONTEND_H
#define MTC_FRONTEND_H

#include "ir.h"

typedef struct FeOpts {
	const char **defines;   /* "NAME=INT": override (or add) a `const` before folding */
	int ndefines;
} FeOpts;

/* Compile src into a module: `forward` holds the whole model body (its outputs, and
 * fwd->loss for trained models, with m->opt set). NULL after diagnostics (src->nerr > 0). */
Module *fe_compile(Src *src, const FeOpts *);

#endif
