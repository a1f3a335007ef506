/* build.c: constructing modules, functions, values and ops; the one place ops are appended. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

Module *
mod_new(const char *name, const char *file)
{
	Arena *a = arena_new();
	Module *m = aalloc(a, sizeof *m);

	m->arena = a;
	m->name = astrdup(a, name);
	m->file = astrdup(a, file ? file : "");
	return m;
}

void
mod_free(Module *m)
{
	Func *fs[2];

	if (!m)
		return;
	fs[0] = m->fwd;
	fs[1] = m->step;
	for (int i = 0; i < 2; i++)
		func_free(fs[i]);
	free(m->decl);
	free(m->dtab);
	arena_free(m->arena);
}

static const char *dname(const void *m, int d) { return ((const Module *)m)->decl[d].name; }
static const char *vname(const void *f, int v) { return ((const Func *)f)->val[v].name; }

/* The decl table: the first decl of a name wins (the verifier reports later ones). */
int
mod_find_decl(const Module *m, const char *name)
{
	return ntab_find(m->dtab, m->dcap, name, dname, m);
}

int
mod_decl(Module *m, const char *name, Role role, Type ty, Init init, Loc loc)
{
	Decl *d;

	if (m->fwd || m->step)
		die("declarations must precede functions");
	if (m->ndecl == m->capdecl) {
		m->capdecl = m->capdecl ? 2 * m->capdecl : 16;
		m->decl = xrealloc(m->decl, m->capdecl * sizeof *m->decl);
	}
	d = &m->decl[m->ndecl];
	memset(d, 0, sizeof *d);
	d->name = astrdup(m->arena, name);
	d->role = role;
	d->ty = ty;
	d->init = init;
	d->of = -1;
	d->loc = loc;
	ntab_add(&m->dtab, &m->dcap, m->ndecl, dname, m);
	return m->ndecl++;
}

/* Where f's names and operand lists go: its own arena if it has one, else the module's. */
static Arena *
arena_of(const Func *f)
{
	return f->own ? f->own : f->mod->arena;
}

int
func_find(const Func *f, const char *name)
{
	return ntab_find(f->htab, f->hcap, name, vname, f);
}

int
func_value(Func *f, const char *name, Type ty)
{
	char buf[64], *nm;
	Value *v;

	if (!name) {
		snprintf(buf, sizeof buf, "%d", f->nval);
		name = buf;
	}
	nm = astrdup(arena_of(f), name);
	for (int k = 1; func_find(f, nm) >= 0; k++)
		nm = asprintf_a(arena_of(f), "%s.%d", name, k);
	if (f->nval == f->capval) {
		f->capval = f->capval ? 2 * f->capval : 64;
		f->val = xrealloc(f->val, f->capval * sizeof *f->val);
	}
	v = &f->val[f->nval];
	memset(v, 0, sizeof *v);
	v->name = nm;
	v->ty = ty;
	v->def = -1;
	v->decl = -1;
	v->off = -1;
	ntab_add(&f->htab, &f->hcap, f->nval, vname, f);
	return f->nval++;
}

void
mod_set_host(Module *m, int d)
{
	m->decl[d].host = 1;
	if (m->fwd && d < m->fwd->nval)
		m->fwd->val[d].host = 1;
	if (m->step && d < m->step->nval)
		m->step->val[d].host = 1;
}

/* The values of m's decls, into an empty f. */
static void
func_decls(Func *f, Module *m)
{
	for (int i = 0; i < m->ndecl; i++) {
		int v = func_value(f, m->decl[i].name, m->decl[i].ty);
		if (v != i)
			die("decl %s is not unique", m->decl[i].name);
		f->val[v].decl = i;
		f->val[v].host = m->decl[i].host;
		f->val[v].loc = m->decl[i].loc;
	}
}

/* A function of m named name, its names and operand lists in own (NULL: the module's arena),
 * with the values of m's decls. */
static Func *
func_make(Module *m, const char *name, Arena *own)
{
	Func *f = aalloc(m->arena, sizeof *f);

	f->mod = m;
	f->loss = -1;
	f->name = astrdup(m->arena, name);
	f->own = own;
	func_decls(f, m);       /* the decls' value names too: in own where there is one */
	return f;
}

Func *
func_new(Module *m, const char *name)
{
	return func_make(m, name, NULL);
}

Func *
func_new_own(Module *m, const char *name)
{
	return func_make(m, name, arena_new());
}

/* The heap parts of a function and its own arena (remat's); the struct itself, and names in
 * the module's arena, stay there. */
