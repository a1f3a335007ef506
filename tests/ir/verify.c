/* verify.c: the verifier catches each kind of broken IR (built in C, then broken by hand),
 * and accepts the unbroken module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../build.h"
#include "../check.h"

/* Append op k; its result type from the rule (given: for F_GIVEN ops). Returns the op index. */
static int
op(Func *f, Opk k, Phase ph, const char *name, const char *a0, const char *a1, const char *a2,
   const char *a3, const char *a4, const int64_t *ia, int nia, const double *fa, const char *given)
{
	const char *an[5] = { a0, a1, a2, a3, a4 };
	int args[5], n = 0;
	Type g = given ? ty_of(given) : (Type){0};
	static int line = 10;

	for (; n < 5 && an[n]; n++)
		if ((args[n] = func_find(f, an[n])) < 0)
			die("test: no value %s", an[n]);
	line++;
	return build_op(f, k, ph, args, n, ia, nia, fa, given ? &g : NULL, name, (Loc){ line, line % 7 });
}

#define OP1(f, k, ph, nm, a) op(f, k, ph, nm, a, 0, 0, 0, 0, NULL, 0, NULL, NULL)
#define OP2(f, k, ph, nm, a, b) op(f, k, ph, nm, a, b, 0, 0, 0, NULL, 0, NULL, NULL)
#define V(f, nm) func_find(f, nm)

/* Attribute arrays are full-size: the builder copies MAXIA and MAXFA entries. */
static const int64_t ta[MAXIA] = { 1, 0 };
static const double lr[MAXFA] = { 0.1, 0.9 };
static const double one[MAXFA] = { 1 };

/* sgd_momentum_update p, v, g and the three hyperparameters */
static void
sgdm(Func *f, const char *p, const char *v, const char *g)
{
	int args[6] = { V(f, p), V(f, v), V(f, g), V(f, "opt.lr"), V(f, "opt.momentum"),
	                V(f, "opt.weight_decay") };
	build_op(f, OP_SGDM, PH_UPD, args, 6, NULL, 0, NULL, NULL, NULL, (Loc){0});
}

static void
body(Func *f)
{
	OP2(f, OP_MATMUL, PH_FWD, "h0", "x", "w");
	OP2(f, OP_ADD, PH_FWD, "h", "h0", "b");
	OP1(f, OP_RELU, PH_FWD, "r", "h");
	OP2(f, OP_XENT, PH_FWD, "l", "r", "y");
}

/* A small trained model: forward, and a step with backward, updates, a swap and a recompute. */
static Module *
build(void)
{
	Module *m = mod_new("v", "v.tdsl");
	Func *f, *s;
	Init nrm = { .kind = INIT_NORMAL, .b = 0.1 }, z = { .kind = INIT_ZEROS };

	mod_decl(m, "x", R_INPUT, ty_of("f32[4,8]"), (Init){0}, (Loc){ 1, 1 });
	mod_decl(m, "y", R_INPUT, ty_of("i32[4]"), (Init){0}, (Loc){ 2, 1 });
	mod_decl(m, "w", R_PARAM, ty_of("f32[8,8]"), nrm, (Loc){ 3, 1 });
	mod_decl(m, "b", R_PARAM, ty_of("f32[8]"), z, (Loc){ 4, 1 });
	m->decl[mod_decl(m, "mom.w", R_STATE, ty_of("f32[8,8]"), z, (Loc){0})].of = 2;
	mod_decl(m, "t", R_STATE, ty_of("i32[]"), z, (Loc){0});
	mod_decl(m, "opt.lr", R_HYPER, ty_of("f32[]"), (Init){ .kind = INIT_FULL, .a = 0.1 }, (Loc){0});
	mod_decl(m, "opt.momentum", R_HYPER, ty_of("f32[]"), (Init){ .kind = INIT_FULL, .a = 0.9 }, (Loc){0});
	mod_decl(m, "opt.weight_decay", R_HYPER, ty_of("f32[]"), (Init){ .kind = INIT_FULL, .a = 0 }, (Loc){0});
	m->opt = (Optim){ .kind = OPT_SGD, .lr = 0.1, .momentum = 0.9 };

	f = m->fwd = func_new(m, "forward");
	body(f);
	func_output(f, "r", V(f, "r"));
	f->loss = V(f, "l");

	s = m->step = func_new(m, "step");
	body(s);
	op(s, OP_CONST, PH_FWD, "one", 0, 0, 0, 0, 0, NULL, 0, one, "f32[]");
	OP1(s, OP_SWAPOUT, PH_MEM, "r.s", "r");
	OP1(s, OP_WAIT, PH_MEM, NULL, "r.s");
	OP1(s, OP_SWAPIN, PH_MEM, "r.d", "r.s");
	OP1(s, OP_WAIT, PH_MEM, NULL, "r.d");
	op(s, OP_XENT_G, PH_BWD, "g.r", "r.d", "y", "one", 0, 0, NULL, 0, NULL, NULL);
	s->op[OP2(s, OP_ADD, PH_REC, "h.1", "h0", "b")].of = V(s, "h");
	OP2(s, OP_RELU_G, PH_BWD, "g.h", "h.1", "g.r");
	op(s, OP_MATMUL, PH_BWD, "g.w", "x", "g.h", 0, 0, 0, ta, 2, NULL, NULL);
	op(s, OP_SUMTO, PH_BWD, "g.b", "g.h", 0, 0, 0, 0, NULL, 0, NULL, "f32[8]");
	sgdm(s, "w", "mom.w", "g.w");
	op(s, OP_SGD, PH_UPD, NULL, "b", "g.b", "opt.lr", "opt.weight_decay", 0, NULL, 0, NULL, NULL);
	OP1(s, OP_TICK, PH_UPD, NULL, "t");
	s->loss = V(s, "l");
	s->val[V(s, "h")].off = 256;
	s->val[V(s, "r.s")].off = 0;
	s->val[V(s, "w")].off = 1024;
	return m;
}

