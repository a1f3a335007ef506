#!/bin/sh
# ops.sh: every op against the interpreter, with OpenBLAS's GEMM (tolerance) and with the
# portable GEMM (bit-identical), on 3 accelerator threads so the splits are exercised.
out=${top_builddir:-.}/tests/out/backend/ops
mkdir -p "$out" || exit 1
fail=0
MTC_THREADS=3 OUTDIR=$out ${top_builddir:-.}/tests/backend/ops | tee "$out/blas.log" || fail=1
MTC_THREADS=3 MTC_BLAS=0 OUTDIR=$out ${top_builddir:-.}/tests/backend/ops | tee "$out/exact.log" || fail=1
p=$(cat "$out/blas.log" "$out/exact.log" | sed -n 's/^\([0-9]*\) passed.*/\1/p' | awk '{s+=$1} END {print s+0}')
f=$(cat "$out/blas.log" "$out/exact.log" | sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*/\1/p' | awk '{s+=$1} END {print s+0}')
[ "$fail" = 0 ] || [ "$f" -gt 0 ] || f=1
echo "$p passed, $f failed"
[ "$f" = 0 ]
