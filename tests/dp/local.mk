# tests/dp/local.mk: data parallelism: the pass without MPI (pass), and modules under mpirun.
check_PROGRAMS += tests/dp/pass
TESTS += tests/dp/pass
tests_dp_pass_SOURCES = tests/dp/pass.c tests/planner/synth.c tests/planner/synth.h tests/build.c tests/build.h
tests_dp_pass_LDADD = $(MTC_LIBS) -lm
