/* The Raft transport (ctl_internal.h): the Raft port and the dials to the
 * peers, on the node's loop, in place of libraft's TCP transport which
 * took frames from anyone.
 *
 * Inbound: the port listens on the address of this node's own peers
 * entry. A connection is kept only from an address one of the peers' host
 * names resolves to (names looked up again every CTL_RAFT_RESOLVE_MS and
 * when an unknown address connects, as peers move), and only when the id
 * its handshake claims is that of a peer at that address. libraft then
 * gets one end of a socket pair; the relay here writes into the other end
 * what the peer sends, a whole checked header at a time (ctl_raft_wire.c),
 * so that no length a peer announces is allocated unchecked, and closes
 * connections whose handshake or message stays unfinished.
 *
 * Outbound: each peer dialled by id at the address its peers entry gives
 * now, names resolved first (libraft keeps the addresses of its
 * configuration in the log; peers may be names whose address changes
 * across restarts); our handshake written here, the stream handed over.
 * libraft never reads its outbound connections, so it learns of a dead
 * peer only when a write fails; outbound connections give up on data
 * unacknowledged for CTL_RAFT_UNACKED_MS, so that a peer come back at
 * another address is dialled anew instead of written to for minutes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ctl_internal.h"
#include "rmqns/log.h"

#define CTL_RAFT_UNACKED_MS 5000u     /* above a heartbeat's round trip, below the kernel's give-up */
#define CTL_RAFT_STALL_MS 5000        /* an unfinished handshake or message closes after this... */
#define CTL_RAFT_STALL_MS_PER_MIB 1000 /* ...plus this per MiB it announced */
#define CTL_RAFT_SWEEP_MS 1000
#define CTL_RAFT_RESOLVE_MS 30000     /* the peers' names looked up again this often */
#define CTL_RAFT_MISS_RESOLVE_MS 1000 /* and on an unknown address, at most this often */
#define CTL_RAFT_PEER_ADDRS 8         /* addresses kept per peer name */
#define CTL_RAFT_INBOUND_BASE 16      /* inbound connections: this + 4 per peer */
#define CTL_RAFT_READ_CHUNK 65536
#define CTL_RAFT_QUEUE_MAX (256u * 1024u) /* bytes queued towards libraft before reading pauses */
#define CTL_RAFT_SMALL_HEAD 512       /* handshakes and the headers of all but big batches */

struct ctl_peer_addrs {
	struct ctl_transport *t;
	uv_getaddrinfo_t gai;
	bool resolving;
	unsigned n;
	struct sockaddr_storage a[CTL_RAFT_PEER_ADDRS];
};

struct ctl_resolve {
	uv_getaddrinfo_t gai;
	struct ctl_transport *t;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	raft_id id;
	struct ctl_resolve *prev, *next;
};

/* One dial on behalf of libraft's request: connect, write our handshake,
 * hand the stream over. The handle is libraft's from then on, so it comes
 * from raft_malloc (libraft frees it). */
struct ctl_dial {
	struct ctl_transport *t;
	struct ctl_dial *prev, *next;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	uv_tcp_t *tcp;
	uv_connect_t connect;
	uv_write_t write;
	int status; /* what cb gets once the handle closed */
	size_t hs_len;
	uint8_t hs[CTL_RAFT_HANDSHAKE_PREAMBLE + CTL_RAFT_HANDSHAKE_MAX_ADDRESS];
};

/* IN_*: a connection a peer made; OUT_TLS: one we made with peer TLS
 * (without it, struct ctl_dial), in its TLS handshake; OUT_RELAY: after. */
enum link_state { IN_PARKED, IN_TLS, IN_HANDSHAKE, IN_RELAY, OUT_TLS, OUT_RELAY };

/* A connection between a peer and libraft: the TCP side, TLS when peer TLS
 * is on, and our end of the socket pair whose other end libraft has. */
struct ctl_link {
	struct ctl_transport *t;
	struct ctl_link *prev, *next;
	uv_tcp_t net;
	uv_pipe_t to_raft; /* our end of the socket pair */
	unsigned open_handles;
	bool pipe_open, paused, closing, outbound;
	enum link_state state;
	struct ssl_st *ssl;
	/* outbound: libraft's request until the stream is handed over */
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	int status;
	uv_connect_t connect;
	struct sockaddr_storage from;
	char from_text[INET6_ADDRSTRLEN + 8];
	uint64_t id;
	/* the handshake, then each message's preamble and header */
	uint8_t *head;
	size_t head_len, head_want;
	uint64_t type;
	uint64_t payload_left;
	uint64_t announced;
	int64_t pending_since; /* ms; 0 = nothing unfinished */
	/* memory counted in the process's connection memory (link_sync_held) */
	size_t queued;        /* bytes written and not yet taken, either way */
	uint64_t in_raft;     /* of the unfinished message, bytes libraft has taken */
	uint32_t message;     /* which message of the link is unfinished */
	int64_t held_acct;    /* what the count has for this link */
	uint8_t small[CTL_RAFT_SMALL_HEAD];
};

/* Bytes on their way to libraft or to the peer. */
struct ctl_forward {
	uv_write_t w;
	struct ctl_link *in;
	bool to_net;
	uint32_t message; /* ctl_link.message when queued */
	size_t len;
	uint8_t data[];
};

/* The transport's lists are doubly linked through prev and next. */
#define LIST_PUSH(head, node)                                                                      \
	do {                                                                                       \
		(node)->next = (head);                                                             \
		if (head)                                                                          \
			(head)->prev = (node);                                                     \
		(head) = (node);                                                                   \
	} while (0)
