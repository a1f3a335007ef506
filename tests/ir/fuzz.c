/* fuzz.c: random mutations of valid .mir files through the parser: nothing may crash, and
 * whatever parses must verify and print, parse and print again to the same bytes.
 *
 * usage: fuzz [FILE.mir...]; without files, every .mir under $top_srcdir/tests/ir/{good,golden}.
 * FUZZ_ITERS (default 3000) and FUZZ_SEED (default 1) steer it, FUZZ_STDERR=1 keeps the
 * diagnostics (and so a sanitizer's report: libubsan writes to fd 2 whatever its log_path
 * says, so an exit status 1 with no report is one hidden in /dev/null), FUZZ_KEEP=DIR keeps the
 * mutants that parse (to feed the whole pipeline); a failing input is saved as
 * fuzz-fail-N.mir in the current directory. Then as many parsed seeds, broken in memory at
 * random, go through the verifier, which must not crash on them. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "../check.h"

typedef struct Buf {
	char *s;
	size_t n;
} Buf;

static uint64_t rng;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (unsigned)(rng % n) : 0;
}

static Buf
slurp_buf(const char *path)
{
	Buf b = {0};
	FILE *fp = fopen(path, "rb");
	size_t cap = 1 << 16, r;

	if (!fp)
		return b;
	b.s = xmalloc(cap);
	while ((r = fread(b.s + b.n, 1, cap - b.n, fp)) > 0)
		if ((b.n += r) == cap)
			b.s = xrealloc(b.s, cap *= 2);
	fclose(fp);
	return b;
}

/* Replace [at, at+del) of b with ins[0..nins). */
static void
splice(Buf *b, size_t at, size_t del, const char *ins, size_t nins)
{
	char *s = xmalloc(b->n - del + nins + 1);

	memcpy(s, b->s, at);
	memcpy(s + at, ins, nins);
	memcpy(s + at + nins, b->s + at + del, b->n - at - del);
	free(b->s);
	b->s = s;
	b->n = b->n - del + nins;
}

/* A span of b: a whole line (word = 0) or a run of name characters. */
static void
span(const Buf *b, int word, size_t *at, size_t *len)
{
	size_t i = b->n ? rnd(b->n) : 0, e;

	if (word) {
		while (i > 0 && (isalnum((unsigned char)b->s[i - 1]) || b->s[i - 1] == '.'))
			i--;
		for (e = i; e < b->n && (isalnum((unsigned char)b->s[e]) || b->s[e] == '.'); e++)
			;
	} else {
		while (i > 0 && b->s[i - 1] != '\n')
			i--;
		for (e = i; e < b->n && b->s[e] != '\n'; e++)
			;
		if (e < b->n)
			e++;
	}
	*at = i;
	*len = e - i;
}

static void
mutate(Buf *b)
{
	static const char *const tok[] = {
		"%", ":", "=", ",", "[", "]", "(", ")", "@", "#", "\n", "\"", "\\", "-", ".", "0", "1",
		"-1", "9223372036854775807", "9223372036854775808", "4611686018427387904", "1e308",
		"nan", "inf", "f32[]", "i32[]", "f32[1,1,1,1,1,1,1,1]", "f32[0]", "fwd", "bwd", "upd",
		"rec", "mem", "output", "loss", "place %x at=0", "of=%x", "at=-1", "func step {",
		"func forward {", "}", "param", "state", "input", "optimizer adam", "swap_out", "wait",
		"tick", "concat", "embedding_grad", "perm=[]", "axis=", "\t", "\r", "\0", "\xff",
	};
	size_t at, len, at2, len2;
	char c, *cp;

	switch (rnd(8)) {
	case 0:                 /* delete a byte */
		if (b->n)
			splice(b, rnd(b->n), 1, "", 0);
		break;
	case 1:                 /* insert a token */
		cp = (char *)tok[rnd(sizeof tok / sizeof tok[0])];
		splice(b, b->n ? rnd(b->n + 1) : 0, 0, cp, *cp ? strlen(cp) : 1);
		break;
	case 2:                 /* replace a byte with a random one */
		if (b->n) {
			c = (char)rnd(256);
			splice(b, rnd(b->n), 1, &c, 1);
		}
		break;
	case 3:                 /* delete a line */
		span(b, 0, &at, &len);
		splice(b, at, len, "", 0);
		break;
	case 4:                 /* duplicate a line somewhere else */
		span(b, 0, &at, &len);
		span(b, 0, &at2, &len2);
		cp = xmalloc(len + 1);
		memcpy(cp, b->s + at, len);
		splice(b, at2, 0, cp, len);
		free(cp);
		break;
	case 5:                 /* a word replaced by another word of the file */
		span(b, 1, &at, &len);
		span(b, 1, &at2, &len2);
		cp = xmalloc(len2 + 1);
		memcpy(cp, b->s + at2, len2);
		splice(b, at, len, cp, len2);
		free(cp);
		break;
	case 6:                 /* digits changed */
		span(b, 1, &at, &len);
		if (len && isdigit((unsigned char)b->s[at])) {
			char d[24];
			int n = snprintf(d, sizeof d, "%u", rnd(4) ? rnd(10) : rnd(1u << 31));
			splice(b, at, len, d, n);
		}
		break;
	default:                /* cut the file short */
		if (b->n)
			b->n = rnd(b->n);
		break;
	}
}

