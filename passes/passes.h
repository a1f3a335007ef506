/* passes.h: the passes over the IR, one file each, each with its contract (needs / fills). */
#ifndef MTC_PASSES_H
#define MTC_PASSES_H

#include "ir.h"

/* autodiff.c: needs m->fwd with fwd->loss and m->opt (a trained model); fills m->step with the
 * forward ops, the backward ops and the optimizer update, and adds the optimizer's state decls.
 * Returns 0, or -1 after a diagnostic. */
int autodiff(Module *, Src *);

/* The same in parts, for steps made of another module's gradients (micro.c):
 * autodiff_opt_decls: the optimizer's state and hyperparameter decls of m (and dropout's step
 *   counter), as autodiff makes them (m's forward rebuilt; functions made after it hold them).
 *   NULL after a diagnostic.
 * autodiff_grads: the forward (dropout's counter ticked first) and backward of m's loss, then
 *   the batch norms' running-statistics updates, as a new function of m (not installed, m
 *   unchanged; no optimizer ops), with m's decls od: grad[d] (m->ndecl entries) the value of
 *   param d's gradient in it, -1 for none; *seed the value of the loss's gradient (the
 *   backward's `const value=1`), -1 if the loss reaches no param. NULL after a diagnostic.
 * autodiff_updates: the optimizer's ops on step s of m: clipping (with clip_norm), the tick,
 *   the update of every param d with grad[d] >= 0 (a value of s) in declaration order. */
typedef struct OptDecls OptDecls;
Func *autodiff_grads(Module *, Src *, const OptDecls *, int *grad, int *seed);
OptDecls *autodiff_opt_decls(Module *, Src *);
void autodiff_updates(Module *, Func *s, const int *grad, const OptDecls *);
void autodiff_opt_free(OptDecls *);

/* micro.c: needs m (the model at its batch B, its forward with the loss, no step) and mu (the
 * same model elaborated at B / k: FeOpts.batch_div, not differentiated). fills m->step: k
 * times, the inputs whose leading dim is the batch sliced to micro-batch j's rows, mu's
 * forward and backward on them (the loss's gradient seeded with 1/k, outputs copied out at
 * their rows), the gradients summed over the micro-batches, the loss their mean (the whole
 * batch's, for a loss that is a mean over it); then the optimizer once (autodiff_updates) with
 * m's state and hyperparameter decls. Inputs and outputs that depend on the batch other than
 * by their leading dim, and params that depend on it, are errors. 0, or -1 after a
 * diagnostic (mu is left to the caller). */
int micro_batch(Module *m, Module *mu, int k, Src *);

/* slices.c: needs the forward of a model elaborated at its batch (w) and at a parts-th of it
 * (s), before simplify. fills chunk[key] for each dropout key < nkey: dropout's chunk
 * attribute for s's tensor (> 0: blocks of the whole batch's; 0: the tensor does not depend
 * on the batch; -1: its rows are not blocks of the whole's). Returns 0, or -1 when w and s
 * are not the same ops (every chunk -1). dropout_keys: 1 + the largest key in f. */
int batch_chunks(const Func *w, const Func *s, int parts, int64_t *chunk, int nkey);
int dropout_keys(const Func *f);
/* A warning at each dropout of f whose rows chunk[key] says are not blocks of the batch's:
 * `what` (the option that slices the batch) and `who` (what draws a mask of its own). */
void dropout_warn(Src *, const Func *f, const int64_t *chunk, const char *what, const char *who);
/* The step s of one of `ranks` ranks, each in k micro-batches (1: none; s's dropouts already
 * the micro-batches' slices): its dropouts' slice attributes for the rank, from chunk[key] of
 * batch_chunks(the whole batch's forward, the rank's, ranks). */
void dropout_ranks(Func *s, const int64_t *chunk, int nkey, int ranks, int k);

/* The autodiff context: what a gradient rule (grad.c, named in OPTAB) sees. Rules read the
 * gradient of op->res with d_grad and accumulate their f32 operands' gradients with d_acc;
 * every op they emit is an ordinary PH_BWD op of the step, located at the forward op. */
