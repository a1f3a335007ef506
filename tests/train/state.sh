#!/bin/sh
# state.sh: the training loop from mtc-run and the module API: run-time settings and state
# files through tests/train/api on the mt3000 module (unplanned and planned); mtc-run's
# --save-state/--load-state resuming bit for bit (interpreter, modules, a state moved from the
# interpreter to a module), --save-outputs after training, --lr-schedule; every bad setting or
# file an error with a message (exit 1), never a crash; the CUDA module built with the same
# API (run where there is a GPU).
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
RUN=$top_builddir/mtc-run
out=$top_builddir/tests/out/train/state
mkdir -p "$out" || exit 1
pass=0 fail=0 skip=0
t() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi; }
src=$top_srcdir/tests/train/twin.tdsl
"$MTC" "$src" -o "$out/twin.so" && "$MTC" "$src" --mem-budget=80% -o "$out/twin80.so" || {
	echo "0 passed, 1 failed"; exit 1; }

# the C API
for so in twin twin80; do
	"$top_builddir/tests/train/api" "$out/$so.so" "$out" >"$out/api-$so.log" 2>&1
	rc=$?
	grep -v 'passed,' "$out/api-$so.log"
	p=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' "$out/api-$so.log")
	f=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' "$out/api-$so.log")
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-1}))
	[ "$rc" = 0 ] || [ "${f:-1}" != 0 ] || { fail=$((fail + 1)); echo "FAIL: api $so: exit $rc"; }
done

# mtc-run: 5 steps, save, load, 5 more against 10 straight: the same losses, params and state
# (MTC_BLAS=0: the module's portable GEMM gives the interpreter's bits, for the cross check)
export MTC_BLAS=0
sched="--lr-schedule cosine:3:10"
for m in "$src" "$out/twin.so" "$out/twin80.so"; do
	n=$(basename "$m")
	"$RUN" "$m" --steps 10 $sched --save-params "$out/$n.p10" --save-state "$out/$n.s10" >"$out/$n.a" &&
	"$RUN" "$m" --steps 5 $sched --save-state "$out/$n.s5" >"$out/$n.b" &&
	"$RUN" "$m" --steps 5 $sched --load-state "$out/$n.s5" --save-params "$out/$n.p55" \
		--save-state "$out/$n.s55" >>"$out/$n.b"
	t "$n: 5 steps, --save-state, --load-state, 5 more print the losses of 10 straight" \
		"[ \"\$(grep '^step' '$out/$n.a')\" = \"\$(grep '^step' '$out/$n.b')\" ]"
	t "$n: and end with the same params and state, bit for bit" \
		"cmp -s '$out/$n.p10' '$out/$n.p55' && cmp -s '$out/$n.s10' '$out/$n.s55'"
done
t "the interpreter's state files equal the module's" "cmp -s '$out/twin.tdsl.s10' '$out/twin.so.s10'"
"$RUN" "$out/twin80.so" --steps 5 $sched --load-state "$out/twin.tdsl.s5" --save-params "$out/x.p" >/dev/null
t "a state saved by the interpreter resumes in a planned module, bit for bit" \
	"cmp -s '$out/x.p' '$out/twin.tdsl.p10'"

# --save-outputs after training: the last step's outputs, from before its update
for m in "$src" "$out/twin.so"; do
	n=$(basename "$m")
	"$RUN" "$m" --steps 3 --save-params "$out/$n.p3" --save-outputs "$out/$n.o4x" >/dev/null
	"$RUN" "$m" --steps 1 --params "$out/$n.p3" --save-outputs "$out/$n.o4" >/dev/null &&
	"$RUN" "$m" --forward --params "$out/$n.p3" --save-outputs "$out/$n.f4" >/dev/null
	t "$n: --save-outputs after a step writes forward()'s outputs before the update" \
		"cmp -s '$out/$n.o4' '$out/$n.f4' && ! cmp -s '$out/$n.o4x' '$out/$n.f4'"
done

