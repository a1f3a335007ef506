#!/bin/sh
# sync.sh: the stream events of CUDA modules with swaps (every example under budgets that make
# the plan swap), checked by tests/cuda/sync on the generated LLVM IR; no GPU needed.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
# the checker reads the host code only: no NVRTC (a third of a CNN's compile; docs/cuda.md)
MTC_TEST_NO_NVRTC=1
export MTC_TEST_NO_NVRTC
out=$top_builddir/tests/cuda/out-sync
rm -rf "$out" && mkdir -p "$out"
set --
# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): three examples, tso at 50% and 60%
for e in "$top_srcdir"/examples/*.tdsl; do
	n=$(basename "$e" .tdsl)
	bss="50%:auto 50%:tso 60%:tso 70%:tso"
	# the CNNs' steps (about 1000 ops) take the longest to compile: one tso plan each here
	# (tests/cuda/cnn.sh has more), the ILP's takes minutes
	case $n in resnet | mobilenet) bss="50%:tso" ;; esac
	[ -z "${MTC_QUICK:-}" ] || { case $n in mlp | skipnet | transformer) ;; *) continue ;; esac; bss="50%:tso 60%:tso"; }
	for bs in $bss; do
		b=${bs%:*} s=${bs#*:} f=$out/$n-$b-${bs#*:}
		o="--target=cuda --mem-budget=$b --solver=$s"
		# the host IR from the model as mtc builds it, in the compile that writes the planned
		# IR (--also-emit); for the slow ILP, from the planned IR. A budget a model cannot
		# meet is not this test's business.
		also=; [ "$s" = tso ] && also=--also-emit=llvm:$f.ll
		if ! "$MTC" "$e" $o --emit=ir -o "$f.mir" $also 2>"$f.err"; then
			grep -q "budget" "$f.err" && continue
			echo "FAIL: $n $o: $(head -1 "$f.err")"
			echo "0 passed, 1 failed"
			exit 1
		fi
		if [ "$s" != tso ] && ! "$MTC" "$f.mir" --target=cuda --emit=llvm -o "$f.ll"; then
			echo "FAIL: $n $o: --emit=llvm"
			echo "0 passed, 1 failed"
			exit 1
		fi
		set -- "$@" "$f.mir" "$f.ll"
	done
done
# race.mir: a plan of the transformer at 50% (--solver=auto on a loaded machine) that once
# came out with unordered copies: mtc rescheduled the planned .mir it was given, moving ops
# against the plan's copies. A planned .mir now compiles in its own order.
"$MTC" "$top_srcdir/tests/cuda/race.mir" --target=cuda --emit=llvm -o "$out/race.ll" || {
	echo "FAIL: race.mir: --emit=llvm"; echo "0 passed, 1 failed"; exit 1; }
set -- "$@" "$top_srcdir/tests/cuda/race.mir" "$out/race.ll"
# Random valid plans (random keep, recompute and swap, swaps placed anywhere from memory to
# time; tests/cuda/randplan.c), each compiled in its own order and checked the same way.
# MTC_QUICK: 6 plans of each of the three examples above
if [ -z "${MTC_QUICK:-}" ]; then
	"$top_builddir/tests/cuda/randplan" "$out" "${MTC_RANDPLAN_SEED:-1}" "${MTC_RANDPLAN_N:-12}" \
		"$top_srcdir"/examples/*.tdsl >"$out/randplan.log"
else
	"$top_builddir/tests/cuda/randplan" "$out" "${MTC_RANDPLAN_SEED:-1}" "${MTC_RANDPLAN_N:-6}" \
		"$top_srcdir"/examples/mlp.tdsl "$top_srcdir"/examples/skipnet.tdsl \
		"$top_srcdir"/examples/transformer.tdsl >"$out/randplan.log"
fi || { cat "$out/randplan.log"; exit 1; }
for f in "$out"/*-[0-9]*.mir; do
	case $f in *%*) continue ;; esac
	"$MTC" "$f" --target=cuda --emit=llvm -o "${f%.mir}.ll" || {
		echo "FAIL: $f: --emit=llvm"; echo "0 passed, 1 failed"; exit 1; }
	set -- "$@" "$f" "${f%.mir}.ll"
done
"$top_builddir/tests/cuda/sync" "$@"
