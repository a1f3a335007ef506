/* verify.c: the IR's invariants: SSA, operand types against the op rules, in-place updates.
 *
 * needs: any module, however broken: every index is range-checked before it is followed.
 * fills: nothing. It reports each problem and counts them: ir_verify as an internal error (a
 * pass broke the IR), ir_parse (through ir_check) as a diagnostic of the .mir file. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct C {
	const Module *m;
	const Func *f;
	Report *rep;
	void *ctx;
	int n;
	int *mut;         /* decl -> index of the op that updated it in place, or -1 */
	int *uses;        /* value -> how many operands read it */
	int rel;          /* the next report's related op, or -1 */
} C;

static void
bad(C *c, int op, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	c->rep(c->ctx, c->f, op, c->rel, msg);
	c->rel = -1;
	c->n++;
}

static int
goodname(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && *s != '.')
			return 0;
	return 1;
}

int
type_ok(const Type *t)
{
	int64_t n = 4;

	if ((t->dt != F32 && t->dt != I32) || t->sh.rank < 0 || t->sh.rank > MAXRANK)
		return 0;
	for (int i = 0; i < t->sh.rank; i++)
		if (t->sh.d[i] < 1 || mul64(n, t->sh.d[i], &n))
			return 0;
	return 1;
}

static int
type_eq(const Type *a, const Type *b)
{
	return a->dt == b->dt && shape_eq(&a->sh, &b->sh);
}

/* A type as text, even a broken one. */
static const char *
TS(const Type *t, char *b)
{
	if (t->sh.rank < 0 || t->sh.rank > MAXRANK) {
		snprintf(b, MAXRANK * 24 + 8, "(a type of rank %d)", t->sh.rank);
		return b;
	}
	return type_str(t, b, MAXRANK * 24 + 8);
}

/* ---------- the module ---------- */

static void
check_decls(C *c)
{
	const Module *m = c->m;
	char b[MAXRANK * 24 + 8];
	int names = 1;

	for (int i = 0; i < m->ndecl; i++)
		if (!goodname(m->decl[i].name)) {
			bad(c, -1, "declaration %d has no valid name", i);
			names = 0;
		}
	for (int i = 0; i < m->ndecl; i++) {
		const Decl *d = &m->decl[i];
		if (!goodname(d->name))
			continue;
		if (names && mod_find_decl(m, d->name) != i)
			bad(c, -1, "%s is declared twice", d->name);
		if (d->role != R_INPUT && d->role != R_PARAM && d->role != R_STATE && d->role != R_BUFFER &&
		    d->role != R_HYPER)
			bad(c, -1, "%s has no valid role", d->name);
		if (d->role == R_HYPER && (d->ty.dt != F32 || d->ty.sh.rank != 0 || d->init.kind != INIT_FULL))
			bad(c, -1, "hyperparameter %s must be f32[] = full(value)", d->name);
		if (!type_ok(&d->ty))
			bad(c, -1, "%s has an invalid type %s", d->name, TS(&d->ty, b));
		if (d->init.kind < INIT_NONE || d->init.kind > INIT_VALUES)
			bad(c, -1, "%s has no valid initializer", d->name);
		else if (d->init.kind == INIT_VALUES && !d->init.vals)
			bad(c, -1, "%s: values without data", d->name);
		else if (d->init.kind == INIT_FILE && (d->ty.dt != F32 || !d->init.file || d->init.off < 0))
			bad(c, -1, "%s: values from a file need an f32 tensor, a file and an offset >= 0", d->name);
		else if (d->role == R_INPUT && d->init.kind != INIT_NONE)
			bad(c, -1, "input %s has an initializer", d->name);
		if (d->role == R_STATE ? d->of < -1 || d->of >= m->ndecl ||
		                         (d->of >= 0 && m->decl[d->of].role != R_PARAM)
		                       : d->of != -1)
			bad(c, -1, "%s: 'of' must name a param, and only for state", d->name);
	}
	if (!m->fwd)
		bad(c, -1, "the module has no forward function");
	if (m->step && m->opt.kind == OPT_NONE)
		bad(c, -1, "the module has a step function but no optimizer");
}

/* ---------- values ---------- */

static int
valid(const Func *f, int v)
{
	return v >= 0 && v < f->nval;
}

static const char *
vname(const Func *f, int v)
{
	return valid(f, v) && f->val[v].name ? f->val[v].name : "?";
}

