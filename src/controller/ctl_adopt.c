/* Adoption: a broker set rebuilt from what its brokers report when the
 * store does not hold it (a new controller group, a lost store). Brokers
 * of such a set keep their ids and the master epoch they hold; a 5.x
 * broker ignores a role change whose epoch is not above its own, so the
 * master the set goes on with is chosen from their reports and given an
 * epoch above all of them. The rule (ctl_adopt_choose) is pure; the rest
 * turns requests and heartbeats into ADOPT_REPLICA / ADOPT_MASTER events. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"

/* (epoch, max offset) of a above b's. */
static int report_cmp(const struct ctl_adopt_report *a, const struct ctl_adopt_report *b)
{
	if (a->epoch != b->epoch)
		return a->epoch > b->epoch ? 1 : -1;
	if (a->max_offset != b->max_offset)
		return a->max_offset > b->max_offset ? 1 : -1;
	return 0;
}

/* Of two replicas with the same (epoch, offset): the one already serving,
 * then the lower priority number, then the lower id. */
static bool preferred(const struct ctl_adopt_report *a, const struct ctl_adopt_report *b)
{
	if (a->serving != b->serving)
		return a->serving;
	if (a->priority != b->priority)
		return a->priority < b->priority;
	return a->id < b->id;
}

enum ctl_adopt_verdict ctl_adopt_choose(const struct ctl_adopt_report *r, uint32_t n,
					int32_t set_master_epoch, int32_t set_sss_epoch,
					struct ctl_adopt_choice *out)
{
	const struct ctl_adopt_report *best = NULL;
	int32_t top_epoch = set_master_epoch;

	out->tied = false;

	for (uint32_t i = 0; i < n; i++) {
		if (r[i].epoch < 0)
			continue; /* reported no epoch: not a candidate */
		if (r[i].epoch > top_epoch)
			top_epoch = r[i].epoch;
		int c = best ? report_cmp(&r[i], best) : 1;
		out->tied = c == 0 || (c < 0 && out->tied);
		if (c > 0 || (c == 0 && preferred(&r[i], best)))
			best = &r[i];
	}
	if (!best || top_epoch == set_master_epoch || top_epoch == INT32_MAX ||
	    set_sss_epoch == INT32_MAX)
		return CTL_ADOPT_NOTHING;
	if (!best->known)
		return CTL_ADOPT_WAIT;
	int64_t floor = best->confirm_offset > 0 && best->confirm_offset < best->max_offset
				? best->confirm_offset
				: best->max_offset;
	out->master = best->id;
	out->master_epoch = top_epoch + 1;
	out->sss_epoch = set_sss_epoch + 1;
	out->sss_count = 0;
	for (uint32_t i = 0; i < n; i++)
		if (r[i].known && r[i].epoch == best->epoch && r[i].max_offset >= floor)
			out->sss[out->sss_count++] = r[i].id;
	ctl_ids_sort(out->sss, out->sss_count);
	return CTL_ADOPT_ELECT;
}

bool ctl_adopt_enabled(const struct ctl_env *env)
{
	return ctl_config_flag(env->config, "controllerAdoptBrokers", true);
}

/* A live entry of the set that may be adopted: alive here, a controller
 * id (ids start at 1). */
static bool entry_of_set(const struct ctl_env *env, const struct ctl_live_entry *e,
			 const struct ctl_set *set)
{
	return e->broker_id >= 1 && strcmp(e->broker_name, set->name) == 0 &&
	       strcmp(e->cluster, set->cluster) == 0 &&
	       e->last_ms + e->timeout_ms >= env->now_ms;
}

bool ctl_adopt_pending(const struct ctl_env *env, const struct ctl_set *set)
{
	if (!ctl_set_exists(set) || set->has_master || !env->live || !ctl_adopt_enabled(env))
		return false;
	for (uint32_t i = 0; i < env->live->count; i++) {
		const struct ctl_live_entry *e = &env->live->items[i];
		if (entry_of_set(env, e, set) && e->epoch > set->master_epoch)
			return true;
	}
	return false;
}

const struct ctl_live_entry *ctl_adopt_requester(const struct ctl_env *env, const char *broker_name)
{
	for (uint32_t i = 0; env->live && i < env->live->count; i++) {
		const struct ctl_live_entry *e = &env->live->items[i];
		if (e->conn == env->conn && e->broker_id >= 1 &&
		    strcmp(e->broker_name, broker_name) == 0)
			return e;
	}
	return NULL;
}

int ctl_adopt_replica_event(struct ctl_event *ev, const char *cluster, const char *broker_name,
			    const char *address, int64_t id)
{
	ctl_event_clear(ev);
	ev->type = CTL_EV_ADOPT_REPLICA;
	ev->broker_id = id;
	ev->next_id = id + 1;
	ev->cluster = strdup(cluster ? cluster : "");
	ev->broker_name = strdup(broker_name);
	ev->address = strdup(address ? address : "");
	return ev->cluster && ev->broker_name && ev->address ? 0 : RMQNS_ENOMEM;
}

