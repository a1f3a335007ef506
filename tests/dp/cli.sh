#!/bin/sh
# cli.sh: mtc --data-parallel without running a job: the dumps show the collectives (the
# schedule's data-parallel summary and its allreduce/unbucket/wait lines, the trace's network
# track, the memory SVG's lane), the IR prints and parses back and runs in the interpreter
# (2 ranks: the bits of the per-rank model without collectives), the header and the C of a
# data-parallel module, --bucket-bytes, the same bytes twice, and the errors. Skipped
# (counted) where configure found no MPI.
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/dp-cli   # not under dp.sh's folder, which it empties
mkdir -p "$out" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
m="$src/examples/mlp.tdsl -D B=48 -D L=4"

if ! "$MTC" $m --data-parallel --ranks=2 --emit=ir -o "$out/probe.mir" 2>/dev/null; then
	echo "skipped: no MPI (configure's summary says why)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
dp="$MTC $m --data-parallel --ranks=3"
$dp --emit=schedule -o "$out/s.txt" &&
	grep -q '^# data-parallel: ranks 3 zero 0 buckets [1-9][0-9]* bucket_bytes [0-9]* collective_bytes 85760 network_ms [0-9.]* exposed_ms [0-9.]* hidden [0-9.]*%\( gradients early\)\{0,1\}$' "$out/s.txt" &&
	grep -q ' mem  allreduce ' "$out/s.txt" && grep -q ' mem  unbucket ' "$out/s.txt" && ok ||
	bad "schedule: $(head -2 "$out/s.txt")"
$dp --emit=trace -o "$out/t.json" && python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['traceEvents']
net = [e for e in t if e.get('tid') == 3 and e.get('ph') == 'X']
assert any(e.get('args', {}).get('name') == 'network' for e in t if e.get('ph') == 'M')
assert net and all(e['name'] == 'allreduce' for e in net), net
assert any(e['name'] == 'allreduce (pack)' and e['tid'] == 1 for e in t if e.get('ph') == 'X')
" "$out/t.json" && ok || bad "trace: no network track"
$dp --emit=memory -o "$out/m.svg" && xmllint --noout "$out/m.svg" 2>/dev/null &&
	[ "$(grep -c '<title>allreduce %bucket' "$out/m.svg")" -ge 1 ] && ok || bad "memory SVG: no collectives"
# the IR: prints and parses back; 2 ranks in the interpreter (the other rank holds the same
# rows: x + x halved is x) is the model at half the batch, bit for bit; no module from it
$MTC $m --data-parallel --ranks=2 --emit=ir -o "$out/r2.mir" && $MTC "$out/r2.mir" --emit=ir -o "$out/r2b.mir" &&
	cmp -s "$out/r2.mir" "$out/r2b.mir" && ok || bad "the IR does not print back the same"
"$RUN" "$out/r2.mir" --steps 3 > "$out/r2.t" && "$RUN" "$src/examples/mlp.tdsl" -D B=24 -D L=4 --steps 3 > "$out/h.t" &&
	[ "$(grep ^step "$out/r2.t")" = "$(grep ^step "$out/h.t")" ] && ok ||
	bad "the 2-rank step in the interpreter: $(cat "$out/r2.t") against $(cat "$out/h.t")"
$MTC "$out/r2.mir" -o "$out/r2.so" 2> "$out/r2.err" && bad "a module from a data-parallel .mir" ||
	{ grep -q "holds collectives.*--data-parallel" "$out/r2.err" && ok || bad "$(cat "$out/r2.err")"; }
# the header and the C
$MTC $m --data-parallel --emit=h -o "$out/mlp.h" && grep -q 'mlp \*mlp_create_comm(MPI_Comm comm);' "$out/mlp.h" &&
	grep -q 'one rank of an MPI job of 1, 2, 3, 4, 6 or 8 ranks' "$out/mlp.h" &&
	[ "$(grep -c '^ \* Memory plan of step() on' "$out/mlp.h")" = 6 ] && ok || bad "header: $(head -12 "$out/mlp.h")"
