#!/bin/sh
# cli.sh: the planner from the command line: the schedule's summary, dumps, and the errors of
# budgets that cannot be met (a message, exit status 1, never a crash).
pass=0 fail=0
ex=$top_srcdir/examples
tmp=${TMPDIR:-/tmp}/mtc-planner-cli.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL $*"; }

# $1 what, $2 expected exit status, $3 text the output must hold; the rest: mtc's arguments
expect() {
	what=$1 want=$2 text=$3
	shift 3
	"$MTC" "$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		no "$what: exit status $got, not $want"; sed 's/^/  /' "$tmp/out" | tail -3
	elif ! grep -q -- "$text" "$tmp/out"; then
		no "$what: no '$text' in the output"; sed 's/^/  /' "$tmp/out" | tail -3
	else
		ok
	fi
}

for s in chen tso auto; do
	expect "mlp $s summary" 0 "^solver \(chen\|tso\|ilp\)" "$ex/mlp.tdsl" -D B=256 --mem-budget=85% \
		--solver=$s --solver-time=2 --emit=schedule
done
expect "overhead line" 0 "^overhead " "$ex/skipnet.tdsl" -D B=256 --mem-budget=75% --solver=tso --emit=schedule
expect "ilp gap line" 0 "^ilp_gap " "$ex/skipnet.tdsl" -D B=256 --mem-budget=60% --solver=ilp \
	--solver-time=5 --emit=schedule
expect "rec or mem ops in the IR" 0 "^  \(rec\|mem\) " "$ex/skipnet.tdsl" -D B=256 --mem-budget=60% --solver=tso --emit=ir
expect "infeasible budget" 1 "cannot be met: the smallest arena the planner reaches is" \
	"$ex/mlp.tdsl" --mem-budget=10% --solver=tso --emit=ir
expect "infeasible budget names a percentage" 1 "mem-budget=[0-9]*% or more" \
	"$ex/transformer.tdsl" --mem-budget=1K --solver=tso --emit=ir
# with micro-batches a percentage is of the step on the whole batch at once, which the floor
# (2 micro-batches' gradients summed, state kept on the accelerator) exceeds: its hint in bytes
expect "infeasible budget with micro-batches: of the whole step, hint in bytes" 1 \
	"(20.0% of the unconstrained arena of 274368, the step on the whole batch at once) cannot be met: .* bytes (1[0-9][0-9].[0-9]%; --mem-budget=[0-9]* or more)" \
	"$ex/mlp.tdsl" -D B=48 -D L=4 --micro-batches=2 --offload=none --mem-budget=20% --solver=tso --emit=ir
expect "infeasible budget: what holds the peak" 1 "at its peak .* bytes of inputs, .* in host memory between steps: [0-9]* bytes of params and [0-9]* bytes of optimizer state" \
	"$ex/mlp.tdsl" --mem-budget=1K --solver=auto --solver-time=2 --emit=ir
expect "chen that does not fit is an error" 1 "solver=chen: sqrt(n) checkpointing needs an arena of" \
	"$ex/transformer.tdsl" --mem-budget=1K --solver=chen --emit=ir
# The floor does not depend on the budget asked for (nor on the solver).
floor() { "$MTC" "$ex/$1" --mem-budget="$2" --solver="$3" --solver-time=2 --emit=ir -o /dev/null 2>&1 |
	sed -n 's/.*the smallest arena the planner reaches is \([0-9]*\) bytes.*/\1/p'; }
for m in mlp.tdsl skipnet.tdsl; do
	a=$(floor $m 1K tso) b=$(floor $m 5% auto) c=$(floor $m 15% ilp)
	if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]; then ok; else no "$m floor: '$a' '$b' '$c'"; fi
