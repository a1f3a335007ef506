/* plan.h: the memory planner: its problem, its plans, its solvers (included by passes.h).
 *
 * The planner sees the step as the solvers need it (a Prob): ops in execution order with a
 * modeled time and result bytes, each forward value's uses split into early uses (served by
 * the value as first computed) and late uses (after the longest gap between two uses, for an
 * activation the turn from forward to backward). A plan is a schedule in Checkmate's form:
 * which forward ops are recomputed right before which op (rec), plus swaps of forward values
 * to host memory and back. remat.c turns a plan into IR; plan.c measures IR. */
#ifndef MTC_PLAN_H
#define MTC_PLAN_H

#include "ir.h"

/* What happens to a forward value between its early and its late uses. */
enum { KEEP, REC, SWAP };

typedef struct Prob {
	const Func *f;
	const Target *tg;      /* the cost model's machine */
	int n;                 /* ops */
	double *t;             /* modeled seconds of each op */
	int64_t *b;            /* bytes of each op's result on the accelerator (0: none) */
	int64_t *ab;           /* the same rounded up to the target's alignment, as layout places
	                        * it in the arena: the exact solvers' (chain.c, ilp.c) bytes */
	uint8_t *fwd;          /* recomputable: a pure op of decls and recomputable values */
	int **dep, *ndep;      /* ops whose results op i reads (no decls), ascending, unique */
	int **use, *nuse;      /* ops reading op i's result, ascending, unique */
	int *split;            /* first late use of i, n if none */
	int *lastearly;        /* last early use of i (i itself if none) */
	int *lastuse;          /* last use of i, n-1 if a function result */
	int turn;              /* the first op of the backward proper (the loss's gradient) */
	int *clob;             /* first op after i that updates a decl i reads: recompute before it */
	uint8_t *cand;         /* has late uses worth planning (a gap of two ops or more, some
	                        * use after the turn) */
	uint8_t *isres;        /* a function result (the loss, an output): stays to the end */
	double bw;             /* host copy bandwidth, bytes/s (tg->copybw); 0: no swaps */
	double time;           /* modeled seconds of the unplanned step */
	int64_t peak;          /* peak accelerator bytes of the unplanned step */
	int64_t *prof;         /* live bytes at each op of the unplanned step */
	int64_t *aprof;        /* the same in ab's bytes: the arena's lower bound there */
	long nodes;            /* the ILP's limit: branch-and-bound nodes per program (0: none);
	                        * with no --solver-time the only limit, so plans are the same on
	                        * every machine at any load */
	int tight;             /* swaps placed for memory, not time: the swap_out awaited at
	                        * once, the swap_in right before its first use */
	int nocuts;            /* the ILP without GLPK's cut generators, whose time no limit
	                        * bounds (ResNet's placement under cuda: 41 s with them, 6 s
	                        * without, the same step time) */
	const struct Plan *start; /* the ILP's start where it is faster than tso's plan and
	                        * needs no more bytes than the budget solved for (NULL: tso's) */
} Prob;

typedef struct Swap {
	int op;                /* the forward op whose result travels */
	int out, outwait;      /* swap_out after op out, its wait after op outwait */
	int in, inwait;        /* swap_in before op in, its wait before op inwait (the first use) */
} Swap;

typedef struct Plan {
	int n;
	uint8_t *rec;          /* rec[t * n + i]: recompute forward op i right before op t */
	Swap *sw;
	int nsw;
	/* filled by plan_eval and the solvers */
	const char *solver;
	int feasible;
	int64_t peak;          /* measured on the planned IR */
	double time;           /* modeled step seconds of the planned IR */
	double stime;          /* solve seconds */
	double gap;            /* ILP relative gap, -1 if none */
	double lb;             /* seconds over the unplanned step the ILP proved below every plan
	                        * of its program, the start (tso's plan) one of them; -1: none */
	double obj;            /* the solver's own objective (seconds), -1 if none */
	const char *stop;      /* what ended the ILP: "optimal", "node limit", "time limit",
	                        * "no incumbent"; NULL: no ILP ran */
} Plan;

