/* mtc-cuda.h: the runtime's CUDA part as generated host code sees it.
 *
 * A CUDA module (MODEL.so built with --target=cuda) is host code generated as LLVM IR plus
 * this runtime. The IR defines the symbols listed under "the module provides" (hidden, so two
 * modules in one process never see each other's); the runtime provides the rest. libcuda and
 * cuBLAS are opened with dlopen when an instance is created, so a module loads on a machine
 * without a GPU and create() then fails with a message. Every call returns 0 or an
 * enum mtc_status and never aborts. */
#ifndef MTC_MTC_CUDA_H
#define MTC_MTC_CUDA_H

#include <stdint.h>

#include "mtc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtc_cu mtc_cu;

/* ---- the module provides (generated, hidden) ----
 * mtc_cu_manifest: the module's description as text, one record a line:
 *   model NAME | solver S | budget B | plan P | peak Q | persist N | arena N | host N | events N
 *   records N                                         (compute events, see mtc_cu_record)
 *   arch compute_XX                                   (the PTX's virtual architecture)
 *   kernel NAME                                       (in launch-index order)
 *   hostupd N                                         (updates on the host, see mtc_cu_host_update)
 *   tensor ROLE NAME DTYPE RANK D... off OFF init KIND A B use U [range R] [host]  (ROLE input|
 *     param|state|output|buffer|hyper; U: bit 0 forward reads it, bit 1 step reads it; KIND 6:
 *     the values are the tensor's bytes at offset A of mtc_cu_data; range: an i32 input's
 *     values are in [0, R), mtc_tensor_info.range; host: it lives in pinned host memory, OFF an
 *     offset there, and the schedules copy it in where they need it)
 *   loss OFF                                          (the step's loss value)
 * OFF is a device offset (persistent zone first, then the arena) for every role.
 * mtc_cu_ptx: NUL-terminated PTX; mtc_cu_cubin: a cubin for mtc_cu_cubin_arch (0: none);
 * mtc_cu_data: the initial values that came from files (an imported model's weights). */
extern const char mtc_cu_manifest[];
extern const char mtc_cu_ptx[];
extern const unsigned char mtc_cu_cubin[];
extern const int64_t mtc_cu_cubin_len;
extern const int mtc_cu_cubin_arch;           /* e.g. 90 for sm_90 */
extern const unsigned char mtc_cu_data[];
/* The schedules: launches, copies and event waits in program order; 0 or a status. */
int mtc_cu_sched_forward(mtc_cu *);
int mtc_cu_sched_step(mtc_cu *);

/* ---- the runtime provides ---- */
/* The module's description (built once from the manifest) and the generic entry points the
 * typed API (MODEL_create, MODEL_step, ...) forwards to; mtc_last_error() forwards to the
 * common runtime's mtc_rt_last_error() (runtime/error.c), which create() failures set. */
const struct mtc_module *mtc_cu_module(void);
void *mtc_cu_create(void);
int mtc_cu_step(void *, const void *const *inputs, float *loss);
int mtc_cu_step_out(void *, const void *const *inputs, float *loss, void *const *outputs);
int mtc_cu_save(void *, const char *path);
int mtc_cu_load(void *, const char *path);
int mtc_cu_forward(void *, const void *const *inputs, void *const *outputs);
void mtc_cu_destroy(void *);
const char *mtc_cu_error(const void *);
/* Hyperparameter i (manifest order) of the instance; checked as every target checks it. */
int mtc_cu_set_hyper(void *, int i, float v);

/* Used by the schedules. Offsets are device offsets as in the manifest. */
uint64_t mtc_cu_base(mtc_cu *);               /* device address of offset 0 */
/* Launch kernel fn (manifest order) on the compute stream; args are device addresses. */
int mtc_cu_launch(mtc_cu *, int fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                  unsigned by, unsigned bz, uint64_t *args, int nargs);
/* Row-major C[m,n] = op(A) op(B) over `batch` matrices sa, sb, sc elements apart, args
 * {C, A, B}: cuBLAS when it was found, else kernel fn with the given launch. */
int mtc_cu_gemm(mtc_cu *, int fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                unsigned by, unsigned bz, uint64_t *args, int ta, int tb, int64_t m, int64_t n,
                int64_t k, int64_t batch, int64_t sa, int64_t sb, int64_t sc);
/* A swap on the copy stream of its direction (out: device to pinned host; PCIe is full
 * duplex, so one stream each way), after the compute stream reached compute event `after`
 * (-1: no wait; the generated code picks the latest kernel the copy depends on in the DAG:
 * the producer of what it reads, the readers of the bytes it overwrites), after copy event
 * `cwait` of the other copy stream (-1: none; a swap_in of what a swap_out sent, bytes the
 * other stream reads or writes) and after every earlier copy of its stream. Its completion
 * is recorded in copy event ev. */
int mtc_cu_swap(mtc_cu *, int out, int64_t dev, int64_t host, int64_t bytes, int ev, int after,
                int cwait);
/* An optimizer update on the host (the planner's choice): a host function on the stream of
 * updates on the host, after copy events `out` (-1: none; the latest copy to the host issued
 * before it, so every one before it too: the gradient sent there) and `in` (-1: none; the
 * latest copy in that reads what it writes), running kind's formula (<mtc/mtc-ops.h>) over n
 * elements of its operands off[0..nargs), the IR's operands in order: the param, its state,
 * the gradient and Adam's counter at pinned host offsets, then the hyperparameters as
 * MTC_CU_HYPER | i, i their index among the manifest's hyper tensors (their values when the
 * update is queued: the step's settings). slot: its place among the manifest's hostupd (the
 * closure the host function reads). */
enum { MTC_CU_SGD = 1, MTC_CU_SGDM, MTC_CU_ADAM, MTC_CU_ADAMW };
#define MTC_CU_HYPER (1ull << 62)
int mtc_cu_host_update(mtc_cu *, int kind, int out, int in, int64_t n, const uint64_t *off,
                       int nargs, int slot);
/* Record compute event k on the compute stream (after the op just issued). */
int mtc_cu_record(mtc_cu *, int k);
/* The compute stream waits for copy event ev (a swap's completion): the IR's `wait`, and
 * before a kernel the DAG orders after a copy no `wait` covered. */
int mtc_cu_wait(mtc_cu *, int ev);
/* Lifetimes, around each op: born() before it with its result's bytes and the (off, bytes)
 * pairs of the values it is the last reader of (the result may reuse their bytes); dead()
 * after it with the same. They keep the measured high-water mark; in check mode
 * (MTC_CHECK=1) born() verifies that the result overlaps no other live value and dead()
 * poisons the dead bytes (outside the result) with NaN, after the copy streams' work so far;
 * dead() with bytes -1 (an op inside a fused group, before its last: the group's kernel has
 * written the later members' results, maybe into those bytes) poisons nothing. */
int mtc_cu_born(mtc_cu *, int64_t off, int64_t bytes, const int64_t *dying, int ndying);
int mtc_cu_dead(mtc_cu *, int64_t off, int64_t bytes, const int64_t *dying, int ndying);
/* A step's output (copy_out): bytes at device offset dev into the caller's output k from byte
 * start, on the compute stream, when step_out was given outputs; nothing otherwise. */
int mtc_cu_copy_out(mtc_cu *, int k, int64_t start, int64_t dev, int64_t bytes);

#ifdef __cplusplus
}
#endif
#endif
