#!/bin/sh
# cnn_twin.sh: the convolutional examples against their PyTorch twins (cnn_twin.py: 5 steps,
# losses within 1e-5 relative). Skipped without PyTorch and numpy (.ci/deps installs
# python3-torch).
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/cnn_twin
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$out" || exit 1
if ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
	echo "no PyTorch and numpy for $PY"; echo "0 passed, 0 failed, 1 skipped"; exit 77
fi
top_srcdir=$src exec "$PY" "$src/tests/backend/cnn_twin.py" "$MTC" "$out"
