/* rmqns-admin against the real server: every subcommand, its table and
 * --json output, the exit codes, writes to several servers (one of them
 * dead), a refused write with its code and remark, a timeout against a
 * listener that never answers, clusterDiff finding (and not finding)
 * differences between two servers, TLS against an enforcing server,
 * --version, SUBCOMMAND -h, --json failures, and deleteTopic reaching a
 * fake master broker. Brokers are registered over
 * connections the test keeps open for its whole length. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker_json.h"
#include "harness.h"
#include "rmqns/buf.h"

#define T HARNESS_IO_TIMEOUT_MS
#define MAX_BROKER_CONNS 16
#define ADMIN_RUN_LIMIT_MS 30000

static struct harness_server srv[2];
static struct client *broker_conns[MAX_BROKER_CONNS];
static size_t nbroker_conns;
static char dir[64];
static int silent_fd = -1;

static void admin_init(void)
{
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-admin"), 0);
}

static void admin_fini(void)
{
	for (size_t i = 0; i < nbroker_conns; i++)
		client_close(broker_conns[i]);
	nbroker_conns = 0;
	if (silent_fd >= 0)
		close(silent_fd);
	silent_fd = -1;
	cr_expect_eq(harness_cleanup(&srv[0]), 0, "server 0 did not stop cleanly");
	cr_expect_eq(harness_cleanup(&srv[1]), 0, "server 1 did not stop cleanly");
	harness_rmdir(dir);
}

TestSuite(admin, .init = admin_init, .fini = admin_fini, .timeout = 120);

static void start(int i, const char *const *args)
{
	cr_assert_eq(harness_start(&srv[i], args), 0, "server %d did not start", i);
}

/* Server i with ACL on for every request, the accounts file as given. */
static void start_acl(int i, const char *accounts)
{
	char path[128], arg[160];
	snprintf(path, sizeof path, "%s/plain_acl.yml", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(accounts, f);
	fclose(f);
	snprintf(arg, sizeof arg, "--aclFile=%s", path);
	const char *args[] = { "--aclEnable=true", "--aclReadRequests=true", arg, NULL };
	start(i, args);
}

static char *addr_of(int i)
{
	static char bufs[4][32];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, 32, "127.0.0.1:%d", srv[i].port);
	return b;
}

static int dead_port(void)
{
	int port = harness_free_port();
	cr_assert_gt(port, 0, "no free loopback port");
	return port;
}

/* A listener that accepts (run_admin accepts for it) and never answers. */
static int silent_listener(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	silent_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert(silent_fd >= 0);
	cr_assert_eq(bind(silent_fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(silent_fd, 16), 0);
	cr_assert_eq(getsockname(silent_fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

struct run {
	int code; /* exit status */
	char *out, *err;
};

/* Runs rmqns-admin with the arguments (NULL-terminated) to completion,
 * accepting connections on the silent listener meanwhile. Killed (and the
 * test failed) if it runs past ADMIN_RUN_LIMIT_MS. */
static struct run run_admin(const char *const *args)
{
	static int seq;
	struct run r = { 0 };
	char *outp = NULL, *errp = NULL;
	const char *argv[32];
	int held[16], nheld = 0;
	size_t n = 0;

	cr_assert(asprintf(&outp, "%s/out-%d", dir, seq) > 0);
	cr_assert(asprintf(&errp, "%s/err-%d", dir, seq++) > 0);
	argv[n++] = RMQNS_ADMIN_BIN;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;

	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		unsetenv("NAMESRV_ADDR");
		execv(RMQNS_ADMIN_BIN, (char *const *)argv);
		_exit(127);
	}
	int status = 0, waited = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (silent_fd >= 0 && nheld < 16) {
			int c = accept(silent_fd, NULL, NULL);
			if (c >= 0)
				held[nheld++] = c;
		}
		if (waited > ADMIN_RUN_LIMIT_MS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			cr_assert_fail("rmqns-admin %s did not finish", args[0]);
		}
		harness_sleep_ms(2);
		waited += 2;
	}
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	cr_assert(WIFEXITED(status), "rmqns-admin %s died (status %d)", args[0], status);
	r.code = WEXITSTATUS(status);
	r.out = harness_slurp(outp);
	r.err = harness_slurp(errp);
	cr_assert(r.out && r.err);
	free(outp);
	free(errp);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static json_t *run_json(const struct run *r)
{
	json_error_t e;
	json_t *v = json_loads(r->out, 0, &e);
	cr_assert_not_null(v, "not JSON (%s): %s", e.text, r->out);
	return v;
}

#define RUN(...) run_admin((const char *const[]){ __VA_ARGS__, NULL })

/* A run that must exit 0 (its stderr shown when it does not). */
static struct run run_ok(struct run r)
{
	cr_assert_eq(r.code, 0, "%s", r.err);
	return r;
}
#define RUN_OK(...) run_ok(RUN(__VA_ARGS__))

/* A run that must exit with code; freed. */
static void run_exits(int code, struct run r)
{
	cr_assert_eq(r.code, code, "exit %d, not %d: %s%s", r.code, code, r.out, r.err);
	run_free(&r);
}

/* Its stdout holds each text given, up to NULL. */
static void out_has(const struct run *r, ...)
{
	va_list ap;
	va_start(ap, r);
	for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
		cr_assert_not_null(strstr(r->out, want), "no %s in: %s", want, r->out);
	va_end(ap);
}

/* ---- brokers ---- */

struct topic_spec {
	const char *name;
	int queues; /* read and write */
	int perm;
};

/* Registers a broker on a connection kept open until the test ends. The
 * body always holds at least two topics: a first registration with one
 * would be taken for an incremental one and refused. */
static void reg_broker(int s, const char *cluster, const char *name, const char *addr, int id,
		       bool acting, const struct topic_spec *topics, size_t ntopics)
{
	struct buf body = BUF_INIT;
	char ids[16];
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	cr_assert(nbroker_conns < MAX_BROKER_CONNS);
	cr_assert(ntopics >= 1, "a filler and one topic at least");
	struct client *c = harness_connect(&srv[s]);
	cr_assert_not_null(c);
	broker_conns[nbroker_conns++] = c;
	cr_assert_eq(buf_printf(&body, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{"
				       "\"dataVersion\":{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},"
				       "\"topicConfigTable\":{\"filler-%s\":{\"perm\":6,\"readQueueNums\":1,"
				       "\"topicName\":\"filler-%s\",\"writeQueueNums\":1}", name, name), 0);
	for (size_t i = 0; i < ntopics; i++)
		cr_assert_eq(buf_printf(&body, ",\"%s\":{\"perm\":%d,\"readQueueNums\":%d,\"topicName\":\"%s\","
					       "\"writeQueueNums\":%d}", topics[i].name, topics[i].perm,
					topics[i].queues, topics[i].name, topics[i].queues), 0);
	cr_assert_eq(buf_append_str(&body, "}}}"), 0);
	snprintf(ids, sizeof ids, "%d", id);
	struct remoting_ext_field ext[] = {
		{ "brokerName", name }, { "brokerAddr", addr }, { "clusterName", cluster },
		{ "haServerAddr", "127.0.0.1:1" }, { "brokerId", ids },
		{ "enableActingMaster", acting ? "true" : "false" },
	};
	harness_request_init(&req, 103, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.body = body.data;
	req.body_len = (uint32_t)body.len;
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	buf_free(&body);
}

static const struct topic_spec topic_a[] = { { "TopicA", 4, 6 } };

/* ---- reads ---- */

Test(admin, cluster_list_table_and_json)
{
	start(0, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	reg_broker(0, "C1", "broker-a", "10.0.0.2:10911", 1, false, topic_a, 1);
	reg_broker(0, "C2", "broker-b", "10.0.0.3:10911", 0, false, topic_a, 1);

	struct run r = RUN_OK("clusterList", "-n", addr_of(0));
	cr_assert_str_eq(r.out,
			 "#Cluster Name     #Broker Name            #BID  #Addr\n"
			 "C1                broker-a                0     10.0.0.1:10911\n"
			 "C1                broker-a                1     10.0.0.2:10911\n"
			 "C2                broker-b                0     10.0.0.3:10911\n");
	run_free(&r);

	r = RUN("clusterList", "--json", "-n", addr_of(0));
	cr_assert_eq(r.code, 0);
	json_t *v = run_json(&r), *b = json_object_get(v, "brokers");
	cr_assert_eq(json_array_size(b), 3);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(b, 1), "addr")), "10.0.0.2:10911");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(b, 1), "brokerId")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(b, 2), "cluster")), "C2");
	cr_assert_str_eq(json_string_value(json_object_get(v, "server")), addr_of(0));
	json_decref(v);
	run_free(&r);
}

