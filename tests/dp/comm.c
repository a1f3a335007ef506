/* comm.c: runtime/comm.c's collectives under mpirun, without a module: each slot's
 * collective repeated over steps (a persistent request, where MPI has them, started again),
 * a slot moved to another buffer and count and back (its request made anew), the three
 * kinds side by side with progress between, and the sums exact (small integers in floats);
 * on buffers of its own (through MPI), then on buffers in mtc_comm_host_alloc's memory
 * (through shared memory; none with MTC_COMM_SHM=0).
 * `mpirun -np N tests/dp/comm`; rank 0 prints "N passed, N failed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtc/mtc-comm.h"

static int pass, fail;

static void
check(int ok, const char *what, int step)
{
	if (ok)
		pass++;
	else {
		fail++;
		fprintf(stderr, "FAIL: %s at step %d\n", what, step);
	}
}

/* Six steps of the three kinds on slots 0-2 over a (b at step 3), rs and ag. */
static void
steps(mtc_comm *c, float *a, float *b, float *rs, float *ag, const char *how)
{
	enum { NA = 1000, NB = 37, NS = 96 };
	int rank = mtc_comm_rank(c), size = mtc_comm_size(c);
	char err[256], what[128];

	for (int step = 0; step < 6; step++) {
		/* slot 0 on a, but on b at step 3: its request made again, then again for a */
		int onb = step == 3, n = onb ? NB : NA, ok = 1;
		float *x = onb ? b : a;
		for (int i = 0; i < n; i++)
			x[i] = (float)(rank + i % 7 + step);
		for (int i = 0; i < size * NS; i++)
			rs[i] = (float)(rank * 3 + i % 5 + step);
		for (int i = 0; i < NS; i++)
			ag[rank * NS + i] = (float)(rank * 100 + i + step);
		mtc_comm_start(c, 0, MTC_ALLREDUCE, x, n, 1);
		mtc_comm_start(c, 1, MTC_REDUCE_SCATTER, rs, NS, 0.5f);
		mtc_comm_start(c, 2, MTC_ALLGATHER, ag, NS, 1);
		for (int k = 0; k < 50; k++)
			mtc_comm_progress(c);
		mtc_comm_wait(c, 2);
		mtc_comm_wait(c, 1);
		mtc_comm_wait(c, 0);
		/* sums of rank over the ranks: size (size - 1) / 2 */
		for (int i = 0; i < n; i++)
			ok &= x[i] == (float)(size * (size - 1) / 2 + size * (i % 7 + step));
		snprintf(what, sizeof what, "%s: all-reduce%s", how, onb ? " on the second buffer" : "");
		check(ok, what, step);
		ok = 1;
		for (int i = 0; i < NS; i++) {
			int j = rank * NS + i;
			ok &= rs[i] == 0.5f * (float)(3 * size * (size - 1) / 2 + size * (j % 5 + step));
		}
		snprintf(what, sizeof what, "%s: reduce-scatter (this rank's block, scaled)", how);
		check(ok, what, step);
		ok = 1;
		for (int q = 0; q < size; q++)
			for (int i = 0; i < NS; i++)
				ok &= ag[q * NS + i] == (float)(q * 100 + i + step);
		snprintf(what, sizeof what, "%s: all-gather", how);
		check(ok, what, step);
		snprintf(what, sizeof what, "%s: finish", how);
		check(mtc_comm_finish(c, 0, NULL, err, sizeof err) == 0, what, step);
	}
}

int
main(void)
{
	enum { NA = 1000, NB = 37, NS = 96 };
	static float a[NA], b[NB], rs[8 * NS], ag[8 * NS];
	mtc_comm *c = mtc_comm_open(NULL, 3);
	const char *env = getenv("MTC_COMM_SHM");
	int rank, size, tot[2], off = env && !strcmp(env, "0");
	float *sh;

	if (!c) {
		fprintf(stderr, "comm: mtc_comm_open failed\n");
		return 1;
	}
	rank = mtc_comm_rank(c);
	size = mtc_comm_size(c);
	if (size > 8) {
		fprintf(stderr, "comm: at most 8 ranks\n");
		return 1;
	}
	/* through MPI (buffers of the program's own), then through shared memory (buffers in the
	 * ranks' shared host memory: this test runs on one machine) */
	steps(c, a, b, rs, ag, "MPI");
	sh = mtc_comm_host_alloc(c, (NA + NB + 2 * 8 * NS) * sizeof(float));
	check(off ? !sh : sh != NULL, off ? "no shared memory with MTC_COMM_SHM=0" : "shared memory on one node", 0);
	if (sh)
		steps(c, sh, sh + NA, sh + NA + NB, sh + NA + NB + 8 * NS, "shared memory");
	check(mtc_comm_error(c)[0] == 0, "no error", 6);
	mtc_comm_close(c);
	tot[0] = pass;
	tot[1] = fail;
	MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%d passed, %d failed\n", tot[0], tot[1]);
	return tot[1] != 0;
}
