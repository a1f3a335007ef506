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
	--mem-budget=) v=90% ;; --align=) v=64 ;; --offload=) v=none ;; --also-emit=) v=ir:$dir/ae1.mir ;; *) v=1 ;;
	esac
	extra=; [ "$o" = --stop-after= ] && extra=--emit=ir
	check "mtc accepts $o$v" '$MTC "$ex" --emit=schedule $extra "$o$v" >/dev/null 2>"$dir/err" || ! grep -q "unknown option\|invalid" "$dir/err"'
done
check "mtc refuses an unknown option" '! $MTC "$ex" --frobnicate >/dev/null 2>"$dir/err" && grep -q "unknown option .--frobnicate" "$dir/err"'
check "mtc refuses a misspelt option" '! $MTC "$ex" --mem-budgt=1G >/dev/null 2>"$dir/err" && grep -q "error" "$dir/err"'
check "mtc-run refuses an unknown option" '! $RUN "$ex" --frobnicate >/dev/null 2>"$dir/err" && grep -q "frobnicate" "$dir/err"'
check "mtc --version" '$MTC --version | grep -q "^mtc [0-9]"'
check "--help goes to stdout and exits 0" '$MTC --help 2>/dev/null | grep -q "^usage: mtc"'
# Every option taking a value takes it as --opt=VALUE or --opt VALUE, as getopt_long does.
for o in $(grep -o -- '--[a-z][a-z-]*=' "$dir/mtc.help" | sort -u); do
	o=${o%=}
	case $o in
	--emit) v=schedule ;; --stop-after) continue ;; --target) v=mt3000 ;;
	--schedule) v=mem ;; --solver) v=tso ;; --arch) v=sm_90 ;; --dump-dir) v=$dir/dd2 ;;
	--mem-budget) v=90% ;; --align) v=64 ;; --offload) v=none ;; --also-emit) v=ir:$dir/ae2.mir ;; *) v=1 ;;
	esac
	check "mtc accepts $o $v" '$MTC "$ex" --emit=schedule "$o" "$v" -o /dev/null 2>"$dir/err" || ! grep -q "unknown option\|invalid\|more than one input" "$dir/err"'
done
check "--mem-budget 50% is --mem-budget=50%" '$MTC "$ex" --mem-budget 50% --solver tso --emit schedule -o "$dir/a.txt" &&
	$MTC "$ex" --mem-budget=50% --solver=tso --emit=schedule -o "$dir/b.txt" &&
	[ "$(grep -v ^solve_s "$dir/a.txt")" = "$(grep -v ^solve_s "$dir/b.txt")" ]'
check "an option missing its value" '! $MTC "$ex" --mem-budget 2>"$dir/err" && grep -q "mem-budget needs an argument" "$dir/err"'
check "sizes: 2MB and 1.5M" '$MTC "$ex" --mem-budget=2MB --solver=tso --emit=schedule -o "$dir/c.txt" &&
	grep -q "^budget_bytes 2097152$" "$dir/c.txt" && $MTC "$ex" --mem-budget=1.5M --solver=tso --emit=schedule 2>&1 | grep -q "1572864"'
check "--help documents 2MB and 1.5M" 'grep -q "2MB" "$dir/mtc.help" && grep -q "1.5M" "$dir/mtc.help"'
# numbers out of range are refused, not wrapped (strtoull takes "-1" as 2^64 - 1)
for bad in --seed=-1 "--seed= 3" --seed=+3 --seed=18446744073709551616 --solver-nodes=99999999999999999999; do
	check "$bad refused" '! $MTC "$ex" "$bad" --emit=schedule -o /dev/null 2>"$dir/err" && grep -q "invalid --" "$dir/err"'
