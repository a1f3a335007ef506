#!/bin/sh
# torch.sh: small PyTorch modules exported to ONNX now (tests/onnx/models.py), imported and
# checked against PyTorch (check.py: forward outputs within 1e-5, 5 training steps' losses
# within 1e-5 relative, unplanned and planned). Skipped without PyTorch or the importer.
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
MTC=$MTC "$PY" "$src/tests/onnx/check.py" "$out" "$out/work"
