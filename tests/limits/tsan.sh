#!/bin/sh
# tsan.sh: the runtime (DMA engine, accelerator threads) and generated modules built with
# -fsanitize=thread, the examples run for 2 steps, unplanned and planned (swaps on the DMA
# engine), with 4 accelerator threads: no race, no deadlock report.
# In make check; skipped in sanitizer builds (their runtime is ASan's; CI runs this in the
# plain build) and where the compiler cannot build or run a TSan program.
# usage: tests/limits/tsan.sh [BUILDDIR] (a configured build with mtc built)
b=${1:-${top_builddir:-.}}
src=${top_srcdir:-$(dirname "$0")/../..}
src=$(cd "$src" && pwd)
out=$b/tests/out/tsan
CC=${CC:-cc}
F="-fsanitize=thread -g -O1 -fPIC -ffp-contract=off"
mkdir -p "$out" || exit 1
skip() { echo "skipped: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
if nm "$b/mtc" 2>/dev/null | grep -q __asan_init; then
	skip "sanitizer build (TSan and ASan exclude each other)"
fi
printf '#include <pthread.h>\nstatic void *f(void *p) { return p; }\nint main(void) { pthread_t t; return pthread_create(&t, 0, f, 0) || pthread_join(t, 0); }\n' > "$out/probe.c"
$CC $F "$out/probe.c" -lpthread -o "$out/probe" >/dev/null 2>&1 && "$out/probe" >/dev/null 2>&1 ||
	skip "$CC cannot build or run a -fsanitize=thread program here"
pass=0 fail=0
# the portable GEMM: OpenBLAS's own threads are not instrumented
export MTC_BLAS=0 MTC_THREADS=4 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
objs=
blas=; grep -q '^#define HAVE_CBLAS 1' "$b/config.h" && blas=-lopenblas
# libmtcrt's C files, as runtime/local.mk lists them, but for the collectives (comm.c, dp.c:
# MPI's, which only data-parallel modules link; the examples here are not)
for f in $(awk '/^runtime_libmtcrt_a_SOURCES/ { on = 1 }
	on { for (i = 1; i <= NF; i++) if ($i ~ /\.c$/ && $i !~ /\/(comm|dp)\.c$/) print $i; if ($NF != "\\") on = 0 }' \
	"$src/runtime/local.mk"); do
	o=$out/$(basename "$f" .c).o
	$CC $F -std=c11 -D_GNU_SOURCE -I"$b" -I"$src/runtime" -c "$src/$f" -o "$o" || exit 1
	objs="$objs $o"
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
			echo "$name: clean, $(grep -c "= swap_" "$out/$name.c") swaps on the DMA engine"
		else
			echo "FAIL: $name:"; grep -A30 "WARNING: ThreadSanitizer" "$out/$name.log" | head -60
			fail=$((fail + 1))
		fi
	done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
