/* fork.c: trials that do not depend on each other, run side by side in child processes.
 *
 * needs: fn(i, ctx, out), which writes the result of trial i (size bytes, at most PIPE_BUF)
 *        and may change anything in its process: a child's changes end with it.
 * fills: out[i * size ..] for every i < n, the same bytes whatever the number of jobs (at
 *        most jobs children at once; jobs <= 1 runs the trials here, in order). A child that
 *        ends without its result (a crash, no memory, fork refused) has its trial run here
 *        instead, so an internal error is reported once, by this process, with its location.
 *        A child's own par_map runs its trials in order, in it: the processes stay at jobs
 *        however the trials nest (the placement search inside a ZeRO probe). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passes.h"

static int child;       /* this process is a trial's child */

typedef struct Kid {
	pid_t pid;
	int fd, i;
} Kid;

/* Start trial i in a child: its pid, or -1 (then it is run here). */
static pid_t
spawn(int i, void (*fn)(int, void *, void *), void *ctx, size_t size, int *fd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char buf[PIPE_BUF];
		int null = open("/dev/null", O_WRONLY);
		size_t at = 0;
		close(p[0]);
		child = 1;
		if (null >= 0)
			dup2(null, 2);     /* the trial's messages come from its rerun here, if any */
		memset(buf, 0, size);
		fn(i, ctx, buf);
		while (at < size) {
			ssize_t w = write(p[1], buf + at, size - at);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				_exit(1);
			at += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

/* The result of a child, read and reaped: 0, or -1 if it has none. */
static int
reap(const Kid *k, char *out, size_t size)
{
	size_t at = 0;
	int st;

	while (at < size) {
		ssize_t r = read(k->fd, out + at, size - at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		at += (size_t)r;
	}
	close(k->fd);
	while (waitpid(k->pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return at == size && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int
par_width(int jobs)
{
	return child || jobs < 1 ? 1 : jobs;
}

void
par_map(int n, int jobs, void (*fn)(int, void *, void *), void *ctx, void *out, size_t size)
{
	Kid *k;
	int head = 0, tail = 0, next = 0;
	char *o = out;

	if (size > PIPE_BUF)
		die("par_map: a result of %zu bytes", size);
	memset(out, 0, (size_t)n * size);
	if (par_width(jobs) <= 1 || n <= 1) {
		for (int i = 0; i < n; i++)
			fn(i, ctx, o + (size_t)i * size);
		return;
	}
	k = xmalloc((size_t)n * sizeof *k);
	/* a queue of children, oldest first: taken in order, one started as one ends */
	while (next < n || head < tail) {
		while (next < n && tail - head < jobs) {
			k[tail].i = next;
			k[tail].pid = spawn(next, fn, ctx, size, &k[tail].fd);
			if (k[tail].pid < 0)
				fn(next, ctx, o + (size_t)next * size);
			else
				tail++;
			next++;
		}
		if (head == tail)
			break;
		if (reap(&k[head], o + (size_t)k[head].i * size, size)) {
			memset(o + (size_t)k[head].i * size, 0, size);
			fn(k[head].i, ctx, o + (size_t)k[head].i * size);
		}
		head++;
	}
	free(k);
}
