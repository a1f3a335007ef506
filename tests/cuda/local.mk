# tests/cuda/local.mk: the CUDA backend's tests; without NVRTC one script says they are skipped.
if HAVE_CUDA
check_PROGRAMS += tests/cuda/module
tests_cuda_module_SOURCES = tests/cuda/module.c tests/build.c tests/build.h
tests_cuda_module_LDADD = $(MTC_LIBS)
check_PROGRAMS += tests/cuda/sync
tests_cuda_sync_SOURCES = tests/cuda/sync.c
tests_cuda_sync_LDADD = $(MTC_LIBS)
check_PROGRAMS += tests/cuda/randplan
tests_cuda_randplan_SOURCES = tests/cuda/randplan.c tests/planner/synth.c tests/planner/synth.h tests/build.c tests/build.h
tests_cuda_randplan_LDADD = $(MTC_LIBS) -lm
check_PROGRAMS += tests/cuda/drive
tests_cuda_drive_SOURCES = tests/cuda/drive.c
tests_cuda_drive_LDADD = $(LIBS)
TESTS += tests/cuda/module tests/cuda/examples.sh tests/cuda/sync.sh tests/cuda/state.sh \
	tests/cuda/gpu.sh
AM_TESTS_ENVIRONMENT += PTXAS='$(PTXAS)'; export PTXAS; MTC_GPU_BENCH=0; export MTC_GPU_BENCH;
else
TESTS += tests/cuda/nocuda.sh
endif
EXTRA_DIST += tests/cuda/nocuda.sh tests/cuda/examples.sh tests/cuda/sync.sh tests/cuda/state.sh tests/cuda/race.mir tests/cuda/gemms.awk \
	tests/cuda/gpu.sh tests/cuda/torch_step.py
CLEANFILES += tests/cuda/out/* tests/cuda/out-sync/* tests/cuda/out-state/* tests/cuda/gpu/* tests/cuda/gpu-prepare.log
