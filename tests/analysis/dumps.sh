#!/bin/sh
# dumps.sh: the schedule, dot, trace and memory dumps parse with the tools people use on them.
dir=${top_builddir:-.}/tests/analysis/out
rm -rf "$dir" && mkdir -p "$dir" || exit 1
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

${top_builddir:-.}/tests/analysis/dumps "$dir" || { echo "0 passed, 1 failed"; exit 1; }
for f in "$dir"/*.schedule; do
	# the last line, exactly; one line per op before it
	if tail -n 1 "$f" | grep -Eq '^peak_live_bytes [0-9]+ arena_bytes [0-9]+ modeled_ms [0-9]+\.[0-9]+$'; then ok; else bad "$f: last line"; fi
	n=$(grep -c '^ *[0-9]' "$f"); c=$(grep -c ' start [0-9.]* end [0-9.]*$' "$f")
	if [ "$n" -gt 0 ] && [ "$n" = "$c" ]; then ok; else bad "$f: op lines"; fi
done
for f in "$dir"/*.json; do
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["traceEvents"]; assert any(x["ph"]=="X" for x in e) and any(x["ph"]=="C" for x in e)' "$f"; then ok; else bad "$f: trace JSON"; fi
done
for f in "$dir"/*.svg; do
	if python3 -c 'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert len(r.findall(".//{http://www.w3.org/2000/svg}rect")) > 3' "$f"; then ok; else bad "$f: SVG"; fi
	if command -v xmllint >/dev/null; then
		if xmllint --noout "$f"; then ok; else bad "$f: xmllint"; fi
	fi
done
if command -v dot >/dev/null; then
	for f in "$dir"/*.dot; do
		if dot -Tsvg "$f" -o "$f.svg" 2>"$f.err" && [ ! -s "$f.err" ]; then ok; else bad "$f: dot: $(head -3 "$f.err")"; fi
	done
else
	echo "skipped: dot (Graphviz) not installed"; skip=$((skip + 1))
fi
# the random function with swaps has copies on the copy track
if grep -q '"tid":2' "$dir/random.json"; then ok; else bad "no copy track in random.json"; fi
if grep -q 'WAR' "$dir/mlp-program.full.dot"; then ok; else bad "no WAR edge in mlp-program.full.dot"; fi
# large functions: one node per block (a layer or call), RAW edges only; dot-full has them all
MTC=${MTC:-${top_builddir:-.}/mtc}
"$MTC" "${top_srcdir:-.}/examples/transformer.tdsl" --emit=dot -o "$dir/tf.dot" &&
"$MTC" "${top_srcdir:-.}/examples/transformer.tdsl" --emit=dot-full -o "$dir/tf-full.dot" || bad "transformer: --emit=dot"
nb=$(grep -c '^  b[0-9]* \[' "$dir/tf.dot"); nf=$(grep -c '^ *n[0-9]* \[' "$dir/tf-full.dot")
if [ "$nb" -ge 4 ] && [ "$nb" -le 40 ] && ! grep -q 'dashed' "$dir/tf.dot"; then ok; else bad "transformer --emit=dot: $nb blocks"; fi
if [ "$nf" -gt 300 ] && grep -q 'dashed' "$dir/tf-full.dot"; then ok; else bad "transformer --emit=dot-full: $nf ops"; fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
