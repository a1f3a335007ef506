/* dump.c: the schedule, the dependence DAG (Graphviz) and a Chrome trace, for people to read.
 *
 * needs: f in execution order with Live, Cost and Layout (or Dag) filled for that order.
 * fills: nothing; writes text. */
#include <stdlib.h>
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
	/* where the rest lives: in host memory between steps, fetched (swap_in) where needed */
	for (int k = 0; k < 2; k++) {
		int any = 0;
		for (int i = 0; i < (k ? f->nop : f->mod->ndecl); i++) {
			const char *nm = NULL;
			if (!k && f->mod->decl[i].host)
				nm = f->mod->decl[i].name;
			else if (k && op_on_host(f, &f->op[i]))
				nm = f->val[f->op[i].args[0]].name;
			if (!nm)
				continue;
			fprintf(fp, "%s %s", any ? "" : k ? "# updated on the host:" : "# in host memory between steps:", nm);
			any = 1;
		}
		if (any)
			fputc('\n', fp);
	}
	if (lay->greedy > lay->arena)
		fprintf(fp, "# layout searched for the budget: %lld bytes, the greedy's %lld\n",
		        (long long)lay->arena, (long long)lay->greedy);
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

/* The compact graph of a large function: one node per block of consecutive ops
 * that runs through the source once (a layer, a call of a def: a new block starts where the
 * source comes back to the block's first line), whatever the ops' phases (the schedule
 * interleaves them); one RAW edge per pair of blocks, labelled with
 * the number of values that cross it. WAR and WAW edges only in the full graph. */
enum { MINBLOCK = 6, MAXBLOCK = 80 };

static void
dot_compact(FILE *fp, const Func *f, const Dag *d)
{
	int *blk = xcalloc(f->nop + 1, sizeof *blk), nb = 0, start = 0, first = 0;
	int *cnt = NULL, ne = 0, cap = 0;
	int (*pair)[2] = NULL;

	for (int i = 0, left = 0; i < f->nop; i++) {
		/* updates sit on the optimizer's line wherever the schedule puts them */
		int line = f->op[i].phase == PH_UPD ? 0 : f->op[i].loc.line;
		left |= line && first && line != first;
		/* the source comes back to the block's first line: the next layer or call */
		if ((line && line == first && left && i - start >= MINBLOCK) || i - start >= MAXBLOCK ||
		    (i > 0 && (f->op[i].phase == PH_BWD) != (f->op[i - 1].phase == PH_BWD) &&
		     i - start >= MAXBLOCK / 2)) {
			nb++;
			start = i;
			first = left = 0;
		}
		if (line && !first)
			first = line;
		blk[i] = nb;
	}
	nb++;
	fprintf(fp, "digraph ");
	qstr(fp, f->name);
	fprintf(fp, " {\n  rankdir=TB;\n  node [shape=box,style=filled,fontname=\"Helvetica\",fontsize=10];\n"
	        "  edge [fontsize=8];\n  label=\"%s: %d ops in %d blocks (a block runs through the source "
	        "once); --emit=dot-full draws every op and the WAR/WAW edges\";\n", f->name, f->nop, nb);
	for (int b = 0, i = 0; b < nb; b++) {
		int lo = i, n[PH_MEM + 1] = { 0 }, l0 = 0, l1 = 0, main = PH_FWD, best = -1;
		char lab[512];
		size_t k;
		for (; i < f->nop && blk[i] == b; i++) {
			int ln = f->op[i].loc.line;
			n[f->op[i].phase]++;
			if (ln && (!l0 || ln < l0))
				l0 = ln;
			if (ln > l1)
				l1 = ln;
		}
		for (int p = 0; p <= PH_MEM; p++)
			if (n[p] > best)
				best = n[p], main = p;
		k = (size_t)snprintf(lab, sizeof lab, "ops %d-%d", lo, i - 1);
		for (int p = 0; p <= PH_MEM && k < sizeof lab; p++)
			if (n[p])
				k += (size_t)snprintf(lab + k, sizeof lab - k, "%s%s %d", p == main && 0 ? "" : "\n",
				                      phase_name[p], n[p]);
		if (l0 && k < sizeof lab)
			snprintf(lab + k, sizeof lab - k, "\nsource lines %d-%d", l0, l1);
		fprintf(fp, "  b%d [label=", b);
		qstr(fp, lab);
		fprintf(fp, ",fillcolor=\"%s\"];\n", phase_color[main]);
	}
	for (int e = 0; e < d->ne; e++) {
		int a = blk[d->e[e].from], b = blk[d->e[e].to], j;
		if (d->e[e].kind != D_RAW || a == b)
			continue;
		for (j = ne - 1; j >= 0 && !(pair[j][0] == a && pair[j][1] == b); j--)
			;
		if (j < 0) {
			if (ne == cap) {
				cap = cap ? 2 * cap : 64;
				pair = xrealloc(pair, cap * sizeof *pair);
				cnt = xrealloc(cnt, cap * sizeof *cnt);
			}
			pair[ne][0] = a, pair[ne][1] = b, cnt[ne] = 0;
			j = ne++;
		}
		cnt[j]++;
	}
	for (int j = 0; j < ne; j++)
		fprintf(fp, "  b%d -> b%d [label=\"%d\"];\n", pair[j][0], pair[j][1], cnt[j]);
	fprintf(fp, "}\n");
	free(pair);
	free(cnt);
	free(blk);
}