#define LIST_REMOVE(head, node)                                                                    \
	do {                                                                                       \
		if ((node)->prev)                                                                  \
			(node)->prev->next = (node)->next;                                         \
		else                                                                               \
			(head) = (node)->next;                                                     \
		if ((node)->next)                                                                  \
			(node)->next->prev = (node)->prev;                                         \
	} while (0)

static struct ctl_transport *of(struct raft_uv_transport *outer)
{
	return outer->impl;
}

static int64_t now_ms(const struct ctl_transport *t)
{
	return (int64_t)uv_now(t->loop);
}

static void tr_maybe_closed(struct ctl_transport *t)
{
	if (t->closing && !t->open_handles && !t->resolving && !t->peers_resolving && t->close_cb) {
		raft_uv_transport_close_cb cb = t->close_cb;
		t->close_cb = NULL;
		cb(&t->outer);
	}
}

/* ---- the peers' addresses ---- */

/* An IPv4 address seen through an IPv6 socket as ::ffff:a.b.c.d. */
static void unmap_v4(struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6->sin6_port };
	memcpy(&s4.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
	memset(ss, 0, sizeof *ss);
	memcpy(ss, &s4, sizeof s4);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			      &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
	return a->ss_family == AF_INET6 &&
	       memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

static bool peer_at(const struct ctl_transport *t, unsigned i, const struct sockaddr_storage *from)
{
	for (unsigned k = 0; k < t->addrs[i].n; k++)
		if (same_host(&t->addrs[i].a[k], from))
			return true;
	return false;
}

static bool any_peer_at(const struct ctl_transport *t, const struct sockaddr_storage *from)
{
	for (unsigned i = 0; i < t->n_peers; i++)
		if (peer_at(t, i, from))
			return true;
	return false;
}

static void inbound_start_handshake(struct ctl_link *in);
static void inbound_refuse(struct ctl_link *in, enum ctl_raft_verdict why, const char *detail);

/* Connections parked on a lookup: kept or refused now that it is done. */
static void recheck_parked(struct ctl_transport *t)
{
	struct ctl_link *next;

	for (struct ctl_link *in = t->inbound; in; in = next) {
		next = in->next;
		if (in->state != IN_PARKED)
			continue;
		if (any_peer_at(t, &in->from))
			inbound_start_handshake(in);
		else
			inbound_refuse(in, CTL_REFUSED_ADDRESS, "no peer's host resolves to it");
	}
}

static void on_peer_resolved(uv_getaddrinfo_t *gai, int status, struct addrinfo *res)
{
	struct ctl_peer_addrs *a = gai->data;
	struct ctl_transport *t = a->t;

	a->resolving = false;
	t->peers_resolving--;
	if (status == 0) {
		/* a name that does not resolve now keeps what it resolved to */
		a->n = 0;
		for (struct addrinfo *ai = res; ai && a->n < CTL_RAFT_PEER_ADDRS; ai = ai->ai_next) {
			if (ai->ai_addrlen > sizeof a->a[0])
				continue;
			memset(&a->a[a->n], 0, sizeof a->a[0]);
			memcpy(&a->a[a->n], ai->ai_addr, ai->ai_addrlen);
			unmap_v4(&a->a[a->n]);
			a->n++;
		}
	} else if (status != UV_ECANCELED) {
		log_debug("controller: raft peer %s does not resolve: %s",
			  t->peers[a - t->addrs].host, uv_strerror(status));
	}
	if (res)
		uv_freeaddrinfo(res);
	t->resolved_ms = now_ms(t);
	if (t->closing)
		tr_maybe_closed(t);
	else if (!t->peers_resolving)
		recheck_parked(t);
}

static void resolve_peers(struct ctl_transport *t)
{
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };

	for (unsigned i = 0; i < t->n_peers && !t->closing; i++) {
		struct ctl_peer_addrs *a = &t->addrs[i];
		if (a->resolving)
			continue;
		a->gai.data = a;
		if (uv_getaddrinfo(t->loop, &a->gai, on_peer_resolved, t->peers[i].host, NULL,
				   &hints) == 0) {
			a->resolving = true;
			t->peers_resolving++;
		}
	}
	t->resolved_ms = now_ms(t);
}

/* ---- inbound connections ---- */

/* Brings the process's count of connection memory (connectionMemoryBudget)
 * up to date with what l holds: a big header being gathered, the bytes
 * queued towards libraft or the peer, and what libraft has taken of the
 * unfinished message (it keeps the message until its last byte). Called
 * at the end of each event of the link; a closing link holds nothing. */
static void link_sync_held(struct ctl_link *l)
{
	struct ctl_transport *t = l->t;
	int64_t held = 0;

	if (!l->closing)
		held = (int64_t)((l->head != l->small ? l->head_want : 0) + l->queued + l->in_raft);
	if (held != l->held_acct && t->hold) {
		t->hold(t->hold_arg, held - l->held_acct);
		l->held_acct = held;
	}
}

static void on_inbound_closed(uv_handle_t *h)
{
	struct ctl_link *in = h->data;
	struct ctl_transport *t = in->t;

	t->open_handles--;
	if (--in->open_handles)
		return;
	if (in->head != in->small)
		free(in->head);
	if (in->req)
		in->cb(in->req, NULL, t->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
	SSL_free(in->ssl);
	free(in);
	tr_maybe_closed(t);
}

static void inbound_close(struct ctl_link *in)
{
	struct ctl_transport *t = in->t;

	if (in->closing)
		return;
	in->closing = true;
	link_sync_held(in);
	LIST_REMOVE(t->inbound, in);
	if (!in->outbound)
		t->n_inbound--;
	uv_close((uv_handle_t *)&in->net, on_inbound_closed);
	if (in->pipe_open)
		uv_close((uv_handle_t *)&in->to_raft, on_inbound_closed);
}

static void inbound_refuse(struct ctl_link *in, enum ctl_raft_verdict why, const char *detail)
{
	if (why < CTL_RAFT_VERDICTS) {
		in->t->refused[why]++;
		log_warn_limited("controller: Raft connection %s %s refused (%s): %s",
				 in->outbound ? "to" : "from", in->from_text, ctl_raft_refusal_name(why),
				 detail);
	}
	inbound_close(in);
}

static void on_inbound_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_raft_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_raft_side_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* Every read is consumed before the next on this loop: one buffer serves
 * the transport's connections (each node has its own: groups of nodes
 * share a process in tests). */
