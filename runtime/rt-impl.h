/* rt-impl.h: the runtime's internals: the emulated device, its DMA engine and thread pool. */
#ifndef MTC_RT_IMPL_H
#define MTC_RT_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "mtc/mtc-rt.h"

/* An allocation that fails on demand (mtc_fail_alloc, MTC_FAIL_ALLOC=N); e runs only if not. */
#define RT_ALLOC(e) (mtc_fail_alloc() ? NULL : (e))

/* One queued copy, or a call (fn non-NULL: an update on the host, fn(args, 0, 1), once the
 * DMA channel `after` is done). */
typedef struct mtc_copy {
	void *dst;
	const void *src;
	int64_t bytes;
	mtc_kernel fn;
	uint64_t args[MTC_CALL_ARGS];
	int64_t after;
} mtc_copy;

/* The DMA engine: one thread draining a FIFO ring; channels are sequence numbers, so waiting
 * on a channel waits for every copy queued before it too. One copy runs at a time (busy), in
 * queue order, on the engine or on a host thread waiting for it. */
typedef struct mtc_dma_engine {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t more, done;
	mtc_copy *q;
	int cap;
	int64_t queued, completed;    /* channels issued; channels finished */
	int stop, started, busy;
	struct mtc_dma_engine *dep;   /* the host's thread: the DMA engine its calls wait for */
} mtc_dma_engine;

/* The accelerator threads: workers 1..n-1 plus the calling host thread. A launch splits the
 * kernel into n parts (the kernel's tid, nt) that any of them may claim: the ticket holds the
 * launch's generation (high 32 bits) and the next unclaimed part, so a worker that wakes late
 * claims nothing of a launch already finished and the caller never waits for a descheduled
 * worker that has no part. Workers spin briefly, then sleep on the condition variable. */
typedef struct mtc_pool {
	int n;
	pthread_t *thr;
	pthread_mutex_t mu;
	pthread_cond_t go, idle;
	atomic_uint gen;
	atomic_ullong ticket;         /* generation << 32 | next part */
	atomic_int done;              /* parts of the current launch finished */
	mtc_kernel fn;
	const uint64_t *args;
	atomic_int stop;              /* set under mu; read by a worker that found work unlocked */
} mtc_pool;

/* A live tensor, for check mode. */
typedef struct mtc_live {
	int id;
	int64_t off, bytes;
} mtc_live;

struct mtc_dev {
	struct mtc_dev_desc desc;
	char *mem;                    /* persistent zone + arena */
	int64_t size, cap;
	char *ddr;
	int ddr_shared;               /* ddr is a data-parallel communicator's (mtc_comm_share_ddr) */
	int check;
	int64_t live, peak, steps;
	mtc_live *lv;                 /* check mode: the live set */
	int nlv, caplv;
	int flag;                     /* kernels' data errors (enum mtc_status) */
	struct {                      /* the first id out of range (mtc_range_error) */
		int op;
		const char *kind, *in;
		int64_t elem, bound;
		int32_t val;
	} range;
	int status;                   /* first error of this call */
	char err[512];
	mtc_dma_engine dma;
	mtc_dma_engine host;          /* the host's thread: updates on the host, in order */
	mtc_pool pool;
};

/* dma.c */
int mtc_dma_start(mtc_dma_engine *);
void mtc_dma_stop(mtc_dma_engine *);
void mtc_dma_drain(mtc_dev *);
void mtc_host_drain(mtc_dev *);
/* kernels.c */
extern int mtc_blas_off;
void mtc_blas_init(void);
/* pool.c */
int mtc_pool_start(mtc_pool *, int n);
void mtc_pool_stop(mtc_pool *);
/* mtc_run on a pool of one's own (the CUDA runtime's threads for updates on the host). */
void mtc_pool_run(mtc_pool *, mtc_kernel, const uint64_t *args, int64_t work);
/* The thread count MTC_THREADS asks for, else the online cores (1 to 1024). */
int mtc_thread_count(void);
/* Seconds on the monotonic clock. */
double mtc_now(void);

#endif
