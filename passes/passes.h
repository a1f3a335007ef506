/* passes.h: the passes over the IR, one file each, each with its contract (needs / fills). */
#ifndef MTC_PASSES_H
#define MTC_PASSES_H

#include "ir.h"

/* autodiff.c: needs m->fwd with fwd->loss and m->opt (a trained model); fills m->step with the
 * forward ops, the backward ops and the optimizer update, and adds the optimizer's state decls.
 * Returns 0, or -1 after a diagnostic. */
int autodiff(Module *, Src *);

/* The autodiff context: what a gradient rule (grad.c, named in OPTAB) sees. Rules read the
 * gradient of op->res with d_grad and accumulate their f32 operands' gradients with d_acc;
 * every op they emit is an ordinary PH_BWD op of the step, located at the forward op. */
typedef struct Diff {
	Func *f;          /* the step under construction */
	int *grad;        /* value -> its gradient so far, -1: none yet */
	uint8_t *need;    /* value -> depends on a param, so its gradient is wanted */
	const char *base; /* name of the value being differentiated: results are "d.<base>" */
	Loc loc;          /* of the forward op being differentiated */
} Diff;
int d_grad(Diff *, int v);
int d_need(Diff *, int v);
/* grad[v] += g; g may have a shape v broadcasts to: it is reduced with sum_to first. */
void d_acc(Diff *, int v, int g);
/* Emit one backward op and return its result (-1 for F_NORES ops). given: the result type of
 * F_GIVEN ops, else NULL. ia/fa may be NULL. An operand mismatch is a bug: it dies. */
int d_emit(Diff *, Opk, const int *args, int n, const int64_t *ia, int nia, const double *fa,
           const Type *given);
/* The same, shorter, for ops without attributes. */
int d_op1(Diff *, Opk, int a);
int d_op2(Diff *, Opk, int a, int b);
/* g reduced (sum_to) to the shape of value v, or g itself when the shapes agree. */
int d_sumto(Diff *, int g, int v);

/* copy.c: rebuilding functions. copy_op appends a copy of op (of function `from`) to `to`,
 * its operands renamed through map (from's value -> to's value), sets map[op->res] and returns
 * the new op index; phase < 0 keeps the op's phase. func_adopt moves a freshly built function
 * into *f (whose old tables are freed), so pointers to f stay valid. */
int copy_op(Func *to, const Func *from, const Op *op, int *map, int phase);
void func_adopt(Func *f, Func *nf);
/* A fresh function with f's decls, then f's ops for which keep[op] (NULL: all) is set, its
 * outputs and loss: a clone with the module's current decls. map: f's value -> the new one's
 * (f->nval entries, -1 where dropped; may be NULL). */
Func *func_rebuild(Func *f, const uint8_t *keep, int *map);

/* simplify.c: dead-code elimination (forward keeps only what its outputs need; step keeps the
 * loss and the updates) and common-subexpression elimination. Never run after planning. */
void simplify(Func *);

/* cost.c: the cost rules of the op table (FLOPs per op). */

#endif
