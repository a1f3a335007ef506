#!/bin/sh
# planned.sh: a planned, laid-out .mir compiles to exactly the module it was dumped from:
# same order, same offsets (at=), same budget and solver; offsets that put two live tensors
# on the same bytes are an error, not silently laid out again.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
tmp=${TMPDIR:-/tmp}/mtc-planned.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
pass=0 fail=0
t() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi; }
for n in mlp skipnet transformer; do
	for tg in mt3000 cuda; do
		"$MTC" --target=$tg 2>&1 | grep -q "not built" && continue
		o="--target=$tg --mem-budget=35% --solver=tso"
		e=$top_srcdir/examples/$n.tdsl
		"$MTC" "$e" $o --emit=ir -o "$tmp/$n.mir" || { fail=$((fail + 1)); continue; }
		"$MTC" "$tmp/$n.mir" --target=$tg --emit=ir -o "$tmp/$n.2.mir"
		t "$n $tg: the planned IR round-trips byte for byte" "cmp -s '$tmp/$n.mir' '$tmp/$n.2.mir'"
		t "$n $tg: it records its budget and solver" "grep -Eq '^budget [0-9]* solver=\"tso(\+relax)?\" percent=35$' '$tmp/$n.mir'"
		"$MTC" "$e" $o --emit=h -o "$tmp/$n.a.h"
		"$MTC" "$tmp/$n.mir" --target=$tg --emit=h -o "$tmp/$n.b.h"
		t "$n $tg: MODEL.h from the .mir equals MODEL.h from the model" "cmp -s '$tmp/$n.a.h' '$tmp/$n.b.h'"
		"$MTC" "$e" $o --emit=schedule | grep -v '^solve_s ' >"$tmp/$n.a.s"
		"$MTC" "$tmp/$n.mir" --target=$tg --emit=schedule | grep -v '^solve_s ' >"$tmp/$n.b.s"
		# (less the planner's report, which a compile that plans nothing does not print)
		tail -n "$(wc -l <"$tmp/$n.b.s")" "$tmp/$n.a.s" >"$tmp/$n.a2.s"
		t "$n $tg: the schedule from the .mir equals that from the model" "cmp -s '$tmp/$n.a2.s' '$tmp/$n.b.s'"
		if [ $tg = mt3000 ]; then
			# the device kernels byte for byte (the host code numbers values in the order
			# the parser meets them, for check mode's names)
			"$MTC" "$e" $o --emit=c -o "$tmp/$n.a.c"
			"$MTC" "$tmp/$n.mir" --emit=c -o "$tmp/$n.b.c"
			t "$n: the device kernels from the .mir equal those from the model" "cmp -s '$tmp/$n.a-dev.c' '$tmp/$n.b-dev.c'"
		fi
	done
done
# Move one value of the step onto the bytes of another value live at the same time.
m=$tmp/skipnet.mir
"$MTC" "$top_srcdir/examples/skipnet.tdsl" --mem-budget=35% --solver=tso --emit=ir -o "$m"
# The first backward op of the step whose first operand also lives in the arena takes that
# operand's offset: both are live while the op runs.
awk '/^func step/ { s = 1 }
     s && / at=/ { for (i = 1; i <= NF; i++) if ($i ~ /^at=/) at[$2] = $i }
     s && !d && /^  bwd %/ && / at=/ { a = $7; sub(/,$/, "", a)
         if (a in at) { for (i = 1; i <= NF; i++) if ($i ~ /^at=/ && $i != at[a]) { $i = at[a]; d = 1 } } }
     { print }' "$m" >"$tmp/bad.mir"
"$MTC" "$tmp/bad.mir" -o "$tmp/bad.so" 2>"$tmp/bad.err"
rc=$?
t "offsets that overlap live tensors: exit 1 ($rc)" "[ $rc -eq 1 ]"
t "... naming both tensors ($(cat "$tmp/bad.err"))" "grep -q 'share bytes while both are live' '$tmp/bad.err'"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
