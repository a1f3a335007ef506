/* build.c: types and ops built in C for the tests (build.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"

Type
ty(DType dt, int rank, ...)
{
	Type t = { dt, { rank, { 0 } } };
	va_list ap;

	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		t.sh.d[i] = va_arg(ap, int);
	va_end(ap);
	return t;
}

Type
ty_of(const char *s)
{
	Type t = { .dt = s[0] == 'i' ? I32 : F32 };
	const char *p = strchr(s, '[') + 1;

	while (*p && *p != ']') {
		t.sh.d[t.sh.rank++] = strtoll(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
	return t;
}

int
build_op(Func *f, Opk k, Phase ph, const int *args, int nargs, const int64_t *ia, int nia,
         const double *fa, const Type *given, const char *name, Loc loc)
{
	Type r = given ? *given : (Type){0};
	char err[300];

	if (op_infer(f, k, args, nargs, ia, nia, fa, &r, err, sizeof err))
		die("test: %s: %s", opinfo[k].name, err);
	return func_op(f, k, ph, args, nargs, ia, nia, fa, &r, name, loc);
}

int
hyper_decl(Module *m, const char *name, double v)
{
	char nm[64];

	snprintf(nm, sizeof nm, "opt.%s", name);
	return mod_decl(m, nm, R_HYPER, ty(F32, 0), (Init){ .kind = INIT_FULL, .a = v }, (Loc){0, 0});
}

/* m's IR text (the caller frees it). */
static char *
printed(const Module *m)
{
	char *s = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&s, &n);

	ir_print(fp, m);
	fclose(fp);
	return s;
}

int
roundtrips(const Module *m, const char *name)
{
	char *a = printed(m), *b = NULL;
	Src s = { name, a, strlen(a), 0 };
	Module *m2 = ir_parse(&s);
	int ok = 0;

	if (m2) {
		b = printed(m2);
		ok = strcmp(a, b) == 0;
		mod_free(m2);
	}
	free(a);
	free(b);
	return ok;
}
