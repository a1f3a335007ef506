#!/bin/sh
# tsan.sh: the runtime (DMA engine, accelerator threads) and generated modules built with
# -fsanitize=thread, the examples run for 2 steps, unplanned and planned (swaps on the DMA
# engine), with 4 accelerator threads. Not part of make check (it rebuilds the runtime);
# usage: tests/limits/tsan.sh BUILDDIR (a configured build with mtc built).
b=${1:?usage: tsan.sh BUILDDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$b/tests/out/tsan
CC=${CC:-cc}
F="-fsanitize=thread -g -O1 -fPIC -ffp-contract=off"
mkdir -p "$out" || exit 1
pass=0 fail=0
# the portable GEMM: OpenBLAS's own threads are not instrumented
export MTC_BLAS=0 MTC_THREADS=4 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
objs=
blas=; grep -q '^#define HAVE_CBLAS 1' "$b/config.h" && blas=-lopenblas
for f in device dma pool kernels init; do
	$CC $F -std=c11 -D_GNU_SOURCE -I"$b" -I"$src/runtime" -c "$src/runtime/$f.c" -o "$out/$f.o" || exit 1
	objs="$objs $out/$f.o"
done
$CC $F -I"$src/runtime" "$src/tests/limits/steps.c" -ldl -o "$out/steps" || exit 1
for ex in mlp skipnet transformer; do
	for plan in none 60%; do
		name=$ex-$(echo $plan | tr -d %)
		opt=; [ "$plan" = none ] || opt="--mem-budget=$plan"
		"$b/mtc" "$src/examples/$ex.tdsl" $opt --emit=c -o "$out/$name.c" &&
		$CC $F -shared -I"$src/runtime" "$out/$name.c" "$out/$name-dev.c" $objs $blas -lm -lpthread \
			-o "$out/$name.so" &&
		"$out/steps" "$out/$name.so" 2 > "$out/$name.log" 2>&1
		if [ $? = 0 ] && ! grep -q "ThreadSanitizer" "$out/$name.log"; then
			pass=$((pass + 1))
		else
			echo "FAIL: $name:"; grep -A30 "WARNING: ThreadSanitizer" "$out/$name.log" | head -60
			fail=$((fail + 1))
		fi
	done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
