#!/bin/sh
# run.sh: run the libFuzzer binaries of make fuzz, each for SECS seconds (default 600), on a
# working corpus grown from the checked-in seeds; crashes land in OUT/<target>/ and go, once
# fixed, into tests/fuzz/regress/<target>/. Each line of OUT/<target>/log starts with the
# seconds since the target started, so the coverage plateau can be read off it.
# usage: [FUZZ_ARGS=libFuzzer-flags] tests/fuzz/run.sh BUILDDIR [SECS] [TARGETS...]
b=${1:?usage: run.sh BUILDDIR [SECS] [TARGETS...]}
secs=${2:-600}
shift 2 2>/dev/null
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$b/tests/fuzz/work}
[ $# -gt 0 ] || set -- fe ir st pipe onnx
# stamp: prefix each line with the seconds elapsed (libFuzzer prints none).
stamp() {
	t0=$(date +%s)
	while IFS= read -r l; do echo "$(($(date +%s) - t0)) $l"; done
}
for t; do
	mkdir -p "$out/$t/corpus" "$out/$t/crash"
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	"$b/tests/fuzz/fuzz-$t" "$out/$t/corpus" "$src/tests/fuzz/seed/$t" \
		-max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
		-close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$out/$t/crash/" $FUZZ_ARGS \
		2>&1 | stamp > "$out/$t/log" &
done
wait
for t; do
	echo "$t: $(grep -a -E '^[0-9]+ #[0-9]+' "$out/$t/log" | tail -1)"
	ls "$out/$t/crash"
done
