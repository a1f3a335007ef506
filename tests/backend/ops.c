/* ops.c: every op kind of OPTAB through the MT-3000 backend against the reference
 * interpreter, several shapes each, gradient helpers included.
 *
 * Each group of cases becomes one module (one input decl per operand, one output per case,
 * real arena layout), built into a .so, loaded with dlopen and run twice with the
 * interpreter's own inputs. Tolerance: with MTC_BLAS=0 (the portable GEMM) every output must
 * equal the interpreter's bit for bit; with OpenBLAS, |a - b| <= 1e-5 (1 + |b|) (its GEMM sums
 * in another order). Check mode is on (MTC_CHECK=1). */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "mt3000.h"
#include "mtc/mtc.h"
#include "../check.h"

static int exact;
static const char *dir;

typedef struct Case {
	Opk k;
	int nargs;
	Type at[5];
	int arg[5];              /* -1: a fresh input; c >= 0: the result of case c of the group;
	                          * -100 - c: the first operand of case c */
	int64_t ia[MAXIA];
	int nia;
	double fa[MAXFA];
	Type given;              /* F_GIVEN ops */
	int pos;                 /* inputs made positive (log, sqrt, divisors) */
} Case;

static Case cs[128];
static int ncs;
static int covered[NOP];     /* op kinds some case has run */

static Type
T(int rank, ...)
{
	Type t = { F32, { rank, {0} } };
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		t.sh.d[i] = va_arg(ap, int);
	va_end(ap);
	return t;
}

static Type
I(Type t)
{
	t.dt = I32;
	return t;
}

/* Add a case: op k on operand types (fresh inputs). */
static Case *
add(Opk k, int nargs, ...)
{
	Case *c = &cs[ncs++];
	va_list ap;

	memset(c, 0, sizeof *c);
	c->k = k;
	c->nargs = nargs;
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++) {
		c->at[i] = va_arg(ap, Type);
		c->arg[i] = -1;
	}
	va_end(ap);
	return c;
}

static Case *
attrs(Case *c, int nia, ...)
{
	va_list ap;
	va_start(ap, nia);
	for (int i = 0; i < nia; i++)
		c->ia[i] = va_arg(ap, int);
	c->nia = nia;
	va_end(ap);
	return c;
}

static int
same(float a, float b)
{
	uint32_t x, y;
	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	if (x == y || (isnan(a) && isnan(b)))
		return 1;
	return !exact && fabsf(a - b) <= 1e-5f * (1 + fabsf(b));
}

