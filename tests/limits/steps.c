/* steps.c: a minimal host of any module for the thread sanitizer run (tsan.sh): create,
 * N steps (or forwards) on zero inputs, one forward, destroy. usage: steps MODEL.so N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "mtc/mtc.h"

int
main(int argc, char **argv)
{
	const struct mtc_module *(*get)(void);
	const struct mtc_module *md;
	void *dl, *inst, **in, **out;
	int n = argc > 2 ? atoi(argv[2]) : 2, rc = 0;
	float loss;

	if (argc < 2 || !(dl = dlopen(argv[1], RTLD_NOW)) ||
	    !(get = (const struct mtc_module *(*)(void))dlsym(dl, "mtc_module"))) {
		fprintf(stderr, "usage: steps MODEL.so [N] (%s)\n", dlerror());
		return 2;
	}
	md = get();
	in = calloc((size_t)md->ninputs + 1, sizeof *in);
	out = calloc((size_t)md->noutputs + 1, sizeof *out);
	for (int i = 0; i < md->ninputs; i++)
		in[i] = calloc(1, (size_t)md->inputs[i].bytes);
	for (int i = 0; i < md->noutputs; i++)
		out[i] = calloc(1, (size_t)md->outputs[i].bytes);
	if (!(inst = md->create())) {
		fprintf(stderr, "create: %s\n", md->error(NULL));
		return 1;
	}
	for (int k = 0; k < n && !rc && md->trains; k++)
		if ((rc = md->step(inst, (const void *const *)in, &loss)))
			fprintf(stderr, "step %d: %s\n", k, md->error(inst));
		else
			printf("step %d loss %g\n", k + 1, loss);
	if (!rc && (rc = md->forward(inst, (const void *const *)in, out)))
		fprintf(stderr, "forward: %s\n", md->error(inst));
	md->destroy(inst);
	for (int i = 0; i < md->ninputs; i++)
		free(in[i]);
	for (int i = 0; i < md->noutputs; i++)
		free(out[i]);
	free(in);
	free(out);
	return rc != 0;
}
