/* module.c: a generated module's error paths through mtc_module: NULL for every pointer of
 * every entry point, bad indices, the descriptor's sizes (get/set move exactly bytes), labels
 * out of range, each allocation of create failing in
 * turn (MTC_FAIL_ALLOC), and 1000 creates and destroys that must not grow the heap.
 * usage: module MODEL.so (a trained model with an f32 input then an i32 label input)
 * Use after destroy is undefined (docs/runtime.md); it is not tested. */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtc/mtc.h"
#include "../check.h"

static int
errmsg(const struct mtc_module *md, const void *inst)
{
	const char *e = md->error(inst);
	return e && *e;
}

static void
null_args(const struct mtc_module *md, void **in, void **out, float *buf)
{
	void *inst = md->create();
	float loss;
	void *none[8] = { 0 };

	check(inst != NULL, "create: %s", md->error(NULL));
	if (!inst)
		return;
	check(md->step(NULL, NULL, NULL) == MTC_EINVAL && errmsg(md, NULL), "step(NULL, NULL, NULL)");
	check(md->step(inst, NULL, NULL) == MTC_EINVAL && errmsg(md, inst), "step(inst, NULL, NULL)");
	check(md->step(inst, (const void *const *)none, &loss) == MTC_EINVAL, "step(all inputs NULL)");
	check(md->step(inst, (const void *const *)in, NULL) == MTC_EINVAL, "step(loss NULL)");
	check(md->forward(NULL, NULL, NULL) == MTC_EINVAL && errmsg(md, NULL), "forward(NULL, NULL, NULL)");
	check(md->forward(inst, NULL, (void *const *)out) == MTC_EINVAL, "forward(inputs NULL)");
	check(md->forward(inst, (const void *const *)in, NULL) == MTC_EINVAL, "forward(outputs NULL)");
	check(md->forward(inst, (const void *const *)in, (void *const *)none) == MTC_EINVAL, "forward(output NULL)");
	check(md->get(NULL, 0, buf) == MTC_EINVAL && md->get(inst, 0, NULL) == MTC_EINVAL &&
	      md->set(NULL, 0, buf) == MTC_EINVAL && md->set(inst, 0, NULL) == MTC_EINVAL, "get/set NULL");
	check(md->get(inst, INT_MIN, buf) == MTC_EINVAL && md->get(inst, INT_MAX, buf) == MTC_EINVAL &&
	      md->set(inst, -1, buf) == MTC_EINVAL && md->set(inst, md->nparams + md->nstate, buf) == MTC_EINVAL,
	      "get/set index out of range");
	check(md->stats(NULL, NULL) == MTC_EINVAL && md->stats(inst, NULL) == MTC_EINVAL, "stats NULL");
	check(md->error(NULL) != NULL && md->error(inst) != NULL, "error() never NULL");
	/* After every refusal the instance still works. */
	check(md->step(inst, (const void *const *)in, &loss) == 0, "step after errors: %s", md->error(inst));
	check(md->forward(inst, (const void *const *)in, (void *const *)out) == 0, "forward after errors: %s",
	      md->error(inst));
	md->destroy(NULL);
	md->destroy(inst);
}

/* The descriptor's sizes: numel is the shape's product and bytes 4 per element, for every
 * tensor; get and set move exactly bytes (a guard after the buffer stays intact; under ASan
 * the heap buffers are exact, so one byte more is a report), and set then get round-trips. */
static void
sizes(const struct mtc_module *md)
{
	const struct mtc_tensor_info *ls[4] = { md->inputs, md->outputs, md->params, md->state };
	int ns[4] = { md->ninputs, md->noutputs, md->nparams, md->nstate };
	void *inst = md->create();
	int bad = 0;

	for (int l = 0; l < 4; l++)
		for (int i = 0; i < ns[l]; i++) {
			const struct mtc_tensor_info *t = &ls[l][i];
			int64_t n = 1;
			for (int k = 0; k < t->rank; k++)
				n *= t->shape[k];
			if (t->numel != n || t->bytes != 4 * n) {
				check(0, "%s: numel %lld, bytes %lld, its shape's product %lld", t->name,
				      (long long)t->numel, (long long)t->bytes, (long long)n);
				bad = 1;
			}
		}
	check(!bad, "every tensor's numel and bytes agree with its shape");
	if (!inst)
		return;
	for (int i = 0; i < md->nparams + md->nstate; i++) {
		const struct mtc_tensor_info *t = i < md->nparams ? &md->params[i] : &md->state[i - md->nparams];
		size_t b = (size_t)t->bytes;
		unsigned char *p = malloc(b + 64), *q = malloc(b), guard[64];
		int ok;
		memset(guard, 0xa5, sizeof guard);
		memset(p + b, 0xa5, sizeof guard);
		ok = md->get(inst, i, p) == 0 && memcmp(p + b, guard, sizeof guard) == 0;
		for (size_t k = 0; k < b; k++)
			q[k] = (unsigned char)(p[k] ^ (k * 7 + 1));
		ok = ok && md->set(inst, i, q) == 0 && md->get(inst, i, p) == 0 &&
		     memcmp(p, q, b) == 0 && memcmp(p + b, guard, sizeof guard) == 0;
		check(ok, "get/set %s (%zu bytes): exactly its bytes, round trip: %s", t->name, b, md->error(inst));
		free(p);
		free(q);
	}
	md->destroy(inst);
}

