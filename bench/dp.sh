#!/bin/sh
# dp.sh: data parallelism measured on this machine and modeled at 8 ranks. For the MLP, the
# transformer (Adam) and the ResNet example: the step of 1 rank on the global batch against
# 2 ranks of half of it each (`mpirun -np 2`, one thread per rank), in ROUNDS rounds side by
# side (1 rank, then 2), each the median of STEPS steps; the scaling efficiency T1 / (2 T2) of
# each round and their median; the bound without communication: two single-process modules
# of half the batch run side by side, no MPI (T1 / (2 Tpair): what two processes sharing this
# machine's caches and memory bus can reach); the time the collectives were in flight and the
# part the step waited for (the runtime's own clocks, mtc-run's comm_ms line); each rank's device bytes with
# ZeRO 0, 1 and 2 (measured high-water marks); then the cost model's step at 8 ranks over
# NVLink (450 GB/s, 3 us) and 100 Gb/s Ethernet (12.5 GB/s, 10 us), each rank on the batch a
# rank has here. A Markdown report on standard output (make bench-dp puts it in
# bench/results/dp.md). Not a test: the times are this machine's, at its load, which the
# report states.
MTC=${MTC:-./mtc}
RUN=${MTC_RUN:-$(dirname "$MTC")/mtc-run}
src=${top_srcdir:-.}
STEPS=${DP_STEPS:-10}
ROUNDS=${DP_ROUNDS:-5}
tmp=${TMPDIR:-/tmp}/mtc-bench-dp.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
if [ -z "$MPIRUN" ]; then
	MPIRUN=$(command -v mpirun) || MPIRUN=
fi
if [ -z "$MPIRUN" ] || ! "$MTC" "$src/examples/mlp.tdsl" --data-parallel --ranks=2 -D B=4 -D L=1 -o "$tmp/probe.so" 2>/dev/null; then
	echo "# Data parallelism (bench/dp.sh): skipped, no MPI (configure's summary says why)"
	exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export MTC_THREADS=1 OPENBLAS_NUM_THREADS=1
# Each process on a core of its own, as mpirun binds its ranks (--report-bindings: rank 0 on
# core 0, rank 1 on core 1): left to the scheduler, the two half-batch processes of the bound
# took 178 and 213 ms a step on ResNet (S=32, W=64), pinned 187 and 187.
PIN0= PIN1=
if command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then
	PIN0="taskset -c 0" PIN1="taskset -c 1"
fi

field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$2"; }

echo "# Data parallelism (bench/dp.sh)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start;"
echo "$ROUNDS rounds side by side, each 1 rank of 1 thread on the global batch then \`mpirun -np 2\`"
echo "ranks of 1 thread on half of it each, $STEPS steps a run, the median step; the median of the"
echo "rounds (efficiency: each round's T1 / (2 T2), then their median); MT-3000 target (the C host)."
echo "Buckets: the compiler's choice under its cost model (\`--emit=schedule\`'s first line)."
echo "The ranks share a node, so the buckets' collectives run through their shared memory"
echo "(runtime/comm.c; \`MTC_COMM_SHM=0\`: through MPI); then the same models at a larger batch, and"
echo "ResNet-18 at its CIFAR size (S=32, W=64: 11.2 M params, 44.7 MB of gradients a step). No MPI:"
echo "two single-process modules of half the batch side by side (the slower one's step), the bound"
echo "without communication T1 / (2 Tpair)."
[ -n "$PIN0" ] && echo "The single processes pinned to cores 0 and 1 (taskset), as mpirun binds its two ranks."
echo
echo "| model | buckets | 1 rank: step ms | 2 ranks: step ms | efficiency (rounds) | no MPI, 2 processes of half: step ms | bound without communication | collectives in flight, ms/step | waited, ms/step | hidden |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
mem=$tmp/mem
: > "$mem"
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
while read -r name b model defs; do
	m=$src/$model
	defs="-D B=$b $defs"
	for z in 0 1 2; do
		"$MTC" "$m" $defs --data-parallel --ranks=1,2 --zero=$z -o "$tmp/$name.z$z.so" 2> "$tmp/err" ||
			{ echo "| $name | compile failed: $(head -1 "$tmp/err") |"; continue 2; }
	done
	"$MTC" "$m" $defs -D B=$((b / 2)) -o "$tmp/$name.half.so" 2> "$tmp/err" ||
		{ echo "| $name | compile failed: $(head -1 "$tmp/err") |"; continue; }
	nb=$("$MTC" "$m" $defs --data-parallel --ranks=2 --zero=0 --emit=schedule 2>/dev/null |
		sed -n '1s/.* buckets \([0-9]*\) bucket_bytes \([0-9]*\).*/\1 of \2 B/p')
	: > "$tmp/rounds"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		r=$((r + 1))
		$PIN0 "$RUN" "$tmp/$name.z0.so" --steps "$STEPS" > "$tmp/1.t" || { echo "| $name | 1 rank failed |"; continue 2; }
		"$MPIRUN" --oversubscribe -np 2 "$RUN" "$tmp/$name.z0.so" --steps "$STEPS" < /dev/null > "$tmp/2.t" ||
			{ echo "| $name | 2 ranks failed |"; continue 2; }
		$PIN0 "$RUN" "$tmp/$name.half.so" --steps "$STEPS" > "$tmp/ha.t" & pa=$!
		$PIN1 "$RUN" "$tmp/$name.half.so" --steps "$STEPS" > "$tmp/hb.t" & pb=$!
		wait $pa; ra=$?; wait $pb
		[ $? -eq 0 ] && [ $ra -eq 0 ] || { echo "| $name | the half-batch module failed |"; continue 2; }
		echo "$(field step_ms "$tmp/1.t") $(field step_ms "$tmp/2.t") $(field comm_ms "$tmp/2.t") $(field comm_wait_ms "$tmp/2.t") $(field step_ms "$tmp/ha.t") $(field step_ms "$tmp/hb.t")" >> "$tmp/rounds"
	done
	t1=$(awk '{ print $1 }' "$tmp/rounds" | med) t2=$(awk '{ print $2 }' "$tmp/rounds" | med)
	c=$(awk '{ print $3 }' "$tmp/rounds" | med) w=$(awk '{ print $4 }' "$tmp/rounds" | med)
	e=$(awk '{ print $1 / (2 * $2) }' "$tmp/rounds" | med)
	es=$(awk '{ printf "%s%.0f", (NR > 1 ? ", " : ""), 100 * $1 / (2 * $2) }' "$tmp/rounds")
	# the pair's step: the slower of the two (a rank waits for the other at every all-reduce)
	tp=$(awk '{ print ($5 > $6 ? $5 : $6) }' "$tmp/rounds" | med)
	eb=$(awk '{ print $1 / (2 * ($5 > $6 ? $5 : $6)) }' "$tmp/rounds" | med)
	awk -v n="$name" -v d="$defs" -v nb="$nb" -v t1="$t1" -v t2="$t2" -v c="$c" -v w="$w" -v e="$e" -v es="$es" \
	    -v tp="$tp" -v eb="$eb" 'BEGIN {
		printf "| %s (%s) | %s | %.2f | %.2f | %.0f%% (%s) | %.2f | %.0f%% | %.3f | %.3f | %.0f%% |\n", n, d, nb, t1, t2,
		       100 * e, es, tp, 100 * eb, c, w, (c > 0 ? 100 * (1 - w / c) : 100) }'
	for z in 1 2; do
		"$MPIRUN" --oversubscribe -np 2 "$RUN" "$tmp/$name.z$z.so" --steps 2 < /dev/null > "$tmp/2z$z.t" ||
			{ echo "$name $z failed" >> "$mem"; continue; }
	done
	awk -v n="$name (B=$b)" -v a="$(field peak_bytes "$tmp/1.t")" -v z0="$(field peak_bytes "$tmp/2.t")" \
	    -v z1="$(field peak_bytes "$tmp/2z1.t")" -v z2="$(field peak_bytes "$tmp/2z2.t")" 'BEGIN {
		printf "| %s | %d | %d | %d (%.0f%%) | %d (%.0f%%) |\n", n, a, z0, z1, 100 * z1 / z0, z2, 100 * z2 / z0 }' >> "$mem"
