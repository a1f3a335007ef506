# tests/planner/local.mk: the memory planner's tests: the examples planned and run, the ILP against an
# exhaustive search, chains against their exact optimum, the command line.
planner_test_common = tests/planner/synth.c tests/planner/synth.h tests/planner/exhaust.c \
	tests/planner/chainopt.c tests/build.c tests/build.h
check_PROGRAMS += tests/planner/plan-test
TESTS += tests/planner/plan-test
tests_planner_plan_test_SOURCES = tests/planner/plan-test.c $(planner_test_common)
tests_planner_plan_test_LDADD = $(MTC_LIBS) -lm
check_PROGRAMS += tests/planner/ilp-test
TESTS += tests/planner/ilp-test
tests_planner_ilp_test_SOURCES = tests/planner/ilp-test.c $(planner_test_common)
tests_planner_ilp_test_LDADD = $(MTC_LIBS) -lm
check_PROGRAMS += tests/planner/chain-test
TESTS += tests/planner/chain-test
tests_planner_chain_test_SOURCES = tests/planner/chain-test.c $(planner_test_common)
tests_planner_chain_test_LDADD = $(MTC_LIBS) -lm
TESTS += tests/planner/cli.sh tests/planner/determinism.sh
EXTRA_DIST += tests/planner/cli.sh tests/planner/determinism.sh
check_PROGRAMS += tests/planner/early
TESTS += tests/planner/early
tests_planner_early_SOURCES = tests/planner/early.c tests/planner/synth.c tests/planner/synth.h tests/build.c tests/build.h
tests_planner_early_LDADD = $(MTC_LIBS) -lm
check_PROGRAMS += tests/planner/place-test
TESTS += tests/planner/place-test
tests_planner_place_test_SOURCES = tests/planner/place-test.c tests/planner/synth.c tests/planner/synth.h tests/build.c tests/build.h
tests_planner_place_test_LDADD = $(MTC_LIBS) -lm
