/* synth.h: small steps built with the IR builder for the planner's tests (chains and random
 * DAGs, whose plans an exhaustive search can check), and a semantic check of plans. */
#ifndef MTC_SYNTH_H
#define MTC_SYNTH_H

#include "passes.h"

/* A chain of n elementwise forward ops and its backward. */
Module *synth_chain(int n, int width, uint64_t seed);
/* A random forward DAG of n ops (operands from the last few values) and a backward. */
Module *synth_dag(int n, int width, uint64_t seed);

/* An example through the pipeline up to the planner (frontend with -D defines, autodiff,
 * simplify, list scheduling); NULL if it cannot be read or compiled. */
Module *synth_example(const char *path, const char *const *defs, int ndefs, const Target *);

/* Semantic equivalence of a planned step with the unplanned one: every op computes the same
 * expression of the decls (each decl versioned by the updates before it), recomputations
 * compute what they claim, copies are awaited before use. 0, or -1 with a message. */
int synth_equiv(const Func *orig, const Func *planned, char *err, size_t nerr);

#endif
