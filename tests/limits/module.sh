#!/bin/sh
# module.sh: builds a small trained module and runs module.c's error paths on it.
MTC=${MTC:-./mtc}
out=${top_builddir:-.}/tests/out/limits
mkdir -p "$out" || exit 1
"$MTC" "${top_srcdir:-.}/examples/mlp.tdsl" -D B=8 -D L=1 -D D=16 -o "$out/small.so" ||
	{ echo "0 passed, 1 failed"; exit 1; }
exec "${top_builddir:-.}/tests/limits/module" "$out/small.so"
