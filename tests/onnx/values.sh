#!/bin/sh
# values.sh: imported graphs on inputs written by hand give the values ONNX's and PyTorch's
# semantics give, bit for bit (-0 is not 0; any NaN is NaN): each tests/onnx/values/*.textproto
# (protobuf text, made binary by protoc-c) holds `# in NAME f32|i32 DIMS...: VALUES` and
# `# out NAME f32|i32 DIMS...: VALUES` lines; its forward runs on the interpreter (mtc-run
# MODEL.onnx) and as a module (mtc MODEL.onnx, then mtc-run MODEL.so), and each output is
# compared. Skipped without the importer.
MTC=${MTC:-./mtc}
RUN=${top_builddir:-.}/mtc-run
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/values
PROTOC_C=${PROTOC_C:-protoc-c}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
pass=0 fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
for t in "$src"/tests/onnx/values/*.textproto; do
	n=$(basename "$t" .textproto)
	if ! "$PROTOC_C" --encode=onnx.ModelProto --proto_path="$src/frontend" "$src/frontend/onnx.proto" \
		<"$t" >"$out/$n.onnx"; then
		bad "$t: protoc-c cannot encode it"; continue
	fi
	if ! python3 - "$t" "$out/$n.in.st" <<'PYEOF'
import json, struct, sys
ins = {}
for line in open(sys.argv[1]):
    if line.startswith("# in "):
        head, vals = line[5:].split(":", 1)
        name, dt, *dims = head.split()
        vs = [float(v) if dt == "f32" else int(v) for v in vals.split()]
        ins[name] = (dt.upper(), [int(d) for d in dims], vs)
hdr, off, blobs = {}, 0, []
for k, (dt, shape, vs) in ins.items():
    b = struct.pack("<%d%s" % (len(vs), "i" if dt == "I32" else "f"), *vs)
    hdr[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
    off += len(b)
    blobs.append(b)
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PYEOF
	then
		bad "$n: its '# in' lines do not parse"; continue
	fi
	if ! "$MTC" "$out/$n.onnx" -o "$out/$n.so" 2>"$out/$n.err"; then
		bad "$n: mtc failed"; cat "$out/$n.err"; continue
	fi
	for m in onnx so; do
		if ! "$RUN" "$out/$n.$m" --forward --inputs "$out/$n.in.st" --save-outputs "$out/$n.$m.out.st" \
			>"$out/$n.$m.log" 2>&1; then
			bad "$n: mtc-run $n.$m failed"; cat "$out/$n.$m.log"; continue
		fi
		r=$(python3 - "$t" "$out/$n.$m.out.st" "$n.$m" <<'PYEOF'
import json, math, struct, sys
b = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = json.loads(b[8:8 + n])
ok = bad = 0
def bits(dt, v):
    if dt == "i32":
        return int(v)
    f = float(v)
    return "nan" if math.isnan(f) else struct.pack("<f", f)
for line in open(sys.argv[1]):
    if not line.startswith("# out "):
        continue
    head, vals = line[6:].split(":", 1)
    name, dt, *dims = head.split()
    want = vals.split()
    h = hdr.get(name)
    if not h or h["shape"] != [int(d) for d in dims] or h["dtype"] != dt.upper():
        print("FAIL: %s: output %s is %s, want %s %s" % (sys.argv[3], name, h and (h["dtype"], h["shape"]), dt, dims))
        bad += 1
        continue
    s, e = h["data_offsets"]
    got = struct.unpack("<%d%s" % ((e - s) // 4, "i" if dt == "i32" else "f"), b[8 + n + s:8 + n + e])
    if len(got) != len(want) or any(bits(dt, g) != bits(dt, w) for g, w in zip(got, want)):
        print("FAIL: %s: output %s is %s, want %s" % (sys.argv[3], name, " ".join(map(str, got)), " ".join(want)))
        bad += 1
    else:
        ok += 1
print("%d %d" % (ok, bad))
PYEOF
)
		echo "$r" | sed '$d'
		set -- $(echo "$r" | tail -n 1)
		pass=$((pass + ${1:-0})) fail=$((fail + ${2:-1}))
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
