#!/bin/sh
# run.sh: run the libFuzzer binaries of make fuzz, each for SECS seconds (default 600), on a
# working corpus grown from the checked-in seeds; crashes land in OUT/<target>/ and go, once
# fixed, into tests/fuzz/regress/<target>/.
# usage: tests/fuzz/run.sh BUILDDIR [SECS] [TARGETS...]
b=${1:?usage: run.sh BUILDDIR [SECS] [TARGETS...]}
secs=${2:-600}
shift 2 2>/dev/null
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$b/tests/fuzz/work}
[ $# -gt 0 ] || set -- fe ir st pipe
for t; do
	mkdir -p "$out/$t/corpus" "$out/$t/crash"
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	"$b/tests/fuzz/fuzz-$t" "$out/$t/corpus" "$src/tests/fuzz/seed/$t" \
		-max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=8192 \
		-close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$out/$t/crash/" \
		> "$out/$t/log" 2>&1 &
done
wait
for t; do
	echo "$t: $(grep -E '^#[0-9]+' "$out/$t/log" | tail -1)"
	ls "$out/$t/crash"
done
