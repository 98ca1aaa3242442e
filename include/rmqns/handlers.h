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

#include "rmqns/remoting.h" /* enum request_code */

struct app;
struct request;

typedef void (*handler_fn)(struct app *app, struct request *req);

enum handler_lane {
	LANE_ROUTE = 0,   /* cheap queries clients wait on: route queries */
	LANE_DEFAULT = 1, /* admin reads and writes, lists, KV, config */
	LANE_BROKER = 2,  /* broker registrations: before route and default, fair between connections */
	LANE_LIVENESS = 3, /* broker liveness (904, 322, 901): cheap, before everything, every worker */
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

#endif
