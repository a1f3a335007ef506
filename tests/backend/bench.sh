#!/bin/sh
# bench.sh (make bench-backend): step time of the example modules against PyTorch eager on the
# CPU, side by side, and the measured cost of a 50% budget (tests/backend/bench.py; options
# and environment there: BENCH_ARGS passes options, e.g. BENCH_ARGS='--rounds 5').
MTC=${MTC:-./mtc}
MTC_RUN=${MTC_RUN:-$(dirname "$MTC")/mtc-run}
export MTC MTC_RUN
exec "${PYTHON:-/usr/bin/python3}" "${top_srcdir:-.}/tests/backend/bench.py" $BENCH_ARGS
