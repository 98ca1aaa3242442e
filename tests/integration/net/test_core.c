/* Server core against the real binary: generic answers (unknown code,
 * one-way, stray responses) in both serializations and both execution
 * paths, every malformed-frame class, idle close, signals and the command
 * line. */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"

#define T HARNESS_IO_TIMEOUT_MS

SERVER_SUITE(core, .timeout = 120);

static void start(const char *const *args)
{
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
}

/* The exact bytes of the code-3 answer, as a 5.x Java NameServer writes
 * them (JSON keys sorted, no extFields, version 479). */
static void expect_unsupported_bytes(const struct client_reply *r, int32_t code, int32_t opaque,
				     enum remoting_serialize ser)
{
	char remark[64];
	snprintf(remark, sizeof remark, " request type %d not supported", code);

	cr_assert_eq(r->cmd.code, RSP_REQUEST_CODE_NOT_SUPPORTED);
	cr_assert_str_eq(r->cmd.remark, remark);
	cr_assert_eq(r->cmd.flag, REMOTING_FLAG_RESPONSE);
	cr_assert_eq(r->cmd.opaque, opaque);
	cr_assert_eq(r->cmd.language, LANG_JAVA);
	cr_assert_eq(r->cmd.version, RMQNS_SERVER_VERSION);
	cr_assert_eq(r->cmd.ext_count, 0);
	cr_assert_eq(r->cmd.body_len, 0);
	cr_assert_eq(r->cmd.serialize, ser);
	cr_assert_eq(r->frame[4], (uint8_t)ser, "header word names serialization %u", r->frame[4]);

	uint8_t want[512];
	size_t n = 0;
	if (ser == REMOTING_JSON) {
		char hdr[300];
		int h = snprintf(hdr, sizeof hdr,
				 "{\"code\":3,\"flag\":1,\"language\":\"JAVA\",\"opaque\":%d,"
				 "\"remark\":\"%s\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
				 opaque, remark);
		wr_be32(want, (uint32_t)(4 + h));
		wr_be32(want + 4, (uint32_t)h);
		memcpy(want + 8, hdr, (size_t)h);
		n = 8 + (size_t)h;
	} else {
		size_t rl = strlen(remark);
		uint8_t *p = want + 8;
		*p++ = 0x00; *p++ = 0x03;                     /* code */
		*p++ = 0x00;                                  /* JAVA */
		*p++ = RMQNS_SERVER_VERSION >> 8; *p++ = RMQNS_SERVER_VERSION & 0xff;
		wr_be32(p, (uint32_t)opaque); p += 4;
		wr_be32(p, 1); p += 4;                        /* flag */
		wr_be32(p, (uint32_t)rl); p += 4;
		memcpy(p, remark, rl); p += rl;
		wr_be32(p, 0); p += 4;                        /* no ext fields */
		size_t h = (size_t)(p - (want + 8));
		wr_be32(want, (uint32_t)(4 + h));
		wr_be32(want + 4, (1u << 24) | (uint32_t)h);
		n = 8 + h;
	}
	cr_assert_eq(r->frame_len, n, "answer is %zu bytes, expected %zu", r->frame_len, n);
	cr_assert_arr_eq(r->frame, want, n, "answer bytes differ from the Java NameServer's");
}

static void check_unsupported(enum remoting_serialize ser, int32_t code)
{
	struct client *c = harness_connect_or_fail(&srv);
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, code, ser);
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	expect_unsupported_bytes(r, code, req.opaque, ser);
	client_reply_free(r);

	/* The connection stays usable. */
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	expect_unsupported_bytes(r, code, req.opaque, ser);
	client_reply_free(r);
	client_close(c);
}

static const char *const pool_args[] = { "--routeQueryInline=false", NULL };
static const char *const inline_args[] = { "--routeQueryInline=true", NULL };

Test(core, unknown_code_json_pool)
{
	start(pool_args);
	check_unsupported(REMOTING_JSON, 9999);
}

Test(core, unknown_code_binary_pool)
{
	start(pool_args);
	check_unsupported(REMOTING_ROCKETMQ, 9999);
}

Test(core, unknown_code_json_inline)
{
	start(inline_args);
	check_unsupported(REMOTING_JSON, 777);
}

