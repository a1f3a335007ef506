/* ilp.c: the Checkmate-style integer program (placeholder until written). */
#include "passes.h"

int
solve_ilp(const Prob *p, int64_t budget, double tlim, const Plan *warm, Plan *pl)
{
	(void)p; (void)budget; (void)tlim; (void)warm; (void)pl;
	return -1;
}
