/* safetensors.c: a careful reader and a plain writer of safetensors files (F32, I32).
 *
 * The reader trusts nothing: the header length, every offset and every shape are checked
 * against the file's size before anything is allocated, so a file that declares billions of
 * elements is an error, not a huge allocation. The JSON parser knows exactly the shape of a
 * safetensors header (an object of tensor objects, plus "__metadata__" with string values)
 * and reports the byte where it went wrong. Data is little-endian, as on every host we run. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "safetensors.h"

enum { MAXHEADER = 100 << 20 };   /* the format's own limit on the header (100 MB) */

typedef struct P {
	const char *s, *end, *start;
	const char *path;
	char *err;
	size_t nerr;
	int bad;
} P;

static int
perr(P *p, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (p->bad)
		return -1;
	p->bad = 1;
	k = snprintf(p->err, p->nerr, "%s: ", p->path);
	if (k < 0 || (size_t)k >= p->nerr)
		return -1;
	va_start(ap, fmt);
	vsnprintf(p->err + k, p->nerr - k, fmt, ap);
	va_end(ap);
	return -1;
}

/* A JSON syntax error at the current byte of the header. */
static int
jerr(P *p, const char *what)
{
	if (p->s >= p->end)
		return perr(p, "bad header: %s at the end of the header (truncated JSON?)", what);
	return perr(p, "bad header: %s at header byte %ld", what, (long)(p->s - p->start));
}

static void
ws(P *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static int
eat(P *p, char c)
{
	ws(p);
	if (p->s < p->end && *p->s == c) {
		p->s++;
		return 1;
	}
	return 0;
}

static int
hex4(P *p, unsigned *u)
{
	*u = 0;
	for (int i = 0; i < 4; i++, p->s++) {
		char c = p->s < p->end ? *p->s : 0;
		*u <<= 4;
		if (c >= '0' && c <= '9') *u |= c - '0';
		else if (c >= 'a' && c <= 'f') *u |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') *u |= c - 'A' + 10;
		else return jerr(p, "bad \\u escape");
	}
	return 0;
}

/* A JSON string into a fresh buffer (UTF-8; escapes decoded; NUL bytes refused). */
static char *
str(P *p)
{
	char *o, *q;

	ws(p);
	if (p->s >= p->end || *p->s != '"') {
		jerr(p, "expected a string");
		return NULL;
	}
	p->s++;
	q = o = malloc(p->end - p->s + 1);   /* decoding never grows a string */
	if (!o) {
		perr(p, "out of memory");
		return NULL;
	}
	for (;;) {
		unsigned char c;
		if (p->s >= p->end) {
			jerr(p, "unterminated string");
			goto bad;
		}
		c = (unsigned char)*p->s++;
		if (c == '"')
			break;
		if (c < 0x20) {
			p->s--;
			jerr(p, "control character in a string");
			goto bad;
		}
		if (c != '\\') {
			*q++ = (char)c;
			continue;
		}
		if (p->s >= p->end) {
			jerr(p, "unterminated string");
			goto bad;
		}
		switch (c = (unsigned char)*p->s++) {
		case '"': case '\\': case '/': *q++ = (char)c; break;
		case 'b': *q++ = '\b'; break;
		case 'f': *q++ = '\f'; break;
		case 'n': *q++ = '\n'; break;
		case 'r': *q++ = '\r'; break;
		case 't': *q++ = '\t'; break;
		case 'u': {
			unsigned u, lo;
			if (hex4(p, &u))
				goto bad;
			if (u >= 0xd800 && u < 0xdc00) {
				if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u') {
					jerr(p, "unpaired surrogate");
					goto bad;
				}
				p->s += 2;
				if (hex4(p, &lo))
					goto bad;
				if (lo < 0xdc00 || lo > 0xdfff) {
					jerr(p, "unpaired surrogate");
					goto bad;
				}
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			} else if (u >= 0xdc00 && u < 0xe000) {
				jerr(p, "unpaired surrogate");
				goto bad;
			}
			if (u == 0) {
				jerr(p, "NUL in a string");
				goto bad;
			}
			/* at most 4 bytes out for at least 6 in */
			if (u < 0x80) {
				*q++ = (char)u;
			} else if (u < 0x800) {
				*q++ = (char)(0xc0 | u >> 6);
				*q++ = (char)(0x80 | (u & 0x3f));
			} else if (u < 0x10000) {
				*q++ = (char)(0xe0 | u >> 12);
				*q++ = (char)(0x80 | (u >> 6 & 0x3f));
				*q++ = (char)(0x80 | (u & 0x3f));
			} else {
				*q++ = (char)(0xf0 | u >> 18);
				*q++ = (char)(0x80 | (u >> 12 & 0x3f));
				*q++ = (char)(0x80 | (u >> 6 & 0x3f));
				*q++ = (char)(0x80 | (u & 0x3f));
			}
			break;
		}
		default:
			p->s--;
			jerr(p, "bad escape");
			goto bad;
		}
	}
	*q = 0;
	return o;
bad:
	free(o);
	return NULL;
}

