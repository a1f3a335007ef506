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
#ifndef MTC_RT_CFLAGS
#define MTC_RT_CFLAGS ""   /* a sanitizer build's -fsanitize flags: the generated code's too */
#endif

/* The code of one Lowered; ranks > 0: as the variant of a data-parallel module for that many
 * ranks. Returns the collectives' slots its step uses. */
static int
run_gen(const Lowered *lo, const BuildOpts *bo, const char *id, FILE *host, FILE *dev, int ranks)
{
	Gen g = { .m = lo->m, .lo = lo, .bo = bo, .id = id, .h = host, .k = dev,
	          .poff = lo->poff, .persist = lo->persist, .param_bytes = lo->param_bytes,
	          .state_bytes = lo->state_bytes, .fwd = lo->fwd, .step = lo->step,
	          .arena = lo->arena, .ddr = lo->ddr, .nids = lo->nids, .ranks = ranks };

	kern_prologue(&g);
	host_emit(&g);
	kern_epilogue(&g);
	return g.nslots;
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
	int tostdout = !out || strcmp(out, "-") == 0, single = !out_beside(out);
	FILE *fp = tostdout ? stdout : open_w(out);

	if (!fp) {
		free(id);
		return 1;
	}
	if (strcmp(kind, "h") == 0) {
		header_emit(lo, id, "mt3000", fp);
	} else if (single) {
		/* Both translation units, device first; together they also compile as one. */
		char *hb = NULL, *db = NULL;
		size_t hn = 0, dn = 0;
		FILE *h = open_memstream(&hb, &hn), *d = open_memstream(&db, &dn);
		if (!h || !d)
			die("out of memory");
		run_gen(lo, o, id, h, d, 0);
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
		run_gen(lo, o, id, fp, dp, 0);
		fclose(dp);
		free(dpath);
	}
	if (!tostdout)
		fclose(fp);
	free(id);
	return 0;
}

/* MTC_MARCH, when set, must name a CPU. 0, or 1 after a message. */
static int
check_march(void)
{
	const char *march = getenv("MTC_MARCH");
	if (march && strspn(march, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
	    strlen(march)) {
		fprintf(stderr, "mtc: error: MTC_MARCH='%s' is not a CPU name\n", march);
		return 1;
	}
	return 0;
}

/* A temporary directory for the generated C, in tmp (4096 bytes). 0, or 1 after a message. */
static int
make_tmp(char *tmp)
{
	const char *td = getenv("TMPDIR");
	snprintf(tmp, 4096, "%s/mtc-XXXXXX", td && *td ? td : "/tmp");
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "mtc: error: cannot create a temporary directory in %s\n", td ? td : "/tmp");
		return 1;
	}
	return 0;
}

enum { CC_SIDE = 4 };   /* the most C compilers a build runs at once */

/* Compile the nsrc generated files (in tmp) and link them with the runtime into out; with
 * mpi, against MPI too (a data-parallel module). The files and tmp are removed unless the
 * compiler fails or MTC_KEEP_C is set. 0, or 1 after a message. */

