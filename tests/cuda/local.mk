# tests/cuda/local.mk: the CUDA backend's tests; without NVRTC one script says they are skipped.
if HAVE_CUDA
check_PROGRAMS += tests/cuda/kernels
tests_cuda_kernels_SOURCES = tests/cuda/kernels.c
tests_cuda_kernels_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CFLAGS) -DPTXAS='"$(PTXAS)"'
tests_cuda_kernels_LDADD = $(MTC_LIBS)
check_PROGRAMS += tests/cuda/module
tests_cuda_module_SOURCES = tests/cuda/module.c
tests_cuda_module_LDADD = $(MTC_LIBS)
TESTS += tests/cuda/kernels tests/cuda/module
else
TESTS += tests/cuda/nocuda.sh
endif
EXTRA_DIST += tests/cuda/nocuda.sh