Test(admin, brokers_roles)
{
	start(0, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	reg_broker(0, "C1", "broker-a", "10.0.0.2:10911", 1, false, topic_a, 1);

	struct run r = RUN_OK("brokers", "-n", addr_of(0));
	out_has(&r, "#Role",
		"0     master         10.0.0.1:10911\n",
		"1     slave          10.0.0.2:10911\n", NULL);
	run_free(&r);
	r = RUN("brokers", "--json", "-n", addr_of(0));
	json_t *v = run_json(&r), *b = json_object_get(v, "brokers");
	cr_assert_eq(json_array_size(b), 2);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(b, 0), "role")), "master");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(b, 1), "role")), "slave");
	json_decref(v);
	run_free(&r);
}

/* With the server's HTTP endpoint on, brokers adds heartbeat age, timeout
 * and topic count; found through the server's httpPort, or --http. */
Test(admin, brokers_heartbeat_columns_from_http)
{
	int hp = dead_port();
	char harg[32], haddr[32];
	snprintf(harg, sizeof harg, "--httpPort=%d", hp);
	snprintf(haddr, sizeof haddr, "127.0.0.1:%d", hp);
	const char *const args[] = { harg, NULL };
	start(0, args);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);

	struct run r = RUN_OK("brokers", "-n", addr_of(0));
	cr_assert_not_null(strstr(r.out, "#Addr                   #HB Age(ms)  #Timeout(ms)  #Topics\n"),
			   "%s", r.out);
	/* the default timeout (no heartbeatTimeoutMillis sent); two topics
	 * (reg_broker's filler and TopicA) */
	out_has(&r, "  120000        2\n", NULL);
	run_free(&r);

	r = RUN_OK("brokers", "--json", "--http", haddr, "-n", addr_of(0));
	json_t *v = run_json(&r), *b = json_array_get(json_object_get(v, "brokers"), 0);
	expect_broker_heartbeat(b, 120000, 2);
	json_decref(v);
	run_free(&r);

	/* a wrong --http: the columns are left out, with a word on stderr */
	char dead[32];
	snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port());
	r = RUN_OK("brokers", "--http", dead, "-n", addr_of(0));
	cr_assert_null(strstr(r.out, "#HB Age"), "%s", r.out);
	cr_assert_not_null(strstr(r.err, "no answer from the HTTP endpoint"), "%s", r.err);
	run_free(&r);
}

/* A slave-only group with acting master on, its topic read-only: the
 * server routes its lowest id as 0 only while supportActingMaster is on. */
Test(admin, brokers_acting_master_only_when_routed_so)
{
	static const struct topic_spec ro[] = { { "TopicRO", 2, 4 } };
	static const char *const on[] = { "--supportActingMaster=true", NULL };
	start(0, on);
	start(1, NULL);
	reg_broker(0, "C1", "broker-s", "10.0.0.7:10911", 2, true, ro, 1);
	reg_broker(1, "C1", "broker-s", "10.0.0.7:10911", 2, true, ro, 1);

	struct run r = RUN_OK("brokers", "-n", addr_of(0));
	out_has(&r, "2     acting master  10.0.0.7:10911\n", NULL);
	run_free(&r);
	r = RUN_OK("brokers", "-n", addr_of(1));
	out_has(&r, "2     slave          10.0.0.7:10911\n", NULL);
	run_free(&r);
}

