/* sync.c: the events between the compute and the copy stream, from the dependence DAG.
 *
 * needs: a lowered function (passes/lower.h): its fusion groups (a group's kernel runs at
 *        its first op) and its dependence DAG (passes/deps.c after layout: values the layout
 *        did not place got bytes of their own, so they share nothing).
 * fills: per copy the compute op whose completion it waits for and the latest copy of the
 *        other copy stream it waits for, per compute op whether that completion is recorded,
 *        per launching op the latest copy of each copy stream it must wait for beyond the IR's
 *        `wait`s, per update on the host the copies it waits for.
 *
 * Kernels run in program order on the compute stream, copies in program order on two copy
 * streams, one each way (PCIe is full duplex), so only edges of passes/deps.c's DAG that cross
 * streams need events, and of those only the latest one from each stream into an op: an
 * event covers everything its stream did before it, and a stream that waited on one carries
 * that wait into its later events. An update on the host, on a stream of its own, waits for
 * the latest copy to the host before it (its gradient's) and the latest copy in that reads what
 * it writes; it touches host memory only, so no kernel waits for it. A copy after a `wait`
 * needs nothing for it: the wait only orders compute after an earlier copy, which the copy
 * stream's order, or the copy's own wait on the other stream, already puts before. */
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* The copy stream op i runs on: CS_OUT (to the host: swap_out, swap_home), CS_IN (to the
 * accelerator: swap_in), 0: none. */
int
cuda_cstream(const Func *f, int i)
{
	if (!(opinfo[f->op[i].kind].flags & F_COPY))
		return 0;
	return f->op[i].kind == OP_SWAPIN ? CS_IN : CS_OUT;
}

/* What a stream knows done: the last op of each stream (compute, out, in) completed when its
 * next op starts; each stream runs in order. kn = kn joined with w. */
static void
join(int *kn, const int *w)
{
	for (int s = 0; s < 3; s++)
		if (w[s] > kn[s])
			kn[s] = w[s];
}

void
cuda_sync(CuFn *p, const LowFunc *pl, int *nrec)
{
	const Func *f = p->f;
	int n = f->nop, kn[3][3];
	int (*kd)[3] = xmalloc((n + 1) * sizeof *kd);    /* per op: what is known done once it is */
	const Dag *d = pl->dag;

	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			kn[a][b] = -1;
	p->after = xmalloc((n + 1) * sizeof *p->after);
	p->rec = xmalloc((n + 1) * sizeof *p->rec);
	p->xwait = xmalloc((n + 1) * 2 * sizeof *p->xwait);
	p->cwait = xmalloc((n + 1) * sizeof *p->cwait);
	p->hout = xmalloc((n + 1) * sizeof *p->hout);
	for (int i = 0; i < n; i++) {
		p->after[i] = p->rec[i] = p->xwait[2 * i] = p->xwait[2 * i + 1] = p->cwait[i] = p->hout[i] = -1;
		kd[i][0] = kd[i][1] = kd[i][2] = -1;
	}
	for (int i = 0, lastout = -1; i < n; i++) {
		const Op *o = &f->op[i];
		int m = -1, x = -1, k = cuda_cstream(f, i);

		if (k) {
			for (int e = d->in[i]; e < d->in[i + 1]; e++) {
				int from = d->e[e].from, kf = cuda_cstream(f, from);
				/* the latest compute op it depends on */
				if (!kf && !op_on_host(f, &f->op[from]) && f->op[from].kind != OP_WAIT && from > m)
					m = from;
				/* the latest copy of the other stream (a swap_in of what a swap_out sent,
				 * bytes the other stream reads or writes) */
				if (kf && kf != k && from > x)
					x = from;
			}
			if (x > kn[k][3 - k]) {
				p->cwait[i] = x;
				join(kn[k], kd[x]);
			}
			/* ops of one fused group run as one kernel, launched at the group's first op: an
			 * event after any of them covers the whole kernel */
			if (m >= 0 && (pl->grp[m] >= 0 ? pl->grp[m] : m) > kn[k][0]) {
				if (p->rec[m] < 0)
					p->rec[m] = (*nrec)++;
				p->after[i] = p->rec[m];
				join(kn[k], kd[m]);
			}
			kn[k][k] = i;
			memcpy(kd[i], kn[k], sizeof kd[i]);
			if (k == CS_OUT)
				lastout = i;
		} else if (o->kind == OP_WAIT) {
			join(kn[0], kd[f->val[o->args[0]].def]);
		} else if (op_on_host(f, o)) {
			/* after the latest copy to the host (its gradient's) and the latest copy in that
			 * reads what it writes (a param fetched again) */
			p->hout[i] = lastout;
			for (int e = d->in[i]; e < d->in[i + 1]; e++)
				if (cuda_cstream(f, d->e[e].from) == CS_IN && d->e[e].from > p->cwait[i])
					p->cwait[i] = d->e[e].from;
		} else if (pl->grp[i] >= 0 && pl->grp[i] != i) {
			memcpy(kd[i], kd[pl->grp[i]], sizeof kd[i]);    /* ran by its group's launch */
		} else {
			/* a launch: the latest copy of each stream any op it runs depends on */
			int end = pl->grp[i] == i ? pl->gend[i] : i + 1, mm[3] = { -1, -1, -1 };
			for (int q = i; q < end; q++)
				for (int e = d->in[q]; e < d->in[q + 1]; e++) {
					int from = d->e[e].from, kf = cuda_cstream(f, from);
					if (kf && from > mm[kf])
						mm[kf] = from;
				}
			for (int s = CS_OUT; s <= CS_IN; s++)
				if (mm[s] > kn[0][s]) {
					p->xwait[2 * i + s - 1] = mm[s];
					join(kn[0], kd[mm[s]]);
				}
			kn[0][0] = i;
			memcpy(kd[i], kn[0], sizeof kd[i]);
		}
	}
	free(kd);
}
