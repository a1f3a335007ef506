#!/bin/sh
# bad.sh: each tests/ir/bad/*.mir is rejected with exit status 1 (no crash), and its first
# diagnostic is the one its first line announces: `# expect: LINE:COL: error: MESSAGE`; and a
# warning after parsing is at its source's line (the model line's file).
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
# After parsing, diagnostics are at the locations the .mir carries (@LINE:COL), which are in
# the source its model line names: that file's name, line and caret, not the .mir's
mtc=$(cd "$(dirname "$MTC")" && pwd)/$(basename "$MTC")
(cd "$top_srcdir" && "$mtc" tests/frontend/golden/ops.mir --emit=schedule -o "$tmp.out") 2>"$tmp.err"
if [ "$(sed -n 1,3p "$tmp.err")" = "tests/frontend/good/ops.tdsl:12:10: warning: param 'g' does not reach the loss 'l': it gets no gradient and is never trained
   param  g : f32[D] = ones();
          ^" ]; then
	pass=$((pass + 1))
else
	fail=$((fail + 1)); echo "FAIL: a .mir's warning is not at its source's line:"; cat "$tmp.err"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
