# tests/frontend/local.mk: the frontend's tests: unit tests of the IR it builds, good programs
# (compile, golden IR, round trip), the diagnostics corpus, and hostile inputs.
check_PROGRAMS += tests/frontend/fetest
tests_frontend_fetest_SOURCES = tests/frontend/fetest.c
tests_frontend_fetest_LDADD = $(MTC_LIBS)
TESTS += tests/frontend/fetest$(EXEEXT) tests/frontend/good.sh tests/frontend/diag.sh \
	tests/frontend/hostile.sh
EXTRA_DIST += tests/frontend/good.sh tests/frontend/diag.sh tests/frontend/hostile.sh \
	tests/frontend/good tests/frontend/golden tests/frontend/bad