/* Is v's defining op a real op that defines it (decls: always)? */
static int
defined(const Func *f, int v)
{
	const Value *x = &f->val[v];
	if (v < f->mod->ndecl)
		return 1;
	return x->def >= 0 && x->def < f->nop && f->op[x->def].res == v;
}

static void
check_values(C *c)
{
	const Func *f = c->f;
	const Module *m = c->m;
	char b[MAXRANK * 24 + 8];
	int names = 1;

	if (f->nval < m->ndecl)
		bad(c, -1, "the function has %d values for %d declarations", f->nval, m->ndecl);
	for (int v = 0; v < f->nval; v++)
		if (!goodname(f->val[v].name)) {
			bad(c, -1, "value %d has no valid name", v);
			names = 0;
		}
	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		if (!goodname(x->name))
			continue;
		if (names && func_find(f, x->name) != v)
			bad(c, -1, "two values are named %%%s", x->name);
		if (!type_ok(&x->ty))
			bad(c, -1, "%%%s has an invalid type %s", x->name, TS(&x->ty, b));
		if (v < m->ndecl) {
			const Decl *d = &m->decl[v];
			if (x->decl != v || x->def != -1 || x->host != d->host || !d->name || strcmp(d->name, x->name) ||
			    (type_ok(&x->ty) && !type_eq(&x->ty, &d->ty)))
				bad(c, -1, "value %d (%%%s) does not mirror declaration %s", v, x->name,
				    d->name ? d->name : "?");
			continue;
		}
		if (x->decl != -1)
			bad(c, -1, "%%%s is an op result but names declaration %d", x->name, x->decl);
		if (!defined(f, v))
			bad(c, -1, "%%%s has no defining op (def %d)", x->name, x->def);
		else if ((unsigned)f->op[x->def].kind < NOP &&   /* a bad kind: the op's own check */
		         x->host != (f->op[x->def].kind == OP_SWAPOUT || f->op[x->def].kind == OP_SWAPHOME ||
		                     (opinfo[f->op[x->def].kind].flags & F_COLL)))
			bad(c, x->def, "%%%s: 'host' must be set exactly on swap_out, swap_home and collective "
			    "results", x->name);
	}
}

/* ---------- ops ---------- */

/* An update on the host (its param in host memory): every operand lives there (but the
 * hyperparameters, settings the host reads where they are), the ones it writes are
 * declarations. */
static int
on_host(const Func *f, const Op *op)
{
	return (opinfo[op->kind].flags & F_MUT) && op->nargs > 0 && valid(f, op->args[0]) &&
	       f->val[op->args[0]].host;
}

static void
check_update(C *c, int i, const Op *op)
{
	const Func *f = c->f;
	const Module *m = c->m;
	int nw = opinfo[op->kind].nwritten, host = on_host(f, op);

	if (strcmp(f->name, "step") != 0)
		bad(c, i, "%s updates state outside the step function", opinfo[op->kind].name);
	if (host && op->kind == OP_TICK)
		bad(c, i, "tick runs on the accelerator, not on %%%s in host memory", vname(f, op->args[0]));
	for (int k = 0; host && k < op->nargs; k++)
		if (valid(f, op->args[k]) && !f->val[op->args[k]].host &&
		    !(f->val[op->args[k]].decl >= 0 && f->mod->decl[f->val[op->args[k]].decl].role == R_HYPER))
			bad(c, i, "an update on the host reads %%%s, which is on the accelerator",
			    vname(f, op->args[k]));
	for (int k = 0; k < nw && k < op->nargs; k++) {
		int v = op->args[k], home = 0;
		/* optimizer updates: the param, then its state; batch_norm_update: buffers; tick: a
		 * counter, optimizer state (adam's) or a buffer (dropout's) */
		Role want = op->kind == OP_BN_UPDATE ? R_BUFFER : op->kind != OP_TICK && k == 0 ? R_PARAM : R_STATE;
		if (!valid(f, v))
			continue;
		/* a param or state that lives in host memory is updated in its copy on the
		 * accelerator, or on the host in its home */
		if (v >= m->ndecl && f->val[v].def >= 0 && f->val[v].def < i &&
		    f->op[f->val[v].def].kind == OP_SWAPIN) {
			int d = f->op[f->val[v].def].args[0];
			if (valid(f, d) && d < m->ndecl && m->decl[d].host)
				v = d, home = 1;
		}
		/* ZeRO: a param's update writes this rank's shard of it, which unshard brings home */
		if (v >= m->ndecl && k == 0 && f->val[v].def >= 0 && f->val[v].def < i &&
		    f->op[f->val[v].def].kind == OP_SHARD) {
			int d = f->op[f->val[v].def].args[0];
			if (valid(f, d) && d < m->ndecl)
				v = d, home = 1;
		}
		if (v < m->ndecl && op->kind == OP_TICK && m->decl[v].role == R_BUFFER)
			want = R_BUFFER;
		if (v >= m->ndecl || m->decl[v].role != want) {
			bad(c, i, "updates %%%s in place, which is not %s", vname(f, v),
			    want == R_PARAM ? "a param" : want == R_BUFFER ? "a buffer" : "optimizer state");
			continue;
		}
		for (int j = 0; j < op->nargs; j++)
			if (j != k && op->args[j] == v)
				bad(c, i, "%%%s is both updated and operand %d", vname(f, v), j + 1);
		if (!home)
			c->mut[v] = i;
	}
}

