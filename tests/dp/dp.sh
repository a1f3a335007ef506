#!/bin/sh
# dp.sh: data-parallel modules (mtc --data-parallel) under mpirun on this machine, ranks
# oversubscribing its cores. The MLP and the transformer trained with SGD and momentum, at
# sizes whose batch divides over 2 and 3 ranks, without and with a budget, without and with
# ZeRO (stage 1: optimizer state sharded over the ranks; 2: gradients reduce-scattered too;
# under a budget the planner may keep shards' state in host memory, as at 70% on the MLP and
# 35% on the transformer),
# and the MLP with 2 micro-batches within each rank (against the single process's 2 micro-batches),
# and tests/train/drop.tdsl, whose dropouts draw on each rank the whole batch's masks at its rows:
# 5 steps on 2 ranks (and 3 for the MLP: the transformers take longest here) give losses within 1e-6 relative and params within 1e-6 relative
# (per tensor: |a - b| <= 1e-6 max |b|) of the single-process module on the whole batch, or,
# where that module itself moves more when its GEMMs sum in another order (MTC_BLAS=0: 1.2e-6
# in a bias of the transformer), that much; under a budget each rank's measured peak stays
# within it. One rank (no mpirun) is the single-process module bit for bit. The example
# transformer trains with Adam, which turns the rounding of a near-zero gradient entry (summed
# in another order over the ranks) into a step of up to lr: the single-process module moves by
# 2e-4 (relative, at its worst element; 66% of a bias's elements beyond 1e-6) when its GEMMs
# sum in another order, so its losses are checked within 1e-6 and its params within 4 times
# that spread. create refuses a number of ranks the batch does not divide or the module was
# not built for. A rank that fails mid-step makes every rank exit with an error in bounded
# time: a label out of range in one rank's rows (every rank's step fails at its end), a rank
# that exits, a rank that stalls (the others' collectives time out). Skipped (counted) where
# configure found no MPI or no mpirun. First runtime/comm.c's collectives alone (tests/dp/comm).
MTC=${MTC:-./mtc}
# Its modules built at -O0 unless MTC_CFLAGS says otherwise: the same bits as mtc's default -O2
# (tests/backend/examples.sh and tests/ops/ops.sh build at -O2), in a third of the C compiler's time.
MTC_CFLAGS=${MTC_CFLAGS--O0}; export MTC_CFLAGS
RUN=$(dirname "$MTC")/mtc-run
STCMP=${top_builddir:-.}/tests/dp/stcmp
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/dp
rm -rf "$out"
mkdir -p "$out" || exit 1
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
TOL=1e-6

if [ -z "$MPIRUN" ] || ! "$MTC" --help | grep -q -- --data-parallel ||
   ! "$MTC" "$src/examples/mlp.tdsl" --data-parallel --ranks=2 -D B=4 -D L=1 -o "$out/probe.so" 2>/dev/null; then
	echo "skipped: no MPI (configure's summary says why)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
# as root too; shared memory between the ranks without the kernel's cross-memory attach,
# which containers often forbid; one accelerator thread per rank
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export MTC_THREADS=1
# In a sanitizer build (CI's second run), LeakSanitizer reports what Open MPI allocates and
# never frees (its plugins, MPI_Init's singleton); memory errors are still caught.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi() { np=$1; shift; timeout 120 "$MPIRUN" --oversubscribe -np "$np" "$@" < /dev/null; }

# Are the losses of two runs within TOL relative, step by step?
close() {
	awk -v tol=$TOL 'NR == FNR && /^step/ { a[$2] = $4; next }
		/^step/ { n++; d = $4 - a[$2]; if (d < 0) d = -d; r = $4 < 0 ? -$4 : $4;
		          if (!($2 in a) || d > tol * r || $4 ~ /nan|inf/) bad = 1 }
		END { exit bad || n != 5 }' "$1" "$2"
}

