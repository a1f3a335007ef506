/* hyper.c: the valid ranges of the optimizer hyperparameters, one table for the compiler's
 * diagnostics, every target's setters (MODEL_set_lr ...) and mtc-run, so a value the compiler
 * accepts is one every instance accepts, and PyTorch's optimizers would too. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mtc/mtc-rt.h"

static const struct {
	const char *name;
	int below1;          /* also < 1 */
	const char *say;
} tab[] = {
	{ "lr", 0, "a finite number >= 0" },
	{ "momentum", 1, "in [0, 1)" },
	{ "beta1", 1, "in [0, 1)" },
	{ "beta2", 1, "in [0, 1)" },
	{ "eps", 0, "a finite number >= 0" },
	{ "weight_decay", 0, "a finite number >= 0" },
	{ "clip_norm", 0, "a finite number >= 0" },
};

static int
find(const char *name)
{
	for (int i = 0; name && i < (int)(sizeof tab / sizeof *tab); i++)
		if (strcmp(tab[i].name, name) == 0)
			return i;
	return -1;
}

int
mtc_hyper_ok(const char *name, double v)
{
	int i = find(name);
	return i >= 0 && v >= 0 && isfinite(v) && isfinite((float)v) && (!tab[i].below1 || v < 1);
}

const char *
mtc_hyper_range(const char *name)
{
	int i = find(name);
	return i >= 0 ? tab[i].say : "a known hyperparameter";
}

int
mtc_hyper_check(const char *who, const char *name, double v, char *err, size_t n)
{
	if (mtc_hyper_ok(name, v))
		return 0;
	if (find(name) < 0)
		snprintf(err, n, "%s: no hyperparameter '%s'", who, name);
	else
		snprintf(err, n, "%s: %s must be %s, got %g", who, name, mtc_hyper_range(name), v);
	return MTC_EINVAL;
}