/* plan.c: the planning problem, measuring planned IR, modes into schedules.
 * prob_new needs a step in execution order; fills a Prob with cost.c's modeled times. */
double plan_clock(void);             /* monotonic seconds */
double copy_time(const Prob *, int64_t bytes);
Prob *prob_new(const Func *, const Target *);
void prob_free(Prob *);
Plan *plan_new(const Prob *);
void plan_free(Plan *);
void plan_copy(Plan *dst, const Plan *src);
/* A measurement of a function as the pass installs it: the planner's one way to measure. */
typedef struct Meas {
	int64_t peak;          /* peak live accelerator bytes (liveness.c) */
	int peakop;            /* the op at that peak (of the function measured) */
	double time;           /* modeled seconds (cost.c: copies on their own stream, a wait
	                        * blocks until its copy is done) */
	int64_t *prof;         /* in: NULL or nop entries, out: the live bytes at each op */
} Meas;
void plan_measure(const Func *, const Target *, Meas *);
/* The live bytes at each op (prof: f->nop entries) with every value's rounded up to align as
 * layout places them: the lower bound of the arena there, Prob.aprof. */
void plan_aprofile(const Func *, int64_t align, int64_t *prof);
/* The same of g, a rewrite of a function of n ops whose op i is g's op map[i], at each of
 * those n ops (out): at op i the most held from just after op i-1's image to op i's. */
void plan_profile_back(const Func *g, int64_t align, const int *map, int n, int64_t *out);
/* Turn one mode per forward op (KEEP, REC, SWAP) into a schedule: recompute on demand before
 * the first late use, swaps placed so the copies hide behind compute. Modes that cannot be
 * honoured (a recompute after its inputs were updated) fall back to KEEP. */
void plan_expand(const Prob *, const uint8_t *mode, Plan *);
/* Is op a fetch: a param living in host memory copied in for its readers (home.c)? A forward
 * op to the planner: dropping it and fetching it again is its recomputation. */
int plan_is_fetch(const Func *, const Op *);
/* Where a swap of i's value goes when its first late use is op fd: placed for time, or for
 * memory if p->tight; _at places the swap_in (lin) and the swap_out's wait (lout) anywhere
 * from memory (0) to time (1). */
void plan_place_swap(const Prob *, int i, int fd, Swap *);
void plan_place_swap_at(const Prob *, int i, int fd, double lin, double lout, Swap *);
/* Apply, measure, fill p->peak, p->time; feasible = peak <= budget (budget 0: always). */
void plan_eval(const Prob *, Plan *, int64_t budget);
/* After plan_eval: does the plan's arena after layout fit (laid out only if its live peak
 * does)? Sets and returns pl->feasible. */
int plan_fits(const Prob *, Plan *, int64_t budget);
/* Is plan a better than b: fits where b does not, else faster (both fit) or with fewer
 * live bytes at its peak (neither fits)? b NULL: yes. The one comparator of the solvers. */
int plan_better(const Plan *a, const Plan *b);
/* The accelerator bytes a function needs once laid out (layout.c's arena, module tensors
 * included, *persist of them if not NULL; layout_to's goal); sets the values' offsets as a
 * side effect. With
 * plan_measure, the only measurement of the planner's files. */
int64_t plan_arena(Func *, const Target *, int64_t *persist, int64_t goal);
/* The arena of a plan after layout (plan_arena of its IR), which the budget holds. goal: the
 * budget (layout_to searches for a layout within it), -1: as small as the search gets it,
 * 0: the greedy's. */
int64_t plan_arena_of(const Prob *, const Plan *, int64_t goal);

/* remat.c: needs a Prob and a Plan of m->step; returns a new function (not installed) with
 * rec ops before their uses, swap_out/swap_in/wait ops, and late uses renamed. */
Func *remat(const Prob *, const Plan *);
/* The same, map (p->n entries) the index in the new function of each op of p's. */
Func *remat_map(const Prob *, const Plan *, int *map);
/* The same into g, a function remat made before (func_reset): its arrays are reused. */
Func *remat_again(const Prob *, const Plan *, Func *g);

