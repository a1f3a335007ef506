#!/bin/sh
# api.sh: builds the modules the API test loads (two models, a copy of one, a forward-only
# one), runs it, and checks that a module exports only its API.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/api
mkdir -p "$out" || exit 1
"$MTC" "$src/examples/mlp.tdsl" -D L=2 -o "$out/mlp.so" &&
cp "$out/mlp.so" "$out/mlp-copy.so" &&
"$MTC" "$src/examples/skipnet.tdsl" -o "$out/skipnet.so" &&
"$MTC" "$src/tests/backend/fwdonly.tdsl" -o "$out/fwdonly.so" || { echo "0 passed, 1 failed"; exit 1; }
${top_builddir:-.}/tests/backend/api "$out/mlp.so" "$out/mlp-copy.so" "$out/skipnet.so" "$out/fwdonly.so" > "$out/api.log"
rc=$?
grep -v 'passed,' "$out/api.log"
p=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' "$out/api.log"); f=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' "$out/api.log")
p=${p:-0}; f=${f:-1}
# only the model's API (its hyperparameters' setters included), mtc_module and mtc_last_error are exported
syms=$(nm -D --defined-only "$out/mlp.so" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
want="mlp_create mlp_destroy mlp_error mlp_forward mlp_load mlp_save mlp_set_lr mlp_set_momentum mlp_set_weight_decay mlp_step mlp_step_out mtc_last_error mtc_module "
if [ "$syms" = "$want" ]; then p=$((p + 1)); else echo "FAIL: exported: $syms"; f=$((f + 1)); fi
echo "$p passed, $f failed"
[ "$rc" = 0 ] && [ "$f" = 0 ]
