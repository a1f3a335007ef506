/* liveness.c: when every value is born and dies in the current op order, and the bytes live
 * at every op.
 *
 * needs: f in execution order (Value.def current: func_relink after a permutation).
 * fills: Live (birth, last use and accelerator bytes of every value; bytes while every op
 * runs and after it; the peak, which no layout can beat). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

void
live_fill(Live *l, const Func *f)
{
	int n = f->nop;
	int64_t *delta;       /* bytes born at op i minus bytes dead after op i */

	memset(l, 0, sizeof *l);
	l->nop = n;
	l->nval = f->nval;
	l->birth = xcalloc(f->nval + 1, sizeof *l->birth);
	l->last = xcalloc(f->nval + 1, sizeof *l->last);
	l->bytes = xcalloc(f->nval + 1, sizeof *l->bytes);
	l->at = xcalloc(n + 1, sizeof *l->at);
	l->after = xcalloc(n + 1, sizeof *l->after);
	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		l->bytes[v] = x->host ? 0 : type_bytes(&x->ty);
		if (x->decl >= 0) {
			l->birth[v] = -1;
			l->last[v] = n;
			l->base += l->bytes[v];
		} else if (x->def < 0) {
			/* left behind by a pass that removed its op: never live */
			l->birth[v] = n;
			l->last[v] = -1;
			l->bytes[v] = 0;
		} else {
			if (x->def >= n || f->op[x->def].res != v)
				die("value %%%s: stale defining op (func_relink?)", x->name);
			l->birth[v] = l->last[v] = x->def;
		}
	}
	for (int i = 0; i < n; i++) {
		const Op *op = &f->op[i];
		for (int k = 0; k < op->nargs; k++) {
			int a = op->args[k];
			if (l->last[a] < i)
				l->last[a] = i;
			/* A copy reads its operand until the wait on it: keep the operand alive. */
			if (op->kind == OP_WAIT && f->val[a].def >= 0 &&
			    (opinfo[f->op[f->val[a].def].kind].flags & F_COPY)) {
				const Op *c = &f->op[f->val[a].def];
				for (int j = 0; j < c->nargs; j++)
					if (l->last[c->args[j]] < i)
						l->last[c->args[j]] = i;
			}
		}
	}
	/* an update on the host runs on its own thread, after the copies issued before it but
	 * maybe after later ones too: what it reads in host memory is not reused in the step */
	for (int i = 0; i < n; i++)
		if (op_on_host(f, &f->op[i]))
			for (int k = 0; k < f->op[i].nargs; k++)
				if (f->val[f->op[i].args[k]].decl < 0)
					l->last[f->op[i].args[k]] = n;
	for (int k = 0; k < f->nout; k++)
		l->last[f->out[k]] = n;
	if (f->loss >= 0)
		l->last[f->loss] = n;

	/* Sweep: at[i] = bytes with birth <= i <= last. */
	/* delta[i]: bytes born at op i; delta[n + 1 + i]: minus bytes whose last use is op i */
	delta = xcalloc(2 * n + 2, sizeof *delta);
	for (int v = 0; v < f->nval; v++)
		if (l->birth[v] >= 0 && l->birth[v] <= l->last[v]) {
			delta[l->birth[v]] += l->bytes[v];
			if (l->last[v] < n)
				delta[n + 1 + l->last[v]] -= l->bytes[v];
		}
	l->peak = l->base;
	l->peakop = -1;
	for (int i = 0; i < n; i++) {
		l->at[i] = (i ? l->after[i - 1] : l->base) + delta[i];
		l->after[i] = l->at[i] + delta[n + 1 + i];
		if (l->peakop < 0 || l->at[i] > l->peak) {
			l->peak = l->at[i];
			l->peakop = i;
		}
	}
	free(delta);
}

void
live_free(Live *l)
{
	free(l->birth);
	free(l->last);
	free(l->bytes);
	free(l->at);
	free(l->after);
	memset(l, 0, sizeof *l);
}
