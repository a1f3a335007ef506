#!/bin/sh
# limits.sh: inputs beyond every limit get a clear error (or a plain success) in bounded time
# and memory: a model bigger than the target, an absurd step count, a budget above the
# machine's memory, an ILP out of time, params files declaring billions of elements.
MTC=${MTC:-./mtc}
RUN=${top_builddir:-.}/mtc-run
src=${top_srcdir:-.}
d=$src/tests/limits
out=${top_builddir:-.}/tests/out/limits
mkdir -p "$out" || exit 1
pass=0 fail=0
# A fixed number of accelerator threads (and OpenBLAS's own none), so that the memory the
# runs take under the limit below does not grow with the machine's core count.
export MTC_THREADS=4 OPENBLAS_NUM_THREADS=1
# Every command runs under a time limit and a 4 GiB address-space limit where that is sane
# (not under ASan, which reserves terabytes of shadow).
lim() {
	if [ -z "$SAN" ]; then (ulimit -v 4194304; timeout 120 "$@"); else timeout 120 "$@"; fi
}
# expect NAME RC PATTERN CMD...: exit status RC (or "any" for 0/1) and PATTERN in its output
expect() {
	name=$1 want=$2 pat=$3
	shift 3
	lim "$@" > "$out/$name.log" 2>&1
	rc=$?
	if { [ "$want" = any ] && [ "$rc" -le 1 ]; } || [ "$rc" = "$want" ]; then
		if grep -q -- "$pat" "$out/$name.log"; then pass=$((pass + 1)); return; fi
	fi
	echo "FAIL: $name: exit $rc, want $want and /$pat/:"
	tail -5 "$out/$name.log"
	fail=$((fail + 1))
}
case " $ASAN_OPTIONS $(nm "$MTC" 2>/dev/null | grep -c __asan_init) " in
*" 0 "*) SAN= ;;
*) SAN=1 ;;
esac

# A model whose tensors exceed the target: a warning at compile time, no plan can fit it, and
# the module refuses to start (no 16 GiB allocation); the interpreter refuses too.
expect big-warn 0 "more than the 8589934592 bytes" "$MTC" "$d/big.tdsl" --emit=schedule -o "$out/big.txt"
expect big-budget 1 "error:" "$MTC" "$d/big.tdsl" --mem-budget=1G --solver=tso --emit=schedule -o "$out/big2.txt"
expect big-so 0 "" "$MTC" "$d/big.tdsl" -o "$out/big.so"
expect big-run 1 "accelerator has" "$RUN" "$out/big.so" --steps 1
# An absurd step count: refused before anything runs.
expect steps 1 "invalid --steps" "$RUN" "$src/examples/mlp.tdsl" --steps 1000000000000
expect steps-neg 1 "invalid --steps" "$RUN" "$src/examples/mlp.tdsl" --steps -5
expect steps-wrap 1 "invalid --steps" "$RUN" "$src/examples/mlp.tdsl" --steps 18446744073709551617
# A budget above the machine's memory: it simply fits.
expect budget-huge 0 "peak_live_bytes" "$MTC" "$src/examples/mlp.tdsl" --mem-budget=1000G --emit=schedule -o -
expect budget-absurd 1 "invalid --mem-budget" "$MTC" "$src/examples/mlp.tdsl" --mem-budget=1e30G --emit=schedule -o -
# The ILP out of time: the incumbent, the other solver's plan, or a clear error.
expect ilp-time any "." "$MTC" "$src/examples/transformer.tdsl" --mem-budget=60% --solver=ilp --solver-time=0.01 --emit=schedule -o -
expect ilp-time-auto 0 "peak_live_bytes" "$MTC" "$src/examples/transformer.tdsl" --mem-budget=60% --solver-time=0.01 --emit=schedule -o -
# Params files declaring billions of elements: refused from the header, nothing allocated.
for f in huge lying overflow hdrlen; do
	expect "st-$f" 1 "error" "$RUN" "$src/examples/mlp.tdsl" --params "$d/$f.safetensors"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
