/* shape.c: unit tests of shape inference: broadcasting and every op's shape rule.
 *
 * Each case runs op_infer on operands of the given types and expects either the result type
 * or an error whose message holds every '|'-separated piece of `want` after the '!'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../build.h"
#include "../check.h"

typedef struct Case {
	int line;
	Opk k;
	const char *a[12];      /* operand types, NULL-terminated */
	int64_t ia[MAXIA];
	int nia;
	double fa[MAXFA];
	const char *given;      /* F_GIVEN ops: the result type handed to the rule */
	const char *want;       /* result type, or "!piece|piece" of the error */
} Case;

#define A(...) { __VA_ARGS__, NULL }
#define L __LINE__

static const Case cases[] = {
	/* broadcasting through the binary ops */
	{ L, OP_ADD, A("f32[2,3]", "f32[2,3]"), .want = "f32[2,3]" },
	{ L, OP_ADD, A("f32[2,3]", "f32[3]"), .want = "f32[2,3]" },
	{ L, OP_ADD, A("f32[3]", "f32[2,3]"), .want = "f32[2,3]" },
	{ L, OP_ADD, A("f32[2,3]", "f32[]"), .want = "f32[2,3]" },
	{ L, OP_ADD, A("f32[]", "f32[]"), .want = "f32[]" },
	{ L, OP_ADD, A("f32[4,1]", "f32[3]"), .want = "f32[4,3]" },
	{ L, OP_ADD, A("f32[1,3]", "f32[4,1]"), .want = "f32[4,3]" },
	{ L, OP_ADD, A("f32[5,1,3]", "f32[4,1]"), .want = "f32[5,4,3]" },
	{ L, OP_ADD, A("f32[2,1,4,1]", "f32[3,1,5]"), .want = "f32[2,3,4,5]" },
	{ L, OP_ADD, A("f32[1]", "f32[7]"), .want = "f32[7]" },
	{ L, OP_ADD, A("f32[1,1]", "f32[]"), .want = "f32[1,1]" },
	{ L, OP_ADD, A("f32[1,1,1,1,1,1,1,1]", "f32[2]"), .want = "f32[1,1,1,1,1,1,1,2]" },
	{ L, OP_SUB, A("f32[8]", "f32[4,8]"), .want = "f32[4,8]" },
	{ L, OP_MUL, A("f32[4,1,8]", "f32[1,6,1]"), .want = "f32[4,6,8]" },
	{ L, OP_DIV, A("f32[]", "f32[9]"), .want = "f32[9]" },
	{ L, OP_RELU_G, A("f32[4,8]", "f32[4,8]"), .want = "f32[4,8]" },
	{ L, OP_ADD, A("f32[2,3]", "f32[4]"), .want = "!do not broadcast|f32[2,3]|f32[4]" },
	{ L, OP_ADD, A("f32[2,3]", "f32[3,3]"), .want = "!do not broadcast|f32[2,3]|f32[3,3]" },
	{ L, OP_MUL, A("f32[4,2,1]", "f32[3,1]"), .want = "!do not broadcast|f32[4,2,1]|f32[3,1]" },
	{ L, OP_ADD, A("f32[2]", "i32[2]"), .want = "!must be f32|i32[2]" },
	{ L, OP_ADD, A("f32[2]"), .want = "!takes 2 operands, got 1" },
	/* unary */
	{ L, OP_RELU, A("f32[3,4]"), .want = "f32[3,4]" },
	{ L, OP_EXP, A("f32[]"), .want = "f32[]" },
	{ L, OP_POW, A("f32[3]"), .fa = { 2 }, .want = "f32[3]" },
	{ L, OP_TANH, A("i32[3]"), .want = "!must be f32|i32[3]" },
	{ L, OP_SOFTMAX, A("f32[2,3]"), .ia = { 1 }, .want = "f32[2,3]" },
	{ L, OP_LOGSOFTMAX, A("f32[2,3]"), .ia = { 0 }, .want = "f32[2,3]" },
	{ L, OP_SOFTMAX, A("f32[2,3]"), .ia = { 2 }, .want = "!axis 2 out of range" },
	{ L, OP_SOFTMAX_G, A("f32[2,3]", "f32[2,3]"), .ia = { 3 }, .want = "!axis 3 out of range" },
	/* matmul: transposes and batch broadcasting */
	{ L, OP_MATMUL, A("f32[2,3]", "f32[3,4]"), .nia = 2, .want = "f32[2,4]" },
	{ L, OP_MATMUL, A("f32[3,2]", "f32[3,4]"), .ia = { 1, 0 }, .nia = 2, .want = "f32[2,4]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[4,3]"), .ia = { 0, 1 }, .nia = 2, .want = "f32[2,4]" },
	{ L, OP_MATMUL, A("f32[3,2]", "f32[4,3]"), .ia = { 1, 1 }, .nia = 2, .want = "f32[2,4]" },
	{ L, OP_MATMUL, A("f32[5,2,3]", "f32[3,4]"), .nia = 2, .want = "f32[5,2,4]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[5,3,4]"), .nia = 2, .want = "f32[5,2,4]" },
	{ L, OP_MATMUL, A("f32[5,2,3]", "f32[5,3,4]"), .nia = 2, .want = "f32[5,2,4]" },
	{ L, OP_MATMUL, A("f32[5,1,2,3]", "f32[7,3,4]"), .nia = 2, .want = "f32[5,7,2,4]" },
	{ L, OP_MATMUL, A("f32[1,2,3]", "f32[6,3,4]"), .nia = 2, .want = "f32[6,2,4]" },
	{ L, OP_MATMUL, A("f32[5,3,2]", "f32[5,3,4]"), .ia = { 1, 0 }, .nia = 2, .want = "f32[5,2,4]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[6,4,3]"), .ia = { 0, 1 }, .nia = 2, .want = "f32[6,2,4]" },
	{ L, OP_MATMUL, A("f32[2,4,8]", "f32[2,4,8]"), .ia = { 0, 1 }, .nia = 2, .want = "f32[2,4,4]" },
	{ L, OP_MATMUL, A("f32[1,1]", "f32[1,1]"), .nia = 2, .want = "f32[1,1]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[4,5]"), .nia = 2, .want = "!inner|f32[2,3]|f32[4,5]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[3,4]"), .ia = { 1, 0 }, .nia = 2, .want = "!inner|f32[2,3]|f32[3,4]" },
	{ L, OP_MATMUL, A("f32[2,3]", "f32[3,4]"), .ia = { 0, 1 }, .nia = 2, .want = "!inner|f32[2,3]|f32[3,4]" },
	{ L, OP_MATMUL, A("f32[3]", "f32[3,4]"), .nia = 2, .want = "!rank >= 2|f32[3]|f32[3,4]" },
	{ L, OP_MATMUL, A("f32[3,4]", "f32[4]"), .nia = 2, .want = "!rank >= 2|f32[3,4]|f32[4]" },
	{ L, OP_MATMUL, A("f32[2,2,3]", "f32[3,3,4]"), .nia = 2, .want = "!batch|f32[2,2,3]|f32[3,3,4]" },
	{ L, OP_MATMUL, A("i32[2,3]", "f32[3,4]"), .nia = 2, .want = "!must be f32|i32[2,3]" },
	/* transpose */
	{ L, OP_TRANSPOSE, A("f32[2,3]"), .ia = { 1, 0 }, .nia = 2, .want = "f32[3,2]" },
	{ L, OP_TRANSPOSE, A("f32[2,3,4]"), .ia = { 2, 0, 1 }, .nia = 3, .want = "f32[4,2,3]" },
	{ L, OP_TRANSPOSE, A("f32[2,3,4]"), .ia = { 0, 1, 2 }, .nia = 3, .want = "f32[2,3,4]" },
	{ L, OP_TRANSPOSE, A("f32[2,3,4,5]"), .ia = { 0, 1, 3, 2 }, .nia = 4, .want = "f32[2,3,5,4]" },
	{ L, OP_TRANSPOSE, A("i32[2,3]"), .ia = { 1, 0 }, .nia = 2, .want = "i32[3,2]" },
	{ L, OP_TRANSPOSE, A("f32[]"), .nia = 0, .want = "f32[]" },
	{ L, OP_TRANSPOSE, A("f32[2,3]"), .ia = { 0 }, .nia = 1, .want = "!permutation of 2 axes|f32[2,3]" },
	{ L, OP_TRANSPOSE, A("f32[2,3]"), .ia = { 0, 0 }, .nia = 2, .want = "!not a permutation" },
	{ L, OP_TRANSPOSE, A("f32[2,3]"), .ia = { 0, 2 }, .nia = 2, .want = "!not a permutation" },
	{ L, OP_TRANSPOSE, A("f32[2,3]"), .ia = { -1, 0 }, .nia = 2, .want = "!not a permutation" },
	/* reshape: the result type is given */
	{ L, OP_RESHAPE, A("f32[2,3]"), .given = "f32[6]", .want = "f32[6]" },
	{ L, OP_RESHAPE, A("f32[2,3]"), .given = "f32[3,2]", .want = "f32[3,2]" },
	{ L, OP_RESHAPE, A("f32[6]"), .given = "f32[1,2,3,1]", .want = "f32[1,2,3,1]" },
	{ L, OP_RESHAPE, A("f32[1]"), .given = "f32[]", .want = "f32[]" },
	{ L, OP_RESHAPE, A("i32[4]"), .given = "f32[2,2]", .want = "i32[2,2]" },
	{ L, OP_RESHAPE, A("f32[2,3]"), .given = "f32[4]", .want = "!cannot reshape f32[2,3] into f32[4]" },
	/* concat */
	{ L, OP_CONCAT, A("f32[2,3]", "f32[2,4]"), .ia = { 1 }, .want = "f32[2,7]" },
	{ L, OP_CONCAT, A("f32[2,3]", "f32[5,3]", "f32[1,3]"), .ia = { 0 }, .want = "f32[8,3]" },
	{ L, OP_CONCAT, A("f32[2,3]"), .ia = { 0 }, .want = "f32[2,3]" },
	{ L, OP_CONCAT, A("i32[2]", "i32[3]"), .ia = { 0 }, .want = "i32[5]" },
	{ L, OP_CONCAT, A("f32[2,3]", "f32[3,4]"), .ia = { 1 }, .want = "!differ off axis 1|f32[2,3]|f32[3,4]" },
	{ L, OP_CONCAT, A("f32[2,3]", "f32[2,3]"), .ia = { 2 }, .want = "!axis 2 out of range" },
	{ L, OP_CONCAT, A("f32[2,3]", "f32[3]"), .ia = { 0 }, .want = "!dtype or rank|f32[2,3]|f32[3]" },
	{ L, OP_CONCAT, A("f32[2]", "i32[2]"), .ia = { 0 }, .want = "!dtype or rank|f32[2]|i32[2]" },
	{ L, OP_CONCAT, A("f32[4611686018427387903]", "f32[4611686018427387903]", "f32[4611686018427387903]"),
	  .ia = { 0 }, .want = "!too large" },
	/* reductions, with and without keepdims */
	{ L, OP_SUM, A("f32[2,3]"), .ia = { 1, 0 }, .want = "f32[2]" },
	{ L, OP_SUM, A("f32[2,3]"), .ia = { 1, 1 }, .want = "f32[2,1]" },
	{ L, OP_SUM, A("f32[2,3]"), .ia = { 0, 1 }, .want = "f32[1,3]" },
	{ L, OP_MEAN, A("f32[2,3,4]"), .ia = { 0, 0 }, .want = "f32[3,4]" },
	{ L, OP_MEAN, A("f32[2,3,4]"), .ia = { 2, 1 }, .want = "f32[2,3,1]" },
	{ L, OP_MAX, A("f32[5]"), .ia = { 0, 0 }, .want = "f32[]" },
	{ L, OP_MAX, A("f32[5]"), .ia = { 0, 1 }, .want = "f32[1]" },
	{ L, OP_SUM, A("f32[2,3]"), .ia = { 2, 0 }, .want = "!axis 2 out of range|rank 2" },
	{ L, OP_SUM, A("f32[2,3]"), .ia = { -1, 0 }, .want = "!axis -1 out of range" },
	{ L, OP_MEAN, A("f32[2,3]"), .ia = { 0, 2 }, .want = "!keepdims must be 0 or 1" },
	{ L, OP_SUM, A("f32[]"), .ia = { 0, 0 }, .want = "!axis 0 out of range" },
	{ L, OP_MAX, A("i32[3]"), .ia = { 0, 0 }, .want = "!must be f32|i32[3]" },
	{ L, OP_MAX_G, A("f32[4,24]", "f32[24]", "f32[24]"), .ia = { 0, 0 }, .want = "f32[4,24]" },
	{ L, OP_MAX_G, A("f32[4,24]", "f32[4,1]", "f32[4,1]"), .ia = { 1, 1 }, .want = "f32[4,24]" },
	{ L, OP_MAX_G, A("f32[4,24]", "f32[4]", "f32[24]"), .ia = { 0, 0 }, .want = "!max_grad|f32[4]|f32[24]" },
	/* layernorm */
	{ L, OP_LAYERNORM, A("f32[4,8]", "f32[8]", "f32[8]"), .fa = { 1e-5 }, .want = "f32[4,8]" },
	{ L, OP_LAYERNORM, A("f32[8]", "f32[8]", "f32[8]"), .fa = { 1e-5 }, .want = "f32[8]" },
	{ L, OP_LAYERNORM, A("f32[4,8]", "f32[4]", "f32[8]"), .fa = { 1e-5 }, .want = "!gamma|f32[4,8]|f32[4]" },
	{ L, OP_LAYERNORM, A("f32[4,8]", "f32[8]", "f32[2,8]"), .fa = { 1e-5 }, .want = "!beta|f32[2,8]" },
	{ L, OP_LAYERNORM, A("f32[4,8]", "f32[8]", "f32[8]"), .fa = { 0 }, .want = "!eps" },
	{ L, OP_LN_DX, A("f32[4,8]", "f32[8]", "f32[4,8]"), .fa = { 1e-5 }, .want = "f32[4,8]" },
	{ L, OP_LN_DGAMMA, A("f32[4,8]", "f32[4,8]"), .fa = { 1e-5 }, .want = "f32[8]" },
	/* embedding */
	{ L, OP_EMBEDDING, A("f32[16,8]", "i32[4,3]"), .want = "f32[4,3,8]" },
	{ L, OP_EMBEDDING, A("f32[16,8]", "i32[5]"), .want = "f32[5,8]" },
	{ L, OP_EMBEDDING, A("f32[16,8]", "i32[]"), .want = "f32[8]" },
	{ L, OP_EMBEDDING, A("f32[16,8]", "f32[4]"), .want = "!ids must be i32|f32[4]" },
	{ L, OP_EMBEDDING, A("f32[2,3,4]", "i32[4]"), .want = "!table must be f32[V, D]|f32[2,3,4]" },
	{ L, OP_EMBEDDING, A("f32[16,8]", "i32[1,1,1,1,1,1,1,1]"), .want = "!exceed rank 8" },
	{ L, OP_EMBED_G, A("i32[4,3]", "f32[4,3,8]"), .given = "f32[16,8]", .want = "f32[16,8]" },
	{ L, OP_EMBED_G, A("i32[4,3]", "f32[4,3,7]"), .given = "f32[16,8]", .want = "!does not match|f32[4,3,7]|i32[4,3]" },
	{ L, OP_EMBED_G, A("i32[1,1,1,1,1,1,1,1]", "f32[1]"), .given = "f32[16,8]", .want = "!embedding_grad" },
	/* cross_entropy: labels have the logits' shape without the last axis */
	{ L, OP_XENT, A("f32[4,10]", "i32[4]"), .want = "f32[]" },
	{ L, OP_XENT, A("f32[2,5,10]", "i32[2,5]"), .want = "f32[]" },
	{ L, OP_XENT, A("f32[10]", "i32[]"), .want = "f32[]" },
	{ L, OP_XENT, A("f32[4,10]", "i32[5]"), .want = "!labels i32[5] do not match logits f32[4,10]" },
	{ L, OP_XENT, A("f32[4,10]", "i32[4,10]"), .want = "!labels i32[4,10] do not match logits f32[4,10]" },
	{ L, OP_XENT, A("f32[4,10]", "f32[4]"), .want = "!labels must be i32|f32[4]" },
	{ L, OP_XENT, A("f32[]", "i32[]"), .want = "!rank >= 1|f32[]" },
	{ L, OP_XENT_G, A("f32[4,10]", "i32[4]", "f32[]"), .want = "f32[4,10]" },
	{ L, OP_XENT_G, A("f32[4,10]", "i32[4]", "f32[1]"), .want = "!must be f32[]|f32[1]" },
	/* mse */
	{ L, OP_MSE, A("f32[4,3]", "f32[4,3]"), .want = "f32[]" },
	{ L, OP_MSE, A("f32[4,3]", "f32[3]"), .want = "f32[]" },
	{ L, OP_MSE, A("f32[4,3]", "f32[4]"), .want = "!do not broadcast|f32[4,3]|f32[4]" },
	{ L, OP_MSE_G, A("f32[4,3]", "f32[4,3]", "f32[]"), .want = "f32[4,3]" },
	/* gradient helpers with given result types */
	{ L, OP_SUMTO, A("f32[4,8]"), .given = "f32[8]", .want = "f32[8]" },
	{ L, OP_SUMTO, A("f32[4,8]"), .given = "f32[1,8]", .want = "f32[1,8]" },
	{ L, OP_SUMTO, A("f32[4,8]"), .given = "f32[]", .want = "f32[]" },
	{ L, OP_SUMTO, A("f32[4,8]"), .given = "f32[3]", .want = "!f32[3] does not broadcast to f32[4,8]" },
	{ L, OP_BCAST, A("f32[8]"), .given = "f32[4,8]", .want = "f32[4,8]" },
	{ L, OP_BCAST, A("f32[3]"), .given = "f32[4,8]", .want = "!f32[3] does not broadcast to f32[4,8]" },
	{ L, OP_CONST, A(NULL), .given = "f32[2]", .want = "f32[2]" },
	{ L, OP_CONST, A(NULL), .given = "i32[]", .want = "!const must be f32" },
	/* optimizer updates */
	{ L, OP_SGD, A("f32[8,8]", "f32[8,8]", "f32[]", "f32[]"), .want = "-" },
	{ L, OP_SGD, A("f32[8,8]", "f32[8]", "f32[]", "f32[]"), .want = "!operand 2 is f32[8]|f32[8,8]" },
	{ L, OP_SGD, A("f32[8,8]", "f32[8,8]", "f32[1]", "f32[]"), .want = "!operand 3 (a hyperparameter) must be f32[]|f32[1]" },
	{ L, OP_SGD, A("f32[8,8]", "f32[8,8]", "f32[]"), .want = "!takes 4 operands, got 3" },
	{ L, OP_SGDM, A("f32[8]", "f32[8]", "f32[8]", "f32[]", "f32[]", "f32[]"), .want = "-" },
	{ L, OP_SGDM, A("f32[8]", "f32[8]", "f32[8]", "f32[]", "i32[]", "f32[]"), .want = "!operand 5 (a hyperparameter) must be f32[]|i32[]" },
	{ L, OP_ADAM, A("f32[8]", "f32[8]", "f32[8]", "f32[8]", "i32[]", "f32[]", "f32[]", "f32[]", "f32[]"), .want = "-" },
	{ L, OP_ADAM, A("f32[8]", "f32[8]", "f32[8]", "f32[8]", "f32[]", "f32[]", "f32[]", "f32[]", "f32[]"), .want = "!step counter must be i32[]" },
	{ L, OP_ADAMW, A("f32[8]", "f32[8]", "f32[8]", "f32[8]", "i32[]", "f32[]", "f32[]", "f32[]", "f32[]", "f32[]"), .want = "-" },
	{ L, OP_ADAMW, A("f32[8]", "f32[8]", "f32[4]", "f32[8]", "i32[]", "f32[]", "f32[]", "f32[]", "f32[]", "f32[]"), .want = "!operand 3 is f32[4]|f32[8]" },
	{ L, OP_ADAMW, A("f32[8]", "f32[8]", "f32[8]", "f32[8]", "i32[]", "f32[]", "f32[]", "f32[]", "f32[]", "f32[2]"), .want = "!operand 10 (a hyperparameter)" },
	{ L, OP_SUMSQ, A("f32[4,8]"), .want = "f32[]" },
	{ L, OP_SUMSQ, A("i32[4]"), .want = "!sumsq of i32[4]" },
	{ L, OP_CLIPCOEF, A("f32[]", "f32[]"), .want = "f32[]" },
	{ L, OP_TICK, A("i32[]"), .want = "-" },
	{ L, OP_TICK, A("i32[1]"), .want = "!counter must be i32[]|i32[1]" },
};

