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

	fprintf(fp, "# func %s: op, phase, kind, result, type, bytes written, accelerator bytes live "
	        "while it runs and after it, modeled start and end (ms)\n", f->name);
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		int64_t b = op->res >= 0 ? type_bytes(&f->val[op->res].ty) : 0;
		if (op->res >= 0)
			type_str(&f->val[op->res].ty, tb, sizeof tb);
		else
			snprintf(tb, sizeof tb, "-");
		fprintf(fp, "%5d %-4s %-20s %-24s %-18s bytes %-10lld live %-12lld after %-12lld start %.6f end %.6f\n",
		        i, phase_name[op->phase], opinfo[op->kind].name, opres(f, op, rb, sizeof rb), tb,
		        (long long)b, (long long)l->at[i], (long long)l->after[i], c->start[i] * 1e3,
		        c->end[i] * 1e3);
	}
	fprintf(fp, "# module tensors %lld bytes (live throughout), peak live bytes at op %d, host zone %lld bytes\n",
	        (long long)l->base, l->peakop, (long long)lay->host);
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

/* Graphs above BIG ops are drawn in clusters of CLUSTER consecutive ops (in execution order,
 * a layer's worth in the examples), with straight edges, no edge labels and dot's iteration
 * limits lowered: unlimited, dot needs minutes on a few hundred ops. */
enum { CLUSTER = 25, BIG = 60 };

void
dump_dot(FILE *fp, const Func *f, const Dag *d)
{
	static const char *const style[] = {
		"color=black", "color=\"#d62728\",style=dashed", "color=\"#1f77b4\",style=dotted",
	};
	char rb[256], tb[128], lab[512];
	int big = f->nop > BIG;

	fprintf(fp, "digraph ");
	qstr(fp, f->name);
	fprintf(fp, " {\n  rankdir=TB;\n  newrank=true;\n  node [shape=box,style=filled,fontname=\"Helvetica\",fontsize=10];\n"
	        "  edge [fontsize=8];\n");
	if (big)
		fprintf(fp, "  mclimit=0.1;\n  nslimit=2;\n  nslimit1=2;\n  splines=line;\n");
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		if (big && i % CLUSTER == 0) {
			int j = i + CLUSTER - 1 < f->nop ? i + CLUSTER - 1 : f->nop - 1, n[PH_MEM + 1] = { 0 };
			int lo = op->loc.line, hi = op->loc.line;
			for (int k = i; k <= j; k++) {
				n[f->op[k].phase]++;
				if (f->op[k].loc.line && (!lo || f->op[k].loc.line < lo))
					lo = f->op[k].loc.line;
				if (f->op[k].loc.line > hi)
					hi = f->op[k].loc.line;
			}
			if (i)
				fprintf(fp, "  }\n");
			fprintf(fp, "  subgraph cluster_%d {\n    style=rounded;\n    label=\"ops %d-%d:", i, i, j);
			for (int p = 0; p <= PH_MEM; p++)
				if (n[p])
					fprintf(fp, " %s %d", phase_name[p], n[p]);
			fprintf(fp, ", source lines %d-%d\";\n", lo, hi);
		}
		if (op->res >= 0)
			type_str(&f->val[op->res].ty, tb, sizeof tb);
		else
			tb[0] = 0;
		snprintf(lab, sizeof lab, "%d: %s\n%s %s", i, opinfo[op->kind].name,
		         opres(f, op, rb, sizeof rb), tb);
		fprintf(fp, "%s  n%d [label=", big ? "  " : "", i);
		qstr(fp, lab);
		fprintf(fp, ",fillcolor=\"%s\"];\n", phase_color[opinfo[op->kind].flags & F_COPY ||
		        op->kind == OP_WAIT ? PH_MEM : op->phase]);
	}
	if (big && f->nop)
		fprintf(fp, "  }\n");
	for (int i = 0; i < d->ne; i++) {
		const Edge *e = &d->e[i];
		fprintf(fp, "  n%d -> n%d [%s", e->from, e->to, style[e->kind]);
		if (e->kind != D_RAW && !big)
			fprintf(fp, ",label=\"%s%s\"", dep_name[e->kind], e->arena ? " arena" : "");
		if (e->arena)
			fprintf(fp, ",penwidth=0.5");
		fprintf(fp, "];\n");
	}
	fprintf(fp, "  subgraph cluster_legend {\n    label=\"legend\";\n");
	for (int p = 0; p <= PH_MEM; p++)
		fprintf(fp, "    legend_%s [label=\"%s\",fillcolor=\"%s\"];\n", phase_name[p],
		        p == PH_MEM ? "copy / wait" : phase_name[p], phase_color[p]);
	for (int k = 0; k < 3; k++)
		fprintf(fp, "    legend_%s_a [label=\"\",shape=point];\n    legend_%s_b [label=\"\",shape=point];\n"
		        "    legend_%s_a -> legend_%s_b [%s,label=\"%s\"];\n", dep_name[k], dep_name[k],
		        dep_name[k], dep_name[k], style[k], dep_name[k]);
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
		/* up when the op starts; down when a compute op is done (a copy's operand is freed
		 * by its wait, a compute op) */
		fprintf(fp, ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"name\":\"live bytes\",\"args\":{\"bytes\":%lld}}",
		        c->start[i] * 1e6, (long long)l->at[i]);
		if (tid == 1)
			fprintf(fp, ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"name\":\"live bytes\",\"args\":{\"bytes\":%lld}}",
			        c->end[i] * 1e6, (long long)l->after[i]);
	}
	fprintf(fp, "\n]}\n");
}
