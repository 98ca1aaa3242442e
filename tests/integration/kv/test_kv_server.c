/* KV config against the real binary: PUT/GET/DELETE/GET_KVLIST answers
 * (codes, remarks, extFields, bodies) in both serializations and as the
 * Java NameServer sent them, the file on disk, restarts, a kill -9 in the
 * middle of a PUT storm, unwritable and corrupt files. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"

#define T HARNESS_IO_TIMEOUT_MS

SERVER_FIXTURE_SUITE(kv_server, "rmqns-kvs", .timeout = 120);

/* Starts the server with its KV file at dir/name. */
static void start_kv(const char *name)
{
	char *arg = NULL;
	char *kvp = fixture_path(&fx, name);
	const char *args[2];

	cr_assert(asprintf(&arg, "--kvConfigPath=%s", kvp) > 0);
	args[0] = arg;
	args[1] = NULL;
	cr_assert_eq(harness_start(&fx.srv, args), 0, "the server did not start");
	free(arg);
	free(kvp);
}

/* Sends code with the given ext fields (NULL-terminated key, value list;
 * a NULL value leaves the field out) and returns the answer. */
static struct client_reply *call(struct client *c, enum remoting_serialize ser, int32_t code, ...)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	va_list ap;

	va_start(ap, code);
	int rc = harness_request_va(&req, ext, code, ser, NULL, ap);
	va_end(ap);
	cr_assert_eq(rc, 0);
	cr_assert_eq(client_call(c, &req, &r, T), 0, "no answer to code %d", code);
	return r;
}

static void expect_code(struct client_reply *r, int32_t code, const char *remark)
{
	cr_assert_eq(r->cmd.code, code, "code %d (remark %s), expected %d", r->cmd.code,
		     r->cmd.remark ? r->cmd.remark : "-", code);
	if (remark) {
		cr_assert_not_null(r->cmd.remark);
		cr_assert_str_eq(r->cmd.remark, remark);
	} else {
		cr_assert_null(r->cmd.remark, "unexpected remark %s", r->cmd.remark);
	}
	client_reply_free(r);
}

/* The JSON header text of a JSON answer. */
static char *json_header(const struct client_reply *r)
{
	uint32_t hl = rd_be32(r->frame + 4) & 0xFFFFFF;
	return strndup((const char *)r->frame + 8, hl);
}

static void put_ok(struct client *c, const char *ns, const char *k, const char *v)
{
	expect_code(call(c, REMOTING_JSON, REQ_PUT_KV_CONFIG, "namespace", ns, "key", k, "value", v, NULL),
		    0, NULL);
}

static void get_expect(struct client *c, const char *ns, const char *k, const char *v)
{
	struct client_reply *r = call(c, REMOTING_JSON, REQ_GET_KV_CONFIG, "namespace", ns, "key", k, NULL);
	harness_expect_kv_value(r, ns, k, v);
}