# runtime/comm.c alone (tests/dp/comm): each slot's collective over steps, one moved to
# another buffer and count and back, the three kinds side by side, exact sums; through MPI
# and through the ranks' shared memory (on this machine it must be had), and with
# MTC_COMM_SHM=0 none
for np in 2 3 2:0; do
	shm=${np#*:} np=${np%:*}
	[ "$shm" = "$np" ] && shm=
	if MTC_COMM_SHM=$shm mpi $np "${top_builddir:-.}/tests/dp/comm" > "$out/comm$np$shm.t" 2>&1 &&
	   grep -q ' 0 failed$' "$out/comm$np$shm.t"; then
		ok
	else
		bad "the collectives alone on $np ranks${shm:+, MTC_COMM_SHM=$shm} (tests/dp/comm)"
		grep FAIL "$out/comm$np$shm.t" | head -5
	fi
done
# The modules' collectives through shared memory, required (MTC_COMM_SHM=1: create fails
# where the ranks cannot share it); the MPI path's checks follow the loop.
export MTC_COMM_SHM=1

# name, model, budget (-: none), ZeRO stage, numbers of ranks, defines
# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md; MPI's ranks under AddressSanitizer
# are this suite's slowest run): every runtime path on 2 ranks, 3 only in the failure checks;
# the MLP without a budget and with ZeRO 1 and 2, micro-batches, dropout's masks, ZeRO 2 on
# attention; not the plain transformer, nor batch norm
while read -r n model budget zero nps defs; do
	[ -z "${MTC_QUICK:-}" ] || case $n:$budget:$zero in
	mlp:-:0 | mlp:70%:1 | mlp:70%:2 | mlpmu:70%:0 | dropmu:60%:1 | tfsgd:50%:2) ;; *) continue ;; esac
	m=$src/$model
	[ "$budget" = - ] && budget=
	b=${budget:+--mem-budget=$budget}
	tag=$n${budget:+.b}.z$zero
	# the single-process module on the whole batch (once per model and budget), and its own
	# spread against the other GEMM's sums
	st=$out/$n${budget:+.b}
	[ -f "$st.s.p" ] || { "$MTC" "$m" $defs $b -o "$st.s.so" 2> "$st.err" &&
	"$RUN" "$st.s.so" --steps 5 --save-params "$st.s.p" > "$st.s.t" &&
	MTC_BLAS=0 "$RUN" "$st.s.so" --steps 5 --save-params "$st.s0.p" > /dev/null; } ||
		{ bad "$tag: the single-process module: $(cat "$st.err")"; rm -f "$st.s.p"; continue; }
	spread=$("$STCMP" "$st.s0.p" "$st.s.p" 1 | sed -n 's/^max relative difference \([^ ]*\) .*/\1/p')
	ptol=$TOL
	if [ $n = transformer ] || [ $n = tfhost ]; then
		ptol=$(awk -v s="$spread" 'BEGIN { print 4 * s }')
	elif awk -v s="$spread" -v t=$TOL 'BEGIN { exit !(s > t) }'; then
		ptol=$spread
	fi
	# one rank too, once: the single-process module bit for bit
	r=$nps
	[ $tag = mlp.z0 ] && r=1,$r
	"$MTC" "$m" $defs $b --data-parallel --zero=$zero --ranks=$r -o "$out/$tag.so" 2> "$out/$tag.err" &&
		ok || { bad "$tag: --data-parallel: $(cat "$out/$tag.err")"; continue; }
	[ $tag != mlp.z0 ] || { "$RUN" "$out/$tag.so" --steps 5 --save-params "$out/$tag.1.p" > "$out/$tag.1.t" &&
	[ "$(grep ^step "$st.s.t")" = "$(grep ^step "$out/$tag.1.t")" ] &&
	cmp -s "$st.s.p" "$out/$tag.1.p" && ok ||
		bad "$tag: one rank is not the single-process module bit for bit"; }
	[ -z "${MTC_QUICK:-}" ] || nps=2
	for np in $(echo $nps | tr , ' '); do
		if ! mpi $np "$RUN" "$out/$tag.so" --steps 5 --save-params "$out/$tag.$np.p" > "$out/$tag.$np.t" \
		     2> "$out/$tag.$np.err"; then
			bad "$tag on $np ranks: $(tail -3 "$out/$tag.$np.err")"
			continue
		fi
		close "$st.s.t" "$out/$tag.$np.t" && ok ||
			bad "$tag on $np ranks: losses not within $TOL of one process's: $(grep ^step "$out/$tag.$np.t" | tr '\n' ' ')"
		"$STCMP" "$out/$tag.$np.p" "$st.s.p" $ptol > "$out/$tag.$np.cmp" && ok ||
			bad "$tag on $np ranks: params: $(cat "$out/$tag.$np.cmp") (tolerance $ptol)"
		[ "$(grep -c ^step "$out/$tag.$np.t")" = 5 ] && ok || bad "$tag on $np ranks: rank 0 alone prints"
		[ -z "$budget" ] || awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6 && $4 <= $6) }' "$out/$tag.$np.t" &&
			ok || bad "$tag on $np ranks: over budget: $(tail -1 "$out/$tag.$np.t")"
	done
