/* What the HTTP side shows of a controller node: the replicated state and
 * the node's broker liveness as JSON (/controller), and each live
 * broker's heartbeat age as Prometheus samples. Built on the node's
 * thread, from its own data. Anyone may heart-beat, so past
 * CTL_VIEW_MAX_BROKERS brokers both stay bounded: /controller gives
 * counts instead of the list, /metrics the first brokers' ages (those of
 * registered sets first) and the total in rmqns_controller_live_brokers. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/json_body.h"
#include "rmqns/metrics.h"

static void view_ids(struct jw *w, const int64_t *ids, uint32_t n)
{
	jw_arr_begin(w);
	for (uint32_t i = 0; i < n; i++)
		jw_int(w, ids[i]);
	jw_arr_end(w);
}

static void view_set(struct jw *w, const struct ctl_view_ctx *v, const struct ctl_set *set)
{
	const struct ctl_replica *master = set->has_master ? ctl_set_replica(set, set->master_id) : NULL;

	jw_obj_begin(w);
	jw_member_str(w, "brokerName", set->name);
	jw_member_str(w, "clusterName", set->cluster);
	jw_member_bool(w, "registered", ctl_set_exists(set));
	jw_member_int(w, "nextBrokerId", set->next_id);
	jw_key(w, "masterBrokerId");
	if (set->has_master)
		jw_int(w, set->master_id);
	else
		jw_null(w);
	jw_member_str(w, "masterAddress", master ? master->address : NULL);
	jw_member_int(w, "masterEpoch", set->master_epoch);
	jw_member_int(w, "syncStateSetEpoch", set->sss_epoch);
	jw_key(w, "syncStateSet");
	view_ids(w, set->sss, set->sss_count);
	jw_key(w, "replicas");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < set->replica_count; i++) {
		const struct ctl_replica *r = &set->replicas[i];
		jw_obj_begin(w);
		jw_member_int(w, "brokerId", r->id);
		jw_member_str(w, "address", r->address);
		bool alive = v->live &&
			     ctl_live_alive(v->live, set->cluster, set->name, r->id, v->now_ms);
		jw_member_bool(w, "alive", alive);
		jw_member_bool(w, "inSyncStateSet", ctl_set_in_sss(set, r->id));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* The broker's set is registered in the replicated state. */
static bool in_a_set(const struct ctl_view_ctx *v, const struct ctl_live_entry *e)
{
	const struct ctl_set *set = v->state ? ctl_state_find(v->state, e->broker_name) : NULL;
	return ctl_set_exists(set) && strcmp(set->cluster, e->cluster) == 0 &&
	       ctl_set_replica(set, e->broker_id);
}

static uint32_t live_count(const struct ctl_view_ctx *v)
{
	return v->live ? v->live->count : 0;
}

static void view_live_counts(struct jw *w, const struct ctl_view_ctx *v)
{
	uint32_t known = 0;

	for (uint32_t i = 0; i < live_count(v); i++)
		known += in_a_set(v, &v->live->items[i]);
	jw_obj_begin(w);
	jw_member_int(w, "total", live_count(v));
	jw_member_int(w, "inBrokerSets", known);
	jw_member_int(w, "inNoBrokerSet", live_count(v) - known);
	jw_member_int(w, "max", v->live ? v->live->max_entries : 0);
	jw_member_int(w, "refusedTotal", v->live ? (int64_t)v->live->refused : 0);
	jw_member_bool(w, "listed", live_count(v) <= CTL_VIEW_MAX_BROKERS);
	jw_obj_end(w);
}

