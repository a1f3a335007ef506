/* parse.c: placeholder, replaced by the textual IR parser. */
#include "ir.h"
Module *ir_parse(Src *src) { diag(src, (Loc){0, 0}, "textual IR is not readable yet"); return NULL; }