static int
has_all(const char *err, const char *want)
{
	char b[200], *p, *q;

	snprintf(b, sizeof b, "%s", want);
	for (p = b; p; p = q) {
		if ((q = strchr(p, '|')))
			*q++ = 0;
		if (!strstr(err, p))
			return 0;
	}
	return 1;
}

static void
run(Module *m, const Case *c)
{
	Func *f = m->fwd;
	int args[12], n = 0, rc;
	Type r = {0};
	char err[400] = "", got[200];

	while (n < 11 && c->a[n])
		args[n] = func_value(f, NULL, ty_of(c->a[n])), n++;
	if (c->given)
		r = ty_of(c->given);
	rc = op_infer(f, c->k, args, n, c->ia, c->nia, c->fa, &r, err, sizeof err);
	if (c->want[0] == '!') {
		CHECK(rc != 0 && has_all(err, c->want + 1), "line %d: %s: expected an error with '%s', got %s",
		      c->line, opinfo[c->k].name, c->want + 1, rc ? err : "success");
		return;
	}
	type_str(&r, got, sizeof got);
	CHECK(rc == 0 && (c->want[0] == '-' || strcmp(got, c->want) == 0),
	      "line %d: %s: expected %s, got %s", c->line, opinfo[c->k].name, c->want,
	      rc ? err : got);
}