# bad settings and files: exit 1 with a message, never a signal
bad() { # what, want (a piece of the message), command...
	what=$1 want=$2; shift 2
	"$@" >"$out/bad.out" 2>"$out/bad.err"
	rc=$?
	t "$what: exit 1, '$want'" "[ $rc = 1 ] && grep -q -- \"$want\" '$out/bad.err'"
}
"$RUN" "$top_srcdir/examples/skipnet.tdsl" --steps 0 --save-state "$out/skipnet.st" >/dev/null
printf '0.01\n-0.5\n' >"$out/neg.lr"
printf '0.01\nfast\n' >"$out/junk.lr"
: >"$out/empty.lr"
for m in "$src" "$out/twin.so"; do
	n=$(basename "$m")
	bad "$n: a negative lr in the schedule" "neg.lr:2: the learning rate must be a finite number >= 0, got -0.5" \
		"$RUN" "$m" --steps 2 --lr-schedule "$out/neg.lr"
	bad "$n: a line that is no number" "junk.lr:2: expected one learning rate" \
		"$RUN" "$m" --lr-schedule "$out/junk.lr"
	bad "$n: an empty schedule" "no learning rate" "$RUN" "$m" --lr-schedule "$out/empty.lr"
	bad "$n: a bad named schedule" "expected cosine:WARMUP:TOTAL" "$RUN" "$m" --lr-schedule cosine:5:2
	bad "$n: a state of another model (skipnet)" "no tensor 'w0'" "$RUN" "$m" --load-state "$out/skipnet.st"
	bad "$n: a state file that is not there" "nothing.st" "$RUN" "$m" --load-state "$out/nothing.st"
	bad "$n: --params with --load-state" "give one of them" \
		"$RUN" "$m" --params "$out/$n.p3" --load-state "$out/$n.s5"
done

# micro-batches: the whole batch's step on k slices (PyTorch twins: twin.py)
"$MTC" "$src" --micro-batches=4 -o "$out/twin4.so" &&
"$MTC" "$src" --micro-batches=4 --mem-budget=80% -o "$out/twin4p.so" || fail=$((fail + 1))
for m in "$out/twin4.so" "$out/twin4p.so"; do
	n=$(basename "$m")
	MTC_CHECK=1 "$RUN" "$m" --steps 4 $sched --save-params "$out/$n.p" >"$out/$n.a"
	"$RUN" "$src" --micro-batches=4 --steps 4 $sched --save-params "$out/i4.p" >"$out/i4.a"
	t "$n: the interpreter's losses and params, bit for bit (MTC_CHECK=1)" \
		"[ \"\$(grep '^step' '$out/$n.a')\" = \"\$(grep '^step' '$out/i4.a')\" ] && cmp -s '$out/$n.p' '$out/i4.p'"
	"$RUN" "$m" --steps 2 $sched --save-state "$out/$n.s2" >/dev/null &&
	"$RUN" "$m" --steps 2 $sched --load-state "$out/$n.s2" --save-params "$out/$n.p22" >/dev/null
	t "$n: 2 steps, save, load, 2 more: bit-identical to 4 straight" "cmp -s '$out/$n.p22' '$out/$n.p'"
done
# dropout in micro-batches: each draws the whole batch's mask at its rows (attention
# probabilities, a reshaped and a transposed tensor: tests/train/drop.tdsl), so the losses are
# the whole batch's but for the order of sums; the module's mask is the interpreter's, bit for bit
drop=$top_srcdir/tests/train/drop.tdsl
"$RUN" "$drop" --steps 4 >"$out/drop1.a" && "$RUN" "$drop" --steps 4 --micro-batches=3 >"$out/drop3.a" &&
"$MTC" "$drop" --micro-batches=3 --mem-budget=80% -o "$out/drop3.so" &&
MTC_CHECK=1 MTC_BLAS=0 "$RUN" "$out/drop3.so" --steps 4 >"$out/drop3m.a" || fail=$((fail + 1))
t "dropout, 3 micro-batches: the whole batch's losses within 1e-6 ($(grep '^step 4' "$out/drop3.a"))" \
	"awk 'NR == FNR && /^step/ { a[\$2] = \$4; next } /^step/ { n++; d = \$4 - a[\$2]; if (d < 0) d = -d;
	      if (!(d <= 1e-6 * (\$4 < 0 ? -\$4 : \$4))) bad = 1 } END { exit bad || n != 4 }' '$out/drop1.a' '$out/drop3.a'"
t "dropout, 3 micro-batches: the module's losses are the interpreter's, bit for bit" \
	"[ \"\$(grep '^step' '$out/drop3.a')\" = \"\$(grep '^step' '$out/drop3m.a')\" ]"
# a dropout whose rows a reshape interleaves ([S, B, D] as [S B, D]): its own mask per
# micro-batch, and a warning that says so
sed 's|t = dropout(transpose(reshape(h, \[B, S, D\]), \[1, 0, 2\]), 0.25);|t = reshape(dropout(reshape(transpose(reshape(h, [B, S, D]), [1, 0, 2]), [S * B, D]), 0.25), [S, B, D]);|' \
	"$drop" >"$out/mix.tdsl"