void
dump_dot(FILE *fp, const Func *f, const Dag *d)
{
	if (f->nop > BIG) {
		dot_compact(fp, f, d);
		return;
	}
	dump_dot_full(fp, f, d);
}

void
dump_dot_full(FILE *fp, const Func *f, const Dag *d)
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
	int coll = 0;

	fprintf(fp, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
	fprintf(fp, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
	qstr(fp, f->mod->name);
	for (int i = 0; i < f->nop; i++)
		coll |= (opinfo[f->op[i].kind].flags & F_COLL) != 0;
	fprintf(fp, "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"compute\"}},\n"
	        "{\"ph\":\"M\",\"pid\":1,\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"copy\"}}");
	if (coll)
		fprintf(fp, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":3,\"name\":\"thread_name\",\"args\":{\"name\":\"network\"}}");
	for (int i = 0; i < f->nop; i++) {
		const Op *op = &f->op[i];
		int tid = opinfo[op->kind].flags & F_COPY ? 2 : 1, cl = (opinfo[op->kind].flags & F_COLL) != 0;
		/* a collective: its packing on the compute stream, then its run on the network */
		for (int part = 0; part <= cl; part++) {
			double s0 = part ? c->net[i] : c->start[i];
			double s1 = part ? c->end[i] : cl ? c->start[i] + c->pack[i] : c->end[i];
			fprintf(fp, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s%s\","
			        "\"cat\":\"%s\",\"args\":{\"op\":%d,\"result\":", part ? 3 : tid, s0 * 1e6,
			        (s1 - s0) * 1e6, opinfo[op->kind].name, cl && !part ? " (pack)" : "",
			        phase_name[op->phase], i);
			qstr(fp, opres(f, op, rb, sizeof rb));
			fprintf(fp, ",\"bytes\":%lld}}", (long long)op_bytes(f, op));
		}
		/* up when the op starts; down when a compute op is done (a copy's operand is freed
		 * by its wait, a compute op; a collective's once it is packed) */
		fprintf(fp, ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"name\":\"live bytes\",\"args\":{\"bytes\":%lld}}",
		        c->start[i] * 1e6, (long long)l->at[i]);
		if (tid == 1)
			fprintf(fp, ",\n{\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"name\":\"live bytes\",\"args\":{\"bytes\":%lld}}",
			        (cl ? c->start[i] + c->pack[i] : c->end[i]) * 1e6, (long long)l->after[i]);
	}
	fprintf(fp, "\n]}\n");
}
