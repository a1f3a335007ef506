# tests/fuzz/local.mk: the fuzz harnesses. make check replays the seed and regression corpora
# through a plain main() (replay.c) built with the regular compiler; make fuzz builds the
# libFuzzer binaries (CC=clang; see docs/reliability.md for the configure line).
FUZZ_TARGETS = fe ir st pipe onnx
check_PROGRAMS += tests/fuzz/replay-fe tests/fuzz/replay-ir tests/fuzz/replay-st tests/fuzz/replay-pipe \
	tests/fuzz/replay-onnx
tests_fuzz_replay_fe_SOURCES = tests/fuzz/fe.c tests/fuzz/replay.c
tests_fuzz_replay_fe_LDADD = $(MTC_LIBS)
tests_fuzz_replay_ir_SOURCES = tests/fuzz/ir.c tests/fuzz/replay.c
tests_fuzz_replay_ir_LDADD = $(MTC_LIBS)
tests_fuzz_replay_st_SOURCES = tests/fuzz/st.c tests/fuzz/replay.c
tests_fuzz_replay_st_LDADD = $(MTC_LIBS)
tests_fuzz_replay_pipe_SOURCES = tests/fuzz/pipe.c tests/fuzz/replay.c
tests_fuzz_replay_pipe_LDADD = $(MTC_LIBS)
tests_fuzz_replay_onnx_SOURCES = tests/fuzz/onnx.c tests/fuzz/replay.c
tests_fuzz_replay_onnx_LDADD = $(MTC_LIBS)
TESTS += tests/fuzz/replay.sh
EXTRA_DIST += tests/fuzz/replay.sh tests/fuzz/run.sh tests/fuzz/flags.sh tests/fuzz/seed tests/fuzz/regress

FUZZ_FLAGS = -fsanitize=fuzzer,address,undefined
fuzz: $(BUILT_SOURCES) libmtc.a runtime/libmtcrt.a
	@case "`$(CC) --version 2>/dev/null`" in *clang*) ;; \
	  *) echo "make fuzz needs clang: ./configure CC=clang-14 (see docs/reliability.md)"; exit 1;; esac
	for t in $(FUZZ_TARGETS); do \
	  $(CC) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) $(AM_CFLAGS) $(CFLAGS) \
	    $(FUZZ_FLAGS) -o tests/fuzz/fuzz-$$t $(srcdir)/tests/fuzz/$$t.c $(MTC_LIBS) || exit 1; \
	done
.PHONY: fuzz
CLEANFILES += tests/fuzz/fuzz-fe tests/fuzz/fuzz-ir tests/fuzz/fuzz-st tests/fuzz/fuzz-pipe tests/fuzz/fuzz-onnx

# tests/limits: inputs beyond the limits (limits.sh says which).
TESTS += tests/limits/limits.sh
EXTRA_DIST += tests/limits/limits.sh tests/limits/big.tdsl tests/limits/huge.safetensors \
	tests/limits/lying.safetensors tests/limits/overflow.safetensors tests/limits/hdrlen.safetensors
check_PROGRAMS += tests/limits/module
tests_limits_module_SOURCES = tests/limits/module.c
tests_limits_module_LDADD = $(LIBS)
TESTS += tests/limits/module.sh
EXTRA_DIST += tests/limits/module.sh
TESTS += tests/limits/valgrind.sh
EXTRA_DIST += tests/limits/valgrind.sh
TESTS += tests/limits/tsan.sh
EXTRA_DIST += tests/limits/tsan.sh tests/limits/steps.c

# What the limits tests, the replay and the fuzz runs write.
clean-local: clean-local-limits
clean-local-limits:
	-rm -rf tests/out/limits tests/out/tsan tests/fuzz/work
	-rm -f tests/fuzz/replay-*.log
.PHONY: clean-local-limits