/* A non-negative JSON integer below 2^62 (shapes and offsets). */
static int
nonneg(P *p, const char *name, const char *what, int64_t *v)
{
	int64_t x = 0;
	int nd = 0;

	ws(p);
	if (p->s < p->end && *p->s == '-')
		return perr(p, "tensor '%s': %s must not be negative", name, what);
	while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
		if (x > ((int64_t)1 << 62) / 10)
			return perr(p, "tensor '%s': %s is too large", name, what);
		x = x * 10 + (*p->s++ - '0');
		nd++;
	}
	if (nd == 0)
		return jerr(p, "expected a non-negative integer");
	if (p->s < p->end && (*p->s == '.' || *p->s == 'e' || *p->s == 'E'))
		return perr(p, "tensor '%s': %s must be an integer", name, what);
	*v = x;
	return 0;
}

/* [int, int, ...] with at most max entries */
static int
ints(P *p, const char *name, const char *what, int64_t *v, int max, int *n)
{
	*n = 0;
	if (!eat(p, '['))
		return jerr(p, "expected '['");
	if (eat(p, ']'))
		return 0;
	do {
		if (*n == max)
			return perr(p, "tensor '%s': %s has more than %d entries", name, what, max);
		if (nonneg(p, name, what, &v[(*n)++]))
			return -1;
	} while (eat(p, ','));
	if (!eat(p, ']'))
		return jerr(p, "expected ',' or ']'");
	return 0;
}

/* "__metadata__": {"key": "value", ...} */
static int
metadata(P *p)
{
	if (!eat(p, '{'))
		return jerr(p, "__metadata__ must be an object");
	if (eat(p, '}'))
		return 0;
	do {
		char *k, *v;
		if (!(k = str(p)))
			return -1;
		free(k);
		if (!eat(p, ':'))
			return jerr(p, "expected ':'");
		ws(p);
		if (p->s < p->end && *p->s != '"')
			return perr(p, "bad header: __metadata__ values must be strings");
		if (!(v = str(p)))
			return -1;
		free(v);
	} while (eat(p, ','));
	if (!eat(p, '}'))
		return jerr(p, "expected ',' or '}'");
	return 0;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} into t (its name already set) */
static int
tensor(P *p, mtc_st_tensor *t, int64_t off[2])
{
	int have = 0, n;

	if (!eat(p, '{'))
		return jerr(p, "expected a tensor object");
	if (eat(p, '}'))
		return perr(p, "tensor '%s': no dtype, shape or data_offsets", t->name);
	do {
		char *k = str(p);
		if (!k)
			return -1;
		if (!eat(p, ':')) {
			free(k);
			return jerr(p, "expected ':'");
		}
		if (strcmp(k, "dtype") == 0 && !(have & 1)) {
			char *d = str(p);
			if (!d) {
				free(k);
				return -1;
			}
			if (strcmp(d, "F32") == 0)
				t->dtype = MTC_ST_F32;
			else if (strcmp(d, "I32") == 0)
				t->dtype = MTC_ST_I32;
			else {
				perr(p, "tensor '%s': dtype %.40s is not supported (only F32 and I32)", t->name, d);
				free(d);
				free(k);
				return -1;
			}
			free(d);
			have |= 1;
		} else if (strcmp(k, "shape") == 0 && !(have & 2)) {
			if (ints(p, t->name, "shape", t->shape, MTC_ST_MAXRANK, &t->rank)) {
				free(k);
				return -1;
			}
			have |= 2;
		} else if (strcmp(k, "data_offsets") == 0 && !(have & 4)) {
			if (ints(p, t->name, "data_offsets", off, 2, &n) || (n != 2 &&
			    perr(p, "tensor '%s': data_offsets needs [begin, end]", t->name))) {
				free(k);
				return -1;
			}
			have |= 4;
		} else {
			perr(p, "tensor '%s': unexpected or repeated key '%.40s'", t->name, k);
			free(k);
			return -1;
		}
		free(k);
	} while (eat(p, ','));
	if (!eat(p, '}'))
		return jerr(p, "expected ',' or '}'");
	if (have != 7)
		return perr(p, "tensor '%s': missing %s", t->name,
		            !(have & 1) ? "dtype" : !(have & 2) ? "shape" : "data_offsets");
	return 0;
}

