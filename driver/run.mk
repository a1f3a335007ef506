# driver/run.mk: mtc-run (interpreter mode) and the safetensors reader/writer it shares with
# the runtime.
bin_PROGRAMS += mtc-run
libmtc_a_SOURCES += runtime/safetensors.c runtime/safetensors.h
mtc_run_SOURCES = driver/run.c driver/run.h driver/runso.c
# autodiff and simplify are weak references in run.c (they may not be written yet); the whole
# library is linked so that they are found when they exist.
mtc_run_LDFLAGS = $(AM_LDFLAGS) -Wl,--whole-archive,libmtc.a,--no-whole-archive
mtc_run_LDADD = $(MTC_LIBS)
mtc_run_DEPENDENCIES = libmtc.a
EXTRA_DIST += bench/torch_check.py
man_MANS += mtc-run.1
EXTRA_DIST += mtc-run.1
