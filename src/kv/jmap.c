/* A string-keyed hash map with java.util.HashMap's iteration order (see
 * jmap.h). Owns its buckets and keys, never its values. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jmap.h"
#include "rmqns/javahash.h"
#include "rmqns/err.h"

#define JMAP_DEFAULT_CAP 16u
#define JMAP_MIN_TREEIFY_CAP 64u
#define JMAP_BUCKET_RESIZE_LEN 9u /* Java: binCount >= TREEIFY_THRESHOLD - 1 */
#define JMAP_MAX_CAP (1u << 30)

uint32_t jmap_hash(const char *key)
{
	return java_map_spread(java_string_hash(key));
}

struct jmap_entry *jmap_find(const struct jmap *m, const char *key)
{
	uint32_t h;

	if (m->cap == 0)
		return NULL;
	h = jmap_hash(key);
	for (struct jmap_entry *e = m->tab[h & (m->cap - 1)]; e; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static uint32_t table_size_for(uint32_t c)
{
	uint32_t n = 1;

	while (n < c && n < JMAP_MAX_CAP)
		n <<= 1;
	return n;
}

/* Doubles the table (or makes the first one); entries keep their relative
 * order within each bucket, as Java's lo/hi split does. */
static int jmap_resize(struct jmap *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : (m->threshold ? m->threshold : JMAP_DEFAULT_CAP);
	struct jmap_entry **nt, **tails;

	if (m->cap >= JMAP_MAX_CAP)
		return RMQNS_OK;
	nt = calloc(ncap, sizeof(*nt));
	tails = calloc(ncap, sizeof(*tails));
	if (!nt || !tails) {
		free(nt);
		free(tails);
		return RMQNS_ENOMEM;
	}
	for (uint32_t b = 0; b < m->cap; b++) {
		struct jmap_entry *e = m->tab[b];
		while (e) {
			struct jmap_entry *next = e->next;
			uint32_t i = e->hash & (ncap - 1);
			e->next = NULL;
			if (tails[i])
				tails[i]->next = e;
			else
				nt[i] = e;
			tails[i] = e;
			e = next;
		}
	}
	free(tails);
	free(m->tab);
	m->tab = nt;
	m->cap = ncap;
	m->threshold = (uint32_t)((uint64_t)ncap * 3 / 4);
	return RMQNS_OK;
}

int jmap_put(struct jmap *m, const char *key, void *val, void **old)
{
	uint32_t h = jmap_hash(key), len = 1;
	struct jmap_entry *e, **link;

	*old = NULL;
	if (m->cap == 0 && jmap_resize(m) < 0)
		return RMQNS_ENOMEM;
	link = &m->tab[h & (m->cap - 1)];
	for (e = *link; e; e = e->next, len++) {
		if (e->hash == h && strcmp(e->key, key) == 0) {
			*old = e->val;
			e->val = val;
			return RMQNS_OK;
		}
		link = &e->next;
	}
	e = malloc(sizeof(*e));
	if (!e || !(e->key = strdup(key))) {
		free(e);
		return RMQNS_ENOMEM;
	}
	e->next = NULL;
	e->hash = h;
	e->val = val;
	*link = e;
	/* Java grows a table instead of making a tree while it is small. A
	 * failed resize here only changes the order, not the content, so
	 * the insertion stands. */
	if (len >= JMAP_BUCKET_RESIZE_LEN && m->cap < JMAP_MIN_TREEIFY_CAP)
		(void)jmap_resize(m);
	if (++m->size > m->threshold)
		(void)jmap_resize(m);
	return RMQNS_OK;
}

void *jmap_remove(struct jmap *m, const char *key, int *found)
{
	uint32_t h;
	struct jmap_entry **link;

	*found = 0;
	if (m->cap == 0)
		return NULL;
	h = jmap_hash(key);
	for (link = &m->tab[h & (m->cap - 1)]; *link; link = &(*link)->next) {
		struct jmap_entry *e = *link;
		if (e->hash == h && strcmp(e->key, key) == 0) {
			void *val = e->val;
			*link = e->next;
			free(e->key);
			free(e);
			m->size--;
			*found = 1;
			return val;
		}
	}
	return NULL;
}

void jmap_presize(struct jmap *m, size_t s)
{
	float ft;
	uint32_t t;

	if (m->cap != 0 || s == 0)
		return;
	/* JDK 8-17: (float)s / loadFactor + 1.0F, truncated */
	ft = (float)s / 0.75f + 1.0f;
	t = ft < (float)JMAP_MAX_CAP ? (uint32_t)ft : JMAP_MAX_CAP;
	if (t > m->threshold)
		m->threshold = table_size_for(t);
}

int jmap_clone(struct jmap *dst, const struct jmap *src, void *(*dup_val)(const void *),
	       void (*free_val)(void *))
{
	*dst = *src;
	dst->tab = NULL;
	if (src->cap == 0)
		return RMQNS_OK;
	dst->tab = calloc(src->cap, sizeof(*dst->tab));
	if (!dst->tab)
		goto fail;
	for (uint32_t b = 0; b < src->cap; b++) {
		struct jmap_entry **link = &dst->tab[b];
		for (const struct jmap_entry *e = src->tab[b]; e; e = e->next) {
			struct jmap_entry *c = malloc(sizeof(*c));
			if (!c)
				goto fail;
			c->next = NULL;
			c->hash = e->hash;
			c->key = strdup(e->key);
			c->val = c->key ? dup_val(e->val) : NULL;
			if (!c->val) {
				free(c->key);
				free(c);
				goto fail;
			}
			*link = c;
			link = &c->next;
		}
	}
	return RMQNS_OK;
fail:
	jmap_free(dst, free_val);
	return RMQNS_ENOMEM;
}

void jmap_free(struct jmap *m, void (*free_val)(void *))
{
	for (uint32_t b = 0; m->tab && b < m->cap; b++) {
		struct jmap_entry *e = m->tab[b];
		while (e) {
			struct jmap_entry *next = e->next;
			if (free_val)
				free_val(e->val);
			free(e->key);
			free(e);
			e = next;
		}
	}
	free(m->tab);
	*m = (struct jmap)JMAP_INIT;
}