done
check "--seed=18446744073709551615 taken" '$MTC "$ex" --seed=18446744073709551615 --emit=schedule -o /dev/null'
# "did you mean" for an option, the reason a file cannot be read
check "a misspelt option: did you mean" '! $MTC "$ex" --mem-buget=50% 2>"$dir/err" &&
	grep -q "unknown option .--mem-buget=50%.; did you mean .--mem-budget.?" "$dir/err"'
check "cannot read: why" '! $MTC "$dir/none.tdsl" 2>"$dir/err" && grep -q "cannot read .*: No such file or directory" "$dir/err"'
check "cannot read a directory: why" '! $MTC "$dir" 2>"$dir/err" && grep -q "cannot read .*: Is a directory" "$dir/err"'
# -D for a const the model lacks, and params that do not reach the loss: warnings
check "-D of a const the model lacks warns" '$MTC "$ex" -D LL=3 --emit=ir -o /dev/null 2>"$dir/err" &&
	grep -qx "mtc: warning: -D LL: the model has no const LL" "$dir/err"'
check "-D of a const the model has: no warning" '$MTC "$ex" -D L=3 --emit=ir -o /dev/null 2>"$dir/err" && [ ! -s "$dir/err" ]'
check "mtc-run warns too" '$RUN "$ex" -D LL=3 --steps 0 >/dev/null 2>"$dir/err" && grep -q "warning: -D LL" "$dir/err"'
printf 'model m {\n  input x : f32[2, 3];\n  param w : f32[3, 1] = ones();\n  param u : f32[3, 1] = ones();\n  loss = mean(x @ w, 0);\n  l2 = mean(loss, 0);\n  train l2 with sgd(lr = 0.1);\n}\n' >"$dir/unused.tdsl"
check "a param that does not reach the loss: a warning at the param" '$MTC "$dir/unused.tdsl" --emit=ir -o /dev/null 2>"$dir/err" &&
	grep -q "unused.tdsl:4:9: warning: param .u. does not reach the loss" "$dir/err" && ! grep -q "param .w." "$dir/err"'
check "the examples: no warning" 'for e in "$top_srcdir"/examples/*.tdsl; do $MTC "$e" --emit=ir -o /dev/null 2>>"$dir/ex.err" || exit 1; done; [ ! -s "$dir/ex.err" ]'
# --dump-dir without -o or --emit builds into the dump directory, not over ./MODEL.so
mkdir -p "$dir/cwd" && : >"$dir/cwd/mlp.so" && : >"$dir/cwd/mlp.h"
absex=$(cd "$(dirname "$ex")" && pwd)/mlp.tdsl
check "--dump-dir: the module in the dump directory" '(cd "$dir/cwd" && $MTC "$absex" --dump-dir=dump -D L=1) &&
	[ -s "$dir/cwd/dump/mlp.so" ] && [ -s "$dir/cwd/dump/mlp.h" ] && [ ! -s "$dir/cwd/mlp.so" ] && [ ! -s "$dir/cwd/mlp.h" ]'
check "--dump-dir with -o: the module where -o says" '$MTC "$ex" -D L=1 --dump-dir="$dir/d3" -o "$dir/x.so" && [ -s "$dir/x.so" ] && ! ls "$dir/d3"/*.so 2>/dev/null'
# --also-emit: the intermediates of the compile that builds the module, byte for byte those
# of --emit (the same plan); refused where the target cannot write them
check "--also-emit: IR, schedule, C and header beside the module, as --emit writes them" \
	'$MTC "$ex" -D L=4 --mem-budget=80% -o "$dir/ae.so" --also-emit=ir:"$dir/ae.mir" --also-emit schedule:"$dir/ae.sched" \
	  --also-emit=c:"$dir/ae.c" --also-emit=h:"$dir/ae2.h" && [ -s "$dir/ae.so" ] &&
	 for k in ir:mir schedule:sched c:c; do $MTC "$ex" -D L=4 --mem-budget=80% --emit=${k%:*} -o "$dir/e.${k#*:}" &&
	   cmp -s "$dir/e.${k#*:}" "$dir/ae.${k#*:}" || exit 1; done && cmp -s "$dir/ae-dev.c" "$dir/e-dev.c" && cmp -s "$dir/ae.h" "$dir/ae2.h"'
