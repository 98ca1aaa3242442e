/* Replays the captured Java sessions against the real binary: every
 * recorded request is sent as recorded (same bytes, one connection per
 * recorded connection, in recorded order, each answered before the next is
 * sent), and every answer is checked against the recorded one: code, flag,
 * remark, ext fields (and their presence), serialization, and the body -
 * as bytes where protocol.md §5.1 says bytes matter (route and cluster
 * answers), as data otherwise.
 *
 * Expected differences, each checked for what rmqns does instead:
 * - 4.9.8 route and cluster bodies lack "enableActingMaster"; rmqns always
 *   writes it (false for 4.x brokers): the expected bytes get it inserted;
 * - code 17 remarks carry the 4.9 FAQ URL; rmqns writes the 5.x one;
 * - 5.1.4 answers binary requests in JSON; rmqns answers in kind;
 * - 5.1.4 fails the compressed registration flagged plain (s3); rmqns
 *   accepts it, so its later cluster answers list the broker;
 * - answers that depend on the moment or the host (GET_NAMESRV_CONFIG
 *   bodies, the version stamp) are not compared. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "harness_criterion.h"
#include "test_util.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"

#ifndef TESTDATA_DIR
#error "TESTDATA_DIR must name tests/data"
#endif

#define T HARNESS_IO_TIMEOUT_MS
#define MAX_CONNS 64
#define FAQ_49 "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#define FAQ_5 "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

SERVER_SUITE(replay, .timeout = 240);

struct answer {
	int conn;
	int32_t opaque;
	struct client_reply *r;
};

struct session {
	const char *dir;
	bool java49;
	bool compressed_fixed; /* s3: rmqns accepts what 5.1.4 refused */
	bool registered;       /* ... and has accepted it */
	struct client *c[MAX_CONNS];
	json_t **recs;
	size_t n;
	struct answer ans[4096];
	int n_ans;
	int checked, checked_bytes;
};

static void load_index(struct session *s)
{
	char path[1024], *line = NULL;
	size_t cap = 0, n = 0;
	snprintf(path, sizeof(path), "%s/%s/index.jsonl", TESTDATA_DIR, s->dir);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	s->recs = NULL;
	while (getline(&line, &cap, f) > 0) {
		json_error_t e;
		json_t *rec = json_loads(line, 0, &e);
		cr_assert(rec, "%s: %s", path, e.text);
		s->recs = realloc(s->recs, (n + 1) * sizeof(*s->recs));
		s->recs[n++] = rec;
	}
	s->n = n;
	free(line);
	fclose(f);
}

static int rec_int(const json_t *rec, const char *k)
{
	return (int)json_integer_value(json_object_get(rec, k));
}

/* The recorded answer to the request at index i, or NULL. */
static const json_t *recorded_answer(const struct session *s, size_t i)
{
	const json_t *rq = s->recs[i];
	for (size_t k = i + 1; k < s->n; k++) {
		const json_t *r = s->recs[k];
		if (json_is_true(json_object_get(r, "is_response")) && rec_int(r, "conn") == rec_int(rq, "conn") &&
		    rec_int(r, "opaque") == rec_int(rq, "opaque") && rec_int(r, "request_code") == rec_int(rq, "code"))
			return r;
	}
	return NULL;
}

static struct client *conn_of(struct session *s, int conn)
{
	cr_assert(conn > 0 && conn < MAX_CONNS);
	if (!s->c[conn]) {
		s->c[conn] = harness_connect(&srv);
		cr_assert_not_null(s->c[conn], "cannot connect");
	}
	return s->c[conn];
}

/* Our answer with this opaque on conn, waiting for it. */
static struct client_reply *wait_answer(struct session *s, int conn, int32_t opaque)
{
	for (int i = 0; i < s->n_ans; i++)
		if (s->ans[i].conn == conn && s->ans[i].opaque == opaque && s->ans[i].r)
			return s->ans[i].r;
	for (;;) {
		struct client_reply *r = NULL;
		int rc = client_recv(conn_of(s, conn), &r, T);
		cr_assert_eq(rc, 0, "%s: no answer on connection %d for opaque %d (%s)", s->dir, conn, opaque,
			     rmqns_strerror(rc));
		cr_assert_lt(s->n_ans, 4096);
		s->ans[s->n_ans].conn = conn;
		s->ans[s->n_ans].opaque = r->cmd.opaque;
		s->ans[s->n_ans++].r = r;
		if (r->cmd.opaque == opaque)
			return r;
	}
}

/* 4.9 BrokerData has no enableActingMaster: insert it after "cluster". */
static char *with_acting(const uint8_t *p, size_t len)
{
	struct buf b = BUF_INIT;
	const char *s = (const char *)p, *end = s + len;
	while (s < end) {
		const char *k = memmem(s, (size_t)(end - s), "\"cluster\":\"", 11);
		if (!k) {
			buf_append(&b, s, (size_t)(end - s));
			break;
		}
		const char *q = memchr(k + 11, '"', (size_t)(end - k - 11));
		cr_assert(q);
		buf_append(&b, s, (size_t)(q + 1 - s));
		buf_append_str(&b, ",\"enableActingMaster\":false");
		s = q + 1;
	}
	buf_terminate(&b);
	return (char *)b.data;
}