done
# The layout's search for the budget (layout_to): skipnet under the CUDA cost model with PCIe 5
# copies has a floor plan whose greedy layout leaves 246 KB of 1.6 MB unused (27.1% of the
# arena); searched, 25% fits, the floor the error names is within 4 KB of the bytes alive at
# its peak, and a budget of the percentage it names builds.
cu="--target=cuda --copy-bw=50e9 --solver=tso"
"$MTC" "$ex/skipnet.tdsl" $cu --mem-budget=25% --emit=schedule -o "$tmp/sk" 2>"$tmp/sk.err" &&
	grep -q '^# layout searched for the budget' "$tmp/sk" &&
	awk '/^arena_bytes /{a=$2} /^budget_bytes /{b=$2} END{exit !(a > 0 && a + 0 <= b + 0)}' "$tmp/sk" && ok ||
	no "skipnet, CUDA cost model, 25%: $(cat "$tmp/sk.err"; grep -E '^(arena|budget)_bytes' "$tmp/sk" | tr '\n' ' ')"
"$MTC" "$ex/skipnet.tdsl" $cu --mem-budget=1% --emit=ir -o /dev/null 2>"$tmp/sk1.err"
pct=$(sed -n 's/.*--mem-budget=\([0-9]*\)% or more.*/\1/p' "$tmp/sk1.err")
frag=$(sed -n 's/.*, and \([0-9]*\) bytes of layout fragmentation.*/\1/p' "$tmp/sk1.err")
[ -n "$frag" ] && [ "$frag" -lt 4096 ] && [ -n "$pct" ] && [ "$pct" -le 25 ] && ok ||
	no "skipnet, CUDA cost model, floor: $(cat "$tmp/sk1.err")"
"$MTC" "$ex/skipnet.tdsl" $cu --mem-budget="$pct%" --emit=ir -o /dev/null 2>"$tmp/skp.err" && ok ||
	no "skipnet, CUDA cost model, at the floor's $pct%: $(cat "$tmp/skp.err")"
# Weights' gradients made early (plan_hoist_grads): the GPT with Adam under the CUDA cost model
# at 50% moves most of its params and state to host memory; in the list schedule's order their
# gradients, copies and host updates all come after the backward (18.4% modeled overhead), in
# the order with the gradients moved up they overlap it: that order is taken, at most 10%.
"$MTC" "$ex/gpt.tdsl" --target=cuda --copy-bw=50e9 --mem-budget=50% --emit=schedule -o "$tmp/gpt" 2>"$tmp/gpt.err" &&
	grep -q '^early_gradient_ops [1-9]' "$tmp/gpt" &&
	awk '/^overhead /{o=$2+0} END{exit !(o <= 10)}' "$tmp/gpt" && ok ||
	no "gpt, CUDA cost model, 50%: $(cat "$tmp/gpt.err"; grep -E '^(overhead|early)' "$tmp/gpt" | tr '\n' ' ')"
# Below the budgets placed for time (here the recompute-only floor of the CPU cost model, whose
# copies take 263 ms per activation), only some swaps are placed for memory: the all-tight
# plan's overhead was 10677%; the mixed plan's is about 127% and must fit.
"$MTC" "$ex/transformer.tdsl" --target-flops=3e9 --target-bw=10e9 --copy-bw=1e6 --copy-latency=1e-3 \
	--launch=5e-6 --solver=tso --mem-budget=78% --emit=schedule -o "$tmp/s" 2>/dev/null
if awk '/^overhead /{o=$2+0} /^arena_bytes /{a=$2} /^budget_bytes /{b=$2}
	END{exit !(o != "" && o < 200 && a + 0 <= b + 0 && a > 0)}' "$tmp/s"; then
	ok
else
	no "transformer 78% under the CPU model: $(grep -E '^(overhead|arena_bytes|budget_bytes)' "$tmp/s" | tr '\n' ' ')"
fi
expect "solver none over budget" 1 "solver=none plans nothing" "$ex/mlp.tdsl" -D B=256 \
	--mem-budget=50% --solver=none --emit=ir
expect "no budget, no plan" 0 "peak_live_bytes" "$ex/mlp.tdsl" --solver=tso --emit=schedule
cat >"$tmp/inf.tdsl" <<'M'
model inf {
  input x : f32[4, 8];
  param w : f32[8, 8] = normal(0.0, 0.1);
  y = relu(x @ w);
  output y;
}
M
expect "forward-only over budget" 1 "plans training steps only" "$tmp/inf.tdsl" --mem-budget=16 --emit=ir
expect "forward-only within budget" 0 "func forward" "$tmp/inf.tdsl" --mem-budget=1M --emit=ir