done <<EOT
mlp 64 examples/mlp.tdsl -D L=8
transformer 8 examples/transformer.tdsl
resnet 8 examples/resnet.tdsl -D S=16 -D W=32
transformer 16 examples/transformer.tdsl
resnet 32 examples/resnet.tdsl -D S=16 -D W=32
resnet 16 examples/resnet.tdsl -D S=32 -D W=64
EOT
# the cost model at 8 ranks, NVLink and Ethernet, at sizes where compute outweighs the
# kernels' fixed costs: the examples' own batch of the MLP, the transformer at 16 sequences a
# rank, ResNet-18 at full width on CIFAR-sized images, 32 a rank
while read -r name b model defs; do
	m=$src/$model
	for net in "NVLink 450e9 3e-6" "Ethernet 12.5e9 1e-5"; do
		set -- $net
		"$MTC" "$m" $defs -D B=$b --data-parallel --ranks=8 --zero=0 \
			--net-bw=$2 --net-latency=$3 --emit=schedule -o "$tmp/s8" 2>/dev/null &&
		"$MTC" "$m" $defs -D B=$b --emit=schedule -o "$tmp/s1" 2>/dev/null &&
		awk -v n="$name" -v net="$1" 'FNR == 1 { f++ }
			f == 1 && /^# data-parallel:/ { for (i = 2; i < NF; i++) { if ($i == "network_ms") nw = $(i + 1);
			                                   if ($i == "exposed_ms") ex = $(i + 1); if ($i == "hidden") h = $(i + 1) } }
			/^peak_live_bytes/ { t[f] = $NF }
			END { printf "%s (B=%d)|%s|%.3f|%.3f|%.3f|%.3f|%s\n", n, b, net, t[2], t[1], nw, ex, h }' \
			b=$b "$tmp/s8" "$tmp/s1" >> "$tmp/model8"
	done
done <<EOT
mlp 1024 examples/mlp.tdsl -D L=8
transformer 128 examples/transformer.tdsl
resnet 256 examples/resnet.tdsl -D S=32 -D W=64
EOT
echo
echo "Each rank's device bytes, measured (mtc-run's peak_bytes: the runtime's high-water mark),"
echo "without a budget, with ZeRO stage 1 (optimizer state sharded) and 2 (gradients too):"
echo
echo "| model | 1 rank | 2 ranks, ZeRO 0 | ZeRO 1 | ZeRO 2 |"
echo "| --- | --- | --- | --- | --- |"
cat "$mem"
echo
echo "Modeled (the MT-3000 cost model's kernels, the network as given): the global batch over 8"
echo "ranks against 1 rank's step on all of it (ideal speedup 8; each rank still runs every"
echo "update, and every kernel has its fixed cost, which bounds it on the small MLP):"
echo
echo "| model (global batch) | network | 1 rank: ms | 8 ranks: step ms | speedup | collectives ms | exposed ms | hidden |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
[ -f "$tmp/model8" ] && awk -F'|' '{ printf "| %s | %s | %.3f | %.3f | %.2f | %.3f | %.3f | %s |\n", $1, $2, $3, $4,
	($4 > 0 ? $3 / $4 : 0), $5, $6, $7 }' "$tmp/model8"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
