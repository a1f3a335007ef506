#!/bin/sh
# replay.sh: every seed and every input that once crashed a fuzzer, through each harness
# built without libFuzzer; a crash, a sanitizer report or a hang (60 s) fails.
src=${top_srcdir:-.}
bin=${top_builddir:-.}/tests/fuzz
pass=0 fail=0
for t in fe ir st pipe onnx; do
	files=$(ls "$src/tests/fuzz/seed/$t"/* "$src/tests/fuzz/regress/$t"/* 2>/dev/null)
	if timeout 300 "$bin/replay-$t" $files > "$bin/replay-$t.log" 2>&1; then
		pass=$((pass + 1))
	else
		echo "FAIL: replay-$t (see $bin/replay-$t.log):"
		tail -20 "$bin/replay-$t.log"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
