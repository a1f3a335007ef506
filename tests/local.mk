# tests/local.mk: what every C test shares: check.h (counters, checks, skips, the closing line);
# build.h and build.c (types and ops built in C) are in the SOURCES of the tests that use them.
EXTRA_DIST += tests/check.h
