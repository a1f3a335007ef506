/* header.c: MODEL.h, the same for every target: the typed API, with the memory plan stated
 * in a comment block (as tfcompile's generated headers do), so users see what the step needs
 * before running it. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "backend.h"

static long long ll(int64_t x) { return (long long)x; }

static int
has_coll(const Func *f)
{
	for (int i = 0; i < f->nop; i++)
		if (opinfo[f->op[i].kind].flags & F_COLL)
			return 1;
	return 0;
}

/* #define MODEL_NAME_NUMEL n and MODEL_NAME_DIMk d, NAME upper-cased. */
static void
sizes(FILE *fp, const char *guard, const char *name, const Type *t)
{
	char nm[300];

	c_name(name, nm, sizeof nm);
	for (char *p = nm; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 32);
	fprintf(fp, "#define %s_%s_NUMEL %lld\n", guard, nm, ll(shape_numel(&t->sh)));
	for (int d = 0; d < t->sh.rank; d++)
		fprintf(fp, "#define %s_%s_DIM%d %lld\n", guard, nm, d, ll(t->sh.d[d]));
}

/* Names, wrapped into the comment. */
static void
names(FILE *fp, const char *head, const char *const *nm, int n)
{
	int col = 0;

	fprintf(fp, " * %s\n", head);
	for (int i = 0; i < n; i++) {
		int w = (int)strlen(nm[i]) + 1;
		if (col && col + w > 86) {
			fputc('\n', fp);
			col = 0;
		}
		fprintf(fp, "%s%s", col ? " " : " *   ", nm[i]);
		col += col ? w : w + 4;
	}
	if (n)
		fprintf(fp, "\n");
	fprintf(fp, " *\n");
}

/* Which params and optimizer state live in host memory between steps, which updates run on
 * the host (the planner's choice): where every module tensor lives, and when it comes in. */
static void
where(const Lowered *lo, FILE *fp)
{
	const Module *m = lo->m;
	const char **nm = malloc(sizeof *nm * (size_t)(m->ndecl + 1));
	int n = 0;

	if (!nm)
		return;
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].host)
			nm[n++] = m->decl[d].name;
	if (n)
		names(fp, "In host memory between steps (fetched or copied in where the step needs them,\n"
		      " * the rest of the params and state stays on the accelerator):", nm, n);
	n = 0;
	for (int i = 0; m->step && i < m->step->nop; i++)
		if (op_on_host(m->step, &m->step->op[i]))
			nm[n++] = m->decl[m->step->op[i].args[0]].name;
	if (n)
		names(fp, "Updated on the host (their gradient sent there, the new params fetched in the next step):",
		      nm, n);
	free(nm);
}

/* The setters of the optimizer's hyperparameters, with the model's values; the checkpoints. */
static void
train_doc(const Module *m, const char *id, FILE *fp)
{
	int first = 1;

	if (m->step) {
		fprintf(fp, " * Training: %s_step() runs one step of %s (PyTorch's rule). Its hyperparameters are\n"
		        " * settings of the instance, from the model's values:", id, optim_name[m->opt.kind]);
		for (int d = 0; d < m->ndecl; d++)
			if (m->decl[d].role == R_HYPER) {
				fprintf(fp, "%s %s %g", first ? "" : ",", hyper_name(m->decl[d].name), m->decl[d].init.a);
				first = 0;
			}
		fprintf(fp, ".\n * %s_set_NAME(m, v) changes one from the next step on (e.g. a learning-rate schedule);\n"
		        " * a value PyTorch would refuse (a negative lr, a beta outside [0, 1)) is MTC_EINVAL.\n"
		        " * %s_step_out() is %s_step() that also returns the declared outputs, as the step's\n"
		        " * forward pass computed them (before the update).\n *\n", id, id, id);
	}
	fprintf(fp, " * %s_save(m, path) writes the instance's state (params, optimizer state, buffers,\n"
	        " * hyperparameters, step counter) to one safetensors file; %s_load(m, path) reads one\n"
	        " * back, so training resumes bit for bit (a file that is not this model's: MTC_EFILE,\n"
	        " * nothing changed).\n *\n", id, id);
}