$dp --emit=c -o "$out/mlp.c" && grep -q 'mtc_comm_start(inst->c, ' "$out/mlp.c" &&
	grep -q 'mtc_comm_progress(inst->c);' "$out/mlp.c" && grep -q 'mtc_comm_finish' "$out/mlp.c" &&
	grep -q 'mtc_dp_module(&desc)' "$out/mlp-dp.c" && [ -s "$out/mlp-dev.c" ] && ok || bad "--emit=c"
# every update reads its all-reduced gradient where the bucket holds it: no copy back (and no
# other copy in this step); ZeRO's blocks by rank are copied onto the accelerator
n=$(grep -c '= unbucket %' "$out/mlp.c")
[ "$n" -gt 0 ] && [ "$(grep -c 'read in place by its update' "$out/mlp.c")" = "$n" ] &&
	! grep -q 'mtc_dma(' "$out/mlp.c" && ok || bad "the updates do not read the buckets in place ($n unbuckets)"
# every gradient is written by its producer where its bucket holds it: no pack copies it, and
# the kernel that makes it addresses that host offset
n=$(sed -n 's|^\t/\* %bucket[.0-9]* = allreduce \(.*\) \*/$|\1|p' "$out/mlp.c" | tr ',' '\n' | grep -c .)
h=$(sed -n 's|.*written in place by its producer: H + \([0-9]*\) .*|\1|p' "$out/mlp.c")
made_at() { for x in $h; do grep -q "mtc_run(d, KERN\[[0-9]*\], (const uint64_t\[\]){ HADDR($x)," "$1" || return 1; done; }
[ "$n" -gt 0 ] && [ "$(echo "$h" | grep -c .)" = "$n" ] && ! grep -q 'memcpy(H' "$out/mlp.c" && made_at "$out/mlp.c" &&
	ok || bad "the gradients are not written in their buckets ($n packed)"
# batch norm's statistics: the mean of squares only feeds the running statistics, so it is
# written in place; the rank's mean, which normalizes the rank's rows after the all-reduce
# has summed the bucket, is copied
$MTC $src/examples/resnet.tdsl -D B=8 -D S=8 -D W=8 --data-parallel --ranks=2 --emit=c -o "$out/rn.c" &&
	grep -q '/\* %66.var.e2 written in place by its producer: H + [0-9]* \*/' "$out/rn.c" &&
	! grep -q '%66.mean written in place' "$out/rn.c" && ok ||
	bad "batch norm's statistics: the mean written in place, or the mean of squares copied"
# MobileNet's one bucket at 64% lies over host bytes that swaps' copies held earlier in the
# step: where such a copy is dead before the gradient is made, the gradient is written in
# place all the same (the producer's offset inside a swap_out's host bytes copied before it)
$MTC $src/examples/mobilenet.tdsl -D B=4 -D S=8 --data-parallel --ranks=2 --zero=0 --bucket-bytes=1G \
	--mem-budget=64% --emit=c -o "$out/mb.c" && awk '
	match($0, /mtc_dma\(d, H \+ [0-9]+, M \+ [0-9]+, [0-9]+\)/) {
		split(substr($0, RSTART, RLENGTH), a, /[^0-9]+/); lo[++n] = a[2]; hi[n] = a[2] + a[4]
	}
	match($0, /written in place by its producer: H \+ [0-9]+/) {
		x = substr($0, RSTART + 38, RLENGTH - 38) + 0
		for (k = 1; k <= n; k++) if (lo[k] <= x && x < hi[k]) found++
	}
	END { exit !found }' "$out/mb.c" && ok ||
	bad "MobileNet at 64%: no gradient written in place over a swap's copy dead before it"
