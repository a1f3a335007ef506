/* safetensors.h: reading and writing safetensors tensor files (dtypes F32 and I32).
 *
 * Shared by mtc-run and the runtime library, so it depends on nothing of the compiler and every
 * exported name is mtc_st_-prefixed. A file is an 8-byte little-endian header length, a JSON
 * object {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {"key": "value"}} and the raw little-endian data. Reading checks everything
 * against the file's real size before allocating; no input crashes it. */
#ifndef MTC_SAFETENSORS_H
#define MTC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum { MTC_ST_F32, MTC_ST_I32 };
enum { MTC_ST_MAXRANK = 8 };

typedef struct mtc_st_tensor {
	char *name;
	int dtype;                       /* MTC_ST_F32 or MTC_ST_I32 */
	int rank;
	int64_t shape[MTC_ST_MAXRANK];
	int64_t nbytes;                  /* numel * 4 */
	void *data;                      /* nbytes, 16-byte aligned (writing: any caller buffer) */
} mtc_st_tensor;

typedef struct mtc_st_file {
	int n;
	mtc_st_tensor *t;                /* in the order of their data */
} mtc_st_file;

/* Read a whole file. NULL on any problem, with a message naming the file in err. */
mtc_st_file *mtc_st_read(const char *path, char *err, size_t nerr);
/* The tensor called name, or NULL. */
mtc_st_tensor *mtc_st_find(const mtc_st_file *, const char *name);
void mtc_st_free(mtc_st_file *);
/* Write n tensors (name, dtype, rank, shape, data; nbytes is recomputed). 0, or -1 with err. */
int mtc_st_write(const char *path, const mtc_st_tensor *t, int n, char *err, size_t nerr);
/* "F32" / "I32" */
const char *mtc_st_dtype_name(int dtype);

#endif
