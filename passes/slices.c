/* slices.c: where a slice of the batch sits in the whole batch, so that dropout draws, in a
 * micro-batch or on a rank, the mask the whole batch's step draws.
 *
 * needs: the forward of the model elaborated at its batch (whole) and at a parts-th of it
 *        (slice), both as the frontend made them: the same ops in the same order, shapes
 *        that differ by the batch.
 * fills: per dropout key, the chunk of dropout's attributes (docs/ir.md): C > 0 when the
 *        slice's tensor holds, per C elements, one block of `parts` consecutive ones of the
 *        whole's (slice q's element i is the whole's (i / C) parts C + q C + i % C); 0 when
 *        the tensor does not depend on the batch; -1 when its elements are not such blocks.
 *
 * A value is such a block when exactly one axis differs, by the factor parts, and its operands
 * are blocks: elementwise ops, matmuls, transposes, reductions, embeddings, convolutions and
 * pools keep the rows of the batch together. Three ops can interleave them: a reshape that
 * merges the batch's axis with an outer one ([S, B, D] to [S B, D]), and a concat or slice
 * along the batch's axis; their results are -1. */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The block type s is of w's (chunk C, *axis the one that differs), 0 (the same), -1. */
static int64_t
block(const Type *w, const Type *s, int parts, int *axis)
{
	int b = -1;
	int64_t c = 1;

	if (w->dt != s->dt || w->sh.rank != s->sh.rank)
		return -1;
	for (int a = 0; a < s->sh.rank; a++)
		if (w->sh.d[a] != s->sh.d[a]) {
			if (b >= 0 || s->sh.d[a] * parts != w->sh.d[a])
				return -1;
			b = a;
		}
	if (b < 0)
		return 0;
	for (int a = b; a < s->sh.rank; a++)
		c *= s->sh.d[a];
	*axis = b;
	return c;
}

int
batch_chunks(const Func *w, const Func *s, int parts, int64_t *chunk, int nkey)
{
	int64_t *blk;
	int same = w->nop == s->nop && w->nval == s->nval && w->mod->ndecl == s->mod->ndecl, axis;

	for (int k = 0; k < nkey; k++)
		chunk[k] = 0;
	for (int i = 0; same && i < s->nop; i++) {
		const Op *a = &w->op[i], *b = &s->op[i];
		same = a->kind == b->kind && a->nargs == b->nargs && a->res == b->res &&
		       !memcmp(a->args, b->args, a->nargs * sizeof *a->args);
	}
	blk = xmalloc((s->nval + 1) * sizeof *blk);
	for (int v = 0; v < s->mod->ndecl && same; v++)
		blk[v] = block(&w->val[v].ty, &s->val[v].ty, parts, &axis);
	for (int i = 0; i < s->nop && same; i++) {
		const Op *op = &s->op[i];
		int64_t c;
		if (op->res < 0)
			continue;
		c = blk[op->res] = block(&w->val[op->res].ty, &s->val[op->res].ty, parts, &axis);
		if (c <= 0)
			continue;
		for (int k = 0; k < op->nargs; k++)
			if (blk[op->args[k]] < 0)
				blk[op->res] = -1;
		if ((op->kind == OP_RESHAPE && blk[op->args[0]] != c) ||
		    ((op->kind == OP_CONCAT || op->kind == OP_SLICE) && op->ia[0] == axis))
			blk[op->res] = -1;
	}
	for (int i = 0; i < s->nop; i++) {
		const Op *op = &s->op[i];
		if (op->kind == OP_DROPOUT && op->ia[0] < nkey)
			chunk[op->ia[0]] = same ? blk[op->res] : -1;
	}
	free(blk);
	return same ? 0 : -1;
}

int
dropout_keys(const Func *f)
{
	int n = 0;

	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_DROPOUT && f->op[i].ia[0] >= n)
			n = (int)f->op[i].ia[0] + 1;
	return n;
}

void
dropout_warn(Src *src, const Func *f, const int64_t *chunk, const char *what, const char *who)
{
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == OP_DROPOUT && chunk[f->op[i].ia[0]] < 0)
			warn(src, f->op[i].loc, "%s: this dropout's rows are not blocks of the batch's (a reshape, "
			     "concat or slice mixes them): each %s draws its own mask, not the whole batch's", what, who);
}

void
dropout_ranks(Func *s, const int64_t *chunk, int nkey, int ranks, int k)
{
	for (int i = 0; i < s->nop; i++) {
		Op *op = &s->op[i];
		int64_t c;
		if (op->kind != OP_DROPOUT || op->nargs != 2)
			continue;
		c = op->ia[0] < nkey ? chunk[op->ia[0]] : 0;
		if (c == 0 && op->ia[2] == 0)
			continue;
		if (k < 2)
			op->ia[4] = 0;
		else if (!(c > 0 && op->ia[3] == k && op->ia[2] * k == c))
			c = -1;          /* the micro-batches' blocks are not the rank's (not seen) */
		else
			c = op->ia[2];
		/* rank r's micro-batch j is slice r k + j of ranks k; not blocks: the tensor's own
		 * range of a ranks k times longer one */
		op->ia[2] = c > 0 ? c : shape_numel(&s->val[op->res].ty.sh);
		op->ia[3] = (int64_t)ranks * (k < 2 ? 1 : k);
		op->ia[5] = k < 2 ? 1 : k;
	}
}