done <<EOT
mlp examples/mlp.tdsl - 0 2,3 -D B=48 -D L=4
mlp examples/mlp.tdsl 70% 0 2,3 -D B=48 -D L=4
mlp examples/mlp.tdsl - 1 2,3 -D B=48 -D L=4
mlp examples/mlp.tdsl 70% 1 2 -D B=48 -D L=4
mlp examples/mlp.tdsl 70% 2 2,3 -D B=48 -D L=4
mlpmu examples/mlp.tdsl 70% 0 2,3 -D B=48 -D L=4 --micro-batches=2
mlpmu examples/mlp.tdsl - 1 2 -D B=48 -D L=4 --micro-batches=2
drop tests/train/drop.tdsl - 0 2,3
dropmu tests/train/drop.tdsl 60% 1 2,3 --micro-batches=2
tfsgd tests/dp/tfsgd.tdsl 50% 2 2 -D B=6 -D L=2 -D S=16
transformer examples/transformer.tdsl 50% 1 2 -D B=6 -D L=2 -D S=16
tfhost examples/transformer.tdsl 35% 1 2 -D B=6 -D L=2 -D S=16
EOT

# The same modules through MPI (MTC_COMM_SHM=0): on 2 ranks the same bits as through shared
# memory (a sum of two in either order, the scale a power of two), on 3 within the tolerance
# of the single process (MPI sums in an order of its own)
for v in mlp.z0:2 mlp.z0:3 mlp.b.z2:2 mlp.b.z2:3 tfsgd.b.z2:2; do
	tag=${v%:*} np=${v#*:} st=$out/${v%%.*}
	case $tag in *.b.*) st=$st.b ;; esac
	[ -f "$out/$tag.so" ] || continue
	[ -z "${MTC_QUICK:-}" ] || [ $np = 2 ] || continue
	if ! MTC_COMM_SHM=0 mpi $np "$RUN" "$out/$tag.so" --steps 5 --save-params "$out/$tag.$np.mpi.p" \
	     > "$out/$tag.$np.mpi.t" 2> "$out/$tag.$np.mpi.err"; then
		bad "$tag on $np ranks through MPI: $(tail -3 "$out/$tag.$np.mpi.err")"
	elif [ $np = 2 ]; then
		[ "$(grep ^step "$out/$tag.$np.t")" = "$(grep ^step "$out/$tag.$np.mpi.t")" ] &&
		cmp -s "$out/$tag.$np.p" "$out/$tag.$np.mpi.p" && ok ||
			bad "$tag on 2 ranks: through MPI not the bits of shared memory"
	else
		close "$st.s.t" "$out/$tag.$np.mpi.t" && "$STCMP" "$out/$tag.$np.mpi.p" "$st.s.p" $TOL > /dev/null && ok ||
			bad "$tag on $np ranks through MPI: not within $TOL of one process"
	fi
done

# ZeRO with the shards' optimizer state in host memory: at 35% the planner keeps some of the
# transformer's there (trained on 2 ranks just above, against the single process)
if [ -z "${MTC_QUICK:-}" ]; then
	"$MTC" "$src/examples/transformer.tdsl" -D B=6 -D L=2 -D S=16 --mem-budget=35% --data-parallel \
		--zero=1 --ranks=2 --emit=schedule -o "$out/tfhost.s" 2> "$out/tfhost.s.err" &&
	grep -q '^state_in_host_bytes [1-9]' "$out/tfhost.s" && grep -q '^# data-parallel: ranks 2 zero 1 ' "$out/tfhost.s" &&
		ok || bad "ZeRO 1 with state in host memory: $(grep -E '^(state_in_host_bytes|# data-parallel)' "$out/tfhost.s") $(cat "$out/tfhost.s.err")"
