/* device.c: the emulated MT-3000 device: zones, capacity, errors, check mode and the peak. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "rt-impl.h"

int
mtc_fail_alloc(void)
{
	static atomic_long n;
	const char *s = getenv("MTC_FAIL_ALLOC");

	return s && *s && atomic_fetch_add(&n, 1) + 1 == atol(s);
}

/* The first error of a call wins: later ones are usually its consequences. */
int
mtc_fail(mtc_dev *d, int code, const char *fmt, ...)
{
	va_list ap;

	if (d->status)
		return code;
	d->status = code;
	va_start(ap, fmt);
	vsnprintf(d->err, sizeof d->err, fmt, ap);
	va_end(ap);
	return code;
}

const char *
mtc_dev_error(const mtc_dev *d)
{
	return d->err;
}

void
mtc_dev_clear(mtc_dev *d)
{
	d->status = 0;
	d->flag = 0;
	d->range.kind = NULL;
	d->err[0] = 0;
}

/* "123", "64K", "2M", "8G": bytes; -1 when malformed. */
static int64_t
parse_bytes(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mul = 1;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1024.0; end++; break;
	case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v * mul > 9e18)
		return -1;
	return (int64_t)(v * mul);
}

double
mtc_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int
mtc_thread_count(void)
{
	const char *s = getenv("MTC_THREADS");
	long n;

	if (s && *s) {
		n = strtol(s, NULL, 10);
		if (n >= 1 && n <= 1024)
			return (int)n;
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}

static void
poison(char *p, int64_t bytes)
{
	static const uint32_t nan = 0x7fc00000u;
	int64_t i;

	for (i = 0; i + 4 <= bytes; i += 4)
		memcpy(p + i, &nan, 4);
	memset(p + i, 0xff, (size_t)(bytes - i));
}

mtc_dev *
mtc_dev_open(const struct mtc_dev_desc *desc)
{
	const char *s = getenv("MTC_ACCEL_BYTES");
	int64_t cap = MTC_ACCEL_DEFAULT;
	mtc_dev *d;

	if (s && *s && (cap = parse_bytes(s)) < 0) {
		mtc_set_last_error(MTC_EINVAL, "MTC_ACCEL_BYTES='%s' is not a byte count (N, NK, NM, NG)", s);
		return NULL;
	}
	if (desc->persist_bytes + desc->arena_bytes > cap) {
		mtc_set_last_error(MTC_ENODEV, "%s: the plan needs %lld device bytes (persistent %lld + "
		                   "arena %lld) but the accelerator has %lld (MTC_ACCEL_BYTES)",
		                   desc->model, (long long)(desc->persist_bytes + desc->arena_bytes),
		                   (long long)desc->persist_bytes, (long long)desc->arena_bytes,
		                   (long long)cap);
		return NULL;
	}
	if (!(d = RT_ALLOC(calloc(1, sizeof *d)))) {
		mtc_set_last_error(MTC_ENOMEM, "%s: out of host memory", desc->model);
		return NULL;
	}
	d->desc = *desc;
	d->cap = cap;
	d->size = desc->persist_bytes + desc->arena_bytes;
	s = getenv("MTC_CHECK");
	d->check = s && *s && strcmp(s, "0") != 0;
	mtc_blas_init();
	/* 64-byte alignment so vector loads of any tensor stay aligned to its offset. */
	d->mem = RT_ALLOC(aligned_alloc(64, (size_t)((d->size + 64) & ~63)));
	d->ddr = RT_ALLOC(aligned_alloc(64, (size_t)((desc->ddr_bytes + 64) & ~63)));
	if (!d->mem || !d->ddr) {
		mtc_set_last_error(MTC_ENOMEM, "%s: cannot allocate %lld device bytes and %lld DDR bytes",
		                   desc->model, (long long)d->size, (long long)desc->ddr_bytes);
		goto fail;
	}
	memset(d->mem, 0, (size_t)d->size);
	if (d->check)
		poison(d->mem, d->size);
	if (mtc_dma_start(&d->dma)) {
		mtc_set_last_error(MTC_ENOMEM, "%s: cannot start the DMA engine thread", desc->model);
		goto fail;
	}
	d->host.dep = &d->dma;
	if (mtc_dma_start(&d->host)) {
		mtc_set_last_error(MTC_ENOMEM, "%s: cannot start the host's update thread", desc->model);
		goto fail;
	}
	if (mtc_pool_start(&d->pool, mtc_thread_count())) {
		mtc_set_last_error(MTC_ENOMEM, "%s: cannot start the accelerator threads", desc->model);
		goto fail;
	}
	return d;
fail:
	mtc_dev_close(d);
	return NULL;
}

void
mtc_dev_close(mtc_dev *d)
{
	if (!d)
		return;
	mtc_dma_stop(&d->host);
	mtc_dma_stop(&d->dma);
	mtc_pool_stop(&d->pool);
	free(d->mem);
	if (!d->ddr_shared)
		free(d->ddr);
	free(d->lv);
	free(d);
}

char *mtc_dev_mem(mtc_dev *d) { return d->mem; }
char *mtc_dev_ddr(mtc_dev *d) { return d->ddr; }
int *mtc_dev_flag(mtc_dev *d) { return &d->flag; }
int mtc_dev_nthreads(const mtc_dev *d) { return d->pool.n; }
void mtc_dev_count_step(mtc_dev *d) { d->steps++; }
void mtc_dev_set_steps(mtc_dev *d, int64_t steps) { d->steps = steps; }

void
mtc_dev_stats(const mtc_dev *d, struct mtc_stats *s)
{
	s->peak_bytes = d->peak;
	s->device_bytes = d->size;
	s->ddr_bytes = d->desc.ddr_bytes;
	s->steps = d->steps;
	s->check = d->check;
	s->rank = 0;
	s->nranks = 1;
	s->comm_bytes = 0;
	s->comm_s = s->comm_wait_s = 0;
}

static const char *
tname(const mtc_dev *d, int id)
{
	return id >= 0 && id < d->desc.nnames ? d->desc.names[id] : "?";
}

void
mtc_born(mtc_dev *d, int id, int64_t off, int64_t bytes)
{
	d->live += bytes;
	if (d->live > d->peak)
		d->peak = d->live;
	if (!d->check)
		return;
	if (off < 0 || off + bytes > d->size) {
		mtc_fail(d, MTC_ECHECK, "check: %s at [%lld, %lld) lies outside the device's %lld bytes",
		         tname(d, id), (long long)off, (long long)(off + bytes), (long long)d->size);
		return;
	}
	for (int i = 0; i < d->nlv; i++) {
		mtc_live *l = &d->lv[i];
		if (bytes > 0 && l->bytes > 0 && off < l->off + l->bytes && l->off < off + bytes) {
			mtc_fail(d, MTC_ECHECK, "check: %s at [%lld, %lld) overlaps live %s at [%lld, %lld)",
			         tname(d, id), (long long)off, (long long)(off + bytes), tname(d, l->id),
			         (long long)l->off, (long long)(l->off + l->bytes));
			break;
		}
	}
	if (d->nlv == d->caplv) {
		int n = d->caplv ? 2 * d->caplv : 64;
		mtc_live *lv = RT_ALLOC(realloc(d->lv, sizeof *lv * (size_t)n));
		if (!lv) {
			mtc_fail(d, MTC_ENOMEM, "check: out of host memory");
			return;
		}
		d->lv = lv;
		d->caplv = n;
	}
	d->lv[d->nlv++] = (mtc_live){ id, off, bytes };
}

void
mtc_dead(mtc_dev *d, int id, int64_t off, int64_t bytes)
{
	d->live -= bytes;
	if (!d->check)
		return;
	for (int i = d->nlv - 1; i >= 0; i--)
		if (d->lv[i].id == id && d->lv[i].off == off) {
			d->lv[i] = d->lv[--d->nlv];
			/* A copy still reading these bytes must not see the poison. */
			mtc_dma_drain(d);
			if (off >= 0 && off + bytes <= d->size)
				poison(d->mem + off, bytes);
			return;
		}
	mtc_fail(d, MTC_ECHECK, "check: %s dies at [%lld, %lld) but was not live", tname(d, id),
	         (long long)off, (long long)(off + bytes));
}

void
mtc_use(mtc_dev *d, int op, int id, int64_t off, int64_t bytes)
{
	if (!d->check || bytes == 0)
		return;
	for (int i = d->nlv - 1; i >= 0; i--)
		if (d->lv[i].id == id && d->lv[i].off == off && d->lv[i].bytes == bytes)
			return;
	mtc_fail(d, MTC_ECHECK, "check: op %d reads %s at [%lld, %lld), which is not live there "
	         "(dead already, or not yet born)", op, tname(d, id), (long long)off,
	         (long long)(off + bytes));
}

void
mtc_handover(mtc_dev *d, int from, int to, int64_t off, int64_t bytes)
{
	if (!d->check)
		return;
	for (int i = d->nlv - 1; i >= 0; i--)
		if (d->lv[i].id == from && d->lv[i].off == off && d->lv[i].bytes == bytes) {
			d->lv[i].id = to;
			return;
		}
	mtc_fail(d, MTC_ECHECK, "check: %s hands its bytes [%lld, %lld) to %s but was not live",
	         tname(d, from), (long long)off, (long long)(off + bytes), tname(d, to));
}

void
mtc_range_error(int *flag, int op, const char *kind, const char *in, int64_t elem, int32_t val,
                int64_t bound)
{
	mtc_dev *d = (mtc_dev *)(void *)((char *)flag - offsetof(mtc_dev, flag));
	int zero = 0;

	/* threads of one kernel may meet several: the first to claim the flag reports */
	if (__atomic_compare_exchange_n(flag, &zero, MTC_ERANGE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		d->range.op = op;
		d->range.kind = kind;
		d->range.in = in;
		d->range.elem = elem;
		d->range.val = val;
		d->range.bound = bound;
	}
}

int
mtc_dev_finish(mtc_dev *d)
{
	mtc_dma_drain(d);
	mtc_host_drain(d);
	if (d->flag == MTC_ERANGE && d->range.kind && !d->status)
		mtc_fail(d, MTC_ERANGE, "%s: op %d (%s): %s %d at input '%s'[%lld] is out of range [0, %lld)",
		         d->desc.model, d->range.op, d->range.kind,
		         strncmp(d->range.kind, "cross_entropy", 13) ? "id" : "label", (int)d->range.val,
		         d->range.in, (long long)d->range.elem, (long long)d->range.bound);
	if (d->flag && !d->status)
		mtc_fail(d, d->flag, d->flag == MTC_ERANGE ? "%s: a label or embedding id is out of range"
		         : "%s: adam's step counter is below 1 (the state was set wrongly)", d->desc.model);
	return d->status;
}
