/* onnxfold.c: tensors known at import time: read from the file's tensors (initializers,
 * Constant values), made, indexed under broadcasting. The shape arithmetic exporters write
 * (Shape, Gather, Concat, Range, ...) runs on these, so every shape the IR sees is static.
 * Floats fold in f32, as the exporter's runtime would compute them; integers in int64. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnxint.h"

Kv *
kv_new(Arena *a, KDt dt, const Shape *sh)
{
	Kv *k = aalloc(a, sizeof *k);
	int64_t n = shape_numel(sh);

	if (n > MAXKNOWN)
		die("kv_new of %lld elements", (long long)n);
	k->dt = dt;
	k->sh = *sh;
	k->n = n;
	if (dt == KF)
		k->f = aalloc(a, (size_t)(n ? n : 1) * sizeof *k->f);
	else
		k->i = aalloc(a, (size_t)(n ? n : 1) * sizeof *k->i);
	return k;
}

double
kv_get(const Kv *k, int64_t i)
{
	return k->dt == KF ? (double)k->f[i] : (double)k->i[i];
}

int
kv_uniform(const Kv *k)
{
	for (int64_t i = 1; i < k->n; i++)
		if (k->dt == KF ? memcmp(&k->f[i], &k->f[0], sizeof *k->f) : k->i[i] != k->i[0])
			return 0;
	return k->n > 0;
}

int64_t
bcast_index(const Shape *src, const Shape *dst, int64_t i)
{
	int64_t r = 0, stride = 1;

	for (int a = dst->rank - 1, b = src->rank - 1; a >= 0; a--, b--) {
		int64_t c = i % dst->d[a];
		i /= dst->d[a];
		if (b >= 0) {
			if (src->d[b] != 1)
				r += c * stride;
			stride *= src->d[b];
		}
	}
	return r;
}

/* Little-endian bytes to element i of k. */
static void
decode(Kv *k, int dt, const uint8_t *p, int64_t i)
{
	uint64_t u = 0;
	int es = dt_size(dt);

	for (int b = es - 1; b >= 0; b--)
		u = u << 8 | p[i * es + b];
	switch (dt) {
	case DT_FLOAT: {
		uint32_t w = (uint32_t)u;
		float f;
		memcpy(&f, &w, 4);
		k->f[i] = f;
		break;
	}
	case DT_DOUBLE: {
		double d;
		memcpy(&d, &u, 8);
		k->f[i] = (float)d;
		break;
	}
	case DT_INT64: k->i[i] = (int64_t)u; break;
	case DT_INT32: k->i[i] = (int32_t)(uint32_t)u; break;
	case DT_INT16: k->i[i] = (int16_t)(uint16_t)u; break;
	case DT_INT8: k->i[i] = (int8_t)(uint8_t)u; break;
	case DT_BOOL: k->i[i] = u != 0; break;
	default: k->i[i] = (int64_t)u; break;      /* uint8, uint16 */
	}
}

Kv *
kv_tensor(Onnx *o, const OxNode *nd, const Onnx__TensorProto *t, Arena *a)
{
	const char *what = t->name && *t->name ? asprintf_a(a, "tensor '%s'", t->name) : "a tensor";
	const char *file;
	int dt = t->has_data_type ? t->data_type : 0;
	int64_t n, off;
	Shape sh;
	Kv *k;

	if (ox_tensor_check(o, nd, t, what, &sh, &n, &file, &off))
		return NULL;
	if (n > MAXKNOWN) {
		ox_error(o, nd, "%s has %lld elements, more than mtc folds at import time (%d)", what,
		         (long long)n, MAXKNOWN);
		return NULL;
	}
	k = kv_new(a, dt == DT_FLOAT || dt == DT_DOUBLE ? KF : dt == DT_BOOL ? KB : KI, &sh);
	if (file) {
		size_t bytes = (size_t)n * (size_t)dt_size(dt);
		uint8_t *buf = xmalloc(bytes + 1);
		FILE *fp = fopen(file, "rb");
		int ok = fp && fseeko(fp, (off_t)off, SEEK_SET) == 0 && fread(buf, 1, bytes, fp) == bytes;
		if (fp)
			fclose(fp);
		if (!ok) {
			free(buf);
			ox_error(o, nd, "%s: cannot read its external data from '%s'", what, file);
			return NULL;
		}
		for (int64_t i = 0; i < n; i++)
			decode(k, dt, buf, i);
		free(buf);
	} else if (t->has_raw_data) {
		for (int64_t i = 0; i < n; i++)
			decode(k, dt, t->raw_data.data, i);
	} else {
		for (int64_t i = 0; i < n; i++)
			switch (dt) {
			case DT_FLOAT: k->f[i] = t->float_data[i]; break;
			case DT_DOUBLE: k->f[i] = (float)t->double_data[i]; break;
			case DT_INT64: k->i[i] = t->int64_data[i]; break;
			case DT_BOOL: k->i[i] = t->int32_data[i] != 0; break;
			default: k->i[i] = t->int32_data[i]; break;
			}
	}
	return k;
}