static void alloc_chunk(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ctl_link *l = h->data;

	(void)suggested;
	*buf = uv_buf_init(l->t->chunks, CTL_RAFT_READ_CHUNK);
}

/* The stream a write of ours goes to: the peer (TCP) or libraft (the pair). */
static uv_stream_t *write_target(struct ctl_link *l, bool to_net)
{
	return to_net ? (uv_stream_t *)&l->net : (uv_stream_t *)&l->to_raft;
}

/* Reading from where the bytes for the target come from: stopped while
 * too much waits, started again below half of that. */
static void pace_source(struct ctl_link *l, bool to_net, bool run)
{
	uv_stream_t *src = write_target(l, !to_net);

	l->paused = !run;
	if (!run)
		uv_read_stop(src);
	else
		uv_read_start(src, alloc_chunk, !to_net    ? on_inbound_read
						: l->outbound ? on_raft_out_read
							      : on_raft_side_read);
}

static void on_written(uv_write_t *w, int status)
{
	struct ctl_forward *f = w->data;
	struct ctl_link *l = f->in;
	bool to_net = f->to_net;

	l->queued -= f->len;
	if (status >= 0 && !to_net && f->message == l->message && l->announced)
		l->in_raft += f->len;
	free(f);
	if (l->closing)
		return;
	if (status < 0)
		inbound_close(l);
	else if (l->paused && write_target(l, to_net)->write_queue_size < CTL_RAFT_QUEUE_MAX / 2)
		pace_source(l, to_net, true);
	link_sync_held(l);
}

/* Queues len bytes for the peer or for libraft: a copy of data, or (data
 * NULL) the records TLS has ready. */
static int write_out(struct ctl_link *l, bool to_net, const uint8_t *data, size_t len)
{
	struct ctl_forward *f = malloc(sizeof *f + len);
	uv_stream_t *dst = write_target(l, to_net);

	if (!f)
		return -1;
	f->in = l;
	f->to_net = to_net;
	f->message = l->message;
	if (data)
		memcpy(f->data, data, len);
	else if (BIO_read(SSL_get_wbio(l->ssl), f->data, (int)len) != (int)len)
		len = 0;
	f->len = len;
	f->w.data = f;
	uv_buf_t b = uv_buf_init((char *)f->data, (unsigned)len);
	if (!len || uv_write(&f->w, dst, &b, 1, on_written) != 0) {
		free(f);
		return -1;
	}
	l->queued += len;
	if (!l->paused && dst->write_queue_size > CTL_RAFT_QUEUE_MAX)
		pace_source(l, to_net, false);
	return 0;
}

static int forward(struct ctl_link *in, const uint8_t *data, size_t len)
{
	return write_out(in, false, data, len);
}

/* libraft never writes to an inbound connection: a read on our end of the
 * pair is its end closing. */
static void on_raft_side_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	(void)buf;
	if (nread < 0)
		inbound_close(s->data);
}

static void close_and_free(uv_handle_t *h)
{
	raft_free(h);
}

/* A socket pair: our end read with on_read, libraft's end returned (NULL
 * on failure). */
static uv_pipe_t *open_pair(struct ctl_link *in, uv_read_cb on_read)
{
	struct ctl_transport *t = in->t;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return NULL;
	uv_pipe_t *theirs = raft_malloc(sizeof *theirs);
	if (!theirs || uv_pipe_init(t->loop, &in->to_raft, 0) != 0) {
		raft_free(theirs);
		close(sv[0]);
		close(sv[1]);
		return NULL;
	}
	in->to_raft.data = in;
	in->pipe_open = true;
	in->open_handles++;
	t->open_handles++;
	if (uv_pipe_open(&in->to_raft, sv[0]) != 0) {
		close(sv[0]);
		close(sv[1]);
		raft_free(theirs);
		return NULL;
	}
	/* unread, our end would miss libraft's bytes and its close */
	if (uv_read_start((uv_stream_t *)&in->to_raft, alloc_chunk, on_read) != 0 ||
	    uv_pipe_init(t->loop, theirs, 0) != 0) {
		close(sv[1]);
		raft_free(theirs);
		return NULL;
	}
	if (uv_pipe_open(theirs, sv[1]) != 0) {
		close(sv[1]);
		uv_close((uv_handle_t *)theirs, close_and_free);
		return NULL;
	}
	return theirs;
}

/* The handshake passed: libraft gets its end of a socket pair. */
static int inbound_hand_over(struct ctl_link *in)
{
	struct ctl_transport *t = in->t;
	char address[300];
	uv_pipe_t *theirs;

	if (ctl_peer_raft_address(&t->peers[in->id - 1], address, sizeof address) ||
	    !(theirs = open_pair(in, on_raft_side_read)))
		return -1;
	/* the address libraft keeps is the one our configuration has, not the claim */
	t->accept_cb(&t->outer, in->id, address, (uv_stream_t *)theirs);
	return 0;
}

/* A peer keeps one connection to us: an older one of the same id is a
 * peer that went away without closing it, which would be held for ever
 * (nothing is written on inbound connections to find out). */
