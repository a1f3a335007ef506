# driver/run.mk: mtc-run (interpreter mode and modules); the safetensors reader and writer it
# uses are the runtime's (libmtcrt.a, in MTC_LIBS).
bin_PROGRAMS += mtc-run
mtc_run_SOURCES = driver/run.c driver/run.h driver/runso.c driver/lrsched.c
mtc_run_LDADD = $(MTC_LIBS)
mtc_run_DEPENDENCIES = libmtc.a runtime/libmtcrt.a
EXTRA_DIST += bench/torch_check.py
man_MANS += mtc-run.1
EXTRA_DIST += mtc-run.1
