/* util.c: the arena allocator, checked allocation, overflow-checked arithmetic, internal errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Chunks grow geometrically; one free releases a whole module or AST. */
typedef struct Chunk {
	struct Chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
} Chunk;

struct Arena {
	Chunk *head;
};

Arena *
arena_new(void)
{
	return xcalloc(1, sizeof(Arena));
}

void
arena_free(Arena *a)
{
	Chunk *c, *n;

	if (!a)
		return;
	for (c = a->head; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

void
arena_reset(Arena *a)
{
	Chunk *c, *n;

	if (!a->head)
		return;
	/* the head is the newest chunk, the largest: it stays, mapped and faulted in */
	for (c = a->head->next; c; c = n) {
		n = c->next;
		free(c);
	}
	a->head->next = NULL;
	a->head->used = 0;
}

void *
aalloc(Arena *a, size_t n)
{
	Chunk *c = a->head;
	size_t cap;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		cap = c ? c->cap * 2 : 64 * 1024;
		if (cap > 64u << 20)
			cap = 64u << 20;
		if (cap < n)
			cap = n;
		c = xmalloc(sizeof(Chunk) + cap);
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	c->used += n;
	return memset(c->mem + c->used - n, 0, n);
}

char *
astrdup(Arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(aalloc(a, n), s, n);
}

char *
asprintf_a(Arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *s;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	s = aalloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		die("out of memory (%zu x %zu bytes)", n, m);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

char *
xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

_Noreturn void
die_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mtc: internal error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

int
mul64(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

int
add64(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

unsigned
strhash(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

int
ntab_find(const int *tab, int cap, const char *name, NameFn *nm, const void *o)
{
	unsigned i;

	if (!cap)
		return -1;
	for (i = strhash(name) & (cap - 1); tab[i]; i = (i + 1) & (cap - 1))
		if (strcmp(nm(o, tab[i] - 1), name) == 0)
			return tab[i] - 1;
	return -1;
}

void
ntab_add(int **tab, int *cap, int id, NameFn *nm, const void *o)
{
	unsigned i;

	if (2 * (id + 1) > *cap) {
		*cap = *cap ? 2 * *cap : 64;
		free(*tab);
		*tab = xcalloc(*cap, sizeof **tab);
		for (int k = 0; k < id; k++)    /* in id order, so the first of a name stays first */
			ntab_add(tab, cap, k, nm, o);
	}
	for (i = strhash(nm(o, id)) & (*cap - 1); (*tab)[i]; i = (i + 1) & (*cap - 1))
		;
	(*tab)[i] = id + 1;
}

/* Edits between a and b (optimal string alignment), at most 64 characters each; 99 beyond. */
static int
edits(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), d[65][65];

	if (la > 64 || lb > 64)
		return 99;
	for (int i = 0; i <= la; i++)
		for (int j = 0; j <= lb; j++) {
			int v = i > j ? i : j;
			if (i && j) {
				v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
				if (d[i - 1][j] + 1 < v)
					v = d[i - 1][j] + 1;
				if (d[i][j - 1] + 1 < v)
					v = d[i][j - 1] + 1;
				if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
				    d[i - 2][j - 2] + 1 < v)
					v = d[i - 2][j - 2] + 1;
			}
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *
nearest(const char *s, const char *const *cand, int n)
{
	const char *best = NULL;
	int lim = ((int)strlen(s) + 2) / 3, bd = lim + 1;

	if (strlen(s) < 3)        /* "y" for "x" would be noise */
		return NULL;
	for (int i = 0; i < n; i++) {
		int e;
		if (!cand[i] || strcmp(cand[i], s) == 0)
			continue;
		if ((e = edits(s, cand[i])) < bd) {
			bd = e;
			best = cand[i];
		}
	}
	return best;
}

/* A whole file ("-": standard input), NUL-terminated; NUL bytes inside are kept (the lexers
 * report them). NULL, errno set, if it cannot be opened or read. */
char *
slurp(const char *path, size_t *len)
{
	FILE *fp = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!fp)
		return NULL;
	do {
		if (cap - n < 65536) {
			cap = cap ? 2 * cap : 65536 * 2;
			buf = xrealloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
	} while (r > 0);
	if (ferror(fp)) {                 /* e.g. a directory: errno says why */
		int e = errno;
		if (fp != stdin)
			fclose(fp);
		free(buf);
		errno = e;
		return NULL;
	}
	if (fp != stdin)
		fclose(fp);
	buf[n] = 0;
	*len = n;
	return buf;
}

int
init_read(const Init *in, int64_t n, float *dst, char *err, size_t nerr)
{
	FILE *fp;
	size_t got;

	if (in->kind != INIT_FILE || !in->file || in->off < 0 || n < 0)
		die("init_read of an initializer that is not a file's");
	if (!(fp = fopen(in->file, "rb"))) {
		snprintf(err, nerr, "cannot open '%s': %s", in->file, strerror(errno));
		return -1;
	}
	if (fseeko(fp, (off_t)in->off, SEEK_SET)) {
		snprintf(err, nerr, "cannot seek to byte %lld of '%s': %s", (long long)in->off, in->file,
		         strerror(errno));
		fclose(fp);
		return -1;
	}
	got = fread(dst, 4, (size_t)n, fp);
	fclose(fp);
	if (got != (size_t)n) {
		snprintf(err, nerr, "'%s' ends before the %lld values at byte %lld", in->file,
		         (long long)n, (long long)in->off);
		return -1;
	}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &dst[i], 4);
		u = __builtin_bswap32(u);
		memcpy(&dst[i], &u, 4);
	}
#endif
	return 0;
}
