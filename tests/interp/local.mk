# tests/interp/local.mk: interpreter kernels, safetensors files, and mtc-run end to end.
check_PROGRAMS += tests/interp/ops tests/interp/st
tests_interp_ops_SOURCES = tests/interp/ops.c tests/build.c tests/build.h
tests_interp_ops_LDADD = $(MTC_LIBS)
tests_interp_st_SOURCES = tests/interp/st.c
tests_interp_st_LDADD = $(MTC_LIBS)
TESTS += tests/interp/ops tests/interp/st
TESTS += tests/interp/run.sh
EXTRA_DIST += tests/interp/run.sh
