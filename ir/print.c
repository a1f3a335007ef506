/* print.c: the textual IR (docs/ir.md): one line per declaration and op, derived facts as comments.
 *
 * needs: a module (it need not verify; the printer never reads through a bad index).
 * fills: nothing; writes text that ir_parse reads back into the same module, so print, parse,
 * print gives the same bytes. Comments (after '#') are derived facts the parser ignores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* The shortest %g text that reads back to exactly v. */
static void
pnum(FILE *fp, double v)
{
	char b[40];

	if (isnan(v)) {
		fputs("nan", fp);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "-inf" : "inf", fp);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(b, sizeof b, "%.*g", p, v);
		if (strtod(b, NULL) == v)
			break;
	}
	fputs(b, fp);
}

/* "784 KiB": a size a reader takes in at a glance (comments only, never parsed). */
static void
pbytes(FILE *fp, int64_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		fprintf(fp, "%lld B", (long long)n);
	else if (v == floor(v))
		fprintf(fp, "%.0f %s", v, unit[u]);
	else
		fprintf(fp, "%.1f %s", v, unit[u]);
}

static void
ptype(FILE *fp, const Type *t)
{
	char b[MAXRANK * 24 + 8];
	fputs(type_str(t, b, sizeof b), fp);
}

static void
ploc(FILE *fp, Loc l)
{
	if (l.line > 0)
		fprintf(fp, " @%d:%d", l.line, l.col);
}

