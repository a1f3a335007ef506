#!/bin/sh
# ops.sh: every op against the interpreter (tests/backend/ops.c), on 3 accelerator threads so
# the work splits are exercised.
out=${top_builddir:-.}/tests/out/backend/ops
mkdir -p "$out" || exit 1
MTC_THREADS=3 OUTDIR=$out exec ${top_builddir:-.}/tests/backend/ops