void
func_free(Func *f)
{
	if (!f)
		return;
	arena_free(f->own);
	free(f->val);
	free(f->op);
	free(f->htab);
	free(f->out);
	free(f->outname);
	memset(f, 0, sizeof *f);
}

void
func_reset(Func *f)
{
	f->nval = f->nop = f->nout = 0;
	f->loss = -1;
	if (f->htab)
		memset(f->htab, 0, f->hcap * sizeof *f->htab);
	func_decls(f, f->mod);
}

/* Room for nop ops and nval values: a pass that knows how large the function it builds will
 * be makes its arrays once, not by doubling (relax.c builds thousands of steps). */
void
func_reserve(Func *f, int nop, int nval)
{
	if (nop > f->capop) {
		f->capop = nop;
		f->op = xrealloc(f->op, f->capop * sizeof *f->op);
	}
	if (nval > f->capval) {
		f->capval = nval;
		f->val = xrealloc(f->val, f->capval * sizeof *f->val);
	}
}

/* How many integer attributes a caller's array holds for kind k: callers may pass arrays
 * just that long, so never read more. */
static size_t
niattr(Opk k, int nia)
{
	int n = op_iattr_is_list(k) ? nia : op_niattr(k);
	return n < 0 ? 0 : n > MAXIA ? MAXIA : (size_t)n;
}

int
op_infer(const Func *f, Opk k, const int *args, int nargs, const int64_t *ia, int nia,
         const double *fa, Type *r, char *err, size_t nerr)
{
	Op op;

	memset(&op, 0, sizeof op);
	op.kind = k;
	op.args = (int *)args;
	op.nargs = nargs;
	op.nia = nia;
	op.of = -1;
	if (ia)
		memcpy(op.ia, ia, niattr(k, nia) * sizeof *ia);
	if (fa)
		memcpy(op.fa, fa, op_nfattr(k) * sizeof *fa);
	if (opinfo[k].flags & F_VARIADIC ? nargs < opinfo[k].nargs : nargs != opinfo[k].nargs) {
		snprintf(err, nerr, "%s takes %d operand%s, got %d", opinfo[k].name, opinfo[k].nargs,
		         opinfo[k].nargs == 1 ? "" : "s", nargs);
		return -1;
	}
	for (int i = 0; i < nargs; i++)
		if (args[i] < 0 || args[i] >= f->nval) {
			snprintf(err, nerr, "%s: operand %d is not a value", opinfo[k].name, i + 1);
			return -1;
		}
	return opinfo[k].shape(f, &op, r, err, nerr);
}

int
func_op(Func *f, Opk k, Phase ph, const int *args, int nargs, const int64_t *ia, int nia,
        const double *fa, const Type *r, const char *name, Loc loc)
{
	Op *op;
	int *a = aalloc(arena_of(f), (nargs ? nargs : 1) * sizeof *a);

	if (nargs)
		memcpy(a, args, nargs * sizeof *a);
	if (f->nop == f->capop) {
		f->capop = f->capop ? 2 * f->capop : 64;
		f->op = xrealloc(f->op, f->capop * sizeof *f->op);
	}
	op = &f->op[f->nop];
	memset(op, 0, sizeof *op);
	op->kind = k;
	op->phase = ph;
	op->args = a;
	op->nargs = nargs;
	op->nia = nia;
	op->of = -1;
	op->loc = loc;
	if (ia)
		memcpy(op->ia, ia, niattr(k, nia) * sizeof *ia);
	if (fa)
		memcpy(op->fa, fa, op_nfattr(k) * sizeof *fa);
	op->res = -1;
	if (!(opinfo[k].flags & F_NORES)) {
		op->res = func_value(f, name, *r);
		f->val[op->res].def = f->nop;
		f->val[op->res].loc = loc;
		f->val[op->res].host = k == OP_SWAPOUT || k == OP_SWAPHOME || (opinfo[k].flags & F_COLL);
	}
	return f->nop++;
}

void
func_output(Func *f, const char *name, int val)
{
	f->out = xrealloc(f->out, (f->nout + 1) * sizeof *f->out);
	f->outname = xrealloc(f->outname, (f->nout + 1) * sizeof *f->outname);
	f->out[f->nout] = val;
	f->outname[f->nout] = astrdup(arena_of(f), name);
	f->nout++;
}

void
func_relink(Func *f)
{
	for (int v = 0; v < f->nval; v++)
		f->val[v].def = -1;
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].res >= 0)
			f->val[f->op[i].res].def = i;
}
