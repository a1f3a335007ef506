/* mtc-rt.h: the runtime as generated code sees it: the emulated MT-3000 device (accelerator
 * arena, DDR zone, DMA engine, accelerator threads), check mode, kernel helpers, initial values.
 *
 * Installed as <mtc/mtc-rt.h> because generated code includes it; users of a module need only
 * MODEL.h and <mtc/mtc.h>. Every symbol is mtc_-prefixed and built with hidden visibility, so
 * each MODEL.so carries its own private copy of the runtime. */
#ifndef MTC_MTC_RT_H
#define MTC_MTC_RT_H

#include <stddef.h>
#include <stdint.h>

#include "mtc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MTC_EXPORT __attribute__((visibility("default")))

typedef struct mtc_dev mtc_dev;

/* A kernel in the hthreads style: a uint64_t argument array (scalars first, then pointers),
 * run by every accelerator thread with its index tid among nthr. */
typedef void (*mtc_kernel)(const uint64_t *args, int tid, int nthr);

/* What a module instance needs from the device. The device address space is the persistent
 * zone (inputs, params, state) at [0, persist_bytes), then the arena for the plan's
 * temporaries; swapped tensors live in the DDR zone. */
struct mtc_dev_desc {
	const char *model;
	int64_t persist_bytes;
	int64_t arena_bytes;
	int64_t ddr_bytes;
	const char *const *names;     /* tensor names by id, for check-mode messages */
	int nnames;
};

/* Open the device: allocate the zones, start the DMA engine and the accelerator threads.
 * The capacity is MTC_ACCEL_BYTES (bytes, K/M/G suffix) or MTC_ACCEL_DEFAULT; a plan larger
 * than it is refused. NULL on failure with mtc_rt_last_error() set. */
#define MTC_ACCEL_DEFAULT ((int64_t)8 << 30)
mtc_dev *mtc_dev_open(const struct mtc_dev_desc *);
void mtc_dev_close(mtc_dev *);
char *mtc_dev_mem(mtc_dev *);         /* device address 0 */
char *mtc_dev_ddr(mtc_dev *);
int *mtc_dev_flag(mtc_dev *);         /* kernels set it to an enum mtc_status on bad data */
/* A kernel met an id out of range: element elem of input `in` holds val, outside [0, bound),
 * read by op `op` (kind `kind`). The first report of a call wins; MTC_ERANGE then names them. */
void mtc_range_error(int *flag, int op, const char *kind, const char *in, int64_t elem,
                     int32_t val, int64_t bound);
int mtc_dev_nthreads(const mtc_dev *);
void mtc_dev_stats(const mtc_dev *, struct mtc_stats *);
void mtc_dev_count_step(mtc_dev *);
void mtc_dev_set_steps(mtc_dev *, int64_t steps);   /* a loaded state's step counter */