/* Build the group into a module, run it on both sides, compare, reset the group. */
static void
run(const char *name)
{
	Module *m = mod_new(name, "ops.c");
	Func *f;
	Interp *in;
	Live lv;
	Layout lay;
	BuildOpts o = { .opt_level = 2 };
	Lowered lo;
	int dcl[128][5], res[128], nd = 0, failed;
	char path[512], err[512];
	void *dl;

	for (int c = 0; c < ncs; c++)
		for (int a = 0; a < cs[c].nargs; a++)
			if (cs[c].arg[a] == -1) {
				char nm[32];
				snprintf(nm, sizeof nm, "c%d_%d", c, a);
				dcl[c][a] = mod_decl(m, nm, R_INPUT, cs[c].at[a], (Init){0}, (Loc){0});
				nd++;
			}
	f = m->fwd = func_new(m, "forward");
	for (int c = 0; c < ncs; c++) {
		Case *k = &cs[c];
		int args[5], op;
		Type r = k->given;
		char nm[32];
		for (int a = 0; a < k->nargs; a++)
			args[a] = k->arg[a] <= -100 ? dcl[-100 - k->arg[a]][0] :
			          k->arg[a] < 0 ? dcl[c][a] : res[k->arg[a]];
		if (op_infer(f, k->k, args, k->nargs, k->ia, k->nia, k->fa, &r, err, sizeof err))
			die("%s case %d: %s", name, c, err);
		covered[k->k] = 1;
		snprintf(nm, sizeof nm, "r%d", c);
		op = func_op(f, k->k, PH_FWD, args, k->nargs, k->ia, k->nia, k->fa, &r, nm, (Loc){0});
		res[c] = f->op[op].res;
		func_output(f, nm, res[c]);
	}
	if (ir_verify(m, "test"))
		die("%s does not verify", name);
	live_fill(&lv, f);
	layout(&lay, f, &lv, 64);
	live_free(&lv);

	/* The interpreter's inputs, made positive where the op needs it. */
	in = interp_new(m, 7);
	for (int c = 0; c < ncs; c++)
		for (int a = 0; cs[c].pos && a < cs[c].nargs; a++)
			if (cs[c].arg[a] == -1) {
				Tensor *t = interp_decl(in, dcl[c][a]);
				for (int64_t i = 0; i < shape_numel(&t->ty.sh); i++)
					((float *)t->data)[i] = fabsf(((float *)t->data)[i]) + 0.25f;
			}
	if (interp_run(in, f, err, sizeof err))
		die("%s: interpreter: %s", name, err);

	snprintf(path, sizeof path, "%s/%s.so", dir, name);
	lower(&lo, m, &target_mt3000, NULL, NULL, NULL);
	failed = backend_mt3000.build(&lo, &o, path);
	lower_free(&lo);
	if (failed) {
		check(0, "%s: building %s", name, path);
		goto out;
	}
	if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		check(0, "%s: dlopen: %s", name, dlerror());
		goto out;
	}
	/* Both GEMMs from the one .so: MTC_BLAS is read when an instance opens its device. */
	for (exact = 0; exact < 2; exact++) {
		const struct mtc_module *md = ((const struct mtc_module *(*)(void))dlsym(dl, "mtc_module"))();
		void *inst, *ins[320], *outs[128];
		int rc;
		setenv("MTC_BLAS", exact ? "0" : "1", 1);
		inst = md->create();
		check(inst != NULL, "%s: create: %s", name, md->error(NULL));
		for (int d = 0; d < m->ndecl; d++)
			ins[d] = interp_decl(in, d)->data;
		for (int c = 0; c < ncs; c++)
			outs[c] = xcalloc(1, (size_t)type_bytes(&f->val[res[c]].ty) + 4);
		rc = inst ? md->forward(inst, (const void *const *)ins, outs) : -1;
		check(rc == 0, "%s: forward: %s", name, inst ? md->error(inst) : "");
		for (int c = 0; c < ncs && rc == 0; c++) {
			const float *want = interp_out(in, c)->data, *got = outs[c];
			int64_t n = shape_numel(&f->val[res[c]].ty.sh), bad = -1;
			char ts[160];
			for (int64_t i = 0; i < n && bad < 0; i++)
				if (!same(got[i], want[i]))
					bad = i;
			check(bad < 0, "%s case %d (%s %s, %s): element %lld is %.9g, the interpreter's %.9g",
			      name, c, opinfo[cs[c].k].name, type_str(&f->val[res[c]].ty, ts, sizeof ts),
			      exact ? "portable GEMM" : "BLAS", (long long)bad, bad >= 0 ? got[bad] : 0,
			      bad >= 0 ? want[bad] : 0);
		}
		for (int c = 0; c < ncs; c++)
			free(outs[c]);
		md->destroy(inst);
	}
	dlclose(dl);
out:
	interp_free(in);
	mod_free(m);
	ncs = 0;
}

static const Opk unary[] = { OP_RELU, OP_GELU, OP_TANH, OP_SIGMOID, OP_EXP, OP_NEG };
static const Opk upos[] = { OP_LOG, OP_SQRT, OP_RSQRT };
static const Opk binary[] = { OP_ADD, OP_SUB, OP_MUL, OP_DIV };
static const Opk gbin[] = { OP_RELU_G, OP_GELU_G, OP_TANH_G, OP_SIGMOID_G, OP_SQRT_G, OP_RSQRT_G };

