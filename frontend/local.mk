# frontend/local.mk: tdsl lexer, parser, expansion and shape checking.
# The lexer and parser are generated into the build tree from the sources in $(srcdir).
libmtc_a_SOURCES += frontend/frontend.h frontend/ast.h frontend/expand.h frontend/fe.c \
	frontend/ast.c frontend/map.c frontend/eval.c frontend/nn.c frontend/expand.c
nodist_libmtc_a_SOURCES = frontend/lex.c frontend/parse.c frontend/parse.h
BUILT_SOURCES += frontend/parse.h frontend/parse.c frontend/lex.c
EXTRA_DIST += frontend/lex.l frontend/parse.y
CLEANFILES += frontend/lex.c frontend/parse.c frontend/parse.h frontend/parse.output

frontend/parse.c: $(srcdir)/frontend/parse.y
	@$(MKDIR_P) frontend
	$(AM_V_GEN)$(BISON) -Wall -Werror -o frontend/parse.c --header=frontend/parse.h $(srcdir)/frontend/parse.y
frontend/parse.h: frontend/parse.c
	@test -f $@ || { rm -f frontend/parse.c; $(MAKE) $(AM_MAKEFLAGS) frontend/parse.c; }
frontend/lex.c: $(srcdir)/frontend/lex.l frontend/parse.h
	@$(MKDIR_P) frontend
	$(AM_V_GEN)$(FLEX) -o frontend/lex.c $(srcdir)/frontend/lex.l
