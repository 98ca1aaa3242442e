/* The harness (harness.h) for Criterion tests: calls that fail the test
 * instead of returning an error, and a suite's server with the temporary
 * directory its tests keep their files in (-c files, KV files), apart from
 * the server's own:
 *
 *   SERVER_FIXTURE_SUITE(x, "rmqns-x", .timeout = 120);
 *   ... harness_start(&fx.srv, args) ... fixture_write(&fx, "n.conf", text) ...
 */
#ifndef RMQNS_HARNESS_CRITERION_H
#define RMQNS_HARNESS_CRITERION_H

#include <criterion/criterion.h>

#include "harness.h"
#include "rmqns/handlers.h"
#include "test_util.h"

/* Declares the suite's fixture fx, its .init and .fini, and the suite
 * (further TestSuite options after the directory's prefix). */
#define SERVER_FIXTURE_SUITE(suite, prefix, ...)                                             \
	static struct server_fixture fx;                                                     \
	static void suite##_init(void)                                                       \
	{                                                                                    \
		fixture_init(&fx, prefix);                                                   \
	}                                                                                    \
	static void suite##_fini(void)                                                       \
	{                                                                                    \
		fixture_fini(&fx);                                                           \
	}                                                                                    \
	TestSuite(suite, .init = suite##_init, .fini = suite##_fini, __VA_ARGS__)

/* Declares the suite's server srv, a .fini that expects its clean stop,
 * and the suite (further TestSuite options after the name). */
#define SERVER_SUITE(suite, ...)                                                             \
	static struct harness_server srv;                                                    \
	static void suite##_fini(void)                                                       \
	{                                                                                    \
		cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");   \
	}                                                                                    \
	TestSuite(suite, .fini = suite##_fini, __VA_ARGS__)

struct server_fixture {
	struct harness_server srv;
	char dir[64];
};

static inline void fixture_init(struct server_fixture *fx, const char *prefix)
{
	cr_assert_eq(harness_mkdtemp(fx->dir, sizeof(fx->dir), prefix), 0);
}

/* Stops the server if a test left it running, and removes the directory. */
static inline void fixture_fini(struct server_fixture *fx)
{
	harness_cleanup(&fx->srv);
	harness_rmdir(fx->dir);
}

/* "dir/name", malloc'd. */
static inline char *fixture_path(const struct server_fixture *fx, const char *name)
{
	return tu_path_in(fx->dir, name);
}

/* Writes text as the file name in the directory; its path, malloc'd. */
static inline char *fixture_write(const struct server_fixture *fx, const char *name, const char *text)
{
	char *p = fixture_path(fx, name);
	tu_write_file(p, text);
	return p;
}

/* A client connected to the server. */
static inline struct client *harness_connect_or_fail(const struct harness_server *s)
{
	struct client *c = harness_connect(s);
	cr_assert_not_null(c, "cannot connect to the server");
	return c;
}

/* A route query for topic (JSON): the answer's code. */
static inline int harness_route_code(struct client *c, const char *topic)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	cr_assert_eq(harness_request(&req, ext, 105, REMOTING_JSON, NULL, "topic", topic, NULL), 0);
	cr_assert_eq(client_call(c, &req, &r, HARNESS_IO_TIMEOUT_MS), 0, "route query for %s failed", topic);
	int code = r->cmd.code;
	client_reply_free(r);
	return code;
}

/* harness_call that must be answered with code 0. */
#define harness_call_ok(conn_, code_, body_, ...)                                               \
	do {                                                                                    \
		struct client_reply *r_ = NULL;                                                 \
		cr_assert_eq(harness_call((conn_), (code_), (body_), &r_, __VA_ARGS__), 0,      \
			     "code %d unanswered", (int)(code_));                               \
		cr_assert_eq(r_->cmd.code, 0, "code %d answered %d: %s", (int)(code_),          \
			     r_->cmd.code, r_->cmd.remark ? r_->cmd.remark : "");               \
		client_reply_free(r_);                                                          \
	} while (0)

/* A GET_KV_CONFIG answer: value v, or not found when v is NULL. Frees r. */
static inline void harness_expect_kv_value(struct client_reply *r, const char *ns, const char *k, const char *v)
{
	if (v) {
		cr_assert_eq(r->cmd.code, 0, "%s/%s: code %d", ns, k, r->cmd.code);
		cr_assert_str_eq(remoting_ext_get(&r->cmd, "value"), v);
	} else {
		cr_assert_eq(r->cmd.code, RSP_QUERY_NOT_FOUND, "%s/%s present", ns, k);
	}
	client_reply_free(r);
}

/* The bytes of a frame of the Java 4.9.8 capture under $RMQNS_TESTDATA. */
static inline uint8_t *harness_java498_frame(const char *file, size_t *len)
{
	char *path = NULL;
	cr_assert(asprintf(&path, "%s/java-4.9.8/frames/%s", getenv("RMQNS_TESTDATA"), file) > 0);
	uint8_t *frame = tu_load(path, len);
	free(path);
	return frame;
}

/* Sends a request of the Java 4.9.8 capture on c and returns our answer. */
static inline struct client_reply *harness_replay_java498(struct client *c, const char *file)
{
	size_t n;
	uint8_t *frame = harness_java498_frame(file, &n);
	struct client_reply *r = NULL;
	struct remoting_cmd cmd;

	cr_assert_eq(remoting_decode(frame, n, &cmd), 0);
	cmd.opaque = client_next_opaque(c);
	cr_assert_eq(client_call(c, &cmd, &r, HARNESS_IO_TIMEOUT_MS), 0);
	remoting_cmd_release(&cmd);
	free(frame);
	return r;
}

/* A frame's JSON header text with its opaque written as 0, malloc'd. */
static inline char *harness_header_opaque_zero(const uint8_t *frame)
{
	char *h = strndup((const char *)frame + 8, rd_be32(frame + 4) & 0xFFFFFF);
	cr_assert_not_null(h);
	char *v = strstr(h, "\"opaque\":");
	cr_assert_not_null(v, "no opaque in %s", h);
	v += 9;
	size_t digits = strspn(v, "-0123456789");
	memmove(v + 1, v + digits, strlen(v + digits) + 1);
	v[0] = '0';
	return h;
}

/* Replays request file of the 4.9.8 capture on c; our answer's header is
 * Java's (answer file) to the byte, but for the opaque and the version each
 * server stamps (Java 409, rmqns 479). Returns our answer. */
static inline struct client_reply *harness_replay_java498_like(struct client *c, const char *file,
								const char *answer_file)
{
	size_t n;
	struct client_reply *r = harness_replay_java498(c, file);
	uint8_t *java = harness_java498_frame(answer_file, &n);
	char *want = harness_header_opaque_zero(java), *got = harness_header_opaque_zero(r->frame);
	char *v = strstr(want, "\"version\":409");
	cr_assert_not_null(v, "Java's answer %s: %s", answer_file, want);
	memcpy(v, "\"version\":479", 13);
	cr_assert_str_eq(got, want);
	free(got);
	free(want);
	free(java);
	return r;
}

#endif
