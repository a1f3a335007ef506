/* grad.c: the op table's gradient rules, and the exact meaning of the backward helper ops.
 *
 * Each rule gets a forward op of the step and the autodiff context (passes.h): it reads dy,
 * the gradient of op->res, and accumulates the gradients of the op's f32 operands with
 * d_acc, which also reduces a broadcast gradient back to the operand's shape (sum_to).
 * Rules emit only ordinary ops, so the backward is IR like the rest.
 *
 * The helper ops, defined here once (the interpreter and the code generators implement them
 * from these definitions; "bcast" is NumPy broadcasting of operands to the result shape):
 *
 *   sum_to(g) -> T          T is given and broadcasts to g's shape; r[j] = sum of g[i] over
 *                           every i that broadcasting maps to j (the transpose of broadcast).
 *   broadcast(x) -> T       T is given; r[i] = x[the index broadcasting maps i to].
 *   slice(x) axis start -> T  T is given: x's shape but d[axis] = n; r[.., j, ..] =
 *                           x[.., start + j, ..] along axis, 0 <= start, start + n <= x.d[axis].
 *   slice_grad(dy) axis start -> T (given)   zeros of T, then r[.., start + j, ..] =
 *                           dy[.., j, ..] along axis (the transpose of slice).
 *   Convolution (sh sw ph pw dh dw groups: strides, paddings, dilations, groups G) of x
 *   f32[N, C, H, W] by w f32[Cout, Cg = C/G, kh, kw], output Ho x Wo (ir.h's window_out), Cog =
 *   Cout/G. The columns of x: cols[(c*kh + i)*kw + j, (n, oh, ow)] = x[n, c, oh*sh - ph + i*dh,
 *   ow*sw - pw + j*dw], 0 in the padding; group g's rows are those of its channels (Kg = Cg*kh*kw
 *   of them). Every sum below is in one float from 0, its terms in the order given:
 *   workspace -> T (given)  bytes, contents undefined, for the one op that takes it (F_WS).
 *   conv2d(x, w, ws?) (forward): y[n, o, oh, ow] = sum over k < Kg of w_g[o, k] * cols_g[k, (n,
 *                           oh, ow)], g = o / Cog: the GEMM w_g [Cog, Kg] @ cols_g, k ascending.
 *   conv2d_dx(w, dy, ws?) -> T (given: x's type)   dx = col2im(dcols), dcols_g = w_g^T @ dy_g
 *                           (o ascending), col2im: dx[n, c, h, w] = the sum over the kernel
 *                           offsets (i, j), i then j ascending, whose column (n, oh, ow) reads
 *                           x[n, c, h, w], of dcols[(c*kh + i)*kw + j, (n, oh, ow)].
 *   conv2d_dw(x, dy, ws?) -> T (given: w's type)   dw_g = dy_g [Cog, N*Ho*Wo] @ cols_g^T, the
 *                           columns (n, oh, ow) ascending.
 *   The workspace (all but pointwise convolutions, 1x1, stride 1, no padding, and depthwise
 *   ones, groups = C = Cout) holds the
 *   columns and the GEMM's rows of a chunk of images at a time (ir.h's conv_workspace); it
 *   changes no sum's order. conv2d_dx may also be a forward op (a transposed convolution,
 *   ONNX's ConvTranspose, imported as conv2d_dx(w, x)); its gradient is conv2d(dy, w) for x
 *   and conv2d_dw(dy, x) for w, in the same geometry.
 *   max_pool2d(x) kh kw sh sw ph pw dh dw (forward), PyTorch's: each output the max over its
 *                           window (kernel offsets (i, j) row-major, at oh*sh - ph + i*dh,
 *                           ow*sw - pw + j*dw, the padding left out); its arg-max the first
 *                           offset whose value is greater than every one before it, or NaN.
 *   max_pool2d_grad(x, dy) same attributes: zeros of x's shape, then for every output in order
 *                           (n, c, oh, ow ascending) dy added at its window's arg-max in x.
 *   avg_pool2d(x) kh kw sh sw ph pw count_include_pad (forward): the sum of the window's
 *                           elements in x (offsets row-major, from 0), divided by kh*kw
 *                           (count_include_pad 1) or by the number of them inside x (0).
 *   avg_pool2d_grad(dy) same attributes -> T (given: x's type): zeros, then for every output in
 *                           order dy / its divisor added to each element of its window in x.
 *   Batch norm over x f32[N, C, ...] (C the channels; each channel's Q = numel/C values),
 *   with invstd[c] = (float)(1 / sqrt((double)var[c] + eps)) (double, as PyTorch's
 *   accumulation type on the CPU), sums in double in index order, rounded to float once:
 *   batch_norm(x, gamma, beta, mean, var) training eps momentum (forward): with a = gamma[c] *
 *                           invstd[c] and b = beta[c] - mean[c] * a (float), y = x * a + b
 *                           (PyTorch's order). training and momentum are for autodiff: 0 means
 *                           mean and var are the running statistics (buffers), 1 the batch's
 *                           (made by the next two ops, updated into the buffers by
 *                           batch_norm_update).
 *   batch_norm_mean(x) (forward)   f32[C]: the sum of channel c's values / Q.
 *   batch_norm_var(x, mean) (forward)  f32[C]: the sum of ((double)x - mean)^2 / Q (biased).
 *   batch_norm_dstats(x, mean, var, dy) eps -> f32[2, C]: row 0 the sum of dy * ((double)x -
 *                           mean) times invstd (gamma's gradient), row 1 the sum of dy (beta's).
 *   batch_norm_dx(x, gamma, mean, var, dy, ds) training eps: with w = invstd * gamma (float):
 *                           training 1, gm = ds[1, c] / Q and pj = ds[0, c] * invstd / Q (in
 *                           double, then float): dx = (dy - gm - (x - mean) * pj) * w; training
 *                           0 (constant statistics): dx = dy * w. PyTorch's formulas.
 *   batch_norm_update(rmean, rvar, mean, var) count momentum (an update of buffers, in place, in
 *                           double): rmean = m * mean + (1 - m) * rmean; rvar = m * var * count /
 *                           (count - 1) + (1 - m) * rvar (the unbiased variance, count = Q).
 *   dropout(x, t) key seed chunk parts part rankparts p (forward; t the step counter, i32[]):
 *                           element i of x kept, times scale = (float)(1 / (1 - p)), where
 *                           u = mtc_dropout_u(g, key, t, seed) for g = mtc_dropout_at(i, chunk,
 *                           parts, part + rank rankparts), i's place in the whole batch
 *                           (docs/ir.md) (<mtc/mtc-ops.h>: Philox4x32-10 of the counter (g, key, t)
 *                           under the key seed, 24 bits as a float in [0, 1)) is at least p,
 *                           else 0. A function of its operands and attributes: a recomputation
 *                           draws the same mask, and so does the gradient, dropout(dy, t) with
 *                           the same attributes. dropout(x) (no counter, inference) is x.
 *   relu_grad(x, dy)        dy where x > 0, else 0 (x: relu's input or result). (bcast)
 *   clip_grad(y, dy) lo hi  dy where lo < y < hi, else 0 (y: clip's result; strict at the
 *                           bounds, as PyTorch's hardtanh, so ReLU6's gradient). (bcast)
 *   gelu_grad(x, dy)        dy * d/dx gelu_tanh(x): with u = k*(x + 0.044715 x^3),
 *                           k = sqrt(2/pi), t = tanh(u):
 *                           dy * (0.5*(1 + t) + 0.5*x*(1 - t^2)*k*(1 + 3*0.044715 x^2)). (bcast)
 *   tanh_grad(y, dy)        dy * (1 - y^2)            y = tanh(x)            (bcast)
 *   sigmoid_grad(y, dy)     dy * y * (1 - y)          y = sigmoid(x)         (bcast)
 *   sqrt_grad(y, dy)        dy * 0.5 / y              y = sqrt(x)            (bcast)
 *   rsqrt_grad(y, dy)       -0.5 * dy * y^3           y = rsqrt(x)           (bcast)
 *   pow_grad(x, dy) c       dy * c * x^(c-1)          (C's pow; x^0 = 1)     (bcast)
 *   cumsum(x) axis exclusive reverse (forward): along axis, r[k] = the sum of x[j] over j <= k
 *                           (j < k if exclusive; j >= k, j > k if reverse), accumulated in
 *                           double in the order of j from the sum's start, each r rounded to
 *                           float once (PyTorch's CPU cumsum). Its gradient is the cumsum of
 *                           dy with reverse flipped.
 *   argmax(x) axis keepdims (forward) -> i32: along axis, the index of the first largest
 *                           element, or of the first NaN (torch.argmax); no gradient.
 *   maximum_grad(a, b, dy)  0 where a < b, dy / 2 where a == b, else dy: maximum's gradient
 *                           for a, PyTorch's (b's is maximum_grad(b, a, dy)).  (bcast)
 *   max_grad(x, y, dy) axis keepdims
 *                           y = max(x, axis, keepdims), dy its gradient (y's shape); the result
 *                           has x's shape: along axis, dy goes to the FIRST index where
 *                           x == y, every other element is 0. Autodiff always passes y =
 *                           max(x), so an implementation may recompute the first arg-max from
 *                           x instead; other y are outside the op's domain.
 *   softmax_grad(y, dy) axis        y * (dy - sum(dy * y, axis, keepdims))  y = softmax(x)
 *   log_softmax_grad(y, dy) axis    dy - exp(y) * sum(dy, axis, keepdims)   y = log_softmax(x)
 *   layernorm_dx(x, gamma, dy) eps  over the last axis (length D), per row: mu = mean(x),
 *                           var = mean((x - mu)^2) (biased), rs = 1/sqrt(var + eps),
 *                           xh = (x - mu)*rs, g = dy*gamma:
 *                           dx = rs * (g - mean(g) - xh * mean(g * xh)).
 *   layernorm_dgamma(x, dy) eps     f32[D]: sum over all rows of dy * xh (xh as above).
 *   embedding_grad(ids, dy) -> f32[V, D] (given)   zeros, then for every position p of ids:
 *                           r[ids[p], :] += dy[p, :] (scatter-add; ids out of [0, V): an error
 *                           of the evaluator, as in the forward).
 *   cross_entropy_grad(logits, labels, dl)   (softmax(logits, last axis) - onehot(labels))
 *                           * dl / P, P = numel(labels), the number of positions.
 *   mse_grad(a, b, dl)      2 * (a - b) * dl / N, N = numel of the broadcast shape.  (bcast)
 *
 * And the optimizer updates (PH_UPD, in place; PyTorch's rules, torch.optim 1.13). Their
 * hyperparameters are f32[] operands (the decls of role hyper that autodiff makes, "opt.lr"
 * ..., so an instance changes them between steps); the formulas are mtc-ops.h's mtc_*_update,
 * which the interpreter calls and both targets print:
 *   sgd_update(p, g, lr, wd)                g' = g + wd p (if wd != 0); p -= lr g'
 *   sgd_momentum_update(p, v, g, lr, momentum, wd)
 *                                           g' = g + wd p (if wd != 0); v = momentum v + g';
 *                                           p -= lr v
 *   tick(t)                                 t += 1 (i32; runs before every adam_update)
 *   adam_update(p, m, v, g, t, lr, beta1, beta2, eps)
 *                           m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2;
 *                           mh = m / (1 - beta1^t); vh = v / (1 - beta2^t);
 *                           p -= lr * mh / (sqrt(vh) + eps)
 *   adamw_update(p, m, v, g, t, lr, beta1, beta2, eps, wd)
 *                           p *= 1 - lr*wd (decoupled weight decay), then adam_update's step
 * Gradient clipping by global norm (clip_grad_norm_) has two ops of its own:
 *   sumsq(g) -> f32[]       the sum of g's squared elements (in double, element order)
 *   clip_coef(ss, c) -> f32[]   min(c / (sqrt(ss) + 1e-6), 1) (F_EW: mtc_clip_coef), NaN kept
 * and every update reads mul(g, coef) instead of g.
 */
