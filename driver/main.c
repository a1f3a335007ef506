/* main.c: the mtc command line and the pipeline, one straight list of stages. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "driver.h"
#include "frontend.h"
#include "onnx.h"
#include "passes.h"
#include "lower.h"
#include "backend.h"

static const char usage[] =
"usage: mtc MODEL.tdsl|MODEL.mir|MODEL.onnx [-o OUT] [options]\n"
"\n"
"Compile a tdsl model into a training module (MODEL.so and MODEL.h) whose memory is\n"
"scheduled at compile time. A tdsl model may import ONNX graphs (import \"net.onnx\" as\n"
"net;); MODEL.onnx itself compiles into a forward-only module (docs/onnx.md).\n"
"\n"
"options:\n"
"  -o FILE               output (.so by default; with --emit, the intermediate; '-' is stdout);\n"
"                        without -o the module is MODEL.so and MODEL.h in the current directory;\n"
"                        a device such as /dev/null takes the output alone (no MODEL.h, and\n"
"                        --emit=c's parts one after the other, as on stdout)\n"
"  Every option taking a value takes it in either form: --solver=tso or --solver tso.\n"
"  --emit=KIND           write an intermediate instead of the .so:\n"
"                          c         the generated C (mt3000): with -o F.c, host code in F.c and\n"
"                                    device kernels in F-dev.c; on stdout both, one after the other\n"
"                          h         the module's header, MODEL.h\n"
"                          cuda, ptx, llvm  (--target=cuda) the kernels' CUDA C, their PTX,\n"
"                                    the host code as LLVM IR\n"
"                          ir        textual SSA IR after the last pass run (see docs/ir.md)\n"
"                          schedule  one line per op: kind, result, bytes, live bytes, modeled\n"
"                                    start and end; last line `peak_live_bytes P arena_bytes A\n"
"                                    modeled_ms T` (P: peak live bytes, A: the arena)\n"
"                          dot       the dependence DAG for Graphviz: every op and edge up\n"
"                                    to 60 ops, else one node per layer or call (a block of\n"
"                                    ops that runs through the source once), RAW edges only\n"
"                          dot-full  every op and every RAW/WAR/WAW edge, however large\n"
"                          trace     Chrome trace-event JSON (compute, copies, live bytes)\n"
"                          memory    SVG of the arena over time: the peak live bytes, the\n"
"                                    arena, the budget\n"
"                        (of the training step, or of forward for models without one)\n"
"  --also-emit=KIND:FILE  also write intermediate KIND (as --emit) to FILE, from the same\n"
"                        compile as the main output (the same plan, whatever the solver's\n"
"                        limits); repeatable, up to 16 (not with --stop-after or\n"
"                        --data-parallel)\n"
"  --stop-after=STAGE    end the pipeline after a stage (frontend: just parse a .mir;\n"
"                          autodiff, simplify); only with --emit=ir\n"
"  --dump-dir=DIR        write the IR after every stage, numbered in pipeline order, and\n"
"                        every function's schedule, DAG, trace and memory picture; without\n"
"                        -o or --emit the module goes there too (DIR/NAME.so, DIR/NAME.h,\n"
"                        NAME the input's file name without .tdsl, .mir or .onnx), not\n"
"                        into the current directory\n"
"  --schedule=mem|critical|program   op order (default mem): mem lowers peak live bytes\n"
"                        (updates run as soon as their gradient exists), critical starts the\n"
"                        longest latency-weighted path (long copies) first, program keeps the\n"
"                        order the frontend and autodiff wrote\n"
"  --target=mt3000|cuda  code generation target (default mt3000)\n"
"  --mem-budget=SIZE     the budget: the largest arena the step may have (its accelerator\n"
"                        bytes as laid out, module tensors included; docs/glossary.md):\n"
"                        bytes, N with an optional K, M or G (powers of 1024) and an optional\n"
"                        B, fractions allowed (2097152, 2M, 2MB, 1.5M); or N% of the\n"
"                        unconstrained arena (the step's arena without a budget)\n"
"  --solver=auto|ilp|tso|chen|none   how recompute and swap are chosen (default auto:\n"
"                        the ILP where it proves an optimum in time, else the better of its\n"
"                        incumbent and the segmented DP; on steps over 250 ops the DP's\n"
"                        plan alone where it costs under 10% over the unplanned step);\n"
"                        ilp (auto on steps of up to 250 ops, and on larger ones whose plan\n"
"                        by the search costs 10% or more)\n"
"                        also places params and optimizer state by an integer program,\n"
"                        around the search's placement; --emit=schedule starts with the\n"
"                        plan's summary (solver, placed_by, solve time, overhead, ILP gap)\n"
"  --offload=auto|none   whether the planner may keep params and optimizer state in host\n"
"                        memory between steps and run updates on the host (default auto:\n"
"                        where the target can and it makes the step faster or fit; none:\n"
"                        they stay on the accelerator, the planner decides activations)\n"
"  --solver-nodes=N      the ILP's limit in branch-and-bound nodes per program (default\n"
"                        50; with --solver-time, none unless given): plans are the same\n"
"                        on every machine at any load\n"
"  --solver-time=S       also a wall-clock limit for the ILP, in seconds, for all of its\n"
"                        programs together (default none); it makes the plan depend on\n"
"                        the machine and its load\n"
"  --jobs=N              plan independent trials (the placements of params and state the\n"
"                        search measures, --data-parallel's bucket sizes and ZeRO stages)\n"
"                        in up to N processes at once (default: the CPUs online, at most\n"
"                        8); the output is the same for every N\n"
"  --data-parallel       the step runs as one rank of an MPI job (mpirun -np N): each rank\n"
"                        takes its slice of the declared batch, the gradients are averaged\n"
"                        over the ranks in buckets behind the backward; the module holds a\n"
"                        variant of the step for each number of ranks it supports\n"
"  --ranks=LIST          with --data-parallel: the numbers of ranks, e.g. 2,4,8 (default: the\n"
"                        divisors of the batch up to 8 whose slice --micro-batches divides,\n"
"                        those whose step fits the budget)\n"
"  --bucket-bytes=SIZE   with --data-parallel: the gradients' bucket size (default: the\n"
"                        fastest under the cost model, or once planned under a budget)\n"
"  --zero=0|1|2|auto     with --data-parallel: ZeRO, optimizer state sharded over the ranks\n"
"                        (1), and gradients reduce-scattered (2); each rank updates its shard\n"
"                        of every param and the params are all-gathered. auto (default):\n"
"                        under a budget the fastest plan of 0, 1 and 2, in 1 and 2 with the\n"
"                        params to shard chosen one by one, weighed with where each param's\n"
"                        state lives (sharding and moving to host memory in one list, most\n"
"                        bytes per second of copies first), else 0\n"
"  --micro-batches=K|auto  run forward and backward K times on slices of the batch (the\n"
"                        leading dim of the first input, a const) and sum the gradients\n"
"                        before one update: the whole batch's step with about a K-th of its\n"
"                        activation memory; auto: the planner weighs K = 1, 2, 4, ... against\n"
"                        recomputation and swaps, and takes the fastest modeled step that fits\n"
"                        the budget (a percentage is of the unconstrained step at K = 1);\n"
"                        with --data-parallel, K slices of each rank's slice (no auto)\n"
"  --arch=sm_XX          CUDA architecture for NVRTC\n"
"  -D NAME=INT           override (or define) an integer const of the model; for\n"
"                        MODEL.onnx, the size of a symbolic input dimension\n"
"  -O0 .. -O3            optimization level of generated code (default -O2)\n"
"  --seed=N              seed of the params' initial values and of dropout's masks\n"
"                        (default 0)\n"
"  --version             print the version and exit\n"
"  --help                print this help and exit\n"
"\n"
"environment:\n"
"  CC                    C compiler for MODEL.so (default cc)\n"
"  MTC_RUNTIME_DIR       where libmtcrt.a and mtc/mtc-rt.h are (default: the build tree,\n"
"                        then the installed $libdir and $includedir)\n"
"  MTC_KEEP_C=1          keep the generated C of a build and say where\n"
"  MTC_MARCH=CPU         the CPU MODEL.so is compiled for (default native: the machine\n"
"                        that builds it; empty: the compiler's default)\n"
"  MTC_CFLAGS=FLAGS      more C compiler flags for MODEL.so, after mtc's own (-O0, -g);\n"
"                        the MT-3000 target's\n"
"\n"
"Memory words (peak live bytes, arena, unconstrained arena, budget, module tensors, host\n"
"zone) are defined in docs/glossary.md.\n";

static void
fatal(const char *fmt, const char *arg)
{
	fprintf(stderr, "mtc: error: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* Bytes with an optional K/M/G suffix (powers of 1024) and B, for option opt; v is the number
 * already read, end what follows it. */