/* home.c: params and optimizer state living in host memory. An update's group (its param and
 * the state it writes) lives at one level between steps: */
enum {
	HOME_DEV,        /* all on the accelerator */
	HOME_STATE,      /* the state in host memory, copied in for the update and home after it */
	HOME_PARAM,      /* the param in host memory: fetched for its readers, home after the update */
	HOME_BOTH,       /* both in host memory, the update on the accelerator */
	HOME_HOSTUPD,    /* both in host memory, the update runs on the host on the gradient sent
	                  * there (ZeRO-Offload) */
	NHOME
};
/* home_candidate: may decl d live in host memory (a param or state one update writes; state
 * nothing else reads)? home_allowed: the levels update op u of f may take, a mask of
 * 1 << HOME_* (HOME_DEV always; none other where the target keeps nothing in host memory).
 * home_mark: set (on) or clear Decl.host of the decls the levels lvl (one per op of f, 0 for
 * non-updates) move; how many. home_step, home_fwd: the step (for lvl) and the forward
 * rewritten for the Decl.host marks, new functions not installed; map (NULL or f->nop
 * entries): the index in the new step of each op of f. */
int home_candidate(const Func *, int d);
int home_allowed(const Func *, const Target *, int u);
int home_mark(Module *, const Func *, const uint8_t *lvl, int on);
/* home_key: the decl that names update op u's group (its first written operand that is a
 * decl: the param, or for the update of a ZeRO shard its state), -1 if none. */
int home_key(const Func *, int u);
Func *home_step(const Func *, const Target *, const uint8_t *lvl, int *map);
Func *home_fwd(const Func *, const Target *);

/* place.c: the placement search above the activation solvers: the levels (one per op of f, 0
 * for non-updates; malloc'ed) of the placement whose planned step is the fastest that fits
 * budget, NULL if moving nothing is as fast (t0: the modeled seconds of f's own plan,
 * INFINITY if it has none) or nothing may move. *fits = 0 with the levels of the most that
 * can move when no placement fits as planned (the planner's fallbacks then start there).
 * fit: the plan of a step within budget after layout, or NULL (the planner's tso rounds);
 * nodes: the ILP's limit for Probs it makes. Leaves Decl.host as it found it. */
typedef Plan *PlaceFitFn(Prob *, int64_t budget, double *stime, int64_t *arena);
uint8_t *place_search(Module *, Func *f, const Target *, int64_t budget, long nodes, double t0,
                      PlaceFitFn *fit, int jobs, double *stime, int *fits);
/* The pieces of the search, which dp.c's ZeRO search (shards and levels in one list) shares.
 * A point: a level of one group (shard: with its param sharded over the ranks, dp.c's), the
 * bytes it takes off the accelerator and the seconds of copy stream and host it costs.
 * place_points: the points of update op u's allowed levels but HOME_DEV (slack: the seconds
 * of compute after u), their count. place_chain: the group's lower hull of cost against bytes
 * from HOME_DEV, as steps up (the point tail, >= 0, last at ratio 0 when the hull stops short
 * of it), into up; their count. place_sort: every group's steps in one list, the most bytes
 * per second first, each group's in its order. place_walk: the prefix of a list of K steps
 * whose step is the fastest that fits, by few evaluations (ev: prefix k's PlaceVal); those
 * that do not depend on each other side by side in up to jobs processes (fork.c), with the
 * same result for any jobs; time: K + 1 entries, prefix 0's t0; *stime (if not NULL) gets the
 * solvers' seconds; -1 if nothing fits. */