#include "passes.h"

#define A(i) (op->args[i])
#define TY(v) (&d->f->val[(v)].ty)

void gr_none(Diff *d, const Op *op) { (void)d; die("%s has no gradient", opinfo[op->kind].name); }

/* ---------- elementwise ---------- */

void
gr_add(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	d_acc(d, A(0), dy);
	d_acc(d, A(1), dy);
}

void
gr_sub(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	d_acc(d, A(0), dy);
	if (d_need(d, A(1)))
		d_acc(d, A(1), d_op1(d, OP_NEG, d_sumto(d, dy, A(1))));
}

void
gr_mul(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	if (d_need(d, A(0)))
		d_acc(d, A(0), d_op2(d, OP_MUL, dy, A(1)));
	if (d_need(d, A(1)))
		d_acc(d, A(1), d_op2(d, OP_MUL, dy, A(0)));
}

/* y = a / b: da = dy / b, db = -dy * a / b^2 = -(da * y). */
void
gr_div(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res), da = d_op2(d, OP_DIV, dy, A(1));
	d_acc(d, A(0), da);
	if (d_need(d, A(1)))
		d_acc(d, A(1), d_op1(d, OP_NEG, d_op2(d, OP_MUL, da, op->res)));
}

/* relu's result is positive exactly where its input is: reading it instead of the input means
 * the backward saves one activation (the result, which the next op's gradient reads anyway). */