static int64_t
bytes_of(const char *opt, const char *s, double v, char *end)
{
	int64_t mul = 1;

	switch (*end) {
	case 0: break;
	case 'k': case 'K': mul = 1024; end++; break;
	case 'm': case 'M': mul = 1024 * 1024; end++; break;
	case 'g': case 'G': mul = 1024 * 1024 * 1024; end++; break;
	default:
		fprintf(stderr, "mtc: error: invalid %s '%s': unknown suffix\n", opt, s);
		exit(1);
	}
	if ((*end == 'B' || *end == 'b') && end[1] == 0)
		end++;
	if (*end || v * (double)mul >= 9.2e18 || v * (double)mul < 1) {
		fprintf(stderr, "mtc: error: invalid %s '%s'\n", opt, s);
		exit(1);
	}
	return (int64_t)(v * (double)mul);
}

/* SIZE: bytes with an optional K/M/G suffix (powers of 1024), or N%. */
static void
parse_budget(Opts *o, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		fatal("invalid --mem-budget '%s': expected bytes with an optional K, M or G suffix, or N%%", s);
	if (*end == '%' && end[1] == 0) {
		if (!(v > 0 && v <= 100))
			fatal("invalid --mem-budget '%s': a percentage must be in (0, 100]", s);
		o->budget_pct = v;
		return;
	}
	o->budget = bytes_of("--mem-budget", s, v, end);
}

/* --bucket-bytes=SIZE: bytes with an optional K/M/G suffix. */
static int64_t
parse_bytes(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		fatal("invalid %s: expected bytes with an optional K, M or G suffix", opt);
	return bytes_of(opt, s, v, end);
}

static const char *
oneof(const char *opt, const char *val, const char *const *choices)
{
	for (int i = 0; choices[i]; i++)
		if (strcmp(val, choices[i]) == 0)
			return choices[i];
	fprintf(stderr, "mtc: error: invalid %s '%s'; expected one of:", opt, val);
	for (int i = 0; choices[i]; i++)
		fprintf(stderr, " %s", choices[i]);
	fputc('\n', stderr);
	exit(1);
}

static const char *const targets[] = { "mt3000", "cuda", NULL };
static const char *const solvers[] = { "auto", "ilp", "tso", "chen", "none", NULL };
static const char *const emits[] = { "ir", "schedule", "dot", "dot-full", "trace", "memory", "c", "h",
	"cuda", "ptx", "llvm", NULL };
static const char *const zeros[] = { "0", "1", "2", "auto", NULL };
static const char *const stages[] = { "frontend", "autodiff", "simplify", NULL };
static const char *const offloads[] = { "auto", "none", NULL };

static int has_suffix(const char *s, const char *suf);

/* The long options: those taking a value (as --opt=VALUE or --opt VALUE), then the others. */
static const char *const valopts[] = { "--target", "--schedule", "--emit", "--also-emit", "--stop-after",
	"--dump-dir", "--mem-budget", "--solver", "--solver-time", "--solver-nodes", "--arch", "--seed",
	"--target-flops", "--target-bw", "--copy-bw", "--copy-latency", "--launch", "--accel-bytes",
	"--align", "--host-flops", "--host-bw", "--offload", "--net-bw", "--net-latency", "--ranks",
	"--host-issue", "--host-issue-gemm", "--gemm-flops", "--conv-flops",
	"--bucket-bytes", "--zero", "--micro-batches", "--jobs", NULL };
static const char *const flagopts[] = { "--help", "--version", "--data-parallel", NULL };

static int
listed(const char *const *l, const char *s, size_t n)
{
	for (int i = 0; l[i]; i++)
		if (strlen(l[i]) == n && strncmp(l[i], s, n) == 0)
			return 1;
	return 0;
}

/* An unknown option, with the closest known one. */
static _Noreturn void
unknown_option(const char *a)
{
	const char *all[sizeof valopts / sizeof *valopts + sizeof flagopts / sizeof *flagopts];
	char name[128];
	const char *near;
	int n = 0;

	for (int i = 0; valopts[i]; i++)
		all[n++] = valopts[i];
	for (int i = 0; flagopts[i]; i++)
		all[n++] = flagopts[i];
	snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
	if ((near = nearest(name, all, n)))
		fprintf(stderr, "mtc: error: unknown option '%s'; did you mean '%s'?\n", a, near);
	else
		fprintf(stderr, "mtc: error: unknown option '%s' (see mtc --help)\n", a);
	exit(1);
}

/* --dump-dir without -o or --emit: the module goes into the dump directory, named after the
 * input file, never over a module in the current directory. */
static void
dump_dir_output(Opts *o)
{
	const char *b = strrchr(o->input, '/') ? strrchr(o->input, '/') + 1 : o->input;
	size_t n = strlen(b);
	static char out[4096];   /* the output path lives as long as the options */

	if (has_suffix(b, ".tdsl") || has_suffix(b, ".onnx"))
		n -= 5;
	else if (has_suffix(b, ".mir"))
		n -= 4;
	if (n == 0 || strcmp(b, "-") == 0)
		b = "model", n = 5;
	if ((size_t)snprintf(out, sizeof out, "%s/%.*s.so", o->dump_dir, (int)n, b) >= sizeof out)
		fatal("--dump-dir '%s': the path is too long", o->dump_dir);
	o->output = out;
}

static void
parse_args(Opts *o, int argc, char **argv)
{
	static const char *defs[256];
	int *tgopts = xcalloc(argc, sizeof *tgopts), ntgopts = 0, tgo;
	char err[256];
	Target scratch;

	o->target = "mt3000";
	o->zero = ZERO_AUTO;
	o->schedule = "mem";
	o->solver = "auto";
	o->solver_time = 0;     /* no wall clock unless asked: the same plan on any machine */
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		o->jobs = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
	}
	o->opt_level = 2;
	o->defines = defs;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v;
