#!/bin/sh
# state.sh: optimizer state living in host memory (the planner's swap_in/swap_home around
# each update, docs/planner.md). For models whose state the planner moves home at a small
# budget (mlp with momentum, the transformer and allops with Adam): the schedule says how
# many bytes live in host memory; 5 steps with check mode on and the portable GEMM give the
# same losses and the same params, bit for bit, as the module without a budget; the measured
# peak is within the budget; the planned IR prints, parses back and runs in the interpreter
# to the same losses.
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/state
mkdir -p "$out" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
export MTC_CHECK=1 MTC_BLAS=0
# tso: auto's ILP takes minutes to give up on allops at 50% before the state moves home
plan=--solver=tso

while read -r n model pct; do
	m=$src/$model
	"$MTC" "$m" -o "$out/$n.so" && "$RUN" "$out/$n.so" --steps 5 --save-params "$out/$n.p0" > "$out/$n.t0" ||
		{ bad "$n: unplanned module"; continue; }
	if ! "$MTC" "$m" $plan --mem-budget=$pct% -o "$out/$n.b.so" 2> "$out/$n.err"; then
		bad "$n: --mem-budget=$pct%: $(cat "$out/$n.err")"; continue
	fi
	ok
	"$MTC" "$m" $plan --mem-budget=$pct% --emit=schedule -o "$out/$n.sched" &&
	h=$(sed -n 's/^state_in_host_bytes //p' "$out/$n.sched") && [ "${h:-0}" -gt 0 ] &&
		ok || bad "$n: at $pct% no optimizer state lives in host memory"
	"$RUN" "$out/$n.b.so" --steps 5 --save-params "$out/$n.p1" > "$out/$n.t1" || bad "$n: planned module"
	[ "$(grep ^step "$out/$n.t0")" = "$(grep ^step "$out/$n.t1")" ] && ok ||
		bad "$n: losses differ from the unplanned module's"
	cmp -s "$out/$n.p0" "$out/$n.p1" && ok || bad "$n: params differ from the unplanned module's"
	awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6) }' "$out/$n.t1" && ok ||
		bad "$n: over budget: $(tail -1 "$out/$n.t1")"
	"$MTC" "$m" $plan --mem-budget=$pct% --emit=ir -o "$out/$n.mir" &&
	"$MTC" "$out/$n.mir" --emit=ir -o "$out/$n.2.mir" && cmp -s "$out/$n.mir" "$out/$n.2.mir" && ok ||
		bad "$n: the planned IR does not print back the same"
	grep -q ' = swap_home %' "$out/$n.mir" && grep -q '^state .* host' "$out/$n.mir" && ok ||
		bad "$n: no swap_home or host state in the IR"
	"$RUN" "$out/$n.mir" --steps 5 > "$out/$n.ti" &&
	[ "$(grep ^step "$out/$n.t0")" = "$(grep ^step "$out/$n.ti")" ] && ok ||
		bad "$n: the interpreter on the planned IR gives other losses"
done <<EOT
mlp examples/mlp.tdsl 25
transformer examples/transformer.tdsl 25
allops tests/backend/allops.tdsl 50
EOT
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
