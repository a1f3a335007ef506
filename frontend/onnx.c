/* onnx.c: reading an ONNX model file: protobuf-c parses it against frontend/onnx.proto (the
 * messages and fields mtc reads); this file checks what the importer relies on and indexes it.
 *
 * needs: the file's bytes. fills: an Onnx (onnxint.h): value names as ids, the inputs a call
 * gives with their declared types, the outputs, the initializers (checked against their dims;
 * for f32 ones, where their little-endian bytes sit, so a param's IR refers to the file
 * instead of copying it) and the nodes with their operands as ids, in topological order.
 * Anything else is a diagnostic "file.onnx: error: ..." and NULL: a file that does not parse
 * (truncated, not ONNX), a graph that uses a value before defining it, an initializer whose
 * data disagrees with its dims, external data that is missing or short. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnxint.h"

enum { MINOPSET = 11, MAXOPSET = 18 };

int
ox_error(Onnx *o, const OxNode *nd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (nd)
		diag(o->err, (Loc){ 0, 0 }, "node '%s' (%s, opset %d): %s", nd->name, nd->op, o->opset, msg);
	else
		diag(o->err, (Loc){ 0, 0 }, "%s", msg);
	return -1;
}

const char *
dt_name(int dt)
{
	static const char *const nm[] = { "undefined", "float", "uint8", "int8", "uint16", "int16",
		"int32", "int64", "string", "bool", "float16", "double", "uint32", "uint64",
		"complex64", "complex128", "bfloat16" };
	return dt >= 0 && dt < (int)(sizeof nm / sizeof *nm) ? nm[dt] : "unknown";
}

int
dt_size(int dt)
{
	switch (dt) {
	case DT_FLOAT: case DT_INT32: return 4;
	case DT_INT64: case DT_DOUBLE: return 8;
	case DT_UINT8: case DT_INT8: case DT_BOOL: return 1;
	case DT_UINT16: case DT_INT16: return 2;
	default: return 0;
	}
}

static const char *
vname(const void *o, int id)
{
	return ((const Onnx *)o)->name[id];
}

int
ox_lookup(const Onnx *o, const char *name)
{
	return ntab_find(o->htab, o->hcap, name, vname, o);
}

/* A new value name; its id. */
static int
add_name(Onnx *o, const char *name)
{
	if (o->nname == o->capname) {
		o->capname = o->capname ? 2 * o->capname : 64;
		o->name = xrealloc(o->name, o->capname * sizeof *o->name);
		o->initof = xrealloc(o->initof, o->capname * sizeof *o->initof);
		o->defnode = xrealloc(o->defnode, o->capname * sizeof *o->defnode);
	}
	o->name[o->nname] = (char *)name;
	o->initof[o->nname] = -1;
	o->defnode[o->nname] = -1;
	ntab_add(&o->htab, &o->hcap, o->nname, vname, o);
	return o->nname++;
}

Onnx__AttributeProto *
ox_attr(const OxNode *nd, const char *name)
{
	for (size_t i = 0; i < nd->p->n_attribute; i++)
		if (nd->p->attribute[i]->name && strcmp(nd->p->attribute[i]->name, name) == 0)
			return nd->p->attribute[i];
	return NULL;
}

/* ---------- where bytes fields sit in the file ---------- */

/* protobuf-c copies bytes fields, so their offsets are found by walking the wire format
 * (which protobuf-c has accepted already) along ModelProto.graph (7), GraphProto.initializer
 * (5), TensorProto.raw_data (9) and the packed float_data (4). Repeated occurrences merge as
 * protobuf merges them: graphs concatenate their initializers, the last raw_data wins, and a
 * float_data in several pieces is not one run of bytes (its offset stays -1). */
typedef struct Wire {
	const uint8_t *p;
	size_t n, k;
} Wire;

