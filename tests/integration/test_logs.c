/* The log lines an operator greps for: one INFO (or WARN) line per broker
 * registered, data version changed, broker removed with its reason, topic
 * deleted, write permission changed, KV change and config update, with the
 * fields needed to act on it; heartbeats that change nothing stay out. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define T 5000

static struct harness_server srv;

TestSuite(logs, .timeout = 60);

/* code with ext fields (key, value, ..., NULL), answered with code 0 */
#define call(conn_, code_, body_, ...)                                                          \
	do {                                                                                    \
		struct client_reply *r_ = NULL;                                                 \
		cr_assert_eq(harness_call((conn_), (code_), (body_), &r_, __VA_ARGS__), 0,      \
			     "code %d unanswered", (int)(code_));                               \
		cr_assert_eq(r_->cmd.code, 0, "code %d answered %d: %s", (int)(code_),          \
			     r_->cmd.code, r_->cmd.remark ? r_->cmd.remark : "");               \
		client_reply_free(r_);                                                          \
	} while (0)

static char *body(int counter)
{
	char *b = NULL;
	cr_assert_geq(asprintf(&b,
			       "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
			       "{\"counter\":%d,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
			       "\"lg-a\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"lg-a\",\"writeQueueNums\":4},"
			       "\"lg-b\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"lg-b\",\"writeQueueNums\":4}}}}",
			       counter),
		      0);
	return b;
}

static void reg(struct client *c, const char *name, const char *addr, int counter, const char *timeout)
{
	char *b = body(counter);
	call(c, REQ_REGISTER_BROKER, b, "brokerName", name, "brokerAddr", addr, "clusterName", "LgCluster",
	     "haServerAddr", "h:1", "brokerId", "0", "heartbeatTimeoutMillis", timeout, "enableActingMaster",
	     "false", NULL);
	free(b);
}

static void expect_log(const char *line)
{
	cr_expect(harness_wait_log(&srv, line, T), "no log line with: %s", line);
}

Test(logs, every_change_an_operator_acts_on_has_its_line)
{
	const char *args[] = { "--scanNotActiveBrokerInterval=200", NULL };
	cr_assert_eq(harness_start(&srv, args), 0);
	struct client *c = harness_connect(&srv), *d = harness_connect(&srv);
	cr_assert(c && d);

	reg(c, "lg-broker", "10.8.0.1:10911", 1, "60000");
	expect_log("route: broker registered: cluster LgCluster, name lg-broker, id 0, address 10.8.0.1:10911, 2 topics");
	reg(c, "lg-broker", "10.8.0.1:10911", 2, "60000");
	expect_log("route: broker 10.8.0.1:10911 (lg-broker, id 0) data version 1/1/0 -> 2/1/0, 2 topics");
	call(c, REQ_WIPE_WRITE_PERM_OF_BROKER, NULL, "brokerName", "lg-broker", NULL);
	expect_log("route: write permission of lg-broker wiped on 2 topic(s)");
	call(c, REQ_ADD_WRITE_PERM_OF_BROKER, NULL, "brokerName", "lg-broker", NULL);
	expect_log("route: write permission of lg-broker added on 2 topic(s)");
	call(c, REQ_DELETE_TOPIC_IN_NAMESRV, NULL, "topic", "lg-b", NULL);
	expect_log("route: topic lg-b deleted");
	call(c, REQ_PUT_KV_CONFIG, NULL, "namespace", "LG", "key", "k", "value", "v", NULL);
	expect_log("PUT_KV_CONFIG from ");
	expect_log(": LG / k = v");
	call(c, REQ_DELETE_KV_CONFIG, NULL, "namespace", "LG", "key", "k", NULL);
	expect_log(": LG / k");
	const char *props = "orderMessageEnable=true";
	call(c, REQ_UPDATE_NAMESRV_CONFIG, props, NULL);
	expect_log("UPDATE_NAMESRV_CONFIG from ");

	/* the three ways out */
	call(c, REQ_UNREGISTER_BROKER, NULL, "brokerName", "lg-broker", "brokerAddr", "10.8.0.1:10911", "clusterName",
	     "LgCluster", "brokerId", "0", NULL);
	expect_log("route: broker 10.8.0.1:10911 (lg-broker) of cluster LgCluster removed: unregistered");
	reg(d, "lg-closed", "10.8.0.2:10911", 1, "60000");
	client_close(d);
	expect_log("route: broker 10.8.0.2:10911 (lg-closed) of cluster LgCluster removed: connection closed");
	struct client *e = harness_connect(&srv); /* an expired broker's connection is closed */
	cr_assert(e);
	reg(e, "lg-silent", "10.8.0.3:10911", 1, "500");
	expect_log("route: broker 10.8.0.3:10911 (lg-silent) of cluster LgCluster removed: expired, silent for ");
	expect_log("(timeout 500 ms)");

	/* a heartbeat that changes nothing stays out of the log */
	reg(c, "lg-beat", "10.8.0.4:10911", 1, "60000");
	expect_log("name lg-beat");
	for (int i = 0; i < 5; i++)
		call(c, REQ_BROKER_HEARTBEAT, NULL, "clusterName", "LgCluster", "brokerAddr", "10.8.0.4:10911",
		     "brokerName", "lg-beat", NULL);
	reg(c, "lg-beat", "10.8.0.4:10911", 1, "60000"); /* the same data version: a heartbeat too */
	call(c, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL); /* a barrier: what came before is logged */
	char *log = harness_read_log(&srv);
	cr_assert_not_null(log);
	const char *beat = strstr(log, "name lg-beat");
	cr_assert_not_null(beat);
	cr_expect_null(strstr(beat, "10.8.0.4:10911 (lg-beat"), "a heartbeat was logged:\n%s", beat);
	free(log);

	client_close(c);
	client_close(e);
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	harness_cleanup(&srv);
}
