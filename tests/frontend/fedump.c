/* fedump.c: compile a tdsl file with the frontend alone and print what it built, one line per
 * decl and op (a stand-in for the IR printer the frontend's tests need not depend on). */
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

static char *
slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!fp)
		return NULL;
	do {
		if (cap - n < 4096)
			buf = xrealloc(buf, (cap = 2 * cap + 8192) + 1);
		n += r = fread(buf + n, 1, cap - n, fp);
	} while (r > 0);
	fclose(fp);
	buf[n] = 0;
	*len = n;
	return buf;
}

int
main(int argc, char **argv)
{
	char ts[256];
	Src src = { 0 };
	FeOpts o = { (const char **)argv + 2, argc - 2 };
	Module *m;
	Func *f;

	if (argc < 2) {
		fprintf(stderr, "usage: fedump FILE.tdsl [NAME=INT...]\n");
		return 2;
	}
	src.name = argv[1];
	if (!(src.text = slurp(argv[1], &src.len))) {
		fprintf(stderr, "fedump: cannot read %s\n", argv[1]);
		return 2;
	}
	if (!(m = fe_compile(&src, &o)))
		return 1;
	f = m->fwd;
	printf("model %s\n", m->name);
	for (int i = 0; i < m->ndecl; i++) {
		Decl *d = &m->decl[i];
		printf("%s %s : %s init=%d(%g,%g) @%d:%d\n", d->role == R_INPUT ? "input" : "param", d->name,
		       type_str(&d->ty, ts, sizeof ts), d->init.kind, d->init.a, d->init.b, d->loc.line, d->loc.col);
	}
	if (m->opt.kind)
		printf("optimizer %s lr=%g momentum=%g beta1=%g beta2=%g eps=%g @%d:%d\n",
		       m->opt.kind == OPT_SGD ? "sgd" : "adam", m->opt.lr, m->opt.momentum, m->opt.beta1,
		       m->opt.beta2, m->opt.eps, m->opt.loc.line, m->opt.loc.col);
	for (int i = 0; i < f->nop; i++) {
		Op *op = &f->op[i];
		printf("%%%s : %s = %s", f->val[op->res].name, type_str(&f->val[op->res].ty, ts, sizeof ts),
		       opinfo[op->kind].name);
		for (int k = 0; k < op->nargs; k++)
			printf("%s%%%s", k ? ", " : " ", f->val[op->args[k]].name);
		for (int k = 0; k < (op_iattr_is_list(op->kind) ? op->nia : op_niattr(op->kind)); k++)
			printf(" i%d=%lld", k, (long long)op->ia[k]);
		for (int k = 0; k < op_nfattr(op->kind); k++)
			printf(" f%d=%g", k, op->fa[k]);
		printf(" @%d:%d\n", op->loc.line, op->loc.col);
	}
	for (int i = 0; i < f->nout; i++)
		printf("output %s %%%s\n", f->outname[i], f->val[f->out[i]].name);
	if (f->loss >= 0)
		printf("loss %%%s\n", f->val[f->loss].name);
	mod_free(m);
	free((char *)src.text);
	return 0;
}