#define VAL(pfx) (strncmp(a, pfx "=", sizeof pfx) == 0 ? (v = a + sizeof pfx) != NULL : 0)
		/* --opt VALUE is --opt=VALUE, as getopt_long reads it */
		if (a[0] == '-' && a[1] == '-' && !strchr(a, '=') && listed(valopts, a, strlen(a))) {
			if (++i == argc)
				fatal("%s needs an argument", a);
			v = xmalloc(strlen(a) + strlen(argv[i]) + 2);
			sprintf(v, "%s=%s", a, argv[i]);
			a = argv[i] = v;   /* the cost model's overrides are read again from argv */
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage, stdout);
			printf("\ncost model (defaults from --target, public figures; see the README):\n%s", target_help);
			exit(0);
		} else if (strcmp(a, "--version") == 0) {
			printf("mtc %s\n", PACKAGE_VERSION);
			exit(0);
		} else if (strcmp(a, "-o") == 0) {
			if (++i == argc)
				fatal("%s needs an argument", "-o");
			o->output = argv[i];
		} else if (strncmp(a, "-o", 2) == 0 && a[2]) {
			o->output = a + 2;
		} else if (strcmp(a, "-D") == 0 || (strncmp(a, "-D", 2) == 0 && a[2])) {
			const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
			if (!d || !strchr(d, '='))
				fatal("-D needs NAME=INT, got '%s'", d ? d : "");
			if (o->ndefines == 256)
				fatal("%s", "too many -D options");
			o->defines[o->ndefines++] = d;
		} else if (VAL("--target")) {
			o->target = oneof("--target", v, targets);
		} else if (VAL("--schedule")) {
			o->schedule = oneof("--schedule", v, sched_names);
		} else if (strncmp(a, "--", 2) == 0 && strchr(a, '=') &&
		           (tgo = target_option(&scratch, a, err, sizeof err)) != 1) {
			if (tgo < 0)
				fatal("%s", err);
			tgopts[ntgopts++] = i;
		} else if (VAL("--emit")) {
			o->emit = oneof("--emit", v, emits);
		} else if (VAL("--also-emit")) {
			char *c = strchr(v, ':');
			if (!c || c == v || !c[1])
				fatal("invalid --also-emit '%s': expected KIND:FILE, e.g. ir:model.mir", v);
			if (o->nalso == MAXALSO)
				fatal("%s", "more than 16 --also-emit options");
			*c = 0;
			o->also[o->nalso][0] = oneof("--also-emit", v, emits);
			o->also[o->nalso++][1] = c + 1;
		} else if (VAL("--stop-after")) {
			o->stop_after = oneof("--stop-after", v, stages);
		} else if (VAL("--dump-dir")) {
			o->dump_dir = v;
		} else if (VAL("--mem-budget")) {
			parse_budget(o, v);
		} else if (VAL("--solver")) {
			o->solver = oneof("--solver", v, solvers);
		} else if (VAL("--solver-time")) {
			char *e;
			o->solver_time = strtod(v, &e);
			if (*e || !(o->solver_time > 0))
				fatal("invalid --solver-time '%s': expected positive seconds", v);
		} else if (VAL("--offload")) {
			o->nooffload = strcmp(oneof("--offload", v, offloads), "none") == 0;
		} else if (VAL("--solver-nodes")) {
			char *e;
			errno = 0;
			o->solver_nodes = strtol(v, &e, 10);
			if (*e || !*v || o->solver_nodes < 1 || errno == ERANGE)
				fatal("invalid --solver-nodes '%s': expected a positive number of nodes", v);
		} else if (VAL("--jobs")) {
			char *e;
			long j = strtol(v, &e, 10);
			if (*e || !*v || j < 1 || j > 1024)
				fatal("invalid --jobs '%s': expected a number of processes from 1 to 1024", v);
			o->jobs = (int)j;
		} else if (strcmp(a, "--data-parallel") == 0) {
			o->dp = 1;
		} else if (VAL("--ranks")) {
			if (!*v || strspn(v, "0123456789,") != strlen(v))
				fatal("invalid --ranks '%s': expected numbers of ranks, e.g. 2,4,8", v);
			o->ranks = v;
		} else if (VAL("--zero")) {
			o->zero = strcmp(oneof("--zero", v, zeros), "auto") == 0 ? ZERO_AUTO : v[0] - '0';
		} else if (VAL("--bucket-bytes")) {
			o->bucket = parse_bytes("--bucket-bytes", v);
		} else if (VAL("--micro-batches")) {
			char *e;
			long k;
			if (strcmp(v, "auto") == 0) {
				o->micro = MICRO_AUTO;
				continue;
			}
			k = strtol(v, &e, 10);
			if (*e || !*v || k < 1 || k > 1 << 20)
				fatal("invalid --micro-batches '%s': expected a count (1 or more) or auto", v);
			o->micro = (int)k;
		} else if (VAL("--arch")) {
			if (strncmp(v, "sm_", 3) || !v[3] || strspn(v + 3, "0123456789a") != strlen(v + 3))
				fatal("invalid --arch '%s': expected sm_XX, e.g. sm_90", v);
			o->arch = v;
		} else if (VAL("--seed")) {
			char *e;
			errno = 0;
			o->seed = strtoull(v, &e, 10);
			if (*e || !isdigit((unsigned char)*v) || errno == ERANGE)   /* strtoull takes "-1" */
				fatal("invalid --seed '%s': expected a number from 0 to 18446744073709551615", v);
		} else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
			o->opt_level = a[2] - '0';
		} else if (a[0] == '-' && a[1]) {
			unknown_option(a);
		} else {
			if (o->input)
				fatal("more than one input file ('%s')", a);
			o->input = a;
		}
#undef VAL
	}
	if (!o->input)
		fatal("%s", "no input file (see mtc --help)");
	if (o->dump_dir && !o->output && !o->emit)
		dump_dir_output(o);
	/* the target's description, then the overrides in the order given */
	if (target_get(&o->tg, o->target))
		die("no description of target %s", o->target);
	for (int i = 0; i < ntgopts; i++)
		target_option(&o->tg, argv[tgopts[i]], err, sizeof err);
	free(tgopts);
}

/* FILE for writing; NULL or "-": standard output. */
static FILE *
open_path(const char *path)
{
	FILE *fp;

	if (!path || strcmp(path, "-") == 0)
		return stdout;
	fp = fopen(path, "w");
	if (!fp)
		fatal("cannot write '%s'", path);
	return fp;
}

/* The intermediates the driver writes itself (the IR and the analyses); the target writes
 * the others (c, h, cuda, ptx, llvm). */
static int
driver_kind(const char *k)
{
	static const char *const kinds[] = { "ir", "schedule", "dot", "dot-full", "trace", "memory", NULL };

	return listed(kinds, k, strlen(k));
}

static int ndump;

/* --dump-dir: the IR after each stage, numbered in pipeline order. Returns whether the
 * pipeline stops here (--stop-after). */
static int
dump(const Opts *o, const Module *m, const char *stage)
{
	char path[4096];
	FILE *fp;

#ifdef MTC_DEBUG
	if (ir_verify(m, stage))
		die("the IR does not verify after %s", stage);
#endif
	if (o->dump_dir) {
		snprintf(path, sizeof path, "%s/%02d-%s.mir", o->dump_dir, ++ndump, stage);
		if (!(fp = fopen(path, "w")))
			fatal("cannot write '%s'", path);
		ir_print(fp, m);
		fclose(fp);
	}
	return o->stop_after && strcmp(o->stop_after, stage) == 0;
}

/* Has a memory plan been applied (recomputations, copies)? */
static int
planned(const Module *m)
{
	const Func *fs[2] = { m->fwd, m->step };

	for (int k = 0; k < 2; k++)
		for (int i = 0; fs[k] && i < fs[k]->nop; i++)
			if (fs[k]->op[i].phase == PH_REC || fs[k]->op[i].phase == PH_MEM)
				return 1;
	return 0;
}

/* Was the IR read with its offsets (a laid-out .mir: at= on every value of every function)? */
static int
has_offsets(const Module *m)
{
	const Func *fs[2] = { m->fwd, m->step };
	int yes = 1;

	for (int k = 0; k < 2; k++)
		if (fs[k]) {
			Live l;
			live_fill(&l, fs[k]);
			yes = yes && layout_given(fs[k], &l);
			live_free(&l);
		}
	return yes;
}

/* The memory planner's summary, when it ran (the schedule dump starts with it). */
static PlanReport *planrep;

/* One analysis dump (schedule, dot, trace, memory) of f. */
static void
emit_analysis(FILE *fp, const char *kind, const Func *f, const Anal *a)
{
	if (strcmp(kind, "schedule") == 0) {
		/* the plan's report first: the schedule's last line is its summary */
		if (planrep && f->mod->step == f)
			plan_report_print(fp, planrep);
		dump_schedule(fp, f, &a->l, &a->c, &a->lay);
	} else if (strcmp(kind, "dot") == 0)
		dump_dot(fp, f, &a->d);
	else if (strcmp(kind, "dot-full") == 0)
		dump_dot_full(fp, f, &a->d);
	else if (strcmp(kind, "trace") == 0)
		dump_trace(fp, f, &a->l, &a->c);
	else if (strcmp(kind, "memory") == 0)
		/* the budget line: the budget in bytes as the planner resolved it (or a .mir records) */
		dump_memory(fp, f, &a->l, &a->lay, planrep ? planrep->budget : f->mod->budget);
	else
		die("no analysis dump '%s'", kind);
}

