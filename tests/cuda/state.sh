#!/bin/sh
# state.sh: params and optimizer state under the budget on the CUDA target: the state-heavy
# examples and two others at 25% and at the smallest budget the planner meets: the module
# builds (NVRTC, ptxas, LLVM); its manifest marks as living in host memory exactly the decls the
# planned IR marks `host`; the host code queues one update on the host per `# on the host`
# update and copies home for the swap_homes (sync.sh checks every op's call). Without a
# GPU the module says why it cannot run; with one, 5 steps within 1e-5 relative of the module
# without a budget, and the measured peak within the budget.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
DRIVE=$top_builddir/tests/cuda/drive
PTXAS=${PTXAS:-}
out=$top_builddir/tests/cuda/out-state
rm -rf "$out" && mkdir -p "$out"
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
t() { if eval "$2"; then ok; else bad "$1"; fi; }
plan="--target=cuda --solver=tso"

# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): the GPT (Adam, state-heavy) only
models="mlp transformer gpt widemlp"
[ -z "${MTC_QUICK:-}" ] || models=gpt
for n in $models; do
	e=$top_srcdir/examples/$n.tdsl
	"$MTC" "$e" $plan --mem-budget=1% -o /dev/null 2>"$out/$n.floor"
	min=$(sed -n 's/.*--mem-budget=\([0-9]*\)% or more.*/\1/p' "$out/$n.floor")
	t "$n: the smallest budget is stated" "[ -n '$min' ]"
	for pct in 25 $min; do
		b="$plan --mem-budget=$pct%"
		m=$out/$n-$pct
		t "$n $pct%: builds MODEL.so, and its IR, LLVM and PTX (one compile)" "'$MTC' '$e' $b -o '$m.so' \
			--also-emit=ir:'$m.mir' --also-emit=llvm:'$m.ll' --also-emit=ptx:'$m.ptx'"
		[ -n "$PTXAS" ] && [ -x "$PTXAS" ] && t "$n $pct%: ptxas accepts the PTX" "'$PTXAS' -arch=sm_75 -o /dev/null '$m.ptx'"
		hd=$(grep -c '^\(param\|state\) .* host' "$m.mir")
		hu=$(grep -c '# on the host' "$m.mir")
		sh=$(grep -c ' = swap_home ' "$m.mir")
		t "$n $pct%: something lives in host memory" "[ $hd -gt 0 ]"
		# the manifest, one record a line
		grep -o '@mtc_cu_manifest = .*' "$m.ll" | sed 's/\\0A/\n/g' >"$m.man"
		t "$n $pct%: the manifest marks the $hd decls in host memory" "[ \$(grep -c '^tensor \(param\|state\) .* host\$' '$m.man') -eq $hd ]"
		t "$n $pct%: $hu updates on the host queued" "[ \$(grep -c 'call i32 @mtc_cu_host_update' '$m.ll') -eq $hu ] && grep -q '^hostupd $hu\$' '$m.man'"
		t "$n $pct%: copies home in the schedule" "[ \$(grep -c 'call i32 @mtc_cu_swap([^,]*, i32 1,' '$m.ll') -ge $sh ]"
		"$DRIVE" "$m.so" 5 >"$m.run" 2>"$m.err"
		rc=$?
		if [ $rc -eq 2 ]; then
			t "$n $pct%: create() without a GPU says why" "grep -q 'create failed' '$m.err'"
			skip=$((skip + 1))
		elif [ $rc -eq 0 ]; then
			[ -f "$out/$n.u" ] || { "$MTC" "$e" --target=cuda -o "$out/$n-u.so" && "$DRIVE" "$out/$n-u.so" 5 >"$out/$n.u"; }
			t "$n $pct%: losses within 1e-5 of the module without a budget" "awk 'NR==FNR && /^step/ { c[\$2] = \$4; next } /^step/ { d = \$4 - c[\$2]; if (d < 0) d = -d; m = c[\$2] < 0 ? -c[\$2] : c[\$2]; if (d > 1e-5 * (m > 1e-30 ? m : 1) || !(\$2 in c) || \$4 ~ /nan|inf/) bad = 1 } END { exit bad }' '$out/$n.u' '$m.run'"
			t "$n $pct%: peak within the budget" "awk '/^peak_bytes/ { exit !(\$6 > 0 && \$2 <= \$6) }' '$m.run'"
		else
			bad "$n $pct%: drive failed (status $rc): $(head -3 "$m.err")"
		fi
	done
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
