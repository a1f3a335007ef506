# backend-mt3000/local.mk: the default target: MT-3000-style host and device C, MODEL.h, MODEL.so.
libmtc_a_SOURCES += backend-mt3000/mt3000.h backend-mt3000/kern.c backend-mt3000/host.c \
	backend-mt3000/target.c
# Where mtc finds the runtime after make install, and in the build tree (target.c says how).
# A sanitizer build (--enable-sanitizers) builds MODEL.so with the same -fsanitize flags: its
# libmtcrt.a is instrumented, and the generated code is checked too.
libmtc_a_CPPFLAGS += -DMTC_LIBDIR='"$(libdir)"' -DMTC_INCLUDEDIR='"$(includedir)"' \
	-DMTC_SRCDIR='"$(abs_top_srcdir)"' -DMTC_RT_LIBS='"$(SAN_CFLAGS) $(BLAS_LIBS) $(LIBS)"' \
	-DMTC_RT_CFLAGS='"$(SAN_CFLAGS)"'