Test(admin, topic_route_and_missing_topic)
{
	start(0, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);

	struct run r = RUN_OK("topicRoute", "-t", "TopicA", "-n", addr_of(0));
	out_has(&r, "C1                broker-a                0     10.0.0.1:10911\n",
		"broker-a                4           4           6      0", NULL);
	run_free(&r);

	r = RUN("topicRoute", "--json", "-t", "TopicA", "-n", addr_of(0));
	json_t *v = run_json(&r);
	json_t *q = json_array_get(json_object_get(v, "queueDatas"), 0);
	cr_assert_eq(json_integer_value(json_object_get(q, "readQueueNums")), 4);
	cr_assert_eq(json_integer_value(json_object_get(q, "perm")), 6);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(
		json_array_get(json_object_get(v, "brokerDatas"), 0), "brokerAddrs"), "0")), "10.0.0.1:10911");
	json_decref(v);
	run_free(&r);

	r = RUN("topicRoute", "-t", "NoSuchTopic", "-n", addr_of(0));
	cr_assert_eq(r.code, 4);
	cr_assert_not_null(strstr(r.err, "code 17 (TOPIC_NOT_EXIST): No topic route info in name server for the topic: NoSuchTopic"),
			   "%s", r.err);
	run_free(&r);
}

Test(admin, topic_list_plain_by_cluster_and_json)
{
	static const struct topic_spec b[] = { { "TopicB", 2, 6 }, { "%RETRY%g", 1, 6 } };
	start(0, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	reg_broker(0, "C2", "broker-b", "10.0.0.2:10911", 0, false, b, 2);

	struct run r = RUN_OK("topicList", "-n", addr_of(0));
	cr_assert_str_eq(r.out, "%RETRY%g\nTopicA\nTopicB\nfiller-broker-a\nfiller-broker-b\n");
	run_free(&r);

	r = RUN_OK("topicList", "-c", "-n", addr_of(0));
	out_has(&r, "#Cluster Name         #Topic\n",
		"C1                    TopicA\n",
		"C2                    TopicB\n", NULL);
	cr_assert_null(strstr(r.out, "%RETRY%"), "retry topics are left out: %s", r.out);
	run_free(&r);

	r = RUN("topicList", "-c", "--json", "-n", addr_of(0));
	json_t *v = run_json(&r), *t = json_object_get(v, "topics");
	cr_assert_eq(json_array_size(t), 4);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 0), "topic")), "TopicA");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 0), "cluster")), "C1");
	json_decref(v);
	run_free(&r);

	r = RUN("topicList", "--json", "-n", addr_of(0));
	v = run_json(&r);
	cr_assert_eq(json_array_size(json_object_get(v, "topicList")), 5);
	json_decref(v);
	run_free(&r);
}

/* ---- config ---- */

Test(admin, namesrv_config_written_to_both_servers)
{
	start(0, NULL);
	start(1, NULL);
	char list[80];
	snprintf(list, sizeof list, "%s;%s", addr_of(0), addr_of(1));

	struct run r = RUN_OK("getNamesrvConfig", "-n", addr_of(1));
	char head[80];
	snprintf(head, sizeof head, "============%s============\n", addr_of(1));
	cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
	char line[100];
	snprintf(line, sizeof line, "\n%-50s=  %s\n", "orderMessageEnable", "false");
	out_has(&r, line, NULL);
	run_free(&r);

	r = RUN("updateNamesrvConfig", "-k", "noSuchOption", "-v", "1", "-n", list);
	cr_assert_eq(r.code, 4, "an unknown key: %s%s", r.out, r.err);
	cr_assert_null(strstr(r.out, "OK"), "%s", r.out);
	out_has(&r, "unknown key: noSuchOption", NULL);
	run_free(&r);

	/* a controller's request at a NameServer without one: the answer says so */
	r = RUN("getControllerMetaData", "-a", addr_of(1));
	cr_assert_eq(r.code, 4, "%s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, " request type 1005 not supported; this is a NameServer port and "
				 "this node runs no controller"), "%s", r.err);
	run_free(&r);

	r = RUN("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", "-n", list);
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	char want[200];
	snprintf(want, sizeof want, "updateNamesrvConfig %s OK\nupdateNamesrvConfig %s OK\n", addr_of(0), addr_of(1));
	cr_assert_str_eq(r.out, want);
	run_free(&r);

	for (int i = 0; i < 2; i++) {
		r = RUN("getNamesrvConfig", "--json", "-n", addr_of(i));
		json_t *v = run_json(&r);
		cr_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "config"),
								   "orderMessageEnable")), "true", "server %d", i);
		json_decref(v);
		run_free(&r);
	}
}

Test(admin, refused_write_gives_code_and_remark)
{
	start(0, NULL);
	struct run r = RUN("updateNamesrvConfig", "-k", "configStorePath", "-v", "/tmp/elsewhere", "-n", addr_of(0));
	cr_assert_eq(r.code, 4, "exit %d: %s", r.code, r.out);
	char want[200];
	snprintf(want, sizeof want,
		 "updateNamesrvConfig %s FAILED: code 16 (NO_PERMISSION): Can not update config in black list.\n",
		 addr_of(0));
	cr_assert_str_eq(r.out, want);
	run_free(&r);

	r = RUN("updateNamesrvConfig", "--json", "-k", "configStorePath", "-v", "/tmp/elsewhere", "-n", addr_of(0));
	cr_assert_eq(r.code, 4);
	json_t *v = run_json(&r), *res = json_array_get(json_object_get(v, "results"), 0);
	cr_assert(json_is_false(json_object_get(res, "ok")));
	cr_assert_eq(json_integer_value(json_object_get(res, "code")), 16);
	cr_assert_str_eq(json_string_value(json_object_get(res, "remark")), "Can not update config in black list.");
	json_decref(v);
	run_free(&r);
}

/* ---- dead and silent servers ---- */

