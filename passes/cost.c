/* cost.c: the op table's cost rules (FLOPs per op) and the cost model: modeled op times.
 *
 * needs: f in execution order and a Target; fills: Cost (duration, start, end of every op on
 * a compute stream and a copy stream, and the total). */
#include <stdlib.h>
#include <string.h>

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

/* Convolutions as the GEMMs they are: 2 flops per product of a weight and a column entry,
 * Cg*kh*kw of them per output element; the two gradients' GEMMs have the same sizes. */
static double
conv_flops(const Shape *w, const Shape *y)
{
	return 2.0 * (double)shape_numel(y) * (double)(w->d[1] * w->d[2] * w->d[3]);
}

double co_conv2d(const Func *f, const Op *op) { return conv_flops(&f->val[op->args[1]].ty.sh, &f->val[op->res].ty.sh); }
double co_conv2d_dx(const Func *f, const Op *op) { return conv_flops(&f->val[op->args[0]].ty.sh, &f->val[op->args[1]].ty.sh); }
double co_conv2d_dw(const Func *f, const Op *op) { return conv_flops(&f->val[op->res].ty.sh, &f->val[op->args[1]].ty.sh); }

double co_pool(const Func *f, const Op *op) { return numel_res(f, op) * (double)(op->ia[0] * op->ia[1]); }

/* ---------- the cost model ---------- */

int64_t
op_bytes(const Func *f, const Op *op)
{
	int64_t b = 0;

	if (op->kind == OP_WAIT || op->kind == OP_COPYOUT)
		return 0;
	if (opinfo[op->kind].flags & (F_COPY | F_COLL))
		return type_bytes(&f->val[op->res].ty);
	for (int i = 0; i < op->nargs; i++)
		b += type_bytes(&f->val[op->args[i]].ty);
	for (int i = 0; i < opinfo[op->kind].nwritten; i++)
		b += type_bytes(&f->val[op->args[i]].ty);    /* written back */
	if (op->res >= 0)
		b += type_bytes(&f->val[op->res].ty);
	return b;
}

int
op_on_host(const Func *f, const Op *op)
{
	return (opinfo[op->kind].flags & F_MUT) && op->nargs > 0 && f->val[op->args[0]].host;
}

int
op_copy_in(const Target *t, const Op *op)
{
	return t->duplex && (op->kind == OP_SWAPIN || op->kind == OP_UNBUCKET);
}

static double
flop_rate(const Target *t, const Op *op)
{
	if (op->kind == OP_MATMUL && t->gemm_flops > 0)
		return t->gemm_flops;
	if ((op->kind == OP_CONV2D || op->kind == OP_CONV2D_DX || op->kind == OP_CONV2D_DW) &&
	    t->conv_flops > 0)
		return t->conv_flops;
	return t->flops;
}

double
op_time(const Target *t, const Func *f, const Op *op)
{
	double fl, mem;

	/* copy_out copies only when the caller asks for the step's outputs: not a kernel */
	if (op->kind == OP_WAIT || op->kind == OP_COPYOUT)
		return 0;
	if (opinfo[op->kind].flags & F_COPY)
		return t->copylat + (double)op_bytes(f, op) / t->copybw;
	if (opinfo[op->kind].flags & F_COLL) {
		/* the packing: its operands copied to the bucket in host memory */
		int64_t b = 0;
		for (int k = 0; k < op->nargs; k++)
			b += type_bytes(&f->val[op->args[k]].ty);
		return t->copylat + (double)b / t->copybw;
	}
	if (op->kind == OP_UNSHARD)        /* a copy from host memory into the param */
		return t->copylat + (double)type_bytes(&f->val[op->args[0]].ty) / t->copybw;
	if (op_on_host(f, op)) {
		fl = t->hostflops > 0 ? opinfo[op->kind].cost(f, op) / t->hostflops : 0;
		mem = t->hostbw > 0 ? (double)op_bytes(f, op) / t->hostbw : 0;
		return fl > mem ? fl : mem;
	}
	fl = opinfo[op->kind].cost(f, op) / flop_rate(t, op);
	mem = (double)op_bytes(f, op) / t->bw;
	return t->launch + (fl > mem ? fl : mem);
}

/* The host's time to issue op (Target.issue; 0 for what launches no kernel). */
static double
op_issue(const Target *t, const Op *op)
{
	return op->kind == OP_MATMUL && t->issue_gemm > 0 ? t->issue_gemm : t->issue;
}

