#!/bin/sh
# cnn.sh: the convolutional networks under memory budgets (docs/planner.md). ResNet-18
# (examples/resnet.tdsl, -D W=8 -D B=8) and MobileNet (examples/mobilenet.tdsl) at 50%, 35%
# (where the planner reaches it) and the smallest budget it reaches: with check mode on and the
# portable GEMM, 5 steps give the same losses, params and buffers (running statistics,
# dropout's step), bit for bit, as the unplanned module, within the budget. Then with copies
# made dear (so the planner recomputes rather than swaps) ResNet at 50% (conv2d and batch_norm
# recomputed; one recomputed workspace the plan hands to a convolution and its recomputation
# is split in two by remat.c) and tests/backend/cnndrop.tdsl (dropout between its layers) at
# 55%: batch norm's statistics and dropout are recomputed, every batch
# norm's running statistics are updated once a step (batch_norm_update never recomputed), and
# the bits are the same again.
MTC=${MTC:-./mtc}
# Its modules built at -O0 unless MTC_CFLAGS says otherwise: the same bits as mtc's default -O2
# (tests/backend/examples.sh and tests/ops/ops.sh build at -O2), in a third of the C compiler's time.
MTC_CFLAGS=${MTC_CFLAGS--O0}; export MTC_CFLAGS
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/cnn
mkdir -p "$out" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
export MTC_CHECK=1 MTC_BLAS=0
# tso: deterministic, and quick where the ILP would take minutes on these
plan=--solver=tso
dear="--copy-bw=1e6 --copy-latency=1e-3"

# planned TAG N PCT MODEL FLAGS...: build TAG.PCT.so under PCT% (or, with PCT "min", the
# smallest budget the planner reaches), run it, compare with N's unplanned run.
planned() {
	tag=$1 n=$2 pct=$3
	shift 3
	if [ "$pct" = min ]; then
		pct=$("$MTC" "$@" $plan --mem-budget=1% -o /dev/null 2>&1 |
		      sed -n 's/.*--mem-budget=\([0-9]*\)% or more.*/\1/p')
		[ -n "$pct" ] || { bad "$tag: no smallest budget from the planner"; return 1; }
	fi
	b=$out/$tag.$pct
	if ! "$MTC" "$@" $plan --mem-budget=$pct% -o "$b.so" 2> "$b.err"; then
		bad "$tag: --mem-budget=$pct%: $(head -1 "$b.err")"; return 1
	fi
	"$RUN" "$b.so" --steps 5 --save-params "$b.p" > "$b.txt" || { bad "$tag: $pct%: run"; return 1; }
	[ "$(grep ^step "$out/$n.txt")" = "$(grep ^step "$b.txt")" ] && ok ||
		bad "$tag: $pct%: losses differ from the unplanned module's"
	cmp -s "$out/$n.p" "$b.p" && ok || bad "$tag: $pct%: params or buffers differ from the unplanned module's"
	awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6) }' "$b.txt" && ok ||
		bad "$tag: $pct%: over budget: $(tail -1 "$b.txt")"
	echo "$tag: budget $pct%: $(tail -1 "$b.txt")"
}

# recomputed N PCT "OPS" MODEL FLAGS...: under PCT% with copies dear the planned IR recomputes
# each of OPS and has one batch_norm_update per batch norm (per running_mean buffer), none
# recomputed; the module gives the unplanned bits.
recomputed() {
	n=$1 pct=$2 ops=$3
	shift 3
	"$MTC" "$@" $plan $dear --mem-budget=$pct% --emit=ir -o "$out/$n.rec.mir" ||
		{ bad "$n: $pct% with copies dear"; return 1; }
	for op in $ops; do
		grep -q "^  rec .* = $op " "$out/$n.rec.mir" && ok || bad "$n: $pct%: no $op recomputed"
	done
	nb=$(grep -c '^buffer .*\.running_mean ' "$out/$n.rec.mir")
	nu=$(grep -c '^  upd batch_norm_update ' "$out/$n.rec.mir")
	[ "$nb" -gt 0 ] && [ "$nb" = "$nu" ] && [ "$(grep -c 'batch_norm_update' "$out/$n.rec.mir")" = "$nu" ] && ok ||
		bad "$n: $pct%: $nb batch norms, $nu running statistics updates"
	echo "$n: $pct% with copies dear: recomputed $(grep '^  rec ' "$out/$n.rec.mir" | grep -o '= [a-z_0-9]*' |
		sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $3 }'); $nu batch_norm_update"
	planned "$n.dear" "$n" "$pct" "$@" $dear
}

# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): ResNet and cnndrop only
while read -r n pcts model defs; do
	[ -z "${MTC_QUICK:-}" ] || [ "$n" != mobilenet ] || continue
	m=$src/$model
	# shellcheck disable=SC2086
	set -- "$m" $defs
	"$MTC" "$@" -o "$out/$n.so" && "$RUN" "$out/$n.so" --steps 5 --save-params "$out/$n.p" > "$out/$n.txt" ||
		{ bad "$n: unplanned module"; continue; }
	ok
	for pct in $(echo "$pcts" | tr , ' '); do
		planned "$n" "$n" "$pct" "$@"
	done
done <<EOT
resnet 50,35,min examples/resnet.tdsl -D W=8 -D B=8
mobilenet 50,35,min examples/mobilenet.tdsl
cnndrop 50 tests/backend/cnndrop.tdsl
EOT
recomputed resnet 50 "conv2d batch_norm" "$src/examples/resnet.tdsl" -D W=8 -D B=8
recomputed cnndrop 55 "batch_norm_mean dropout" "$src/tests/backend/cnndrop.tdsl"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
