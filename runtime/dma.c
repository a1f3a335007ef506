/* dma.c: the emulated DMA engine: a thread executing queued copies in order, with channels;
 * and the host's thread (the MT-3000's CPU zone) the same way for updates on the host, each
 * after the DMA channel it names. */
#include <stdlib.h>
#include <string.h>

#include "rt-impl.h"

/* Run the next queued copy; called with the lock held, and it holds it again on return. The
 * copy runs unlocked, so the host can queue more meanwhile; busy keeps copies one at a time
 * and in order (a later copy may read what an earlier one wrote). */
static void
run_next(mtc_dma_engine *e)
{
	mtc_copy c = e->q[e->completed % e->cap];

	e->busy = 1;
	pthread_mutex_unlock(&e->mu);
	if (c.fn) {
		mtc_dma_engine *d = e->dep;
		/* the copies it reads are done (the DMA engine never waits for this thread) */
		pthread_mutex_lock(&d->mu);
		while (d->completed < c.after)
			pthread_cond_wait(&d->done, &d->mu);
		pthread_mutex_unlock(&d->mu);
		c.fn(c.args, 0, 1);
	} else {
		memcpy(c.dst, c.src, (size_t)c.bytes);
	}
	pthread_mutex_lock(&e->mu);
	e->busy = 0;
	e->completed++;
	pthread_cond_broadcast(&e->done);
	pthread_cond_signal(&e->more);
}

static void *
engine(void *p)
{
	mtc_dma_engine *e = p;

	pthread_mutex_lock(&e->mu);
	for (;;) {
		while (e->busy || (e->completed == e->queued && !e->stop))
			pthread_cond_wait(&e->more, &e->mu);
		if (e->completed == e->queued)
			break;
		run_next(e);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

int
mtc_dma_start(mtc_dma_engine *e)
{
	e->cap = 256;
	if (!(e->q = RT_ALLOC(malloc(sizeof *e->q * (size_t)e->cap))))
		return -1;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->more, NULL);
	pthread_cond_init(&e->done, NULL);
	if (pthread_create(&e->thr, NULL, engine, e)) {
		free(e->q);
		return -1;
	}
	e->started = 1;
	return 0;
}

void
mtc_dma_stop(mtc_dma_engine *e)
{
	if (!e->started)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = 1;
	pthread_cond_signal(&e->more);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->thr, NULL);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->more);
	pthread_cond_destroy(&e->done);
	free(e->q);
	e->started = 0;
}

/* Queue c; channels count from 1; the ring is full when cap items are in flight: wait for one. */
static int64_t
enqueue(mtc_dma_engine *e, const mtc_copy *c)
{
	int64_t ch;

	pthread_mutex_lock(&e->mu);
	while (e->queued - e->completed == e->cap)
		pthread_cond_wait(&e->done, &e->mu);
	e->q[e->queued % e->cap] = *c;
	ch = ++e->queued;
	pthread_cond_signal(&e->more);
	pthread_mutex_unlock(&e->mu);
	return ch;
}

int64_t
mtc_dma(mtc_dev *d, void *dst, const void *src, int64_t bytes)
{
	mtc_copy c = { dst, src, bytes, NULL, { 0 }, 0 };
	return enqueue(&d->dma, &c);
}

int64_t
mtc_host_call(mtc_dev *d, mtc_kernel fn, const uint64_t *args, int nargs, int64_t after)
{
	mtc_copy c = { NULL, NULL, 0, fn, { 0 }, after };

	memcpy(c.args, args, sizeof *args * (size_t)(nargs < MTC_CALL_ARGS ? nargs : MTC_CALL_ARGS));
	return enqueue(&d->host, &c);
}

void
mtc_dma_wait(mtc_dev *d, int64_t ch)
{
	mtc_dma_engine *e = &d->dma;

	/* A copy the engine has not started yet runs here: on a loaded CPU the engine thread may
	 * wait a whole time slice to be scheduled, and the host would idle that long. */
	pthread_mutex_lock(&e->mu);
	while (e->completed < ch)
		if (!e->busy)
			run_next(e);
		else
			pthread_cond_wait(&e->done, &e->mu);
	pthread_mutex_unlock(&e->mu);
}

/* Wait until every item queued on e is done, running those not started here (in order). */
static void
drain(mtc_dma_engine *e)
{
	pthread_mutex_lock(&e->mu);
	while (e->completed < e->queued)
		if (!e->busy)
			run_next(e);
		else
			pthread_cond_wait(&e->done, &e->mu);
	pthread_mutex_unlock(&e->mu);
}

void
mtc_dma_drain(mtc_dev *d)
{
	drain(&d->dma);
}

void
mtc_host_drain(mtc_dev *d)
{
	if (d->host.started)
		drain(&d->host);
}
