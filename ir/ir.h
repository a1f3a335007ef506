/* ir.h: the SSA IR every stage shares: types, the op table, values, ops, functions, modules.
 *
 * Read this file as the table of contents of the IR layer. Values are indices into a
 * function's value table; ops have one fixed shape; everything lives in one arena per module,
 * freed in one go. The op table (OPTAB) is the single source of per-op facts: every other
 * per-op table in the project is indexed by Opk, and the kernel tables are checked at compile
 * time to name every op (OP_HAS, OP_NEEDS). */
#ifndef MTC_IR_H
#define MTC_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { MAXRANK = 8, MAXIA = 8, MAXFA = 4 };

/* ---------- util.c: arena, errors, strings ---------- */

typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *);
void arena_reset(Arena *);               /* everything in it let go, its largest chunk kept */
void *aalloc(Arena *, size_t);          /* zeroed, 16-byte aligned */
char *astrdup(Arena *, const char *);
char *asprintf_a(Arena *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xrealloc(void *, size_t);
char *xstrdup(const char *);
char *slurp(const char *path, size_t *len);       /* a whole file, or NULL */
unsigned strhash(const char *);                   /* FNV-1a, for the name tables */
/* "did you mean": the candidate closest to s by edits (insert, delete, replace, swap of two
 * neighbours), if within (strlen(s) + 2) / 3 edits and not s itself; else NULL (always for
 * names of 1 or 2 characters). */
const char *nearest(const char *s, const char *const *cand, int n);
/* Name tables: ids + 1 by open addressing (0: empty), capacity a power of two, at most half
 * full; nm(o, id) is an id's name. ntab_find: the first id of a name, or -1. ntab_add: add
 * id (ids 0..id-1 already in), growing as needed. */
typedef const char *NameFn(const void *o, int id);
int ntab_find(const int *tab, int cap, const char *name, NameFn *nm, const void *o);
void ntab_add(int **tab, int *cap, int id, NameFn *nm, const void *o);

/* An internal bug: message with the location, then abort. Never for bad input. */
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define assert_ir(c) ((c) ? (void)0 : die("assertion failed: %s", #c))
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Overflow-checked 64-bit arithmetic: return 0 and set *r, or return 1 on overflow. */
int mul64(int64_t a, int64_t b, int64_t *r);
int add64(int64_t a, int64_t b, int64_t *r);

/* ---------- diag.c: diagnostics in GCC form ---------- */

typedef struct { int line, col; } Loc;  /* 1-based; line 0 means "no location" */

/* A source file as diagnostics see it: its name and text (for the quoted line and caret). */
typedef struct Src {
	const char *name;
	const char *text;
	size_t len;
	int nerr;        /* errors reported so far */
} Src;

/* file:line:col: error: msg, then the source line and a caret. Counts into src->nerr. */
void diag(Src *, Loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diagv(Src *, Loc, const char *kind, const char *fmt, __builtin_va_list);
void note(Src *, Loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void warn(Src *, Loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
enum { MAXERR = 20 };    /* stop after this many errors */

/* ---------- types ---------- */

typedef enum { F32, I32 } DType;

typedef struct Shape {
	int rank;                /* 0 = scalar */
	int64_t d[MAXRANK];
} Shape;

typedef struct Type {
	DType dt;
	Shape sh;
} Type;

int64_t shape_numel(const Shape *);             /* product of dims (checked when built) */
/* Output extent of a window (kernel k, stride s, padding p each side, dilation d) sliding
 * over an input extent n, PyTorch's; 0 when it does not fit. */
int64_t window_out(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d);
/* The workspace a convolution of x [N, C, H, W] by w [Cout, C/G, kh, kw] with attributes
 * a = sh sw ph pw dh dw groups uses (ops.c, docs/ir.md): 0 for a pointwise one (1x1, stride
 * 1, no padding: its GEMMs read x and write y as they are) and a depthwise one (groups = C =
 * Cout: direct loops), else 1 with *ws the workspace's type, f32[k, (C*kh*kw + Cout) * Ho*Wo] for chunks of k images. */
int conv_workspace(const Shape *x, const Shape *w, const int64_t *a, Type *ws);
int64_t type_bytes(const Type *);               /* numel * 4 */
int shape_eq(const Shape *, const Shape *);
/* NumPy broadcasting of a and b into *r; 0 on success, -1 if incompatible. */
int shape_broadcast(const Shape *a, const Shape *b, Shape *r);
/* Can a be broadcast to r (r = broadcast(a, r))? */
int shape_broadcasts_to(const Shape *a, const Shape *r);
/* "f32[32,784]" into buf (returns buf). */
char *type_str(const Type *, char *buf, size_t n);
char *shape_str(const Shape *, char *buf, size_t n);
const char *dtype_name(DType);

/* ---------- the op table ---------- */

/* Op flags. */
enum {
	F_LANG = 1 << 0,     /* spelled in tdsl */
	F_EW = 1 << 1,       /* elementwise over its result, operands broadcast: has a formula, fuses */
	F_MUT = 1 << 2,      /* mutates its operands in place (optimizer), has no result */
	F_COPY = 1 << 3,     /* a host<->accelerator copy (swap_out, swap_in) */
	F_NORES = 1 << 4,    /* has no result value */
	F_GIVEN = 1 << 5,    /* result type is given (parsed or set by the builder), the rule checks it */
	F_VARIADIC = 1 << 6, /* nargs is a minimum */
	F_SCRATCH = 1 << 7,  /* a workspace: bytes of its own for the one op that reads it (and
	                      * overwrites them); CSE never merges two */
	F_WS = 1 << 8,       /* its operand after nargs (optional: F_VARIADIC) is a workspace it
	                      * overwrites: a `workspace` result that nothing else reads */
	F_COLL = 1 << 9,     /* a collective over the ranks of a data-parallel job: it reads its
	                      * operands at once (packing them into a bucket in host memory, its
	                      * result), runs on the network and is waited for like a copy */
};

struct Func;
struct Op;
struct Diff;

/* A shape rule: from the operands (and attributes) compute the result type into *r, or, for
 * F_GIVEN ops, check the given *r. Returns 0, or -1 with a message in err. */
typedef int ShapeRule(const struct Func *, const struct Op *, Type *r, char *err, size_t nerr);
/* A gradient rule: given op and the gradient of its result, accumulate the gradients of its
 * f32 operands through the autodiff context (passes/autodiff.c). */
typedef void GradRule(struct Diff *, const struct Op *);
/* A cost rule: floating-point operations the op performs. */
typedef double CostRule(const struct Func *, const struct Op *);

/* The table. Columns:
 *   id, name, operands (minimum if F_VARIADIC), flags,
 *   integer attributes (space-separated names; "name*" is a list of up to MAXRANK),
 *   float attributes, shape rule, gradient rule (gr_none: not differentiable), cost rule,
 *   operands written: how many leading operands an F_MUT op updates in place (the rest it reads),
 *   elementwise formula: for F_EW ops, the scalar meaning as a C expression over the operands
 *   x0 x1 x2, the first two float attributes c and d and the result's element count n (a float), calling
 *   <mtc/mtc-ops.h>; 0 for the others. The interpreter compiles it, the C and CUDA targets
 *   print it (op_ew_expr), so every target computes the same bits.
 * Attribute defaults for the frontend live in frontend/, the IR always prints every attribute. */
#define OPTAB(X) \
	/* language ops */ \
	X(CONST,     "const",       0, F_LANG | F_GIVEN,    "",              "value",           sh_const,    gr_none,      co_zero,       0, 0) \
	X(ADD,       "add",         2, F_LANG | F_EW,       "",              "",                sh_binary,   gr_add,       co_ew1,        0, mtc_add(x0, x1)) \
	X(SUB,       "sub",         2, F_LANG | F_EW,       "",              "",                sh_binary,   gr_sub,       co_ew1,        0, mtc_sub(x0, x1)) \
	X(MUL,       "mul",         2, F_LANG | F_EW,       "",              "",                sh_binary,   gr_mul,       co_ew1,        0, mtc_mul(x0, x1)) \
	X(DIV,       "div",         2, F_LANG | F_EW,       "",              "",                sh_binary,   gr_div,       co_ew1,        0, mtc_div(x0, x1)) \
	X(MATMUL,    "matmul",      2, F_LANG,              "ta tb",         "",                sh_matmul,   gr_matmul,    co_matmul,     0, 0) \
	X(RELU,      "relu",        1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_relu,      co_ew1,        0, mtc_relu(x0)) \
	X(GELU,      "gelu",        1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_gelu,      co_ew8,        0, mtc_gelu(x0)) \
	X(TANH,      "tanh",        1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_tanh,      co_ew8,        0, mtc_tanh(x0)) \
	X(SIGMOID,   "sigmoid",     1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_sigmoid,   co_ew8,        0, mtc_sigmoid(x0)) \
	X(EXP,       "exp",         1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_exp,       co_ew8,        0, mtc_exp(x0)) \
	X(LOG,       "log",         1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_log,       co_ew8,        0, mtc_log(x0)) \
	X(SQRT,      "sqrt",        1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_sqrt,      co_ew8,        0, mtc_sqrt(x0)) \
	X(RSQRT,     "rsqrt",       1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_rsqrt,     co_ew8,        0, mtc_rsqrt(x0)) \
	X(NEG,       "neg",         1, F_LANG | F_EW,       "",              "",                sh_unary,    gr_neg,       co_ew1,        0, mtc_neg(x0)) \
	X(POW,       "pow",         1, F_LANG | F_EW,       "",              "c",               sh_unary,    gr_pow,       co_ew8,        0, mtc_pow(x0, c)) \
	X(TRANSPOSE, "transpose",   1, F_LANG,              "perm*",         "",                sh_transpose,gr_transpose, co_zero,       0, 0) \
	X(RESHAPE,   "reshape",     1, F_LANG | F_GIVEN,    "",              "",                sh_reshape,  gr_reshape,   co_zero,       0, 0) \
	X(CONCAT,    "concat",      1, F_LANG | F_VARIADIC, "axis",          "",                sh_concat,   gr_concat,    co_zero,       0, 0) \
	X(SUM,       "sum",         1, F_LANG,              "axis keepdims", "",                sh_reduce,   gr_sum,       co_red,        0, 0) \
	X(MEAN,      "mean",        1, F_LANG,              "axis keepdims", "",                sh_reduce,   gr_mean,      co_red,        0, 0) \
	X(MAX,       "max",         1, F_LANG,              "axis keepdims", "",                sh_reduce,   gr_max,       co_red,        0, 0) \
	X(SOFTMAX,   "softmax",     1, F_LANG,              "axis",          "",                sh_unary,    gr_softmax,   co_softmax,    0, 0) \
	X(LOGSOFTMAX,"log_softmax", 1, F_LANG,              "axis",          "",                sh_unary,    gr_logsoftmax,co_softmax,    0, 0) \
	X(LAYERNORM, "layernorm",   3, F_LANG,              "",              "eps",             sh_layernorm,gr_layernorm, co_layernorm,  0, 0) \
	X(EMBEDDING, "embedding",   2, F_LANG,              "",              "",                sh_embedding,gr_embedding, co_zero,       0, 0) \
	X(XENT,      "cross_entropy",2,F_LANG,              "",              "",                sh_xent,     gr_xent,      co_softmax,    0, 0) \
	X(MSE,       "mse",         2, F_LANG,              "",              "",                sh_mse,      gr_mse,       co_ew8,        0, 0) \
	/* convolutional networks (docs/ir.md: their definitions are in passes/grad.c) */ \
	X(CLIP,      "clip",        1, F_LANG | F_EW,       "",              "lo hi",           sh_clip,     gr_clip,      co_ew1,        0, mtc_clip(x0, c, d)) \
	X(WORKSPACE, "workspace",   0, F_GIVEN | F_SCRATCH, "",              "",                sh_workspace,gr_none,      co_zero,       0, 0) \
	X(CONV2D,    "conv2d",      2, F_LANG | F_VARIADIC | F_WS, "sh sw ph pw dh dw groups", "", sh_conv2d, gr_conv2d,  co_conv2d,     0, 0) \
	X(MAXPOOL,   "max_pool2d",  1, F_LANG,              "kh kw sh sw ph pw dh dw", "",      sh_pool,     gr_maxpool,   co_pool,       0, 0) \
	X(AVGPOOL,   "avg_pool2d",  1, F_LANG,              "kh kw sh sw ph pw count_include_pad", "", sh_pool, gr_avgpool, co_pool,       0, 0) \
	X(BATCHNORM, "batch_norm",  5, F_LANG,              "training",      "eps momentum",    sh_batchnorm,gr_batchnorm, co_layernorm,  0, 0) \
	X(BN_MEAN,   "batch_norm_mean",1,0,                 "",              "",                sh_bnstat,   gr_none,      co_red,        0, 0) \
	X(BN_VAR,    "batch_norm_var",2, 0,                 "",              "",                sh_bnstat,   gr_none,      co_red,        0, 0) \
	X(DROPOUT,   "dropout",     1, F_LANG | F_VARIADIC, "key seed chunk parts part rankparts", "p",               sh_dropout,  gr_dropout,   co_ew8,        0, 0) \
	/* ops of imported graphs, not spelled in tdsl */ \
	X(SIN,       "sin",         1, F_EW,                "",              "",                sh_unary,    gr_sin,       co_ew8,        0, mtc_sin(x0)) \
	X(COS,       "cos",         1, F_EW,                "",              "",                sh_unary,    gr_cos,       co_ew8,        0, mtc_cos(x0)) \
	X(TOF32,     "to_f32",      1, 0,                   "",              "",                sh_tof32,    gr_none,      co_ew1,        0, 0) \
	X(TOI32,     "to_i32",      1, 0,                   "",              "",                sh_toi32,    gr_none,      co_ew1,        0, 0) \
	X(EQ,        "equal",       2, F_EW,                "",              "",                sh_binary,   gr_step,      co_ew1,        0, mtc_eq(x0, x1)) \
	X(LT,        "less",        2, F_EW,                "",              "",                sh_binary,   gr_step,      co_ew1,        0, mtc_lt(x0, x1)) \
	X(LE,        "less_equal",  2, F_EW,                "",              "",                sh_binary,   gr_step,      co_ew1,        0, mtc_le(x0, x1)) \
	X(SELECT,    "select",      3, F_EW,                "",              "",                sh_ternary,  gr_select,    co_ew1,        0, mtc_select(x0, x1, x2)) \
	X(MAXIMUM,   "maximum",     2, F_EW,                "",              "",                sh_binary,   gr_maximum,   co_ew1,        0, mtc_maximum(x0, x1)) \
	X(FLOOR,     "floor",       1, F_EW,                "",              "",                sh_unary,    gr_step,      co_ew1,        0, mtc_floor(x0)) \
	X(CEIL,      "ceil",        1, F_EW,                "",              "",                sh_unary,    gr_step,      co_ew1,        0, mtc_ceil(x0)) \
	X(ROUND,     "round",       1, F_EW,                "",              "",                sh_unary,    gr_step,      co_ew1,        0, mtc_round(x0)) \
	X(CUMSUM,    "cumsum",      1, 0,                   "axis exclusive reverse", "",       sh_cumsum,   gr_cumsum,    co_ew1,        0, 0) \
	X(ARGMAX,    "argmax",      1, 0,                   "axis keepdims", "",                sh_reduce,   gr_none,      co_red,        0, 0) \
	/* gradient helpers (made by autodiff) */ \
	X(SUMTO,     "sum_to",      1, F_GIVEN,             "",              "",                sh_sumto,    gr_none,      co_red,        0, 0) \
	X(BCAST,     "broadcast",   1, F_GIVEN | F_EW,      "",              "",                sh_bcast,    gr_none,      co_zero,       0, x0) \
	X(RELU_G,    "relu_grad",   2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_relu_grad(x0, x1)) \
	X(GELU_G,    "gelu_grad",   2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew8,        0, mtc_gelu_grad(x0, x1)) \
	X(TANH_G,    "tanh_grad",   2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_tanh_grad(x0, x1)) \
	X(SIGMOID_G, "sigmoid_grad",2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_sigmoid_grad(x0, x1)) \
	X(SQRT_G,    "sqrt_grad",   2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_sqrt_grad(x0, x1)) \
	X(RSQRT_G,   "rsqrt_grad",  2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_rsqrt_grad(x0, x1)) \
	X(POW_G,     "pow_grad",    2, F_EW,                "",              "c",               sh_binary,   gr_none,      co_ew8,        0, mtc_pow_grad(x0, x1, c)) \
	X(MAXIMUM_G, "maximum_grad",3, F_EW,                "",              "",                sh_ternary,  gr_none,      co_ew1,        0, mtc_maximum_grad(x0, x1, x2)) \
	X(MAX_G,     "max_grad",    3, 0,                   "axis keepdims", "",                sh_maxgrad,  gr_none,      co_red,        0, 0) \
	X(SOFTMAX_G, "softmax_grad",2, 0,                   "axis",          "",                sh_binary,   gr_none,      co_softmax,    0, 0) \
	X(LOGSOFTMAX_G,"log_softmax_grad",2,0,              "axis",          "",                sh_binary,   gr_none,      co_softmax,    0, 0) \
	X(LN_DX,     "layernorm_dx",3, 0,                   "",              "eps",             sh_lndx,     gr_none,      co_layernorm,  0, 0) \
	X(LN_DGAMMA, "layernorm_dgamma",2,0,                "",              "eps",             sh_lndgamma, gr_none,      co_layernorm,  0, 0) \
	X(EMBED_G,   "embedding_grad",2,F_GIVEN,            "",              "",                sh_embedgrad,gr_none,      co_zero,       0, 0) \
	X(XENT_G,    "cross_entropy_grad",3,0,              "",              "",                sh_xentgrad, gr_none,      co_softmax,    0, 0) \
	X(MSE_G,     "mse_grad",    3, F_EW,                "",              "",                sh_msegrad,  gr_none,      co_ew1,        0, 2.0f / n * (x0 - x1) * x2) \
	X(SLICE,     "slice",       1, F_GIVEN,             "axis start",    "",                sh_slice,    gr_slice,     co_zero,       0, 0) \
	X(SLICE_G,   "slice_grad",  1, F_GIVEN,             "axis start",    "",                sh_slicegrad,gr_none,      co_zero,       0, 0) \
	X(CLIP_G,    "clip_grad",   2, F_EW,                "",              "lo hi",           sh_binary,   gr_none,      co_ew1,        0, mtc_clip_grad(x0, x1, c, d)) \
	X(CONV2D_DX, "conv2d_dx",   2, F_GIVEN | F_VARIADIC | F_WS, "sh sw ph pw dh dw groups", "", sh_conv2d_dx, gr_conv2d_dx, co_conv2d_dx, 0, 0) \
	X(CONV2D_DW, "conv2d_dw",   2, F_GIVEN | F_VARIADIC | F_WS, "sh sw ph pw dh dw groups", "", sh_conv2d_dw, gr_none, co_conv2d_dw, 0, 0) \
	X(MAXPOOL_G, "max_pool2d_grad",2,0,                 "kh kw sh sw ph pw dh dw", "",      sh_poolgrad, gr_none,      co_pool,       0, 0) \
	X(AVGPOOL_G, "avg_pool2d_grad",1,F_GIVEN,           "kh kw sh sw ph pw count_include_pad", "", sh_poolgrad, gr_none, co_pool,     0, 0) \
	X(BN_DSTATS, "batch_norm_dstats",4,0,               "",              "eps",             sh_bndstats, gr_none,      co_layernorm,  0, 0) \
	X(BN_DX,     "batch_norm_dx",6, 0,                  "training",      "eps",             sh_bndx,     gr_none,      co_layernorm,  0, 0) \
	X(BN_UPDATE, "batch_norm_update",4,F_MUT | F_NORES, "count",         "momentum",        sh_bnupdate, gr_none,      co_ew1,        2, 0) \
	/* optimizer updates: in place on params and optimizer state; the hyperparameters (lr ...) \
	 * are operands, f32[] decls of role hyper, so they change at run time (passes/grad.c) */ \
	X(SGD,       "sgd_update",  4, F_MUT | F_NORES,     "",              "",                sh_sgd,      gr_none,      co_ew1,        1, 0) \
	X(SGDM,      "sgd_momentum_update",6,F_MUT|F_NORES, "",              "",                sh_sgdm,     gr_none,      co_ew1,        2, 0) \
	X(ADAM,      "adam_update", 9, F_MUT | F_NORES,     "",              "",                sh_adam,     gr_none,      co_ew8,        3, 0) \
	X(ADAMW,     "adamw_update",10,F_MUT | F_NORES,     "",              "",                sh_adam,     gr_none,      co_ew8,        3, 0) \
	X(TICK,      "tick",        1, F_MUT | F_NORES,     "",              "",                sh_tick,     gr_none,      co_zero,       1, 0) \
	/* gradient clipping by global norm (clip_norm): each gradient's sum of squares, then the \
	 * coefficient from their total and the clip_norm hyperparameter, which scales every gradient */ \
	X(SUMSQ,     "sumsq",       1, 0,                   "",              "",                sh_sumsq,    gr_none,      co_red,        0, 0) \
	X(CLIPCOEF,  "clip_coef",   2, F_EW,                "",              "",                sh_binary,   gr_none,      co_ew1,        0, mtc_clip_coef(x0, x1)) \
	/* a step's output (MODEL_step_out): its value copied to the caller's output `index` from \
	 * element `start` on (a micro-batch's slice), when the caller asked for outputs */ \
	X(COPYOUT,   "copy_out",    1, F_NORES,             "index start",   "",                sh_copyout,  gr_none,      co_zero,       0, 0) \
	/* memory plan: asynchronous copies between accelerator and host memory */ \
	X(SWAPOUT,   "swap_out",    1, F_COPY,              "",              "",                sh_unary,    gr_none,      co_zero,       0, 0) \
	X(SWAPIN,    "swap_in",     1, F_COPY,              "",              "",                sh_unary,    gr_none,      co_zero,       0, 0) \
	X(SWAPHOME,  "swap_home",   2, F_COPY,              "",              "",                sh_home,     gr_none,      co_zero,       1, 0) \
	X(WAIT,      "wait",        1, F_NORES,             "",              "",                sh_wait,     gr_none,      co_zero,       0, 0) \
	/* data parallelism (passes/dp.c, docs/ir.md): allreduce packs gradients into a bucket in \
	 * host memory and sums it over `ranks` ranks (times scale) on the network; `wait` on the \
	 * bucket ends it; unbucket copies elements back onto the accelerator (from `start`, plus \
	 * the rank's block with shard=1). ZeRO: shards=1 packs each gradient as ranks blocks of \
	 * ceil(numel / ranks), block by rank; reduce_scatter sums such a bucket and keeps this \
	 * rank's block; shard is a param's elements of this rank (f32[ceil(numel / ranks)], zero \
	 * padded), which its update writes in place; allgather packs shards, gathers every rank's; \
	 * unshard writes a param from a gathered bucket */ \
	X(ALLREDUCE, "allreduce",   1, F_COLL | F_VARIADIC, "ranks shards",  "scale",           sh_allreduce,gr_none,      co_zero,       0, 0) \
	X(UNBUCKET,  "unbucket",    1, F_COPY | F_GIVEN,    "start shard",   "",                sh_unbucket, gr_none,      co_zero,       0, 0) \
	X(REDSCAT,   "reduce_scatter",1,F_COLL | F_VARIADIC,"ranks",         "scale",           sh_allreduce,gr_none,      co_zero,       0, 0) \
	X(ALLGATHER, "allgather",   1, F_COLL | F_VARIADIC, "ranks",         "",                sh_allreduce,gr_none,      co_zero,       0, 0) \
	X(SHARD,     "shard",       1, 0,                   "ranks",         "",                sh_shard,    gr_none,      co_zero,       0, 0) \
	X(UNSHARD,   "unshard",     2, F_MUT | F_NORES,     "ranks start",   "",                sh_unshard,  gr_none,      co_zero,       1, 0)

typedef enum {
#define X(id, ...) OP_##id,
	OPTAB(X)
#undef X
	NOP
} Opk;

typedef struct OpInfo {
	const char *name;
	int nargs;
	int flags;
	const char *iattr;   /* integer attribute names, space-separated; "perm*" is a list */
	const char *fattr;   /* float attribute names */
	ShapeRule *shape;
	GradRule *grad;
	CostRule *cost;
	int nwritten;        /* leading operands updated in place (F_MUT ops) */
	const char *ew;      /* the elementwise formula (F_EW ops), or NULL */
} OpInfo;

extern const OpInfo opinfo[NOP];

/* A per-op table checked at compile time (the kernels of the interpreter and of each
 * target): written once as a list macro, LIST(K) expanding K(ID, entry) for every op, then
 *     LIST(OP_HAS)  OPTAB(OP_NEEDS)  T table[NOP] = { LIST(OP_ENTRY) };
 * An OPTAB op the list lacks is an undeclared has_ID, one it names twice a redeclared one:
 * adding an op without a kernel on every target fails the build. */
#define OP_HAS(id, e) enum { has_##id = 1 };
#define OP_NEEDS(id, ...) _Static_assert(has_##id, #id);
#define OP_ENTRY(id, e) [OP_##id] = e,

#define X(id, nm, na, fl, ia, fa, sh, gr, co, nw, ew) ShapeRule sh; GradRule gr; CostRule co;
OPTAB(X)
#undef X

int op_lookup(const char *name);                 /* Opk or -1 */
/* A rank's share of numel elements split over ranks (ZeRO's shards): ceil(numel / ranks). */
int64_t shard_len(int64_t numel, int64_t ranks);
int op_niattr(Opk);                              /* number of integer attributes (list = 1) */
int op_nfattr(Opk);
/* Index of attribute `name` among the op's integer (or float) attributes, or -1. */
int op_iattr_index(Opk, const char *name);
int op_fattr_index(Opk, const char *name);
int op_iattr_is_list(Opk);                       /* the op's only int attribute is a list */
/* An F_EW op's formula with its names replaced: x0 x1 x2 by x[0..2], c and d (the first two
 * float attributes) by c[0] and c[1], n by n (each a C expression the caller prints). Writes
 * into buf (n bytes) and returns it; dies if it does not fit or the op has no formula. */
char *op_ew_expr(Opk, const char *const x[3], const char *const c[2], const char *n, char *buf,
                 size_t nbuf);

/* ---------- values, ops, functions, modules ---------- */

/* What role a module-level tensor plays: given at every call (input), trained (param),
 * optimizer state (state), a buffer: module state that is not trained but updated by the
 * step itself (batch norm's running statistics, dropout's step counter), saved and loaded with
 * the params and read by the forward; or an optimizer hyperparameter (lr, momentum ...), an
 * f32[] that the updates read and the instance sets between steps (MODEL_set_lr), its
 * initializer the compile-time value. */
typedef enum { R_INPUT, R_PARAM, R_STATE, R_BUFFER, R_HYPER } Role;

typedef enum { INIT_NONE, INIT_ZEROS, INIT_ONES, INIT_FULL, INIT_NORMAL, INIT_UNIFORM,
	INIT_FILE, INIT_VALUES } InitKind;
typedef struct Init {
	InitKind kind;
	double a, b;      /* full(a); normal(mean a, std b); uniform(lo a, hi b) */
	/* INIT_FILE (f32 only): the values are the tensor's elements as little-endian f32 at byte
	 * `off` of `file` (an imported model's weights, where the model file holds them: the IR
	 * refers to them, the interpreter reads them, a module embeds them when it is built). */
	const char *file;
	int64_t off;
	/* INIT_VALUES: every element given (f32 or i32 as the tensor's dtype), in the module's
	 * arena: a constant an import computed (a mask, positions), `values(...)` in .mir. */
	const void *vals;
} Init;

/* A module-level tensor: an input, a param, optimizer state or a buffer. */
typedef struct Decl {
	char *name;       /* "x", "w.3", "mom.w.3" */
	Role role;
	Type ty;
	Init init;        /* params, state and buffers */
	int of;           /* state: the decl index of its param (-1: none, e.g. adam's step) */
	uint8_t host;     /* state that lives in host memory between steps (the planner's choice,
	                   * ' host' in the IR): the step copies it in for its update (swap_in)
	                   * and back home after it (swap_home) */
	Loc loc;
} Decl;

/* Where an op sits in a training step, for dumps and for the planner. */
typedef enum { PH_FWD, PH_BWD, PH_UPD, PH_REC, PH_MEM } Phase;
extern const char *const phase_name[];           /* "fwd" "bwd" "upd" "rec" "mem" */

typedef struct Value {
	char *name;       /* unique within the function; printed as %name */
	Type ty;
	int def;          /* index of the defining op, -1 for module tensors */
	int decl;         /* module decl index, -1 for op results */
	uint8_t host;     /* lives in host (DDR) memory: a swap_out or swap_home result, or the
	                   * value of a decl that lives there */
	int64_t off;      /* byte offset in its zone (accelerator arena or host), -1 until layout */
	Loc loc;
} Value;

typedef struct Op {
	Opk kind;
	Phase phase;
	int res;                  /* result value, -1 for F_NORES ops */
	int nargs;
	int *args;                /* value indices */
	int64_t ia[MAXIA];        /* integer attributes, in the table's order; a list fills ia[0..n) */
	int nia;                  /* list length for list attributes */
	double fa[MAXFA];         /* float attributes, in the table's order */
	int of;                   /* recompute (PH_REC): the value this op recomputes; else -1 */
	Loc loc;
} Op;

typedef struct Func {
	struct Module *mod;
	const char *name;         /* "forward" or "step" */
	Value *val;               /* val[0..mod->ndecl) mirror the module decls */
	int nval, capval;
	Op *op;                   /* in execution order */
	int nop, capop;
	int *out;                 /* output values, in `output` order */
	char **outname;           /* their names as the user wrote them */
	int nout;
	int loss;                 /* the value trained on (f32[]), or -1 */
	int *htab;                /* value names: open addressing, value index + 1 */
	int hcap;
	struct Arena *own;        /* its names and operand lists, when not in the module's arena:
	                           * a step rebuilt thousands of times (remat_again) reuses its own */
} Func;

typedef enum { OPT_NONE, OPT_SGD, OPT_ADAM, OPT_ADAMW } OptKind;
typedef struct Optim {
	OptKind kind;
	double lr, momentum, beta1, beta2, eps, weight_decay;
	double clip_norm;         /* > 0: gradients clipped to this global norm first; 0: none */
	Loc loc;
} Optim;
extern const char *const optim_name[];           /* "" "sgd" "adam" "adamw" */

typedef struct Module {
	Arena *arena;
	char *name;               /* the model's name */
	char *file;               /* source file name, for locations */
	Decl *decl;
	int ndecl, capdecl;
	int *dtab, dcap;          /* decl names: open addressing, decl index + 1 */
	Optim opt;
	Func *fwd;                /* always */
	Func *step;               /* trained models only */
	int64_t budget;           /* the --mem-budget in bytes the step was planned for, 0: none */
	uint64_t seed;            /* the build's seed (--seed), which autodiff writes into the
	                           * dropouts of the step (their masks); not printed: the ops say it */
	char solver[32];          /* and the solver whose plan it carries */
	double budget_pct;        /* > 0: the budget as given, percent of the unconstrained arena */
	int micro;                /* > 1: the step runs forward and backward on this many slices of
	                           * the batch (--micro-batches; 'micro_batches K' in the IR) */
} Module;

/* build.c: constructing the IR */
Module *mod_new(const char *name, const char *file);
void mod_free(Module *);
int mod_decl(Module *, const char *name, Role, Type, Init, Loc);   /* decl index */
int mod_find_decl(const Module *, const char *name);               /* or -1 */
void mod_set_host(Module *, int decl);   /* decl lives in host memory, in every function */
Func *func_new(Module *, const char *name);    /* values for all decls already present */
/* The same with an arena of its own for its names and operand lists, freed by func_free (the
 * struct and its name stay in the module's): for the many short-lived functions of planning. */
Func *func_new_own(Module *, const char *name);
void func_reserve(Func *, int nop, int nval); /* room for that many ops and values */
void func_reset(Func *);   /* empty again, as func_new made it, its arrays kept for reuse */
void func_free(Func *);    /* its heap parts and own arena; the struct stays in the module's */
/* Add a value named `name` (made unique: name, name.1, ...; NULL: a number) */
int func_value(Func *, const char *name, Type);
int func_find(const Func *, const char *name);  /* value index or -1 */
/* Append an op; its result (if any) becomes a new value of type *r named `name`. The caller
 * has computed *r (normally with op_infer). Returns the op index. */
int func_op(Func *, Opk, Phase, const int *args, int nargs, const int64_t *ia, int nia,
            const double *fa, const Type *r, const char *name, Loc);
/* Run the kind's shape rule for a candidate op; 0 or -1 with err. For F_GIVEN ops *r is in/out. */
int op_infer(const Func *, Opk, const int *args, int nargs, const int64_t *ia, int nia,
             const double *fa, Type *r, char *err, size_t nerr);
void func_output(Func *, const char *name, int val);
/* Renumber val[].def after ops were permuted or inserted. */
void func_relink(Func *);

/* print.c: the textual form (docs/ir.md); parse.c reads it back. */
void ir_print(FILE *, const Module *);
void ir_print_func(FILE *, const Func *);
/* Parse textual IR; on error diagnostics go through src and NULL is returned. */
Module *ir_parse(Src *src);

/* verify.c: SSA dominance, operand types against the op rules, decl consistency.
 * Returns the number of problems (each reported to stderr as an internal error). */
int ir_verify(const Module *, const char *stage);

/* interp.c: the reference interpreter. Tensors are host buffers, one per value. */
typedef struct Tensor {
	Type ty;
	void *data;               /* numel * 4 bytes */
} Tensor;
typedef struct Interp Interp;
/* State: one tensor per decl (inputs, params, optimizer state), owned by the interpreter.
 * NULL when they do not fit in the machine's memory (errno ENOMEM) or an initializer's file
 * cannot be read (errno EIO, after a message on stderr). */
Interp *interp_new(const Module *, uint64_t seed);
/* The ranks a data-parallel step's collectives run over. coll does, in place on buf, what MPI
 * does: kind 0 sums buf[count] over the ranks; 1 sums buf[size * count] and leaves this rank's
 * block at buf; 2 gathers every rank's buf[rank * count ...] into buf. 0 or -1. Without one
 * (the default) the interpreter is rank 0 and every other rank holds what it holds. */
typedef struct InterpComm {
	int rank, size;
	int (*coll)(void *ctx, int kind, float *buf, int64_t count);
	void *ctx;
} InterpComm;
void interp_set_comm(Interp *, const InterpComm *);
void interp_free(Interp *);
Tensor *interp_decl(Interp *, int decl);
/* Run a function. Outputs (forward) or the loss (step, out[0]) are copied into outs[i]
 * (preallocated by the interpreter; read them with interp_out); a step's copy_out ops fill the
 * forward's outputs after the loss (out[1 + k]). Returns 0 or -1 with errbuf. */
int interp_run(Interp *, const Func *, char *err, size_t nerr);
Tensor *interp_out(Interp *, int i);
/* High-water mark of the bytes the interpreter held: decl tensors plus live values (host
 * values, the results of swap_out, excluded). */
int64_t interp_peak(const Interp *);
/* Deterministic initial values: a param from its initializer, an input from pseudo-random data
 * (the recipe is in interp.c). Fills t->data (type_bytes(&d->ty) bytes) and sets t->ty.
 * i32 inputs get values in [0, 2^31); interp_new brings them below input_range().
 * 0, or -1 after a message on stderr when an INIT_FILE's file cannot be read. */
int init_tensor(const Decl *, uint64_t seed, Tensor *);
/* An INIT_FILE initializer's n values into dst; 0, or -1 with a message in err. */
int init_read(const Init *, int64_t n, float *dst, char *err, size_t nerr);
/* The values an i32 input may take, [0, range): the rows of the embedding table or the classes
 * of the cross_entropy that reads it (the smallest if several); 0 if nothing bounds it. */
int64_t input_range(const Module *, int decl);

#endif
