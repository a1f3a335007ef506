/* comm.c: the collectives of data-parallel modules over MPI (<mtc/mtc-comm.h>).
 *
 * Built only where configure found MPI; a module pulls this object (and so libmpi) only when
 * it was compiled with --data-parallel. Requests are progressed only inside MPI calls (Open
 * MPI has no progress thread by default): the generated code calls mtc_comm_progress between
 * kernels, which is what makes a bucket's all-reduce overlap the rest of the backward.
 *
 * Each slot's collective is a persistent request where MPI has them (MPI 4, or Open MPI's
 * MPIX_*_init): made at its first start, started again each step while its kind, buffer and
 * count stay the same. A collective made anew each step had Open MPI allocate and fault in its
 * scratch buffers each time: ResNet's gradients in 16 buckets on 2 ranks took 55 ms a step
 * against 21 ms persistent (docs/dataparallel.md).
 *
 * Waits poll MPI_Test with a deadline (MTC_COMM_TIMEOUT seconds, default 600; 0: none) and
 * yield the processor between polls: ranks often share cores. A deadline missed, or an MPI
 * error, breaks the instance: its step fails with MTC_ECOMM, and every later collective fails
 * at once (a collective cannot be cancelled, so the instance cannot rejoin its peers).
 *
 * A test aid (docs/dataparallel.md): MTC_COMM_FAULT=RANK:STEP:exit|stall makes rank RANK, at
 * the first collective of its step STEP (counted from 1), exit the process with status 3, or
 * stop answering (sleep) until the others' deadline has long passed. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#include "rt-impl.h"
#include "mtc/mtc-comm.h"

#if MPI_VERSION >= 4
#define PCOLL 1
#define ALLREDUCE_INIT MPI_Allreduce_init
#define REDUCE_SCATTER_INIT MPI_Reduce_scatter_block_init
#define ALLGATHER_INIT MPI_Allgather_init
#elif defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PCOLL 1
#define ALLREDUCE_INIT MPIX_Allreduce_init
#define REDUCE_SCATTER_INIT MPIX_Reduce_scatter_block_init
#define ALLGATHER_INIT MPIX_Allgather_init
#endif
#endif

/* A slot's collective: its request (persistent: kept between steps, for the same kind,
 * buffer and count) and whether it is in flight. */
typedef struct Slot {
	MPI_Request req;
	int active, persistent, kind;
	float *buf;
	int64_t count;
	double t0;                  /* when it started */
} Slot;

struct mtc_comm {
	MPI_Comm comm;
	int rank, size, nslots;
	Slot *slot;
	int inflight;               /* slots in flight */
	int64_t bytes;              /* statistics: bytes reduced, seconds in flight, waited */
	double flight_s, wait_s;
	double timeout;             /* seconds; 0: none */
	long steps;                 /* finished steps */
	int fault_rank;             /* MTC_COMM_FAULT; -1: none */
	long fault_step;
	int fault_kind;             /* 0 exit, 1 stall */
	int broken;
	char err[512];
};

/* MPI initialized by a module (then finalized at exit, unless an instance broke: finalize
 * would wait for peers that are gone). */
static int we_initialized, any_broken;

static void
finalize_at_exit(void)
{
	int fin = 0;
	MPI_Finalized(&fin);
	if (!fin && !any_broken)
		MPI_Finalize();
}

static void
broke(mtc_comm *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->broken)
		return;
	c->broken = any_broken = 1;
	n = snprintf(c->err, sizeof c->err, "rank %d of %d: ", c->rank, c->size);
	va_start(ap, fmt);
	vsnprintf(c->err + n, sizeof c->err - (size_t)n, fmt, ap);
	va_end(ap);
}

static void
mpi_failed(mtc_comm *c, const char *what, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, s, &len);
	broke(c, "%s failed: %.*s", what, len, s);
}

