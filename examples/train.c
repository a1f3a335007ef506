/* train.c: train a model from C through its generated header and shared object, the way
 * recipes train: a learning-rate schedule (linear warm-up, then cosine decay) set at run time,
 * AdamW with gradient clipping, a checkpoint saved halfway and resumed in a second instance,
 * and the outputs of the last step.
 *
 *   mtc examples/classifier.tdsl -o classifier.so    # writes classifier.so and classifier.h
 *   cc -I. examples/train.c ./classifier.so -lm -o train && ./train 40
 *
 * One fixed batch of synthetic data (a class per input pattern), so the loss must fall. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classifier.h"

enum { B = CLASSIFIER_X_DIM0, IN = CLASSIFIER_X_DIM1, C = CLASSIFIER_LOGITS_DIM1 };

/* HuggingFace's get_cosine_schedule_with_warmup: step k (from 1) of n, w of them warm-up. */
static float
lr_at(int k, int n, int w, float peak)
{
	if (k - 1 < w)
		return peak * (float)(k - 1) / (float)w;
	return peak * 0.5f * (1.0f + cosf(3.14159265f * (float)(k - 1 - w) / (float)(n - w)));
}

static int
fail(const char *what, classifier *m)
{
	fprintf(stderr, "train: %s: %s\n", what, classifier_error(m));
	return 1;
}

int
main(int argc, char **argv)
{
	static float x[CLASSIFIER_X_NUMEL], logits[CLASSIFIER_LOGITS_NUMEL];
	static int32_t y[CLASSIFIER_Y_NUMEL];
	int steps = argc > 1 ? atoi(argv[1]) : 40, warm = steps / 10, right = 0, same = 1;
	const char *ckpt = argc > 2 ? argv[2] : "train.safetensors";
	float loss = 0, first = 0, resumed = 0;
	classifier *m = classifier_create(), *r = NULL;

	if (!m)
		return fail("classifier_create", NULL);
	/* Class k lights up the k-th band of features, with a little deterministic noise. */
	for (int i = 0; i < B; i++) {
		y[i] = i % C;
		for (int j = 0; j < IN; j++)
			x[i * IN + j] = (j / (IN / C) == y[i] ? 1.0f : 0.0f) + 0.01f * (float)((i * 31 + j * 17) % 7);
	}
	/* A setting PyTorch would refuse is an error code and a message, not a crash. */
	if (classifier_set_lr(m, -1.0f) == 0)
		return fail("a negative lr was taken", m);
	printf("refused: %s\n", classifier_error(m));
	/* Clip the gradients' global norm tighter than the model's 1.0 during warm-up. */
	if (classifier_set_clip_norm(m, 0.5f))
		return fail("classifier_set_clip_norm", m);
	for (int s = 1; s <= steps; s++) {
		if (s == warm + 1 && classifier_set_clip_norm(m, 1.0f))
			return fail("classifier_set_clip_norm", m);
		if (classifier_set_lr(m, lr_at(s, steps, warm, 0.003f)))
			return fail("classifier_set_lr", m);
		/* the last step also returns the logits its forward pass computed */
		if (s < steps ? classifier_step(m, x, y, &loss) : classifier_step_out(m, x, y, &loss, logits))
			return fail("classifier_step", m);
		if (s == 1)
			first = loss;
		printf("step %d lr %.6f loss %.6f\n", s, lr_at(s, steps, warm, 0.003f), loss);
		if (s == steps / 2) {
			/* a checkpoint: everything the next step reads, in one file */
			if (classifier_save(m, ckpt))
				return fail("classifier_save", m);
			if (!(r = classifier_create()) || classifier_load(r, ckpt))
				return fail("classifier_load", r);
		} else if (r && s > steps / 2) {
			/* the resumed instance (its settings came with the state) repeats the steps bit
			 * for bit */
			classifier_set_lr(r, lr_at(s, steps, warm, 0.003f));
			if (classifier_step(r, x, y, &resumed))
				return fail("classifier_step (resumed)", r);
			same &= memcmp(&resumed, &loss, sizeof loss) == 0;
		}
	}
	for (int i = 0; i < B; i++) {
		int best = 0;
		for (int k = 1; k < C; k++)
			if (logits[i * C + k] > logits[i * C + best])
				best = k;
		right += best == y[i];
	}
	printf("accuracy %d/%d, loss %.6f -> %.6f; resumed from %s: %s\n", right, B, first, loss, ckpt,
	       same ? "the same losses" : "DIFFERENT losses");
	classifier_destroy(m);
	classifier_destroy(r);
	return !(loss < first && same);
}
