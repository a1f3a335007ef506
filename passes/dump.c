/* dump.c: the schedule, the dependence DAG (Graphviz) and a Chrome trace, for people to read.
 *
 * needs: f in execution order with Live, Cost and Layout (or Dag) filled for that order.
 * fills: nothing; writes text. */
#include <string.h>

#include "passes.h"

static const char *const phase_color[] = {
	"#9ecae1", "#fc9272", "#a1d99b", "#fdd049", "#c994c7",   /* fwd bwd upd rec mem */
};

/* What the op produces, or for ops without a result what they act on: "%h" or "(%w0)". */
static const char *
opres(const Func *f, const Op *op, char *buf, size_t n)
{
	if (op->res >= 0)
		snprintf(buf, n, "%%%s", f->val[op->res].name);
	else if (op->nargs)
		snprintf(buf, n, "(%%%s)", f->val[op->args[0]].name);
	else
		snprintf(buf, n, "-");
	return buf;
}

void
dump_schedule(FILE *fp, const Func *f, const Live *l, const Cost *c, const Layout *lay)
{
	char rb[256], tb[128];

	fprintf(fp, "# func %s: op, phase, kind, result, type, bytes written, live bytes while it "
	        "runs, modeled start and end (ms)\n", f->name);
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		int64_t b = op->res >= 0 ? type_bytes(&f->val[op->res].ty) : 0;
		if (op->res >= 0)
			type_str(&f->val[op->res].ty, tb, sizeof tb);
		else
			snprintf(tb, sizeof tb, "-");
		fprintf(fp, "%5d %-4s %-20s %-24s %-18s bytes %-10lld live %-12lld start %.6f end %.6f\n",
		        i, phase_name[op->phase], opinfo[op->kind].name, opres(f, op, rb, sizeof rb), tb,
		        (long long)b, (long long)l->at[i], c->start[i] * 1e3, c->end[i] * 1e3);
	}
	fprintf(fp, "peak_live_bytes %lld arena_bytes %lld modeled_ms %.6f\n", (long long)l->peak,
	        (long long)lay->arena, c->total * 1e3);
}

/* Quote for Graphviz and JSON strings alike: backslash, quote, control characters. */
static void
qstr(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", fp);
		else if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(fp, "\\u%04x", *s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

enum { CLUSTER = 25 };     /* ops per cluster in graphs too large to read flat */

void
dump_dot(FILE *fp, const Func *f, const Dag *d)
{
	static const char *const style[] = {
		"color=black", "color=\"#d62728\",style=dashed", "color=\"#1f77b4\",style=dotted",
	};
	char rb[256], tb[128], lab[512];
	int clus = f->nop > 2 * CLUSTER, open = 0, run = 0;

	fprintf(fp, "digraph ");
	qstr(fp, f->name);
	fprintf(fp, " {\n  rankdir=TB;\n  newrank=true;\n  node [shape=box,style=filled,fontname=\"Helvetica\",fontsize=10];\n"
	        "  edge [fontsize=8];\n");
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		/* Clusters: runs of ops of one phase in execution order, CLUSTER at most, so a
		 * deep network reads as a column of layer-sized boxes. */
		if (clus && (i == 0 || op->phase != f->op[i - 1].phase || run == CLUSTER)) {
			int j = i;
			while (j + 1 < f->nop && j + 1 - i < CLUSTER && f->op[j + 1].phase == op->phase)
				j++;
			if (open)
				fprintf(fp, "  }\n");
			fprintf(fp, "  subgraph cluster_%d {\n    label=\"%s ops %d-%d (source lines %d-%d)\";\n"
			        "    style=rounded;\n", i, phase_name[op->phase], i, j, op->loc.line,
			        f->op[j].loc.line);
			open = 1;
			run = 0;
		}
		run++;
		if (op->res >= 0)
			type_str(&f->val[op->res].ty, tb, sizeof tb);
		else
			tb[0] = 0;
		snprintf(lab, sizeof lab, "%d: %s\n%s %s", i, opinfo[op->kind].name,
		         opres(f, op, rb, sizeof rb), tb);
		fprintf(fp, "%s  n%d [label=", open ? "  " : "", i);
		qstr(fp, lab);
		fprintf(fp, ",fillcolor=\"%s\"];\n", phase_color[opinfo[op->kind].flags & F_COPY ||
		        op->kind == OP_WAIT ? PH_MEM : op->phase]);
	}
	if (open)
		fprintf(fp, "  }\n");
	for (int i = 0; i < d->ne; i++) {
		const Edge *e = &d->e[i];
		fprintf(fp, "  n%d -> n%d [%s", e->from, e->to, style[e->kind]);
		if (e->kind != D_RAW)
			fprintf(fp, ",label=\"%s%s\"", dep_name[e->kind], e->arena ? " arena" : "");
		fprintf(fp, "];\n");
	}
	fprintf(fp, "  subgraph cluster_legend {\n    label=\"legend\";\n");
	for (int p = 0; p <= PH_MEM; p++)
		fprintf(fp, "    legend_%s [label=\"%s\",fillcolor=\"%s\"];\n", phase_name[p],
		        p == PH_MEM ? "copy / wait" : phase_name[p], phase_color[p]);
	fprintf(fp, "  }\n}\n");
}

void
dump_trace(FILE *fp, const Func *f, const Live *l, const Cost *c)
{
	char rb[256];

	fprintf(fp, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
	fprintf(fp, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
	qstr(fp, f->mod->name);
	fprintf(fp, "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"compute\"}},\n"
	        "{\"ph\":\"M\",\"pid\":1,\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"copy\"}}");
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		int tid = opinfo[op->kind].flags & F_COPY ? 2 : 1;
		fprintf(fp, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\","
		        "\"cat\":\"%s\",\"args\":{\"op\":%d,\"result\":", tid, c->start[i] * 1e6,
		        (c->end[i] - c->start[i]) * 1e6, opinfo[op->kind].name, phase_name[op->phase], i);
		qstr(fp, opres(f, op, rb, sizeof rb));
		fprintf(fp, ",\"bytes\":%lld}}", (long long)op_bytes(f, op));
		fprintf(fp, ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"name\":\"live bytes\",\"args\":{\"bytes\":%lld}}",
		        c->start[i] * 1e6, (long long)l->at[i]);
	}
	fprintf(fp, "\n]}\n");
}