# --dump-dir holds the planned IR; it parses back and plans again without trouble.
if "$MTC" "$ex/skipnet.tdsl" -D B=256 --mem-budget=60% --solver=tso --dump-dir="$tmp/d" --emit=ir \
	-o "$tmp/p.mir" 2>"$tmp/err" && ls "$tmp/d" | grep -q -- "-plan.mir$"; then ok; else no "dump of the plan"; fi
# (what is left may not shrink further: a plan or the error, never a crash)
"$MTC" "$tmp/p.mir" --mem-budget=95% --solver=tso --emit=schedule >"$tmp/out" 2>&1
st=$?
if { [ $st = 0 ] && grep -q "^solver" "$tmp/out"; } || { [ $st = 1 ] && grep -q "cannot be met" "$tmp/out"; }; then
	ok
else
	no "a planned step plans again: exit status $st"; tail -3 "$tmp/out"
fi

# Where params and state may move, the planner tries the step in two orders, each with its
# own placement; the second order's step was once copied while the first's placement was
# marked, so its problem saw params in host memory that its plans kept on the accelerator
# (measured there, the plans missed budgets they met). prob_new now refuses such a step.
expect "two orders, each its placement (mlp L=4)" 0 "^overhead" "$ex/mlp.tdsl" -D L=4 \
	--copy-bw=1e3 --copy-latency=1 --mem-budget=50% --solver=tso --emit=schedule
expect "two orders, each its placement (widemlp, PCIe 5, 25%)" 0 "^params_in_host_bytes" \
	"$ex/widemlp.tdsl" --target=cuda --copy-bw=50e9 --mem-budget=25% --solver=tso --emit=schedule

# The ILP decides where params and state live, around the search's placement: on widemlp
# under PCIe 5 copies at 50% its placement is faster than the search's (305% over the
# unplanned step; every param in host memory) and meets the budget; tso's is the search's.
sched() { "$MTC" "$ex/widemlp.tdsl" --target=cuda --copy-bw=50e9 --mem-budget=50% --emit=schedule "$@"; }
if sched --solver=ilp -o "$tmp/ilp.s" 2>"$tmp/err" && sched --solver=tso -o "$tmp/tso.s" 2>>"$tmp/err"; then
	v() { sed -n "s/^$1 //p" "$2"; }
	if [ "$(v placed_by "$tmp/ilp.s")" = ilp ] && [ "$(v placed_by "$tmp/tso.s")" = search ] &&
	   awk -v a="$(v modeled_step_s "$tmp/ilp.s")" -v b="$(v modeled_step_s "$tmp/tso.s")" \
	       -v ar="$(v arena_bytes "$tmp/ilp.s")" -v bu="$(v budget_bytes "$tmp/ilp.s")" \
	       'BEGIN { exit !(a < b && ar <= bu) }'; then
		ok
	else
		no "the ILP's placement: $(grep -E '^(placed_by|modeled_step_s|arena_bytes|budget_bytes) ' "$tmp/ilp.s" "$tmp/tso.s" | tr '\n' ' ')"
	fi
else
	no "the ILP's placement: $(tail -2 "$tmp/err")"
fi

# With params and state placed (skipnet at 50%, mt3000): --solver=ilp plans the activations of
# the step as placed with the ILP too; the plan fits. What it proves is measured: its plans
# swap, and its relaxation's bound stays below them, so no gap of 0 is claimed; but the bound
# is one, and the plan taken, the ILP's start, is in its program: its gap is reported, neither
# "-" (before 2026-12-02) nor 100% (53.7%, the bound 56.4 us over the step as placed). Where
# the activations cost nothing as placed (widemlp), gap 0; under cuda too, where the copies of
# the activations share the engine with the params' fetches: the program's clock sees that,
# and its optimum, proved at the root, measures at its bound. Unplaced (skipnet on cuda), the
# program's plans are clocked as measured but nothing is proved: a limit ends the search, the
# gap is not 0 (before the clock, its optimum was priced at 0 and read "optimal"); but a bound
# above the unplanned step is proved, so the gap is not 100% either (before the engine's rows,
# the relaxation's bound stayed at 0 us over the step). On the placed step the gap is under
# 50% with one row per hazard of Checkmate's FREE (48.7%; 53.7% with them summed into one).
v() { sed -n "s/^$1 //p" "$2"; }
if "$MTC" "$ex/skipnet.tdsl" --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/sk.s" 2>"$tmp/err"; then
	if [ -n "$(v placed_by "$tmp/sk.s")" ] && [ "$(v ilp_gap "$tmp/sk.s")" != 0.0000% ] &&
	   [ "$(v ilp_gap "$tmp/sk.s")" != - ] &&
	   awk -v g="$(v ilp_gap "$tmp/sk.s" | tr -d %)" 'BEGIN { exit !(g > 0 && g < 50) }' &&
	   [ "$(v arena_bytes "$tmp/sk.s")" -le "$(v budget_bytes "$tmp/sk.s")" ]; then
		ok
	else
		no "the ILP on a placed step: $(grep -E '^(solver|placed_by|ilp_stop|ilp_gap|arena_bytes|budget_bytes) ' "$tmp/sk.s" | tr '\n' ' ')"
	fi
