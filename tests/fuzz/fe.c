/* fe.c: fuzz harness of the tdsl frontend: fe_compile on the input, as MODEL.tdsl. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	Src src = {0};
	FeOpts fe = {0};
	Module *m;
	char *text;

	if (n > 1 << 16)        /* big inputs only slow the search */
		return 0;
	text = malloc(n + 1);
	memcpy(text, data, n);
	text[n] = 0;
	src.name = "fuzz.tdsl";
	src.text = text;
	src.len = n;
	if ((m = fe_compile(&src, &fe)) != NULL) {
		if (ir_verify(m, "frontend"))
			abort();        /* the frontend must hand on verified IR */
		mod_free(m);
	}
	free(text);
	return 0;
}