int
main(void)
{
	Type shapes[] = { T(1, 7), T(3, 3, 4, 5), T(0), T(2, 130, 150) };

	dir = getenv("OUTDIR") ? getenv("OUTDIR") : ".";
	setenv("MTC_CHECK", "1", 1);
	printf("each module runs twice: with the portable GEMM (MTC_BLAS=0) every output must be\n"
	       "bit-identical to the interpreter's; with OpenBLAS within 1e-5 (1 + |ref|)\n");

	for (int s = 0; s < 4; s++) {
		for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
			add(unary[i], 1, shapes[s]);
		for (size_t i = 0; i < sizeof upos / sizeof *upos; i++)
			add(upos[i], 1, shapes[s])->pos = 1;
		add(OP_POW, 1, shapes[s])->fa[0] = 2;
		add(OP_POW, 1, shapes[s])->fa[0] = 3;
		Case *c = add(OP_POW, 1, shapes[s]);
		c->fa[0] = 0.5;
		c->pos = 1;
	}
	run("unary");

	{
		Type pa[][2] = { { T(2, 4, 5), T(2, 4, 5) }, { T(2, 4, 5), T(1, 5) }, { T(3, 3, 1, 5), T(2, 4, 1) },
		                 { T(0), T(2, 2, 3) }, { T(2, 6, 1), T(2, 1, 7) }, { T(2, 200, 120), T(1, 120) } };
		for (int s = 0; s < 6; s++) {
			for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
				add(binary[i], 2, pa[s][0], pa[s][1])->pos = binary[i] == OP_DIV;
			for (size_t i = 0; i < sizeof gbin / sizeof *gbin; i++)
				add(gbin[i], 2, pa[s][0], pa[s][1])->pos = gbin[i] == OP_SQRT_G || gbin[i] == OP_RSQRT_G;
			add(OP_POW_G, 2, pa[s][0], pa[s][1])->fa[0] = 3;
			add(OP_POW_G, 2, pa[s][0], pa[s][1])->fa[0] = 0;
		}
		run("binary");
	}

	/* A fused chain with broadcast operands, a result stored mid-chain, one kept in registers. */
	{
		Case *c;
		add(OP_ADD, 2, T(2, 50, 40), T(1, 40));
		c = add(OP_RELU, 1, T(2, 50, 40));
		c->arg[0] = 0;
		c = add(OP_MUL, 2, T(2, 50, 40), T(2, 50, 1));
		c->arg[0] = 1;
		c = add(OP_TANH, 1, T(2, 50, 40));
		c->arg[0] = 2;
		c = add(OP_SUB, 2, T(2, 50, 40), T(0));
		c->arg[0] = 3;
		c = add(OP_GELU_G, 2, T(2, 50, 40), T(2, 50, 40));
		c->arg[0] = 4;
		c->arg[1] = 1;
		run("chain");
	}

	{
		int mm[][7] = { { 5, 7, 7, 3, 0, 0 }, { 7, 5, 7, 3, 1, 0 }, { 5, 7, 3, 7, 0, 1 },
		                { 7, 5, 3, 7, 1, 1 }, { 70, 130, 130, 90, 0, 0 }, { 130, 70, 90, 130, 1, 1 },
		                { 100, 33, 33, 200, 0, 0 } };
		for (int i = 0; i < 7; i++)
			attrs(add(OP_MATMUL, 2, T(2, mm[i][0], mm[i][1]), T(2, mm[i][2], mm[i][3])), 2, mm[i][4], mm[i][5]);
		attrs(add(OP_MATMUL, 2, T(4, 2, 3, 4, 5), T(4, 2, 3, 5, 6)), 2, 0, 0);
		attrs(add(OP_MATMUL, 2, T(4, 2, 1, 4, 5), T(3, 3, 5, 6)), 2, 0, 0);
		attrs(add(OP_MATMUL, 2, T(3, 4, 16, 8), T(3, 4, 16, 8)), 2, 0, 1);
		attrs(add(OP_MATMUL, 2, T(3, 4, 8, 16), T(2, 8, 24)), 2, 1, 0);
		run("matmul");
	}

	{
		Case *c;
		attrs(add(OP_TRANSPOSE, 1, T(3, 2, 3, 4)), 3, 2, 0, 1);
		attrs(add(OP_TRANSPOSE, 1, T(2, 5, 6)), 2, 1, 0);
		attrs(add(OP_TRANSPOSE, 1, T(4, 2, 3, 4, 5)), 4, 0, 2, 1, 3);
		attrs(add(OP_TRANSPOSE, 1, T(2, 300, 200)), 2, 1, 0);
		add(OP_RESHAPE, 1, T(2, 4, 6))->given = T(3, 2, 3, 4);
		add(OP_RESHAPE, 1, T(2, 300, 100))->given = T(1, 30000);
		attrs(add(OP_CONCAT, 2, T(2, 2, 3), T(2, 4, 3)), 1, 0);
		attrs(add(OP_CONCAT, 3, T(2, 2, 3), T(2, 2, 5), T(2, 2, 1)), 1, 1);
		attrs(add(OP_CONCAT, 2, T(3, 2, 3, 4), T(3, 2, 3, 2)), 1, 2);
		c = attrs(add(OP_SLICE, 1, T(2, 5, 8)), 2, 1, 2);
		c->given = T(2, 5, 3);
		c = attrs(add(OP_SLICE, 1, T(2, 6, 4)), 2, 0, 1);
		c->given = T(2, 4, 4);
		c = add(OP_CONST, 0);
		c->fa[0] = 0.3;
		c->given = T(2, 3, 4);
		add(OP_BCAST, 1, T(1, 5))->given = T(2, 4, 5);
		add(OP_BCAST, 1, T(2, 4, 1))->given = T(3, 3, 4, 6);
		add(OP_BCAST, 1, T(0))->given = T(2, 2, 2);
		add(OP_SUMTO, 1, T(2, 4, 5))->given = T(1, 5);
		add(OP_SUMTO, 1, T(3, 3, 4, 5))->given = T(2, 4, 1);
		add(OP_SUMTO, 1, T(2, 2, 3))->given = T(0);
		add(OP_SUMTO, 1, T(2, 6, 7))->given = T(2, 6, 1);
		add(OP_SUMTO, 1, T(2, 300, 100))->given = T(1, 100);
		run("layout");
	}

	{
		Opk red[] = { OP_SUM, OP_MEAN, OP_MAX };
		for (int r = 0; r < 3; r++) {
			for (int ax = 0; ax < 3; ax++)
				for (int kd = 0; kd < 2; kd++)
					attrs(add(red[r], 1, T(3, 3, 4, 5)), 2, ax, kd);
			attrs(add(red[r], 1, T(2, 200, 300)), 2, 1, 0);
		}
		/* max_grad(x, max(x), dy): y really is the max, so dy lands somewhere */
		{
			int kd[3][2] = { { 1, 0 }, { 1, 1 }, { 2, 0 } };
			for (int i = 0; i < 3; i++) {
				Shape s = { 3, { 3, 4, 5 } }, rs;
				int mx = ncs;
				Case *c;
				attrs(add(OP_MAX, 1, (Type){ F32, s }), 2, kd[i][0], kd[i][1]);
				rs = s;
				if (kd[i][1])
					rs.d[kd[i][0]] = 1;
				else {
					for (int d = kd[i][0]; d < 2; d++)
						rs.d[d] = rs.d[d + 1];
					rs.rank = 2;
				}
				c = attrs(add(OP_MAX_G, 3, (Type){ F32, s }, (Type){ F32, rs }, (Type){ F32, rs }), 2,
				          kd[i][0], kd[i][1]);
				c->arg[0] = -100 - mx;
				c->arg[1] = mx;
			}
		}
		run("reduce");
	}

	{
		Opk sm[] = { OP_SOFTMAX, OP_LOGSOFTMAX };
		Opk sg[] = { OP_SOFTMAX_G, OP_LOGSOFTMAX_G };
		for (int i = 0; i < 2; i++) {
			attrs(add(sm[i], 1, T(2, 4, 10)), 1, 1);
			attrs(add(sm[i], 1, T(3, 3, 4, 5)), 1, 0);
			attrs(add(sm[i], 1, T(3, 3, 4, 5)), 1, 1);
			attrs(add(sm[i], 1, T(2, 256, 128)), 1, 1);
			attrs(add(sg[i], 2, T(2, 4, 10), T(2, 4, 10)), 1, 1);
			attrs(add(sg[i], 2, T(3, 3, 4, 5), T(3, 3, 4, 5)), 1, 0);
			attrs(add(sg[i], 2, T(2, 256, 128), T(2, 256, 128)), 1, 1);
		}
		run("softmax");
	}

	{
		Case *c;
		add(OP_LAYERNORM, 3, T(2, 6, 16), T(1, 16), T(1, 16))->fa[0] = 1e-5;
		add(OP_LAYERNORM, 3, T(3, 2, 3, 8), T(1, 8), T(1, 8))->fa[0] = 1e-3;
		add(OP_LAYERNORM, 3, T(2, 512, 64), T(1, 64), T(1, 64))->fa[0] = 1e-5;
		add(OP_LN_DX, 3, T(2, 6, 16), T(1, 16), T(2, 6, 16))->fa[0] = 1e-5;
		add(OP_LN_DX, 3, T(2, 512, 64), T(1, 64), T(2, 512, 64))->fa[0] = 1e-5;
		add(OP_LN_DGAMMA, 2, T(2, 6, 16), T(2, 6, 16))->fa[0] = 1e-5;
		add(OP_LN_DGAMMA, 2, T(3, 2, 3, 8), T(3, 2, 3, 8))->fa[0] = 1e-3;
		add(OP_EMBEDDING, 2, T(2, 10, 4), I(T(1, 6)));
		add(OP_EMBEDDING, 2, T(2, 50, 8), I(T(2, 2, 3)));
		add(OP_EMBED_G, 2, I(T(1, 6)), T(2, 6, 4))->given = T(2, 10, 4);
		add(OP_EMBED_G, 2, I(T(2, 64, 16)), T(3, 64, 16, 32))->given = T(2, 20, 32);
		add(OP_XENT, 2, T(2, 8, 10), I(T(1, 8)));
		add(OP_XENT, 2, T(3, 2, 3, 5), I(T(2, 2, 3)));
		add(OP_XENT_G, 3, T(2, 8, 10), I(T(1, 8)), T(0));
		add(OP_XENT_G, 3, T(2, 300, 50), I(T(1, 300)), T(0));
		add(OP_MSE, 2, T(2, 4, 5), T(2, 4, 5));
		add(OP_MSE, 2, T(2, 4, 5), T(1, 5));
		add(OP_MSE_G, 3, T(2, 4, 5), T(1, 5), T(0));
		c = add(OP_MSE_G, 3, T(2, 300, 70), T(2, 300, 70), T(0));
		(void)c;
		run("nn");
	}

	/* Updates need a step function and copies a plan: examples.sh trains every optimizer
	 * against the interpreter, swap.sh runs planned copies, state.sh state kept in host
	 * memory. */
	{
		static const struct { Opk k; const char *where; } elsewhere[] = {
			{ OP_SGD, "examples.sh" }, { OP_SGDM, "examples.sh" }, { OP_ADAM, "examples.sh" },
			{ OP_TICK, "examples.sh" }, { OP_SWAPOUT, "swap.sh" }, { OP_SWAPIN, "swap.sh" },
			{ OP_WAIT, "swap.sh" }, { OP_SWAPHOME, "state.sh" },
		};
		for (size_t i = 0; i < sizeof elsewhere / sizeof *elsewhere; i++)
			covered[elsewhere[i].k] = 1;
	}
	for (int k = 0; k < NOP; k++) {
		check(covered[k], "every op kind has a test case: %s", opinfo[k].name);
		check(mt3000_kern[k] != NULL, "mt3000_kern[] has a rule for %s", opinfo[k].name);
	}
	return done();
}
