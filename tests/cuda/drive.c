/* drive.c: run any MODEL.so through mtc_module() for the CUDA tests: `drive MODEL.so STEPS`
 * prints `step K loss V` per step (fixed inputs: f32 from a formula, i32 alternating 0 and 1,
 * in range for every example) and `peak_bytes P plan_bytes Q budget_bytes B`. With
 * `--bad-ids` after STEPS, then a step with each i32 input's first element out of range
 * (-1, INT_MAX): each must return MTC_ERANGE with a message, and a step after it succeed;
 * `bad ids: N` says how many such steps ran.
 * Exit status: 0 ran, 2 create() failed (its message on stderr), 1 anything else. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "mtc/mtc.h"

int
main(int argc, char **argv)
{
	const struct mtc_module *(*modf)(void);
	const struct mtc_module *m;
	void *h, *inst, **in;
	int steps = argc > 2 ? atoi(argv[2]) : 5;

	if (argc < 2) {
		fprintf(stderr, "usage: drive MODEL.so [STEPS [--bad-ids]]\n");
		return 1;
	}
	if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "drive: %s\n", dlerror());
		return 1;
	}
	*(void **)&modf = dlsym(h, "mtc_module");
	if (!modf || !(m = modf()) || m->abi != MTC_ABI) {
		fprintf(stderr, "drive: %s: no usable mtc_module()\n", argv[1]);
		return 1;
	}
	if (!(inst = m->create())) {
		const char *e = m->error(NULL);
		fprintf(stderr, "drive: %s: create failed: %s\n", argv[1], e ? e : "(no message)");
		return 2;
	}
	in = calloc(m->ninputs + 1, sizeof *in);
	for (int i = 0; i < m->ninputs; i++) {
		const struct mtc_tensor_info *t = &m->inputs[i];
		in[i] = malloc(t->bytes ? t->bytes : 4);
		for (int64_t k = 0; k < t->numel; k++)
			if (t->dtype == MTC_F32)
				((float *)in[i])[k] = (float)((k * 37 + i * 11) % 29 - 14) / 14.0f;
			else
				((int32_t *)in[i])[k] = (int32_t)(k % 2);
	}
	for (int s = 0; s < steps && m->trains; s++) {
		float loss;
		int rc = m->step(inst, (const void *const *)in, &loss);
		if (rc) {
			fprintf(stderr, "drive: step %d: %s (code %d)\n", s, m->error(inst), rc);
			return 1;
		}
		printf("step %d loss %.9g\n", s, loss);
	}
	if (argc > 3 && strcmp(argv[3], "--bad-ids") == 0) {
		int nbad = 0;
		float loss;
		for (int i = 0; i < m->ninputs; i++) {
			int32_t *y = in[i], save;
			if (m->inputs[i].dtype == MTC_F32 || m->inputs[i].numel < 1)
				continue;
			save = y[0];
			for (int k = 0; k < 2; k++) {
				const char *e;
				int rc;
				y[0] = k ? INT_MAX : -1;
				rc = m->step(inst, (const void *const *)in, &loss);
				e = m->error(inst);
				if (rc != MTC_ERANGE || !e || !strstr(e, "out of range")) {
					fprintf(stderr, "drive: input %s = %d: code %d, '%s', not MTC_ERANGE\n",
					        m->inputs[i].name, (int)y[0], rc, e ? e : "");
					return 1;
				}
				printf("input %s = %d: %s\n", m->inputs[i].name, (int)y[0], e);
				nbad++;
			}
			y[0] = save;
			if (m->step(inst, (const void *const *)in, &loss)) {
				fprintf(stderr, "drive: a step after MTC_ERANGE: %s\n", m->error(inst));
				return 1;
			}
		}
		printf("bad ids: %d\n", nbad);
	}
	{
		struct mtc_stats st;
		if (m->stats(inst, &st) == 0)
			printf("peak_bytes %lld plan_bytes %lld budget_bytes %lld\n", (long long)st.peak_bytes,
			       (long long)m->plan_bytes, (long long)m->budget_bytes);
	}
	m->destroy(inst);
	for (int i = 0; i < m->ninputs; i++)
		free(in[i]);
	free(in);
	dlclose(h);
	return 0;
}
