/* api.c: a trained module's run-time API through dlopen: the hyperparameters' setters (the
 * typed MODEL_set_lr and set_hyper: a value PyTorch refuses is MTC_EINVAL with a message and
 * changes nothing), step_out (the outputs of the step's forward pass equal forward() before
 * the step, and the step is the same step), and state files (save after 5 steps, load into a
 * fresh instance, 5 more: bit-identical to 10 straight; every bad file is MTC_EFILE with a
 * message and leaves the instance as it was).
 * usage: api MODEL.so OUTDIR (MODEL: tests/train/twin.tdsl, adamw with clip_norm) */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtc/mtc-rt.h"
#include "safetensors.h"
#include "../check.h"

static const struct mtc_module *md;
static void *dl;
static const char *outdir;

static void **
inputs(void)
{
	void **in = calloc((size_t)md->ninputs + 1, sizeof *in);
	for (int i = 0; i < md->ninputs; i++) {
		in[i] = calloc(1, (size_t)md->inputs[i].bytes);
		mtc_rand_input(in[i], md->inputs[i].dtype, md->inputs[i].numel,
		               (int32_t)md->inputs[i].range, md->inputs[i].name, 3);
	}
	return in;
}

static int
hyper(const char *name)
{
	for (int i = 0; i < md->nhypers; i++)
		if (strcmp(md->hypers[i].name, name) == 0)
			return i;
	return -1;
}

/* Every param and state tensor of inst, concatenated (caller frees). */
static char *
snapshot(void *inst, int64_t *n)
{
	int64_t tot = 0, off = 0;
	char *b;

	for (int i = 0; i < md->nparams + md->nstate; i++)
		tot += i < md->nparams ? md->params[i].bytes : md->state[i - md->nparams].bytes;
	b = calloc(1, (size_t)tot + 1);
	for (int i = 0; i < md->nparams + md->nstate; i++) {
		md->get(inst, i, b + off);
		off += i < md->nparams ? md->params[i].bytes : md->state[i - md->nparams].bytes;
	}
	*n = tot;
	return b;
}

static void
steps(void *inst, void **in, int n, float *loss)
{
	for (int k = 0; k < n; k++) {
		int rc = md->step(inst, (const void *const *)in, &loss[k]);
		check(rc == 0, "step: %s", rc ? md->error(inst) : "");
	}
}

static void
settings(void)
{
	void *inst = md->create();
	int (*set_lr)(void *, float) = (int (*)(void *, float))dlsym(dl, "twin_set_lr");
	int lr = hyper("lr"), b1 = hyper("beta1"), wd = hyper("weight_decay"), cn = hyper("clip_norm");
	float v = 0;

	check(md->nhypers == 6 && lr >= 0 && b1 >= 0 && wd >= 0 && cn >= 0 && hyper("momentum") < 0,
	      "adamw with clipping has lr, beta1, beta2, eps, weight_decay, clip_norm (%d)", md->nhypers);
	check(set_lr && dlsym(dl, "twin_set_weight_decay") && dlsym(dl, "twin_set_clip_norm") &&
	      !dlsym(dl, "twin_set_momentum"), "the typed setters of the optimizer's hyperparameters");
	check(md->get_hyper(inst, lr, &v) == 0 && v == 0.01f, "lr starts at the model's 0.01 (%g)", v);
	check(set_lr(inst, 0.5f) == 0 && md->get_hyper(inst, lr, &v) == 0 && v == 0.5f,
	      "twin_set_lr(0.5) holds (%g)", v);
	check(set_lr(inst, -1) == MTC_EINVAL && strstr(md->error(inst), "lr must be") &&
	      md->get_hyper(inst, lr, &v) == 0 && v == 0.5f,
	      "a negative lr is MTC_EINVAL, says why (%s), keeps 0.5", md->error(inst));
	check(set_lr(inst, NAN) == MTC_EINVAL && set_lr(inst, INFINITY) == MTC_EINVAL,
	      "a NaN or infinite lr is MTC_EINVAL");
	check(md->set_hyper(inst, b1, 1.0f) == MTC_EINVAL && strstr(md->error(inst), "beta1 must be in [0, 1)"),
	      "beta1 = 1 is MTC_EINVAL (%s)", md->error(inst));
	check(md->set_hyper(inst, wd, -0.1f) == MTC_EINVAL && md->set_hyper(inst, cn, -1) == MTC_EINVAL,
	      "a negative weight_decay or clip_norm is MTC_EINVAL");
	check(md->set_hyper(inst, 99, 0.1f) == MTC_EINVAL && md->get_hyper(inst, -1, &v) == MTC_EINVAL &&
	      md->get_hyper(inst, lr, NULL) == MTC_EINVAL, "bad indices and NULL are MTC_EINVAL");
	check(md->set_hyper(NULL, lr, 0.1f) == MTC_EINVAL, "a NULL instance is MTC_EINVAL");
	md->destroy(inst);
}

