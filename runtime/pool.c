/* pool.c: the emulated accelerator threads: every launch runs one kernel's parts on them. */
#include <stdlib.h>

#include "rt-impl.h"

/* Launches are frequent and short: a worker spins this many rounds before sleeping. Work
 * below SMALL (about 50 us on one core) runs on the calling thread: waking the others would
 * cost more than it saves, and a loaded machine makes every wake-up a scheduler round. */
enum { SPIN = 1 << 14, SMALL = 1 << 18 };

typedef struct Worker {
	mtc_pool *p;
	int tid;
} Worker;

static void
relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Claim and run parts of launch `gen` until none is left; returns how many ran. The kernel
 * and its arguments are read only after a part is claimed: until that part is done, the
 * launch cannot finish and the caller cannot start another. */
static int
run_parts(mtc_pool *p, unsigned gen)
{
	unsigned long long t = atomic_load(&p->ticket);
	int ran = 0;

	while ((unsigned)(t >> 32) == gen && (int)(t & 0xffffffffu) < p->n) {
		if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1))
			continue;
		p->fn(p->args, (int)(t & 0xffffffffu), p->n);
		ran++;
		if (atomic_fetch_add(&p->done, 1) + 1 == p->n) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->idle);
			pthread_mutex_unlock(&p->mu);
		}
		t = atomic_load(&p->ticket);
	}
	return ran;
}

static void *
worker(void *arg)
{
	Worker w = *(Worker *)arg;
	mtc_pool *p = w.p;
	unsigned seen = 0;

	free(arg);
	for (;;) {
		unsigned g;
		int i;
		for (i = 0; i < SPIN && (g = atomic_load(&p->gen)) == seen; i++)
			relax();
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop))
				pthread_cond_wait(&p->go, &p->mu);
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->stop) && g == seen)
			return NULL;
		seen = g;
		run_parts(p, g);
	}
}

int
mtc_pool_start(mtc_pool *p, int n)
{
	p->n = n;
	atomic_init(&p->gen, 0);
	atomic_init(&p->ticket, 0);
	atomic_init(&p->done, 0);
	atomic_init(&p->stop, 0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->idle, NULL);
	if (!(p->thr = RT_ALLOC(calloc((size_t)n, sizeof *p->thr))))
		return -1;
	for (int i = 1; i < n; i++) {
		Worker *w = RT_ALLOC(malloc(sizeof *w));
		if (!w || (w->p = p, w->tid = i, pthread_create(&p->thr[i], NULL, worker, w))) {
			free(w);
			p->n = i;      /* stop joins only the started ones */
			mtc_pool_stop(p);
			return -1;
		}
	}
	return 0;
}

void
mtc_pool_stop(mtc_pool *p)
{
	if (!p->thr)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n; i++)
		pthread_join(p->thr[i], NULL);
	free(p->thr);
	p->thr = NULL;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->idle);
}

void
mtc_run(mtc_dev *d, mtc_kernel fn, const uint64_t *args, int64_t work)
{
	mtc_pool_run(&d->pool, fn, args, work);
}

void
mtc_pool_run(mtc_pool *p, mtc_kernel fn, const uint64_t *args, int64_t work)
{
	unsigned g;
	int i;

	if (p->n == 1 || work < SMALL) {
		fn(args, 0, 1);
		return;
	}
	p->fn = fn;
	p->args = args;
	atomic_store(&p->done, 0);
	g = atomic_load(&p->gen) + 1;
	atomic_store(&p->ticket, (unsigned long long)g << 32);
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->gen, g);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	run_parts(p, g);
	for (i = 0; i < SPIN && atomic_load(&p->done) < p->n; i++)
		relax();
	if (atomic_load(&p->done) < p->n) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->done) < p->n)
			pthread_cond_wait(&p->idle, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}
