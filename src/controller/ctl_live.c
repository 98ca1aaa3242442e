/* This node's broker liveness table: what heartbeats (904) say about each
 * (cluster, brokerName, id), which elections and in-sync checks read. It
 * is per node and never replicated; the expiry scan and connection closes
 * remove entries and report who went. A few brokers per set: a plain array. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

void ctl_live_init(struct ctl_live *l)
{
	*l = (struct ctl_live){ .max_entries = CTL_DEFAULT_MAX_LIVE_BROKERS,
				.max_timeout_ms = CTL_DEFAULT_MAX_HEARTBEAT_TIMEOUT_MS };
}

void ctl_live_set_bounds(struct ctl_live *l, uint32_t max_entries, int64_t max_timeout_ms)
{
	l->max_entries = max_entries ? max_entries : CTL_DEFAULT_MAX_LIVE_BROKERS;
	l->max_timeout_ms = max_timeout_ms > 0 ? max_timeout_ms : CTL_DEFAULT_MAX_HEARTBEAT_TIMEOUT_MS;
}

static void entry_free(struct ctl_live_entry *e)
{
	free(e->cluster);
	free(e->broker_name);
	free(e->address);
}

void ctl_live_free(struct ctl_live *l)
{
	for (uint32_t i = 0; i < l->count; i++)
		entry_free(&l->items[i]);
	free(l->items);
	l->items = NULL;
	l->count = l->cap = 0;
}

void ctl_broker_keys_free(struct ctl_broker_key *keys, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(keys[i].cluster);
		free(keys[i].broker_name);
	}
	free(keys);
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static struct ctl_live_entry *live_lookup(const struct ctl_live *l, const char *cluster,
					  const char *broker_name, int64_t id)
{
	cluster = or_empty(cluster);
	broker_name = or_empty(broker_name);
	for (uint32_t i = 0; i < l->count; i++) {
		struct ctl_live_entry *e = &l->items[i];
		if (e->broker_id == id && strcmp(e->broker_name, broker_name) == 0 &&
		    strcmp(e->cluster, cluster) == 0)
			return e;
	}
	return NULL;
}

const struct ctl_live_entry *ctl_live_find(const struct ctl_live *l, const char *cluster,
					   const char *broker_name, int64_t id)
{
	return live_lookup(l, cluster, broker_name, id);
}

bool ctl_live_alive(const struct ctl_live *l, const char *cluster, const char *broker_name,
		    int64_t id, int64_t now_ms)
{
	const struct ctl_live_entry *e = live_lookup(l, cluster, broker_name, id);
	return e && e->last_ms + e->timeout_ms >= now_ms;
}

/* Cut to the table's maximum: an entry nobody refreshes goes within it,
 * and last_ms + timeout cannot overflow. */
static int64_t hb_timeout(const struct ctl_live *l, const struct ctl_heartbeat *hb)
{
	int64_t t = hb->has_timeout ? hb->timeout_ms : CTL_DEFAULT_HEARTBEAT_TIMEOUT_MS;
	return t < l->max_timeout_ms ? t : l->max_timeout_ms;
}

static int32_t hb_priority(const struct ctl_heartbeat *hb)
{
	return hb->has_priority ? hb->priority : CTL_DEFAULT_ELECTION_PRIORITY;
}

