/* The server's lifecycle: creation, the start of the reactors and the
 * boss, the two-step orderly stop, and what the health and metrics
 * endpoints read. Accepting is boss.c's, the connections are the
 * reactors'. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/net.h"

#include "net_internal.h"

struct server *server_create(const struct server_params *p, const struct net_callbacks *cb,
			     int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (p->reactors < 1 || p->reactors > NET_MAX_REACTORS || p->max_frame < 8 || !cb ||
	    !cb->on_frame) {
		*err = RMQNS_EINVAL;
		return NULL;
	}
	struct server *s = calloc(1, sizeof *s);
	if (!s) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	s->params = *p;
	s->cb = *cb;
	struct listener *ls = &s->listeners[0];
	/* without its own port, listener 0 is the first one added */
	s->nlisteners = p->no_own_port ? 0 : 1;
	ls->srv = s;
	ls->fd = -1;
	ls->cb = &s->cb;
	ls->what = "bindAddress";
	snprintf(ls->bind, sizeof ls->bind, "%s",
		 p->bind_address && *p->bind_address ? p->bind_address : "0.0.0.0");
	s->params.bind_address = ls->bind;
	atomic_init(&s->notify_closes, true);
	atomic_init(&s->reactors_gone, false);
	pthread_mutex_init(&s->ack_lock, NULL);
	pthread_cond_init(&s->ack_cond, NULL);
	s->params.tls = NULL; /* the caller's; copied by the transport */
	int trc = net_transport_init(s, p->tls);
	if (trc < 0) {
		server_destroy(s);
		*err = trc;
		return NULL;
	}
	s->reactors = calloc(p->reactors, sizeof *s->reactors);
	if (!s->reactors) {
		server_destroy(s);
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < p->reactors; i++) {
		int rc = reactor_init(&s->reactors[i], s, i);
		if (rc < 0) {
			server_destroy(s);
			*err = rc;
			return NULL;
		}
		s->nreactors++;
	}
	*err = RMQNS_OK;
	return s;
}

int server_start(struct server *s)
{
	int rc = boss_start(s);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < s->nreactors; i++) {
		rc = reactor_start(&s->reactors[i]);
		if (rc < 0)
			return rc;
	}
	rc = boss_run(s);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < s->nlisteners; i++)
		log_info("RemotingServer started, listening %s:%d%s%s", s->listeners[i].bind,
			 s->listeners[i].port, s->listeners[i].cb != &s->cb ? " for " : "",
			 s->listeners[i].cb != &s->cb ? s->listeners[i].what : "");
	return RMQNS_OK;
}

int server_add_listener(struct server *s, const char *bind_address, int port, const char *what,
			const struct net_callbacks *cb)
{
	if (s->nlisteners >= NET_MAX_LISTENERS || !cb || !cb->on_frame || !what)
		return RMQNS_EINVAL;
	struct listener *ls = &s->listeners[s->nlisteners];
	*ls = (struct listener){ .srv = s, .fd = -1, .port = port, .what = what };
	ls->own_cb = *cb;
	ls->cb = &ls->own_cb;
	snprintf(ls->bind, sizeof ls->bind, "%s",
		 bind_address && *bind_address ? bind_address : "0.0.0.0");
	s->nlisteners++;
	return RMQNS_OK;
}

int server_port(const struct server *s)
{
	return s->listeners[0].port;
}

int server_close_conn(struct server *s, uint64_t conn_id)
{
	struct reactor *r = server_reactor_of(s, conn_id);
	if (!r)
		return RMQNS_ECLOSED;
	return inbox_post_close(r, conn_id);
}

void server_quiesce(struct server *s)
{
	boss_stop(s);
	reactors_set_phase(s, REACTOR_QUIESCE);
	pthread_mutex_lock(&s->ack_lock);
	unsigned running = 0;
	for (unsigned i = 0; i < s->nreactors; i++)
		running += loop_spawned(s->reactors[i].loop);
	while (s->acks < running)
		pthread_cond_wait(&s->ack_cond, &s->ack_lock);
	pthread_mutex_unlock(&s->ack_lock);
}

void server_stop(struct server *s, int flush_ms)
{
	boss_stop(s);
	atomic_store(&s->notify_closes, false);
	for (unsigned i = 0; i < s->nreactors; i++)
		s->reactors[i].exit_deadline_ms = (uint64_t)(flush_ms > 0 ? flush_ms : 0);
	reactors_set_phase(s, REACTOR_EXIT);
	for (unsigned i = 0; i < s->nreactors; i++)
		loop_join(s->reactors[i].loop);
	atomic_store_explicit(&s->reactors_gone, true, memory_order_release);
}

unsigned server_conn_count(struct server *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->nreactors; i++)
		n += atomic_load_explicit(&s->reactors[i].conn_count, memory_order_relaxed);
	return n;
}

int64_t server_held_bytes(struct server *s)
{
	return atomic_load_explicit(&s->held_bytes, memory_order_relaxed);
}

uint64_t server_memory_budget(const struct server *s)
{
	return s->params.memory_budget;
}

unsigned server_reactor_count(const struct server *s)
{
	return s->nreactors;
}

unsigned server_reactor_conn_count(struct server *s, unsigned i)
{
	return i < s->nreactors
		? atomic_load_explicit(&s->reactors[i].conn_count, memory_order_relaxed) : 0;
}

uint64_t server_reactor_turn_ms(struct server *s, unsigned i)
{
	return i < s->nreactors ? atomic_load_explicit(&s->reactors[i].turn_ms, memory_order_relaxed)
				: 0;
}

void server_destroy(struct server *s)
{
	if (!s)
		return;
	if (loop_spawned(s->boss_loop) || (s->reactors && s->nreactors && loop_spawned(s->reactors[0].loop)))
		server_stop(s, 0);
	for (unsigned i = 0; i < s->nreactors; i++)
		reactor_cleanup(&s->reactors[i]);
	free(s->reactors);
	net_transport_destroy(s); /* after the connections holding its SSLs */
	boss_destroy(s);
	pthread_cond_destroy(&s->ack_cond);
	pthread_mutex_destroy(&s->ack_lock);
	free(s);
}
