#!/bin/sh
# diag.sh: every program in bad/ gets its expected first diagnostic, exit status 1, no crash.
#
# A bad program's first line is `# expect: LINE:COL: error: MESSAGE` (the file name is
# stripped from what mtc prints). Optional lines anywhere: `# also: TEXT` (a further line
# that must appear, file name stripped) and `# errors: N` (exactly N error lines).
dir=${top_srcdir:-.}/tests/frontend/bad
MTC=${MTC:-./mtc}
tmp=${TMPDIR:-/tmp}/fe-diag.$$
trap 'rm -f "$tmp"' EXIT
pass=0 fail=0

bad() {
	echo "FAIL: $1: $2"
	fail=$((fail + 1))
}

for f in "$dir"/*.tdsl; do
	name=$(basename "$f")
	want=$(sed -n '1s/^# expect: //p' "$f")
	if [ -z "$want" ]; then
		bad "$name" "no '# expect:' first line"
		continue
	fi
	"$MTC" "$f" --emit=ir >/dev/null 2>"$tmp"
	rc=$?
	if [ $rc -ne 1 ]; then
		bad "$name" "exit status $rc, expected 1"
		continue
	fi
	if grep -q -e 'internal error' -e 'Sanitizer' -e 'runtime error' "$tmp"; then
		bad "$name" "$(grep -m1 -e 'internal error' -e 'Sanitizer' -e 'runtime error' "$tmp")"
		continue
	fi
	got=$(head -n 1 "$tmp" | sed "s|^$f:||")
	if [ "$got" != "$want" ]; then
		bad "$name" "first diagnostic
  got:      $got
  expected: $want"
		continue
	fi
	ok=1
	sed -n 's/^# also: //p' "$f" >"$tmp.also"
	while IFS= read -r line; do
		if ! sed "s|^$f:||" "$tmp" | grep -q -x -F -e "$line"; then
			bad "$name" "missing diagnostic: $line"
			ok=0
		fi
	done <"$tmp.also"
	rm -f "$tmp.also"
	n=$(sed -n 's/^# errors: //p' "$f")
	if [ -n "$n" ] && [ "$(grep -c ': error: ' "$tmp")" -ne "$n" ]; then
		bad "$name" "$(grep -c ': error: ' "$tmp") errors reported, expected $n"
		ok=0
	fi
	[ $ok = 1 ] && pass=$((pass + 1))
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
