/* parse.c: the textual IR (docs/ir.md) back into a module: a line-oriented recursive descent
 * over characters, no separate token stream.
 *
 * needs: a Src holding any bytes.
 * fills: a module that verifies (ir_check runs on it), or NULL after diagnostics that point
 * into the .mir itself. The `@line:col` annotations in the text are the tdsl locations; they go
 * back into Decl.loc and Op.loc (and so Value.loc). */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { END = -1 };

typedef struct P {
	Src *src;
	const char *s;        /* the text, n bytes (NULs allowed: they are just bad bytes) */
	size_t n, i;
	int line, col;        /* of s[i] */
	Module *m;
	Func *f;
	int fi;               /* 0: forward, 1: step */
	Arena *tmp;           /* scratch strings, freed at the end */
	Loc *oploc[2];        /* .mir location of each op, for the checks after parsing */
	int capop[2];
	Loc floc[2];          /* of each `func` line */
	Loc mloc;             /* of the `model` line */
	int *args;
	int capargs;
	char *rn;             /* the result name of the op line being read, once known */
	Type rt;
	char fb[80];          /* found() */
} P;

static int
peek(const P *p)
{
	return p->i < p->n ? (unsigned char)p->s[p->i] : END;
}

static void
adv(P *p)
{
	if (p->i >= p->n)
		return;
	if (p->s[p->i] == '\n') {
		p->line++;
		p->col = 1;
	} else {
		p->col++;
	}
	p->i++;
}

static Loc
here(const P *p)
{
	return (Loc){ p->line, p->col };
}

static int
isname(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.';
}

static int
isdig(int c)
{
	return c >= '0' && c <= '9';
}

/* Spaces and a comment, never the end of the line. */
static void
blank(P *p)
{
	for (;;) {
		int c = peek(p);
		if (c == ' ' || c == '\t' || c == '\r')
			adv(p);
		else if (c == '#')
			while (peek(p) != END && peek(p) != '\n')
				adv(p);
		else
			return;
	}
}

static int
err(P *p, Loc l, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag(p->src, l, "%s", msg);
	return -1;
}

/* What stands at the cursor, for "expected X, found Y". */
static const char *
found(P *p)
{
	int c = peek(p);
	size_t k = 0;

	if (c == END)
		return "end of file";
	if (c == '\n')
		return "end of line";
	if (isname(c)) {
		while (k < 32 && p->i + k < p->n && isname((unsigned char)p->s[p->i + k]))
			k++;
		snprintf(p->fb, sizeof p->fb, "'%.*s%s'", (int)k, p->s + p->i,
		         p->i + k < p->n && isname((unsigned char)p->s[p->i + k]) ? "..." : "");
	} else if (c > ' ' && c < 0x7f) {
		snprintf(p->fb, sizeof p->fb, "'%c'", c);
	} else {
		snprintf(p->fb, sizeof p->fb, "byte 0x%02x", c);
	}
	return p->fb;
}

static int
expect(P *p, int c, const char *what)
{
	blank(p);
	if (peek(p) != c)
		return err(p, here(p), "expected %s, found %s", what, found(p));
	adv(p);
	return 0;
}

static int
eol(P *p)
{
	blank(p);
	if (peek(p) == END)
		return 0;
	if (peek(p) != '\n')
		return err(p, here(p), "expected end of line, found %s", found(p));
	adv(p);
	return 0;
}

/* At the optional location and the end of the line? */
static int
tail(P *p)
{
	blank(p);
	return peek(p) == '@' || peek(p) == '\n' || peek(p) == END;
}

/* After an error: on to the next line, unless the error came after the line's end. */
static void
skipline(P *p, int line)
{
	if (p->line != line)
		return;
	while (peek(p) != END && peek(p) != '\n')
		adv(p);
	adv(p);
}

/* Skip empty and comment-only lines: 1 if a line with content follows, 0 at the end. */
static int
nextline(P *p)
{
	for (;;) {
		blank(p);
		if (peek(p) != '\n')
			return peek(p) != END;
		adv(p);
	}
}

/* NAME := [A-Za-z0-9_.]+, copied into scratch memory, its place in *at (if not NULL);
 * NULL after a diagnostic. */
