/* st.c: fuzz harness of the safetensors reader: mtc_st_read on the input (through a temporary
 * file, as mtc-run and the modules read them), then every tensor's data touched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

volatile unsigned fuzz_st_sum;   /* every byte read is added here (ASan checks each read) */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static char path[64];
	char err[512];
	mtc_st_file *f;
	FILE *fp;

	if (!path[0])
		snprintf(path, sizeof path, "/tmp/mtc-fuzz-st-%ld", (long)getpid());
	if (!(fp = fopen(path, "wb")))
		return 0;
	fwrite(data, 1, n, fp);
	fclose(fp);
	if ((f = mtc_st_read(path, err, sizeof err)) != NULL) {
		for (int i = 0; i < f->n; i++) {
			const unsigned char *p = f->t[i].data;
			if (f->t[i].rank < 0 || f->t[i].rank > MTC_ST_MAXRANK || f->t[i].nbytes < 0)
				abort();
			for (int64_t k = 0; k < f->t[i].nbytes; k++)
				fuzz_st_sum += p[k];
			if (mtc_st_find(f, f->t[i].name) == NULL)
				abort();
		}
		mtc_st_free(f);
	}
	unlink(path);
	return 0;
}
