#!/bin/sh
# swap.sh: planned copies become asynchronous DMA with channels: outputs bit-identical to the
# interpreter in check mode; waits only where the plan or a dependence needs one.
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/swap
mkdir -p "$out" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
export MTC_CHECK=1

for n in swap nowait; do
	m=$src/tests/backend/$n.mir
	"$MTC" "$m" -o "$out/$n.so" && ok || bad "$n: mtc -o"
	"$MTC" "$m" --emit=c -o "$out/$n.c" && ok || bad "$n: --emit=c"
	"$RUN" "$m" --forward --save-outputs "$out/$n.i.st" > /dev/null &&
	"$RUN" "$out/$n.so" --forward --save-outputs "$out/$n.s.st" > "$out/$n.log" &&
	cmp -s "$out/$n.i.st" "$out/$n.s.st" && ok || bad "$n: outputs differ from the interpreter's"
	# two copies, each a channel
	[ "$(grep -c 'ch\[[0-9]*\] = mtc_dma' "$out/$n.c")" = 2 ] && ok || bad "$n: expected 2 DMA copies"
done
# swap.mir has its two waits; nowait.mir gets one, before the swapped-in value is read (RAW),
# and none for the swap-out (the FIFO engine orders the swap-in after it).
[ "$(grep -c 'mtc_dma_wait(d, ch' "$out/swap.c")" = 2 ] && ok || bad "swap: expected the plan's 2 waits"
[ "$(grep -c 'mtc_dma_wait(d, ch' "$out/nowait.c")" = 1 ] && ok || bad "nowait: expected 1 wait"
awk '/mtc_dma_wait\(d, ch\[1\]\)/ { w = NR } /KERN\[2\]/ { r = NR } END { exit !(w && r && w < r) }' \
	"$out/nowait.c" && ok ||
	bad "nowait: the read of the swapped-in value does not wait for its copy"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