/* Labels out of range: ERANGE, and the instance goes on. */
static void
bad_labels(const struct mtc_module *md, void **in)
{
	void *inst = md->create();
	int32_t *y = in[1];
	int32_t save = y[0];
	float loss;

	if (!inst)
		return;
	for (int k = 0; k < 3; k++) {
		y[0] = k == 0 ? -1 : k == 1 ? INT_MAX : INT_MIN;
		check(md->step(inst, (const void *const *)in, &loss) == MTC_ERANGE && errmsg(md, inst),
		      "label %d: %s", y[0], md->error(inst));
	}
	y[0] = save;
	check(md->step(inst, (const void *const *)in, &loss) == 0, "step after ERANGE: %s", md->error(inst));
	md->destroy(inst);
}

/* The n-th allocation fails, in a child (the counter is per process): create returns NULL
 * with a message, or succeeds once n is past create's allocations. 1: the child failed
 * cleanly, 0: create succeeded and a step ran, 2: anything else. */
static int
fail_at(const char *path, int n, void **in)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		char v[16];
		const struct mtc_module *(*get)(void);
		void *dl, *inst;
		float loss;
		snprintf(v, sizeof v, "%d", n);
		setenv("MTC_FAIL_ALLOC", v, 1);
		if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)) || !(get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module")))
			_exit(2);
		if (!(inst = get()->create())) {
			const char *e = get()->error(NULL);
			_exit(e && *e ? 1 : 2);
		}
		if (get()->step(inst, (const void *const *)in, &loss) != 0)
			_exit(2);
		get()->destroy(inst);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 2;
	return WEXITSTATUS(st);
}

int
main(int argc, char **argv)
{
	const struct mtc_module *md;
	const struct mtc_module *(*get)(void);
	void *dl, **in, **out;
	float *buf;
	int n, r;
	size_t before, after;

	if (argc != 2 || !(dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module"))) {
		check(0, "usage: module MODEL.so (%s)", argc == 2 ? dlerror() : "no MODEL.so given");
		return done();
	}
	md = get();
	in = calloc((size_t)md->ninputs + 1, sizeof *in);
	out = calloc((size_t)md->noutputs + 1, sizeof *out);
	for (int i = 0; i < md->ninputs; i++)
		in[i] = calloc(1, (size_t)md->inputs[i].bytes);    /* zeros: labels 0, in range */
	for (int i = 0; i < md->noutputs; i++)
		out[i] = calloc(1, (size_t)md->outputs[i].bytes);
	buf = calloc(1, 1 << 20);

	null_args(md, in, out, buf);
	sizes(md);
	if (md->ninputs >= 2 && md->inputs[1].dtype == MTC_I32)
		bad_labels(md, in);

	for (n = 1; n < 100 && (r = fail_at(argv[1], n, in)) == 1; n++)
		;
	check(n > 3 && n < 100 && r == 0, "MTC_FAIL_ALLOC: allocation %d ended with %d (1 = clean failure)", n, r);
	printf("MTC_FAIL_ALLOC: allocations 1..%d of create each failed cleanly\n", n - 1);

	/* Warm up (the BLAS and the allocator's arenas), then the heap may not grow. */
	for (int k = 0; k < 10; k++)
		md->destroy(md->create());
	before = mallinfo2().uordblks;
	for (int k = 0; k < 1000; k++) {
		void *inst = md->create();
		if (!inst) {
			check(0, "create %d: %s", k, md->error(NULL));
			break;
		}
		md->destroy(inst);
	}
	after = mallinfo2().uordblks;
	check(after <= before + 4096, "1000 create/destroy: heap %zu -> %zu bytes", before, after);

	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	for (int i = 0; i < md->noutputs; i++)
		free(out[i]);
	free(in);
	free(out);
	free(buf);
	return done();
}
