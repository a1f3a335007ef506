/* st.c: safetensors files: round trips, and malformed files that must give errors, not crashes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"

#include "../check.h"

static char path[256];

/* A file of an 8-byte length, the header text as given, and ndata bytes of data. */
static void
raw(const char *hdr, size_t hlen, long declared, size_t ndata)
{
	FILE *fp = fopen(path, "wb");
	unsigned long long n = declared >= 0 ? (unsigned long long)declared : hlen;

	for (int i = 0; i < 8; i++)
		fputc((int)(n >> (8 * i) & 0xff), fp);
	fwrite(hdr, 1, hlen, fp);
	for (size_t i = 0; i < ndata; i++)
		fputc((int)(i * 7), fp);
	fclose(fp);
}

/* Reading must fail with a message containing needle (and naming the file). */
static void
bad(const char *what, const char *needle)
{
	char err[512] = "";
	mtc_st_file *f = mtc_st_read(path, err, sizeof err);
	int ok = !f && strstr(err, needle) && strstr(err, path);

	if (!ok)
		printf("  %s: %s, message '%s'\n", what, f ? "accepted" : "rejected", err);
	mtc_st_free(f);
	check(ok, "%s", what);
}

static void
bad_header(const char *what, const char *hdr, size_t ndata, const char *needle)
{
	raw(hdr, strlen(hdr), -1, ndata);
	bad(what, needle);
}

static void
roundtrip(void)
{
	float a[6] = {1, -2.5f, 3e-8f, 4, 5, 6e20f}, s = 42;
	int32_t b[4] = {0, -1, 7, 2147483647};
	mtc_st_tensor t[3] = {
		{ "w.0", MTC_ST_F32, 2, {2, 3}, 0, a },
		{ "tab \"q\"\\ \xc3\xa9", MTC_ST_I32, 1, {4}, 0, b },
		{ "s", MTC_ST_F32, 0, {0}, 0, &s },
	};
	char err[512];
	mtc_st_file *f;
	int ok;
	long sz;
	FILE *fp;

	ok = mtc_st_write(path, t, 3, err, sizeof err) == 0;
	check(ok, "write three tensors");
	f = mtc_st_read(path, err, sizeof err);
	if (!f)
		printf("  %s\n", err);
	ok = f && f->n == 3;
	for (int i = 0; ok && i < 3; i++) {
		mtc_st_tensor *r = mtc_st_find(f, t[i].name);
		ok = r && r->dtype == t[i].dtype && r->rank == t[i].rank &&
		     memcmp(r->shape, t[i].shape, t[i].rank * sizeof *r->shape) == 0 &&
		     r->nbytes == (i == 0 ? 24 : i == 1 ? 16 : 4) && memcmp(r->data, t[i].data, r->nbytes) == 0;
	}
	check(ok, "read back: names (with escapes, UTF-8), dtypes, shapes, bytes");
	check(f && strcmp(f->t[0].name, "w.0") == 0 && strcmp(f->t[2].name, "s") == 0,
	      "tensors come in data order");
	check(f && !mtc_st_find(f, "nope"), "find of a missing name is NULL");
	mtc_st_free(f);
	fp = fopen(path, "rb");
	fseek(fp, 0, SEEK_END);
	sz = ftell(fp);
	fclose(fp);
	{
		unsigned char h[8];
		unsigned long long n = 0;
		fp = fopen(path, "rb");
		fread(h, 1, 8, fp);
		fclose(fp);
		for (int i = 7; i >= 0; i--)
			n = n << 8 | h[i];
		check((8 + n) % 8 == 0 && sz == (long)(8 + n + 44),
		      "header padded so the data starts 8-byte aligned");
	}

	/* every truncation of a valid file is an error */
	{
		char *buf = malloc(sz);
		int all = 1;
		fp = fopen(path, "rb");
		fread(buf, 1, sz, fp);
		fclose(fp);
		for (long k = 0; k < sz; k++) {
			fp = fopen(path, "wb");
			fwrite(buf, 1, k, fp);
			fclose(fp);
			f = mtc_st_read(path, err, sizeof err);
			if (f || !err[0]) {
				printf("  truncated to %ld bytes: accepted\n", k);
				all = 0;
			}
			mtc_st_free(f);
		}
		check(all, "every truncation is an error");

		/* random byte flips: errors or valid files, never a crash */
		srand(1);
		for (int k = 0; k < 3000; k++) {
			char *m = malloc(sz);
			memcpy(m, buf, sz);
			for (int j = rand() % 4; j >= 0; j--)
				m[rand() % sz] = (char)(rand() % 256);
			fp = fopen(path, "wb");
			fwrite(m, 1, sz, fp);
			fclose(fp);
			mtc_st_free(mtc_st_read(path, err, sizeof err));
			free(m);
		}
		check(1, "3000 randomly corrupted files read without a crash");
		free(buf);
	}

	raw("{}", 2, -1, 0);
	f = mtc_st_read(path, err, sizeof err);
	check(f && f->n == 0, "an empty file of tensors is fine");
	mtc_st_free(f);
	raw("{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ",
	    strlen("{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}   "), -1, 8);
	f = mtc_st_read(path, err, sizeof err);
	if (!f)
		printf("  %s\n", err);
	check(f && f->n == 1 && f->t[0].shape[0] == 2,
	      "__metadata__ and trailing spaces are accepted");
	mtc_st_free(f);
}