Test(core, unknown_code_binary_inline)
{
	start(inline_args);
	check_unsupported(REMOTING_ROCKETMQ, 777);
}

/* Nothing may be waiting on the connection. */
static void expect_silence(struct client *c)
{
	struct client_reply *r = NULL;
	int rc = client_recv(c, &r, 300);
	if (rc == 0)
		cr_assert_fail("unexpected frame: code %d opaque %d remark %s", r->cmd.code, r->cmd.opaque,
			r->cmd.remark ? r->cmd.remark : "(none)");
	cr_assert_eq(rc, RMQNS_EAGAIN, "expected no frame, got %d", rc);
}

/* One frame of code, serialization, flag and opaque, appended to out. */
static void encode_frame(struct buf *out, int32_t code, enum remoting_serialize ser, uint16_t flag,
			 int32_t opaque)
{
	struct remoting_cmd req;
	harness_request_init(&req, code, ser);
	req.flag = flag;
	req.opaque = opaque;
	harness_encode(&req, out);
}

/* Sends the frames in b (emptied) in one write: the only answer is the
 * code-3 answer to (code, opaque). */
static void send_expect_one_answer(struct client *c, struct buf *b, int32_t code, int32_t opaque)
{
	cr_assert_eq(client_send_raw(c, b->data, b->len, T), 0);
	buf_free(b);
	struct client_reply *r = NULL;
	cr_assert_eq(client_recv(c, &r, T), 0);
	expect_unsupported_bytes(r, code, opaque, REMOTING_JSON);
	client_reply_free(r);
	expect_silence(c);
}

/* An unknown code on c gets the code-3 answer: c is still served. */
static void expect_served(struct client *c)
{
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, 9999, REMOTING_JSON);
	cr_assert_eq(client_call(c, &req, &r, T), 0, "the connection is not served");
	expect_unsupported_bytes(r, 9999, req.opaque, REMOTING_JSON);
	client_reply_free(r);
}

static void check_oneway(void)
{
	struct client *c = harness_connect_or_fail(&srv);
	struct buf b = BUF_INIT;

	/* 50 one-way unknown codes, then one two-way request in the same write. */
	for (int i = 0; i < 50; i++)
		encode_frame(&b, 9999, i % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON, REMOTING_FLAG_ONEWAY, 1000 + i);
	encode_frame(&b, 9998, REMOTING_JSON, 0, 7);
	send_expect_one_answer(c, &b, 9998, 7);
	client_close(c);
}

Test(core, oneway_never_answered_pool)
{
	start(pool_args);
	check_oneway();
}

Test(core, oneway_never_answered_inline)
{
	start(inline_args);
	check_oneway();
}

Test(core, response_frame_dropped)
{
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	struct buf b = BUF_INIT;

	encode_frame(&b, 0, REMOTING_JSON, REMOTING_FLAG_RESPONSE, 5);
	encode_frame(&b, 9999, REMOTING_JSON, 0, 6);
	send_expect_one_answer(c, &b, 9999, 6);
	cr_assert(harness_wait_log(&srv, "dropping a response frame", T));
	client_close(c);
}

/* ---- malformed frames: each closes its own connection only ---- */

static void check_bad_frame(const uint8_t *bytes, size_t n)
{
	start(NULL);
	struct client *good = harness_connect_or_fail(&srv);
	struct client *bad = harness_connect_or_fail(&srv);
	struct client_reply *r = NULL;
	struct remoting_cmd req;
	char peer[64], needle[128];

	/* Both connections are in use before the bad frame arrives. */
	harness_request_init(&req, 9999, REMOTING_JSON);
	cr_assert_eq(client_call(bad, &req, &r, T), 0);
	client_reply_free(r);
	harness_client_peer(bad, peer, sizeof peer);

	cr_assert_eq(client_send_raw(bad, bytes, n, T), 0);
	int rc = client_recv(bad, &r, T);
	if (rc == 0)
		client_reply_free(r);
	cr_assert_eq(rc, RMQNS_ECLOSED, "the server should close the connection (got %d)", rc);

	snprintf(needle, sizeof needle, "closing connection %s:", peer);
	cr_assert(harness_wait_log(&srv, needle, T), "no log line naming %s", peer);

	for (int i = 0; i < 3; i++)
		expect_served(good);
	client_close(bad);
	client_close(good);
}

