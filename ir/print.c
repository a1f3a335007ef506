/* print.c: placeholder, replaced by the printer. */
#include "ir.h"
void ir_print(FILE *fp, const Module *m) { (void)fp; (void)m; die("ir_print not written yet"); }
void ir_print_func(FILE *fp, const Func *f) { (void)fp; (void)f; die("ir_print_func not written yet"); }
