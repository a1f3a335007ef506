/* dumps.c: writes every dump of the hand-made MLP step and of a random function with swaps
 * under DIR, for dumps.sh to validate with Graphviz, python3 and an XML parser. */
#include <stdlib.h>
#include <string.h>

#include "tb.h"

static FILE *
out(const char *dir, const char *name, const char *ext)
{
	char path[1024];
	FILE *fp;

	snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
	if (!(fp = fopen(path, "w")))
		die("cannot write %s", path);
	return fp;
}

static void
dumps(const char *dir, const char *name, Module *m, Func *f, const char *how)
{
	Target t;
	An a;
	FILE *fp;

	target_get(&t, "mt3000");
	tb_analyze(&a, f, &t, how);
	dump_schedule(fp = out(dir, name, "schedule"), f, &a.l, &a.c, &a.lay);
	fclose(fp);
	dump_dot(fp = out(dir, name, "dot"), f, &a.d);
	fclose(fp);
	dump_dot_full(fp = out(dir, name, "full.dot"), f, &a.d);
	fclose(fp);
	dump_trace(fp = out(dir, name, "json"), f, &a.l, &a.c);
	fclose(fp);
	dump_memory(fp = out(dir, name, "svg"), f, &a.l, &a.lay, a.l.peak * 9 / 10);
	fclose(fp);
	tb_free(&a);
	mod_free(m);
}

int
main(int argc, char **argv)
{
	Module *m;

	if (argc != 2) {
		fprintf(stderr, "usage: dumps DIR\n");
		return 2;
	}
	for (int k = 0; sched_names[k]; k++) {
		char nm[64];
		m = tb_mlp(32, 784, 256, 8, 10);
		snprintf(nm, sizeof nm, "mlp-%s", sched_names[k]);
		dumps(argv[1], nm, m, m->step, sched_names[k]);
	}
	m = tb_random(7, 80);
	dumps(argv[1], "random", m, m->fwd, "critical");
	m = tb_random(11, 12);
	strcpy((char *)m->name, "odd<&\"name>");
	dumps(argv[1], "small", m, m->fwd, "mem");
	return 0;
}
