/* drive.c: run any MODEL.so through mtc_module() for the CUDA tests: `drive MODEL.so STEPS`
 * prints `step K loss V` per step (fixed inputs: f32 from a formula, i32 alternating 0 and 1,
 * in range for every example) and `peak_bytes P plan_bytes Q budget_bytes B`.
 * Exit status: 0 ran, 2 create() failed (its message on stderr), 1 anything else. */
#include <dlfcn.h>
#include <stdio.h>
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
		fprintf(stderr, "usage: drive MODEL.so [STEPS]\n");
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
