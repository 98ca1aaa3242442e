/* Requests the NameServer sends on its own (protocol.md §4): today only
 * NOTIFY_MIN_BROKER_ID_CHANGE (905), one-way, to the brokers the route
 * registry names when a group's minimum broker id changes. The route
 * module decides when and whom; this module encodes and sends. */
#ifndef RMQNS_NOTIFY_H
#define RMQNS_NOTIFY_H

#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/route.h"

/* Appends the 905 request for c: JSON header, code 905, one-way flag,
 * language JAVA, ext minBrokerId, minBrokerAddr, offlineBrokerAddr and
 * haBrokerAddr, each left out when NULL (as Java leaves null fields out),
 * no body. */
int notify_encode_min_id_change(const struct route_min_id_change *c, int32_t opaque,
				struct buf *out);

/* route_notify_fn (arg: the struct server): encodes the request once and
 * queues it to every target over the reactors' outbound connections
 * (net_send_to). Never blocks; failures are logged. */
void notify_min_id_change(void *server, const struct route_min_id_change *c);

#endif
