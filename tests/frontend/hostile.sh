#!/bin/sh
# hostile.sh: inputs meant to crash or hang a compiler get a clean diagnostic and exit 1.
#
# Each case is generated here (awk, deterministic), run under a time limit, and must exit
# with status 1 (no signal, no internal error, no sanitizer report) and print the expected
# text in its first diagnostic.
MTC=${MTC:-./mtc}
dir=${TMPDIR:-/tmp}/fe-hostile.$$
mkdir -p "$dir" || exit 1
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
limit=300
command -v timeout >/dev/null 2>&1 && to="timeout $limit" || to=

# check NAME EXPECTED-TEXT: run mtc on $dir/NAME.tdsl
check() {
	$to "$MTC" "$dir/$1.tdsl" --emit=ir >/dev/null 2>"$dir/err"
	rc=$?
	first=$(head -n 1 "$dir/err" | cut -c1-300)
	if [ $rc -ne 1 ]; then
		echo "FAIL: $1: exit status $rc, expected 1 ($first)"
		fail=$((fail + 1))
	elif grep -q -e 'internal error' -e 'Sanitizer' -e 'runtime error' "$dir/err"; then
		echo "FAIL: $1: $(grep -m1 -e 'internal error' -e 'Sanitizer' -e 'runtime error' "$dir/err")"
		fail=$((fail + 1))
	elif [ -n "$2" ] && ! printf '%s\n' "$first" | grep -q -F -e "$2"; then
		echo "FAIL: $1: first diagnostic '$first' lacks '$2'"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

# gen NAME AWK-STATEMENTS: write $dir/NAME.tdsl; p(s, n) prints s n times, h() and t() the
# head and tail of a model around one statement.
gen() {
	LC_ALL=C awk '
	function p(s, n) { while (n-- > 0) printf "%s", s }
	function h() { printf "model m {\n input x : f32[4];\n" }
	function t() { printf ";\n output x;\n}\n" }
	BEGIN { '"$2"' }' </dev/null >"$dir/$1.tdsl"
}

: >"$dir/empty.tdsl"
check empty "error: no model in this file"

gen garbage 'srand(1); for (i = 0; i < 1048576; i++) printf "%c", int(rand() * 255) + 1'
check garbage "error: "

printf 'model m {\n input x : f32[4];\000\000\n h = x\000;\n output h;\n}\n' >"$dir/nul.tdsl"
check nul "stray byte 0x00 in program"

gen parens 'h(); printf " h = "; p("(", 100000); printf "x"; p(")", 100000); t()'
check parens "brackets nested more than 256 deep"

gen braces 'h(); p("for i in 0..1 {", 100000); p("}", 100000); printf "h = x"; t()'
check braces "brackets nested more than 256 deep"

gen minus 'h(); printf " h = "; p("-", 100000); printf "x"; t()'
check minus "nested too deeply"

gen chain 'h(); printf " h = x"; p(" + x", 100000); t()'
check chain "expression nested more than 1000 deep"

gen ident 'h(); printf " h = "; p("a", 3000000); t()'
check ident "identifier of 3000000 characters"

gen comment 'printf "#"; p("c", 3000000); printf "\n"'
check comment "no model in this file"

gen bigloop 'h(); printf " h = x;\n for i in 0..1000000000 {\n  h = h + x;\n }\n h = h"; t()'
check bigloop "the model expands to more than 1000000 ops"

gen emptyloop 'h(); printf " for i in 0..1000000000000000000 { }\n h = x"; t()'
check emptyloop "the program expands to more than 10000000 steps"

# 2^59 inlined calls that make no ops: the work limit, not the op limit, stops them
gen expcalls 'printf "def f0(x) { return x; }\n"; for (k = 1; k < 60; k++) printf "def f%d(x) { return f%d(f%d(x)); }\n", k, k - 1, k - 1; h(); printf " h = f59(x)"; t()'
check expcalls "the program expands to more than 10000000 steps"

gen deepdefs 'printf "def g0(x) { return x; }\n"; for (k = 1; k < 1000; k++) printf "def g%d(x) { return g%d(x); }\n", k, k - 1; h(); printf " h = g999(x)"; t()'
check deepdefs "def calls nested more than 100 deep"

# calls inside deep expressions: the C stack is bounded by the evaluation depth limit
gen deepmix 'printf "def g0(x) { return x; }\n"; for (k = 1; k < 99; k++) { printf "def g%d(x) { return ", k; p("relu(", 250); printf "g%d(x)", k - 1; p(")", 250); printf "; }\n" } h(); printf " h = g98(x)"; t()'
check deepmix "expressions and calls nested more than 2500 deep"

gen constchain 'for (k = 0; k < 100000; k++) printf "const A%d = A%d + 1;\n", k, k + 1; printf "const A100000 = 0;\n"; h(); printf " h = x"; t()'
check constchain "nested more than 2500 deep"

gen bigarray 'h(); printf " param w[1000000000] : f32[4] = zeros()"; t()'
check bigarray "a param array of 1000000000 elements"

gen hugetensor 'h(); printf " param w : f32[65536, 65536, 65536] = zeros()"; t()'
check hugetensor "exceeds the target's memory outright"

gen manysyntax 'h(); for (i = 0; i < 100000; i++) printf "h = = ;\n"; printf "h = x"; t()'
check manysyntax "syntax error"
if [ "$(grep -c ': error: ' "$dir/err")" -gt 20 ]; then
	echo "FAIL: manysyntax: more than MAXERR (20) errors printed"
	fail=$((fail + 1))
fi

gen utf8 'h(); printf " h = x \303\227 2"; t()'
check utf8 "stray byte 0xc3 in program"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
