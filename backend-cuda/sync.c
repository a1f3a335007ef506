/* sync.c: the events between the compute and the copy stream, from the dependence DAG.
 *
 * needs: a lowered function (passes/lower.h): its fusion groups (a group's kernel runs at
 *        its first op) and its dependence DAG (passes/deps.c after layout: values the layout
 *        did not place got bytes of their own, so they share nothing).
 * fills: per copy the compute op whose completion it waits for, per compute op whether that
 *        completion is recorded, per launching op the latest copy it must wait for beyond the
 *        IR's `wait`s.
 *
 * Kernels run in program order on the compute stream, copies in program order on the copy
 * stream (an update on the host, on a stream of its own, waits for the latest copy before it
 * and touches only host memory: no event here), so only edges of passes/deps.c's DAG that cross streams need events, and of those
 * only the latest one into an op: an event covers everything its stream did before it, and a
 * stream that waited on one carries that wait into its later events. A copy after a `wait`
 * needs nothing for it: the wait only orders compute after an earlier copy, which the copy
 * stream's order already puts before. */
#include <stdlib.h>

#include "cuda.h"

static int
is_copy(const Func *f, int i)
{
	return (opinfo[f->op[i].kind].flags & F_COPY) != 0;
}

void
cuda_sync(CuFn *p, const LowFunc *pl, int *nrec)
{
	const Func *f = p->f;
	int n = f->nop, s1 = -1, s0 = -1;
	const Dag *d = pl->dag;

	p->after = xmalloc((n + 1) * sizeof *p->after);
	p->rec = xmalloc((n + 1) * sizeof *p->rec);
	p->xwait = xmalloc((n + 1) * sizeof *p->xwait);
	for (int i = 0; i < n; i++)
		p->after[i] = p->rec[i] = p->xwait[i] = -1;
	for (int i = 0; i < n; i++) {
		const Op *o = &f->op[i];
		int m = -1;

		if (is_copy(f, i)) {
			/* the latest compute op it depends on, unless the copy stream already waited */
			for (int e = d->in[i]; e < d->in[i + 1]; e++) {
				int from = d->e[e].from;
				if (!is_copy(f, from) && f->op[from].kind != OP_WAIT && from > m)
					m = from;
			}
			/* ops of one fused group run as one kernel, launched at the group's first op: an
			 * event after any of them covers the whole kernel */
			if (m >= 0 && pl && pl->grp[m] >= 0 && pl->grp[m] <= s1)
				m = -1;
			if (m > s1) {
				if (p->rec[m] < 0)
					p->rec[m] = (*nrec)++;
				p->after[i] = p->rec[m];
				s1 = m;
			}
		} else if (o->kind == OP_WAIT) {
			int c = f->val[o->args[0]].def;
			if (c > s0)
				s0 = c;
		} else if (op_on_host(f, o)) {
			continue;
		} else if (pl->grp[i] < 0 || pl->grp[i] == i) {
			/* a launch: the latest copy any op it runs depends on */
			int end = pl->grp[i] == i ? pl->gend[i] : i + 1;
			for (int k = i; k < end; k++)
				for (int e = d->in[k]; e < d->in[k + 1]; e++)
					if (is_copy(f, d->e[e].from) && d->e[e].from > m)
						m = d->e[e].from;
			if (m > s0) {
				p->xwait[i] = m;
				s0 = m;
			}
		}
	}
}
