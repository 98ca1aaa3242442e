/* Requests the server sends (notify.h): encoded like any command, sent
 * over the reactors' outbound connections. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/log.h"
#include "rmqns/net.h"
#include "rmqns/notify.h"
#include "rmqns/remoting.h"

/* Opaques of the server's own requests (nothing answers one-way ones, but
 * a broker logs them). */
static atomic_int notify_next_opaque;

int notify_encode_min_id_change(const struct route_min_id_change *c, int32_t opaque,
				struct buf *out)
{
	char id[24];
	struct remoting_ext_field ext[4];
	struct remoting_cmd cmd;
	uint32_t n = 0;

	snprintf(id, sizeof id, "%" PRId64, c->min_id);
	/* in name order, as Java's header writer sorts them */
	if (c->ha_addr)
		ext[n++] = (struct remoting_ext_field){ "haBrokerAddr", c->ha_addr };
	if (c->min_addr)
		ext[n++] = (struct remoting_ext_field){ "minBrokerAddr", c->min_addr };
	ext[n++] = (struct remoting_ext_field){ "minBrokerId", id };
	if (c->offline_addr)
		ext[n++] = (struct remoting_ext_field){ "offlineBrokerAddr", c->offline_addr };
	remoting_request_init(&cmd, REQ_NOTIFY_MIN_BROKER_ID_CHANGE, opaque, REMOTING_FLAG_ONEWAY,
			      REMOTING_JSON);
	cmd.ext = ext;
	cmd.ext_count = n;
	cmd.ext_present = true;
	return remoting_encode(&cmd, out);
}

void notify_min_id_change(void *server, const struct route_min_id_change *c)
{
	struct buf frame = BUF_INIT;
	int rc = notify_encode_min_id_change(c, atomic_fetch_add(&notify_next_opaque, 1), &frame);
	if (rc < 0) {
		log_error("min broker id of %s changed to %" PRId64 ": request not encoded: %s",
			  c->group ? c->group : "?", c->min_id, rmqns_strerror(rc));
		return;
	}
	log_info("min broker id of %s changed to %" PRId64 " (%s), notifying %u brokers, offline %s",
		 c->group ? c->group : "?", c->min_id, c->min_addr ? c->min_addr : "null",
		 c->n_targets, c->offline_addr ? c->offline_addr : "null");
	for (uint32_t i = 0; i < c->n_targets; i++) {
		rc = net_send_to(server, c->targets[i], frame.data, frame.len);
		if (rc < 0)
			log_warn("NOTIFY_MIN_BROKER_ID_CHANGE to %s not sent: %s", c->targets[i],
				 rmqns_strerror(rc));
	}
	buf_free(&frame);
}