Test(admin, list_with_a_dead_server)
{
	start(0, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	char dead[32], list[80];
	snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port());
	snprintf(list, sizeof list, "%s; %s", dead, addr_of(0));

	/* a read falls through to the live server */
	struct run r = RUN_OK("clusterList", "-n", list);
	cr_assert_not_null(strstr(r.out, "broker-a"));
	char want[160];
	snprintf(want, sizeof want, "rmqns-admin: %s: connection refused; trying the next NameServer\n", dead);
	cr_assert_str_eq(r.err, want);
	run_free(&r);

	/* a write says where it took effect */
	r = RUN("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-n", list);
	cr_assert_eq(r.code, 5, "partial: exit %d", r.code);
	char want2[200];
	snprintf(want2, sizeof want2, "updateKvConfig %s FAILED: connection refused\nupdateKvConfig %s OK\n", dead,
		 addr_of(0));
	cr_assert_str_eq(r.out, want2);
	run_free(&r);

	r = RUN("updateKvConfig", "--json", "-s", "NS", "-k", "k", "-v", "v2", "-n", list);
	cr_assert_eq(r.code, 5);
	json_t *v = run_json(&r), *res = json_object_get(v, "results");
	cr_assert_eq(json_integer_value(json_object_get(v, "succeeded")), 1);
	cr_assert_eq(json_integer_value(json_object_get(v, "failed")), 1);
	cr_assert(json_is_false(json_object_get(json_array_get(res, 0), "ok")));
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(res, 0), "error")), "connection refused");
	cr_assert(json_is_true(json_object_get(json_array_get(res, 1), "ok")));
	json_decref(v);
	run_free(&r);

	r = RUN("getKvConfig", "-s", "NS", "-k", "k", "-n", addr_of(0));
	cr_assert_str_eq(r.out, "v2\n");
	run_free(&r);

	/* every server dead: nothing answered */
	run_exits(3, RUN("clusterList", "-n", dead));
}

Test(admin, timeout_against_a_listener_that_never_answers)
{
	char silent[32];
	snprintf(silent, sizeof silent, "127.0.0.1:%d", silent_listener());

	struct run r = RUN("clusterList", "--timeout", "300", "-n", silent);
	cr_assert_eq(r.code, 3, "exit %d", r.code);
	char want[160];
	snprintf(want, sizeof want, "rmqns-admin: %s: timed out after 300 ms waiting for the answer\n", silent);
	cr_assert_str_eq(r.err, want);
	run_free(&r);

	r = RUN("probe", "--timeout", "300", "-n", silent);
	cr_assert_neq(r.code, 0);
	out_has(&r, "FAILED: timed out after 300 ms waiting for the answer", NULL);
	run_free(&r);

	run_exits(3, RUN("deleteTopic", "--timeout", "300", "-t", "x", "-c", "C1", "-n", silent));
}

Test(admin, probe)
{
	start(0, NULL);
	struct run r = RUN("probe", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	cr_assert(strncmp(r.out, addr_of(0), strlen(addr_of(0))) == 0 && strstr(r.out, " OK "), "%s", r.out);
	run_free(&r);

	r = RUN("probe", "--json", "-n", addr_of(0));
	json_t *v = run_json(&r);
	cr_assert(json_is_true(json_object_get(v, "ok")));
	json_decref(v);
	run_free(&r);

	char dead[32];
	snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port());
	r = RUN("probe", "-n", dead);
	cr_assert_eq(r.code, 3);
	out_has(&r, "FAILED: connection refused", NULL);
	run_free(&r);

	r = RUN("probe", "--json", "-n", dead);
	cr_assert_eq(r.code, 3);
	v = run_json(&r);
	cr_assert(json_is_false(json_object_get(v, "ok")));
	json_decref(v);
	run_free(&r);
}

/* An ACL server refusing the unsigned probe (code 16) is alive. */
Test(admin, probe_counts_an_acl_refusal_as_alive)
{
	start_acl(0, "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n");

	struct run r = RUN("probe", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	out_has(&r, " OK ", NULL);
	cr_assert_not_null(strstr(r.out, "alive: it answered with a refusal, code 16 (NO_PERMISSION)"),
			   "%s", r.out);
	run_free(&r);
	r = RUN("probe", "--json", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	json_t *v = run_json(&r);
	json_t *item = json_array_get(json_object_get(v, "results"), 0);
	cr_assert(json_is_true(json_object_get(v, "ok")) && json_is_true(json_object_get(item, "ok")));
	cr_assert_eq(json_integer_value(json_object_get(item, "code")), 16);
	json_decref(v);
	run_free(&r);
}

/* ---- KV, order config, permissions, delete ---- */

Test(admin, signs_requests_for_an_acl_server)
{
	start_acl(0, "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n"
		     "  - accessKey: reader-key\n    secretKey: reader-secret\n");

	struct run r = RUN("updateKvConfig", "-s", "NS", "-k", "alpha", "-v", "1", "-n", addr_of(0));
	cr_assert_eq(r.code, 4, "%s%s", r.out, r.err);
	out_has(&r, "code 16 (NO_PERMISSION): ACL: unsigned request: code 100", NULL);
	run_free(&r);
	r = RUN("updateKvConfig", "-s", "NS", "-k", "alpha", "-v", "1", "-n", addr_of(0), "--access-key",
		"reader-key", "--secret-key", "reader-secret");
	cr_assert_eq(r.code, 4);
	out_has(&r, "ACL: account not admin: AccessKey=reader-key", NULL);
	run_free(&r);
	r = RUN("updateKvConfig", "-s", "NS", "-k", "alpha", "-v", "1", "-n", addr_of(0), "--access-key",
		"rocketmq2", "--secret-key", "12345678");
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	run_free(&r);
	r = RUN("getKvConfig", "-s", "NS", "-k", "alpha", "-n", addr_of(0), "--access-key", "reader-key",
		"--secret-key", "reader-secret");
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "1\n");
	run_free(&r);
	r = RUN("getKvConfig", "-s", "NS", "-k", "alpha", "-n", addr_of(0), "--access-key", "reader-key",
		"--secret-key", "wrong-secret");
	cr_assert_eq(r.code, 4);
	cr_assert_not_null(strstr(r.err, "ACL: signature mismatch for AccessKey=reader-key"), "%s", r.err);
	run_free(&r);
	r = RUN("getKvConfig", "-s", "NS", "-k", "alpha", "-n", addr_of(0), "--access-key", "reader-key");
	cr_assert_eq(r.code, 2);
	cr_assert_not_null(strstr(r.err, "--access-key and --secret-key go together"));
	run_free(&r);
}

Test(admin, kv_config_round_trip)
{
	start(0, NULL);
	struct run r = RUN("updateKvConfig", "-s", "NS", "-k", "alpha", "-v", "1", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s", r.out);
	run_free(&r);
	r = RUN("updateKvConfig", "-s", "NS", "-k", "beta", "-v", "two words", "-n", addr_of(0));
	run_free(&r);

	r = RUN("getKvConfig", "-s", "NS", "-k", "beta", "-n", addr_of(0));
	cr_assert_eq(r.code, 0);
	cr_assert_str_eq(r.out, "two words\n");
	run_free(&r);

	r = RUN("getKvList", "-s", "NS", "-n", addr_of(0));
	cr_assert_eq(r.code, 0);
	cr_assert_str_eq(r.out, "#Key                                      #Value\n"
				"alpha                                     1\n"
				"beta                                      two words\n");
	run_free(&r);
	r = RUN("getKvList", "--json", "-s", "NS", "-n", addr_of(0));
	json_t *v = run_json(&r);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(v, "table"), "alpha")), "1");
	json_decref(v);
	run_free(&r);

	run_exits(0, RUN("deleteKvConfig", "-s", "NS", "-k", "alpha", "-n", addr_of(0)));
	r = RUN("getKvConfig", "-s", "NS", "-k", "alpha", "-n", addr_of(0));
	cr_assert_eq(r.code, 4);
	cr_assert_not_null(strstr(r.err, "code 22 (QUERY_NOT_FOUND): No config item, Namespace: NS Key: alpha"), "%s", r.err);
	run_free(&r);
	run_exits(4, RUN("getKvList", "-s", "Nope", "-n", addr_of(0)));
}