Test(core, bad_frame_negative_length)
{
	static const uint8_t f[] = { 0x80, 0, 0, 0, 0, 0, 0, 0 };
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_tiny_length)
{
	static const uint8_t f[] = { 0, 0, 0, 2, 0, 0 };
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_zero_length)
{
	static const uint8_t f[] = { 0, 0, 0, 0 };
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_too_big)
{
	/* 16 MiB + 4 with the prefix: one past what Java accepts. */
	static const uint8_t f[] = { 0x01, 0, 0, 0, 0, 0, 0, 2, '{', '}' };
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_header_beyond_frame)
{
	static const uint8_t f[] = { 0, 0, 0, 14, 0, 0, 0, 100, '{', '"', 'c', 'o', 'd', 'e', '"', ':' };
	check_bad_frame(f, sizeof f); /* header word vetted before the rest */
}

Test(core, bad_frame_serialize_type_2)
{
	static const uint8_t f[] = { 0, 0, 0, 6, 2, 0, 0, 2, '{', '}' };
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_broken_json_header)
{
	static const char hdr[] = "{\"code\":";
	uint8_t f[64];
	size_t h = sizeof hdr - 1;
	wr_be32(f, (uint32_t)(4 + h));
	wr_be32(f + 4, (uint32_t)h);
	memcpy(f + 8, hdr, h);
	check_bad_frame(f, 8 + h);
}

Test(core, bad_frame_truncated_binary_header)
{
	/* 10 bytes: shorter than the 21-byte fixed part. */
	uint8_t f[18] = { 0 };
	wr_be32(f, 14);
	wr_be32(f + 4, (1u << 24) | 10);
	f[9] = 0x69;
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_binary_remark_beyond_header)
{
	uint8_t f[8 + 21] = { 0 };
	wr_be32(f, 4 + 21);
	wr_be32(f + 4, (1u << 24) | 21);
	f[9] = 0x69;                 /* code 105 */
	wr_be32(f + 8 + 13, 1000);   /* remark length past the header */
	check_bad_frame(f, sizeof f);
}

Test(core, bad_frame_over_configured_max)
{
	/* A well-formed 2 KiB frame against --maxFrameSize=1024. */
	static const char *const args[] = { "--maxFrameSize=1024", NULL };
	start(args);
	struct client *good = harness_connect_or_fail(&srv);
	struct client *bad = harness_connect_or_fail(&srv);
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	struct buf b = BUF_INIT;
	uint8_t body[2048] = { 0 };

	harness_request_init(&req, 9999, REMOTING_JSON);
	req.body = body;
	req.body_len = sizeof body;
	harness_encode(&req, &b);
	cr_assert_eq(client_send_raw(bad, b.data, b.len, T), 0);
	buf_free(&b);
	int rc = client_recv(bad, &r, T);
	cr_assert_eq(rc, RMQNS_ECLOSED, "got %d", rc);

	expect_served(good);
	client_close(bad);
	client_close(good);
}

Test(core, frame_split_across_writes)
{
	/* A frame trickling in byte by byte is still one request. */
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	struct client_reply *r = NULL;
	struct buf b = BUF_INIT;

	encode_frame(&b, 4321, REMOTING_JSON, 0, 11);
	for (size_t i = 0; i < b.len; i++) {
		cr_assert_eq(client_send_raw(c, b.data + i, 1, T), 0);
		if (i % 16 == 0)
			harness_sleep_ms(1);
	}
	buf_free(&b);
	cr_assert_eq(client_recv(c, &r, T), 0);
	expect_unsupported_bytes(r, 4321, 11, REMOTING_JSON);
	client_reply_free(r);
	client_close(c);
}

/* ---- idle close ---- */

