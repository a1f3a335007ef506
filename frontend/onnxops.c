/* onnxops.c: the table of the ONNX ops mtc imports (onnxcall.c looks each node's op up in
 * it), and what the op files share: helpers of known values, of node inputs and outputs.
 * Semantics follow the ONNX operator documents of opsets 11 to 18; an op or attribute value
 * outside what is handled is an error naming the node, never a guess. Each op's fold (every
 * input known at import time) and emit (IR ops) are in the op files:
 *   onnxshape.c  Constant, Shape, Cast, Where, Expand, Range and the layout ops
 *   onnxew.c     elementwise ops, reductions, CumSum
 *   onnxindex.c  Gather, Slice, Split, Pad, the scatters, OneHot, ArgMax, TopK
 *   onnxnn.c     MatMul, Gemm, Einsum, softmax, normalizations, RNNs, losses
 *   onnxconv.c   convolutions, pooling, Resize */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"


Kv *
knew(Ox *x, KDt dt, const Shape *sh)
{
	int64_t n = 1;

	for (int i = 0; i < sh->rank; i++)
		if (sh->d[i] < 0 || mul64(n, sh->d[i], &n) || n > MAXKNOWN) {
			xerr(x, "a tensor folded at import time would have more than %d elements", MAXKNOWN);
			return NULL;
		}
	return kv_new(x->a, dt, sh);
}

/* A shallow copy of k with shape sh (same element count): reshapes move no data. */
Kv *
kreshape(Ox *x, const Kv *k, const Shape *sh)
{
	Kv *r = aalloc(x->a, sizeof *r);

	*r = *k;
	r->sh = *sh;
	return r;
}

int
rank_ok(Ox *x, int r)
{
	if (r > MAXRANK)
		return xerr(x, "the result would have rank %d, more than mtc's limit of %d", r, MAXRANK);
	return 0;
}

/* A known 1-D (or scalar) integer tensor as a list of at most MAXRANK integers. */
int
klist(Ox *x, const Kv *k, int64_t *v, int *n, const char *what)
{
	if (!k)
		return -1;
	if (k->dt == KF || k->sh.rank > 1)
		return xerr(x, "%s must be a list of integers", what);
	if (k->n > MAXRANK)
		return xerr(x, "%s has %lld elements, more than mtc's rank limit of %d", what,
		            (long long)k->n, MAXRANK);
	for (int64_t i = 0; i < k->n; i++)
		v[i] = k->i[i];
	*n = (int)k->n;
	return 0;
}

/* A known scalar (or one-element tensor) as a double. */
int
kscalar(Ox *x, const Kv *k, double *v, const char *what)
{
	if (!k)
		return -1;
	if (k->n != 1)
		return xerr(x, "%s must be a single value, it has %lld", what, (long long)k->n);
	*v = kv_get(k, 0);
	return 0;
}

/* A list of axes (negatives counted from the end of rank r), each once, into v. */
int
axes_of(Ox *x, int64_t *v, int n, int r)
{
	int seen[MAXRANK] = { 0 };

	for (int i = 0; i < n; i++) {
		int a = axis_of(x, v[i], r);
		if (a < 0)
			return -1;
		if (seen[a]++)
			return xerr(x, "axis %lld is given twice", (long long)v[i]);
		v[i] = a;
	}
	return 0;
}

/* The axes of Unsqueeze, Squeeze, ReduceX and Split-like ops: an attribute before opset
 * `since`, the optional input `in` from it. *n = -1: not given. */
int
axes_arg(Ox *x, int since, int in, const char *att, int64_t *v, int *n)
{
	if (x->o->opset >= since) {
		*n = -1;
		return has_in(x, in) ? klist(x, in_k(x, in), v, n, "the axes") : 0;
	}
	*n = att_ints(x, att, v, MAXRANK);
	return *n == -2 ? xerr(x, "attribute '%s' has more than %d elements", att, MAXRANK) : 0;
}

/* ---------- inputs and outputs the op files share ---------- */

/* Input i as an f32 IR value for a comparison, Where, Min or Max: run-time booleans are f32
 * 0 and 1 (comparisons make them), known booleans and integers are made so; a run-time
 * integer tensor is refused. -1 after an error. */
int
in_f32(Ox *x, int i)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1;
	Type t;
	Kv *k, *f;

	if (in_type(x, i, &t))
		return -1;
	if (t.dt == F32)
		return in_t(x, i);
	if (x->x[id].v >= 0)
		return xerr(x, "input '%s' is an integer tensor computed at run time: %s of run-time "
		            "integers is not supported", x->o->name[id], x->nd->op);
	if (!(k = in_k(x, i)) || !(f = knew(x, KF, &k->sh)))
		return -1;
	for (int64_t j = 0; j < k->n; j++)
		if ((double)(f->f[j] = (float)kv_get(k, j)) != kv_get(k, j))
			return xerr(x, "input '%s' holds %.17g, which a float cannot hold exactly",
			            x->o->name[id], kv_get(k, j));
	return xknown(x, f, x->o->name[id]);
}