static void replace_older(struct ctl_link *in)
{
	struct ctl_link *next;

	for (struct ctl_link *o = in->t->inbound; o; o = next) {
		next = o->next;
		if (o != in && o->state == IN_RELAY && o->id == in->id)
			inbound_close(o);
	}
}

static enum ctl_raft_verdict handshake_step(struct ctl_link *in, const char **detail)
{
	struct ctl_transport *t = in->t;
	size_t alen;

	if (in->head_len == CTL_RAFT_HANDSHAKE_PREAMBLE) {
		*detail = "not libraft's handshake";
		if (ctl_raft_handshake_check(in->head, &in->id, &alen) != CTL_RAFT_OK)
			return CTL_REFUSED_HANDSHAKE;
		in->head_want = CTL_RAFT_HANDSHAKE_PREAMBLE + alen;
		return CTL_RAFT_OK;
	}
	if (!memchr(in->head + CTL_RAFT_HANDSHAKE_PREAMBLE, 0, in->head_len - CTL_RAFT_HANDSHAKE_PREAMBLE)) {
		*detail = "the handshake's address has no end";
		return CTL_REFUSED_HANDSHAKE;
	}
	*detail = "the claimed id is not the peer's at that address";
	if (in->id < 1 || in->id > t->n_peers || in->id == t->self + 1u ||
	    !peer_at(t, (unsigned)in->id - 1, &in->from))
		return CTL_REFUSED_ID;
	*detail = "the certificate does not name the claimed peer's host";
	if (in->ssl && !ctl_peer_tls_names(in->ssl, t->peers[in->id - 1].host))
		return CTL_REFUSED_TLS;
	if (t->closing || inbound_hand_over(in) != 0)
		return CTL_RAFT_VERDICTS;
	log_debug("controller: Raft connection from %s is peer %s", in->from_text,
		  t->peers[in->id - 1].id);
	replace_older(in);
	in->state = IN_RELAY;
	in->head_len = 0;
	in->head_want = CTL_RAFT_MESSAGE_PREAMBLE;
	in->pending_since = 0;
	return CTL_RAFT_OK;
}

/* A big batch's header, once forwarded, is not kept for the next message. */
static void drop_big_head(struct ctl_link *in)
{
	if (in->head != in->small) {
		free(in->head);
		in->head = in->small;
	}
}

static void message_done(struct ctl_link *in)
{
	in->pending_since = 0;
	in->announced = 0;
	in->in_raft = 0; /* libraft hands the whole message on */
	in->message++;
	drop_big_head(in);
}

static enum ctl_raft_verdict message_step(struct ctl_link *in, const char **detail)
{
	struct ctl_transport *t = in->t;
	enum ctl_raft_verdict v;
	size_t header_len;

	if (in->head_len == CTL_RAFT_MESSAGE_PREAMBLE) {
		*detail = "a message past controllerRaftMaxMessageBytes or of an unknown shape";
		if ((v = ctl_raft_preamble_check(in->head, t->max_message, &in->type, &header_len)))
			return v;
		in->head_want = CTL_RAFT_MESSAGE_PREAMBLE + header_len;
		in->announced = in->head_want;
		if (in->head_want > sizeof in->small) {
			uint8_t *big = malloc(in->head_want);
			if (!big)
				return CTL_RAFT_VERDICTS;
			memcpy(big, in->small, in->head_len);
			in->head = big;
		}
		return CTL_RAFT_OK;
	}
	*detail = "a message header libraft would misread, or past controllerRaftMaxMessageBytes";
	v = ctl_raft_header_check(in->type, in->head + CTL_RAFT_MESSAGE_PREAMBLE,
				  in->head_len - CTL_RAFT_MESSAGE_PREAMBLE, in->id, t->max_message,
				  &in->payload_left);
	if (v)
		return v;
	if (forward(in, in->head, in->head_len) != 0)
		return CTL_RAFT_VERDICTS;
	in->announced += in->payload_left;
	in->head_len = 0;
	in->head_want = CTL_RAFT_MESSAGE_PREAMBLE;
	if (!in->payload_left)
		message_done(in);
	else
		drop_big_head(in);
	return CTL_RAFT_OK;
}

/* What a peer sent: the handshake, headers gathered and checked, payloads
 * passed through. CTL_RAFT_VERDICTS: close without a refusal. */
static enum ctl_raft_verdict inbound_consume(struct ctl_link *in, const uint8_t *p, size_t len,
					     const char **detail)
{
	while (len > 0 && !in->closing) {
		if (in->state == IN_RELAY && in->payload_left) {
			size_t n = len < in->payload_left ? len : (size_t)in->payload_left;
			if (forward(in, p, n) != 0)
				return CTL_RAFT_VERDICTS;
			p += n;
			len -= n;
			if (!(in->payload_left -= n))
				message_done(in);
			continue;
		}
		if (!in->pending_since)
			in->pending_since = now_ms(in->t);
		size_t n = in->head_want - in->head_len;
		if (n > len)
			n = len;
		memcpy(in->head + in->head_len, p, n);
		in->head_len += n;
		p += n;
		len -= n;
		if (in->head_len < in->head_want)
			continue;
		enum ctl_raft_verdict v = in->state == IN_HANDSHAKE ? handshake_step(in, detail)
								    : message_step(in, detail);
		if (v)
			return v;
	}
	return CTL_RAFT_OK;
}

/* ---- TLS between the TCP side and the pair ---- */

/* Sends the records TLS has ready. */
static int tls_flush(struct ctl_link *l)
{
	BIO *out = SSL_get_wbio(l->ssl);
	size_t pending;

	while ((pending = BIO_ctrl_pending(out)) > 0)
		if (write_out(l, true, NULL, pending) != 0)
			return -1;
	return 0;
}