/* shape_broadcast and shape_broadcasts_to on their own. */
static void
broadcast(void)
{
	static const struct { const char *a, *b, *r; } bc[] = {
		{ "f32[3]", "f32[2,3]", "f32[2,3]" },
		{ "f32[2,1]", "f32[1,2]", "f32[2,2]" },
		{ "f32[]", "f32[]", "f32[]" },
		{ "f32[6,1,5]", "f32[7,1]", "f32[6,7,5]" },
		{ "f32[3]", "f32[4]", NULL },
		{ "f32[2,3]", "f32[2,1,3]", "f32[2,2,3]" },
		{ "f32[2,3]", "f32[3,2,3]", "f32[3,2,3]" },
		{ "f32[2,3]", "f32[2,2,2]", NULL },
	};
	static const struct { const char *a, *r; int yes; } to[] = {
		{ "f32[3]", "f32[2,3]", 1 }, { "f32[2,3]", "f32[3]", 0 }, { "f32[1,3]", "f32[4,3]", 1 },
		{ "f32[4,3]", "f32[1,3]", 0 }, { "f32[]", "f32[5]", 1 }, { "f32[5]", "f32[]", 0 },
		{ "f32[2,1]", "f32[2,7]", 1 }, { "f32[2,7]", "f32[2,7]", 1 },
	};

	for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
		Type a = ty_of(bc[i].a), b = ty_of(bc[i].b), r = { F32, { 0, { 0 } } };
		char s[100];
		int rc = shape_broadcast(&a.sh, &b.sh, &r.sh), rc2;
		Type r2 = r;
		rc2 = shape_broadcast(&b.sh, &a.sh, &r2.sh);
		type_str(&r, s, sizeof s);
		if (!bc[i].r)
			CHECK(rc == -1 && rc2 == -1, "broadcast %s %s should fail", bc[i].a, bc[i].b);
		else
			CHECK(rc == 0 && rc2 == 0 && strcmp(s, bc[i].r) == 0 && shape_eq(&r.sh, &r2.sh),
			      "broadcast %s %s: want %s got %s", bc[i].a, bc[i].b, bc[i].r, s);
	}
	for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
		Type a = ty_of(to[i].a), r = ty_of(to[i].r);
		CHECK(shape_broadcasts_to(&a.sh, &r.sh) == to[i].yes, "%s broadcasts to %s: want %d",
		      to[i].a, to[i].r, to[i].yes);
	}
}

