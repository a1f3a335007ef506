#!/bin/sh
# ops.sh: every op case on every target against the interpreter (tests/ops/ops.c), the
# mt3000 modules on 3 accelerator threads so that the work splits are exercised.
out=${top_builddir:-.}/tests/out/ops
mkdir -p "$out" || exit 1
MTC_THREADS=3 OUTDIR=$out exec ${top_builddir:-.}/tests/ops/ops
