/* dp.c: the entry points of a data-parallel module (<mtc/mtc-comm.h>: mtc_dp_module).
 *
 * mtc compiles static shapes, and the number of ranks is known only when the job runs: a
 * data-parallel module holds one variant of the step per number of ranks it supports, each
 * compiled and planned for its slice of the batch (mtc --ranks). create opens the
 * communicator, refuses a batch that does not divide over its ranks, and creates the variant
 * for its size; step and forward hand the variant the rank's rows of each input that holds
 * the batch (the caller passes the whole batch on every rank; only the rank's rows are read),
 * and forward gathers the outputs' rows from every rank. Params, optimizer state and their
 * get/set are the variant's (the same on every rank). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt-impl.h"
#include "mtc/mtc-comm.h"

typedef struct dp_inst {
	const struct mtc_dp_desc *d;
	const struct mtc_dp_variant *v;
	void *in;                  /* the variant's instance */
	mtc_comm *c;
	int rank, size;
	const void **slice;        /* per input: the rank's rows */
	void **outs;               /* per output: the rank's rows */
	char err[512];
} dp_inst;

/* Each module links its own copy of the runtime: one description per copy. */
static const struct mtc_dp_desc *desc;
static struct mtc_module mod;

static int
fail(dp_inst *p, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
	return code;
}

/* Does tensor info v hold the rows of w divided over the ranks (the batch's leading dim)? */
static int
batched(const struct mtc_tensor_info *v, const struct mtc_tensor_info *w)
{
	return v->rank > 0 && v->shape[0] != w->shape[0];
}

static void *
create_on(const void *mpi_comm)
{
	const struct mtc_dp_desc *d = desc;
	int nslots = 1, size;
	mtc_comm *c;
	dp_inst *p;

	for (int i = 0; i < d->nvar; i++)
		nslots = d->var[i].nslots > nslots ? d->var[i].nslots : nslots;
	if (!(c = mtc_comm_open(mpi_comm, nslots)))
		return NULL;
	size = mtc_comm_size(c);
	if (d->batch % size) {
		mtc_set_last_error(MTC_EINVAL, "%s: the batch of %lld does not divide over %d ranks",
		                   d->whole->name, (long long)d->batch, size);
		mtc_comm_close(c);
		return NULL;
	}
	if (!(p = RT_ALLOC(calloc(1, sizeof *p))) ||
	    !(p->slice = RT_ALLOC(calloc((size_t)d->whole->ninputs + 1, sizeof *p->slice))) ||
	    !(p->outs = RT_ALLOC(calloc((size_t)d->whole->noutputs + 1, sizeof *p->outs)))) {
		if (p)
			free(p->slice);
		free(p);
		mtc_comm_close(c);
		mtc_set_last_error(MTC_ENOMEM, "%s_create: out of memory", d->whole->name);
		return NULL;
	}
	p->d = d;
	p->c = c;
	p->rank = mtc_comm_rank(c);
	p->size = size;
	for (int i = 0; i < d->nvar && !p->v; i++)
		if (d->var[i].ranks == size)
			p->v = &d->var[i];
	if (!p->v) {
		char have[256] = "";
		for (int i = 0; i < d->nvar; i++)
			snprintf(have + strlen(have), sizeof have - strlen(have), "%s%d", i ? ", " : "",
			         d->var[i].ranks);
		mtc_set_last_error(MTC_EINVAL, "%s: compiled for %s ranks, not %d: build it with "
		                   "mtc --data-parallel --ranks=%d", d->whole->name, have, size, size);
	} else if ((p->in = p->v->create(c)))
		return p;
	free(p->slice);
	free(p->outs);
	free(p);
	mtc_comm_close(c);
	return NULL;
}

static void *dp_create(void) { return create_on(NULL); }

static void *
dp_create_comm(const void *mpi_comm)
{
	if (!mpi_comm) {
		mtc_set_last_error(MTC_EINVAL, "%s_create_comm: the communicator is NULL", desc->whole->name);
		return NULL;
	}
	return create_on(mpi_comm);
}