void gr_relu(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_RELU_G, op->res, d_grad(d, op->res))); }
void gr_gelu(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_GELU_G, A(0), d_grad(d, op->res))); }
void gr_tanh(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_TANH_G, op->res, d_grad(d, op->res))); }
void gr_sigmoid(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_SIGMOID_G, op->res, d_grad(d, op->res))); }
void gr_sqrt(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_SQRT_G, op->res, d_grad(d, op->res))); }
void gr_rsqrt(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_RSQRT_G, op->res, d_grad(d, op->res))); }
void gr_exp(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_MUL, d_grad(d, op->res), op->res)); }
void gr_log(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_DIV, d_grad(d, op->res), A(0))); }
void gr_neg(Diff *d, const Op *op) { d_acc(d, A(0), d_op1(d, OP_NEG, d_grad(d, op->res))); }
void gr_sin(Diff *d, const Op *op) { d_acc(d, A(0), d_op2(d, OP_MUL, d_grad(d, op->res), d_op1(d, OP_COS, A(0)))); }
void gr_cos(Diff *d, const Op *op) { d_acc(d, A(0), d_op1(d, OP_NEG, d_op2(d, OP_MUL, d_grad(d, op->res), d_op1(d, OP_SIN, A(0))))); }

/* equal, less, less_equal, floor, ceil, round: steps, whose gradient is 0 wherever it is defined (PyTorch's
 * comparisons have none): nothing flows back. */