mtc_comm *
mtc_comm_open(const void *mpi_comm, int nslots)
{
	int init = 0, fin = 0, provided;
	const char *s;
	mtc_comm *c;
	MPI_Comm base = mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD;

	MPI_Finalized(&fin);
	if (fin) {
		mtc_set_last_error(MTC_ECOMM, "MPI was finalized already: a data-parallel module needs it");
		return NULL;
	}
	MPI_Initialized(&init);
	if (!init) {
		if (mpi_comm) {
			mtc_set_last_error(MTC_EINVAL, "a communicator was given but MPI is not initialized");
			return NULL;
		}
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
			mtc_set_last_error(MTC_ECOMM, "MPI_Init_thread failed");
			return NULL;
		}
		if (!we_initialized)
			atexit(finalize_at_exit);
		we_initialized = 1;
	}
	if (!(c = RT_ALLOC(calloc(1, sizeof *c))) ||
	    !(c->slot = RT_ALLOC(calloc((size_t)(nslots > 0 ? nslots : 1), sizeof *c->slot)))) {
		free(c);
		mtc_set_last_error(MTC_ENOMEM, "out of host memory");
		return NULL;
	}
	if (MPI_Comm_dup(base, &c->comm) != MPI_SUCCESS) {
		free(c->slot);
		free(c);
		mtc_set_last_error(MTC_ECOMM, "MPI_Comm_dup failed");
		return NULL;
	}
	MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(c->comm, &c->rank);
	MPI_Comm_size(c->comm, &c->size);
	c->nslots = nslots;
	for (int k = 0; k < nslots; k++)
		c->slot[k].req = MPI_REQUEST_NULL;
	c->timeout = 600;
	if ((s = getenv("MTC_COMM_TIMEOUT")) && *s) {
		char *e;
		double t = strtod(s, &e);
		if (*e || !(t >= 0)) {
			MPI_Comm_free(&c->comm);
			free(c->slot);
			free(c);
			mtc_set_last_error(MTC_EINVAL, "MTC_COMM_TIMEOUT='%s' is not a number of seconds", s);
			return NULL;
		}
		c->timeout = t;
	}
	c->fault_rank = -1;
	if ((s = getenv("MTC_COMM_FAULT")) && *s) {
		int r;
		long st;
		char kind[16];
		if (sscanf(s, "%d:%ld:%15s", &r, &st, kind) == 3 && (!strcmp(kind, "exit") || !strcmp(kind, "stall"))) {
			c->fault_rank = r;
			c->fault_step = st;
			c->fault_kind = strcmp(kind, "exit") != 0;
		}
	}
	return c;
}

void
mtc_comm_close(mtc_comm *c)
{
	if (!c)
		return;
	/* a broken instance may have requests its peers never matched: leave them (and the
	 * communicator) to the process's end */
	if (!c->broken) {
		for (int k = 0; k < c->nslots; k++)
			if (c->slot[k].persistent)
				MPI_Request_free(&c->slot[k].req);
		MPI_Comm_free(&c->comm);
	}
	free(c->slot);
	free(c);
}

int mtc_comm_rank(const mtc_comm *c) { return c->rank; }
int mtc_comm_size(const mtc_comm *c) { return c->size; }
const char *mtc_comm_error(const mtc_comm *c) { return c->err; }

void
mtc_comm_stats(const mtc_comm *c, struct mtc_stats *s)
{
	s->rank = c->rank;
	s->nranks = c->size;
	s->comm_bytes = c->bytes;
	s->comm_s = c->flight_s;
	s->comm_wait_s = c->wait_s;
}

static void
fault(mtc_comm *c)
{
	if (c->rank != c->fault_rank || c->steps + 1 != c->fault_step)
		return;
	fprintf(stderr, "mtc: MTC_COMM_FAULT: rank %d %s in step %ld\n", c->rank,
	        c->fault_kind ? "stalls" : "exits", c->fault_step);
	if (!c->fault_kind)
		_exit(3);
	for (;;)
		sleep(3600);
}

/* Slot k's collective, started: its persistent request again if it has the same kind, buffer
 * and count, else made (persistent where MPI can). */
