#!/bin/sh
# golden.sh: the IR of each example (examples/NAME.tdsl --emit=ir) equals the checked-in
# tests/ir/golden/NAME.mir (the IR after autodiff and simplify, before scheduling), and that file prints back as itself (the round trip).
# An example without a golden file is skipped (listed). To update a golden file after an
# intended change: mtc examples/NAME.tdsl --stop-after=simplify --emit=ir -o tests/ir/golden/NAME.mir (in the source tree).
top_srcdir=${top_srcdir:-.}
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/mtc-golden.$$
trap 'rm -f "$tmp".*' EXIT
pass=0 fail=0 skip=0
for src in "$top_srcdir"/examples/*.tdsl; do
	name=$(basename "$src" .tdsl)
	gold=$top_srcdir/tests/ir/golden/$name.mir
	if [ ! -f "$gold" ]; then
		skip=$((skip + 1)); echo "SKIP: no $gold"; continue
	fi
	# from the source tree, so the model line names examples/NAME.tdsl in every build
	if ! (cd "$top_srcdir" && "$MTC" "examples/$name.tdsl" --stop-after=simplify --emit=ir) >"$tmp.1.mir" 2>"$tmp.err"; then
		fail=$((fail + 1)); echo "FAIL: $src does not compile:"; cat "$tmp.err"
	elif ! cmp -s "$gold" "$tmp.1.mir"; then
		fail=$((fail + 1)); echo "FAIL: $src: IR differs from $gold:"; diff "$gold" "$tmp.1.mir" | head -30
	else
		pass=$((pass + 1))
	fi
	if "$MTC" "$gold" --stop-after=frontend --emit=ir -o "$tmp.2.mir" 2>"$tmp.err" && cmp -s "$gold" "$tmp.2.mir"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); echo "FAIL: $gold does not print back as itself:"; cat "$tmp.err"
	fi
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || exit 1
[ "$pass" -gt 0 ] || exit 77      # nothing to compare yet: automake's SKIP
