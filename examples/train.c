/* train.c: train the mlp example from C through its generated header and shared object.
 *
 *   mtc examples/mlp.tdsl -o mlp.so          # writes mlp.so and mlp.h
 *   cc -I. examples/train.c ./mlp.so -o train && ./train 20
 *
 * One fixed batch of synthetic data (a class per input pattern), so the loss must fall. */
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"

enum { B = 1024, IN = 64, C = 10 };   /* as examples/mlp.tdsl */

int
main(int argc, char **argv)
{
	static float x[MLP_X_NUMEL], logits[MLP_LOGITS_NUMEL];
	static int32_t y[MLP_Y_NUMEL];
	int steps = argc > 1 ? atoi(argv[1]) : 20, right = 0;
	float loss = 0, first = 0;
	mlp *m = mlp_create();

	if (!m) {
		fprintf(stderr, "train: mlp_create: %s\n", mlp_error(NULL));
		return 1;
	}
	/* Class k lights up the k-th band of pixels, with a little deterministic noise. */
	for (int i = 0; i < B; i++) {
		y[i] = i % C;
		for (int j = 0; j < IN; j++)
			x[i * IN + j] = (j / (IN / C) == y[i] ? 1.0f : 0.0f) + 0.01f * (float)((i * 31 + j * 17) % 7);
	}
	for (int s = 1; s <= steps; s++) {
		if (mlp_step(m, x, y, &loss)) {
			fprintf(stderr, "train: step %d: %s\n", s, mlp_error(m));
			mlp_destroy(m);
			return 1;
		}
		if (s == 1)
			first = loss;
		printf("step %d loss %.6f\n", s, loss);
	}
	if (mlp_forward(m, x, logits)) {
		fprintf(stderr, "train: forward: %s\n", mlp_error(m));
		mlp_destroy(m);
		return 1;
	}
	for (int i = 0; i < B; i++) {
		int best = 0;
		for (int k = 1; k < C; k++)
			if (logits[i * C + k] > logits[i * C + best])
				best = k;
		right += best == y[i];
	}
	printf("accuracy %d/%d, loss %.6f -> %.6f\n", right, B, first, loss);
	mlp_destroy(m);
	return !(loss < first);
}