static int
varint(Wire *w, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64 && w->k < w->n; s += 7) {
		uint8_t b = w->p[w->k++];
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, wire type and, for length-delimited ones, [*off, *off + *len). */
static int
field(Wire *w, int *num, int *wt, size_t *off, size_t *len)
{
	uint64_t t, v;

	if (varint(w, &t))
		return -1;
	*num = (int)(t >> 3);
	*wt = (int)(t & 7);
	switch (*wt) {
	case 0: return varint(w, &v);
	case 1: if (w->n - w->k < 8) return -1; w->k += 8; return 0;
	case 5: if (w->n - w->k < 4) return -1; w->k += 4; return 0;
	case 2:
		if (varint(w, &v) || v > w->n - w->k)
			return -1;
		*off = w->k;
		*len = (size_t)v;
		w->k += (size_t)v;
		return 0;
	default: return -1;     /* groups: not in ONNX */
	}
}

typedef struct Where {
	int64_t raw, flt;       /* offsets of raw_data and of packed float_data; -1: none */
	int64_t rawlen;
	int fltparts;
} Where;

static void
tensor_where(const uint8_t *p, size_t n, Where *wh)
{
	Wire w = { p, n, 0 };
	int num, wt;
	size_t off = 0, len = 0;

	while (w.k < w.n && field(&w, &num, &wt, &off, &len) == 0)
		if (num == 9 && wt == 2) {
			wh->raw = (int64_t)off;
			wh->rawlen = (int64_t)len;
		} else if (num == 4) {
			wh->fltparts++;
			wh->flt = wt == 2 ? (int64_t)off : -1;
		}
}

/* wh[i] for each of the graph's initializers, offsets from the start of the file; 0, or -1
 * when the walk does not find them all (then no offset is trusted). */
static int
walk(const Onnx *o, Where *wh, int nwh)
{
	Wire m = { o->buf, o->len, 0 };
	int num, wt, k = 0;
	size_t off = 0, len = 0;

	while (m.k < m.n) {
		if (field(&m, &num, &wt, &off, &len))
			return -1;
		if (num != 7 || wt != 2)
			continue;
		Wire g = { o->buf + off, len, 0 };
		size_t base = off;
		while (g.k < g.n) {
			size_t toff = 0, tlen = 0;
			if (field(&g, &num, &wt, &toff, &tlen))
				return -1;
			if (num != 5 || wt != 2)
				continue;
			if (k >= nwh)
				return -1;
			wh[k] = (Where){ -1, -1, 0, 0 };
			tensor_where(o->buf + base + toff, tlen, &wh[k]);
			if (wh[k].raw >= 0)
				wh[k].raw += (int64_t)(base + toff);
			if (wh[k].flt >= 0)
				wh[k].flt += (int64_t)(base + toff);
			k++;
		}
	}
	return k == nwh ? 0 : -1;
}

/* ---------- tensors ---------- */

/* external_data's value for key, or NULL. */
static const char *
ext_key(const Onnx__TensorProto *t, const char *key)
{
	for (size_t i = 0; i < t->n_external_data; i++)
		if (t->external_data[i]->key && strcmp(t->external_data[i]->key, key) == 0)
			return t->external_data[i]->value;
	return NULL;
}

/* A non-negative integer written in decimal. */
static int
decimal(const char *s, int64_t *v)
{
	char *e;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	*v = strtoll(s, &e, 10);
	return *e || errno ? -1 : 0;
}

/* The file and offset of an external tensor's data of `bytes` bytes; 0, or -1 after an error. */
static int
external(Onnx *o, const OxNode *nd, const Onnx__TensorProto *t, const char *what, int64_t bytes,
         const char **file, int64_t *off)
{
	const char *loc = ext_key(t, "location"), *s;
	int64_t len;
	struct stat st;
	char *path;

	*off = 0;
	if (!loc || !*loc)
		return ox_error(o, nd, "%s: external data without a location", what);
	if (loc[0] == '/' || strstr(loc, ".."))
		return ox_error(o, nd, "%s: external data location '%s' is not a path inside the model's "
		                "directory", what, loc);
	if ((s = ext_key(t, "offset")) && decimal(s, off))
		return ox_error(o, nd, "%s: external data offset '%s' is not a byte count", what, s);
	if ((s = ext_key(t, "length")) && (decimal(s, &len) || len != bytes))
		return ox_error(o, nd, "%s: external data length %s, but its dims need %lld bytes", what,
		                s, (long long)bytes);
	path = asprintf_a(o->a, "%s%s", o->dir, loc);
	if (stat(path, &st))
		return ox_error(o, nd, "%s: cannot read its external data '%s': %s", what, path,
		                strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size < *off || st.st_size - *off < bytes)
		return ox_error(o, nd, "%s: external data '%s' holds %lld bytes from offset %lld, its dims "
		                "need %lld", what, path, (long long)(S_ISREG(st.st_mode) ? st.st_size - *off : 0),
		                (long long)*off, (long long)bytes);
	*file = path;
	return 0;
}

int
ox_tensor_check(Onnx *o, const OxNode *nd, const Onnx__TensorProto *t, const char *what, Shape *sh,
             int64_t *n, const char **file, int64_t *off)
{
	int dt = t->has_data_type ? t->data_type : 0, es = dt_size(dt);
	int64_t count = 0;

	*file = NULL;
	*off = -1;
	if (!es)
		return ox_error(o, nd, "%s is of type %s, which mtc does not read", what, dt_name(dt));
	if (t->n_dims > MAXRANK)
		return ox_error(o, nd, "%s has rank %zu, more than mtc's limit of %d", what, t->n_dims, MAXRANK);
	sh->rank = (int)t->n_dims;
	*n = 1;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0)
			return ox_error(o, nd, "%s has a negative dimension %lld", what, (long long)t->dims[i]);
		sh->d[i] = t->dims[i];
		if (mul64(*n, t->dims[i], n) || *n > MAXELEMS)
			return ox_error(o, nd, "%s has more elements than mtc can hold", what);
	}
	if (t->has_data_location && t->data_location == 1)
		return external(o, nd, t, what, *n * es, file, off);
	if (t->has_raw_data) {
		char b[MAXRANK * 24 + 8];
		if ((int64_t)t->raw_data.len != *n * es)
			return ox_error(o, nd, "%s has %zu bytes of data, but its dims %s need %lld (%lld %s "
			                "elements)", what, t->raw_data.len, shape_str(sh, b, sizeof b),
			                (long long)(*n * es), (long long)*n, dt_name(dt));
		return 0;
	}
	switch (dt) {
	case DT_FLOAT: count = (int64_t)t->n_float_data; break;
	case DT_INT64: count = (int64_t)t->n_int64_data; break;
	case DT_DOUBLE: count = (int64_t)t->n_double_data; break;
	default: count = (int64_t)t->n_int32_data; break;
	}
	if (count != *n) {
		char b[MAXRANK * 24 + 8];
		return ox_error(o, nd, "%s has %lld values, but its dims %s need %lld", what,
		                (long long)count, shape_str(sh, b, sizeof b), (long long)*n);
	}
	return 0;
}

