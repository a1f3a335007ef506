#!/bin/sh
# good.sh: the programs in good/ and examples/ compile, the frontend's IR verifies (debug
# builds verify after every stage) and its text reads back to the same bytes, and the whole
# pipeline takes it; where golden/X.mir exists, the frontend's IR of good/X.tdsl is that file
# byte for byte (the examples' goldens are tests/ir/golden).
src=${top_srcdir:-.}
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/fe-good.$$
trap 'rm -f "$tmp".*' EXIT
pass=0 fail=0

for f in "$src"/tests/frontend/good/*.tdsl "$src"/examples/*.tdsl; do
	name=$(basename "$f")
	if ! "$MTC" "$f" --stop-after=frontend --emit=ir -o "$tmp.mir" 2>"$tmp.err"; then
		echo "FAIL: $name: does not compile:"
		sed 's/^/  /' "$tmp.err" | head -20
		fail=$((fail + 1))
	elif ! "$MTC" "$tmp.mir" --stop-after=frontend --emit=ir -o "$tmp.2.mir" 2>"$tmp.err" ||
	     ! cmp -s "$tmp.mir" "$tmp.2.mir"; then
		echo "FAIL: $name: the IR does not read back to the same text"
		head -5 "$tmp.err"
		fail=$((fail + 1))
	elif ! "$MTC" "$f" --emit=ir -o "$tmp.all.mir" 2>"$tmp.err"; then
		echo "FAIL: $name: the pipeline after the frontend fails:"
		head -5 "$tmp.err"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	gold=$src/tests/frontend/golden/${name%.tdsl}.mir
	[ -f "$gold" ] || continue
	# from the source tree, so that the file name in the IR is tests/frontend/good/X.tdsl
	if (cd "$src" && "$MTC" "tests/frontend/good/$name" --stop-after=frontend --emit=ir) >"$tmp.mir" 2>&1 &&
	   cmp -s "$tmp.mir" "$gold"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $name: the IR differs from tests/frontend/golden/${name%.tdsl}.mir:"
		diff "$gold" "$tmp.mir" | head -20
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