/* Two instances in step; a new lr changes the next step (and lr 0 leaves AdamW's params as
 * they were, weight decay included). */
static void
lr_at_run_time(void)
{
	void *a = md->create(), *b = md->create(), **in = inputs();
	float la[3], lb[3];
	int64_t n;
	char *p0, *p1;

	steps(a, in, 1, la);
	steps(b, in, 1, lb);
	md->set_hyper(b, hyper("lr"), 0);
	p0 = snapshot(b, &n);
	steps(a, in, 2, la + 1);
	steps(b, in, 1, lb + 1);
	p1 = snapshot(b, &n);
	check(la[0] == lb[0] && la[1] == lb[1], "the same first steps (%.9g %.9g)", la[1], lb[1]);
	check(memcmp(p0, p1, (size_t)md->params[0].bytes) == 0, "lr 0 leaves w0 as it was");
	steps(b, in, 1, lb + 2);
	check(la[2] != lb[2], "a different lr, a different loss (%.9g vs %.9g)", la[2], lb[2]);
	free(p0), free(p1);
	md->destroy(a), md->destroy(b);
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	free(in);
}

static void
step_out(void)
{
	void *a = md->create(), *b = md->create(), **in = inputs();
	void *o[2] = { calloc(1, (size_t)md->outputs[0].bytes), NULL };
	void *f[2] = { calloc(1, (size_t)md->outputs[0].bytes), NULL };
	float la = 0, lb = 0;
	int64_t n;
	char *pa, *pb;

	check(md->forward(a, (const void *const *)in, f) == 0, "forward");
	check(md->step_out(a, (const void *const *)in, &la, o) == 0, "step_out: %s", md->error(a));
	check(memcmp(o[0], f[0], (size_t)md->outputs[0].bytes) == 0,
	      "step_out's outputs are forward()'s before the update");
	check(md->step(b, (const void *const *)in, &lb) == 0 && la == lb, "and its loss is step()'s");
	pa = snapshot(a, &n);
	pb = snapshot(b, &n);
	check(memcmp(pa, pb, (size_t)n) == 0, "and its update too");
	check(md->step_out(a, (const void *const *)in, &la, (void *const[]){ NULL, NULL }) == MTC_EINVAL &&
	      strstr(md->error(a), "logits"), "a NULL output is MTC_EINVAL (%s)", md->error(a));
	free(pa), free(pb), free(o[0]), free(f[0]);
	md->destroy(a), md->destroy(b);
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	free(in);
}

/* A copy of state file src with tensor `drop` left out, or `reshape` given another shape, or
 * `extra` added, or opt.lr set to lr. */
static void
variant(const char *src, const char *dst, const char *drop, const char *reshape, int extra, float lr)
{
	char err[512];
	mtc_st_file *f = mtc_st_read(src, err, sizeof err);
	mtc_st_tensor *t = calloc((size_t)f->n + 2, sizeof *t);
	float one = 1;
	int n = 0;

	for (int i = 0; i < f->n; i++) {
		if (drop && strcmp(f->t[i].name, drop) == 0)
			continue;
		t[n] = f->t[i];
		if (reshape && strcmp(t[n].name, reshape) == 0 && t[n].rank == 2) {
			t[n].shape[0] = t[n].shape[0] * t[n].shape[1];
			t[n].rank = 1;
		}
		if (strcmp(t[n].name, "opt.lr") == 0 && !isnan(lr))
			memcpy(t[n].data, &lr, 4);
		n++;
	}
	if (extra)
		t[n++] = (mtc_st_tensor){ .name = "extra", .dtype = MTC_ST_F32, .rank = 0, .data = &one };
	if (mtc_st_write(dst, t, n, err, sizeof err))
		printf("cannot write %s: %s\n", dst, err);
	free(t);
	mtc_st_free(f);
}