static json_t *parse_body(const struct remoting_cmd *c)
{
	int err = 0;
	if (!c->body || c->body_len == 0)
		return NULL;
	return json_body_parse(c->body, c->body_len, &err);
}

/* Sorts "topicList" arrays so that lists compare as sets. */
static void normalize(json_t *j)
{
	json_t *l = json_object_get(j, "topicList");
	if (!json_is_array(l))
		return;
	size_t n = json_array_size(l);
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0; k--) {
			const char *a = json_string_value(json_array_get(l, k - 1));
			const char *b = json_string_value(json_array_get(l, k));
			if (!a || !b || strcmp(a, b) <= 0)
				break;
			json_t *x = json_incref(json_array_get(l, k - 1));
			json_array_set(l, k - 1, json_array_get(l, k));
			json_array_set_new(l, k, x);
		}
}

static void compare_body(struct session *s, int32_t req_code, const struct remoting_cmd *want,
			 const struct remoting_cmd *got, const char *file)
{
	if (req_code == 319)
		return; /* options and paths of this host */
	if ((req_code == 105 && want->code == 0) || req_code == 106) {
		if (s->compressed_fixed && req_code == 106)
			return; /* lists the broker 5.1.4 refused; checked in its own test */
		char *w = s->java49 ? with_acting(want->body, want->body_len) : strndup((const char *)want->body, want->body_len);
		char *g = strndup(got->body ? (const char *)got->body : "", got->body_len);
		cr_expect_str_eq(g, w, "%s %s: body bytes", s->dir, file);
		free(w);
		free(g);
		s->checked_bytes++;
		return;
	}
	json_t *jw = parse_body(want), *jg = parse_body(got);
	if (req_code == 322 && json_is_object(jw) && !json_object_get(jw, "stateVersion"))
		json_object_set_new(jw, "stateVersion", json_integer(0)); /* 4.9 DataVersion */
	if (!jw) {
		cr_expect(got->body_len == 0 || want->body_len != 0, "%s %s: unexpected body %.*s", s->dir, file,
			  (int)got->body_len, got->body ? (const char *)got->body : "");
		json_decref(jg);
		return;
	}
	cr_expect_not_null(jg, "%s %s: no/unparseable body", s->dir, file);
	if (jg) {
		normalize(jw);
		normalize(jg);
		char *a = json_dumps(jw, JSON_SORT_KEYS | JSON_COMPACT), *b = json_dumps(jg, JSON_SORT_KEYS | JSON_COMPACT);
		cr_expect_str_eq(b, a, "%s %s: body data", s->dir, file);
		free(a);
		free(b);
	}
	json_decref(jw);
	json_decref(jg);
}

/* A frame file of the capture (*len bytes, malloc'd), decoded into cmd. */
static uint8_t *load_frame(const struct session *s, const char *file, size_t *len, struct remoting_cmd *cmd)
{
	char rel[1024];
	snprintf(rel, sizeof(rel), "%s/%s/%s", TESTDATA_DIR, s->dir, file);
	uint8_t *bytes = tu_load(rel, len);
	cr_assert_eq(remoting_decode(bytes, *len, cmd), 0, "%s", rel);
	return bytes;
}

