/* ACL 1.0 against the real binary: each refusal with its code and remark,
 * admin and non-admin accounts, white-listed addresses (global and the
 * account's), the read and broker classes on both the reactor (inline)
 * and the worker path, the frames real mqadmin signed, reloads on SIGHUP
 * and on a file change, a broken file, start-up without a file, the
 * counters in /metrics, and the default (aclEnable=false) unchanged. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/acl.h"
#include "rmqns/buf.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#ifndef TESTDATA_DIR
#error "TESTDATA_DIR must name tests/data"
#endif

#define T HARNESS_IO_TIMEOUT_MS

static struct harness_server srv;
static char acl_dir[256];
static char acl_path[320];
static char acl_file_arg[340];
static int http_port_no;

static void acl_fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
	if (acl_dir[0])
		harness_rmdir(acl_dir);
	acl_dir[0] = '\0';
}

TestSuite(acl, .fini = acl_fini, .timeout = 180);

static const char accounts_yaml[] =
	"# a broker's file: perms and versions are ignored by the NameServer\n"
	"globalWhiteRemoteAddresses:\n"
	"accounts:\n"
	"  - accessKey: rocketmq2\n"
	"    secretKey: 12345678\n"
	"    admin: true\n"
	"    topicPerms:\n"
	"      - topicA=PUB\n"
	"  - accessKey: RocketMQ\n"
	"    secretKey: 87654321\n"
	"    admin: false\n"
	"    defaultTopicPerm: DENY\n"
	"dataVersion:\n"
	"  - counter: 1\n"
	"    timestamp: 1700000000000\n";

/* Writes the accounts file (through a rename, as editors and config
 * managers replace files). */
static void write_accounts(const char *text)
{
	char tmp[400];
	snprintf(tmp, sizeof tmp, "%s.new", acl_path);
	FILE *f = fopen(tmp, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, acl_path), 0);
}

static int free_port(void)
{
	int port = harness_free_port();
	cr_assert_gt(port, 0, "no free loopback port");
	return port;
}