fi

# ZeRO param by param (--zero=auto): at 64% with state kept on the accelerator the transformer
# fits with some of its params sharded, not all (the rest cost more in copies than they
# save); trained on 2 ranks against the single process (the transformer row's, planned at 50%)
if [ -z "${MTC_QUICK:-}" ]; then
	pick="$src/examples/transformer.tdsl -D B=6 -D L=2 -D S=16 --mem-budget=64% --offload=none --data-parallel --zero=auto --ranks=2"
	st=$out/transformer.b
	ptol=$(awk -v s="$("$STCMP" "$st.s0.p" "$st.s.p" 1 | sed -n 's/^max relative difference \([^ ]*\) .*/\1/p')" \
		'BEGIN { print 4 * s }')
	"$MTC" $pick --emit=schedule -o "$out/tfpick.s" 2> "$out/tfpick.err" &&
	sed -n '1s/.* sharded \([0-9]*\) of \([0-9]*\)$/\1 \2/p' "$out/tfpick.s" | awk '{ exit !($1 > 0 && $1 < $2) }' &&
		ok || bad "ZeRO param by param: not some params of all sharded: $(head -1 "$out/tfpick.s") $(cat "$out/tfpick.err")"
	"$MTC" $pick -o "$out/tfpick.so" 2>> "$out/tfpick.err" &&
	mpi 2 "$RUN" "$out/tfpick.so" --steps 5 --save-params "$out/tfpick.2.p" > "$out/tfpick.2.t" 2> "$out/tfpick.2.err" &&
	close "$st.s.t" "$out/tfpick.2.t" && "$STCMP" "$out/tfpick.2.p" "$st.s.p" "$ptol" > "$out/tfpick.cmp" &&
	awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6 && $4 <= $6) }' "$out/tfpick.2.t" &&
		ok || bad "ZeRO param by param on 2 ranks: $(cat "$out/tfpick.cmp" "$out/tfpick.2.err") $(grep -E '^(step|peak)' "$out/tfpick.2.t" | tr '\n' ' ')"
fi

# Batch norm (ResNet-18's layout, narrowed): each rank normalizes with its own statistics, so
# 2 ranks train as the single process with 2 micro-batches, on the portable GEMM the same
# bits (losses, params, without and with ZeRO 2 and a budget); the running statistics are the
# whole batch's: after one step the first batch norm's (its input is the whole batch's
# rows) within 1e-6 of the single process on the whole batch.
rn="$src/examples/resnet.tdsl -D B=8 -D S=8 -D W=8"
# (not under MTC_QUICK: ResNet's three compiles took half of this test under the sanitizers)
if [ -n "${MTC_QUICK:-}" ]; then
	:
elif "$MTC" $rn --micro-batches=2 -o "$out/rnmu.so" 2> "$out/rnmu.err" &&
   MTC_BLAS=0 "$RUN" "$out/rnmu.so" --steps 3 --save-params "$out/rnmu.p" > "$out/rnmu.t" &&
   "$MTC" $rn -o "$out/rn1.so" 2>> "$out/rnmu.err" &&
   MTC_BLAS=0 "$RUN" "$out/rn1.so" --steps 1 --save-params "$out/rn1.p" > /dev/null; then
	ok
	# the last: ZeRO param by param (state kept on the accelerator, the pick some of the params)
	for v in "0 -" "2 70%" "auto 80% --offload=none"; do
		set -- $v
		tag=rn.z$1.$2
		b=; [ "$2" = - ] || b=--mem-budget=$2
		if ! "$MTC" $rn --data-parallel --ranks=2 --zero=$1 $b $3 -o "$out/$tag.so" 2> "$out/$tag.err" ||
		   ! MTC_BLAS=0 mpi 2 "$RUN" "$out/$tag.so" --steps 3 --save-params "$out/$tag.p" > "$out/$tag.t" \
		     2>> "$out/$tag.err"; then
			bad "batch norm, ZeRO $1, budget $2: $(tail -3 "$out/$tag.err")"
			continue
		fi
		[ "$(grep ^step "$out/rnmu.t")" = "$(grep ^step "$out/$tag.t")" ] && ok ||
			bad "batch norm, ZeRO $1, budget $2: losses $(grep ^step "$out/$tag.t" | tr '\n' ' ')against 2 micro-batches' $(grep ^step "$out/rnmu.t" | tr '\n' ' ')"
		"$STCMP" "$out/$tag.p" "$out/rnmu.p" 0 0 "~running_" \
			> "$out/$tag.cmp" 2>&1 && ok || bad "batch norm, ZeRO $1, budget $2: params: $(cat "$out/$tag.cmp")"
		[ -z "$b" ] || awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6) }' "$out/$tag.t" && ok ||
			bad "batch norm, ZeRO $1, budget $2: over budget: $(tail -1 "$out/$tag.t")"
	done
	MTC_BLAS=0 mpi 2 "$RUN" "$out/rn.z0.-.so" --steps 1 --save-params "$out/rn2.p" > /dev/null 2>&1 &&
	"$STCMP" "$out/rn2.p" "$out/rn1.p" 1e-6 0 g0.running_mean g0.running_var > "$out/rn2.cmp" && ok ||
		bad "batch norm: the first running statistics after one step: $(cat "$out/rn2.cmp")"
