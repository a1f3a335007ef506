/* check.h: the verifier's checks with a pluggable reporter (ir/verify.c), for the IR parser. */
#ifndef MTC_CHECK_H
#define MTC_CHECK_H

#include "ir.h"

/* One problem: in function f (NULL: the module) at op index op (-1: not an op); rel is an
 * earlier op the message names (e.g. the update a later read conflicts with), or -1. */
typedef void Report(void *ctx, const Func *f, int op, int rel, const char *msg);

/* Run every check of ir_verify, reporting through rep; returns the number of problems. */
int ir_check(const Module *, Report *rep, void *ctx);
/* A type a tensor can have: f32 or i32, rank <= MAXRANK, dims >= 1, bytes within int64. */
int type_ok(const Type *);

#endif
