/* ast.c: syntax tree constructors and list helpers for the parser. */
#include <stdarg.h>
#include <string.h>

#include "ast.h"

void
perr(Parser *p, Loc loc, const char *fmt, ...)
{
	va_list ap;

	if (p->stop)
		return;
	p->src->nerr++;
	va_start(ap, fmt);
	if (p->src->nerr <= MAXERR)
		diagv(p->src, loc, "error", fmt, ap);
	va_end(ap);
	if (p->src->nerr >= MAXERR) {
		fprintf(stderr, "%s: note: too many errors, stopping\n", p->src->name);
		p->stop = 1;
	}
}

Node *
mknode(Parser *p, NodeKind k, Loc loc)
{
	Node *n = aalloc(p->a, sizeof *n);

	n->kind = k;
	n->loc = loc;
	n->depth = 1;
	return n;
}

/* Keep the height of the tree so that the expander's recursion stays bounded: a chain
 * a + a + ... of 100 000 terms is a legal parse but a tree 100 000 deep. */
static void
height(Parser *p, Node *n, const Node *kid)
{
	if (kid && kid->depth + 1 > n->depth)
		n->depth = kid->depth + 1;
	if (n->depth > MAXDEPTH && !p->deep) {
		p->deep = 1;
		perr(p, n->loc, "expression nested more than %d deep", MAXDEPTH);
	}
}

Node *
mkbin(Parser *p, int op, Node *a, Node *b, Loc loc)
{
	Node *n = mknode(p, N_BIN, loc);

	n->op = op;
	n->a = a;
	n->b = b;
	height(p, n, a);
	height(p, n, b);
	return n;
}

Node *
mkneg(Parser *p, Node *a, Loc loc)
{
	Node *n = mknode(p, N_NEG, loc);

	n->a = a;
	height(p, n, a);
	return n;
}

Node *
mkcall(Parser *p, NodeKind k, char *name, Node *revargs, Loc loc)
{
	Node *n = mknode(p, k, loc);

	n->name = name;
	n->kid = nrev(revargs, &n->nkid);
	for (Node *a = n->kid; a; a = a->next)
		height(p, n, a);
	return n;
}

Node *
mkindex(Parser *p, Node *base, Node *revsubs, Loc loc)
{
	Node *n = mkcall(p, N_INDEX, NULL, revsubs, loc);

	n->a = base;
	height(p, n, base);
	return n;
}

Node *
mkslice(Parser *p, Node *lo, Node *hi, Loc loc)
{
	Node *n = mknode(p, N_SLICE, loc);

	n->a = lo;
	n->b = hi;
	height(p, n, lo);
	height(p, n, hi);
	return n;
}

Stmt *
mkstmt(Parser *p, StmtKind k, Loc loc)
{
	Stmt *s = aalloc(p->a, sizeof *s);

	s->kind = k;
	s->loc = loc;
	return s;
}

Item *
additem(Parser *p, ItemKind k, char *name, Loc loc, Node *e, Node *revparams, Stmt *revbody)
{
	Item *it = aalloc(p->a, sizeof *it);

	it->kind = k;
	it->name = name;
	it->loc = loc;
	it->e = e;
	it->params = nrev(revparams, &it->nparams);
	it->body = srev(revbody);
	*p->tail = it;
	p->tail = &it->next;
	return it;
}

Node *
nrev(Node *n, int *count)
{
	Node *r = NULL, *nx;
	int k = 0;

	for (; n; n = nx, k++) {
		nx = n->next;
		n->next = r;
		r = n;
	}
	if (count)
		*count = k;
	return r;
}

Stmt *
srev(Stmt *s)
{
	Stmt *r = NULL, *nx;

	for (; s; s = nx) {
		nx = s->next;
		s->next = r;
		r = s;
	}
	return r;
}
