/* The KV writer against the real binary, on a disk whose fsync the test
 * holds (fsync_gate.c, preloaded): registrations, heartbeats and route
 * queries are answered while a KV write waits on the disk; PUTs queued
 * meanwhile share one file write (group commit) and all survive a restart;
 * a failed batch fails as a whole and memory stays equal to disk; SIGTERM
 * writes and answers the queued PUTs before the server exits. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "fsync_gate_env.h"
#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"

#define T HARNESS_IO_TIMEOUT_MS
/* Upper bound on waiting for the server to reach a gated fsync. */
#define FSYNC_WAIT_ROUNDS 2000
#define FSYNC_WAIT_NAP_MS 10

static struct harness_server srv;
static char dir[64];
static char *kvp, *gate, *fsync_log, *rename_log;

static char *path_in(const char *name)
{
	char *p = harness_path_in(dir, name);
	cr_assert_not_null(p);
	return p;
}

static void writer_init(void)
{
	cr_assert_eq(harness_mkdtemp(dir, sizeof(dir), "rmqns-kvw"), 0);
	kvp = path_in("kv.json");
	gate = path_in("gate");
	fsync_log = path_in("fsyncs.log");
	rename_log = path_in("renames.log");
}

static void gate_open(void);

static void writer_fini(void)
{
	gate_open(); /* a failed test may have left the server held in an fsync */
	harness_cleanup(&srv);
	harness_rmdir(dir);
	free(kvp);
	free(gate);
	free(fsync_log);
	free(rename_log);
}

TestSuite(kv_writer, .init = writer_init, .fini = writer_fini, .timeout = 120);

static void start_plain(void)
{
	char *arg = NULL;
	const char *args[2];

	cr_assert(asprintf(&arg, "--kvConfigPath=%s", kvp) > 0);
	args[0] = arg;
	args[1] = NULL;
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
	free(arg);
}

static void start_plain_arg(void *unused)
{
	(void)unused;
	start_plain();
}

/* Starts the server on the gated disk, the gate closed. */
static void start_gated(void)
{
	const char *const vars[] = { "RMQNS_TEST_FSYNC_GATE", gate, "RMQNS_TEST_FSYNC_LOG", fsync_log,
				     "RMQNS_TEST_RENAME_LOG", rename_log, NULL };

	unlink(gate);
	cr_assert_eq(fsync_gate_start(FSYNC_GATE_LIB, vars, start_plain_arg, NULL), 0,
		     "cannot preload the fsync gate");
}

static void gate_open(void)
{
	int fd = open(gate, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
	cr_assert_geq(fd, 0);
}

/* Lines of a file equal to `line` (every line when NULL). */
static int count_lines(const char *path, const char *line)
{
	char *text = harness_slurp(path), *save = NULL;
	int n = 0;

	if (!text)
		return 0;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!line || strcmp(l, line) == 0)
			n++;
	free(text);
	return n;
}

/* Waits until the server has entered its n-th fsync (bounded). */
static void wait_fsyncs(int n)
{
	struct timespec nap = { 0, FSYNC_WAIT_NAP_MS * 1000000L };

	for (int i = 0; i < FSYNC_WAIT_ROUNDS && count_lines(fsync_log, NULL) < n; i++)
		nanosleep(&nap, NULL);
	cr_assert_geq(count_lines(fsync_log, NULL), n, "the server never reached fsync %d", n);
}

/* Sends a request with the given ext fields (NULL-terminated key, value
 * list; a NULL value leaves the field out); returns its opaque. */
static int32_t send_req(struct client *c, int32_t code, const char *body, ...)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	va_list ap;

	va_start(ap, body);
	int rc = harness_request_va(&req, ext, code, REMOTING_JSON, body, ap);
	va_end(ap);
	cr_assert_eq(rc, 0);
	req.opaque = client_next_opaque(c);
	cr_assert_eq(client_send(c, &req, T), 0, "cannot send code %d", code);
	return req.opaque;
}

static int32_t send_put(struct client *c, const char *ns, const char *k, const char *v)
{
	return send_req(c, REQ_PUT_KV_CONFIG, NULL, "namespace", ns, "key", k, "value", v, NULL);
}

static struct client_reply *recv_or_fail(struct client *c, const char *what)
{
	struct client_reply *r = NULL;

	cr_assert_eq(client_recv(c, &r, T), 0, "no answer to %s", what);
	return r;
}