void gr_step(Diff *d, const Op *op) { (void)d; (void)op; }

/* y = select(c, a, b): da = select(c, dy, 0), db = select(c, 0, dy) (an infinite branch not
 * taken gives no NaN, as a mask's product would); c, a comparison, gets none. */
void
gr_select(Diff *d, const Op *op)
{
	Type s = { F32, { 0, {0} } };
	double zero = 0;
	int dy = d_grad(d, op->res), z = d_emit(d, OP_CONST, NULL, 0, NULL, 0, &zero, &s);

	for (int k = 1; k <= 2; k++)
		if (d_need(d, A(k))) {
			int a[3] = { A(0), k == 1 ? dy : z, k == 1 ? z : dy };
			d_acc(d, A(k), d_emit(d, OP_SELECT, a, 3, NULL, 0, NULL, NULL));
		}
}

/* y = cumsum(x): dx = cumsum(dy) with the same axis and exclusive, reverse flipped. */
void
gr_cumsum(Diff *d, const Op *op)
{
	int64_t ia[MAXIA] = { op->ia[0], op->ia[1], !op->ia[2] };
	int dy = d_grad(d, op->res);

	d_acc(d, A(0), d_emit(d, OP_CUMSUM, &dy, 1, ia, 3, NULL, NULL));
}

