/* micro.c: micro-batches: the training step as k passes of forward and backward over slices of
 * the batch, their gradients summed, one update.
 *
 * needs: m, the model at its batch B (forward with the loss, no step), and mu, the same source
 *        elaborated at B / k (the frontend's FeOpts.batch_div: every shape written with the
 *        batch const follows, reshape(t, [B, S, H, -1]) included).
 * fills: m's optimizer decls and m->step (see passes.h). The gradients of micro-batch j are
 *        those of its mean loss seeded with 1/k, so their sum is the gradient of the whole
 *        batch's mean loss and the update is the one of an unsplit step: PyTorch's
 *        accumulation loop, `(loss_j / k).backward()` for each j, then `opt.step()`. Each
 *        micro-batch's activations die before the next one starts, so activation memory falls
 *        about k-fold, while the summed gradients live from the first micro-batch to the
 *        updates. Everything is ordinary IR: the planner plans it like any step. Batch norms
 *        normalize with each micro-batch's statistics and fold them into the running ones
 *        once per micro-batch, as PyTorch's loop does; dropout's counter ticks once a step
 *        and each micro-batch draws the whole batch's masks at its own rows (slices.c). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* Does t equal the full-batch type f with its leading dim divided by k? */
static int
divided(const Type *t, const Type *f, int k)
{
	if (t->dt != f->dt || t->sh.rank != f->sh.rank || t->sh.rank == 0 || t->sh.d[0] * k != f->sh.d[0])
		return 0;
	for (int d = 1; d < t->sh.rank; d++)
		if (t->sh.d[d] != f->sh.d[d])
			return 0;
	return 1;
}

static int
same_type(const Type *a, const Type *b)
{
	return a->dt == b->dt && shape_eq(&a->sh, &b->sh);
}

/* What mu is to m: batched[d] for the inputs sliced by the batch. 0, or -1 after a diagnostic. */
static int
compare(const Module *m, const Module *mu, int k, uint8_t *batched, Src *src)
{
	char a[MAXRANK * 24 + 8], b[MAXRANK * 24 + 8];

	if (mu->ndecl != m->ndecl) {
		diag(src, m->opt.loc, "--micro-batches=%d: the model declares %d tensors at its batch but %d "
		     "at a %d-th of it: something but shapes depends on the batch", k, m->ndecl, mu->ndecl, k);
		return -1;
	}
	for (int d = 0; d < m->ndecl; d++) {
		const Decl *x = &m->decl[d], *y = &mu->decl[d];
		if (strcmp(x->name, y->name) || x->role != y->role)
			die("micro-batches: decl %d is %s in one elaboration and %s in the other", d, x->name, y->name);
		batched[d] = x->role == R_INPUT && !same_type(&x->ty, &y->ty);
		if (same_type(&x->ty, &y->ty) || (batched[d] && divided(&y->ty, &x->ty, k)))
			continue;
		diag(src, x->loc, "--micro-batches=%d: %s '%s' is %s at the batch and %s at a %d-th of it: "
		     "%s", k, x->role == R_PARAM ? "param" : "input", x->name, type_str(&x->ty, a, sizeof a),
		     type_str(&y->ty, b, sizeof b), k, x->role == R_PARAM ? "a param must not depend on the batch"
		     : "an input may depend on the batch only by its leading dim");
		return -1;
	}
	for (int o = 0; o < m->fwd->nout; o++) {
		const Type *x = &m->fwd->val[m->fwd->out[o]].ty, *y = &mu->fwd->val[mu->fwd->out[o]].ty;
		if (divided(y, x, k))
			continue;
		diag(src, m->fwd->val[m->fwd->out[o]].loc, "--micro-batches=%d: output '%s' is %s at the batch "
		     "and %s at a %d-th of it: the step returns only outputs whose leading dim is the batch's",
		     k, m->fwd->outname[o], type_str(x, a, sizeof a), type_str(y, b, sizeof b), k);
		return -1;
	}
	return 0;
}

/* Append op (of g) to s with its operands through map, its result named "mb<j>.<name>";
 * micro-batch j of k. */
static void
copy_into(Func *s, const Func *g, const Op *op, int *map, int j, int k, double seedval, int seed,
          int64_t outstart, const int64_t *chunk)
{
	int args[op->nargs ? op->nargs : 1], i;
	int64_t ia[MAXIA];
	double fa[MAXFA];
	const Value *r = op->res >= 0 ? &g->val[op->res] : NULL;

	for (int a = 0; a < op->nargs; a++)
		if ((args[a] = map[op->args[a]]) < 0)
			die("micro-batch copy of %s: operand %%%s has no copy", opinfo[op->kind].name,
			    g->val[op->args[a]].name);
	memcpy(ia, op->ia, sizeof ia);
	memcpy(fa, op->fa, sizeof fa);
	if (r && op->res == seed)
		fa[0] = seedval;             /* d(loss_j / k) = 1 / k */
	if (op->kind == OP_COPYOUT)
		ia[1] += outstart;           /* micro-batch j's rows of the output */
	if (op->kind == OP_DROPOUT && chunk[op->ia[0]]) {
		/* the whole batch's mask at micro-batch j's elements; where they are not blocks of
		 * the batch's, the tensor's own range of a k times longer one */
		ia[2] = chunk[op->ia[0]] > 0 ? chunk[op->ia[0]] : shape_numel(&r->ty.sh);
		ia[3] = k;
		ia[4] = j;
	}
	i = func_op(s, op->kind, op->phase, args, op->nargs, ia, op->nia, fa, r ? &r->ty : NULL,
	            r ? asprintf_a(s->mod->arena, "mb%d.%s", j, r->name) : NULL, op->loc);
	if (r)
		map[op->res] = s->op[i].res;
}