else
	no "the ILP on a placed step: $(tail -2 "$tmp/err")"
fi
if "$MTC" "$ex/widemlp.tdsl" --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/wm.s" 2>"$tmp/err" &&
   [ -n "$(v placed_by "$tmp/wm.s")" ] && [ "$(v ilp_gap "$tmp/wm.s")" = 0.0000% ]; then
	ok
else
	no "the ILP on a placed step that costs nothing: $(grep -E '^(solver|placed_by|ilp_stop|ilp_gap) ' "$tmp/wm.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi
if "$MTC" "$ex/skipnet.tdsl" --target=cuda --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/skc.s" 2>"$tmp/err" &&
   case $(v ilp_stop "$tmp/skc.s") in "node limit"|"iteration limit") true;; *) false;; esac &&
   [ "$(v ilp_gap "$tmp/skc.s")" != 0.0000% ] && [ "$(v ilp_gap "$tmp/skc.s")" != - ] &&
   [ "$(v ilp_gap "$tmp/skc.s")" != 100.0000% ]; then
	ok
else
	no "the gap as measured: $(grep -E '^(solver|ilp_stop|ilp_gap) ' "$tmp/skc.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi
# The engine's rows rounded (window_rows): where a window's compute has room for k copies and
# a fraction, every plan waits or swaps fewer. skipnet at 35% under mt3000 (one engine both
# ways): the relaxation's bound holds tso's plan within 50% of its overhead (100% before the
# engine's rows, 70% without the rounding). auto reports it too: tso's plan, its start, is a
# plan of the program (before, "-").
for s in ilp auto; do
	if "$MTC" "$ex/skipnet.tdsl" --mem-budget=35% --solver=$s --emit=schedule -o "$tmp/sk35.s" 2>"$tmp/err" &&
	   g=$(v ilp_gap "$tmp/sk35.s" | tr -d %) && [ "$g" != - ] &&
	   awk -v g="$g" 'BEGIN { exit !(g > 0 && g < 50) }'; then
		ok
	else
		no "the rounded engine's bound ($s): $(grep -E '^(solver|overhead|ilp_stop|ilp_gap) ' "$tmp/sk35.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
	fi
done
if "$MTC" "$ex/widemlp.tdsl" --target=cuda --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/wmc.s" 2>"$tmp/err" &&
   [ "$(v solver "$tmp/wmc.s")" = ilp ] && [ "$(v ilp_stop "$tmp/wmc.s")" = optimal ] &&
   [ "$(v ilp_gap "$tmp/wmc.s")" = 0.0000% ]; then
	ok
else
	no "the clock's proof on a placed step under cuda: $(grep -E '^(solver|placed_by|ilp_stop|ilp_gap) ' "$tmp/wmc.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi
# The host's thread in the clock (host_update) and the plan taken as the ILP's start: the
# classifier at 50% under mt3000, its updates on the host, is proved optimal as placed (before
# the host's clock its plan measured above the program's objective; from tso's plan, the start
# before, GLPK's bound did not reach it in 1000 nodes).
if "$MTC" "$ex/classifier.tdsl" --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/cl.s" 2>"$tmp/err" &&
   [ "$(v updates_on_host "$tmp/cl.s")" -gt 0 ] && [ "$(v solver "$tmp/cl.s")" = ilp ] &&
   [ "$(v ilp_stop "$tmp/cl.s")" = optimal ] && [ "$(v ilp_gap "$tmp/cl.s")" = 0.0000% ]; then
	ok
