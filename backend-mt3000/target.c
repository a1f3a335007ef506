/* target.c: the MT-3000 target: --emit=c and --emit=h, and building MODEL.so with $CC, from
 * a Lowered (passes/lower.h).
 *
 * The runtime (libmtcrt.a and <mtc/...>) is looked up in this order: $MTC_RUNTIME_DIR (a
 * directory holding libmtcrt.a and mtc/mtc-rt.h, or an install prefix with lib/ and
 * include/); the build tree the running program sits in (mtc or a test, up to three levels
 * below the top: tests run from there); the configured
 * $libdir and $includedir (after make install). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "mt3000.h"

#ifndef MTC_LIBDIR
#define MTC_LIBDIR "/usr/local/lib"
#endif
#ifndef MTC_INCLUDEDIR
#define MTC_INCLUDEDIR "/usr/local/include"
#endif
#ifndef MTC_SRCDIR
#define MTC_SRCDIR "."
#endif
#ifndef MTC_BUILDDIR
#define MTC_BUILDDIR "."
#endif
#ifndef MTC_RT_LIBS
#define MTC_RT_LIBS "-lpthread -lm"
#endif

static void
run_gen(const Lowered *lo, const BuildOpts *bo, const char *id, FILE *host, FILE *dev)
{
	Gen g = { .m = lo->m, .lo = lo, .bo = bo, .id = id, .h = host, .k = dev,
	          .poff = lo->poff, .persist = lo->persist, .param_bytes = lo->param_bytes,
	          .state_bytes = lo->state_bytes, .fwd = lo->fwd, .step = lo->step,
	          .arena = lo->arena, .ddr = lo->ddr, .nids = lo->nids };

	kern_prologue(&g);
	host_emit(&g);
	kern_epilogue(&g);
}

/* The model's name as a C identifier (the prefix of everything the module exports). */
static char *
c_ident(const char *name)
{
	size_t n = strlen(name) + 3;
	return c_name(name, xmalloc(n), n);
}

static int
exists(const char *dir, const char *file)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	return access(path, R_OK) == 0;
}

/* Fill inc (holding mtc/mtc-rt.h) and lib (holding libmtcrt.a); 0 or -1. */
static int
find_runtime(char *inc, char *lib, size_t n)
{
	const char *env = getenv("MTC_RUNTIME_DIR");
	char exe[2048], *slash;
	ssize_t k;

	if (env && *env) {
		if (exists(env, "libmtcrt.a") && exists(env, "mtc/mtc-rt.h")) {
			snprintf(inc, n, "%s", env);
			snprintf(lib, n, "%s", env);
			return 0;
		}
		snprintf(inc, n, "%s/include", env);
		snprintf(lib, n, "%s/lib", env);
		if (exists(lib, "libmtcrt.a") && exists(inc, "mtc/mtc-rt.h"))
			return 0;
		fprintf(stderr, "mtc: error: MTC_RUNTIME_DIR=%s holds neither libmtcrt.a and mtc/mtc-rt.h "
		        "nor lib/libmtcrt.a and include/mtc/mtc-rt.h\n", env);
		return -1;
	}
	/* The build tree: this executable (mtc, or a test program) sits in it, at most three
	 * levels below the top build directory. */
	if ((k = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[k] = 0;
		for (int up = 0; up < 4 && (slash = strrchr(exe, '/')); up++) {
			*slash = 0;
			snprintf(lib, n, "%s/runtime", exe);
			snprintf(inc, n, "%s/runtime", MTC_SRCDIR);
			if (exists(lib, "libmtcrt.a") && exists(inc, "mtc/mtc-rt.h") && exists(exe, "config.h"))
				return 0;
		}
	}
	snprintf(inc, n, "%s", MTC_INCLUDEDIR);
	snprintf(lib, n, "%s", MTC_LIBDIR);
	if (exists(lib, "libmtcrt.a") && exists(inc, "mtc/mtc-rt.h"))
		return 0;
	fprintf(stderr, "mtc: error: the mtc runtime (libmtcrt.a, mtc/mtc-rt.h) is not in the build "
	        "tree nor in %s and %s: run 'make install' or set MTC_RUNTIME_DIR\n", MTC_LIBDIR,
	        MTC_INCLUDEDIR);
	return -1;
}

/* 'quoted' for the shell. */
static void
quote(char *buf, size_t n, const char *s)
{
	size_t k = strlen(buf);
	if (k + 3 >= n)
		return;
	buf[k++] = '\'';
	for (; *s && k + 5 < n; s++) {
		if (*s == '\'') {
			memcpy(buf + k, "'\\''", 4);
			k += 4;
		} else
			buf[k++] = *s;
	}
	buf[k++] = '\'';
	buf[k] = 0;
}

static char *
stem_with(const char *out, const char *suffix)
{
	size_t n = strlen(out);
	char *s = xmalloc(n + strlen(suffix) + 1);
	const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');

	if (dot && (!slash || dot > slash))
		n = (size_t)(dot - out);
	memcpy(s, out, n);
	strcpy(s + n, suffix);
	return s;
}

static FILE *
open_w(const char *path)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		fprintf(stderr, "mtc: error: cannot write '%s': %s\n", path, strerror(errno));
	return fp;
}