static void
malformed(void)
{
	static char big[64 << 10];

	raw("", 0, -1, 0);
	unlink(path);
	bad("missing file", "cannot open");
	{
		FILE *fp = fopen(path, "wb");
		fwrite("abc", 1, 3, fp);
		fclose(fp);
		bad("shorter than 8 bytes", "truncated");
	}
	raw("{}", 2, 1000, 0);
	bad("header length beyond the file", "header length");
	raw("{}", 2, (long)0x7fffffffffffffff, 0);
	bad("absurd header length", "header length");
	bad_header("not an object", "[1,2]", 0, "not a JSON object");
	bad_header("unterminated object", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "bad header");
	bad_header("unterminated string", "{\"a", 0, "unterminated string");
	bad_header("bad escape", "{\"a\\q\":{}}", 0, "bad escape");
	bad_header("control character", "{\"a\nb\":{}}", 0, "control character");
	bad_header("unknown dtype", "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
	           "dtype F16 is not supported");
	bad_header("dtype not a string", "{\"a\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "expected a string");
	bad_header("shape of 10^18 elements",
	           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1000000,1000000,1000000],\"data_offsets\":[0,8]}}", 8,
	           "needs 4000000000000000000 bytes");
	bad_header("shape of 10^27 elements (overflows 64 bits)",
	           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1000000000,1000000000,1000000000],\"data_offsets\":[0,8]}}", 8,
	           "more elements than the file holds");
	bad_header("shape of 4 billion elements in an 8-byte file",
	           "{\"a\":{\"dtype\":\"F32\",\"shape\":[65536,65536],\"data_offsets\":[0,8]}}", 8, "needs 17179869184 bytes");
	bad_header("dimension too large", "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}",
	           8, "too large");
	bad_header("negative dimension", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "negative");
	bad_header("fractional dimension", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "integer");
	bad_header("rank 9", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
	           "more than 8 entries");
	bad_header("offsets past the data", "{\"a\":{\"dtype\":\"F32\",\"shape\":[200],\"data_offsets\":[0,800]}}", 8,
	           "out of range");
	bad_header("offsets backwards", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, "out of range");
	bad_header("size disagrees with the shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
	           "needs 12 bytes");
	bad_header("three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8, "more than 2");
	bad_header("one offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "[begin, end]");
	bad_header("overlapping tensors",
	           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	           "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap");
	bad_header("a name twice",
	           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
	           "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "listed twice");
	bad_header("missing shape", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "missing shape");
	bad_header("unknown key", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8,
	           "unexpected or repeated key");
	bad_header("trailing bytes", "{} x", 0, "trailing bytes");
	bad_header("__metadata__ with a number", "{\"__metadata__\":{\"k\":1}}", 0, "must be strings");
	bad_header("empty header", "  ", 0, "not a JSON object");
	bad_header("NUL in a name", "{\"a\\u0000\":{}}", 0, "NUL");
	bad_header("lone surrogate", "{\"a\\udc00\":{}}", 0, "surrogate");
	/* deep garbage: a long run of '[' is refused at the first byte, no recursion */
	memset(big, '[', sizeof big - 1);
	bad_header("64 KiB of '['", big, 0, "not a JSON object");
	{
		char err[512];
		mtc_st_tensor t = { "x", MTC_ST_F32, 1, {1}, 0, (float[]){1} };
		check(mtc_st_write("/nonexistent-dir/x.safetensors", &t, 1, err, sizeof err) == -1 &&
		      strstr(err, "cannot write"), "writing into a missing directory is an error");
	}
}

int
main(void)
{
	check_echo = 1;         /* the log lists every check */
	snprintf(path, sizeof path, "st-test-%d.safetensors", (int)getpid());
	roundtrip();
	malformed();
	unlink(path);
	return done();
}
