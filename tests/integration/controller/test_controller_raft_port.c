/* The Raft port of three real rmqns processes under attack: libraft frames
 * (AppendEntries at the same and a higher term, a RequestVote with an
 * extreme term, an InstallSnapshot carrying forged state, a frame
 * announcing 1 GiB then stalling) from a loopback address that is no
 * peer's, and from the peers' own address with a wrong id, a malformed
 * header, an oversized or an unfinished message. Every node stays up, the
 * leader, term and replicated state stay what they were, the node's
 * memory stays bounded, and the refusals are counted by reason. With peer
 * TLS on, a peer's own address and a real id are not enough either: no
 * certificate, or a certificate that does not name the peer's host, and
 * the connection is closed before libraft reads a byte. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ctl_cluster.h"
#include "harness.h"
#include "rmqns/buf.h"

#define NODES CTL_CLUSTER_NODES
#define STRANGER "127.0.0.2" /* a loopback address no peer's host resolves to */
#define CLOSE_WAIT_MS 20000  /* generous: the stall bound is a few seconds */
#define RSS_MARGIN_KB (64 * 1024)

static struct ctl_cluster cl;
static const bool all_alive[NODES] = { true, true, true };

static void cluster_fini(void)
{
	for (int i = 0; i < NODES; i++)
		if (cl.node[i].pid)
			cr_expect_eq(harness_cleanup(&cl.node[i]), 0, "node %d did not stop cleanly", i);
	harness_rmdir(cl.dir);
}

TestSuite(controller_raft_port, .fini = cluster_fini, .timeout = 200);

/* ---- libraft 0.15's frames, written as an attacker would ---- */

static void put64(struct buf *b, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++, v >>= 8)
		le[i] = (uint8_t)v;
	cr_assert_eq(buf_append(b, le, 8), 0);
}

static void handshake(struct buf *b, uint64_t id, const char *address)
{
	size_t len = (strlen(address) + 1 + 7) / 8 * 8;
	uint8_t padded[256] = { 0 };
	memcpy(padded, address, strlen(address));
	put64(b, 1);
	put64(b, id);
	put64(b, len);
	cr_assert_eq(buf_append(b, padded, len), 0);
}

/* AppendEntries of one 8-byte command entry. */
static void append_entries(struct buf *b, uint64_t term, uint64_t prev_index)
{
	put64(b, 1);                 /* type */
	put64(b, 48 + 16);           /* header length: fixed part and one entry */
	put64(b, term);
	put64(b, prev_index);
	put64(b, term);              /* prev term */
	put64(b, prev_index + 1);    /* commit */
	put64(b, 1);                 /* entries */
	put64(b, term);              /* the entry's term */
	put64(b, 1ull | 8ull << 32); /* command, 8 bytes */
	put64(b, 0);                 /* unused */
	put64(b, 0x0123456789abcdefull);
}

static void request_vote(struct buf *b, uint64_t term, uint64_t candidate)
{
	put64(b, 3);
	put64(b, 40);
	put64(b, term);
	put64(b, candidate);
	put64(b, UINT64_MAX >> 1); /* last index */
	put64(b, term);            /* last term */
	put64(b, 0);
}

/* InstallSnapshot of a configuration naming only the attacker, with
 * `data_len` bytes of snapshot announced and `sent` of them given. */
static void install_snapshot(struct buf *b, uint64_t term, uint64_t data_len, size_t sent)
{
	static const char addr[] = "127.0.0.2:1";
	size_t conf = 1 + 8 + 8 + sizeof addr + 1;
	size_t conf_padded = (conf + 7) / 8 * 8;
	uint8_t c[64] = { 1 };

	memcpy(c + 1, "\1\0\0\0\0\0\0\0", 8); /* one server */
	memcpy(c + 9, "\x63\0\0\0\0\0\0\0", 8); /* id 99 */
	memcpy(c + 17, addr, sizeof addr);
	c[17 + sizeof addr] = 1; /* voter */
	put64(b, 5);
	put64(b, 56 + conf_padded);
	put64(b, term);
	put64(b, 1000000); /* last index */
	put64(b, term);
	put64(b, 1000000); /* conf index */
	put64(b, conf_padded);
	cr_assert_eq(buf_append(b, c, conf_padded), 0);
	put64(b, data_len);
	put64(b, 0);
	for (size_t i = 0; i < sent; i++)
		cr_assert_eq(buf_putc(b, 'F'), 0);
}