check "--also-emit with --emit: both" '$MTC "$ex" -D L=2 --emit=ir -o "$dir/b.mir" --also-emit=schedule:"$dir/b.sched" &&
	grep -q "^mtc-ir" "$dir/b.mir" && grep -q "^peak_live_bytes" "$dir/b.sched"'
check "--also-emit=c with --emit=schedule" '$MTC "$ex" -D L=2 --emit=schedule -o "$dir/c.sched" --also-emit=c:"$dir/c.c" &&
	grep -q "^peak_live_bytes" "$dir/c.sched" && [ -s "$dir/c.c" ] && [ -s "$dir/c-dev.c" ]'
check "--also-emit needs KIND:FILE" '! $MTC "$ex" --also-emit=ir 2>"$dir/err" && grep -q "expected KIND:FILE" "$dir/err"'
check "--also-emit of a kind the target lacks" '! $MTC "$ex" -o "$dir/n.so" --also-emit=ptx:"$dir/n.ptx" 2>"$dir/err" &&
	grep -q "target .mt3000. cannot --also-emit=ptx" "$dir/err" && [ ! -e "$dir/n.so" ]'
check "--also-emit not with --stop-after" '! $MTC "$ex" --emit=ir --stop-after=autodiff --also-emit=ir:"$dir/s.mir" 2>"$dir/err" &&
	grep -q "does not go with" "$dir/err"'
# Kernels of one body are one function: a deeper transformer has more table entries, the same
# functions (each block's kernels are its first block's)
kfuncs() { grep -c "^k[0-9]*(const uint64_t" "$1"; }
kentries() { sed -n "/__kernels\[\] = {/,/};/p" "$1" | grep -o "k[0-9]*," | wc -l; }
check "kernels of one body are one function (the transformer at 2 and 4 blocks)" \
	'for L in 2 4; do $MTC "$top_srcdir/examples/transformer.tdsl" -D L=$L --emit=c -o "$dir/tf$L.c" || exit 1; done &&
	 [ "$(kfuncs "$dir/tf2-dev.c")" = "$(kfuncs "$dir/tf4-dev.c")" ] && [ "$(kentries "$dir/tf4-dev.c")" -gt "$(kentries "$dir/tf2-dev.c")" ] &&
	 [ "$(kfuncs "$dir/tf4-dev.c")" -lt "$(kentries "$dir/tf4-dev.c")" ]'