/* Run the verifier with stderr captured into buf. */
static int
verify(const Module *m, char *buf, size_t n)
{
	FILE *t = tmpfile();
	int save, k;
	size_t got;

	fflush(stderr);
	save = dup(2);
	dup2(fileno(t), 2);
	k = ir_verify(m, "test");
	fflush(stderr);
	dup2(save, 2);
	close(save);
	rewind(t);
	got = fread(buf, 1, n - 1, t);
	buf[got] = 0;
	fclose(t);
	return k;
}

static int nth_op(const Func *f, Opk k, int which)
{
	for (int i = 0; i < f->nop; i++)
		if (f->op[i].kind == k && which-- == 0)
			return i;
	die("test: no op %s", opinfo[k].name);
}

/* Append op k to f without running its rule (the point is to break the IR). */
static int
raw(Func *f, Opk k, Phase ph, const char *name, const char *type, const char *a0, const char *a1)
{
	int args[4] = { V(f, a0), a1 ? V(f, a1) : -1, V(f, "opt.lr"), V(f, "opt.weight_decay") };
	Type r = type ? ty_of(type) : (Type){0};
	return func_op(f, k, ph, args, k == OP_SGD ? 4 : a1 ? 2 : 1, NULL, 0, lr, &r, name, (Loc){0});
}