/* Output 0 as v, a run-time boolean (f32 1 or 0); 0, or -1 if v is. */
int
out_bool(Ox *x, int v)
{
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	if (x->nd->nout && x->nd->out[0] >= 0)
		x->x[x->nd->out[0]].boolean = 1;
	return 0;
}

/* Is input i known at import time without ops, and not made from a param? */
int
known_in(Ox *x, int i)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1;
	const Xv *v = id >= 0 ? &x->x[id] : NULL;

	return v && !v->param && v->v < 0 && (v->k || v->wait || x->o->initof[id] >= 0);
}

/* Input i as run-time integer indices: i32 as it is; a count or a boolean, exact integers
 * held in f32 (mask.cumsum(1).long()), made i32 by to_i32 where i32 is wanted (an
 * embedding's ids), else kept in f32 (onehot_eq compares floats); else an error naming what.
 * -1 after an error. */
int
in_index(Ox *x, int i, const char *what, int i32)
{
	int v = in_t(x, i);
	const Xv *in;

	if (v < 0 || x->c->f->val[v].ty.dt == I32)
		return v;
	in = &x->x[x->nd->in[i]];
	if (in->count || in->boolean)
		return i32 ? xemit1(x, OP_TOI32, v) : v;
	return xerr(x, "the %s must be integers", what);
}

/* ---------- the table ---------- */

