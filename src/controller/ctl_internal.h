/* Private to src/controller: helpers its files share. */
#ifndef RMQNS_CONTROLLER_CTL_INTERNAL_H
#define RMQNS_CONTROLLER_CTL_INTERNAL_H

#include "rmqns/controller.h"

/* Frees a set and everything it owns (NULL is fine). */
void ctl_set_free(struct ctl_set *set);

/* ---- building answers (ctl_answer.c); each returns 0 or RMQNS_ENOMEM ---- */

/* Sets the code and a printf-formatted remark (NULL fmt = no remark). */
int ctl_answer_set(struct ctl_answer *ans, int32_t code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Adds an ext field (key is a literal; the value is copied; NULL = left out). */
int ctl_answer_ext(struct ctl_answer *ans, const char *key, const char *value);
int ctl_answer_ext_i64(struct ctl_answer *ans, const char *key, int64_t v);
int ctl_answer_ext_bool(struct ctl_answer *ans, const char *key, bool v);
struct remoting_cmd;
/* Encodes cmd (code, flag, opaque... set by the caller) with the answer's
 * ext fields and body. */
int ctl_answer_encode_cmd(const struct ctl_answer *ans, struct remoting_cmd *cmd, struct buf *out);
/* The body {"syncStateSet":[...],"syncStateSetEpoch":E}. */
int ctl_answer_body_sss(struct ctl_answer *ans, const int64_t *ids, uint32_t n, int32_t epoch);

/* A broker is live on this node (ctl_env.c). */
bool ctl_env_alive(const struct ctl_env *env, const char *cluster, const char *broker_name,
		   int64_t id);

/* The live entry of broker_name whose heartbeats come on the request's
 * connection (env->conn): who asks, for requests that do not say (ctl_adopt.c). */
const struct ctl_live_entry *ctl_adopt_requester(const struct ctl_env *env, const char *broker_name);
/* *ev (cleared first) becomes ADOPT_REPLICA of (cluster, name, address, id). */
int ctl_adopt_replica_event(struct ctl_event *ev, const char *cluster, const char *broker_name,
			    const char *address, int64_t id);

/* The one-way NOTIFY_BROKER_ROLE_CHANGED (1008) frame for a set's current
 * master (controller.md §3.13). */
int ctl_notify_encode(const struct ctl_set *set, int32_t opaque, struct buf *out);

/* ---- the Raft state machine (ctl_fsm.c) ---- */

struct raft_buffer;
struct raft_fsm;
/* A log entry of one event: u32 length, the event, zeros to a multiple of
 * 8 bytes; out->base from raft_malloc. */
int ctl_entry_wrap(const struct ctl_event *ev, struct raft_buffer *out);
/* The FSM applying entries to state and snapshotting it. */
void ctl_fsm_init(struct raft_fsm *fsm, struct ctl_state *state);

/* ---- the Raft transport (ctl_transport.c) ---- */

#include <raft/uv.h>

/* libraft's TCP transport dialling each peer id at its entry of the peers
 * list (+ the Raft port offset), host names resolved on the loop. Give
 * &t->outer to raft_uv_init; t must stay where it is. */
struct ctl_resolve;
struct ctl_transport {
	struct raft_uv_transport outer;
	struct raft_uv_transport tcp;
	struct uv_loop_s *loop;
	const struct ctl_peer *peers;
	unsigned n_peers;
	int port_offset;
	raft_uv_accept_cb accept_cb;
	struct ctl_resolve *resolving;
	bool closing, tcp_closed;
	raft_uv_transport_close_cb close_cb;
};
int ctl_transport_init(struct ctl_transport *t, struct uv_loop_s *loop, const struct ctl_peer *peers,
		       unsigned n_peers, int port_offset, const char *bind_address, char *err,
		       size_t errlen);
/* After the transport closed (raft_uv_close), frees the TCP transport. */
void ctl_transport_free(struct ctl_transport *t);

#endif