static void
dp_destroy(void *q)
{
	dp_inst *p = q;
	if (!p)
		return;
	p->v->m->destroy(p->in);
	mtc_comm_close(p->c);
	free(p->slice);
	free(p->outs);
	free(p);
}

static const char *
dp_error(const void *q)
{
	const dp_inst *p = q;
	if (!p)
		return mtc_rt_last_error();
	return p->err[0] ? p->err : p->v->m->error(p->in);
}

/* The rank's rows of each input that holds the batch. */
static void
slice_inputs(dp_inst *p, const void *const *in)
{
	const struct mtc_module *w = p->d->whole, *v = p->v->m;
	for (int i = 0; i < w->ninputs; i++)
		p->slice[i] = in[i] && batched(&v->inputs[i], &w->inputs[i]) ?
		              (const char *)in[i] + p->rank * v->inputs[i].bytes : in[i];
}

static int
dp_step(void *q, const void *const *in, float *loss)
{
	dp_inst *p = q;
	if (!p)
		return mtc_set_last_error(MTC_EINVAL, "step: the instance is NULL");
	p->err[0] = 0;
	if (!in && p->d->whole->ninputs)
		return fail(p, MTC_EINVAL, "%s_step: the inputs are NULL", p->d->whole->name);
	slice_inputs(p, in);
	return p->v->m->step(p->in, p->slice, loss);
}

static int
dp_forward(void *q, const void *const *in, void *const *out)
{
	dp_inst *p = q;
	const struct mtc_module *w, *v;
	char err[512];
	int rc;

	if (!p)
		return mtc_set_last_error(MTC_EINVAL, "forward: the instance is NULL");
	w = p->d->whole;
	v = p->v->m;
	p->err[0] = 0;
	if ((!in && w->ninputs) || (!out && w->noutputs))
		return fail(p, MTC_EINVAL, "%s_forward: the inputs or outputs are NULL", w->name);
	slice_inputs(p, in);
	for (int k = 0; k < w->noutputs; k++)
		p->outs[k] = out[k] ? (char *)out[k] + p->rank * v->outputs[k].bytes : NULL;
	rc = v->forward(p->in, p->slice, p->outs);
	/* every rank learns whether any failed before the gathers */
	if ((rc = mtc_comm_finish(p->c, rc, NULL, err, sizeof err)))
		return err[0] ? fail(p, rc, "%s", err) : rc;
	for (int k = 0; k < w->noutputs; k++)
		if ((rc = mtc_comm_allgather_bytes(p->c, out[k], v->outputs[k].bytes)))
			return fail(p, rc, "%s", mtc_comm_error(p->c));
	return 0;
}

static int
dp_get(void *q, int i, void *dst)
{
	dp_inst *p = q;
	if (!p)
		return mtc_set_last_error(MTC_EINVAL, "get: the instance is NULL");
	p->err[0] = 0;
	return p->v->m->get(p->in, i, dst);
}

static int
dp_set(void *q, int i, const void *src)
{
	dp_inst *p = q;
	if (!p)
		return mtc_set_last_error(MTC_EINVAL, "set: the instance is NULL");
	p->err[0] = 0;
	return p->v->m->set(p->in, i, src);
}

static int
dp_stats(const void *q, struct mtc_stats *s)
{
	const dp_inst *p = q;
	int rc;
	if (!p || !s)
		return mtc_set_last_error(MTC_EINVAL, "stats: NULL argument");
	if ((rc = p->v->m->stats(p->in, s)))
		return rc;
	mtc_comm_stats(p->c, s);
	return 0;
}

const struct mtc_module *
mtc_dp_module(const struct mtc_dp_desc *d)
{
	if (!desc) {
		mod = *d->whole;
		mod.create = dp_create;
		mod.step = dp_step;
		mod.forward = dp_forward;
		mod.destroy = dp_destroy;
		mod.error = dp_error;
		mod.get = dp_get;
		mod.set = dp_set;
		mod.stats = dp_stats;
		mod.data_parallel = 1;
		mod.create_comm = dp_create_comm;
		desc = d;
	}
	return &mod;
}
