/* The request path in one process: a real server on loopback whose frames
 * go to the pool's intake, as main.c wires it. Broker liveness (904, 322)
 * and GET_BROKER_MEMBER_GROUP (901) are answered while the default lane is
 * full and its only worker is held, both inline (routeQueryInline) and on
 * the route lane. A plain program (exit 0 = pass), so that it runs under
 * ThreadSanitizer too. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rmqns/app.h"
#include "rmqns/client.h"
#include "rmqns/handlers.h"
#include "rmqns/net.h"
#include "rmqns/processor.h"
#include "rmqns/request.h"
#include "rmqns/route.h"
#include "plain_test.h"

static atomic_int held_started, held_release;

/* Stands in for a registration being parsed: holds its worker until
 * released (at most 10 s). */
static void handle_held(struct app *app, struct request *req)
{
	(void)app;
	atomic_fetch_add(&held_started, 1);
	for (int i = 0; i < 10000 && !atomic_load(&held_release); i++)
		sleep_ms(1);
	request_reply_code(req, RSP_SUCCESS, NULL);
	request_free(req);
}

static const struct handler held = { REQ_REGISTER_BROKER, handle_held, LANE_DEFAULT, false };

static const struct handler *lookup(int32_t code)
{
	return code == REQ_REGISTER_BROKER ? &held : processor_handler_for(code);
}

static int on_frame(void *pool, const struct net_frame *f)
{
	return processor_pool_take_frame(pool, f);
}
static void on_turn_end(void *pool) { processor_pool_turn_end(pool); }

static int send_cmd(struct client *c, int32_t code, int32_t opaque, const char *body)
{
	struct remoting_ext_field ext[] = {
		{ "clusterName", "c1" }, { "brokerName", "b1" }, { "brokerAddr", "127.0.0.1:10911" },
		{ "brokerId", "0" },
	};
	struct remoting_cmd cmd;
	remoting_request_init(&cmd, code, opaque, 0, REMOTING_JSON);
	cmd.ext = ext;
	cmd.ext_count = 4;
	cmd.body = (const uint8_t *)body;
	cmd.body_len = body ? (uint32_t)strlen(body) : 0;
	return client_send(c, &cmd, 2000);
}

/* The next answer: its opaque and code, or -1. */
static int recv_answer(struct client *c, int32_t *opaque, int32_t *code)
{
	struct client_reply *r;
	if (client_recv(c, &r, 10000) != 0)
		return -1;
	*opaque = r->cmd.opaque;
	*code = r->cmd.code;
	client_reply_free(r);
	return 0;
}

static int liveness_past_a_full_default_lane(bool run_inline)
{
	int ok = -1;
	struct app app = { 0 };
	struct processor_pool *pool = NULL;
	struct server *srv = NULL;
	struct client *c = NULL;
	int err;

	atomic_store(&held_started, 0);
	atomic_store(&held_release, 0);
	app.route = route_db_create(0);
	CHECK(app.route != NULL);
	/* one general worker, one route worker, lanes of one request each */
	struct processor_params pp = { .workers = 1, .route_workers = 1, .lane_capacity = 1,
				       .run_inline = run_inline, .lookup = lookup };
	pool = processor_pool_create(&app, &pp, &err);
	CHECK(pool != NULL);
	CHECK(processor_pool_start(pool) == 0);
	app.pool = pool;
	struct server_params sp = { .bind_address = "127.0.0.1", .backlog = 16, .reactors = 1,
				    .max_frame = REMOTING_DEFAULT_MAX_FRAME };
	struct net_callbacks cb = { .on_frame = on_frame, .on_turn_end = on_turn_end,
				    .arg = pool };
	srv = server_create(&sp, &cb, &err);
	CHECK(srv != NULL);
	CHECK(server_start(srv) == 0);
	c = client_connect("127.0.0.1", server_port(srv), 2000, &err);
	CHECK(c != NULL);

	/* A registration holds the only general worker, a second one fills
	 * the default lane... */
	CHECK(send_cmd(c, REQ_REGISTER_BROKER, 1, NULL) == 0);
	for (int i = 0; i < 10000 && atomic_load(&held_started) < 1; i++)
		sleep_ms(1);
	CHECK(atomic_load(&held_started) == 1);
	CHECK(send_cmd(c, REQ_REGISTER_BROKER, 2, NULL) == 0);
	/* ...and liveness traffic is answered meanwhile, not refused busy
	 * (one at a time: the route lane holds one request here too). */
	static const int32_t codes[] = { REQ_BROKER_HEARTBEAT, REQ_QUERY_DATA_VERSION,
					 REQ_GET_BROKER_MEMBER_GROUP };
	for (int32_t i = 0; i < 3; i++) {
		int32_t opaque, code;
		CHECK(send_cmd(c, codes[i], 3 + i,
			       codes[i] == REQ_QUERY_DATA_VERSION ? "{\"counter\":1,\"timestamp\":1}"
								  : NULL) == 0);
		CHECK(recv_answer(c, &opaque, &code) == 0);
		if (opaque != 3 + i || code != RSP_SUCCESS)
			fprintf(stderr, "code %d: answer to %d with code %d\n", codes[i], opaque, code);
		CHECK(opaque == 3 + i);
		CHECK(code == RSP_SUCCESS);
	}
	CHECK(atomic_load(&held_release) == 0 && atomic_load(&held_started) == 1);
	atomic_store(&held_release, 1);
	for (int32_t want = 1; want <= 2; want++) {
		int32_t opaque, code;
		CHECK(recv_answer(c, &opaque, &code) == 0);
		CHECK(opaque == want && code == RSP_SUCCESS);
	}
	ok = 0;
out:
	atomic_store(&held_release, 1);
	client_close(c);
	if (srv)
		server_quiesce(srv);
	if (pool)
		processor_pool_stop(pool);
	if (srv)
		server_stop(srv, 1000);
	server_destroy(srv);
	processor_pool_destroy(pool);
	if (app.route)
		route_db_destroy(app.route);
	return ok;
}

int main(void)
{
	int failed = 0;
	failed += liveness_past_a_full_default_lane(true) != 0;
	failed += liveness_past_a_full_default_lane(false) != 0;
	fprintf(stderr, "%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