/* ---- connections ---- */

static int raft_port(int i)
{
	return cl.ctl_port[i] + CTL_CLUSTER_RAFT_OFFSET;
}

static int dial_from(const char *from, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = { .sin_family = AF_INET };

	cr_assert_geq(fd, 0);
	inet_pton(AF_INET, from, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((uint16_t)port);
	cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof src), 0, "bind %s: %s", from, strerror(errno));
	cr_assert_eq(connect(fd, (struct sockaddr *)&dst, sizeof dst), 0, "connect: %s", strerror(errno));
	return fd;
}

/* The node closes the connection within the bound. */
static bool closed_by_peer(int fd)
{
	int64_t t0 = harness_now_ms();
	char sink[4096];

	while (harness_now_ms() - t0 < CLOSE_WAIT_MS) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 200) > 0) {
			ssize_t n = recv(fd, sink, sizeof sink, 0);
			if (n <= 0)
				return true;
		}
	}
	return false;
}

/* Sends what b holds from `from` to node i's Raft port; the node must
 * close the connection. */
static void attack(int i, const char *from, const struct buf *b, const char *what)
{
	int fd = dial_from(from, raft_port(i));
	/* the node may close before all is sent: that is the point */
	ssize_t sent = send(fd, b->data, b->len, MSG_NOSIGNAL);
	(void)sent;
	cr_expect(closed_by_peer(fd), "node %d kept a connection: %s", i, what);
	close(fd);
}

/* ---- what must not change ---- */

struct seen {
	long term;
	char *sets; /* the /controller brokerSets */
};

/* What each node showed before the attacks. */
struct baseline {
	struct seen seen[NODES];
	long rss_kb[NODES];
};

static void look(int i, struct seen *s)
{
	char *json = NULL;
	cr_assert_eq(harness_http_get(cl.http_port[i], "/controller", &json), 200, "node %d /controller", i);
	const char *t = strstr(json, "\"term\":");
	const char *a = strstr(json, "\"brokerSets\":");
	const char *z = a ? strstr(a, "\"liveBrokers\"") : NULL;
	cr_assert(t && a && z, "node %d: %s", i, json);
	s->term = atol(t + 7);
	s->sets = strndup(a, (size_t)(z - a));
	free(json);
}

/* Node i counted at least n refusals for reason (its metrics are rebuilt
 * every CTL_VIEW_MS). */
static void expect_refused(int i, const char *reason, double n)
{
	char sample[128];
	double v = -1;
	int64_t t0 = harness_now_ms();

	snprintf(sample, sizeof sample, "rmqns_controller_raft_refused_total{reason=\"%s\"}", reason);
	while ((v = harness_metric(cl.http_port[i], sample)) < n && harness_now_ms() - t0 < 10000)
		harness_sleep_ms(100);
	cr_expect_geq(v, n, "node %d: %g refusals for %s", i, v, reason);
}

static int setup_with(struct baseline *base, bool peer_tls)
{
	cr_assert_eq(ctl_cluster_init(&cl, "127.0.0.1"), 0);
	if (peer_tls)
		cr_assert_eq(ctl_cluster_use_peer_tls(&cl), 0);
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(ctl_cluster_start(&cl, i), 0, "node %d did not start", i);
	int leader = ctl_cluster_wait_leader(&cl, all_alive, NULL);
	cr_assert_geq(leader, 0, "no leader");
	const char *const apply[] = { "clusterName", "C1", "brokerName", "bs1", "appliedBrokerId", "1",
				      "registerCheckCode", "127.0.0.1:30911;1", NULL };
	cr_assert_eq(ctl_cluster_call(&cl, leader, 1013, apply, NULL, NULL), 0);
	harness_sleep_ms(1500); /* replicated and in every node's view */
	for (int i = 0; i < NODES; i++) {
		look(i, &base->seen[i]);
		cr_assert(strstr(base->seen[i].sets, "bs1"), "node %d has not the set: %s", i,
			  base->seen[i].sets);
		base->rss_kb[i] = harness_status_kb(&cl.node[i], "VmRSS");
	}
	return leader;
}

