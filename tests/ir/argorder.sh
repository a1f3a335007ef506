#!/bin/sh
# argorder.sh: the IR does not depend on the C compiler that built mtc: no call in the
# compiler's sources has two arguments that each make IR values (argorder.py says why and
# how it looks), checked on the sources as the preprocessor leaves them (macros expanded).
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=${TMPDIR:-/tmp}/mtc-argorder.$$
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
command -v python3 >/dev/null 2>&1 || { echo "skipped: no python3"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
s=$top_srcdir b=$top_builddir n=0 skip=0
for f in "$s"/ir/*.c "$s"/frontend/*.c "$s"/passes/*.c "$s"/driver/*.c "$s"/backend/*.c \
         "$s"/backend-mt3000/*.c "$s"/backend-cuda/*.c; do
	case $f in */lex.c|*/parse.c|*/onnx.pb-c.c) [ "${f%/ir/parse.c}" = "$f" ] && continue ;; esac
	n=$((n + 1))
	# the build's include paths (Makefile.am's AM_CPPFLAGS); a file whose headers this build lacks (CUDA's, protobuf-c's
	# when the importer is off) is left out and counted
	if ! ${CC:-cc} -E -DHAVE_CONFIG_H -D_GNU_SOURCE -I"$b" -I"$s/ir" -I"$s/frontend" -I"$b/frontend" \
	     -I"$s/passes" -I"$s/driver" -I"$s/backend" -I"$s/runtime" -I"$s/backend-mt3000" \
	     -I"$s/backend-cuda" "$f" -o "$tmp/$n.i" 2>/dev/null; then
		skip=$((skip + 1)); echo "SKIP: $f (its headers are not in this build)"
	fi
done
python3 "$s/tests/ir/argorder.py" --skipped=$skip "$tmp"/*.i