Test(kv_server, put_get_list_delete_both_serializations)
{
	enum remoting_serialize sers[] = { REMOTING_JSON, REMOTING_ROCKETMQ };

	start_kv("kv.json");
	for (int i = 0; i < 2; i++) {
		enum remoting_serialize ser = sers[i];
		struct client *c = harness_connect_or_fail(&fx.srv);
		struct client_reply *r;
		char *h;

		expect_code(call(c, ser, REQ_PUT_KV_CONFIG, "namespace", "NS", "key", "k", "value", "v", NULL), 0, NULL);
		expect_code(call(c, ser, REQ_PUT_KV_CONFIG, "namespace", "NS", "key", "k2", "value", "v2", NULL), 0, NULL);
		r = call(c, ser, REQ_GET_KV_CONFIG, "namespace", "NS", "key", "k", NULL);
		cr_assert_eq(r->cmd.code, 0);
		cr_assert_eq(r->cmd.serialize, ser);
		cr_assert_str_eq(remoting_ext_get(&r->cmd, "value"), "v");
		cr_assert_null(r->cmd.remark);
		if (ser == REMOTING_JSON) {
			h = json_header(r);
			cr_assert_not_null(strstr(h, "\"extFields\":{\"value\":\"v\"}"), "%s", h);
			free(h);
		}
		client_reply_free(r);

		r = call(c, ser, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL);
		cr_assert_eq(r->cmd.code, 0);
		cr_assert_eq(r->cmd.body_len, strlen("{\"table\":{\"k2\":\"v2\",\"k\":\"v\"}}"));
		cr_assert_arr_eq(r->cmd.body, "{\"table\":{\"k2\":\"v2\",\"k\":\"v\"}}", r->cmd.body_len,
				 "Java hash order");
		cr_assert_eq(r->cmd.ext_count, 0);
		if (ser == REMOTING_JSON) {
			h = json_header(r);
			cr_assert_null(strstr(h, "extFields"), "%s", h);
			free(h);
		}
		client_reply_free(r);

		expect_code(call(c, ser, REQ_DELETE_KV_CONFIG, "namespace", "NS", "key", "k", NULL), 0, NULL);
		r = call(c, ser, REQ_GET_KV_CONFIG, "namespace", "NS", "key", "k", NULL);
		if (ser == REMOTING_JSON) {
			h = json_header(r);
			cr_assert_not_null(strstr(h, "\"extFields\":{}"), "a miss keeps extFields: %s", h);
			free(h);
		}
		expect_code(r, RSP_QUERY_NOT_FOUND, "No config item, Namespace: NS Key: k");
		expect_code(call(c, ser, REQ_DELETE_KV_CONFIG, "namespace", "NS", "key", "k2", NULL), 0, NULL);
		r = call(c, ser, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL);
		cr_assert_eq(r->cmd.code, 0);
		cr_assert_arr_eq(r->cmd.body, "{\"table\":{}}", r->cmd.body_len, "an emptied namespace stays");
		client_reply_free(r);
		client_close(c);
	}
}

