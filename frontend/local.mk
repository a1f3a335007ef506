# frontend/local.mk: tdsl lexer, parser, expansion and shape checking.
# The lexer and parser are generated into the build tree from the sources in $(srcdir).
libmtc_a_SOURCES += frontend/frontend.h frontend/ast.h frontend/expand.h frontend/fe.c \
	frontend/ast.c frontend/map.c frontend/eval.c frontend/nn.c frontend/expand.c
nodist_libmtc_a_SOURCES = frontend/lex.c frontend/parse.c frontend/parse.h
BUILT_SOURCES += frontend/parse.h frontend/parse.c frontend/lex.c
EXTRA_DIST += frontend/lex.l frontend/parse.y
CLEANFILES += frontend/lex.c frontend/parse.c frontend/parse.h frontend/parse.output

# The ONNX importer: protobuf-c's code for frontend/onnx.proto is generated into the build tree.
libmtc_a_SOURCES += frontend/onnx.h
EXTRA_DIST += frontend/onnx.proto
if HAVE_ONNX
libmtc_a_SOURCES += frontend/onnxint.h frontend/onnx.c frontend/onnxfold.c frontend/onnxcall.c \
	frontend/onnxops.c frontend/onnxshape.c frontend/onnxew.c frontend/onnxindex.c frontend/onnxnn.c \
	frontend/onnxconv.c
nodist_libmtc_a_SOURCES += frontend/onnx.pb-c.c frontend/onnx.pb-c.h
BUILT_SOURCES += frontend/onnx.pb-c.h frontend/onnx.pb-c.c
CLEANFILES += frontend/onnx.pb-c.c frontend/onnx.pb-c.h
frontend/onnx.pb-c.c: $(srcdir)/frontend/onnx.proto
	@$(MKDIR_P) frontend
	$(AM_V_GEN)$(PROTOC_C) --c_out=frontend --proto_path=$(srcdir)/frontend $(srcdir)/frontend/onnx.proto
frontend/onnx.pb-c.h: frontend/onnx.pb-c.c
	@test -f $@ || { rm -f frontend/onnx.pb-c.c; $(MAKE) $(AM_MAKEFLAGS) frontend/onnx.pb-c.c; }
else
libmtc_a_SOURCES += frontend/onnxoff.c
endif

frontend/parse.c: $(srcdir)/frontend/parse.y
	@$(MKDIR_P) frontend
	$(AM_V_GEN)$(BISON) -Wall -Werror -o frontend/parse.c --header=frontend/parse.h $(srcdir)/frontend/parse.y
frontend/parse.h: frontend/parse.c
	@test -f $@ || { rm -f frontend/parse.c; $(MAKE) $(AM_MAKEFLAGS) frontend/parse.c; }
frontend/lex.c: $(srcdir)/frontend/lex.l frontend/parse.h
	@$(MKDIR_P) frontend
	$(AM_V_GEN)$(FLEX) -o frontend/lex.c $(srcdir)/frontend/lex.l
