#!/bin/sh
# files.sh: the ONNX files checked in under tests/onnx/data (exported once by models.py),
# imported and checked against the PyTorch results stored beside them (check.py), so the
# importer is tested where PyTorch is not installed. Skipped without the importer.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/files
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
MTC=$MTC python3 "$src/tests/onnx/check.py" "$src/tests/onnx/data" "$out"
