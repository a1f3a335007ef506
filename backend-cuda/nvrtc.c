/* nvrtc.c: CUDA C to PTX or cubin with NVRTC, at compile time; the log is always returned. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* No contraction into FMA: the interpreter and the C backend round every product (their
 * -ffp-contract=off), and matching them matters more than the last few percent here. */
/* PTX for compute_75 (Turing) is JIT-compiled by the driver on every GPU that CUDA 12 and
 * 13 drivers support; CUDA 13's NVRTC dropped everything older. */
const char cuda_default_arch[] = "compute_75";

char *
cuda_compile(const char *src, const char *name, const char *arch, int cubin, size_t *len, char **log)
{
	nvrtcProgram prog;
	nvrtcResult rc;
	char opt_arch[64];
	const char *opts[] = { opt_arch, "--std=c++14", "-default-device", "--fmad=false" };
	size_t n = 0;
	char *img = NULL;

	*log = NULL;
	*len = 0;
	snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
	if ((rc = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL)) != NVRTC_SUCCESS) {
		*log = xstrdup(nvrtcGetErrorString(rc));
		return NULL;
	}
	rc = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof *opts), opts);
	if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
		*log = xmalloc(n + 1);
		if (nvrtcGetProgramLog(prog, *log) != NVRTC_SUCCESS)
			**log = 0;
		(*log)[n] = 0;
	}
	if (rc != NVRTC_SUCCESS) {
		if (!*log)
			*log = xstrdup(nvrtcGetErrorString(rc));
		nvrtcDestroyProgram(&prog);
		return NULL;
	}
	if (cubin) {
		if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
			img = xmalloc(n);
			if (nvrtcGetCUBIN(prog, img) != NVRTC_SUCCESS) {
				free(img);
				img = NULL;
			}
		}
	} else if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
		img = xmalloc(n + 1);
		if (nvrtcGetPTX(prog, img) != NVRTC_SUCCESS) {
			free(img);
			img = NULL;
		} else {
			img[n] = 0;
			n = strlen(img);
		}
	}
	nvrtcDestroyProgram(&prog);
	if (!img && !*log)
		*log = xstrdup("NVRTC produced no image");
	*len = img ? n : 0;
	return img;
}