typedef struct Diff {
	Func *f;          /* the step under construction */
	int *grad;        /* value -> its gradient so far, -1: none yet */
	uint8_t *need;    /* value -> depends on a param, so its gradient is wanted */
	const char *base; /* name of the value being differentiated: results are "d.<base>" */
	Loc loc;          /* of the forward op being differentiated */
	int *npend;       /* value -> slice_grads waiting in pend[v] (d_acc, d_flush) */
	int **pend;
	int nv;           /* values grad, need and pend cover (the forward's) */
} Diff;
int d_grad(Diff *, int v);
int d_need(Diff *, int v);
/* grad[v] += g; g may have a shape v broadcasts to: it is reduced with sum_to first. */
void d_acc(Diff *, int v, int g);
/* The slice_grads d_acc left waiting for v, added into grad[v] (d_grad does it first). */
void d_flush(Diff *, int v);
/* Emit one backward op and return its result (-1 for F_NORES ops). given: the result type of
 * F_GIVEN ops, else NULL. ia/fa may be NULL. An operand mismatch is a bug: it dies. */
int d_emit(Diff *, Opk, const int *args, int n, const int64_t *ia, int nia, const double *fa,
           const Type *given);
/* The same, shorter, for ops without attributes. */
int d_op1(Diff *, Opk, int a);
int d_op2(Diff *, Opk, int a, int b);
/* g reduced (sum_to) to the shape of value v, or g itself when the shapes agree. */
int d_sumto(Diff *, int g, int v);

/* copy.c: rebuilding functions. copy_op appends a copy of op (of function `from`) to `to`,
 * its operands renamed through map (from's value -> to's value), sets map[op->res] and returns
 * the new op index; phase < 0 keeps the op's phase. func_adopt moves a freshly built function
 * into *f (whose old tables are freed), so pointers to f stay valid. */
int copy_op(Func *to, const Func *from, const Op *op, int *map, int phase);
void func_adopt(Func *f, Func *nf);
/* A fresh function with f's decls, then f's ops for which keep[op] (NULL: all) is set, its
 * outputs and loss: a clone with the module's current decls. map: f's value -> the new one's
 * (f->nval entries, -1 where dropped; may be NULL). */
Func *func_rebuild(Func *f, const uint8_t *keep, int *map);
/* Whether two functions have the same ops and values (names included; offsets not). */
int func_same(const Func *a, const Func *b);

/* fork.c: fn(i, ctx, out) for i < n, each writing size bytes (<= PIPE_BUF) at out + i * size,
 * in up to `jobs` child processes at once (<= 1: here, in order); the same bytes for any jobs. */
void par_map(int n, int jobs, void (*fn)(int, void *, void *), void *ctx, void *out, size_t size);
int par_width(int jobs);       /* how many par_map would run at once here: 1 in a trial's child */

/* simplify.c: dead-code elimination (forward keeps only what its outputs need; step keeps the
 * loss and the updates) and common-subexpression elimination. Never run after planning. */
void simplify(Func *);

/* target.c: what the cost model knows of a machine. The built-in descriptions are public
 * figures rounded (see target.c); every field can be overridden from the command line. */