/* copy_out in the step, into forward output `index`: the same dtype and rank, the same dims
 * but the first, which the copy's rows from `start` on fit (a micro-batch's slice). */
static void
check_copyout(C *c, int i, const Op *op)
{
	const Module *m = c->m;
	const Type *x = &c->f->val[op->args[0]].ty, *o;
	int64_t k = op->ia[0], inner = 1;
	int ok;

	if (strcmp(c->f->name, "step") != 0 || !m->fwd || k < 0 || k >= m->fwd->nout ||
	    !valid(m->fwd, m->fwd->out[k]) || !type_ok(&m->fwd->val[m->fwd->out[k]].ty)) {
		bad(c, i, "copy_out into output %lld, which the forward does not have (or not in the step)",
		    (long long)k);
		return;
	}
	o = &m->fwd->val[m->fwd->out[k]].ty;
	ok = x->dt == o->dt && x->sh.rank == o->sh.rank;
	for (int d = 1; ok && d < x->sh.rank; d++) {
		ok = x->sh.d[d] == o->sh.d[d];
		inner *= o->sh.d[d];
	}
	if (ok && x->sh.rank > 0)
		ok = inner > 0 && op->ia[1] % inner == 0 && op->ia[1] / inner + x->sh.d[0] <= o->sh.d[0];
	else if (ok)
		ok = op->ia[1] == 0;
	if (!ok)
		bad(c, i, "copy_out of %%%s from element %lld does not fit output %s", vname(c->f, op->args[0]),
		    (long long)op->ia[1], m->fwd->outname[k]);
}

static void
check_attrs(C *c, int i, const Op *op)
{
	static const char *const flag[] = { "ta", "tb", "keepdims" };

	if (op_iattr_is_list(op->kind) && (op->nia < 0 || op->nia > MAXIA))
		bad(c, i, "attribute list of length %d", op->nia);
	for (int k = 0; k < 3; k++) {
		int a = op_iattr_index(op->kind, flag[k]);
		if (a >= 0 && op->ia[a] != 0 && op->ia[a] != 1)
			bad(c, i, "%s must be 0 or 1, not %lld", flag[k], (long long)op->ia[a]);
	}
}

/* The operands: in range, defined earlier, not in host memory, not updated already. */
static int
check_args(C *c, int i, const Op *op)
{
	const Func *f = c->f;
	int ok = 1;

	for (int k = 0; k < op->nargs; k++) {
		int v = op->args[k];
		const Value *x;
		if (!valid(f, v)) {
			bad(c, i, "operand %d is not a value (%d)", k + 1, v);
			ok = 0;
			continue;
		}
		x = &f->val[v];
		if (!defined(f, v) || (v >= c->m->ndecl && x->def >= i)) {
			bad(c, i, "uses %%%s before its definition", vname(f, v));
			ok = 0;
		}
		if (!type_ok(&x->ty))
			ok = 0;
		if (x->host && op->kind != OP_SWAPIN && op->kind != OP_WAIT && op->kind != OP_UNBUCKET &&
		    !(op->kind == OP_UNSHARD && k == 1) &&
		    !(op->kind == OP_SWAPHOME && k == 0) && !on_host(f, op))
			bad(c, i, "reads %%%s, which lives in host memory", vname(f, v));
		/* adam_update reads the step counter its tick advanced: that is the design (a copy of
		 * it goes to the host for the updates there), and so does dropout (its mask); a batch_norm_update updates running statistics an earlier
		 * one updated (a batch norm applied twice, as PyTorch's module called twice) */
		if (v < c->m->ndecl && c->mut[v] >= 0 &&
		    !((op->kind == OP_ADAM || op->kind == OP_ADAMW || op->kind == OP_SWAPOUT) &&
		      f->op[c->mut[v]].kind == OP_TICK) &&
		    !(op->kind == OP_BN_UPDATE && k < 2 && f->op[c->mut[v]].kind == OP_BN_UPDATE) &&
		    !(op->kind == OP_DROPOUT && f->op[c->mut[v]].kind == OP_TICK) &&
		    (c->rel = c->mut[v]) >= 0)
			bad(c, i, "reads %%%s after op %d updated it in place", vname(f, v), c->mut[v]);
	}
	return ok;
}

