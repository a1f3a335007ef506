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
 * Ranks on one node (MPI_COMM_TYPE_SHARED is the whole communicator) share their host arenas
 * (mtc_comm_host_alloc: each rank's arena a POSIX shared-memory object every rank maps), and a
 * collective whose buffer lies in the arena runs without MPI: each rank sums its chunk of
 * every rank's buffer in rank order and writes the sum into every rank's buffer (an
 * all-reduce reads and writes each byte once more than a copy; Open MPI's shared-memory
 * transport copied each buffer through its fragments and scratch four times and more: ResNet's
 * 11 MB all-reduce in flight 2.7 ms, docs/dataparallel.md). Per slot and rank two epochs in
 * shared memory order it: `ready` (the rank started: its buffer holds its data) and `done`
 * (the rank wrote all it writes into the others' buffers and read all it reads from them),
 * so a buffer is touched by its peers only between its rank's start and the end of its wait.
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
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

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

/* A slot's collective (the last started) and whether it is in flight; its MPI request
 * (persistent: kept between steps for the kind, buffer and count it was made for). */
typedef struct Slot {
	int active, kind;
	float *buf;
	int64_t count;
	float scale;                /* the result multiplied by it */
	double t0;                  /* when it started */
	int shm, stage;             /* through shared memory; its stage (0: summing) */
	int64_t epoch;              /* the slot's starts through shared memory */
	MPI_Request req;
	int persistent, pkind;
	float *pbuf;
	int64_t pcount;
} Slot;

/* The ranks' shared host arenas (mtc_comm_host_alloc). Each rank's object: its control lines
 * (per slot, `ready` and `done` epochs, a cache line each), then its arena. */
typedef struct Shm {
	char **map;                 /* per rank: its object, mapped in this process */
	char **arena;               /* per rank: its arena */
	size_t mapbytes, ctl;
	int64_t bytes;              /* each arena's bytes */
	float *tmp;                 /* a block of sums */
} Shm;

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
	Shm *shm;                   /* NULL: every collective through MPI */
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

enum { SHM_BLOCK = 4096 };     /* floats summed at a time (they stay in the cache) */

static void
shm_free(Shm *h, int size)
{
	if (!h)
		return;
	for (int q = 0; q < size; q++)
		if (h->map && h->map[q])
			munmap(h->map[q], h->mapbytes);
	free(h->map);
	free(h->arena);
	free(h->tmp);
	free(h);
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
	shm_free(c->shm, c->size);
	free(c->slot);
	free(c);
}

/* Did every rank get ok? (collective) */
static int
all_ok(mtc_comm *c, int ok)
{
	return MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm) == MPI_SUCCESS && ok;
}

/* Every rank's `bytes` of host memory in one POSIX shared-memory object each, all mapped by
 * every rank: collective, and all or none (each step agreed on by the ranks). Each rank
 * makes its object, the ranks learn each other's names, map them, and unlink their own once
 * all have mapped it: nothing outlives the processes, and unmapping at close needs no peer. */
void *
mtc_comm_host_alloc(mtc_comm *c, int64_t bytes)
{
	const char *s = getenv("MTC_COMM_SHM");
	char name[64], *names = NULL;
	int ok = 1, fd = -1, nsize = 0, named = 0;
	int64_t lo = bytes, hi = bytes;
	MPI_Comm node;
	Shm *h = NULL;

	if (c->broken || c->shm || c->size < 2)
		return NULL;
	/* all on one node, the same bytes everywhere, and not turned off */
	if (s && !strcmp(s, "0"))
		ok = 0;
	if (MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_size(node, &nsize);
		MPI_Comm_free(&node);
	}
	MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT64_T, MPI_MIN, c->comm);
	MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT64_T, MPI_MAX, c->comm);
	if (!all_ok(c, ok && nsize == c->size && lo == hi && bytes > 0))
		return NULL;
	ok = (h = RT_ALLOC(calloc(1, sizeof *h))) && (h->map = RT_ALLOC(calloc((size_t)c->size, sizeof *h->map))) &&
	     (h->arena = RT_ALLOC(calloc((size_t)c->size, sizeof *h->arena))) &&
	     (h->tmp = RT_ALLOC(aligned_alloc(64, SHM_BLOCK * sizeof(float)))) &&
	     (names = RT_ALLOC(calloc((size_t)c->size, sizeof name)));
	if (ok) {
		h->ctl = ((size_t)c->nslots * 2 * 64 + 4095) & ~(size_t)4095;
		h->mapbytes = h->ctl + (((size_t)bytes + 4095) & ~(size_t)4095);
		h->bytes = bytes;
		snprintf(name, sizeof name, "/mtc-comm-%ld-%d-%p", (long)getpid(), c->rank, (void *)h);
		/* posix_fallocate: where /dev/shm is too small, an error now, not SIGBUS later */
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		named = fd >= 0;
		ok = fd >= 0 && ftruncate(fd, (off_t)h->mapbytes) == 0 && posix_fallocate(fd, 0, (off_t)h->mapbytes) == 0;
		if (ok && (h->map[c->rank] = mmap(NULL, h->mapbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
			h->map[c->rank] = NULL;
			ok = 0;
		}
		if (fd >= 0)
			close(fd);
	}
	if (!all_ok(c, ok))
		goto fail;
	memcpy(names + (size_t)c->rank * sizeof name, name, sizeof name);
	ok = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, names, (int)sizeof name, MPI_CHAR, c->comm) == MPI_SUCCESS;
	for (int q = 0; ok && q < c->size; q++) {
		if (q == c->rank)
			continue;
		fd = shm_open(names + (size_t)q * sizeof name, O_RDWR, 0);
		if (fd < 0) {
			ok = 0;
			break;
		}
		if ((h->map[q] = mmap(NULL, h->mapbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
			h->map[q] = NULL;
			ok = 0;
		}
		close(fd);
	}
	/* every rank has mapped every object it will (or failed): the names can go */
	ok = all_ok(c, ok);
	shm_unlink(name);
	named = 0;
	if (!ok)
		goto fail;
	for (int q = 0; q < c->size; q++)
		h->arena[q] = h->map[q] + h->ctl;
	free(names);
	c->shm = h;
	return h->arena[c->rank];
fail:
	if (named)
		shm_unlink(name);
	free(names);
	shm_free(h, c->size);
	return NULL;
}

int
mtc_comm_share_ddr(mtc_comm *c, mtc_dev *d)
{
	int64_t bytes = d ? (d->desc.ddr_bytes + 64) & ~(int64_t)63 : 0;
	const char *s = getenv("MTC_COMM_SHM");
	char *a = mtc_comm_host_alloc(c, bytes);

	if (!a) {
		if (!s || strcmp(s, "1") || c->size < 2)
			return 0;
		mtc_set_last_error(MTC_ECOMM, "MTC_COMM_SHM=1: the ranks cannot share host memory (they are not "
		                   "all on one node, or the memory cannot be had)");
		return MTC_ECOMM;
	}
	if (!d)
		return 0;
	memcpy(a, d->ddr, (size_t)bytes);
	free(d->ddr);
	d->ddr = a;
	d->ddr_shared = 1;
	return 0;
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

/* A rank's epoch line: which 0 `ready`, 1 `done`. */
static int64_t *
line(const Shm *h, int q, int k, int which)
{
	return (int64_t *)(void *)(h->map[q] + ((size_t)k * 2 + (size_t)which) * 64);
}

/* Slot k's collective (kind, buf and count set) through shared memory, where its buffer lies
 * in this rank's arena: 0 if not. */
static int
shm_start(mtc_comm *c, Slot *sl, int k)
{
	Shm *h = c->shm;
	uintptr_t a, b = (uintptr_t)sl->buf;
	int64_t n = sl->kind == MTC_ALLREDUCE ? sl->count : sl->count * c->size;

	if (!h)
		return 0;
	a = (uintptr_t)h->arena[c->rank];
	if (b < a || b - a > (uintptr_t)h->bytes || (uintptr_t)(n * 4) > (uintptr_t)h->bytes - (b - a))
		return 0;
	sl->shm = 1;
	sl->stage = 0;
	__atomic_store_n(line(h, c->rank, k, 0), ++sl->epoch, __ATOMIC_RELEASE);
	return 1;
}

static void
add_into(float *restrict t, const float *restrict x, int64_t m)
{
	for (int64_t i = 0; i < m; i++)
		t[i] += x[i];
}

static void
scale_by(float *t, int64_t m, float scale)
{
	for (int64_t i = 0; i < m; i++)
		t[i] *= scale;
}

/* Advance slot k's collective through shared memory; 1 once it is complete. Stage 0, once every
 * rank has started: an all-reduce sums this rank's chunk of every buffer (rank order) and
 * writes it into every buffer; a reduce-scatter sums block `rank` into this rank's buffer; an
 * all-gather writes block `rank` into every buffer. Stage 1, once every rank is done with
 * stage 0: a reduce-scatter moves its block to the front; complete. */
static int
shm_step(mtc_comm *c, Slot *sl, int k)
{
	Shm *h = c->shm;
	int r = c->rank, n = c->size, kind = sl->kind;
	int64_t e = sl->epoch, count = sl->count, off = (char *)sl->buf - h->arena[r], lo, hi;
#define P(q) ((float *)(void *)(h->arena[q] + off))

	if (sl->stage == 0) {
		for (int q = 0; q < n; q++)
			if (__atomic_load_n(line(h, q, k, 0), __ATOMIC_ACQUIRE) < e)
				return 0;
		if (kind == MTC_ALLREDUCE) {
			int64_t per = ((count + n - 1) / n + 15) & ~(int64_t)15;
			lo = r * per < count ? r * per : count;
			hi = lo + per < count ? lo + per : count;
		} else {
			lo = r * count;
			hi = lo + count;
		}
		if (kind == MTC_ALLGATHER) {
			for (int q = 0; q < n; q++)
				if (q != r)
					memcpy(P(q) + lo, P(r) + lo, (size_t)(hi - lo) * 4);
		} else {
			for (int64_t b = lo; b < hi; b += SHM_BLOCK) {
				int64_t m = hi - b < SHM_BLOCK ? hi - b : SHM_BLOCK;
				memcpy(h->tmp, P(0) + b, (size_t)m * 4);
				for (int q = 1; q < n; q++)
					add_into(h->tmp, P(q) + b, m);
				if (sl->scale != 1.0f)
					scale_by(h->tmp, m, sl->scale);
				for (int q = 0; q < n; q++)
					if (kind == MTC_ALLREDUCE || q == r)
						memcpy(P(q) + b, h->tmp, (size_t)m * 4);
			}
		}
		__atomic_store_n(line(h, r, k, 1), e, __ATOMIC_RELEASE);
		sl->stage = 1;
	}
	for (int q = 0; q < n; q++)
		if (__atomic_load_n(line(h, q, k, 1), __ATOMIC_ACQUIRE) < e)
			return 0;
	if (kind == MTC_REDUCE_SCATTER && r)
		memcpy(P(r), P(r) + r * count, (size_t)count * 4);
	return 1;
#undef P
}

/* Slot k's collective, started: its persistent request again if it has the same kind, buffer
 * and count, else made (persistent where MPI can). */
static int
start(mtc_comm *c, Slot *sl, int kind, float *buf, int64_t count)
{
	int n = (int)count;

	if (sl->persistent && (sl->pkind != kind || sl->pbuf != buf || sl->pcount != count)) {
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
		sl->pkind = kind;
		sl->pbuf = buf;
		sl->pcount = count;
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
mtc_comm_start(mtc_comm *c, int k, int kind, float *buf, int64_t count, float scale)
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
	c->slot[k].kind = kind;
	c->slot[k].buf = buf;
	c->slot[k].count = count;
	c->slot[k].scale = kind == MTC_ALLGATHER ? 1.0f : scale;
	c->slot[k].shm = 0;
	if (!shm_start(c, &c->slot[k], k) &&
	    (rc = start(c, &c->slot[k], kind, buf, count)) != MPI_SUCCESS) {
		mpi_failed(c, "starting a collective", rc);
		return;
	}
	c->slot[k].active = 1;
	c->inflight++;
	c->slot[k].t0 = mtc_now();
	c->bytes += 4 * count * (kind == MTC_ALLREDUCE ? 1 : c->size);
}

/* Slot k's collective is complete: through MPI, its sum scaled now (shared memory scaled it
 * as it summed). */
static void
completed(mtc_comm *c, int k)
{
	Slot *sl = &c->slot[k];

	sl->active = 0;
	c->inflight--;
	c->flight_s += mtc_now() - sl->t0;
	if (!sl->shm && sl->scale != 1.0f)
		scale_by(sl->buf, sl->count, sl->scale);
}

/* Advance slot k's collective in flight: *done once complete; MPI's return code. */
static int
test_slot(mtc_comm *c, int k, int *done)
{
	if (c->slot[k].shm) {
		*done = shm_step(c, &c->slot[k], k);
		return MPI_SUCCESS;
	}
	return MPI_Test(&c->slot[k].req, done, MPI_STATUS_IGNORE);
}

/* Test every collective in flight but slot `but` (-1: none): 0, or -1 on an MPI error. */
static int
progress(mtc_comm *c, int but)
{
	for (int k = 0; k < c->nslots; k++)
		if (c->slot[k].active && k != but) {
			int done = 0, rc = test_slot(c, k, &done);
			if (rc != MPI_SUCCESS) {
				mpi_failed(c, "MPI_Test", rc);
				return -1;
			}
			if (done)
				completed(c, k);
		}
	return 0;
}

void
mtc_comm_progress(mtc_comm *c)
{
	if (c->inflight && !c->broken)
		progress(c, -1);
}

/* Poll slot k's collective (k >= 0), or *r, to completion within the deadline; 0, or -1 with
 * the instance broken. Open MPI's non-blocking collectives advance only inside MPI calls, a
 * round of the algorithm per call: a large all-reduce needs hundreds, so the wait polls
 * without sleeping (yielding the core to a rank that shares it) for its first second, and
 * only then every 50 us. The other collectives in flight are progressed meanwhile: a peer may
 * wait for one of them before it can serve this one. */
static int
poll_req(mtc_comm *c, int k, MPI_Request *r, const char *what)
{
	double t0 = 0, t;

	for (long spins = 0;; spins++) {
		int done = 0, rc = k >= 0 ? test_slot(c, k, &done) : MPI_Test(r, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			mpi_failed(c, what, rc);
			return -1;
		}
		if (done)
			return 0;
		if (c->inflight > (k >= 0) && progress(c, k))
			return -1;
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
mtc_comm_wait(mtc_comm *c, int k)
{
	Slot *sl;

	if (c->broken)
		return;
	if (k < 0 || k >= c->nslots) {
		broke(c, "wait on slot %d of %d: the module is wrong", k, c->nslots);
		return;
	}
	sl = &c->slot[k];
	if (sl->active) {
		double t = mtc_now();
		if (poll_req(c, k, NULL, "a collective"))
			return;
		c->wait_s += mtc_now() - t;
		completed(c, k);
	}
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
	return poll_req(c, -1, &r, "gathering the outputs") ? MTC_ECOMM : 0;
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
		poll_req(c, -1, &r, "the step's status");
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
