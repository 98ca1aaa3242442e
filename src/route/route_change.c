/* Route changes on the registrar thread (route_change.h): runs the change a
 * requester described, counts and logs its outcome, hands it back through
 * the requester's done callback, which answers, and frees it. */
#include "rmqns/route_change.h"

#include <string.h>

#include <urcu/compiler.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/race.h"

void route_change_init(struct route_change *c, struct route_db *db, enum route_change_kind kind)
{
	memset(c, 0, sizeof(*c));
	c->m.apply = route_change_apply;
	c->kind = kind;
	c->db = db;
}

int route_change_decode_body(struct route_change *c, char *why, size_t whylen)
{
	const struct route_body_id *id = &c->reg.body_id;
	int rc = regbody_decode(id->bytes, id->len, id->compressed, id->version, id->max_bytes, &c->body, why,
				whylen);

	if (rc == 0)
		c->reg.body = &c->body;
	return rc;
}

int route_change_register_prepare(struct route_change *c, struct route_db *db,
				  const struct route_broker_reg *reg, int64_t crc_want, char *why,
				  size_t whylen)
{
	struct route_body_id *id = &c->reg.body_id;
	uint32_t crc;

	route_change_init(c, db, ROUTE_CHANGE_REGISTER_BROKER);
	c->reg = *reg;
	/* the CRC bodyCrc32 is checked against and a hash beside it, in one
	 * walk: together the identity of the body */
	regbody_fingerprint(id->bytes, id->len, &crc, &id->hash);
	id->crc = crc;
	if (crc_want != 0 && crc_want != (int64_t)crc)
		return RMQNS_ECRC;
	/* the broker's last body again, on the same connection: nothing in
	 * it needs reading (the registrar makes sure, docs/architecture.md) */
	state_read_lock();
	bool same = route_body_is_last(db, reg->cluster, reg->addr, reg->conn_id, id);
	state_read_unlock();
	return same ? 0 : route_change_decode_body(c, why, whylen);
}

static void change_register_broker(struct route_change *c)
{
	int rc = route_apply_register(c->db, &c->reg, route_now_ms(), &c->res);

	if (rc == RMQNS_ENOTFOUND && !c->reg.body) {
		/* sent as identical to the broker's last body, but something
		 * changed in between (a topic, its place in the group): the
		 * body is decoded here after all, and applied in full */
		char why[160];
		rc = route_change_decode_body(c, why, sizeof(why));
		if (rc)
			log_warn("route: undecodable registration from %s (%s): %s", c->reg.addr, c->peer, why);
		else
			rc = route_apply_register(c->db, &c->reg, route_now_ms(), &c->res);
	}
	metrics_add(rc ? MC_REG_FAILED
		       : c->res.outcome == ROUTE_REG_REFUSED    ? MC_REG_REFUSED
		       : c->res.outcome == ROUTE_REG_SUPERSEDED ? MC_REG_SUPERSEDED
							      : MC_REG_DONE,
		    1);
	if (rc)
		log_warn("route: registration of %s (%s) failed: %s", c->reg.addr, c->reg.name, rmqns_strerror(rc));
	c->rc = rc;
}

void route_change_apply(struct mutation *m)
{
	struct route_change *c = caa_container_of(m, struct route_change, m);
	int n;

	if (c->cancelled && c->cancelled(c)) {
		metrics_add(MC_REQ_DROPPED_CLOSED, 1);
		route_change_fini(c);
		c->release(c);
		return;
	}
	switch (c->kind) {
	case ROUTE_CHANGE_REGISTER_BROKER:
		change_register_broker(c);
		break;
	case ROUTE_CHANGE_UNREGISTER_BROKER:
		c->count = route_apply_unregister(c->db, c->cluster, c->addr, c->name, c->conn_id);
		if (c->count > 0)
			metrics_add(MC_BROKER_UNREGISTERED, 1);
		break;
	case ROUTE_CHANGE_WRITE_PERM:
		n = route_apply_write_perm(c->db, c->name, c->add);
		c->rc = n < 0 ? n : 0;
		c->count = n < 0 ? 0 : n;
		break;
	case ROUTE_CHANGE_DELETE_TOPIC:
		c->rc = route_apply_delete_topic(c->db, c->topic, c->cluster);
		break;
	case ROUTE_CHANGE_REGISTER_TOPIC:
		c->rc = route_apply_register_topic(c->db, c->topic, c->queues.items, c->queues.n);
		break;
	}
	c->done(c);
	route_change_fini(c);
	c->release(c);
}

void route_change_fini(struct route_change *c)
{
	regbody_free(&c->body);
	route_reg_result_free(&c->res);
	route_topic_queues_free(&c->queues);
}