Test(admin, update_order_conf)
{
	start(0, NULL);
	struct run r = RUN("updateOrderConf", "-t", "TopicO", "-m", "put", "-v", "broker-a:4;broker-b:4", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	run_free(&r);
	r = RUN("getKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "TopicO", "-n", addr_of(0));
	cr_assert_str_eq(r.out, "broker-a:4;broker-b:4\n");
	run_free(&r);
	r = RUN("updateOrderConf", "-t", "TopicO", "-m", "get", "-n", addr_of(0));
	cr_assert_eq(r.code, 0);
	cr_assert_str_eq(r.out, "get orderConf success. topic=[TopicO], orderConf=[broker-a:4;broker-b:4]\n");
	run_free(&r);
	r = RUN("updateOrderConf", "-t", "TopicO", "-m", "put", "-n", addr_of(0));
	cr_assert_eq(r.code, 2, "put without -v");
	run_free(&r);
	run_exits(0, RUN("updateOrderConf", "-t", "TopicO", "-m", "delete", "-n", addr_of(0)));
	run_exits(4, RUN("updateOrderConf", "-t", "TopicO", "-m", "get", "-n", addr_of(0)));
}

static long long route_perm(int s, const char *topic)
{
	struct run r = RUN_OK("topicRoute", "--json", "-t", topic, "-n", addr_of(s));
	json_t *v = run_json(&r);
	long long p = json_integer_value(json_object_get(json_array_get(json_object_get(v, "queueDatas"), 0), "perm"));
	json_decref(v);
	run_free(&r);
	return p;
}

Test(admin, wipe_and_add_write_perm)
{
	start(0, NULL);
	start(1, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	reg_broker(1, "C1", "broker-a", "10.0.0.1:10911", 0, false, topic_a, 1);
	char list[80];
	snprintf(list, sizeof list, "%s;%s", addr_of(0), addr_of(1));

	struct run r = RUN("wipeWritePerm", "-b", "broker-a", "-n", list);
	cr_assert_eq(r.code, 0, "%s", r.out);
	char want[200];
	snprintf(want, sizeof want, "wipeWritePerm %s OK, 2 topics\nwipeWritePerm %s OK, 2 topics\n", addr_of(0),
		 addr_of(1));
	cr_assert_str_eq(r.out, want);
	run_free(&r);
	cr_assert_eq(route_perm(0, "TopicA"), 4);
	cr_assert_eq(route_perm(1, "TopicA"), 4);

	r = RUN("addWritePerm", "--json", "-b", "broker-a", "-n", list);
	cr_assert_eq(r.code, 0);
	json_t *v = run_json(&r);
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(v, "results"), 1),
							"addTopicCount")), 2);
	json_decref(v);
	run_free(&r);
	cr_assert_eq(route_perm(0, "TopicA"), 6);
	cr_assert_eq(route_perm(1, "TopicA"), 6);

	/* a broker no server knows: a warning and exit 4, no OK */
	r = RUN("wipeWritePerm", "-b", "no-such-broker", "-n", list);
	cr_assert_eq(r.code, 4, "%s%s", r.out, r.err);
	cr_assert_null(strstr(r.out, "OK"), "%s", r.out);
	out_has(&r, "no topic of broker no-such-broker here", NULL);
	cr_assert_not_null(strstr(r.err, "warning: no server knows broker no-such-broker"), "%s", r.err);
	run_free(&r);
	r = RUN("wipeWritePerm", "--json", "-b", "no-such-broker", "-n", list);
	cr_assert_eq(r.code, 4);
	v = run_json(&r);
	cr_assert_eq(json_integer_value(json_object_get(v, "exit")), 4);
	cr_assert(json_is_false(json_object_get(json_array_get(json_object_get(v, "results"), 0), "changed")));
	json_decref(v);
	run_free(&r);
}

/* A fake broker: answers every request with code 0 and records the
 * request codes and topics it got, on its own thread, for a bounded time. */
#define FAKE_MAX_SEEN 16
struct fake_broker {
	int fd, port;
	pthread_t thread;
	pthread_mutex_t lock;
	int nseen;
	int32_t codes[FAKE_MAX_SEEN];
	char topics[FAKE_MAX_SEEN][64];
	volatile int stop;
};

static void fake_broker_serve(struct fake_broker *fb, int c)
{
	uint8_t buf[65536];
	size_t len = 0;
	for (int idle = 0; idle < 100 && !fb->stop;) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0) {
			idle++;
			continue;
		}
		ssize_t n = recv(c, buf + len, sizeof buf - len, 0);
		if (n <= 0)
			return;
		len += (size_t)n;
		size_t size;
		while (remoting_frame_cut(buf, len, sizeof buf, &size) == 0) {
			struct remoting_cmd req, rsp = { 0 };
			struct buf out = BUF_INIT;
			if (remoting_decode(buf, size, &req) == 0) {
				pthread_mutex_lock(&fb->lock);
				if (fb->nseen < FAKE_MAX_SEEN) {
					const char *t = remoting_ext_get(&req, "topic");
					fb->codes[fb->nseen] = req.code;
					snprintf(fb->topics[fb->nseen], 64, "%s", t ? t : "");
					fb->nseen++;
				}
				pthread_mutex_unlock(&fb->lock);
				rsp.code = 0;
				rsp.language = LANG_JAVA;
				rsp.version = 479;
				rsp.opaque = req.opaque;
				rsp.flag = REMOTING_FLAG_RESPONSE;
				rsp.serialize = REMOTING_JSON;
				harness_encode(&rsp, &out);
				(void)!send(c, out.data, out.len, MSG_NOSIGNAL);
				buf_free(&out);
				remoting_cmd_release(&req);
			}
			memmove(buf, buf + size, len - size);
			len -= size;
		}
	}
}

