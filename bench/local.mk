# bench/local.mk: `make bench`: the planner's benchmark table (not a test; see docs/planner.md).
EXTRA_PROGRAMS = bench/plan-bench
bench_plan_bench_SOURCES = bench/plan-bench.c $(planner_test_common)
bench_plan_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/planner
bench_plan_bench_LDADD = $(MTC_LIBS) -lm
CLEANFILES += bench/plan-bench$(EXEEXT)
.PHONY: bench bench-plan bench-chain bench-state bench-dp bench-onnx
# Every benchmark, each part's time and the whole: the planner's table (~1 min), the chain
# table against the exact optimum (~17 min, most of it the exact search at L = 64), params and
# state under the budget (~3 min), data parallelism (~2 min), the examples' step time against
# PyTorch at 1 and 2 threads (~4 min), the budget sweep against the peers, CNNs included
# (~20 min), the imported ResNet-18 against PyTorch (~2 min); tables also go to bench/results/.
bench: all bench/plan-bench$(EXEEXT)
	@mkdir -p $(top_builddir)/bench/results; t0=`date +%s`; \
	echo "make bench: `date -u '+%Y-%m-%d %H:%M UTC'`, `nproc` cores, load average `cut -d' ' -f1-3 /proc/loadavg`"; \
	for p in plan chain state dp backend peers onnx; do \
		t=`date +%s`; \
		$(MAKE) $(AM_MAKEFLAGS) bench-$$p || exit 1; \
		echo "make bench-$$p: $$((`date +%s` - t)) s"; \
	done; \
	echo "make bench: $$((`date +%s` - t0)) s wall in all, load average `cut -d' ' -f1-3 /proc/loadavg` at the end"
bench-plan: bench/plan-bench$(EXEEXT)
	@mkdir -p $(top_builddir)/bench/results
	BENCH_CHAINS= top_srcdir=$(top_srcdir) ./bench/plan-bench$(EXEEXT) >$(top_builddir)/bench/results/plan.md; \
		rc=$$?; cat $(top_builddir)/bench/results/plan.md; exit $$rc
# The deep MLP as a chain (L = 8, 16, 32, 64) at every budget down to its true floor: the
# exact optimum (tests/planner/chainopt.c) against tso and the ILP (BENCH_CHAINS="8 16" for fewer).
bench-chain: bench/plan-bench$(EXEEXT)
	@mkdir -p $(top_builddir)/bench/results
	(echo "make bench-chain: `date -u '+%Y-%m-%d %H:%M UTC'`, `nproc` cores, load average `cut -d' ' -f1-3 /proc/loadavg`"; \
		BENCH_CHAIN_ONLY=1 top_srcdir=$(top_srcdir) ./bench/plan-bench$(EXEEXT)) >$(top_builddir)/bench/results/chain.md; \
		rc=$$?; cat $(top_builddir)/bench/results/chain.md; exit $$rc
# Params and optimizer state under the budget: smallest budgets and overheads, mt3000 and CUDA.
bench-state: all
	@mkdir -p $(top_builddir)/bench/results
	MTC=$(abs_top_builddir)/mtc top_srcdir=$(top_srcdir) $(SHELL) $(top_srcdir)/bench/state.sh \
		>$(top_builddir)/bench/results/state.md; rc=$$?; cat $(top_builddir)/bench/results/state.md; exit $$rc
EXTRA_DIST += bench/state.sh
# Data parallelism: 2 ranks against 1 on this machine, ZeRO's per-rank memory, 8 ranks modeled.
bench-dp: all
	@mkdir -p $(top_builddir)/bench/results
	MTC=$(abs_top_builddir)/mtc MPIRUN='$(MPIRUN)' top_srcdir=$(top_srcdir) $(SHELL) $(top_srcdir)/bench/dp.sh \
		>$(top_builddir)/bench/results/dp.md; rc=$$?; cat $(top_builddir)/bench/results/dp.md; exit $$rc
EXTRA_DIST += bench/dp.sh
# The imported ResNet-18 (torchvision, through ONNX) against PyTorch eager and checkpointing;
# skipped with a line saying why without the importer or /usr/bin/python3's torch and torchvision.
bench-onnx: all
	@mkdir -p $(top_builddir)/bench/results
	@if ! grep -q '^#define HAVE_ONNX 1' $(top_builddir)/config.h; then \
		echo "make bench-onnx: skipped: mtc was built without the ONNX importer"; \
	elif ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then \
		echo "make bench-onnx: skipped: no torch and torchvision for /usr/bin/python3"; \
	else \
		MTC=$(abs_top_builddir)/mtc MTC_RUN=$(abs_top_builddir)/mtc-run top_srcdir=$(top_srcdir) \
			OUT=$(top_builddir)/bench/results /usr/bin/python3 $(top_srcdir)/bench/onnx.py; \
	fi
EXTRA_DIST += bench/onnx.py
include $(top_srcdir)/bench/peers.mk
EXTRA_DIST += bench/trace.py bench/calibrate.py bench/resnet18.tdsl
