/* Request handlers by request code, grouped by subject in src/processor/
 * handlers_*.c. A handler takes ownership of req: it replies and frees it,
 * or hands it on (to the registrar inside a mutation) with the duty to
 * reply and free. Handlers run on processor threads, or on the receiving
 * reactor when may_run_inline (routeQueryInline), inside an RCU read-side
 * section they open themselves when they read shared tables. */
#ifndef RMQNS_HANDLERS_H
#define RMQNS_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

struct app;
struct request;

typedef void (*handler_fn)(struct app *app, struct request *req);

enum handler_lane {
	LANE_ROUTE = 0,   /* cheap work clients wait on: route queries, broker liveness */
	LANE_DEFAULT = 1, /* everything else, registrations included */
};

struct handler {
	int32_t code;
	handler_fn fn;
	enum handler_lane lane;
	bool may_run_inline; /* never blocks, bounded work: a reactor may run it */
};

/* Each subject file exports one table, ended by an entry whose fn is NULL:
 * handlers_route.c (route registry), handlers_kv.c (KV config),
 * handlers_config.c (GET/UPDATE_NAMESRV_CONFIG). */
extern const struct handler handlers_route[];
extern const struct handler handlers_kv[];
extern const struct handler handlers_config[];

/* The handler for a request code, or NULL (the caller answers code 3). */
const struct handler *handler_lookup(int32_t code);

/* Request codes (protocol.md §4). */
enum request_code {
	REQ_PUT_KV_CONFIG = 100,
	REQ_GET_KV_CONFIG = 101,
	REQ_DELETE_KV_CONFIG = 102,
	REQ_REGISTER_BROKER = 103,
	REQ_UNREGISTER_BROKER = 104,
	REQ_GET_ROUTEINFO_BY_TOPIC = 105,
	REQ_GET_BROKER_CLUSTER_INFO = 106,
	REQ_WIPE_WRITE_PERM_OF_BROKER = 205,
	REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
	REQ_DELETE_TOPIC_IN_NAMESRV = 216,
	REQ_REGISTER_TOPIC_IN_NAMESRV = 217,
	REQ_GET_KVLIST_BY_NAMESPACE = 219,
	REQ_GET_TOPICS_BY_CLUSTER = 224,
	REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS = 304,
	REQ_GET_UNIT_TOPIC_LIST = 311,
	REQ_GET_HAS_UNIT_SUB_TOPIC_LIST = 312,
	REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313,
	REQ_UPDATE_NAMESRV_CONFIG = 318,
	REQ_GET_NAMESRV_CONFIG = 319,
	REQ_QUERY_DATA_VERSION = 322,
	REQ_ADD_WRITE_PERM_OF_BROKER = 327,
	REQ_GET_BROKER_MEMBER_GROUP = 901,
	REQ_BROKER_HEARTBEAT = 904,
	REQ_NOTIFY_MIN_BROKER_ID_CHANGE = 905, /* sent by the server (notify.h) */
};

#endif