static void *fake_broker_main(void *arg)
{
	struct fake_broker *fb = arg;
	for (int rounds = 0; rounds < 600 && !fb->stop; rounds++) {
		struct pollfd p = { .fd = fb->fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		int c = accept(fb->fd, NULL, NULL);
		if (c < 0)
			continue;
		fake_broker_serve(fb, c);
		close(c);
	}
	return NULL;
}

static void fake_broker_start(struct fake_broker *fb)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	memset(fb, 0, sizeof *fb);
	pthread_mutex_init(&fb->lock, NULL);
	fb->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fb->fd >= 0);
	cr_assert_eq(bind(fb->fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(fb->fd, 16), 0);
	cr_assert_eq(getsockname(fb->fd, (struct sockaddr *)&a, &len), 0);
	fb->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&fb->thread, NULL, fake_broker_main, fb), 0);
}

static void fake_broker_stop(struct fake_broker *fb)
{
	fb->stop = 1;
	pthread_join(fb->thread, NULL);
	close(fb->fd);
}

Test(admin, delete_topic_on_the_masters_then_the_nameservers)
{
	struct fake_broker fb;
	char master[32], slave[32];

	fake_broker_start(&fb);
	snprintf(master, sizeof master, "127.0.0.1:%d", fb.port);
	/* a slave nobody listens for: deleteTopic must not go there */
	snprintf(slave, sizeof slave, "127.0.0.1:%d", dead_port());
	start(0, NULL);
	start(1, NULL);
	for (int s = 0; s < 2; s++) {
		reg_broker(s, "C1", "broker-a", master, 0, false, topic_a, 1);
		reg_broker(s, "C1", "broker-a", slave, 1, false, topic_a, 1);
	}
	char both[80];
	snprintf(both, sizeof both, "%s;%s", addr_of(0), addr_of(1));

	struct run r = RUN("deleteTopic", "-t", "TopicA", "-c", "OtherCluster", "-n", both);
	cr_assert_eq(r.code, 4, "an unknown cluster: %s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, "cluster OtherCluster: no such cluster"), "%s", r.err);
	run_free(&r);
	cr_assert_eq(route_perm(0, "TopicA"), 6, "another cluster's delete leaves it");
	cr_assert_eq(fb.nseen, 0, "and sends nothing to the broker");

	r = RUN("deleteTopic", "-t", "TopicA", "-c", "C1", "-n", both);
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	char want[300];
	snprintf(want, sizeof want, "deleteTopic broker %s OK\ndeleteTopic %s OK\ndeleteTopic %s OK\n",
		 master, addr_of(0), addr_of(1));
	cr_assert_str_eq(r.out, want);
	run_free(&r);
	pthread_mutex_lock(&fb.lock);
	cr_assert_eq(fb.nseen, 1, "one DELETE_TOPIC_IN_BROKER to the master");
	cr_assert_eq(fb.codes[0], 215);
	cr_assert_str_eq(fb.topics[0], "TopicA");
	pthread_mutex_unlock(&fb.lock);
	for (int s = 0; s < 2; s++) {
		r = RUN("topicRoute", "-t", "TopicA", "-n", addr_of(s));
		cr_assert_eq(r.code, 4, "gone from server %d after the delete", s);
		run_free(&r);
	}

	r = RUN("deleteTopic", "-t", "filler-broker-a", "-c", "C1", "--json", "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	json_t *v = run_json(&r);
	cr_assert_eq(json_array_size(json_object_get(v, "brokers")), 1);
	cr_assert_eq(json_array_size(json_object_get(v, "results")), 1);
	cr_assert_eq(json_integer_value(json_object_get(v, "succeeded")), 2);
	json_decref(v);
	run_free(&r);
	r = RUN("deleteTopic", "-t", "T", "-n", addr_of(0));
	cr_assert_eq(r.code, 2, "-c is required, as in mqadmin");
	run_free(&r);
	fake_broker_stop(&fb);
}

/* ---- clusterDiff ---- */

Test(admin, cluster_diff_finds_a_broker_and_queues)
{
	static const struct topic_spec q4[] = { { "TopicA", 4, 6 }, { "TopicQ", 4, 6 } };
	static const struct topic_spec q8[] = { { "TopicA", 4, 6 }, { "TopicQ", 8, 6 } };
	start(0, NULL);
	start(1, NULL);
	reg_broker(0, "C1", "broker-a", "10.0.0.1:10911", 0, false, q4, 2);
	reg_broker(1, "C1", "broker-a", "10.0.0.1:10911", 0, false, q8, 2);
	static const struct topic_spec tb[] = { { "TopicB", 2, 6 } };
	reg_broker(0, "C1", "broker-b", "10.0.0.2:10911", 0, false, tb, 1);
	char list[80];
	snprintf(list, sizeof list, "%s;%s", addr_of(0), addr_of(1));

	struct run r = RUN("clusterDiff", "-n", list);
	cr_assert_eq(r.code, 1, "exit %d: %s%s", r.code, r.out, r.err);
	char want[1024];
	snprintf(want, sizeof want,
		 "broker broker-b:\n"
		 "  %-24s cluster C1: 0=10.0.0.2:10911\n"
		 "  %-24s (missing)\n"
		 "topic TopicB:\n"
		 "  %-24s broker-b r2 w2 perm6\n"
		 "  %-24s (missing)\n"
		 "topic TopicQ:\n"
		 "  %-24s broker-a r4 w4 perm6\n"
		 "  %-24s broker-a r8 w8 perm6\n"
		 "topic filler-broker-b:\n"
		 "  %-24s broker-b r1 w1 perm6\n"
		 "  %-24s (missing)\n"
		 "2 brokers compared, 1 differ; 5 topics compared, 3 differ: the NameServers DISAGREE\n",
		 addr_of(0), addr_of(1), addr_of(0), addr_of(1), addr_of(0), addr_of(1), addr_of(0), addr_of(1));
	cr_assert_str_eq(r.out, want);
	run_free(&r);

	r = RUN("clusterDiff", "--json", "-n", list);
	cr_assert_eq(r.code, 1);
	json_t *v = run_json(&r), *d = json_object_get(v, "differences");
	cr_assert(json_is_false(json_object_get(v, "agree")));
	cr_assert_eq(json_array_size(d), 4);
	json_t *b = json_array_get(d, 0);
	cr_assert_str_eq(json_string_value(json_object_get(b, "kind")), "broker");
	cr_assert_str_eq(json_string_value(json_object_get(b, "name")), "broker-b");
	cr_assert(json_is_null(json_object_get(json_object_get(b, "states"), addr_of(1))));
	json_t *t = json_array_get(d, 2);
	cr_assert_str_eq(json_string_value(json_object_get(t, "name")), "TopicQ");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "states"), addr_of(1))),
			 "broker-a r8 w8 perm6");
	json_decref(v);
	run_free(&r);
}

