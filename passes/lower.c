/* lower.c: what code generation needs beyond the IR: addresses, lifetimes, fusion groups,
 * dependences, the persistent zone; the same for every target.
 *
 * needs: a module after the pipeline: ops in execution order, Value.off set by the layout
 *        pass (values still at -1 get their own slot from layout_temporary_slots below).
 * fills: a Lowered: the persistent zone (inputs, params, state at fixed offsets, shared by
 *        forward and step) and one LowFunc per function. Lifetimes are liveness.c's (a
 *        copy's operand lives until the wait on the copy, module tensors to the end) and the
 *        dependences deps.c's; alignment is the target's. */
#include <stdlib.h>
#include <string.h>

#include "lower.h"

static int64_t
align(int64_t x, int64_t a)
{
	return (x + a - 1) & ~(a - 1);
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
layout_temporary_slots(const Func *f, int64_t a, int64_t *off, int64_t *end, int64_t *ddr)
{
	for (int v = 0; v < f->nval; v++) {
		if (f->val[v].decl >= 0 || f->val[v].off >= 0)
			continue;
		int64_t *e = in_ddr(f, v) ? ddr : end;
		off[v] = *e = align(*e, a);
		*e += vbytes(f, v);
	}
}

static int
overlap(const LowFunc *p, int a, int b)
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
same_place(const LowFunc *p, int v, int r, int i)
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
joins(const LowFunc *p, int i, int j)
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
lower_func(Lowered *lo, LowFunc *p, const Func *f, int idbase, const Live *lv, const Dag *dg)
{
	int n = f->nop;
	int64_t live = 0, peak = 0, a = lo->tg->align;
	int64_t *dying;
	int *last;

	p->f = f;
	p->idbase = idbase;
	p->off = xcalloc(f->nval + 1, sizeof *p->off);
	p->mat = xmalloc(f->nval + 1);
	p->grp = xmalloc((n + 1) * sizeof *p->grp);
	p->gend = xcalloc(n + 1, sizeof *p->gend);
	dying = xcalloc(n + 1, sizeof *dying);

	/* Lifetimes and dependences: the driver's, else computed here by the same passes. */
	p->owns = !lv || !dg;
	if (p->owns) {
		live_fill(&p->own_live, f);
		dag_build(&p->own_dag, f, &p->own_live, NULL);
		lv = &p->own_live;
		dg = &p->own_dag;
	}
	p->live = lv;
	p->dag = dg;
	p->last = last = xmalloc((f->nval + 1) * sizeof *last);
	memcpy(last, lv->last, f->nval * sizeof *last);
	p->skip = xcalloc(n + 1, 1);
	p->defer = xmalloc((n + 1) * sizeof *p->defer);
	for (int i = 0; i < n; i++)
		p->defer[i] = -1;

	/* Addresses: the layout's offsets are device addresses already (module tensors first, at
	 * the same offsets in every function); values it did not place get their own slots. */
	int64_t end = lo->persist;
	p->ddr = lo->hpersist;
	for (int v = 0; v < f->nval; v++) {
		p->off[v] = f->val[v].off;
		if (f->val[v].decl >= 0)
			p->off[v] = lo->poff[f->val[v].decl];
		else if (f->val[v].def >= 0 && f->op[f->val[v].def].kind == OP_SWAPHOME)
			p->off[v] = lo->poff[f->val[f->op[f->val[v].def].args[0]].decl];
		else if (f->val[v].off >= 0) {
			int64_t *e = in_ddr(f, v) ? &p->ddr : &end;
			if (f->val[v].off + vbytes(f, v) > *e)
				*e = f->val[v].off + vbytes(f, v);
		}
	}
	layout_temporary_slots(f, a, p->off, &end, &p->ddr);
	p->arena = align(end, a) - lo->persist;
	p->ddr = align(p->ddr, a);
	for (int v = 0; v < f->nval; v++)
		p->mat[v] = 1;

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
			if (j - i > 1 && last[r] < j)
				p->mat[r] = 0;
		}
		p->gend[i] = j;
		i = j;
	}

	/* The planned peak: every arena value live from its op to its last use. */
	for (int v = lo->m->ndecl; v < f->nval; v++)
		if (!in_ddr(f, v) && f->val[v].def >= 0)
			dying[last[v] < f->val[v].def ? f->val[v].def : last[v]] += vbytes(f, v);
	for (int i = 0; i < n; i++) {
		if (f->op[i].res >= 0 && !in_ddr(f, f->op[i].res))
			live += vbytes(f, f->op[i].res);
		if (live > peak)
			peak = live;
		live -= dying[i];
	}
	p->peak = lo->persist + peak;
	free(dying);
}

