#!/bin/sh
# bench.sh (make bench): step time of each example module against PyTorch on the CPU, same
# model, batch and thread count (MTC_THREADS, default all cores), side by side.
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/bench
PY=${PYTHON:-/usr/bin/python3}
steps=${STEPS:-30}
threads=${MTC_THREADS:-$(nproc)}
export MTC_THREADS=$threads
mkdir -p "$out" || exit 1
printf '%-12s %8s %12s %12s %8s\n' model threads "mtc ms" "torch ms" ratio
for n in mlp skipnet transformer; do
	"$MTC" "$src/examples/$n.tdsl" -o "$out/$n.so" || exit 1
	m=$("$RUN" "$out/$n.so" --steps "$steps" | awk '/^peak_bytes/ { print $8 }')
	t=$("$PY" "$src/tests/backend/bench.py" "$n" "$threads" "$steps" 2>/dev/null || echo "")
	if [ -n "$t" ]; then r=$(awk -v a="$m" -v b="$t" 'BEGIN { printf "%.2f", a / b }'); else t=-; r=-; fi
	printf '%-12s %8s %12s %12s %8s\n' "$n" "$threads" "$m" "$t" "$r"
done