static void view_live(struct jw *w, const struct ctl_view_ctx *v)
{
	jw_arr_begin(w);
	for (uint32_t i = 0; live_count(v) <= CTL_VIEW_MAX_BROKERS && i < live_count(v); i++) {
		const struct ctl_live_entry *e = &v->live->items[i];
		jw_obj_begin(w);
		jw_member_str(w, "clusterName", e->cluster);
		jw_member_str(w, "brokerName", e->broker_name);
		jw_member_int(w, "brokerId", e->broker_id);
		jw_member_str(w, "address", e->address);
		jw_member_int(w, "heartbeatAgeMillis", v->now_ms > e->last_ms ? v->now_ms - e->last_ms : 0);
		jw_member_int(w, "heartbeatTimeoutMillis", e->timeout_ms);
		jw_member_int(w, "epoch", e->epoch);
		jw_member_int(w, "maxOffset", e->max_offset);
		jw_member_int(w, "electionPriority", e->priority);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

int ctl_view_json(const struct ctl_view_ctx *v, struct buf *out)
{
	struct jw w;
	const struct ctl_node_status *st = v->status;

	jw_init(&w, out, JW_STANDARD);
	jw_obj_begin(&w);
	jw_member_str(&w, "self", v->self_id);
	jw_member_str(&w, "group", v->group);
	jw_member_str(&w, "role", st->is_leader ? "leader" : "follower");
	jw_member_bool(&w, "serving", st->serving);
	jw_member_int(&w, "term", (int64_t)st->term);
	jw_member_str(&w, "leader", v->leader ? v->leader->id : NULL);
	jw_member_str(&w, "leaderAddress", v->leader ? v->leader->address : NULL);
	jw_member_int(&w, "lastApplied", (int64_t)st->last_applied);
	jw_member_int(&w, "leaderChanges", (int64_t)st->leader_changes);
	jw_member_str(&w, "peerAuthentication", v->peer_auth);
	jw_key(&w, "raftRefused");
	jw_obj_begin(&w);
	for (int r = CTL_RAFT_OK + 1; v->raft_refused && r < CTL_RAFT_VERDICTS; r++)
		jw_member_int(&w, ctl_raft_refusal_name(r), (int64_t)v->raft_refused[r]);
	jw_obj_end(&w);
	jw_key(&w, "brokerSets");
	jw_arr_begin(&w);
	for (uint32_t i = 0; v->state && i < v->state->count; i++)
		view_set(&w, v, v->state->sets[i]);
	jw_arr_end(&w);
	jw_key(&w, "liveBrokerCounts");
	view_live_counts(&w, v);
	jw_key(&w, "liveBrokers");
	view_live(&w, v);
	jw_obj_end(&w);
	return jw_error(&w);
}

static int view_prom_raft(const struct ctl_view_ctx *v, struct buf *out)
{
	char label[64];
	int rc = metrics_write_family(out, "rmqns_controller_raft_refused_total", "counter",
				      "Connections to the Raft port closed as not a peer's or not "
				      "well-formed, by reason.");

	for (int r = CTL_RAFT_OK + 1; rc == 0 && r < CTL_RAFT_VERDICTS; r++) {
		snprintf(label, sizeof label, "reason=\"%s\"", ctl_raft_refusal_name(r));
		rc = metrics_write_value(out, "rmqns_controller_raft_refused_total", label,
					 v->raft_refused ? (double)v->raft_refused[r] : 0);
	}
	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_controller_peer_tls", "gauge",
					  "1 when Raft peers authenticate by mutual TLS, 0 when by "
					  "source address only.");
	if (rc == 0)
		rc = metrics_write_value(out, "rmqns_controller_peer_tls", NULL,
					 v->peer_auth && strcmp(v->peer_auth, "mutual-tls") == 0);
	return rc;
}

/* cluster="..",broker=".." and `more` (may be ""), NUL-terminated in lb. */
static int view_set_labels(struct buf *lb, const char *cluster, const char *broker, const char *more)
{
	buf_reset(lb);
	int rc = buf_append_str(lb, "cluster=\"");
	if (rc == 0)
		rc = metrics_escape_label(lb, cluster);
	if (rc == 0)
		rc = buf_append_str(lb, "\",broker=\"");
	if (rc == 0)
		rc = metrics_escape_label(lb, broker);
	if (rc == 0)
		rc = buf_printf(lb, "\"%s", more) < 0 ? -1 : 0;
	return rc == 0 ? buf_putc(lb, '\0') : rc;
}

/* The leader this node follows, by peer id ("" when none is known), so
 * that nodes which disagree show it; and this node's own id. */
static int view_prom_leader(const struct ctl_view_ctx *v, struct buf *out)
{
	struct buf lb = BUF_INIT;
	int rc = metrics_write_family(out, "rmqns_controller_leader_info", "gauge",
				      "1, labelled with this node's peer id and the leader it knows.");
	if (rc == 0)
		rc = buf_append_str(&lb, "self=\"");
	if (rc == 0)
		rc = metrics_escape_label(&lb, v->self_id);
	if (rc == 0)
		rc = buf_append_str(&lb, "\",leader=\"");
	if (rc == 0)
		rc = metrics_escape_label(&lb, v->leader ? v->leader->id : "");
	if (rc == 0)
		rc = buf_append(&lb, "\"", 2); /* with the NUL */
	if (rc == 0)
		rc = metrics_write_value(out, "rmqns_controller_leader_info", (const char *)lb.data, 1);
	buf_free(&lb);
	return rc;
}

/* Each registered set's master (its broker id, -1 without one) and master
 * epoch as this node's replicated state has them: equal on every node once
 * applied, so a lasting difference is a node behind or split off. */
static int view_prom_sets(const struct ctl_view_ctx *v, struct buf *out)
{
	static const struct {
		const char *name, *help;
		bool epoch;
	} fam[] = {
		{ "rmqns_controller_set_master_id",
		  "A registered broker set's master broker id in this node's state, -1 when it has none.",
		  false },
		{ "rmqns_controller_set_master_epoch",
		  "A registered broker set's master epoch in this node's state.", true },
	};
	struct buf lb = BUF_INIT;
	int rc = 0;

	for (size_t f = 0; rc == 0 && f < sizeof fam / sizeof fam[0]; f++) {
		rc = metrics_write_family(out, fam[f].name, "gauge", fam[f].help);
		for (uint32_t i = 0; rc == 0 && v->state && i < v->state->count; i++) {
			const struct ctl_set *set = v->state->sets[i];
			if (!ctl_set_exists(set))
				continue;
			rc = view_set_labels(&lb, set->cluster, set->name, "");
			double value = fam[f].epoch ? set->master_epoch
				       : set->has_master ? (double)set->master_id : -1;
			if (rc == 0)
				rc = metrics_write_value(out, fam[f].name, (const char *)lb.data, value);
		}
	}
	buf_free(&lb);
	return rc;
}

int ctl_view_prom(const struct ctl_view_ctx *v, struct buf *out)
{
	struct buf lb = BUF_INIT;
	int rc = view_prom_leader(v, out);
	uint32_t shown = 0;

	if (rc == 0)
		rc = view_prom_sets(v, out);
	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_controller_heartbeat_age_seconds", "gauge",
					  "Seconds since a broker's last heartbeat to this controller.");
	/* the registered sets' brokers first, then others while room is left */
	for (uint32_t k = 0; k < 2 * live_count(v) && rc == 0 && shown < CTL_VIEW_MAX_BROKERS; k++) {
		bool first_pass = k < live_count(v);
		const struct ctl_live_entry *e = &v->live->items[first_pass ? k : k - live_count(v)];
		if (in_a_set(v, e) != first_pass)
			continue;
		shown++;
		char id[40];
		snprintf(id, sizeof id, ",id=\"%" PRId64 "\"", e->broker_id);
		rc = view_set_labels(&lb, e->cluster, e->broker_name, id);
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_controller_heartbeat_age_seconds",
						 (const char *)lb.data,
						 v->now_ms > e->last_ms ? (double)(v->now_ms - e->last_ms) / 1e3 : 0);
	}
	buf_free(&lb);
	return rc ? rc : view_prom_raft(v, out);
}