Test(core, idle_connection_closed)
{
	static const char *const args[] = { "--serverChannelMaxIdleTimeSeconds=1", NULL };
	start(args);
	struct client *idle = harness_connect_or_fail(&srv);
	struct client *busy = harness_connect_or_fail(&srv);
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	char peer[64], needle[128];

	harness_request_init(&req, 9999, REMOTING_JSON);
	cr_assert_eq(client_call(idle, &req, &r, T), 0);
	client_reply_free(r);
	harness_client_peer(idle, peer, sizeof peer);

	/* An active connection (a call every 250 ms) outlives the idle limit. */
	for (int i = 0; i < 10; i++) {
		harness_request_init(&req, 9999, REMOTING_JSON);
		cr_assert_eq(client_call(busy, &req, &r, T), 0, "active connection lost at call %d", i);
		client_reply_free(r);
		harness_sleep_ms(250);
	}
	int rc = client_recv(idle, &r, T);
	cr_assert_eq(rc, RMQNS_ECLOSED, "the idle connection should be closed (got %d)", rc);
	snprintf(needle, sizeof needle, "closing connection %s: idle", peer);
	cr_assert(harness_wait_log(&srv, needle, T));
	client_close(idle);
	client_close(busy);
}

/* ---- route expiry closes the broker's connection ---- */

/* The remark naming a topic that is not UTF-8 carries U+FFFD for the bad
 * byte, on the wire, in both serializations alike. */
Test(core, unknown_topic_not_utf8_is_named_with_replacement_in_both_serializations)
{
	static const char want[] = "for the topic: No\xEF\xBF\xBDSuchTopic";
	struct remoting_ext_field ext[1] = { { "topic", "No\xFFSuchTopic" } };
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	for (int ser = REMOTING_JSON; ser <= REMOTING_ROCKETMQ; ser++) {
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		harness_request_init(&req, REQ_GET_ROUTEINFO_BY_TOPIC, (enum remoting_serialize)ser);
		req.ext = ext;
		req.ext_count = 1;
		cr_assert_eq(client_call(c, &req, &r, T), 0);
		cr_expect_eq(r->cmd.code, RSP_TOPIC_NOT_EXIST);
		cr_expect_eq(r->frame[4], ser, "the answer's serialization");
		cr_expect_not_null(memmem(r->frame, r->frame_len, want, sizeof want - 1),
				   "serialization %d: %s", ser, r->cmd.remark);
		cr_expect_null(memmem(r->frame, r->frame_len, "\xFF", 1), "serialization %d", ser);
		client_reply_free(r);
	}
	client_close(c);
}

