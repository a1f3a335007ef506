/* map.c: string-keyed hash maps for the expander's scopes (open addressing, never shrinks). */
#include <stdlib.h>
#include <string.h>

#include "expand.h"

Ent *
mget(const Map *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (unsigned i = strhash(key) & (m->cap - 1); m->e[i].key; i = (i + 1) & (m->cap - 1))
		if (strcmp(m->e[i].key, key) == 0)
			return &m->e[i];
	return NULL;
}

Ent *
mput(Map *m, const char *key)
{
	Ent *e = mget(m, key);
	unsigned i;

	if (e)
		return e;
	if (2 * (m->n + 1) > m->cap) {
		Map o = *m;
		m->cap = o.cap ? 2 * o.cap : 16;
		m->e = xcalloc(m->cap, sizeof *m->e);
		m->n = 0;
		for (int k = 0; k < o.cap; k++)
			if (o.e[k].key)
				*mput(m, o.e[k].key) = o.e[k];
		if (!o.lent)
			free(o.e);
		m->lent = 0;
	}
	for (i = strhash(key) & (m->cap - 1); m->e[i].key; i = (i + 1) & (m->cap - 1))
		;
	m->n++;
	m->e[i].key = key;
	return &m->e[i];
}

void
mfree(Map *m)
{
	if (!m->lent)
		free(m->e);
	memset(m, 0, sizeof *m);
}