/* ---------- the graph ---------- */

static int
value_type(Onnx *o, const Onnx__ValueInfoProto *vi, OxIn *in)
{
	const Onnx__TypeProto *t = vi->type;
	const Onnx__TensorShapeProto *s;

	if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type ||
	    !t->tensor_type->has_elem_type)
		return ox_error(o, NULL, "graph input '%s' is not a tensor of a known element type", vi->name);
	in->dt = t->tensor_type->elem_type;
	if (in->dt != DT_FLOAT && in->dt != DT_INT64 && in->dt != DT_INT32)
		return ox_error(o, NULL, "graph input '%s' is of type %s; mtc takes float, int64 and int32 "
		                "inputs", vi->name, dt_name(in->dt));
	s = t->tensor_type->shape;
	if (!s) {
		in->rank = -1;          /* any: the call's shape */
		return 0;
	}
	if (s->n_dim > MAXRANK)
		return ox_error(o, NULL, "graph input '%s' has rank %zu, more than mtc's limit of %d",
		                vi->name, s->n_dim, MAXRANK);
	in->rank = (int)s->n_dim;
	for (int i = 0; i < in->rank; i++) {
		const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
		in->d[i] = -1;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0)
			in->d[i] = d->dim_value;
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		         d->dim_param && *d->dim_param)
			in->sym[i] = d->dim_param;
	}
	return 0;
}

static int
opset(Onnx *o)
{
	const Onnx__ModelProto *m = o->pb;

	o->opset = 0;
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const char *d = m->opset_import[i]->domain;
		if ((!d || !*d || strcmp(d, "ai.onnx") == 0) && m->opset_import[i]->has_version)
			o->opset = (int)(m->opset_import[i]->version > 1000 ? 1000 : m->opset_import[i]->version);
	}
	if (!o->opset)
		return ox_error(o, NULL, "the model imports no version of the ONNX operator set");
	if (o->opset < MINOPSET || o->opset > MAXOPSET)
		return ox_error(o, NULL, "the model is written in opset %d; mtc reads opsets %d to %d "
		                "(torch.onnx.export(..., opset_version=14) writes one)", o->opset, MINOPSET,
		                MAXOPSET);
	return 0;
}

