/* fault.c: a test aid: damage a lowered step the way a wrong plan would (MTC_FAULT).
 *
 * needs: a Lowered (lower.c). changes: the step's offsets, lifetimes, skipped or deferred
 * ops, so that the generated code does what a faulty plan would; the IR is not touched.
 * The faults are those a memory plan can have: a copy not awaited, two live values on the
 * same bytes, a value freed before its last reader, a swap_in started after its first reader,
 * a recomputation left out. tests/backend/faults.sh injects them and measures what check
 * mode (MTC_CHECK=1) reports; docs/reliability.md has the figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower.h"

enum { WAIT, OVERLAP, EARLY, LATE, NOREC, NKIND };
static const char *const kinds[NKIND] = { "wait", "overlap", "early", "late", "norec" };

/* A value the generated code stores in the arena (check mode tracks it). */
static int
tracked(const LowFunc *p, int v)
{
	const Func *f = p->f;
	return v >= 0 && f->val[v].decl < 0 && f->val[v].def >= 0 && !in_ddr(f, v) && p->mat[v];
}

/* The kernel an op runs in: its fused group's first op, or itself. */
static int
launch(const LowFunc *p, int i)
{
	return p->grp[i] >= 0 ? p->grp[i] : i;
}

/* Is op i alone in its kernel (not inside a fused group of several ops)? */
static int
alone(const LowFunc *p, int i)
{
	return p->grp[i] < 0 || (p->grp[i] == i && p->gend[i] == i + 1);
}

/* Does op i read value v? */
static int
reads(const Func *f, int i, int v)
{
	for (int a = 0; a < f->op[i].nargs; a++)
		if (f->op[i].args[a] == v)
			return 1;
	return 0;
}

/* Candidate k of a kind (k < 0: count them); fills *a, *b with what the fault needs. */
static int
candidate(const LowFunc *p, int64_t top, int kind, int k, int *a, int *b)
{
	const Func *f = p->f;
	int n = 0;

	switch (kind) {
	case WAIT:
	case NOREC:
		for (int i = 0; i < f->nop; i++) {
			const Op *o = &f->op[i];
			if (kind == WAIT ? o->kind != OP_WAIT : o->phase != PH_REC || !alone(p, i))
				continue;
			if (n++ == k) {
				*a = i;
				return n;
			}
		}
		break;
	case OVERLAP:
		/* v onto the bytes of the first value w that is live while v is, elsewhere, where v
		 * still fits in the device's bytes (outside them the kernel would write past the
		 * allocation before check mode could stop it) */
		for (int v = 0; v < f->nval; v++) {
			if (!tracked(p, v))
				continue;
			for (int w = 0; w < f->nval; w++) {
				int from = f->val[v].def > f->val[w].def ? f->val[v].def : f->val[w].def;
				if (w == v || !tracked(p, w) || p->off[w] == p->off[v] ||
				    p->off[w] + vbytes(f, v) > top ||
				    from > (p->last[v] < p->last[w] ? p->last[v] : p->last[w]))
					continue;
				if (n++ == k) {
					*a = v, *b = w;
					return n;
				}
				break;
			}
		}
		break;
	case EARLY:
		/* v dies after an earlier reader, in another kernel than its last one */
		for (int v = 0; v < f->nval; v++) {
			int prev = -1, lastr = p->last[v];
			if (!tracked(p, v) || lastr >= f->nop || !reads(f, lastr, v))
				continue;
			for (int i = f->val[v].def + 1; i < lastr; i++)
				if (reads(f, i, v) && f->op[i].kind != OP_WAIT && launch(p, i) != launch(p, lastr))
					prev = i;
			if (prev < 0)
				continue;
			if (n++ == k) {
				*a = v, *b = prev;
				return n;
			}
		}
		break;
	case LATE:
		/* a swap_in run right after the first op that reads its result */
		for (int i = 0; i < f->nop; i++) {
			int r = f->op[i].res, first = -1;
			if (f->op[i].kind != OP_SWAPIN)
				continue;
			for (int j = i + 1; j < f->nop && first < 0; j++)
				if (f->op[j].kind != OP_WAIT && reads(f, j, r))
					first = j;
			if (first < 0)
				continue;
			if (n++ == k) {
				*a = i, *b = first;
				return n;
			}
		}
		break;
	}
	return k < 0 ? n : 0;
}

int
lower_fault(Lowered *lo, const char *spec, char *what, size_t nwhat)
{
	LowFunc *p = lo->step.f ? &lo->step : &lo->fwd;
	const Func *f = p->f;
	const char *colon = strchr(spec, ':');
	int kind, k, n, a = -1, b = -1;

	for (kind = 0; kind < NKIND; kind++)
		if (colon && (size_t)(colon - spec) == strlen(kinds[kind]) &&
		    strncmp(spec, kinds[kind], colon - spec) == 0)
			break;
	if (kind == NKIND || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		snprintf(what, nwhat, "MTC_FAULT='%s': expected KIND:N, KIND one of wait, overlap, "
		         "early, late, norec", spec);
		return -1;
	}
	int64_t top = lo->persist + lo->arena;

	if ((n = candidate(p, top, kind, -1, &a, &b)) == 0) {
		snprintf(what, nwhat, "MTC_FAULT='%s': %s has no place for a fault of this kind", spec,
		         f->name);
		return -1;
	}
	k = atoi(colon + 1) % n;
	candidate(p, top, kind, k, &a, &b);
	switch (kind) {
	case WAIT:
	case NOREC:
		p->skip[a] = 1;
		snprintf(what, nwhat, "%s: op %d (%s %%%s) left out", f->name, a,
		         opinfo[f->op[a].kind].name, f->val[f->op[a].kind == OP_WAIT ? f->op[a].args[0] :
		         f->op[a].res].name);
		break;
	case OVERLAP:
		snprintf(what, nwhat, "%s: %%%s moved from %lld onto the bytes of %%%s at %lld", f->name,
		         f->val[a].name, (long long)p->off[a], f->val[b].name, (long long)p->off[b]);
		p->off[a] = p->off[b];
		break;
	case EARLY:
		snprintf(what, nwhat, "%s: %%%s freed after op %d, before its last reader op %d", f->name,
		         f->val[a].name, b, p->last[a]);
		p->last[a] = b;
		break;
	case LATE:
		p->defer[a] = b;
		snprintf(what, nwhat, "%s: op %d (swap_in %%%s) run after its first reader, op %d",
		         f->name, a, f->val[f->op[a].res].name, b);
		break;
	}
	return 0;
}