static int setup(struct baseline *base)
{
	return setup_with(base, false);
}

static void unchanged(int leader, struct baseline *base)
{
	cr_assert_eq(ctl_cluster_wait_leader(&cl, all_alive, NULL), leader, "the leader changed");
	for (int i = 0; i < NODES; i++) {
		struct seen now;
		look(i, &now);
		cr_expect_eq(now.term, base->seen[i].term, "node %d: term %ld, was %ld", i, now.term,
			     base->seen[i].term);
		cr_expect_str_eq(now.sets, base->seen[i].sets, "node %d's state changed", i);
		long rss = harness_status_kb(&cl.node[i], "VmRSS");
		cr_expect_lt(rss, base->rss_kb[i] + RSS_MARGIN_KB, "node %d: RSS %ld kB, was %ld kB", i, rss,
			     base->rss_kb[i]);
		free(now.sets);
		free(base->seen[i].sets);
	}
}

/* Every attack class from an address that is no peer's, claiming the
 * leader's own id: refused before libraft reads a byte. */
Test(controller_raft_port, strangers_cannot_move_the_group)
{
	struct baseline base;
	int leader = setup(&base);
	uint64_t lid = (uint64_t)leader + 1, term = (uint64_t)base.seen[leader].term;
	char self[64];

	for (int i = 0; i < NODES; i++) {
		snprintf(self, sizeof self, "127.0.0.1:%d", raft_port(leader));
		struct buf b = BUF_INIT;
		handshake(&b, lid, self);
		append_entries(&b, term, 1);
		attack(i, STRANGER, &b, "same-term AppendEntries");
		buf_reset(&b);
		handshake(&b, lid, self);
		append_entries(&b, term + 50, 1);
		attack(i, STRANGER, &b, "higher-term AppendEntries");
		buf_reset(&b);
		handshake(&b, lid, self);
		request_vote(&b, UINT64_MAX >> 2, lid);
		attack(i, STRANGER, &b, "RequestVote, extreme term");
		buf_reset(&b);
		handshake(&b, lid, self);
		install_snapshot(&b, term + 1, 64, 64);
		attack(i, STRANGER, &b, "forged InstallSnapshot");
		buf_reset(&b);
		handshake(&b, lid, self);
		install_snapshot(&b, term + 1, 1ull << 30, 4096);
		attack(i, STRANGER, &b, "1 GiB snapshot, stalled");
		buf_free(&b);
		expect_refused(i, "address", 5);
	}
	unchanged(leader, &base);
}

/* From the peers' address: an id that is no other peer's, then with a
 * real id, a header libraft would misread, a message past the maximum,
 * and a message left unfinished. */