void
lower(Lowered *lo, const Module *m, const Target *tg, const Live *const live[2],
      const Dag *const dag[2], const LowPlan *plan)
{
	int64_t a = tg->align;

	memset(lo, 0, sizeof *lo);
	lo->m = m;
	lo->tg = tg;
	if (plan)
		lo->plan = *plan;
	if (!lo->plan.solver)
		lo->plan.solver = "none";
	lo->poff = xmalloc((m->ndecl + 1) * sizeof *lo->poff);
	/* The persistent zones (on the accelerator; in host memory for Decl.host): where the
	 * layout put the module tensors, else in decl order. */
	for (int d = 0; d < m->ndecl; d++) {
		int64_t b = type_bytes(&m->decl[d].ty), o = m->fwd->val[d].off;
		int64_t *z = m->decl[d].host ? &lo->hpersist : &lo->persist;
		if (o < 0 || (m->step && m->step->val[d].off != o))
			break;
		lo->poff[d] = o;
		if (o + b > *z)
			*z = o + b;
		if (d == m->ndecl - 1)
			goto laid;
	}
	lo->persist = lo->hpersist = 0;
	for (int d = 0; d < m->ndecl; d++) {
		int64_t *z = m->decl[d].host ? &lo->hpersist : &lo->persist;
		lo->poff[d] = *z;
		*z = align(*z + type_bytes(&m->decl[d].ty), a);
	}
laid:
	lo->persist = align(lo->persist, a);
	lo->hpersist = align(lo->hpersist, a);
	for (int d = 0; d < m->ndecl; d++) {
		int64_t b = type_bytes(&m->decl[d].ty);
		if (m->decl[d].role == R_PARAM) {
			lo->param_bytes += b;
			if (m->decl[d].host)
				lo->hparam_bytes += b;
		}
		else if (m->decl[d].role == R_STATE && m->decl[d].host)
			lo->hstate_bytes += b;
		else if (m->decl[d].role == R_STATE)
			lo->state_bytes += b;
		else if (m->decl[d].role == R_BUFFER)
			lo->buffer_bytes += b;
	}
	lower_func(lo, &lo->fwd, m->fwd, 0, live ? live[0] : NULL, dag ? dag[0] : NULL);
	lo->nids = m->fwd->nval;
	lo->arena = lo->fwd.arena;
	lo->ddr = lo->fwd.ddr;
	if (m->step) {
		lower_func(lo, &lo->step, m->step, lo->nids, live ? live[1] : NULL, dag ? dag[1] : NULL);
		lo->nids += m->step->nval;
		if (lo->step.arena > lo->arena)
			lo->arena = lo->step.arena;
		if (lo->step.ddr > lo->ddr)
			lo->ddr = lo->step.ddr;
	}
}

static void
free_fn(LowFunc *p)
{
	free(p->off);
	free(p->mat);
	free(p->grp);
	free(p->gend);
	free(p->last);
	free(p->skip);
	free(p->defer);
	if (p->owns) {
		dag_free(&p->own_dag);
		live_free(&p->own_live);
	}
}

void
lower_free(Lowered *lo)
{
	free_fn(&lo->fwd);
	if (lo->step.f)
		free_fn(&lo->step);
	free(lo->poff);
	memset(lo, 0, sizeof *lo);
}
