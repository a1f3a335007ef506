/* api.c: the module API through dlopen: two modules (and two copies of one) in one process,
 * errors as codes and messages for NULL and bad arguments, bad data, a device too small;
 * and the runtime's device directly: check mode's overlap finding and poisoning, the peak,
 * DMA channels, every accelerator thread running a kernel.
 * usage: api A.so A-copy.so B.so FWDONLY.so (A: mlp-like with inputs x, y; B: another) */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtc/mtc-rt.h"
#include "../check.h"

static const struct mtc_module *
load(const char *path)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const struct mtc_module *(*get)(void);
	if (!dl) {
		printf("cannot load %s: %s\n", path, dlerror());
		exit(1);
	}
	get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module");
	if (!get) {
		printf("%s: no mtc_module\n", path);
		exit(1);
	}
	return get();
}

/* Inputs as mtc-run makes them. */
static void **
inputs(const struct mtc_module *md)
{
	void **in = calloc((size_t)md->ninputs + 1, sizeof *in);
	for (int i = 0; i < md->ninputs; i++) {
		in[i] = calloc(1, (size_t)md->inputs[i].bytes);
		mtc_rand_input(in[i], md->inputs[i].dtype, md->inputs[i].numel,
		               (int32_t)md->inputs[i].range, md->inputs[i].name, 0);
	}
	return in;
}

static void
freein(const struct mtc_module *md, void **in)
{
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	free(in);
}

static void
losses(const struct mtc_module *md, void *inst, void **in, float *l, int n)
{
	for (int k = 0; k < n; k++) {
		int rc = md->step(inst, (const void *const *)in, &l[k]);
		check(rc == 0, "%s step %d: %s", md->name, k, md->error(inst));
	}
}

static void
kern_tid(const uint64_t *a, int tid, int nt)
{
	int *seen = (int *)(uintptr_t)a[0];
	seen[tid] = nt;
}

static void
runtime_tests(void)
{
	static const char *const names[] = { "a", "b", "c" };
	struct mtc_dev_desc desc = { "unit", 256, 1024, 512, names, 3 };
	mtc_dev *d;
	struct mtc_stats st;
	int seen[8] = {0};
	float *p;
	char src[300], dst[300];

	setenv("MTC_CHECK", "1", 1);
	setenv("MTC_THREADS", "3", 1);
	d = mtc_dev_open(&desc);
	check(d != NULL, "mtc_dev_open: %s", mtc_rt_last_error());
	if (!d)
		return;
	check(mtc_dev_nthreads(d) == 3, "MTC_THREADS=3 gives %d threads", mtc_dev_nthreads(d));
	mtc_run(d, kern_tid, (const uint64_t[]){ (uint64_t)(uintptr_t)seen }, 1 << 30);
	check(seen[0] == 3 && seen[1] == 3 && seen[2] == 3, "a kernel runs in 3 parts (one per thread)");
	/* births, deaths, poison, peak */
	mtc_born(d, 0, 256, 512);
	p = (float *)(mtc_dev_mem(d) + 256);
	p[0] = 1;
	mtc_born(d, 1, 768, 256);
	mtc_dead(d, 0, 256, 512);
	check(isnan(p[0]) && isnan(p[127]), "a dead tensor's bytes are NaN in check mode");
	check(mtc_dev_finish(d) == 0, "no overlap, no error: %s", mtc_dev_error(d));
	mtc_born(d, 2, 512, 512);
	check(mtc_dev_finish(d) == MTC_ECHECK && strstr(mtc_dev_error(d), "overlaps live a") == NULL &&
	      strstr(mtc_dev_error(d), "c at [512, 1024) overlaps live b at [768, 1024)") != NULL,
	      "overlap found: '%s'", mtc_dev_error(d));
	mtc_dev_stats(d, &st);
	check(st.peak_bytes == 768,
	      "peak %lld", (long long)st.peak_bytes);
	mtc_dev_clear(d);
	/* handover (a fused loop's result in a dying operand's bytes): no poison in between */
	mtc_born(d, 0, 0, 256);
	p = (float *)mtc_dev_mem(d);
	p[0] = 2;
	mtc_handover(d, 0, 1, 0, 256);
	check(p[0] == 2 && mtc_dev_finish(d) == 0, "a handover keeps the bytes: %s", mtc_dev_error(d));
	mtc_dead(d, 1, 0, 256);
	check(mtc_dev_finish(d) == 0 && isnan(p[0]), "the new owner dies: %s", mtc_dev_error(d));
	mtc_handover(d, 0, 2, 0, 256);
	check(mtc_dev_finish(d) == MTC_ECHECK && strstr(mtc_dev_error(d), "a hands its bytes [0, 256) to c"),
	      "a handover from a dead tensor is found: '%s'", mtc_dev_error(d));
	mtc_dev_clear(d);
	/* DMA: channels complete in order */
	for (int i = 0; i < 300; i++)
		src[i] = (char)i;
	int64_t c1 = mtc_dma(d, dst, src, 150), c2 = mtc_dma(d, dst + 150, src + 150, 150);
	check(c2 > c1, "channels increase");
	mtc_dma_wait(d, c2);
	check(memcmp(src, dst, 300) == 0, "DMA copies arrive");
	mtc_dev_close(d);

	setenv("MTC_ACCEL_BYTES", "1K", 1);
	d = mtc_dev_open(&desc);
	check(d == NULL && strstr(mtc_rt_last_error(), "MTC_ACCEL_BYTES"), "1K device refuses a 1280-byte plan: '%s'",
	      mtc_rt_last_error());
	setenv("MTC_ACCEL_BYTES", "lots", 1);
	d = mtc_dev_open(&desc);
	check(d == NULL && strstr(mtc_rt_last_error(), "not a byte count"), "bad MTC_ACCEL_BYTES: '%s'",
	      mtc_rt_last_error());
	unsetenv("MTC_ACCEL_BYTES");
	mtc_dev_close(NULL);
}