static int
add2(Func *s, Phase ph, int a, int b, const char *name, Loc loc)
{
	int x[2] = { a, b };
	int i = func_op(s, OP_ADD, ph, x, 2, NULL, 0, NULL, &s->val[a].ty, name, loc);
	return s->op[i].res;
}

int
micro_batch(Module *m, Module *mu, int k, Src *src)
{
	int nd, nd0 = m->ndecl, seed = -1, lsum = -1, rc = -1, nkey;
	int64_t *chunk = NULL;
	int *ugrad = NULL, *acc = NULL, *map = NULL;
	uint8_t *batched = xcalloc(m->ndecl + 1, 1);
	const char *lname;
	OptDecls *od = NULL, *odu = NULL;
	Func *g = NULL, *s;
	Loc loc;

	if (k < 2 || m->fwd->loss < 0 || m->step || mu->fwd->loss < 0)
		die("micro_batch of a module that is not a trained model's forward (k %d)", k);
	lname = m->fwd->val[m->fwd->loss].name;
	loc = m->fwd->val[m->fwd->loss].loc;
	/* both get the optimizer's decls (the same, in the same order: mu's step reads dropout's
	 * counter and the batch norms' buffers by index) */
	if (compare(m, mu, k, batched, src))
		goto out;
	nkey = dropout_keys(mu->fwd);
	chunk = xmalloc((nkey + 1) * sizeof *chunk);
	batch_chunks(m->fwd, mu->fwd, k, chunk, nkey);
	{
		char what[48];
		snprintf(what, sizeof what, "--micro-batches=%d", k);
		dropout_warn(src, mu->fwd, chunk, what, "micro-batch");
	}
	if (!(odu = autodiff_opt_decls(mu, src)) || !(od = autodiff_opt_decls(m, src)))
		goto out;
	nd = m->ndecl;
	if (mu->ndecl != nd)
		die("micro-batches: %d decls with the optimizer's, %d at a %d-th of the batch", nd, mu->ndecl, k);
	batched = xrealloc(batched, nd + 1);
	memset(batched + nd0, 0, nd - nd0 + 1);        /* the optimizer's decls are not sliced */
	for (int d = 0; d < nd; d++)
		if (strcmp(m->decl[d].name, mu->decl[d].name))
			die("micro-batches: decl %d is %s and %s", d, m->decl[d].name, mu->decl[d].name);
	ugrad = xmalloc((nd + 1) * sizeof *ugrad);
	acc = xmalloc((nd + 1) * sizeof *acc);
	if (!(g = autodiff_grads(mu, src, odu, ugrad, &seed)))
		goto out;
	s = func_new(m, "step");
	map = xmalloc((g->nval + 1) * sizeof *map);
	for (int d = 0; d < nd; d++)
		acc[d] = -1;
	for (int j = 0; j < k; j++) {
		for (int v = 0; v < g->nval; v++)
			map[v] = -1;
		/* the inputs of micro-batch j: rows [j B/k, (j+1) B/k) of those that hold the batch */
		for (int d = 0; d < nd; d++) {
			int64_t ia[MAXIA] = { 0, j * mu->decl[d].ty.sh.d[0] };
			Type t = mu->decl[d].ty;
			map[d] = d;
			if (batched[d]) {
				int i = func_op(s, OP_SLICE, PH_FWD, &d, 1, ia, 0, NULL, &t,
				                asprintf_a(m->arena, "mb%d.%s", j, m->decl[d].name), m->decl[d].loc);
				map[d] = s->op[i].res;
			}
		}
		for (int i = 0; i < g->nop; i++) {
			const Op *op = &g->op[i];
			int64_t start = 0;
			if (op->kind == OP_TICK && j > 0)
				continue;            /* dropout's counter counts steps, not micro-batches */
			if (op->kind == OP_COPYOUT)
				start = j * shape_numel(&g->val[op->args[0]].ty.sh);
			copy_into(s, g, op, map, j, k, 1.0 / k, seed, start, chunk);
		}
		/* the gradients summed as they come; the last sum is g.P */
		for (int d = 0; d < nd; d++) {
			if (ugrad[d] < 0)
				continue;
			char *nm = j == k - 1 ? asprintf_a(m->arena, "g.%s", m->decl[d].name) :
			           asprintf_a(m->arena, "gs%d.%s", j, m->decl[d].name);
			acc[d] = j == 0 ? map[ugrad[d]] : add2(s, PH_BWD, acc[d], map[ugrad[d]], nm, m->opt.loc);
		}
		lsum = j == 0 ? map[g->loss] : add2(s, PH_FWD, lsum, map[g->loss],
		                                    asprintf_a(m->arena, "%s.sum", lname), loc);
	}
	{
		/* the whole batch's loss: the mean of the micro-batches' means */
		Type sc = { F32, { 0, {0} } };
		double kv[MAXFA] = { (double)k };
		int i = func_op(s, OP_CONST, PH_FWD, NULL, 0, NULL, 0, kv, &sc, "micro_batches", loc), a[2];
		a[0] = lsum;
		a[1] = s->op[i].res;
		i = func_op(s, OP_DIV, PH_FWD, a, 2, NULL, 0, NULL, &sc, lname, loc);
		s->loss = s->op[i].res;
	}
	autodiff_updates(m, s, acc, od);
	m->step = s;
	m->fwd->loss = -1;
	rc = 0;
out:
	if (g)
		func_free(g);
	autodiff_opt_free(od);
	autodiff_opt_free(odu);
	free(ugrad);
	free(acc);
	free(map);
	free(batched);
	free(chunk);
	return rc;
}
