/* Master election (controller.md §3.9): the first master of a set, then
 * the election policy over the sync-state set (and over every replica
 * when unclean election is on), the answers 0 / 2011 / 2004 / 2012 and
 * the ELECT_MASTER event. Reads the state and this node's liveness only. */
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

/* Is a better master than b: higher epoch, then more data, then a lower
 * priority number; the lower id breaks a full tie so that every run
 * picks the same one. Offsets are compared as 64-bit values. */
static bool better(const struct ctl_live_entry *a, int64_t a_id, const struct ctl_live_entry *b,
		   int64_t b_id)
{
	if (a->epoch != b->epoch)
		return a->epoch > b->epoch;
	if (a->max_offset != b->max_offset)
		return a->max_offset > b->max_offset;
	if (a->priority != b->priority)
		return a->priority < b->priority;
	return a_id < b_id;
}

/* The policy over one candidate list; false when it yields nobody. */
static bool elect_among(const struct ctl_env *env, const struct ctl_set *set, const int64_t *ids,
			uint32_t n, bool has_pref, int64_t pref, int64_t *out)
{
	const struct ctl_live_entry *best = NULL;
	int64_t best_id = 0;
	bool old_alive = false, pref_alive = false;

	for (uint32_t i = 0; i < n; i++) {
		if (!ctl_env_alive(env, set->cluster, set->name, ids[i]))
			continue;
		if (set->has_master && ids[i] == set->master_id)
			old_alive = true;
		if (has_pref && ids[i] == pref)
			pref_alive = true;
		const struct ctl_live_entry *e = ctl_live_find(env->live, set->cluster, set->name, ids[i]);
		if (!best || better(e, ids[i], best, best_id)) {
			best = e;
			best_id = ids[i];
		}
	}
	if (!best)
		return false;
	if (old_alive && (!has_pref || pref == set->master_id)) {
		*out = set->master_id;
		return true;
	}
	if (has_pref) {
		/* an operator's choice or nobody: no fallback to the best */
		*out = pref;
		return pref_alive;
	}
	*out = best_id;
	return true;
}

static int elect_body(struct ctl_answer *ans, const struct ctl_set *set, bool member_group,
		      const int64_t *sss, uint32_t sss_count)
{
	struct jw w;

	buf_reset(&ans->body);
	jw_init(&w, &ans->body, JW_DEFAULT);
	jw_obj_begin(&w);
	if (member_group) {
		jw_key(&w, "brokerMemberGroup");
		jw_obj_begin(&w);
		jw_key(&w, "brokerAddrs");
		jw_obj_begin(&w);
		for (uint32_t i = 0; i < set->replica_count; i++) {
			jw_key_int(&w, set->replicas[i].id);
			jw_str(&w, set->replicas[i].address);
		}
		jw_obj_end(&w);
		jw_key(&w, "brokerName");
		jw_str(&w, set->name);
		jw_key(&w, "cluster");
		jw_str(&w, set->cluster);
		jw_obj_end(&w);
	}
	jw_key(&w, "syncStateSet");
	jw_arr_begin(&w);
	for (uint32_t i = 0; i < sss_count; i++)
		jw_int(&w, sss[i]);
	jw_arr_end(&w);
	jw_obj_end(&w);
	ans->has_body = true;
	return jw_error(&w);
}

static const char *replica_address(const struct ctl_set *set, int64_t id)
{
	const struct ctl_replica *r = ctl_set_replica(set, id);
	return r ? r->address : NULL;
}

static int elect_answer_master(struct ctl_answer *ans, const struct ctl_set *set, int64_t id,
			       int32_t master_epoch, int32_t sss_epoch)
{
	int rc = ctl_answer_ext_i64(ans, "masterBrokerId", id);
	if (!rc)
		rc = ctl_answer_ext(ans, "masterAddress", replica_address(set, id));
	if (!rc)
		rc = ctl_answer_ext_i64(ans, "masterEpoch", master_epoch);
	if (!rc)
		rc = ctl_answer_ext_i64(ans, "syncStateSetEpoch", sss_epoch);
	return rc;
}

