# backend-cuda/local.mk: the CUDA target (kernels through NVRTC, host code through LLVM) and
# the runtime's CUDA part, only when configure found NVRTC.
if HAVE_CUDA
libmtc_a_SOURCES += backend-cuda/cuda.h backend-cuda/kern.c backend-cuda/nvrtc.c \
	backend-cuda/host.c backend-cuda/sync.c backend-cuda/build.c
libmtc_a_CPPFLAGS += -DMTC_CC='"$(CC)"' -DMTC_BUILD_RTDIR='"$(abs_top_builddir)/runtime"'
# Linked into every CUDA MODEL.so with libmtcrt.a: position-independent, every symbol hidden.
lib_LIBRARIES += runtime/libmtccuda.a
runtime_libmtccuda_a_SOURCES = runtime/cuda.c runtime/mtc/mtc-cuda.h
runtime_libmtccuda_a_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden
endif
