# backend/local.mk: what every target shares: the target interface, the typed C API, MODEL.h.
libmtc_a_SOURCES += backend/backend.h backend/capi.c backend/header.c
