# bench/local.mk: `make bench`: the planner's benchmark table (not a test; see docs/planner.md).
EXTRA_PROGRAMS = bench/plan-bench
bench_plan_bench_SOURCES = bench/plan-bench.c tests/planner/synth.c tests/planner/synth.h
bench_plan_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/planner
bench_plan_bench_LDADD = $(MTC_LIBS) -lm
CLEANFILES += bench/plan-bench$(EXEEXT)
.PHONY: bench bench-plan
# Every benchmark: the planner's table, then the examples' step time against PyTorch.
bench: bench-plan bench-backend bench-peers
bench-plan: bench/plan-bench$(EXEEXT)
	top_srcdir=$(top_srcdir) ./bench/plan-bench$(EXEEXT)
include $(top_srcdir)/bench/peers.mk