# at 70% some updates run on the host: they read the bucket too, and the gradient is neither
# copied back onto the accelerator nor out again (read in place, the copy's offset in the call)
$dp --mem-budget=70% --emit=c -o "$out/b70.c" && n=$(grep -c '= unbucket %' "$out/b70.c") &&
	[ "$(grep -c 'read in place by its update:' "$out/b70.c")" = "$n" ] &&
	h=$(sed -n 's|.*read in place by its update on the host: H + \([0-9]*\) .*|\1|p' "$out/b70.c" | head -1) &&
	[ -n "$h" ] && grep 'mtc_host_call' "$out/b70.c" | grep -q "HADDR($h)" && ok ||
	bad "at 70% the updates on the host do not read the buckets in place"
$dp --zero=1 --emit=c -o "$out/z1.c" && ! grep -q 'read in place' "$out/z1.c" &&
	grep -q 'mtc_dma(d, M + [0-9]*, H + [0-9]* + [0-9]* \* mtc_comm_rank(inst->c)' "$out/z1.c" && ok ||
	bad "ZeRO 1: a rank's block of a bucket read in place"
# --bucket-bytes, and the same bytes twice
nb() { sed -n 's/^# data-parallel: ranks [0-9]* zero [0-9] buckets \([0-9]*\) bucket_bytes \([0-9]*\) .*/\1 \2/p' "$1"; }
$dp --bucket-bytes=4K --emit=schedule -o "$out/s4k.txt" && set -- $(nb "$out/s4k.txt") $(nb "$out/s.txt") &&
	[ "$2" = 4096 ] && [ "$1" -gt "$3" ] && ok || bad "--bucket-bytes=4K: $(head -1 "$out/s4k.txt")"
$dp --mem-budget=70% --emit=schedule -o "$out/b1.txt" && $dp --mem-budget=70% --emit=schedule -o "$out/b2.txt" &&
	cmp -s "$out/b1.txt" "$out/b2.txt" && grep -q '^budget_bytes ' "$out/b1.txt" && ok || bad "not deterministic"
# the trials planned in 1 and 3 processes (--jobs): the same module, byte for byte
$dp --mem-budget=60% --jobs=1 --emit=c -o "$out/j1.c" && $dp --mem-budget=60% --jobs=3 --emit=c -o "$out/j3.c" &&
	cmp -s "$out/j1.c" "$out/j3.c" && ok || bad "--jobs=1 and --jobs=3 differ"
# ZeRO: stage 2's collectives in the schedule; the optimizer state a rank's shard in the IR
# (mom.w0 of 64x64 floats over 3 ranks: 1366); auto under a budget picks a stage
$dp --zero=2 --emit=schedule -o "$out/z2.txt" && grep -q '^# data-parallel: ranks 3 zero 2 ' "$out/z2.txt" &&
	grep -q ' reduce_scatter ' "$out/z2.txt" && grep -q ' allgather ' "$out/z2.txt" &&
	grep -q ' shard ' "$out/z2.txt" && ok || bad "--zero=2: $(head -1 "$out/z2.txt")"
$dp --zero=1 --emit=ir | grep -q '^state mom.w0 : f32\[1366\] = zeros() of w0' && ok || bad "--zero=1: the state is not sharded"
$dp --mem-budget=60% --emit=schedule -o "$out/za.txt" && grep -q '^# data-parallel: ranks 3 zero [012] ' "$out/za.txt" &&
	ok || bad "--zero=auto under a budget: $(head -1 "$out/za.txt")"
