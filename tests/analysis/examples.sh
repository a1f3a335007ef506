#!/bin/sh
# examples.sh: mtc's analyses on hand-written .mir files with known answers and on every
# example under every schedule: the schedule's last line, arena within 5% of the lower bound,
# the memory-aware default never above program order, dumps that parse, --dump-dir, options.
top_srcdir=${top_srcdir:-.}
MTC=${MTC:-./mtc}
dir=${top_builddir:-.}/tests/analysis/out-ex
rm -rf "$dir" && mkdir -p "$dir" || exit 1
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { if eval "$2"; then ok; else bad "$1"; fi; }
last() { tail -n 1 "$1"; }
field() { last "$1" | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }

# known answers (worked out in the comments of the .mir files)
m=$top_srcdir/tests/analysis
$MTC "$m/chain.mir" --emit=schedule -o "$dir/chain.txt" 2>"$dir/err" || bad "chain.mir: $(cat "$dir/err")"
check "chain: last line" '[ "$(last "$dir/chain.txt")" = "peak_live_bytes 320 arena_bytes 320 modeled_ms 0.100004" ]'
check "chain: live column" '[ "$(awk "/^ *[0-9]/ { printf \"%s \", \$9 }" "$dir/chain.txt")" = "192 256 320 320 256 " ]'
check "chain: after column" '[ "$(awk "/^ *[0-9]/ { printf \"%s \", \$11 }" "$dir/chain.txt")" = "192 256 256 192 192 " ]'
$MTC "$m/chain.mir" --emit=schedule --target=cuda --align=256 -o "$dir/chain256.txt"
check "chain: align 256" '[ "$(field "$dir/chain256.txt" arena_bytes)" = 1280 ]'
$MTC "$m/chain.mir" --emit=ir -o "$dir/chain.ir"
check "chain: offsets in the IR" 'grep -q "relu %x at=128" "$dir/chain.ir" && grep -q "place %w at=64" "$dir/chain.ir"'
for s in program mem critical; do
	$MTC "$m/swap.mir" --emit=schedule --schedule=$s -o "$dir/swap-$s.txt" 2>"$dir/err" || bad "swap.mir: $(cat "$dir/err")"
	check "swap $s: peak and arena" '[ "$(field "$dir/swap-$s.txt" peak_live_bytes)" = 256 ] && [ "$(field "$dir/swap-$s.txt" arena_bytes)" = 256 ]'
	# the add that reads the swapped-in value comes after the wait on it
	check "swap $s: wait before use" 'awk "/wait .*%r/ { w = NR } / add / { a = NR } END { exit !(w && a > w) }" "$dir/swap-$s.txt"'
done
check "swap: live column" '[ "$(awk "/^ *[0-9]/ { printf \"%s \", \$9 }" "$dir/swap-program.txt")" = "128 128 192 192 192 192 256 " ]'
$MTC "$m/swap.mir" --emit=trace -o "$dir/swap.json"
check "swap: copy track" 'python3 -c "import json,sys; e=json.load(open(sys.argv[1]))[\"traceEvents\"]; assert sum(1 for x in e if x.get(\"tid\")==2 and x[\"ph\"]==\"X\")==2" "$dir/swap.json"'

$MTC "$m/chain.mir" --emit=schedule --accel-bytes=256 -o /dev/null 2>"$dir/err"
check "chain: over the capacity warns" 'grep -q "warning: forward needs an arena of 320 bytes, more than the 256" "$dir/err"'

# a function without ops: only its module tensors
printf 'mtc-ir 1\nmodel empty "e.tdsl"\ninput x : f32[4,4]\n\nfunc forward {\n  output e %%x\n}\n' >"$dir/empty.mir"
for k in schedule dot trace memory; do
	$MTC "$dir/empty.mir" --emit=$k -o "$dir/empty.$k" 2>"$dir/err" || bad "empty.mir --emit=$k: $(cat "$dir/err")"
done
check "empty: last line" '[ "$(last "$dir/empty.schedule")" = "peak_live_bytes 64 arena_bytes 64 modeled_ms 0.000000" ]'

