/* ast.h: the tdsl syntax tree shared by the lexer, the parser and the expander (internal).
 *
 * Every node and statement keeps the location of its first token, so every later error
 * points at source. Lists (arguments, statements, items) are singly linked through `next`.
 * All of it lives in one arena, freed in one go after expansion. */
#ifndef MTC_AST_H
#define MTC_AST_H

#include "frontend.h"

enum {
	MAXIDENT = 256,     /* longest identifier, in bytes */
	MAXNEST = 256,      /* deepest nesting of ( [ { */
	MAXDEPTH = 1000,    /* deepest expression tree (long operator chains) */
};

typedef enum {
	N_INT,      /* ival */
	N_FLOAT,    /* fval */
	N_NAME,     /* name */
	N_INDEX,    /* a[kid, ...]: kid an index expression or an N_SLICE */
	N_SLICE,    /* a:b inside [ ], either NULL when omitted */
	N_CALL,     /* name(kid...) */
	N_KW,       /* name = a, only as a call argument */
	N_LIST,     /* [kid, ...] */
	N_NEG,      /* -a */
	N_BIN,      /* a op b; op is one of + - * / @ */
} NodeKind;

typedef struct Node Node;
struct Node {
	NodeKind kind;
	Loc loc;
	int depth;          /* height of the tree below, for MAXDEPTH */
	int op;
	int64_t ival;
	double fval;
	char *name;
	Node *a, *b;
	Node *kid;          /* N_CALL arguments, N_LIST elements */
	int nkid;
	Node *next;         /* next argument or element */
};

typedef enum {
	S_ASSIGN,   /* name = e; or a, b, ... = e (names: a list of N_NAME, the first is name) */
	S_FOR,      /* for name in e..e2 { body } */
	S_RETURN,   /* return e */
	S_OUTPUT,   /* output names (a list of N_NAME) */
	S_TRAIN,    /* train name with e (an N_CALL) */
	S_INPUT,    /* input name : type */
	S_PARAM,    /* param name[e] : type = init; e may be NULL */
} StmtKind;

/* A tensor type as written: dtype name and dims (a list of expressions). */
typedef struct TypeEx {
	char *dt;
	Loc dtloc;
	Node *dims;
	int ndims;
} TypeEx;

typedef struct Stmt Stmt;
struct Stmt {
	StmtKind kind;
	Loc loc;
	char *name;
	Loc nameloc;
	Node *e, *e2;
	Node *names;        /* S_OUTPUT, and S_ASSIGN of several names */
	TypeEx *ty;         /* S_INPUT, S_PARAM */
	Node *init;         /* S_PARAM: an N_CALL or NULL */
	Stmt *body;         /* S_FOR */
	Stmt *next;
};

typedef enum { I_CONST, I_DEF, I_MODEL, I_IMPORT } ItemKind;

typedef struct Item Item;
struct Item {
	ItemKind kind;
	Loc loc;            /* of the name */
	char *name;
	Node *e;            /* I_CONST */
	Node *params;       /* I_DEF: a list of N_NAME; I_IMPORT: its frozen initializers (N_NAME,
	                     * the name the string as written: a name, or a prefix and '*') */
	int nparams;
	Stmt *body;         /* I_DEF, I_MODEL */
	char *path;         /* I_IMPORT: the model file as written */
	Loc pathloc;
	Item *next;
};

/* The parser's state, also the lexer's `extra`. */
typedef struct Parser {
	Src *src;
	Arena *a;
	Item *items;        /* in source order */
	Item **tail;
	int line, col;      /* the lexer's position */
	int nest;           /* open brackets */
	int deep;           /* an expression went past MAXDEPTH (reported once) */
	int stop;           /* give up: nesting limit, or too many errors */
	Loc end;            /* end of input */
	Loc tokend[2];      /* just past the last token and the one before it */
	char tok[2][24];    /* their text (cut short), for "expected ';' after ..." */
} Parser;

/* ast.c: constructors; list helpers. */
Node *mknode(Parser *, NodeKind, Loc);
Node *mkbin(Parser *, int op, Node *a, Node *b, Loc);
Node *mkneg(Parser *, Node *a, Loc);
Node *mkcall(Parser *, NodeKind, char *name, Node *revargs, Loc);
Node *mkindex(Parser *, Node *base, Node *revsubs, Loc);
Node *mkslice(Parser *, Node *lo, Node *hi, Loc);
Stmt *mkstmt(Parser *, StmtKind, Loc);
Item *additem(Parser *, ItemKind, char *name, Loc, Node *e, Node *revparams, Stmt *revbody);
Node *nrev(Node *, int *n);         /* reverse a list built backwards; count it */
Stmt *srev(Stmt *);
/* The error of a syntax error at loc (stops after MAXERR or a fatal limit). */
void perr(Parser *, Loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* lex.l: tokenize and parse src into p->items; returns the number of errors. */
int fe_parse(Parser *);

/* expand.c: items to IR. */
Module *fe_expand(Parser *, const FeOpts *);

#endif