typedef struct PlacePt {
	int lvl, shard;
	double cost;
	int64_t bytes;
} PlacePt;
typedef struct PlaceUp {
	int op, lvl, shard;    /* the group (its update op, or dp.c's param) and where it moves */
	double ratio;          /* bytes off the accelerator per second */
	int64_t bytes;         /* bytes this step takes off */
	int rank;              /* its place in the group's chain */
} PlaceUp;
typedef struct PlaceVal {
	double time;           /* modeled seconds of the prefix's step as planned, INFINITY if it
	                        * does not fit; where floor >= bound > 0, any time above bound */
	double floor;          /* the step's seconds unplanned where ev heeds bound (a plan only
	                        * adds to them), else -INFINITY */
	double stime;          /* seconds the solvers took */
} PlaceVal;
typedef void PlaceEvalFn(void *ctx, int k, double bound, PlaceVal *);
int place_points(const Func *f, const Target *, int u, double slack, PlacePt *);
int place_chain(const PlacePt *, int n, int tail, int op, PlaceUp *);
void place_sort(PlaceUp *, int n);
int place_walk(int K, double t0, PlaceEvalFn *, void *ctx, int jobs, double *time, double *stime);
/* place_effects: for the ILP, each change of one update op's level from base's (one per op of
 * f, NULL: everything on the accelerator), alone, measured on f rewritten for it, unplanned,
 * against f rewritten for base: the bytes it takes off the accelerator at each op of f (off,
 * f->nop entries; < 0 where it holds more) and the modeled seconds it adds (dt, < 0 where it
 * saves). Leaves Decl.host as it found it. */
typedef struct PlaceEffect {
	int op, lvl;
	int64_t *off;
	double dt;
} PlaceEffect;
int place_effects(Module *, const Func *f, const Target *, const uint8_t *base, PlaceEffect **);
void place_effects_free(PlaceEffect *, int);

/* chen.c: sqrt(n) checkpointing over the segments of segments.c's cuts. Always 0: the plan's
 * feasible says whether it fits. */
int solve_chen(const Prob *, int64_t budget, Plan *);

/* chain.c: tso's exact DP over the forward as a chain of stages cut at segments.c's cuts
 * (base: the bytes at each op no decision of it moves; glong: values decided outside).
 * chain_new: NULL where the step is no such chain (late reads out of the stages' order).
 * chain_solve: the recomputations of the cheapest plan within budget into pl (swaps
 * cleared), its seconds of recomputation; -1 if none fits or none costs at most ub (>= 0).
 * chain_hold_inputs: from then on each recomputed stage's input counted to the stage's end,
 * as if nothing in it let go of it (plans that leave the layout room, where the exact
 * count's best plan misses the budget after layout). */
typedef struct Chain Chain;
Chain *chain_new(const Prob *, const int *fops, int nf, const int *seg, const int *bnd, int nseg,
                 const int *endp, const uint8_t *lng, const uint8_t *glong, const int64_t *base);
double chain_solve(Chain *, int64_t budget, double ub, Plan *);
void chain_hold_inputs(Chain *);
void chain_free(Chain *);
/* The same plans as an integer program (ilp.c solves it): the DP's recursion as a flow
 * (Martin, Rardin and Campbell). A state is a node of the recursion (a checkpoint, the first
 * event to serve, the op of the batch, whether the checkpoint stays after) with the bytes its
 * plan may need: the budget at the root, less what a choice holds across the node below it.
 * A binary column per choice at a state whose own bytes fit (and costing at most ub, >= 0);
 * it needs the states of the nodes below it. Each state is chosen as often as the columns
 * that need it (the root once). Every plan of the DP within the budget is one solution and
 * back. States no plan serves are left out, with the columns that need them, and the columns
 * in no solution costing at most ub (>= 0) with the states only they reach. The relaxation's
 * bound is the DP's optimum: each state's least seconds are a dual solution, and each state's
 * cheapest column (best) an optimal basis. */
