/* cost.c: the op table's cost rules: floating-point operations each op performs. */
#include "passes.h"

static double
numel_res(const Func *f, const Op *op)
{
	int v = op->res >= 0 ? op->res : op->args[0];
	return (double)shape_numel(&f->val[v].ty.sh);
}

static double
numel_arg(const Func *f, const Op *op, int i)
{
	return (double)shape_numel(&f->val[op->args[i]].ty.sh);
}

double co_zero(const Func *f, const Op *op) { (void)f; (void)op; return 0; }
double co_ew1(const Func *f, const Op *op) { return numel_res(f, op); }
double co_ew8(const Func *f, const Op *op) { return 8 * numel_res(f, op); }
double co_red(const Func *f, const Op *op) { return numel_arg(f, op, 0); }
double co_softmax(const Func *f, const Op *op) { return 10 * numel_arg(f, op, 0); }
double co_layernorm(const Func *f, const Op *op) { return 10 * numel_arg(f, op, 0); }

/* 2*M*N*K over the batch: the result has M*N per batch, K is the contracted dimension. */
double
co_matmul(const Func *f, const Op *op)
{
	const Shape *a = &f->val[op->args[0]].ty.sh;
	int64_t k = op->ia[0] ? a->d[a->rank - 2] : a->d[a->rank - 1];
	return 2.0 * numel_res(f, op) * (double)k;
}