static int
compile(const BuildOpts *o, char *const *src, int nsrc, const char *tmp, const char *out, int mpi)
{
	char cmd[65536] = "", fl[16384], inc[4096], lib[4096], l[4200], obj[4200];
	const char *cc = getenv("CC"), *march = getenv("MTC_MARCH"), *flags = getenv("MTC_CFLAGS");
	int rc;

	if (find_runtime(inc, lib, sizeof inc))
		return 1;
	if (!cc || !*cc)
		cc = "cc";
	if (strlen(cc) > 4096) {
		fprintf(stderr, "mtc: error: CC is longer than 4096 characters\n");
		return 1;
	}
	/* -ffp-contract=off and no fast-math: the bits must not depend on fusion or the plan.
	 * -fno-math-errno and -fno-trapping-math change no value (sqrtf needs no errno branch;
	 * selects may be if-converted); with -ftree-vectorize they let the elementwise loops,
	 * which call mtc-math.h, vectorize. -fno-fast-math first: it would turn them back off. */
	/* The module is built on the machine that runs it, so by default for its vector unit
	 * (-march=native; MTC_MARCH=CPU names another, MTC_MARCH= empty none): wider vectors, the
	 * same bits, since nothing is contracted into an fma. */
	/* MTC_CFLAGS last, so that its -O or -g wins. */
	if (flags && strlen(flags) > 8192) {
		fprintf(stderr, "mtc: error: MTC_CFLAGS is longer than 8192 characters\n");
		return 1;
	}
	snprintf(fl, sizeof fl, "-fPIC -O%d -fno-fast-math -ffp-contract=off "
	         "-fno-math-errno -fno-trapping-math%s%s%s -fvisibility=hidden " MTC_RT_CFLAGS " %s -I",
	         o->opt_level, o->opt_level >= 2 ? " -ftree-vectorize -fvect-cost-model=dynamic" : "",
	         march && !*march ? "" : " -march=", march && !*march ? "" : march ? march : "native",
	         flags ? flags : "");
	quote(fl, sizeof fl, inc);
#ifdef HAVE_MPI
	if (mpi)
		strcat(fl, " " MTC_MPI_CFLAGS);
#endif
	/* Each translation unit compiled by a process of its own, up to CC_SIDE side by side
	 * (the host's and the device's take about as long), then linked: the same objects,
	 * the same module as one command for all. */
	snprintf(cmd, sizeof cmd, "c() { %s %s -c \"$1\" -o \"$2\"; }; r=0; ", cc, fl);
	for (int i = 0; i < nsrc; i++) {
		snprintf(obj, sizeof obj, "%s.o", src[i]);
		strcat(cmd, "c ");
		quote(cmd, sizeof cmd, src[i]);
		strcat(cmd, " ");
		quote(cmd, sizeof cmd, obj);
		snprintf(l, sizeof l, " & p%d=$!; ", i);
		strcat(cmd, l);
		if (i % CC_SIDE == CC_SIDE - 1 || i == nsrc - 1)
			for (int j = i - i % CC_SIDE; j <= i; j++) {
				snprintf(l, sizeof l, "wait $p%d || r=1; ", j);
				strcat(cmd, l);
			}
	}
	snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "[ $r = 0 ] && %s -shared %s", cc, fl);
	for (int i = 0; i < nsrc; i++) {
		snprintf(obj, sizeof obj, "%s.o", src[i]);
		strcat(cmd, " ");
		quote(cmd, sizeof cmd, obj);
	}
	strcat(cmd, " ");
	snprintf(l, sizeof l, "%s/libmtcrt.a", lib);
	quote(cmd, sizeof cmd, l);
	strcat(cmd, " -Wl,--exclude-libs,ALL " MTC_RT_LIBS);
#ifdef HAVE_MPI
	if (mpi)
		strcat(cmd, " " MTC_MPI_LIBS);
#else
	(void)mpi;
#endif
	strcat(cmd, " -o ");
	quote(cmd, sizeof cmd, out);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "mtc: error: the C compiler failed on the generated code (kept in %s):\n  %s\n",
		        tmp, cmd);
	else if (!getenv("MTC_KEEP_C")) {
		for (int i = 0; i < nsrc; i++) {
			snprintf(obj, sizeof obj, "%s.o", src[i]);
			unlink(src[i]);
			unlink(obj);
		}
		rmdir(tmp);
	} else
		fprintf(stderr, "mtc: generated C kept in %s\n", tmp);
	return rc != 0;
}

static int
build(const Lowered *lo, const BuildOpts *o, const char *out)
{
	char *id = c_ident(lo->m->name), *hpath, tmp[4096], hp[4200], dp[4200];
	char *src[2] = { hp, dp };
	FILE *h, *d, *fh;
	int rc;

	/* MODEL.h opened first: a path that cannot be written leaves no temporary directory */
	hpath = stem_with(out, ".h");
	fh = NULL;
	if ((out_beside(out) && !(fh = open_w(hpath))) || check_march() || make_tmp(tmp)) {
		if (fh)
			fclose(fh);
		free(hpath);
		free(id);
		return 1;
	}
	snprintf(hp, sizeof hp, "%s/%s.c", tmp, id);
	snprintf(dp, sizeof dp, "%s/%s-dev.c", tmp, id);
	if (!(h = open_w(hp)) || !(d = open_w(dp)))
		exit(1);
	run_gen(lo, o, id, h, d, 0);
	if (fh) {
		header_emit(lo, id, "mt3000", fh);
		fclose(fh);
	}
	fclose(h);
	fclose(d);
	rc = compile(o, src, 2, tmp, out, 0);
	free(hpath);
	free(id);
	return rc;
}

