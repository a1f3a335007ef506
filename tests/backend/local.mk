# tests/backend/local.mk: the MT-3000 backend and the runtime (every op against the interpreter
# is tests/ops/): the examples end to end, the module API, swaps, the C example program.
# mtc-math.h against the C library, vectorized as modules are (see backend-mt3000/target.c).
check_PROGRAMS += tests/backend/math
tests_backend_math_SOURCES = tests/backend/math.c
tests_backend_math_CFLAGS = $(AM_CFLAGS) -fno-math-errno -fno-trapping-math -ffp-contract=off \
	-ftree-vectorize -fvect-cost-model=dynamic
tests_backend_math_LDADD = -lm
TESTS += tests/backend/math
check_PROGRAMS += tests/backend/api
tests_backend_api_SOURCES = tests/backend/api.c
tests_backend_api_LDADD = runtime/libmtcrt.a $(BLAS_LIBS) $(LIBS)
TESTS += tests/backend/examples.sh tests/backend/swap.sh tests/backend/state.sh tests/backend/api.sh tests/backend/train.sh \
	tests/backend/faults.sh tests/backend/cnn.sh tests/backend/cnn_twin.sh
EXTRA_DIST += tests/backend/examples.sh tests/backend/swap.sh tests/backend/state.sh tests/backend/api.sh tests/backend/train.sh \
	tests/backend/faults.sh tests/backend/cnn.sh tests/backend/cnn_twin.sh tests/backend/cnn_twin.py \
	tests/backend/cnndrop.tdsl tests/backend/allops.tdsl tests/backend/wide.tdsl tests/backend/bnstate.tdsl tests/backend/fwdonly.tdsl \
	tests/backend/swap.mir tests/backend/nowait.mir
EXTRA_DIST += tests/backend/bench.sh tests/backend/bench.py

# make bench: also the examples' step time against PyTorch (tests/backend/bench.sh).
# BENCH_ARGS: bench.py's options; 3 rounds of 10 steps keep `make bench` within 20 minutes.
BENCH_ARGS = --rounds 3 --steps 10
bench-backend: all
	@mkdir -p $(top_builddir)/bench/results
	top_srcdir=$(top_srcdir) top_builddir=$(top_builddir) MTC=$(abs_top_builddir)/mtc \
		BENCH_ARGS='$(BENCH_ARGS)' $(SHELL) $(top_srcdir)/tests/backend/bench.sh \
		>$(top_builddir)/bench/results/backend.md; \
		rc=$$?; cat $(top_builddir)/bench/results/backend.md; exit $$rc
.PHONY: bench-backend

# What the tests and make bench write.
clean-local: clean-local-backend
clean-local-backend:
	-rm -rf tests/out/backend tests/out/bench
.PHONY: clean-local-backend