/* Errors: the instance's last error, and a thread's last error for failed creates. */
int mtc_fail(mtc_dev *, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *mtc_dev_error(const mtc_dev *);
void mtc_dev_clear(mtc_dev *);
int mtc_set_last_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *mtc_rt_last_error(void);
/* Fault injection for tests: with MTC_FAIL_ALLOC=N in the environment, the N-th runtime
 * allocation of this module (create's, the device's, the DMA engine's, the threads') fails;
 * every allocation asks this first. 1: fail this one. */
int mtc_fail_alloc(void);
/* After a function's last op: drain the DMA queue and the host's thread, turn the kernels'
 * flag and check-mode findings into a status. */
int mtc_dev_finish(mtc_dev *);

/* Run a kernel on the accelerator threads and wait for it. work (elements touched) below a
 * threshold runs on one thread: every kernel's result is independent of the split. */
void mtc_run(mtc_dev *, mtc_kernel, const uint64_t *args, int64_t work);

/* DMA: queue a copy, get a channel; wait until that copy (and every earlier one) is done. */
int64_t mtc_dma(mtc_dev *, void *dst, const void *src, int64_t bytes);
/* Queue an update on the host: fn(args, 0, 1) runs on the host's thread, in the order queued,
 * once DMA channel `after` (and every copy before it: the gradient it reads) is done; args
 * (at most MTC_CALL_ARGS: adamw_update's 10 operands and the flag) are copied. mtc_dev_finish
 * waits for it. */
enum { MTC_CALL_ARGS = 12 };
int64_t mtc_host_call(mtc_dev *, mtc_kernel fn, const uint64_t *args, int nargs, int64_t after);
void mtc_dma_wait(mtc_dev *, int64_t ch);

/* Check mode (MTC_CHECK=1) and the measured peak. Offsets are device addresses. Births verify
 * that no live tensor overlaps; deaths poison the bytes with NaN (check mode only). */
void mtc_born(mtc_dev *, int id, int64_t off, int64_t bytes);
void mtc_dead(mtc_dev *, int id, int64_t off, int64_t bytes);
/* Check mode: op `op` is about to read tensor `id` at [off, off + bytes): it must be live
 * there (born and not yet dead), else MTC_ECHECK names the op and the tensor. */
void mtc_use(mtc_dev *, int op, int id, int64_t off, int64_t bytes);
/* Tensor `from` dies and `to` is born in exactly its bytes, inside one fused loop that reads
 * each element of `from` before it writes that element of `to`: no poison in between. */
void mtc_handover(mtc_dev *, int from, int to, int64_t off, int64_t bytes);

/* The fixed split of n items over nthr threads: thread tid gets [*lo, *hi). */
static inline void
mtc_split(int64_t n, int tid, int nthr, int64_t *lo, int64_t *hi)
{
	int64_t q = n / nthr, r = n % nthr;
	*lo = tid * q + (tid < r ? tid : r);
	*hi = *lo + q + (tid < r);
}

/* Kernel helpers (kernels.c), each run by one thread on its share. */
/* C[m,n] = op(A) op(B) for rows [r0, r1) of C; op transposes when ta/tb. Row-major. */
void mtc_sgemm_rows(int ta, int tb, int64_t r0, int64_t r1, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);
/* The same adding into C: C += op(A) op(B), each sum going on in order from C's values. */
void mtc_sgemm_rows_add(int ta, int tb, int64_t r0, int64_t r1, int64_t n, int64_t k,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                        int64_t ldc);
enum { MTC_GEMM_ROWS = 32 };          /* fewest rows of a GEMM tile (the grid is fixed by the shape) */
/* mtc_chanfirst, mtc_im2col, mtc_col2im and the depthwise convolutions (mtc_dwconv,
 * mtc_dwconv_dx, mtc_dwconv_dw): <mtc/mtc-conv.h>, inline in the kernels. */
/* max_pool2d (kind 0), avg_pool2d with count_include_pad (kind 1) or without (kind 2) of the
 * planes [lo, hi) of an x [N, C, H, W], and their gradients (x is read by max_pool2d's only). */
void mtc_pool2d(float *y, const float *x, int kind, int64_t H, int64_t W, int64_t kh, int64_t kw,
              int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t ho,
              int64_t wo, int64_t lo, int64_t hi);
void mtc_pool2d_grad(float *dx, const float *x, const float *dy, int kind, int64_t H, int64_t W,
                   int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                   int64_t dh, int64_t dw, int64_t ho, int64_t wo, int64_t lo, int64_t hi);
/* Batch norm (passes/grad.c): mtc_bn_apply and mtc_bn_dx over planes n*C + c in [lo, hi),
 * the statistics (mtc_bn_stat: the mean with mu NULL, else the biased variance) and the
 * running statistics' update over channels. */
void mtc_bn_apply(float *y, const float *x, const float *g, const float *b, const float *mu,
                  const float *var, double eps, int64_t C, int64_t Q, int64_t lo, int64_t hi);
void mtc_bn_stat(float *o, const float *x, const float *mu, int64_t N, int64_t C, int64_t Q,
                 int64_t lo, int64_t hi);
void mtc_bn_dstats(float *o, const float *x, const float *mu, const float *var, const float *dy,
                   double eps, int64_t N, int64_t C, int64_t Q, int64_t lo, int64_t hi);
void mtc_bn_dx(float *dx, const float *x, const float *g, const float *mu, const float *var,
               const float *dy, const float *ds, int train, double eps, int64_t N, int64_t C,
               int64_t Q, int64_t lo, int64_t hi);
void mtc_bn_update(float *rm, float *rv, const float *mu, const float *var, double m, double count,
                   int64_t lo, int64_t hi);
/* Permute axes: dst has shape (rank dims) `shape`, dst[i...] = src at the source strides. */
void mtc_permute(float *dst, const float *src, int rank, const int64_t *shape,
                 const int64_t *sstride, int64_t lo, int64_t hi);
/* Sum x (shape xs) into r (shape rs: xs with some dims 1), output elements [lo, hi). */
void mtc_sum_to(float *r, const float *x, int rank, const int64_t *xs, const int64_t *rs,
                int64_t lo, int64_t hi);

/* Optimizer hyperparameters (hyper.c): is v a valid value of the one called name (lr,
 * momentum, beta1, beta2, eps, weight_decay, clip_norm)? Its range in words. The check of a
 * setter: 0, or MTC_EINVAL with "who: lr must be ..., got -1" in err. */
int mtc_hyper_ok(const char *name, double v);
const char *mtc_hyper_range(const char *name);
int mtc_hyper_check(const char *who, const char *name, double v, char *err, size_t n);

/* Training state files (ckpt.c): one tensor of a state, named, with its bytes at data. */
typedef struct mtc_state_entry {
	const char *name;
	int dtype;                    /* enum mtc_dtype */
	int rank;
	const int64_t *shape;
	int64_t bytes;
	void *data;
} mtc_state_entry;
/* Write n entries to path (safetensors); read them back: each must be in the file with its
 * dtype and shape, and the file must hold nothing else; nothing is copied unless all are
 * there. 0 or MTC_EFILE (MTC_ENOMEM) with a message naming the file and the tensor in err. */
int mtc_state_write(const char *path, const mtc_state_entry *, int n, char *err, size_t nerr);
int mtc_state_read(const char *path, const mtc_state_entry *, int n, char *err, size_t nerr);
/* A module instance's state through md's entry points: params, optimizer state,
 * hyperparameters ("opt.NAME") and the step counter "opt.step" (MODEL_save, MODEL_load).
 * Load checks everything first (hyperparameters in range too), then sets the instance and
 * returns the file's step in *step. 0 or a status with a message in err. */
int mtc_state_save(const struct mtc_module *md, void *inst, const char *path, int64_t step,
                   char *err, size_t nerr);
int mtc_state_load(const struct mtc_module *md, void *inst, const char *path, int64_t *step,
                   char *err, size_t nerr);

/* Deterministic initial values (shared with the interpreter): they depend only on the
 * tensor's name, the seed and the initializer. kind: 1 zeros, 2 ones, 3 full(a),
 * 4 normal(mean a, std b), 5 uniform(lo a, hi b). */
void mtc_init_f32(float *p, int64_t n, int kind, double a, double b, const char *name, uint64_t seed);
/* Pseudo-random data for an input: f32 uniform(-1, 1), or i32 draws % hi (hi 0: unbounded). */
void mtc_rand_input(void *p, int dtype, int64_t n, int32_t hi, const char *name, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
