# backend-cuda/local.mk: the CUDA target (kernels through NVRTC, host code through LLVM) and
# the runtime's CUDA part, only when configure found NVRTC.
if HAVE_CUDA
libmtc_a_SOURCES += backend-cuda/cuda.h backend-cuda/kern.c backend-cuda/nvrtc.c \
	backend-cuda/host.c backend-cuda/build.c
libmtc_a_CPPFLAGS += -DMTC_CC='"$(CC)"' -DMTC_BUILD_RTDIR='"$(abs_top_builddir)"' \
	-DMTC_INSTALL_RTDIR='"$(libdir)"'
# Linked into every CUDA MODEL.so: position-independent, every symbol hidden.
lib_LIBRARIES += libmtccuda.a
libmtccuda_a_SOURCES = runtime/cuda.c runtime/mtc/mtc-cuda.h runtime/mtc/mtc.h
libmtccuda_a_CPPFLAGS = -D_GNU_SOURCE -I$(top_srcdir)/runtime
libmtccuda_a_CFLAGS = -std=c11 $(WARN_CFLAGS) -fPIC -fvisibility=hidden
endif
