/* grad.c: the op table's gradient rules. Placeholder until autodiff lands: each dies. */
#include "passes.h"

void gr_none(struct Diff *d, const Op *op) { (void)d; die("%s has no gradient", opinfo[op->kind].name); }

void gr_add(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_concat(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_div(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_embedding(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_exp(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_gelu(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_layernorm(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_log(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_logsoftmax(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_matmul(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_max(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_mean(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_mse(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_mul(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_neg(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_pow(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_relu(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_reshape(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_rsqrt(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_sigmoid(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_softmax(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_sqrt(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_sub(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_sum(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_tanh(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_transpose(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
void gr_xent(struct Diff *d, const Op *op) { (void)d; die("gradient of %s not written yet", opinfo[op->kind].name); }
