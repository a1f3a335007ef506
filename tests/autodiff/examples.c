/* examples.c: every examples/NAME.tdsl through autodiff and simplify: the IR verifies,
 * prints and parses back, each param gets one update, the forward drops the loss, and three
 * steps in the interpreter lower the loss. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "../check.h"
#include "tb.h"

static char *
print(const Module *m, size_t *n)
{
	char *s = NULL;
	FILE *fp = open_memstream(&s, n);
	ir_print(fp, m);
	fclose(fp);
	return s;
}

static void
example(const char *dir, const char *file)
{
	char path[8192], err[256], *text, *txt2 = NULL, *txt3 = NULL;
	Src src = {0}, src2 = {0};
	FeOpts fo = {0};
	Module *m, *m2;
	int nparam = 0, nupd = 0, order = 1, nolossop = 1;
	size_t n2 = 0, n3 = 0;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	src.name = path;
	if (!(text = slurp(path, &src.len))) {
		check(0, "%s: readable", file);
		return;
	}
	src.text = text;
	m = fe_compile(&src, &fo);
	if (!m || m->fwd->loss < 0) {
		check(0, "%s: compiles to a trained model", file);
		free(text);
		return;
	}
	check(autodiff(m, &src) == 0 && ir_verify(m, "autodiff") == 0, "%s: autodiff verifies", file);
	simplify(m->fwd);
	simplify(m->step);
	check(ir_verify(m, "simplify") == 0, "%s: simplify verifies", file);
	for (int i = 0; i < m->ndecl; i++)
		nparam += m->decl[i].role == R_PARAM;
	for (int i = 0, first = 1; i < m->step->nop; i++) {
		Opk k = m->step->op[i].kind;
		nupd += k == OP_SGD || k == OP_SGDM || k == OP_ADAM;
		/* after dropout's counter's tick (first: the forward reads the counter it advanced) */
		if (first && k == OP_TICK)
			continue;
		order &= first || m->step->op[i].phase >= m->step->op[i - 1].phase;
		first = 0;
	}
	for (int i = 0; i < m->fwd->nop; i++)
		nolossop &= m->fwd->op[i].kind != OP_XENT && m->fwd->op[i].kind != OP_MSE;
	check(nupd == nparam, "%s: %d updates for %d params", file, nupd, nparam);
	check(order, "%s: step phases in order (a counter's tick,) fwd, bwd, upd", file);
	check(m->fwd->loss < 0 && nolossop, "%s: the forward computes no loss", file);

	txt2 = print(m, &n2);
	src2.name = "printed";
	src2.text = txt2;
	src2.len = n2;
	m2 = ir_parse(&src2);
	if (m2)
		txt3 = print(m2, &n3);
	check(m2 && ir_verify(m2, "parse") == 0 && n2 == n3 && memcmp(txt2, txt3, n2) == 0,
	         "%s: the step prints and parses back to the same text", file);

	{
		Interp *in = interp_new(m, 0);
		double l[3];
		int ok = 1;
		for (int k = 0; k < 3 && ok; k++) {
			ok = interp_run(in, m->step, err, sizeof err) == 0;
			l[k] = ok ? ((float *)interp_out(in, 0)->data)[0] : NAN;
		}
		check(ok && isfinite(l[0]) && l[1] < l[0] && l[2] < l[1],
		         "%s: 3 steps lower the loss (%.6g %.6g %.6g)", file, l[0], l[1], l[2]);
		interp_free(in);
	}
	mod_free(m2);
	mod_free(m);
	free(txt2);
	free(txt3);
	free(text);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	struct dirent *e;
	DIR *d;
	int n = 0;

	check_echo = 1;         /* the log shows every check's numbers */
	snprintf(dir, sizeof dir, "%s/examples", top ? top : ".");
	if (!(d = opendir(dir))) {
		check(0, "examples directory %s", dir);
		return done();
	}
	while ((e = readdir(d))) {
		size_t k = strlen(e->d_name);
		if (k > 5 && strcmp(e->d_name + k - 5, ".tdsl") == 0) {
			example(dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	check(n >= 3, "%d examples found", n);
	return done();
}