/* Print m into memory. */
static Buf
print(const Module *m)
{
	Buf b = {0};
	FILE *fp = open_memstream(&b.s, &b.n);

	ir_print(fp, m);
	fclose(fp);
	return b;
}

static Module *
parse(const Buf *b)
{
	Src src = { .name = "fuzz.mir", .text = b->s, .len = b->n };
	return ir_parse(&src);
}

/* FUZZ_KEEP=DIR: the mutants that parse, to feed to the whole pipeline. */
static void
keepfile(const Buf *b, const char *dir, int it)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof path, "%s/m%06d.mir", dir, it);
	if ((fp = fopen(path, "wb"))) {
		fwrite(b->s, 1, b->n, fp);
		fclose(fp);
	}
}

static void
save(const Buf *b, int it)
{
	char path[64];
	FILE *fp;

	snprintf(path, sizeof path, "fuzz-fail-%d.mir", it);
	if ((fp = fopen(path, "wb"))) {
		fwrite(b->s, 1, b->n, fp);
		fclose(fp);
	}
	printf("iteration %d failed; input saved as %s\n", it, path);
}

/* One input: 0 if rejected, 1 if it parses (and so verifies and round-trips), -1 if not. */
static int
try(const Buf *in)
{
	Module *m = parse(in), *m2;
	Buf p1, p2;
	int bad;

	if (!m)
		return 0;
	if (ir_verify(m, "fuzz")) {
		mod_free(m);
		return -1;
	}
	p1 = print(m);
	mod_free(m);
	if (!(m2 = parse(&p1))) {
		free(p1.s);
		return -1;
	}
	p2 = print(m2);
	mod_free(m2);
	bad = p1.n != p2.n || memcmp(p1.s, p2.s, p1.n);
	free(p1.s);
	free(p2.s);
	return bad ? -1 : 1;
}

/* Break one field of a module at random. */
static void
corrupt(Module *m)
{
	static const int64_t odd[] = { 0, -1, 1, 2, 1 << 20, INT64_MAX, INT64_MIN };
	Func *f = m->step && rnd(2) ? m->step : m->fwd;
	Op *o = f->nop ? &f->op[rnd(f->nop)] : NULL;
	Value *v = &f->val[rnd(f->nval)];
	Decl *d = m->ndecl ? &m->decl[rnd(m->ndecl)] : NULL;
	int any = (int)rnd(f->nval + 4) - 2;

	switch (rnd(15)) {
	case 0: if (o) o->kind = rnd(NOP + 3); break;
	case 1: if (o) o->phase = rnd(8); break;
	case 2: if (o) o->res = any; break;
	case 3: if (o && o->nargs) o->args[rnd(o->nargs)] = any; break;
	case 4: if (o) o->nargs = rnd(o->nargs + 1); break;
	case 5: v->def = (int)rnd(f->nop + 4) - 2; break;
	case 6: v->decl = (int)rnd(m->ndecl + 4) - 2; break;
	case 7: v->host ^= 1; break;
	case 8: v->ty.sh.rank = (int)rnd(MAXRANK + 4) - 1; break;
	case 9: v->ty.sh.d[rnd(MAXRANK)] = odd[rnd(7)]; break;
	case 10: v->ty.dt = rnd(3); break;
	case 11: if (f->nout) f->out[rnd(f->nout)] = any; else f->loss = any; break;
	case 12: if (o) o->of = any; break;
	case 13: if (o) o->ia[rnd(MAXIA)] = odd[rnd(7)], o->nia = (int)rnd(12) - 2; break;
	default:
		if (d) {
			d->role = rnd(4);
			d->of = (int)rnd(m->ndecl + 4) - 2;
			d->init.kind = rnd(7);
			d->ty.sh.d[0] = odd[rnd(7)];
		}
	}
}

