#!/bin/sh
# gpu.sh: every check of the CUDA target that needs a GPU, in one command, results to a file.
#
#   tests/cuda/gpu.sh prepare DIR       compile everything into DIR; no GPU needed (the build
#                                       tree's mtc, C backend reference losses computed here)
#   tests/cuda/gpu.sh run DIR [FILE]    run DIR on this machine's GPU; needs only DIR, the
#                                       source tree and, for the timing, python3 with torch;
#                                       appends the results to FILE (default DIR/results.txt)
#   tests/cuda/gpu.sh                   both, here ($top_builddir/tests/cuda/gpu); in `make
#                                       check` (MTC_GPU_BENCH=0: no timing)
# With the device tool (whose machine has CUDA 13 and PyTorch, but not mtc's build deps):
#   here, in the checkout the tool sends: sh tests/cuda/gpu.sh prepare .gpu  (.gitignore'd)
#   run(command="sh tests/cuda/gpu.sh run .gpu $OUT/gpu.txt", carry=[".gpu"], timeout_s=600)
#
# run: every op case's CUDA module against the interpreter (tests/ops/ops --replay); per example 5 steps
# close to the C backend (close(), below; default arch, the sm_90 cubin, and the tiled GEMM
# kernels with MTC_NO_CUBLAS=1), under 50% and 35% budgets (or the smallest the planner meets)
# losses identical to the unbudgeted run with peak_bytes within the budget, in check mode too,
# compute-sanitizer on one step at 35%, the median step against the modeled one, a trace of a
# step (mtc-run --trace), and one held (MTC_TRACE_HOLD, for bench/calibrate.py); then the
# transformer scaled up and ResNet-18 at 224x224 (traced, held too): step time
# against PyTorch's, with and without a budget. Environment: MTC_GPU_SAN=0 (no compute-sanitizer),
# MTC_GPU_SAN_ONLY="NAME..." (only those examples), MTC_GPU_SAN_TIMEOUT (s, default 120),
# MTC_GPU_TSTEPS (timed steps per module, default 10), MTC_GPU_STEPS (the scaled transformer's,
# default 20), MTC_GPU_BENCH=0 (neither the scaled transformer nor ResNet-18 timed),
# MTC_GPU_BIG (the transformer's -D options; the issue's GPT: d=1024, 12 layers, 8 x 512
# tokens), MTC_GPU_R18 (ResNet-18's), MTC_GPU_COMPILE=1 (torch.compile timed too).
# On 2026-11-27 on an H200: bench/results/gpu.md.
# Without a GPU it says so and counts one skip. Ends with `N passed, N failed, N skipped`.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
# the scaled-up transformer (head width D / H stays 16: the model scales scores by 0.25)
BIG=${MTC_GPU_BIG:-"-D B=8 -D S=512 -D D=1024 -D H=64 -D L=12 -D V=8192"}
# ResNet-18 (bench/resnet18.tdsl) at 224x224, batch 64
R18=${MTC_GPU_R18:-"-D B=64 -D S=224"}
STEPS=${MTC_GPU_STEPS:-20}
pass=0 fail=0 skip=0

