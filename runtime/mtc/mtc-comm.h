/* mtc-comm.h: the collectives of data-parallel modules (mtc --data-parallel), over MPI.
 *
 * Installed as <mtc/mtc-comm.h> because generated code includes it. A module's step starts a
 * non-blocking collective per bucket of gradients as soon as the bucket is packed (start),
 * lets MPI progress it between kernels (progress: MPI_Test on what is in flight), and waits
 * for it only where an update needs its result (wait). Every wait is bounded by
 * MTC_COMM_TIMEOUT seconds (default 600, 0: none): a rank that failed or stalls makes the
 * others' step fail with MTC_ECOMM instead of hanging. At the end of each step every rank
 * learns whether any rank failed (finish), so an error on one rank is an error on all. */
#ifndef MTC_MTC_COMM_H
#define MTC_MTC_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "mtc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtc_comm mtc_comm;

/* The collectives a slot runs (a bucket of the plan, at most one collective in flight each). */
enum mtc_coll {
	MTC_ALLREDUCE = 0,        /* buf[count] summed over the ranks, in place */
	MTC_REDUCE_SCATTER = 1,   /* buf[size * count] summed; this rank keeps block `rank` at buf */
	MTC_ALLGATHER = 2,        /* buf[size * count]: block `rank` given, every block received */
};

/* Open a communicator for one module instance: *mpi_comm (an MPI_Comm, the caller's), or
 * MPI_COMM_WORLD when NULL, duplicated so the module's messages never match the caller's.
 * MPI is initialized here if nobody did (and finalized when the process exits); nslots is
 * the number of slots the module's plan uses. NULL on failure with mtc_rt_last_error(). */
mtc_comm *mtc_comm_open(const void *mpi_comm, int nslots);
void mtc_comm_close(mtc_comm *);
int mtc_comm_rank(const mtc_comm *);
int mtc_comm_size(const mtc_comm *);

/* Host memory that every rank on the node maps (collective: every rank calls it once, with
 * the same bytes): where all ranks are on one node, a POSIX shared-memory object each, and the
 * collectives whose buffers lie in it run through it, without MPI (runtime/comm.c). NULL
 * where they are not, where MTC_COMM_SHM=0, or where the memory cannot be had: then MPI runs
 * every collective. Unmapped by mtc_comm_close. */
void *mtc_comm_host_alloc(mtc_comm *, int64_t bytes);
/* A module instance's host arena (its DDR, where its buckets lie) moved into
 * mtc_comm_host_alloc's memory, its contents kept (collective; d NULL where this rank's
 * instance could not be made: then no rank shares); nothing where that memory is NULL.
 * 0, or MTC_ECOMM with the error set where MTC_COMM_SHM=1 asked for shared memory and
 * there is none. The device must be closed before the communicator. */
struct mtc_dev;
int mtc_comm_share_ddr(mtc_comm *, struct mtc_dev *);

/* Start collective `kind` on slot k over host buffer buf (count floats per the kind above);
 * the sum is multiplied by scale (1: as summed; an all-gather ignores it). */
void mtc_comm_start(mtc_comm *, int k, int kind, float *buf, int64_t count, float scale);
/* Let MPI progress every collective in flight (one MPI_Test each); cheap when none is. */
void mtc_comm_progress(mtc_comm *);
/* Wait for slot k's collective: its buffer holds the result. */
void mtc_comm_wait(mtc_comm *, int k);
/* Blocking, for what is not a step's bucket (forward outputs): every rank's `bytes` at
 * buf + rank * bytes, gathered into buf. 0, or an enum mtc_status with the error set. */
int mtc_comm_allgather_bytes(mtc_comm *, void *buf, int64_t bytes);
/* The end of a step: every rank learns whether any rank failed, and *loss becomes the mean of
 * the ranks' losses. status: this rank's (0 or an enum mtc_status). Returns this rank's
 * status, MTC_ECOMM when only another rank failed or a collective timed out (err says which),
 * or 0. */
int mtc_comm_finish(mtc_comm *, int status, float *loss, char *err, size_t nerr);
/* The first communication error of this instance (empty: none). After one, every later
 * collective fails at once: the instance cannot take part in its peers' steps any more. */
const char *mtc_comm_error(const mtc_comm *);
/* rank, nranks and the comm_* figures of struct mtc_stats. */
void mtc_comm_stats(const mtc_comm *, struct mtc_stats *);

/* ZeRO's data movement, as the generated code calls it (docs/ir.md: shards=1, reduce_scatter,
 * shard, allgather, unshard). A tensor of numel elements has ranks shards of
 * s = ceil(numel / ranks); rank q's is elements [q s, (q + 1) s), zeros past numel.
 * pack_shards: src's shard q into dst's block q (blocks of per floats), at element `at`.
 * shard: this rank's shard of src into dst. unshard: every rank's shard, from block q of the
 * gathered bucket at `at`, back into w. */
void mtc_comm_pack_shards(float *dst, const float *src, int64_t numel, int64_t ranks, int64_t per,
                          int64_t at);
void mtc_comm_shard(float *dst, const float *src, int64_t numel, int64_t ranks, int rank);
void mtc_comm_unshard(float *w, const float *bucket, int64_t numel, int64_t ranks, int64_t per,
                      int64_t at);

/* A data-parallel module (runtime/dp.c): variants of one model's step, each compiled for a
 * number of ranks (its inputs and outputs that hold the batch are the rank's slice of it),
 * and the description of the whole model. The module's mtc_module() is mtc_dp_module(): the
 * whole model's tables, with entry points that open the communicator, pick the variant for
 * its size, hand each rank its slice of the batch and gather the forward's outputs. */
struct mtc_dp_variant {
	int ranks;
	int nslots;                            /* the collectives' slots its step uses */
	const struct mtc_module *m;            /* its tables (the slice's shapes), entry points */
	void *(*create)(mtc_comm *);           /* an instance on the communicator (still the caller's) */
};
struct mtc_dp_desc {
	const struct mtc_module *whole;        /* the whole batch's tables; entry points unused */
	int64_t batch;                         /* the leading dim of the first input */
	const struct mtc_dp_variant *var;
	int nvar;
};
const struct mtc_module *mtc_dp_module(const struct mtc_dp_desc *);

#ifdef __cplusplus
}
#endif
#endif