else
	no "the clock's proof with updates on the host: $(grep -E '^(solver|placed_by|updates_on_host|ilp_stop|ilp_gap) ' "$tmp/cl.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi
# The start's swaps placed as it places them: the classifier at 50% under cuda, placed, is
# proved optimal (its plan's swap_ins, one op later than plan_place_swap's, read as 47 KiB
# over the budget in the program, which then searched from nothing and proved nothing).
if "$MTC" "$ex/classifier.tdsl" --target=cuda --mem-budget=50% --solver=ilp --emit=schedule -o "$tmp/clc.s" 2>"$tmp/err" &&
   [ "$(v swapped_values "$tmp/clc.s")" -gt 0 ] && [ "$(v solver "$tmp/clc.s")" = ilp ] &&
   [ "$(v ilp_stop "$tmp/clc.s")" = optimal ] && [ "$(v ilp_gap "$tmp/clc.s")" = 0.0000% ]; then
	ok
else
	no "the start's swap placements in the program: $(grep -E '^(solver|placed_by|swapped_values|ilp_stop|ilp_gap) ' "$tmp/clc.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi
# With a time limit the same (about 1 s of a minute's limit): GLPK's proximity search, which
# runs only with a time, took another optimum of a placement round's program, which measured
# slower (2.71% over the step, nothing proved).
if "$MTC" "$ex/classifier.tdsl" --target=cuda --mem-budget=50% --solver=ilp --solver-time=60 --emit=schedule -o "$tmp/clt.s" 2>"$tmp/err" &&
   [ "$(v overhead "$tmp/clt.s")" = "$(v overhead "$tmp/clc.s")" ] && [ "$(v ilp_gap "$tmp/clt.s")" = 0.0000% ]; then
	ok
else
	no "the placement with a time limit: $(grep -E '^(solver|placed_by|overhead|ilp_stop|ilp_gap) ' "$tmp/clt.s" | tr '\n' ' ') against $(v overhead "$tmp/clc.s") $(tail -2 "$tmp/err")"
fi
# With a time limit the ILP on the step as placed gets its share: skipnet under mt3000 at 50%,
# whose ILP on the step with everything on the accelerator never ends, left it 0.1 s (the
# trace's last program; it then reported ilp_gap 100%, against 53.7% without a limit).
lim=$(MTC_ILP_TRACE=1 "$MTC" "$ex/skipnet.tdsl" --target=mt3000 --mem-budget=50% --solver=ilp \
	--solver-time=6 --emit=schedule -o /dev/null 2>&1 |
	sed -n 's/^ilp: .* nonzeros; time limit \([0-9.]*\) s$/\1/p' | tail -1)
if [ -n "$lim" ] && awk -v l="$lim" 'BEGIN { exit !(l >= 1) }'; then ok; else no "the ILP as placed, --solver-time=6: limit '$lim' s"; fi
# auto places by the ILP on a step over 250 ops where the search's plan costs 10% or more:
# ResNet at 50% (the search's placement, tso's, costs 31%)
pct() { v overhead "$1" | tr -d %; }
if "$MTC" "$ex/resnet.tdsl" --mem-budget=50% --emit=schedule -o "$tmp/rn.s" 2>"$tmp/err" &&
   "$MTC" "$ex/resnet.tdsl" --mem-budget=50% --solver=tso --emit=schedule -o "$tmp/rnt.s" 2>>"$tmp/err" &&
   [ "$(v placed_by "$tmp/rn.s")" = ilp ] && [ "$(v placed_by "$tmp/rnt.s")" = search ] &&
   awk -v a="$(pct "$tmp/rn.s")" -v t="$(pct "$tmp/rnt.s")" 'BEGIN { exit !(t >= 10 && a < t) }'; then
	ok
else
	no "auto's ILP placement on a larger step: $(grep -hE '^(placed_by|overhead) ' "$tmp/rn.s" "$tmp/rnt.s" | tr '\n' ' ') $(tail -2 "$tmp/err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
