/* NOTIFY_MIN_BROKER_ID_CHANGE (905) end to end: brokers of an acting-master
 * group registered with the real binary, two of them fake brokers that
 * listen on loopback and record what the server sends them. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define T 5000

static struct harness_server srv;

static void stop_server(void)
{
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	harness_cleanup(&srv);
}

TestSuite(notify, .timeout = 60);

static int listen_loopback(char *addr, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 8) == 0 &&
		  getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	snprintf(addr, n, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

static void read_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		cr_assert(readable(fd, T), "nothing arrived");
		ssize_t n = read(fd, p, len);
		cr_assert_gt(n, 0, "the server closed the connection");
		p += n;
		len -= (size_t)n;
	}
}

/* The next request the server sends on conn. */
static void read_request(int conn, uint8_t *buf, size_t cap, struct remoting_cmd *cmd)
{
	read_all(conn, buf, 4);
	size_t len = ((size_t)buf[0] << 24) | ((size_t)buf[1] << 16) | ((size_t)buf[2] << 8) | buf[3];
	cr_assert_leq(len + 4, cap);
	read_all(conn, buf + 4, len);
	cr_assert_eq(remoting_decode(buf, len + 4, cmd), 0);
}

static void expect_ext(const struct remoting_cmd *cmd, const char *key, const char *want)
{
	const char *v = remoting_ext_get(cmd, key);
	if (!want)
		cr_expect_null(v, "%s present: %s", key, v);
	else
		cr_expect(v && strcmp(v, want) == 0, "%s = %s, want %s", key, v ? v : "(absent)", want);
}

static const char body[] =
	"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
	"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
	"\"nt-a\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"nt-a\",\"writeQueueNums\":4},"
	"\"nt-b\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"nt-b\",\"writeQueueNums\":4}}}}";

static void register_acting(struct client *c, const char *addr, const char *id, const char *ha)
{
	harness_call_ok(c, REQ_REGISTER_BROKER, body, "brokerName", "nt-group", "brokerAddr", addr, "clusterName", "NtCluster",
	     "haServerAddr", ha, "brokerId", id, "enableActingMaster", "true", "compressed", "false", NULL);
}

static int accept_conn(int lfd)
{
	cr_assert(readable(lfd, T), "the server never connected to the broker");
	int fd = accept(lfd, NULL, NULL);
	cr_assert_geq(fd, 0);
	return fd;
}

Test(notify, brokers_of_an_acting_group_hear_of_a_new_minimum_and_of_one_leaving)
{
	const char *args[] = { "--notifyMinBrokerIdChanged=true", NULL };
	char slave1[32], slave2[32];
	uint8_t buf[4096];
	struct remoting_cmd cmd;
	int l1 = listen_loopback(slave1, sizeof slave1), l2 = listen_loopback(slave2, sizeof slave2);
	const char *master = "127.0.0.1:9"; /* never dialled: the new minimum is not told */

	cr_assert_eq(harness_start(&srv, args), 0);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_acting(c, slave1, "1", "ha1:1");
	register_acting(c, slave2, "2", "ha2:1");
	cr_expect_not(readable(l1, 200), "no smaller id yet, yet the server dialled a broker");

	/* the master comes: 0 < 1 */
	register_acting(c, master, "0", "ham:1");
	int c1 = accept_conn(l1), c2 = accept_conn(l2);
	for (int k = 0; k < 2; k++) {
		read_request(k ? c2 : c1, buf, sizeof buf, &cmd);
		cr_expect_eq(cmd.code, REQ_NOTIFY_MIN_BROKER_ID_CHANGE);
		cr_expect(remoting_is_oneway(&cmd), "905 is one-way");
		expect_ext(&cmd, "minBrokerId", "0");
		expect_ext(&cmd, "minBrokerAddr", master);
		expect_ext(&cmd, "offlineBrokerAddr", NULL);
		expect_ext(&cmd, "haBrokerAddr", "ham:1");
		remoting_cmd_release(&cmd);
	}

	/* the master unregisters: the rest hear it, with the address that went */
	harness_call_ok(c, REQ_UNREGISTER_BROKER, NULL, "brokerName", "nt-group", "brokerAddr", master, "clusterName",
	     "NtCluster", "brokerId", "0", NULL);
	for (int k = 0; k < 2; k++) {
		/* on the connections opened before, reused */
		read_request(k ? c2 : c1, buf, sizeof buf, &cmd);
		cr_expect_eq(cmd.code, REQ_NOTIFY_MIN_BROKER_ID_CHANGE);
		expect_ext(&cmd, "minBrokerId", "1");
		expect_ext(&cmd, "minBrokerAddr", slave1);
		expect_ext(&cmd, "offlineBrokerAddr", master);
		expect_ext(&cmd, "haBrokerAddr", NULL);
		remoting_cmd_release(&cmd);
	}
	cr_expect_not(readable(l1, 100) || readable(l2, 100), "a second connection where one is reused");
	client_close(c);
	close(c1);
	close(c2);
	close(l1);
	close(l2);
	stop_server();
}

/* Two brokers registered under two spellings of one address: the server
 * keys its outbound connections by the address, not by how it was
 * written, so both notices come on one connection. */
Test(notify, two_spellings_of_one_address_share_one_connection)
{
	const char *args[] = { "--notifyMinBrokerIdChanged=true", NULL };
	char plain[32], padded[40];
	uint8_t buf[4096];
	struct remoting_cmd cmd;
	int l1 = listen_loopback(plain, sizeof plain);

	snprintf(padded, sizeof padded, "127.0.0.1:0%s", strrchr(plain, ':') + 1);
	cr_assert_eq(harness_start(&srv, args), 0);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_acting(c, plain, "1", "ha1:1");
	register_acting(c, padded, "2", "ha2:1");
	register_acting(c, "127.0.0.1:9", "0", "ham:1");
	int c1 = accept_conn(l1);
	for (int k = 0; k < 2; k++) {
		read_request(c1, buf, sizeof buf, &cmd);
		cr_expect_eq(cmd.code, REQ_NOTIFY_MIN_BROKER_ID_CHANGE);
		expect_ext(&cmd, "minBrokerId", "0");
		remoting_cmd_release(&cmd);
	}
	cr_expect_not(readable(l1, 300), "a second connection for a second spelling of %s", plain);
	client_close(c);
	close(c1);
	close(l1);
	stop_server();
}

Test(notify, nothing_is_sent_when_the_option_is_off)
{
	char slave1[32];
	int l1 = listen_loopback(slave1, sizeof slave1);

	cr_assert_eq(harness_start(&srv, NULL), 0);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_acting(c, slave1, "1", "ha1:1");
	register_acting(c, "127.0.0.1:9", "0", "ham:1");
	cr_expect_not(readable(l1, 300), "the server dialled a broker with notifyMinBrokerIdChanged off");
	client_close(c);
	close(l1);
	stop_server();
}
