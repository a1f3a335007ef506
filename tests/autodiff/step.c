/* step.c: the training step autodiff builds: optimizer state and update rules (one step by
 * hand against the interpreter), params that miss the loss, phases, the forward's loss
 * dropped, simplify's CSE and DCE, and the diagnostics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "tb.h"

#define IA(...) (int64_t[MAXIA]){ __VA_ARGS__ }   /* op_infer reads every attribute */
static Src src = { "step", "", 0, 0 };

static int
count(const Func *f, Opk k)
{
	int n = 0;
	for (int i = 0; i < f->nop; i++)
		n += f->op[i].kind == k;
	return n;
}

static int
phases_ordered(const Func *f)
{
	for (int i = 1; i < f->nop; i++)
		if (f->op[i].phase < f->op[i - 1].phase)
			return 0;
	return 1;
}

static int
close_to(double a, double b, double tol)
{
	return fabs(a - b) <= tol * fmax(1, fabs(b));
}

/* loss = sum(w * w * x); u misses the loss. Three steps of o against a hand computation. */
static void
optim(const char *name, Optim o)
{
	Tb tb, *t = &tb;
	int w, u, x, l, sm = -1, sv = -1, st = -1, ok = 1, lossok = 1;
	double m[4] = {0}, v[4] = {0};

	tb_init(t, name);
	w = tb_decl(t, "w", R_PARAM, F32, SH(4), V_UNIF, -1, 1);
	u = tb_decl(t, "u", R_PARAM, F32, SH(3), V_UNIF, -1, 1);
	x = tb_decl(t, "x", R_INPUT, F32, SH(4), V_UNIF, -1, 1);
	l = tb_op2(t, OP_MUL, tb_op2(t, OP_MUL, w, w), x);
	l = tb_op(t, OP_SUM, &l, 1, IA(0, 0), 0, NULL, NULL);
	func_output(t->m->fwd, "y", tb_op1(t, OP_TANH, u));
	t->m->fwd->loss = l;
	t->m->opt = o;
	check(autodiff(t->m, &src) == 0, "%s: autodiff", name);
	simplify(t->m->fwd);
	simplify(t->m->step);
	check(ir_verify(t->m, name) == 0, "%s: the IR verifies", name);
	check(mod_find_decl(t->m, "mom.u") < 0 && mod_find_decl(t->m, "m.u") < 0,
	         "%s: no state for a param that misses the loss", name);
	if (o.kind == OPT_SGD && o.momentum)
		sm = mod_find_decl(t->m, "mom.w");
	if (o.kind == OPT_ADAM || o.kind == OPT_ADAMW) {
		sm = mod_find_decl(t->m, "m.w");
		sv = mod_find_decl(t->m, "v.w");
		st = mod_find_decl(t->m, "adam.t");
		check(sm >= 0 && sv >= 0 && st >= 0 && t->m->decl[st].ty.dt == I32 &&
		         t->m->decl[st].of == -1 && t->m->decl[sv].of == w && t->m->decl[sv].role == R_STATE,
		         "%s: state decls m.w, v.w of w, adam.t i32[]", name);
		check(t->m->step->op[t->m->step->nop - 2].kind == OP_TICK, "%s: tick before the update", name);
	} else if (o.momentum) {
		check(sm >= 0 && t->m->decl[sm].of == w && t->m->decl[sm].role == R_STATE &&
		         t->m->decl[sm].init.kind == INIT_ZEROS, "%s: state decl mom.w of w, zeros", name);
	} else {
		int nst = 0;
		for (int d = 0; d < t->m->ndecl; d++)
			nst += t->m->decl[d].role == R_STATE;
		check(nst == 0, "%s: plain sgd has no state", name);
	}
	{
		/* the hyperparameters: f32[] decls of the model's values, read by the update */
		static const char *const hn[] = { "opt.lr", "opt.momentum", "opt.beta1", "opt.beta2",
		                                  "opt.eps", "opt.weight_decay", "opt.clip_norm" };
		double hv[] = { o.lr, o.momentum, o.beta1, o.beta2, o.eps, o.weight_decay, o.clip_norm };
		int want[] = { 1, o.kind == OPT_SGD && o.momentum != 0, o.kind != OPT_SGD, o.kind != OPT_SGD,
		               o.kind != OPT_SGD, o.kind != OPT_ADAM, o.clip_norm > 0 }, hok = 1;
		for (int k = 0; k < 7; k++) {
			int d = mod_find_decl(t->m, hn[k]);
			hok &= (d >= 0) == want[k];
			if (d >= 0)
				hok &= t->m->decl[d].role == R_HYPER && t->m->decl[d].init.kind == INIT_FULL &&
				       t->m->decl[d].init.a == hv[k] && t->m->decl[d].ty.sh.rank == 0;
		}
		check(hok, "%s: hyperparameter decls of the optimizer's settings", name);
	}
	check(count(t->m->step, OP_SGD) + count(t->m->step, OP_SGDM) + count(t->m->step, OP_ADAM) +
	      count(t->m->step, OP_ADAMW) == 1, "%s: one update (w only)", name);
	check(count(t->m->step, OP_SUMSQ) == (o.clip_norm > 0) && count(t->m->step, OP_CLIPCOEF) == (o.clip_norm > 0),
	      "%s: clipping ops only with clip_norm", name);
	check(phases_ordered(t->m->step), "%s: phases fwd, bwd, upd in order", name);
	check(t->m->fwd->nop == 1 && t->m->fwd->op[0].kind == OP_TANH && t->m->fwd->loss < 0,
	         "%s: the forward keeps its output's op only, not the loss", name);
	check(count(t->m->step, OP_TANH) == 1 && count(t->m->step, OP_COPYOUT) == 1,
	      "%s: the step computes the output the loss misses only to copy it out (step_out)", name);

	{
		Interp *in = tb_interp(t);
		float *pw = interp_decl(in, w)->data, *px = interp_decl(in, x)->data, u0[3];
		char err[256];
		memcpy(u0, interp_decl(in, u)->data, sizeof u0);
		for (int k = 1; k <= 3; k++) {
			double want[4], loss = 0, got, nrm = 0, coef = 1;
			for (int j = 0; j < 4; j++)
				nrm += 4.0 * pw[j] * px[j] * pw[j] * px[j];
			nrm = sqrt(nrm);
			if (o.clip_norm > 0 && o.clip_norm / (nrm + 1e-6) < 1)
				coef = o.clip_norm / (nrm + 1e-6);
			for (int j = 0; j < 4; j++) {
				double g = 2.0 * pw[j] * px[j] * coef, p = pw[j];
				loss += (double)pw[j] * pw[j] * px[j];
				if (o.kind == OPT_SGD)
					g += o.weight_decay * p;
				if (o.kind == OPT_SGD && !o.momentum)
					want[j] = p - o.lr * g;
				else if (o.kind == OPT_SGD) {
					m[j] = o.momentum * m[j] + g;
					want[j] = p - o.lr * m[j];
				} else {
					if (o.kind == OPT_ADAMW)
						p *= 1 - o.lr * o.weight_decay;
					m[j] = o.beta1 * m[j] + (1 - o.beta1) * g;
					v[j] = o.beta2 * v[j] + (1 - o.beta2) * g * g;
					want[j] = p - o.lr * (m[j] / (1 - pow(o.beta1, k))) /
					          (sqrt(v[j] / (1 - pow(o.beta2, k))) + o.eps);
				}
			}
			if (interp_run(in, t->m->step, err, sizeof err))
				die("%s: %s", name, err);
			got = ((float *)interp_out(in, 0)->data)[0];
			lossok &= close_to(got, loss, 1e-5);
			for (int j = 0; j < 4; j++) {
				ok &= close_to(pw[j], want[j], 1e-5);
				if (sm >= 0)
					ok &= close_to(((float *)interp_decl(in, sm)->data)[j], m[j], 1e-5);
				if (sv >= 0)
					ok &= close_to(((float *)interp_decl(in, sv)->data)[j], v[j], 1e-5);
			}
			if (st >= 0)
				ok &= ((int32_t *)interp_decl(in, st)->data)[0] == k;
		}
		check(lossok, "%s: the step's loss is the loss before the update", name);
		check(ok, "%s: 3 steps match the hand computation (params and state, 1e-5)", name);
		check(memcmp(u0, interp_decl(in, u)->data, sizeof u0) == 0, "%s: u is not updated", name);
		interp_free(in);
	}
	tb_free(t);
}

