#!/bin/sh
# train.sh: examples/train.c, a C program that includes MODEL.h and links MODEL.so, built with
# $CC and run: the loss must fall.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/train
mkdir -p "$out" || exit 1
fail=0
"$MTC" "$src/examples/mlp.tdsl" -o "$out/mlp.so" || fail=1
[ -f "$out/mlp.h" ] || fail=1
# a sanitizer build's module needs the sanitizer runtimes linked into the program
san=; nm "$MTC" 2>/dev/null | grep -q __asan_init && san="-fsanitize=address,undefined"
${CC:-cc} $san -std=c99 -Wall -Wextra -Werror -I"$out" "$src/examples/train.c" "$out/mlp.so" \
	-Wl,-rpath,"$(cd "$out" && pwd)" -o "$out/train" || fail=1
[ "$fail" = 0 ] && MTC_CHECK=1 "$out/train" 30 || fail=1
echo "$((1 - fail)) passed, $fail failed"
[ "$fail" = 0 ]
