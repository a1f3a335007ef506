/* onnxint.h: the ONNX importer's internals, shared by its files (internal to frontend/):
 * the checked and indexed graph (onnx.c), values known at import time and their folding
 * (onnxfold.c), one expansion of a graph (onnxcall.c) and the op table (onnxops.c)
 * with its ops by family (onnxshape.c, onnxew.c, onnxindex.c, onnxnn.c, onnxconv.c). */
#ifndef MTC_ONNXINT_H
#define MTC_ONNXINT_H

#include "onnx.h"
#include "onnx.pb-c.h"

/* ONNX's TensorProto.DataType numbers that the importer names. */
enum { DT_FLOAT = 1, DT_UINT8 = 2, DT_INT8 = 3, DT_UINT16 = 4, DT_INT16 = 5, DT_INT32 = 6,
       DT_INT64 = 7, DT_BOOL = 9, DT_FLOAT16 = 10, DT_DOUBLE = 11, DT_UINT32 = 12,
       DT_UINT64 = 13 };

enum {
	MAXKNOWN = 1 << 24,     /* elements of a tensor folded at import time */
	FOLD_WORK = 1 << 24,    /* products of a MatMul or Einsum folded at import time */
	MAXCHAIN = 500,         /* nodes one value may wait on before it is folded or emitted */
};
#define MAXELEMS ((int64_t)1 << 38)     /* elements of a tensor of the file (1 TiB of f32) */

/* An initializer: a tensor of the file. */
typedef struct OxInit {
	Onnx__TensorProto *t;
	const char *name;
	int dt;
	Shape sh;
	int64_t n;              /* elements */
	/* Where its values are little-endian f32 bytes (DT_FLOAT stored as raw_data, packed
	 * float_data or external data): `file` at byte `off`; NULL when not so stored. */
	const char *file;
	int64_t off;
	int ext;                /* the data is external (a file beside the model) */
} OxInit;

/* A graph input that a call gives (one that is also an initializer is an initializer). */
typedef struct OxIn {
	int id;                 /* value id */
	int dt;                 /* elem_type */
	int rank;
	int64_t d[MAXRANK];     /* -1: symbolic or unknown */
	const char *sym[MAXRANK];   /* dim_param, or NULL */
} OxIn;

typedef struct OxNode {
	Onnx__NodeProto *p;
	const char *name;       /* the node's name, or its first output's when it has none */
	const char *op;         /* op_type */
	int nin, nout;
	int *in, *out;          /* value ids; -1 for an omitted optional operand ("") */
} OxNode;

struct Onnx {
	char *path;             /* as given */
	char *dir;              /* its directory ("" for the current one), for external data */
	Src own;                /* its diagnostics when the caller gives no Src */
	Src *err;
	uint8_t *buf;           /* the file's bytes (kept: tensors' offsets refer into it) */
	size_t len;
	Onnx__ModelProto *pb;
	Onnx__GraphProto *g;
	int opset;              /* of the default domain */
	Arena *a;
	char **name;            /* value names, by id */
	int nname, capname;
	int *htab, hcap;
	int *initof;            /* per value id: its initializer, or -1 */
	int *defnode;           /* per value id: the node that makes it, or -1 */
	OxIn *in;
	int nin;
	int *out;               /* value ids */
	int nout;
	OxInit *init;
	int ninit;
	OxNode *node;
	int nnode;
	/* The values standing for initializers made params, per initializer (-1: none yet), in
	 * function pf: later calls in that function share them. */
	int *pval;
	Role *prole;            /* and what they became: params, or buffers (batch norm's) */
	/* Per initializer: frozen by the importer's caller (onnx_freeze), 1; its values checked
	 * for infinities and NaNs (a mask, never a weight), 2 where it has some, 3 where not. */
	uint8_t *frozen;
	const Func *pf;
	/* The constants made decls (materialized values), in function pf: equal ones are one. */
	struct OxConst *cst;
	int ncst, capcst;
};

/* "file.onnx: error: node 'NAME' (OpType, opset N): ..." (nd NULL: no node part); counts in
 * o->err. Returns -1. */
