#!/bin/sh
# train.sh: examples/train.c, a C program that includes MODEL.h and links MODEL.so, built with
# $CC and run on examples/classifier.tdsl: a schedule, clipping, a checkpoint resumed in a
# second instance (the same losses), step_out; the loss must fall.
MTC=${MTC:-./mtc}
src=${top_srcdir:-.}
out=${top_builddir:-.}/tests/out/backend/train
mkdir -p "$out" || exit 1
fail=0
"$MTC" "$src/examples/classifier.tdsl" -o "$out/classifier.so" || fail=1
[ -f "$out/classifier.h" ] || fail=1
# a sanitizer build's module needs the sanitizer runtimes linked into the program
san=; nm "$MTC" 2>/dev/null | grep -q __asan_init && san="-fsanitize=address,undefined"
${CC:-cc} $san -std=c99 -Wall -Wextra -Werror -I"$out" "$src/examples/train.c" "$out/classifier.so" \
	-Wl,-rpath,"$(cd "$out" && pwd)" -lm -o "$out/train" || fail=1
[ "$fail" = 0 ] && MTC_CHECK=1 "$out/train" 30 "$out/train.safetensors" || fail=1
echo "$((1 - fail)) passed, $fail failed"
[ "$fail" = 0 ]
