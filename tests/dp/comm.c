/* comm.c: runtime/comm.c's collectives under mpirun, without a module: each slot's
 * collective repeated over steps (a persistent request, where MPI has them, started again),
 * a slot moved to another buffer and count and back (its request made anew), the three
 * kinds side by side with progress between, and the sums exact (small integers in floats).
 * `mpirun -np N tests/dp/comm`; rank 0 prints "N passed, N failed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

int
main(void)
{
	enum { NA = 1000, NB = 37, NS = 96 };
	static float a[NA], b[NB], rs[8 * NS], ag[8 * NS];
	mtc_comm *c = mtc_comm_open(NULL, 3);
	int rank, size, tot[2];
	char err[256];

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
		mtc_comm_start(c, 0, MTC_ALLREDUCE, x, n);
		mtc_comm_start(c, 1, MTC_REDUCE_SCATTER, rs, NS);
		mtc_comm_start(c, 2, MTC_ALLGATHER, ag, NS);
		for (int k = 0; k < 50; k++)
			mtc_comm_progress(c);
		mtc_comm_wait(c, 2, ag, 0, 1);
		mtc_comm_wait(c, 1, rs, NS, 0.5f);
		mtc_comm_wait(c, 0, x, n, 1);
		/* sums of rank over the ranks: size (size - 1) / 2 */
		for (int i = 0; i < n; i++)
			ok &= x[i] == (float)(size * (size - 1) / 2 + size * (i % 7 + step));
		check(ok, onb ? "all-reduce on the second buffer" : "all-reduce", step);
		ok = 1;
		for (int i = 0; i < NS; i++) {
			int j = rank * NS + i;
			ok &= rs[i] == 0.5f * (float)(3 * size * (size - 1) / 2 + size * (j % 5 + step));
		}
		check(ok, "reduce-scatter (this rank's block, scaled)", step);
		ok = 1;
		for (int q = 0; q < size; q++)
			for (int i = 0; i < NS; i++)
				ok &= ag[q * NS + i] == (float)(q * 100 + i + step);
		check(ok, "all-gather", step);
		check(mtc_comm_finish(c, 0, NULL, err, sizeof err) == 0, "finish", step);
	}
	check(mtc_comm_error(c)[0] == 0, "no error", 6);
	mtc_comm_close(c);
	tot[0] = pass;
	tot[1] = fail;
	MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%d passed, %d failed\n", tot[0], tot[1]);
	return tot[1] != 0;
}
