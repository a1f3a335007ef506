/* tb.c: the autodiff test bench: decls with chosen test values, ops, gradient functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

double
tb_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1p-53;
}

void
tb_init(Tb *t, const char *name)
{
	memset(t, 0, sizeof *t);
	t->m = mod_new(name, "test");
}

void
tb_free(Tb *t)
{
	mod_free(t->m);
	t->m = NULL;
}

int
tb_decl(Tb *t, const char *name, Role r, DType dt, Shape sh, Vkind vk, double lo, double hi)
{
	Func *fw = t->m->fwd;
	int i;

	t->m->fwd = NULL;       /* a late decl: the caller rebuilds the forward */
	i = mod_decl(t->m, name, r, (Type){ dt, sh }, (Init){ .kind = r == R_INPUT ? INIT_NONE : INIT_ZEROS },
	             (Loc){ 1, 1 });
	t->m->fwd = fw;
	if (i >= 64)
		die("too many decls");
	t->vk[i] = vk;
	t->lo[i] = lo;
	t->hi[i] = hi;
	t->ndecl = i + 1;
	return i;
}

int
tb_op(Tb *t, Opk k, const int *args, int n, const int64_t *ia, int nia, const double *fa,
      const Shape *given)
{
	Type g = { F32, given ? *given : (Shape){0} };
	int i;

	if (!t->m->fwd)
		t->m->fwd = func_new(t->m, "forward");
	i = build_op(t->m->fwd, k, PH_FWD, args, n, ia, nia, fa, given ? &g : NULL, NULL, (Loc){ 2, 1 });
	return t->m->fwd->op[i].res;
}

int tb_op1(Tb *t, Opk k, int a) { return tb_op(t, k, &a, 1, NULL, 0, NULL, NULL); }
int tb_op2(Tb *t, Opk k, int a, int b) { int x[2] = { a, b }; return tb_op(t, k, x, 2, NULL, 0, NULL, NULL); }

int
tb_late_input(Tb *t, const char *name, Type ty, int *v)
{
	int d = tb_decl(t, name, R_INPUT, ty.dt, ty.sh, V_UNIF, -1, 1), *map;
	Func *nf;

	map = xmalloc(t->m->fwd->nval * sizeof *map);
	nf = func_rebuild(t->m->fwd, NULL, map);
	*v = map[*v];
	func_adopt(t->m->fwd, nf);
	free(map);
	return d;
}

Interp *
tb_interp(Tb *t)
{
	Interp *in = interp_new(t->m, 1);

	for (int i = 0; i < t->ndecl; i++) {
		Tensor *x = interp_decl(in, i);
		int64_t n = shape_numel(&x->ty.sh);
		float *f = x->data;
		int32_t *iv = x->data;
		double lo = t->lo[i], hi = t->hi[i];

		for (int64_t j = 0; j < n; j++)
			switch (t->vk[i]) {
			case V_UNIF: f[j] = (float)(lo + (hi - lo) * tb_rand()); break;
			case V_SIGNED: f[j] = (float)((lo + (hi - lo) * tb_rand()) * (tb_rand() < 0.5 ? -1 : 1)); break;
			case V_GRID: f[j] = (float)(lo + hi * (double)j); break;
			case V_INT: iv[j] = (int32_t)(tb_rand() * hi); break;
			}
		for (int64_t j = n - 1; t->vk[i] == V_GRID && j > 0; j--) {
			int64_t k = (int64_t)(tb_rand() * (double)(j + 1));
			float s = f[j];
			f[j] = f[k];
			f[k] = s;
		}
	}
	return in;
}

Func *
tb_gradfunc(Module *m, int *pars, int *npar)
{
	Func *s = m->step, *g;
	uint8_t *keep = xcalloc(s->nop, 1);
	int *map = xmalloc(s->nval * sizeof *map);

	for (int i = 0; i < s->nop; i++)
		keep[i] = s->op[i].phase != PH_UPD;
	g = func_rebuild(s, keep, map);
	g->name = "grads";
	g->loss = -1;
	*npar = 0;
	for (int i = 0; i < s->nop; i++) {
		const Op *op = &s->op[i];
		int gv;
		switch (op->kind) {
		case OP_SGD: gv = op->args[1]; break;
		case OP_SGDM: gv = op->args[2]; break;
		case OP_ADAM: gv = op->args[3]; break;
		default: continue;
		}
		pars[(*npar)++] = op->args[0];
		func_output(g, s->val[op->args[0]].name, map[gv]);
	}
	free(keep);
	free(map);
	return g;
}

void
tb_funcfree(Func *f)
{
	Func dead = {0};
	func_adopt(&dead, f);
	func_adopt(&dead, &(Func){0});
}