Test(core, expired_broker_connection_closed)
{
	static const char *const args[] = { "--scanNotActiveBrokerInterval=200", NULL };
	start(args);
	struct client *broker = harness_connect_or_fail(&srv);
	struct client *client = harness_connect_or_fail(&srv);
	static const char body[] =
		"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
		"\"exp-a\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"exp-a\",\"writeQueueNums\":4},"
		"\"exp-b\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"exp-b\",\"writeQueueNums\":4}}}}";
	struct remoting_ext_field ext[] = {
		{ "brokerName", "expb" }, { "brokerAddr", "10.3.0.1:10911" },
		{ "clusterName", "ExpCluster" }, { "haServerAddr", "h:1" }, { "brokerId", "0" },
		{ "heartbeatTimeoutMillis", "1000" },
	};
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	char peer[64], needle[128];

	harness_request_init(&req, 103, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.body = (const uint8_t *)body;
	req.body_len = (uint32_t)strlen(body);
	cr_assert_eq(client_call(broker, &req, &r, T), 0);
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	harness_client_peer(broker, peer, sizeof peer);
	cr_assert_eq(harness_route_code(client, "exp-a"), 0, "the route is there after registering");

	/* No heartbeat: within a few scans the broker is gone (bounded wait). */
	int code = 0;
	for (int i = 0; i < 100 && (code = harness_route_code(client, "exp-a")) == 0; i++)
		harness_sleep_ms(100);
	cr_assert_eq(code, 17, "the route should be gone after expiry (got %d)", code);

	/* ... and the server closed its connection: a read meets EOF. */
	int rc = client_recv(broker, &r, T);
	cr_assert_eq(rc, RMQNS_ECLOSED, "the expired broker's connection should be closed (got %d)", rc);
	snprintf(needle, sizeof needle, "closing connection %s: expired", peer);
	cr_assert(harness_wait_log(&srv, needle, T), "no log line \"%s\"", needle);

	/* The client's connection stays open and served. */
	cr_assert_eq(harness_route_code(client, "exp-b"), 17);
	expect_served(client);
	client_close(broker);
	client_close(client);
}

/* ---- big frames leave with their read buffer ---- */

/* A registration of n topics prefix-0 .. prefix-(n-1), opaque given, appended to out. */
static void encode_registration(struct buf *out, const char *name, const char *addr, const char *prefix,
				int n, int32_t opaque)
{
	struct buf body = BUF_INIT;
	char dash[32];
	snprintf(dash, sizeof dash, "%s-", prefix);
	harness_topics_body(&body, dash, n, 8);
	struct remoting_ext_field ext[] = {
		{ "brokerName", name }, { "brokerAddr", addr }, { "clusterName", "BigCluster" },
		{ "haServerAddr", "h:1" }, { "brokerId", "0" },
	};
	struct remoting_cmd req;
	harness_request_init(&req, 103, REMOTING_JSON);
	req.opaque = opaque;
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.body = body.data;
	req.body_len = (uint32_t)body.len;
	harness_encode(&req, out);
	buf_free(&body);
}

Test(core, big_frames_leave_with_their_buffer_and_what_follows_is_read_on)
{
	/* Two registrations of ~400 KB (past the hand-over size), small
	 * requests after each, all in one write: the reactor hands each big
	 * frame over with its buffer and must carry the bytes behind it into
	 * the next buffer. */
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	struct buf b = BUF_INIT;
	encode_registration(&b, "bigA", "10.4.0.1:10911", "bigA", 4000, 1);
	cr_assert_gt(b.len, 300000u, "the registration is %zu bytes", b.len);
	encode_frame(&b, 9999, REMOTING_JSON, 0, 2);
	encode_frame(&b, 9999, REMOTING_JSON, 0, 3);
	encode_registration(&b, "bigB", "10.4.0.2:10911", "bigB", 4000, 4);
	encode_frame(&b, 9999, REMOTING_JSON, 0, 5);
	cr_assert_eq(client_send_raw(c, b.data, b.len, T), 0);
	buf_free(&b);

	bool seen[6] = { false };
	for (int k = 0; k < 5; k++) {
		struct client_reply *r = NULL;
		cr_assert_eq(client_recv(c, &r, T), 0, "answer %d of 5 missing", k);
		int32_t op = r->cmd.opaque;
		cr_assert(op >= 1 && op <= 5 && !seen[op], "unexpected opaque %d", op);
		seen[op] = true;
		if (op == 1 || op == 4)
			cr_expect_eq(r->cmd.code, 0, "registration %d answered %d: %s", op, r->cmd.code,
				     r->cmd.remark ? r->cmd.remark : "");
		else
			expect_unsupported_bytes(r, 9999, op, REMOTING_JSON);
		client_reply_free(r);
	}
	/* every topic of both arrived whole */
	cr_expect_eq(harness_route_code(c, "bigA-0"), 0);
	cr_expect_eq(harness_route_code(c, "bigA-3999"), 0);
	cr_expect_eq(harness_route_code(c, "bigB-0"), 0);
	cr_expect_eq(harness_route_code(c, "bigB-3999"), 0);
	cr_expect_eq(harness_route_code(c, "bigB-4000"), 17);
	client_close(c);
}

Test(core, big_frame_with_a_bad_header_closes_its_connection)
{
	/* 400 KB whose JSON header does not parse: offered with its buffer,
	 * refused, the buffer stays the connection's and goes with it */
	static uint8_t f[400000];
	uint32_t len = sizeof f - 4, hlen = 1000;
	f[0] = (uint8_t)(len >> 24), f[1] = (uint8_t)(len >> 16), f[2] = (uint8_t)(len >> 8), f[3] = (uint8_t)len;
	f[4] = 0, f[5] = (uint8_t)(hlen >> 16), f[6] = (uint8_t)(hlen >> 8), f[7] = (uint8_t)hlen;
	memset(f + 8, '{', hlen);
	check_bad_frame(f, sizeof f);
}

/* ---- signals and command line ---- */

static void check_stop_signal(int sig)
{
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, 9999, REMOTING_JSON);
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	client_reply_free(r);

	int elapsed = 0;
	int st = harness_stop(&srv, sig, HARNESS_WAIT_MS, &elapsed);
	cr_assert(st != -1, "the server did not exit within %d ms", HARNESS_WAIT_MS);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x", st);
	cr_assert_eq(client_recv(c, &r, T), RMQNS_ECLOSED);
	client_close(c);

	char *log = harness_read_log(&srv);
	cr_assert_not_null(log);
	cr_assert_not_null(strstr(log, "shutdown hook was invoked, 1 times."));
	cr_assert_not_null(strstr(log, "shutdown hook done, consuming time total(ms): "));
	free(log);
}