/* Starts the server with ACL options and the accounts file `yaml`. */
static void start(const char *yaml, const char *const *extra)
{
	static char port_arg[32];
	const char *args[32];
	size_t n = 0;

	if (!acl_dir[0]) {
		cr_assert_eq(harness_mkdtemp(acl_dir, sizeof acl_dir, "rmqns-acl"), 0);
		snprintf(acl_path, sizeof acl_path, "%s/plain_acl.yml", acl_dir);
		snprintf(acl_file_arg, sizeof acl_file_arg, "--aclFile=%s", acl_path);
	}
	if (yaml)
		write_accounts(yaml);
	http_port_no = free_port();
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", http_port_no);
	args[n++] = port_arg;
	args[n++] = acl_file_arg;
	for (; extra && *extra && n < 31; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
}

/* The server with the test accounts and args, and a client of it. */
static struct client *start_acl(const char *const *args)
{
	start(accounts_yaml, args);
	return harness_connect_or_fail(&srv);
}

static const char *const acl_on[] = { "--aclEnable=true", NULL };

/* An answer of code NO_PERMISSION with exactly this remark. */
static void expect_no_permission(int code, const char *remark, const char *want)
{
	cr_assert_eq(code, RSP_NO_PERMISSION, "%s", remark);
	cr_assert_str_eq(remark, want);
}

/* One JSON request with ext fields key, value, ..., NULL, signed with
 * (ak, sk) unless ak is NULL; the answer's code, its remark in remark. */
static int32_t call(struct client *c, int32_t code, const char *body, const char *ak, const char *sk,
		    char *remark, size_t remark_len, ...)
{
	struct remoting_ext_field ext[16];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	struct acl_signed s = { 0 };
	uint32_t n = 0;
	va_list ap;

	harness_request_init(&req, code, REMOTING_JSON);
	va_start(ap, remark_len);
	for (const char *k; (k = va_arg(ap, const char *)) != NULL && n < 16; n++) {
		ext[n].key = k;
		ext[n].value = va_arg(ap, const char *);
	}
	va_end(ap);
	req.ext = ext;
	req.ext_count = n;
	req.ext_present = true;
	if (body) {
		req.body = (const uint8_t *)body;
		req.body_len = (uint32_t)strlen(body);
	}
	if (ak)
		cr_assert_eq(acl_sign_cmd(&req, ak, sk, &s), 0);
	cr_assert_eq(client_call(c, &req, &r, T), 0, "no answer to code %d", code);
	int32_t rc = r->cmd.code;
	if (remark)
		snprintf(remark, remark_len, "%s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	acl_signed_free(&s);
	return rc;
}

#define PUT_KV(c, ak, sk, remark) \
	call(c, REQ_PUT_KV_CONFIG, NULL, ak, sk, remark, sizeof remark, "namespace", "ns", "key", "k", \
	     "value", "v", NULL)
#define ROUTE(c, ak, sk, remark) \
	call(c, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, ak, sk, remark, sizeof remark, "topic", "NoSuchTopic", NULL)

/* Two topics: a one-topic registration is taken as an incremental one. */
static const char register_body[] =
	"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1,"
	"\"timestamp\":1},\"topicConfigTable\":{\"AclTopic\":{\"order\":false,\"perm\":6,"
	"\"readQueueNums\":4,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"AclTopic\","
	"\"topicSysFlag\":0,\"writeQueueNums\":4},\"AclTopic2\":{\"perm\":6,\"readQueueNums\":4,"
	"\"topicName\":\"AclTopic2\",\"writeQueueNums\":4}}}}";

static int32_t register_broker(struct client *c, const char *ak, const char *sk, char *remark,
			       size_t remark_len)
{
	return call(c, REQ_REGISTER_BROKER, register_body, ak, sk, remark, remark_len, "brokerAddr",
		    "127.0.0.1:30911", "brokerId", "0", "brokerName", "acl-broker", "clusterName", "AclCluster",
		    "haServerAddr", "127.0.0.1:30912", "compressed", "false", NULL);
}

/* GET /metrics from the HTTP port. */
static char *metrics_text(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)http_port_no),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { T / 1000, 0 };
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct buf b = BUF_INIT;
	char chunk[8192];

	cr_assert(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "HTTP connect: %s", strerror(errno));
	cr_assert_eq(send(fd, get, sizeof get - 1, MSG_NOSIGNAL), (ssize_t)(sizeof get - 1));
	for (ssize_t n; (n = recv(fd, chunk, sizeof chunk, 0)) > 0;)
		cr_assert_eq(buf_append(&b, chunk, (size_t)n), 0);
	close(fd);
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

/* Waits (within the I/O bound) for `needle` to appear in the log after
 * the first `anchor`. */
static bool wait_log_after(const struct harness_server *s, const char *anchor, const char *needle)
{
	for (int waited = 0; waited <= T; waited += 20) {
		char *log = harness_read_log(s);
		const char *a = log ? strstr(log, anchor) : NULL;
		bool hit = a && strstr(a, needle);
		free(log);
		if (hit)
			return true;
		usleep(20000);
	}
	return false;
}

/* ---- the default ---- */

Test(acl, default_off_nothing_is_checked)
{
	char remark[256];
	start(NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(PUT_KV(c, NULL, NULL, remark), 0);
	cr_assert_eq(PUT_KV(c, "nobody-at-all", "wrong-secret", remark), 0);
	cr_assert_eq(ROUTE(c, NULL, NULL, remark), RSP_TOPIC_NOT_EXIST);
	cr_assert_eq(register_broker(c, NULL, NULL, remark, sizeof remark), 0, "%s", remark);
	char *log = harness_read_log(&srv);
	cr_assert_null(strstr(log, "ACL:"), "ACL is on by default: %s", log);
	free(log);
	client_close(c);
}

/* ---- refusals ---- */

Test(acl, each_refusal_with_its_code_and_remark)
{
	char remark[256];
	struct client *c = start_acl(acl_on);

	expect_no_permission(PUT_KV(c, NULL, NULL, remark), remark, "ACL: unsigned request: code 100 needs an AccessKey and a Signature");
	expect_no_permission(PUT_KV(c, "nobody-key", "nobody-secret", remark), remark, "ACL: unknown access key: no account for AccessKey=nobody-key");
	expect_no_permission(PUT_KV(c, "rocketmq2", "not-the-secret", remark), remark, "ACL: signature mismatch for AccessKey=rocketmq2");
	expect_no_permission(PUT_KV(c, "RocketMQ", "87654321", remark), remark, "ACL: account not admin: AccessKey=RocketMQ may not send code 100");
	cr_assert_eq(call(c, REQ_PUT_KV_CONFIG, NULL, NULL, NULL, remark, sizeof remark, "namespace", "ns",
			  "key", "k", "value", "v", "AccessKey", "rocketmq2", NULL),
		     RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "ACL: unsigned request: AccessKey=rocketmq2 without a Signature");

	/* admin: every changing request goes through */
	cr_assert_eq(PUT_KV(c, "rocketmq2", "12345678", remark), 0, "%s", remark);
	cr_assert_eq(call(c, REQ_DELETE_KV_CONFIG, NULL, "RocketMQ", "87654321", remark, sizeof remark,
			  "namespace", "ns", "key", "k", NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, REQ_DELETE_KV_CONFIG, NULL, "rocketmq2", "12345678", remark, sizeof remark,
			  "namespace", "ns", "key", "k", NULL),
		     0);
	static const int32_t changing[] = { REQ_WIPE_WRITE_PERM_OF_BROKER, REQ_ADD_WRITE_PERM_OF_BROKER,
					    REQ_DELETE_TOPIC_IN_NAMESRV, REQ_REGISTER_TOPIC_IN_NAMESRV,
					    REQ_UPDATE_NAMESRV_CONFIG };
	for (size_t i = 0; i < sizeof changing / sizeof changing[0]; i++) {
		cr_assert_eq(call(c, changing[i], NULL, NULL, NULL, remark, sizeof remark, "brokerName", "b",
				  "topic", "t", NULL),
			     RSP_NO_PERMISSION, "code %d", changing[i]);
		cr_assert_eq(call(c, changing[i], NULL, "RocketMQ", "87654321", remark, sizeof remark,
				  "brokerName", "b", "topic", "t", NULL),
			     RSP_NO_PERMISSION, "code %d", changing[i]);
		char want[128];
		snprintf(want, sizeof want, "ACL: account not admin: AccessKey=RocketMQ may not send code %d",
			 changing[i]);
		cr_assert_str_eq(remark, want);
	}
	/* the signed admin may still not switch the check off */
	cr_assert_eq(call(c, REQ_UPDATE_NAMESRV_CONFIG, "aclEnable=false", "rocketmq2", "12345678", remark,
			  sizeof remark, NULL),
		     RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "Can not update config in black list.");
	/* reads and broker requests are not checked by default */
	cr_assert_eq(ROUTE(c, NULL, NULL, remark), RSP_TOPIC_NOT_EXIST);
	cr_assert_eq(call(c, REQ_GET_NAMESRV_CONFIG, NULL, NULL, NULL, remark, sizeof remark, NULL), 0);
	cr_assert_eq(register_broker(c, NULL, NULL, remark, sizeof remark), 0, "%s", remark);

	/* counted by reason; logged once for this address (this minute),
	 * never with a secret */
	char *m = metrics_text();
	cr_assert_not_null(strstr(m, "rmqns_acl_refusals_total{reason=\"unsigned\"} 7\n"), "%s", m);
	cr_assert_not_null(strstr(m, "rmqns_acl_refusals_total{reason=\"unknown_access_key\"} 1\n"));
	cr_assert_not_null(strstr(m, "rmqns_acl_refusals_total{reason=\"bad_signature\"} 1\n"));
	cr_assert_not_null(strstr(m, "rmqns_acl_refusals_total{reason=\"not_admin\"} 7\n"));
	free(m);
	char *log = harness_read_log(&srv);
	const char *first = strstr(log, "ACL: refused");
	cr_assert_not_null(first);
	cr_assert_null(strstr(first + 1, "ACL: refused"), "a second refusal line: %s", log);
	cr_assert_null(strstr(log, "87654321"));
	cr_assert_null(strstr(log, "not-the-secret"));
	free(log);
	client_close(c);
}

/* The frames real mqadmin 4.9.8 sent, signed with rocketmq2/12345678. */
static int32_t replay(struct client *c, const char *name, char *remark, size_t remark_len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/java-4.9.8/frames/%s", TESTDATA_DIR, name);
	char *frame = harness_slurp(path);
	cr_assert_not_null(frame, "%s", path);
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size_t len = (size_t)ftell(f);
	fclose(f);
	cr_assert_eq(client_send_raw(c, frame, len, T), 0);
	free(frame);
	struct client_reply *r;
	cr_assert_eq(client_recv(c, &r, T), 0);
	int32_t code = r->cmd.code;
	snprintf(remark, remark_len, "%s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	return code;
}

Test(acl, frames_mqadmin_signed_and_the_tampered_one)
{
	const char *args[] = { "--aclEnable=true", "--aclReadRequests=true", NULL };
	char remark[256];
	struct client *c = start_acl(args);
	cr_assert_eq(replay(c, "00040-c010-c2s-req-code100.bin", remark, sizeof remark), 0, "%s", remark);
	cr_assert_eq(replay(c, "00050-c013-c2s-req-code102.bin", remark, sizeof remark), 0, "%s", remark);
	cr_assert_eq(replay(c, "00004-c002-c2s-req-code106.bin", remark, sizeof remark), 0, "%s", remark);
	cr_assert_eq(replay(c, "00036-c009-c2s-req-code318.bin", remark, sizeof remark), RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "ACL: signature mismatch for AccessKey=rocketmq2");
	client_close(c);
}

/* ---- white lists ---- */

Test(acl, global_white_list_needs_no_signature)
{
	const char *args[] = { "--aclEnable=true", "--aclReadRequests=true", "--aclBrokerRequests=true", NULL };
	char remark[256];
	start("globalWhiteRemoteAddresses:\n"
	      "  - 10.0.0.1\n"
	      "  - 127.0.0.1-9\n"
	      "accounts:\n"
	      "  - accessKey: rocketmq2\n"
	      "    secretKey: 12345678\n"
	      "    admin: true\n",
	      args);
	struct client *c = harness_connect_or_fail(&srv);
	/* 127.0.0.1 is in 127.0.0.1-9: even an unknown key passes, as in Java */
	cr_assert_eq(PUT_KV(c, NULL, NULL, remark), 0, "%s", remark);
	cr_assert_eq(PUT_KV(c, "nobody-key", "nobody-secret", remark), 0, "%s", remark);
	cr_assert_eq(ROUTE(c, NULL, NULL, remark), RSP_TOPIC_NOT_EXIST);
	cr_assert_eq(register_broker(c, NULL, NULL, remark, sizeof remark), 0, "%s", remark);
	client_close(c);
}

Test(acl, account_white_list_needs_no_signature)
{
	const char *args[] = { "--aclEnable=true", NULL };
	char remark[256];
	start("accounts:\n"
	      "  - accessKey: local-admin\n"
	      "    secretKey: local-secret\n"
	      "    whiteRemoteAddress: 127.0.0.*\n"
	      "    admin: true\n"
	      "  - accessKey: far-admin\n"
	      "    secretKey: far-secret\n"
	      "    whiteRemoteAddress: 10.1.1.1,10.1.1.2\n"
	      "    admin: true\n",
	      args);
	struct client *c = harness_connect_or_fail(&srv);
	/* the key names the account; from 127.0.0.* no signature is looked at */
	cr_assert_eq(call(c, REQ_PUT_KV_CONFIG, NULL, NULL, NULL, remark, sizeof remark, "namespace", "ns",
			  "key", "k", "value", "v", "AccessKey", "local-admin", NULL),
		     0, "%s", remark);
	cr_assert_eq(PUT_KV(c, "local-admin", "wrong-secret", remark), 0, "%s", remark);
	/* another account's white list does not cover this address */
	expect_no_permission(PUT_KV(c, "far-admin", "wrong-secret", remark), remark, "ACL: signature mismatch for AccessKey=far-admin");
	cr_assert_eq(PUT_KV(c, "far-admin", "far-secret", remark), 0, "%s", remark);
	/* without a key the account's list is never reached */
	cr_assert_eq(PUT_KV(c, NULL, NULL, remark), RSP_NO_PERMISSION);
	client_close(c);
}

/* ---- broker requests: unchecked by default, safe with the brokers white-listed ---- */

#define BROKERS_UNCHECKED_WARN "ACL: aclBrokerRequests=false: broker requests"

/* The danger the start-up WARN names: with broker requests unchecked, an
 * unsigned client from an address no list names registers a broker (it
 * could as well take a live broker's identity at its own address). */
Test(acl, broker_requests_unchecked_by_default_and_said_so_at_start)
{
	const char *args[] = { "--aclEnable=true", NULL };
	char remark[256];
	start(accounts_yaml, args);
	cr_assert(harness_wait_log(&srv, BROKERS_UNCHECKED_WARN, T), "no WARN at start");
	char *log = harness_read_log(&srv);
	const char *w = strstr(log, BROKERS_UNCHECKED_WARN);
	cr_assert_not_null(w);
	cr_expect_not_null(strstr(w, "aclBrokerRequests=true"), "%s", w);
	cr_expect_not_null(strstr(w, "globalWhiteRemoteAddresses"), "%s", w);
	free(log);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(register_broker(c, NULL, NULL, remark, sizeof remark), 0, "%s", remark);
	cr_assert_eq(call(c, REQ_UNREGISTER_BROKER, NULL, NULL, NULL, remark, sizeof remark, "brokerAddr",
			  "127.0.0.1:30911", "brokerId", "0", "brokerName", "acl-broker", "clusterName",
			  "AclCluster", NULL),
		     0, "%s", remark);
	client_close(c);
}

/* The safe set-up: broker requests checked, the brokers' addresses in the
 * global white list. 127.0.0.1 registers unsigned; 127.0.0.2 (a loopback
 * address the list does not name) is refused. */
Test(acl, broker_requests_checked_with_the_brokers_white_listed)
{
	const char *args[] = { "--aclEnable=true", "--aclBrokerRequests=true", NULL };
	char remark[256];
	int err = 0;
	start("globalWhiteRemoteAddresses:\n"
	      "  - 127.0.0.1\n"
	      "accounts:\n"
	      "  - accessKey: rocketmq2\n"
	      "    secretKey: 12345678\n"
	      "    admin: true\n",
	      args);
	struct client *broker = harness_connect_or_fail(&srv);
	cr_assert_eq(register_broker(broker, NULL, NULL, remark, sizeof remark), 0, "%s", remark);
	struct client *other = client_connect_from("127.0.0.1", srv.port, "127.0.0.2", T, &err);
	cr_assert_not_null(other, "cannot connect from 127.0.0.2: %d", err);
	cr_assert_eq(register_broker(other, NULL, NULL, remark, sizeof remark), RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "ACL: unsigned request: code 103 needs an AccessKey and a Signature");
	cr_assert_eq(call(other, REQ_UNREGISTER_BROKER, NULL, NULL, NULL, remark, sizeof remark, "brokerAddr",
			  "127.0.0.1:30911", "brokerId", "0", "brokerName", "acl-broker", "clusterName",
			  "AclCluster", NULL),
		     RSP_NO_PERMISSION);
	char *log = harness_read_log(&srv);
	cr_expect_null(strstr(log, BROKERS_UNCHECKED_WARN), "%s", log);
	free(log);
	client_close(other);
	client_close(broker);
}

/* ---- the read and broker classes, on both paths ---- */

static void read_and_broker_classes(const char *inline_arg)
{
	const char *args[] = { "--aclEnable=true", "--aclReadRequests=true", "--aclBrokerRequests=true",
			       inline_arg, NULL };
	char remark[256];
	struct client *c = start_acl(args);

	expect_no_permission(ROUTE(c, NULL, NULL, remark), remark, "ACL: unsigned request: code 105 needs an AccessKey and a Signature");
	expect_no_permission(ROUTE(c, "RocketMQ", "wrong-secret", remark), remark, "ACL: signature mismatch for AccessKey=RocketMQ");
	/* any account may sign a read */
	cr_assert_eq(ROUTE(c, "RocketMQ", "87654321", remark), RSP_TOPIC_NOT_EXIST);
	cr_assert_eq(call(c, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL, remark, sizeof remark, NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, REQ_GET_BROKER_CLUSTER_INFO, NULL, "RocketMQ", "87654321", remark, sizeof remark,
			  NULL),
		     0);
	/* an unknown code is a read too */
	cr_assert_eq(call(c, 7777, NULL, NULL, NULL, remark, sizeof remark, NULL), RSP_NO_PERMISSION);

	/* broker requests: any account, the body signed with the rest */
	cr_assert_eq(register_broker(c, NULL, NULL, remark, sizeof remark), RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "ACL: unsigned request: code 103 needs an AccessKey and a Signature");
	cr_assert_eq(register_broker(c, "RocketMQ", "87654321", remark, sizeof remark), 0, "%s", remark);
	cr_assert_eq(call(c, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, "RocketMQ", "87654321", remark, sizeof remark,
			  "topic", "AclTopic", NULL),
		     0, "%s", remark);
	cr_assert_eq(call(c, REQ_BROKER_HEARTBEAT, NULL, NULL, NULL, remark, sizeof remark, "clusterName",
			  "AclCluster", "brokerAddr", "127.0.0.1:30911", "brokerName", "acl-broker", NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, REQ_BROKER_HEARTBEAT, NULL, "RocketMQ", "87654321", remark, sizeof remark,
			  "clusterName", "AclCluster", "brokerAddr", "127.0.0.1:30911", "brokerName",
			  "acl-broker", NULL),
		     0, "%s", remark);
	/* changing requests still need the admin */
	cr_assert_eq(PUT_KV(c, "RocketMQ", "87654321", remark), RSP_NO_PERMISSION);
	cr_assert_eq(PUT_KV(c, "rocketmq2", "12345678", remark), 0);
	client_close(c);
}

Test(acl, read_and_broker_classes_inline)
{
	read_and_broker_classes("--routeQueryInline=true");
}

Test(acl, read_and_broker_classes_on_workers)
{
	read_and_broker_classes("--routeQueryInline=false");
}

/* ---- reloads ---- */

Test(acl, reload_on_sighup_and_on_file_change_broken_file_keeps_accounts)
{
	char remark[256];
	struct client *c = start_acl(acl_on);
	cr_assert_eq(PUT_KV(c, "rocketmq2", "12345678", remark), 0);

	/* a change on disk: the new secret holds, the old one no longer */
	write_accounts("accounts:\n"
		       "  - accessKey: rocketmq2\n"
		       "    secretKey: changed-secret\n"
		       "    admin: true\n");
	cr_assert(harness_wait_log(&srv, "ACL: reloaded", T), "no reload after the file changed");
	cr_assert_eq(PUT_KV(c, "rocketmq2", "changed-secret", remark), 0, "%s", remark);
	cr_assert_eq(PUT_KV(c, "rocketmq2", "12345678", remark), RSP_NO_PERMISSION);

	/* a broken file: logged, the accounts in force stay */
	write_accounts("accounts:\n  - accessKey: rocketmq2\n    secretKey: [oops\n");
	cr_assert(harness_wait_log(&srv, "not reloaded, the previous accounts stay in force", T));
	cr_assert_eq(PUT_KV(c, "rocketmq2", "changed-secret", remark), 0, "%s", remark);

	/* SIGHUP re-reads it even when the poll already saw it */
	write_accounts("accounts:\n"
		       "  - accessKey: hup-admin\n"
		       "    secretKey: hup-secret\n"
		       "    admin: true\n");
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(wait_log_after(&srv, "(SIGHUP)", "ACL: reloaded"), "SIGHUP did not re-read the accounts");
	cr_assert_eq(PUT_KV(c, "hup-admin", "hup-secret", remark), 0, "%s", remark);
	expect_no_permission(PUT_KV(c, "rocketmq2", "changed-secret", remark), remark, "ACL: unknown access key: no account for AccessKey=rocketmq2");
	char *log = harness_read_log(&srv);
	cr_assert_null(strstr(log, "hup-secret"));
	cr_assert_null(strstr(log, "changed-secret"));
	free(log);
	client_close(c);
}

Test(acl, sighup_alone_reloads)
{
	char remark[256];
	struct client *c = start_acl(acl_on);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(wait_log_after(&srv, "ACL: re-reading", "ACL: reloaded"));
	cr_assert_eq(PUT_KV(c, "rocketmq2", "12345678", remark), 0, "%s", remark);
	client_close(c);
}

/* ---- start-up ---- */

Test(acl, no_readable_file_at_start_is_an_error)
{
	char dir[256], arg[400], *out = NULL;
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-acl-start"), 0);
	snprintf(arg, sizeof arg, "--aclFile=%s/missing.yml", dir);
	const char *missing[] = { "--listenPort=0", "--bindAddress=127.0.0.1", "--aclEnable=true", arg, NULL };
	int st = harness_run(missing, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
	cr_assert_null(strstr(out ? out : "", "boot success"));
	free(out);

	/* not enabled: the missing file does not matter */
	snprintf(arg, sizeof arg, "--aclFile=%s/missing.yml", dir);
	const char *off[] = { "-p", arg, NULL };
	out = NULL;
	st = harness_run(off, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	cr_assert_not_null(strstr(out, "aclEnable=false"));
	free(out);

	char path[320];
	snprintf(path, sizeof path, "%s/broken.yml", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("accounts: [\n", f);
	fclose(f);
	snprintf(arg, sizeof arg, "--aclFile=%s", path);
	const char *broken[] = { "--listenPort=0", "--bindAddress=127.0.0.1", "--aclEnable=true", arg, NULL };
	out = NULL;
	st = harness_run(broken, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
	free(out);
	harness_rmdir(dir);
}

/* Starts the server with the embedded controller (one node) and the ACL
 * options `acl_args`; a client of the controller's port. */
static struct client *start_controller(const char *const *acl_args)
{
	static struct harness_solo_controller ctl;
	cr_assert_eq(harness_solo_controller(&ctl, acl_args), 0, "no free port pair");
	start(accounts_yaml, ctl.args);
	int err;
	struct client *c = client_connect("127.0.0.1", ctl.port, 2000, &err);
	cr_assert_not_null(c, "controller port: %d", err);
	return c;
}

static void stop_controller(struct client *c)
{
	client_close(c);
	cr_assert_eq(harness_cleanup(&srv), 0);
}

/* The embedded controller's port takes the same check: its config and a
 * clean need an admin's signature, what brokers send needs one with
 * aclBrokerRequests, the metadata query is a read. */
Test(acl, controller_port_checked_like_the_nameserver_port)
{
	static const char *const args[] = { "--aclEnable=true", "--aclBrokerRequests=true", NULL };
	struct client *c = start_controller(args);
	char remark[256];

	cr_assert_eq(call(c, 1005, NULL, NULL, NULL, remark, sizeof remark, NULL), 0, "%s", remark);
	cr_assert_eq(call(c, 1009, "notifyBrokerRoleChanged=false", NULL, NULL, remark, sizeof remark, NULL),
		     RSP_NO_PERMISSION);
	cr_assert_str_eq(remark, "ACL: unsigned request: code 1009 needs an AccessKey and a Signature");
	cr_assert_eq(call(c, 1009, "notifyBrokerRoleChanged=false", "RocketMQ", "87654321", remark,
			  sizeof remark, NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, 1009, "notifyBrokerRoleChanged=false", "rocketmq2", "12345678", remark,
			  sizeof remark, NULL),
		     0, "%s", remark);
	cr_assert_eq(call(c, 1011, NULL, NULL, NULL, remark, sizeof remark, "clusterName", "C",
			  "brokerName", "b", NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, 1013, NULL, NULL, NULL, remark, sizeof remark, "clusterName", "C",
			  "brokerName", "b", "appliedBrokerId", "1", "registerCheckCode", "127.0.0.1:1;1", NULL),
		     RSP_NO_PERMISSION);
	cr_assert_eq(call(c, 1013, NULL, "RocketMQ", "87654321", remark, sizeof remark, "clusterName", "C",
			  "brokerName", "b", "appliedBrokerId", "1", "registerCheckCode", "127.0.0.1:1;1", NULL),
		     0, "%s", remark);
	/* the admin's change is in the controller's own file, below HOME */
	char *path = harness_path_in(srv.dir, "controller/controller.properties");
	char *text = harness_slurp(path);
	cr_assert_not_null(text, "%s not written", path);
	cr_assert_not_null(strstr(text, "\nnotifyBrokerRoleChanged=false\n"), "%s", text);
	free(text);
	free(path);
	stop_controller(c);
}

/* ---- every controller request class against every kind of signer ---- */

enum ctl_class { CTL_ADMIN, CTL_BROKER, CTL_READ };

/* One request of the controller's port, its class, and its ext fields
 * (key, value pairs; at most five). */
struct ctl_case {
	int32_t code;
	enum ctl_class cls;
	const char *body;
	const char *ext[10];
};

static const struct ctl_case ctl_cases[] = {
	{ 1009, CTL_ADMIN, "notifyBrokerRoleChanged=true", { NULL } },
	{ 1011, CTL_ADMIN, NULL, { "clusterName", "C", "brokerName", "b", NULL } },
	{ 1002, CTL_ADMIN, NULL,
	  { "clusterName", "C", "brokerName", "b", "brokerId", "1", "designateElect", "true", NULL } },
	{ 1002, CTL_ADMIN, NULL,
	  { "clusterName", "C", "brokerName", "b", "brokerId", "1", "designateElect", "TRUE", NULL } },
	{ 1002, CTL_BROKER, NULL,
	  { "clusterName", "C", "brokerName", "b", "brokerId", "1", "designateElect", "false", NULL } },
	{ 1002, CTL_BROKER, NULL, { "clusterName", "C", "brokerName", "b", NULL } },
	{ 1013, CTL_BROKER, NULL,
	  { "clusterName", "C", "brokerName", "b", "appliedBrokerId", "1", "registerCheckCode",
	    "127.0.0.1:1;1", NULL } },
	{ 1012, CTL_BROKER, NULL, { "clusterName", "C", "brokerName", "b", NULL } },
	{ 1003, CTL_BROKER, NULL,
	  { "clusterName", "C", "brokerName", "b", "brokerId", "1", "brokerAddress", "127.0.0.1:1", NULL } },
	{ 1001, CTL_BROKER, "{\"syncStateSet\":[1],\"syncStateSetEpoch\":1}",
	  { "brokerName", "b", "masterBrokerId", "1", "masterEpoch", "1", NULL } },
	{ 904, CTL_BROKER, NULL,
	  { "clusterName", "C", "brokerName", "b", "brokerId", "1", "brokerAddr", "127.0.0.1:1", NULL } },
	{ 1004, CTL_READ, NULL, { "brokerName", "b", NULL } },
	{ 1005, CTL_READ, NULL, { NULL } },
	{ 1006, CTL_READ, "[\"b\"]", { NULL } },
	{ 1010, CTL_READ, NULL, { NULL } },
};

enum ctl_signer { SIGN_NONE, SIGN_WRONG, SIGN_NORMAL, SIGN_ADMIN, SIGNER_COUNT };

static int32_t ctl_call(struct client *c, const struct ctl_case *k, enum ctl_signer who, char *remark,
			size_t remark_len)
{
	static const char *const keys[SIGNER_COUNT][2] = {
		[SIGN_NONE] = { NULL, NULL },
		[SIGN_WRONG] = { "rocketmq2", "not-the-secret" },
		[SIGN_NORMAL] = { "RocketMQ", "87654321" },
		[SIGN_ADMIN] = { "rocketmq2", "12345678" },
	};
	const char *const *e = k->ext;
	return call(c, k->code, k->body, keys[who][0], keys[who][1], remark, remark_len, e[0], e[1], e[2],
		    e[3], e[4], e[5], e[6], e[7], e[8], e[9], NULL);
}

/* Whether a signer's request of a class is refused with these options. */
static bool ctl_refused(enum ctl_class cls, enum ctl_signer who, bool broker_checked, bool read_checked)
{
	bool checked = cls == CTL_ADMIN || (cls == CTL_BROKER && broker_checked) ||
		       (cls == CTL_READ && read_checked);
	if (!checked)
		return false;
	return who == SIGN_NONE || who == SIGN_WRONG || (who == SIGN_NORMAL && cls == CTL_ADMIN);
}

static const char *const ctl_refusal_start[SIGNER_COUNT] = {
	[SIGN_NONE] = "ACL: unsigned request: code ",
	[SIGN_WRONG] = "ACL: signature mismatch for AccessKey=rocketmq2",
	[SIGN_NORMAL] = "ACL: account not admin: AccessKey=RocketMQ may not send code ",
};

static void ctl_check_every_class(bool broker_checked, bool read_checked)
{
	const char *args[] = { "--aclEnable=true",
			       broker_checked ? "--aclBrokerRequests=true" : "--aclBrokerRequests=false",
			       read_checked ? "--aclReadRequests=true" : "--aclReadRequests=false", NULL };
	struct client *c = start_controller(args);
	char remark[256];

	for (size_t i = 0; i < sizeof ctl_cases / sizeof ctl_cases[0]; i++) {
		const struct ctl_case *k = &ctl_cases[i];
		for (int who = SIGN_NONE; who < SIGNER_COUNT; who++) {
			int32_t code = ctl_call(c, k, (enum ctl_signer)who, remark, sizeof remark);
			if (!ctl_refused(k->cls, (enum ctl_signer)who, broker_checked, read_checked)) {
				cr_assert_neq(code, RSP_NO_PERMISSION, "case %zu (code %d), signer %d: %s", i,
					      k->code, who, remark);
				continue;
			}
			cr_assert_eq(code, RSP_NO_PERMISSION, "case %zu (code %d), signer %d: answered %d %s",
				     i, k->code, who, code, remark);
			const char *want = ctl_refusal_start[who];
			cr_assert_eq(strncmp(remark, want, strlen(want)), 0, "case %zu, signer %d: %s", i, who,
				     remark);
		}
	}
	/* nothing the refused operator requests asked for happened */
	char *path = harness_path_in(srv.dir, "controller/controller.properties");
	char *text = harness_slurp(path);
	cr_assert(text && strstr(text, "\nnotifyBrokerRoleChanged=true\n"), "the admin's 1009 not applied");
	free(text);
	free(path);
	stop_controller(c);
}

Test(acl, controller_classes_brokers_and_reads_checked)
{
	ctl_check_every_class(true, true);
}

/* The default: what brokers send and reads pass unsigned, but the
 * operator's requests (a designated election among them) never do. */
Test(acl, controller_classes_operator_requests_always_checked)
{
	ctl_check_every_class(false, false);
}