Test(controller_raft_port, the_peers_address_is_not_enough)
{
	struct baseline base;
	int leader = setup(&base);
	int victim = (leader + 1) % NODES, other = (leader + 2) % NODES;
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", raft_port(other));
	struct buf b = BUF_INIT;

	handshake(&b, 7, addr); /* no such peer */
	append_entries(&b, (uint64_t)base.seen[victim].term + 50, 1);
	attack(victim, "127.0.0.1", &b, "an id outside the peers");
	buf_reset(&b);
	handshake(&b, (uint64_t)victim + 1, addr); /* the node's own id */
	request_vote(&b, UINT64_MAX >> 2, (uint64_t)victim + 1);
	attack(victim, "127.0.0.1", &b, "the node's own id");
	expect_refused(victim, "id", 2);

	/* a real peer's id from its address is a peer without peer TLS: what
	 * it sends is still bounded and checked */
	buf_reset(&b);
	handshake(&b, (uint64_t)other + 1, addr);
	put64(&b, 3); /* RequestVote with a one-byte header */
	put64(&b, 1);
	put64(&b, 0);
	attack(victim, "127.0.0.1", &b, "a header shorter than its type");
	expect_refused(victim, "malformed", 1);
	buf_reset(&b);
	handshake(&b, (uint64_t)other + 1, addr);
	put64(&b, 1);
	put64(&b, 1ull << 30); /* a 1 GiB header */
	attack(victim, "127.0.0.1", &b, "1 GiB AppendEntries header");
	buf_reset(&b);
	handshake(&b, (uint64_t)other + 1, addr);
	install_snapshot(&b, 1, 1ull << 30, 0);
	attack(victim, "127.0.0.1", &b, "1 GiB snapshot announced");
	expect_refused(victim, "oversize", 2);
	buf_reset(&b);
	handshake(&b, (uint64_t)other + 1, addr);
	put64(&b, 1); /* half a preamble, then nothing */
	attack(victim, "127.0.0.1", &b, "an unfinished message");
	buf_reset(&b);
	put64(&b, 1); /* half a handshake */
	attack(victim, "127.0.0.1", &b, "an unfinished handshake");
	expect_refused(victim, "stalled", 2);
	buf_free(&b);
	unchanged(leader, &base);
}

/* A TLS client on fd with the certificate and key under the cluster's
 * tls directory (NULL: none); true when the handshake completed. */
static bool tls_connect(int fd, const char *cert, SSL **out)
{
	char path[512];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	cr_assert_not_null(ctx);
	if (cert) {
		snprintf(path, sizeof path, "%s/tls/%s.pem", cl.dir, cert);
		cr_assert_eq(SSL_CTX_use_certificate_file(ctx, path, SSL_FILETYPE_PEM), 1);
		snprintf(path, sizeof path, "%s/tls/%s.key", cl.dir, cert);
		cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, path, SSL_FILETYPE_PEM), 1);
	}
	SSL *ssl = SSL_new(ctx);
	SSL_CTX_free(ctx);
	SSL_set_fd(ssl, fd);
	bool done = SSL_connect(ssl) == 1;
	ERR_clear_error();
	*out = ssl;
	return done;
}

/* Over TLS with cert (NULL: none) from the peers' address, libraft's
 * handshake claiming peer `id` (0-based) and a RequestVote: the node must
 * close the connection. */
static void tls_attack(int victim, const char *cert, int id, const char *what)
{
	char addr[64];
	SSL *ssl;
	int fd = dial_from("127.0.0.1", raft_port(victim));

	snprintf(addr, sizeof addr, "127.0.0.1:%d", raft_port(id));
	if (tls_connect(fd, cert, &ssl)) {
		/* TLS 1.3 tells of a refused client certificate after the handshake */
		struct buf b = BUF_INIT;
		handshake(&b, (uint64_t)id + 1, addr);
		request_vote(&b, UINT64_MAX >> 2, (uint64_t)id + 1);
		SSL_write(ssl, b.data, (int)b.len);
		ERR_clear_error();
		buf_free(&b);
	}
	cr_expect(closed_by_peer(fd), "node %d kept a TLS connection: %s", victim, what);
	SSL_free(ssl);
	close(fd);
}

/* From the peers' own address, claiming a real peer's id: in plaintext,
 * over TLS without a certificate, and over TLS with a certificate of the
 * right CA that names another host. */