typedef struct ChCol {
	double cost;           /* seconds of recomputation */
	int node;              /* the state it serves */
	int need[2];           /* the states it needs served (-1: none) */
} ChCol;
typedef struct ChWhy {
	int kind, a, q, ti, keep, j, r, t2;
} ChWhy;
typedef struct ChModel {
	int nnode, root, ncol, capc, capn;  /* states; root -1: nothing fits */
	ChCol *col;
	ChWhy *why;            /* the choice behind each column */
	int *c0, *nc;          /* by state: its columns c0 .. c0 + nc */
	int *best;             /* by state: its cheapest column (they make an optimal basis) */
} ChModel;
/* chain_model stops building once it has more than maxcol columns (then m->ncol > maxcol). */
ChModel *chain_model(Chain *, int64_t budget, double ub, int maxcol);
void chain_model_plan(Chain *, const ChModel *, const uint8_t *pick, Plan *);
/* The columns of the DP's own plan within budget into pick (m->ncol entries): 0, or -1. */
int chain_warm(Chain *, int64_t budget, const ChModel *, uint8_t *pick);
void chain_model_free(ChModel *);

/* tso.c: the segmented dynamic program. 0, or -1 if it cannot fit. */
int solve_tso(const Prob *, int64_t budget, Plan *);
/* chain.c's DP on p's forward, its long-lived values kept (NULL: no such chain). */
Chain *tso_chain(const Prob *);
/* segments.c: the forward cut into segments at single-value boundaries: seg[k] is the index into the
 * forward ops where segment k starts, bnd[k] the op whose value crosses into it (-1: none);
 * endp[i] the last forward op (index into fops) of i's early uses; returns the number of
 * segments. long_[i] marks long-lived values left out of the cut test. Arrays are xmalloc'ed. */
int plan_segments(const Prob *, int **fops, int *nf, int **seg, int **bnd, int **endp,
                 uint8_t **long_);

/* ilp.c: the Checkmate-style integer program solved by GLPK within p->nodes nodes and, if
 * tlim > 0, tlim seconds (tlim 0: no clock), started from warm (may be NULL). 0 with pl filled
 * (pl->gap, pl->stop), or -1 if no solution was found. */
int solve_ilp(const Prob *, int64_t budget, double tlim, const Plan *warm, Plan *);
/* The gap of pl as measured against lb (seconds over the unplanned step proved below every
 * plan): 0 where pl takes no more, else the part of its overhead not proved necessary. */
double plan_gap(const Prob *, const Plan *pl, double lb);
/* The step's clock of its program (Checkmate's over the ops, whose objective it is): the
 * seconds of pl as the program's rows bound them, cost_fill's without collectives, never
 * more; its swaps as pl places them; 0, or -1 where pl is outside the program. */
int ilp_clock(const Prob *, const Plan *, double *sec);
/* Its program over a chain's stages only (chain.c's): -1 where the step is no such chain, a
 * swap may pay (no warm plan to say), or the program is too large. */
int solve_ilp_chain(const Prob *, int64_t budget, double tlim, const Plan *warm, Plan *);
/* The same with where params and optimizer state live decided too, linearized around a
 * placement: on f (p's) rewritten for it, each change of pe (place_effects) a column, at most
 * one a group and kmax in all, started from no change; mask as below (NULL: every
 * value decided); corr (NULL: none) bytes added at each stage, which make the program's
 * memory the measured one with no change. 0 with the changes chosen in lvl (the placement's
 * levels on entry) and pl the activations' plan in the program's model (not measured), or -1. */
int solve_ilp_place(const Prob *, int64_t budget, double tlim,
                    const PlaceEffect *pe, int npe, int kmax, const uint8_t *mask,
                    const int64_t *corr, Plan *, uint8_t *lvl);
/* The same deciding only the values in mask; everything else takes fix[t] bytes at stage t.
 * p's rec and swaps then hold the masked values' decisions only. */
int solve_ilp_part(const Prob *, int64_t budget, double tlim, const Plan *warm,
                   const uint8_t *mask, const int64_t *fix, Plan *);

/* ilpblk.c: the ILP in blocks for steps too large for one program (as Rockmate does): the
 * forward's values in blocks of consecutive ops, each block's decisions re-solved by the ILP
 * with the rest of the plan fixed (start: warm, tso's), a block's answer kept when the
 * measured plan fits and is faster. 0 with p filled (never worse than warm), -1 if warm is
 * NULL or does not fit. */
