# runtime/local.mk: libmtcrt, the runtime every generated module links statically, and its
# installed headers <mtc/mtc.h> (users), <mtc/mtc-rt.h> and <mtc/mtc-ops.h> (generated code).
lib_LIBRARIES += runtime/libmtcrt.a
runtime_libmtcrt_a_SOURCES = runtime/rt-impl.h runtime/device.c runtime/dma.c runtime/pool.c \
	runtime/kernels.c runtime/init.c runtime/error.c
# -fPIC: linked into shared objects; hidden: each MODEL.so keeps its copy private.
runtime_libmtcrt_a_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden -ffp-contract=off
mtcincludedir = $(includedir)/mtc
mtcinclude_HEADERS = runtime/mtc/mtc.h runtime/mtc/mtc-rt.h runtime/mtc/mtc-ops.h
# The interpreter shares the initial values (init.c).
MTC_LIBS += runtime/libmtcrt.a $(BLAS_LIBS)
