# tests/analysis/local.mk: liveness, dependences, scheduling, cost model, layout, dumps.
check_PROGRAMS += tests/analysis/known tests/analysis/random tests/analysis/dumps
tests_analysis_known_SOURCES = tests/analysis/known.c tests/analysis/tb.c tests/analysis/tb.h tests/build.c tests/build.h
tests_analysis_known_LDADD = $(MTC_LIBS)
tests_analysis_random_SOURCES = tests/analysis/random.c tests/analysis/tb.c tests/analysis/tb.h tests/build.c tests/build.h
tests_analysis_random_LDADD = $(MTC_LIBS)
tests_analysis_dumps_SOURCES = tests/analysis/dumps.c tests/analysis/tb.c tests/analysis/tb.h tests/build.c tests/build.h
tests_analysis_dumps_LDADD = $(MTC_LIBS)
TESTS += tests/analysis/known tests/analysis/random tests/analysis/dumps.sh tests/analysis/examples.sh
EXTRA_DIST += tests/analysis/dumps.sh tests/analysis/examples.sh tests/analysis/chain.mir tests/analysis/swap.mir
# What the tests write (directories, so not CLEANFILES).
clean-local: clean-local-analysis
clean-local-analysis:
	-rm -rf tests/analysis/out tests/analysis/out-ex
.PHONY: clean-local-analysis