/* Whether an answer is waiting on c right now. */
static bool answer_waiting(struct client *c)
{
	struct pollfd p = { .fd = client_fd(c), .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* Receives the GET sent as a barrier: every request sent before it on
 * this connection has reached its handler (the default lane is FIFO).
 * The gate is closed, so no KV change can be answered meanwhile. */
static void pass_barrier(struct client *c, int32_t opaque)
{
	struct client_reply *r = recv_or_fail(c, "the barrier GET");

	cr_assert_eq(r->cmd.opaque, opaque, "answer %d (code %d) before the barrier's", r->cmd.opaque,
		     r->cmd.code);
	client_reply_free(r);
}

static int32_t send_barrier(struct client *c)
{
	return send_req(c, REQ_GET_KV_CONFIG, NULL, "namespace", "none", "key", "none", NULL);
}

static void get_expect(struct client *c, const char *ns, const char *k, const char *v)
{
	struct client_reply *r;

	send_req(c, REQ_GET_KV_CONFIG, NULL, "namespace", ns, "key", k, NULL);
	r = recv_or_fail(c, "GET_KV_CONFIG");
	harness_expect_kv_value(r, ns, k, v);
}

static void stop_clean(void)
{
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);

	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	harness_cleanup(&srv);
}

static const char reg_body[] =
	"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
	"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
	"\"kvw-topic\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"kvw-topic\",\"writeQueueNums\":4},"
	"\"kvw-other\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"kvw-other\",\"writeQueueNums\":4}}}}";

Test(kv_writer, registration_answered_while_a_kv_write_waits_on_the_disk)
{
	struct client *kvc, *broker;
	struct client_reply *r;
	int32_t put;

	start_gated();
	kvc = harness_connect_or_fail(&srv);
	broker = harness_connect_or_fail(&srv);
	put = send_put(kvc, "NS", "k", "v");
	wait_fsyncs(1); /* the PUT's write is now held on the disk */

	send_req(broker, REQ_REGISTER_BROKER, reg_body, "brokerName", "kvwb", "brokerAddr", "10.9.0.1:10911",
		 "clusterName", "KvwCluster", "haServerAddr", "h:1", "brokerId", "0", NULL);
	r = recv_or_fail(broker, "the registration while a KV write waits on the disk");
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	send_req(broker, REQ_BROKER_HEARTBEAT, NULL, "clusterName", "KvwCluster", "brokerAddr",
		 "10.9.0.1:10911", "brokerName", "kvwb", NULL);
	r = recv_or_fail(broker, "the heartbeat while a KV write waits on the disk");
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
	send_req(broker, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, "topic", "kvw-topic", NULL);
	r = recv_or_fail(broker, "the route query while a KV write waits on the disk");
	cr_assert_eq(r->cmd.code, 0, "the registration is applied: code %d", r->cmd.code);
	client_reply_free(r);
	/* the order of the answers: the PUT's cannot have come yet */
	cr_assert_not(answer_waiting(kvc), "the PUT was answered before its write reached the disk");

	gate_open();
	r = recv_or_fail(kvc, "the PUT");
	cr_assert_eq(r->cmd.opaque, put);
	cr_assert_eq(r->cmd.code, 0, "PUT failed: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	get_expect(broker, "NS", "k", "v");
	client_close(kvc);
	client_close(broker);
}

enum { BURST = 40 };

/* Sends k0 (held on the disk), then k1..k(BURST-1), and waits until they
 * have all reached the KV writer. */
static void put_burst_behind_a_held_write(struct client *c, int32_t *opaques)
{
	char key[16], value[32];

	opaques[0] = send_put(c, "BURST", "k0", "value-0");
	wait_fsyncs(1);
	for (int i = 1; i < BURST; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(value, sizeof(value), "value-%d", i);
		opaques[i] = send_put(c, "BURST", key, value);
	}
	pass_barrier(c, send_barrier(c));
	cr_assert_eq(count_lines(rename_log, kvp), 0, "nothing is written while the disk is held");
}

static void expect_burst_acknowledged(struct client *c, const int32_t *opaques)
{
	for (int i = 0; i < BURST; i++) {
		struct client_reply *r = recv_or_fail(c, "a PUT of the burst");

		cr_assert_eq(r->cmd.opaque, opaques[i], "answers in arrival order");
		cr_assert_eq(r->cmd.code, 0, "PUT %d failed: %s", i, r->cmd.remark ? r->cmd.remark : "");
		client_reply_free(r);
	}
}

static void expect_burst_present_after_restart(void)
{
	struct client *c;
	char key[16], value[32];

	start_plain();
	c = harness_connect_or_fail(&srv);
	for (int i = 0; i < BURST; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(value, sizeof(value), "value-%d", i);
		get_expect(c, "BURST", key, value);
	}
	client_close(c);
}

Test(kv_writer, puts_queued_behind_a_write_share_one_file_write)
{
	int32_t opaques[BURST];
	struct client *c;
	int writes;

	start_gated();
	c = harness_connect_or_fail(&srv);
	put_burst_behind_a_held_write(c, opaques);
	gate_open();
	expect_burst_acknowledged(c, opaques);
	writes = count_lines(rename_log, kvp);
	cr_log_info("%d PUTs in %d file writes", BURST, writes);
	cr_assert_geq(writes, 2, "k0 alone, then the rest");
	cr_assert_lt(writes, BURST, "every PUT wrote the file on its own");
	client_close(c);
	stop_clean();
	expect_burst_present_after_restart();
}

Test(kv_writer, sigterm_writes_and_answers_queued_puts)
{
	int32_t opaques[BURST];
	struct client *c;
	int st;

	start_gated();
	c = harness_connect_or_fail(&srv);
	put_burst_behind_a_held_write(c, opaques);
	cr_assert_eq(kill(srv.pid, SIGTERM), 0);
	gate_open();
	expect_burst_acknowledged(c, opaques);
	client_close(c);
	st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
	cr_assert(harness_wait_log(&srv, "KV writer stopped: 40 changes in ", 0), "no KV writer summary");
	harness_cleanup(&srv);
	expect_burst_present_after_restart();
}

Test(kv_writer, failed_batch_fails_whole_and_memory_stays_equal_to_disk)
{
	static const char one[] = "{\"configTable\":{\"NS\":{\"a\":\"1\"}}}";
	char *bak_tmp = path_in("kv.json.bak.tmp"), *bak = path_in("kv.json.bak"), *disk;
	struct client *c;
	struct client_reply *r;
	int32_t op[4];

	start_gated();
	c = harness_connect_or_fail(&srv);
	op[0] = send_put(c, "NS", "a", "1"); /* the first write: no backup step */
	wait_fsyncs(1);
	/* the next write cannot keep its backup: a directory stands where it goes */
	cr_assert_eq(mkdir(bak_tmp, 0755), 0);
	op[1] = send_put(c, "NS", "c", "3");
	op[2] = send_req(c, REQ_DELETE_KV_CONFIG, NULL, "namespace", "NS", "key", "a", NULL);
	op[3] = send_put(c, "NS", "b", "2");
	pass_barrier(c, send_barrier(c));
	gate_open();

	r = recv_or_fail(c, "PUT a");
	cr_assert_eq(r->cmd.opaque, op[0]);
	cr_assert_eq(r->cmd.code, 0, "%s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	for (int i = 1; i < 4; i++) {
		const char *want = i == 2 ? "DELETE_KV_CONFIG failed, nothing changed: "
					  : "PUT_KV_CONFIG failed, nothing changed: ";
		r = recv_or_fail(c, "a change of the failing batch");
		cr_assert_eq(r->cmd.opaque, op[i]);
		cr_assert_eq(r->cmd.code, RSP_SYSTEM_ERROR, "change %d was acknowledged", i);
		cr_assert_not_null(r->cmd.remark);
		cr_assert_eq(strncmp(r->cmd.remark, want, strlen(want)), 0, "%s", r->cmd.remark);
		cr_assert_not_null(strstr(r->cmd.remark, bak_tmp), "%s", r->cmd.remark);
		client_reply_free(r);
	}
	get_expect(c, "NS", "a", "1");
	get_expect(c, "NS", "b", NULL);
	get_expect(c, "NS", "c", NULL);
	disk = harness_slurp(kvp);
	cr_assert_not_null(disk);
	cr_assert_str_eq(disk, one, "the file holds what was acknowledged");
	free(disk);
	cr_assert_null(harness_slurp(bak), "no backup was made");

	cr_assert_eq(rmdir(bak_tmp), 0);
	send_put(c, "NS", "c", "3");
	r = recv_or_fail(c, "PUT c once the disk works");
	cr_assert_eq(r->cmd.code, 0, "%s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	disk = harness_slurp(bak);
	cr_assert_not_null(disk);
	cr_assert_str_eq(disk, one, "the backup holds the content before");
	free(disk);
	get_expect(c, "NS", "c", "3");
	client_close(c);
	free(bak_tmp);
	free(bak);
}
