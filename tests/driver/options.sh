#!/bin/sh
# options.sh: every option mtc and mtc-run accept is in their --help and man page, every
# option their --help names is accepted, and unknown options are refused with a message.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
MTC=${MTC:-$top_builddir/mtc}
RUN=$top_builddir/mtc-run
dir=$top_builddir/tests/driver/out-opt
rm -rf "$dir" && mkdir -p "$dir" || exit 1
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi; }

# The options each parser matches, read from its source: "--name" literals in the parsers.
opts() { grep -ho '"--[a-z][a-z-]*=\{0,1\}' "$@" | tr -d '"=' | sort -u; }
mtc_opts=$(opts "$top_srcdir/driver/main.c" "$top_srcdir/passes/target.c")
run_opts=$(opts "$top_srcdir/driver/run.c")
$MTC --help >"$dir/mtc.help" 2>&1
$RUN --help >"$dir/run.help" 2>&1
check "mtc's options found in its source" '[ $(echo "$mtc_opts" | wc -l) -ge 15 ]'
check "mtc-run's options found in its source" '[ $(echo "$run_opts" | wc -l) -ge 7 ]'
for o in $mtc_opts -o -D -O0 -O3; do
	check "mtc --help documents $o" 'grep -q -- " $o" "$dir/mtc.help"'
	m=$(echo "$o" | sed 's/-/\\\\-/g')
	check "mtc.1 documents $o" 'grep -q -- "$m" "$top_srcdir/mtc.1"'
done
for o in $run_opts -D; do
	check "mtc-run --help documents $o" 'grep -q -- " $o" "$dir/run.help"'
	m=$(echo "$o" | sed 's/-/\\\\-/g')
	check "mtc-run.1 documents $o" 'grep -q -- "$m" "$top_srcdir/mtc-run.1"'
done

# Every --name=VALUE the help shows is accepted by the parser (a value of the right kind).
ex=$top_srcdir/examples/mlp.tdsl
for o in $(grep -o -- '--[a-z][a-z-]*=' "$dir/mtc.help" | sort -u); do
	case $o in
	--emit=) v=schedule ;; --stop-after=) v=simplify ;; --target=) v=mt3000 ;;
	--schedule=) v=mem ;; --solver=) v=tso ;; --arch=) v=sm_90 ;; --dump-dir=) v=$dir/dd ;;
	--mem-budget=) v=90% ;; --align=) v=64 ;; *) v=1 ;;
	esac
	extra=; [ "$o" = --stop-after= ] && extra=--emit=ir
	check "mtc accepts $o$v" '$MTC "$ex" --emit=schedule $extra "$o$v" >/dev/null 2>"$dir/err" || ! grep -q "unknown option\|invalid" "$dir/err"'
done
check "mtc refuses an unknown option" '! $MTC "$ex" --frobnicate >/dev/null 2>"$dir/err" && grep -q "unknown option .--frobnicate" "$dir/err"'
check "mtc refuses a misspelt option" '! $MTC "$ex" --mem-budgt=1G >/dev/null 2>"$dir/err" && grep -q "error" "$dir/err"'
check "mtc-run refuses an unknown option" '! $RUN "$ex" --frobnicate >/dev/null 2>"$dir/err" && grep -q "frobnicate" "$dir/err"'
check "mtc --version" '$MTC --version | grep -q "^mtc [0-9]"'
check "--help goes to stdout and exits 0" '$MTC --help 2>/dev/null | grep -q "^usage: mtc"'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
