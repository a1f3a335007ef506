# ir/local.mk: the IR layer (types, op table, builder, printer, parser, verifier, interpreter).
libmtc_a_SOURCES += ir/ir.h ir/util.c ir/diag.c ir/ops.c ir/build.c ir/print.c ir/parse.c \
	ir/verify.c ir/check.h ir/interp.c
