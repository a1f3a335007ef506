/* ir.c: fuzz harness of the textual IR: ir_parse, then ir_verify and a print of what passed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	Src src = {0};
	Module *m;
	char *text;
	FILE *null;

	if (n > 1 << 16)
		return 0;
	text = malloc(n + 1);
	memcpy(text, data, n);
	text[n] = 0;
	src.name = "fuzz.mir";
	src.text = text;
	src.len = n;
	if ((m = ir_parse(&src)) != NULL) {
		if (ir_verify(m, "parse") == 0 && (null = fopen("/dev/null", "w"))) {
			ir_print(null, m);
			fclose(null);
		}
		mod_free(m);
	}
	free(text);
	return 0;
}
