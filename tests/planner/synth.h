/* synth.h: small steps built with the IR builder for the planner's tests (chains and random
 * DAGs, whose plans an exhaustive search can check), and a semantic check of plans. */
#ifndef MTC_SYNTH_H
#define MTC_SYNTH_H

#include "passes.h"

/* The next of a xorshift sequence from *s (not 0), the tests' random numbers. */
uint64_t synth_rnd(uint64_t *s);
/* A chain of n elementwise forward ops and its backward. */
Module *synth_chain(int n, int width, uint64_t seed);
/* A random forward DAG of n ops (operands from the last few values) and a backward. */
Module *synth_dag(int n, int width, uint64_t seed);

/* An example through the pipeline up to the planner (frontend with -D defines, autodiff,
 * simplify, list scheduling); NULL if it cannot be read or compiled. */
Module *synth_example(const char *path, const char *const *defs, int ndefs, const Target *);
/* The same from the text of a model. */
Module *synth_source(const char *name, const char *text, const char *const *defs, int ndefs,
                     const Target *);
/* A deep MLP of nl dense layers, layer l from width[l-1] to width[l] features (uneven widths:
 * uneven bytes and times), activation act[(l-1) % 3] (NULL: relu), a batch of batch rows,
 * SGD with momentum, as examples/mlp.tdsl is. */
Module *synth_mlp(const int *width, int nl, int batch, const char *const *act, const Target *);

/* Semantic equivalence of a planned step with the unplanned one: every op computes the same
 * expression of the decls (each decl versioned by the updates before it), recomputations
 * compute what they claim, copies are awaited before use. 0, or -1 with a message. */
int synth_equiv(const Func *orig, const Func *planned, char *err, size_t nerr);

/* exhaust.c: the least recompute seconds of any schedule of p (at most 12 values decided,
 * fewer for speed) whose live bytes stay within budget at every op, by exhaustive search of
 * ilp.c's model; -1 if none fits. */
double stage_search(const Prob *p, int64_t budget);

/* chainopt.c: the same on a chain (chain_check: 0, or -1 with why), by a search over
 * Rotor's plans with every byte counted; its plan into pl (may be NULL). -1 if none fits. */
int chain_check(const Prob *p, char *why, size_t nwhy);
double chain_opt(const Prob *p, int64_t budget, Plan *pl);
/* The smallest budget, to align, at which chain_opt finds a plan, by bisection below hi (a
 * budget that fits). */
int64_t chain_floor(const Prob *p, int64_t hi, int64_t align);

#endif
