/* The log lines an operator greps for: one INFO (or WARN) line per broker
 * registered, data version changed, broker removed with its reason, topic
 * deleted, write permission changed, KV change and config update, with the
 * fields needed to act on it; heartbeats that change nothing stay out.
 * The line's form: the version first, ISO 8601 times with the offset,
 * thread names (never a number), the boot line once; JSON lines in a
 * logFile, and that file reopened on SIGHUP after a rotation. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define T 5000

static struct harness_server srv;

TestSuite(logs, .timeout = 60);

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
	harness_call_ok(c, REQ_REGISTER_BROKER, b, "brokerName", name, "brokerAddr", addr, "clusterName", "LgCluster",
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
	harness_call_ok(c, REQ_WIPE_WRITE_PERM_OF_BROKER, NULL, "brokerName", "lg-broker", NULL);
	expect_log("route: write permission of lg-broker wiped on 2 topic(s)");
	harness_call_ok(c, REQ_ADD_WRITE_PERM_OF_BROKER, NULL, "brokerName", "lg-broker", NULL);
	expect_log("route: write permission of lg-broker added on 2 topic(s)");
	harness_call_ok(c, REQ_DELETE_TOPIC_IN_NAMESRV, NULL, "topic", "lg-b", NULL);
	expect_log("route: topic lg-b deleted");
	harness_call_ok(c, REQ_PUT_KV_CONFIG, NULL, "namespace", "LG", "key", "k", "value", "v", NULL);
	expect_log("PUT_KV_CONFIG from ");
	expect_log(": LG / k = v");
	harness_call_ok(c, REQ_DELETE_KV_CONFIG, NULL, "namespace", "LG", "key", "k", NULL);
	expect_log(": LG / k");
	const char *props = "orderMessageEnable=true";
	harness_call_ok(c, REQ_UPDATE_NAMESRV_CONFIG, props, NULL);
	expect_log("UPDATE_NAMESRV_CONFIG from ");

	/* the three ways out */
	harness_call_ok(c, REQ_UNREGISTER_BROKER, NULL, "brokerName", "lg-broker", "brokerAddr", "10.8.0.1:10911", "clusterName",
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
		harness_call_ok(c, REQ_BROKER_HEARTBEAT, NULL, "clusterName", "LgCluster", "brokerAddr", "10.8.0.4:10911",
		     "brokerName", "lg-beat", NULL);
	reg(c, "lg-beat", "10.8.0.4:10911", 1, "60000"); /* the same data version: a heartbeat too */
	harness_call_ok(c, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL); /* a barrier: what came before is logged */
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

/* Every line starts with an ISO 8601 time (milliseconds, the zone's
 * offset), a level and a thread name; the first names the version and
 * build; a WARN about the options (logged before any thread was started)
 * is main's; the boot line is on stdout, not repeated in the log. */
Test(logs, lines_start_with_iso_time_level_and_thread_name)
{
	const char *args[] = { "--serverCallbackExecutorThreads=4", NULL }; /* accepted, no effect: a WARN */
	cr_assert_eq(harness_start(&srv, args), 0);
	expect_log("serverCallbackExecutorThreads");
	char *log = harness_read_log(&srv);
	cr_assert_not_null(log);
	regex_t re;
	cr_assert_eq(regcomp(&re,
			     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} "
			     "(DEBUG|INFO |WARN |ERROR) \\[[a-z][a-z0-9-]*\\] ",
			     REG_EXTENDED | REG_NEWLINE),
		     0);
	int lines = 0;
	for (char *line = log; *line; line = strchr(line, '\n') + 1, lines++) {
		cr_expect_eq(regexec(&re, line, 0, NULL, 0), 0, "line: %.*s", (int)strcspn(line, "\n"), line);
		cr_assert_not_null(strchr(line, '\n'));
	}
	regfree(&re);
	cr_expect_gt(lines, 3);
	cr_expect_not_null(strstr(log, " INFO  [main] rmqns 0.1.0 (build " RMQNS_BUILD ") starting, pid "),
			   "%s", log);
	cr_expect_lt(strstr(log, "rmqns 0.1.0 (build"), strchr(log, '\n'), "not the first line:\n%s", log);
	cr_expect_not_null(strstr(log, " WARN  [main] option serverCallbackExecutorThreads=4 is accepted"), "%s", log);
	cr_expect_null(strstr(log, "boot success"), "the boot line is in the log:\n%s", log);
	free(log);
	char *out = harness_slurp(srv.out_path);
	cr_assert_not_null(out);
	cr_expect_not_null(strstr(out, "The Name Server boot success."), "%s", out);
	free(out);
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	harness_cleanup(&srv);
}