Test(admin, cluster_diff_none_when_nodes_agree)
{
	static const struct topic_spec q[] = { { "TopicA", 4, 6 }, { "TopicQ", 8, 6 } };
	start(0, NULL);
	start(1, NULL);
	for (int s = 0; s < 2; s++) {
		reg_broker(s, "C1", "broker-a", "10.0.0.1:10911", 0, false, q, 2);
		reg_broker(s, "C1", "broker-a", "10.0.0.9:10911", 1, false, q, 2);
		reg_broker(s, "C2", "broker-b", "10.0.0.2:10911", 0, false, q, 1);
	}
	char list[80];
	snprintf(list, sizeof list, "%s;%s", addr_of(0), addr_of(1));
	struct run r = RUN("clusterDiff", "-n", list);
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "2 brokers compared, 0 differ; 4 topics compared, 0 differ: the NameServers agree\n");
	run_free(&r);

	r = RUN("clusterDiff", "--json", "-n", list);
	json_t *v = run_json(&r);
	cr_assert(json_is_true(json_object_get(v, "agree")));
	cr_assert_eq(json_integer_value(json_object_get(v, "topicsCompared")), 4);
	cr_assert_eq(json_array_size(json_object_get(v, "differences")), 0);
	json_decref(v);
	run_free(&r);

	/* one node down: no verdict, an error */
	char dead[32], list2[80];
	snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port());
	snprintf(list2, sizeof list2, "%s;%s", addr_of(0), dead);
	r = RUN("clusterDiff", "-n", list2);
	cr_assert_eq(r.code, 3);
	cr_assert_not_null(strstr(r.err, "connection refused"), "%s", r.err);
	run_free(&r);
}

/* ---- command line ---- */

Test(admin, usage_errors)
{
	struct run r = RUN("topicRoute", "-n", "127.0.0.1:1");
	cr_assert_eq(r.code, 2);
	cr_assert_not_null(strstr(r.err, "topicRoute needs -t"), "%s", r.err);
	run_free(&r);
	run_exits(2, RUN("noSuchCommand"));
	run_exits(2, RUN("clusterList", "-x"));
	r = RUN("clusterList", "--topic", "T", "-n", "127.0.0.1:1");
	cr_assert_eq(r.code, 2, "an option of another command");
	cr_assert_not_null(strstr(r.err, "clusterList takes no option --topic"), "%s", r.err);
	run_free(&r);
	run_exits(2, RUN("topicRoute", "-t", "T", "extra", "-n", "127.0.0.1:1"));
	run_exits(2, RUN("clusterList", "-n", "nocolon"));
	r = RUN("clusterDiff", "-n", "127.0.0.1:1");
	cr_assert_eq(r.code, 2, "one server is nothing to compare");
	run_free(&r);
	r = RUN("--help");
	cr_assert_eq(r.code, 0);
	cr_assert_not_null(strstr(r.out, "clusterDiff"));
	run_free(&r);
}

Test(admin, version_of_both_binaries)
{
	struct run r = RUN("--version");
	cr_assert_eq(r.code, 0);
	cr_assert(strncmp(r.out, "rmqns-admin " RMQNS_VERSION " (", strlen("rmqns-admin " RMQNS_VERSION " (")) == 0,
		  "%s", r.out);
	cr_assert_not_null(strstr(r.out, " build, "), "the build type and compiler: %s", r.out);
	run_free(&r);

	char *out = NULL;
	const char *args[] = { "--version", NULL };
	int st = harness_run(args, T, &out);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "rmqns --version: status %d", st);
	cr_assert(out && strncmp(out, "rmqns " RMQNS_VERSION " (", strlen("rmqns " RMQNS_VERSION " (")) == 0,
		  "%s", out ? out : "");
	cr_assert_not_null(strstr(out, " build, "), "%s", out);
	free(out);
}

Test(admin, subcommand_help)
{
	struct run r = RUN("deleteTopic", "-h");
	cr_assert_eq(r.code, 0);
	cr_assert(strncmp(r.out, "usage: rmqns-admin deleteTopic -t TOPIC -c CLUSTER", 50) == 0, "%s", r.out);
	out_has(&r, "DELETE_TOPIC_IN_BROKER", NULL);
	cr_assert_null(strstr(r.out, "getKvList"), "not the whole list: %s", r.out);
	run_free(&r);
	r = RUN("probe", "--help");
	cr_assert_eq(r.code, 0);
	cr_assert(strncmp(r.out, "usage: rmqns-admin probe", 24) == 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, "--tls"), "the common options too: %s", r.out);
	run_free(&r);
}

/* With --json every failure is a JSON document on stdout. */
static void expect_json_error(struct run *r, int code, const char *needle)
{
	cr_assert_eq(r->code, code, "%s%s", r->out, r->err);
	json_t *v = run_json(r);
	cr_assert(json_is_false(json_object_get(v, "ok")), "%s", r->out);
	cr_assert_eq(json_integer_value(json_object_get(v, "exit")), code, "%s", r->out);
	cr_assert_not_null(strstr(json_string_value(json_object_get(v, "error")), needle), "%s", r->out);
	json_decref(v);
	run_free(r);
}