static void
check_op(C *c, int i)
{
	const Func *f = c->f;
	const Op *op = &f->op[i];
	const OpInfo *oi;
	char err[400], b1[MAXRANK * 24 + 8], b2[MAXRANK * 24 + 8];
	Type r = {0};
	int ok, r_ok;

	if ((unsigned)op->kind >= NOP) {
		bad(c, i, "no op has kind %d", (int)op->kind);
		return;
	}
	oi = &opinfo[op->kind];
	if (op->nargs < 0 || (op->nargs > 0 && !op->args)) {
		bad(c, i, "has no operand array for %d operands", op->nargs);
		return;
	}
	if ((unsigned)op->phase > PH_MEM)
		bad(c, i, "no phase %d", (int)op->phase);
	if (oi->flags & F_VARIADIC ? op->nargs < oi->nargs : op->nargs != oi->nargs) {
		bad(c, i, "has %d operands, %s takes %s%d", op->nargs, oi->name,
		    oi->flags & F_VARIADIC ? "at least " : "", oi->nargs);
		return;
	}
	ok = check_args(c, i, op);
	check_attrs(c, i, op);
	if (oi->flags & F_MUT)
		check_update(c, i, op);
	if (op->kind == OP_COPYOUT && ok)
		check_copyout(c, i, op);
	/* a workspace: a `workspace` result, overwritten by the one op that reads it */
	if ((oi->flags & F_WS) && ok && op->nargs > oi->nargs) {
		int v = op->args[op->nargs - 1], d = f->val[v].def;
		if (d < 0 || d >= f->nop || f->op[d].kind != OP_WORKSPACE || c->uses[v] != 1)
			bad(c, i, "the workspace %%%s of %s must be a workspace result that nothing else reads",
			    vname(f, v), oi->name);
	}
	if (op->kind == OP_SWAPHOME && ok && op->args[0] < c->m->ndecl) {
		if (c->m->decl[op->args[0]].role == R_INPUT)
			bad(c, i, "swap_home into %%%s, which is an input", vname(f, op->args[0]));
		c->mut[op->args[0]] = i;
	}

	/* a bucket is read only once its collective is complete */
	if ((op->kind == OP_UNBUCKET || op->kind == OP_UNSHARD) && ok) {
		int b = op->args[op->kind == OP_UNSHARD], w = 0;
		for (int j = f->val[b].def + 1; j < i && !w; j++)
			w = f->op[j].kind == OP_WAIT && f->op[j].args[0] == b;
		if (!w && f->val[b].def >= 0)
			bad(c, i, "%s of %%%s before the wait on its collective", oi->name, vname(f, b));
	}

	r_ok = valid(f, op->res) && op->res >= c->m->ndecl;
	if (oi->flags & F_NORES) {
		if (op->res != -1)
			bad(c, i, "%s has no result, but defines %%%s", oi->name, vname(f, op->res));
		r_ok = 0;
	} else if (!r_ok) {
		bad(c, i, "result is not an op value (%d)", op->res);
		ok = 0;
	} else if (f->val[op->res].def != i) {
		bad(c, i, "defines %%%s, which op %d defines", vname(f, op->res), f->val[op->res].def);
	} else if (!type_ok(&f->val[op->res].ty)) {
		ok = 0;
	}

	if ((op->phase == PH_REC) != (op->of >= 0))
		bad(c, i, "a recompute op (phase rec) and only it names the value it recomputes");
	else if (op->of >= 0) {
		const Value *o = valid(f, op->of) ? &f->val[op->of] : NULL;
		if (!o || op->of < c->m->ndecl || !defined(f, op->of) || o->def >= i)
			bad(c, i, "recomputes %%%s, which no earlier op defines", vname(f, op->of));
		else if (r_ok && !type_eq(&o->ty, &f->val[op->res].ty))
			bad(c, i, "recomputes %%%s of type %s as %s", o->name, TS(&o->ty, b1),
			    TS(&f->val[op->res].ty, b2));
	}

	/* The shape rule, once every value it reads is sound. */
	if (!ok)
		return;
	if (op->kind == OP_WAIT && (f->val[op->args[0]].def >= f->nop ||
	    (f->val[op->args[0]].def >= 0 && (unsigned)f->op[f->val[op->args[0]].def].kind >= NOP)))
		return;         /* sh_wait looks at the defining op's kind */
	if ((oi->flags & F_GIVEN) && r_ok)
		r = f->val[op->res].ty;
	if (op_infer(f, op->kind, op->args, op->nargs, op->ia, op->nia, op->fa, &r, err, sizeof err))
		bad(c, i, "%s", err);
	else if (r_ok && !type_eq(&r, &f->val[op->res].ty))
		bad(c, i, "result is %s, but %s gives %s", TS(&f->val[op->res].ty, b1), oi->name,
		    TS(&r, b2));
}

