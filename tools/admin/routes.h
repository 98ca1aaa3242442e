/* Many GET_ROUTEINFO_BY_TOPIC (105) queries on one connection, pipelined:
 * up to ROUTES_WINDOW in flight, answers matched to topics by opaque, so
 * ten thousand routes cost a few hundred round trips' worth of time rather
 * than ten thousand. */
#ifndef ADMIN_ROUTES_H
#define ADMIN_ROUTES_H

#include <stddef.h>

#include "target.h"

#define ROUTES_WINDOW 256

/* Called once per topic, in answer order, with the answer (any code).
 * Return 0 to go on, non-zero to stop early. */
typedef int (*routes_fn)(void *arg, size_t index, const struct remoting_cmd *answer);

/* Asks c for the route of every topic. 0 when all were answered (or fn
 * stopped the run), -1 with *fail set when the connection failed (each
 * answer must come within timeout_ms of the previous one). */
int routes_fetch(struct client *c, const char *const *topics, size_t n, int timeout_ms,
		 routes_fn fn, void *arg, struct call_result *fail);

#endif