Test(admin, json_errors_are_json)
{
	start(0, NULL);
	char dead[32];
	snprintf(dead, sizeof dead, "127.0.0.1:%d", dead_port());
	struct run r = RUN("topicRoute", "-t", "NoSuchTopic", "--json", "-n", addr_of(0));
	expect_json_error(&r, 4, "code 17");
	r = RUN("clusterList", "--json", "-n", dead);
	expect_json_error(&r, 3, "connection refused");
	r = RUN("topicRoute", "--json", "-n", addr_of(0));
	expect_json_error(&r, 2, "topicRoute needs -t");
	r = RUN("noSuchCommand", "--json");
	expect_json_error(&r, 2, "unknown subcommand");
	r = RUN("getKvConfig", "-s", "NS", "-k", "none", "--json", "-n", addr_of(0));
	expect_json_error(&r, 4, "code 22");
}

/* ---- TLS ---- */

/* A self-signed server certificate for 127.0.0.1 (its subjectAltName),
 * one for another address and name, and a self-signed client certificate
 * (the server trusts it directly), made with the openssl command. */
static void make_certs(void)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd,
			   "cd '%s' && { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
			   "-keyout srv.key -out srv.pem -days 2 -subj /CN=rmqns-admin-test "
			   "-addext subjectAltName=IP:127.0.0.1 && "
			   "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
			   "-keyout other.key -out other.pem -days 2 -subj /CN=127.0.0.1 "
			   "-addext subjectAltName=IP:127.0.0.9,DNS:rmqns-other.invalid && "
			   "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
			   "-keyout cli.key -out cli.pem -days 2 -subj /CN=rmqns-admin-client ; } >/dev/null 2>&1",
			   dir) > 0);
	int st = system(cmd);
	free(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cannot make the test certificates");
}

/* Server i with TLS enforced, certificate dir/name.pem, and the client
 * certificate required. */
static void start_enforcing(int i, const char *name)
{
	char cert[160], key[160], trust[160];
	snprintf(cert, sizeof cert, "--tls.server.certPath=%s/%s.pem", dir, name);
	snprintf(key, sizeof key, "--tls.server.keyPath=%s/%s.key", dir, name);
	snprintf(trust, sizeof trust, "--tls.server.trustCertPath=%s/cli.pem", dir);
	const char *args[] = { "--tls.server.mode=enforcing", cert, key, trust,
			       "--tls.server.need.client.auth=require", NULL };
	start(i, args);
}

Test(admin, tls_against_an_enforcing_server)
{
	char srv_pem[128], cli_pem[128], cli_key[128];
	make_certs();
	snprintf(srv_pem, sizeof srv_pem, "%s/srv.pem", dir);
	snprintf(cli_pem, sizeof cli_pem, "%s/cli.pem", dir);
	snprintf(cli_key, sizeof cli_key, "%s/cli.key", dir);
	start_enforcing(0, "srv");

	struct run r = RUN("clusterList", "-n", addr_of(0));
	cr_assert_eq(r.code, 3, "plaintext is refused: %s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, "use --tls"), "%s", r.err);
	run_free(&r);

	r = RUN("clusterList", "--tls", "--tls-ca", srv_pem, "--tls-cert", cli_pem, "--tls-key", cli_key,
		"-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	out_has(&r, "#Cluster Name", NULL);
	run_free(&r);

	/* a server whose certificate names another address (its CN the one
	 * dialled, which does not count): refused, unless names are not checked */
	char other_pem[128];
	snprintf(other_pem, sizeof other_pem, "%s/other.pem", dir);
	start_enforcing(1, "other");
	r = RUN("clusterList", "--tls", "--tls-ca", other_pem, "--tls-cert", cli_pem, "--tls-key", cli_key,
		"-n", addr_of(1));
	cr_assert_eq(r.code, 3, "a certificate for another address: %s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, "TLS handshake: server certificate: IP address mismatch"), "%s",
			   r.err);
	run_free(&r);
	r = RUN("clusterList", "--tls", "--tls-ca", other_pem, "--tls-cert", cli_pem, "--tls-key", cli_key,
		"--tls-no-verify-hostname", "-n", addr_of(1));
	cr_assert_eq(r.code, 0, "the chain only: %s%s", r.out, r.err);
	run_free(&r);

	r = RUN("clusterList", "--tls", "--tls-ca", cli_pem, "--tls-cert", cli_pem, "--tls-key", cli_key,
		"-n", addr_of(0));
	cr_assert_eq(r.code, 3, "a server certificate the CA does not sign: %s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, "TLS handshake: server certificate"), "%s", r.err);
	run_free(&r);

	/* the Java client's property names */
	char d_ca[160], d_cert[160], d_key[160];
	snprintf(d_ca, sizeof d_ca, "tls.client.trustCertPath=%s", srv_pem);
	snprintf(d_cert, sizeof d_cert, "tls.client.certPath=%s", cli_pem);
	snprintf(d_key, sizeof d_key, "tls.client.keyPath=%s", cli_key);
	r = RUN("updateKvConfig", "-s", "NS", "-k", "k", "-v", "v", "-D", "tls.enable=true", "-D", d_ca, "-D",
		d_cert, "-D", d_key, "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	run_free(&r);

	/* and tls.config.file */
	char props[128], d_file[160];
	snprintf(props, sizeof props, "%s/tls.properties", dir);
	FILE *f = fopen(props, "w");
	cr_assert_not_null(f);
	fprintf(f, "tls.enable=true\n%s\n%s\n%s\ntls.server.mode=enforcing\n", d_ca, d_cert, d_key);
	fclose(f);
	snprintf(d_file, sizeof d_file, "-Dtls.config.file=%s", props);
	r = RUN("getKvConfig", "-s", "NS", "-k", "k", d_file, "-n", addr_of(0));
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "v\n");
	run_free(&r);
	r = RUN("probe", "--tls", "-n", addr_of(0));
	cr_assert_eq(r.code, 3, "no client certificate for a server that requires one: %s", r.out);
	out_has(&r, "FAILED: ", NULL);
	run_free(&r);
	r = RUN("probe", "-Dtls.client.nonsense=1", "-n", addr_of(0));
	cr_assert_eq(r.code, 2);
	cr_assert_not_null(strstr(r.err, "not a TLS client setting"), "%s", r.err);
	run_free(&r);
}
