/* cases.h: the one table of op test cases that tests/ops/ops.c runs on every target.
 *
 * A group of cases becomes one module: each fresh operand an input declaration (a param or
 * optimizer state for the updates), each case one op, its result an output. Groups with
 * `step` set are built as a step function (the updates need one): the first case is the
 * loss, the updated params and state are compared after the step. */
#ifndef MTC_TESTS_OPS_CASES_H
#define MTC_TESTS_OPS_CASES_H

#include "ir.h"

#define MAXCASE 128
#define MAXCARG 6        /* operands of a case */

typedef struct Case {
	Opk k;
	int nargs;
	Type at[MAXCARG];        /* operand types (fresh operands) */
	Role role[MAXCARG];      /* fresh operands: input (default), param, state or buffer */
	int arg[MAXCARG];        /* -1: a fresh operand; c >= 0: the result of case c of the group;
	                          * -100 - c: the first operand of case c */
	int64_t ia[MAXIA];
	int nia;
	double fa[MAXFA];
	Type given;              /* F_GIVEN ops */
	int pos;                 /* f32 fresh operands made positive (log, sqrt, divisors) */
} Case;

typedef struct Group {
	const char *name;
	int step;                /* built as a step function (see above) */
	int ncase;
	Case c[MAXCASE];
} Group;

/* The table: every group, in order; *n is set to their count. Built once, never freed. */
const Group *op_cases(int *n);

/* The op kinds no case runs, with the test that covers them (a plan makes their operands). */
typedef struct Elsewhere {
	Opk k;
	const char *where;
} Elsewhere;
extern const Elsewhere op_elsewhere[];
extern const int nop_elsewhere;

#endif
