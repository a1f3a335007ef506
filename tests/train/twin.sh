#!/bin/sh
# twin.sh: tests/train/twin.py, training with mtc against PyTorch 1.13 (schedule, AdamW, SGD
# with weight decay, clipping, micro-batches); counted skipped where python3-torch is missing.
: "${top_srcdir:=.}" "${top_builddir:=.}" "${MTC:=$top_builddir/mtc}"
py=${PYTHON3_TORCH:-/usr/bin/python3}
out=$top_builddir/tests/out/train/twin
if ! "$py" -c 'import torch' 2>/dev/null; then
	echo "skipped: PyTorch twins: no python3-torch ($py)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
mkdir -p "$out" || exit 1
exec "$py" "$top_srcdir/tests/train/twin.py" "$MTC" "$top_builddir/mtc-run" "$top_srcdir" "$out"
