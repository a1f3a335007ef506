#!/bin/bash
# flags.sh: the driver's options fuzzed: random combinations of mtc's flags (target, budget,
# solver, offload, schedule, data parallelism with its ranks, ZeRO stage, buckets and
# micro-batches, cost-model constants, the output asked for: a dump, the generated C or CUDA,
# the LLVM IR, the header) on the examples at small sizes, each compile up to SECS seconds.
# Reports what a user must never see: an exit status other than 0 and 1, an exit 1 without an
# "error:" line, a sanitizer's report or an internal error; and a compile over SECS (a slow
# planner, not always a bug). Run it on a sanitizer build's mtc (docs/reliability.md); not
# part of make check. The same SEED gives the same commands. Each command goes to
# OUT/all.txt with its exit status; what is bad to OUT/bad.txt, its stderr to OUT/bad.N.err.
# usage: tests/fuzz/flags.sh MTC N OUT [SEED] [SECS]
MTC=${1:?usage: flags.sh MTC N OUT [SEED] [SECS]}
n=${2:?usage: flags.sh MTC N OUT [SEED] [SECS]}
out=${3:?usage: flags.sh MTC N OUT [SEED] [SECS]}
RANDOM=${4:-1}
secs=${5:-300}
src=$(cd "$(dirname "$0")/../.." && pwd)
case $MTC in /*) ;; *) MTC=$(cd "$(dirname "$MTC")" && pwd)/$(basename "$MTC") ;; esac
mkdir -p "$out" || exit 1
: > "$out/bad.txt"
models=(
	"examples/mlp.tdsl -D B=8 -D L=3"
	"examples/skipnet.tdsl -D B=8 -D N=2"
	"examples/classifier.tdsl -D B=12 -D L=2"
	"examples/transformer.tdsl -D B=6 -D L=1 -D S=8"
	"examples/gpt.tdsl -D B=2 -D S=8 -D L=1 -D D=32"
	"examples/resnet.tdsl -D B=4 -D S=8 -D W=4"
	"examples/mobilenet.tdsl -D B=4 -D S=8"
	"examples/widemlp.tdsl -D B=8"
	"tests/train/drop.tdsl"
	"tests/backend/wide.tdsl"
)
# pick sets P (no subshell: bash seeds RANDOM anew in each)
pick() { local a=("$@"); P=${a[RANDOM % ${#a[@]}]}; }
maybe() { [ $((RANDOM % $1)) = 0 ]; }
for ((i = 0; i < n; i++)); do
	pick "${models[@]}"; f=$P
	maybe 3 && f="$f --target=cuda"
	case $((RANDOM % 4)) in
	1) f="$f --mem-budget=$((RANDOM % 100 + 5))%" ;;
	2) f="$f --mem-budget=$((RANDOM % 60 + 15))%" ;;
	3) f="$f --mem-budget=$((RANDOM % 4000000 + 10000))" ;;
	esac
	maybe 2 && { pick auto ilp tso chen none; f="$f --solver=$P"; }
	maybe 4 && { pick auto none; f="$f --offload=$P"; }
	maybe 4 && { pick mem critical program; f="$f --schedule=$P"; }
	if maybe 2; then
		f="$f --data-parallel"
		maybe 2 && { pick 2 3 2,3 4 1,2 2,4; f="$f --ranks=$P"; }
		maybe 2 && { pick 0 1 2 auto; f="$f --zero=$P"; }
		maybe 4 && { pick 1 64 100 4K 1M 1G; f="$f --bucket-bytes=$P"; }
		maybe 4 && { pick 2 3; f="$f --micro-batches=$P"; }
	else
		maybe 4 && { pick 2 3 4 auto; f="$f --micro-batches=$P"; }
	fi
	maybe 5 && { pick 1e6 1e9 1e12; f="$f --net-bw=$P"; pick 0 1e-6 1e-3; f="$f --net-latency=$P"; }
	maybe 5 && { pick 1e3 1e6 1e9 1e12; f="$f --copy-bw=$P"; pick 0 1e-6 1; f="$f --copy-latency=$P"; }
	maybe 6 && { pick 1e7 1e10; f="$f --host-flops=$P"; pick 1e8 1e11; f="$f --host-bw=$P"; }
	pick schedule ir schedule trace memory c h dot cuda llvm
	f="$f --emit=$P -o /dev/null --jobs=1"
	(cd "$src" && timeout "$secs" "$MTC" $f) > "$out/last.out" 2> "$out/last.err"
	rc=$?
	why=
	if [ $rc = 124 ]; then why="over $secs s"
	elif [ $rc != 0 ] && [ $rc != 1 ]; then why="exit $rc"
	elif [ $rc = 1 ] && ! grep -q "error:" "$out/last.err"; then why="exit 1 without an error"
	fi
	grep -q -E "AddressSanitizer|LeakSanitizer|runtime error|internal error" "$out/last.err" &&
		why="$why, a sanitizer's report or an internal error"
	echo "$i exit $rc: mtc $f" >> "$out/all.txt"
	if [ -n "$why" ]; then
		echo "$i ($why): mtc $f" >> "$out/bad.txt"
		cp "$out/last.err" "$out/bad.$i.err"
	fi
done
echo "$n commands, $(wc -l < "$out/bad.txt") bad ($out/bad.txt)"
