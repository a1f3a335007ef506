#!/bin/sh
# torch.sh: small PyTorch modules exported to ONNX now (tests/onnx/models.py), imported and
# checked against PyTorch (check.py: forward outputs within 1e-5, 5 training steps' losses
# within 1e-5 relative, unplanned and planned), but those exported exactly as checked in,
# which files.sh checks. Skipped without PyTorch or the importer.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/torch
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
if ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "no PyTorch for $PY"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
if ! "$PY" "$src/tests/onnx/models.py" "$out" >"$out/export.log" 2>&1; then
	cat "$out/export.log"; echo "0 passed, 1 failed"; exit 1
fi
# A model whose export and PyTorch results are, file for file, byte for byte the ones checked
# in (tests/onnx/data, where this PyTorch makes them so) is checked there by files.sh: the same
# checks on the same bytes, not run twice. The others (another PyTorch, another machine's
# rounding) are checked here.
names= same=0
for f in "$out"/*.onnx; do
	n=$(basename "$f" .onnx) d=1
	for g in "$out/$n".* "$src/tests/onnx/data/$n".*; do
		b=$(basename "$g")
		cmp -s "$out/$b" "$src/tests/onnx/data/$b" || { d=0; break; }
	done
	if [ "$d" = 1 ]; then same=$((same + 1)); else names="$names $n"; fi
done
echo "$same models exported byte for byte as tests/onnx/data holds them (checked by files.sh)"
if [ -z "$names" ]; then
	echo "0 passed, 0 failed, $same skipped"; exit 0
fi
# shellcheck disable=SC2086
MTC=$MTC "$PY" "$src/tests/onnx/check.py" "$out" "$out/work" $names >"$out/check.log" 2>&1
rc=$?
sed '$d' "$out/check.log"
tail -n 1 "$out/check.log" | sed "s/\(failed\)\$/\1, $same skipped/"
exit $rc
