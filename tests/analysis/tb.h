/* tb.h: helpers the analysis tests share: their models built in C, the analysis pipeline. */
#ifndef TB_H
#define TB_H

#include "passes.h"

#include "../build.h"

int tb_decl(Module *, const char *name, Role, Type);
/* Append an op (shape inferred; F_GIVEN ops take *given), die on a shape error; returns the
 * result value (or -1). Every op gets loc (1, its creation index) to identify it later. */
int tb_op(Func *, Opk, Phase, const int *args, int nargs, const int64_t *ia, const double *fa,
          const Type *given, const char *name);
int tb_op1(Func *, Opk, Phase, int a, const char *name);
int tb_op2(Func *, Opk, Phase, int a, int b, const char *name);
int tb_mm(Func *, Phase, int a, int b, int ta, int tb, const char *name);

/* A hand-made training step of an MLP (fwd, bwd, sgd-momentum updates at the end, the order
 * autodiff writes): L hidden layers of width D, batch B, IN inputs, C classes. */
Module *tb_mlp(int B, int IN, int D, int L, int C);
/* A random function over f32[4, w] values: unary, add, matmul by params, swaps, updates. */
Module *tb_random(unsigned seed, int nops);

/* Everything the analyses produce for one function. */
typedef struct An {
	Live l;
	Cost c;
	Layout lay;
	Dag d;
} An;
void tb_analyze(An *, Func *, const Target *, const char *sched);
void tb_free(An *);

#endif
