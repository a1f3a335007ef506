/* passes.h: the passes over the IR, one file each, each with its contract (needs / fills). */
#ifndef MTC_PASSES_H
#define MTC_PASSES_H

#include "ir.h"

/* autodiff.c: needs m->fwd with fwd->loss and m->opt (a trained model); fills m->step with the
 * forward ops, the backward ops and the optimizer update, and adds the optimizer's state decls.
 * Returns 0, or -1 after a diagnostic. */
int autodiff(Module *, Src *);

/* simplify.c: dead-code elimination (forward keeps only what its outputs need; step keeps the
 * loss and the updates) and common-subexpression elimination. Never run after planning. */
void simplify(Func *);

/* cost.c: the cost rules of the op table (FLOPs per op). */

/* plan.c, remat.c, chen.c, tso.c, ilp.c, planner.c: the memory planner. */
#include "plan.h"

#endif