prepare() {
	P=$1
	rm -rf "$P" && mkdir -p "$P/bin" || return 1
	cp "$top_builddir/mtc-run" "$top_builddir/tests/cuda/drive" "$top_builddir/tests/ops/ops" "$P/bin/" || return 1
	# every op case's CUDA module and the interpreter's results (tests/ops/ops.c)
	mkdir -p "$P/ops" "$P/ops-c" &&
	OUTDIR="$P/ops-c" "$top_builddir/tests/ops/ops" --prepare "$P/ops" >"$P/ops-prepare.out" 2>&1 ||
		{ tail -20 "$P/ops-prepare.out"; return 1; }
	rm -rf "$P/ops-c"
	# the examples and the scaled transformer, MTC_GPU_JOBS (default 2) at a time
	jobs=0
	for e in big r18 "$top_srcdir"/examples/*.tdsl; do
		{ case $e in big) prep_big ;; r18) prep_r18 ;; *) prep_example "$e" ;; esac || touch "$P/failed"; } &
		jobs=$((jobs + 1))
		[ $((jobs % ${MTC_GPU_JOBS:-2})) -eq 0 ] && wait
	done
	wait
	[ ! -e "$P/failed" ] || return 1
	sort -o "$P/plan.txt" "$P/plan.txt" && sort -o "$P/model.txt" "$P/model.txt" || return 1
	libs "$P" || return 1
	du -sh "$P"
}

# One example: its modules (default arch, sm_90 cubin, 50% and 35% budgets or the smallest the
# planner meets), the C backend's losses, the modeled step times.
prep_example() {
	n=$(basename "$1" .tdsl)
	"$MTC" "$1" --target=cuda -o "$P/$n.so" &&
	"$MTC" "$1" --target=cuda --arch=sm_90 -o "$P/$n-sm90.so" &&
	"$MTC" "$1" -o "$P/$n-c.so" && "$P/bin/drive" "$P/$n-c.so" 5 >"$P/$n.ref" || return 1
	rm -f "$P/$n-c.so" "$P/$n-c.h"
	budget "$1" "$P/$n-b.so" "" 50% || return 1
	echo "$n budget $pct" >>"$P/plan.txt"
	modeled "$1" "$n" "" || return 1
	modeled "$1" "$n-b" "--mem-budget=$pct" || return 1
	budget "$1" "$P/$n-b35.so" "" 35% || return 1
	echo "$n budget35 $pct" >>"$P/plan.txt"
	modeled "$1" "$n-b35" "--mem-budget=$pct"
}

# ResNet-18 at ImageNet's size (bench/resnet18.tdsl, $R18), with and without a 50% budget
# (about 20 s to build both here).
prep_r18() {
	x=$top_srcdir/bench/resnet18.tdsl
	"$MTC" "$x" $R18 --target=cuda --arch=sm_90 -o "$P/r18.so" &&
	budget "$x" "$P/r18-b.so" "$R18 --arch=sm_90" 50% || return 1
	echo "r18 $R18 budget $pct" >>"$P/plan.txt"
	modeled "$x" r18 "$R18 --arch=sm_90" &&
	modeled "$x" r18-b "$R18 --arch=sm_90 --mem-budget=$pct"
}

# The transformer scaled up, with and without a 50% budget; at B=4 also on the C backend
# (2 steps of mtc-run, about a minute), whose losses the GPU's are checked against.
prep_big() {
	x=$top_srcdir/examples/transformer.tdsl
	"$MTC" "$x" $BIG --target=cuda --arch=sm_90 -o "$P/big.so" &&
	"$MTC" "$x" $BIG -D B=4 --target=cuda --arch=sm_90 -o "$P/big-B4.so" &&
	"$MTC" "$x" $BIG -D B=4 -o "$P/big-B4-c.so" &&
	"$top_builddir/mtc-run" "$P/big-B4-c.so" --steps 2 >"$P/big-B4.ref" || return 1
	rm -f "$P/big-B4-c.so" "$P/big-B4-c.h"
	budget "$x" "$P/big-b.so" "$BIG --arch=sm_90" 50% || return 1
	echo "big $BIG budget $pct" >>"$P/plan.txt"
	modeled "$x" big "$BIG --arch=sm_90" &&
	modeled "$x" big-b "$BIG --arch=sm_90 --mem-budget=$pct"
}

# Model $1 (big, r18) unbudgeted and budgeted ($1.so, $1-b.so): median steps, finite losses,
# the budgeted module's the same; then PyTorch's (tests/cuda/torch_step.py $2) eager step,
# and with MTC_GPU_COMPILE=1 torch.compile's without and with activation_memory_budget=0.5.
bench() {
	for v in "" -b; do
		"$P/bin/mtc-run" "$P/$1$v.so" --steps "$STEPS" >"$P/$1$v.out" 2>&1
		t "$1$v: mtc runs" "tail -1 '$P/$1$v.out' | grep -q step_ms"
		grep ^step "$P/$1$v.out" >"$P/$1$v.steps"
		"$P/bin/mtc-run" "$P/$1$v.so" --steps 2 --trace "$P/$1$v.json" >/dev/null 2>&1
		MTC_TRACE_HOLD=3 "$P/bin/mtc-run" "$P/$1$v.so" --steps 2 --trace "$P/$1$v.hold.json" >/dev/null 2>&1
	done
	say "  mtc:        $(tail -1 "$P/$1.out")"
	say "  mtc budget: $(tail -1 "$P/$1-b.out")"
	t "$1: finite losses ($(head -2 "$P/$1.steps" | tr '\n' ' '))" "test -s '$P/$1.steps' && ! grep -q nan '$P/$1.steps'"
	t "$1: the budgeted module's losses are the unbudgeted one's" "cmp -s '$P/$1.steps' '$P/$1-b.steps'"
	if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
		say "  torch: not measured (no python3 with torch and CUDA here)"
		return
	fi
	python3 "$top_srcdir/tests/cuda/torch_step.py" $2 --steps "$STEPS" >"$P/$1-torch.out" 2>&1
	say "  torch:      $(tail -1 "$P/$1-torch.out")"
	if [ "${MTC_GPU_COMPILE:-0}" = 1 ]; then
		python3 "$top_srcdir/tests/cuda/torch_step.py" $2 --steps "$STEPS" --compile >>"$P/$1-torch.out" 2>&1
		say "  compile:    $(tail -1 "$P/$1-torch.out")"
		python3 "$top_srcdir/tests/cuda/torch_step.py" $2 --steps "$STEPS" --compile --budget 0.5 >>"$P/$1-torch.out" 2>&1
		say "  compile 0.5: $(tail -1 "$P/$1-torch.out")"
	fi
	awk '/step_ms/ { for (i = 1; i < NF; i++) if ($i == "step_ms") ms[FILENAME] = $(i + 1) }
	     /^torch_step_ms/ && !tm { tm = $2 }
	     END { a = ms[ARGV[1]]; b = ms[ARGV[2]]
	           if (a > 0 && tm > 0) printf "  ratio mtc/torch eager %.3f (goal <= 1.1)\n", a / tm
	           if (a > 0 && b > 0) printf "  budget overhead %.1f%% (goal <= 15%%)\n", 100 * (b / a - 1) }' \
	    "$P/$1.out" "$P/$1-b.out" "$P/$1-torch.out" | tee -a "$R"
}

# The libraries the copied programs and modules need that a machine with CUDA and PyTorch may
# lack, into $1/lib (after the modules are built: their imports count): protobuf-c; for LLVM
# (ops links it to build modules, which a replay does not) and OpenBLAS (mtc-run asks it its
# kernels' name unless OPENBLAS_CORETYPE is set; a CUDA module's runtime calls only
# openblas_set_num_threads, at its start) stand-ins of the same names that define, as
# functions doing nothing, every symbol the programs and modules import from the real library
# (drive and mtc-run open a module with RTLD_NOW: a symbol missing fails the load).
libs() {
	mkdir -p "$1/lib" || return 1
	for b in "$1"/bin/*; do
		ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
	done | sort -u | while read -r so path; do
		case $so in
		libLLVM*|libopenblas*)
			for m in "$1"/bin/* "$1"/*.so "$1"/ops/*.so; do
				nm -D --undefined-only "$m" 2>/dev/null
			done | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u >"$1/lib/imports" &&
			nm -D --defined-only "$path" | awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u |
				comm -12 - "$1/lib/imports" |
				awk 'BEGIN { print "int mtc_empty_lib;" } { print "void " $1 "(void) {}" }' >"$1/lib/${so%%.so*}.c" &&
			${CC:-cc} -shared -fPIC -Wl,-soname,"$so" -o "$1/lib/$so" "$1/lib/${so%%.so*}.c" || exit 1 ;;
		libprotobuf-c*|libglpk*) cp -L "$path" "$1/lib/" || exit 1 ;;
		esac
	done
}

# The modeled step time of model $1 built with flags $3, as "$2 modeled_ms T" into model.txt.
modeled() {
	"$MTC" "$1" --target=cuda $3 --emit=schedule -o "$P/$2.sched" || return 1
	echo "$2 $(tail -1 "$P/$2.sched" | awk '{ print $NF }')" >>"$P/model.txt"
}

# Budget $4 (50% or 35%), or the smallest percentage the planner says it meets; sets pct.
budget() {
	pct=$4
	if ! "$MTC" "$1" $3 --target=cuda --mem-budget=$pct -o "$2" 2>"$2.err"; then
		pct=$(sed -n 's/.*--mem-budget=\([0-9]*%\) or more.*/\1/p' "$2.err")
		[ -n "$pct" ] && "$MTC" "$1" $3 --target=cuda --mem-budget=$pct -o "$2" || { cat "$2.err"; return 1; }
	fi
	rm -f "$2.err"
}