"$MTC" "$out/mix.tdsl" --micro-batches=2 -o "$out/mix.so" 2>"$out/mix.err"
t "dropout over interleaved rows: a warning at the dropout" \
	"grep -q 'mix.tdsl:24:15: warning: --micro-batches=2: this dropout.s rows are not blocks of the batch.s' '$out/mix.err' &&
	 [ \$(grep -c warning '$out/mix.err') = 1 ]"
t "the micro-batched step is the planner's: its header says so" \
	"grep -q 'micro-batches ...... 4' '$out/twin4p.h'"
h1=$("$MTC" "$top_srcdir/examples/mlp.tdsl" --emit=h | sed -n 's/.*value zone \.* \([0-9]*\).*/\1/p')
h4=$("$MTC" "$top_srcdir/examples/mlp.tdsl" --micro-batches=4 --emit=h | sed -n 's/.*value zone \.* \([0-9]*\).*/\1/p')
t "the MLP's value zone at 4 micro-batches ($h4) is under 40% of the whole batch's ($h1)" \
	"[ -n '$h4' ] && [ $((h4 * 10)) -lt $((h1 * 4)) ]"
"$MTC" "$top_srcdir/examples/mlp.tdsl" -D B=512 -D L=8 --micro-batches=auto --mem-budget=41% --solver=tso --offload=none \
	--emit=schedule -o "$out/auto.sched" 2>"$out/auto.err"
k=$(sed -n 's/^micro_batches //p' "$out/auto.sched")
t "auto: below the floor of the whole batch (41%, activations only), the planner takes micro-batches (${k:-none})" "[ '${k:-1}' -gt 1 ]"
"$MTC" "$top_srcdir/examples/mlp.tdsl" -D B=512 -D L=8 --micro-batches=auto --mem-budget=41% --solver=tso --offload=none \
	-o "$out/auto.so" && MTC_CHECK=1 "$RUN" "$out/auto.so" --steps 2 --save-params "$out/auto.p" >"$out/auto.a" &&
"$RUN" "$top_srcdir/examples/mlp.tdsl" -D B=512 -D L=8 --micro-batches="${k:-1}" --steps 2 --save-params "$out/auto.ip" >"$out/auto.ia"
t "auto: its module within budget (MTC_CHECK=1) trains as the interpreter at $k micro-batches" \
	"[ \"\$(grep '^step' '$out/auto.a')\" = \"\$(grep '^step' '$out/auto.ia')\" ] && cmp -s '$out/auto.p' '$out/auto.ip'"
bad "a micro-batch count that does not divide the batch" "--micro-batches=3 does not divide the batch B = 8" \
	"$MTC" "$src" --micro-batches=3 -o "$out/x.so"
bad "the interpreter too" "--micro-batches=3 does not divide the batch B = 8" "$RUN" "$src" --micro-batches=3
printf 'model lit {\n  input x : f32[8, 4];\n  param w : f32[4] = ones();\n  loss = mse(x * w, x);\n  train loss with sgd(lr = 0.1);\n}\n' >"$out/lit.tdsl"
bad "a batch that is no const" "the leading dim of the first input 'x', must be a const's name" \
	"$MTC" "$out/lit.tdsl" --micro-batches=2 -o "$out/x.so"
bad "micro-batches of a .mir" "needs a tdsl model that trains" \
	"$MTC" "$top_srcdir/tests/ir/golden/mlp.mir" --micro-batches=2 -o "$out/x.so"
bad "auto without a budget" "give --mem-budget" "$MTC" "$src" --micro-batches=auto -o "$out/x.so"
# no k fits: the error of the largest, and (under the sanitizers) no module left unfreed
printf 'const B = 4;\nmodel tiny {\n  input x : f32[B, 8];\n  param w : f32[8, 8] = ones();\n  loss = mse(tanh(x @ w), x);\n  train loss with sgd(lr = 0.1);\n}\n' >"$out/tiny.tdsl"
bad "auto where no k fits" "no number of micro-batches up to 4 fits the budget" \
	"$MTC" "$out/tiny.tdsl" --micro-batches=auto --mem-budget=64 -o "$out/x.so"
t "auto where no k fits: no sanitizer's report (LeakSanitizer's exit status is ASan's, 1)" \
	"! grep -q Sanitizer '$out/bad.err'"
bad "micro-batches of a built module" "built into it" "$RUN" "$out/twin.so" --micro-batches=2