/* y = maximum(a, b): da = maximum_grad(a, b, dy), db = maximum_grad(b, a, dy). */
void
gr_maximum(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);

	for (int k = 0; k < 2; k++)
		if (d_need(d, A(k))) {
			int a[3] = { A(k), A(1 - k), dy };
			d_acc(d, A(k), d_emit(d, OP_MAXIMUM_G, a, 3, NULL, 0, NULL, NULL));
		}
}

void
gr_clip(Diff *d, const Op *op)
{
	int a[2] = { op->res, d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_CLIP_G, a, 2, NULL, 0, op->fa, NULL));
}

void
gr_pow(Diff *d, const Op *op)
{
	int a[2] = { A(0), d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_POW_G, a, 2, NULL, 0, op->fa, NULL));
}

/* ---------- matmul ---------- */

static int
mm(Diff *d, int a, int b, int ta, int tb)
{
	int64_t ia[MAXIA] = { ta, tb };
	int args[2] = { a, b };
	return d_emit(d, OP_MATMUL, args, 2, ia, 0, NULL, NULL);
}

/* v of shape [..., r, c] as [prod(...) * r, c]. */
static int
rows(Diff *d, int v)
{
	Type t = *TY(v);
	int64_t n = shape_numel(&t.sh) / t.sh.d[t.sh.rank - 1];

	t.sh.d[0] = n;
	t.sh.d[1] = TY(v)->sh.d[TY(v)->sh.rank - 1];
	t.sh.rank = 2;
	return d_emit(d, OP_RESHAPE, &v, 1, NULL, 0, NULL, &t);
}

/* C = op(A) @ op(B), op(X) = X or X^T by ta, tb. With dC:
 *   d op(A) = dC @ op(B)^T,  d op(B) = op(A)^T @ dC,
 * and a transposed operand takes the transpose of that, written as one matmul with its own
 * flags so no transpose op is needed. Batch axes the operand was broadcast over come out of
 * the matmul full-size; d_acc sums them away. The common case of a weight, a rank-2 B times
 * a batched untransposed A (x @ w with x [B, S, D]), contracts over all rows at once as
 * PyTorch does: no [batch, k, n] temporary to sum. */
void
gr_matmul(Diff *d, const Op *op)
{
	int dc = d_grad(d, op->res), ta = (int)op->ia[0], tb = (int)op->ia[1];

	if (d_need(d, A(0)))
		d_acc(d, A(0), !ta ? mm(d, dc, A(1), 0, !tb) : mm(d, A(1), dc, tb, 1));
	if (!d_need(d, A(1)))
		return;
	if (TY(A(1))->sh.rank == 2 && TY(A(0))->sh.rank > 2 && !ta) {
		/* the reshapes made in statements of their own, the second operand's first (C leaves
		 * the order of a call's arguments to the compiler; the IR's names follow it) */
		int r1 = rows(d, tb ? A(0) : dc), r0 = rows(d, tb ? dc : A(0));
		d_acc(d, A(1), mm(d, r0, r1, 1, 0));
	} else
		d_acc(d, A(1), !tb ? mm(d, A(0), dc, !ta, 0) : mm(d, dc, A(0), 1, ta));
}

/* ---------- layout ---------- */

void
gr_transpose(Diff *d, const Op *op)
{
	int64_t inv[MAXIA] = {0};
	int a = d_grad(d, op->res);

	for (int i = 0; i < op->nia; i++)
		inv[op->ia[i]] = i;
	d_acc(d, A(0), d_emit(d, OP_TRANSPOSE, &a, 1, inv, op->nia, NULL, NULL));
}

void
gr_reshape(Diff *d, const Op *op)
{
	int a = d_grad(d, op->res);
	d_acc(d, A(0), d_emit(d, OP_RESHAPE, &a, 1, NULL, 0, NULL, TY(A(0))));
}

