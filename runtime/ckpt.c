/* ckpt.c: a training state in one safetensors file: what MODEL_save writes and MODEL_load
 * reads (every target), and mtc-run's --save-state / --load-state (modules and interpreter).
 *
 * The file holds tensors by name: every param (the names of --save-params), every optimizer
 * state tensor and buffer (batch norm's running statistics, dropout's step counter), every
 * hyperparameter as "opt.NAME" (f32[]), and the step counter "opt.step" (i32[], trained
 * models). Reading checks the whole file before anything is
 * written: each wanted tensor present, with its dtype and shape, and no other tensor; a file
 * of another model, or one cut short, changes nothing. Training resumes bit for bit: every
 * byte the next step reads is in the file (inputs aside, which the caller gives). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtc/mtc-rt.h"
#include "safetensors.h"

static const char *
dtname(int dt)
{
	return dt == MTC_I32 ? "I32" : "F32";
}

static void
shape_str(int rank, const int64_t *sh, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int d = 0; d < rank && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)sh[d]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

int
mtc_state_write(const char *path, const mtc_state_entry *e, int n, char *err, size_t ne)
{
	mtc_st_tensor *t = calloc((size_t)n + 1, sizeof *t);
	int rc;

	if (!t) {
		snprintf(err, ne, "%s: out of memory", path);
		return MTC_ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		t[i].name = (char *)e[i].name;
		t[i].dtype = e[i].dtype == MTC_I32 ? MTC_ST_I32 : MTC_ST_F32;
		t[i].rank = e[i].rank;
		for (int d = 0; d < e[i].rank && d < MTC_ST_MAXRANK; d++)
			t[i].shape[d] = e[i].shape[d];
		t[i].data = e[i].data;
	}
	rc = mtc_st_write(path, t, n, err, ne) ? MTC_EFILE : 0;
	free(t);
	return rc;
}

int
mtc_state_read(const char *path, const mtc_state_entry *e, int n, char *err, size_t ne)
{
	mtc_st_file *f = mtc_st_read(path, err, ne);
	char a[200], b[200];
	int rc = MTC_EFILE;

	if (!f)
		return MTC_EFILE;
	for (int i = 0; i < n; i++) {
		const mtc_st_tensor *t = mtc_st_find(f, e[i].name);
		int ok;
		if (!t) {
			snprintf(err, ne, "%s: no tensor '%s' (the state has %d tensors; is it this model's?)",
			         path, e[i].name, n);
			goto out;
		}
		ok = t->rank == e[i].rank && (t->dtype == MTC_ST_I32) == (e[i].dtype == MTC_I32);
		for (int d = 0; ok && d < t->rank; d++)
			ok = t->shape[d] == e[i].shape[d];
		if (!ok) {
			shape_str(t->rank, t->shape, a, sizeof a);
			shape_str(e[i].rank, e[i].shape, b, sizeof b);
			snprintf(err, ne, "%s: tensor '%s' is %s%s, the model's is %s%s", path, e[i].name,
			         t->dtype == MTC_ST_I32 ? "I32" : "F32", a, dtname(e[i].dtype), b);
			goto out;
		}
	}
	for (int k = 0; k < f->n; k++) {
		int i;
		for (i = 0; i < n && strcmp(f->t[k].name, e[i].name); i++)
			;
		if (i == n) {
			snprintf(err, ne, "%s: tensor '%s' is not part of the model's state", path, f->t[k].name);
			goto out;
		}
	}
	for (int i = 0; i < n; i++)
		memcpy(e[i].data, mtc_st_find(f, e[i].name)->data, (size_t)e[i].bytes);
	rc = 0;
out:
	mtc_st_free(f);
	return rc;
}

/* The state of a module instance: its entries in md's order, each with a buffer. */
typedef struct State {
	mtc_state_entry *e;
	char (*hname)[72];
	int n, np, nh;
	int32_t step;
} State;

static const int64_t scalar[1] = { 0 };

static void
state_free(State *s)
{
	for (int i = 0; s->e && i < s->np + s->nh; i++)
		free(s->e[i].data);
	free(s->e);
	free(s->hname);
}

