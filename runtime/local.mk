# runtime/local.mk: libmtcrt, the runtime every generated module links statically, and its
# installed headers <mtc/mtc.h> (users), <mtc/mtc-rt.h>, <mtc/mtc-ops.h>, <mtc/mtc-math.h>,
# <mtc/mtc-conv.h> (generated code) and, with CUDA, <mtc/mtc-cuda.h>.
lib_LIBRARIES += runtime/libmtcrt.a
runtime_libmtcrt_a_SOURCES = runtime/rt-impl.h runtime/device.c runtime/dma.c runtime/pool.c \
	runtime/kernels.c runtime/init.c runtime/error.c \
	runtime/hyper.c runtime/ckpt.c runtime/safetensors.c runtime/safetensors.h
# -fPIC: linked into shared objects; hidden: each MODEL.so keeps its copy private.
# The vectorizer on (it changes no bits without contraction; see backend-mt3000/target.c).
runtime_libmtcrt_a_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden -ffp-contract=off \
	-fno-math-errno -fno-trapping-math -ftree-vectorize $(RT_VEC_CFLAGS)
mtcincludedir = $(includedir)/mtc
mtcinclude_HEADERS = runtime/mtc/mtc.h runtime/mtc/mtc-rt.h runtime/mtc/mtc-ops.h \
	runtime/mtc/mtc-math.h runtime/mtc/mtc-conv.h
# <mtc/mtc-cuda.h>: the CUDA part (libmtccuda.a), where the CUDA backend is built.
if HAVE_CUDA
mtcinclude_HEADERS += runtime/mtc/mtc-cuda.h
endif
# <mtc/mtc-comm.h> and comm.c: collectives for --data-parallel modules, where configure found
# MPI (a module pulls comm.o, and so libmpi, only when it uses it).
mtcinclude_HEADERS += runtime/mtc/mtc-comm.h
if HAVE_MPI
runtime_libmtcrt_a_SOURCES += runtime/comm.c runtime/dp.c
runtime_libmtcrt_a_CFLAGS += $(MPI_CFLAGS)
endif
# The interpreter shares the initial values (init.c).
MTC_LIBS += runtime/libmtcrt.a $(BLAS_LIBS)