/* The live replicas of the set this node hears, as reports. */
static int collect_reports(const struct ctl_env *env, const struct ctl_set *set,
			   const char *serving_address, struct ctl_adopt_report **out,
			   const struct ctl_live_entry ***entries, uint32_t *n)
{
	uint32_t count = 0;

	*out = calloc(env->live->count + 1, sizeof **out);
	*entries = calloc(env->live->count + 1, sizeof **entries);
	if (!*out || !*entries)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < env->live->count; i++) {
		const struct ctl_live_entry *e = &env->live->items[i];
		if (!entry_of_set(env, e, set))
			continue;
		(*entries)[count] = e;
		(*out)[count++] = (struct ctl_adopt_report){
			.id = e->broker_id,
			.epoch = e->epoch,
			.max_offset = e->max_offset,
			.confirm_offset = e->confirm_offset,
			.priority = e->priority,
			.known = ctl_set_replica(set, e->broker_id) != NULL,
			.serving = serving_address && e->address && strcmp(e->address, serving_address) == 0,
		};
	}
	*n = count;
	return 0;
}

/* The replicas the state lacks, adopted ahead of the master. */
static int adopt_unknown(struct ctl_answer *ans, const struct ctl_set *set,
			 const struct ctl_adopt_report *r, const struct ctl_live_entry *const *e,
			 uint32_t n)
{
	ans->pre = calloc(n + 1, sizeof *ans->pre);
	if (!ans->pre)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].known)
			continue;
		int rc = ctl_adopt_replica_event(&ans->pre[ans->pre_count++], set->cluster, set->name,
						 e[i]->address, r[i].id);
		if (rc)
			return rc;
		ans->adopted |= CTL_ADOPTED_BROKER;
	}
	return 0;
}

static int adopt_answer(struct ctl_answer *ans, const struct ctl_set *set,
			const struct ctl_adopt_choice *c, const char *master_address)
{
	struct ctl_event *ev = &ans->event;
	int rc = ctl_answer_set(ans, 0, NULL);

	if (!rc)
		rc = ctl_answer_ext_i64(ans, "masterBrokerId", c->master);
	if (!rc)
		rc = ctl_answer_ext(ans, "masterAddress", master_address);
	if (!rc)
		rc = ctl_answer_ext_i64(ans, "masterEpoch", c->master_epoch);
	if (!rc)
		rc = ctl_answer_ext_i64(ans, "syncStateSetEpoch", c->sss_epoch);
	if (!rc)
		rc = ctl_answer_body_sss(ans, c->sss, c->sss_count, c->sss_epoch);
	if (rc)
		return rc;
	ans->has_event = true;
	ans->notify_role_change = true;
	ev->type = CTL_EV_ADOPT_MASTER;
	ev->elected = true;
	ev->broker_id = c->master;
	ev->master_epoch = c->master_epoch;
	ev->sss_epoch = c->sss_epoch;
	ev->broker_name = strdup(set->name);
	if (!ev->broker_name)
		return RMQNS_ENOMEM;
	if (c->sss_count) {
		ev->ids = malloc(c->sss_count * sizeof *ev->ids);
		if (!ev->ids)
			return RMQNS_ENOMEM;
		memcpy(ev->ids, c->sss, c->sss_count * sizeof *ev->ids);
		ev->id_count = c->sss_count;
	}
	return 0;
}

int ctl_adopt_elect(const struct ctl_env *env, const char *broker_name,
		    const char *serving_address, bool wait_for_serving, struct ctl_answer *ans)
{
	const struct ctl_set *set = ctl_state_find(env->state, broker_name);
	struct ctl_adopt_report *reports = NULL;
	const struct ctl_live_entry **entries = NULL;
	struct ctl_adopt_choice choice = { 0 };
	uint32_t n = 0;
	int rc;

	ans->ext_present = true;
	if (!ctl_adopt_pending(env, set))
		return ctl_answer_set(ans, CTL_RSP_ELECT_MASTER_FAILED, "No master to adopt");
	rc = collect_reports(env, set, serving_address, &reports, &entries, &n);
	if (!rc && !(choice.sss = calloc(n + 1, sizeof *choice.sss)))
		rc = RMQNS_ENOMEM;
	if (rc)
		goto out;
	/* the replicas the state lacks are candidates too: known once adopted */
	for (uint32_t i = 0; i < n; i++)
		reports[i].known = true;
	enum ctl_adopt_verdict v = ctl_adopt_choose(reports, n, set->master_epoch, set->sss_epoch,
						    &choice);
	if (v != CTL_ADOPT_ELECT) {
		rc = ctl_answer_set(ans, CTL_RSP_ELECT_MASTER_FAILED, "No master to adopt");
		goto out;
	}
	if (choice.tied && !serving_address && wait_for_serving) {
		/* either could serve; the one that does is the one to keep */
		rc = ctl_answer_set(ans, CTL_RSP_ELECT_MASTER_FAILED,
				    "Waiting for the NameServer to learn the master of %s", set->name);
		goto out;
	}
	const char *master_address = NULL;
	for (uint32_t i = 0; i < n; i++) {
		reports[i].known = ctl_set_replica(set, reports[i].id) != NULL;
		if (reports[i].id == choice.master)
			master_address = entries[i]->address;
	}
	rc = adopt_unknown(ans, set, reports, entries, n);
	if (!rc)
		rc = adopt_answer(ans, set, &choice, master_address);
out:
	free(choice.sss);
	free(reports);
	free(entries);
	return rc;
}