static int
state_new(State *s, const struct mtc_module *md, char *err, size_t ne)
{
	const struct mtc_tensor_info *ti;

	memset(s, 0, sizeof *s);
	s->np = md->nparams + md->nstate + md->nbuffers;     /* get's and set's order */
	s->nh = md->trains ? md->nhypers : 0;
	s->n = s->np + s->nh + (md->trains != 0);
	s->e = calloc((size_t)s->n + 1, sizeof *s->e);
	s->hname = calloc((size_t)s->nh + 1, sizeof *s->hname);
	if (!s->e || !s->hname)
		goto oom;
	for (int i = 0; i < s->np + s->nh; i++) {
		mtc_state_entry *e = &s->e[i];
		if (i < s->np) {
			ti = i < md->nparams ? &md->params[i] : i < md->nparams + md->nstate ?
			     &md->state[i - md->nparams] : &md->buffers[i - md->nparams - md->nstate];
			e->name = ti->name;
			e->dtype = ti->dtype;
			e->rank = ti->rank;
			e->shape = ti->shape;
			e->bytes = ti->bytes;
		} else {
			snprintf(s->hname[i - s->np], sizeof *s->hname, "opt.%s", md->hypers[i - s->np].name);
			e->name = s->hname[i - s->np];
			e->dtype = MTC_F32;
			e->shape = scalar;
			e->bytes = 4;
		}
		if (!(e->data = calloc(1, (size_t)(e->bytes ? e->bytes : 1))))
			goto oom;
	}
	if (md->trains)
		s->e[s->n - 1] = (mtc_state_entry){ "opt.step", MTC_I32, 0, scalar, 4, &s->step };
	return 0;
oom:
	state_free(s);
	snprintf(err, ne, "%s: out of memory for its state", md->name);
	return MTC_ENOMEM;
}

int
mtc_state_save(const struct mtc_module *md, void *inst, const char *path, int64_t step, char *err,
               size_t ne)
{
	State s;
	int rc;

	if (!path) {
		snprintf(err, ne, "%s save: the path is NULL", md->name);
		return MTC_EINVAL;
	}
	if (step > INT32_MAX) {
		snprintf(err, ne, "%s save: step %lld does not fit the file's i32 counter", md->name,
		         (long long)step);
		return MTC_ERANGE;
	}
	if ((rc = state_new(&s, md, err, ne)))
		return rc;
	s.step = (int32_t)step;
	for (int i = 0; !rc && i < s.np; i++)
		if ((rc = md->get(inst, i, s.e[i].data)))
			snprintf(err, ne, "%s", md->error(inst));
	for (int i = 0; !rc && i < s.nh; i++)
		if ((rc = md->get_hyper(inst, i, s.e[s.np + i].data)))
			snprintf(err, ne, "%s", md->error(inst));
	if (!rc)
		rc = mtc_state_write(path, s.e, s.n, err, ne);
	state_free(&s);
	return rc;
}

int
mtc_state_load(const struct mtc_module *md, void *inst, const char *path, int64_t *step, char *err,
               size_t ne)
{
	State s;
	int rc;

	if (!path) {
		snprintf(err, ne, "%s load: the path is NULL", md->name);
		return MTC_EINVAL;
	}
	if ((rc = state_new(&s, md, err, ne)))
		return rc;
	rc = mtc_state_read(path, s.e, s.n, err, ne);
	for (int i = 0; !rc && i < s.nh; i++) {
		float v = *(float *)s.e[s.np + i].data;
		if (!mtc_hyper_ok(md->hypers[i].name, v)) {
			snprintf(err, ne, "%s: %s is %g: it must be %s", path, s.e[s.np + i].name, v,
			         mtc_hyper_range(md->hypers[i].name));
			rc = MTC_EFILE;
		}
	}
	if (!rc && md->trains && s.step < 0) {
		snprintf(err, ne, "%s: opt.step is %d: it must not be negative", path, (int)s.step);
		rc = MTC_EFILE;
	}
	for (int i = 0; !rc && i < s.np; i++)
		if ((rc = md->set(inst, i, s.e[i].data)))
			snprintf(err, ne, "%s", md->error(inst));
	for (int i = 0; !rc && i < s.nh; i++)
		if ((rc = md->set_hyper(inst, i, *(float *)s.e[s.np + i].data)))
			snprintf(err, ne, "%s", md->error(inst));
	if (!rc)
		*step = s.step;
	state_free(&s);
	return rc;
}
