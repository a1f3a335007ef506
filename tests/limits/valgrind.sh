#!/bin/sh
# valgrind.sh: a full compile (mtc examples/mlp.tdsl -o mlp.so) and a module's create, steps
# and destroy (mtc-run) under valgrind: no invalid access, no definite or indirect leak.
# Skipped without valgrind and in sanitizer builds (ASan and valgrind exclude each other).
# The modules valgrind runs are built for a baseline CPU (MTC_MARCH=x86-64-v2, SSE4.2): with
# the default -march=native an AVX-512 machine gives instructions valgrind 3.19 cannot run.
MTC=${MTC:-./mtc}
RUN=${top_builddir:-.}/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/limits
mkdir -p "$out" || exit 1
if ! command -v valgrind >/dev/null 2>&1; then
	echo "valgrind not found"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
if nm "$MTC" 2>/dev/null | grep -q __asan_init; then
	echo "sanitizer build"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
pass=0 fail=0
vg() {
	name=$1
	shift
	if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect "$@" > "$out/vg-$name.log" 2>&1; then
		pass=$((pass + 1))
	else
		echo "FAIL: valgrind $name:"; grep -A12 '==[0-9]*== [A-Z]' "$out/vg-$name.log" | head -40
		fail=$((fail + 1))
	fi
}
vg compile "$MTC" "$src/examples/mlp.tdsl" -o "$out/vg-mlp.so"
vg plan "$MTC" "$src/examples/skipnet.tdsl" --mem-budget=70% --solver=tso --emit=schedule -o "$out/vg-skip.txt"
# the module: built for a baseline CPU (see above); a small mlp so the steps stay quick under valgrind; 2 threads, the DMA engine on
MTC_MARCH=x86-64-v2 "$MTC" "$src/examples/mlp.tdsl" -D B=16 -D L=2 -o "$out/vg-small.so" || fail=$((fail + 1))
MTC_THREADS=2 vg module "$RUN" "$out/vg-small.so" --steps 2
MTC_MARCH=x86-64-v2 "$MTC" "$src/examples/mlp.tdsl" -D B=256 -D L=2 --mem-budget=90% -o "$out/vg-plan.so" || fail=$((fail + 1))
MTC_THREADS=2 vg planned "$RUN" "$out/vg-plan.so" --steps 2
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
