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
# mtc-math.h and mtc-ops.h as one C string: the CUDA prelude, so that kernels evaluate OPTAB's
# elementwise formulas with the functions the C target and the interpreter use.
BUILT_SOURCES += backend-cuda/ops-src.inc
CLEANFILES += backend-cuda/ops-src.inc
backend-cuda/ops-src.inc: $(srcdir)/runtime/mtc/mtc-math.h $(srcdir)/runtime/mtc/mtc-ops.h
	$(AM_V_GEN)$(MKDIR_P) backend-cuda && sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' \
	  -e 's/$$/\\n"/' $(srcdir)/runtime/mtc/mtc-math.h $(srcdir)/runtime/mtc/mtc-ops.h >$@-t && mv $@-t $@
endif