/* Each line of the file is one JSON object with the text line's fields. */
static int expect_json_lines(const char *path)
{
	char *text = harness_slurp(path);
	cr_assert_not_null(text, "cannot read %s", path);
	int n = 0;
	for (char *line = text; *line; line = strchr(line, '\n') + 1, n++) {
		cr_assert_not_null(strchr(line, '\n'), "a cut line: %s", line);
		json_error_t e;
		json_t *o = json_loadb(line, strcspn(line, "\n"), 0, &e);
		cr_assert_not_null(o, "%s: %.*s", e.text, (int)strcspn(line, "\n"), line);
		cr_expect_eq(json_object_size(o), 4, "%.*s", (int)strcspn(line, "\n"), line);
		const char *t = json_string_value(json_object_get(o, "time"));
		cr_expect(t && strlen(t) == 29 && t[10] == 'T' && (t[23] == '+' || t[23] == '-'),
			  "time %s", t ? t : "(none)");
		cr_expect(json_is_string(json_object_get(o, "level")) &&
				  json_is_string(json_object_get(o, "thread")) &&
				  json_is_string(json_object_get(o, "message")),
			  "%.*s", (int)strcspn(line, "\n"), line);
		json_decref(o);
	}
	free(text);
	return n;
}

/* logFormat=json into a logFile; logrotate renames the file and sends
 * SIGHUP: the next lines go to a new file at the same path. */
Test(logs, json_lines_in_a_file_reopened_on_sighup)
{
	char dir[256], arg[400];
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-logfile"), 0);
	char *path = harness_path_in(dir, "namesrv.log"), *moved = harness_path_in(dir, "namesrv.log.1");
	cr_assert(path && moved);
	snprintf(arg, sizeof arg, "--logFile=%s", path);
	const char *args[] = { "--logFormat=json", arg, NULL };
	cr_assert_eq(harness_start(&srv, args), 0);
	struct client *c = harness_connect(&srv);
	cr_assert(c);
	reg(c, "lf-before", "10.8.1.1:10911", 1, "60000");
	cr_assert(harness_wait_file(path, "name lf-before", T), "no registration line in the file");
	char *head = harness_slurp(path);
	cr_assert_not_null(head);
	cr_expect_eq(strncmp(head, "{\"time\":\"", 9), 0, "%s", head);
	cr_expect_not_null(strstr(head, "\"thread\":\"main\",\"message\":\"rmqns 0.1.0 (build"), "%s",
			   head);
	cr_expect_lt(strstr(head, "rmqns 0.1.0 (build"), strchr(head, '\n'), "not the first line:\n%s",
		     head);
	free(head);

	cr_assert_eq(rename(path, moved), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(harness_wait_file(path, "SIGHUP", T), "no new file after SIGHUP");
	reg(c, "lf-after", "10.8.1.2:10911", 1, "60000");
	cr_assert(harness_wait_file(path, "name lf-after", T),
		  "the registration after SIGHUP is not in the new file");
	char *old = harness_slurp(moved);
	cr_assert_not_null(old);
	cr_expect_not_null(strstr(old, "name lf-before"));
	cr_expect_null(strstr(old, "lf-after"), "%s", old);
	free(old);
	cr_expect_gt(expect_json_lines(moved), 3);
	cr_expect_geq(expect_json_lines(path), 2);
	/* nothing on stderr but what comes before the options are read */
	char *err = harness_read_log(&srv);
	cr_expect(err && !strstr(err, "lf-before"), "%s", err ? err : "");
	free(err);

	client_close(c);
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	harness_cleanup(&srv);
	harness_rmdir(dir);
	free(path);
	free(moved);
}