int
main(int argc, char **argv)
{
	const struct mtc_module *a, *a2, *b, *fo;
	void *ia, *ia2, *ib, *ifo, **in, **inb, **info;
	float la[3], la2[3], lb[3], lb2[3], loss, buf[4];
	int rc;

	if (argc != 5) {
		printf("usage: api A.so A-copy.so B.so FWDONLY.so\n");
		return 2;
	}
	runtime_tests();
	setenv("MTC_CHECK", "1", 1);
	a = load(argv[1]);
	a2 = load(argv[2]);
	b = load(argv[3]);
	fo = load(argv[4]);
	check(a != a2 && a->create != a2->create, "two copies of one module load apart");
	check(a->abi == MTC_ABI && strcmp(a->target, "mt3000") == 0 && a->trains, "module description");

	/* Alone, then interleaved: the same losses. */
	in = inputs(a);
	inb = inputs(b);
	ia = a->create();
	losses(a, ia, in, la, 3);
	a->destroy(ia);
	ib = b->create();
	losses(b, ib, inb, lb, 3);
	b->destroy(ib);
	ia = a->create();
	ia2 = a2->create();
	ib = b->create();
	for (int k = 0; k < 3; k++) {
		losses(a2, ia2, in, &la2[k], 1);
		losses(b, ib, inb, &lb2[k], 1);
		losses(a, ia, in, &loss, 1);
		check(loss == la[k] && la2[k] == la[k] && lb2[k] == lb[k], "step %d interleaved: %g %g %g vs %g %g",
		      k, loss, la2[k], lb2[k], la[k], lb[k]);
	}
	a2->destroy(ia2);
	b->destroy(ib);

	/* Errors are codes with messages, never aborts. */
	rc = a->step(NULL, (const void *const *)in, &loss);
	check(rc == MTC_EINVAL && strstr(a->error(NULL), "NULL"), "step(NULL): %d '%s'", rc, a->error(NULL));
	rc = a->step(ia, NULL, &loss);
	check(rc == MTC_EINVAL && strstr(a->error(ia), "input"), "step(inputs NULL): %d '%s'", rc, a->error(ia));
	{
		void *save = in[0];
		in[0] = NULL;
		rc = a->step(ia, (const void *const *)in, &loss);
		check(rc == MTC_EINVAL && strstr(a->error(ia), a->inputs[0].name), "step(input 0 NULL): '%s'", a->error(ia));
		in[0] = save;
	}
	rc = a->step(ia, (const void *const *)in, NULL);
	check(rc == MTC_EINVAL && strstr(a->error(ia), "loss"), "step(loss NULL): '%s'", a->error(ia));
	rc = a->forward(ia, (const void *const *)in, NULL);
	check(rc == MTC_EINVAL, "forward(outputs NULL): %d", rc);
	check(a->get(ia, -1, buf) == MTC_EINVAL && a->get(ia, a->nparams + a->nstate, buf) == MTC_EINVAL &&
	      a->set(ia, 0, NULL) == MTC_EINVAL && a->get(NULL, 0, buf) == MTC_EINVAL, "get/set bad arguments");
	check(a->stats(NULL, NULL) == MTC_EINVAL, "stats(NULL)");
	a->destroy(NULL);
	/* A label out of range: an error, and the next step works. */
	for (int i = 0; i < a->ninputs; i++)
		if (a->inputs[i].dtype == MTC_I32) {
			int32_t *y = in[i], keep = y[0];
			y[0] = 1000000;
			rc = a->step(ia, (const void *const *)in, &loss);
			check(rc == MTC_ERANGE && strstr(a->error(ia), "out of range"), "bad label: %d '%s'", rc, a->error(ia));
			y[0] = keep;
			rc = a->step(ia, (const void *const *)in, &loss);
			check(rc == 0 && a->error(ia)[0] == 0, "a good step after a bad one: %d", rc);
		}
	a->destroy(ia);

	/* A model without train: step says so. */
	info = inputs(fo);
	ifo = fo->create();
	rc = fo->step(ifo, (const void *const *)info, &loss);
	check(!fo->trains && rc == MTC_ENOTRAIN && strstr(fo->error(ifo), "does not train"), "step of a forward-only model: %d", rc);
	fo->destroy(ifo);

	/* A device smaller than the plan: create refuses, with the reason. */
	setenv("MTC_ACCEL_BYTES", "4096", 1);
	ia = a->create();
	check(ia == NULL && strstr(a->error(NULL), "accelerator has 4096"), "small device: '%s'", a->error(NULL));
	unsetenv("MTC_ACCEL_BYTES");

	freein(a, in);                   /* so LeakSanitizer reports only the runtime's leaks */
	freein(b, inb);
	freein(fo, info);
	return done();
}
