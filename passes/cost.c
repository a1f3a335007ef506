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

	if (op->kind == OP_WAIT)
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

double
op_time(const Target *t, const Func *f, const Op *op)
{
	double fl, mem;

	if (op->kind == OP_WAIT)
		return 0;
	if (opinfo[op->kind].flags & (F_COPY | F_COLL))
		return t->copylat + (double)op_bytes(f, op) / t->copybw;
	if (op_on_host(f, op)) {
		fl = t->hostflops > 0 ? opinfo[op->kind].cost(f, op) / t->hostflops : 0;
		mem = t->hostbw > 0 ? (double)op_bytes(f, op) / t->hostbw : 0;
		return fl > mem ? fl : mem;
	}
	fl = opinfo[op->kind].cost(f, op) / t->flops;
	mem = (double)op_bytes(f, op) / t->bw;
	return t->launch + (fl > mem ? fl : mem);
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
	return 2 * (r - 1) * t->netlat + 2 * (r - 1) / r * b / t->netbw;
}

/* A copy is issued where it stands in the order: it starts once the compute op before it has
 * ended (so arena bytes it overwrites are free), its operand exists and the copy engine is
 * idle; compute continues meanwhile. An update on the host is issued the same way to the
 * host's thread, which runs it once every copy issued before it is done (its gradient's among
 * them) and the updates before it are. A collective packs its operands on the compute stream,
 * then runs on the network once the collectives before it are done. A wait blocks the compute
 * stream until its copy or collective ends. */
void
cost_fill(Cost *c, const Func *f, const Target *t)
{
	double comp = 0, copy = 0, host = 0, net = 0;

	c->nop = f->nop;
	c->dur = xcalloc(f->nop + 1, sizeof *c->dur);
	c->start = xcalloc(f->nop + 1, sizeof *c->start);
	c->end = xcalloc(f->nop + 1, sizeof *c->end);
	c->net = xcalloc(f->nop + 1, sizeof *c->net);
	c->pack = xcalloc(f->nop + 1, sizeof *c->pack);
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		double ready = 0;

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
			c->start[i] = copy > host ? copy : host;
			if (comp > c->start[i])
				c->start[i] = comp;
			host = c->end[i] = c->start[i] + c->dur[i];
			continue;
		}
		if (opinfo[op->kind].flags & F_COPY) {
			c->start[i] = ready > copy ? ready : copy;
			if (comp > c->start[i])
				c->start[i] = comp;
			copy = c->end[i] = c->start[i] + c->dur[i];
			continue;
		}
		c->start[i] = ready > comp ? ready : comp;
		comp = c->end[i] = c->start[i] + c->dur[i];
	}
	c->total = comp > copy ? comp : copy;
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
