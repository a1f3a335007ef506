/* expand.h: the expander's values, scopes and context, shared by expand.c and eval.c (internal). */
#ifndef MTC_EXPAND_H
#define MTC_EXPAND_H

#include "ast.h"
#include "onnx.h"

/* Limits that keep hostile programs from exhausting time, memory or the C stack. */
enum {
	MAXOPS = 1000000,       /* ops in the expanded model */
	MAXWORK = 10000000,     /* statements and expression nodes visited while expanding */
	MAXEVAL = 2500,         /* nesting of expression evaluation and def calls together */
	MAXCALL = 100,          /* nesting of def calls */
	MAXDECL = 100000,       /* inputs and params, array elements included */
};
#define MAXBYTES ((int64_t)1 << 40)     /* no target holds a tensor of 1 TiB */

/* What an expression evaluates to. Integers and numbers stay compile-time values until a
 * tensor is needed; then they become a `const` op of type f32[]. */
typedef enum { V_ERR, V_INT, V_NUM, V_TENSOR, V_ARRAY } VKind;
typedef struct Val {
	VKind k;
	int64_t i;          /* V_INT: the value; V_ARRAY: the element count */
	double f;           /* V_NUM */
	int v;              /* V_TENSOR: the value; V_ARRAY: the first element's decl */
	int64_t num, den;   /* V_NUM made by an integer division that is not exact (den != 0) */
} Val;

/* Binding states of a scope entry. */
/* B_UNFOLDED: a const declared but not folded yet; B_BUSY: being folded (a cycle if met again). */
enum { B_NONE, B_VAL, B_LOOP, B_UNFOLDED, B_BUSY };

typedef struct Ent {
	const char *key;
	int state;
	int used;           /* consts: looked up (a -D const the file lacks must be) */
	Val val;
	const void *p;      /* consts and defs: their Item */
	Loc loc;
} Ent;

typedef struct Map {
	Ent *e;
	int cap, n;
	int lent;           /* e is the caller's buffer (a def call's frame): never freed here */
} Map;

/* map.c */
Ent *mget(const Map *, const char *);
Ent *mput(Map *, const char *);     /* the entry, created zeroed if absent */
void mfree(Map *);

/* One function body being expanded: the model, or one inlined call of a def. */
typedef struct Frame {
	Map names;
	struct Frame *up;
	const Item *def;    /* NULL for the model */
	Loc call;
	const char *hint;   /* name for the value the def returns */
	int ret;
	Val rv;
} Frame;

typedef struct Ctx {
	Src *src;
	Module *m;
	Func *f;            /* NULL while folding a const: then no op may be made */
	Frame *fr;          /* NULL while folding a const: then only consts are visible */
	Map consts, defs;
	Map imports;        /* `import ... as NAME`: Ent.p is the model (Onnx), NULL if unreadable */
	OnnxDecls decls;    /* the params that calls of imported graphs need (onnx.h) */
	Map seen;           /* locations already reported, keyed "line:col" */
	Map ren;            /* value names: the next SSA suffix to try for each */
	Arena *a;           /* for keys of seen */
	int depth, ncall;
	long work;
	int stop;           /* a limit was hit: unwind without further messages */
	int trained;
	Loc trainloc;
	int *bn, nbn;       /* batch_norm ops whose running statistics are not declared yet */
	int ndropout;       /* dropouts so far: each one's key, so each draws its own mask */
} Ctx;

extern const Val ERR;

/* eval.c */
Val err(Ctx *, Loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Val eval(Ctx *, Node *, const char *hint);
int lookup(Ctx *, const char *name, Loc, Val *);
Val undefined_name(Ctx *, Loc, const char *name);   /* the error, with "did you mean" */
int tensor(Ctx *, Val, Loc, const char *hint);          /* value index, or -1 */
int int_of(Ctx *, Val, Loc, int64_t *);                 /* 0, or -1 after a diagnostic */
int ieval(Ctx *, Node *, int64_t *);
int neval(Ctx *, Node *, double *);
int size_check(Ctx *, const Type *, Loc);

/* Signatures of built-in calls: tensor operands first, then named arguments. */
typedef struct Kw {
	const char *name;
	char ty;            /* 'a' axis, 'b' 0 or 1, 'f' number, 'i' integer, 'l' integer list,
	                     * 'p' an integer or a pair [h, w], 'v' any value */
	char req;
	double def;
} Kw;
enum { MAXKW = 6 };     /* named arguments of a built-in */
typedef struct Builtin {
	const char *name;
	int k;              /* Opk, InitKind or OptKind; or a B_ kind (eval.c) */
	int nt;             /* tensor operands; -1: one or more */
	Kw kw[MAXKW];
} Builtin;
extern const Builtin inits[], optims[];
const Builtin *findb(const Builtin *, const char *);
int isbuiltin(const char *);
int bind_args(Ctx *, Node *call, const char *what, int nt, const Kw *, int nkw, Node **t,
              int *ntp, Node **kv);

/* Append op k after its shape rule accepted it (else a diagnostic at loc and ERR); its result
 * is named hint (or a number). r: the given type of F_GIVEN ops, else filled. */
Val emit(Ctx *, Opk, const int *args, int na, const int64_t *ia, int nia, const double *fa,
         Type *r, const char *hint, Loc);

/* nn.c: the convolutional built-ins, each expanded into ops (docs/ir.md says how). kv: the
 * named arguments in the order of their Builtin entry (eval.c), NULL where not given. */
Val nn_conv2d(Ctx *, Node *call, const int *args, Node **kv, const char *hint);
Val nn_pool2d(Ctx *, Node *call, Opk, int x, Node **kv, const char *hint);
Val nn_batchnorm(Ctx *, Node *call, const int *args, Node **kv, const char *hint);
Val nn_dropout(Ctx *, Node *call, int x, Node **kv, const char *hint);
/* After the model body: declare the running statistics of every batch_norm (buffers named
 * after its gamma, GAMMA.running_mean and GAMMA.running_var) and make the ops read them. */
void nn_buffers(Ctx *);

/* expand.c */
Val inline_def(Ctx *, Node *call, Ent *def, const char *hint);
/* A call of an imported graph: its nout results into out[]; 0, or -1 after diagnostics. */
int import_call(Ctx *, Node *call, Ent *imp, Val *out, int nout);

#endif