static char *
name(P *p, const char *what, Loc *at)
{
	size_t b;
	char *s;

	blank(p);
	if (at)
		*at = here(p);
	b = p->i;
	while (isname(peek(p)))
		adv(p);
	if (p->i == b) {
		err(p, here(p), "expected %s, found %s", what, found(p));
		return NULL;
	}
	s = aalloc(p->tmp, p->i - b + 1);
	memcpy(s, p->s + b, p->i - b);
	return s;
}

/* A decimal int64. */
static int
integer(P *p, int64_t *r, const char *what)
{
	Loc l;
	uint64_t v = 0, lim;
	int neg = 0, over = 0;

	blank(p);
	l = here(p);
	if (peek(p) == '-') {
		neg = 1;
		adv(p);
	}
	if (!isdig(peek(p)))
		return err(p, l, "expected %s, found %s", what, found(p));
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	while (isdig(peek(p))) {
		unsigned d = peek(p) - '0';
		if (v > (lim - d) / 10)
			over = 1;
		else
			v = v * 10 + d;
		adv(p);
	}
	if (isname(peek(p)))
		return err(p, here(p), "expected %s, found %s", what, found(p));
	if (over)
		return err(p, l, "integer out of range");
	*r = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

/* A float as the printer writes it: %g text, inf, -inf or nan. */
static int
number(P *p, double *r, const char *what)
{
	char b[64], *e;
	size_t k = 0;
	Loc l;

	blank(p);
	l = here(p);
	for (;;) {
		int c = peek(p);
		if (!isname(c) && !((c == '-' || c == '+') && (k == 0 || b[k - 1] == 'e' || b[k - 1] == 'E')))
			break;
		if (k == sizeof b - 1)
			return err(p, l, "number too long");
		b[k++] = (char)c;
		adv(p);
	}
	b[k] = 0;
	if (k == 0)
		return err(p, l, "expected %s, found %s", what, found(p));
	*r = strtod(b, &e);
	if (*e)
		return err(p, l, "invalid number '%s'", b);
	return 0;
}

/* STRING: "..." with \" \\ \xNN escapes. */
static char *
string(P *p)
{
	Loc l;
	char *s;
	size_t n = 0, cap = 64;

	blank(p);
	l = here(p);
	if (peek(p) != '"') {
		err(p, l, "expected a string, found %s", found(p));
		return NULL;
	}
	adv(p);
	s = xmalloc(cap);
	for (;;) {
		int c = peek(p);
		if (c == END || c == '\n') {
			err(p, l, "unterminated string");
			goto fail;
		}
		adv(p);
		if (c == '"')
			break;
		if (c == '\\') {
			Loc el = here(p);
			int e = peek(p), h = 0;
			adv(p);
			if (e == 'x') {
				for (int k = 0; k < 2; k++, adv(p)) {
					int d = peek(p);
					if (isdig(d))
						h = h * 16 + d - '0';
					else if (d >= 'a' && d <= 'f')
						h = h * 16 + d - 'a' + 10;
					else {
						err(p, el, "\\x needs two lowercase hex digits");
						goto fail;
					}
				}
				c = h;
			} else if (e == '"' || e == '\\') {
				c = e;
			} else {
				err(p, el, "unknown escape in string");
				goto fail;
			}
			if (c == 0) {
				err(p, el, "a string cannot hold a NUL byte");
				goto fail;
			}
		}
		if (n + 2 > cap)
			s = xrealloc(s, cap *= 2);
		s[n++] = (char)c;
	}
	s[n] = 0;
	{
		char *r = astrdup(p->tmp, s);
		free(s);
		return r;
	}
fail:
	free(s);
	return NULL;
}

/* type := ('f32' | 'i32') '[' (INT (',' INT)*)? ']' */
static int
type(P *p, Type *t)
{
	Loc l;
	char *w;
	int64_t d, bytes = 4;

	if (!(w = name(p, "a type", &l)))
		return -1;
	if (strcmp(w, "f32") == 0)
		t->dt = F32;
	else if (strcmp(w, "i32") == 0)
		t->dt = I32;
	else
		return err(p, l, "unknown dtype '%s' (f32 or i32)", w);
	t->sh.rank = 0;
	if (expect(p, '[', "'[' after the dtype"))
		return -1;
	blank(p);
	if (peek(p) != ']')
		for (;;) {
			blank(p);
			l = here(p);
			if (integer(p, &d, "a dimension"))
				return -1;
			if (d < 1)
				return err(p, l, "dimension %lld is not positive", (long long)d);
			if (t->sh.rank == MAXRANK)
				return err(p, l, "more than %d dimensions", MAXRANK);
			if (mul64(bytes, d, &bytes))
				return err(p, l, "tensor too large: its size in bytes overflows 64 bits");
			t->sh.d[t->sh.rank++] = d;
			blank(p);
			if (peek(p) != ',')
				break;
			adv(p);
		}
	return expect(p, ']', "',' or ']'");
}

/* loc := '@' INT ':' INT, optional; *l is {0,0} when absent. */
static int
optloc(P *p, Loc *l)
{
	int64_t a, b;
	Loc at;

	*l = (Loc){ 0, 0 };
	blank(p);
	if (peek(p) != '@')
		return 0;
	at = here(p);
	adv(p);
	if (integer(p, &a, "a line number") || expect(p, ':', "':' in the location") ||
	    integer(p, &b, "a column number"))
		return -1;
	if (a < 1 || a > INT_MAX || b < 0 || b > INT_MAX)
		return err(p, at, "location %lld:%lld out of range", (long long)a, (long long)b);
	*l = (Loc){ (int)a, (int)b };
	return 0;
}

/* ---------- module level ---------- */

/* init := 'zeros()' | 'ones()' | 'full(' NUM ')' | 'normal(' NUM ',' NUM ')' | 'uniform(' ... ')'
 *        | 'file(' STRING ',' INT ')' | 'values(' NUM (',' NUM)* ')' (t's element count of them) */
static int
init(P *p, Init *in, const Type *t)
{
	static const struct { const char *name; InitKind kind; int n; } tab[] = {
		{ "zeros", INIT_ZEROS, 0 }, { "ones", INIT_ONES, 0 }, { "full", INIT_FULL, 1 },
		{ "normal", INIT_NORMAL, 2 }, { "uniform", INIT_UNIFORM, 2 },
	};
	Loc l;
	char *w;
	int k;

	if (!(w = name(p, "an initializer", &l)))
		return -1;
	if (strcmp(w, "values") == 0) {
		int64_t n = shape_numel(&t->sh);
		void *v;
		in->kind = INIT_VALUES;
		if (n > (int64_t)1 << 28)
			return err(p, l, "values(...) of %lld elements is more than the parser takes", (long long)n);
		v = aalloc(p->m->arena, (size_t)(n ? n : 1) * 4);
		if (expect(p, '(', "'('"))
			return -1;
		for (int64_t i = 0; i < n; i++) {
			double x;
			if ((i && expect(p, ',', "','")) || number(p, &x, "a value"))
				return -1;
			if (t->dt == I32 && !(x == (double)(int32_t)x))
				return err(p, l, "value %g of an i32 tensor is not a 32-bit integer", x);
			if (t->dt == I32)
				((int32_t *)v)[i] = (int32_t)x;
			else
				((float *)v)[i] = (float)x;
		}
		in->vals = v;
		blank(p);
		if (peek(p) == ',')
			return err(p, here(p), "more values than the %lld elements of the tensor", (long long)n);
		return expect(p, ')', "')'");
	}
	if (strcmp(w, "file") == 0) {
		in->kind = INIT_FILE;
		if (expect(p, '(', "'('") || !(in->file = string(p)) || expect(p, ',', "','") ||
		    integer(p, &in->off, "a byte offset"))
			return -1;
		if (in->off < 0)
			return err(p, l, "a byte offset must not be negative");
		/* the string lives in the parser's scratch arena: the module keeps its own copy */
		in->file = astrdup(p->m->arena, in->file);
		return expect(p, ')', "')'");
	}
	for (k = 0; k < 5 && strcmp(tab[k].name, w); k++)
		;
	if (k == 5)
		return err(p, l, "unknown initializer '%s'", w);
	in->kind = tab[k].kind;
	if (expect(p, '(', "'('"))
		return -1;
	for (int i = 0; i < tab[k].n; i++)
		if ((i && expect(p, ',', "','")) || number(p, i ? &in->b : &in->a, "a number"))
			return -1;
	return expect(p, ')', "')'");
}

/* decl := ('input' | 'param' | 'state' | 'buffer') NAME ':' type ('=' init)? ('of' NAME)? loc? */
static int
decl(P *p, Role role, Loc kl)
{
	Type t = {0};
	Init in = {0};
	Loc nl, l;
	int of = -1, d, home = 0;
	char *nm, *w;

	if (p->m->fwd || p->m->step)
		return err(p, kl, "declarations must come before the functions");
	if (!(nm = name(p, "a name", &nl)))
		return -1;
	if (mod_find_decl(p->m, nm) >= 0)
		return err(p, nl, "%s is declared twice", nm);
	if (expect(p, ':', "':' after the name") || type(p, &t))
		return -1;
	blank(p);
	if (peek(p) == '=') {
		if (role == R_INPUT)
			return err(p, here(p), "an input has no initializer");
		adv(p);
		if (init(p, &in, &t))
			return -1;
		if (in.kind == INIT_FILE && t.dt != F32)
			return err(p, nl, "values from a file need an f32 tensor, not %s", dtype_name(t.dt));
	}
	blank(p);
	if (isname(peek(p))) {
		Loc ol = here(p);
		if (!(w = name(p, "'of'", NULL)))
			return -1;
		if (strcmp(w, "of") && strcmp(w, "host"))
			return err(p, ol, "expected 'of', 'host', '@' or end of line, found '%s'", w);
		if (!strcmp(w, "of")) {
			if (role != R_STATE)
				return err(p, ol, "only optimizer state names a param with 'of'");
			if (!(w = name(p, "a param name", &ol)))
				return -1;
			of = mod_find_decl(p->m, w);
			if (of < 0 || p->m->decl[of].role != R_PARAM)
				return err(p, ol, "'%s' is not a param declared before", w);
			blank(p);
			w = NULL;
			if (isname(peek(p))) {
				ol = here(p);
				if (!(w = name(p, "'host'", NULL)))
					return -1;
				if (strcmp(w, "host"))
					return err(p, ol, "expected 'host', '@' or end of line, found '%s'", w);
			}
		}
		if (w) {
			if (role == R_INPUT)
				return err(p, ol, "only params and optimizer state live in host memory ('host')");
			home = 1;
		}
	}
	if (optloc(p, &l) || eol(p))
		return -1;
	d = mod_decl(p->m, nm, role, t, in, l);
	p->m->decl[d].of = of;
	if (home)
		mod_set_host(p->m, d);
	return 0;
}

/* optim := 'optimizer' ('sgd' | 'adam') (KEY '=' NUM)* loc? */
static int
optim(P *p, Loc kl)
{
	static const char *const sgd[] = { "lr", "momentum", NULL };
	static const char *const adam[] = { "lr", "beta1", "beta2", "eps", NULL };
	const char *const *keys;
	Optim o = {0};
	double *dst[4];
	unsigned seen = 0;
	Loc l;
	char *w;
	int k;

	if (p->m->opt.kind != OPT_NONE)
		return err(p, kl, "a second optimizer");
	if (!(w = name(p, "an optimizer (sgd or adam)", &l)))
		return -1;
	if (strcmp(w, "sgd") == 0) {
		o.kind = OPT_SGD;
		keys = sgd;
		dst[0] = &o.lr, dst[1] = &o.momentum;
	} else if (strcmp(w, "adam") == 0) {
		o.kind = OPT_ADAM;
		keys = adam;
		dst[0] = &o.lr, dst[1] = &o.beta1, dst[2] = &o.beta2, dst[3] = &o.eps;
	} else {
		return err(p, l, "unknown optimizer '%s' (sgd or adam)", w);
	}
	for (;;) {
		Loc al;
		if (tail(p))
			break;
		al = here(p);
		if (!(w = name(p, "a setting", NULL)))
			return -1;
		for (k = 0; keys[k] && strcmp(keys[k], w); k++)
			;
		if (!keys[k])
			return err(p, al, "optimizer %s has no setting '%s'",
			           o.kind == OPT_SGD ? "sgd" : "adam", w);
		if (seen & 1u << k)
			return err(p, al, "setting '%s' given twice", w);
		seen |= 1u << k;
		if (expect(p, '=', "'='") || number(p, dst[k], "a number"))
			return -1;
	}
	if (optloc(p, &o.loc) || eol(p))
		return -1;
	for (k = 0; keys[k]; k++)
		if (!(seen & 1u << k))
			return err(p, l, "optimizer %s needs %s=", o.kind == OPT_SGD ? "sgd" : "adam", keys[k]);
	p->m->opt = o;
	return 0;
}

/* ---------- functions ---------- */

/* '%' NAME of a value defined earlier; the value index or -1. */
static int
ref(P *p)
{
	Loc l;
	char *w;
	int v;

	blank(p);
	l = here(p);
	if (peek(p) != '%')
		return err(p, l, "expected a value (%%name), found %s", found(p));
	adv(p);
	if (!isname(peek(p)))
		return err(p, here(p), "expected a value name after '%%', found %s", found(p));
	if (!(w = name(p, "a value name", NULL)))
		return -1;
	if ((v = func_find(p->f, w)) < 0)
		return err(p, l, "undefined value %%%s (a value is defined before its uses)", w);
	return v;
}

/* '[' INT (',' INT)* ']', at most MAXIA entries. */
static int
intlist(P *p, int64_t *ia, int *nia)
{
	int n = 0;

	if (expect(p, '[', "'[' (a list)"))
		return -1;
	blank(p);
	if (peek(p) != ']')
		for (;;) {
			blank(p);
			if (n == MAXIA)
				return err(p, here(p), "more than %d entries", MAXIA);
			if (integer(p, &ia[n++], "an integer"))
				return -1;
			blank(p);
			if (peek(p) != ',')
				break;
			adv(p);
		}
	*nia = n;
	return expect(p, ']', "',' or ']'");
}

/* The k-th word of a table attribute list, into b. */
static const char *
nth(const char *list, int k, char *b, size_t nb)
{
	const char *s = list;
	size_t n = 0;

	for (int i = 0; i <= k; i++, s += n) {
		s += strspn(s, " ");
		n = strcspn(s, " ");
	}
	s -= n;
	snprintf(b, nb, "%.*s", (int)strcspn(s, " *"), s);
	return b;
}

static int
pusharg(P *p, int v, int n)
{
	if (n == p->capargs) {
		p->capargs = p->capargs ? 2 * p->capargs : 16;
		p->args = xrealloc(p->args, p->capargs * sizeof *p->args);
	}
	p->args[n] = v;
	return n + 1;
}

static int
type_eq(const Type *a, const Type *b)
{
	return a->dt == b->dt && shape_eq(&a->sh, &b->sh);
}

#define TS(t) type_str((t), (char[MAXRANK * 24 + 8]){0}, MAXRANK * 24 + 8)

/* An op line's attributes, as read. */
typedef struct Attrs {
	int64_t ia[MAXIA];
	int nia;
	double fa[MAXFA];
	int of;                   /* of=%v, or -1 */
	int64_t at;               /* at=N, or -1 */
} Attrs;

/* attr* ('of=%' NAME)? ('at=' INT)?, in any order, each at most once, then every attribute
 * of kind k must be there. kl: where the op name stands. */
static int
attrs(P *p, Opk k, Loc kl, Attrs *at)
{
	const OpInfo *oi = &opinfo[k];
	unsigned iseen = 0, fseen = 0;
	char *w, b[32];
	Loc al;
	int a;

	at->of = -1;
	at->at = -1;
	while (!tail(p)) {
		if (!(w = name(p, "an attribute, '@' or end of line", &al)) ||
		    expect(p, '=', "'=' after the attribute name"))
			return -1;
		if (strcmp(w, "of") == 0) {
			if (at->of >= 0)
				return err(p, al, "attribute 'of' given twice");
			if ((at->of = ref(p)) < 0)
				return -1;
		} else if (strcmp(w, "at") == 0) {
			if (at->at >= 0)
				return err(p, al, "attribute 'at' given twice");
			if (integer(p, &at->at, "a byte offset"))
				return -1;
			if (at->at < 0)
				return err(p, al, "offset %lld is negative", (long long)at->at);
		} else if ((a = op_iattr_index(k, w)) >= 0) {
			if (iseen & 1u << a)
				return err(p, al, "attribute '%s' given twice", w);
			iseen |= 1u << a;
			if (op_iattr_is_list(k) ? intlist(p, at->ia, &at->nia) : integer(p, &at->ia[a], "an integer"))
				return -1;
		} else if ((a = op_fattr_index(k, w)) >= 0) {
			if (fseen & 1u << a)
				return err(p, al, "attribute '%s' given twice", w);
			fseen |= 1u << a;
			if (number(p, &at->fa[a], "a number"))
				return -1;
		} else {
			return err(p, al, "%s has no attribute '%s'", oi->name, w);
		}
	}
	for (a = 0; a < op_niattr(k); a++)
		if (!(iseen & 1u << a))
			return err(p, kl, "%s needs attribute %s=", oi->name, nth(oi->iattr, a, b, sizeof b));
	for (a = 0; a < op_nfattr(k); a++)
		if (!(fseen & 1u << a))
			return err(p, kl, "%s needs attribute %s=", oi->name, nth(oi->fattr, a, b, sizeof b));
	if (!op_iattr_is_list(k))
		at->nia = op_niattr(k);
	return 0;
}

/* line := PHASE ('%' NAME ':' type '=')? OPNAME operands? attr* ('of=%' NAME)? ('at=' INT)? loc?
 * ll: where the line starts, for problems the checks find later. */
static int
opline(P *p, Phase ph, Loc ll)
{
	Func *f = p->f;
	const OpInfo *oi;
	Attrs at = {0};
	Type t = {0}, r = {0};
	int nargs = 0, k, i;
	char *w, e[400];
	Loc rl = {0}, kl, l;

	blank(p);
	if (peek(p) == '%') {
		rl = here(p);
		adv(p);
		if (!(w = name(p, "a value name", NULL)))
			return -1;
		if (func_find(f, w) >= 0)
			return err(p, rl, "%%%s is already defined", w);
		p->rn = w;
		if (expect(p, ':', "':' after the result") || type(p, &t))
			return -1;
		p->rt = t;
		if (expect(p, '=', "'=' after the result type"))
			return -1;
	}
	if (!(w = name(p, "an op name", &kl)))
		return -1;
	if ((k = op_lookup(w)) < 0)
		return err(p, kl, "unknown op '%s'", w);
	oi = &opinfo[k];
	blank(p);
	if (peek(p) == '%')
		for (;;) {
			int v = ref(p);
			if (v < 0)
				return -1;
			nargs = pusharg(p, v, nargs);
			blank(p);
			if (peek(p) != ',')
				break;
			adv(p);
		}
	if (attrs(p, k, kl, &at) || optloc(p, &l) || eol(p))
		return -1;

	if (oi->flags & F_NORES) {
		if (p->rn)
			return err(p, rl, "%s has no result", oi->name);
		if (at.at >= 0)
			return err(p, kl, "%s has no result to place with at=", oi->name);
	} else if (!p->rn) {
		return err(p, kl, "%s needs a result: %%name : type = %s ...", oi->name, oi->name);
	}
	if (oi->flags & F_VARIADIC ? nargs < oi->nargs : nargs != oi->nargs)
		return err(p, kl, "%s takes %s%d operand%s, got %d", oi->name,
		           oi->flags & F_VARIADIC ? "at least " : "", oi->nargs,
		           oi->nargs == 1 ? "" : "s", nargs);
	if (oi->flags & F_GIVEN)
		r = t;
	if (op_infer(f, k, p->args, nargs, at.ia, at.nia, at.fa, &r, e, sizeof e))
		return err(p, kl, "%s", e);
	if (!(oi->flags & F_NORES)) {
		if (!type_ok(&r))
			return err(p, kl, "the result of %s, %s, is too large", oi->name, TS(&r));
		if (!type_eq(&r, &t))
			return err(p, rl, "%%%s is written as %s, but %s gives %s", p->rn, TS(&t), oi->name,
			           TS(&r));
	}
	i = func_op(f, k, ph, p->args, nargs, at.ia, at.nia, at.fa, &r, p->rn, l);
	f->op[i].of = at.of;
	if (at.at >= 0)
		f->val[f->op[i].res].off = at.at;
	if (i == p->capop[p->fi]) {
		p->capop[p->fi] = i ? 2 * i : 64;
		p->oploc[p->fi] = xrealloc(p->oploc[p->fi], p->capop[p->fi] * sizeof(Loc));
	}
	p->oploc[p->fi][i] = ll;
	return 0;
}

/* 'output' NAME '%' NAME */
static int
output(P *p)
{
	Func *f = p->f;
	Loc l;
	char *w;
	int v;

	if (!(w = name(p, "an output name", &l)))
		return -1;
	for (int i = 0; i < f->nout; i++)
		if (strcmp(f->outname[i], w) == 0)
			return err(p, l, "a second output named %s", w);
	if ((v = ref(p)) < 0 || eol(p))
		return -1;
	func_output(f, w, v);
	return 0;
}

/* 'loss' '%' NAME */
static int
loss(P *p, Loc kl)
{
	Loc l;
	int v;

	if (p->f->loss >= 0)
		return err(p, kl, "a second loss");
	blank(p);
	l = here(p);
	if ((v = ref(p)) < 0 || eol(p))
		return -1;
	if (p->f->val[v].ty.dt != F32 || p->f->val[v].ty.sh.rank != 0)
		return err(p, l, "the loss must be f32[], not %s", TS(&p->f->val[v].ty));
	p->f->loss = v;
	return 0;
}

/* 'place' '%' NAME 'at=' INT: the offset of a declared tensor (op results carry at=). */
static int
place(P *p)
{
	int64_t off;
	Loc l;
	char *w;
	int v;

	blank(p);
	l = here(p);
	if ((v = ref(p)) < 0)
		return -1;
	if (v >= p->m->ndecl)
		return err(p, l, "place is for declared tensors; an op result carries at=");
	blank(p);
	if (!(w = name(p, "'at'", NULL)))
		return -1;
	if (strcmp(w, "at"))
		return err(p, l, "expected 'at=', found '%s'", w);
	if (expect(p, '=', "'='") || integer(p, &off, "a byte offset") || eol(p))
		return -1;
	if (off < 0)
		return err(p, l, "offset %lld is negative", (long long)off);
	p->f->val[v].off = off;
	return 0;
}

/* One line inside a function; -1 after a diagnostic (the caller skips the rest of the line). */
static int
funcline(P *p)
{
	Loc l;
	char *w;

	if (!(w = name(p, "an op line, 'output', 'loss' or '}'", &l)))
		return -1;
	for (int ph = 0; ph <= PH_MEM; ph++)
		if (strcmp(w, phase_name[ph]) == 0)
			return opline(p, ph, l);
	if (strcmp(w, "output") == 0)
		return output(p);
	if (strcmp(w, "loss") == 0)
		return loss(p, l);
	if (strcmp(w, "place") == 0)
		return place(p);
	return err(p, l, "expected a phase (fwd, bwd, upd, rec, mem), 'output', 'loss' or '}', "
	           "found '%s'", w);
}

/* func := 'func' ('forward' | 'step') '{' NL line* '}'. -1: the file cannot be read on. */
static int
func(P *p, Loc kl)
{
	Loc l;
	char *w;
	int fi;

	if (!(w = name(p, "a function name", &l)))
		return -1;
	if (strcmp(w, "forward") == 0)
		fi = 0;
	else if (strcmp(w, "step") == 0)
		fi = 1;
	else
		return err(p, l, "unknown function '%s' (forward or step)", w);
	if (fi ? p->m->step != NULL : p->m->fwd != NULL)
		return err(p, l, "a second func %s", w);
	if (expect(p, '{', "'{'") || eol(p))
		return -1;
	p->f = func_new(p->m, w);
	*(fi ? &p->m->step : &p->m->fwd) = p->f;
	p->fi = fi;
	p->floc[fi] = kl;
	for (;;) {
		int line;
		if (p->src->nerr >= MAXERR)
			return -1;
		if (!nextline(p))
			return err(p, here(p), "func %s has no closing '}'", w);
		line = p->line;
		if (peek(p) == '}') {
			adv(p);
			if (eol(p))
				skipline(p, line);
			return 0;
		}
		p->rn = NULL;
		if (funcline(p) == 0)
			continue;
		/* Define a failed op's result anyway, so its uses do not pile up more errors. */
		if (p->rn && func_find(p->f, p->rn) < 0)
			func_value(p->f, p->rn, p->rt);
		skipline(p, line);
	}
}

/* ---------- the file ---------- */

static int
header(P *p)
{
	static const char magic[] = "mtc-ir";
	char *nm, *file;
	int64_t v;
	Loc l;

	nextline(p);
	l = here(p);
	for (const char *c = magic; *c; c++, adv(p))
		if (peek(p) != *c)
			return err(p, l, "not a textual IR file: it must begin with 'mtc-ir 1'");
	if (isname(peek(p)))
		return err(p, l, "not a textual IR file: it must begin with 'mtc-ir 1'");
	blank(p);
	l = here(p);
	if (integer(p, &v, "the format version"))
		return -1;
	if (v != 1)
		return err(p, l, "IR format version %lld; this mtc reads version 1", (long long)v);
	if (eol(p))
		return -1;
	if (!nextline(p))
		return err(p, here(p), "expected 'model NAME \"FILE\"', found end of file");
	l = p->mloc = here(p);
	if (!(nm = name(p, "'model'", NULL)))
		return -1;
	if (strcmp(nm, "model"))
		return err(p, l, "expected 'model NAME \"FILE\"', found '%s'", nm);
	if (!(nm = name(p, "the model's name", NULL)) || !(file = string(p)) || eol(p))
		return -1;
	p->m = mod_new(nm, file);
	return 0;
}

/* Problems the checks find after parsing, at the .mir line of the op or function. */
static void
report(void *ctx, const Func *f, int op, int rel, const char *msg)
{
	P *p = ctx;
	int fi = f && f == p->m->step;
	Loc l = !f ? p->mloc : op >= 0 ? p->oploc[fi][op] : p->floc[fi];

	diag(p->src, l, "%s", msg);
	if (f && rel >= 0)
		note(p->src, p->oploc[fi][rel], "op %d, the update in place, is here", rel);
}

/* 'budget' INT 'solver=' STRING ('percent=' NUM)? */
static int
budget(P *p, Loc l)
{
	int64_t b;
	double pct = 0;
	char *sv = NULL, *kw = NULL;
	Loc kl;

	if (integer(p, &b, "the budget in bytes"))
		return -1;
	if (b <= 0)
		return err(p, l, "the budget must be a positive number of bytes");
	if (!(kw = name(p, "'solver='", &kl)))
		return -1;
	if (strcmp(kw, "solver"))
		return err(p, kl, "expected 'solver=', found '%s'", kw);
	if (expect(p, '=', "'=' after 'solver'") || !(sv = string(p)))
		return -1;
	if (strlen(sv) >= sizeof p->m->solver)
		return err(p, l, "solver name '%s' is too long", sv);
	if (!tail(p)) {
		if (!(kw = name(p, "'percent=' or end of line", &kl)))
			return -1;
		if (strcmp(kw, "percent"))
			return err(p, kl, "expected 'percent=' or end of line, found '%s'", kw);
		if (expect(p, '=', "'=' after 'percent'") || number(p, &pct, "a percentage"))
			return -1;
		if (!(pct > 0 && pct <= 100))
			return err(p, kl, "the percentage must be in (0, 100]");
	}
	if (eol(p))
		return -1;
	p->m->budget = b;
	p->m->budget_pct = pct;
	strcpy(p->m->solver, sv);
	return 0;
}

static void
body(P *p)
{
	while (p->src->nerr < MAXERR && nextline(p)) {
		Loc l = here(p);
		int line = p->line;
		char *w = name(p, "'input', 'param', 'state', 'buffer', 'optimizer', 'budget' or 'func'", NULL);
		int r;

		if (!w)
			r = -1;
		else if (strcmp(w, "input") == 0)
			r = decl(p, R_INPUT, l);
		else if (strcmp(w, "param") == 0)
			r = decl(p, R_PARAM, l);
		else if (strcmp(w, "state") == 0)
			r = decl(p, R_STATE, l);
		else if (strcmp(w, "buffer") == 0)
			r = decl(p, R_BUFFER, l);
		else if (strcmp(w, "optimizer") == 0)
			r = optim(p, l);
		else if (strcmp(w, "budget") == 0)
			r = budget(p, l);
		else if (strcmp(w, "func") == 0) {
			if (func(p, l))
				return;
			continue;
		} else
			r = err(p, l, "expected 'input', 'param', 'state', 'buffer', 'optimizer', 'budget' or 'func', found '%s'", w);
		if (r)
			skipline(p, line);
	}
}

Module *
ir_parse(Src *src)
{
	P p = { .src = src, .s = src->text, .n = src->text ? src->len : 0, .line = 1, .col = 1 };
	int nerr = src->nerr;
	Module *m = NULL;

	p.tmp = arena_new();
	p.args = xmalloc((p.capargs = 16) * sizeof *p.args);   /* never NULL: func_op copies from it */
	if (header(&p) == 0) {
		body(&p);
		if (src->nerr == nerr && !p.m->fwd)
			err(&p, here(&p), "the file has no func forward");
		if (src->nerr == nerr)
			ir_check(p.m, report, &p);
		m = p.m;
	}
	if (src->nerr > nerr) {
		mod_free(m);
		m = NULL;
	}
	arena_free(p.tmp);
	free(p.oploc[0]);
	free(p.oploc[1]);
	free(p.args);
	return m;
}