static int
emit(const Lowered *lo, const BuildOpts *o, const char *kind, const char *out)
{
	char *id = c_ident(lo->m->name);
	int tostdout = !out || strcmp(out, "-") == 0;
	FILE *fp = tostdout ? stdout : open_w(out);

	if (!fp) {
		free(id);
		return 1;
	}
	if (strcmp(kind, "h") == 0) {
		header_emit(lo, id, "mt3000", fp);
	} else if (tostdout) {
		/* Both translation units, device first; together they also compile as one. */
		char *hb = NULL, *db = NULL;
		size_t hn = 0, dn = 0;
		FILE *h = open_memstream(&hb, &hn), *d = open_memstream(&db, &dn);
		if (!h || !d)
			die("out of memory");
		run_gen(lo, o, id, h, d);
		fclose(h);
		fclose(d);
		fwrite(db, 1, dn, fp);
		fputc('\n', fp);
		fwrite(hb, 1, hn, fp);
		free(hb);
		free(db);
	} else {
		/* FILE.c is the host part, FILE-dev.c the device part. */
		char *dpath = stem_with(out, "-dev.c");
		FILE *dp = open_w(dpath);
		if (!dp) {
			fclose(fp);
			free(dpath);
			free(id);
			return 1;
		}
		run_gen(lo, o, id, fp, dp);
		fclose(dp);
		free(dpath);
	}
	if (!tostdout)
		fclose(fp);
	free(id);
	return 0;
}

static int
build(const Lowered *lo, const BuildOpts *o, const char *out)
{
	char *id = c_ident(lo->m->name), *hpath, cmd[16384] = "", inc[4096], lib[4096], tmp[4096];
	char hp[4200], dp[4200];
	const char *cc = getenv("CC"), *td = getenv("TMPDIR"), *march = getenv("MTC_MARCH");
	FILE *h, *d, *fh;
	int rc;

	if (march && strspn(march, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	    strlen(march)) {
		fprintf(stderr, "mtc: error: MTC_MARCH='%s' is not a CPU name\n", march);
		free(id);
		return 1;
	}
	if (find_runtime(inc, lib, sizeof inc)) {
		free(id);
		return 1;
	}
	snprintf(tmp, sizeof tmp, "%s/mtc-XXXXXX", td && *td ? td : "/tmp");
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "mtc: error: cannot create a temporary directory in %s\n", td ? td : "/tmp");
		free(id);
		return 1;
	}
	snprintf(hp, sizeof hp, "%s/%s.c", tmp, id);
	snprintf(dp, sizeof dp, "%s/%s-dev.c", tmp, id);
	hpath = stem_with(out, ".h");
	if (!(h = open_w(hp)) || !(d = open_w(dp)) || !(fh = open_w(hpath)))
		exit(1);
	run_gen(lo, o, id, h, d);
	header_emit(lo, id, "mt3000", fh);
	fclose(h);
	fclose(d);
	fclose(fh);

	/* -ffp-contract=off and no fast-math: the bits must not depend on fusion or the plan.
	 * -fno-math-errno and -fno-trapping-math change no value (sqrtf needs no errno branch;
	 * selects may be if-converted); with -ftree-vectorize they let the elementwise loops,
	 * which call mtc-math.h, vectorize. -fno-fast-math first: it would turn them back off. */
	/* The module is built on the machine that runs it, so by default for its vector unit
	 * (-march=native; MTC_MARCH=CPU names another, MTC_MARCH= empty none): wider vectors, the
	 * same bits, since nothing is contracted into an fma. */
	snprintf(cmd, sizeof cmd, "%s -shared -fPIC -O%d -fno-fast-math -ffp-contract=off "
	         "-fno-math-errno -fno-trapping-math%s%s%s -fvisibility=hidden -I",
	         cc && *cc ? cc : "cc", o->opt_level,
	         o->opt_level >= 2 ? " -ftree-vectorize -fvect-cost-model=dynamic" : "",
	         march && !*march ? "" : " -march=", march && !*march ? "" : march ? march : "native");
	quote(cmd, sizeof cmd, inc);
	strcat(cmd, " ");
	quote(cmd, sizeof cmd, hp);
	strcat(cmd, " ");
	quote(cmd, sizeof cmd, dp);
	strcat(cmd, " ");
	snprintf(tmp + strlen(tmp), 1, "%s", "");
	{
		char l[4200];
		snprintf(l, sizeof l, "%s/libmtcrt.a", lib);
		quote(cmd, sizeof cmd, l);
	}
	strcat(cmd, " -Wl,--exclude-libs,ALL " MTC_RT_LIBS " -o ");
	quote(cmd, sizeof cmd, out);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "mtc: error: the C compiler failed on the generated code (kept in %s):\n  %s\n",
		        tmp, cmd);
	else if (!getenv("MTC_KEEP_C")) {
		unlink(hp);
		unlink(dp);
		rmdir(tmp);
	} else
		fprintf(stderr, "mtc: generated C kept in %s\n", tmp);
	free(hpath);
	free(id);
	return rc != 0;
}

static const char *const emits[] = { "c", "h", NULL };

const Backend backend_mt3000 = { "mt3000", &target_mt3000, emits, emit, build, NULL };