Test(core, sigterm_exits_zero)
{
	check_stop_signal(SIGTERM);
}

Test(core, sigint_exits_zero)
{
	check_stop_signal(SIGINT);
}

#define STOP_CONNS 4
#define STOP_REGS_PER_CONN 3

Test(core, sigterm_answers_the_registrations_it_has_read)
{
	/* Registrations queued in the pool and the registrar when SIGTERM
	 * comes: the pool runs them, the registrar applies them late and
	 * answers through the server, so the server must outlive the
	 * registrar. Every answer that arrives is whole and in order, and the
	 * exit is clean (under ASan a reply through a freed server aborts). */
	start(NULL);
	struct client *c[STOP_CONNS];
	for (int i = 0; i < STOP_CONNS; i++) {
		char name[16], addr[32], prefix[16];
		struct buf b = BUF_INIT;
		c[i] = harness_connect_or_fail(&srv);
		snprintf(name, sizeof name, "stop%d", i);
		snprintf(addr, sizeof addr, "10.5.0.%d:10911", i + 1);
		for (int k = 0; k < STOP_REGS_PER_CONN; k++) {
			snprintf(prefix, sizeof prefix, "stop%d-%d", i, k);
			encode_registration(&b, name, addr, prefix, 10000, k + 1);
		}
		cr_assert_eq(client_send_raw(c[i], b.data, b.len, T), 0);
		buf_free(&b);
	}
	/* the first answer: the registrations are being read and applied */
	struct client_reply *r = NULL;
	cr_assert_eq(client_recv(c[0], &r, T), 0, "no registration was answered");
	cr_assert_eq(r->cmd.opaque, 1);
	cr_assert_eq(r->cmd.code, 0, "%s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	cr_assert_eq(kill(srv.pid, SIGTERM), 0);

	int answered = 1;
	for (int i = 0; i < STOP_CONNS; i++) {
		for (int32_t want = i == 0 ? 2 : 1;; want++) {
			int rc = client_recv(c[i], &r, T);
			if (rc == RMQNS_ECLOSED)
				break;
			cr_assert_eq(rc, 0, "connection %d: neither an answer nor a close (%d)", i, rc);
			cr_assert_eq(r->cmd.opaque, want, "connection %d: answer %d out of order", i,
				     r->cmd.opaque);
			cr_assert_eq(r->cmd.code, 0, "%s", r->cmd.remark ? r->cmd.remark : "");
			client_reply_free(r);
			answered++;
		}
		client_close(c[i]);
	}
	cr_log_info("%d of %d registrations answered", answered, STOP_CONNS * STOP_REGS_PER_CONN);
	int st = harness_stop(&srv, SIGTERM, HARNESS_WAIT_MS, NULL);
	cr_assert(st != -1, "the server did not exit within %d ms", HARNESS_WAIT_MS);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x (or a sanitizer report)", st);
}

Test(core, sighup_keeps_serving)
{
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);

	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(harness_wait_log(&srv, "SIGHUP", T));
	expect_served(c);
	client_close(c);
}

/* The threads of the running server whose name starts with prefix: the
 * ids and names of the first max of them; returns how many there are. */
static int tasks_named(pid_t pid, const char *prefix, pid_t *tids, char (*names)[32], int max)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	cr_assert_not_null(d);
	int found = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char comm_path[384], comm[32] = "";
		snprintf(comm_path, sizeof comm_path, "%s/%s/comm", path, e->d_name);
		FILE *f = fopen(comm_path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof comm, f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, prefix, strlen(prefix)) != 0)
			continue;
		if (found < max) {
			tids[found] = (pid_t)atoi(e->d_name);
			snprintf(names[found], sizeof names[found], "%s", comm);
		}
		found++;
	}
	closedir(d);
	return found;
}

static int threads_named(pid_t pid, const char *prefix)
{
	return tasks_named(pid, prefix, NULL, NULL, 0);
}