static int
initializers(Onnx *o)
{
	const Onnx__GraphProto *g = o->g;
	Where *wh = xcalloc(g->n_initializer + 1, sizeof *wh);
	int walked = walk(o, wh, (int)g->n_initializer) == 0, bad = 0;

	o->init = xcalloc(g->n_initializer + 1, sizeof *o->init);
	o->pval = xmalloc((g->n_initializer + 1) * sizeof *o->pval);
	o->prole = xmalloc((g->n_initializer + 1) * sizeof *o->prole);
	o->frozen = xcalloc(g->n_initializer + 1, 1);
	for (size_t i = 0; i < g->n_initializer && !bad; i++) {
		Onnx__TensorProto *t = g->initializer[i];
		OxInit *in = &o->init[o->ninit];
		const char *what;
		int id;

		if (!t->name || !*t->name) {
			bad = ox_error(o, NULL, "initializer %zu has no name", i);
			break;
		}
		what = asprintf_a(o->a, "initializer '%s'", t->name);
		if (ox_lookup(o, t->name) >= 0) {
			bad = ox_error(o, NULL, "%s is given twice", what);
			break;
		}
		in->t = t;
		in->name = t->name;
		in->dt = t->has_data_type ? t->data_type : 0;
		if (ox_tensor_check(o, NULL, t, what, &in->sh, &in->n, &in->file, &in->off)) {
			bad = -1;
			break;
		}
		in->ext = in->file != NULL;
		if (in->dt != DT_FLOAT) {
			in->file = NULL;
		} else if (!in->ext && walked && in->n > 0) {
			/* trust an offset only where the bytes there are the ones protobuf-c read */
			if (t->has_raw_data && t->raw_data.len > 0 && wh[i].raw >= 0 &&
			    wh[i].rawlen == (int64_t)t->raw_data.len &&
			    memcmp(o->buf + wh[i].raw, t->raw_data.data, t->raw_data.len) == 0)
				in->file = o->path, in->off = wh[i].raw;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			else if (!t->has_raw_data && wh[i].fltparts == 1 && wh[i].flt >= 0 &&
			         memcmp(o->buf + wh[i].flt, t->float_data, (size_t)in->n * 4) == 0)
				in->file = o->path, in->off = wh[i].flt;
#endif
		}
		id = add_name(o, t->name);
		o->initof[id] = o->ninit++;
	}
	free(wh);
	return bad;
}

static int
inputs_outputs(Onnx *o)
{
	const Onnx__GraphProto *g = o->g;

	o->in = xcalloc(g->n_input + 1, sizeof *o->in);
	for (size_t i = 0; i < g->n_input; i++) {
		const Onnx__ValueInfoProto *vi = g->input[i];
		int id;
		if (!vi->name || !*vi->name)
			return ox_error(o, NULL, "graph input %zu has no name", i);
		if ((id = ox_lookup(o, vi->name)) >= 0) {
			if (o->initof[id] >= 0)
				continue;       /* an initializer listed as an input too (older exporters) */
			return ox_error(o, NULL, "graph input '%s' is given twice", vi->name);
		}
		if (value_type(o, vi, &o->in[o->nin]))
			return -1;
		o->in[o->nin++].id = add_name(o, vi->name);
	}
	return 0;
}