/* libraft's bytes on an outbound connection, into TLS records. */
static void on_raft_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_link *l = s->data;

	if (nread < 0) {
		inbound_close(l);
		return;
	}
	if (nread > 0 && (SSL_write(l->ssl, buf->base, (int)nread) <= 0 || tls_flush(l) != 0))
		inbound_close(l);
	link_sync_held(l);
}

/* Our TLS handshake with the peer we dialled is done and its certificate
 * names it: our libraft handshake, then libraft gets its end of a pair. */
static enum ctl_raft_verdict outbound_hand_over(struct ctl_link *l, const char **detail)
{
	struct ctl_transport *t = l->t;
	uint8_t hs[CTL_RAFT_HANDSHAKE_PREAMBLE + CTL_RAFT_HANDSHAKE_MAX_ADDRESS];
	size_t n = ctl_raft_handshake_encode(hs, sizeof hs, t->self + 1u, t->self_address);
	uv_pipe_t *theirs;

	*detail = "the certificate does not name the peer's host";
	if (!ctl_peer_tls_names(l->ssl, t->peers[l->id - 1].host))
		return CTL_REFUSED_TLS;
	if (!n || SSL_write(l->ssl, hs, (int)n) <= 0 || tls_flush(l) != 0 ||
	    !(theirs = open_pair(l, on_raft_out_read)))
		return CTL_RAFT_VERDICTS;
	l->state = OUT_RELAY;
	l->pending_since = 0;
	struct raft_uv_connect *req = l->req;
	l->req = NULL;
	l->cb(req, (uv_stream_t *)theirs, 0);
	return CTL_RAFT_OK;
}

/* Records from the peer: the handshake driven, then the plaintext to the
 * checks (inbound) or dropped (a peer sends nothing on our dial). */
static enum ctl_raft_verdict tls_feed(struct ctl_link *l, const uint8_t *p, size_t len,
				      const char **detail)
{
	enum ctl_raft_verdict v = CTL_RAFT_OK;
	char *plain = l->t->chunks + CTL_RAFT_READ_CHUNK; /* the records were read into the first half */
	int n = 0;

	if (len && BIO_write(SSL_get_rbio(l->ssl), p, (int)len) != (int)len)
		return CTL_RAFT_VERDICTS;
	if (l->state == IN_TLS || l->state == OUT_TLS) {
		n = SSL_do_handshake(l->ssl);
		if (tls_flush(l) != 0)
			return CTL_RAFT_VERDICTS;
		if (n != 1) {
			ERR_clear_error();
			*detail = "no TLS handshake with a certificate the trust file verifies";
			return SSL_get_error(l->ssl, n) == SSL_ERROR_WANT_READ ? CTL_RAFT_OK : CTL_REFUSED_TLS;
		}
		if (l->state == OUT_TLS) {
			v = outbound_hand_over(l, detail);
		} else {
			l->state = IN_HANDSHAKE;
			l->pending_since = now_ms(l->t);
		}
	}
	while (v == CTL_RAFT_OK && !l->closing && (n = SSL_read(l->ssl, plain, CTL_RAFT_READ_CHUNK)) > 0)
		if (!l->outbound)
			v = inbound_consume(l, (const uint8_t *)plain, (size_t)n, detail);
	if (v == CTL_RAFT_OK && !l->closing && n <= 0 && SSL_get_error(l->ssl, n) != SSL_ERROR_WANT_READ) {
		ERR_clear_error();
		*detail = "TLS closed or broken";
		v = CTL_RAFT_VERDICTS;
	}
	if (v == CTL_RAFT_OK && tls_flush(l) != 0)
		v = CTL_RAFT_VERDICTS;
	return v;
}

static void on_inbound_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_link *in = s->data;
	const char *detail = "";

	if (nread < 0) {
		inbound_close(in);
		return;
	}
	const uint8_t *p = (const uint8_t *)buf->base;
	enum ctl_raft_verdict v = in->ssl ? tls_feed(in, p, (size_t)nread, &detail)
					  : inbound_consume(in, p, (size_t)nread, &detail);
	if (v)
		inbound_refuse(in, v, detail);
	link_sync_held(in);
}

static void inbound_start_handshake(struct ctl_link *in)
{
	if (in->t->tls.ctx && !(in->ssl = ctl_peer_tls_new(&in->t->tls, true))) {
		inbound_close(in);
		return;
	}
	in->state = in->ssl ? IN_TLS : IN_HANDSHAKE;
	in->head_want = CTL_RAFT_HANDSHAKE_PREAMBLE;
	in->pending_since = now_ms(in->t);
	if (uv_read_start((uv_stream_t *)&in->net, alloc_chunk, on_inbound_read) != 0)
		inbound_close(in);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct ctl_transport *t = server->data;
	struct ctl_link *in;

	if (status < 0 || t->closing || !(in = calloc(1, sizeof *in)))
		return;
	in->t = t;
	in->head = in->small;
	uv_tcp_init(t->loop, &in->net);
	in->net.data = in;
	in->open_handles = 1;
	t->open_handles++;
	LIST_PUSH(t->inbound, in);
	t->n_inbound++;
	int len = sizeof in->from;
	if (uv_accept(server, (uv_stream_t *)&in->net) != 0 ||
	    uv_tcp_getpeername(&in->net, (struct sockaddr *)&in->from, &len) != 0) {
		inbound_close(in);
		return;
	}
	unmap_v4(&in->from);
	uv_tcp_nodelay(&in->net, 1);
	const void *ip = in->from.ss_family == AF_INET
				 ? (const void *)&((struct sockaddr_in *)&in->from)->sin_addr
				 : (const void *)&((struct sockaddr_in6 *)&in->from)->sin6_addr;
	if (!inet_ntop(in->from.ss_family, ip, in->from_text, sizeof in->from_text))
		snprintf(in->from_text, sizeof in->from_text, "?");
	if (t->n_inbound > CTL_RAFT_INBOUND_BASE + 4 * t->n_peers) {
		inbound_refuse(in, CTL_REFUSED_LIMIT, "more Raft connections than the peers need");
	} else if (any_peer_at(t, &in->from)) {
		inbound_start_handshake(in);
	} else if (t->peers_resolving || now_ms(t) - t->resolved_ms >= CTL_RAFT_MISS_RESOLVE_MS) {
		/* a peer may have moved: look again before refusing */
		in->state = IN_PARKED;
		in->pending_since = now_ms(t);
		if (!t->peers_resolving)
			resolve_peers(t);
		if (!t->peers_resolving && in->state == IN_PARKED && !in->closing)
			inbound_refuse(in, CTL_REFUSED_ADDRESS, "no peer's host resolves to it");
	} else {
		inbound_refuse(in, CTL_REFUSED_ADDRESS, "no peer's host resolves to it");
	}
}

