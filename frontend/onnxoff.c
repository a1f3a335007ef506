/* onnxoff.c: the ONNX importer's entry points in an mtc built without protobuf-c: each says
 * that the importer was left out and how to build it in. */
#include "onnx.h"

static void
off(Src *err, const char *path)
{
	Src own = { path, NULL, 0, 0 };

	diag(err ? err : &own, (Loc){ 0, 0 }, "this mtc was built without protobuf-c, so it cannot "
	     "read ONNX models (install libprotobuf-c-dev and protobuf-c-compiler, then run "
	     "configure again)");
}

Onnx *
onnx_open(const char *path, const char *buf, size_t len, Src *err)
{
	(void)buf;
	(void)len;
	off(err, path);
	return NULL;
}

Module *
onnx_compile(Src *src, const FeOpts *fo)
{
	(void)fo;
	off(src, src->name);
	return NULL;
}

/* Unreachable without an open model; defined so that callers link. */
void onnx_close(Onnx *o) { (void)o; }
int onnx_ninputs(const Onnx *o) { (void)o; die("no ONNX importer"); }
int onnx_noutputs(const Onnx *o) { (void)o; die("no ONNX importer"); }
const char *onnx_input_name(const Onnx *o, int i) { (void)o; (void)i; die("no ONNX importer"); }
const char *onnx_path(const Onnx *o) { (void)o; die("no ONNX importer"); }
int onnx_call(Onnx *o, OnnxCall *c) { (void)o; (void)c; die("no ONNX importer"); }
void onnx_declare(Func *f, OnnxDecls *d) { (void)f; (void)d; }
void onnx_decls_free(OnnxDecls *d) { (void)d; }
