/* runso.c: mtc-run MODEL.so: any module through dlopen and mtc_module(), with the options and
 * the output of the interpreter mode, so the two can be compared line by line. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtc/mtc-rt.h"
#include "run.h"
#include "safetensors.h"


static void *
zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		fatal("out of memory");
	return p;
}

static const struct mtc_tensor_info *
find(const struct mtc_tensor_info *t, int n, const char *name, int *idx)
{
	for (int i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0) {
			*idx = i;
			return &t[i];
		}
	return NULL;
}

/* Does the file's tensor have the module's dtype and shape? */
static void
check_type(const char *path, const mtc_st_tensor *t, const struct mtc_tensor_info *w)
{
	int ok = t->rank == w->rank && (t->dtype == MTC_ST_I32) == (w->dtype == MTC_I32);
	for (int d = 0; ok && d < w->rank; d++)
		ok = t->shape[d] == w->shape[d];
	if (!ok)
		fatal("%s: tensor '%s' has another dtype or shape than the module's (%s, rank %d)", path,
		     t->name, w->dtype == MTC_I32 ? "I32" : "F32", w->rank);
}

static void
save(const char *path, const struct mtc_tensor_info *t, int n, void **data)
{
	mtc_st_tensor *st = zalloc(sizeof *st * (size_t)(n + 1));
	char err[512];

	for (int i = 0; i < n; i++) {
		st[i].name = (char *)t[i].name;
		st[i].dtype = t[i].dtype == MTC_I32 ? MTC_ST_I32 : MTC_ST_F32;
		st[i].rank = t[i].rank;
		for (int d = 0; d < t[i].rank; d++)
			st[i].shape[d] = t[i].shape[d];
		st[i].data = data[i];
	}
	if (mtc_st_write(path, st, n, err, sizeof err))
		fatal("%s", err);
	free(st);
}

/* dlopen searches the library path for a name without a slash: `mtc-run model.so` means the
 * file in the current directory, as for every other input. */
static void *
open_module(const char *path)
{
	char buf[4096];

	if (strchr(path, '/') || strlen(path) + 3 > sizeof buf)
		return dlopen(path, RTLD_NOW | RTLD_LOCAL);
	snprintf(buf, sizeof buf, "./%s", path);
	return dlopen(buf, RTLD_NOW | RTLD_LOCAL);
}