Test(controller_raft_port, with_peer_tls_a_peer_needs_its_certificate)
{
	struct baseline base;
	int leader = setup_with(&base, true);
	int victim = (leader + 1) % NODES, other = (leader + 2) % NODES;
	uint64_t term = (uint64_t)base.seen[victim].term;
	char addr[64], *json = NULL;
	snprintf(addr, sizeof addr, "127.0.0.1:%d", raft_port(leader));
	struct buf b = BUF_INIT;

	cr_assert_eq(harness_http_get(cl.http_port[victim], "/controller", &json), 200);
	cr_expect(strstr(json, "\"peerAuthentication\":\"mutual-tls\""), "%s", json);
	free(json);
	cr_expect_eq(harness_metric(cl.http_port[victim], "rmqns_controller_peer_tls"), 1);

	handshake(&b, (uint64_t)leader + 1, addr);
	append_entries(&b, term + 50, 1);
	attack(victim, "127.0.0.1", &b, "plaintext with the leader's id");

	tls_attack(victim, NULL, leader, "no certificate, the leader's id");
	tls_attack(victim, "elsewhere", other, "a certificate naming another host");
	buf_free(&b);
	expect_refused(victim, "tls", 3);
	unchanged(leader, &base);
}

/* The peers' certificates re-issued by a new CA and moved over the files:
 * every node rebuilds its context, the old certificate is refused from
 * then on, and a restarted node with the new one is taken back. */
Test(controller_raft_port, peer_certificates_are_reloaded_when_their_files_change)
{
	struct baseline base;
	int leader = setup_with(&base, true);
	int victim = (leader + 1) % NODES, other = (leader + 2) % NODES;
	char cmd[2048];

	snprintf(cmd, sizeof cmd,
		 "cd '%s/tls' && { cp peer.pem old.pem && cp peer.key old.key && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca2.key "
		 "-out ca2.pem -days 2 -subj /CN=rmqns-peer-ca-2 && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout peer2.key "
		 "-out peer2.csr -subj /CN=peer -addext subjectAltName=IP:127.0.0.1,DNS:localhost && "
		 "openssl x509 -req -in peer2.csr -CA ca2.pem -CAkey ca2.key -set_serial 3 -days 2 "
		 "-copy_extensions copy -out peer2.pem && "
		 "mv peer2.key peer.key && mv peer2.pem peer.pem && mv ca2.pem ca.pem ; } >/dev/null 2>&1",
		 cl.dir);
	cr_assert_eq(system(cmd), 0, "cannot re-issue the certificates");
	for (int i = 0; i < NODES; i++)
		cr_assert(harness_wait_log(&cl.node[i], "peer TLS certificates reloaded", 15000),
			  "node %d did not reload", i);

	/* the old certificate, right address, real id: refused now */
	tls_attack(victim, "old", other, "the certificate the files no longer hold");
	expect_refused(victim, "tls", 1);

	/* the leader restarted: it dials and is dialled with the new ones */
	cr_assert_eq(harness_stop(&cl.node[leader], SIGTERM, 10000, NULL), 0);
	cr_assert_eq(harness_cleanup(&cl.node[leader]), 0);
	cr_assert_eq(ctl_cluster_start(&cl, leader), 0);
	cr_assert_geq(ctl_cluster_wait_leader(&cl, all_alive, NULL), 0, "no leader after the restart");
	int64_t t0 = harness_now_ms();
	struct seen back = { 0 };
	do {
		free(back.sets);
		harness_sleep_ms(200);
		look(leader, &back);
	} while (strcmp(back.sets, base.seen[leader].sets) != 0 && harness_now_ms() - t0 < 20000);
	cr_expect_str_eq(back.sets, base.seen[leader].sets, "the restarted node did not catch up");
	free(back.sets);
	for (int i = 0; i < NODES; i++)
		free(base.seen[i].sets);
}

/* ---- the bytes held for Raft connections ---- */

#define HELD_ANNOUNCED (8ull << 20) /* a snapshot within controllerRaftMaxMessageBytes */
#define HELD_SENT (4u << 20)        /* of which this much is sent */
#define HELD_SLACK (256 * 1024)     /* a heartbeat in flight, a relay queue not drained yet */

/* Node i's rmqns_connection_memory_bytes once within [lo, hi] (the last
 * value seen after 20 s otherwise). */
static double connection_memory(int i, double lo, double hi)
{
	int64_t t0 = harness_now_ms();
	double v;

	while (((v = harness_metric(cl.http_port[i], "rmqns_connection_memory_bytes")) < lo || v > hi) &&
	       harness_now_ms() - t0 < 20000)
		harness_sleep_ms(100);
	return v;
}