# --trace: CUDA modules write one; the interpreter refuses, a C module says it wrote none
check "mtc-run --trace refuses the interpreter" '! $RUN "$ex" --trace "$dir/t.json" >/dev/null 2>"$dir/err" && grep -q "needs a compiled CUDA module" "$dir/err"'
check "mtc-run --trace on a C module: a warning, no file" '"$MTC" "$ex" -o "$dir/tr.so" && $RUN "$dir/tr.so" --trace "$dir/t.json" >/dev/null 2>"$dir/err" && grep -q "no trace written" "$dir/err" && [ ! -e "$dir/t.json" ]'
# MTC_CFLAGS reaches the C compiler's command (after mtc's own flags, so that its -O0 or -g
# wins; CI's sanitizer run has its own MTC_CFLAGS, kept)
check "MTC_CFLAGS reaches the compiler" 'MTC_CFLAGS="${MTC_CFLAGS:-} -Wl,-soname,mtcprobe.so" "$MTC" "$ex" -o "$dir/g.so" && readelf -d "$dir/g.so" | grep -q "SONAME.*mtcprobe.so"'
check "MTC_CFLAGS with a bad flag: the compiler's command is shown" '! MTC_CFLAGS=--no-such-flag-mtc "$MTC" "$ex" -o "$dir/bad.so" 2>"$dir/err" && grep -q -- "--no-such-flag-mtc" "$dir/err"'
# A module named without a directory is the file in the current directory (dlopen alone
# would search the library path for it)
absrun=$(cd "$(dirname "$RUN")" && pwd)/mtc-run
check "mtc-run NAME.so runs ./NAME.so" '(cd "$dir" && "$absrun" tr.so --steps 1 >/dev/null 2>err)'
check "mtc-run NAME.so: a missing module is named" '(cd "$dir" && ! "$absrun" nosuch.so --steps 1 >/dev/null 2>err) && grep -q "nosuch.so" "$dir/err"'
# An output that is a device (here a link to /dev/null) takes it alone: nothing is written
# beside it (a header, --emit=c's device part, the CUDA host object), and the compile succeeds
ln -sf /dev/null "$dir/sink.so" && ln -sf /dev/null "$dir/sink.c"
check "-o /dev/null: no header beside it" '"$MTC" "$ex" -D L=2 -o "$dir/sink.so" && [ ! -e "$dir/sink.h" ]'
check "--emit=c -o /dev/null: no F-dev.c beside it" '"$MTC" "$ex" -D L=2 --emit=c -o "$dir/sink.c" && [ ! -e "$dir/sink-dev.c" ]'
if "$MTC" "$ex" -D L=2 --data-parallel --ranks=2 --emit=h -o /dev/null 2>/dev/null; then
	check "--data-parallel -o /dev/null: nothing beside it" '"$MTC" "$ex" -D L=2 --data-parallel --ranks=2 -o "$dir/sink.so" &&
		"$MTC" "$ex" -D L=2 --data-parallel --ranks=2 --emit=c -o "$dir/sink.c" &&
		[ ! -e "$dir/sink.h" ] && [ ! -e "$dir/sink-dev.c" ] && [ ! -e "$dir/sink-dp.c" ]'
fi
if "$MTC" "$ex" -D L=2 --target=cuda --emit=h -o /dev/null 2>/dev/null; then
	check "--target=cuda -o /dev/null: nothing beside it" '"$MTC" "$ex" -D L=2 --target=cuda -o "$dir/sink.so" &&
		[ ! -e "$dir/sink.h" ] && [ ! -e "$dir/sink.so.o" ]'
fi
# An output whose header cannot be written: an error naming it, before any temporary directory
mkdir -p "$dir/tmp"
check "-o in a missing directory: an error, no temporary directory left" '! TMPDIR="$dir/tmp" "$MTC" "$ex" -D L=2 -o "$dir/no/m.so" 2>"$dir/err" && grep -q "cannot write .*no/m.h" "$dir/err" && [ -z "$(ls "$dir/tmp")" ]'
if "$MTC" "$ex" -D L=2 --data-parallel --ranks=2 --emit=h -o /dev/null 2>/dev/null; then
	check "--data-parallel -o in a missing directory: no temporary directory left" '! TMPDIR="$dir/tmp" "$MTC" "$ex" -D L=2 --data-parallel --ranks=2 -o "$dir/no/m.so" 2>"$dir/err" && grep -q "cannot write .*no/m.h" "$dir/err" && [ -z "$(ls "$dir/tmp")" ]'
fi
# The man pages say what mtc-run does with a module, and point to installed documents
check "mtc-run.1 describes running a module" '! grep -q "not supported" "$top_srcdir/mtc-run.1" && grep -q "mtc_module" "$top_srcdir/mtc-run.1"'
check "the docs cite no file outside the project" '! grep -n "spec/\|\.\./shared" "$top_srcdir"/docs/*.md "$top_srcdir"/README.md "$top_srcdir"/mtc.1 "$top_srcdir"/mtc-run.1'
check "the documents the man page names are installed" 'for d in tdsl.md ir.md glossary.md planner.md runtime.md; do grep -q "docs/$d" "$top_srcdir/Makefile.am" || exit 1; done'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