else
	bad "batch norm: the single-process modules: $(cat "$out/rnmu.err")"
fi

# A bucket of over 64 gradients in a step the plan rewrites (MobileNet's 68 in one bucket, at
# 64% swapped): planned and trained on 2 ranks as the single process with 2
# micro-batches, bit for bit, within the budget (remat.c took at most 64 operands an op).
mb="$src/examples/mobilenet.tdsl -D B=4 -D S=8"
if [ -z "${MTC_QUICK:-}" ]; then
	if "$MTC" $mb --data-parallel --ranks=2 --zero=0 --bucket-bytes=1G --mem-budget=64% --emit=schedule \
	     -o "$out/mb.s" 2> "$out/mb.err" && grep -q -E " (rec|swap_in) " "$out/mb.s" &&
	   "$MTC" $mb --data-parallel --ranks=2 --zero=0 --bucket-bytes=1G --mem-budget=64% -o "$out/mb.so" \
	     2>> "$out/mb.err" && "$MTC" $mb --micro-batches=2 -o "$out/mbmu.so" 2>> "$out/mb.err" &&
	   MTC_BLAS=0 "$RUN" "$out/mbmu.so" --steps 3 --save-params "$out/mbmu.p" > "$out/mbmu.t" 2>> "$out/mb.err" &&
	   MTC_BLAS=0 mpi 2 "$RUN" "$out/mb.so" --steps 3 --save-params "$out/mb.p" > "$out/mb.t" 2>> "$out/mb.err" &&
	   [ "$(grep ^step "$out/mbmu.t")" = "$(grep ^step "$out/mb.t")" ] &&
	   "$STCMP" "$out/mb.p" "$out/mbmu.p" 0 0 "~running_" > "$out/mb.cmp" 2>&1 &&
	   awk '/^peak_bytes/ { exit !($6 > 0 && $2 <= $6) }' "$out/mb.t"; then
		ok
	else
		bad "a bucket of 68 gradients, planned at 64%: $(tail -3 "$out/mb.err") $(cat "$out/mb.cmp" 2>/dev/null) $(grep -E '^(step|peak)' "$out/mb.t" "$out/mbmu.t" 2>/dev/null | tr '\n' ' ')"
	fi
fi

# micro-batches within each rank: a count that does not divide a rank's slice, and auto
"$MTC" "$src/examples/mlp.tdsl" -D B=48 -D L=4 --data-parallel --ranks=2 --micro-batches=5 -o "$out/mu5.so" \
	2> "$out/mu5.err" && bad "5 micro-batches of 24 rows built" ||
	{ grep -q "error: --micro-batches=5 on each of 2 ranks does not divide the batch B = 48" "$out/mu5.err" && ok ||
		bad "5 micro-batches: $(cat "$out/mu5.err")"; }
