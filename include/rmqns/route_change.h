/* Route changes as the registrar applies them. The requester fills one in
 * (route_change_init, then the inputs of its kind), sets done, release,
 * cancelled and the mutation's drop (for the shutdown deadline: fini, then
 * release), and submits it. route_change_apply runs on the registrar
 * thread: makes the change, records the outcome, calls done (which
 * answers), frees its own part and calls release. The route module never
 * sees the request; the requester's callbacks never call back into it. */
#ifndef RMQNS_ROUTE_CHANGE_H
#define RMQNS_ROUTE_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/mutation.h"
#include "rmqns/regbody.h"
#include "rmqns/route.h"

enum route_change_kind {
	ROUTE_CHANGE_REGISTER_BROKER = 0,   /* reg (and body) */
	ROUTE_CHANGE_UNREGISTER_BROKER = 1, /* cluster, addr, name, conn_id */
	ROUTE_CHANGE_WRITE_PERM = 2,        /* name, add */
	ROUTE_CHANGE_DELETE_TOPIC = 3,      /* topic, cluster */
	ROUTE_CHANGE_REGISTER_TOPIC = 4,    /* topic, queues */
};

struct route_change {
	struct mutation m; /* m.apply is route_change_apply */
	enum route_change_kind kind;
	struct route_db *db;
	const char *peer; /* who asked, for log lines */
	/* inputs; strings belong to the requester and outlive done */
	struct route_broker_reg reg;
	struct regbody body; /* decoded into by route_change_decode_body */
	const char *cluster, *addr, *name, *topic;
	uint64_t conn_id;
	bool add; /* ADD (true) or WIPE write permission */
	struct route_topic_queues queues;
	/* the outcome, read by done */
	int rc;    /* 0 or a negative rmqns_err */
	int count; /* topics touched (WRITE_PERM), brokers removed (UNREGISTER) */
	struct route_reg_result res; /* REGISTER_BROKER */
	/* Called on the registrar thread once the change is made (or failed):
	 * answers from the outcome; frees nothing. */
	void (*done)(struct route_change *c);
	/* Frees what the requester owns, c included, once route_change_fini
	 * has freed the rest: called by route_change_apply after done, or
	 * instead of it for a cancelled change. */
	void (*release)(struct route_change *c);
	/* NULL, or true when whoever asked is gone (its connection closed):
	 * the change is then released unmade and unanswered (nobody reads the
	 * answer, and a registration would tie a broker to a connection
	 * already gone). */
	bool (*cancelled)(const struct route_change *c);
};

void route_change_init(struct route_change *c, struct route_db *db, enum route_change_kind kind);
/* REGISTER_BROKER, on the requester's thread, in one call: c initialised
 * (route_change_init) with reg (its body_id holding the bytes, length,
 * version, compressed flag and inflate cap; hash and crc are filled in
 * here), the body's fingerprint taken and checked against crc_want, the
 * bodyCrc32 (0 = unchecked; RMQNS_ECRC on a mismatch), then the body
 * decoded unless it is the broker's last one on the same connection
 * (route_body_is_last, read here inside a read-side section). A negative
 * rmqns_err otherwise, with the reason of a failed decode in why; give c
 * up with route_change_fini then. */
int route_change_register_prepare(struct route_change *c, struct route_db *db,
				  const struct route_broker_reg *reg, int64_t crc_want, char *why,
				  size_t whylen);

/* REGISTER_BROKER: decodes reg.body_id's bytes into c->body as its identity
 * says they are to be read; reg.body points at it on success. A negative
 * rmqns_err with the reason in why otherwise. */
int route_change_decode_body(struct route_change *c, char *why, size_t whylen);
/* The mutation's apply (registrar thread). */
void route_change_apply(struct mutation *m);
/* Frees what the change owns (not c itself): for a requester that gives
 * up a change it never submitted, and for the mutation's drop. */
void route_change_fini(struct route_change *c);

#endif
