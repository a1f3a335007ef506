/* fe.c: placeholder, replaced by the frontend. */
#include "frontend.h"
Module *fe_compile(Src *src, const FeOpts *o) { (void)o; diag(src, (Loc){0, 0}, "the tdsl frontend is not written yet"); return NULL; }
