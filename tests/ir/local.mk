# tests/ir/local.mk: the IR's tests: shape rules, verifier, textual round trip, bad .mir files,
# golden IR of the examples, a mutation fuzzer of the parser, and the sources' calls whose
# arguments make values (argorder: the IR independent of the C compiler).
IR_TESTS = tests/ir/shape tests/ir/verify tests/ir/fuzz
check_PROGRAMS += $(IR_TESTS)
TESTS += $(IR_TESTS) tests/ir/roundtrip.sh tests/ir/bad.sh tests/ir/golden.sh tests/ir/planned.sh \
	tests/ir/argorder.sh

tests_ir_shape_SOURCES = tests/ir/shape.c tests/build.c tests/build.h
tests_ir_shape_LDADD = $(MTC_LIBS)
tests_ir_verify_SOURCES = tests/ir/verify.c tests/build.c tests/build.h
tests_ir_verify_LDADD = $(MTC_LIBS)
tests_ir_fuzz_SOURCES = tests/ir/fuzz.c
tests_ir_fuzz_LDADD = $(MTC_LIBS)

EXTRA_DIST += tests/ir/argorder.sh tests/ir/argorder.py tests/ir/roundtrip.sh tests/ir/bad.sh tests/ir/golden.sh tests/ir/planned.sh tests/ir/good \
	tests/ir/bad tests/ir/golden
