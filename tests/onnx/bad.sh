#!/bin/sh
# bad.sh: bad ONNX input is a diagnostic and exit status 1, never a crash: each
# tests/onnx/bad/*.textproto (protobuf text, made binary by protoc-c) gives the message its
# first line announces, `# expect: MESSAGE` after "FILE: error: "; truncated models, a text
# file and an empty one; and tdsl programs that call an import wrongly or import a bad file.
# Skipped when mtc was built without the importer (no protobuf-c).
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/bad
PROTOC_C=${PROTOC_C:-protoc-c}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect FILE WANT CMD...: CMD exits 1 and its first line of stderr is WANT
expect() {
	f=$1 want=$2
	shift 2
	"$@" >"$out/stdout" 2>"$out/stderr"
	rc=$?
	got=$(head -n 1 "$out/stderr")
	if [ "$rc" -ne 1 ]; then
		bad "$f: exit status $rc, want 1"; cat "$out/stderr"
	elif [ "$got" != "$want" ]; then
		bad "$f"; echo "  want: $want"; echo "  got:  $got"
	else
		ok
	fi
}

for t in "$src"/tests/onnx/bad/*.textproto; do
	n=$(basename "$t" .textproto)
	if ! "$PROTOC_C" --encode=onnx.ModelProto --proto_path="$src/frontend" "$src/frontend/onnx.proto" \
		<"$t" >"$out/$n.onnx"; then
		bad "$t: protoc-c cannot encode it"; continue
	fi
	want=$(sed -n '1s/^# expect: //p' "$t" | sed "s|DIR|$out|")
	expect "$t" "$out/$n.onnx: error: $want" "$MTC" "$out/$n.onnx" --emit=ir -o "$out/$n.mir"
done

# truncated models, a text file, an empty file
mlp=$src/tests/onnx/data/mlp.onnx
size=$(wc -c <"$mlp")
for cut in 1 3 17 100 500 $((size / 2)) $((size - 100)) $((size - 1)); do
	head -c "$cut" "$mlp" >"$out/cut.onnx"
	expect "mlp.onnx cut at $cut bytes" "$out/cut.onnx: error: not an ONNX model, or a truncated one: the file does not parse as a protobuf ModelProto" \
		"$MTC" "$out/cut.onnx" --emit=ir -o "$out/cut.mir"
done
printf 'this is not a model\n' >"$out/text.onnx"
expect "a text file" "$out/text.onnx: error: not an ONNX model, or a truncated one: the file does not parse as a protobuf ModelProto" \
	"$MTC" "$out/text.onnx" --emit=ir -o "$out/text.mir"
: >"$out/empty.onnx"
expect "an empty file" "$out/empty.onnx: error: not an ONNX model: the file holds no graph" \
	"$MTC" "$out/empty.onnx" --emit=ir -o "$out/empty.mir"

# tdsl programs around an import (mlp.onnx: one input f32[4,8], one output; twoout.onnx: two)
cp "$src/tests/onnx/data/mlp.onnx" "$src/tests/onnx/data/twoout.onnx" "$out/" && chmod u+w "$out"/*.onnx
cp "$out/cut.onnx" "$out/trunc.onnx"
tdsl() {
	name=$1 want=$2
	cat >"$out/$name.tdsl"
	expect "$name.tdsl" "$out/$name.tdsl:$want" "$MTC" "$out/$name.tdsl" --emit=ir -o "$out/$name.mir"
}
tdsl args "4:7: error: 'net' takes 1 argument (x), got 2" <<'EOF'
import "mlp.onnx" as net;
model m {
  input x : f32[4, 8];
  y = net(x, x);
  output y;
}
EOF
tdsl dtype "4:7: error: argument 1 of 'net' (graph input 'x') is i32[4,8]; the graph takes f32 of rank 2" <<'EOF'
import "mlp.onnx" as net;
model m {
  input x : i32[4, 8];
  y = net(x);
  output y;
}
EOF
tdsl dims "4:7: error: argument 1 of 'net' (graph input 'x') is f32[4,9]; the graph fixes its dimension 1 to 8" <<'EOF'
import "mlp.onnx" as net;
model m {
  input x : f32[4, 9];
  y = net(x);
  output y;
}
EOF
tdsl oneresult "4:7: error: 'net' returns 2 values: bind them all, as in 'a, b = net(...)'" <<'EOF'
import "twoout.onnx" as net;
model m {
  input x : f32[5, 8];
  y = net(x);
  output y;
}
EOF
tdsl threeresults "4:13: error: 'net' returns 2 values, not 3" <<'EOF'
import "twoout.onnx" as net;
model m {
  input x : f32[5, 8];
  a, b, c = net(x);
  output a;
}
EOF
tdsl notimport "4:10: error: only a call of an imported graph gives several values" <<'EOF'
import "mlp.onnx" as net;
model m {
  input x : f32[4, 8];
  a, b = relu(x);
  output a;
}
EOF
tdsl keyword "4:11: error: the arguments of an imported graph are positional" <<'EOF'
import "mlp.onnx" as net;
model m {
  input x : f32[4, 8];
  y = net(x = x);
  output y;
}
EOF
tdsl clash "2:5: error: 'net' is already an import (at 1:22)" <<'EOF'
import "mlp.onnx" as net;
def net(x) { return x; }
model m {
  input x : f32[4, 8];
  output x;
}
EOF
tdsl suffix "1:8: error: import takes an ONNX model, a file named *.onnx" <<'EOF'
import "mlp.txt" as net;
model m {
  input x : f32[4, 8];
  output x;
}
EOF
tdsl string "1:8: error: unterminated string" <<'EOF'
import "mlp.onnx as net;
model m {
  input x : f32[4, 8];
  output x;
}
EOF
tdsl frozennone "1:33: error: frozen: 'nope' names no float initializer of mlp.onnx" <<'EOF'
import "mlp.onnx" as net frozen "nope";
model m {
  input x : f32[4, 8];
  output x;
}
EOF
tdsl frozenglob "1:46: error: frozen: 'l*.bias' names no float initializer of mlp.onnx ('*' stands for any ending, at the end of a name only)" <<'EOF'
import "mlp.onnx" as net frozen "l1.weight", "l*.bias";
model m {
  input x : f32[4, 8];
  output x;
}
EOF
tdsl frozenword "1:26: error: expected ';' or 'frozen' after the import's name, got 'freeze'" <<'EOF'
import "mlp.onnx" as net freeze "l1.weight";
model m {
  input x : f32[4, 8];
  output x;
}
EOF
# rope.onnx: cos and sin of angles from inv_freq, a buffer that must be frozen
cp "$src/tests/onnx/data/rope.onnx" "$out/" && chmod u+w "$out/rope.onnx"
cat >"$out/trained.tdsl" <<'EOF'
import "rope.onnx" as net;
model m {
  input x : f32[2, 6, 8];
  y = net(x);
  output y;
}
EOF
expect trained.tdsl "$out/rope.onnx: error: node '/Mul_1' (Mul, opset 14): input '/Cos_output_0' is computed by Cos from float initializers alone, one of them trained (a param): PyTorch makes such a table from a buffer (rotary embeddings' inv_freq), which an export cannot tell from a param; freeze it (import \"...\" as NAME frozen \"INITIALIZER\";)" \
	"$MTC" "$out/trained.tdsl" --emit=ir -o "$out/trained.mir"
# a bad model through an import: the model's error, then a note at the import in the tdsl
cat >"$out/badimport.tdsl" <<'EOF'
import "trunc.onnx" as net;
model m {
  input x : f32[4, 8];
  y = net(x);
  output y;
}
EOF
expect badimport.tdsl "$out/trunc.onnx: error: not an ONNX model, or a truncated one: the file does not parse as a protobuf ModelProto" \
	"$MTC" "$out/badimport.tdsl" --emit=ir -o "$out/badimport.mir"
if grep -q "^$out/badimport.tdsl:1:8: note: in the import of 'net' here" "$out/stderr"; then ok; else bad "badimport.tdsl: no note at the import"; cat "$out/stderr"; fi
sed 's/trunc.onnx/missing.onnx/' "$out/badimport.tdsl" >"$out/missing.tdsl"
expect missing.tdsl "$out/missing.onnx: error: cannot read the file: No such file or directory" \
	"$MTC" "$out/missing.tdsl" --emit=ir -o "$out/missing.mir"
# an error inside the graph at a call: the graph's message, then a note at the call
cp "$out/notstatic.onnx" "$out/ns.onnx"
cat >"$out/badcall.tdsl" <<'EOF'
import "ns.onnx" as net;
model m {
  input x : f32[2, 3];
  input s : i32[1];
  y = net(x, s);
  output y;
}
EOF
expect badcall.tdsl "$out/ns.onnx: error: node 'r' (Reshape, opset 14): input 's' must be known at import time here (a shape, an axis, indices), but it is computed at run time: a shape that cannot be made static" \
	"$MTC" "$out/badcall.tdsl" --emit=ir -o "$out/badcall.mir"
if grep -q "^$out/badcall.tdsl:5:7: note: in the call of 'net' here" "$out/stderr"; then ok; else bad "badcall.tdsl: no note at the call"; cat "$out/stderr"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
