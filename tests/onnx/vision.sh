#!/bin/sh
# vision.sh: torchvision's ResNet-18 (CIFAR-sized, examples/onnx's), MobileNetV2, ResNet-34,
# ResNet-50, VGG-11, SqueezeNet 1.1 and MobileNetV3-Small (tests/onnx/vision.py's list; in
# CI's sanitizer half the first two) exported to ONNX now, imported, built and trained
# against PyTorch (tests/onnx/vision.py: losses within 1e-5 relative). Skipped without
# PyTorch and torchvision or the importer.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/onnx/vision
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$out" || exit 1
if ! grep -q '^#define HAVE_ONNX 1' "${top_builddir:-.}/config.h" 2>/dev/null; then
	echo "mtc was built without the ONNX importer"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
	echo "no PyTorch and torchvision for $PY"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
PYTHONDONTWRITEBYTECODE=1 MTC=$MTC "$PY" "$src/tests/onnx/vision.py" "$out" 2>"$out/stderr" || { tail -n 20 "$out/stderr"; exit 1; }