double
op_net_time(const Target *t, const Func *f, const Op *op)
{
	double r, b;

	if (!(opinfo[op->kind].flags & F_COLL))
		return 0;
	r = (double)op->ia[0];
	b = (double)op_bytes(f, op);
	if (r <= 1)
		return 0;
	/* a ring: an all-reduce is a reduce-scatter and an all-gather of the whole bucket (every
	 * collective's result is its whole bucket) */
	return (op->kind == OP_ALLREDUCE ? 2 : 1) * (r - 1) * (t->netlat + b / r / t->netbw);
}

/* With Target.issue, the host issues the kernels op after op and a kernel starts no sooner
 * than it is issued: a step of short kernels takes the host's time, not the GPU's.
 * A copy is issued where it stands in the order: it starts once the compute op before it has
 * ended (so arena bytes it overwrites are free), its operand exists and its copy engine is
 * idle; compute continues meanwhile. A duplex target (Target.duplex) has one engine each way:
 * copies to the accelerator (swap_in, unbucket) on one, to the host on the other; else one
 * engine takes both. An update on the host is issued the same way to the host's thread, which
 * runs it once every copy to the host issued before it is done (its gradient's among them)
 * and every earlier copy reading what it writes, and the updates before it are. A collective
 * packs its operands on the compute stream, then runs on the network once the collectives
 * before it are done. A wait blocks the compute stream until its copy or collective ends. */
void
cost_fill(Cost *c, const Func *f, const Target *t)
{
	double comp = 0, out = 0, in = 0, host = 0, net = 0;
	double hst = 0;   /* the host's issue so far (Target.issue > 0) */

	c->nop = f->nop;
	c->dur = xcalloc(f->nop + 1, sizeof *c->dur);
	c->start = xcalloc(f->nop + 1, sizeof *c->start);
	c->end = xcalloc(f->nop + 1, sizeof *c->end);
	c->net = xcalloc(f->nop + 1, sizeof *c->net);
	c->pack = xcalloc(f->nop + 1, sizeof *c->pack);
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		double ready = 0, *eng;

		for (int k = 0; k < op->nargs; k++) {
			int d = f->val[op->args[k]].def;
			if (d >= 0 && d < i && c->end[d] > ready)
				ready = c->end[d];
		}
		c->dur[i] = op_time(t, f, op);
		if (opinfo[op->kind].flags & F_COLL) {
			/* packed on the compute stream, then in order on the network */
			c->start[i] = ready > comp ? ready : comp;
			comp = c->start[i] + c->dur[i];
			c->pack[i] = c->dur[i];
			c->net[i] = comp > net ? comp : net;
			net = c->net[i] + op_net_time(t, f, op);
			c->end[i] = net;
			c->dur[i] = c->end[i] - c->start[i];
			continue;
		}
		if (op_on_host(f, op)) {
			/* a fetch of what it updates (a param fetched again) is read before it writes */
			for (int j = 0; j < i; j++)
				if (f->op[j].kind == OP_SWAPIN)
					for (int k = 0; k < opinfo[op->kind].nwritten; k++)
						if (f->op[j].args[0] == op->args[k] && c->end[j] > ready)
							ready = c->end[j];
			c->start[i] = out > host ? out : host;
			if (ready > c->start[i])
				c->start[i] = ready;
			if (comp > c->start[i])
				c->start[i] = comp;
			host = c->end[i] = c->start[i] + c->dur[i];
			continue;
		}
		if (opinfo[op->kind].flags & F_COPY) {
			eng = op_copy_in(t, op) ? &in : &out;
			c->start[i] = ready > *eng ? ready : *eng;
			if (comp > c->start[i])
				c->start[i] = comp;
			*eng = c->end[i] = c->start[i] + c->dur[i];
			continue;
		}
		c->start[i] = ready > comp ? ready : comp;
		if (t->issue > 0 && c->dur[i] > 0) {
			hst += op_issue(t, op);
			if (hst > c->start[i])
				c->start[i] = hst;
		}
		comp = c->end[i] = c->start[i] + c->dur[i];
	}
	c->total = comp;
	if (out > c->total)
		c->total = out;
	if (in > c->total)
		c->total = in;
	if (host > c->total)
		c->total = host;
	if (net > c->total)
		c->total = net;
}

void
cost_free(Cost *c)
{
	free(c->dur);
	free(c->start);
	free(c->end);
	free(c->net);
	free(c->pack);
	memset(c, 0, sizeof *c);
}