/* A string in double quotes; '"', '\\' and bytes outside printable ASCII escaped. */
static void
pstr(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = *s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(fp, "\\x%02x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static const char *
vname(const Func *f, int v)
{
	return v >= 0 && v < f->nval && f->val[v].name ? f->val[v].name : "?";
}

static void
pinit(FILE *fp, const Init *in, DType dt, int64_t n_vals)
{
	static const char *const nm[] = { "", "zeros", "ones", "full", "normal", "uniform" };
	int n = in->kind == INIT_FULL ? 1 : in->kind >= INIT_NORMAL ? 2 : 0;

	if (in->kind == INIT_FILE) {
		fputs(" = file(", fp);
		pstr(fp, in->file ? in->file : "");
		fprintf(fp, ", %lld)", (long long)in->off);
		return;
	}
	if (in->kind == INIT_VALUES) {
		fputs(" = values(", fp);
		for (int64_t i = 0; in->vals && i < n_vals; i++) {
			if (i)
				fputs(", ", fp);
			if (dt == I32)
				fprintf(fp, "%d", ((const int32_t *)in->vals)[i]);
			else
				pnum(fp, ((const float *)in->vals)[i]);
		}
		fputc(')', fp);
		return;
	}
	if (in->kind <= INIT_NONE || in->kind > INIT_UNIFORM)
		return;
	fprintf(fp, " = %s(", nm[in->kind]);
	if (n >= 1)
		pnum(fp, in->a);
	if (n == 2) {
		fputs(", ", fp);
		pnum(fp, in->b);
	}
	fputc(')', fp);
}

static void
pdecl(FILE *fp, const Module *m, const Decl *d)
{
	static const char *const role[] = { "input", "param", "state", "buffer" };

	fprintf(fp, "%s %s : ", d->role <= R_BUFFER ? role[d->role] : "?", d->name);
	ptype(fp, &d->ty);
	pinit(fp, &d->init, d->ty.dt, shape_numel(&d->ty.sh));
	if (d->of >= 0 && d->of < m->ndecl)
		fprintf(fp, " of %s", m->decl[d->of].name);
	if (d->host)
		fputs(" host", fp);
	ploc(fp, d->loc);
	fputs("  # ", fp);
	pbytes(fp, type_bytes(&d->ty));
	fputc('\n', fp);
}

static void
poptim(FILE *fp, const Optim *o)
{
	if (o->kind == OPT_SGD) {
		fputs("optimizer sgd lr=", fp);
		pnum(fp, o->lr);
		fputs(" momentum=", fp);
		pnum(fp, o->momentum);
	} else {
		fputs("optimizer adam lr=", fp);
		pnum(fp, o->lr);
		fputs(" beta1=", fp);
		pnum(fp, o->beta1);
		fputs(" beta2=", fp);
		pnum(fp, o->beta2);
		fputs(" eps=", fp);
		pnum(fp, o->eps);
	}
	ploc(fp, o->loc);
	fputc('\n', fp);
}

/* Every attribute of the op's kind, in the table's order: integers, then floats. */
static void
pattrs(FILE *fp, const Op *op)
{
	const char *p;
	int i = 0;
	size_t n;

	for (p = opinfo[op->kind].iattr; *p; p += n) {
		p += strspn(p, " ");
		n = strcspn(p, " *");
		if (!n)
			break;
		fprintf(fp, " %.*s=", (int)n, p);
		if (p[n] == '*') {
			fputc('[', fp);
			for (int k = 0; k < op->nia && k < MAXIA; k++)
				fprintf(fp, "%s%lld", k ? "," : "", (long long)op->ia[k]);
			fputc(']', fp);
			n++;
		} else if (i < MAXIA) {
			fprintf(fp, "%lld", (long long)op->ia[i++]);
		}
	}
	i = 0;
	for (p = opinfo[op->kind].fattr; *p; p += n) {
		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (!n)
			break;
		fprintf(fp, " %.*s=", (int)n, p);
		if (i < MAXFA)
			pnum(fp, op->fa[i++]);
	}
}

/* Values of the forward phase that backward or recompute ops read: what a step keeps
 * between the two passes. */
static char *
saved_values(const Func *f)
{
	char *s = xcalloc(f->nval ? f->nval : 1, 1);

	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		if (op->phase != PH_BWD && op->phase != PH_REC)
			continue;
		for (int k = 0; k < op->nargs; k++) {
			int v = op->args[k], d;
			if (v < 0 || v >= f->nval)
				continue;
			d = f->val[v].def;
			if (d >= 0 && d < f->nop && f->op[d].phase == PH_FWD)
				s[v] = 1;
		}
	}
	return s;
}

static void
pop(FILE *fp, const Func *f, const Op *op, const char *saved)
{
	int r = op->res;
	int ok = r >= 0 && r < f->nval;

	if ((unsigned)op->kind >= NOP) {
		fprintf(fp, "  ? bad op kind %d\n", (int)op->kind);
		return;
	}
	fprintf(fp, "  %s ", (unsigned)op->phase <= PH_MEM ? phase_name[op->phase] : "?");
	if (r >= 0) {
		fprintf(fp, "%%%s : ", vname(f, r));
		if (ok)
			ptype(fp, &f->val[r].ty);
		fputs(" = ", fp);
	}
	fputs(opinfo[op->kind].name, fp);
	for (int k = 0; k < op->nargs; k++)
		fprintf(fp, "%s%%%s", k ? ", " : " ", vname(f, op->args[k]));
	pattrs(fp, op);
	if (op->of >= 0)
		fprintf(fp, " of=%%%s", vname(f, op->of));
	if (ok && f->val[r].off >= 0)
		fprintf(fp, " at=%lld", (long long)f->val[r].off);
	ploc(fp, op->loc);
	if ((opinfo[op->kind].flags & F_MUT) && op->nargs > 0 && op->args[0] >= 0 &&
	    op->args[0] < f->nval && f->val[op->args[0]].host)
		fputs("  # on the host", fp);
	if (ok) {
		fputs("  # ", fp);
		pbytes(fp, type_bytes(&f->val[r].ty));
		if (saved[r])
			fputs(", saved", fp);
		if (f->val[r].host)
			fputs(", host", fp);
	}
	fputc('\n', fp);
}

void
ir_print_func(FILE *fp, const Func *f)
{
	const Module *m = f->mod;
	char *saved = saved_values(f);

	fprintf(fp, "func %s {\n", f->name);
	for (int v = 0; v < m->ndecl && v < f->nval; v++)
		if (f->val[v].off >= 0)
			fprintf(fp, "  place %%%s at=%lld\n", f->val[v].name, (long long)f->val[v].off);
	for (int i = 0; i < f->nop; i++)
		pop(fp, f, &f->op[i], saved);
	for (int i = 0; i < f->nout; i++)
		fprintf(fp, "  output %s %%%s\n", f->outname[i], vname(f, f->out[i]));
	if (f->loss >= 0)
		fprintf(fp, "  loss %%%s\n", vname(f, f->loss));
	fputs("}\n", fp);
	free(saved);
}

void
ir_print(FILE *fp, const Module *m)
{
	fputs("mtc-ir 1\n", fp);
	fprintf(fp, "model %s ", m->name);
	pstr(fp, m->file ? m->file : "");
	fputc('\n', fp);
	for (int i = 0; i < m->ndecl; i++)
		pdecl(fp, m, &m->decl[i]);
	if (m->opt.kind != OPT_NONE)
		poptim(fp, &m->opt);
	if (m->budget > 0) {
		fprintf(fp, "budget %lld solver=", (long long)m->budget);
		pstr(fp, m->solver);
		if (m->budget_pct > 0)
			fprintf(fp, " percent=%.17g", m->budget_pct);
		fputc('\n', fp);
	}
	if (m->fwd) {
		fputc('\n', fp);
		ir_print_func(fp, m->fwd);
	}
	if (m->step) {
		fputc('\n', fp);
		ir_print_func(fp, m->step);
	}
}