static void on_sweep(uv_timer_t *timer)
{
	struct ctl_transport *t = timer->data;
	int64_t now = now_ms(t);
	struct ctl_link *next;

	for (struct ctl_link *in = t->inbound; in; in = next) {
		next = in->next;
		int64_t allowed = CTL_RAFT_STALL_MS +
				  (int64_t)(in->announced >> 20) * CTL_RAFT_STALL_MS_PER_MIB;
		if (in->pending_since && now - in->pending_since > allowed)
			inbound_refuse(in, CTL_REFUSED_STALLED,
				       in->state == IN_RELAY ? "a message left unfinished"
							     : "the handshake left unfinished");
	}
	if (!t->peers_resolving && now - t->resolved_ms >= CTL_RAFT_RESOLVE_MS)
		resolve_peers(t);
	if (t->tls.ctx)
		ctl_peer_tls_watch(&t->tls);
}

/* ---- the listener ---- */

static int listen_fd(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 || bind(fd, sa, len) != 0 ||
	    listen(fd, 128) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* The own entry's address when it is one of this host's; otherwise (a
 * name not resolvable yet, an address NAT hides) the bind address. */
static int open_listener(struct ctl_transport *t, char *where, size_t wherelen)
{
	const char *host;
	int port, fd = -EADDRNOTAVAIL;
	char service[16];
	struct addrinfo *res = NULL;
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };

	if (ctl_peer_raft_endpoint(&t->peers[t->self], &host, &port))
		return -EINVAL;
	snprintf(service, sizeof service, "%d", port);
	if (getaddrinfo(host, service, &hints, &res) == 0) {
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			if ((fd = listen_fd(ai->ai_addr, ai->ai_addrlen)) >= 0) {
				memcpy(&t->bound, ai->ai_addr, ai->ai_addrlen);
				t->bound_specific = true;
			}
		}
		freeaddrinfo(res);
	}
	snprintf(where, wherelen, "%s:%d", host, port);
	if (fd >= 0 || fd == -EADDRINUSE)
		return fd;
	char fallback[sizeof t->fallback_bind];
	snprintf(fallback, sizeof fallback, "%s", t->fallback_bind);
	char *colon = strrchr(fallback, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	struct sockaddr_storage ss;
	int fport = atoi(colon + 1);
	if (uv_ip4_addr(fallback, fport, (struct sockaddr_in *)&ss) != 0 &&
	    uv_ip6_addr(fallback, fport, (struct sockaddr_in6 *)&ss) != 0)
		return -EINVAL;
	log_warn("controller: the Raft port cannot listen on %s (this node's controllerDLegerPeers "
		 "entry); listening on %s instead", where, t->fallback_bind);
	snprintf(where, wherelen, "%s", t->fallback_bind);
	return listen_fd((struct sockaddr *)&ss, ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
									: sizeof(struct sockaddr_in6));
}

static int tr_init(struct raft_uv_transport *outer, raft_id id, const char *address)
{
	struct ctl_transport *t = of(outer);

	(void)id;
	snprintf(t->self_address, sizeof t->self_address, "%s", address);
	return 0;
}

static int tr_listen(struct raft_uv_transport *outer, raft_uv_accept_cb cb)
{
	struct ctl_transport *t = of(outer);
	char where[300];
	int fd = open_listener(t, where, sizeof where);

	if (fd < 0) {
		snprintf(outer->errmsg, sizeof outer->errmsg, "listen on the Raft port %.150s: %s", where,
			 strerror(-fd));
		return RAFT_IOERR;
	}
	t->accept_cb = cb;
	uv_tcp_init(t->loop, &t->listener);
	t->listener.data = t;
	t->listening = true;
	t->open_handles++;
	int rc = uv_tcp_open(&t->listener, fd);
	if (rc != 0)
		close(fd); /* the handle did not take it */
	if (rc != 0 || uv_listen((uv_stream_t *)&t->listener, 128, on_connection) != 0) {
		snprintf(outer->errmsg, sizeof outer->errmsg, "listen on the Raft port %.150s", where);
		return RAFT_IOERR;
	}
	uv_timer_init(t->loop, &t->sweep);
	t->sweep.data = t;
	t->sweeping = true;
	t->open_handles++;
	uv_timer_start(&t->sweep, on_sweep, CTL_RAFT_SWEEP_MS, CTL_RAFT_SWEEP_MS);
	resolve_peers(t);
	if (t->tls.ctx)
		log_info("controller: Raft port on %s; peers authenticate by mutual TLS (certificates "
			 "verified against %s, each naming its peer's host)", where, t->tls.trust);
	else
		log_warn("controller: Raft port on %s; peers are recognised by source address and "
			 "claimed id only: anyone able to send from a peer's address can act as that "
			 "peer (the controller plane is unauthenticated; set controllerPeerTlsCertPath, "
			 "controllerPeerTlsKeyPath and controllerPeerTlsTrustCertPath for mutual TLS)",
			 where);
	return 0;
}