static void
check_outputs(C *c)
{
	const Func *f = c->f;
	char b[MAXRANK * 24 + 8];

	for (int i = 0; i < f->nout; i++) {
		if (!f->outname || !goodname(f->outname[i]))
			bad(c, -1, "output %d has no valid name", i);
		else
			for (int k = 0; k < i; k++)
				if (goodname(f->outname[k]) && strcmp(f->outname[k], f->outname[i]) == 0)
					bad(c, -1, "two outputs are named %s", f->outname[i]);
		if (!f->out || !valid(f, f->out[i]) || !defined(f, f->out[i]))
			bad(c, -1, "output %d is not a defined value", i);
		else if (f->val[f->out[i]].host)
			bad(c, -1, "output %%%s lives in host memory", vname(f, f->out[i]));
	}
	if (f->loss == -1)
		return;
	if (!valid(f, f->loss) || !defined(f, f->loss))
		bad(c, -1, "the loss is not a defined value");
	else if (f->val[f->loss].ty.dt != F32 || f->val[f->loss].ty.sh.rank != 0)
		bad(c, -1, "the loss %%%s must be f32[], not %s", vname(f, f->loss),
		    TS(&f->val[f->loss].ty, b));
}

static void
check_func(C *c, const Func *f)
{
	c->f = f;
	if (!f->name || f->mod != c->m) {
		bad(c, -1, "the function does not belong to the module");
		return;
	}
	check_values(c);
	if (f->nval < c->m->ndecl)
		return;
	c->mut = xcalloc(c->m->ndecl ? c->m->ndecl : 1, sizeof *c->mut);
	c->uses = xcalloc(f->nval ? f->nval : 1, sizeof *c->uses);
	for (int v = 0; v < c->m->ndecl; v++)
		c->mut[v] = -1;
	for (int i = 0; i < f->nop; i++)
		for (int k = 0; k < f->op[i].nargs && f->op[i].args; k++)
			if (valid(f, f->op[i].args[k]))
				c->uses[f->op[i].args[k]]++;
	for (int i = 0; i < f->nop; i++)
		check_op(c, i);
	free(c->mut);
	free(c->uses);
	check_outputs(c);
}

int
ir_check(const Module *m, Report *rep, void *ctx)
{
	C c = { .m = m, .rep = rep, .ctx = ctx, .rel = -1 };

	check_decls(&c);
	if (m->fwd)
		check_func(&c, m->fwd);
	if (m->step)
		check_func(&c, m->step);
	return c.n;
}

/* ---------- reporting as internal errors ---------- */

static void
internal(void *ctx, const Func *f, int i, int rel, const char *msg)
{
	(void)rel;      /* the message names it */
	const char *stage = ctx;

	if (!f) {
		fprintf(stderr, "mtc: internal error: %s: %s\n", stage, msg);
		return;
	}
	fprintf(stderr, "mtc: internal error: %s: %s: ", stage, f->name ? f->name : "?");
	if (i >= 0) {
		const Op *op = &f->op[i];
		fprintf(stderr, "op %d (", i);
		if (valid(f, op->res))
			fprintf(stderr, "%%%s = ", vname(f, op->res));
		fprintf(stderr, "%s): ", (unsigned)op->kind < NOP ? opinfo[op->kind].name : "?");
	}
	fprintf(stderr, "%s\n", msg);
}

int
ir_verify(const Module *m, const char *stage)
{
	return ir_check(m, internal, (void *)stage);
}