/* Each operand's gradient is its slice of dy along the axis. */
void
gr_concat(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	int64_t ia[MAXIA] = { op->ia[0], 0 };

	for (int i = 0; i < op->nargs; i++) {
		if (d_need(d, A(i)))
			d_acc(d, A(i), d_emit(d, OP_SLICE, &dy, 1, ia, 0, NULL, TY(A(i))));
		ia[1] += TY(A(i))->sh.d[op->ia[0]];
	}
}

void
gr_slice(Diff *d, const Op *op)
{
	int a = d_grad(d, op->res);
	d_acc(d, A(0), d_emit(d, OP_SLICE_G, &a, 1, op->ia, 0, NULL, TY(A(0))));
}

/* ---------- convolution ---------- */

/* A workspace for a convolution of x by w (none for a pointwise or depthwise one: -1). */
static int
conv_ws(Diff *d, const Shape *x, const Shape *w, const int64_t *a)
{
	Type t;
	if (!conv_workspace(x, w, a, &t))
		return -1;
	return d_emit(d, OP_WORKSPACE, NULL, 0, NULL, 0, NULL, &t);
}

/* y = conv2d(x, w): dx = conv2d_dx(w, dy), dw = conv2d_dw(x, dy), each with a workspace of
 * its own: only x is saved, as PyTorch does. */
void
gr_conv2d(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	Shape xs = TY(A(0))->sh, ws = TY(A(1))->sh;

	if (d_need(d, A(0))) {
		int a[3] = { A(1), dy, conv_ws(d, &xs, &ws, op->ia) };
		d_acc(d, A(0), d_emit(d, OP_CONV2D_DX, a, 2 + (a[2] >= 0), op->ia, 0, NULL, TY(A(0))));
	}
	if (d_need(d, A(1))) {
		int a[3] = { A(0), dy, conv_ws(d, &xs, &ws, op->ia) };
		d_acc(d, A(1), d_emit(d, OP_CONV2D_DW, a, 2 + (a[2] >= 0), op->ia, 0, NULL, TY(A(1))));
	}
}

/* y = conv2d_dx(w, x), a transposed convolution (ONNX's ConvTranspose; y has the shape of the
 * convolution's input): it is the adjoint of conv2d(., w), so dx = conv2d(dy, w) and
 * dw = conv2d_dw(dy, x), over the convolution's own geometry (dy in the place of its input). */
void
gr_conv2d_dx(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	Shape ys = TY(op->res)->sh, ws = TY(A(0))->sh;

	if (d_need(d, A(1))) {
		int a[3] = { dy, A(0), conv_ws(d, &ys, &ws, op->ia) };
		d_acc(d, A(1), d_emit(d, OP_CONV2D, a, 2 + (a[2] >= 0), op->ia, 0, NULL, NULL));
	}
	if (d_need(d, A(0))) {
		int a[3] = { dy, A(1), conv_ws(d, &ys, &ws, op->ia) };
		d_acc(d, A(0), d_emit(d, OP_CONV2D_DW, a, 2 + (a[2] >= 0), op->ia, 0, NULL, TY(A(0))));
	}
}

void
gr_maxpool(Diff *d, const Op *op)
{
	int a[2] = { A(0), d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_MAXPOOL_G, a, 2, op->ia, 0, NULL, NULL));
}

void
gr_avgpool(Diff *d, const Op *op)
{
	int a = d_grad(d, op->res);
	d_acc(d, A(0), d_emit(d, OP_AVGPOOL_G, &a, 1, op->ia, 0, NULL, TY(A(0))));
}

/* batch_norm: gamma's and beta's gradients are the two rows of batch_norm_dstats; x's is
 * batch_norm_dx, which in training takes the batch statistics' dependence on x into account
 * (the statistics' own ops are not differentiated: their values get no gradient). */