static const OxOp ops[] = {
	{ "Abs", fold_un, emit_un, 0, 0 },
	{ "Add", fold_bin, emit_bin, 0, 0 },
	{ "And", fold_bin, emit_cmp, 0, 0 },
	{ "ArgMax", NULL, emit_argmax, 0, 0 },
	{ "ArgMin", NULL, emit_argmax, 0, 0 },
	{ "AveragePool", NULL, emit_pool, 0, 0 },
	{ "BatchNormalization", NULL, emit_bn, 0, 0 },
	{ "Cast", fold_cast, emit_cast, 0, 0 },
	{ "Ceil", fold_un, emit_un, 0, 0 },
	{ "Celu", NULL, emit_leaky, 0, 0 },
	{ "Clip", NULL, emit_clip, 0, 0 },
	{ "Concat", fold_concat, emit_concat, 0, 1 },
	{ "Constant", fold_constant, NULL, 0, 0 },
	{ "ConstantOfShape", fold_cos, NULL, 0, 0 },
	{ "Conv", NULL, emit_conv, 0, 0 },
	{ "ConvTranspose", NULL, emit_convt, 0, 0 },
	{ "Cos", fold_un, emit_un, 0, 0 },
	{ "CumSum", NULL, emit_cumsum, 0, 0 },
	{ "DepthToSpace", NULL, emit_d2s, 0, 0 },
	{ "Div", fold_bin, emit_bin, 0, 0 },
	{ "Dropout", NULL, emit_dropout, 0, 0 },
	{ "Einsum", fold_einsum, emit_einsum, 0, 0 },
	{ "Elu", NULL, emit_leaky, 0, 0 },
	{ "Equal", fold_bin, emit_cmp, 0, 0 },
	{ "Erf", fold_un, emit_un, 0, 0 },
	{ "Exp", fold_un, emit_un, 0, 0 },
	{ "Expand", fold_expand, emit_expand, 0, 1 },
	{ "Flatten", fold_layout, emit_layout, 0, 1 },
	{ "Floor", fold_un, emit_un, 0, 0 },
	{ "GRU", NULL, emit_rnn, 0, 0 },
	{ "Gather", fold_gather, emit_gather, 0, 1 },
	{ "GatherElements", NULL, emit_gatherel, 0, 0 },
	{ "Gemm", NULL, emit_gemm, 0, 0 },
	{ "GlobalAveragePool", NULL, emit_gap, 0, 0 },
	{ "GlobalMaxPool", NULL, emit_gap, 0, 0 },
	{ "Greater", fold_bin, emit_cmp, 0, 0 },
	{ "GreaterOrEqual", fold_bin, emit_cmp, 0, 0 },
	{ "HardSigmoid", NULL, emit_hard, 0, 0 },
	{ "HardSwish", NULL, emit_hard, 0, 0 },
	{ "Identity", fold_identity, emit_identity, 0, 1 },
	{ "InstanceNormalization", NULL, emit_instnorm, 0, 0 },
	{ "IsInf", NULL, emit_isnan, 0, 0 },
	{ "IsNaN", NULL, emit_isnan, 0, 0 },
	{ "LSTM", NULL, emit_rnn, 0, 0 },
	{ "LayerNormalization", NULL, emit_layernorm, 0, 0 },
	{ "LeakyRelu", NULL, emit_leaky, 0, 0 },
	{ "Less", fold_bin, emit_cmp, 0, 0 },
	{ "LessOrEqual", fold_bin, emit_cmp, 0, 0 },
	{ "Log", fold_un, emit_un, 0, 0 },
	{ "LogSoftmax", NULL, emit_softmax, 0, 0 },
	{ "MatMul", fold_matmul, emit_matmul, 0, 0 },
	{ "Max", fold_bin, emit_bin, 0, 0 },
	{ "MaxPool", NULL, emit_pool, 0, 0 },
	{ "Mean", NULL, emit_sum, 0, 0 },
	{ "Min", fold_bin, emit_bin, 0, 0 },
	{ "Mod", fold_bin, NULL, 0, 0 },
	{ "Mul", fold_bin, emit_bin, 0, 0 },
	{ "Neg", fold_un, emit_un, 0, 0 },
	{ "NegativeLogLikelihoodLoss", NULL, emit_xentloss, 0, 0 },
	{ "Not", fold_un, emit_not, 0, 0 },
	{ "OneHot", NULL, emit_onehot, 0, 0 },
	{ "Or", fold_bin, emit_cmp, 0, 0 },
	{ "PRelu", NULL, emit_leaky, 0, 0 },
	{ "Pad", fold_pad, emit_pad, 0, 0 },
	{ "Pow", fold_bin, emit_pow, 0, 0 },
	{ "Range", fold_range, NULL, 0, 0 },
	{ "Reciprocal", fold_un, emit_un, 0, 0 },
	{ "ReduceL1", NULL, emit_reduce, 0, 0 },
	{ "ReduceL2", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceLogSumExp", NULL, emit_reduce, 0, 0 },
	{ "ReduceMax", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceMean", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceMin", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceProd", fold_reduce, NULL, 0, 0 },
	{ "ReduceSum", fold_reduce, emit_reduce, 0, 0 },
	{ "ReduceSumSquare", fold_reduce, emit_reduce, 0, 0 },
	{ "Relu", fold_un, emit_un, 0, 0 },
	{ "Reshape", fold_layout, emit_layout, 0, 1 },
	{ "Resize", NULL, emit_resize, 0, 0 },
	{ "Round", fold_un, emit_un, 0, 0 },
	{ "ScatterElements", NULL, emit_scatterel, 0, 0 },
	{ "ScatterND", fold_scatternd, emit_scatternd, 0, 0 },
	{ "Selu", NULL, emit_leaky, 0, 0 },
	{ "Shape", fold_shape, NULL, 1, 0 },
	{ "Sigmoid", fold_un, emit_un, 0, 0 },
	{ "Sign", NULL, emit_sign, 0, 0 },
	{ "Sin", fold_un, emit_un, 0, 0 },
	{ "Size", fold_size, NULL, 1, 0 },
	{ "Slice", fold_slice, emit_slice, 0, 1 },
	{ "Softmax", NULL, emit_softmax, 0, 0 },
	{ "SoftmaxCrossEntropyLoss", NULL, emit_xentloss, 0, 0 },
	{ "Softplus", NULL, emit_leaky, 0, 0 },
	{ "Split", fold_split, emit_split, 0, 1 },
	{ "Sqrt", fold_un, emit_un, 0, 0 },
	{ "Squeeze", fold_layout, emit_layout, 0, 1 },
	{ "Sub", fold_bin, emit_bin, 0, 0 },
	{ "Sum", NULL, emit_sum, 0, 0 },
	{ "Tanh", fold_un, emit_un, 0, 0 },
	{ "Tile", NULL, emit_tile, 0, 1 },
	{ "TopK", NULL, emit_topk, 0, 0 },
	{ "Transpose", fold_transpose, emit_transpose, 0, 1 },
	{ "Trilu", fold_trilu, emit_trilu, 0, 0 },
	{ "Unsqueeze", fold_layout, emit_layout, 0, 1 },
	{ "Upsample", NULL, emit_resize, 0, 0 },
	{ "Where", fold_where, emit_where, 0, 0 },
	{ "Xor", fold_bin, emit_cmp, 0, 0 },
};

const OxOp *
ox_op(const char *name)
{
	static int sorted;
	size_t lo = 0, hi = sizeof ops / sizeof *ops;

	for (size_t i = 1; !sorted && i < hi; i++)
		if (strcmp(ops[i - 1].name, ops[i].name) >= 0)
			die("the ONNX op table is not sorted at %s", ops[i].name);
	sorted = 1;

	while (lo < hi) {       /* the table is sorted by name */
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, ops[mid].name);
		if (c == 0)
			return &ops[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}
