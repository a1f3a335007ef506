# frontend/local.mk: tdsl lexer, parser, expansion and shape checking.
libmtc_a_SOURCES += frontend/frontend.h frontend/fe.c
