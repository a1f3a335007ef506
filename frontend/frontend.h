/* frontend.h: tdsl source to IR: lexer, parser, AST, expansion (consts, defs, loops), shapes. */
#ifndef MTC_FRONTEND_H
#define MTC_FRONTEND_H

#include "ir.h"

typedef struct FeOpts {
	const char **defines;   /* "NAME=INT": override (or add) a `const` before folding */
	int ndefines;
	/* > 1: elaborate the model with its batch divided by this (micro-batches; a rank's share
	 * of a data-parallel step). The batch is the leading dim of the model's first input, which
	 * must be a const's name (`input x : f32[B, ...]`): that const is folded as B / batch_div,
	 * so every shape written with it (reshape(t, [B, S, H, -1])) follows; a batch_div that
	 * does not divide B is an error naming batch_why (the option that asked, for messages). */
	int64_t batch_div;
	const char *batch_why;
} FeOpts;

/* Compile src into a module: `forward` holds the whole model body (its outputs, and
 * fwd->loss for trained models, with m->opt set). NULL after diagnostics (src->nerr > 0). */
Module *fe_compile(Src *src, const FeOpts *);

#endif