typedef struct Target {
	const char *name;
	double flops;       /* peak FLOP/s of the accelerator (f32) */
	double bw;          /* accelerator memory bandwidth, bytes/s */
	double copybw;      /* host<->accelerator copy bandwidth, bytes/s */
	double copylat;     /* latency of one copy, s */
	double launch;      /* overhead of launching one op, s */
	int64_t capacity;   /* accelerator memory, bytes */
	int64_t align;      /* arena alignment, bytes (a power of two) */
	int hoststate;      /* its code can keep params and optimizer state in host memory and
	                     * update them there (swap_home, updates on the host) */
	double hostflops;   /* FLOP/s of the host threads that run updates on the host (f32) */
	double hostbw;      /* their memory bandwidth, bytes/s */
	double netbw;       /* data parallelism: network bandwidth of one rank's link, bytes/s */
	double netlat;      /* latency of one message between two ranks, s */
	int duplex;         /* one copy engine each way (copybw each), else one for both */
	/* The host's issue (0: off, launch counts as the op's overhead): the host issues the
	 * step's kernels op after op, issue seconds each (issue_gemm for a matmul, a cuBLAS
	 * call), and a kernel starts no sooner than the host has issued it; launch is then the
	 * accelerator's fixed time of a kernel. Measured on a GPU by bench/calibrate.py. */
	double issue, issue_gemm;
	double gemm_flops;  /* FLOP/s of matmuls (0: flops) */
	double conv_flops;  /* FLOP/s of convolutions and their gradients (0: flops) */
} Target;
/* The built-in descriptions; each target (backend/backend.h) points to its own. */
extern const Target target_mt3000, target_cuda;
/* A copy of the built-in description `name` ("mt3000", "cuda"); 0, or -1 if unknown. */
int target_get(Target *, const char *name);
/* Override one field from "--target-flops=1e12" style text; 0, 1 if the option is not a
 * target option, -1 if its value is bad (message in err). */
int target_option(Target *, const char *arg, char *err, size_t nerr);
extern const char target_help[];   /* the lines --help prints for those options */

/* cost.c: the cost rules of the op table (FLOPs per op), and the cost model.
 * needs: f in execution order, a target; fills: every op's modeled duration and its start and
 * end on its stream: compute ops run one after another; copies in order on the copy stream
 * (one each way on a duplex target), each starting when its operand exists; updates on the
 * host in order on the host's thread, each once the copies to the host issued before it are
 * done; a collective packs on the compute stream, then runs in order on the network; a wait
 * ends when its copy or collective does. */
typedef struct Cost {
	int nop;
	double *dur;        /* modeled seconds of each op */
	double *start, *end;
	double *net;        /* a collective's start on the network, else 0 */
	double *pack;       /* a collective's packing (its part on the compute stream), else 0 */
	double total;       /* modeled seconds of the whole function */
} Cost;
/* Bytes an op reads and writes in accelerator memory (operands + result). */
int64_t op_bytes(const Func *, const Op *);
/* Does op run on the host: an optimizer update of tensors in host memory? Such an update runs
 * on the host's thread once every copy issued before it (the gradient's) is done. */
int op_on_host(const Func *, const Op *);
/* Does copy op run on the engine to the accelerator (swap_in, unbucket) of a duplex target?
 * Else on the one to the host, which on a target without duplex takes both ways. */
int op_copy_in(const Target *, const Op *);
/* Modeled seconds of one op on a target: roofline max(flops/peak, bytes/bw) + launch; copies
 * latency + bytes/copybw; updates on the host max(flops/hostflops, bytes/hostbw); waits 0; a
 * collective its packing (a copy of its operands to host memory), after which it runs on the
 * network for op_net_time. */
double op_time(const Target *, const Func *, const Op *);
/* A collective's seconds on the network after its packing (0 for other ops): a ring over
 * r = `ranks` ranks, r - 1 latencies and (r - 1) / r of the whole bucket's bytes per link for
 * a reduce-scatter or an all-gather, twice that for an all-reduce. */
double op_net_time(const Target *, const Func *, const Op *);
void cost_fill(Cost *, const Func *, const Target *);
void cost_free(Cost *);

/* liveness.c: needs f in execution order; fills, for every value, the op that creates it,
 * the last op that needs it and its accelerator bytes, and the bytes live at every op.
 * Module tensors (inputs, params, state) are live the whole function; outputs and the loss to
 * its end; host values (swap_out results) take no accelerator bytes, and those an update on the
 * host reads live to the end (its thread may run after later copies); a copy's operand stays
 * live until the `wait` on the copy (a collective's operands only until the collective, which
 * packs them at once). A value is live at op i when birth <= i <= last: while op
 * i runs, its operands and its result are all resident. */