say() { echo "$*" | tee -a "$R"; }
ok() { pass=$((pass + 1)); say "ok: $*"; }
bad() { fail=$((fail + 1)); say "FAIL: $*"; }
t() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# $3 steps (default 5) of $2 close to the reference $1 (`step K loss V` lines of drive or
# mtc-run): the first step within 1e-5 relative, the later ones within 1e-3 of the first loss:
# each step's update carries the last one's rounding (another summation order: cuBLAS's, the
# tiled kernels') into the next, and a model whose loss falls fast amplifies it (ResNet: 1.99
# to 0.066 in 5 steps, 2e-4 relative at step 4 on an H200). A nan or inf never passes.
close() {
	awk -v want="${3:-5}" 'NR==FNR && /^step/ { if (!n0++) f = $2; c[$2] = $4; next }
	     /^step/ { d = $4 - c[$2]; if (d < 0) d = -d; m = c[f] < 0 ? -c[f] : c[f]
	               if (d > ($2 == f ? 1e-5 : 1e-3) * (m > 1e-30 ? m : 1) || !($2 in c) || $4 ~ /nan|inf/) bad = 1; n++ }
	     END { exit bad || n != want }' "$1" "$2"
}

run() {
	P=$1 R=${2:-$1/results.txt}
	D=$P/bin/drive
	export LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
	export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
	if [ ! -x "$D" ]; then
		echo "FAIL: $P is not prepared (tests/cuda/gpu.sh prepare $P)"
		fail=1
		return
	fi
	"$D" "$P/mlp.so" 1 >"$P/probe.out" 2>&1
	if [ $? -eq 2 ]; then
		echo "skipped: no usable GPU: $(head -1 "$P/probe.out")" | tee -a "$R"
		skip=1
		return
	fi
	say "== tests/cuda/gpu.sh run, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)"
	say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)"
	say "plan: $(tr '\n' ';' <"$P/plan.txt")"
	SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
	[ "${MTC_GPU_SAN:-1}" = 0 ] && SAN=
	say "compute-sanitizer: ${SAN:-not found, not run}"
	"$P/bin/ops" --replay "$P/ops" >"$P/ops.out" 2>&1
	rc=$?
	say "ops: $(tail -1 "$P/ops.out")"
	grep FAIL "$P/ops.out" | head -20 | tee -a "$R"
	t "every op case's CUDA module against the interpreter (tests/ops/ops --replay, status $rc)" "[ $rc -eq 0 ] && tail -1 '$P/ops.out' | grep -q ', 0 skipped'"
	for so in "$P"/*-sm90.so; do
		n=$(basename "$so" -sm90.so)
		"$D" "$P/$n.so" 5 >"$P/$n.cuda" 2>"$P/$n.err"
		t "$n: 5 steps close to the C backend" "close '$P/$n.ref' '$P/$n.cuda'"
		"$D" "$so" 5 >"$P/$n.sm90" 2>>"$P/$n.err"
		t "$n: sm_90 cubin close to the C backend" "close '$P/$n.ref' '$P/$n.sm90'"
		MTC_NO_CUBLAS=1 "$D" "$P/$n.so" 5 >"$P/$n.noblas" 2>>"$P/$n.err"
		t "$n: tiled GEMM kernels (MTC_NO_CUBLAS=1) close to the C backend" "close '$P/$n.ref' '$P/$n.noblas'"
		grep ^step "$P/$n.cuda" >"$P/$n.s1"
		# a label or an id out of range: MTC_ERANGE with a message (the kernels' mtc_range), as
		# the C target returns, and the next step runs
		"$D" "$P/$n.so" 1 --bad-ids >"$P/$n.ids" 2>>"$P/$n.err"
		rc=$?
		grep -q '^bad ids: 0$' "$P/$n.ids" ||
			t "$n: ids and labels out of range: MTC_ERANGE ($(grep -c 'out of range' "$P/$n.ids") steps; $(tail -1 "$P/$n.err"))" "[ $rc -eq 0 ]"
		for b in b b35; do
			"$D" "$P/$n-$b.so" 5 >"$P/$n.$b" 2>>"$P/$n.err"
			grep ^step "$P/$n.$b" >"$P/$n.s2"
			t "$n $b: budgeted run gives identical losses" "test -s '$P/$n.s2' && cmp -s '$P/$n.s1' '$P/$n.s2'"
			t "$n $b: budgeted run: peak_bytes within budget ($(grep ^peak_bytes "$P/$n.$b"))" "awk '/^peak_bytes/ { f = 1; if (\$6 > 0 && \$2 > \$6) b = 1 } END { exit b || !f }' '$P/$n.$b'"
			MTC_CHECK=1 "$D" "$P/$n-$b.so" 5 >"$P/$n.$b.chk" 2>>"$P/$n.err"
			grep ^step "$P/$n.$b.chk" >"$P/$n.s3"
			t "$n $b: budgeted run in check mode: no finding, identical losses" "test -s '$P/$n.s3' && cmp -s '$P/$n.s1' '$P/$n.s3'"
			if [ -n "$SAN" ] && [ $b = b35 ] && case " ${MTC_GPU_SAN_ONLY:-$n} " in *" $n "*) true ;; *) false ;; esac; then
				for tool in memcheck racecheck; do
					timeout "${MTC_GPU_SAN_TIMEOUT:-120}" "$SAN" --tool $tool --error-exitcode 9 "$D" "$P/$n-$b.so" 1 >"$P/$n.$tool" 2>&1
					rc=$?
					tail -3 "$P/$n.$tool" | sed 's/^/    /' | tee -a "$R"
					t "$n $b: compute-sanitizer $tool clean on one planned step (status $rc)" "[ $rc -eq 0 ]"
				done
			fi
		done
		sed 's/^/  /' "$P/$n.err" | head -5 | tee -a "$R"
		say "  $n: $(tr '\n' ' ' <"$P/$n.cuda")"
		# measured (median step, untraced) against modeled step time; a trace of a step
		for v in "" -b -b35; do
			"$P/bin/mtc-run" "$P/$n$v.so" --steps "${MTC_GPU_TSTEPS:-10}" >"$P/$n$v.time" 2>&1
			"$P/bin/mtc-run" "$P/$n$v.so" --steps 2 --trace "$P/$n$v.json" >"$P/$n$v.ttime" 2>&1
			t "$n$v: mtc-run --trace writes a trace" "test -s '$P/$n$v.json'"
			# the same held (MTC_TRACE_HOLD): the GPU's time of each kernel without the launch
			# gaps, and the host's issue of each (bench/calibrate.py); "timed out" where the
			# step has more than the driver's queue holds (about 340 kernels with their events)
			MTC_TRACE_HOLD=2 "$P/bin/mtc-run" "$P/$n$v.so" --steps 3 --trace "$P/$n$v.hold.json" >"$P/$n$v.htime" 2>&1
			t "$n$v: a held trace ($(grep -o '"hold": "[a-z ]*"' "$P/$n$v.hold.json"))" "grep -q '\"hold\": \"\(held\|timed out\)\"' '$P/$n$v.hold.json'"
			say "  time $n$v: $(tail -1 "$P/$n$v.time") $(grep "^$n$v " "$P/model.txt")"
		done
	done
	if [ "${MTC_GPU_BENCH:-1}" = 0 ]; then
		return
	fi
	say "transformer scaled up ($(grep '^big ' "$P/plan.txt")), $STEPS steps, median:"
	bench big "--model transformer $BIG"
	# at B=4 against the C backend, and one step with the tiled GEMM kernels instead of cuBLAS
	"$P/bin/mtc-run" "$P/big-B4.so" --steps 2 >"$P/big-B4.out" 2>&1
	t "big at B=4: 2 steps close to the C backend ($(grep ^step "$P/big-B4.out" | tr '\n' ' '))" \
	  "close '$P/big-B4.ref' '$P/big-B4.out' 2"
	MTC_NO_CUBLAS=1 "$P/bin/mtc-run" "$P/big.so" --steps 1 >"$P/big-noblas.out" 2>&1
	say "  big with MTC_NO_CUBLAS=1: $(grep ^step "$P/big-noblas.out" | tr '\n' ' ')"
	say "ResNet-18 at ${R18:-(not built)} ($(grep '^r18 ' "$P/plan.txt")), $STEPS steps, median:"
	bench r18 "--model resnet18 $R18"
}

case $1 in
prepare) prepare "$2" || { echo "FAIL: prepare"; fail=1; } ;;
run) run "$2" "$3" ;;
*)
	if ! ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1 >/dev/null 2>&1 &&
	   ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		echo "skipped: no GPU here (no libcuda.so.1); run tests/cuda/gpu.sh on a machine with one"
		skip=1
	else
		out=$top_builddir/tests/cuda/gpu
		if prepare "$out" >"$top_builddir/tests/cuda/gpu-prepare.log" 2>&1; then
			run "$out"
		else
			echo "FAIL: prepare (see tests/cuda/gpu-prepare.log)"
			fail=1
		fi
	fi
	;;
esac
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