static int elect_event(struct ctl_answer *ans, const char *broker_name, bool elected, int64_t id)
{
	ans->has_event = true;
	ans->event.type = CTL_EV_ELECT_MASTER;
	ans->event.elected = elected;
	ans->event.broker_id = elected ? id : 0;
	ans->event.broker_name = strdup(broker_name);
	return ans->event.broker_name ? 0 : RMQNS_ENOMEM;
}

int ctl_elect_master(const struct ctl_env *env, const char *broker_name, bool has_id, int64_t id,
		     bool designate, struct ctl_answer *ans)
{
	const struct ctl_set *set = ctl_state_find(env->state, broker_name);
	bool found = false;
	int64_t master = 0;
	int rc;

	ans->ext_present = true;
	if (!ctl_set_exists(set))
		return ctl_answer_set(ans, CTL_RSP_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered");
	/* brokers that had a master the state lacks: only the adoption elects,
	 * at an epoch they accept (ctl_adopt.c) */
	if (ctl_adopt_pending(env, set))
		return ctl_answer_set(ans, CTL_RSP_ELECT_MASTER_FAILED,
				      "Waiting for the brokers of %s to report before adopting their master",
				      set->name);
	/* the first master of a set: Java takes the requester unchecked; here it
	 * must at least be a replica of the set and alive */
	if (set->master_epoch == 0 && has_id && ctl_set_replica(set, id) &&
	    ctl_env_alive(env, set->cluster, set->name, id)) {
		master = id;
		found = true;
	}
	if (!found) {
		bool has_pref = has_id && designate;
		found = elect_among(env, set, set->sss, set->sss_count, has_pref, id, &master);
		if (!found && ctl_config_flag(env->config, "enableElectUncleanMaster", false)) {
			int64_t *all = malloc(((size_t)set->replica_count + 1) * sizeof *all);
			if (!all)
				return RMQNS_ENOMEM;
			for (uint32_t i = 0; i < set->replica_count; i++)
				all[i] = set->replicas[i].id;
			found = elect_among(env, set, all, set->replica_count, has_pref, id, &master);
			free(all);
		}
	}
	if (found && set->has_master && master == set->master_id) {
		rc = ctl_answer_set(ans, CTL_RSP_MASTER_STILL_EXIST,
				    "The old master %lld is still alive, not need to elect new master for broker %s",
				    (long long)master, set->name);
		if (!rc)
			rc = elect_answer_master(ans, set, master, set->master_epoch, set->sss_epoch);
		return rc ? rc : elect_body(ans, set, false, set->sss, set->sss_count);
	}
	if (found) {
		rc = ctl_answer_set(ans, 0, NULL);
		if (!rc)
			rc = elect_answer_master(ans, set, master, set->master_epoch + 1, set->sss_epoch + 1);
		if (!rc)
			rc = elect_body(ans, set, true, &master, 1);
		if (!rc)
			rc = elect_event(ans, set->name, true, master);
		ans->notify_role_change = true;
		return rc;
	}
	if (!has_id) {
		/* the leader's own trigger: record that the master is gone */
		rc = ctl_answer_set(ans, CTL_RSP_MASTER_NOT_AVAILABLE,
				    "Old master has down and failed to elect a new broker master");
		return rc ? rc : elect_event(ans, set->name, false, 0);
	}
	return ctl_answer_set(ans, CTL_RSP_ELECT_MASTER_FAILED, "Failed to elect a new master");
}

int ctl_notify_encode(const struct ctl_set *set, int32_t opaque, struct buf *out)
{
	struct ctl_answer a;
	struct remoting_cmd cmd;
	int rc;

	memset(&a, 0, sizeof a);
	rc = elect_answer_master(&a, set, set->master_id, set->master_epoch, set->sss_epoch);
	if (!rc)
		rc = ctl_answer_body_sss(&a, set->sss, set->sss_count, set->sss_epoch);
	if (!rc) {
		remoting_request_init(&cmd, CTL_REQ_NOTIFY_BROKER_ROLE_CHANGED, opaque,
				      REMOTING_FLAG_ONEWAY, REMOTING_JSON);
		rc = ctl_answer_encode_cmd(&a, &cmd, out);
	}
	ctl_answer_clear(&a);
	return rc;
}
