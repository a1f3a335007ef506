/* simplify.c: common-subexpression and dead-code elimination.
 *
 * needs: a function before planning (no rec or mem ops: merging a recomputation with what it
 *        recomputes would undo the plan, the failure Checkmate's users hit).
 * fills: the same function with each repeated pure op (same kind, operands, attributes and
 *        result type) replaced by its first occurrence, an inference dropout by its operand
 *        (the identity), and only the ops that its outputs, its loss and its in-place updates
 *        (F_MUT) need; values renumbered, names kept.
 * An op keeps its phase, and a first occurrence precedes its repeats, so a backward op merged
 * into a forward one only makes that forward value saved for the backward. Workspaces
 * (F_SCRATCH) are never merged: each belongs to the one op that reads it. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* May CSE merge op with an earlier one? Not a workspace: each is its op's own bytes. */
static int
pure(const Op *op)
{
	return op->res >= 0 && !(opinfo[op->kind].flags & (F_MUT | F_COPY | F_NORES | F_SCRATCH)) &&
	       op->phase != PH_REC && op->phase != PH_MEM;
}

static int
nattr(const Op *op)
{
	return op_iattr_is_list(op->kind) ? op->nia : op_niattr(op->kind);
}

static unsigned
hash(const Func *f, const Op *op)
{
	unsigned h = 2166136261u * 31 + op->kind;
	for (int k = 0; k < op->nargs; k++)
		h = (h ^ (unsigned)op->args[k]) * 16777619u;
	for (int k = 0; k < nattr(op); k++)
		h = (h ^ (unsigned)op->ia[k]) * 16777619u;
	(void)f;
	return h;
}

static int
same(const Func *f, const Op *a, const Op *b)
{
	const Type *ta = &f->val[a->res].ty, *tb = &f->val[b->res].ty;

	if (a->kind != b->kind || a->nargs != b->nargs || a->nia != b->nia || nattr(a) != nattr(b))
		return 0;
	if (memcmp(a->args, b->args, a->nargs * sizeof *a->args) ||
	    memcmp(a->ia, b->ia, nattr(a) * sizeof *a->ia) ||
	    memcmp(a->fa, b->fa, op_nfattr(a->kind) * sizeof *a->fa))
		return 0;
	return ta->dt == tb->dt && shape_eq(&ta->sh, &tb->sh);
}

/* Replace repeats by first occurrences; returns how many were replaced. repl: value -> value. */
static int
cse(Func *f, int *repl)
{
	int cap = 64, n = 0, *tab;

	while (cap < 2 * f->nop)
		cap *= 2;
	tab = xcalloc(cap, sizeof *tab);
	for (int i = 0; i < f->nop; i++) {
		Op *op = &f->op[i];
		unsigned h;
		for (int k = 0; k < op->nargs; k++)
			op->args[k] = repl[op->args[k]];
		if (op->of >= 0)
			op->of = repl[op->of];
		if (opinfo[op->kind].flags & F_MUT)   /* operands change: nothing before is reusable */
			memset(tab, 0, cap * sizeof *tab);
		if (!pure(op))
			continue;
		if (op->kind == OP_DROPOUT && op->nargs == 1) {     /* inference: the identity */
			repl[op->res] = op->args[0];
			n++;
			continue;
		}
		for (h = hash(f, op) & (cap - 1); tab[h]; h = (h + 1) & (cap - 1))
			if (same(f, &f->op[tab[h] - 1], op))
				break;
		if (tab[h]) {
			repl[op->res] = f->op[tab[h] - 1].res;
			n++;
		} else
			tab[h] = i + 1;
	}
	for (int i = 0; i < f->nout; i++)
		f->out[i] = repl[f->out[i]];
	if (f->loss >= 0)
		f->loss = repl[f->loss];
	free(tab);
	return n;
}

/* keep[i]: op i is needed; returns how many are not. */
static int
dce(Func *f, uint8_t *keep)
{
	uint8_t *live = xcalloc(f->nval ? f->nval : 1, 1);
	int dead = 0;

	for (int i = 0; i < f->nout; i++)
		live[f->out[i]] = 1;
	if (f->loss >= 0)
		live[f->loss] = 1;
	for (int i = f->nop - 1; i >= 0; i--) {
		const Op *op = &f->op[i];
		keep[i] = op->res >= 0 ? live[op->res] : 1;
		if (!keep[i]) {
			dead++;
			continue;
		}
		for (int k = 0; k < op->nargs; k++)
			live[op->args[k]] = 1;
		if (op->of >= 0)
			live[op->of] = 1;
	}
	free(live);
	return dead;
}

void
simplify(Func *f)
{
	int *repl = xmalloc((f->nval ? f->nval : 1) * sizeof *repl);
	uint8_t *keep = xmalloc(f->nop ? f->nop : 1);
	int n;

	for (int v = 0; v < f->nval; v++)
		repl[v] = v;
	n = cse(f, repl);
	n += dce(f, keep);
	if (n)
		func_adopt(f, func_rebuild(f, keep, NULL));
	free(repl);
	free(keep);
}