static int
seeds(Buf *b, int n, int max, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (!d)
		return n;
	while (n < max && (e = readdir(d))) {
		size_t k = strlen(e->d_name);
		if (k < 5 || strcmp(e->d_name + k - 4, ".mir"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if ((b[n] = slurp_buf(path)).s)
			n++;
	}
	closedir(d);
	return n;
}

int
main(int argc, char **argv)
{
	enum { MAXSEED = 64 };
	Buf seed[MAXSEED];
	const char *top = getenv("top_srcdir"), *keep = getenv("FUZZ_KEEP"), *e;
	char dir[4096];
	int ns = 0, iters = 3000, parsed = 0;

	rng = (e = getenv("FUZZ_SEED")) ? strtoull(e, NULL, 10) * 2654435761u + 1 : 88172645463325252u;
	if ((e = getenv("FUZZ_ITERS")))
		iters = atoi(e);
	for (int i = 1; i < argc && ns < MAXSEED; i++)
		if ((seed[ns] = slurp_buf(argv[i])).s)
			ns++;
	if (argc == 1) {
		snprintf(dir, sizeof dir, "%s/tests/ir/good", top ? top : ".");
		ns = seeds(seed, ns, MAXSEED, dir);
		snprintf(dir, sizeof dir, "%s/tests/ir/golden", top ? top : ".");
		ns = seeds(seed, ns, MAXSEED, dir);
	}
	CHECK(ns > 0, "no seed files");
	if (!ns)
		return done();
	/* The seeds themselves must behave. */
	for (int i = 0; i < ns; i++)
		CHECK(try(&seed[i]) == 1, "seed %d does not round-trip", i);
	setvbuf(stdout, NULL, _IOLBF, 0);      /* the progress lines survive a sanitizer's exit */
	if (!getenv("FUZZ_STDERR") && !freopen("/dev/null", "w", stderr))
		return 1;
	printf("%d mutants through parse, verify, print, parse, print\n", iters);
	for (int it = 0; it < iters; it++) {
		Buf b = seed[rnd(ns)];
		int r;
		b.s = memcpy(xmalloc(b.n + 1), b.s, b.n);
		for (int k = 1 + rnd(4); k > 0; k--)
			mutate(&b);
		if ((r = try(&b)) < 0) {
			nfail++;
			save(&b, it);
		} else {
			npass++;
			parsed += r;
			if (r && keep)
				keepfile(&b, keep, it);
		}
		free(b.s);
	}
	printf("%d of %d mutated files parsed; now %d modules broken in memory through the verifier\n",
	       parsed, iters, iters);
	/* The verifier on modules broken in memory: it must report, never crash. */
	for (int it = 0, found = 0; it < iters; it++) {
		Module *m = parse(&seed[rnd(ns)]);
		if (!m)         /* a seed that does not parse: failed above already */
			continue;
		for (int k = 1 + rnd(3); k > 0; k--)
			corrupt(m);
		found += ir_verify(m, "fuzz") > 0;
		mod_free(m);
		npass++;
		if (it == iters - 1)
			printf("the verifier found problems in %d of %d broken modules\n", found, iters);
	}
	for (int i = 0; i < ns; i++)
		free(seed[i].s);
	return done();
}
