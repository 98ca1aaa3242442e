/* The comparison of two decoded REGISTER_BROKER bodies, for the tests and
 * fuzzers that decode a body both ways (regbody_decode and its general
 * path, regbody_decode_general). */
#include <stdio.h>
#include <string.h>

#include "regbody_general.h"

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

#define DIFF(...) do { snprintf(diff, difflen, __VA_ARGS__); return false; } while (0)

bool regbody_same(const struct regbody *a, const struct regbody *b, char *diff, size_t difflen)
{
	if (!data_version_equal(&a->dv, &b->dv))
		DIFF("dataVersion");
	if (a->n_topics != b->n_topics)
		DIFF("topic count %u, %u", a->n_topics, b->n_topics);
	for (uint32_t i = 0; i < a->n_topics; i++) {
		const struct regbody_topic *x = &a->topics[i], *y = &b->topics[i];
		if (x->name_len != y->name_len || memcmp(x->name, y->name, x->name_len) != 0 ||
		    x->name[x->name_len] != 0 || y->name[y->name_len] != 0)
			DIFF("topic %u: name", i);
		if (x->read_queues != y->read_queues || x->write_queues != y->write_queues ||
		    x->perm != y->perm || x->sysflag != y->sysflag || x->hash != y->hash)
			DIFF("topic %u (%s): values", i, x->name);
	}
	if (a->topics_fp != b->topics_fp)
		DIFF("topics fingerprint");
	if (a->has_filters != b->has_filters || a->n_filters != b->n_filters)
		DIFF("filter servers");
	for (uint32_t i = 0; i < a->n_filters; i++)
		if (!str_same(a->filters[i], b->filters[i]))
			DIFF("filter server %u", i);
	if (a->n_mappings != b->n_mappings)
		DIFF("mapping count");
	for (uint32_t i = 0; i < a->n_mappings; i++) {
		const struct regbody_mapping *x = &a->mappings[i], *y = &b->mappings[i];
		if (!str_same(x->key, y->key) || !str_same(x->bname, y->bname) ||
		    !str_same(x->scope, y->scope) || !str_same(x->topic, y->topic) ||
		    x->epoch != y->epoch || x->total_queues != y->total_queues || x->dirty != y->dirty ||
		    x->has_ids != y->has_ids || x->n_ids != y->n_ids ||
		    (x->n_ids && memcmp(x->ids, y->ids, x->n_ids * sizeof(*x->ids)) != 0))
			DIFF("mapping %u", i);
	}
	return true;
}
