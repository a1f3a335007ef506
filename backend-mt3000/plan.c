/* plan.c: what code generation needs beyond the IR: addresses, lifetimes, fusion groups.
 *
 * needs: a module after the pipeline: ops in execution order, Value.off set by the layout
 *        pass (values still at -1 get their own slot from layout_temporary_slots below).
 * fills: Gen's persistent zone (inputs, params, state at fixed offsets, shared by forward and
 *        step) and one FnPlan per function. */
#include <stdlib.h>

#include "mt3000.h"

enum { ALIGN = 64 };

static int64_t
align(int64_t x)
{
	return (x + ALIGN - 1) & ~(int64_t)(ALIGN - 1);
}

int
is_fusable(const Op *op)
{
	return (opinfo[op->kind].flags & F_EW) != 0;
}

int64_t
vbytes(const Func *f, int v)
{
	return type_bytes(&f->val[v].ty);
}

int
in_ddr(const Func *f, int v)
{
	return f->val[v].host;
}

/* TEMPORARY, for IR the layout pass (passes/layout.c) has not seen (values whose off is
 * still -1): each such value gets its own slot after everything placed, so it never shares
 * bytes and check mode accepts it. *end: the device end so far (persistent zone included). */
static void
layout_temporary_slots(const Func *f, int64_t *off, int64_t *end, int64_t *ddr)
{
	for (int v = 0; v < f->nval; v++) {
		if (f->val[v].decl >= 0 || f->val[v].off >= 0)
			continue;
		int64_t *e = in_ddr(f, v) ? ddr : end;
		off[v] = *e = align(*e);
		*e += vbytes(f, v);
	}
}

static int
overlap(const FnPlan *p, int a, int b)
{
	const Func *f = p->f;
	if (in_ddr(f, a) != in_ddr(f, b))
		return 0;
	return p->off[a] < p->off[b] + vbytes(f, b) && p->off[b] < p->off[a] + vbytes(f, a);
}

/* Does op j's result take exactly the bytes of v, an operand from outside the group [i, j]
 * read at the result's own index (same shape, not broadcast)? Each element's operands are
 * loaded before its results are stored, so that sharing is safe in one loop. */
static int
same_place(const FnPlan *p, int v, int r, int i)
{
	const Func *f = p->f;
	return f->val[v].def < i && in_ddr(f, v) == in_ddr(f, r) && p->off[v] == p->off[r] &&
	       vbytes(f, v) == vbytes(f, r) && shape_eq(&f->val[v].ty.sh, &f->val[r].ty.sh);
}

/* May op j join the fused group [i, j)? It must be elementwise with the group's shape, and
 * its result may share no byte with anything the group reads or writes: inside one loop,
 * element k of an early op is computed after element k+1 of a later one would be written.
 * The exception: exactly an outside operand's bytes (same_place; the layout gives a dying
 * operand's bytes to a result, as after a matmul's bias add and relu). */
static int
joins(const FnPlan *p, int i, int j)
{
	const Func *f = p->f;
	const Op *o = &f->op[j];

	int ext[MAXFUSE + 3], next = 0;

	if (!is_fusable(o) || in_ddr(f, o->res) || j - i >= MAXFUSE ||
	    !shape_eq(&f->val[o->res].ty.sh, &f->val[f->op[i].res].ty.sh))
		return 0;
	/* At most MAXFUSE operands from outside (the kernel's argument array is bounded). */
	for (int k = i; k <= j; k++)
		for (int a = 0; a < f->op[k].nargs; a++) {
			int v = f->op[k].args[a], d = f->val[v].def, q;
			if (d >= i && d <= j)
				continue;
			for (q = 0; q < next && ext[q] != v; q++)
				;
			if (q == next && ++next > MAXFUSE)
				return 0;
			ext[q] = v;
		}
	for (int k = i; k <= j; k++) {
		const Op *q = &f->op[k];
		for (int a = 0; a < q->nargs; a++)
			if (q->args[a] != o->res && overlap(p, q->args[a], o->res) &&
			    !same_place(p, q->args[a], o->res, i))
				return 0;
		if (k < j && overlap(p, q->res, o->res))
			return 0;
	}
	return 1;
}