# buffers: batch norm's running statistics and dropout's counter are in the state file, so a
# model with both resumes bit for bit too; at 2 micro-batches (statistics per micro-batch, a
# mask per micro-batch) the module trains as the interpreter
cnn=$top_srcdir/tests/frontend/good/cnn.tdsl
"$MTC" "$cnn" -D N=4 -o "$out/cnn.so" && "$MTC" "$cnn" -D N=4 --micro-batches=2 -o "$out/cnn2.so" ||
	fail=$((fail + 1))
for m in "$cnn" "$out/cnn.so"; do
	n=$(basename "$m")
	D=; [ "$m" = "$cnn" ] && D="-D N=4"
	"$RUN" "$m" $D --steps 6 --save-params "$out/$n.p6" --save-state "$out/$n.s6" >"$out/$n.a" &&
	"$RUN" "$m" $D --steps 3 --save-state "$out/$n.s3" >"$out/$n.b" &&
	"$RUN" "$m" $D --steps 3 --load-state "$out/$n.s3" --save-params "$out/$n.p33" \
		--save-state "$out/$n.s33" >>"$out/$n.b"
	t "$n (batch norm, dropout): 3 steps, save, load, 3 more: the losses, params, buffers of 6" \
		"[ \"\$(grep '^step' '$out/$n.a')\" = \"\$(grep '^step' '$out/$n.b')\" ] && cmp -s '$out/$n.p6' '$out/$n.p33' && cmp -s '$out/$n.s6' '$out/$n.s33'"
done
t "cnn: the state file holds the running statistics and dropout's counter" \
	"grep -aq 'running_mean' '$out/cnn.so.s6' && grep -aq 'running_var' '$out/cnn.so.s6' && grep -aq 'dropout' '$out/cnn.so.s6'"
t "cnn: the interpreter's state file equals the module's" "cmp -s '$out/cnn.tdsl.s6' '$out/cnn.so.s6'"
"$RUN" "$out/cnn2.so" --steps 3 --save-state "$out/cnn2.s" >"$out/cnn2.a" &&
"$RUN" "$cnn" -D N=4 --micro-batches=2 --steps 3 --save-state "$out/cnn2i.s" >"$out/cnn2i.a"
t "cnn at 2 micro-batches: the module's losses and state are the interpreter's" \
	"[ \"\$(grep '^step' '$out/cnn2.a')\" = \"\$(grep '^step' '$out/cnn2i.a')\" ] && cmp -s '$out/cnn2.s' '$out/cnn2i.s'"
t "cnn at 2 micro-batches: not the whole batch's step (statistics and masks per micro-batch)" \
	"[ \"\$(grep '^step 3' '$out/cnn2.a')\" != \"\$(grep '^step 3' '$out/cnn.so.a')\" ]"

# the CUDA module: the same API, built through NVRTC, ptxas and LLVM; run where a GPU is
if "$MTC" --target=cuda 2>&1 | grep -q "not built"; then
	skip=$((skip + 1)); echo "skipped: the CUDA backend is not built"
else
	"$MTC" "$src" --target=cuda -o "$out/twin-cuda.so"
	t "the CUDA module builds with 4 micro-batches (NVRTC, ptxas, LLVM)" \
		"'$MTC' '$src' --target=cuda --micro-batches=4 -o '$out/twin4-cuda.so'"
	syms=$(nm -D --defined-only "$out/twin-cuda.so" | awk '{print $3}' | grep '^twin_' | sort | tr '\n' ' ')
	t "the CUDA module exports the same API ($syms)" "[ \"$syms\" = \"\$(nm -D --defined-only '$out/twin.so' | awk '{print \$3}' | grep '^twin_' | sort | tr '\n' ' ')\" ]"
	if "$RUN" "$out/twin-cuda.so" --steps 0 >"$out/cuda.probe" 2>&1; then
		"$RUN" "$out/twin-cuda.so" --steps 5 $sched --save-state "$out/cs5" >"$out/cuda.b" &&
		"$RUN" "$out/twin-cuda.so" --steps 5 $sched --load-state "$out/cs5" >>"$out/cuda.b" &&
		"$RUN" "$out/twin-cuda.so" --steps 10 $sched >"$out/cuda.a"
		t "cuda: 5 steps, save, load, 5 more print the losses of 10 straight" \
			"[ \"\$(grep '^step' '$out/cuda.a')\" = \"\$(grep '^step' '$out/cuda.b')\" ]"
	else
		t "cuda without a GPU: create fails with a message, exit 1" \
			"grep -q 'CUDA\\|GPU' '$out/cuda.probe'"
		skip=$((skip + 1)); echo "skipped: the CUDA module's steps: no usable GPU here"
	fi
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
