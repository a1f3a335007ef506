# tests/frontend/local.mk: the frontend's tests: unit tests of the IR it builds, the examples
# against golden listings, the diagnostics corpus, and hostile inputs.
check_PROGRAMS += tests/frontend/fetest tests/frontend/fedump
tests_frontend_fetest_SOURCES = tests/frontend/fetest.c
tests_frontend_fetest_LDADD = $(MTC_LIBS)
tests_frontend_fedump_SOURCES = tests/frontend/fedump.c
tests_frontend_fedump_LDADD = $(MTC_LIBS)
TESTS += tests/frontend/fetest$(EXEEXT) tests/frontend/examples.sh tests/frontend/diag.sh \
	tests/frontend/hostile.sh
EXTRA_DIST += tests/frontend/examples.sh tests/frontend/diag.sh tests/frontend/hostile.sh \
	tests/frontend/bad tests/frontend/golden