"$MTC" "$src/examples/mlp.tdsl" --data-parallel --micro-batches=auto --mem-budget=50% -o "$out/mua.so" \
	2> "$out/mua.err" && bad "--micro-batches=auto with --data-parallel built" ||
	{ grep -q "error: --micro-batches=auto with --data-parallel is not supported" "$out/mua.err" && ok ||
		bad "--micro-batches=auto: $(cat "$out/mua.err")"; }

# a dropout whose rows a reshape interleaves ([S, B, D] as [S B, D]): each rank its own mask, and
# a warning that says so
sed 's|t = dropout(transpose(reshape(h, \[B, S, D\]), \[1, 0, 2\]), 0.25);|t = reshape(dropout(reshape(transpose(reshape(h, [B, S, D]), [1, 0, 2]), [S * B, D]), 0.25), [S, B, D]);|' \
	"$src/tests/train/drop.tdsl" > "$out/mix.tdsl"
"$MTC" "$out/mix.tdsl" --data-parallel --ranks=2,3 -o "$out/mix.so" 2> "$out/mix.err" &&
	grep -q "mix.tdsl:24:15: warning: --data-parallel over 2 ranks: this dropout's rows are not blocks" "$out/mix.err" &&
	grep -q "mix.tdsl:24:15: warning: --data-parallel over 3 ranks: this dropout's rows are not blocks" "$out/mix.err" &&
	[ "$(grep -c warning "$out/mix.err")" = 2 ] && ok || bad "interleaved dropout rows: $(cat "$out/mix.err")"

# create: a batch that does not divide, a number of ranks without a variant
mpi 5 "$RUN" "$out/mlp.z0.so" --steps 1 > /dev/null 2> "$out/np5.err" && bad "5 ranks of a batch of 48 ran" ||
	{ grep -q "batch of 48 does not divide over 5 ranks" "$out/np5.err" && ok || bad "5 ranks: $(cat "$out/np5.err")"; }
mpi 4 "$RUN" "$out/mlp.z0.so" --steps 1 > /dev/null 2> "$out/np4.err" && bad "4 ranks of a module for 1, 2, 3 ran" ||
	{ grep -q "compiled for 1, 2, 3 ranks, not 4.*--ranks=4" "$out/np4.err" && ok || bad "4 ranks: $(cat "$out/np4.err")"; }

# A rank that fails mid-step. Labels out of range in rank 1's rows only (rows 16..31 of 48).
python3 - "$out/badlab.st" <<'EOF'
import json, struct, sys
y = [i % 10 for i in range(48)]
y[20] = 99
data = struct.pack("<48i", *y)
hdr = json.dumps({"y": {"dtype": "I32", "shape": [48], "data_offsets": [0, len(data)]}}).encode()
hdr += b" " * (-len(hdr) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
EOF
s=$(date +%s)
mpi 3 "$RUN" "$out/mlp.z0.so" --steps 5 --inputs "$out/badlab.st" > "$out/bad.t" 2> "$out/bad.err"
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && ! grep -q ^step "$out/bad.t" && ok || bad "a bad label on rank 1: rc $rc"
grep -q "label 99 at input 'y'\[4\]" "$out/bad.err" && grep -q "rank 0 of 3: the step failed on rank 1" "$out/bad.err" &&
	ok || bad "a bad label on rank 1: $(cat "$out/bad.err")"
# A rank that exits in step 3, and one that stalls there (the others wait 3 s at most).
for kind in exit stall; do
	s=$(date +%s)
	MTC_COMM_FAULT=1:3:$kind MTC_COMM_TIMEOUT=3 mpi 3 "$RUN" "$out/mlp.z0.so" --steps 5 > "$out/$kind.t" 2> "$out/$kind.err"
	rc=$?
	t=$(($(date +%s) - s))
	[ $rc != 0 ] && [ $rc != 124 ] && [ $t -lt 60 ] && ok || bad "rank 1 ${kind}s in step 3: rc $rc after $t s"
	[ "$(grep -c ^step "$out/$kind.t")" = 2 ] && ok || bad "rank 1 ${kind}s in step 3: $(cat "$out/$kind.t")"
	[ $kind = exit ] || grep -q "did not complete within 3 s" "$out/$kind.err" && ok ||
		bad "rank 1 stalls: $(cat "$out/$kind.err")"
done
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