/* The CPUs each reactor thread of the running server may use, by reactor
 * index; returns how many reactors were found. */
static int reactor_cpusets(pid_t pid, cpu_set_t *sets, int max)
{
	pid_t tids[64];
	char names[64][32];
	int n = tasks_named(pid, "reactor-", tids, names, 64), found = 0;
	cr_assert_leq(n, 64);
	for (int i = 0; i < n; i++) {
		unsigned idx;
		if (sscanf(names[i], "reactor-%u", &idx) != 1 || (int)idx >= max)
			continue;
		cr_assert_eq(sched_getaffinity(tids[i], sizeof sets[idx], &sets[idx]), 0);
		found++;
	}
	return found;
}

Test(core, reactors_pinned_one_cpu_each)
{
	/* reactor i on the i-th CPU the server may use */
	static const char *const args[] = { "--serverSelectorThreads=3", "--serverReactorCpuAffinity=true",
					    NULL };
	cpu_set_t mine, sets[3];
	cr_assert_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
	int cpus[CPU_SETSIZE], n = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine))
			cpus[n++] = c;
	start(args);
	cr_assert_eq(reactor_cpusets(srv.pid, sets, 3), 3, "three reactor threads by name");
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(CPU_COUNT(&sets[i]), 1, "reactor %d may run on %d CPUs", i, CPU_COUNT(&sets[i]));
		cr_expect(CPU_ISSET(cpus[i % n], &sets[i]), "reactor %d not on CPU %d", i, cpus[i % n]);
	}
}

Test(core, reactors_keep_the_cpuset_by_default)
{
	cpu_set_t mine, sets[2];
	cr_assert_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
	start(NULL);
	cr_assert_eq(reactor_cpusets(srv.pid, sets, 2), 2);
	for (int i = 0; i < 2; i++)
		cr_expect(CPU_EQUAL(&sets[i], &mine), "reactor %d was pinned", i);
}

/* Started on one CPU (a taskset, a container's cpuset), the server runs
 * one reactor and one general worker, not one per CPU of the machine. */
Test(core, thread_defaults_follow_the_cpus_it_may_use)
{
	cpu_set_t mine, one, sets[4];
	cr_assert_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
	int first = 0;
	while (!CPU_ISSET(first, &mine))
		first++;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
	start(NULL);
	cr_assert_eq(sched_setaffinity(0, sizeof mine, &mine), 0);
	cr_assert_eq(reactor_cpusets(srv.pid, sets, 4), 1, "one reactor on one CPU");
	cr_assert_eq(threads_named(srv.pid, "proc-"), 1, "one general worker on one CPU");
	struct client *c = harness_connect_or_fail(&srv);
	client_close(c);
}

Test(core, boot_line_names_bound_port)
{
	start(NULL);
	char path[320];
	snprintf(path, sizeof path, "%s", srv.out_path);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	char line[256] = "";
	cr_assert_not_null(fgets(line, sizeof line, f));
	fclose(f);
	char want[128];
	snprintf(want, sizeof want,
		 "The Name Server boot success. serializeType=JSON, address 127.0.0.1:%d\n", srv.port);
	cr_assert_str_eq(line, want);
	struct client *c = harness_connect_or_fail(&srv);
	client_close(c);
}

Test(core, help_exits_zero)
{
	static const char *const args[] = { "-h", NULL };
	char *out = NULL;
	int st = harness_run(args, T, &out);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_assert(out && strlen(out) > 0, "usage text expected on stdout");
	free(out);
}

Test(core, print_options_exits_zero)
{
	static const char *const args[] = { "-p", "--listenPort=19999", NULL };
	char *out = NULL;
	int st = harness_run(args, T, &out);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_assert(out && strstr(out, "listenPort=19999"), "options expected on stdout");
	free(out);
}

Test(core, missing_config_file_exits_one)
{
	static const char *const args[] = { "-c", "/nonexistent/rmqns.conf", NULL };
	int st = harness_run(args, T, NULL);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x", st);
}

Test(core, port_in_use_exits_one)
{
	start(NULL);
	char port[32];
	snprintf(port, sizeof port, "--listenPort=%d", srv.port);
	const char *const args[] = { "--bindAddress=127.0.0.1", port, NULL };
	int st = harness_run(args, T, NULL);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x", st);
}