/* The memory plan of one Lowered, in the comment block. */
static void
plan_block(FILE *fp, const Lowered *lo)
{
	const Module *m = lo->m;
	const LowFunc *p = m->step ? &lo->step : &lo->fwd;
	const LowPlan *pl = &lo->plan;
	int64_t inputs = lo->persist - (lo->param_bytes - lo->hparam_bytes) - lo->state_bytes - lo->buffer_bytes;

	fprintf(fp, " *   peak live bytes .... %lld  (the most bytes live at once, module tensors included)\n", ll(p->peak));
	fprintf(fp, " *   arena .............. %lld  (module tensors + values as laid out: what --mem-budget bounds;\n"
	        " *                          create() refuses more than MTC_ACCEL_BYTES)\n", ll(lo->persist + lo->arena));
	fprintf(fp, " *   value zone ......... %lld  (the arena less the module tensors)\n", ll(p->arena));
	if (lo->hparam_bytes)
		fprintf(fp, " *   params ............. %lld  (%lld of them in host memory between steps)\n",
		        ll(lo->param_bytes), ll(lo->hparam_bytes));
	else
		fprintf(fp, " *   params ............. %lld\n", ll(lo->param_bytes));
	if (lo->hstate_bytes)
		fprintf(fp, " *   optimizer state .... %lld  (on the accelerator; %lld more in host memory)\n",
		        ll(lo->state_bytes), ll(lo->hstate_bytes));
	else
		fprintf(fp, " *   optimizer state .... %lld%s\n", ll(lo->state_bytes),
		        m->step ? "  (its hyperparameters included)" : "");
	if (lo->buffer_bytes)
		fprintf(fp, " *   buffers ............ %lld  (not trained, updated by step: running statistics, counters)\n",
		        ll(lo->buffer_bytes));
	fprintf(fp, " *   inputs (+ padding) . %lld\n", ll(inputs));
	fprintf(fp, " *   host zone .......... %lld  (swapped-out values, and what lives in host memory%s)\n",
	        ll(p->ddr), m->step && p == &lo->step && has_coll(m->step) ? "; the collectives' buckets" : "");
	if (pl->budget && pl->budget_pct > 0)
		fprintf(fp, " *   budget ............. %lld  (--mem-budget=%g%% of the unconstrained arena)\n",
		        ll(pl->budget), pl->budget_pct);
	else if (pl->budget)
		fprintf(fp, " *   budget ............. %lld\n", ll(pl->budget));
	else
		fprintf(fp, " *   budget ............. none\n");
	fprintf(fp, " *   solver ............. %s\n", pl->solver);
	if (m->micro > 1)
		fprintf(fp, " *   micro-batches ...... %d  (forward and backward run on %d slices of the batch, the\n"
		        " *                          gradients summed before the update: --micro-batches)\n",
		        m->micro, m->micro);
	fprintf(fp, " *\n");
	where(lo, fp);
}

static void
guard_of(const char *id, char *guard)
{
	int i;
	for (i = 0; id[i] && i < 200; i++)
		guard[i] = (char)(id[i] >= 'a' && id[i] <= 'z' ? id[i] - 32 : id[i]);
	guard[i] = 0;
}

/* Everything after the comment block: the sizes and the typed API of m (dp: a data-parallel
 * module's, with MODEL_create_comm). */