static void
state(void)
{
	void *a = md->create(), *b = md->create(), *c = md->create(), **in = inputs();
	float la[10], lb[10];
	int64_t n;
	char s5[600], bad[600], *pa, *pb, *pc0, *pc1;
	struct mtc_stats st;
	static const struct { const char *what, *drop, *reshape; int extra; float lr; const char *say; } v[] = {
		{ "a missing tensor", "v.w1", NULL, 0, NAN, "no tensor 'v.w1'" },
		{ "a missing step counter", "opt.step", NULL, 0, NAN, "no tensor 'opt.step'" },
		{ "a tensor of another shape", NULL, "w0", 0, NAN, "tensor 'w0' is F32[192], the model's is F32[12,16]" },
		{ "a tensor the model does not have", NULL, NULL, 1, NAN, "tensor 'extra' is not part" },
		{ "a negative lr", NULL, NULL, 0, -1, "opt.lr is -1" },
	};

	md->set_hyper(a, hyper("lr"), 0.02f);
	md->set_hyper(b, hyper("lr"), 0.02f);
	steps(a, in, 10, la);
	steps(b, in, 5, lb);
	snprintf(s5, sizeof s5, "%s/s5.st", outdir);
	check(md->save(b, s5) == 0, "save after 5 steps: %s", md->error(b));
	md->destroy(b);
	b = md->create();
	check(md->load(b, s5) == 0, "load into a fresh instance: %s", md->error(b));
	md->stats(b, &st);
	check(st.steps == 5, "the step counter comes back (%lld)", (long long)st.steps);
	steps(b, in, 5, lb + 5);
	pa = snapshot(a, &n);
	pb = snapshot(b, &n);
	check(memcmp(la, lb, sizeof la) == 0 && memcmp(pa, pb, (size_t)n) == 0,
	      "5 steps, save, load, 5 steps: bit-identical to 10 straight (the lr set at run time kept)");
	md->stats(b, &st);
	check(st.steps == 10, "the counter counts on (%lld)", (long long)st.steps);

	pc0 = snapshot(c, &n);
	for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
		snprintf(bad, sizeof bad, "%s/bad%zu.st", outdir, k);
		variant(s5, bad, v[k].drop, v[k].reshape, v[k].extra, v[k].lr);
		int rc = md->load(c, bad);
		char msg[600];
		snprintf(msg, sizeof msg, "%s", md->error(c));
		pc1 = snapshot(c, &n);
		check(rc == MTC_EFILE && strstr(msg, v[k].say) && memcmp(pc0, pc1, (size_t)n) == 0,
		      "%s: MTC_EFILE, says so (%s), changes nothing", v[k].what, msg);
		free(pc1);
	}
	snprintf(bad, sizeof bad, "%s/nonexistent/x.st", outdir);
	check(md->load(c, bad) == MTC_EFILE && md->save(c, bad) == MTC_EFILE,
	      "an unreadable or unwritable path is MTC_EFILE (%s)", md->error(c));
	check(md->load(c, NULL) == MTC_EINVAL && md->save(NULL, s5) == MTC_EINVAL, "NULL is MTC_EINVAL");
	free(pa), free(pb), free(pc0);
	md->destroy(a), md->destroy(b), md->destroy(c);
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	free(in);
}

int
main(int argc, char **argv)
{
	const struct mtc_module *(*get)(void);

	if (argc != 3) {
		printf("usage: api MODEL.so OUTDIR\n");
		return 1;
	}
	outdir = argv[2];
	if (!(dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module")) || !(md = get()) ||
	    md->abi != MTC_ABI) {
		printf("cannot load %s as a module of ABI %d: %s\n", argv[1], MTC_ABI, dlerror());
		return 1;
	}
	settings();
	lr_at_run_time();
	step_out();
	state();
	return done();
}
