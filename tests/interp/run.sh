#!/bin/sh
# run.sh: mtc-run end to end on the interpreter: the examples train, params files load back to
# the same losses, and bad tensor files are errors that name the tensor (never crashes).
: "${top_srcdir:=.}" "${top_builddir:=.}"
RUN=$top_builddir/mtc-run
MTC=${MTC:-$top_builddir/mtc}
EX=$top_srcdir/examples
T=$(mktemp -d "${TMPDIR:-/tmp}/mtc-run-test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
no() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$T/err" ] && sed 's/^/  /' "$T/err" | head -5; }
check() { if [ "$2" -eq 0 ]; then ok "$1"; else no "$1"; fi; }

# expect_error WHAT NEEDLE -- mtc-run args: exit status 1 (not a signal) and NEEDLE in stderr
expect_error() {
	what=$1 needle=$2
	shift 3
	"$RUN" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$needle" "$T/err"; then ok "$what"; else
		echo "  exit $rc, wanted 1 and '$needle'"; no "$what"; fi
}

# st FILE HEADER NBYTES: a safetensors file with that JSON header and NBYTES bytes of zeros
st() {
	n=${#2}
	{ printf "$(printf '\\%03o' $((n % 256)) $((n / 256)) 0 0 0 0 0 0)"
	  printf '%s' "$2"
	  head -c "$3" /dev/zero; } >"$1"
}

# losses FILE: the loss column of the step lines
losses() { sed -n 's/^step [0-9]* loss //p' "$1"; }

# Every example trains five steps; the loss falls at every step; the summary line is there.
for m in mlp skipnet transformer; do
	"$RUN" "$EX/$m.tdsl" --steps 5 >"$T/$m.out" 2>"$T/err"
	rc=$?
	n=$(grep -c '^step [1-5] loss [-0-9.e+]*$' "$T/$m.out")
	dec=$(losses "$T/$m.out" | awk 'NR > 1 && $1 >= prev { bad = 1 } { prev = $1 } END { print bad ? 1 : 0 }')
	sum=$(grep -c '^peak_bytes [1-9][0-9]* plan_bytes 0 budget_bytes 0 step_ms [0-9.]*$' "$T/$m.out")
	check "$m trains 5 steps with falling loss" $((rc + (n != 5) + dec + (sum != 1)))
	cat "$T/$m.out"
done
digits=$(losses "$T/mlp.out" | head -1 | tr -d '.-' | sed 's/e.*//; s/^0*//')
check "losses print with at least 9 significant digits" $(( ${#digits} < 9 ))

# The rest runs small versions with pinned sizes, so it neither depends on nor waits for the
# examples' sizes (each -D overrides a const of the example).
MLP="$EX/mlp.tdsl -D B=32 -D IN=64 -D D=32 -D L=2 -D C=10"
SKIP="$EX/skipnet.tdsl -D B=32 -D IN=16 -D D=32 -D N=2 -D O=8"
TRF="$EX/transformer.tdsl -D B=2 -D S=16 -D D=32 -D L=1 -D V=64"
for m in MLP SKIP TRF; do
	eval "args=\$$m"
	"$RUN" $args --steps 5 >"$T/$m.out" 2>"$T/err"
	check "small $m trains" $?
done

# The same run again gives the same numbers; another seed gives others.
"$RUN" $SKIP --steps 5 >"$T/again" 2>"$T/err"
losses "$T/again" >"$T/a"; losses "$T/SKIP.out" >"$T/b"
cmp -s "$T/a" "$T/b"
check "runs are deterministic" $?
"$RUN" $SKIP --steps 5 --seed 3 >"$T/seed3" 2>"$T/err"
losses "$T/seed3" >"$T/a"
cmp -s "$T/a" "$T/b"
check "--seed changes the initial values" $((! $?))

# Initial params saved and loaded back give the same losses.
for m in MLP TRF; do
	eval "args=\$$m"
	"$RUN" $args --steps 0 --save-params "$T/$m.p0" >/dev/null 2>"$T/err" &&
	"$RUN" $args --steps 5 --params "$T/$m.p0" >"$T/$m.loaded" 2>"$T/err"
	rc=$?
	losses "$T/$m.loaded" >"$T/a"; losses "$T/$m.out" >"$T/b"
	cmp -s "$T/a" "$T/b"
	check "$m: --save-params then --params gives the same losses" $((rc + $?))
done

# Plain SGD has no optimizer state: 3 steps, save, 2 more steps = steps 4 and 5 of one run.
"$RUN" $SKIP --steps 3 --save-params "$T/s3" >/dev/null 2>"$T/err" &&
"$RUN" $SKIP --steps 2 --params "$T/s3" >"$T/s45" 2>"$T/err"
rc=$?
losses "$T/s45" >"$T/a"; losses "$T/SKIP.out" | tail -2 >"$T/b"
cmp -s "$T/a" "$T/b"
check "skipnet: saved after 3 steps, 2 more steps continue the run exactly" $((rc + $?))

# The textual IR runs the same as the source.
if "$MTC" $MLP --emit=ir -o "$T/mlp.mir" 2>"$T/err"; then
	"$RUN" "$T/mlp.mir" --steps 5 >"$T/mir.out" 2>"$T/err"
	rc=$?
	losses "$T/mir.out" >"$T/a"; losses "$T/MLP.out" >"$T/b"
	cmp -s "$T/a" "$T/b"
	check "MODEL.mir trains like MODEL.tdsl" $((rc + $?))
else
	no "mtc --emit=ir for the .mir test"
fi

# A hand-edited step without its loss line is an error, not a crash.
if [ -f "$T/mlp.mir" ] && grep -q '^  loss ' "$T/mlp.mir"; then
	sed '/^  loss /d' "$T/mlp.mir" >"$T/noloss.mir"
	expect_error "a step without a loss" "has no loss" -- "$T/noloss.mir"
fi

# Forward mode writes the outputs: the small mlp's logits are f32[32,10].
"$RUN" $MLP --forward --save-outputs "$T/o" >"$T/fwd" 2>"$T/err"
rc=$?
size=$(wc -c <"$T/o")
grep -q '"logits":{"dtype":"F32","shape":\[32,10\]' "$T/o"
check "--forward --save-outputs writes logits f32[32,10]" $((rc + $? + (size < 8 + 1280)))
grep -q '^step' "$T/fwd"
check "--forward prints no step lines" $((! $?))

# Inputs from a file: skipnet's y all zeros gives another loss than the random y.
st "$T/in" '{"y":{"dtype":"F32","shape":[32,8],"data_offsets":[0,1024]}}' 1024
"$RUN" $SKIP --steps 1 --inputs "$T/in" >"$T/in.out" 2>"$T/err"
rc=$?
a=$(losses "$T/in.out"); b=$(losses "$T/SKIP.out" | head -1)
[ "$a" != "$b" ]
check "--inputs replaces an input" $((rc + $?))

# Errors: each names the tensor or the problem, exit status 1.
"$RUN" $MLP -D D=16 --steps 0 --save-params "$T/p16" >/dev/null 2>&1
expect_error "params file with a wrong shape names the tensor" \
	"tensor 'w0' is f32[64,16], the model's param 'w0' is f32[64,32]" -- $MLP --params "$T/p16"
"$RUN" $SKIP --steps 0 --save-params "$T/ps" >/dev/null 2>&1
expect_error "params file with an unknown name names it" "tensor 'win' is not a param of model mlp" \
	-- $MLP --params "$T/ps"
st "$T/dt" '{"b0":{"dtype":"I32","shape":[32],"data_offsets":[0,128]}}' 128
expect_error "params file with a wrong dtype names the tensor" "tensor 'b0' is i32[32]" \
	-- $MLP --params "$T/dt"
st "$T/inp" '{"x":{"dtype":"F32","shape":[32,64],"data_offsets":[0,8192]}}' 8192
expect_error "an input in a params file" "tensor 'x' is an input" -- $MLP --params "$T/inp"
expect_error "a param in an inputs file" "tensor 'w0' is a param, not an input" -- $MLP --inputs "$T/p16"
head -c 100 "$T/MLP.p0" >"$T/trunc"
expect_error "truncated params file" "truncated" -- $MLP --params "$T/trunc"
head -c 5000 "$T/MLP.p0" >"$T/trunc2"
expect_error "params file cut in the data" "out of range" -- $MLP --params "$T/trunc2"
st "$T/huge" '{"w0":{"dtype":"F32","shape":[4000000000,4000000000],"data_offsets":[0,8]}}' 8
expect_error "absurd shape in a params file" "tensor 'w0'" -- $MLP --params "$T/huge"
st "$T/junk" '{"w0":' 0
expect_error "bad JSON in a params file" "bad header" -- $MLP --params "$T/junk"
h='{"y":{"dtype":"I32","shape":[32],"data_offsets":[0,128]}}'
st "$T/lab" "$h" 128
printf 'c' | dd of="$T/lab" bs=1 seek=$((8 + ${#h} + 4)) conv=notrunc 2>/dev/null
expect_error "a label out of range names the input and the element" "cross_entropy: label 99 at input 'y'[1] is out of range [0, 10)" -- $MLP --inputs "$T/lab"
# the same in a compiled module: the op, the input and the element
"$(dirname "$RUN")/mtc" $MLP -O0 -o "$T/labm.so" 2>"$T/err" &&
expect_error "a compiled module names them too" "(cross_entropy): label 99 at input 'y'[1] is out of range [0, 10)" -- "$T/labm.so" --inputs "$T/lab"
expect_error "missing params file" "cannot open" -- $MLP --params "$T/nope"
expect_error "a missing model.so" "model.so" -- "$T/model.so"
cat >"$T/fwd.tdsl" <<'EOF'
model lin {
  input x : f32[2, 3];
  param w : f32[3, 2] = ones();
  y = x @ w;
  output y;
}
EOF
expect_error "--steps on a model without train" "no 'train' statement" -- "$T/fwd.tdsl" --steps 2
"$RUN" "$T/fwd.tdsl" >"$T/out" 2>"$T/err"
check "a model without train runs its forward" $?
# Models bigger than the machine (1 TB): errors, not swap storms or the OOM killer.
cat >"$T/big.tdsl" <<'EOF'
model big {
  input x : f32[500000, 500000];
  param w : f32[500000, 2] = zeros();
  y = x @ w;
  output y;
}
EOF
expect_error "decls larger than memory" "do not fit in this machine's memory" -- "$T/big.tdsl"
printf 'model big2 {\n input x : f32[500000, 2];\n param w : f32[2, 500000] = zeros();\n y = x @ w;\n output y;\n}\n' >"$T/big2.tdsl"
expect_error "a value larger than memory" "out of memory: %y : f32[500000,500000] needs 1000000000000 bytes" \
	-- "$T/big2.tdsl"
expect_error "a bad option" "unknown option" -- $MLP --bogus
expect_error "a bad --steps" "invalid --steps" -- $MLP --steps x
"$RUN" --help | grep -q -- '--save-params'
check "--help lists the options" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
