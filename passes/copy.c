/* copy.c: rebuilding functions op by op, for passes that add decls or drop ops.
 *
 * Values are indices, so dropping an op or adding a decl (whose value must sit among the
 * first ndecl of every function) means renumbering; building a fresh function and moving it
 * into place does that in one obvious way, with names kept (the builder keeps them unique). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

int
copy_op(Func *to, const Func *from, const Op *op, int *map, int phase)
{
	int args[op->nargs ? op->nargs : 1], i;
	const Value *r = op->res >= 0 ? &from->val[op->res] : NULL;

	for (int k = 0; k < op->nargs; k++) {
		args[k] = map[op->args[k]];
		if (args[k] < 0)
			die("copy of %s: operand %%%s has no copy", opinfo[op->kind].name,
			    from->val[op->args[k]].name);
	}
	i = func_op(to, op->kind, phase < 0 ? op->phase : (Phase)phase, args, op->nargs, op->ia,
	            op->nia, op->fa, r ? &r->ty : NULL, r ? r->name : NULL, op->loc);
	to->op[i].of = op->of >= 0 ? map[op->of] : -1;
	if (r) {
		Value *v = &to->val[to->op[i].res];
		map[op->res] = to->op[i].res;
		v->host = r->host;
		v->off = r->off;
	}
	return i;
}

void
func_adopt(Func *f, Func *nf)
{
	free(f->val);
	free(f->op);
	free(f->htab);
	free(f->out);
	free(f->outname);
	*f = *nf;
	memset(nf, 0, sizeof *nf);
}

Func *
func_rebuild(Func *f, const uint8_t *keep, int *map)
{
	Func *nf = func_new(f->mod, f->name);
	int *m = map ? map : xmalloc((f->nval ? f->nval : 1) * sizeof *m);

	for (int v = 0; v < f->nval; v++)
		m[v] = f->val[v].decl >= 0 ? f->val[v].decl : -1;
	for (int i = 0; i < f->nop; i++)
		if (!keep || keep[i])
			copy_op(nf, f, &f->op[i], m, -1);
	for (int i = 0; i < f->nout; i++) {
		if (m[f->out[i]] < 0)
			die("output %s was dropped", f->outname[i]);
		func_output(nf, f->outname[i], m[f->out[i]]);
	}
	nf->loss = f->loss >= 0 ? m[f->loss] : -1;
	if (f->loss >= 0 && nf->loss < 0)
		die("the loss was dropped");
	if (!map)
		free(m);
	return nf;
}

/* Whether a and b are the same function: op by op (kind, phase, operands, attributes, what
 * it recomputes), value by value (name, type, def, decl, where it lives), the same outputs
 * and loss. Layout offsets are not compared. */
int
func_same(const Func *a, const Func *b)
{
	if (a->nop != b->nop || a->nval != b->nval || a->nout != b->nout || a->loss != b->loss)
		return 0;
	for (int i = 0; i < a->nop; i++) {
		const Op *x = &a->op[i], *y = &b->op[i];
		if (x->kind != y->kind || x->phase != y->phase || x->res != y->res || x->nargs != y->nargs ||
		    x->nia != y->nia || x->of != y->of || memcmp(x->ia, y->ia, sizeof x->ia) ||
		    memcmp(x->fa, y->fa, sizeof x->fa) ||
		    (x->nargs && memcmp(x->args, y->args, x->nargs * sizeof *x->args)))
			return 0;
	}
	for (int v = 0; v < a->nval; v++) {
		const Value *x = &a->val[v], *y = &b->val[v];
		if (x->def != y->def || x->decl != y->decl || x->host != y->host || x->ty.dt != y->ty.dt ||
		    x->ty.sh.rank != y->ty.sh.rank ||
		    memcmp(x->ty.sh.d, y->ty.sh.d, x->ty.sh.rank * sizeof *x->ty.sh.d) || strcmp(x->name, y->name))
			return 0;
	}
	for (int i = 0; i < a->nout; i++)
		if (a->out[i] != b->out[i] || strcmp(a->outname[i], b->outname[i]))
			return 0;
	return 1;
}
