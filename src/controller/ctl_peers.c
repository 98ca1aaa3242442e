/* controllerDLegerPeers: the group's members, their controller addresses
 * and the Raft port each derives from its address (port + offset). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"

void ctl_peers_free(struct ctl_peer *peers, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(peers[i].id);
		free(peers[i].address);
		free(peers[i].host);
	}
	free(peers);
}

/* "host:port" with a port of 1-65535; IPv6 hosts in brackets. */
static int split_address(const char *addr, char **host, int *port)
{
	const char *colon = strrchr(addr, ':');
	char *end;

	if (!colon || colon == addr || !colon[1])
		return RMQNS_EINVAL;
	long v = strtol(colon + 1, &end, 10);
	if (*end || v < 1 || v > 65535 || colon[1] == '+' || colon[1] == '-')
		return RMQNS_EINVAL;
	const char *h = addr;
	size_t hl = (size_t)(colon - addr);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (!hl)
		return RMQNS_EINVAL;
	*host = strndup(h, hl);
	if (!*host)
		return RMQNS_ENOMEM;
	*port = (int)v;
	return 0;
}

int ctl_peers_parse(const char *text, struct ctl_peer **out, unsigned *n, char *err, size_t errlen)
{
	struct ctl_peer *peers = NULL;
	unsigned count = 0, cap = 0;
	const char *p = text ? text : "";
	int rc = 0;

	while (*p && !rc) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);
		char *entry = strndup(p, len);
		p += len + (semi ? 1 : 0);
		if (!entry) {
			rc = RMQNS_ENOMEM;
			break;
		}
		/* blanks around an entry are not part of it */
		char *e = entry;
		while (*e == ' ' || *e == '\t')
			e++;
		char *t = e + strlen(e);
		while (t > e && (t[-1] == ' ' || t[-1] == '\t'))
			*--t = '\0';
		char *dash = strchr(e, '-');
		if (!*e) {
			free(entry);
			continue;
		}
		if (!dash || dash == e) {
			snprintf(err, errlen, "controllerDLegerPeers: entry '%s' is not id-host:port", e);
			free(entry);
			rc = RMQNS_EINVAL;
			break;
		}
		if (count == cap) {
			cap = cap ? cap * 2 : 4;
			struct ctl_peer *g = realloc(peers, cap * sizeof *g);
			if (!g) {
				free(entry);
				rc = RMQNS_ENOMEM;
				break;
			}
			peers = g;
		}
		struct ctl_peer *peer = &peers[count];
		memset(peer, 0, sizeof *peer);
		peer->id = strndup(e, (size_t)(dash - e));
		peer->address = strdup(dash + 1);
		count++;
		if (!peer->id || !peer->address) {
			rc = RMQNS_ENOMEM;
		} else if ((rc = split_address(peer->address, &peer->host, &peer->port)) == RMQNS_EINVAL) {
			snprintf(err, errlen, "controllerDLegerPeers: '%s' of %s is not host:port",
				 peer->address, peer->id);
		}
		for (unsigned i = 0; !rc && i + 1 < count; i++) {
			if (strcmp(peers[i].id, peer->id) == 0) {
				snprintf(err, errlen, "controllerDLegerPeers: id %s appears twice", peer->id);
				rc = RMQNS_EINVAL;
			}
		}
		free(entry);
	}
	if (!rc && count == 0) {
		snprintf(err, errlen, "controllerDLegerPeers is empty");
		rc = RMQNS_EINVAL;
	}
	if (rc) {
		if (rc == RMQNS_ENOMEM)
			snprintf(err, errlen, "out of memory reading controllerDLegerPeers");
		ctl_peers_free(peers, count);
		return rc;
	}
	*out = peers;
	*n = count;
	return 0;
}

int ctl_peer_raft_endpoint(const struct ctl_peer *p, int offset, const char **host, int *port)
{
	*host = p->host;
	*port = p->port + offset;
	return *port < 1 || *port > 65535 ? RMQNS_EINVAL : 0;
}

int ctl_peer_raft_address(const struct ctl_peer *p, int offset, char *out, size_t outlen)
{
	const char *host;
	int port;

	if (ctl_peer_raft_endpoint(p, offset, &host, &port))
		return RMQNS_EINVAL;
	int w = snprintf(out, outlen, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
	return w < 0 || (size_t)w >= outlen ? RMQNS_ETOOBIG : 0;
}

char *ctl_peers_describe(const struct ctl_peer *peers, unsigned n)
{
	struct buf b = BUF_INIT;

	for (unsigned i = 0; i < n; i++) {
		if (buf_printf(&b, "%s:%s;", peers[i].id, peers[i].address)) {
			buf_free(&b);
			return NULL;
		}
	}
	if (buf_terminate(&b)) {
		buf_free(&b);
		return NULL;
	}
	return b.data ? (char *)b.data : strdup("");
}

int ctl_peers_self_port(const char *text, const char *self_id, char *err, size_t errlen)
{
	struct ctl_peer *peers;
	unsigned n;
	char why[300];
	int port = RMQNS_ENOTFOUND;

	if (ctl_peers_parse(text, &peers, &n, why, sizeof why) < 0) {
		snprintf(err, errlen, "controllerDLegerPeers: %s", why);
		return RMQNS_EINVAL;
	}
	for (unsigned i = 0; i < n && port < 0; i++)
		if (self_id && strcmp(peers[i].id, self_id) == 0)
			port = peers[i].port;
	ctl_peers_free(peers, n);
	if (port < 0)
		snprintf(err, errlen, "controllerDLegerSelfId '%s' is not one of the ids in "
			 "controllerDLegerPeers", self_id ? self_id : "");
	return port;
}