/* A param used three times gets one gradient: two adds in the backward sum its three parts. */
static void
accumulate(void)
{
	Tb tb, *t = &tb;
	int w, a, b, l, g = -1, adds = 0;
	Func *s;

	tb_init(t, "acc");
	w = tb_decl(t, "w", R_PARAM, F32, SH(2, 2), V_UNIF, -1, 1);
	a = tb_op1(t, OP_TANH, w);
	b = tb_op2(t, OP_MUL, tb_op2(t, OP_ADD, a, w), w);
	l = tb_op(t, OP_SUM, &b, 1, IA(0, 0), 0, NULL, NULL);
	l = tb_op(t, OP_SUM, &l, 1, IA(0, 0), 0, NULL, NULL);
	t->m->fwd->loss = l;
	t->m->opt = (Optim){ .kind = OPT_SGD, .lr = 0.1 };
	check(autodiff(t->m, &src) == 0, "acc: autodiff");
	s = t->m->step;
	for (int i = 0; i < s->nop; i++)
		if (s->op[i].kind == OP_SGD)
			g = s->op[i].args[1];
	for (int i = 0; i < s->nop; i++)
		adds += s->op[i].kind == OP_ADD && s->op[i].phase == PH_BWD;
	check(g >= 0 && s->op[s->val[g].def].kind == OP_ADD && adds == 2,
	         "acc: w's gradient is the sum of its 3 uses (%d bwd adds)", adds);
	tb_free(t);
}

