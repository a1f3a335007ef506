#!/bin/sh
# bad.sh: each tests/ir/bad/*.mir is rejected with exit status 1 (no crash), and its first
# diagnostic is the one its first line announces: `# expect: LINE:COL: error: MESSAGE`.
top_srcdir=${top_srcdir:-.}
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/mtc-bad.$$
trap 'rm -f "$tmp".*' EXIT
pass=0 fail=0
for f in "$top_srcdir"/tests/ir/bad/*.mir; do
	want=$(sed -n '1s/^# expect: //p' "$f")
	"$MTC" "$f" --emit=ir -o "$tmp.out" 2>"$tmp.err"
	rc=$?
	got=$(head -n 1 "$tmp.err")
	if [ -z "$want" ]; then
		fail=$((fail + 1)); echo "FAIL: $f has no '# expect:' first line"
	elif [ "$rc" -ne 1 ]; then
		fail=$((fail + 1)); echo "FAIL: $f: exit status $rc, want 1"; cat "$tmp.err"
	elif [ "$got" != "$f:$want" ]; then
		fail=$((fail + 1)); echo "FAIL: $f"; echo "  want: $f:$want"; echo "  got:  $got"
	else
		pass=$((pass + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