/* --dump-dir: every analysis dump of f, numbered after the IR dumps. */
static void
dump_analyses(const Opts *o, const Func *f, const Anal *a)
{
	static const char *const kinds[] = { "schedule", "dot", "trace", "memory" };
	static const char *const ext[] = { "txt", "dot", "json", "svg" };
	char path[4096];
	FILE *fp;

	if (!o->dump_dir)
		return;
	for (int k = 0; k < 4; k++) {
		snprintf(path, sizeof path, "%s/%02d-%s-%s.%s", o->dump_dir, ++ndump, f->name, kinds[k], ext[k]);
		if (!(fp = fopen(path, "w")))
			fatal("cannot write '%s'", path);
		emit_analysis(fp, kinds[k], f, a);
		fclose(fp);
	}
}

static int
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && strcmp(s + n - k, suf) == 0;
}

static const Backend *const backends[] = {
	&backend_mt3000,
#ifdef HAVE_CUDA
	&backend_cuda,
#endif
	NULL
};

/* Does f hold a collective (a data-parallel step)? */
static int
has_coll(const Func *f)
{
	for (int i = 0; i < f->nop; i++)
		if (opinfo[f->op[i].kind].flags & F_COLL)
			return 1;
	return 0;
}

/* Whether an --also-emit asks the target for an intermediate. */
static int
needs_target(const Opts *o)
{
	for (int a = 0; a < o->nalso; a++)
		if (!driver_kind(o->also[a][0]))
			return 1;
	return 0;
}

/* The last stage: lower the module (analyses an[0] of the step, an[1] of forward) and hand
 * it to the target, which writes an intermediate (--emit) or builds MODEL.so. */
static int
codegen(const Opts *o, const Module *m, const Anal an[2])
{
	const Backend *t = NULL;
	char def[4096];
	const Live *lv[2] = { &an[1].l, m->step ? &an[0].l : NULL };
	const Dag *dg[2] = { &an[1].d, m->step ? &an[0].d : NULL };
	/* a planned .mir that was not planned again keeps the budget and solver it records */
	LowPlan pl = { planrep ? planrep->solver : m->budget ? m->solver : "none",
	               planrep ? planrep->budget : m->budget, m->budget_pct, planrep };
	BuildOpts bo = { o->opt_level, o->arch, o->seed };
	Lowered lo;
	int rc;

	if (m->step && has_coll(m->step)) {
		fprintf(stderr, "mtc: error: %s: the step holds collectives: it is one rank's step of a "
		        "data-parallel module; compile the tdsl model with --data-parallel\n", o->input);
		return 1;
	}
	for (int i = 0; backends[i]; i++)
		if (strcmp(backends[i]->name, o->target) == 0)
			t = backends[i];
	if (!t) {
		fprintf(stderr, "mtc: error: target '%s' is not built into this mtc%s\n", o->target,
		        strcmp(o->target, "cuda") ? "" : " (configure found no NVRTC; see ./configure --with-cuda=DIR)");
		return 1;
	}
	for (int a = -1; a < o->nalso; a++) {
		const char *kind = a < 0 ? o->emit : o->also[a][0];
		int k;
		if (!kind || driver_kind(kind))
			continue;
		for (k = 0; t->emits[k] && strcmp(t->emits[k], kind); k++)
			;
		if (!t->emits[k]) {
			fprintf(stderr, "mtc: error: target '%s' cannot %s=%s\n", t->name,
			        a < 0 ? "--emit" : "--also-emit", kind);
			return 1;
		}
	}
	lower(&lo, m, &o->tg, lv, dg, &pl);
	if (getenv("MTC_FAULT") && *getenv("MTC_FAULT")) {
		/* a test aid (docs/reliability.md): a fault in the lowered plan */
		char what[512];
		if (lower_fault(&lo, getenv("MTC_FAULT"), what, sizeof what)) {
			fprintf(stderr, "mtc: error: %s\n", what);
			lower_free(&lo);
			return 1;
		}
		fprintf(stderr, "mtc: MTC_FAULT: %s\n", what);
	}
	for (int a = 0; a < o->nalso; a++)
		if (!driver_kind(o->also[a][0]) && (rc = t->emit(&lo, &bo, o->also[a][0], o->also[a][1]))) {
			lower_free(&lo);
			return rc;
		}
	if (o->emit && driver_kind(o->emit))
		rc = 0;                  /* the driver wrote it */
	else if (o->emit)
		rc = t->emit(&lo, &bo, o->emit, o->output);
	else if (!o->output || strcmp(o->output, "-") == 0) {
		snprintf(def, sizeof def, "%s.so", m->name);
		rc = t->build(&lo, &bo, def);
	} else
		rc = t->build(&lo, &bo, o->output);
	lower_free(&lo);
	return rc;
}

/* The variants a data-parallel module holds: numbers of ranks (ascending) from --ranks or,
 * by default, every divisor of the batch up to 8 whose slice --micro-batches divides.
 * Returns how many, or -1 after a message. */
enum { MAXVAR = 64, DEFRANKS = 8 };

static int
rank_list(const Opts *o, int64_t batch, int *r)
{
	int n = 0;

	if (!o->ranks) {
		/* none: 1, whose elaboration at a micro-batch says why (elaborate_ranks) */
		for (int k = 1; k <= DEFRANKS; k++)
			if (batch % k == 0 && (o->micro <= 1 || batch / k % o->micro == 0))
				r[n++] = k;
		if (!n)
			r[n++] = 1;
		return n;
	}
	for (const char *p = o->ranks; *p;) {
		char *e;
		long k = strtol(p, &e, 10);
		if (e == p || k < 1 || k > 1 << 20) {
			fprintf(stderr, "mtc: error: invalid --ranks '%s': expected numbers of ranks, e.g. 2,4,8\n", o->ranks);
			return -1;
		}
		if (batch % k) {
			fprintf(stderr, "mtc: error: --ranks: the batch of %lld does not divide over %ld ranks\n",
			        (long long)batch, k);
			return -1;
		}
		for (int i = 0; i < n; i++)
			if (r[i] == k)
				k = 0;
		if (k && n == MAXVAR) {
			fprintf(stderr, "mtc: error: --ranks: more than %d numbers of ranks\n", MAXVAR);
			return -1;
		}
		if (k) {
			int i = n++;
			for (; i > 0 && r[i - 1] > k; i--)
				r[i] = r[i - 1];
			r[i] = (int)k;
		}
		p = *e == ',' ? e + 1 : e;
		if (*e && *e != ',')
			break;
	}
	return n;
}

/* The frontend's words for a micro-batch's slice of the batch: K micro-batches of each of N
 * ranks' slices, or of the whole batch (N <= 1). */
static void
micro_why(char *why, size_t n, int k, int64_t ranks)
{
	if (ranks > 1)
		snprintf(why, n, "--micro-batches=%d on each of %d ranks", k, (int)ranks);
	else
		snprintf(why, n, "--micro-batches=%d", k);
}

/* Is the variant v (at a ranks-th of the batch) the whole model w (its first nd decls, those
 * of the source) sliced by its batch: params
 * the same, inputs the same or with their leading dim divided, outputs divided? 0, or -1
 * after a diagnostic. */
