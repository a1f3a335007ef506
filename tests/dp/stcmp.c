/* stcmp.c: stcmp A B TOL [FRAC [NAME...]]: do the safetensors files A and B hold the same
 * tensors (names, dtypes, shapes; with NAMEs, those of A named, or with ~TEXT all of A's
 * but those whose names contain TEXT) with values within TOL
 * relative, tensor by tensor (|a - b| <= TOL max |b|), but for at most a fraction FRAC
 * (default 0) of each tensor's elements? Prints the worst
 * relative difference and the most elements beyond TOL; exit status 0 when within, 1 when
 * not, 2 on a bad file. The data-parallel tests compare params after training with it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int
main(int argc, char **argv)
{
	char err[512];
	mtc_st_file *a, *b;
	double tol, frac, worst = 0, wfrac = 0;
	const char *wname = "-", *fname = "-";
	int bad = 0, nnamed = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: stcmp A.safetensors B.safetensors TOL [FRAC [NAME...]]\n");
		return 2;
	}
	tol = atof(argv[3]);
	frac = argc >= 5 ? atof(argv[4]) : 0;
	if (!(a = mtc_st_read(argv[1], err, sizeof err)) || !(b = mtc_st_read(argv[2], err, sizeof err))) {
		fprintf(stderr, "stcmp: %s\n", err);
		return 2;
	}
	if (a->n != b->n && argc <= 5) {
		printf("%d tensors against %d\n", a->n, b->n);
		return 1;
	}
	for (int i = 0; i < a->n; i++) {
		const mtc_st_tensor *x = &a->t[i], *y = mtc_st_find(b, x->name);
		double dmax = 0, ymax = 0, rel, f;
		int64_t n = x->nbytes / 4, over = 0;
		int named = argc <= 5 || argv[5][0] == '~';
		for (int k = 5; k < argc; k++)
			if (argv[k][0] == '~' ? strstr(x->name, argv[k] + 1) != NULL : strcmp(argv[k], x->name) == 0)
				named = argv[k][0] != '~';
		if (!named)
			continue;
		nnamed++;
		if (!y || y->dtype != x->dtype || y->rank != x->rank || y->nbytes != x->nbytes ||
		    memcmp(y->shape, x->shape, sizeof x->shape[0] * (size_t)x->rank)) {
			printf("%s: missing or of another type in %s\n", x->name, argv[2]);
			bad = 1;
			continue;
		}
		for (int64_t k = 0; k < n; k++) {
			double p = x->dtype == MTC_ST_F32 ? ((const float *)x->data)[k] : ((const int32_t *)x->data)[k];
			double q = y->dtype == MTC_ST_F32 ? ((const float *)y->data)[k] : ((const int32_t *)y->data)[k];
			if (!(fabs(p - q) <= dmax))
				dmax = isnan(p - q) ? INFINITY : fabs(p - q);
			if (fabs(q) > ymax)
				ymax = fabs(q);
		}
		rel = dmax == 0 ? 0 : ymax > 0 ? dmax / ymax : INFINITY;
		if (rel > worst || isnan(rel)) {
			worst = rel;
			wname = x->name;
		}
		for (int64_t k = 0; k < n; k++) {
			double p = x->dtype == MTC_ST_F32 ? ((const float *)x->data)[k] : ((const int32_t *)x->data)[k];
			double q = y->dtype == MTC_ST_F32 ? ((const float *)y->data)[k] : ((const int32_t *)y->data)[k];
			over += !(fabs(p - q) <= tol * ymax);
		}
		f = n ? (double)over / (double)n : 0;
		if (f > wfrac) {
			wfrac = f;
			fname = x->name;
		}
		if (f > frac)
			bad = 1;
	}
	if (argc > 5 && argv[5][0] != '~' && nnamed != argc - 5) {
		printf("%d of the %d tensors named are not in %s\n", argc - 5 - nnamed, argc - 5, argv[1]);
		bad = 1;
	}
	printf("max relative difference %.3g (%s), most elements beyond %g: %.3g%% (%s)\n", worst, wname,
	       tol, 100 * wfrac, fname);
	mtc_st_free(a);
	mtc_st_free(b);
	return bad;
}
