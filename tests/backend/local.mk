# tests/backend/local.mk: the MT-3000 backend and the runtime: every op against the
# interpreter, the examples end to end, the module API, swaps, the C example program.
check_PROGRAMS += tests/backend/ops
tests_backend_ops_SOURCES = tests/backend/ops.c
tests_backend_ops_LDADD = $(MTC_LIBS)
TESTS += tests/backend/ops.sh
EXTRA_DIST += tests/backend/ops.sh
