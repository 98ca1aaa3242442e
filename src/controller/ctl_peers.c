/* The group's members from either configuration: controllerDLegerPeers
 * (id-host:port;..., the Raft port derived as port + offset) or jRaft's
 * jRaftInitConf / jRaftControllerRPCAddr pair (both addresses given). Each
 * member carries both addresses, so nothing past here asks which type was
 * configured. */
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
		free(peers[i].raft_host);
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

/* The entries of a list, blanks around each dropped and empty ones
 * skipped; fn sees each in turn until it fails. */
static int each_entry(const char *text, char sep, int (*fn)(void *arg, char *entry), void *arg)
{
	const char *p = text ? text : "";
	int rc = 0;

	while (*p && !rc) {
		const char *end = strchr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *entry = strndup(p, len);
		p += len + (end ? 1 : 0);
		if (!entry)
			return RMQNS_ENOMEM;
		char *e = entry;
		while (*e == ' ' || *e == '\t')
			e++;
		char *t = e + strlen(e);
		while (t > e && (t[-1] == ' ' || t[-1] == '\t'))
			*--t = '\0';
		if (*e)
			rc = fn(arg, e);
		free(entry);
	}
	return rc;
}

struct peer_list {
	struct ctl_peer *peers; /* mem's bytes */
	struct buf mem;
	unsigned n;
	const char *key;    /* the option named in reasons */
	int raft_port_offset;
	char *err;
	size_t errlen;
};

static struct ctl_peer *list_add(struct peer_list *l)
{
	static const struct ctl_peer empty;

	if (buf_append(&l->mem, &empty, sizeof empty) < 0)
		return NULL;
	l->peers = (struct ctl_peer *)l->mem.data;
	return &l->peers[l->n++];
}

/* The entry's address as host and port, or a reason naming the list. */
static int list_address(struct peer_list *l, const char *addr, char **host, int *port)
{
	int rc = split_address(addr, host, port);

	if (rc == RMQNS_EINVAL)
		snprintf(l->err, l->errlen, "%s: '%s' is not host:port with a port of 1-65535", l->key,
			 addr);
	return rc;
}

static int list_unique(struct peer_list *l, const char *what, const char *value,
		       const char *(*of)(const struct ctl_peer *))
{
	for (unsigned i = 0; i + 1 < l->n; i++) {
		if (strcmp(of(&l->peers[i]), value) == 0) {
			snprintf(l->err, l->errlen, "%s: %s %s appears twice", l->key, what, value);
			return RMQNS_EINVAL;
		}
	}
	return 0;
}

static const char *peer_id(const struct ctl_peer *p)
{
	return p->id;
}

static const char *peer_address(const struct ctl_peer *p)
{
	return p->address;
}

static int dledger_entry(void *arg, char *e)
{
	struct peer_list *l = arg;
	char *dash = strchr(e, '-');

	if (!dash || dash == e) {
		snprintf(l->err, l->errlen, "%s: entry '%s' is not id-host:port", l->key, e);
		return RMQNS_EINVAL;
	}
	struct ctl_peer *peer = list_add(l);
	if (!peer || !(peer->id = strndup(e, (size_t)(dash - e))) || !(peer->address = strdup(dash + 1)))
		return RMQNS_ENOMEM;
	int rc = list_address(l, peer->address, &peer->host, &peer->port);
	if (rc)
		return rc;
	if (peer->port + l->raft_port_offset > 65535) {
		snprintf(l->err, l->errlen, "controllerRaftPortOffset: %s's Raft port %d + %d is past "
			 "65535", peer->id, peer->port, l->raft_port_offset);
		return RMQNS_EINVAL;
	}
	peer->raft_port = peer->port + l->raft_port_offset;
	if (!(peer->raft_host = strdup(peer->host)))
		return RMQNS_ENOMEM;
	return list_unique(l, "id", peer->id, peer_id);
}

/* jRaftInitConf: one member per entry, named by its Raft address. */
static int jraft_raft_entry(void *arg, char *e)
{
	struct peer_list *l = arg;
	struct ctl_peer *peer = list_add(l);

	if (!peer || !(peer->id = strdup(e)))
		return RMQNS_ENOMEM;
	int rc = list_address(l, e, &peer->raft_host, &peer->raft_port);
	return rc ? rc : list_unique(l, "address", e, peer_id);
}

/* jRaftControllerRPCAddr: the controller address of the member at the
 * same position. */
struct rpc_fill {
	struct peer_list *l;
	unsigned at;
};

static int jraft_rpc_entry(void *arg, char *e)
{
	struct rpc_fill *f = arg;
	struct peer_list *l = f->l;

	if (f->at >= l->n) {
		f->at++;
		return 0; /* counted, refused once all are */
	}
	struct ctl_peer *peer = &l->peers[f->at++];
	if (!(peer->address = strdup(e)))
		return RMQNS_ENOMEM;
	unsigned n = l->n;
	l->n = f->at; /* the duplicate check looks at the entries filled so far */
	int rc = list_address(l, e, &peer->host, &peer->port);
	if (!rc)
		rc = list_unique(l, "address", e, peer_address);
	l->n = n;
	return rc;
}

/* The end of a pass over a list: the members handed out, or freed with
 * the reason in err when the pass failed or found none. */
static int list_done(struct peer_list *l, int rc, struct ctl_peer **out, unsigned *n)
{
	if (!rc && l->n == 0) {
		snprintf(l->err, l->errlen, "%s is empty", l->key);
		rc = RMQNS_EINVAL;
	}
	if (rc) {
		if (rc == RMQNS_ENOMEM)
			snprintf(l->err, l->errlen, "out of memory reading %s", l->key);
		ctl_peers_free(l->peers, l->n);
		return rc;
	}
	*out = l->peers;
	*n = l->n;
	return 0;
}