int
run_so(const RunOpts *o)
{
	void *dl;
	const struct mtc_module *(*get)(void);
	const struct mtc_module *md;
	void *inst, **in, **out;
	struct mtc_stats st;
	char err[512];
	double *ms, med = 0;
	long nrun, steps = o->steps < 0 ? 1 : o->steps;
	int forward = o->forward, lri = -1;
	LrSched lrs;
	float lr0 = 0;

	if (o->ndefines)
		fatal("-D changes a model's source: it has no meaning for a compiled module");
	if (o->micro)
		fatal("a module's micro-batches are built into it (mtc --micro-batches)");
	dl = open_module(o->model);
	if (!dl)
		fatal("cannot load '%s': %s", o->model, dlerror());
	if (!(get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module")))
		fatal("%s is not an mtc module (no mtc_module symbol)", o->model);
	md = get();
	if (!md || md->abi != MTC_ABI)
		fatal("%s was built for another version of the module interface (abi %d, expected %d)",
		     o->model, md ? md->abi : -1, MTC_ABI);
	if (!md->trains && !forward) {
		if (o->steps >= 0)
			fatal("%s: model %s has no 'train' statement: run it with --forward", o->model, md->name);
		forward = 1;
	}
	if (!(inst = md->create()))
		fatal("%s: %s", o->model, md->error(NULL));
	/* a data-parallel module under mpirun: every rank runs, rank 0 alone speaks and writes */
	md->stats(inst, &st);
	if (st.rank > 0 && !freopen("/dev/null", "w", stdout))
		fatal("cannot silence rank %d", st.rank);

	/* The schedule is relative to the model's lr, not to a loaded state's. */
	lr_load(&lrs, o->lr_schedule);
	if (o->lr_schedule) {
		for (lri = 0; lri < md->nhypers && strcmp(md->hypers[lri].name, "lr"); lri++)
			;
		if (lri == md->nhypers)
			fatal("%s: --lr-schedule: model %s has no learning rate", o->model, md->name);
		if (md->get_hyper(inst, lri, &lr0))
			fatal("%s: %s", o->model, md->error(inst));
	}
	/* Params from the file, by name. */
	if (o->params) {
		mtc_st_file *f = mtc_st_read(o->params, err, sizeof err);
		if (!f)
			fatal("%s", err);
		for (int i = 0; i < f->n; i++) {
			int k;
			const struct mtc_tensor_info *w = find(md->params, md->nparams, f->t[i].name, &k);
			if (!w && (w = find(md->buffers, md->nbuffers, f->t[i].name, &k)))
				k += md->nparams + md->nstate;      /* get and set index buffers after state */
			if (!w)
				fatal("%s: tensor '%s' is not a param or buffer of model %s", o->params, f->t[i].name,
				      md->name);
			check_type(o->params, &f->t[i], w);
			if (md->set(inst, k, f->t[i].data))
				fatal("%s", md->error(inst));
		}
		mtc_st_free(f);
	}
	if (o->load_state && md->load(inst, o->load_state))
		fatal("%s", md->error(inst));
	/* Inputs: from the file, else the interpreter's pseudo-random data. */
	in = zalloc(sizeof *in * (size_t)(md->ninputs + 1));
	for (int i = 0; i < md->ninputs; i++) {
		in[i] = zalloc((size_t)md->inputs[i].bytes);
		mtc_rand_input(in[i], md->inputs[i].dtype, md->inputs[i].numel, (int32_t)md->inputs[i].range,
		               md->inputs[i].name, o->seed);
	}
	if (o->inputs) {
		mtc_st_file *f = mtc_st_read(o->inputs, err, sizeof err);
		if (!f)
			fatal("%s", err);
		for (int i = 0; i < f->n; i++) {
			int k;
			const struct mtc_tensor_info *w = find(md->inputs, md->ninputs, f->t[i].name, &k);
			if (!w)
				fatal("%s: tensor '%s' is not an input of model %s", o->inputs, f->t[i].name, md->name);
			check_type(o->inputs, &f->t[i], w);
			memcpy(in[k], f->t[i].data, (size_t)w->bytes);
		}
		mtc_st_free(f);
	}
	out = zalloc(sizeof *out * (size_t)(md->noutputs + 1));
	for (int i = 0; i < md->noutputs; i++)
		out[i] = zalloc((size_t)md->outputs[i].bytes);

	md->stats(inst, &st);
	nrun = forward ? (steps ? 1 : 0) : steps;
	ms = zalloc(sizeof *ms * (size_t)(nrun + 1));
	for (long k = 0; k < nrun; k++) {
		float loss = 0;
		double t0;
		int rc;
		if (o->lr_schedule && md->set_hyper(inst, lri, (float)lr_at(&lrs, (long)st.steps + k + 1, lr0)))
			fatal("%s: %s", o->model, md->error(inst));
		t0 = now_ms();
		/* the last step of a training run that saves outputs also returns them */
		rc = forward ? md->forward(inst, (const void *const *)in, out)
		     : o->save_outputs && k == nrun - 1 ? md->step_out(inst, (const void *const *)in, &loss, out)
		     : md->step(inst, (const void *const *)in, &loss);
		ms[k] = now_ms() - t0;
		if (rc)
			fatal("%s: %s (code %d)", o->model, md->error(inst), rc);
		if (!forward)
			printf("step %ld loss %.9g\n", (long)st.steps + k + 1, loss);
		fflush(stdout);
	}
	med = median_ms(ms, nrun);
	if (o->save_outputs) {
		if (!nrun)
			fatal("--save-outputs needs at least one run (--steps 0 given)");
		if (st.rank == 0)
			save(o->save_outputs, md->outputs, md->noutputs, out);
	}
	if (o->save_state && st.rank == 0 && md->save(inst, o->save_state))
		fatal("%s", md->error(inst));
	if (o->save_params && st.rank == 0) {        /* params, then buffers */
		int n = md->nparams + md->nbuffers;
		void **p = zalloc(sizeof *p * (size_t)(n + 1));
		struct mtc_tensor_info *ti = zalloc(sizeof *ti * (size_t)(n + 1));
		for (int i = 0; i < n; i++) {
			int b = i >= md->nparams;
			ti[i] = b ? md->buffers[i - md->nparams] : md->params[i];
			p[i] = zalloc((size_t)ti[i].bytes);
			if (md->get(inst, b ? i + md->nstate : i, p[i]))
				fatal("%s", md->error(inst));
		}
		save(o->save_params, ti, n, p);
		for (int i = 0; i < n; i++)
			free(p[i]);
		free(p);
		free(ti);
	}
	md->stats(inst, &st);
	/* a data-parallel module's collectives, per step: time in flight, and the part the step
	 * waited for (the rest hid behind its kernels) */
	if (md->data_parallel && nrun > 0 && !forward)
		printf("comm_ms %.3f comm_wait_ms %.3f\n", st.comm_s * 1e3 / (double)nrun,
		       st.comm_wait_s * 1e3 / (double)nrun);
	/* a data-parallel module's plan is its variant's: the device bytes its instance holds */
	printf("peak_bytes %lld plan_bytes %lld budget_bytes %lld step_ms %.3f\n",
	       (long long)st.peak_bytes, (long long)(md->data_parallel ? st.device_bytes : md->plan_bytes),
	       (long long)md->budget_bytes, med);
	md->destroy(inst);
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	for (int i = 0; i < md->noutputs; i++)
		free(out[i]);
	free(in);
	free(out);
	free(ms);
	free(lrs.v);
	dlclose(dl);
	return 0;
}