typedef struct Live {
	int nop, nval;
	int *birth;         /* creating op; -1 for module tensors */
	int *last;          /* last op that needs it; nop when live to the end */
	int64_t *bytes;     /* accelerator bytes (0 for host values) */
	int64_t *at;        /* at[i]: accelerator bytes live while op i runs */
	int64_t *after;     /* after[i]: what stays once op i is done (its dead operands freed) */
	int64_t base;       /* bytes of module tensors (live throughout) */
	int64_t peak;       /* max(base, at[]): the lower bound of any layout */
	int peakop;         /* the op where the peak is reached (-1: no ops) */
} Live;
void live_fill(Live *, const Func *);
void live_free(Live *);
/* Is value v live at op i? */
#define live_at(l, v, i) ((l)->birth[v] <= (i) && (i) <= (l)->last[v])

/* deps.c: the dependence DAG. needs: f in execution order (its order defines the direction of
 * memory dependences), each op's duration; after layout also Live and Value.off. fills: edges
 * RAW (SSA operands, and through a mutated module tensor), WAR and WAW (optimizer updates
 * against the other readers and writers of what they mutate; with a layout, ops whose tensors
 * share arena bytes). Each edge carries the latency of its source op. */
typedef enum { D_RAW, D_WAR, D_WAW } DepKind;
extern const char *const dep_name[];   /* "RAW" "WAR" "WAW" */
typedef struct Edge {
	int from, to;
	DepKind kind;
	uint8_t arena;      /* made by shared arena bytes */
	double lat;         /* seconds from the start of `from` until `to` may start */
} Edge;
typedef struct Dag {
	int nop, ne;
	Edge *e;            /* sorted by (to, from) */
	int *in;            /* edges into op i: e[in[i] .. in[i+1]) */
} Dag;
/* The operands op mutates in place: its first opinfo[].nwritten (an OPTAB column). This name
 * stays for passes/planner.c until it reads the column itself. */
static inline int op_nmut(Opk k) { return opinfo[k].nwritten; }
/* lv NULL: no arena edges. dur NULL: zero latencies. */
void dag_build(Dag *, const Func *, const Live *lv, const double *dur);
void dag_free(Dag *);

/* sched.c: list scheduling. needs: f (its current order is the program order), a target;
 * fills: f->op permuted into a topological order of its DAG chosen by priority:
 *   program   keep the order;
 *   mem       among ready ops the one that frees the most bytes (net); the lowest peak of
 *             two variants and the program order (never worse than the program order);
 *   critical  the longest latency-weighted path to the end first (long copies start early).
 * Ops whose operands come from a copy are ready when the copy is modeled to end. */
extern const char *const sched_names[];   /* "mem" "critical" "program", NULL */
void schedule(Func *, const Target *, const char *how);

/* layout.c: needs Live of f; fills Value.off of every value: module tensors first at fixed
 * offsets (in decl order, the same in every function of the module), then the others by
 * greedy-by-size over live intervals (the best of a few orders); values alive together
 * never share bytes; offsets are multiples of align. Host values get offsets in a separate
 * host zone. */
typedef struct Layout {
	int64_t arena;      /* accelerator bytes the layout needs */
	int64_t persist;    /* of which module tensors */
	int64_t host;       /* host zone bytes */
	int64_t hpersist;   /* of which module tensors living in host memory (Decl.host) */
	int64_t greedy;     /* the arena the greedy alone gave (above arena: layout_to searched) */
} Layout;
void layout(Layout *, Func *, const Live *, int64_t align);
/* The same, and where the greedy's arena is over goal (> 0; the planner's budget) while the
 * bytes alive at once are not, a bounded deterministic search for a layout within it; goal
 * -1: toward those bytes (as small as the search gets it); 0: the greedy alone (layout()). */
void layout_to(Layout *, Func *, const Live *, int64_t align, int64_t goal);
/* A layout read with the IR (a laid-out .mir's at= offsets): is every value that needs
 * bytes given one? */
int layout_given(const Func *, const Live *);
/* Keep the given offsets: check that they are aligned, that module tensors sit where layout
 * puts them, and that no two values alive at the same op share a byte. Returns 0, or -1
 * with the first conflict, naming both values and the op, in err. */
