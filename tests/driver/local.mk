# tests/driver/local.mk: the command lines of mtc and mtc-run against their --help and man pages.
TESTS += tests/driver/options.sh
EXTRA_DIST += tests/driver/options.sh
clean-local: clean-local-driver
clean-local-driver:
	-rm -rf tests/driver/out-opt
.PHONY: clean-local-driver
