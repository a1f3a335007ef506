/* interp.c: placeholder, replaced by the reference interpreter. */
#include "ir.h"
