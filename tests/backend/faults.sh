#!/bin/sh
# faults.sh: does check mode catch a wrong plan? MTC_FAULT (a test aid, passes/fault.c)
# damages the lowered step of every example the way a faulty plan would: a wait left out
# (wait), a value moved onto bytes another live value holds (overlap), a value freed before
# its last reader (early), a swap_in run after its first reader (late), a recomputation left
# out (norec). Each faulty module runs two steps with MTC_CHECK=1 and must either be reported
# (check mode's message names the op and the tensors) or, for a dropped wait only, give the
# same losses as the sound module: the backend waits for every copy in flight whose bytes an
# op touches (backend-mt3000/host.c, hazards), so a plan's wait can never change a byte.
# MTC_FAULTS_N=K injections per example, kind and plan (default 2; docs/reliability.md gives
# the figures for 10).
MTC=${MTC:-./mtc}
RUN=$(dirname "$MTC")/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/faults
N=${MTC_FAULTS_N:-2}
mkdir -p "$out" || exit 1
: >"$out/tally"
pass=0 fail=0 inj=0 rep=0 harmless=0 none=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): the MLP only
models="mlp skipnet transformer"
[ -z "${MTC_QUICK:-}" ] || models=mlp
for e in $models; do
	# a plan that swaps, and one that only recomputes (copies priced out)
	for plan in "swap:--mem-budget=35% --solver=tso" "rec:--mem-budget=50% --solver=tso --copy-bw=1e3"; do
		pn=${plan%%:*} po=${plan#*:}
		clean=$out/$e-$pn
		"$MTC" "$src/examples/$e.tdsl" $po -O0 -o "$clean.so" || { bad "$e $pn: mtc"; continue; }
		MTC_CHECK=1 "$RUN" "$clean.so" --steps 2 >"$clean.out" 2>&1 || { bad "$e $pn: the sound module"; continue; }
		grep '^step' "$clean.out" >"$clean.loss"
		for kind in wait overlap early late norec; do
			k=0
			while [ $k -lt "$N" ]; do
				f=$out/$e-$pn-$kind-$k
				k=$((k + 1))
				if ! MTC_FAULT=$kind:$((k * 7 - 7)) "$MTC" "$src/examples/$e.tdsl" $po -O0 -o "$f.so" 2>"$f.err"; then
					grep -q 'no place for a fault' "$f.err" && { none=$((none + 1)); break; }
					bad "$e $pn $kind: mtc: $(cat "$f.err")"
					continue
				fi
				inj=$((inj + 1))
				MTC_CHECK=1 "$RUN" "$f.so" --steps 2 >"$f.out" 2>&1
				rc=$?
				if [ $rc -ne 0 ] && grep -q 'check: ' "$f.out"; then
					rep=$((rep + 1)) pass=$((pass + 1))
					echo "$kind reported" >>"$out/tally"
				elif [ $rc -eq 0 ] && grep '^step' "$f.out" | cmp -s - "$clean.loss" && [ $kind = wait ]; then
					harmless=$((harmless + 1)) pass=$((pass + 1))
					echo "$kind harmless" >>"$out/tally"
				else
					echo "$kind missed" >>"$out/tally"
					bad "$e $pn: not reported: $(sed -n 's/^mtc: MTC_FAULT: //p' "$f.err") (status $rc: $(tail -1 "$f.out"))"
				fi
			done
		done
	done
done
echo "faults: $inj injected: $rep reported by check mode, $harmless harmless (waits the backend" \
     "takes itself), $((inj - rep - harmless)) missed; $none kinds without a place in a plan"
sort "$out/tally" | uniq -c | awk '{ printf "  %-8s %-9s %d\n", $2, $3, $1 }'
[ "$inj" -gt 0 ] || bad "no fault was injected"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
