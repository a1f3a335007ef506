#!/bin/sh
# roundtrip.sh: each hand-written tests/ir/good/*.mir parses, verifies, and prints back byte for
# byte (--stop-after=frontend: no passes); printing what was printed gives the same bytes again.
top_srcdir=${top_srcdir:-.}
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/mtc-rt.$$
trap 'rm -f "$tmp".*' EXIT
pass=0 fail=0
for f in "$top_srcdir"/tests/ir/good/*.mir; do
	if "$MTC" "$f" --stop-after=frontend --emit=ir -o "$tmp.1.mir" 2>"$tmp.err" && cmp -s "$f" "$tmp.1.mir" &&
	   "$MTC" "$tmp.1.mir" --stop-after=frontend --emit=ir -o "$tmp.2.mir" 2>>"$tmp.err" && cmp -s "$tmp.1.mir" "$tmp.2.mir"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $f does not print back as itself:"
		cat "$tmp.err"
		[ -f "$tmp.1.mir" ] && diff "$f" "$tmp.1.mir" | head -20
	fi
	rm -f "$tmp.1.mir" "$tmp.2.mir"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
