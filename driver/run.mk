# driver/run.mk: mtc-run (interpreter mode) and the safetensors reader/writer it shares with
# the runtime.
bin_PROGRAMS += mtc-run
libmtc_a_SOURCES += runtime/safetensors.c runtime/safetensors.h
mtc_run_SOURCES = driver/run.c driver/run.h driver/runso.c
mtc_run_LDADD = $(MTC_LIBS)
mtc_run_DEPENDENCIES = libmtc.a
EXTRA_DIST += bench/torch_check.py
man_MANS += mtc-run.1
EXTRA_DIST += mtc-run.1