static int
sliced(const Module *w, int nd, const Module *v, int ranks, Src *src)
{
	char a[MAXRANK * 24 + 8], b[MAXRANK * 24 + 8];

	if (nd != v->ndecl) {
		diag(src, w->opt.loc, "--data-parallel over %d ranks: the model declares %d tensors for the "
		     "whole batch but %d for a rank's slice", ranks, nd, v->ndecl);
		return -1;
	}
	for (int d = 0; d < nd; d++) {
		const Type *x = &w->decl[d].ty, *y = &v->decl[d].ty;
		int same = x->dt == y->dt && shape_eq(&x->sh, &y->sh), div = x->dt == y->dt &&
		    x->sh.rank == y->sh.rank && x->sh.rank > 0 && y->sh.d[0] * ranks == x->sh.d[0];
		for (int k = 1; div && k < x->sh.rank; k++)
			div = x->sh.d[k] == y->sh.d[k];
		if (same || (div && w->decl[d].role == R_INPUT))
			continue;
		diag(src, w->decl[d].loc, "--data-parallel over %d ranks: '%s' is %s for the whole batch but %s "
		     "for a rank's slice: %s", ranks, w->decl[d].name, type_str(x, a, sizeof a), type_str(y, b, sizeof b),
		     w->decl[d].role == R_INPUT ? "an input may depend on the batch only by its leading dim" :
		     "a param must not depend on the batch");
		return -1;
	}
	for (int k = 0; k < w->fwd->nout; k++) {
		const Type *x = &w->fwd->val[w->fwd->out[k]].ty, *y = &v->fwd->val[v->fwd->out[k]].ty;
		int div = x->sh.rank == y->sh.rank && x->sh.rank > 0 && y->sh.d[0] * ranks == x->sh.d[0];
		for (int j = 1; div && j < x->sh.rank; j++)
			div = x->sh.d[j] == y->sh.d[j];
		if (div)
			continue;
		diag(src, w->fwd->val[w->fwd->out[k]].loc, "--data-parallel over %d ranks: output '%s' is %s "
		     "for the whole batch but %s for a rank's slice: each rank computes its rows of an output, "
		     "so its leading dim must be the batch's", ranks, w->fwd->outname[k], type_str(x, a, sizeof a),
		     type_str(y, b, sizeof b));
		return -1;
	}
	return 0;
}

static int train_step(Module *m, Src *src, const FeOpts *fe, int k);

/* Each variant's model elaborated at its slice of the batch (and at a micro-batch of it) before
 * anything is planned, so that a slice the model cannot take (batch norm over one row) is an
 * error at once, not minutes into planning the others. 0, or 1 after the frontend's
 * diagnostic (and, for the default numbers of ranks, a note that --ranks names others). */
static int
elaborate_ranks(const Opts *o, Src *src, const FeOpts *fe, const Module *whole, int nd, const int *r,
                int n)
{
	for (int v = 0; v < n; v++) {
		FeOpts vf = *fe;
		char why[96];
		Module *m;
		int bad;
		snprintf(why, sizeof why, "--data-parallel over %d ranks", r[v]);
		vf.batch_div = r[v];
		vf.batch_why = why;
		bad = !(m = fe_compile(src, &vf)) || sliced(whole, nd, m, r[v], src);
		mod_free(m);
		if (!bad && o->micro > 1) {     /* and a micro-batch of that slice, as train_step's */
			micro_why(why, sizeof why, o->micro, r[v]);
			vf.batch_div = (int64_t)r[v] * o->micro;
			bad = !(m = fe_compile(src, &vf));
			mod_free(m);
		}
		if (bad) {
			if (!o->ranks)
				fprintf(stderr, "mtc: note: --data-parallel builds a variant for each divisor of the "
				        "batch up to %d by default; --ranks=LIST names the numbers of ranks\n", DEFRANKS);
			return 1;
		}
	}
	return 0;
}

/* Where each dropout's tensor on a rank (the variant v, at a ranks-th of the batch) sits in the
 * whole batch's (passes/slices.c): *chunk, *nkey for dropout_ranks; a warning for each that is
 * not blocks of it, unless quiet. 0, or -1 after a diagnostic. */
static int
dropouts(Src *src, const FeOpts *fe, const Module *v, int ranks, int quiet, int64_t **chunk, int *nkey)
{
	Module *w;

	*nkey = dropout_keys(v->fwd);
	*chunk = xmalloc((*nkey + 1) * sizeof **chunk);
	if (!*nkey)
		return 0;
	if (!(w = fe_compile(src, fe))) {
		free(*chunk);
		*chunk = NULL;
		return -1;
	}
	batch_chunks(w->fwd, v->fwd, ranks, *chunk, *nkey);
	mod_free(w);
	if (!quiet) {
		char what[48];
		snprintf(what, sizeof what, "--data-parallel over %d ranks", ranks);
		dropout_warn(src, v->fwd, *chunk, what, "rank");
	}
	return 0;
}

/* One variant of a data-parallel module: the model elaborated at its slice of the batch for
 * `ranks` ranks, trained, its gradients reduced (passes/dp.c, ZeRO stage `zero`), scheduled and
 * planned under the budget (bytes, 0: none; quiet: no messages; 2: a trial of --zero=auto, planned
 * by tso whatever --solver says). *mp the module (the
 * caller frees it), *rep its plan's report, *dr the collectives'. 0; 1 when the budget cannot
 * hold it; -1 after a diagnostic. */
static int
variant(const Opts *o, Src *src, const FeOpts *fe, const Module *whole, int nd, int ranks, int zero,
        const DpReport *take, int64_t budget, int64_t of, int quiet, Module **mp, PlanReport *rep,
        DpReport *dr)
{
	FeOpts vf = *fe;
	char why[96], stage[64];
	Module *m;
	int64_t *chunk = NULL;
	uint8_t *levels = NULL;     /* where each group lives, chosen with the shards (dp.c) */
	int nkey = 0, rc;
	/* with ZeRO the params stay on the accelerator (each rank updates a shard of one), and the
	 * planner may keep a shard's optimizer state in host memory (home.c's HOME_STATE) */
	PlanOpts po = { quiet == 2 ? "tso" : o->solver, budget, 0, o->solver_time, &o->tg,
	                o->solver_nodes, o->nooffload, quiet != 0, 0, of, o->jobs, NULL };

	snprintf(why, sizeof why, "--data-parallel over %d ranks", ranks);
	vf.batch_div = ranks;
	vf.batch_why = why;
	memset(dr, 0, sizeof *dr);
	if (!(m = *mp = fe_compile(src, &vf)) || sliced(whole, nd, m, ranks, src))
		return -1;
	m->seed = o->seed;    /* dropout's keys, as the single-process step's */
	if (ranks > 1 && dropouts(src, fe, m, ranks, quiet == 2, &chunk, &nkey))
		return -1;
	if (train_step(m, src, &vf, o->micro > 1 ? o->micro : 1)) {
		free(chunk);
		return -1;
	}
	if (ranks > 1)
		dropout_ranks(m->step, chunk, nkey, ranks, o->micro > 1 ? o->micro : 1);
	free(chunk);
	snprintf(stage, sizeof stage, "autodiff-r%d", ranks);
	dump(o, m, stage);
	simplify(m->fwd);
	simplify(m->step);
	schedule(m->step, &o->tg, o->schedule);
	schedule(m->fwd, &o->tg, o->schedule);
	if (ranks > 1) {
		if (dp_choose(m, ranks, o->bucket, zero, o->zero == ZERO_AUTO, take, &o->tg, o->schedule,
		              budget ? &po : NULL, dr, &levels))
			die("no gradient to reduce");
		snprintf(stage, sizeof stage, "dp-r%d", ranks);
		dump(o, m, stage);
	}
	if (!budget) {
		free(levels);
		return 0;
	}
	po.levels = levels;
	rc = plan_step(m, &po, rep);
	free(levels);
	if (rc)
		return quiet ? 1 : -1;
	m->budget = rep->budget;
	m->budget_pct = 0;
	snprintf(m->solver, sizeof m->solver, "%.31s", rep->solver);
	snprintf(stage, sizeof stage, "plan-r%d", ranks);
	dump(o, m, stage);
	return 0;
}