static void compare(struct session *s, const json_t *rec, const struct remoting_cmd *req, const struct remoting_cmd *got)
{
	const char *file = json_string_value(json_object_get(rec, "file"));
	size_t len;
	struct remoting_cmd want;
	uint8_t *bytes = load_frame(s, file, &len, &want);

	if (s->compressed_fixed && req->code == 103 && want.code == 1) {
		/* 5.1.4 could not decode the zlib body flagged plain; rmqns can */
		cr_expect_eq(got->code, 0, "%s %s: the compressed registration is accepted (%s)", s->dir, file,
			     got->remark ? got->remark : "");
		cr_expect(got->ext_present, "%s %s: extFields present", s->dir, file);
		s->registered = got->code == 0;
		goto out;
	}
	if (req->code == 104)
		s->registered = false;
	if (s->compressed_fixed && req->code == 322 && s->registered) {
		/* the broker 5.1.4 refused is known here: its version is unchanged */
		const char *ch = remoting_ext_get(got, "changed");
		cr_expect(got->code == 0 && ch && strcmp(ch, "false") == 0, "%s %s: changed=%s", s->dir, file,
			  ch ? ch : "(none)");
		cr_expect_gt(got->body_len, 0, "%s %s: the stored DataVersion", s->dir, file);
		goto out;
	}
	cr_expect_eq(got->code, want.code, "%s %s: code %d, recorded %d (%s)", s->dir, file, got->code, want.code,
		     got->remark ? got->remark : "");
	cr_expect_eq(got->flag, want.flag, "%s %s: flag", s->dir, file);
	cr_expect_eq(got->serialize, req->serialize, "%s %s: answered in the request's serialization", s->dir, file);
	if (want.remark && strstr(want.remark, FAQ_49)) {
		char *w = strndup(want.remark, (size_t)(strstr(want.remark, FAQ_49) - want.remark));
		char expect[1024];
		snprintf(expect, sizeof(expect), "%s%s", w, FAQ_5);
		cr_expect(got->remark && strcmp(got->remark, expect) == 0, "%s %s: remark %s", s->dir, file,
			  got->remark ? got->remark : "(none)");
		free(w);
	} else if (want.remark) {
		cr_expect(got->remark && strcmp(got->remark, want.remark) == 0, "%s %s: remark \"%s\", recorded \"%s\"",
			  s->dir, file, got->remark ? got->remark : "(none)", want.remark);
	} else {
		cr_expect_null(got->remark, "%s %s: unexpected remark %s", s->dir, file, got->remark);
	}
	/* ext fields as a map; their presence where the JSON header shows it */
	cr_expect_eq(got->ext_count, want.ext_count, "%s %s: %u ext fields, recorded %u", s->dir, file, got->ext_count,
		     want.ext_count);
	for (uint32_t i = 0; i < want.ext_count; i++) {
		const char *v = remoting_ext_get(got, want.ext[i].key);
		cr_expect(v && strcmp(v, want.ext[i].value) == 0, "%s %s: ext %s=%s, recorded %s", s->dir, file,
			  want.ext[i].key, v ? v : "(none)", want.ext[i].value);
	}
	if (want.serialize == REMOTING_JSON && got->serialize == REMOTING_JSON)
		cr_expect_eq(got->ext_present, want.ext_present, "%s %s: extFields presence", s->dir, file);
	compare_body(s, req->code, &want, got, file);
	s->checked++;
out:
	remoting_cmd_release(&want);
	free(bytes);
}

static void replay(struct session *s, const char *const *args)
{
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
	load_index(s);
	for (size_t i = 0; i < s->n; i++) {
		const json_t *rec = s->recs[i];
		if (json_is_true(json_object_get(rec, "is_response")))
			continue; /* checked when its request was sent */
		const char *file = json_string_value(json_object_get(rec, "file"));
		int conn = rec_int(rec, "conn");
		size_t len;
		struct remoting_cmd req;
		uint8_t *bytes = load_frame(s, file, &len, &req);
		cr_assert_eq(client_send_raw(conn_of(s, conn), bytes, len, T), 0, "%s/%s: send", s->dir, file);
		const json_t *ans = recorded_answer(s, i);
		if (ans && !remoting_is_oneway(&req)) {
			struct client_reply *r = wait_answer(s, conn, req.opaque);
			compare(s, ans, &req, &r->cmd);
		} else if (remoting_is_oneway(&req)) {
			/* one-way: make sure it was applied before going on,
			 * with a request every server answers on the same
			 * connection (a processor-lane round trip) */
			struct remoting_cmd ping;
			struct client_reply *pr = NULL;
			harness_request_init(&ping, 106, REMOTING_JSON);
			cr_assert_eq(client_call(conn_of(s, conn), &ping, &pr, T), 0);
			client_reply_free(pr);
		}
		remoting_cmd_release(&req);
		free(bytes);
	}
	for (int i = 0; i < s->n_ans; i++)
		client_reply_free(s->ans[i].r);
	for (int i = 0; i < MAX_CONNS; i++)
		if (s->c[i])
			client_close(s->c[i]);
	for (size_t i = 0; i < s->n; i++)
		json_decref(s->recs[i]);
	free(s->recs);
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_expect(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean stop");
}

static struct session *session_new(const char *dir, bool java49)
{
	struct session *s = calloc(1, sizeof(*s));
	cr_assert(s);
	s->dir = dir;
	s->java49 = java49;
	return s;
}

/* Replays the capture in dir; at least min_checked answers are compared
 * (min_bytes of them byte for byte, when given). */
static void replay_capture(const char *dir, bool java49, bool compressed_fixed, int min_checked, int min_bytes)
{
	struct session *s = session_new(dir, java49);
	s->compressed_fixed = compressed_fixed;
	replay(s, NULL);
	cr_expect_geq(s->checked, min_checked, "%d answers checked", s->checked);
	if (min_bytes)
		cr_expect_geq(s->checked_bytes, min_bytes, "%d answers checked byte for byte", s->checked_bytes);
	free(s);
}

Test(replay, java_4_9_8)
{
	replay_capture("java-4.9.8", true, false, 70, 35);
}

Test(replay, java_5_1_4_basic)
{
	replay_capture("java-5.1.4/s1-basic", false, false, 30, 0);
}

Test(replay, java_5_1_4_compressed)
{
	replay_capture("java-5.1.4/s3-compressed", false, true, 10, 0);
}

Test(replay, java_5_1_4_acting_master)
{
	replay_capture("java-5.1.4/s2-acting-master", false, false, 100, 0);
}
