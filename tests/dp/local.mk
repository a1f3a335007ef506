# tests/dp/local.mk: data parallelism: the pass without MPI (pass), and modules under mpirun.
check_PROGRAMS += tests/dp/pass
TESTS += tests/dp/pass
tests_dp_pass_SOURCES = tests/dp/pass.c tests/planner/synth.c tests/planner/synth.h tests/build.c tests/build.h
tests_dp_pass_LDADD = $(MTC_LIBS) -lm -lpthread
check_PROGRAMS += tests/dp/stcmp
tests_dp_stcmp_SOURCES = tests/dp/stcmp.c
tests_dp_stcmp_LDADD = $(MTC_LIBS) -lm
# runtime/comm.c's collectives alone, under mpirun (dp.sh runs it)
if HAVE_MPI
check_PROGRAMS += tests/dp/comm
tests_dp_comm_SOURCES = tests/dp/comm.c
tests_dp_comm_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
tests_dp_comm_LDADD = runtime/libmtcrt.a $(BLAS_LIBS) $(MPI_LIBS) -lm -lpthread
endif
TESTS += tests/dp/dp.sh tests/dp/cli.sh
EXTRA_DIST += tests/dp/dp.sh tests/dp/cli.sh tests/dp/tfsgd.tdsl tests/dp/shared.tdsl

# What the data-parallel tests write.
clean-local: clean-local-dp
clean-local-dp:
	-rm -rf tests/out/dp tests/out/dp-cli
.PHONY: clean-local-dp
