/* replay.c: the fuzz harnesses without libFuzzer: runs LLVMFuzzerTestOneInput on every file
 * named (a regression corpus), so make check replays every input that once crashed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "rb");
		uint8_t *buf = NULL;
		long n;
		if (!fp || fseek(fp, 0, SEEK_END) || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) ||
		    !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
			check(0, "cannot read %s", argv[i]);
		} else {
			LLVMFuzzerTestOneInput(buf, (size_t)n);   /* a crash ends the test */
			npass++;
		}
		free(buf);
		if (fp)
			fclose(fp);
	}
	return done();
}
