/* build.h: types and ops built in C for the tests: types from numbers or from text, and ops
 * appended with their result type from the kind's shape rule. */
#ifndef MTC_TESTS_BUILD_H
#define MTC_TESTS_BUILD_H

#include "ir.h"

/* ty(F32, 2, 4, 8) is f32[4,8]; the dims are ints. */
Type ty(DType, int rank, ...);
/* "f32[4,8]", "i32[]" -> the type (the test's own text, trusted). */
Type ty_of(const char *);

/* Append op k to f in phase ph, its result named name (NULL: a number), at loc. Its result
 * type comes from the kind's rule (op_infer); given is the type an F_GIVEN op's rule is
 * handed (else NULL). ia: nia entries for a list attribute, else the kind's count; fa: the
 * kind's count; either may be NULL (zeros). Dies on a shape error, a bug in the test.
 * Returns the op's index; its value is f->op[i].res (-1 for an op without a result), read
 * after the call: build_op may move f->op, so f->op[build_op(...)] is wrong. */
int build_op(Func *, Opk, Phase, const int *args, int nargs, const int64_t *ia, int nia,
             const double *fa, const Type *given, const char *name, Loc);

/* A hyperparameter decl of m (role hyper, f32[] = full(v)), named "opt.NAME" as autodiff
 * names them; before any function exists. Returns its decl index. */
int hyper_decl(Module *, const char *name, double v);

/* Does m print, parse back (as a file named name) and print the same text? */
int roundtrips(const Module *, const char *name);

#endif
