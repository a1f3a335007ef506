#!/bin/sh
# fold.sh: ops on values known at import time fold to the values ONNX's semantics give: each
# tests/onnx/fold/*.textproto (protobuf text, made binary by protoc-c) compiles, and each of
# its `# expect: TEXT` lines is part of a line of the IR mtc writes (the folded values, or the
# IR ops written where a fold would be too large, or a run-time value needs one). Skipped
# without the importer.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/fold
PROTOC_C=${PROTOC_C:-protoc-c}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
pass=0 fail=0
for t in "$src"/tests/onnx/fold/*.textproto; do
	n=$(basename "$t" .textproto)
	if ! "$PROTOC_C" --encode=onnx.ModelProto --proto_path="$src/frontend" "$src/frontend/onnx.proto" \
		<"$t" >"$out/$n.onnx"; then
		fail=$((fail + 1)); echo "FAIL: $t: protoc-c cannot encode it"; continue
	fi
	if ! "$MTC" "$out/$n.onnx" --emit=ir -o "$out/$n.mir" 2>"$out/$n.err"; then
		fail=$((fail + 1)); echo "FAIL: $n: mtc failed"; cat "$out/$n.err"; continue
	fi
	sed -n 's/^# expect: //p' "$t" >"$out/$n.want"
	if [ ! -s "$out/$n.want" ]; then
		fail=$((fail + 1)); echo "FAIL: $n: no '# expect:' line"; continue
	fi
	while IFS= read -r want; do
		if grep -qF -- "$want" "$out/$n.mir"; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1)); echo "FAIL: $n: no line has: $want"
		fi
	done <"$out/$n.want"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