static void
plan_func(Gen *g, FnPlan *p, const Func *f, int idbase)
{
	int n = f->nop;
	int64_t live = 0, peak = 0;
	int64_t *dying;

	p->f = f;
	p->idbase = idbase;
	p->off = calloc((size_t)f->nval, sizeof *p->off);
	p->last = malloc(sizeof *p->last * (size_t)f->nval);
	p->mat = malloc((size_t)f->nval);
	p->grp = malloc(sizeof *p->grp * (size_t)(n + 1));
	p->gend = calloc((size_t)(n + 1), sizeof *p->gend);
	dying = calloc((size_t)(n + 1), sizeof *dying);
	if (!p->off || !p->last || !p->mat || !p->grp || !p->gend || !dying)
		die("out of memory");

	/* Addresses: the layout's offsets are device addresses already (module tensors first, at
	 * the same offsets in every function); values it did not place get their own slots. */
	int64_t end = g->persist;
	p->ddr = 0;
	for (int v = 0; v < f->nval; v++) {
		p->off[v] = f->val[v].off;
		if (f->val[v].decl >= 0)
			p->off[v] = g->poff[f->val[v].decl];
		else if (f->val[v].off >= 0) {
			int64_t *e = in_ddr(f, v) ? &p->ddr : &end;
			if (f->val[v].off + vbytes(f, v) > *e)
				*e = f->val[v].off + vbytes(f, v);
		}
	}
	layout_temporary_slots(f, p->off, &end, &p->ddr);
	p->arena = align(end) - g->persist;
	p->ddr = align(p->ddr);
	for (int v = 0; v < f->nval; v++) {
		p->mat[v] = 1;
		p->last[v] = -1;
	}

	/* Lifetimes: a value dies after its last reader; a swap_out's source only after the wait
	 * on the copy, which reads it until then; outputs live to the end. */
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		if (o->res >= 0)
			p->last[o->res] = i;
		for (int a = 0; a < o->nargs; a++) {
			int v = o->args[a];
			p->last[v] = i;
			if (o->kind == OP_WAIT && f->val[v].def >= 0 && f->op[f->val[v].def].kind == OP_SWAPOUT)
				p->last[f->op[f->val[v].def].args[0]] = i;
		}
	}
	for (int k = 0; k < f->nout; k++)
		p->last[f->out[k]] = n;
	if (f->loss >= 0)
		p->last[f->loss] = n;

	/* Fusion: maximal runs of elementwise ops of one shape. */
	for (int i = 0; i < n; i++)
		p->grp[i] = -1;
	for (int i = 0; i < n;) {
		int j = i + 1;
		if (!is_fusable(&f->op[i]) || in_ddr(f, f->op[i].res)) {
			i++;
			continue;
		}
		while (j < n && joins(p, i, j))
			j++;
		for (int k = i; k < j; k++) {
			int r = f->op[k].res;
			p->grp[k] = i;
			if (j - i > 1 && p->last[r] < j)
				p->mat[r] = 0;
		}
		p->gend[i] = j;
		i = j;
	}

	/* The planned peak: every arena value live from its op to its last use. */
	for (int v = g->m->ndecl; v < f->nval; v++)
		if (!in_ddr(f, v) && f->val[v].def >= 0)
			dying[p->last[v] < f->val[v].def ? f->val[v].def : p->last[v]] += vbytes(f, v);
	for (int i = 0; i < n; i++) {
		if (f->op[i].res >= 0 && !in_ddr(f, f->op[i].res))
			live += vbytes(f, f->op[i].res);
		if (live > peak)
			peak = live;
		live -= dying[i];
	}
	p->peak = g->persist + peak;
	free(dying);
}

void
gen_plan(Gen *g)
{
	const Module *m = g->m;

	g->poff = malloc(sizeof *g->poff * (size_t)(m->ndecl + 1));
	g->persist = g->param_bytes = g->state_bytes = 0;
	/* The persistent zone: where the layout put the module tensors, else in decl order. */
	for (int d = 0; d < m->ndecl; d++) {
		int64_t b = type_bytes(&m->decl[d].ty), o = m->fwd->val[d].off;
		if (o < 0 || (m->step && m->step->val[d].off != o))
			break;
		g->poff[d] = o;
		if (o + b > g->persist)
			g->persist = o + b;
		if (d == m->ndecl - 1)
			goto laid;
	}
	g->persist = 0;
	for (int d = 0; d < m->ndecl; d++) {
		g->poff[d] = g->persist;
		g->persist = align(g->persist + type_bytes(&m->decl[d].ty));
	}
laid:
	g->persist = align(g->persist);
	for (int d = 0; d < m->ndecl; d++) {
		int64_t b = type_bytes(&m->decl[d].ty);
		if (m->decl[d].role == R_PARAM)
			g->param_bytes += b;
		else if (m->decl[d].role == R_STATE)
			g->state_bytes += b;
	}
	plan_func(g, &g->fwd, m->fwd, 0);
	g->nids = m->fwd->nval;
	g->arena = g->fwd.arena;
	g->ddr = g->fwd.ddr;
	if (m->step) {
		plan_func(g, &g->step, m->step, g->nids);
		g->nids += m->step->nval;
		if (g->step.arena > g->arena)
			g->arena = g->step.arena;
		if (g->step.ddr > g->ddr)
			g->ddr = g->step.ddr;
	}
}

static void
free_fn(FnPlan *p)
{
	free(p->off);
	free(p->last);
	free(p->mat);
	free(p->grp);
	free(p->gend);
}

void
gen_free(Gen *g)
{
	free_fn(&g->fwd);
	if (g->step.f)
		free_fn(&g->step);
	free(g->poff);
}