/* A trial of --zero=auto: stage i of ZeRO, planned quietly by tso; rc as variant's. */
typedef struct Trial {
	int rc;
	double time;
	DpReport dr;
} Trial;

typedef struct TrialCtx {
	const Opts *o;
	Src *src;
	const FeOpts *fe;
	const Module *whole;
	int nd;
	const int *ranks;     /* trial i: stage i % 3 on ranks[i / 3] */
	int64_t budget, of;
} TrialCtx;

static void
zero_trial(int i, void *ctx, void *out)
{
	const TrialCtx *c = ctx;
	Trial *r = out;
	Module *t = NULL;
	PlanReport pr = {0};

	r->rc = 1;
	if (c->ranks[i / 3] < 2)
		return;
	r->rc = variant(c->o, c->src, c->fe, c->whole, c->nd, c->ranks[i / 3], i % 3, NULL, c->budget, c->of, 2,
	                &t, &pr, &r->dr);
	r->time = pr.time;
	mod_free(t);
}

/* --data-parallel: a module with one variant of the step per number of ranks. Each is the
 * model elaborated again at its slice of the batch (the frontend's batch division), trained,
 * its gradients all-reduced in buckets (passes/dp.c; one rank needs none), scheduled, planned
 * under the budget (a percentage is of the whole batch's unconstrained step) and lowered; the
 * target builds them into one module whose create picks the variant for the job's size.
 * --emit shows the variant for the most ranks. */
static int
data_parallel(const Opts *o, Src *src, const FeOpts *fe, Module *whole)
{
	const Backend *t = NULL;
	int ranks[MAXVAR], ok[MAXVAR] = {0}, n, nv = 0, rc = 1, slots[MAXVAR] = {0};
	Module *var[MAXVAR] = {0};
	Anal (*an)[2] = xcalloc(MAXVAR, sizeof *an);
	PlanReport rep[MAXVAR];
	DpReport dr[MAXVAR];
	Lowered lo[MAXVAR];
	int64_t batch = 0, budget = o->budget, of = 0;   /* of: what a percentage budget is of */
	int first = -1, hasrep[MAXVAR] = {0}, nd;
	Trial *trials = NULL;       /* --zero=auto: 3 for each number of ranks */

	for (int i = 0; backends[i]; i++)
		if (strcmp(backends[i]->name, o->target) == 0)
			t = backends[i];
	if (!t || !t->dp) {
		fprintf(stderr, "mtc: error: --data-parallel: target '%s' has no data-parallel modules%s\n",
		        o->target, backend_mt3000.dp ? "" : " (configure found no MPI: see its summary)");
		goto out;
	}
	if (o->emit && !driver_kind(o->emit) && !listed(t->emits, o->emit, strlen(o->emit))) {
		fprintf(stderr, "mtc: error: target '%s' cannot --emit=%s\n", t->name, o->emit);
		goto out;
	}
	if (has_suffix(o->input, ".mir") || whole->fwd->loss < 0) {
		fprintf(stderr, "mtc: error: --data-parallel needs a tdsl model that trains (each rank's step "
		        "is the model elaborated again at its slice of the batch)\n");
		goto out;
	}
	for (int d = 0; d < whole->ndecl && first < 0; d++)
		if (whole->decl[d].role == R_INPUT)
			first = d;
	if (first >= 0 && whole->decl[first].ty.sh.rank > 0)
		batch = whole->decl[first].ty.sh.d[0];
	if (!batch) {
		fprintf(stderr, "mtc: error: --data-parallel: the model has no batch (the leading dim of its "
		        "first input) to divide over the ranks\n");
		goto out;
	}
	/* the whole batch's step: the module's tables, and what a percentage budget is of */
	nd = whole->ndecl;
	if (autodiff(whole, src))
		goto out;
	simplify(whole->fwd);
	simplify(whole->step);
	if (o->budget_pct > 0) {
		schedule(whole->step, &o->tg, o->schedule);
		of = plan_arena(whole->step, &o->tg, NULL, 0);
		budget = (int64_t)((double)of * o->budget_pct / 100);
	}
	if ((n = rank_list(o, batch, ranks)) <= 0 || elaborate_ranks(o, src, fe, whole, nd, ranks, n))
		goto out;
	/* --zero=auto under a budget: the fastest of no sharding, stage 1 and 2 once planned
	 * (tso, quietly; the planner weighs them against keeping state in host memory), for
	 * every number of ranks side by side (fork.c), taken in order */
	if (o->zero == ZERO_AUTO && budget) {
		TrialCtx tc = { o, src, fe, whole, nd, ranks, budget, of };
		trials = xmalloc((3 * n + 1) * sizeof *trials);
		par_map(3 * n, o->jobs, zero_trial, &tc, trials, sizeof *trials);
	}
	for (int v = 0; v < n; v++) {
		int z = o->zero, rc1;
		DpReport trial, *take = NULL;     /* the trial taken */
		if (z == ZERO_AUTO) {
			double best = -1;
			const Trial *tr = trials ? &trials[3 * v] : NULL;
			z = 0;
			for (int k = 0; budget && ranks[v] > 1 && k <= 2; k++)
				if (!tr[k].rc && (best < 0 || tr[k].time < best * (1 - 1e-9))) {
					best = tr[k].time;
					z = k;
					trial = tr[k].dr;
					take = &trial;
				}
			/* none fits: the floor the error gives is stage 2's, every param sharded (the
			 * lowest; its --mem-budget hint is one auto meets) */
			if (!take && budget && ranks[v] > 1)
				z = 2;
		}
		/* the trial's buckets and shards taken again, not searched for a second time */
		rc1 = variant(o, src, fe, whole, nd, ranks[v], z, take, budget, of, !o->ranks, &var[v], &rep[v],
		              &dr[v]);
		if (rc1 < 0)
			goto out;
		if (rc1 > 0) {
			fprintf(stderr, "mtc: note: --data-parallel: the step of %d rank%s does not fit the budget "
			        "of %lld bytes: the module has no variant for %d\n", ranks[v], ranks[v] > 1 ? "s" : "",
			        (long long)budget, ranks[v]);
			continue;
		}
		hasrep[v] = budget != 0;
		for (int k = 0; k < 2; k++) {
			Func *f = k ? var[v]->fwd : var[v]->step;
			live_fill(&an[v][k].l, f);
			cost_fill(&an[v][k].c, f, &o->tg);
			layout_to(&an[v][k].lay, f, &an[v][k].l, o->tg.align, var[v]->budget);
			dag_build(&an[v][k].d, f, &an[v][k].l, an[v][k].c.dur);
		}
		ok[v] = 1;
	}
	for (int v = 0; v < n; v++)
		if (ok[v]) {
			ranks[nv] = ranks[v], var[nv] = var[v], rep[nv] = rep[v], dr[nv] = dr[v];
			hasrep[nv] = hasrep[v];
			if (nv != v) {
				memcpy(an[nv], an[v], sizeof an[v]);
				memset(an[v], 0, sizeof an[v]);
				var[v] = NULL;
			}
			nv++;
		} else {
			mod_free(var[v]);
			var[v] = NULL;
		}
	if (!nv) {
		fprintf(stderr, "mtc: error: --data-parallel: no number of ranks up to %d has a step that fits "
		        "the budget of %lld bytes\n", DEFRANKS, (long long)budget);
		goto out;
	}
	if (o->emit && strcmp(o->emit, "c") && strcmp(o->emit, "h") && strcmp(o->emit, "cuda") &&
	    strcmp(o->emit, "ptx") && strcmp(o->emit, "llvm")) {
		/* an analysis of the variant for the most ranks */
		int v = nv - 1;
		FILE *fp = open_path(o->output);
		planrep = hasrep[v] ? &rep[v] : NULL;
		if (strcmp(o->emit, "ir") == 0)
			ir_print(fp, var[v]);
		else {
			if (strcmp(o->emit, "schedule") == 0 && ranks[v] > 1)
				dp_report_print(fp, &dr[v]);
			emit_analysis(fp, o->emit, var[v]->step, &an[v][0]);
		}
		if (fp != stdout)
			fclose(fp);
		rc = 0;
	} else {
		const Live *lv[2];
		const Dag *dg[2];
		BuildOpts bo = { o->opt_level, o->arch, o->seed };
		LowDp ldp = { whole, batch, nv, lo, ranks, slots };
		char def[4096];
		for (int v = 0; v < nv; v++) {
			LowPlan pl = { hasrep[v] ? rep[v].solver : "none", hasrep[v] ? rep[v].budget : 0, 0,
			               hasrep[v] ? &rep[v] : NULL };
			lv[0] = &an[v][1].l, lv[1] = &an[v][0].l;
			dg[0] = &an[v][1].d, dg[1] = &an[v][0].d;
			lower(&lo[v], var[v], &o->tg, lv, dg, &pl);
		}
		if (o->emit)
			rc = t->dp(&ldp, &bo, o->emit, o->output);
		else {
			snprintf(def, sizeof def, "%s.so", whole->name);
			rc = t->dp(&ldp, &bo, NULL, !o->output || strcmp(o->output, "-") == 0 ? def : o->output);
		}
		for (int v = 0; v < nv; v++)
			lower_free(&lo[v]);
	}
out:
	/* analyses never filled are zeros, which the frees take */
	for (int v = 0; v < MAXVAR; v++) {
		for (int k = 0; k < 2; k++) {
			live_free(&an[v][k].l);
			cost_free(&an[v][k].c);
			dag_free(&an[v][k].d);
		}
		mod_free(var[v]);
	}
	free(an);
	free(trials);
	return rc;
}

