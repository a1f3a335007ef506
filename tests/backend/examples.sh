#!/bin/sh
# examples.sh: every example (and allops.tdsl, wide.tdsl) built into a .so and trained 5 steps
# against the interpreter, with check mode on: losses within 1e-5 relative with OpenBLAS's GEMM (step 1;
# 1e-3 of the first after: training amplifies its other summation order), the same
# bits with the portable GEMM (and for forward outputs), the same bits for 1 and 3
# accelerator threads, and the measured peak within the plan. Then under a 50% budget (or the
# smallest the planner can meet, which its error message states): the same bits as without a
# budget, peak_bytes <= budget_bytes, plan_bytes equal to the schedule's arena.
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/examples
mkdir -p "$out" || exit 1
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
export MTC_CHECK=1
# The plan is built twice (module, schedule) and must be the same: tso is deterministic, where
# the ILP's incumbent depends on how far GLPK got in its time (tests/planner covers it).
plan=--solver=tso

# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): the MLP, skipnet, the transformer,
# allops (every op) and wide (an op of 40 operands) only; tests/backend/cnn.sh runs ResNet
for model in "$src"/examples/*.tdsl "$src"/tests/backend/allops.tdsl "$src"/tests/backend/wide.tdsl; do
	n=$(basename "$model" .tdsl)
	[ -z "${MTC_QUICK:-}" ] || case $n in mlp | skipnet | transformer | allops | wide) ;; *) continue ;; esac
	so=$out/$n.so
	if ! "$MTC" "$model" -o "$so"; then bad "$n: mtc -o $so"; continue; fi
	ok
	"$RUN" "$model" --steps 5 > "$out/$n.interp" || bad "$n: interpreter"
	"$RUN" "$so" --steps 5 > "$out/$n.so.txt" || bad "$n: module"
	MTC_BLAS=0 MTC_THREADS=1 "$RUN" "$so" --steps 5 > "$out/$n.exact1" || bad "$n: module, portable GEMM"
	MTC_BLAS=0 MTC_THREADS=3 "$RUN" "$so" --steps 5 > "$out/$n.exact3" || bad "$n: module, 3 threads"
	# OpenBLAS sums the GEMMs in another order (its kernels depend on the CPU), and training
	# amplifies the rounding: on mobilenet (batch norm over 4 images) about tenfold a step
	# (2e-7, 3e-6, 4e-5 at steps 3-5 on an AVX-512 Xeon), and ResNet's loss, which falls from
	# 1.7 to 0.017 in 5 steps, is 1.2e-5 off at step 2 and 6e-4 off at step 5 there. So the
	# first loss (one forward pass) within 1e-5 relative, the others within 1e-3 of the first
	# loss; the bits are the portable GEMM's check below.
	if paste "$out/$n.interp" "$out/$n.so.txt" | awk '
		/^step/ { k++; a = $4; b = $8; d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a;
		          if (k == 1) s1 = s;
		          if (d > (k == 1 ? 1e-5 * s : 1e-3 * s1) || b ~ /nan|inf/) { print "step " $2 ": " a " vs " b; bad = 1 } }
		END { exit bad || k != 5 }'; then ok; else bad "$n: losses differ by more than 1e-5 relative (step 1) or 1e-3 of the first (the others)"; fi
	# bit-identical with the portable GEMM, for any thread count
	if [ "$(grep ^step "$out/$n.interp")" = "$(grep ^step "$out/$n.exact1")" ]; then ok; else bad "$n: portable GEMM not bit-identical to the interpreter"; fi
	if [ "$(grep ^step "$out/$n.exact1")" = "$(grep ^step "$out/$n.exact3")" ]; then ok; else bad "$n: 1 and 3 threads differ"; fi
	# the measured peak within the plan
	if awk '/^peak_bytes/ { exit !($2 > 0 && $2 <= $4) }' "$out/$n.so.txt"; then ok; else bad "$n: peak_bytes beyond plan_bytes: $(tail -1 "$out/$n.so.txt")"; fi
	# forward outputs, bit for bit
	"$RUN" "$model" --forward --save-outputs "$out/$n.fi.st" > /dev/null &&
	MTC_BLAS=0 "$RUN" "$so" --forward --save-outputs "$out/$n.fs.st" > /dev/null &&
	cmp -s "$out/$n.fi.st" "$out/$n.fs.st" && ok || bad "$n: forward outputs differ from the interpreter's"

	pct=50
	sched=--also-emit=schedule:$out/$n.b.sched     # the module's own plan, one compile
	if ! "$MTC" "$model" $plan --mem-budget=$pct% -o "$out/$n.b.so" "$sched" 2> "$out/$n.b.err"; then
		pct=$(sed -n 's/.*--mem-budget=\([0-9]*\)% or more.*/\1/p' "$out/$n.b.err")
		if [ "$pct" = 100 ]; then
			# nothing to trade: the planner says only the whole unconstrained arena fits
			skip=$((skip + 1)); echo "SKIP: $n: no budget below 100% ($(cat "$out/$n.b.err"))"; continue
		fi
		[ -n "$pct" ] && "$MTC" "$model" $plan --mem-budget=$pct% -o "$out/$n.b.so" "$sched" ||
			{ bad "$n: no budget below 100% builds: $(cat "$out/$n.b.err")"; continue; }
	fi
	ok
	"$RUN" "$out/$n.b.so" --steps 5 > "$out/$n.b.txt" || bad "$n: module under a $pct% budget"
	if [ "$(grep ^step "$out/$n.so.txt")" = "$(grep ^step "$out/$n.b.txt")" ]; then ok; else bad "$n: a $pct% budget changes the losses"; fi
	if awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6) }' "$out/$n.b.txt"; then ok; else bad "$n: over budget: $(tail -1 "$out/$n.b.txt")"; fi
	arena=$(sed -n 's/^peak_live_bytes [0-9]* arena_bytes \([0-9]*\).*/\1/p' "$out/$n.b.sched")
	if awk -v a="$arena" '/^peak_bytes/ { exit !($4 == a) }' "$out/$n.b.txt"; then ok; else bad "$n: plan_bytes is not the schedule's arena $arena"; fi
	echo "$n: budget $pct%: $(tail -1 "$out/$n.b.txt")"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