/* OPTAB's columns agree with its flags: F_EW ops have a formula and only they, F_MUT ops
 * write their leading operands and only they; the formula's names are replaced as words. */
static void
columns(void)
{
	static const char *const x[3] = { "a", "t1", "x0" }, *c3[2] = { "c3", "d3" }, *c[2] = { "c", "d" };
	char buf[128];

	for (int k = 0; k < NOP; k++) {
		const OpInfo *o = &opinfo[k];
		CHECK(!(o->flags & F_EW) == !o->ew, "%s: formula iff F_EW", o->name);
		CHECK(!(o->flags & F_MUT) == !o->nwritten || (k == OP_SWAPHOME && o->nwritten == 1),
		      "%s: operands written iff F_MUT (or swap_home's decl)", o->name);
		CHECK(o->nwritten <= o->nargs, "%s: writes at most its operands", o->name);
	}
	CHECK(strcmp(op_ew_expr(OP_POW_G, x, c3, "8.0f", buf, sizeof buf),
	             "mtc_pow_grad(a, t1, c3)") == 0, "pow_grad formula: %s", buf);
	CHECK(strcmp(op_ew_expr(OP_MSE_G, x, c, "32.0f", buf, sizeof buf),
	             "2.0f / 32.0f * (a - t1) * x0") == 0, "mse_grad formula: %s", buf);
	CHECK(strcmp(op_ew_expr(OP_CLIP_G, x, c3, "8.0f", buf, sizeof buf),
	             "mtc_clip_grad(a, t1, c3, d3)") == 0, "clip_grad formula: %s", buf);
}

int
main(void)
{
	Module *m = mod_new("shape", "shape.c");

	columns();
	m->fwd = func_new(m, "forward");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run(m, &cases[i]);
	broadcast();
	mod_free(m);
	return done();
}