/* The training step of m (its forward holds the loss) at k micro-batches: autodiff's step for
 * k <= 1; else the source elaborated again at a k-th of its batch, and micro.c's step from
 * both. 0, or 1 after a diagnostic. */
static int
train_step(Module *m, Src *src, const FeOpts *fe, int k)
{
	FeOpts mf = *fe;
	char why[64];
	Module *mu;
	int rc;

	if (k <= 1)
		return autodiff(m, src) ? 1 : 0;
	/* within a data-parallel rank's slice, a k-th of that slice */
	micro_why(why, sizeof why, k, fe->batch_div);
	mf.batch_div = (fe->batch_div > 1 ? fe->batch_div : 1) * k;
	mf.batch_why = why;
	if (!(mu = fe_compile(src, &mf)))
		return 1;
	mu->seed = m->seed;
	rc = micro_batch(m, mu, k, src) ? 1 : 0;
	mod_free(mu);
	m->micro = k;
	return rc;
}

/* A percentage budget with micro-batches is of the unconstrained step without them: that
 * step's arena (0 after a diagnostic). */
static int64_t
base_arena(const Opts *o, Src *src, const FeOpts *fe)
{
	Module *b = fe_compile(src, fe);
	int64_t a = 0;

	if (b)
		b->seed = o->seed;
	if (b && !autodiff(b, src)) {
		simplify(b->step);
		schedule(b->step, &o->tg, o->schedule);
		a = plan_arena(b->step, &o->tg, NULL, 0);
	}
	mod_free(b);
	return a;
}

/* --micro-batches=auto, the largest step it tries, in ops: planning time grows with it. */
enum { MICRO_OPS = 4000 };

/* --micro-batches=auto: of the step at k = 1 (m, scheduled) and at k = 2, 4, ... (while k
 * divides the batch and the step stays within MICRO_OPS ops), the plan that fits the budget
 * with the least modeled time; a tie goes to the smaller k, and the search stops at a k that
 * fits without recomputing or swapping (a larger one only adds launches). A percentage budget
 * is of the unconstrained step at k = 1; a k whose unplanned step is already slower than the
 * best plan ends the search. Returns the module taken (the others freed) with its report in
 * *rep, or NULL after the error of the largest k tried (a percentage budget's figures in it are
 * of the step at k = 1). */
static Module *
auto_micro(const Opts *o, Src *src, const FeOpts *fe, Module *m, PlanReport *rep)
{
	PlanOpts po = { o->solver, o->budget, 0, o->solver_time, &o->tg, o->solver_nodes, o->nooffload, 1, 0, 0,
	                o->jobs, NULL };
	Module *best = NULL, *last = m;
	PlanReport r;
	int64_t batch = 0;
	int k, first = -1, nops = m->step->nop;

	if (!po.budget) {
		po.pct_of = plan_arena(m->step, &o->tg, NULL, 0);
		po.budget = (int64_t)((double)po.pct_of * o->budget_pct / 100);
	}
	for (int d = 0; d < m->ndecl && first < 0; d++)
		if (m->decl[d].role == R_INPUT)
			first = d;
	if (first >= 0 && m->decl[first].ty.sh.rank > 0)
		batch = m->decl[first].ty.sh.d[0];
	for (k = 1; k == 1 || (k <= batch && batch % k == 0 && (int64_t)nops * k <= MICRO_OPS); k *= 2) {
		Module *c = m;
		if (k > 1) {
			if (!(c = fe_compile(src, fe)))
				break;
			c->seed = m->seed;
			if (train_step(c, src, fe, k)) {
				mod_free(c);
				break;
			}
			simplify(c->fwd);
			simplify(c->step);
			schedule(c->step, &o->tg, o->schedule);
			schedule(c->fwd, &o->tg, o->schedule);
		}
		if (last != m && last != best)
			mod_free(last);
		last = c;
		if (best) {
			/* its unplanned time bounds its planned one: past the best, so is every larger k */
			Cost ct;
			double t;
			cost_fill(&ct, c->step, &o->tg);
			t = ct.total;
			cost_free(&ct);
			if (t >= rep->time)
				break;
		}
		if (plan_step(c, &po, &r))
			continue;
		if (!best || r.time < rep->time) {
			if (best && best != m)
				mod_free(best);
			best = c;
			*rep = r;
			rep->micro = k;
		}
		if (!r.nrec && !r.nswap && !r.hstate)
			break;
	}
	if (!best) {
		/* nothing fits: the largest k's plan says why, with the smallest arena it reaches */
		fprintf(stderr, "mtc: note: --micro-batches=auto: no number of micro-batches up to %d fits "
		        "the budget; at %d:\n", last->micro > 1 ? last->micro : 1, last->micro > 1 ? last->micro : 1);
		po.quiet = 0;
		plan_step(last, &po, &r);
		if (last != m)
			mod_free(last);
		mod_free(m);            /* m is ours, as on success (then freed unless it is the best) */
		return NULL;
	}
	if (last != best && last != m)
		mod_free(last);
	if (best != m)
		mod_free(m);
	return best;
}

