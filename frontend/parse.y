/* parse.y: the tdsl grammar; builds the syntax tree of ast.h, recovers at ';' after errors. */
%define api.pure full
%define api.prefix {tdsl}
%define parse.error custom
%locations
%parse-param {void *scan} {Parser *p}
%lex-param {void *scan}

%code requires {
#include "ast.h"
}

%code provides {
int tdsllex(TDSLSTYPE *, TDSLLTYPE *, void *);
}

%code {
#include <string.h>

#define L(l) ((Loc){ (l).first_line, (l).first_column })

static void
tdslerror(TDSLLTYPE *l, void *scan, Parser *p, const char *msg)
{
	(void)scan;
	/* bison's own stack limit: only reachable by absurd nesting of unary minus */
	if (strcmp(msg, "memory exhausted") == 0)
		msg = "expression nested too deeply";
	perr(p, L(*l), "%s", msg);
}

static Node *
leaf(Parser *p, NodeKind k, Loc loc)
{
	return mknode(p, k, loc);
}
}

%union {
	int64_t i;
	double f;
	char *s;
	Node *n;
	Stmt *st;
	TypeEx *ty;
}

%token <i> INT "integer"
%token <f> FLOAT "number"
%token <s> IDENT "identifier"
%token <s> STRING "string"
%token CONST "const" DEF "def" RETURN "return" MODEL "model" INPUT "input" PARAM "param"
%token OUTPUT "output" TRAIN "train" WITH "with" FOR "for" IN "in" DOTDOT ".."
%token IMPORT "import" AS "as"

%left '+' '-'
%left '*' '/' '@'
%precedence NEG

%type <n> expr primary args arglist arg exprs names params idents init subs sub strings
%type <st> stmts stmt
%type <ty> type

%%

file
	: %empty
	| file item
	;

item
	: CONST IDENT '=' expr ';'		{ additem(p, I_CONST, $2, L(@2), $4, NULL, NULL); }
	| DEF IDENT '(' params ')' '{' stmts '}'	{ additem(p, I_DEF, $2, L(@2), NULL, $4, $7); }
	| MODEL IDENT '{' stmts '}'		{ additem(p, I_MODEL, $2, L(@2), NULL, NULL, $4); }
	| IMPORT STRING AS IDENT ';'		{
		Item *it = additem(p, I_IMPORT, $4, L(@4), NULL, NULL, NULL);
		it->path = $2;
		it->pathloc = L(@2);
	}
	| IMPORT STRING AS IDENT IDENT strings ';'	{
		/* `frozen` is a word only here: no program's names change meaning */
		Item *it = additem(p, I_IMPORT, $4, L(@4), NULL, $6, NULL);
		it->path = $2;
		it->pathloc = L(@2);
		if (strcmp($5, "frozen"))
			perr(p, L(@5), "expected ';' or 'frozen' after the import's name, got '%s'", $5);
	}
	| error ';'
	| error '}'
	;

strings
	: STRING				{ $$ = leaf(p, N_NAME, L(@1)); $$->name = $1; }
	| strings ',' STRING			{ $$ = leaf(p, N_NAME, L(@3)); $$->name = $3; $$->next = $1; }
	;

params
	: %empty				{ $$ = NULL; }
	| idents
	;

idents
	: IDENT					{ $$ = leaf(p, N_NAME, L(@1)); $$->name = $1; }
	| idents ',' IDENT			{ $$ = leaf(p, N_NAME, L(@3)); $$->name = $3; $$->next = $1; }
	;

/* Statements are built backwards (cheap left recursion) and reversed by their owner. */
stmts
	: %empty				{ $$ = NULL; }
	| stmts stmt				{ $$ = $1; if ($2) { $2->next = $1; $$ = $2; } }
	;

stmt
	: IDENT '=' expr ';'			{ $$ = mkstmt(p, S_ASSIGN, L(@1)); $$->name = $1; $$->nameloc = L(@1); $$->e = $3; }
	| IDENT ',' names '=' expr ';'		{
		Node *first = leaf(p, N_NAME, L(@1));
		first->name = $1;
		$$ = mkstmt(p, S_ASSIGN, L(@1)); $$->name = $1; $$->nameloc = L(@1); $$->e = $5;
		first->next = nrev($3, NULL);
		$$->names = first;
	}
	| FOR IDENT IN expr DOTDOT expr '{' stmts '}'	{
		$$ = mkstmt(p, S_FOR, L(@1)); $$->name = $2; $$->nameloc = L(@2);
		$$->e = $4; $$->e2 = $6; $$->body = srev($8);
	}
	| RETURN expr ';'			{ $$ = mkstmt(p, S_RETURN, L(@1)); $$->e = $2; }
	| OUTPUT names ';'			{ $$ = mkstmt(p, S_OUTPUT, L(@1)); $$->names = nrev($2, NULL); }
	| TRAIN IDENT WITH IDENT '(' args ')' ';'	{
		$$ = mkstmt(p, S_TRAIN, L(@1)); $$->name = $2; $$->nameloc = L(@2);
		$$->e = mkcall(p, N_CALL, $4, $6, L(@4));
	}
	| INPUT IDENT ':' type ';'		{ $$ = mkstmt(p, S_INPUT, L(@1)); $$->name = $2; $$->nameloc = L(@2); $$->ty = $4; }
	| PARAM IDENT ':' type init ';'	{
		$$ = mkstmt(p, S_PARAM, L(@1)); $$->name = $2; $$->nameloc = L(@2); $$->ty = $4; $$->init = $5;
	}
	| PARAM IDENT '[' expr ']' ':' type init ';'	{
		$$ = mkstmt(p, S_PARAM, L(@1)); $$->name = $2; $$->nameloc = L(@2); $$->e = $4;
		$$->ty = $7; $$->init = $8;
	}
	| error ';'				{ $$ = NULL; }
	;