int ctl_peers_parse(const char *text, int raft_port_offset, struct ctl_peer **out, unsigned *n,
		    char *err, size_t errlen)
{
	struct peer_list l = { .key = "controllerDLegerPeers", .raft_port_offset = raft_port_offset,
			       .err = err, .errlen = errlen };

	return list_done(&l, each_entry(text, ';', dledger_entry, &l), out, n);
}

int ctl_peers_parse_jraft(const char *init_conf, const char *rpc_addrs, struct ctl_peer **out,
			  unsigned *n, char *err, size_t errlen)
{
	struct peer_list l = { .key = "jRaftInitConf", .err = err, .errlen = errlen };
	int rc = list_done(&l, each_entry(init_conf, ',', jraft_raft_entry, &l), &l.peers, &l.n);

	if (rc)
		return rc;
	l.key = "jRaftControllerRPCAddr";
	struct rpc_fill f = { .l = &l };
	rc = each_entry(rpc_addrs, ',', jraft_rpc_entry, &f);
	if (!rc && f.at != l.n) {
		snprintf(err, errlen, "jRaftControllerRPCAddr has %u entries and jRaftInitConf %u: "
			 "each node needs one of each, in the same order", f.at, l.n);
		rc = RMQNS_EINVAL;
	}
	return list_done(&l, rc, out, n);
}

/* The position of jRaftServerId in the members (compared as host and
 * port, so that "[::1]:1" and "::1:1" are one address). */
static int jraft_self(const struct ctl_peer *peers, unsigned n, const char *server_id, char *err,
		      size_t errlen)
{
	char *host = NULL;
	int port = 0, self = RMQNS_ENOTFOUND;

	if (!server_id || !*server_id || split_address(server_id, &host, &port) == RMQNS_EINVAL) {
		snprintf(err, errlen, "jRaftServerId: '%s' is not host:port with a port of 1-65535",
			 server_id ? server_id : "");
		return RMQNS_EINVAL;
	}
	if (!host) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	for (unsigned i = 0; i < n && self < 0; i++)
		if (peers[i].raft_port == port && strcmp(peers[i].raft_host, host) == 0)
			self = (int)i;
	free(host);
	if (self < 0) {
		snprintf(err, errlen, "jRaftServerId %s is not one of the addresses in jRaftInitConf",
			 server_id);
		return RMQNS_EINVAL;
	}
	return self;
}

static int dledger_self(const struct ctl_peer *peers, unsigned n, const char *self_id, char *err,
			size_t errlen)
{
	for (unsigned i = 0; i < n && self_id; i++)
		if (strcmp(peers[i].id, self_id) == 0)
			return (int)i;
	snprintf(err, errlen, "controllerDLegerSelfId '%s' is not one of the ids in "
		 "controllerDLegerPeers", self_id ? self_id : "");
	return RMQNS_EINVAL;
}

int ctl_peers_of_config(const struct ctl_node_config *cfg, struct ctl_peer **out, unsigned *n,
			unsigned *self, char *err, size_t errlen)
{
	int offset = cfg->raft_port_offset ? cfg->raft_port_offset : CTL_DEFAULT_RAFT_PORT_OFFSET;
	int rc = cfg->jraft ? ctl_peers_parse_jraft(cfg->jraft_init_conf, cfg->jraft_rpc_addrs, out, n,
						     err, errlen)
			    : ctl_peers_parse(cfg->peers, offset, out, n, err, errlen);

	if (rc)
		return rc;
	int at = cfg->jraft ? jraft_self(*out, *n, cfg->jraft_server_id, err, errlen)
			    : dledger_self(*out, *n, cfg->self_id, err, errlen);
	if (at < 0) {
		ctl_peers_free(*out, *n);
		*out = NULL;
		*n = 0;
		return at;
	}
	*self = (unsigned)at;
	return 0;
}

/* Where a peer's Raft port is (jRaftInitConf's entry, or the DLedger
 * entry's port + controllerRaftPortOffset, computed when the list was
 * read). The one place the transport asks. */
int ctl_peer_raft_endpoint(const struct ctl_peer *p, const char **host, int *port)
{
	*host = p->raft_host;
	*port = p->raft_port;
	return *port < 1 || *port > 65535 ? RMQNS_EINVAL : 0;
}

int ctl_peer_raft_address(const struct ctl_peer *p, char *out, size_t outlen)
{
	int w = snprintf(out, outlen, strchr(p->raft_host, ':') ? "[%s]:%d" : "%s:%d", p->raft_host,
			 p->raft_port);
	return w < 0 || (size_t)w >= outlen ? RMQNS_ETOOBIG : 0;
}

char *ctl_peers_describe(const struct ctl_peer *peers, unsigned n, bool with_ids)
{
	struct buf b = BUF_INIT;

	for (unsigned i = 0; i < n; i++) {
		if (buf_printf(&b, "%s%s%s;", with_ids ? peers[i].id : "", with_ids ? ":" : "",
			       peers[i].address)) {
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

int ctl_peers_self_port(const struct ctl_node_config *cfg, char *err, size_t errlen)
{
	struct ctl_peer *peers;
	unsigned n, self;

	int rc = ctl_peers_of_config(cfg, &peers, &n, &self, err, errlen);
	if (rc)
		return rc == RMQNS_ENOMEM ? rc : RMQNS_EINVAL;
	int port = peers[self].port;
	ctl_peers_free(peers, n);
	return port;
}
