# tests/ops/local.mk: every op case of one table (tests/ops/cases.c) on every target against
# the interpreter: mt3000 always, cuda when configure found NVRTC (run only on a GPU).
check_PROGRAMS += tests/ops/ops
tests_ops_ops_SOURCES = tests/ops/ops.c tests/ops/cases.c tests/ops/cases.h tests/build.c tests/build.h
tests_ops_ops_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CFLAGS) -DPTXAS='"$(PTXAS)"'
tests_ops_ops_LDADD = $(MTC_LIBS)
TESTS += tests/ops/ops.sh
EXTRA_DIST += tests/ops/ops.sh
clean-local: clean-local-ops
clean-local-ops:
	-rm -rf tests/out/ops
.PHONY: clean-local-ops
