/* randplan.c: random valid memory plans of the examples, written as planned .mir files for
 * tests/cuda/sync.sh, so that the stream events are checked on plans no solver would pick.
 *
 * `randplan OUTDIR SEED N MODEL.tdsl...`: per model, N plans: every value the planner could
 * decide for gets KEEP, REC or SWAP at random (plan_expand makes the schedule, falling back
 * to KEEP where a recomputation cannot be honoured), then each swap is placed anywhere from
 * memory to time at random. Every plan must be equivalent to the unplanned step (synth_equiv);
 * it is written to OUTDIR/NAME-K.mir. Prints `N passed, N failed`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../planner/synth.h"

static uint64_t rs;

static unsigned
rnd(void)
{
	rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rs >> 33);
}

int
main(int argc, char **argv)
{
	int n;
	Target tg;

	if (argc < 5) {
		fprintf(stderr, "usage: randplan OUTDIR SEED N MODEL.tdsl...\n");
		return 1;
	}
	rs = strtoull(argv[2], NULL, 10);
	n = atoi(argv[3]);
	if (target_get(&tg, "cuda"))
		die("no cuda target description");
	for (int a = 4; a < argc; a++) {
		const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
		char name[256], path[4096], err[512];

		snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
		for (int k = 0; k < n; k++) {
			Module *m = synth_example(argv[a], NULL, 0, &tg);
			Prob *p;
			Plan *pl;
			uint8_t *mode;
			Func *orig, *g;
			FILE *fp;

			if (!m || !m->step) {
				check(0, "%s: cannot compile", argv[a]);
				break;
			}
			orig = m->step;
			p = prob_new(orig, &tg);
			p->tight = rnd() % 2;
			mode = xcalloc(p->n + 1, 1);
			/* the rest recomputed, as every solver leaves them: a kept workspace would be
			 * read again by its convolution's recomputation, which the verifier refuses */
			for (int i = 0; i < p->n; i++)
				mode[i] = !p->cand[i] ? REC : rnd() % 3 == 0 ? KEEP : rnd() % 2 ? REC : SWAP;
			pl = plan_new(p);
			plan_expand(p, mode, pl);
			/* placed again, before the first read plan_expand found (inwait): that may be a
			 * recomputation's, before the value's own split (MobileNet: a depthwise
			 * convolution recomputed for batch norm's backward reads its swapped input) */
			for (int s = 0; s < pl->nsw; s++)
				plan_place_swap_at(p, pl->sw[s].op, pl->sw[s].inwait,
				                   (rnd() % 5) / 4.0, (rnd() % 5) / 4.0, &pl->sw[s]);
			g = remat(p, pl);
			check(synth_equiv(orig, g, err, sizeof err) == 0, "%s plan %d: not the unplanned step: %s",
			      name, k, err);
			m->step = g;
			func_free(orig);
			m->budget = 0;
			snprintf(path, sizeof path, "%s/%s-%d.mir", argv[1], name, k);
			if (!(fp = fopen(path, "w")))
				die("cannot write %s", path);
			ir_print(fp, m);
			fclose(fp);
			free(mode);
			plan_free(pl);
			prob_free(p);
			mod_free(m);
		}
	}
	return done();
}
