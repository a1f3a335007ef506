/* nvrtc.c: CUDA C to PTX or cubin with NVRTC, at compile time, each image once a process; the
 * log is always returned. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"

/* No contraction into FMA: the interpreter and the C backend round every product (their
 * -ffp-contract=off), and matching them matters more than the last few percent here. */
/* PTX for compute_75 (Turing) is JIT-compiled by the driver on every GPU that CUDA 12 and
 * 13 drivers support; CUDA 13's NVRTC dropped everything older. */
const char cuda_default_arch[] = "compute_75";

static char *
nvrtc_run(const char *src, const char *name, const char *arch, int cubin, size_t *len, char **log)
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

/* The images compiled by this process: one mtc run builds the module and, with --also-emit,
 * the PTX and the LLVM IR, each from the same CUDA C (NVRTC takes most of a CUDA build). */
enum { NCACHE = 4 };
static struct {
	char *src, *name, *arch, *img, *log;
	int cubin;
	size_t len;
} cache[NCACHE];
static int ncache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static char *
dup_bytes(const char *p, size_t n)
{
	char *q = xmalloc(n + 1);
	memcpy(q, p, n);
	q[n] = 0;
	return q;
}

char *
cuda_compile(const char *src, const char *name, const char *arch, int cubin, size_t *len, char **log)
{
	char *img;
	int k;

	if (getenv("MTC_TEST_NO_NVRTC")) {
		/* for tests that read only the host code (tests/cuda/sync.sh): no kernels compiled;
		 * the image is this line, which a GPU refuses to load */
		static const char stub[] = "// MTC_TEST_NO_NVRTC: no kernels compiled\n";
		*len = sizeof stub - 1;
		*log = NULL;
		return dup_bytes(stub, *len);
	}
	pthread_mutex_lock(&cache_lock);
	for (k = 0; k < ncache && k < NCACHE; k++)
		if (cache[k].cubin == cubin && strcmp(cache[k].arch, arch) == 0 &&
		    strcmp(cache[k].name, name) == 0 && strcmp(cache[k].src, src) == 0) {
			*len = cache[k].len;
			*log = cache[k].log ? xstrdup(cache[k].log) : NULL;
			img = dup_bytes(cache[k].img, cache[k].len);
			pthread_mutex_unlock(&cache_lock);
			return img;
		}
	pthread_mutex_unlock(&cache_lock);
	img = nvrtc_run(src, name, arch, cubin, len, log);
	if (!img)
		return NULL;
	pthread_mutex_lock(&cache_lock);
	k = ncache++ % NCACHE;
	free(cache[k].src), free(cache[k].name), free(cache[k].arch), free(cache[k].img), free(cache[k].log);
	cache[k].src = xstrdup(src);
	cache[k].name = xstrdup(name);
	cache[k].arch = xstrdup(arch);
	cache[k].img = dup_bytes(img, *len);
	cache[k].log = *log ? xstrdup(*log) : NULL;
	cache[k].cubin = cubin;
	cache[k].len = *len;
	pthread_mutex_unlock(&cache_lock);
	return img;
}
