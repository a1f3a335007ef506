#!/bin/sh
# examples.sh: every example through --target=cuda: the intermediates (CUDA C, PTX accepted by
# ptxas, LLVM IR), MODEL.so for the default arch and for sm_90 with its API exported and the
# runtime hidden, and running it without a GPU: a clear message, a non-zero exit, no crash.
# With a GPU: 5 steps within 1e-4 relative of the C backend, and a 50% budget gives the same
# losses within budget; skipped with a message when there is no GPU.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
DRIVE=$top_builddir/tests/cuda/drive
RUN=$top_builddir/mtc-run
PTXAS=${PTXAS:-}
out=$top_builddir/tests/cuda/out
rm -rf "$out" && mkdir -p "$out"
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
t() { if eval "$2"; then ok; else bad "$1"; fi; }

gpu=no
# MTC_QUICK=1 (CI's sanitizer run, docs/reliability.md): the MLP, the transformer and ResNet only
for e in "$top_srcdir"/examples/*.tdsl; do
	n=$(basename "$e" .tdsl)
	[ -z "${MTC_QUICK:-}" ] || case $n in mlp | transformer | resnet) ;; *) continue ;; esac
	# two compiles write every intermediate and both modules (--also-emit), one per arch
	t "$n (default): builds MODEL.so and MODEL.h, with its CUDA C, PTX, LLVM IR, IR and header" \
	  "'$MTC' '$e' --target=cuda -o '$out/$n-default.so' --also-emit=cuda:'$out/$n.cu' --also-emit=ptx:'$out/$n.ptx' \
	     --also-emit=llvm:'$out/$n-75.ll' --also-emit=ir:'$out/$n.mir' --also-emit=h:'$out/$n-h.h' &&
	   test -f '$out/$n-default.so' && test -f '$out/$n-default.h'"
	t "$n (sm_90): builds MODEL.so and MODEL.h, with its PTX and LLVM IR" \
	  "'$MTC' '$e' --target=cuda --arch=sm_90 -o '$out/$n-sm_90.so' --also-emit=ptx:'$out/$n-90.ptx' \
	     --also-emit=llvm:'$out/$n.ll' && test -f '$out/$n-sm_90.so' && test -f '$out/$n-sm_90.h'"
	t "$n: --emit=cuda" "grep -q __global__ '$out/$n.cu'"
	t "$n: --emit=ptx" "grep -q '.target sm_75' '$out/$n.ptx'"
	t "$n: the PTX has the range flag the runtime reads (mtc_err)" "grep -q '^.global .align 8 .b8 mtc_err\[32\];' '$out/$n.ptx'"
	# --arch=sm_XX: PTX for compute_XX (the .target line says sm_XX), as nvcc -arch does
	t "$n: --emit=ptx --arch=sm_90" "grep -q '^.target sm_90\$' '$out/$n-90.ptx'"
	t "$n: --emit=ptx --arch=sm_80" "'$MTC' '$e' --target=cuda --arch=sm_80 --emit=ptx -o '$out/$n-80.ptx' && grep -q '^.target sm_80\$' '$out/$n-80.ptx'"
	t "$n: --arch=sm_50 fails with NVRTC's log" "! '$MTC' '$e' --target=cuda --arch=sm_50 --emit=ptx -o '$out/$n-50.ptx' 2>'$out/$n-50.err' && grep -q 'NVRTC could not compile the kernels for compute_50' '$out/$n-50.err' && grep -q 'gpu-architecture' '$out/$n-50.err'"
	if [ -n "$PTXAS" ] && [ -x "$PTXAS" ]; then
		t "$n: ptxas accepts the PTX" "'$PTXAS' -arch=sm_75 -o /dev/null '$out/$n.ptx' 2>'$out/$n.ptxas'"
		t "$n: ptxas accepts the sm_90 PTX" "'$PTXAS' -arch=sm_90 -o /dev/null '$out/$n-90.ptx' 2>'$out/$n.ptxas'"
		t "$n: ptxas refuses the sm_90 PTX for sm_80" "! '$PTXAS' -arch=sm_80 -o /dev/null '$out/$n-90.ptx' 2>/dev/null"
	fi
	t "$n: --emit=llvm" "grep -q 'define hidden i32 @mtc_cu_sched_forward' '$out/$n.ll'"
	t "$n: sm_90 host IR embeds compute_90 PTX and an sm_90 cubin" "grep -q '.target sm_90' '$out/$n.ll' && grep -q 'arch compute_90' '$out/$n.ll' && grep -q '@mtc_cu_cubin_arch = hidden constant i32 90' '$out/$n.ll'"
	t "$n: default host IR: compute_75 PTX, no cubin" "grep -q '.target sm_75' '$out/$n-75.ll' && grep -q '@mtc_cu_cubin_arch = hidden constant i32 0' '$out/$n-75.ll'"
	# GEMMs: cuBLAS when it is found at run time, else the generated tiled kernel (ptxas
	# checked it above with the rest of the PTX); each matmul names it
	t "$n: every matmul has its tiled fallback kernel in the PTX" "awk -v want=$(grep -c '= matmul ' "$out/$n.mir") -f '$top_srcdir/tests/cuda/gemms.awk' '$out/$n.ptx' '$out/$n-75.ll'"
	t "$n: --emit=h" "grep -q '${n}_forward' '$out/$n-h.h' && cmp -s '$out/$n-h.h' '$out/$n-default.h'"
	# a label or an id out of range: MTC_ERANGE (tests/cuda/gpu.sh asks it of the CUDA module;
	# here the C module answers, so the driver's check is checked)
	[ $n = transformer ] && t "$n: drive --bad-ids: MTC_ERANGE from the C module" \
	  "'$MTC' '$e' -o '$out/$n-ids.so' && '$DRIVE' '$out/$n-ids.so' 1 --bad-ids >'$out/$n.ids' && grep -q '^bad ids: 4\$' '$out/$n.ids'"
	for arch in default sm_90; do
		so=$out/$n-$arch.so
		syms=$(nm -D --defined-only "$so" 2>/dev/null)
		for s in ${n}_create ${n}_forward ${n}_destroy ${n}_error mtc_module mtc_last_error; do
			t "$n ($arch): exports $s" "echo \"\$syms\" | grep -q ' T $s\$'"
		done
		if grep -q '^ *train ' "$e"; then
			t "$n ($arch): exports ${n}_step" "echo \"\$syms\" | grep -q ' T ${n}_step\$'"
		fi
		t "$n ($arch): runtime symbols hidden" "! echo \"\$syms\" | grep -q mtc_cu_"
	done
	so=$out/$n-default.so
	"$DRIVE" "$so" 5 >"$out/$n.cuda" 2>"$out/$n.err"
	rc=$?
	if [ $rc -eq 2 ]; then
		# no GPU: create() must have failed cleanly, with a message; mtc-run likewise
		t "$n: create() without a GPU says why" "grep -q 'create failed: .*\\(no CUDA driver (libcuda.so.1) found\\|GPU\\|cuInit\\)' '$out/$n.err'"
		"$RUN" "$so" --steps 1 >"$out/$n.run" 2>&1
		rc=$?
		t "$n: mtc-run on the .so without a GPU exits non-zero, no crash (status $rc)" "[ $rc -ne 0 ] && [ $rc -lt 128 ]"
		t "$n: mtc-run says why" "grep -q 'no CUDA driver (libcuda.so.1) found\|no usable GPU\|no GPU' '$out/$n.run'"
		echo "$n: $(head -1 "$out/$n.err")"
	elif [ $rc -eq 0 ]; then
		gpu=yes
		"$MTC" "$e" -o "$out/$n-c.so" && "$DRIVE" "$out/$n-c.so" 5 >"$out/$n.c" 2>>"$out/$n.err"
		# the first loss within 1e-5, later ones within 1e-3 of the first (gpu.sh's close())
		t "$n: CUDA losses close to the C backend's" "awk 'NR==FNR && /^step/ { c[\$2] = \$4; next } /^step/ { d = \$4 - c[\$2]; if (d < 0) d = -d; m = c[0] < 0 ? -c[0] : c[0]; if (d > (\$2 == 0 ? 1e-5 : 1e-3) * (m > 1e-30 ? m : 1) || !(\$2 in c) || \$4 ~ /nan|inf/) bad = 1 } END { exit bad }' '$out/$n.c' '$out/$n.cuda'"
		if "$MTC" "$e" --target=cuda --mem-budget=50% -o "$out/$n-b.so" 2>"$out/$n.berr"; then
			"$DRIVE" "$out/$n-b.so" 5 >"$out/$n.b" 2>>"$out/$n.err"
			grep ^step "$out/$n.cuda" >"$out/$n.s1"
			grep ^step "$out/$n.b" >"$out/$n.s2"
			t "$n: 50% budget gives identical losses" "test -s '$out/$n.s2' && cmp -s '$out/$n.s1' '$out/$n.s2'"
			t "$n: 50% budget: peak_bytes within budget" "awk '/^peak_bytes/ { exit !(\$6 == 0 || \$2 <= \$6) }' '$out/$n.b'"
		else
			echo "note: $n: --mem-budget=50% not met: $(head -1 "$out/$n.berr")"
		fi
	else
		bad "$n: drive failed (status $rc): $(head -3 "$out/$n.err")"
	fi
done
if [ $gpu = no ]; then
	echo "skipped: GPU tests (losses against the C backend, 50% budget): no usable GPU here"
	skip=$((skip + 1))
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
