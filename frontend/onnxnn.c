/* onnxnn.c: the ONNX ops of dense networks: MatMul, Gemm, Einsum, Dropout, Softmax,
 * LayerNormalization, BatchNormalization, Trilu, LSTM/GRU and the losses (the table:
 * onnxops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnxint.h"

/* ---------- neural network ops ---------- */

int
emit_softmax(Ox *x)
{
	int v = in_t(x, 0), r;
	int64_t ia[MAXIA] = { 0 };

	if (v < 0)
		return -1;
	r = x->c->f->val[v].ty.sh.rank;
	if ((ia[0] = axis_of(x, att_i(x, "axis", x->o->opset >= 13 ? -1 : 1), r)) < 0)
		return -1;
	if (x->o->opset < 13 && ia[0] != r - 1)
		return xerr(x, "before opset 13 a softmax flattens the axes from its axis on; mtc "
		            "imports it only along the last axis");
	v = xemit(x, strcmp(x->nd->op, "Softmax") == 0 ? OP_SOFTMAX : OP_LOGSOFTMAX, &v, 1, ia, 1,
	         NULL, NULL);
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* Einsum of one or two operands, without repeated letters in a term: letters in one operand
 * alone and not in the output summed first, then for two operands the batched GEMM
 * [B, M, K] @ [B, K, N] (B: letters in both and the output, K: in both, not in the output, M
 * and N: in one and the output), each operand transposed and reshaped to it, and the result
 * back to the output's order. An ellipsis stands for the same leading axes in every term. */
enum { EMAX = MAXRANK };
typedef struct { char l[EMAX]; int n; } Eterm;

static int
eterm(Ox *x, const char **p, const char *end, Eterm *t, int ell)
{
	t->n = 0;
	for (; *p < end && **p != ',' && **p != '-'; (*p)++) {
		char c = **p;
		if (c == ' ')
			continue;
		if (c == '.') {
			if (end - *p < 3 || (*p)[1] != '.' || (*p)[2] != '.' || ell < 0)
				return xerr(x, "a stray '.' in the equation");
			for (int i = 0; i < ell; i++) {
				if (t->n >= EMAX)
					return xerr(x, "a term of more than %d axes", EMAX);
				t->l[t->n++] = (char)('A' + i) | (char)0x80;   /* the ellipsis's axes */
			}
			*p += 2;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return xerr(x, "'%c' in the equation is not a letter", c);
		for (int i = 0; i < t->n; i++)
			if (t->l[i] == c)
				return xerr(x, "'%c' repeats in one term (a diagonal), which is not supported", c);
		if (t->n >= EMAX)
			return xerr(x, "a term of more than %d axes", EMAX);
		t->l[t->n++] = c;
	}
	return 0;
}

static int
epos(const Eterm *t, char c)
{
	for (int i = 0; i < t->n; i++)
		if (t->l[i] == c)
			return i;
	return -1;
}

/* v (axes named by t) with its axes in the order of the letters ord[0..n), reshaped to dims
 * (nd of them, products of consecutive runs, given by run[]: the count of letters in each) */
static int
eperm(Ox *x, int v, const Eterm *t, const char *ord, const int *run, int nd)
{
	int64_t p[MAXIA] = { 0 };
	Shape sh = x->c->f->val[v].ty.sh, r = { nd, { 0 } };
	int id = 1, k = 0;

	for (int i = 0; i < t->n; i++)
		p[i] = epos(t, ord[i]), id &= p[i] == i;
	if (!id && t->n > 1)
		v = xemit(x, OP_TRANSPOSE, &v, 1, p, t->n, NULL, NULL);
	for (int d = 0; d < nd; d++) {
		r.d[d] = 1;
		for (int j = 0; j < run[d]; j++, k++)
			r.d[d] *= sh.d[p[k]];
	}
	return xreshape(x, v, &r);
}

/* The equation against the operands' shapes sh[0..nin), nin 1 or 2: their terms, the
 * output's, and each letter's length (size[], -1 where unused). 0, or -1 after a diagnostic. */
static int
eparse(Ox *x, int nin, const Shape *shs, Eterm *in, Eterm *outp, int64_t *size)
{
	Onnx__AttributeProto *a = ox_attr(x->nd, "equation");
	const char *p, *end, *arrow;
	Eterm out;
	int ell = -1;

	if (!a || !a->has_s)
		return xerr(x, "the equation is missing");
	p = (const char *)a->s.data, end = p + a->s.len;
	arrow = NULL;
	for (const char *q = p; q + 1 < end; q++)
		if (q[0] == '-' && q[1] == '>')
			arrow = q;
	for (int i = 0; i < 256; i++)
		size[i] = -1;
	for (int i = 0; i < nin; i++) {
		const char *q;
		int named = 0, dots = 0;
		Shape sh = shs[i];
		/* the ellipsis's axes: the operand's rank less its letters */
		for (q = p; q < end && *q != ',' && *q != '-'; q++)
			named += (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'), dots += *q == '.';
		if (dots && ell >= 0 && ell != sh.rank - named)
			return xerr(x, "the ellipsis stands for %d axes in one term and %d in another", ell,
			            sh.rank - named);
		if (dots)
			ell = sh.rank - named;
		if (eterm(x, &p, arrow ? arrow : end, &in[i], dots ? (ell < 0 ? 0 : ell) : -1))
			return -1;
		if (in[i].n != sh.rank)
			return xerr(x, "term %d names %d axes of an operand of rank %d", i + 1, in[i].n, sh.rank);
		for (int j = 0; j < in[i].n; j++) {
			unsigned char c = (unsigned char)in[i].l[j];
			if (size[c] >= 0 && size[c] != sh.d[j])
				return xerr(x, "'%c' is %lld long in one place and %lld in another (broadcasting is "
				            "not supported)", c & 0x7f, (long long)size[c], (long long)sh.d[j]);
			size[c] = sh.d[j];
		}
		if (i + 1 < nin && (p >= end || *p != ','))
			return xerr(x, "the equation has %d terms for %d operands", i + 1, nin);
		if (i + 1 < nin)
			p++;
	}
	if (p != (arrow ? arrow : end))
		return xerr(x, "the equation has more terms than operands");
	if (arrow) {
		const char *q = arrow + 2;
		if (eterm(x, &q, end, &out, ell < 0 ? -1 : ell))
			return -1;
		if (q != end)
			return xerr(x, "a stray character after the output's term");
		for (int j = 0; j < out.n; j++)
			if (size[(unsigned char)out.l[j]] < 0)
				return xerr(x, "'%c' of the output is in no operand", out.l[j] & 0x7f);
	} else {                /* implicit: the ellipsis, then letters once, in alphabetical order */
		out.n = 0;
		for (int i = 0; i < (ell > 0 ? ell : 0); i++)
			out.l[out.n++] = (char)('A' + i) | (char)0x80;
		for (int c = 'A'; c <= 'z'; c++) {
			int cnt = 0;
			for (int i = 0; i < nin; i++)
				cnt += epos(&in[i], (char)c) >= 0;
			if (cnt == 1 && out.n < EMAX)
				out.l[out.n++] = (char)c;
		}
	}
	*outp = out;
	return 0;
}

int
emit_einsum(Ox *x)
{
	Eterm in[2], out;
	int nin = x->nd->nin, v[2];
	int64_t size[256];
	Shape sh[2];

	if (nin < 1 || nin > 2)
		return xerr(x, "an einsum of %d operands is not supported (1 or 2)", nin);
	for (int i = 0; i < nin; i++) {
		if ((v[i] = in_t(x, i)) < 0)
			return -1;
		sh[i] = x->c->f->val[v[i]].ty.sh;
	}
	if (eparse(x, nin, sh, in, &out, size))
		return -1;
	/* letters in one operand alone and not in the output: summed, the last first */
	for (int i = 0; i < nin; i++)
		for (int j = in[i].n - 1; j >= 0; j--) {
			char c = in[i].l[j];
			if (epos(&out, c) >= 0 || (nin == 2 && epos(&in[1 - i], c) >= 0))
				continue;
			v[i] = xemit(x, OP_SUM, &v[i], 1, (int64_t[MAXIA]){ j, 0 }, 2, NULL, NULL);
			memmove(in[i].l + j, in[i].l + j + 1, (size_t)(in[i].n - j - 1));
			in[i].n--;
			if (v[i] < 0)
				return -1;
		}
	if (nin == 1) {
		int run[EMAX];
		for (int j = 0; j < out.n; j++)
			run[j] = 1;
		if (in[0].n != out.n)
			return xerr(x, "internal: einsum terms");
		v[0] = out.n ? eperm(x, v[0], &in[0], out.l, run, out.n) : v[0];
	} else {
		char bo[3 * EMAX], ao[2 * EMAX], ro[2 * EMAX];
		int nb = 0, nm = 0, nk = 0, nn = 0, ra[3], rb[3];
		char B[EMAX], M[EMAX], K[EMAX], N[EMAX];
		Shape rs = { 0, { 0 } };
		for (int j = 0; j < in[0].n; j++) {
			char c = in[0].l[j];
			int ib = epos(&in[1], c) >= 0, io = epos(&out, c) >= 0;
			if (ib && io)
				B[nb++] = c;
			else if (ib)
				K[nk++] = c;
			else
				M[nm++] = c;
		}
		for (int j = 0; j < in[1].n; j++)
			if (epos(&in[0], in[1].l[j]) < 0)
				N[nn++] = in[1].l[j];
		memcpy(ao, B, (size_t)nb), memcpy(ao + nb, M, (size_t)nm), memcpy(ao + nb + nm, K, (size_t)nk);
		memcpy(bo, B, (size_t)nb), memcpy(bo + nb, K, (size_t)nk), memcpy(bo + nb + nk, N, (size_t)nn);
		ra[0] = nb, ra[1] = nm, ra[2] = nk;
		rb[0] = nb, rb[1] = nk, rb[2] = nn;
		v[0] = eperm(x, v[0], &in[0], ao, ra, 3);
		v[1] = eperm(x, v[1], &in[1], bo, rb, 3);
		v[0] = xemit(x, OP_MATMUL, v, 2, (int64_t[MAXIA]){ 0, 0 }, 2, NULL, NULL);
		/* [B, M, N] to the letters B M N, then to the output's order */
		memcpy(ro, B, (size_t)nb), memcpy(ro + nb, M, (size_t)nm), memcpy(ro + nb + nm, N, (size_t)nn);
		for (int j = 0; j < nb + nm + nn; j++)
			rs.d[rs.rank++] = size[(unsigned char)ro[j]];
		if (rs.rank != out.n)
			return xerr(x, "internal: einsum output");
		v[0] = xreshape(x, v[0], &rs);
		if (v[0] >= 0 && out.n > 1) {
			Eterm t = { { 0 }, nb + nm + nn };
			int run[EMAX];
			memcpy(t.l, ro, (size_t)t.n);
			for (int j = 0; j < out.n; j++)
				run[j] = 1;
			v[0] = eperm(x, v[0], &t, out.l, run, out.n);
		}
	}
	if (v[0] < 0)
		return -1;
	out_t(x, 0, v[0]);
	return 0;
}

/* Einsum on known values (rotary embeddings' torch.outer of positions and inv_freq): each
 * output element the sum, over the letters it lacks, of the operands' products, in double
 * and rounded to f32 once (integers in int64). Past MAXKNOWN elements or FOLD_WORK products,
 * IR ops instead (emit_einsum). */
int
fold_einsum(Ox *x)
{
	Eterm in[2], out;
	int nin = x->nd->nin, nl = 0, fl = 0;
	int64_t size[256], work = 1, on, idx[2 * EMAX] = { 0 }, st[3][2 * EMAX], off[3] = { 0 };
	char let[2 * EMAX];
	Shape sh[2], rs = { 0, { 0 } };
	Kv *k[2] = { NULL, NULL }, *r;
	double *acc = NULL;

	if (nin < 1 || nin > 2)
		return xerr(x, "an einsum of %d operands is not supported (1 or 2)", nin);
	for (int i = 0; i < nin; i++) {
		if (!(k[i] = in_k(x, i)))
			return -1;
		sh[i] = k[i]->sh;
		fl |= k[i]->dt == KF;
	}
	if (eparse(x, nin, sh, in, &out, size))
		return -1;
	for (int i = 0; i < nin; i++)
		for (int j = 0; j < in[i].n; j++)
			if (memchr(let, in[i].l[j], (size_t)nl) == NULL)
				let[nl++] = in[i].l[j];
	for (int l = 0; l < nl; l++)
		if (mul64(work, size[(unsigned char)let[l]], &work))
			work = INT64_MAX;
	for (int j = 0; j < out.n; j++)
		rs.d[rs.rank++] = size[(unsigned char)out.l[j]];
	on = shape_numel(&rs);
	if (on > MAXKNOWN || work > FOLD_WORK)
		return emit_einsum(x);
	/* each letter's stride in operand 0, 1 and the output (0 where a term lacks it) */
	for (int l = 0; l < nl; l++)
		for (int t = 0; t < 3; t++) {
			const Eterm *e = t < 2 ? &in[t] : &out;
			int p = t < nin || t == 2 ? epos(e, let[l]) : -1;
			st[t][l] = 0;
			if (p >= 0) {
				st[t][l] = 1;
				for (int q = p + 1; q < e->n; q++)
					st[t][l] *= size[(unsigned char)e->l[q]];
			}
		}
	if (!(r = knew(x, fl ? KF : KI, &rs)))
		return -1;
	if (fl)                 /* floats summed in double; integers in r itself (zeroed) */
		acc = xcalloc((size_t)(on ? on : 1), sizeof *acc);
	for (int64_t w = 0; w < work; w++) {
		if (fl) {
			double pr = kv_get(k[0], off[0]);
			if (nin == 2)
				pr *= kv_get(k[1], off[1]);
			acc[off[2]] += pr;
		} else {
			int64_t pr = k[0]->i[off[0]];
			if ((nin == 2 && mul64(pr, k[1]->i[off[1]], &pr)) || add64(r->i[off[2]], pr, &r->i[off[2]]))
				return xerr(x, "integer overflow folding the einsum");
		}
		for (int l = nl - 1; l >= 0; l--) {     /* the odometer, the last letter fastest */
			int64_t n = size[(unsigned char)let[l]];
			for (int t = 0; t < 3; t++)
				off[t] += st[t][l];
			if (++idx[l] < n)
				break;
			for (int t = 0; t < 3; t++)
				off[t] -= st[t][l] * n;
			idx[l] = 0;
		}
	}
	for (int64_t i = 0; fl && i < on; i++)
		r->f[i] = (float)acc[i];
	free(acc);
	out_k(x, 0, r);
	return 0;
}

/* Trilu: the lower (upper 0) or upper triangle of the last two axes, from diagonal k on; the
 * rest 0. Known values fold; at run time a mul by the constant 0/1 mask (an infinite value
 * where the mask is 0 gives NaN, where PyTorch gives 0). */
static int
tri_keep(int64_t i, int64_t j, int64_t k, int up)
{
	return up ? j - i >= k : j - i <= k;
}

static int
tri_args(Ox *x, const Shape *sh, int64_t *k, int *up)
{
	double d = 0;

	*up = att_i(x, "upper", 1) != 0;
	if (has_in(x, 1) && kscalar(x, in_k(x, 1), &d, "k"))
		return -1;
	if (!(d >= -INT32_MAX && d <= INT32_MAX))
		return xerr(x, "k is out of range");
	*k = (int64_t)d;
	if (sh->rank < 2)
		return xerr(x, "the input must be of rank 2 or more");
	return 0;
}

int
fold_trilu(Ox *x)
{
	Kv *kv = in_k(x, 0), *r;
	int64_t k, n, m;
	int up;

	if (!kv || tri_args(x, &kv->sh, &k, &up) || !(r = knew(x, kv->dt, &kv->sh)))
		return -1;
	n = kv->sh.d[kv->sh.rank - 2], m = kv->sh.d[kv->sh.rank - 1];
	for (int64_t e = 0; e < r->n; e++) {
		int keep = tri_keep(e / m % n, e % m, k, up);
		if (r->dt == KF)
			r->f[e] = keep ? kv->f[e] : 0;
		else
			r->i[e] = keep ? kv->i[e] : 0;
	}
	out_k(x, 0, r);
	return 0;
}

int
emit_trilu(Ox *x)
{
	int v = in_t(x, 0), up;
	int64_t k, n, m;
	Shape sh;
	Kv *mask;

	if (v < 0 || tri_args(x, &x->c->f->val[v].ty.sh, &k, &up))
		return -1;
	sh = x->c->f->val[v].ty.sh;
	n = sh.d[sh.rank - 2], m = sh.d[sh.rank - 1];
	if (!(mask = knew(x, KF, &(Shape){ 2, { n, m } })))
		return -1;
	for (int64_t e = 0; e < mask->n; e++)
		mask->f[e] = (float)tri_keep(e / m, e % m, k, up);
	v = xemit2(x, OP_MUL, v, xknown(x, mask, "trilu"));
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* LSTM and GRU (PyTorch's nn.LSTM and nn.GRU as exported), unrolled over the sequence: per
 * direction, at each step (reversed for the reverse direction) the step's inputs x_t @ W^T
 * (+ the biases; one GEMM of all the steps would hold the gates of the whole sequence through
 * the forward, which no plan could free) and h @ R^T, the gates (ONNX's
 * orders: LSTM i, o, f, c; GRU z, r, h) by slices, and the cell's update:
 *   LSTM  c = f c + i tanh(g_c), h = o tanh(c), i, o, f the sigmoids of theirs
 *   GRU   z, r the sigmoids, n = tanh(x_n + r (h R_n^T + Rb_n)) (linear_before_reset, PyTorch's;
 *         else tanh(x_n + (r h) R_n^T + Rb_n)), h = n + z (h - n)
 * Y concatenates each step's h in time order, Y_h and Y_c the last ones. Only the default
 * activations, no clip, peepholes, input_forget or batch-first layout; sequence_lens, if
 * given, all T. */
enum { MAXSEQ = 4096 };
static int
rnn_dir(Ox *x, int gru, int64_t H, int d, int rev, int X, int *hh, int *hc, int *y)
{
	Shape sx = x->c->f->val[X].ty.sh;
	int64_t T = sx.d[0], N = sx.d[1], I = sx.d[2], ng = gru ? 3 : 4, G = ng * H;
	int lbr = (int)att_i(x, "linear_before_reset", 0), W, R, xw, wb = -1, rb = -1, h, c = -1;
	int *ys;
	const int64_t tb[MAXIA] = { 0, 1 };

	W = xreshape(x, emit_slice1(x, in_t(x, 1), 0, d, 1), &(Shape){ 2, { G, I } });
	R = xreshape(x, emit_slice1(x, in_t(x, 2), 0, d, 1), &(Shape){ 2, { G, H } });
	if (has_in(x, 3)) {
		int b = xreshape(x, emit_slice1(x, in_t(x, 3), 0, d, 1), &(Shape){ 1, { 2 * G } });
		wb = emit_slice1(x, b, 0, 0, G);
		rb = emit_slice1(x, b, 0, G, G);
	}
	xw = xreshape(x, X, &(Shape){ 2, { T * N, I } });
	if (wb >= 0 && !gru)
		wb = xemit2(x, OP_ADD, wb, rb);
	if (has_in(x, 5))
		h = xreshape(x, emit_slice1(x, in_t(x, 5), 0, d, 1), &(Shape){ 2, { N, H } });
	else
		h = xconst(x, 0, &(Shape){ 2, { N, H } });
	if (!gru)
		c = has_in(x, 6) ? xreshape(x, emit_slice1(x, in_t(x, 6), 0, d, 1), &(Shape){ 2, { N, H } }) :
		    xconst(x, 0, &(Shape){ 2, { N, H } });
	ys = aalloc(x->a, (size_t)T * sizeof *ys);
	for (int64_t s = 0; s < T && h >= 0; s++) {
		int64_t t = rev ? T - 1 - s : s;
		int xt = xemit(x, OP_MATMUL, (int[]){ emit_slice1(x, xw, 0, t * N, N), W }, 2, tb, 2, NULL, NULL), g;
		if (wb >= 0)
			xt = xemit2(x, OP_ADD, xt, wb);
#define GATE(v, k) emit_slice1(x, (v), 1, (k) * H, H)
		if (!gru) {
			g = xemit2(x, OP_ADD, xt, xemit(x, OP_MATMUL, (int[]){ h, R }, 2, tb, 2, NULL, NULL));
			int i = xemit1(x, OP_SIGMOID, GATE(g, 0)), o = xemit1(x, OP_SIGMOID, GATE(g, 1));
			int f = xemit1(x, OP_SIGMOID, GATE(g, 2)), cc = xemit1(x, OP_TANH, GATE(g, 3));
			int ic = xemit2(x, OP_MUL, i, cc);
			c = xemit2(x, OP_ADD, xemit2(x, OP_MUL, f, c), ic);
			h = xemit2(x, OP_MUL, o, xemit1(x, OP_TANH, c));
		} else {
			int rzr = emit_slice1(x, R, 0, 0, 2 * H), rn = emit_slice1(x, R, 0, 2 * H, H);
			int hzr = xemit(x, OP_MATMUL, (int[]){ h, rzr }, 2, tb, 2, NULL, NULL), z, r, n, hn;
			if (rb >= 0)
				hzr = xemit2(x, OP_ADD, hzr, emit_slice1(x, rb, 0, 0, 2 * H));
			z = GATE(hzr, 0), z = xemit1(x, OP_SIGMOID, xemit2(x, OP_ADD, GATE(xt, 0), z));
			r = GATE(hzr, 1), r = xemit1(x, OP_SIGMOID, xemit2(x, OP_ADD, GATE(xt, 1), r));
			hn = xemit(x, OP_MATMUL, (int[]){ lbr ? h : xemit2(x, OP_MUL, r, h), rn }, 2, tb, 2, NULL, NULL);
			if (rb >= 0)
				hn = xemit2(x, OP_ADD, hn, emit_slice1(x, rb, 0, 2 * H, H));
			n = lbr ? xemit2(x, OP_MUL, r, hn) : hn;
			n = xemit1(x, OP_TANH, xemit2(x, OP_ADD, GATE(xt, 2), n));
			h = xemit2(x, OP_ADD, n, xemit2(x, OP_MUL, z, xemit2(x, OP_SUB, h, n)));
		}
#undef GATE
		ys[t] = xreshape(x, h, &(Shape){ 4, { 1, 1, N, H } });
	}
	*y = T > 1 ? xemit(x, OP_CONCAT, ys, (int)T, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL) : ys[0];
	*hh = xreshape(x, h, &(Shape){ 3, { 1, N, H } });
	*hc = gru ? -1 : xreshape(x, c, &(Shape){ 3, { 1, N, H } });
	return *y < 0 || *hh < 0 ? -1 : 0;
}

int
emit_rnn(Ox *x)
{
	int gru = strcmp(x->nd->op, "GRU") == 0, ng = gru ? 3 : 4, nd, y[2], hh[2], hc[2];
	int bi = att_is(x, "direction", "forward", "bidirectional"), rev = att_is(x, "direction", "forward", "reverse");
	int64_t H = att_i(x, "hidden_size", 0);
	Type tx, tw, tr;

	if (!bi && !rev && !att_is(x, "direction", "forward", "forward"))
		return xerr(x, "direction must be forward, reverse or bidirectional");
	if (ox_attr(x->nd, "activations") || ox_attr(x->nd, "clip") || att_i(x, "input_forget", 0) ||
	    att_i(x, "layout", 0) || has_in(x, 7))
		return xerr(x, "only the default activations, without clip, peepholes, input_forget or "
		            "batch-first layout, are supported");
	if (in_type(x, 0, &tx) || in_type(x, 1, &tw) || in_type(x, 2, &tr))
		return -1;
	nd = bi ? 2 : 1;
	if (tx.dt != F32 || tx.sh.rank != 3 || tx.sh.d[0] > MAXSEQ)
		return xerr(x, "X must be f32[T, N, I] with T at most %d", MAXSEQ);
	if (H < 1 || H > INT32_MAX || tw.sh.rank != 3 || tw.sh.d[0] != nd || tw.sh.d[1] != ng * H ||
	    tw.sh.d[2] != tx.sh.d[2] || tr.sh.rank != 3 || tr.sh.d[0] != nd || tr.sh.d[1] != ng * H ||
	    tr.sh.d[2] != H)
		return xerr(x, "W and R must be [%d, %d hidden_size, I] and [%d, %d hidden_size, hidden_size]",
		            nd, ng, nd, ng);
	if (has_in(x, 4)) {
		Kv *k = in_k(x, 4);
		if (!k)
			return -1;
		for (int64_t i = 0; i < k->n; i++)
			if (kv_get(k, i) != (double)tx.sh.d[0])
				return xerr(x, "sequence_lens other than the sequence's length are not supported");
	}
	for (int d = 0; d < nd; d++)
		if (rnn_dir(x, gru, H, d, bi ? d == 1 : rev, in_t(x, 0), &hh[d], &hc[d], &y[d]))
			return -1;
	if (nd == 2) {
		y[0] = xemit(x, OP_CONCAT, y, 2, (int64_t[MAXIA]){ 1 }, 1, NULL, NULL);
		hh[0] = xemit(x, OP_CONCAT, hh, 2, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL);
		if (!gru)
			hc[0] = xemit(x, OP_CONCAT, hc, 2, (int64_t[MAXIA]){ 0 }, 1, NULL, NULL);
	}
	if (y[0] < 0 || hh[0] < 0 || (!gru && hc[0] < 0))
		return -1;
	out_t(x, 0, y[0]);
	out_t(x, 1, hh[0]);
	if (!gru)
		out_t(x, 2, hc[0]);
	return 0;
}

/* Input i as a matmul operand: a Transpose of the last two axes that waits (a weight's
 * transpose) is read in place, *tr set, instead of being made. */
static int
mm_operand(Ox *x, int i, int64_t *tr)
{
	int id = has_in(x, i) ? x->nd->in[i] : -1, n;
	const OxNode *p, *save = x->nd;
	int64_t perm[MAXRANK];
	Type t;
	int v, ok = 1;

	*tr = 0;
	if (id < 0 || x->x[id].v >= 0 || !x->x[id].wait || x->o->defnode[id] < 0)
		return in_t(x, i);
	p = &x->o->node[x->o->defnode[id]];
	if (strcmp(p->op, "Transpose") || p->nin < 1 || p->in[0] < 0)
		return in_t(x, i);
	x->nd = p;
	n = att_ints(x, "perm", perm, MAXRANK);
	if (in_type(x, 0, &t)) {
		x->nd = save;
		return -1;
	}
	ok = n == t.sh.rank && n >= 2 && perm[n - 1] == n - 2 && perm[n - 2] == n - 1;
	for (int k = 0; ok && k < n - 2; k++)
		ok = perm[k] == k;
	v = ok ? in_t(x, 0) : -1;
	x->nd = save;
	if (!ok)
		return in_t(x, i);
	*tr = 1;
	return v;
}

int
emit_matmul(Ox *x)
{
	int64_t ia[MAXIA] = { 0, 0 };
	int a = mm_operand(x, 0, &ia[0]), b = mm_operand(x, 1, &ia[1]), v, r1, r2;
	Shape sa, sb, sr;

	if (a < 0 || b < 0)
		return -1;
	sa = x->c->f->val[a].ty.sh;
	sb = x->c->f->val[b].ty.sh;
	r1 = sa.rank == 1;
	r2 = sb.rank == 1;
	if (r1)                 /* a vector: a row of one, dropped after */
		a = xreshape(x, a, &(Shape){ 2, { 1, sa.d[0] } });
	if (r2)
		b = xreshape(x, b, &(Shape){ 2, { sb.d[0], 1 } });
	if ((v = xemit(x, OP_MATMUL, (int[]){ a, b }, 2, ia, 2, NULL, NULL)) < 0)
		return -1;
	sr = x->c->f->val[v].ty.sh;
	if (r1 || r2) {
		Shape s = sr;
		s.rank -= r1 + r2;
		if (r1 && !r2)
			s.d[s.rank - 1] = sr.d[sr.rank - 1];
		v = xreshape(x, v, &s);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* MatMul on known values (rotary embeddings' inv_freq @ position_ids): numpy's matmul, a
 * vector operand a row (first) or a column (second) dropped after, the leading axes
 * broadcast; products summed in double and rounded to f32 once (integers in int64). Past
 * MAXKNOWN elements or FOLD_WORK products, IR ops instead (emit_matmul). */
int
fold_matmul(Ox *x)
{
	Kv *a = in_k(x, 0), *b = in_k(x, 1), *r;
	Shape sa, sb, ba, bb, bs, rs;
	int64_t m, kk, n, nb, on, work, fl;

	if (!a || !b)
		return -1;
	sa = a->sh, sb = b->sh;
	if (sa.rank == 0 || sb.rank == 0)
		return xerr(x, "an operand is a scalar (MatMul needs rank 1 or more)");
	if (sa.rank == 1)
		sa = (Shape){ 2, { 1, sa.d[0] } };
	if (sb.rank == 1)
		sb = (Shape){ 2, { sb.d[0], 1 } };
	m = sa.d[sa.rank - 2], kk = sa.d[sa.rank - 1], n = sb.d[sb.rank - 1];
	if (sb.d[sb.rank - 2] != kk)
		return xerr(x, "the operands' inner dimensions differ (%lld and %lld)", (long long)kk,
		            (long long)sb.d[sb.rank - 2]);
	ba = sa, bb = sb;
	ba.rank -= 2, bb.rank -= 2;
	if (shape_broadcast(&ba, &bb, &bs))
		return xerr(x, "the operands' leading axes do not broadcast");
	rs = bs;
	if (a->sh.rank > 1)
		rs.d[rs.rank++] = m;
	if (b->sh.rank > 1)
		rs.d[rs.rank++] = n;
	if (rank_ok(x, bs.rank + 2))
		return -1;
	nb = shape_numel(&bs);
	if (mul64(nb, m, &work) || mul64(work, n, &work) || mul64(work, kk, &work))
		work = INT64_MAX;
	if (work > FOLD_WORK || mul64(nb, m, &on) || mul64(on, n, &on) || on > MAXKNOWN)
		return emit_matmul(x);
	fl = a->dt == KF || b->dt == KF;
	if (!(r = knew(x, fl ? KF : KI, &rs)))
		return -1;
	for (int64_t q = 0; q < nb; q++) {
		int64_t ia = bcast_index(&ba, &bs, q) * m * kk, ib = bcast_index(&bb, &bs, q) * kk * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double s = 0;
				int64_t si = 0, pr;
				for (int64_t t = 0; t < kk; t++) {
					if (fl)
						s += kv_get(a, ia + i * kk + t) * kv_get(b, ib + t * n + j);
					else if (mul64(a->i[ia + i * kk + t], b->i[ib + t * n + j], &pr) || add64(si, pr, &si))
						return xerr(x, "integer overflow folding the product");
				}
				if (fl)
					r->f[(q * m + i) * n + j] = (float)s;
				else
					r->i[(q * m + i) * n + j] = si;
			}
	}
	out_k(x, 0, r);
	return 0;
}

/* Gemm: alpha op(A) op(B) + beta C. */
int
emit_gemm(Ox *x)
{
	int64_t ia[MAXIA] = { att_i(x, "transA", 0) != 0, att_i(x, "transB", 0) != 0 };
	double alpha = att_f(x, "alpha", 1), beta = att_f(x, "beta", 1);
	const Shape one = { 0, { 0 } };
	int v;

	v = xemit(x, OP_MATMUL, (int[]){ in_t(x, 0), in_t(x, 1) }, 2, ia, 2, NULL, NULL);
	if (alpha != 1)
		v = xemit2(x, OP_MUL, v, xconst(x, alpha, &one));
	if (has_in(x, 2) && beta != 0) {
		int c = in_t(x, 2);
		if (beta != 1)
			c = xemit2(x, OP_MUL, c, xconst(x, beta, &one));
		v = xemit2(x, OP_ADD, v, c);
	}
	if (v < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

int
emit_dropout(Ox *x)
{
	double ratio = att_f(x, "ratio", 0.5);
	int train = 0, v;
	Kv *k = NULL;

	if (x->o->opset >= 12) {
		ratio = 0.5;
		if (has_in(x, 1) && kscalar(x, in_k(x, 1), &ratio, "the ratio"))
			return -1;
		if (has_in(x, 2) && (!(k = in_k(x, 2)) || !kv_uniform(k)))
			return k ? xerr(x, "training_mode must be one value") : -1;
		train = has_in(x, 2) && kv_get(k, 0) != 0;
	}
	if (!(ratio >= 0 && ratio < 1))
		return xerr(x, "ratio %g is not in [0, 1)", ratio);
	if ((v = in_t(x, 0)) < 0)
		return -1;
	/* In training mode tdsl's dropout: the identity in the forward, in the step the mask of
	 * the model's next key (mtc's own generator, not PyTorch's). */
	if (train && ratio != 0) {
		int64_t ia[MAXIA] = { *x->c->ndropout, 0 };
		double fa[MAXFA] = { ratio };
		if (*x->c->ndropout == INT32_MAX)
			return xerr(x, "more than %d dropouts", INT32_MAX);
		++*x->c->ndropout;
		if ((v = xemit(x, OP_DROPOUT, &v, 1, ia, 2, fa, NULL)) < 0)
			return -1;
	}
	out_t(x, 0, v);
	return 0;
}

/* BatchNormalization: tdsl's batch_norm, the inference form on the running statistics (the
 * graph's mean and var initializers, made buffers), which autodiff turns into the training
 * form in the step whatever training_mode says, as PyTorch's module.train(). ONNX's momentum
 * weighs the running statistic, PyTorch's (the IR's) the batch's: 1 - momentum. */
int
emit_bn(Ox *x)
{
	double fa[MAXFA] = { att_f(x, "epsilon", 1e-5), 1 - att_f(x, "momentum", 0.9) };
	int64_t ia[MAXIA] = { 0 };
	Type t;
	int a[5], v;

	if (in_type(x, 0, &t))
		return -1;
	if (t.dt != F32 || t.sh.rank < 2)
		return xerr(x, "the input must be f32[N, C, ...]");
	if (!(fa[0] > 0) || !(fa[1] >= 0 && fa[1] <= 1))
		return xerr(x, "epsilon must be positive and momentum in [0, 1]");
	a[0] = in_t(x, 0);
	a[1] = in_t(x, 1);
	a[2] = in_t(x, 2);
	a[3] = in_buffer(x, 3);
	a[4] = in_buffer(x, 4);
	if ((v = xemit(x, OP_BATCHNORM, a, 5, ia, 1, fa, NULL)) < 0)
		return -1;
	out_t(x, 0, v);
	/* outputs 2 and 3 of training mode, the updated statistics: the buffers themselves (the
	 * step's update writes them) */
	out_t(x, 1, a[3]);
	out_t(x, 2, a[4]);
	return 0;
}

/* LayerNormalization (opset 17): over the axes from `axis` on, as the IR's layernorm over a
 * last axis that holds them all. */
int
emit_layernorm(Ox *x)
{
	double fa[MAXFA] = { att_f(x, "epsilon", 1e-5) };
	int v = in_t(x, 0), g, b, a;
	Shape sx, flat, par;

	if (v < 0)
		return -1;
	sx = x->c->f->val[v].ty.sh;
	if ((a = axis_of(x, att_i(x, "axis", -1), sx.rank)) < 0)
		return -1;
	flat = sx;
	flat.rank = a + 1;
	flat.d[a] = 1;
	for (int i = a; i < sx.rank; i++)
		flat.d[a] *= sx.d[i];
	par = (Shape){ 1, { flat.d[a] } };
	g = xreshape(x, in_t(x, 1), &par);
	b = has_in(x, 2) ? xreshape(x, in_t(x, 2), &par) : xconst(x, 0, &par);
	v = xemit(x, OP_LAYERNORM, (int[]){ xreshape(x, v, &flat), g, b }, 3, NULL, 0, fa, NULL);
	if ((v = xreshape(x, v, &sx)) < 0)
		return -1;
	out_t(x, 0, v);
	return 0;
}

/* ---------- losses ---------- */

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (F.cross_entropy, F.nll_loss: a
 * model exported with its loss), written out so that ignore_index, weights and every
 * reduction are PyTorch's: the class axis (1) moved last, log_softmax for the first, then per
 * position -sum(logp where onehot(label)) (the one-hot as OneHot's), times the label's
 * weight, 0 where the label is ignore_index; NaN where a label is outside [0, C), not ignored
 * (PyTorch raises an error); mean: the sum over the sum of those weights. It holds a one-hot
 * of the logits' size: a loss over a large vocabulary is better written in tdsl
 * (cross_entropy). The optional log_prob output is logp, the class axis back in place. */
int
emit_xentloss(Ox *x)
{
	const Shape one = { 0, { 0 } };
	int sce = strcmp(x->nd->op, "SoftmaxCrossEntropyLoss") == 0, v = in_t(x, 0);
	int t = in_index(x, 1, "labels", 0);
	int mask[MAXRANK] = { 0 }, r, lp, f, oh, per, m = -1, bad;
	int ig = ox_attr(x->nd, "ignore_index") != NULL;
	int64_t ia[MAXIA] = { 0 }, perm[MAXIA];
	Shape ls, ts;

	if (v < 0 || t < 0)
		return -1;
	if ((r = x->c->f->val[v].ty.sh.rank) < 2 || x->c->f->val[v].ty.dt != F32)
		return xerr(x, "the scores must be floats [N, C, ...]");
	ls = x->c->f->val[v].ty.sh;
	for (int a = 0; a < r; a++)
		perm[a] = a == 0 ? 0 : a == r - 1 ? 1 : a + 1;
	if (r > 2)
		v = xemit(x, OP_TRANSPOSE, &v, 1, perm, r, NULL, NULL);
	ts = ls;
	ts.rank = r - 1;
	for (int a = 1; a < r - 1; a++)
		ts.d[a] = ls.d[a + 1];
	if (!shape_eq(&x->c->f->val[t].ty.sh, &ts))
		return xerr(x, "the labels' shape does not match the scores' without their class axis");
	ia[0] = r - 1;
	lp = sce ? xemit(x, OP_LOGSOFTMAX, &v, 1, ia, 1, NULL, NULL) : v;
	oh = onehot_eq(x, t, r - 1, ls.d[1], 0, asprintf_a(x->a, "%s.classes", x->nd->nout &&
	               x->nd->out[0] >= 0 ? x->o->name[x->nd->out[0]] : "loss"), &f);
	ia[1] = 0;
	{                               /* select, not mul: a -inf log-probability not taken stays out */
		int s[3] = { oh, lp, xconst(x, 0, &one) };
		per = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL);
	}
	per = xemit1(x, OP_NEG, xemit(x, OP_SUM, &per, 1, ia, 2, NULL, NULL));
	bad = xoneminus(x, xemit(x, OP_SUM, &oh, 1, ia, 2, NULL, NULL));
	if (has_in(x, 2)) {             /* the label's weight */
		int w = in_f32(x, 2);
		if (w >= 0 && (x->c->f->val[w].ty.sh.rank != 1 || x->c->f->val[w].ty.sh.d[0] != ls.d[1]))
			return xerr(x, "the weights must be [C]");
		m = xemit(x, OP_SUM, (int[]){ xemit2(x, OP_MUL, oh, w) }, 1, ia, 2, NULL, NULL);
		per = xemit2(x, OP_MUL, per, m);
	}
	if (ig) {                       /* 0 where the label is ignore_index (select: -logp may be inf) */
		int keep = xoneminus(x, xemit2(x, OP_EQ, f, xconst(x, (double)att_i(x, "ignore_index", 0), &one)));
		int s[3] = { keep, per, xconst(x, 0, &one) };
		per = xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL);
		bad = xemit2(x, OP_MUL, bad, keep);
		m = m >= 0 ? xemit2(x, OP_MUL, m, keep) : keep;
	}
	{                               /* NaN where a label is out of range */
		int s[3] = { bad, xconst(x, NAN, &one), xconst(x, 0, &one) };
		per = xemit2(x, OP_ADD, per, xemit(x, OP_SELECT, s, 3, NULL, 0, NULL, NULL));
	}
	if (att_is(x, "reduction", "mean", "sum") || (att_is(x, "reduction", "mean", "mean") && m >= 0)) {
		for (int a = r - 2; a >= 0 && per >= 0; a--) {
			int64_t ib[MAXIA] = { a, 0 };
			per = xemit(x, OP_SUM, &per, 1, ib, 2, NULL, NULL);
			if (m >= 0)
				m = xemit(x, OP_SUM, &m, 1, ib, 2, NULL, NULL);
		}
		if (att_is(x, "reduction", "mean", "mean"))     /* over the weights counted */
			per = xemit2(x, OP_DIV, per, m);
	} else if (att_is(x, "reduction", "mean", "mean")) {
		for (int a = 0; a < r - 1; a++)
			mask[a] = 1;
		per = mean_axes(x, per, mask, 0);
	} else if (!att_is(x, "reduction", "mean", "none")) {
		return xerr(x, "the reduction must be mean, sum or none");
	}
	if (per < 0)
		return -1;
	out_t(x, 0, per);
	if (sce && x->nd->nout > 1 && x->nd->out[1] >= 0) {
		int64_t inv[MAXIA];
		for (int a = 0; a < r; a++)
			inv[perm[a]] = a;
		if (r > 2 && (lp = xemit(x, OP_TRANSPOSE, &lp, 1, inv, r, NULL, NULL)) < 0)
			return -1;
		out_t(x, 1, lp);
	}
	return 0;
}
