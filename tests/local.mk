# tests/local.mk: unit tests of the shared IR core.
EXTRA_DIST += tests/check.h