static void
api_part(FILE *fp, const Module *m, const char *id, const char *guard, int dp)
{
	fprintf(fp, "#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n%s\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
	        guard, guard, dp ? "#include <mpi.h>\n" : "");
	fprintf(fp, "typedef struct %s %s;\n\n", id, id);
	/* The sizes of the buffers the API takes, so callers need not copy them from the model. */
	fprintf(fp, "/* Elements and dims of the inputs and outputs. */\n");
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_INPUT)
			sizes(fp, guard, m->decl[d].name, &m->decl[d].ty);
	for (int k = 0; k < m->fwd->nout; k++)
		sizes(fp, guard, m->fwd->outname[k], &m->fwd->val[m->fwd->out[k]].ty);
	fputc('\n', fp);
	api_protos(m, id, fp, 0);
	if (dp)
		fprintf(fp, "/* An instance that joins the program's communicator (create() joins\n"
		        " * MPI_COMM_WORLD, initializing MPI if the program did not). */\n"
		        "%s *%s_create_comm(MPI_Comm comm);\n", id, id);
	fprintf(fp, "\n/* The module for tools (dlopen): see <mtc/mtc.h>. */\nstruct mtc_module;\n"
	        "const struct mtc_module *mtc_module(void);\nconst char *mtc_last_error(void);\n");
	fprintf(fp, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

int
out_beside(const char *out)
{
	struct stat st;

	return out && strcmp(out, "-") != 0 && (stat(out, &st) != 0 || S_ISREG(st.st_mode));
}

void
header_emit(const Lowered *lo, const char *id, const char *target, FILE *fp)
{
	const Module *m = lo->m;
	char guard[256];

	guard_of(id, guard);
	fprintf(fp, "/* %s.h: the API of model %s, generated by mtc %s (target %s) from %s.\n"
	        " *\n * Memory plan of %s(), in bytes (the words: docs/glossary.md):\n", id, m->name, PACKAGE_VERSION,
	        target, m->file ? m->file : "?", m->step ? "step" : "forward");
	plan_block(fp, lo);
	train_doc(m, id, fp);
	fprintf(fp, " * Every function returns 0 or an enum mtc_status code (<mtc/mtc.h>) and never aborts;\n"
	        " * %s_error(instance) says why, %s_error(NULL) why %s_create() returned NULL. */\n",
	        id, id, id);
	api_part(fp, m, id, guard, 0);
}

void
header_emit_dp(const LowDp *dp, const char *id, const char *target, FILE *fp)
{
	const Module *m = dp->whole;
	char guard[256], list[256] = "";

	guard_of(id, guard);
	for (int v = 0; v < dp->nvar; v++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", v == 0 ? "" :
		         v == dp->nvar - 1 ? " or " : ", ", dp->ranks[v]);
	fprintf(fp, "/* %s.h: the API of model %s, generated by mtc %s (target %s) from %s.\n"
	        " *\n * A data-parallel module: each instance is one rank of an MPI job of %s ranks\n"
	        " * (mpirun -np N; another N, or a batch of %lld that N does not divide, is an error of\n"
	        " * %s_create). Every rank passes the whole batch and reads its own rows of it (rank r of N:\n"
	        " * rows [r B/N, (r + 1) B/N) of each input that holds the batch); the gradients are\n"
	        " * averaged over the ranks behind the backward, so every rank takes the step of the\n"
	        " * whole batch, and %s_step's loss is the whole batch's on every rank. An error on\n"
	        " * one rank is an error on every rank at the end of that step.\n *\n",
	        id, m->name, PACKAGE_VERSION, target, m->file ? m->file : "?", list, ll(dp->batch), id, id);
	for (int v = 0; v < dp->nvar; v++) {
		if (dp->ranks[v] == 1)
			fprintf(fp, " * Memory plan of step() on one rank (the whole batch), in bytes (the words:\n"
			        " * docs/glossary.md):\n");
		else
			fprintf(fp, " * Memory plan of step() on each of %d ranks, in bytes (the words: docs/glossary.md):\n",
			        dp->ranks[v]);
		plan_block(fp, &dp->var[v]);
	}
	train_doc(m, id, fp);
	fprintf(fp, " * Every function returns 0 or an enum mtc_status code (<mtc/mtc.h>) and never aborts;\n"
	        " * %s_error(instance) says why, %s_error(NULL) why %s_create() returned NULL. */\n",
	        id, id, id);
	api_part(fp, m, id, guard, 1);
}