/* Each breaks one rule; want is a piece of the message. */
static void b_use_before_def(Module *m) { m->fwd->op[0].args[0] = V(m->fwd, "r"); }
static void b_two_defs(Module *m) { m->fwd->op[2].res = m->fwd->op[1].res; }
static void b_bad_def(Module *m) { m->fwd->val[V(m->fwd, "h")].def = 3; }
static void b_def_range(Module *m) { m->fwd->val[V(m->fwd, "h")].def = 99; }
static void b_result_type(Module *m) { m->fwd->val[V(m->fwd, "r")].ty = ty_of("f32[4,9]"); }
static void b_operand_type(Module *m) { m->fwd->val[V(m->fwd, "h0")].ty = ty_of("f32[4,7]"); }
static void b_arity(Module *m) { m->fwd->op[1].nargs = 1; }
static void b_arg_range(Module *m) { m->fwd->op[1].args[1] = 999; }
static void b_kind(Module *m) { m->fwd->op[1].kind = NOP; }
static void b_phase(Module *m) { m->fwd->op[1].phase = 9; }
static void b_flag(Module *m) { m->fwd->op[0].ia[0] = 2; }
static void b_upd_result(Module *m) { raw(m->step, OP_SGD, PH_UPD, NULL, NULL, "g.w", "g.w"); }
static void b_upd_input(Module *m) { raw(m->step, OP_SGD, PH_UPD, NULL, NULL, "x", "x"); }
static void b_upd_state_role(Module *m) { m->step->op[nth_op(m->step, OP_SGDM, 0)].args[1] = V(m->step, "w"); }
static void b_upd_twice(Module *m) { raw(m->step, OP_SGD, PH_UPD, NULL, NULL, "w", "w"); }
static void b_read_after(Module *m) { raw(m->step, OP_RELU, PH_UPD, "late", "f32[8,8]", "w", NULL); }
static void b_upd_again(Module *m) { raw(m->step, OP_SGD, PH_UPD, NULL, NULL, "b", "g.b"); }
static void b_tick_twice(Module *m) { raw(m->step, OP_TICK, PH_UPD, NULL, NULL, "t", NULL); }
static void b_tick_param(Module *m) { m->step->op[nth_op(m->step, OP_TICK, 0)].args[0] = V(m->step, "b"); }
static void b_upd_forward(Module *m) { raw(m->fwd, OP_SGD, PH_UPD, NULL, NULL, "b", "b"); }
static void b_swapin_dev(Module *m) { raw(m->step, OP_SWAPIN, PH_MEM, "bad", "f32[4,8]", "r", NULL); }
static void b_wait_plain(Module *m) { raw(m->step, OP_WAIT, PH_MEM, NULL, NULL, "r", NULL); }
static void b_host_read(Module *m) { raw(m->step, OP_RELU, PH_FWD, "bad", "f32[4,8]", "r.s", NULL); }
static void b_host_flag(Module *m) { m->fwd->val[V(m->fwd, "r")].host = 1; }
static void b_host_flag2(Module *m) { m->step->val[V(m->step, "r.s")].host = 0; }
static void b_out_range(Module *m) { m->fwd->out[0] = 999; }
static void b_out_name(Module *m) { func_output(m->fwd, "r", V(m->fwd, "h")); }
static void b_out_host(Module *m) { func_output(m->step, "s", V(m->step, "r.s")); }
static void b_loss_type(Module *m) { m->fwd->loss = V(m->fwd, "r"); }
static void b_loss_range(Module *m) { m->step->loss = 12345; }
static void b_rec_no_of(Module *m) { m->fwd->op[1].phase = PH_REC; }
static void b_of_no_rec(Module *m) { m->fwd->op[2].of = V(m->fwd, "h"); }
static void b_rec_later(Module *m) { m->step->op[nth_op(m->step, OP_ADD, 1)].of = V(m->step, "g.w"); }
static void b_rec_type(Module *m) { m->step->op[nth_op(m->step, OP_ADD, 1)].of = V(m->step, "l"); }
static void b_state_of(Module *m) { m->decl[4].of = 0; }
static void b_input_init(Module *m) { m->decl[0].init.kind = INIT_ONES; }
static void b_dup_decl(Module *m) { m->decl[1].name = m->decl[0].name; }
static void b_dup_name(Module *m) { m->fwd->val[V(m->fwd, "r")].name = m->fwd->val[V(m->fwd, "h")].name; }
static void b_bad_name(Module *m) { m->fwd->val[V(m->fwd, "r")].name = "a b"; }
static void b_bad_type(Module *m) { m->decl[3].ty = ty_of("f32[0]"); m->fwd->val[3].ty = ty_of("f32[0]"); }
static void b_mirror(Module *m) { m->step->val[2].ty = ty_of("f32[8,9]"); }
static void b_no_opt(Module *m) { m->opt.kind = OPT_NONE; }
static void
copyout(Func *f, const char *v, int64_t k, int64_t start)
{
	int a = V(f, v);
	int64_t ia[MAXIA] = { k, start };
	func_op(f, OP_COPYOUT, PH_FWD, &a, 1, ia, 0, NULL, NULL, NULL, (Loc){0});
}
static void b_copyout_index(Module *m) { copyout(m->step, "r", 1, 0); }
static void b_copyout_shape(Module *m) { copyout(m->step, "h0", 0, 0); m->step->val[V(m->step, "h0")].ty = ty_of("f32[4,9]"); }
static void b_copyout_start(Module *m) { copyout(m->step, "r", 0, 8); }
static void b_copyout_fwd(Module *m) { copyout(m->fwd, "r", 0, 0); }
static void b_hyper_init(Module *m) { m->decl[6].init.kind = INIT_ZEROS; }
static void b_hyper_type(Module *m) { m->decl[7].ty = ty_of("f32[1]"); m->fwd->val[7].ty = m->step->val[7].ty = ty_of("f32[1]"); }
static void b_no_fwd(Module *m) { m->fwd = NULL; }
static void b_nores_res(Module *m) { m->step->op[nth_op(m->step, OP_TICK, 0)].res = V(m->step, "g.b"); }
static void b_given(Module *m) { m->step->val[V(m->step, "g.b")].ty = ty_of("f32[3]"); }

