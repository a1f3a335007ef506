/* lrsched.c: mtc-run's --lr-schedule: the learning rate of every step, from a file of one
 * value a line or from a named schedule, the same for the interpreter and for modules. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "mtc/mtc-rt.h"
#include "run.h"

/* "cosine:W:T": W warm-up steps, T steps in all. */
static int
named(LrSched *s, const char *spec)
{
	char *e;
	long w, t;

	if (strncmp(spec, "cosine:", 7) != 0)
		return 0;
	errno = 0;
	w = strtol(spec + 7, &e, 10);
	if (errno || *e != ':' || w < 0)
		fatal("--lr-schedule %s: expected cosine:WARMUP:TOTAL (steps, WARMUP <= TOTAL)", spec);
	t = strtol(e + 1, &e, 10);
	if (errno || *e || t < 1 || w > t)
		fatal("--lr-schedule %s: expected cosine:WARMUP:TOTAL (steps, WARMUP <= TOTAL)", spec);
	s->warmup = w;
	s->total = t;
	s->cosine = 1;
	return 1;
}

void
lr_load(LrSched *s, const char *spec)
{
	size_t len;
	char *text, *p;
	int line = 0;

	memset(s, 0, sizeof *s);
	if (!spec || named(s, spec))
		return;
	if (!(text = slurp(spec, &len)))
		fatal("cannot read --lr-schedule '%s': %s", spec, strerror(errno));
	if (memchr(text, 0, len))
		fatal("%s: not a text file of learning rates", spec);
	for (p = text; *p;) {
		char *nl = strchr(p, '\n'), *e;
		double v;
		if (nl)
			*nl = 0;
		line++;
		errno = 0;
		v = strtod(p, &e);
		while (*e == ' ' || *e == '\t' || *e == '\r')
			e++;
		if (e == p || *e || errno)
			fatal("%s:%d: expected one learning rate, found '%.40s'", spec, line, p);
		if (!mtc_hyper_ok("lr", v))
			fatal("%s:%d: the learning rate must be %s, got %g", spec, line,
			      mtc_hyper_range("lr"), v);
		s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
		s->v[s->n++] = v;
		p = nl ? nl + 1 : p + strlen(p);
	}
	free(text);
	if (!s->n)
		fatal("%s: no learning rate in the file", spec);
}

/* HuggingFace's get_cosine_schedule_with_warmup as LambdaLR applies it: the k-th step (from
 * 1) runs at base * f(k - 1), f(s) = s / W while s < W, then 0.5 (1 + cos(pi (s - W) / (T - W))),
 * not below 0. */
double
lr_at(const LrSched *s, long k, double base)
{
	if (s->cosine) {
		double st = (double)(k - 1), w = (double)s->warmup, t = (double)s->total, f;
		if (st < w)
			return base * st / (w > 1 ? w : 1);
		f = 0.5 * (1 + cos(M_PI * (st - w) / (t - w > 1 ? t - w : 1)));
		return base * (f > 0 ? f : 0);
	}
	return s->v[k <= s->n ? k - 1 : s->n - 1];
}
