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

/* ---- libraft's wire format, checked (ctl_raft_wire.c) ---- */

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#define CTL_RAFT_HANDSHAKE_PREAMBLE 24
#define CTL_RAFT_HANDSHAKE_MAX_ADDRESS 256
#define CTL_RAFT_MESSAGE_PREAMBLE 16

/* What the Raft port makes of a connection; the refusals are also the
 * reason label of rmqns_controller_raft_refused_total. */
enum ctl_raft_verdict {
	CTL_RAFT_OK,
	CTL_REFUSED_ADDRESS,   /* from an address no peer's host resolves to */
	CTL_REFUSED_ID,        /* claims an id that is not the peer's at that address */
	CTL_REFUSED_HANDSHAKE, /* not libraft's handshake */
	CTL_REFUSED_MALFORMED, /* a message libraft would misread */
	CTL_REFUSED_OVERSIZE,  /* a message past controllerRaftMaxMessageBytes */
	CTL_REFUSED_STALLED,   /* a handshake or message left unfinished too long */
	CTL_REFUSED_LIMIT,     /* more inbound connections than the peers need */
	CTL_REFUSED_TLS,       /* no TLS, or no certificate of the claimed peer */
	CTL_RAFT_VERDICTS
};
const char *ctl_raft_refusal_name(enum ctl_raft_verdict v);
/* The handshake's fixed part: the claimed id and the length of the
 * address that follows (at most CTL_RAFT_HANDSHAKE_MAX_ADDRESS). */
enum ctl_raft_verdict ctl_raft_handshake_check(const uint8_t pre[CTL_RAFT_HANDSHAKE_PREAMBLE],
					       uint64_t *id, size_t *address_len);
/* Our handshake into out; its length, 0 when it does not fit. */
size_t ctl_raft_handshake_encode(uint8_t *out, size_t cap, uint64_t id, const char *address);
/* A message's type and header length: a known type whose header has a
 * length libraft reads exactly, within max_message. */
enum ctl_raft_verdict ctl_raft_preamble_check(const uint8_t pre[CTL_RAFT_MESSAGE_PREAMBLE],
					      uint64_t max_message, uint64_t *type,
					      size_t *header_len);
/* A whole header: consistent with its length, a vote asked for the
 * sender itself, and the payload it announces (*payload) within
 * max_message together with the header. */
enum ctl_raft_verdict ctl_raft_header_check(uint64_t type, const uint8_t *h, size_t len,
					    uint64_t sender, uint64_t max_message,
					    uint64_t *payload);

/* ---- mutual TLS between the peers (ctl_peer_tls.c) ---- */

#include "rmqns/filestamp.h"

struct ssl_st;
struct ssl_ctx_st;
/* The peers' certificate, key and trust files and the context built from
 * them (TLS 1.2+, the other side's certificate required and verified). */
struct ctl_peer_tls {
	char *cert, *key, *trust;
	struct file_stamp stamps[3];
	struct ssl_ctx_st *ctx;
};
/* Loads the files; -1 with the reason in err. */
int ctl_peer_tls_open(struct ctl_peer_tls *p, const char *cert, const char *key, const char *trust,
		      char *err, size_t errlen);
void ctl_peer_tls_close(struct ctl_peer_tls *p);
/* Rebuilds the context when a file changed; one that does not load keeps
 * the old (logged). Connections open keep the context they began with. */
void ctl_peer_tls_watch(struct ctl_peer_tls *p);
/* A connection's SSL over memory BIOs, accepting or connecting; NULL when
 * out of memory. */
struct ssl_st *ctl_peer_tls_new(struct ctl_peer_tls *p, bool server);
/* The verified certificate of the other side names host in its
 * subjectAltName (an IP address entry or a DNS name). */
bool ctl_peer_tls_names(struct ssl_st *ssl, const char *host);

/* ---- the Raft transport (ctl_transport.c) ---- */

/* The Raft port and the dials to the peers, on the node's loop: libraft's
 * connection handshake read and checked here (the source address must be
 * the claimed peer's, and with peer TLS its certificate name it), each
 * inbound message checked before libraft sees it, through a socket pair
 * per connection (docs/architecture.md). Outbound: each peer id dialled
 * at its Raft endpoint (ctl_peer_raft_endpoint), host names resolved on
 * the loop. Give &t->outer to raft_uv_init; t must stay where it is. */
struct ctl_resolve;
struct ctl_dial;
struct ctl_link;
struct ctl_peer_addrs;
struct ctl_transport {
	struct raft_uv_transport outer;
	struct uv_loop_s *loop;
	const struct ctl_peer *peers;
	unsigned n_peers;
	unsigned self;
	uint64_t max_message;
	char fallback_bind[200];   /* host:port when the own entry is no local address */
	char self_address[300];    /* what our handshake says */
	uv_tcp_t listener;
	uv_timer_t sweep;
	bool listening, sweeping;
	struct sockaddr_storage bound; /* the listener's address; source of our dials */
	bool bound_specific;
	raft_uv_accept_cb accept_cb;
	struct ctl_resolve *resolving;
	struct ctl_dial *dialling;
	struct ctl_link *inbound;
	unsigned n_inbound;
	struct ctl_peer_addrs *addrs;
	unsigned peers_resolving;
	int64_t resolved_ms;       /* when the peers' names were last looked up */
	unsigned open_handles;
	bool closing;
	raft_uv_transport_close_cb close_cb;
	uint64_t refused[CTL_RAFT_VERDICTS];
	struct ctl_peer_tls tls;   /* tls.ctx NULL: no peer TLS */
	char *chunks;              /* what a read brings, and its plaintext under TLS */
	void (*hold)(void *arg, int64_t delta); /* the process's connection memory; NULL = none */
	void *hold_arg;
};
/* tls_paths: the certificate, key and trust files, or NULL for no peer TLS. */
int ctl_transport_init(struct ctl_transport *t, struct uv_loop_s *loop, const struct ctl_peer *peers,
		       unsigned n_peers, unsigned self, uint64_t max_message,
		       const char *bind_address, const char *const *tls_paths, char *err,
		       size_t errlen);
/* After the transport closed (raft_uv_close), frees what it holds. */
void ctl_transport_free(struct ctl_transport *t);
/* How peers are authenticated: "mutual-tls", or "address" (source address
 * and claimed id only). */
const char *ctl_transport_peer_auth(const struct ctl_transport *t);

#endif
