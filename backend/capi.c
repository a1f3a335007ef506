/* capi.c: the typed C API every target exports: C names and types, parameter lists, the
 * prototypes MODEL.h and the generated code share. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

const char *
c_type(DType t)
{
	return t == F32 ? "float" : "int32_t";
}

/* name as a C identifier: other characters become '_', a leading digit or a C keyword (or
 * a name the generated code uses itself) gets '_' added. */
char *
c_name(const char *name, char *buf, size_t n)
{
	static const char *const kw[] = { "auto", "break", "case", "char", "const", "continue",
		"default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if",
		"inline", "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
		"static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
		"while", "int32_t", "int64_t", "uint64_t", "NULL", "mtc_self", "mtc_in", "mtc_out", NULL };
	size_t k = 0;

	if (!(*name >= 'a' && *name <= 'z') && !(*name >= 'A' && *name <= 'Z') && *name != '_')
		buf[k++] = '_';
	for (; *name && k + 2 < n; name++)
		buf[k++] = (*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
		           (*name >= '0' && *name <= '9') || *name == '_' ? *name : '_';
	buf[k] = 0;
	for (int i = 0; kw[i]; i++)
		if (strcmp(buf, kw[i]) == 0) {
			buf[k++] = '_';
			buf[k] = 0;
		}
	return buf;
}

/* The used inputs of f: uses[decl] set. */
void
used_inputs(const Module *m, const Func *f, uint8_t *uses)
{
	memset(uses, 0, (size_t)m->ndecl + 1);
	for (int i = 0; i < f->nop; i++)
		for (int a = 0; a < f->op[i].nargs; a++) {
			int d = f->val[f->op[i].args[a]].decl;
			if (d >= 0 && m->decl[d].role == R_INPUT)
				uses[d] = 1;
		}
	for (int k = 0; k < f->nout; k++) {
		int d = f->val[f->out[k]].decl;
		if (d >= 0 && m->decl[d].role == R_INPUT)
			uses[d] = 1;
	}
}

/* The typed API's parameter list for the inputs f uses, and the array it builds. */
void
typed_inputs(const Module *m, const Func *f, FILE *fp, int array)
{
	uint8_t *uses = malloc((size_t)m->ndecl + 1);
	char nm[300];

	used_inputs(m, f, uses);
	if (array)
		fprintf(fp, "\tconst void *mtc_in[] = {");
	for (int d = 0; d < m->ndecl; d++) {
		if (m->decl[d].role != R_INPUT)
			continue;
		if (array)
			fprintf(fp, " %s,", uses[d] ? c_name(m->decl[d].name, nm, sizeof nm) : "NULL");
		else if (uses[d])
			fprintf(fp, ", const %s *%s", c_type(m->decl[d].ty.dt), c_name(m->decl[d].name, nm, sizeof nm));
	}
	if (array)
		fprintf(fp, " NULL };\n");
	free(uses);
}

/* Output k's parameter name: its own, unless an input or the loss already has it. */
const char *
out_param(const Module *m, int k)
{
	static char buf[300];
	const char *nm = m->fwd->outname[k];
	c_name(nm, buf, sizeof buf - 4);
	if (mod_find_decl(m, nm) >= 0 || strcmp(nm, "loss") == 0)
		strcat(buf, "_out");
	return buf;
}

const char *
hyper_name(const char *decl)
{
	return strncmp(decl, "opt.", 4) == 0 ? decl + 4 : decl;
}

/* The prototypes of the typed API, shared by MODEL.h and the host file. */
void
api_protos(const Module *m, const char *id, FILE *fp, int exported)
{
	const char *x = exported ? "MTC_EXPORT " : "";

	fprintf(fp, "%s%s *%s_create(void);\n", x, id, id);
	if (m->step) {
		fprintf(fp, "%sint %s_step(%s *", x, id, id);
		typed_inputs(m, m->step, fp, 0);
		fprintf(fp, ", float *loss);\n");
	}
	if (m->step) {
		fprintf(fp, "%sint %s_step_out(%s *", x, id, id);
		typed_inputs(m, m->step, fp, 0);
		fprintf(fp, ", float *loss");
		for (int k = 0; k < m->fwd->nout; k++)
			fprintf(fp, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(m, k));
		fprintf(fp, ");\n");
	}
	fprintf(fp, "%sint %s_save(%s *, const char *path);\n", x, id, id);
	fprintf(fp, "%sint %s_load(%s *, const char *path);\n", x, id, id);
	for (int d = 0; d < m->ndecl; d++)
		if (m->decl[d].role == R_HYPER) {
			char nm[300];
			c_name(hyper_name(m->decl[d].name), nm, sizeof nm);
			fprintf(fp, "%sint %s_set_%s(%s *, float %s);\n", x, id, nm, id, nm);
		}
	fprintf(fp, "%sint %s_forward(%s *", x, id, id);
	typed_inputs(m, m->fwd, fp, 0);
	for (int k = 0; k < m->fwd->nout; k++)
		fprintf(fp, ", %s *%s", c_type(m->fwd->val[m->fwd->out[k]].ty.dt), out_param(m, k));
	fprintf(fp, ");\n%svoid %s_destroy(%s *);\n", x, id, id);
	fprintf(fp, "%sconst char *%s_error(const %s *);\n", x, id, id);
}