/* A data-parallel module: each variant's two translation units (its symbols prefixed
 * MODEL__rN), the module's own (MODEL-dp.c), MODEL.h; --emit=c writes the variant for the
 * most ranks and the module's unit (F.c, F-dev.c, F-dp.c; on standard output one after the
 * other), --emit=h the header. */
static int
dp(const LowDp *dp, const BuildOpts *o, const char *kind, const char *out)
{
	char *id = c_ident(dp->whole->name), tmp[4096] = "", **src, **vid, *hpath = NULL;
	int n = dp->nvar, rc = 1, nsrc = 0, *slots = xcalloc(n + 1, sizeof *slots);
	FILE *fp = NULL, *h, *d, *hf = NULL;
	int tostdout = !out || strcmp(out, "-") == 0;

	src = xcalloc(2 * n + 2, sizeof *src);
	vid = xcalloc(n + 1, sizeof *vid);
	for (int v = 0; v < n; v++)
		vid[v] = asprintf_a(dp->whole->arena, "%s__r%d", id, dp->ranks[v]);
	if (kind && strcmp(kind, "h") == 0) {
		if ((fp = tostdout ? stdout : open_w(out))) {
			header_emit_dp(dp, id, "mt3000", fp);
			rc = 0;
		}
		goto out;
	}
	if (kind) {
		/* --emit=c: the variant for the most ranks, then the module around it; all in one
		 * stream where nothing goes beside out */
		int single = !out_beside(out);
		char *hp = single ? NULL : xstrdup(out), *dv = single ? NULL : stem_with(out, "-dev.c");
		char *mp = single ? NULL : stem_with(out, "-dp.c");
		if (single)
			h = d = fp = tostdout ? stdout : open_w(out);
		else {
			h = open_w(hp);
			d = h ? open_w(dv) : NULL;
			fp = d ? open_w(mp) : NULL;
		}
		if (fp) {
			run_gen(&dp->var[n - 1], o, vid[n - 1], h, d, dp->ranks[n - 1]);
			host_emit_dp(fp, dp, o, id, (const char *const *)vid);
			rc = 0;
		}
		if (!single) {
			if (h)
				fclose(h);
			if (d)
				fclose(d);
		}
		free(hp);
		free(dv);
		free(mp);
		goto out;
	}
	/* MODEL.h opened first: a path that cannot be written leaves no temporary directory */
	if ((out_beside(out) && !(hf = open_w(hpath = stem_with(out, ".h")))) || check_march() ||
	    make_tmp(tmp))
		goto out;
	for (int v = 0; v < n; v++) {
		src[nsrc++] = asprintf_a(dp->whole->arena, "%s/%s.c", tmp, vid[v]);
		src[nsrc++] = asprintf_a(dp->whole->arena, "%s/%s-dev.c", tmp, vid[v]);
		if (!(h = open_w(src[nsrc - 2])) || !(d = open_w(src[nsrc - 1])))
			exit(1);
		slots[v] = run_gen(&dp->var[v], o, vid[v], h, d, dp->ranks[v]);
		fclose(h);
		fclose(d);
	}
	src[nsrc++] = asprintf_a(dp->whole->arena, "%s/%s-dp.c", tmp, id);
	{
		LowDp x = *dp;
		x.nslots = slots;
		if (!(fp = open_w(src[nsrc - 1])))
			exit(1);
		host_emit_dp(fp, &x, o, id, (const char *const *)vid);
		if (hf) {
			header_emit_dp(&x, id, "mt3000", hf);
			fclose(hf);
			hf = NULL;
		}
	}
	fclose(fp);
	fp = NULL;
	rc = compile(o, src, nsrc, tmp, out, 1);
out:
	if (fp && fp != stdout)
		fclose(fp);
	if (hf)
		fclose(hf);
	free(hpath);
	free(src);
	free(vid);
	free(slots);
	free(id);
	return rc;
}

static const char *const emits[] = { "c", "h", NULL };

#ifdef HAVE_MPI
const Backend backend_mt3000 = { "mt3000", &target_mt3000, emits, emit, build, NULL, dp };
#else
const Backend backend_mt3000 = { "mt3000", &target_mt3000, emits, emit, build, NULL, NULL };
#endif