int solve_ilp_blocks(const Prob *, int64_t budget, double tlim, const Plan *warm, Plan *);

/* relax.c: the fastest plan found from the starts (NULLs skipped; none is changed) whose
 * arena fits budget, its arena in *arena; a start that misses is first tightened around its
 * peak. NULL if none fits. Never slower than a start that fits as it is. */
Plan *plan_relax(Prob *, int64_t budget, Plan **start, int nstart, long work, int64_t *arena);

/* planner.c: the pass. Needs m->step in execution order; replaces it by the planned step.
 * Returns 0, or -1 after an error message (an infeasible budget). */
typedef struct PlanOpts {
	const char *solver;    /* auto ilp tso chen none */
	int64_t budget;        /* bytes, 0: none */
	double budget_pct;     /* > 0: percent of the whole unconstrained arena */
	double tlim;           /* ILP seconds (--solver-time); 0: no wall clock, the plan does not
	                        * depend on the machine */
	const Target *tg;      /* the cost model's machine (copybw 0: no swaps) */
	long nodes;            /* ILP branch-and-bound nodes per program; 0: PLAN_NODES without
	                        * tlim, none with it */
	int nooffload;         /* params, gradients and optimizer state stay on the accelerator
	                        * (--offload=none): the planner decides activations only */
	int quiet;             /* no messages (the driver tries several steps: micro-batches) */
	int probe;             /* a trial that only ranks candidate steps (dp.c): no loosening
	                        * of swaps placed for memory, no floor when nothing fits */
	int64_t pct_of;        /* > 0: the arena a percentage budget was of, where not this
	                        * step's own (a rank's step, micro-batches): the floor's message
	                        * gives its percentages of it */
	int jobs;              /* trials that do not depend on each other planned in up to this
	                        * many processes at once (fork.c; 0, 1: one after the other) */
	const uint8_t *levels; /* where each group lives, given (dp.c's ZeRO search decided it with
	                        * the shards): a HOME_* per decl, read at each update's home_key;
	                        * the search does not run. NULL: the search decides */
} PlanOpts;
enum { PLAN_NODES = 50 };      /* the ILP's default limit (nodes per program) */
typedef struct PlanReport {
	char solver[32];       /* the solver whose plan was taken */
	char stop[48];         /* what ended the ILP's search, "-" if none ran */
	double tlim;           /* the wall-clock cap asked for (0: none; solve_s is printed then) */
	int64_t budget, base_peak, peak, arena;
	double base_time, time, stime, gap;
	int nrec, nswap;
	int64_t hstate;        /* bytes of optimizer state the plan keeps in host memory */
	int64_t hparam;        /* bytes of params it keeps there */
	int nhostupd;          /* updates it runs on the host */
	char placer[8];        /* who chose where params and state live: "search" (place.c),
	                        * "ilp" (its program around the search's), "zero" (dp.c's search
	                        * with the shards), "" if nothing moved */
	int nearly;            /* ops that make weights' gradients moved up (plan_hoist_grads) in
	                        * the order planned; 0: the list schedule's order */
	int micro;             /* the step's micro-batches (> 1; --micro-batches), else 0 or 1 */
} PlanReport;
int plan_step(Module *, const PlanOpts *, PlanReport *);
/* Each optimizer update moved up to just after the last op it depends on (gradients die
 * early), as plan_step does before planning; the tests plan the same step. */
void plan_hoist_updates(Func *);
/* Each weight's gradient, with the ops that make only it, moved up to just after what it
 * depends on (its update and copies can then overlap the rest of the backward); the planner
 * plans this order too and takes the faster. Returns how many ops moved. */
int plan_hoist_grads(Func *);
/* The same with the fallback's swaps all placed for memory, not loosened by relax.c: the
 * plan relax.c starts from, which the tests compare with. */
int plan_step_tight(Module *, const PlanOpts *, PlanReport *);
void plan_report_print(FILE *, const PlanReport *);
#endif