int layout_keep(Layout *, const Func *, const Live *, int64_t align, char *err, size_t nerr);

/* dump.c: what a person reads. The schedule (one line per op, then
 * `peak_live_bytes P arena_bytes A modeled_ms T`), the DAG for Graphviz, a Chrome trace. */
void dump_schedule(FILE *, const Func *, const Live *, const Cost *, const Layout *);
/* dump_dot: the whole DAG up to 60 ops, else one node per block of ops (a layer, a call)
 * with RAW edges between blocks; dump_dot_full: every op, every RAW/WAR/WAW edge. */
void dump_dot(FILE *, const Func *, const Dag *);
void dump_dot_full(FILE *, const Func *, const Dag *);
void dump_trace(FILE *, const Func *, const Live *, const Cost *);

/* svg.c: the arena over time as SVG: x the op index, y the byte offset, a rectangle per
 * tensor, the peak marked, the budget (bytes, 0: none) as a line; collectives in a lane above,
 * each from its op to the wait on it. */
void dump_memory(FILE *, const Func *, const Live *, const Layout *, int64_t budget);

/* dp.c: data parallelism (see dp.c for the contract). dp_step: f's step for one of `ranks`
 * ranks, gradients reduced in buckets of about cap bytes (cap <= 0: one bucket), their readers
 * last (schedule it again); with ZeRO (zero 1: optimizer state sharded, gradients all-reduced;
 * 2: gradients reduce-scattered too) the update of each param in sel (decl indices; NULL:
 * every param) writes its rank's shard of the param, and the params are gathered back
 * (dp_shard_state first, with the same sel); *nbuckets the buckets made.
 * dp_shard_state: the optimizer state of each param in sel (NULL: all) resized to its rank's
 * shard, of the others whole again; how many states are sharded.
 * dp_choose: m->step replaced by the fastest such step under the cost model, scheduled with
 * `sched`, over bucket sizes from one bucket down to one per gradient (cap > 0: that size
 * only); with a budget (po non-NULL: the budget in bytes) the fastest once planned by tso, the
 * smaller buckets holding gradients for less time; with ZeRO and `each`, also which params to
 * shard (every one otherwise) with where each group lives: *levels (levels non-NULL) then a
 * HOME_* per decl for PlanOpts.levels (malloc'ed), NULL where the planner's search is to
 * place; take non-NULL: the choice *take reported, made before on the
 * same step and options, made again without planning; its figures in *r. -1 (m unchanged)
 * if no param has a gradient. dp_update_grad: the gradient update u reads (-1: none). */
typedef struct DpReport {
	int ranks, zero, nbuckets;
	int64_t cap;            /* the bucket size taken, bytes */
	int64_t bytes;          /* reduced and gathered per step */
	double modeled_s;       /* the step's modeled time */
	double net_s;           /* of which its collectives on the network */
	double exposed_s;       /* the time the step loses to them: the rest is hidden */
	int early;              /* 1: gradients and collectives made as early as they can be */
	int nsharded, nparams;  /* ZeRO: params sharded, of those with a gradient */
	int joint;              /* ZeRO param by param: 1 + the prefix of dp.c's list of shards and
	                         * levels taken; 0: every param sharded, the search placing */
} DpReport;
Func *dp_step(const Func *f, int ranks, int64_t cap, int zero, const uint8_t *sel, int *nbuckets);
int dp_shard_state(Module *m, int ranks, const uint8_t *sel);
struct PlanOpts;
int dp_choose(Module *m, int ranks, int64_t cap, int zero, int each, const DpReport *take, const Target *tg,
              const char *sched, const struct PlanOpts *po, DpReport *r, uint8_t **levels);
int dp_update_grad(const Func *f, const Op *u);
void dp_report_print(FILE *, const DpReport *);

/* plan.c, remat.c, chen.c, tso.c, ilp.c, planner.c: the memory planner. */
#include "plan.h"

#endif