static int
start(mtc_comm *c, Slot *sl, int kind, float *buf, int64_t count)
{
	int n = (int)count;

	if (sl->persistent && (sl->kind != kind || sl->buf != buf || sl->count != count)) {
		MPI_Request_free(&sl->req);
		sl->persistent = 0;
	}
#ifdef PCOLL
	if (!sl->persistent) {
		int rc;
		switch (kind) {
		case MTC_ALLREDUCE:
			rc = ALLREDUCE_INIT(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c->comm, MPI_INFO_NULL, &sl->req);
			break;
		case MTC_REDUCE_SCATTER:
			rc = REDUCE_SCATTER_INIT(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c->comm, MPI_INFO_NULL,
			                         &sl->req);
			break;
		default:
			rc = ALLGATHER_INIT(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, MPI_FLOAT, c->comm,
			                    MPI_INFO_NULL, &sl->req);
		}
		if (rc != MPI_SUCCESS)
			return rc;
		sl->persistent = 1;
		sl->kind = kind;
		sl->buf = buf;
		sl->count = count;
	}
	return MPI_Start(&sl->req);
#else
	switch (kind) {
	case MTC_ALLREDUCE:
		return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c->comm, &sl->req);
	case MTC_REDUCE_SCATTER:
		return MPI_Ireduce_scatter_block(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c->comm, &sl->req);
	default:
		return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, n, MPI_FLOAT, c->comm, &sl->req);
	}
#endif
}

void
mtc_comm_start(mtc_comm *c, int k, int kind, float *buf, int64_t count)
{
	int rc;

	if (c->broken)
		return;
	if (c->fault_rank >= 0)
		fault(c);
	if (k < 0 || k >= c->nslots || c->slot[k].active || count < 0 || count > 0x7fffffff) {
		broke(c, "collective on slot %d of %d (%lld floats): the module is wrong", k, c->nslots,
		      (long long)count);
		return;
	}
	/* in place; a reduce-scatter leaves this rank's block in the first count floats of buf */
	if (kind != MTC_ALLREDUCE && kind != MTC_REDUCE_SCATTER && kind != MTC_ALLGATHER) {
		broke(c, "collective kind %d: the module is wrong", kind);
		return;
	}
	if ((rc = start(c, &c->slot[k], kind, buf, count)) != MPI_SUCCESS) {
		mpi_failed(c, "starting a collective", rc);
		return;
	}
	c->slot[k].active = 1;
	c->inflight++;
	c->slot[k].t0 = mtc_now();
	c->bytes += 4 * count * (kind == MTC_ALLREDUCE ? 1 : c->size);
}

void
mtc_comm_progress(mtc_comm *c)
{
	if (!c->inflight || c->broken)
		return;
	for (int k = 0; k < c->nslots; k++)
		if (c->slot[k].active) {
			int done = 0, rc = MPI_Test(&c->slot[k].req, &done, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) {
				mpi_failed(c, "MPI_Test", rc);
				return;
			}
			if (done) {
				c->slot[k].active = 0;
				c->inflight--;
				c->flight_s += mtc_now() - c->slot[k].t0;
			}
		}
}

/* Poll *r to completion within the deadline; 0, or -1 with the instance broken. Open MPI's
 * non-blocking collectives advance only inside MPI calls, a round of the algorithm per call:
 * a large all-reduce needs hundreds, so the wait polls without sleeping (yielding the core to
 * a rank that shares it) for its first second, and only then every 50 us. */
static int
poll_req(mtc_comm *c, MPI_Request *r, const char *what)
{
	double t0 = 0, t;

	for (long spins = 0;; spins++) {
		int done = 0, rc = MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			mpi_failed(c, what, rc);
			return -1;
		}
		if (done)
			return 0;
		/* the clock only after a while: most waits end within a few polls */
		if (spins < 64) {
			if (spins == 63)
				t0 = mtc_now();
			continue;
		}
		if ((spins & 63) == 0) {
			t = mtc_now() - t0;
			if (c->timeout > 0 && t > c->timeout) {
				broke(c, "%s did not complete within %g s (MTC_COMM_TIMEOUT): another rank failed "
				      "or stalls", what, c->timeout);
				return -1;
			}
			if (t > 1)
				usleep(50);
		}
		sched_yield();
	}
}