/* CSE merges repeated pure ops, transitively (a+b and b+a become a+a twice); DCE drops what
 * no output needs. */
static void
cse(void)
{
	Tb tb, *t = &tb;
	int w, a, b, c, y;

	tb_init(t, "cse");
	w = tb_decl(t, "w", R_PARAM, F32, SH(3), V_UNIF, -1, 1);
	a = tb_op1(t, OP_TANH, w);
	b = tb_op1(t, OP_TANH, w);
	c = tb_op1(t, OP_EXP, w);            /* dead */
	y = tb_op2(t, OP_MUL, tb_op2(t, OP_ADD, a, b), tb_op2(t, OP_ADD, b, a));
	(void)c;
	func_output(t->m->fwd, "y", y);
	simplify(t->m->fwd);
	check(count(t->m->fwd, OP_TANH) == 1 && count(t->m->fwd, OP_EXP) == 0 &&
	         count(t->m->fwd, OP_ADD) == 1 && t->m->fwd->nop == 3,
	         "cse: one tanh, one add, no dead exp (%d ops)", t->m->fwd->nop);
	check(t->m->fwd->nout == 1 && t->m->fwd->out[0] == t->m->fwd->op[2].res &&
	         t->m->fwd->op[2].kind == OP_MUL, "cse: the output follows its op");
	tb_free(t);
}

/* Bad models get diagnostics, not crashes. */
static void
diags(void)
{
	Tb tb, *t = &tb;
	int w, l, a[2];

	tb_init(t, "diag");
	w = tb_decl(t, "w", R_PARAM, F32, SH(3), V_UNIF, -1, 1);
	a[0] = w;
	a[1] = w;
	l = tb_op(t, OP_RELU_G, a, 2, NULL, 0, NULL, NULL);   /* not differentiable */
	l = tb_op(t, OP_SUM, &l, 1, IA(0, 0), 0, NULL, NULL);
	t->m->fwd->loss = l;
	src.nerr = 0;
	check(autodiff(t->m, &src) < 0 && src.nerr == 1, "diag: no optimizer");
	t->m->opt = (Optim){ .kind = OPT_SGD, .lr = 0.1 };
	src.nerr = 0;
	check(autodiff(t->m, &src) < 0 && src.nerr == 1 && !t->m->step,
	         "diag: a helper op in the forward cannot be differentiated");
	t->m->fwd->op[0].phase = PH_MEM;
	src.nerr = 0;
	check(autodiff(t->m, &src) < 0 && src.nerr == 1 && !t->m->step,
	         "diag: a planned forward is refused");
	tb_free(t);
}

int
main(void)
{
	check_echo = 1;         /* the log shows every check's numbers */
	optim("sgd", (Optim){ .kind = OPT_SGD, .lr = 0.1 });
	optim("sgd-momentum", (Optim){ .kind = OPT_SGD, .lr = 0.1, .momentum = 0.9 });
	optim("adam", (Optim){ .kind = OPT_ADAM, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 });
	optim("sgd-wd-clip", (Optim){ .kind = OPT_SGD, .lr = 0.1, .weight_decay = 0.3, .clip_norm = 0.1 });
	optim("sgd-momentum-wd", (Optim){ .kind = OPT_SGD, .lr = 0.1, .momentum = 0.9, .weight_decay = 0.01 });
	optim("adamw-clip", (Optim){ .kind = OPT_ADAMW, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
	                             .weight_decay = 0.1, .clip_norm = 0.2 });
	accumulate();
	cse();
	diags();
	return done();
}