static const struct {
	void (*brk)(Module *);
	const char *name, *want;
} cases[] = {
	{ b_use_before_def, "use before def", "uses %r before its definition" },
	{ b_two_defs, "two defs", "which op 1 defines" },
	{ b_bad_def, "inconsistent def", "%h has no defining op" },
	{ b_def_range, "def out of range", "%h has no defining op (def 99)" },
	{ b_result_type, "result type", "result is f32[4,9], but relu gives f32[4,8]" },
	{ b_operand_type, "operand type", "shapes f32[4,7] and f32[8] do not broadcast in add" },
	{ b_arity, "arity", "has 1 operands, add takes 2" },
	{ b_arg_range, "operand range", "operand 2 is not a value (999)" },
	{ b_kind, "op kind", "no op has kind" },
	{ b_phase, "phase", "no phase 9" },
	{ b_flag, "flag attribute", "ta must be 0 or 1, not 2" },
	{ b_upd_result, "update an op result", "updates %g.w in place, which is not a param" },
	{ b_upd_input, "update an input", "updates %x in place, which is not a param" },
	{ b_upd_state_role, "state operand a param", "updates %w in place, which is not optimizer state" },
	{ b_upd_twice, "updated operand twice", "%w is both updated and operand 2" },
	{ b_read_after, "read after update", "reads %w after op 14 updated it in place" },
	{ b_upd_again, "update twice", "reads %b after op 15 updated it in place" },
	{ b_tick_twice, "tick twice", "reads %t after op 16 updated it in place" },
	{ b_tick_param, "tick of a param", "updates %b in place, which is not optimizer state" },
	{ b_upd_forward, "update in forward", "updates state outside the step function" },
	{ b_swapin_dev, "swap_in of a device value", "swap_in of a value not in host memory" },
	{ b_wait_plain, "wait on a non-copy", "wait on %r, which no copy or collective produced" },
	{ b_host_read, "compute reads host", "reads %r.s, which lives in host memory" },
	{ b_host_flag, "host flag set", "'host' must be set exactly on swap_out, swap_home and collective results" },
	{ b_host_flag2, "host flag unset", "'host' must be set exactly on swap_out, swap_home and collective results" },
	{ b_out_range, "output range", "output 0 is not a defined value" },
	{ b_out_name, "output names", "two outputs are named r" },
	{ b_out_host, "output in host", "output %r.s lives in host memory" },
	{ b_loss_type, "loss type", "the loss %r must be f32[], not f32[4,8]" },
	{ b_loss_range, "loss range", "the loss is not a defined value" },
	{ b_rec_no_of, "rec without of", "only it names the value it recomputes" },
	{ b_of_no_rec, "of without rec", "only it names the value it recomputes" },
	{ b_rec_later, "recompute of a later value", "recomputes %g.w, which no earlier op defines" },
	{ b_rec_type, "recompute type", "recomputes %l of type f32[] as f32[4,8]" },
	{ b_state_of, "state of an input", "mom.w: 'of' must name a param" },
	{ b_input_init, "input initializer", "input x has an initializer" },
	{ b_dup_decl, "duplicate declaration", "x is declared twice" },
	{ b_dup_name, "duplicate value name", "two values are named %h" },
	{ b_bad_name, "bad value name", "has no valid name" },
	{ b_bad_type, "bad type", "b has an invalid type f32[0]" },
	{ b_mirror, "decl mirror", "does not mirror declaration w" },
	{ b_no_opt, "step without optimizer", "step function but no optimizer" },
	{ b_copyout_index, "copy_out into an output the forward lacks", "copy_out into output 1, which the forward does not have" },
	{ b_copyout_shape, "copy_out of another shape", "copy_out of %h0 from element 0 does not fit output r" },
	{ b_copyout_start, "copy_out beyond its output", "copy_out of %r from element 8 does not fit output r" },
	{ b_copyout_fwd, "copy_out in the forward", "(or not in the step)" },
	{ b_hyper_init, "hyperparameter without its value", "hyperparameter opt.lr must be f32[] = full(value)" },
	{ b_hyper_type, "hyperparameter not a scalar", "hyperparameter opt.momentum must be f32[] = full(value)" },
	{ b_no_fwd, "no forward", "no forward function" },
	{ b_nores_res, "result of an update", "tick has no result, but defines %g.b" },
	{ b_given, "given type", "sum_to: f32[3] does not broadcast to f32[4,8]" },
};

/* ---------- print, then parse: the same module ---------- */

static int
same_type(const Type *a, const Type *b)
{
	return a->dt == b->dt && shape_eq(&a->sh, &b->sh);
}

