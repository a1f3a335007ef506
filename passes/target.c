/* target.c: the machine descriptions the cost model reads, and their command-line overrides.
 *
 * The figures are public ones, rounded; where a figure is not published it is a plausible
 * assumption and says so. They only need to rank plans, not predict wall time; calibrating
 * them by measuring kernels is a later step.
 *
 * mt3000 (NUDT MT-3000, Lu et al., CCF THPC 2022, and the seed survey):
 *   peak 11.6 TFLOP/s (the published FP64 peak of the acceleration zone: 4 clusters x 24 DSP
 *   cores; used for f32 too, conservatively); accelerator memory bandwidth 200 GB/s (assumed:
 *   per-cluster DDR/HBM); DDR<->accelerator copies 10 GB/s with 20 us latency (assumed; the
 *   survey calls them asymmetric and slow); capacity 8 GiB of fast memory (the survey's
 *   figure); 20 us per kernel launch through hthreads (assumed); 64-byte DMA alignment.
 *   Its host, the CPU zone (16 ARMv8 cores at 2 GHz): 256 GFLOP/s f32 (16 x 2e9 x 8, two
 *   128-bit FMA lanes) and 50 GB/s of DDR (assumed) for updates run there.
 * cuda (an H100 SXM): 67 TFLOP/s f32 (no tensor cores), 3.35 TB/s HBM3, 25 GB/s pinned PCIe 5
 *   copies each way with 10 us latency, 80 GB, 5 us launch, 256-byte alignment (cudaMalloc's). Its
 *   host, the CPU beside it: 1 TFLOP/s f32 and 100 GB/s for updates run there (assumed: about
 *   what DeepSpeed's CPU Adam reaches on a two-socket server, 3e9 params/s).
 * duplex: copies each way run at once: PCIe is full duplex and a GPU has a copy engine each
 * way (the CUDA target puts them on two streams); the emulated MT-3000's DMA engine is one.
 * hoststate: the target's code keeps params and optimizer state in host memory and updates
 * them there when the planner asks: both do (CUDA in pinned memory, updates on the host as
 * host functions on its copy stream).
 * The network (data parallelism, one link per rank): mt3000 25 GB/s (a 200 Gb/s link, assumed
 * for a Tianhe-class interconnect) with 5 us per message (assumed); cuda NVLink 4 of an H100,
 * 450 GB/s per direction (NVIDIA's figure) with 3 us per message (assumed, NCCL-like). 100 Gb/s
 * Ethernet between machines is --net-bw=12.5e9 --net-latency=20e-6. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

const Target target_mt3000 = { "mt3000", 11.6e12, 200e9, 10e9, 20e-6, 20e-6, 8LL << 30, 64, 1,
                                256e9, 50e9, 25e9, 5e-6, 0, 0, 0, 0, 0 };
const Target target_cuda = { "cuda", 67e12, 3.35e12, 25e9, 10e-6, 5e-6, 80000000000LL, 256, 1,
                             1e12, 100e9, 450e9, 3e-6, 1, 0, 0, 0, 0 };
static const Target *const builtin[] = { &target_mt3000, &target_cuda };

const char target_help[] =
"  --target-flops=F      peak FLOP/s of the accelerator (mt3000 11.6e12, cuda 67e12)\n"
"  --target-bw=B         accelerator memory bandwidth, bytes/s (mt3000 200e9, cuda 3.35e12)\n"
"  --copy-bw=B           host<->accelerator copy bandwidth, bytes/s (mt3000 10e9, cuda 25e9)\n"
"  --copy-latency=S      latency of one copy, seconds (mt3000 20e-6, cuda 10e-6)\n"
"  --launch=S            overhead of one op, seconds (mt3000 20e-6, cuda 5e-6)\n"
"  --accel-bytes=N       accelerator capacity, bytes (mt3000 8 GiB, cuda 80e9)\n"
"  --align=N             arena alignment: a power of two up to 1M (mt3000 64, cuda 256)\n"
"  --host-flops=F        FLOP/s of the host threads that run updates on the host (mt3000\n"
"                        256e9, cuda 1e12)\n"
"  --host-bw=B           their memory bandwidth, bytes/s (mt3000 50e9, cuda 100e9)\n"
"  --net-bw=B            data parallelism: network bandwidth of a rank's link, bytes/s (mt3000\n"
"                        25e9, cuda 450e9: NVLink; 100 Gb/s Ethernet is 12.5e9)\n"
"  --net-latency=S       latency of one message between ranks, seconds (mt3000 5e-6, cuda 3e-6)\n"
"  --host-issue=S        the host's time to issue one kernel: kernels then wait to be issued\n"
"                        and --launch is their fixed time on the accelerator (default 0: off)\n"
"  --host-issue-gemm=S   the same for a matmul (a cuBLAS call; default: --host-issue)\n"
"  --gemm-flops=F        FLOP/s of matmuls (default: --target-flops)\n"
"  --conv-flops=F        FLOP/s of convolutions (default: --target-flops)\n";

int
target_get(Target *t, const char *name)
{
	for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
		if (strcmp(builtin[i]->name, name) == 0) {
			*t = *builtin[i];
			return 0;
		}
	return -1;
}

int
target_option(Target *t, const char *arg, char *err, size_t nerr)
{
	static const struct { const char *opt; int pos, isint; } tab[] = {
		{ "--target-flops=", 0, 0 }, { "--target-bw=", 1, 0 }, { "--copy-bw=", 2, 0 },
		{ "--copy-latency=", 3, 0 }, { "--launch=", 4, 0 }, { "--accel-bytes=", 5, 1 },
		{ "--align=", 6, 1 }, { "--host-flops=", 7, 0 }, { "--host-bw=", 8, 0 },
		{ "--net-bw=", 9, 0 }, { "--net-latency=", 10, 0 }, { "--host-issue=", 11, 0 },
		{ "--host-issue-gemm=", 12, 0 }, { "--gemm-flops=", 13, 0 }, { "--conv-flops=", 14, 0 },
	};
	double *dv[] = { &t->flops, &t->bw, &t->copybw, &t->copylat, &t->launch };
	double *hv[] = { &t->hostflops, &t->hostbw, &t->netbw, &t->netlat, &t->issue, &t->issue_gemm,
	                 &t->gemm_flops, &t->conv_flops };
	int64_t *iv[] = { &t->capacity, &t->align };

	for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
		size_t n = strlen(tab[i].opt);
		const char *s = arg + n;
		char *end;
		double v;

		if (strncmp(arg, tab[i].opt, n))
			continue;
		errno = 0;
		v = strtod(s, &end);
		if (end == s || *end || errno || !(v >= 0) || v > 1e30)
			goto bad;
		/* Rates must be positive (the GEMM and convolution rates' 0 is the default: the
		 * accelerator's); latencies and overheads may be zero. */
		if ((tab[i].pos <= 2 || (tab[i].pos >= 7 && tab[i].pos <= 9)) && v == 0)
			goto bad;
		if (!tab[i].isint) {
			*(tab[i].pos >= 7 ? hv[tab[i].pos - 7] : dv[tab[i].pos]) = v;
			return 0;
		}
		if (v < 1 || v >= 9.2e18 || v != (double)(int64_t)v)
			goto bad;
		if (tab[i].pos == 6 && (v > 1 << 20 || ((int64_t)v & ((int64_t)v - 1))))
			goto bad;
		*iv[tab[i].pos - 5] = (int64_t)v;
		return 0;
	bad:
		snprintf(err, nerr, "invalid %.*s '%s'", (int)n - 1, tab[i].opt, s);
		return -1;
	}
	return 1;
}
