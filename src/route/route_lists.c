/* The list answers (cluster info, topic lists) cached as bytes: one build
 * per generation of the route tables and per (list, cluster). The
 * registrar moves the generation with every change it publishes
 * (rt_lists_changed); readers build and install through answer_cache.c. */
#include "route_priv.h"
#include "rmqns/answer_cache.h"
#include "rmqns/err.h"

struct list_query {
	struct route_db *db;
	enum route_list kind;
	const char *arg;
};

static int list_build(void *ctx, struct buf *out)
{
	const struct list_query *q = ctx;

	switch (q->kind) {
	case ROUTE_LIST_CLUSTER_INFO:
		return route_cluster_info(q->db, out);
	case ROUTE_LIST_TOPICS_ALL:
		return route_topics_all(q->db, out);
	case ROUTE_LIST_TOPICS_BY_CLUSTER:
		return route_topics_by_cluster(q->db, q->arg, out);
	case ROUTE_LIST_TOPICS_SYSTEM:
		return route_topics_system(q->db, out);
	case ROUTE_LIST_TOPICS_UNIT:
		return route_topics_unit(q->db, ROUTE_UNIT, out);
	case ROUTE_LIST_TOPICS_UNIT_SUB:
		return route_topics_unit(q->db, ROUTE_UNIT_SUB, out);
	case ROUTE_LIST_TOPICS_UNIT_SUB_NOT_UNIT:
		return route_topics_unit(q->db, ROUTE_UNIT_SUB_NOT_UNIT, out);
	}
	return RMQNS_EINVAL;
}

int route_list_body(struct route_db *db, enum route_list kind, const char *arg, const uint8_t **body,
		    size_t *len, struct buf *scratch)
{
	/* read before any table: an entry never claims a newer generation
	 * than what it was built from */
	uint64_t gen = __atomic_load_n(&db->lgen, __ATOMIC_ACQUIRE);
	struct list_query q = { db, kind, kind == ROUTE_LIST_TOPICS_BY_CLUSTER ? arg : NULL };

	return answer_cache_get(db->lists, (uint32_t)kind, q.arg, gen, list_build, &q, scratch, body, len);
}