static int
compile(int argc, char **argv)
{
	Opts o = {0};
	Src src = {0};
	Module *m;
	FeOpts fe;
	Anal an[2];
	Func *fs[2] = { NULL, NULL };
	int rc = 0, given;
	PlanReport rep;

	memset(an, 0, sizeof an);
	parse_args(&o, argc, argv);
	if (o.stop_after && (!o.emit || strcmp(o.emit, "ir")))
		fatal("%s", "--stop-after goes with --emit=ir");
	if (o.nalso && (o.stop_after || o.dp))
		fatal("%s", "--also-emit does not go with --stop-after or --data-parallel");
	if (!o.dp && (o.ranks || o.bucket || o.zero != ZERO_AUTO))
		fatal("%s", "--ranks, --bucket-bytes and --zero go with --data-parallel");
	src.name = o.input;
	if (!(src.text = slurp(o.input, &src.len))) {
		fprintf(stderr, "mtc: error: cannot read '%s': %s\n", o.input, strerror(errno));
		exit(1);
	}
	if (o.dump_dir && mkdir(o.dump_dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "mtc: error: cannot create directory '%s': %s\n", o.dump_dir, strerror(errno));
		exit(1);
	}

	/* The pipeline. */
	memset(&fe, 0, sizeof fe);
	fe.defines = o.defines;
	fe.ndefines = o.ndefines;
	m = has_suffix(o.input, ".mir") ? ir_parse(&src) :
	    has_suffix(o.input, ".onnx") ? onnx_compile(&src, &fe) : fe_compile(&src, &fe);
	if (!m) {
		free((char *)src.text);
		return 1;
	}
	/* A .mir's locations (@LINE:COL) are in the source it names (model NAME "FILE"): later
	 * diagnostics name and quote that file (unquoted where it cannot be read) */
	if (has_suffix(o.input, ".mir") && m->file && *m->file && strcmp(m->file, o.input)) {
		free((char *)src.text);
		src.name = m->file;
		src.len = 0;
		src.text = slurp(m->file, &src.len);
	}
	if (o.dp && o.micro == MICRO_AUTO) {
		fprintf(stderr, "mtc: error: --micro-batches=auto with --data-parallel is not supported: "
		        "give each rank's number of micro-batches (--micro-batches=K)\n");
		rc = 1;
		goto out;
	}
	if (o.dp) {
		rc = data_parallel(&o, &src, &fe, m);
		goto out;
	}
	if (o.micro && o.micro != 1 && (has_suffix(o.input, ".mir") || has_suffix(o.input, ".onnx") ||
	                                m->fwd->loss < 0)) {
		fprintf(stderr, "mtc: error: --micro-batches needs a tdsl model that trains (it elaborates "
		        "the model again at a slice of its batch)\n");
		rc = 1;
		goto out;
	}
	if (o.micro == MICRO_AUTO && !o.budget && !(o.budget_pct > 0)) {
		fprintf(stderr, "mtc: error: --micro-batches=auto weighs micro-batches against a budget: "
		        "give --mem-budget\n");
		rc = 1;
		goto out;
	}
	if (dump(&o, m, "frontend"))
		goto emit;
	/* A .mir may come from any stage: a step means autodiff ran, planned ops that simplify
	 * must not run again (it would undo the plan). */
	m->seed = o.seed;
	if (m->fwd->loss >= 0 && !m->step) {
		if (train_step(m, &src, &fe, o.micro > 1 ? o.micro : 1)) {
			rc = 1;
			goto out;
		}
		if (dump(&o, m, "autodiff"))
			goto emit;
	}
	if (!planned(m)) {
		simplify(m->fwd);
		if (m->step)
			simplify(m->step);
	}
	if (dump(&o, m, "simplify"))
		goto emit;

	/* Op order of every function (the step first: --emit shows it); then the memory plan of
	 * the step in that order; then, of what will run: liveness, the cost model, arena
	 * layout, dependences including those of shared arena bytes. Nothing reorders or CSEs
	 * after the plan: its copies and recomputations sit where the plan put them. */
	fs[0] = m->step;
	fs[1] = m->fwd;
	/* A .mir that was planned or laid out already is taken as it is: reordering it would
	 * move the plan's copies and waits against the ops they serve, and its offsets (at=)
	 * describe its own order. */
	given = o.budget == 0 && o.budget_pct == 0 && has_offsets(m);
	for (int k = 0; k < 2; k++)
		if (fs[k])
			schedule(fs[k], &o.tg, given || planned(m) ? "program" : o.schedule);
	if (o.micro == MICRO_AUTO) {
		if (!(m = auto_micro(&o, &src, &fe, m, &rep))) {
			rc = 1;
			goto out;
		}
		planrep = &rep;
		m->budget = rep.budget;
		m->budget_pct = o.budget_pct;
		snprintf(m->solver, sizeof m->solver, "%s", rep.solver);
		fs[0] = m->step;
		fs[1] = m->fwd;
		dump(&o, m, "plan");
	} else if (o.budget || o.budget_pct > 0) {
		PlanOpts po = { o.solver, o.budget, o.budget_pct, o.solver_time, &o.tg, o.solver_nodes,
		                o.nooffload, 0, 0, 0, o.jobs, NULL };
		if (o.micro > 1 && o.budget_pct > 0 && !o.budget) {
			if (!(po.pct_of = base_arena(&o, &src, &fe))) {
				rc = 1;
				goto out;
			}
			po.budget = (int64_t)((double)po.pct_of * o.budget_pct / 100);
			po.budget += !po.budget;
		}
		if (plan_step(m, &po, &rep)) {
			rc = 1;             /* freed below, so leak checkers see a clean exit */
			goto out;
		}
		rep.micro = m->micro;
		planrep = &rep;
		/* the IR states the budget as resolved and the solver actually taken */
		m->budget = rep.budget;
		m->budget_pct = o.budget_pct;
		snprintf(m->solver, sizeof m->solver, "%s", rep.solver);
		fs[0] = m->step;
		dump(&o, m, "plan");
	}
	for (int k = 0; k < 2; k++) {
		if (!fs[k])
			continue;
		live_fill(&an[k].l, fs[k]);
		cost_fill(&an[k].c, fs[k], &o.tg);
		if (given) {
			char err[512];
			if (layout_keep(&an[k].lay, fs[k], &an[k].l, o.tg.align, err, sizeof err)) {
				fprintf(stderr, "%s: error: %s: %s\n", o.input, fs[k]->name, err);
				rc = 1;
				goto out;
			}
		} else
			layout_to(&an[k].lay, fs[k], &an[k].l, o.tg.align, m->budget);
		dag_build(&an[k].d, fs[k], &an[k].l, an[k].c.dur);
		dump_analyses(&o, fs[k], &an[k]);
		if (an[k].lay.arena > o.tg.capacity)
			fprintf(stderr, "mtc: warning: %s needs an arena of %lld bytes, more than the %lld bytes "
			        "of the %s accelerator (--accel-bytes); plan it with --mem-budget\n", fs[k]->name,
			        (long long)an[k].lay.arena, (long long)o.tg.capacity, o.tg.name);
	}
	dump(&o, m, "layout");

emit:
	/* the driver's intermediates, --also-emit's first, then the main output */
	for (int a = 0; a <= o.nalso; a++) {
		const char *kind = a < o.nalso ? o.also[a][0] : o.emit;
		FILE *fp;
		if (!kind || !driver_kind(kind))
			continue;
		fp = open_path(a < o.nalso ? o.also[a][1] : o.output);
		if (strcmp(kind, "ir") == 0)
			ir_print(fp, m);
		else
			emit_analysis(fp, kind, fs[0] ? fs[0] : fs[1], &an[fs[0] ? 0 : 1]);
		if (fp != stdout)
			fclose(fp);
	}
	if (!o.emit || !driver_kind(o.emit) || needs_target(&o))
		rc = codegen(&o, m, an);
	for (int k = 0; k < 2; k++)
		if (fs[k]) {
			live_free(&an[k].l);
			cost_free(&an[k].c);
			dag_free(&an[k].d);
		}
out:
	mod_free(m);
	free((char *)src.text);
	return rc;
}

/* The compile runs on a thread of its own with a stack of STACK bytes: the frontend's
 * documented nesting limits (docs/tdsl.md: 2500 nested expressions and calls) recurse that
 * deep, which an 8 MiB default stack does not hold in every build (sanitizers triple a
 * frame). The stack is address space, touched only as deep as a program nests. */
enum { STACK = 256 << 20 };

struct args { int argc; char **argv; int rc; };

static void *
compile_thread(void *p)
{
	struct args *a = p;

	a->rc = compile(a->argc, a->argv);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct args a = { argc, argv, 1 };
	pthread_attr_t at;
	pthread_t t;

	if (pthread_attr_init(&at) || pthread_attr_setstacksize(&at, STACK) ||
	    pthread_create(&t, &at, compile_thread, &a))
		return compile(argc, argv);     /* no thread: the default stack, limits as before */
	pthread_attr_destroy(&at);
	pthread_join(t, NULL);
	return a.rc;
}
