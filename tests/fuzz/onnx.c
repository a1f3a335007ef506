/* onnx.c: fuzz harness of the ONNX reader and importer: onnx_compile on the input as
 * MODEL.onnx (symbolic dimensions given as 2), then ir_verify of what it returns, and the same
 * graph called from a tdsl program through `import` with arguments of its declared shapes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend.h"
#include "onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* The symbolic dimensions a model may use: the names exporters write. */
static const char *defs[] = { "batch=2", "batch_size=2", "N=2", "seq=2", "S=2", "T=2" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static char dir[64];
	char path[128], tpath[128], tdsl[4096];
	FeOpts fe = { .defines = defs, .ndefines = (int)(sizeof defs / sizeof *defs) };
	Src src = { 0 }, ts = { 0 };
	Module *m;
	FILE *fp;
	size_t k = 0;

	if (n > 1 << 16)        /* big inputs only slow the search */
		return 0;
	src.name = "fuzz.onnx";
	src.text = (const char *)data;
	src.len = n;
	if (!(m = onnx_compile(&src, &fe)))
		return 0;
	if (ir_verify(m, "frontend"))
		abort();            /* the importer must hand on verified IR */
	/* the same graph through a tdsl import: inputs of the module's shapes, one call */
	if (!dir[0])
		snprintf(dir, sizeof dir, "/tmp/mtc-fuzz-onnx-%ld", (long)getpid());
	snprintf(path, sizeof path, "%s.onnx", dir);
	snprintf(tpath, sizeof tpath, "%s.tdsl", dir);
	if ((fp = fopen(path, "wb"))) {
		fwrite(data, 1, n, fp);
		fclose(fp);
		k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, "import \"%s\" as g;\nmodel f {\n", path);
		for (int d = 0; d < m->ndecl && k < sizeof tdsl - 200; d++) {
			char ty[MAXRANK * 24 + 8];
			if (m->decl[d].role == R_INPUT)
				k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, "  input i%d : %s;\n", d,
				                      type_str(&m->decl[d].ty, ty, sizeof ty));
		}
		k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, "  ");
		for (int o = 0; o < m->fwd->nout && k < sizeof tdsl - 200; o++)
			k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, "%so%d", o ? ", " : "", o);
		k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, " = g(");
		for (int d = 0, first = 1; d < m->ndecl && k < sizeof tdsl - 200; d++)
			if (m->decl[d].role == R_INPUT) {
				k += (size_t)snprintf(tdsl + k, sizeof tdsl - k, "%si%d", first ? "" : ", ", d);
				first = 0;
			}
		snprintf(tdsl + k, sizeof tdsl - k, ");\n  output o0;\n}\n");
		ts.name = tpath;
		ts.text = tdsl;
		ts.len = strlen(tdsl);
		mod_free(m);
		if ((m = fe_compile(&ts, &(FeOpts){ 0 }))) {
			if (ir_verify(m, "frontend"))
				abort();
		}
		unlink(path);
	}
	mod_free(m);
	return 0;
}