# the examples
for ex in mlp skipnet transformer; do
	src=$top_srcdir/examples/$ex.tdsl
	for s in program mem critical; do
		out=$dir/$ex-$s
		if ! $MTC "$src" --emit=schedule --schedule=$s -o "$out.txt" 2>"$dir/err"; then
			bad "$ex $s: $(head -3 "$dir/err")"; continue
		fi
		check "$ex $s: last line" 'last "$out.txt" | grep -Eq "^peak_live_bytes [0-9]+ arena_bytes [0-9]+ modeled_ms [0-9]+\.[0-9]+$"'
		p=$(field "$out.txt" peak_live_bytes); a=$(field "$out.txt" arena_bytes)
		check "$ex $s: arena $a below the bound $p" '[ "$a" -ge "$p" ]'
		check "$ex $s: arena $a over 5% above the bound $p" '[ $((a * 100)) -le $((p * 105)) ]'
		printf '%-12s %-9s peak_live_bytes %9d arena_bytes %9d ratio %s\n' $ex $s $p $a \
			"$(awk -v a=$a -v p=$p 'BEGIN { printf "%.4f", a / p }')"
		eval "peak_$s=$p"
	done
	check "$ex: mem ($peak_mem) above program ($peak_program)" '[ "$peak_mem" -le "$peak_program" ]'
	check "$ex: mem ($peak_mem) above critical ($peak_critical)" '[ "$peak_mem" -le "$peak_critical" ]'
	check "$ex: the default is mem" '$MTC "$src" --emit=schedule | cmp -s - "$dir/$ex-mem.txt"'
	$MTC "$src" --emit=trace -o "$dir/$ex.json" && ok || bad "$ex: trace"
	check "$ex: trace JSON" 'python3 -c "import json,sys; e=json.load(open(sys.argv[1]))[\"traceEvents\"]; assert any(x[\"ph\"]==\"C\" for x in e)" "$dir/$ex.json"'
	$MTC "$src" --emit=memory --mem-budget=100% -o "$dir/$ex.svg" && ok || bad "$ex: memory"
	check "$ex: SVG" 'python3 -c "import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$dir/$ex.svg"'
	check "$ex: SVG budget line" 'grep -q ">budget " "$dir/$ex.svg"'
	$MTC "$src" --emit=dot -o "$dir/$ex.dot" && ok || bad "$ex: dot"
	if command -v dot >/dev/null; then
		check "$ex: dot parses" 'dot -Tsvg "$dir/$ex.dot" -o "$dir/$ex.dot.svg" 2>"$dir/err" && [ ! -s "$dir/err" ]'
	else
		skip=$((skip + 1))
	fi
	# every function's dumps under --dump-dir
	rm -rf "$dir/d" && $MTC "$src" --emit=ir -o /dev/null --dump-dir="$dir/d" || bad "$ex: --dump-dir"
	for f in forward step; do
		for k in schedule.txt dot.dot trace.json memory.svg; do
			check "$ex: --dump-dir $f $k" 'ls "$dir/d"/*-$f-$k >/dev/null 2>&1'
		done
	done
done
[ "$skip" = 0 ] || echo "skipped: dot (Graphviz) not installed"

# a plan under a budget keeps the schedule's contract: its last line is the summary
$MTC "$top_srcdir/examples/skipnet.tdsl" --emit=schedule --mem-budget=90% --solver=tso -o "$dir/plan.txt" 2>"$dir/err" || bad "skipnet planned: $(head -3 "$dir/err")"
check "planned schedule: last line" 'last "$dir/plan.txt" | grep -Eq "^peak_live_bytes [0-9]+ arena_bytes [0-9]+ modeled_ms [0-9]+\.[0-9]+$"'
check "planned schedule: within the budget" '[ "$(field "$dir/plan.txt" arena_bytes)" -le "$(sed -n "s/^budget_bytes //p" "$dir/plan.txt")" ]'
check "planned schedule: copies on the copy track" '$MTC "$top_srcdir/examples/skipnet.tdsl" --emit=trace --mem-budget=90% --solver=tso | grep -q "\"tid\":2"'

# the cost model's options move the modeled time the right way
t1=$(field "$dir/mlp-mem.txt" modeled_ms)
t2=$($MTC "$top_srcdir/examples/mlp.tdsl" --emit=schedule --target-flops=1e9 | tail -n 1 | awk '{ print $6 }')
check "--target-flops slows the model ($t1 -> $t2)" 'awk -v a=$t1 -v b=$t2 "BEGIN { exit !(b > 10 * a) }"'
t3=$($MTC "$top_srcdir/examples/mlp.tdsl" --emit=schedule --target=cuda | tail -n 1 | awk '{ print $6 }')
check "cuda is faster than mt3000 ($t1 -> $t3)" 'awk -v a=$t1 -v b=$t3 "BEGIN { exit !(b < a) }"'
# the host's issue (--host-issue): 1 ms an op makes the MLP's 160-op step about 159 ms
# (host-bound: 159 ops launch a kernel), where the GPU alone takes under 1 ms; a cuBLAS call's own figure for matmuls
t4=$($MTC "$top_srcdir/examples/mlp.tdsl" --emit=schedule --target=cuda --host-issue=1e-3 | tail -n 1 | awk '{ print $6 }')
check "--host-issue makes the step host-bound ($t3 -> $t4)" 'awk -v a=$t4 "BEGIN { exit !(a >= 150 && a < 161) }"'
t5=$($MTC "$top_srcdir/examples/mlp.tdsl" --emit=schedule --target=cuda --host-issue=1e-3 --host-issue-gemm=2e-3 | tail -n 1 | awk '{ print $6 }')
check "--host-issue-gemm for matmuls ($t4 -> $t5)" 'awk -v a=$t4 -v b=$t5 "BEGIN { exit !(b > a + 30) }"'
t6=$($MTC "$top_srcdir/examples/resnet.tdsl" --emit=schedule --target=cuda | tail -n 1 | awk '{ print $6 }')
t7=$($MTC "$top_srcdir/examples/resnet.tdsl" --emit=schedule --target=cuda --conv-flops=1e11 | tail -n 1 | awk '{ print $6 }')
check "--conv-flops slows the convolutions ($t6 -> $t7)" 'awk -v a=$t6 -v b=$t7 "BEGIN { exit !(b > 2 * a) }"'
for bad_opt in --schedule=fast --target-bw=0 --copy-bw=-1 --copy-latency=x --align=48 --accel-bytes=0 --launch= \
	--host-issue=-1 --gemm-flops=x --conv-flops=-2; do
	check "$bad_opt rejected" '! $MTC "$top_srcdir/examples/mlp.tdsl" --emit=schedule $bad_opt >/dev/null 2>"$dir/err" && grep -q "error" "$dir/err"'
done
for opt in --schedule= --target-flops= --target-bw= --copy-bw= --copy-latency= --launch= --accel-bytes= --align=; do
	check "--help documents $opt" '$MTC --help | grep -q -- "$opt"'
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
