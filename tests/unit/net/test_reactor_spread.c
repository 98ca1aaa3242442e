/* Connections spread over the reactors when one of them is busy: the boss
 * picks the reactor with the fewest connections, counting those it has
 * handed over and the reactor has not taken yet. Counted only once taken,
 * a burst of connects went to the busy reactor, which had not taken any
 * of them. A plain program (exit 0 = pass), so that it runs under
 * ThreadSanitizer too. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rmqns/client.h"
#include "rmqns/net.h"
#include "rmqns/remoting.h"
#include "plain_test.h"

#define BURST 8

static atomic_int held, release_held;

/* Any frame holds its reactor until released (at most 10 s), as a long
 * turn would. */
static int on_frame(void *arg, const struct net_frame *f)
{
	(void)arg;
	(void)f;
	atomic_fetch_add(&held, 1);
	for (int i = 0; i < 10000 && !atomic_load(&release_held); i++)
		sleep_ms(1);
	return 0;
}

static bool wait_conns(struct server *s, unsigned want)
{
	for (int i = 0; i < 5000; i++) {
		if (server_conn_count(s) == want)
			return true;
		sleep_ms(1);
	}
	return false;
}

int main(void)
{
	int ok = 1, err;
	struct client *c[2 + BURST] = { NULL };
	struct server_params sp = { .bind_address = "127.0.0.1", .backlog = 64, .reactors = 2,
				    .max_frame = REMOTING_DEFAULT_MAX_FRAME };
	struct net_callbacks cb = { .on_frame = on_frame };
	struct server *srv = server_create(&sp, &cb, &err);
	CHECK(srv != NULL);
	CHECK(server_start(srv) == 0);

	/* one connection each, then the second one's reactor is held */
	for (int i = 0; i < 2; i++) {
		c[i] = client_connect("127.0.0.1", server_port(srv), 2000, &err);
		CHECK(c[i] != NULL);
		CHECK(wait_conns(srv, (unsigned)i + 1));
	}
	CHECK(server_reactor_conn_count(srv, 0) == 1 && server_reactor_conn_count(srv, 1) == 1);
	static const uint8_t frame[] = { 0, 0, 0, 6, 0, 0, 0, 2, '{', '}' };
	CHECK(client_send_raw(c[1], frame, sizeof frame, 2000) == 0);
	for (int i = 0; i < 5000 && atomic_load(&held) < 1; i++)
		sleep_ms(1);
	CHECK(atomic_load(&held) == 1);

	for (int i = 2; i < 2 + BURST; i++) {
		c[i] = client_connect("127.0.0.1", server_port(srv), 2000, &err);
		CHECK(c[i] != NULL);
	}
	sleep_ms(200); /* every connect accepted and handed over */
	atomic_store(&release_held, 1);
	CHECK(wait_conns(srv, 2 + BURST));
	unsigned n0 = server_reactor_conn_count(srv, 0), n1 = server_reactor_conn_count(srv, 1);
	printf("connections: reactor 0 %u, reactor 1 %u\n", n0, n1);
	CHECK(n0 + n1 == 2 + BURST);
	CHECK(n0 >= n1 ? n0 - n1 <= 1 : n1 - n0 <= 1);
	ok = 0;
out:
	atomic_store(&release_held, 1);
	for (int i = 0; i < 2 + BURST; i++)
		if (c[i])
			client_close(c[i]);
	if (srv) {
		server_quiesce(srv);
		server_stop(srv, 1000);
		server_destroy(srv);
	}
	return ok;
}