Test(kv_server, missing_fields_follow_java)
{
	struct client *c;
	struct client_reply *r;
	char *h;

	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	expect_code(call(c, REMOTING_JSON, REQ_PUT_KV_CONFIG, "key", "k", "value", "v", NULL), 1,
		    "namespace or key is null");
	expect_code(call(c, REMOTING_JSON, REQ_PUT_KV_CONFIG, "namespace", "NS", "value", "v", NULL), 1,
		    "namespace or key is null");
	expect_code(call(c, REMOTING_JSON, REQ_PUT_KV_CONFIG, "namespace", "NS", "key", "k", NULL), 1,
		    "value is null");
	expect_code(call(c, REMOTING_JSON, REQ_GET_KV_CONFIG, "namespace", "NS", NULL), 22,
		    "No config item, Namespace: NS Key: null");
	expect_code(call(c, REMOTING_JSON, REQ_GET_KV_CONFIG, NULL), 22,
		    "No config item, Namespace: null Key: null");
	r = call(c, REMOTING_JSON, REQ_GET_KVLIST_BY_NAMESPACE, NULL);
	h = json_header(r);
	cr_assert_null(strstr(h, "extFields"), "%s", h);
	free(h);
	expect_code(r, 22, "No config item, Namespace: null");
	expect_code(call(c, REMOTING_JSON, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NoSuchNS", NULL), 22,
		    "No config item, Namespace: NoSuchNS");
	expect_code(call(c, REMOTING_JSON, REQ_DELETE_KV_CONFIG, "namespace", "NS", NULL), 0, NULL);
	get_expect(c, "NS", "k", NULL);
	client_close(c);
}

Test(kv_server, answers_match_java_4_9_8_capture)
{
	struct client *c;
	struct client_reply *r;

	if (!getenv("RMQNS_TESTDATA"))
		cr_skip_test("RMQNS_TESTDATA not set");
	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	/* PUT capNS/capKey=capValue, then list it: Java answered
	 * {"table":{"capKey":"capValue"}} */
	client_reply_free(harness_replay_java498_like(c, "00040-c010-c2s-req-code100.bin",
						      "00042-c010-s2c-rsp-to100-code0.bin"));
	client_reply_free(harness_replay_java498_like(c, "00043-c011-c2s-req-code101.bin",
						      "00044-c011-s2c-rsp-to101-code0.bin"));
	r = harness_replay_java498_like(c, "00047-c012-c2s-req-code219.bin",
					"00048-c012-s2c-rsp-to219-code0.bin");
	cr_assert_eq(r->cmd.code, 0);
	cr_assert_eq(r->cmd.body_len, strlen("{\"table\":{\"capKey\":\"capValue\"}}"));
	cr_assert_arr_eq(r->cmd.body, "{\"table\":{\"capKey\":\"capValue\"}}", r->cmd.body_len);
	client_reply_free(r);
	/* delete, then the GET miss and the list miss */
	client_reply_free(harness_replay_java498_like(c, "00050-c013-c2s-req-code102.bin",
						      "00051-c013-s2c-rsp-to102-code0.bin"));
	client_reply_free(harness_replay_java498_like(c, "00053-c014-c2s-req-code101.bin",
						      "00054-c014-s2c-rsp-to101-code22.bin"));
	client_reply_free(harness_replay_java498_like(c, "00055-c015-c2s-req-code219.bin",
						      "00056-c015-s2c-rsp-to219-code22.bin"));
	client_close(c);
}

Test(kv_server, file_on_disk_and_restart)
{
	char *kvp = fixture_path(&fx, "kv.json"), *bak = fixture_path(&fx, "kv.json.bak"), *t;
	struct client *c;
	int st;

	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	put_ok(c, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:4;broker-b:4");
	t = harness_slurp(kvp);
	cr_assert_str_eq(t, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicOrder\":\"broker-a:4;broker-b:4\"}}}");
	free(t);
	put_ok(c, "NS", "emoji", "😀 é \"q\"");
	t = harness_slurp(bak);
	cr_assert_str_eq(t, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicOrder\":\"broker-a:4;broker-b:4\"}}}");
	free(t);
	client_close(c);
	st = harness_stop(&fx.srv, SIGTERM, 5000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	harness_cleanup(&fx.srv);

	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	get_expect(c, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:4;broker-b:4");
	get_expect(c, "NS", "emoji", "😀 é \"q\"");
	client_close(c);
	free(kvp);
	free(bak);
}

/* kill -9 while PUTs are in flight: every acknowledged PUT survives. */
Test(kv_server, kill_9_during_put_storm_loses_no_acknowledged_put)
{
	enum { STORM = 300, KILL_AFTER = 60 };
	static bool acked[STORM];
	struct client *c;
	int32_t first_opaque;
	int n_acked = 0, got = 0;

	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	first_opaque = client_next_opaque(c) + 1;
	for (int i = 0; i < STORM; i++) {
		struct remoting_ext_field ext[3];
		struct remoting_cmd req;
		char key[16], value[32];

		snprintf(key, sizeof(key), "k%d", i);
		snprintf(value, sizeof(value), "value-%d", i);
		harness_request_init(&req, REQ_PUT_KV_CONFIG, REMOTING_JSON);
		ext[0] = (struct remoting_ext_field){ "namespace", "STORM" };
		ext[1] = (struct remoting_ext_field){ "key", key };
		ext[2] = (struct remoting_ext_field){ "value", value };
		req.ext = ext;
		req.ext_count = 3;
		req.ext_present = true;
		req.opaque = first_opaque + i;
		cr_assert_eq(client_send(c, &req, T), 0);
	}
	for (;;) {
		struct client_reply *r = NULL;
		int rc = client_recv(c, &r, got < KILL_AFTER ? T : 2000);

		if (rc != 0)
			break; /* the server is gone (or silent): what we have is what was acknowledged */
		got++;
		if (r->cmd.code == 0 && r->cmd.opaque >= first_opaque && r->cmd.opaque < first_opaque + STORM) {
			acked[r->cmd.opaque - first_opaque] = true;
			n_acked++;
		}
		client_reply_free(r);
		if (got == KILL_AFTER)
			kill(fx.srv.pid, SIGKILL);
	}
	client_close(c);
	harness_stop(&fx.srv, SIGKILL, 5000, NULL);
	harness_cleanup(&fx.srv);
	cr_assert_geq(n_acked, KILL_AFTER);

	start_kv("kv.json");
	c = harness_connect_or_fail(&fx.srv);
	for (int i = 0; i < STORM; i++) {
		char key[16], value[32];
		if (!acked[i])
			continue;
		snprintf(key, sizeof(key), "k%d", i);
		snprintf(value, sizeof(value), "value-%d", i);
		get_expect(c, "STORM", key, value);
	}
	client_close(c);
}

Test(kv_server, unwritable_file_answers_error_and_keeps_memory)
{
	char *blocker = fixture_path(&fx, "sub");
	struct client *c;
	struct client_reply *r;
	FILE *f;

	start_kv("sub/kv.json");
	c = harness_connect_or_fail(&fx.srv);
	/* the KV directory turns out to be a regular file (root ignores
	 * permissions, not this) */
	f = fopen(blocker, "w");
	cr_assert_not_null(f);
	fclose(f);
	r = call(c, REMOTING_JSON, REQ_PUT_KV_CONFIG, "namespace", "NS", "key", "k", "value", "v", NULL);
	cr_assert_eq(r->cmd.code, 1);
	cr_assert_not_null(r->cmd.remark);
	cr_assert_not_null(strstr(r->cmd.remark, "Not a directory"), "%s", r->cmd.remark);
	client_reply_free(r);
	get_expect(c, "NS", "k", NULL);
	expect_code(call(c, REMOTING_JSON, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL), 22,
		    "No config item, Namespace: NS");
	/* the directory comes back: writes work again */
	cr_assert_eq(unlink(blocker), 0);
	put_ok(c, "NS", "k", "v");
	get_expect(c, "NS", "k", "v");
	client_close(c);
	free(blocker);
}

Test(kv_server, corrupt_or_unusable_file_refuses_to_start)
{
	char *kvp = fixture_path(&fx, "kv.json"), *arg = NULL, *out = NULL;
	const char *args[3];
	FILE *f;
	int st;

	f = fopen(kvp, "w");
	cr_assert_not_null(f);
	fputs("{\"configTable\":{\"NS\":{\"k\":", f);
	fclose(f);
	cr_assert(asprintf(&arg, "--kvConfigPath=%s", kvp) > 0);
	args[0] = "--listenPort=0";
	args[1] = arg;
	args[2] = NULL;
	st = harness_run(args, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "started with a corrupt KV file");
	cr_assert_null(strstr(out ? out : "", "boot success"));
	free(out);
	out = NULL;
	{
		/* the file is untouched */
		char *t = harness_slurp(kvp);
		cr_assert_str_eq(t, "{\"configTable\":{\"NS\":{\"k\":");
		free(t);
	}
	free(arg);
	/* a path under a regular file cannot be used at all */
	cr_assert(asprintf(&arg, "--kvConfigPath=%s/x.json", kvp) > 0);
	args[1] = arg;
	st = harness_run(args, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "started with an unusable KV path");
	free(out);
	free(arg);
	free(kvp);
}

Test(kv_server, corrupt_file_moved_aside_when_allowed)
{
	char *kvp = fixture_path(&fx, "kv.json"), *arg = NULL;
	const char *args[3];
	struct client *c;
	FILE *f;

	f = fopen(kvp, "w");
	cr_assert_not_null(f);
	fputs("garbage", f);
	fclose(f);
	cr_assert(asprintf(&arg, "--kvConfigPath=%s", kvp) > 0);
	args[0] = arg;
	args[1] = "--kvConfigIgnoreCorrupt=true";
	args[2] = NULL;
	cr_assert_eq(harness_start(&fx.srv, args), 0);
	cr_assert(harness_wait_log(&fx.srv, "starting with an empty table", HARNESS_WAIT_MS));
	c = harness_connect_or_fail(&fx.srv);
	get_expect(c, "NS", "k", NULL);
	put_ok(c, "NS", "k", "v");
	client_close(c);
	free(arg);
	free(kvp);
}
