#!/bin/sh
# examples.sh: the examples compile, and the frontend builds exactly what it built before.
#
# golden/X.fe is fedump's listing of examples/X.tdsl (every decl and op with its type,
# attributes and location). Where golden/X.mir exists, `mtc X.tdsl --emit=ir` must print
# it byte for byte.
src=${top_srcdir:-.}
build=${top_builddir:-.}
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/fe-examples.$$
trap 'rm -f "$tmp"' EXIT
pass=0 fail=0

for f in "$src"/examples/*.tdsl; do
	x=$(basename "$f" .tdsl)
	if ! "$build/tests/frontend/fedump" "$f" >"$tmp" 2>&1; then
		echo "FAIL: $x: does not compile:"
		sed 's/^/  /' "$tmp"
		fail=$((fail + 1))
	elif ! cmp -s "$tmp" "$src/tests/frontend/golden/$x.fe"; then
		echo "FAIL: $x: the listing differs from tests/frontend/golden/$x.fe:"
		diff "$src/tests/frontend/golden/$x.fe" "$tmp" | head -20
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	[ -f "$src/tests/frontend/golden/$x.mir" ] || continue
	# run from the source tree so the file name in the IR is examples/X.tdsl
	if (cd "$src" && "$MTC" "examples/$x.tdsl" --emit=ir) >"$tmp" 2>&1 &&
	   cmp -s "$tmp" "$src/tests/frontend/golden/$x.mir"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $x: --emit=ir differs from tests/frontend/golden/$x.mir:"
		diff "$src/tests/frontend/golden/$x.mir" "$tmp" | head -20
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
