# tests/local.mk: unit tests of the shared IR core.
