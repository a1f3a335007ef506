/* tb.h: a test bench for autodiff: models built in C, run through the interpreter. */
#ifndef MTC_TB_H
#define MTC_TB_H

#include "passes.h"

#include "../build.h"

/* How a decl's test values are drawn. */
typedef enum { V_UNIF, V_SIGNED, V_GRID, V_INT } Vkind;

typedef struct Tb {
	Module *m;
	int ndecl;
	Vkind vk[64];
	double lo[64], hi[64];
} Tb;

#define SH(...) (Shape){ sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ } }
#define SCALAR ((Shape){ 0, { 0 } })

void tb_init(Tb *, const char *name);
void tb_free(Tb *);
/* A decl; its test values: V_UNIF uniform [lo, hi), V_SIGNED magnitude in [lo, hi) with a
 * random sign, V_GRID distinct values lo + k*hi in random order, V_INT integers in [0, hi). */
int tb_decl(Tb *, const char *name, Role, DType, Shape, Vkind, double lo, double hi);
/* A forward op (phase fwd) with attributes; dies on a shape error (a bug in the test). */
int tb_op(Tb *, Opk, const int *args, int n, const int64_t *ia, int nia, const double *fa,
          const Shape *given);
int tb_op1(Tb *, Opk, int a);
int tb_op2(Tb *, Opk, int a, int b);
/* Add an input decl after ops exist: the forward is rebuilt; *v is renumbered. */
int tb_late_input(Tb *, const char *name, Type, int *v);
/* An interpreter holding the decls' test values. */
Interp *tb_interp(Tb *);
/* A function of the step's non-update ops whose outputs are the gradients that its updates
 * use: grads[i] for param pars[i]; returns the count. */
Func *tb_gradfunc(Module *, int *pars, int *npar);
void tb_funcfree(Func *);        /* frees a function made by tb_gradfunc */
/* Uniform in [0, 1), one fixed sequence per program. */
double tb_rand(void);

#endif