void
gr_batchnorm(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res), a[6] = { A(0), A(3), A(4), dy }, ds;
	Type c = *TY(A(1)), row = { F32, { 2, { 1, c.sh.d[0] } } };

	ds = d_emit(d, OP_BN_DSTATS, a, 4, NULL, 0, &op->fa[0], NULL);
	for (int k = 0; k < 2; k++)
		if (d_need(d, A(1 + k))) {
			int64_t ia[MAXIA] = { 0, k };
			int s = d_emit(d, OP_SLICE, &ds, 1, ia, 0, NULL, &row);
			d_acc(d, A(1 + k), d_emit(d, OP_RESHAPE, &s, 1, NULL, 0, NULL, &c));
		}
	if (d_need(d, A(0))) {
		int x[6] = { A(0), A(1), A(3), A(4), dy, ds };
		d_acc(d, A(0), d_emit(d, OP_BN_DX, x, 6, op->ia, 0, &op->fa[0], NULL));
	}
}

/* The mask again, from the counter: nothing is saved for it. */
void
gr_dropout(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res), a[2] = { dy, op->nargs > 1 ? A(1) : -1 };

	if (op->nargs == 1) {
		d_acc(d, A(0), dy);
		return;
	}
	d_acc(d, A(0), d_emit(d, OP_DROPOUT, a, 2, op->ia, 0, op->fa, NULL));
}

/* ---------- reductions ---------- */

/* dy of a reduction over axis, spread back over x's shape (divided by n unless 1). */
static int
spread(Diff *d, const Op *op, int64_t n)
{
	int g = d_grad(d, op->res);
	Type t = *TY(A(0));

	if (n != 1) {
		Type s = { F32, { 0, {0} } };
		double v = (double)n;
		int c = d_emit(d, OP_CONST, NULL, 0, NULL, 0, &v, &s);
		g = d_op2(d, OP_DIV, g, c);
	}
	if (!op->ia[1]) {
		Type k = t;
		k.sh.d[op->ia[0]] = 1;
		g = d_emit(d, OP_RESHAPE, &g, 1, NULL, 0, NULL, &k);
	}
	return d_emit(d, OP_BCAST, &g, 1, NULL, 0, NULL, &t);
}

void gr_sum(Diff *d, const Op *op) { d_acc(d, A(0), spread(d, op, 1)); }

void
gr_mean(Diff *d, const Op *op)
{
	d_acc(d, A(0), spread(d, op, TY(A(0))->sh.d[op->ia[0]]));
}

void
gr_max(Diff *d, const Op *op)
{
	int a[3] = { A(0), op->res, d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_MAX_G, a, 3, op->ia, 0, NULL, NULL));
}

/* ---------- normalisation, losses ---------- */

void
gr_softmax(Diff *d, const Op *op)
{
	int a[2] = { op->res, d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_SOFTMAX_G, a, 2, op->ia, 0, NULL, NULL));
}

void
gr_logsoftmax(Diff *d, const Op *op)
{
	int a[2] = { op->res, d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_LOGSOFTMAX_G, a, 2, op->ia, 0, NULL, NULL));
}

void
gr_layernorm(Diff *d, const Op *op)
{
	int dy = d_grad(d, op->res);
	int dx[3] = { A(0), A(1), dy }, dg[2] = { A(0), dy };

	if (d_need(d, A(0)))
		d_acc(d, A(0), d_emit(d, OP_LN_DX, dx, 3, NULL, 0, op->fa, NULL));
	if (d_need(d, A(1)))
		d_acc(d, A(1), d_emit(d, OP_LN_DGAMMA, dg, 2, NULL, 0, op->fa, NULL));
	d_acc(d, A(2), dy);
}

void
gr_embedding(Diff *d, const Op *op)
{
	int a[2] = { A(1), d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_EMBED_G, a, 2, NULL, 0, NULL, TY(A(0))));
}

void
gr_xent(Diff *d, const Op *op)
{
	int a[3] = { A(0), A(1), d_grad(d, op->res) };
	d_acc(d, A(0), d_emit(d, OP_XENT_G, a, 3, NULL, 0, NULL, NULL));
}

void
gr_mse(Diff *d, const Op *op)
{
	int a[3] = { A(0), A(1), d_grad(d, op->res) };
	int g = d_emit(d, OP_MSE_G, a, 3, NULL, 0, NULL, NULL);

	d_acc(d, A(0), g);
	if (d_need(d, A(1)))
		d_acc(d, A(1), d_op1(d, OP_NEG, d_sumto(d, g, A(1))));
}
