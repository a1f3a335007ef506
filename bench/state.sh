#!/bin/sh
# state.sh: params, gradients and optimizer state under the budget: for every example and the
# state-heavy ones, under the mt3000 cost model and a CUDA one with PCIe 5 copies (50 GB/s,
# --copy-bw=50e9): the smallest budget the planner meets with params and state on the
# accelerator (--offload=none) and where it may move them (the default), and the modeled
# overhead at 50%, 35% and 25% of the unconstrained arena, with what moved. A Markdown table
# on standard output (make bench-state puts it in bench/results/state.md). Not a test: the
# figures are the cost model's, the same on every machine; compile seconds are wall-clock.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
tmp=${TMPDIR:-/tmp}/mtc-bench-state.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# The smallest budget, as the infeasible budget's error states it (percent, one decimal).
floor() {
	"$MTC" "$@" --mem-budget=1% -o /dev/null 2>&1 |
		sed -n 's/.*the smallest arena the planner reaches is [0-9]* bytes (\([0-9.]*\)%.*/\1/p'
}

# "overhead (what moved, compile s)" at a budget, or "does not fit".
at() {
	pct=$1; shift
	t0=$(date +%s.%N)
	if "$MTC" "$@" --mem-budget=$pct% --emit=schedule -o "$tmp/s" 2>/dev/null; then
		t1=$(date +%s.%N)
		awk -v s="$(echo "$t1 - $t0" | bc)" '
			/^overhead / { o = $2 }
			/^params_in_host_bytes / { p = $2 } /^state_in_host_bytes / { st = $2 }
			/^updates_on_host / { u = $2 } /^placed_by / { pb = $2 }
			END { m = "";
			      if (p) m = m sprintf("params %.1f MiB", p / 1048576);
			      if (st) m = m (m ? ", " : "") sprintf("state %.1f MiB", st / 1048576);
			      if (u) m = m (m ? ", " : "") u " updates on the host";
			      if (pb == "ilp") m = m (m ? ", " : "") "placed by the ILP";
			      printf "%s (%s%s%.1f s)", o, m, m ? "; " : "", s }' "$tmp/s"
	else
		printf 'does not fit'
	fi
}

echo "| model | cost model | params + state / arena | smallest budget, on the accelerator | smallest budget, moved | 50% | 35% | 25% |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for m in mlp classifier skipnet transformer gpt widemlp; do
	f=$src/examples/$m.tdsl
	for tg in mt3000 cuda; do
		set -- "$f" --target=$tg
		[ $tg = cuda ] && set -- "$@" --copy-bw=50e9
		share=$("$MTC" "$@" --emit=h -o - | awk '
			/ arena \.\.\./ { a = $4 } / params \.\.\./ { p = $4 } / optimizer state \.\.\./ { s = $5 }
			END { printf "%.0f%%", 100 * (p + s) / a }')
		name=$tg; [ $tg = cuda ] && name="cuda, PCIe 5"
		echo "| $m | $name | $share | $(floor "$@" --offload=none --solver=tso)% | $(floor "$@" --solver=tso)% | $(at 50 "$@") | $(at 35 "$@") | $(at 25 "$@") |"
	done
done
