/* svg.c: the arena over time as an SVG picture: where the peak is and what holds it.
 *
 * needs: f in execution order with Live and the Layout's offsets (Value.off).
 * fills: nothing; writes SVG: x the op index, y the byte offset (0 at the bottom), one
 * rectangle per accelerator tensor over its live interval with a <title> naming it, the live
 * bytes as a line, the peak live bytes (lower bound), the arena, the budget, and the peak
 * marked with the largest values alive there listed (docs/glossary.md's words). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { W = 1200, H = 600, LM = 90, TM = 40, RM = 260, BM = 50, TOP = 6 };

static const char *const fill[] = { "#6baed6", "#fb6a4a", "#74c476", "#fdae6b", "#9e9ac8" };

static void
esc(FILE *fp, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '&': fputs("&amp;", fp); break;
		case '"': fputs("&quot;", fp); break;
		default: fputc(*s, fp);
		}
}

static void
mb(char *buf, size_t n, int64_t b)
{
	if (b >= 1 << 20)
		snprintf(buf, n, "%.2f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, n, "%.1f KiB", (double)b / 1024);
}

void
dump_memory(FILE *fp, const Func *f, const Live *l, const Layout *lay, int64_t budget)
{
	int n = f->nop > 0 ? f->nop : 1, *top;
	int64_t ymax = lay->arena > l->peak ? lay->arena : l->peak;
	double dx, sy;
	char tb[128], b1[32], b2[32];
	int ntop = 0;

	if (budget > ymax)
		ymax = budget;
	if (ymax <= 0)
		ymax = 1;
	dx = (double)W / n;
	sy = (double)H / ymax;
#define X(i) (LM + (i) * dx)
#define Y(b) (TM + H - (double)(b) * sy)
	fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
	        "width=\"%d\" height=\"%d\" font-family=\"Helvetica,Arial,sans-serif\" font-size=\"11\">\n",
	        LM + W + RM, TM + H + BM);
	fprintf(fp, "<title>arena of ");
	esc(fp, f->mod->name);
	fprintf(fp, ".%s</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", f->name);
	mb(b1, sizeof b1, l->peak);
	mb(b2, sizeof b2, lay->arena);
	fprintf(fp, "<text x=\"%d\" y=\"20\" font-size=\"14\">", LM);
	esc(fp, f->mod->name);
	fprintf(fp, ".%s: %d ops, peak live bytes %s (lower bound of the arena), arena %s</text>\n", f->name, f->nop, b1, b2);
	/* axes */
	fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", LM, TM + H, LM + W, TM + H);
	fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", LM, TM, LM, TM + H);
	for (int k = 0; k <= 4; k++) {
		mb(b1, sizeof b1, ymax * k / 4);
		fprintf(fp, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LM - 4, Y(ymax * k / 4) + 4, b1);
		fprintf(fp, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", X(n * k / 4.0), TM + H + 14, n * k / 4);
	}
	fprintf(fp, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">op index (execution order)</text>\n",
	        X(n / 2.0), TM + H + 32);
	fprintf(fp, "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">arena offset</text>\n",
	        TM + H / 2.0, TM + H / 2.0);
	/* tensors */
	for (int v = 0; v < f->nval; v++) {
		const Value *x = &f->val[v];
		int b = l->birth[v] < 0 ? 0 : l->birth[v], e = l->last[v] >= n ? n - 1 : l->last[v];
		int ph;
		if (x->host || x->off < 0 || l->bytes[v] == 0)
			continue;
		ph = x->def >= 0 ? (int)f->op[x->def].phase : -1;
		fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
		        "stroke=\"#333\" stroke-width=\"0.3\"><title>%%", X(b), Y(x->off + l->bytes[v]),
		        (e - b + 1) * dx, l->bytes[v] * sy, ph < 0 ? "#bdbdbd" : fill[ph]);
		esc(fp, x->name);
		fprintf(fp, " %s, %lld bytes at offset %lld, ops %d..%d%s</title></rect>\n",
		        type_str(&x->ty, tb, sizeof tb), (long long)l->bytes[v], (long long)x->off,
		        l->birth[v], l->last[v], x->decl >= 0 ? " (module tensor, whole step)" :
		        x->def >= 0 && f->op[x->def].kind == OP_SWAPIN && f->val[f->op[x->def].args[0]].decl >= 0 ?
		        " (copied in from its home in host memory)" : "");
	}
	/* live bytes, the peak (lower bound), the arena, the budget: docs/glossary.md's words */
	fprintf(fp, "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"1.2\" points=\"");
	for (int i = 0; i < f->nop; i++)
		fprintf(fp, "%.2f,%.2f %.2f,%.2f ", X(i), Y(l->at[i]), X(i + 1), Y(l->at[i]));
	fprintf(fp, "\"><title>live bytes</title></polyline>\n");
	fprintf(fp, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"black\" stroke-dasharray=\"4 3\"/>"
	        "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">peak live bytes (lower bound)</text>\n", LM,
	        Y(l->peak), LM + W, Y(l->peak), LM + W - 4, Y(l->peak) + 12);
	fprintf(fp, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#555\"/>"
	        "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">arena</text>\n", LM, Y(lay->arena), LM + W,
	        Y(lay->arena), LM + W - 4, Y(lay->arena) - 4);
	if (budget > 0) {
		mb(b1, sizeof b1, budget);
		fprintf(fp, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"red\" stroke-width=\"2\"/>"
		        "<text x=\"%d\" y=\"%.2f\" fill=\"red\">budget %s</text>\n", LM, Y(budget), LM + W, Y(budget),
		        LM + 6, Y(budget) - 4, b1);
	}
	/* the peak and the biggest tensors alive there */
	if (l->peakop >= 0) {
		int p = l->peakop;
		top = xcalloc(TOP, sizeof *top);
		for (int v = 0; v < f->nval; v++) {
			if (!live_at(l, v, p) || l->bytes[v] == 0 || f->val[v].decl >= 0)
				continue;
			if (ntop < TOP)
				top[ntop++] = v;
			else if (l->bytes[v] > l->bytes[top[TOP - 1]])
				top[TOP - 1] = v;
			else
				continue;
			for (int k = ntop - 1; k > 0 && l->bytes[top[k - 1]] < l->bytes[top[k]]; k--) {
				int t = top[k];
				top[k] = top[k - 1];
				top[k - 1] = t;
			}
		}
		mb(b1, sizeof b1, l->peak);
		fprintf(fp, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"red\" stroke-dasharray=\"2 2\"/>\n",
		        X(p + 0.5), TM, X(p + 0.5), TM + H);
		fprintf(fp, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">peak live bytes %s at op %d (%s)</text>\n",
		        LM + W + 4, TM + 20, b1, p, opinfo[f->op[p].kind].name);
		mb(b1, sizeof b1, l->base);
		fprintf(fp, "<text x=\"%d\" y=\"%d\">module tensors %s; the largest values:</text>\n",
		        LM + W + 4, TM + 36, b1);
		for (int k = 0; k < ntop; k++) {
			mb(b1, sizeof b1, l->bytes[top[k]]);
			fprintf(fp, "<text x=\"%d\" y=\"%d\">%%", LM + W + 10, TM + 52 + 14 * k);
			esc(fp, f->val[top[k]].name);
			fprintf(fp, " %s</text>\n", b1);
		}
		free(top);
	}
	/* legend */
	for (int ph = 0; ph <= PH_MEM + 1; ph++) {
		int y = TM + 160 + 16 * ph;
		fprintf(fp, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
		        LM + W + 4, y, ph > PH_MEM ? "#bdbdbd" : fill[ph], LM + W + 20, y + 9,
		        ph > PH_MEM ? "module tensor" : phase_name[ph]);
	}
	/* what lives in host memory between steps: not in the arena, fetched where needed */
	{
		int64_t hb[2] = { 0, 0 };
		int nh = 0;
		for (int d = 0; d < f->mod->ndecl; d++)
			if (f->mod->decl[d].host)
				hb[f->mod->decl[d].role == R_STATE] += type_bytes(&f->mod->decl[d].ty);
		for (int i = 0; i < f->nop; i++)
			nh += op_on_host(f, &f->op[i]);
		if (hb[0] || hb[1]) {
			mb(b1, sizeof b1, hb[0]);
			mb(b2, sizeof b2, hb[1]);
			fprintf(fp, "<text x=\"%d\" y=\"%d\">in host memory between steps: params %s,</text>\n"
			        "<text x=\"%d\" y=\"%d\">optimizer state %s; %d updates on the host</text>\n",
			        LM + W + 4, TM + 260, b1, LM + W + 4, TM + 274, b2, nh);
		}
	}
	fprintf(fp, "</svg>\n");
#undef X
#undef Y
}