/* ---- outbound ---- */

/* The source address of our dials: the listener's, which is what the
 * peers accept. */
static int bind_source(struct ctl_transport *t, uv_tcp_t *tcp, const struct sockaddr *addr)
{
	struct sockaddr_storage src = t->bound;

	if (!t->bound_specific || src.ss_family != addr->sa_family)
		return 0;
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	return uv_tcp_bind(tcp, (struct sockaddr *)&src, 0);
}

static void set_user_timeout(uv_tcp_t *tcp)
{
	uv_os_fd_t fd;
	unsigned ms = CTL_RAFT_UNACKED_MS;

	uv_tcp_nodelay(tcp, 1); /* heartbeats and votes are small and wanted now */
	/* without the bound the connection still works, with the kernel's */
	if (uv_fileno((uv_handle_t *)tcp, &fd) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0)
		log_warn("controller: cannot bound unacknowledged Raft data to %u ms", ms);
}

static void unlink_dial(struct ctl_dial *d)
{
	LIST_REMOVE(d->t->dialling, d);
}

static void on_dial_closed(uv_handle_t *h)
{
	struct ctl_dial *d = h->data;
	struct ctl_transport *t = d->t;

	unlink_dial(d);
	d->cb(d->req, NULL, d->status);
	raft_free(d->tcp);
	free(d);
	t->open_handles--;
	tr_maybe_closed(t);
}

static void dial_fail(struct ctl_dial *d, int status)
{
	d->status = status;
	if (!uv_is_closing((uv_handle_t *)d->tcp))
		uv_close((uv_handle_t *)d->tcp, on_dial_closed);
}

/* A step of the dial came back: false when the dial is over (closing, or
 * failed now). */
static bool dial_goes_on(struct ctl_dial *d, int status)
{
	if (uv_is_closing((uv_handle_t *)d->tcp))
		return false;
	if (status < 0)
		dial_fail(d, RAFT_NOCONNECTION);
	return status >= 0;
}

static void on_dial_written(uv_write_t *w, int status)
{
	struct ctl_dial *d = w->data;

	if (!dial_goes_on(d, status))
		return;
	unlink_dial(d);
	d->t->open_handles--; /* libraft's now */
	d->tcp->data = NULL;
	d->cb(d->req, (uv_stream_t *)d->tcp, 0);
	free(d);
}

static void on_dial_connected(uv_connect_t *c, int status)
{
	struct ctl_dial *d = c->data;

	if (!dial_goes_on(d, status))
		return;
	set_user_timeout(d->tcp);
	uv_buf_t b = uv_buf_init((char *)d->hs, (unsigned)d->hs_len);
	d->write.data = d;
	if (uv_write(&d->write, (uv_stream_t *)d->tcp, &b, 1, on_dial_written) != 0)
		dial_fail(d, RAFT_NOCONNECTION);
}

static void on_link_connected(uv_connect_t *c, int status)
{
	struct ctl_link *l = c->data;
	const char *detail = "";

	if (l->closing)
		return;
	if (status < 0 || !(l->ssl = ctl_peer_tls_new(&l->t->tls, false))) {
		inbound_close(l);
		return;
	}
	set_user_timeout(&l->net);
	enum ctl_raft_verdict v = tls_feed(l, NULL, 0, &detail);
	if (!v && uv_read_start((uv_stream_t *)&l->net, alloc_chunk, on_inbound_read) != 0)
		v = CTL_RAFT_VERDICTS;
	if (v)
		inbound_refuse(l, v, detail);
	link_sync_held(l);
}

/* With peer TLS: a link that becomes libraft's stream once the peer
 * proved to be the peer we dialled. */
static void dial_tls(struct ctl_transport *t, struct raft_uv_connect *req, raft_uv_connect_cb cb,
		     raft_id id, const struct sockaddr *addr)
{
	struct ctl_link *l = calloc(1, sizeof *l);

	if (!l) {
		cb(req, NULL, RAFT_NOMEM);
		return;
	}
	*l = (struct ctl_link){ .t = t, .outbound = true, .state = OUT_TLS, .req = req, .cb = cb,
				.id = id, .open_handles = 1, .pending_since = now_ms(t) };
	l->head = l->small;
	snprintf(l->from_text, sizeof l->from_text, "%s", t->peers[id - 1].host);
	uv_tcp_init(t->loop, &l->net);
	l->net.data = l;
	l->connect.data = l;
	t->open_handles++;
	LIST_PUSH(t->inbound, l);
	if (bind_source(t, &l->net, addr) != 0 ||
	    uv_tcp_connect(&l->connect, &l->net, addr, on_link_connected) != 0)
		inbound_close(l);
}

/* Dials addr for libraft's req; cb comes in every case. */
static void dial(struct ctl_transport *t, struct raft_uv_connect *req, raft_uv_connect_cb cb,
		 raft_id id, const struct sockaddr *addr)
{
	if (t->tls.ctx) {
		dial_tls(t, req, cb, id, addr);
		return;
	}
	struct ctl_dial *d = calloc(1, sizeof *d);
	uv_tcp_t *tcp = raft_malloc(sizeof *tcp);

	if (!d || !tcp) {
		free(d);
		raft_free(tcp);
		cb(req, NULL, RAFT_NOMEM);
		return;
	}
	*d = (struct ctl_dial){ .t = t, .req = req, .cb = cb, .tcp = tcp };
	d->hs_len = ctl_raft_handshake_encode(d->hs, sizeof d->hs, t->self + 1u, t->self_address);
	uv_tcp_init(t->loop, tcp);
	tcp->data = d;
	t->open_handles++;
	LIST_PUSH(t->dialling, d);
	d->connect.data = d;
	if (bind_source(t, tcp, addr) != 0 || !d->hs_len ||
	    uv_tcp_connect(&d->connect, tcp, addr, on_dial_connected) != 0)
		dial_fail(d, RAFT_NOCONNECTION);
}

