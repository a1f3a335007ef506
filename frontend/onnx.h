/* onnx.h: ONNX models as IR: a tdsl `import` expands a graph at each call, `mtc MODEL.onnx`
 * compiles the graph alone into a forward-only module.
 *
 * A graph's initializers become params named PREFIX.<initializer> (batch-norm running
 * statistics: buffers) whose initial values are the file's; the shape arithmetic an exporter
 * writes (Shape, Constant, Gather of shapes, Concat, Range, ...) is folded at import time, so
 * every shape is static. Errors are diagnostics "file.onnx: error: node 'NAME' (OpType,
 * opset N): ...". Without protobuf-c at configure time, each entry point says so and fails. */
#ifndef MTC_ONNX_H
#define MTC_ONNX_H

#include "frontend.h"

typedef struct Onnx Onnx;

/* Read and check the model in file `path` (bytes `buf`, `len` of them; NULL: read the file).
 * NULL after a diagnostic, counted in err->nerr when err is given (else in a Src of its own). */
Onnx *onnx_open(const char *path, const char *buf, size_t len, Src *err);
void onnx_close(Onnx *);
int onnx_ninputs(const Onnx *);
int onnx_noutputs(const Onnx *);
const char *onnx_input_name(const Onnx *, int i);
const char *onnx_path(const Onnx *);

/* The params (and buffers) that calls need, made decls of the module once its function is
 * complete (onnx_declare): until then each is a value of the function that no op defines,
 * since a function's decl values come before all others. Shared by every call of every
 * import in one function. */
typedef struct OnnxDecls {
	int n, cap;
	int *val;               /* the value standing for the decl, named as the decl */
	Role *role;
	Init *init;
	Loc *loc;
} OnnxDecls;

/* Make the pending decls of f (the module's only function yet) decls of its module, f
 * rebuilt so that their values come with the decls'; then free them. */
void onnx_declare(Func *f, OnnxDecls *);
void onnx_decls_free(OnnxDecls *);

/* Keep the float initializers that pat names (a name, or a prefix and '*') as they are: they
 * become buffers (module state that the optimizer does not update), not params, as a
 * PyTorch module's buffers and its params with requires_grad off. Returns how many it
 * names. Float initializers holding an infinity or a NaN (an additive attention mask) are
 * buffers without it. */
int onnx_freeze(Onnx *, const char *pat);

/* One call of a graph. */
typedef struct OnnxCall {
	Module *m;
	Func *f;                /* ops are appended here (phase fwd) */
	const char *prefix;     /* names of params and values: PREFIX.<onnx name> */
	Loc loc;                /* of the call: every op's location */
	const int *args;        /* one value per graph input */
	int nargs;
	int *res;               /* fills: one value per graph output */
	Src *src;               /* the caller's file: errors about the arguments at loc, a note
	                         * at loc after an error inside the graph; NULL: none */
	int maxops;             /* f may grow to this many ops */
	OnnxDecls *decls;       /* where params are added */
	int *ndropout;          /* the module's dropouts so far: each one's key */
	int fwdonly;            /* the graph alone (onnx_compile): nothing is trained, so values
	                         * computed from params may be folded */
} OnnxCall;

/* Expand the graph into c->f with the arguments' shapes (symbolic dimensions take them).
 * 0, or -1 after diagnostics. */
int onnx_call(Onnx *, OnnxCall *c);

/* mtc MODEL.onnx: the graph alone as a forward-only module named after the file; symbolic
 * input dimensions are given by -D NAME=INT. NULL after diagnostics (src->nerr > 0). */
Module *onnx_compile(Src *src, const FeOpts *);

#endif