int ctl_live_heartbeat(struct ctl_live *l, const struct ctl_heartbeat *hb, uint64_t conn,
		       int64_t now_ms)
{
	struct ctl_live_entry *e = live_lookup(l, hb->cluster, hb->broker_name, hb->broker_id);

	if (e) {
		/* the latest connection and address win: a reconnected broker's
		 * old connection closing must not remove its fresh entry */
		if (hb->address && strcmp(hb->address, e->address) != 0) {
			char *addr = strdup(hb->address);
			if (!addr)
				return RMQNS_ENOMEM;
			free(e->address);
			e->address = addr;
		}
		e->conn = conn;
		e->last_ms = now_ms;
		e->timeout_ms = hb_timeout(l, hb);
		e->priority = hb_priority(hb);
		if (hb->has_epoch && hb->has_max_offset &&
		    (hb->epoch > e->epoch || (hb->epoch == e->epoch && hb->max_offset > e->max_offset))) {
			e->epoch = hb->epoch;
			e->max_offset = hb->max_offset;
			e->confirm_offset = hb->has_confirm_offset ? hb->confirm_offset : 0;
		}
		return 0;
	}
	if (l->count >= l->max_entries) {
		l->refused++;
		log_warn_limited("controller: heartbeat of %s/%s id %lld from %s refused: %u brokers tracked "
				 "already (controllerMaxLiveBrokers)", or_empty(hb->cluster),
				 or_empty(hb->broker_name), (long long)hb->broker_id, or_empty(hb->address),
				 l->count);
		return RMQNS_EFULL;
	}
	if (l->count == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 8;
		if (ncap > l->max_entries)
			ncap = l->max_entries;
		struct ctl_live_entry *n = realloc(l->items, (size_t)ncap * sizeof *n);
		if (!n)
			return RMQNS_ENOMEM;
		l->items = n;
		l->cap = ncap;
	}
	struct ctl_live_entry fresh = {
		.cluster = strdup(or_empty(hb->cluster)),
		.broker_name = strdup(or_empty(hb->broker_name)),
		.broker_id = hb->broker_id,
		.address = strdup(or_empty(hb->address)),
		.conn = conn,
		.last_ms = now_ms,
		.timeout_ms = hb_timeout(l, hb),
		.epoch = hb->has_epoch ? hb->epoch : -1,
		.max_offset = hb->has_max_offset ? hb->max_offset : -1,
		.confirm_offset = 0,
		.priority = hb_priority(hb),
	};
	if (!fresh.cluster || !fresh.broker_name || !fresh.address) {
		entry_free(&fresh);
		return RMQNS_ENOMEM;
	}
	l->items[l->count++] = fresh;
	return 0;
}

/* Moves the entries `doomed` picks out of the table into *gone. */
static int live_remove_if(struct ctl_live *l, bool (*doomed)(const struct ctl_live_entry *, const void *),
			  const void *arg, struct ctl_broker_key **gone, uint32_t *n_gone)
{
	uint32_t n = 0, w = 0;
	struct ctl_broker_key *keys;

	*gone = NULL;
	*n_gone = 0;
	for (uint32_t i = 0; i < l->count; i++)
		n += doomed(&l->items[i], arg);
	if (!n)
		return 0;
	keys = calloc(n, sizeof *keys);
	if (!keys)
		return RMQNS_ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < l->count; i++) {
		struct ctl_live_entry *e = &l->items[i];
		if (!doomed(e, arg)) {
			l->items[w++] = *e;
			continue;
		}
		keys[n++] = (struct ctl_broker_key){ e->cluster, e->broker_name, e->broker_id };
		free(e->address);
	}
	l->count = w;
	*gone = keys;
	*n_gone = n;
	return 0;
}

static bool expired(const struct ctl_live_entry *e, const void *arg)
{
	return e->last_ms + e->timeout_ms < *(const int64_t *)arg;
}

static bool on_conn(const struct ctl_live_entry *e, const void *arg)
{
	return e->conn == *(const uint64_t *)arg;
}

int ctl_live_remove_expired(struct ctl_live *l, int64_t now_ms, struct ctl_broker_key **gone,
			    uint32_t *n_gone)
{
	return live_remove_if(l, expired, &now_ms, gone, n_gone);
}

int ctl_live_remove_conn(struct ctl_live *l, uint64_t conn, struct ctl_broker_key **gone,
			 uint32_t *n_gone)
{
	return live_remove_if(l, on_conn, &conn, gone, n_gone);
}