# errors
err() {
	want=$1; shift
	"$@" > /dev/null 2> "$out/e.txt" && { bad "accepted: $*"; return; }
	grep -q -- "$want" "$out/e.txt" && ok || bad "$*: $(cat "$out/e.txt")"
}
err "the batch of 48 does not divide over 5 ranks" $MTC $m --data-parallel --ranks=2,5 -o "$out/x.so"
err "invalid --ranks '2;4'" $MTC $m --data-parallel --ranks='2;4' -o "$out/x.so"
err "invalid --jobs '0'" $MTC $m --data-parallel --jobs=0 -o "$out/x.so"
err "invalid --bucket-bytes '1Q': unknown suffix" $MTC $m --data-parallel --bucket-bytes=1Q
err "go with --data-parallel" $MTC $m --zero=1 -o "$out/x.so"
err "invalid --zero '3'" $MTC $m --data-parallel --zero=3 -o "$out/x.so"
err "target 'mt3000' cannot --emit=llvm" $MTC $m --data-parallel --ranks=2 --emit=llvm -o "$out/x.ll"
err "needs a tdsl model that trains" $MTC "$src/tests/backend/fwdonly.tdsl" --data-parallel
err "needs a tdsl model that trains" $MTC "$out/r2.mir" --data-parallel
err "output 't' is f32\[4,48\] for the whole batch but f32\[4,24\] for a rank's slice" $MTC "$src/tests/dp/shared.tdsl" --data-parallel --ranks=2
# micro-batches within each rank, checked before anything is planned: by default the numbers
# of ranks whose slice K does not divide are left out (48 rows, 16 micro-batches: 1 and 3
# ranks), one --ranks gave is an error at the batch's dim, and so is K with none left
$MTC $m --data-parallel --micro-batches=16 --emit=h -o "$out/mu16.h" 2> "$out/mu16.err" &&
	grep -q "one rank of an MPI job of 1 or 3 ranks$" "$out/mu16.h" && ok || bad "--micro-batches=16: $(cat "$out/mu16.err"; grep -i rank "$out/mu16.h" | head -3)"
err "mlp.tdsl:13:18: error: --micro-batches=16 on each of 2 ranks does not divide the batch B = 48" \
	$MTC $m --data-parallel --ranks=1,2 --micro-batches=16 -o "$out/x.so"
err "mlp.tdsl:13:18: error: --micro-batches=5 does not divide the batch B = 48" $MTC $m --data-parallel --micro-batches=5 -o "$out/x.so"
# every variant's model is elaborated before any is planned: a slice the model cannot take
# (batch norm over one row: 4 images on 4 ranks, or 4 micro-batches of 4 on 2) is the
# frontend's error, and with the default numbers of ranks a note that --ranks names them
err "resnet.tdsl:23:12: error: batch_norm needs more than one value per channel to train" \
	$MTC "$src/examples/resnet.tdsl" -D B=4 -D S=8 -D W=4 --data-parallel --mem-budget=50% -o "$out/x.so"
grep -q "note: --data-parallel builds a variant for each divisor of the batch up to 8 by default; --ranks=LIST" "$out/e.txt" &&
	ok || bad "no note on --ranks: $(cat "$out/e.txt")"
err "resnet.tdsl:23:12: error: batch_norm needs more than one value per channel to train" \
	$MTC "$src/examples/resnet.tdsl" -D B=8 -D S=8 -D W=4 --data-parallel --ranks=1,2 --micro-batches=4 -o "$out/x.so"
# a budget too small: the floor in percent of the whole batch's step, as --mem-budget's
# percentages are, with --zero=auto every param sharded; its hint is a budget that fits
err "the budget of 54873 bytes (20.0% of the unconstrained arena of 274368, the step on the whole batch at once) cannot be met" \
	$MTC $m --data-parallel --ranks=2 --offload=none --mem-budget=20% --emit=schedule -o "$out/x.s"
hint=$(sed -n 's/.*(\([0-9.]*%\); --mem-budget=\([0-9]*%\) or more)$/\2/p' "$out/e.txt")
[ -n "$hint" ] && $MTC $m --data-parallel --ranks=2 --offload=none --mem-budget=$hint --emit=schedule -o "$out/x.s" 2> "$out/e2.txt" &&
	ok || bad "the floor's hint --mem-budget=$hint: $(cat "$out/e.txt" "$out/e2.txt")"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