void
mtc_comm_wait(mtc_comm *c, int k, float *buf, int64_t n, float scale)
{
	if (c->broken)
		return;
	if (k < 0 || k >= c->nslots) {
		broke(c, "wait on slot %d of %d: the module is wrong", k, c->nslots);
		return;
	}
	if (c->slot[k].active) {
		double t = mtc_now();
		if (poll_req(c, &c->slot[k].req, "a collective"))
			return;
		c->slot[k].active = 0;
		c->inflight--;
		c->wait_s += mtc_now() - t;
		c->flight_s += mtc_now() - c->slot[k].t0;
	}
	if (scale != 1.0f)
		for (int64_t i = 0; i < n; i++)
			buf[i] *= scale;
}

int
mtc_comm_allgather_bytes(mtc_comm *c, void *buf, int64_t bytes)
{
	MPI_Request r;
	int rc;

	if (c->broken)
		return MTC_ECOMM;
	if (bytes > 0x7fffffff) {
		broke(c, "gathering %lld bytes per rank: more than MPI's int count", (long long)bytes);
		return MTC_ECOMM;
	}
	rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)bytes, MPI_BYTE, c->comm, &r);
	if (rc != MPI_SUCCESS) {
		mpi_failed(c, "MPI_Iallgather", rc);
		return MTC_ECOMM;
	}
	return poll_req(c, &r, "gathering the outputs") ? MTC_ECOMM : 0;
}

int
mtc_comm_finish(mtc_comm *c, int status, float *loss, char *err, size_t nerr)
{
	/* summed over the ranks: {ranks that failed, their ranks (which one, when one failed),
	 * the losses} */
	double v[3] = { status != 0, status != 0 ? (double)c->rank : 0, loss ? *loss : 0 };
	MPI_Request r;
	int rc;

	if (c->broken) {
		snprintf(err, nerr, "%s", c->err);
		return status ? status : MTC_ECOMM;
	}
	rc = MPI_Iallreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_SUM, c->comm, &r);
	if (rc != MPI_SUCCESS)
		mpi_failed(c, "MPI_Iallreduce of the step's status", rc);
	else
		poll_req(c, &r, "the step's status");
	c->steps++;
	if (c->broken) {
		snprintf(err, nerr, "%s", c->err);
		return status ? status : MTC_ECOMM;
	}
	if (loss)
		*loss = (float)(v[2] / c->size);
	if (status)
		return status;
	if (v[0] > 0) {
		if (v[0] == 1)
			snprintf(err, nerr, "rank %d of %d: the step failed on rank %d", c->rank, c->size, (int)v[1]);
		else
			snprintf(err, nerr, "rank %d of %d: the step failed on %d ranks", c->rank, c->size, (int)v[0]);
		return MTC_ECOMM;
	}
	return 0;
}

static int64_t
shard_of(int64_t numel, int64_t ranks)
{
	return (numel + ranks - 1) / ranks;
}

void
mtc_comm_pack_shards(float *dst, const float *src, int64_t numel, int64_t ranks, int64_t per, int64_t at)
{
	int64_t s = shard_of(numel, ranks);

	for (int64_t q = 0; q < ranks; q++) {
		int64_t n = numel - q * s < s ? (numel - q * s > 0 ? numel - q * s : 0) : s;
		if (n)
			memcpy(dst + q * per + at, src + q * s, (size_t)n * 4);
		memset(dst + q * per + at + n, 0, (size_t)(s - n) * 4);
	}
}

void
mtc_comm_shard(float *dst, const float *src, int64_t numel, int64_t ranks, int rank)
{
	int64_t s = shard_of(numel, ranks), lo = rank * s;
	int64_t n = numel - lo < s ? (numel - lo > 0 ? numel - lo : 0) : s;

	if (n)
		memcpy(dst, src + lo, (size_t)n * 4);
	memset(dst + n, 0, (size_t)(s - n) * 4);
}

void
mtc_comm_unshard(float *w, const float *bucket, int64_t numel, int64_t ranks, int64_t per, int64_t at)
{
	int64_t s = shard_of(numel, ranks);

	for (int64_t q = 0; q < ranks; q++) {
		int64_t n = numel - q * s < s ? (numel - q * s > 0 ? numel - q * s : 0) : s;
		if (n)
			memcpy(w + q * s, bucket + q * per + at, (size_t)n * 4);
	}
}
