/* NOTIFY_MIN_BROKER_ID_CHANGE (905) as the server sends it: the frame's
 * header field by field, then the reactors' outbound connections against
 * fake brokers (loopback listeners made here that record what arrives):
 * one connection per address, reused; a closed one is opened again; a
 * refused one costs the other targets nothing. A plain program (exit 0 =
 * pass), so that it runs under ThreadSanitizer too. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/net.h"
#include "rmqns/notify.h"
#include "rmqns/remoting.h"
#include "plain_test.h"

#define WAIT_MS 30000 /* for what must happen at all: a loaded host meets it */

/* A listening socket on 127.0.0.1; *addr receives "127.0.0.1:port". */
static int fake_broker(char *addr, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(addr, n, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

static int accept_one(int lfd)
{
	return readable(lfd, WAIT_MS) ? accept(lfd, NULL, NULL) : -1;
}

static int read_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		if (!readable(fd, WAIT_MS))
			return -1;
		ssize_t n = read(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One whole frame from fd, decoded into *cmd (frame is kept in buf). */
static int read_cmd(int fd, uint8_t *buf, size_t cap, struct remoting_cmd *cmd)
{
	if (read_all(fd, buf, 4) < 0)
		return -1;
	size_t len = rd_be32(buf);
	if (len + 4 > cap || read_all(fd, buf + 4, len) < 0)
		return -1;
	return remoting_decode(buf, len + 4, cmd);
}

static bool ext_is(const struct remoting_cmd *cmd, const char *key, const char *want)
{
	const char *v = remoting_ext_get(cmd, key);
	return want ? v && strcmp(v, want) == 0 : v == NULL;
}

static int test_frame_fields(void)
{
	int ok = -1;
	struct buf b = BUF_INIT;
	struct remoting_cmd cmd = { 0 };
	struct route_min_id_change c = { .cluster = "c1", .group = "g1", .min_id = 2,
					 .min_addr = "127.0.0.1:10912",
					 .offline_addr = "127.0.0.1:10911" };

	CHECK(notify_encode_min_id_change(&c, 7, &b) == 0);
	CHECK(remoting_decode(b.data, b.len, &cmd) == 0);
	CHECK(cmd.code == 905);
	CHECK(cmd.flag == REMOTING_FLAG_ONEWAY);
	CHECK(cmd.opaque == 7);
	CHECK(cmd.language == LANG_JAVA);
	CHECK(cmd.serialize == REMOTING_JSON);
	CHECK(cmd.body_len == 0);
	CHECK(cmd.ext_count == 3);
	CHECK(ext_is(&cmd, "minBrokerId", "2"));
	CHECK(ext_is(&cmd, "minBrokerAddr", "127.0.0.1:10912"));
	CHECK(ext_is(&cmd, "offlineBrokerAddr", "127.0.0.1:10911"));
	/* a null field is left out of the JSON, never written as null */
	CHECK(ext_is(&cmd, "haBrokerAddr", NULL));
	CHECK(memmem(b.data, b.len, "haBrokerAddr", 12) == NULL);
	CHECK(memmem(b.data, b.len, "null", 4) == NULL);
	remoting_cmd_release(&cmd);
	memset(&cmd, 0, sizeof cmd);

	c.offline_addr = NULL;
	c.ha_addr = "127.0.0.1:10913";
	b.len = 0;
	CHECK(notify_encode_min_id_change(&c, 8, &b) == 0);
	CHECK(remoting_decode(b.data, b.len, &cmd) == 0);
	CHECK(ext_is(&cmd, "haBrokerAddr", "127.0.0.1:10913"));
	CHECK(ext_is(&cmd, "offlineBrokerAddr", NULL));
	ok = 0;
out:
	remoting_cmd_release(&cmd);
	buf_free(&b);
	return ok;
}

static int on_frame(void *arg, const struct net_frame *f)
{
	(void)arg;
	(void)f;
	return 0;
}

static int test_outbound_connections(void)
{
	int ok = -1, err;
	char a_addr[64], b_addr[64], gone_addr[64];
	int la = -1, lb = -1, ca = -1, cb2 = -1, ca2 = -1;
	static uint8_t frame[4096];
	struct remoting_cmd cmd = { 0 };
	struct server *srv = NULL;

	la = fake_broker(a_addr, sizeof a_addr);
	lb = fake_broker(b_addr, sizeof b_addr);
	int lg = fake_broker(gone_addr, sizeof gone_addr);
	CHECK(la >= 0 && lb >= 0 && lg >= 0);
	close(lg); /* nobody listens there any more: connection refused */

	struct server_params sp = { .bind_address = "127.0.0.1", .backlog = 16, .reactors = 2,
				    .max_frame = REMOTING_DEFAULT_MAX_FRAME };
	struct net_callbacks cbs = { .on_frame = on_frame };
	srv = server_create(&sp, &cbs, &err);
	CHECK(srv != NULL);
	CHECK(server_start(srv) == 0);
	CHECK(net_send_to(srv, "not-an-address", "x", 1) == RMQNS_EINVAL);
	CHECK(net_send_to(srv, "127.0.0.1:0", "x", 1) == RMQNS_EINVAL);
	CHECK(net_send_to(srv, "broker.example:10911", "x", 1) == RMQNS_EINVAL);

	/* Both targets get the request; the refused one first costs nothing. */
	const char *targets[] = { gone_addr, a_addr, b_addr };
	struct route_min_id_change c = { .cluster = "c1", .group = "g1", .min_id = 1,
					 .min_addr = b_addr, .offline_addr = "127.0.0.1:1",
					 .n_targets = 3, .targets = targets };
	notify_min_id_change(srv, &c);
	ca = accept_one(la);
	cb2 = accept_one(lb);
	CHECK(ca >= 0 && cb2 >= 0);
	CHECK(read_cmd(ca, frame, sizeof frame, &cmd) == 0);
	CHECK(cmd.code == 905 && (cmd.flag & REMOTING_FLAG_ONEWAY));
	CHECK(ext_is(&cmd, "minBrokerId", "1") && ext_is(&cmd, "minBrokerAddr", b_addr));
	CHECK(ext_is(&cmd, "offlineBrokerAddr", "127.0.0.1:1") && ext_is(&cmd, "haBrokerAddr", NULL));
	remoting_cmd_release(&cmd);
	memset(&cmd, 0, sizeof cmd);
	CHECK(read_cmd(cb2, frame, sizeof frame, &cmd) == 0);
	CHECK(cmd.code == 905 && ext_is(&cmd, "minBrokerId", "1"));
	remoting_cmd_release(&cmd);
	memset(&cmd, 0, sizeof cmd);

	/* The next change reuses the connection: same socket, no new connect. */
	c.min_id = 0;
	c.offline_addr = NULL;
	c.n_targets = 1;
	targets[0] = a_addr;
	notify_min_id_change(srv, &c);
	CHECK(read_cmd(ca, frame, sizeof frame, &cmd) == 0);
	CHECK(ext_is(&cmd, "minBrokerId", "0") && ext_is(&cmd, "offlineBrokerAddr", NULL));
	remoting_cmd_release(&cmd);
	memset(&cmd, 0, sizeof cmd);
	CHECK(!readable(la, 0));

	/* The broker closes its end: the server closes too (seen here as end
	 * of file), and the next request opens a new connection. */
	CHECK(shutdown(ca, SHUT_WR) == 0);
	CHECK(readable(ca, WAIT_MS) && read(ca, frame, sizeof frame) == 0);
	c.min_id = 3;
	notify_min_id_change(srv, &c);
	ca2 = accept_one(la);
	CHECK(ca2 >= 0);
	CHECK(read_cmd(ca2, frame, sizeof frame, &cmd) == 0);
	CHECK(ext_is(&cmd, "minBrokerId", "3"));
	ok = 0;
out:
	remoting_cmd_release(&cmd);
	server_destroy(srv);
	for (int *fd = (int[]){ la, lb, ca, cb2, ca2 }, i = 0; i < 5; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return ok;
}

int main(void)
{
	int failed = 0;
	failed += test_frame_fields() != 0;
	failed += test_outbound_connections() != 0;
	fprintf(stderr, "%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