static int
same_loc(Loc a, Loc b)
{
	return a.line == b.line && a.col == b.col;
}

static void
same_func(const Func *a, const Func *b)
{
	CHECK(a->nval == b->nval && a->nop == b->nop && a->nout == b->nout && a->loss == b->loss,
	      "%s: %d values, %d ops, %d outputs, loss %d; read back %d, %d, %d, %d", a->name,
	      a->nval, a->nop, a->nout, a->loss, b->nval, b->nop, b->nout, b->loss);
	if (a->nval != b->nval || a->nop != b->nop || a->nout != b->nout)
		return;
	for (int v = 0; v < a->nval; v++) {
		const Value *x = &a->val[v], *y = &b->val[v];
		CHECK(!strcmp(x->name, y->name) && same_type(&x->ty, &y->ty) && x->def == y->def &&
		      x->decl == y->decl && x->host == y->host && x->off == y->off && same_loc(x->loc, y->loc),
		      "%s: value %%%s differs after the round trip", a->name, x->name);
	}
	for (int i = 0; i < a->nop; i++) {
		const Op *x = &a->op[i], *y = &b->op[i];
		int ok = x->kind == y->kind && x->phase == y->phase && x->res == y->res &&
		         x->nargs == y->nargs && x->of == y->of && same_loc(x->loc, y->loc);
		if (op_iattr_is_list(x->kind))          /* elsewhere nia means nothing */
			ok = ok && x->nia == y->nia;
		for (int k = 0; ok && k < x->nargs; k++)
			ok = x->args[k] == y->args[k];
		for (int k = 0; ok && k < MAXIA; k++)
			ok = x->ia[k] == y->ia[k];
		for (int k = 0; ok && k < MAXFA; k++)
			ok = x->fa[k] == y->fa[k];
		CHECK(ok, "%s: op %d (%s) differs after the round trip", a->name, i, opinfo[x->kind].name);
	}
	for (int i = 0; i < a->nout; i++)
		CHECK(a->out[i] == b->out[i] && !strcmp(a->outname[i], b->outname[i]), "%s: output %d differs",
		      a->name, i);
}

static void
roundtrip(void)
{
	Module *a = build(), *b;
	Src src = { .name = "roundtrip.mir" };
	char *text = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&text, &n);

	ir_print(fp, a);
	fclose(fp);
	src.text = text;
	src.len = n;
	b = ir_parse(&src);
	CHECK(b != NULL, "the printed module does not parse:\n%s", text);
	if (b) {
		CHECK(!strcmp(a->name, b->name) && !strcmp(a->file, b->file) && a->ndecl == b->ndecl,
		      "the module's name, file or declarations differ");
		for (int i = 0; i < a->ndecl && i < b->ndecl; i++) {
			const Decl *x = &a->decl[i], *y = &b->decl[i];
			CHECK(!strcmp(x->name, y->name) && x->role == y->role && same_type(&x->ty, &y->ty) &&
			      x->init.kind == y->init.kind && x->init.a == y->init.a && x->init.b == y->init.b &&
			      x->of == y->of && same_loc(x->loc, y->loc), "declaration %s differs", x->name);
		}
		CHECK(a->opt.kind == b->opt.kind && a->opt.lr == b->opt.lr &&
		      a->opt.momentum == b->opt.momentum, "the optimizer differs");
		same_func(a->fwd, b->fwd);
		same_func(a->step, b->step);
	}
	mod_free(a);
	mod_free(b);
	free(text);
}

int
main(void)
{
	char buf[8192];
	Module *m = build();
	int n = verify(m, buf, sizeof buf);

	CHECK(n == 0, "the unbroken module has %d problems:\n%s", n, buf);
	mod_free(m);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		Func *fwd;
		m = build();
		fwd = m->fwd;
		cases[i].brk(m);
		n = verify(m, buf, sizeof buf);
		CHECK(n > 0 && strstr(buf, cases[i].want), "%s: want '%s', got %d problems:\n%s",
		      cases[i].name, cases[i].want, n, buf);
		m->fwd = fwd;           /* so mod_free frees what build made */
		mod_free(m);
	}
	/* The report's form: stage, function, op index, result and kind. */
	m = build();
	b_result_type(m);
	verify(m, buf, sizeof buf);
	CHECK(strstr(buf, "mtc: internal error: test: forward: op 2 (%r = relu): result is") == buf,
	      "report form: %s", buf);
	mod_free(m);
	roundtrip();
	return done();
}