static int
cmp_begin(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

void
mtc_st_free(mtc_st_file *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++) {
		free(f->t[i].name);
		free(f->t[i].data);
	}
	free(f->t);
	free(f);
}

mtc_st_tensor *
mtc_st_find(const mtc_st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

const char *
mtc_st_dtype_name(int dt)
{
	return dt == MTC_ST_I32 ? "I32" : "F32";
}

/* Parse the header and check every tensor against datalen; offs[i] = {begin, end, index}. */
static int
header(P *p, mtc_st_file *f, int64_t datalen, int64_t (**offs)[3])
{
	int cap = 0;

	if (!eat(p, '{'))
		return jerr(p, "the header is not a JSON object");
	if (eat(p, '}'))
		goto end;
	do {
		char *name = str(p);
		mtc_st_tensor *t;
		int64_t off[2] = {0, 0}, numel = 1;
		if (!name)
			return -1;
		if (!eat(p, ':')) {
			free(name);
			return jerr(p, "expected ':'");
		}
		if (strcmp(name, "__metadata__") == 0) {
			free(name);
			if (metadata(p))
				return -1;
			continue;
		}
		if (mtc_st_find(f, name)) {
			perr(p, "tensor '%s' is listed twice", name);
			free(name);
			return -1;
		}
		if (f->n == cap) {
			void *nt, *no;
			cap = cap ? 2 * cap : 16;
			nt = realloc(f->t, cap * sizeof *f->t);
			no = nt ? realloc(*offs, cap * sizeof **offs) : NULL;
			if (nt)
				f->t = nt;
			if (no)
				*offs = no;
			if (!nt || !no) {
				free(name);
				return perr(p, "out of memory");
			}
		}
		t = &f->t[f->n++];
		memset(t, 0, sizeof *t);
		t->name = name;
		if (tensor(p, t, off))
			return -1;
		for (int i = 0; i < t->rank; i++) {
			/* the product stays below 2^62 or the tensor cannot fit in the file */
			if (t->shape[i] && numel > (((int64_t)1 << 62) / t->shape[i]))
				return perr(p, "tensor '%s': shape declares more elements than the file holds",
				            t->name);
			numel *= t->shape[i];
		}
		t->nbytes = numel * 4;
		if (off[0] > off[1] || off[1] > datalen)
			return perr(p, "tensor '%s': data_offsets [%lld, %lld] out of range: the data is %lld bytes%s",
			            t->name, (long long)off[0], (long long)off[1], (long long)datalen,
			            off[1] > datalen ? " (truncated file?)" : "");
		if (off[1] - off[0] != t->nbytes)
			return perr(p, "tensor '%s': %s shape of %lld elements needs %lld bytes, data_offsets give %lld",
			            t->name, mtc_st_dtype_name(t->dtype), (long long)numel,
			            (long long)t->nbytes, (long long)(off[1] - off[0]));
		(*offs)[f->n - 1][0] = off[0];
		(*offs)[f->n - 1][1] = off[1];
		(*offs)[f->n - 1][2] = f->n - 1;
	} while (eat(p, ','));
	if (!eat(p, '}'))
		return jerr(p, "expected ',' or '}'");
end:
	ws(p);
	if (p->s != p->end)
		return jerr(p, "trailing bytes after the JSON object");
	return p->bad ? -1 : 0;
}

mtc_st_file *
mtc_st_read(const char *path, char *err, size_t nerr)
{
	P p = {0};
	FILE *fp;
	struct stat sb;
	unsigned char len8[8];
	uint64_t hlen = 0;
	int64_t datalen, (*offs)[3] = NULL;
	char *hdr = NULL;
	mtc_st_file *f = calloc(1, sizeof *f);

	p.path = path;
	p.err = err;
	p.nerr = nerr;
	if (!f) {
		perr(&p, "out of memory");
		return NULL;
	}
	if (!(fp = fopen(path, "rb"))) {
		perr(&p, "cannot open: %s", strerror(errno));
		free(f);
		return NULL;
	}
	if (fstat(fileno(fp), &sb) || !S_ISREG(sb.st_mode)) {
		perr(&p, "not a regular file");
		goto bad;
	}
	if (sb.st_size < 8 || fread(len8, 1, 8, fp) != 8) {
		perr(&p, "truncated: shorter than the 8-byte header length");
		goto bad;
	}
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | len8[i];
	if (hlen > (uint64_t)(sb.st_size - 8)) {
		perr(&p, "truncated or not safetensors: header length %llu exceeds the %lld bytes after it",
		     (unsigned long long)hlen, (long long)(sb.st_size - 8));
		goto bad;
	}
	if (hlen < 2 || hlen > MAXHEADER) {
		perr(&p, "bad header length %llu", (unsigned long long)hlen);
		goto bad;
	}
	if (!(hdr = malloc(hlen)) || fread(hdr, 1, hlen, fp) != hlen) {
		perr(&p, hdr ? "read error in the header" : "out of memory");
		goto bad;
	}
	datalen = sb.st_size - 8 - (int64_t)hlen;
	p.s = p.start = hdr;
	p.end = hdr + hlen;
	if (header(&p, f, datalen, &offs))
		goto bad;
	/* data: in file order, no two tensors overlapping */
	if (f->n)
		qsort(offs, f->n, sizeof *offs, cmp_begin);
	for (int i = 1; i < f->n; i++)
		if (offs[i][0] < offs[i - 1][1]) {
			perr(&p, "tensors '%s' and '%s' overlap in the data", f->t[offs[i - 1][2]].name,
			     f->t[offs[i][2]].name);
			goto bad;
		}
	for (int i = 0; i < f->n; i++) {
		mtc_st_tensor *t = &f->t[offs[i][2]];
		if (!(t->data = aligned_alloc(16, (t->nbytes + 16) & ~(int64_t)15))) {
			perr(&p, "out of memory for tensor '%s'", t->name);
			goto bad;
		}
		if (fseek(fp, 8 + (long)hlen + (long)offs[i][0], SEEK_SET) ||
		    fread(t->data, 1, t->nbytes, fp) != (size_t)t->nbytes) {
			perr(&p, "read error in tensor '%s'", t->name);
			goto bad;
		}
	}
	/* report tensors in data order */
	{
		mtc_st_tensor *s = malloc((f->n ? f->n : 1) * sizeof *s);
		if (!s) {
			perr(&p, "out of memory");
			goto bad;
		}
		for (int i = 0; i < f->n; i++)
			s[i] = f->t[offs[i][2]];
		free(f->t);
		f->t = s;
	}
	free(offs);
	free(hdr);
	fclose(fp);
	return f;
bad:
	free(offs);
	free(hdr);
	fclose(fp);
	mtc_st_free(f);
	return NULL;
}

/* JSON string: quotes and escapes */
static void
putstr(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

int
mtc_st_write(const char *path, const mtc_st_tensor *t, int n, char *err, size_t nerr)
{
	P p = {0};
	FILE *fp, *h;
	char *hdr = NULL;
	size_t hn = 0, pad;
	int64_t off = 0;
	unsigned char len8[8];
	uint64_t hlen;

	p.path = path;
	p.err = err;
	p.nerr = nerr;
	if (!(h = open_memstream(&hdr, &hn)))
		return perr(&p, "out of memory");
	fputc('{', h);
	for (int i = 0; i < n; i++) {
		int64_t numel = 1;
		for (int k = 0; k < t[i].rank; k++)
			numel *= t[i].shape[k];
		fprintf(h, "%s", i ? "," : "");
		putstr(h, t[i].name);
		fprintf(h, ":{\"dtype\":\"%s\",\"shape\":[", mtc_st_dtype_name(t[i].dtype));
		for (int k = 0; k < t[i].rank; k++)
			fprintf(h, "%s%lld", k ? "," : "", (long long)t[i].shape[k]);
		fprintf(h, "],\"data_offsets\":[%lld,%lld]}", (long long)off, (long long)(off + numel * 4));
		off += numel * 4;
	}
	fputc('}', h);
	if (fclose(h)) {
		free(hdr);
		return perr(&p, "out of memory");
	}
	pad = (8 - hn % 8) % 8;   /* the data starts 8-byte aligned, as the format recommends */
	hlen = hn + pad;
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)(hlen >> (8 * i));
	if (!(fp = fopen(path, "wb"))) {
		free(hdr);
		return perr(&p, "cannot write: %s", strerror(errno));
	}
	fwrite(len8, 1, 8, fp);
	fwrite(hdr, 1, hn, fp);
	for (size_t i = 0; i < pad; i++)
		fputc(' ', fp);
	free(hdr);
	for (int i = 0; i < n; i++) {
		int64_t numel = 1;
		for (int k = 0; k < t[i].rank; k++)
			numel *= t[i].shape[k];
		fwrite(t[i].data, 4, numel, fp);
	}
	if (ferror(fp) | fclose(fp))
		return perr(&p, "write error");
	return 0;
}