int ox_error(Onnx *, const OxNode *nd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *dt_name(int dt);
int dt_size(int dt);        /* bytes of an element as raw data; 0: a type mtc does not read */
/* Check a tensor's type, dims and data against each other: *sh and *n from its dims; for
 * external data, *file and *off say where it is (else *file is NULL). 0, or -1 after an
 * error naming it as `what`. */
int ox_tensor_check(Onnx *, const OxNode *nd, const Onnx__TensorProto *, const char *what,
                    Shape *sh, int64_t *n, const char **file, int64_t *off);
int ox_lookup(const Onnx *, const char *name);      /* value id, or -1 */

/* The attribute called `name` of a node, or NULL. */
Onnx__AttributeProto *ox_attr(const OxNode *, const char *name);

/* ---------- onnxfold.c: tensors known at import time ---------- */

typedef enum { KF, KI, KB } KDt;    /* f32, int64, bool (as 0/1 int64) */
typedef struct Kv {
	KDt dt;
	Shape sh;
	int64_t n;
	float *f;               /* KF */
	int64_t *i;             /* KI, KB */
} Kv;

/* A tensor of the file (an initializer, a Constant's value) as known values; NULL after an
 * error through ox_error(o, nd, ...). */
Kv *kv_tensor(Onnx *, const OxNode *nd, const Onnx__TensorProto *, Arena *);
Kv *kv_new(Arena *, KDt, const Shape *);       /* zeroed */
double kv_get(const Kv *, int64_t i);          /* element i as a double */
/* The index into a tensor of shape src of flat element i of the broadcast shape dst. */
int64_t bcast_index(const Shape *src, const Shape *dst, int64_t i);
int kv_uniform(const Kv *);                    /* all elements equal (and n > 0) */

/* ---------- onnxcall.c: one expansion ---------- */

/* What an ONNX value is during one expansion. */
typedef struct Xv {
	int v;                  /* the IR value, or -1 */
	Kv *k;                  /* the values known at import time, or NULL */
	uint8_t made;           /* the graph has defined it (input, initializer, node output) */
	uint8_t param;          /* it depends on a float initializer (a param): folded only where
	                         * a value must be known, emitted as ops where a tensor is needed */
	uint8_t wait;           /* its node has not run: it runs when the value is asked for */
	uint8_t trained;        /* it depends on a float initializer not frozen (onnx_freeze): a
	                         * param that training moves, so never folded into a constant */
	uint8_t buffer;         /* an initializer that becomes a buffer, not a param */
	uint8_t boolean;        /* a run-time boolean: f32 1 or 0 (a comparison's result) */
	int64_t count;          /* > 0: an ONNX integer held exactly in f32, at most count (a
	                         * boolean cast to an integer, ReduceSums of such, below 2^24) */
} Xv;

typedef struct Ox {
	Onnx *o;
	OnnxCall *c;
	Arena *a;               /* this expansion's scratch: known values */
	Xv *x;                  /* per value id */
	const OxNode *nd;       /* the node being translated, for messages */
	int depth;              /* nesting of nodes run on demand */
	int bad;
} Ox;

/* The inputs and outputs of the node being translated (x->nd), by position. */
int has_in(Ox *, int i);                       /* given (not omitted) */
int in_t(Ox *, int i);                         /* as an IR value (emits what it needs); -1 */
int in_buffer(Ox *, int i);                    /* an initializer as a buffer; -1 */
Kv *in_k(Ox *, int i);                         /* as known values; NULL after an error */
int in_type(Ox *, int i, Type *);              /* its dtype and shape; -1 after an error */
void out_t(Ox *, int j, int v);
void out_k(Ox *, int j, Kv *);
/* Append op k (its type from the shape rule, or *given for F_GIVEN kinds); its result value,
 * or -1 after an error. Values are named in the order they are made: where two operands of
 * one op are both made, they are made in statements of their own (C leaves the order of a
 * call's arguments to the compiler, and the IR would depend on it), the last one first. */
int xemit(Ox *, Opk k, const int *args, int nargs, const int64_t *ia, int nia, const double *fa,
         const Type *given);
int xemit1(Ox *, Opk k, int a);
int xemit2(Ox *, Opk k, int a, int b);
int xconst(Ox *, double v, const Shape *);  /* f32 filled with v */
int xoneminus(Ox *, int v);                 /* 1 - v, the constant made after v */
/* Known values as an IR tensor: a const op when they are all equal, else a constant decl
 * (state given values(...), named PREFIX.<name>): -1 after an error. */
int xknown(Ox *, const Kv *, const char *name);
int xreshape(Ox *, int a, const Shape *);
/* "node 'NAME' (OpType, opset N): ..." for the node being translated; returns -1. */
int xerr(Ox *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Attributes of the node being translated, with their defaults. */
int64_t att_i(Ox *, const char *name, int64_t def);
double att_f(Ox *, const char *name, double def);
int att_is(Ox *, const char *name, const char *def, const char *s);   /* a string attribute is s */
int att_ints(Ox *, const char *name, int64_t *v, int max);   /* count, -1 absent, -2 too many */
/* An axis of a tensor of rank r, negative ones counted from the end; -1 after an error. */
int axis_of(Ox *, int64_t a, int r);

/* ---------- onnxops.c and the op files: the op table ---------- */

typedef struct OxOp {
	const char *name;
	/* fold: every input is known: the outputs as known values. 0, or -1 after an error. */
	int (*fold)(Ox *);
	/* emit: the outputs as IR ops (inputs through in_t or in_k). 0, or -1. */
	int (*emit)(Ox *);
	uint8_t typeonly;       /* fold reads only its inputs' types (Shape): always folded */
	uint8_t moves;          /* emit moves elements, changing none: a run-time boolean (or
	                         * count) input makes boolean (count) outputs */
} OxOp;

const OxOp *ox_op(const char *name);

/* Helpers of known values (onnxops.c): a new tensor (NULL past MAXKNOWN elements), a
 * reshaped view, a rank mtc handles, a list of integers, a scalar, axes normalized and
 * checked, axes from an input (opset >= since) or an attribute; -1 after an error. */
Kv *knew(Ox *, KDt dt, const Shape *sh);
Kv *kreshape(Ox *, const Kv *k, const Shape *sh);
int rank_ok(Ox *, int r);
int klist(Ox *, const Kv *k, int64_t *v, int *n, const char *what);
int kscalar(Ox *, const Kv *k, double *v, const char *what);
int axes_of(Ox *, int64_t *v, int n, int r);
int axes_arg(Ox *, int since, int in, const char *att, int64_t *v, int *n);
/* Inputs and outputs the op files share (onnxops.c): input i as f32 (a run-time boolean or
 * count as it is), output 0 as a run-time boolean, input i known without ops, input i as
 * i32 indices (a count or a boolean made so); -1 after an error. */
int in_f32(Ox *, int i);
int out_bool(Ox *, int v);
int known_in(Ox *, int i);
int in_index(Ox *, int i, const char *what, int i32);

/* The ops' fold and emit functions (the table's), and what the op files share. */
/* onnxshape.c: shape arithmetic and layout */
int fold_constant(Ox *);
int fold_shape(Ox *);
int fold_size(Ox *);
int fold_cos(Ox *);
int fold_identity(Ox *);
int emit_identity(Ox *);
int fold_cast(Ox *);
int emit_cast(Ox *);
int fold_where(Ox *);
int emit_where(Ox *);
int fold_expand(Ox *);
int emit_expand(Ox *);
int fold_range(Ox *);
int fold_layout(Ox *);
int emit_layout(Ox *);
int fold_transpose(Ox *);
int emit_transpose(Ox *);
int emit_tile(Ox *);
int emit_d2s(Ox *);
int fold_concat(Ox *);
int emit_concat(Ox *);
/* onnxew.c: elementwise ops and reductions */
int fold_bin(Ox *);
int xneg(Ox *, int v);
int emit_bin(Ox *);
int emit_cmp(Ox *);
int emit_isnan(Ox *);
int emit_sign(Ox *);
int emit_not(Ox *);
int emit_pow(Ox *);
int fold_un(Ox *);
int emit_un(Ox *);
int fold_reduce(Ox *);
int emit_reduce(Ox *);
int mean_axes(Ox *, int v, const int *mask, int keep);
int emit_cumsum(Ox *);
int emit_sum(Ox *);
int emit_clip(Ox *);
int emit_hard(Ox *);
int emit_leaky(Ox *);
/* onnxindex.c: indexing */
int onehot_eq(Ox *, int i, int p, int64_t n, int wrap, const char *name, int *fv);
int emit_onehot(Ox *);
int fold_scatternd(Ox *);
int emit_scatternd(Ox *);
int fold_gather(Ox *);
int emit_gather(Ox *);
int fold_slice(Ox *);
int emit_slice1(Ox *, int v, int a, int64_t start, int64_t n);
int emit_gatherel(Ox *);
int emit_scatterel(Ox *);
int emit_slice(Ox *);
int emit_split(Ox *);
int fold_split(Ox *);
int emit_pad(Ox *);
int fold_pad(Ox *);
int emit_argmax(Ox *);
int emit_topk(Ox *);
/* onnxnn.c: dense networks */
int emit_softmax(Ox *);
int emit_einsum(Ox *);
int fold_einsum(Ox *);
int fold_trilu(Ox *);
int emit_trilu(Ox *);
int emit_rnn(Ox *);
int emit_matmul(Ox *);
int fold_matmul(Ox *);
int emit_gemm(Ox *);
int emit_dropout(Ox *);
int emit_bn(Ox *);
int emit_layernorm(Ox *);
int emit_xentloss(Ox *);
/* onnxconv.c: convolutional networks */
int emit_conv(Ox *);
int emit_convt(Ox *);
int emit_pool(Ox *);
int emit_gap(Ox *);
int emit_instnorm(Ox *);
int emit_resize(Ox *);

#endif