static int
nodes(Onnx *o)
{
	const Onnx__GraphProto *g = o->g;

	o->node = xcalloc(g->n_node + 1, sizeof *o->node);
	for (size_t i = 0; i < g->n_node; i++) {
		Onnx__NodeProto *p = g->node[i];
		OxNode *nd = &o->node[o->nnode];
		const char *d = p->domain;

		nd->p = p;
		nd->op = p->op_type && *p->op_type ? p->op_type : "?";
		nd->name = p->name && *p->name ? p->name : p->n_output && p->output[0] && *p->output[0] ?
		           p->output[0] : asprintf_a(o->a, "#%zu", i);
		if (!p->op_type || !*p->op_type)
			return ox_error(o, nd, "the node has no op type");
		if (d && *d && strcmp(d, "ai.onnx"))
			return ox_error(o, nd, "op domain '%s' is not supported (mtc reads the standard ONNX "
			                "operators)", d);
		if (p->n_input > 1000 || p->n_output > 1000)
			return ox_error(o, nd, "more than 1000 operands");
		nd->nin = (int)p->n_input;
		nd->nout = (int)p->n_output;
		nd->in = aalloc(o->a, (p->n_input + 1) * sizeof *nd->in);
		nd->out = aalloc(o->a, (p->n_output + 1) * sizeof *nd->out);
		for (size_t k = 0; k < p->n_input; k++) {
			const char *nm = p->input[k];
			nd->in[k] = -1;
			if (!nm || !*nm)
				continue;
			if ((nd->in[k] = ox_lookup(o, nm)) < 0)
				return ox_error(o, nd, "input '%s' is not defined before the node (nodes must be "
				                "sorted topologically)", nm);
		}
		for (size_t k = 0; k < p->n_output; k++) {
			const char *nm = p->output[k];
			nd->out[k] = -1;
			if (!nm || !*nm)
				continue;
			if (ox_lookup(o, nm) >= 0)
				return ox_error(o, nd, "output '%s' is defined twice", nm);
			nd->out[k] = add_name(o, nm);
			o->defnode[nd->out[k]] = o->nnode;
		}
		o->nnode++;
	}
	o->out = xcalloc(g->n_output + 1, sizeof *o->out);
	for (size_t i = 0; i < g->n_output; i++) {
		const char *nm = g->output[i]->name;
		if (!nm || (o->out[o->nout++] = ox_lookup(o, nm)) < 0)
			return ox_error(o, NULL, "graph output '%s' is not defined", nm ? nm : "");
	}
	if (!o->nout)
		return ox_error(o, NULL, "the graph has no outputs");
	return 0;
}

Onnx *
onnx_open(const char *path, const char *buf, size_t len, Src *err)
{
	Onnx *o = xcalloc(1, sizeof *o);
	const char *slash = strrchr(path, '/');

	o->a = arena_new();
	o->path = astrdup(o->a, path);
	o->dir = slash ? asprintf_a(o->a, "%.*s/", (int)(slash - path), path) : "";
	o->own.name = o->path;
	o->err = err ? err : &o->own;
	if (buf) {
		o->buf = xmalloc(len + 1);
		memcpy(o->buf, buf, len);
		o->len = len;
	} else if (!(o->buf = (uint8_t *)slurp(path, &o->len))) {
		ox_error(o, NULL, "cannot read the file: %s", strerror(errno));
		goto fail;
	}
	if (!(o->pb = onnx__model_proto__unpack(NULL, o->len, o->buf))) {
		ox_error(o, NULL, "not an ONNX model, or a truncated one: the file does not parse as "
		         "a protobuf ModelProto");
		goto fail;
	}
	if (!(o->g = o->pb->graph) || (!o->g->n_node && !o->g->n_output)) {
		ox_error(o, NULL, "not an ONNX model: the file holds no graph");
		goto fail;
	}
	if (opset(o) || initializers(o) || inputs_outputs(o) || nodes(o))
		goto fail;
	return o;
fail:
	onnx_close(o);
	return NULL;
}

/* Freeze the float initializers that pat names: a name, or a prefix followed by '*'. The
 * number frozen (0: none matches). */
int
onnx_freeze(Onnx *o, const char *pat)
{
	size_t n = strlen(pat);
	int prefix = n > 0 && pat[n - 1] == '*', k = 0;

	for (int i = 0; i < o->ninit; i++)
		if (o->init[i].dt == DT_FLOAT &&
		    (prefix ? strncmp(o->init[i].name, pat, n - 1) == 0 : strcmp(o->init[i].name, pat) == 0)) {
			o->frozen[i] = 1;
			k++;
		}
	return k;
}

void
onnx_close(Onnx *o)
{
	if (!o)
		return;
	if (o->pb)
		onnx__model_proto__free_unpacked(o->pb, NULL);
	free(o->buf);
	free(o->name);
	free(o->htab);
	free(o->initof);
	free(o->defnode);
	free(o->in);
	free(o->out);
	free(o->init);
	free(o->pval);
	free(o->prole);
	free(o->frozen);
	free(o->cst);
	free(o->node);
	arena_free(o->a);
	free(o);
}

int onnx_ninputs(const Onnx *o) { return o->nin; }
int onnx_noutputs(const Onnx *o) { return o->nout; }
const char *onnx_input_name(const Onnx *o, int i) { return o->name[o->in[i].id]; }
const char *onnx_path(const Onnx *o) { return o->path; }