/* On fd (through ssl when not NULL), peer `other`'s handshake and a
 * snapshot announcing HELD_ANNOUNCED bytes of which HELD_SENT are sent:
 * node victim's connection memory rises from `before` by what was sent. */
static void send_half_snapshot(int victim, int other, double before, int fd, SSL *ssl)
{
	char addr[64];
	struct buf b = BUF_INIT;

	snprintf(addr, sizeof addr, "127.0.0.1:%d", raft_port(other));
	handshake(&b, (uint64_t)other + 1, addr);
	install_snapshot(&b, 1, HELD_ANNOUNCED, HELD_SENT);
	for (size_t off = 0; off < b.len;) {
		int chunk = (int)(b.len - off < 65536 ? b.len - off : 65536);
		int n = ssl ? SSL_write(ssl, b.data + off, chunk)
			    : (int)send(fd, b.data + off, (size_t)chunk, MSG_NOSIGNAL);
		cr_assert_gt(n, 0, "node %d closed the connection after %zu bytes", victim, off);
		off += (size_t)n;
	}
	buf_free(&b);
	double held = connection_memory(victim, before + HELD_SENT, before + HELD_SENT + HELD_SLACK);
	fprintf(stderr, "node %d: connection memory %.0f bytes before, %.0f with %u bytes of a "
		"snapshot sent%s\n", victim, before, held, HELD_SENT, ssl ? " over TLS" : "");
	cr_expect(held >= before + HELD_SENT && held <= before + HELD_SENT + HELD_SLACK,
		  "node %d: connection memory %.0f, was %.0f, %u bytes sent", victim, held, before,
		  HELD_SENT);
}

/* Node victim's connection memory back where it was once the connection
 * is gone. */
static void released(int victim, double before, const char *how)
{
	double after = connection_memory(victim, before, before);

	fprintf(stderr, "node %d: connection memory %.0f bytes after %s\n", victim, after, how);
	cr_expect_eq(after, before, "node %d: connection memory %.0f after %s, was %.0f", victim, after,
		     how, before);
}

/* From the peers' address (over TLS with the peers' certificate when
 * peer_tls), peer `other`'s handshake on a new connection to node victim;
 * ssl set when TLS is on. */
static int dial_as_peer(int victim, bool peer_tls, SSL **ssl)
{
	int fd = dial_from("127.0.0.1", raft_port(victim));

	*ssl = NULL;
	if (peer_tls)
		cr_assert(tls_connect(fd, "peer", ssl), "no TLS handshake with the peers' certificate");
	return fd;
}

/* A Raft connection's bytes count in connectionMemoryBudget: a message
 * left half sent raises rmqns_connection_memory_bytes by what was sent;
 * the sender closing, and the node closing it for the stall, give it all
 * back. */
static void raft_bytes_counted(bool peer_tls)
{
	struct baseline base;
	int leader = setup_with(&base, peer_tls);
	int victim = (leader + 1) % NODES, other = (leader + 2) % NODES;
	double before = connection_memory(victim, 0, 0);
	SSL *ssl;

	int fd = dial_as_peer(victim, peer_tls, &ssl);
	send_half_snapshot(victim, other, before, fd, ssl);
	SSL_free(ssl);
	close(fd);
	released(victim, before, "the sender closed");

	fd = dial_as_peer(victim, peer_tls, &ssl);
	send_half_snapshot(victim, other, before, fd, ssl);
	cr_expect(closed_by_peer(fd), "node %d kept a stalled message", victim);
	SSL_free(ssl);
	close(fd);
	released(victim, before, "the stall bound closed it");
	expect_refused(victim, "stalled", 1);
	unchanged(leader, &base);
}

Test(controller_raft_port, raft_connections_count_in_the_memory_budget)
{
	raft_bytes_counted(false);
}

Test(controller_raft_port, raft_connections_over_tls_count_in_the_memory_budget)
{
	raft_bytes_counted(true);
}