static void on_dial_resolved(uv_getaddrinfo_t *gai, int status, struct addrinfo *res)
{
	struct ctl_resolve *r = gai->data;
	struct ctl_transport *t = r->t;
	const struct addrinfo *pick = NULL;

	LIST_REMOVE(t->resolving, r);
	for (const struct addrinfo *ai = status == 0 ? res : NULL; ai; ai = ai->ai_next)
		if (!pick || (t->bound_specific && ai->ai_family == t->bound.ss_family &&
			      pick->ai_family != t->bound.ss_family))
			pick = ai;
	if (t->closing) {
		r->cb(r->req, NULL, RAFT_CANCELED);
	} else if (pick) {
		dial(t, r->req, r->cb, r->id, pick->ai_addr);
	} else {
		log_debug("controller: raft peer %llu does not resolve: %s", (unsigned long long)r->id,
			  status ? uv_strerror(status) : "no address");
		r->cb(r->req, NULL, RAFT_NOCONNECTION);
	}
	if (res)
		uv_freeaddrinfo(res);
	free(r);
	tr_maybe_closed(t);
}

static int tr_connect(struct raft_uv_transport *outer, struct raft_uv_connect *req, raft_id id,
		      const char *address, raft_uv_connect_cb cb)
{
	struct ctl_transport *t = of(outer);
	const char *host;
	int port;
	char service[16];

	(void)address; /* the log's; the peers list says where the peer is now */
	if (id < 1 || id > t->n_peers || t->closing ||
	    ctl_peer_raft_endpoint(&t->peers[id - 1], &host, &port))
		return RAFT_NOCONNECTION;
	struct ctl_resolve *r = calloc(1, sizeof *r);
	if (!r)
		return RAFT_NOMEM;
	*r = (struct ctl_resolve){ .t = t, .req = req, .cb = cb, .id = id };
	r->gai.data = r;
	req->cb = cb;
	snprintf(service, sizeof service, "%d", port);
	const struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	if (uv_getaddrinfo(t->loop, &r->gai, on_dial_resolved, host, service, &hints) != 0) {
		free(r);
		return RAFT_NOCONNECTION;
	}
	LIST_PUSH(t->resolving, r);
	return 0;
}

/* ---- closing ---- */

static void on_own_handle_closed(uv_handle_t *h)
{
	struct ctl_transport *t = h->data;

	t->open_handles--;
	tr_maybe_closed(t);
}

static void tr_close(struct raft_uv_transport *outer, raft_uv_transport_close_cb cb)
{
	struct ctl_transport *t = of(outer);

	t->closing = true;
	t->close_cb = cb;
	for (struct ctl_resolve *r = t->resolving; r; r = r->next)
		uv_cancel((uv_req_t *)&r->gai); /* their callbacks still come */
	for (unsigned i = 0; i < t->n_peers; i++)
		if (t->addrs[i].resolving)
			uv_cancel((uv_req_t *)&t->addrs[i].gai);
	for (struct ctl_dial *d = t->dialling; d; d = d->next)
		dial_fail(d, RAFT_CANCELED);
	while (t->inbound)
		inbound_close(t->inbound);
	if (t->listening)
		uv_close((uv_handle_t *)&t->listener, on_own_handle_closed);
	if (t->sweeping)
		uv_close((uv_handle_t *)&t->sweep, on_own_handle_closed);
	t->listening = t->sweeping = false;
	tr_maybe_closed(t);
}

int ctl_transport_init(struct ctl_transport *t, uv_loop_t *loop, const struct ctl_peer *peers,
		       unsigned n_peers, unsigned self, uint64_t max_message,
		       const char *bind_address, const char *const *tls_paths, char *err,
		       size_t errlen)
{
	memset(t, 0, sizeof *t);
	t->loop = loop;
	t->peers = peers;
	t->n_peers = n_peers;
	t->self = self;
	t->max_message = max_message;
	snprintf(t->fallback_bind, sizeof t->fallback_bind, "%s", bind_address);
	t->addrs = calloc(n_peers, sizeof *t->addrs);
	t->chunks = malloc(2 * CTL_RAFT_READ_CHUNK);
	if (!t->addrs || !t->chunks) {
		free(t->addrs);
		free(t->chunks);
		snprintf(err, errlen, "raft transport: out of memory");
		return RAFT_NOMEM;
	}
	for (unsigned i = 0; i < n_peers; i++)
		t->addrs[i].t = t;
	if (tls_paths && ctl_peer_tls_open(&t->tls, tls_paths[0], tls_paths[1], tls_paths[2], err,
					   errlen) != 0) {
		ctl_transport_free(t);
		return RAFT_INVALID;
	}
	t->outer = (struct raft_uv_transport){ .impl = t, .init = tr_init, .listen = tr_listen,
					       .connect = tr_connect, .close = tr_close };
	return 0;
}

void ctl_transport_free(struct ctl_transport *t)
{
	free(t->addrs);
	t->addrs = NULL;
	free(t->chunks);
	t->chunks = NULL;
	ctl_peer_tls_close(&t->tls);
}

const char *ctl_transport_peer_auth(const struct ctl_transport *t)
{
	return t->tls.ctx ? "mutual-tls" : "address";
}
