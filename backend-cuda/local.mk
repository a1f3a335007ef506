# backend-cuda/local.mk: the CUDA target (kernels through NVRTC, host code through LLVM), only
# when configure found NVRTC.
if HAVE_CUDA
libmtc_a_SOURCES += backend-cuda/cuda.h backend-cuda/kern.c backend-cuda/nvrtc.c
endif
