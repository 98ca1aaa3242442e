/* Sending, from any thread: encoded frames for a connection (into its own
 * outbound buffer on its reactor, else through the reactor's inbox) and
 * frames for a peer address (the reactor that owns the address connects). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/net.h"

#include "net_internal.h"

int net_send_begin(struct net_send *s, struct net_conn nc, size_t size)
{
	*s = (struct net_send){ 0 };
	struct reactor *r = server_reactor_of(nc.server, nc.id);
	if (!r)
		return RMQNS_ECLOSED;
	s->r = r;
	if (reactor_self == r) {
		/* On the owning reactor: the frame joins the bytes already
		 * waiting in the connection's last buffer (no allocation per
		 * answer, one write per turn), or starts a new one. */
		struct conn *c = conn_find(r, nc.id);
		if (!c || c->closing)
			return RMQNS_OK; /* gone: dropped */
		s->c = c;
		struct net_msg *t = c->out_tail;
		if (t && t->data.len + size <= NET_COALESCE_MAX) {
			/* the flush takes the buffer's address afresh: it may move */
			if (buf_reserve(&t->data, size) < 0)
				return RMQNS_ENOMEM;
			s->out = &t->data;
			s->start = t->data.len;
			return RMQNS_OK;
		}
	}
	struct net_msg *m = net_msg_new(nc.id, NET_MSG_DATA);
	if (!m)
		return RMQNS_ENOMEM;
	if ((s->c && buf_reserve(&m->data, NET_COALESCE_CHUNK) < 0) ||
	    buf_reserve(&m->data, size) < 0) {
		net_msg_free(m);
		return RMQNS_ENOMEM;
	}
	s->m = m;
	s->out = &m->data;
	return RMQNS_OK;
}

int net_send_commit(struct net_send *s)
{
	if (!s->out)
		return RMQNS_OK;
	if (s->m && s->m->data.len == 0) {
		net_msg_free(s->m);
	} else if (!s->c) {
		inbox_post(s->r, s->m);
	} else if (s->m) {
		conn_queue_msg(s->r, s->c, s->m);
	} else {
		conn_account_out(s->r, s->c, s->out->len - s->start);
	}
	s->out = NULL;
	return RMQNS_OK;
}

void net_send_abort(struct net_send *s)
{
	if (!s->out)
		return;
	if (s->m)
		net_msg_free(s->m);
	else
		s->out->len = s->start;
	s->out = NULL;
}

/* "a.b.c.d:port", "[v6]:port" (or a bare v6 address before the last ':').
 * d->name gets the address written one way only (inet_ntop, the port in
 * decimal, an IPv4-mapped address as IPv4, as accepted peers are named):
 * it is the key outbound connections are reused by, so "127.0.0.1:05000"
 * and "127.0.0.1:5000" share one. */
static int send_parse_dest(const char *addr, struct net_dest *d)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	char host[INET6_ADDRSTRLEN + 2], ip[INET6_ADDRSTRLEN];
	char *end;

	if (!colon || colon == addr || strlen(addr) >= sizeof d->name)
		return RMQNS_EINVAL;
	long port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535)
		return RMQNS_EINVAL;
	size_t hl = (size_t)(colon - addr);
	if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl >= sizeof host)
		return RMQNS_EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	memset(d, 0, sizeof *d);
	struct sockaddr_in *v4 = (struct sockaddr_in *)&d->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&d->addr;
	struct in6_addr a6;
	bool is6 = inet_pton(AF_INET6, host, &a6) == 1;
	if (is6 && !IN6_IS_ADDR_V4MAPPED(&a6)) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		v6->sin6_addr = a6;
		d->addrlen = sizeof *v6;
		inet_ntop(AF_INET6, &a6, ip, sizeof ip);
		snprintf(d->name, sizeof d->name, "[%s]:%ld", ip, port);
		return RMQNS_OK;
	}
	if (is6)
		memcpy(&v4->sin_addr, &a6.s6_addr[12], 4);
	else if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
		return RMQNS_EINVAL;
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	d->addrlen = sizeof *v4;
	inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
	snprintf(d->name, sizeof d->name, "%s:%ld", ip, port);
	return RMQNS_OK;
}

/* FNV-1a: the reactor owning a peer address, the same one every time. */
static unsigned send_dest_reactor(const struct server *s, const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % s->nreactors;
}

int net_send_to(struct server *s, const char *addr, const void *frame, size_t len)
{
	if (!s || atomic_load_explicit(&s->reactors_gone, memory_order_acquire))
		return RMQNS_ECLOSED;
	struct net_msg *m = net_msg_new(0, NET_MSG_SEND_TO);
	struct net_dest *d = malloc(sizeof *d);
	if (!m || !d || buf_append(&m->data, frame, len) < 0) {
		free(d);
		if (m)
			net_msg_free(m);
		return RMQNS_ENOMEM;
	}
	int rc = send_parse_dest(addr, d);
	if (rc < 0) {
		free(d);
		net_msg_free(m);
		return rc;
	}
	m->to = d;
	inbox_post(&s->reactors[send_dest_reactor(s, d->name)], m);
	return RMQNS_OK;
}
