#!/bin/sh
# determinism.sh: without --solver-time no limit of the planner reads a clock, so the same
# compile gives the same bytes on any machine at any load: each compile runs twice, the
# first in one process (--jobs=1), the second in up to three (the placement search's trials
# side by side) beside two busy loops (as many as this CI machine has cores), and the IR and
# the schedule must be byte-identical.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
tmp=${TMPDIR:-/tmp}/mtc-determ.$$
trap 'kill $busy 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
pass=0 fail=0 busy=
# CI's sanitizer run (MTC_QUICK=1, docs/reliability.md): the bytes a compile writes are the
# plain run's business; these compiles' paths are tests/planner/cli.sh's and plan-test's
if [ -n "${MTC_QUICK:-}" ]; then
	echo "skipped: determinism is checked in the plain build"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
fi
ex=$top_srcdir/examples
run() { # out-prefix jobs args...
	p=$1 j=$2; shift 2
	"$MTC" "$@" --jobs="$j" --emit=ir -o "$p.mir" --also-emit=schedule:"$p.s"
}
set -- "skipnet-auto $ex/skipnet.tdsl --mem-budget=35%" \
       "mlp-ilp $ex/mlp.tdsl --mem-budget=35% --solver=ilp" \
       "transformer-auto $ex/transformer.tdsl --mem-budget=50%" \
       "skipnet-cuda-ilp $ex/skipnet.tdsl --target=cuda --mem-budget=50% --solver=ilp"
for c in "$@"; do
	n=${c%% *} a=${c#* }
	# shellcheck disable=SC2086
	run "$tmp/$n.a" 1 $a || { fail=$((fail + 1)); echo "FAIL: $n: mtc"; continue; }
	sh -c 'while :; do :; done' & b1=$!
	sh -c 'while :; do :; done' & b2=$!
	busy="$b1 $b2"
	# shellcheck disable=SC2086
	run "$tmp/$n.b" 3 $a
	kill $b1 $b2 2>/dev/null
	wait $b1 $b2 2>/dev/null
	busy=
	for k in mir s; do
		if cmp -s "$tmp/$n.a.$k" "$tmp/$n.b.$k"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "FAIL: $n: the .$k differs under load with --jobs=3"
			diff "$tmp/$n.a.$k" "$tmp/$n.b.$k" | head -5
		fi
	done
	grep -q '^ilp_stop ' "$tmp/$n.a.s" && ! grep -q '^solve_s ' "$tmp/$n.a.s" &&
		pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $n: the schedule should say ilp_stop and no solve_s"; }
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
