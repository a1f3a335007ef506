#!/bin/sh
# external.sh: weights stored as ONNX external data (a file beside the model, at an offset)
# are read: the same graph with its weights inline (raw_data) and external gives the same
# bytes on the interpreter; a module built from it embeds them (it still runs, bit for bit,
# once the weights file is gone); and a tdsl model that imports it trains the same.
# Skipped without the importer.
MTC=${MTC:-./mtc}
RUN=${top_builddir:-.}/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/external
PROTOC_C=${PROTOC_C:-protoc-c}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
pass=0 fail=0
check() {
	what=$1
	shift
	if "$@" >"$out/log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; cat "$out/log"; fi
}
# w: f32[3,4] = 0.5 i - 1; w.bin holds 8 bytes of header first
python3 - "$out" <<'PYEOF'
import struct, sys
d = sys.argv[1]
w = struct.pack("<12f", *[0.5 * i - 1.0 for i in range(12)])
open(d + "/w.bin", "wb").write(b"HEADERXX" + w)
graph = '''opset_import { domain: "" version: 14 }
graph {
  node { input: "x" input: "w" output: "h" name: "m" op_type: "MatMul" }
  node { input: "h" output: "y" name: "t" op_type: "Tanh" }
  %s
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_value: 3 } } } } }
  output { name: "y" }
}
'''
ext = ('initializer { name: "w" data_type: 1 dims: 3 dims: 4 data_location: 1 '
       'external_data { key: "location" value: "w.bin" } external_data { key: "offset" value: "8" } '
       'external_data { key: "length" value: "48" } }')
inl = 'initializer { name: "w" data_type: 1 dims: 3 dims: 4 raw_data: "%s" }' % "".join("\\%03o" % b for b in w)
open(d + "/ext.textproto", "w").write(graph % ext)
open(d + "/inl.textproto", "w").write(graph % inl)
PYEOF
for t in ext inl; do
	check "encode $t" sh -c "\"$PROTOC_C\" --encode=onnx.ModelProto --proto_path=\"$src/frontend\" \"$src/frontend/onnx.proto\" <\"$out/$t.textproto\" >\"$out/$t.onnx\""
done
check "the param refers to the external file" sh -c "\"$MTC\" \"$out/ext.onnx\" --emit=ir | grep -q 'param w : f32\[3,4\] = file(\"$out/w.bin\", 8)'"
check "interpreter, external" "$RUN" "$out/ext.onnx" --forward --save-outputs "$out/ext.st"
check "interpreter, inline" "$RUN" "$out/inl.onnx" --forward --save-outputs "$out/inl.st"
check "external and inline give the same bytes" cmp "$out/ext.st" "$out/inl.st"
check "module" "$MTC" "$out/ext.onnx" -o "$out/ext.so"
cat >"$out/train.tdsl" <<'EOF'
import "ext.onnx" as net;
model t {
  input x : f32[2, 3];
  input y : i32[2];
  loss = cross_entropy(net(x), y);
  train loss with sgd(lr = 0.5);
}
EOF
check "training module" "$MTC" "$out/train.tdsl" -o "$out/train.so"
check "interpreter, 3 steps" sh -c "\"$RUN\" \"$out/train.tdsl\" --steps 3 | grep '^step' >\"$out/steps.interp\""
mv "$out/w.bin" "$out/w.gone"
check "the module without the weights file" sh -c "MTC_BLAS=0 \"$RUN\" \"$out/ext.so\" --forward --save-outputs \"$out/so.st\" && cmp \"$out/so.st\" \"$out/ext.st\""
check "the training module without the weights file" sh -c "MTC_BLAS=0 \"$RUN\" \"$out/train.so\" --steps 3 | grep '^step' | cmp - \"$out/steps.interp\""
check "the interpreter without the weights file: an error" sh -c "! \"$RUN\" \"$out/ext.onnx\" --forward 2>\"$out/err\" && grep -q 'cannot read its external data' \"$out/err\""
mv "$out/w.gone" "$out/w.bin"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
