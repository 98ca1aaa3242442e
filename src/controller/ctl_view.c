/* What the HTTP side shows of a controller node: the replicated state and
 * the node's broker liveness as JSON (/controller), and each live
 * broker's heartbeat age as Prometheus samples. Built on the node's
 * thread, from its own data. */
#include <inttypes.h>
#include <stdio.h>

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
	jw_key(w, "brokerName");
	jw_str(w, set->name);
	jw_key(w, "clusterName");
	jw_str(w, set->cluster);
	jw_key(w, "registered");
	jw_bool(w, ctl_set_exists(set));
	jw_key(w, "nextBrokerId");
	jw_int(w, set->next_id);
	jw_key(w, "masterBrokerId");
	if (set->has_master)
		jw_int(w, set->master_id);
	else
		jw_null(w);
	jw_key(w, "masterAddress");
	jw_str(w, master ? master->address : NULL);
	jw_key(w, "masterEpoch");
	jw_int(w, set->master_epoch);
	jw_key(w, "syncStateSetEpoch");
	jw_int(w, set->sss_epoch);
	jw_key(w, "syncStateSet");
	view_ids(w, set->sss, set->sss_count);
	jw_key(w, "replicas");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < set->replica_count; i++) {
		const struct ctl_replica *r = &set->replicas[i];
		jw_obj_begin(w);
		jw_key(w, "brokerId");
		jw_int(w, r->id);
		jw_key(w, "address");
		jw_str(w, r->address);
		jw_key(w, "alive");
		jw_bool(w, v->live && ctl_live_alive(v->live, set->cluster, set->name, r->id, v->now_ms));
		jw_key(w, "inSyncStateSet");
		jw_bool(w, ctl_set_in_sss(set, r->id));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void view_live(struct jw *w, const struct ctl_view_ctx *v)
{
	jw_arr_begin(w);
	for (uint32_t i = 0; v->live && i < v->live->count; i++) {
		const struct ctl_live_entry *e = &v->live->items[i];
		jw_obj_begin(w);
		jw_key(w, "clusterName");
		jw_str(w, e->cluster);
		jw_key(w, "brokerName");
		jw_str(w, e->broker_name);
		jw_key(w, "brokerId");
		jw_int(w, e->broker_id);
		jw_key(w, "address");
		jw_str(w, e->address);
		jw_key(w, "heartbeatAgeMillis");
		jw_int(w, v->now_ms > e->last_ms ? v->now_ms - e->last_ms : 0);
		jw_key(w, "heartbeatTimeoutMillis");
		jw_int(w, e->timeout_ms);
		jw_key(w, "epoch");
		jw_int(w, e->epoch);
		jw_key(w, "maxOffset");
		jw_int(w, e->max_offset);
		jw_key(w, "electionPriority");
		jw_int(w, e->priority);
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
	jw_key(&w, "self");
	jw_str(&w, v->self_id);
	jw_key(&w, "group");
	jw_str(&w, v->group);
	jw_key(&w, "role");
	jw_str(&w, st->is_leader ? "leader" : "follower");
	jw_key(&w, "serving");
	jw_bool(&w, st->serving);
	jw_key(&w, "term");
	jw_int(&w, (int64_t)st->term);
	jw_key(&w, "leader");
	jw_str(&w, v->leader ? v->leader->id : NULL);
	jw_key(&w, "leaderAddress");
	jw_str(&w, v->leader ? v->leader->address : NULL);
	jw_key(&w, "lastApplied");
	jw_int(&w, (int64_t)st->last_applied);
	jw_key(&w, "leaderChanges");
	jw_int(&w, (int64_t)st->leader_changes);
	jw_key(&w, "brokerSets");
	jw_arr_begin(&w);
	for (uint32_t i = 0; v->state && i < v->state->count; i++)
		view_set(&w, v, v->state->sets[i]);
	jw_arr_end(&w);
	jw_key(&w, "liveBrokers");
	view_live(&w, v);
	jw_obj_end(&w);
	return jw_error(&w);
}

int ctl_view_prom(const struct ctl_view_ctx *v, struct buf *out)
{
	struct buf lb = BUF_INIT;
	int rc = 0;

	for (uint32_t i = 0; rc == 0 && v->live && i < v->live->count; i++) {
		const struct ctl_live_entry *e = &v->live->items[i];
		char id[32];
		buf_reset(&lb);
		snprintf(id, sizeof id, "%" PRId64, e->broker_id);
		rc = buf_append_str(&lb, "cluster=\"");
		if (rc == 0)
			rc = metrics_escape_label(&lb, e->cluster);
		if (rc == 0)
			rc = buf_append_str(&lb, "\",broker=\"");
		if (rc == 0)
			rc = metrics_escape_label(&lb, e->broker_name);
		if (rc == 0)
			rc = buf_printf(&lb, "\",id=\"%s\"", id) < 0 ? -1 : 0;
		if (rc == 0)
			rc = buf_putc(&lb, '\0');
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_controller_heartbeat_age_seconds",
						 (const char *)lb.data,
						 v->now_ms > e->last_ms ? (double)(v->now_ms - e->last_ms) / 1e3 : 0);
	}
	buf_free(&lb);
	return rc;
}