names
	: IDENT					{ $$ = leaf(p, N_NAME, L(@1)); $$->name = $1; }
	| names ',' IDENT			{ $$ = leaf(p, N_NAME, L(@3)); $$->name = $3; $$->next = $1; }
	;

type
	: IDENT '[' ']'				{ $$ = aalloc(p->a, sizeof *$$); $$->dt = $1; $$->dtloc = L(@1); }
	| IDENT '[' exprs ']'			{
		$$ = aalloc(p->a, sizeof *$$); $$->dt = $1; $$->dtloc = L(@1);
		$$->dims = nrev($3, &$$->ndims);
	}
	;

init
	: %empty				{ $$ = NULL; }
	| '=' IDENT '(' args ')'		{ $$ = mkcall(p, N_CALL, $2, $4, L(@2)); }
	;

exprs
	: expr
	| exprs ',' expr			{ $$ = $3; $3->next = $1; }
	;

args
	: %empty				{ $$ = NULL; }
	| arglist
	;

arglist
	: arg
	| arglist ',' arg			{ $$ = $3; $3->next = $1; }
	;

arg
	: expr
	| IDENT '=' expr			{ $$ = leaf(p, N_KW, L(@1)); $$->name = $1; $$->a = $3; $$->depth = $3->depth + 1; }
	;

expr
	: expr '+' expr				{ $$ = mkbin(p, '+', $1, $3, L(@2)); }
	| expr '-' expr				{ $$ = mkbin(p, '-', $1, $3, L(@2)); }
	| expr '*' expr				{ $$ = mkbin(p, '*', $1, $3, L(@2)); }
	| expr '/' expr				{ $$ = mkbin(p, '/', $1, $3, L(@2)); }
	| expr '@' expr				{ $$ = mkbin(p, '@', $1, $3, L(@2)); }
	| '-' expr %prec NEG			{ $$ = mkneg(p, $2, L(@1)); }
	| primary
	;

primary
	: INT					{ $$ = leaf(p, N_INT, L(@1)); $$->ival = $1; }
	| FLOAT					{ $$ = leaf(p, N_FLOAT, L(@1)); $$->fval = $1; }
	| IDENT					{ $$ = leaf(p, N_NAME, L(@1)); $$->name = $1; }
	| IDENT '(' args ')'			{ $$ = mkcall(p, N_CALL, $1, $3, L(@1)); }
	| primary '[' subs ']'			{ $$ = mkindex(p, $1, $3, L(@1)); }
	| '(' expr ')'				{ $$ = $2; }
	| '[' ']'				{ $$ = mkcall(p, N_LIST, NULL, NULL, L(@1)); }
	| '[' exprs ']'				{ $$ = mkcall(p, N_LIST, NULL, $2, L(@1)); }
	;

/* Subscripts of x[...]: an index (an expression) or a slice a:b, either bound optional. */
subs
	: sub
	| subs ',' sub				{ $$ = $3; $3->next = $1; }
	;

sub
	: expr
	| ':'					{ $$ = mkslice(p, NULL, NULL, L(@1)); }
	| expr ':'				{ $$ = mkslice(p, $1, NULL, L(@1)); }
	| ':' expr				{ $$ = mkslice(p, NULL, $2, L(@1)); }
	| expr ':' expr				{ $$ = mkslice(p, $1, $3, L(@1)); }
	;

%%

/* bison's detailed message ("syntax error, unexpected X, expecting A or B"), except where a
 * ';' would have done: then, as clang says it, "expected ';' after T" just past the token T
 * before the unexpected one. */
static int
yyreport_syntax_error(const yypcontext_t *ctx, void *scan, Parser *p)
{
	yysymbol_kind_t exp[YYNTOKENS], tok = yypcontext_token(ctx);
	int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
	char msg[256];
	size_t k;

	(void)scan;
	for (int i = 0; i < n; i++)
		if (strcmp(yysymbol_name(exp[i]), "';'") == 0 && p->tok[1][0] && tok != YYSYMBOL_YYEMPTY) {
			perr(p, p->tokend[1], "expected ';' after '%s'", p->tok[1]);
			return 0;
		}
	k = (size_t)snprintf(msg, sizeof msg, "syntax error");
	if (tok != YYSYMBOL_YYEMPTY) {
		k += (size_t)snprintf(msg + k, sizeof msg - k, ", unexpected %s", yysymbol_name(tok));
		for (int i = 0; n <= 5 && i < n && k < sizeof msg; i++)
			k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s", i ? " or " : ", expecting ",
			                      yysymbol_name(exp[i]));
	}
	perr(p, L(*yypcontext_location(ctx)), "%s", msg);
	return 0;
}
