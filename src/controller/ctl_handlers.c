/* The controller's request handlers (controller.md §3), as functions of
 * the request and a ctl_env: each fills a ctl_answer, and for writes the
 * one event to commit before the answer goes out. Checks, codes, remarks
 * and ext fields follow the Java controller; the few places that differ
 * on purpose say so. No I/O and no clock of their own. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/remoting.h"

#define NOT_LEADER_REMARK "The controller is not in leader state"

/* Code 1 for a field the handler cannot do without (Java: an exception). */
static int missing(struct ctl_answer *ans, const char *field)
{
	ans->ext_present = false;
	return ctl_answer_set(ans, RSP_SYSTEM_ERROR, "The request has no valid %s", field);
}

/* A Long header field; "-1" reads as absent where 5.3 sends it for "none". */
static bool ext_long(const struct remoting_cmd *req, const char *key, int64_t *v)
{
	return remoting_ext_get_long(req, key, v);
}

static int event_strdup(char **dst, const char *src)
{
	*dst = strdup(src ? src : "");
	return *dst ? 0 : RMQNS_ENOMEM;
}

/* ---- 904 BROKER_HEARTBEAT ---- */

static int handle_heartbeat(const struct ctl_env *env, const struct remoting_cmd *req,
			    struct ctl_answer *ans)
{
	struct ctl_heartbeat hb = {
		.cluster = remoting_ext_get(req, "clusterName"),
		.broker_name = remoting_ext_get(req, "brokerName"),
		.address = remoting_ext_get(req, "brokerAddr"),
	};

	ans->no_answer = remoting_is_oneway(req);
	if (!ext_long(req, "brokerId", &hb.broker_id))
		return ctl_answer_set(ans, CTL_RSP_INVALID_REQUEST, "Heart beat with empty brokerId");
	hb.has_epoch = remoting_ext_get_int(req, "epoch", &hb.epoch);
	hb.has_max_offset = ext_long(req, "maxOffset", &hb.max_offset);
	hb.has_confirm_offset = ext_long(req, "confirmOffset", &hb.confirm_offset);
	hb.has_timeout = ext_long(req, "heartbeatTimeoutMills", &hb.timeout_ms);
	hb.has_priority = remoting_ext_get_int(req, "electionPriority", &hb.priority);
	int rc = ctl_live_heartbeat(env->live, &hb, env->conn, env->now_ms);
	if (rc == RMQNS_EFULL)
		return ctl_answer_set(ans, RSP_SYSTEM_BUSY,
				      "[TOO_MANY_BROKERS] heartbeat refused: this controller tracks %u brokers, "
				      "its controllerMaxLiveBrokers", env->live->max_entries);
	if (rc)
		return rc;
	return ctl_answer_set(ans, 0, "Heart beat success");
}

/* ---- 1005 CONTROLLER_GET_METADATA_INFO ---- */

static int handle_metadata(const struct ctl_env *env, struct ctl_answer *ans)
{
	const struct ctl_meta *m = env->meta;
	int rc = ctl_answer_set(ans, 0, NULL);

	ans->ext_present = true;
	if (!m)
		return rc;
	if (!rc)
		rc = ctl_answer_ext(ans, "group", m->group);
	if (!rc)
		rc = ctl_answer_ext(ans, "controllerLeaderId", m->leader_id);
	if (!rc)
		rc = ctl_answer_ext(ans, "controllerLeaderAddress", m->leader_id ? m->leader_address : NULL);
	if (!rc)
		rc = ctl_answer_ext_bool(ans, "isLeader", m->is_leader);
	if (!rc)
		rc = ctl_answer_ext(ans, "peers", m->peers);
	return rc;
}

/* ---- 1012 CONTROLLER_GET_NEXT_BROKER_ID ---- */

static int handle_next_broker_id(const struct ctl_env *env, const struct remoting_cmd *req,
				 struct ctl_answer *ans)
{
	const char *cluster = remoting_ext_get(req, "clusterName");
	const char *name = remoting_ext_get(req, "brokerName");

	if (!name)
		return missing(ans, "brokerName");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	int rc = ctl_answer_set(ans, 0, NULL);
	if (!rc)
		rc = ctl_answer_ext(ans, "clusterName", cluster);
	if (!rc)
		rc = ctl_answer_ext(ans, "brokerName", name);
	if (!rc)
		rc = ctl_answer_ext_i64(ans, "nextBrokerId", set && set->has_replicas ? set->next_id : 1);
	return rc;
}

/* ---- 1013 CONTROLLER_APPLY_BROKER_ID ---- */

static int handle_apply_broker_id(const struct ctl_env *env, const struct remoting_cmd *req,
				  struct ctl_answer *ans)
{
	const char *cluster = remoting_ext_get(req, "clusterName");
	const char *name = remoting_ext_get(req, "brokerName");
	const char *code = remoting_ext_get(req, "registerCheckCode");
	int64_t id;
	int rc;

	if (!name)
		return missing(ans, "brokerName");
	if (!ext_long(req, "appliedBrokerId", &id))
		return missing(ans, "appliedBrokerId");
	if (!code)
		return missing(ans, "registerCheckCode");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	if ((rc = ctl_answer_ext(ans, "clusterName", cluster)) ||
	    (rc = ctl_answer_ext(ans, "brokerName", name)))
		return rc;
	if (!set || !set->has_replicas) {
		if (id != 1)
			return ctl_answer_set(ans, CTL_RSP_BROKER_ID_INVALID,
					      "Broker-set: %s hasn't been registered in controller, but broker try to apply brokerId: %" PRId64,
					      name, id);
	} else {
		const struct ctl_replica *r = ctl_set_replica(set, id);
		/* present with the same check code: a retry after a lost answer */
		if (r && strcmp(r->check_code, code) != 0)
			return ctl_answer_set(ans, CTL_RSP_BROKER_ID_INVALID,
					      "Fail to apply brokerId: %" PRId64 " in broker-set: %s", id, name);
	}
	struct ctl_event *ev = &ans->event;
	size_t addr_len = strcspn(code, ";");
	ans->has_event = true;
	ev->type = CTL_EV_APPLY_BROKER_ID;
	ev->broker_id = id;
	if ((rc = event_strdup(&ev->cluster, cluster)) || (rc = event_strdup(&ev->broker_name, name)) ||
	    (rc = event_strdup(&ev->check_code, code)))
		return rc;
	ev->address = strndup(code, addr_len);
	if (!ev->address)
		return RMQNS_ENOMEM;
	return ctl_answer_set(ans, 0, NULL);
}

/* ---- adoption of brokers the store does not know (ctl_adopt.c) ---- */

/* A broker with a controller id in a set the state lacks, or lacking it:
 * adopted when the option allows and the cluster matches the set's. */
static bool may_adopt(const struct ctl_env *env, const struct ctl_set *set, const char *cluster,
		      int64_t id)
{
	if (id < 1 || !cluster || !*cluster || !ctl_adopt_enabled(env))
		return false;
	if (!ctl_set_exists(set))
		return true;
	return !ctl_set_replica(set, id) && strcmp(set->cluster, cluster) == 0;
}

static int adopt(struct ctl_answer *ans, const struct ctl_set *set, const char *cluster,
		 const char *name, const char *addr, int64_t id)
{
	ans->has_event = true;
	ans->adopted = CTL_ADOPTED_BROKER | (ctl_set_exists(set) ? 0 : CTL_ADOPTED_SET);
	return ctl_adopt_replica_event(&ans->event, cluster, name, addr, id);
}

/* ---- 1003 CONTROLLER_REGISTER_BROKER ---- */

/* 1003's answer for a known set: the master when alive, the sync-state set. */
static int register_answer(const struct ctl_env *env, const struct ctl_set *set, const char *cluster,
			   struct ctl_answer *ans)
{
	int rc;

	if (set->has_master && ctl_env_alive(env, cluster, set->name, set->master_id)) {
		const struct ctl_replica *m = ctl_set_replica(set, set->master_id);
		if ((rc = ctl_answer_ext_i64(ans, "masterBrokerId", set->master_id)) ||
		    (rc = ctl_answer_ext(ans, "masterAddress", m ? m->address : NULL)) ||
		    (rc = ctl_answer_ext_i64(ans, "masterEpoch", set->master_epoch)) ||
		    (rc = ctl_answer_ext_i64(ans, "syncStateSetEpoch", set->sss_epoch)))
			return rc;
	}
	rc = ctl_answer_body_sss(ans, set->sss, set->sss_count, set->sss_epoch);
	return rc ? rc : ctl_answer_set(ans, 0, NULL);
}

static int handle_register(const struct ctl_env *env, const struct remoting_cmd *req,
			   struct ctl_answer *ans)
{
	const char *cluster = remoting_ext_get(req, "clusterName");
	const char *name = remoting_ext_get(req, "brokerName");
	const char *addr = remoting_ext_get(req, "brokerAddress");
	int64_t id;
	int rc;

	if (!name)
		return missing(ans, "brokerName");
	if (!ext_long(req, "brokerId", &id))
		return missing(ans, "brokerId");
	if (!addr)
		return missing(ans, "brokerAddress");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	if ((rc = ctl_answer_ext(ans, "clusterName", cluster)) ||
	    (rc = ctl_answer_ext(ans, "brokerName", name)))
		return rc;
	if (may_adopt(env, set, cluster, id)) {
		/* as if registered: a new set has no master, epochs 0 */
		if ((rc = adopt(ans, set, cluster, name, addr, id)))
			return rc;
		if (ctl_set_exists(set))
			return register_answer(env, set, cluster, ans);
		rc = ctl_answer_body_sss(ans, NULL, 0, 0);
		return rc ? rc : ctl_answer_set(ans, 0, NULL);
	}
	if (!ctl_set_exists(set))
		return ctl_answer_set(ans, CTL_RSP_BROKER_NEED_TO_BE_REGISTERED,
				      "Broker-set: %s hasn't been registered in controller", name);
	const struct ctl_replica *r = ctl_set_replica(set, id);
	if (!r)
		return ctl_answer_set(ans, CTL_RSP_BROKER_NEED_TO_BE_REGISTERED,
				      "BrokerId: %" PRId64 " hasn't been registered in broker-set: %s", id, name);
	if ((rc = register_answer(env, set, cluster, ans)))
		return rc;
	if (strcmp(addr, r->address) != 0) {
		struct ctl_event *ev = &ans->event;
		ans->has_event = true;
		ev->type = CTL_EV_UPDATE_BROKER_ADDRESS;
		ev->broker_id = id;
		if ((rc = event_strdup(&ev->cluster, cluster)) ||
		    (rc = event_strdup(&ev->broker_name, name)) || (rc = event_strdup(&ev->address, addr)))
			return rc;
	}
	return 0;
}

/* ---- 1004 CONTROLLER_GET_REPLICA_INFO ---- */

static int handle_replica_info(const struct ctl_env *env, const struct remoting_cmd *req,
			       struct ctl_answer *ans)
{
	const char *name = remoting_ext_get(req, "brokerName");
	int rc;

	if (!name)
		return missing(ans, "brokerName");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	ans->ext_present = true;
	/* 1004 names no broker: the requester is the one heart-beating on its connection */
	const struct ctl_live_entry *who = ctl_adopt_requester(env, name);
	if (who && may_adopt(env, set, who->cluster, who->broker_id) &&
	    (rc = adopt(ans, set, who->cluster, name, who->address, who->broker_id)))
		return rc;
	if (!ctl_set_exists(set) && ans->has_event) {
		rc = ctl_answer_ext_i64(ans, "masterEpoch", 0);
		rc = rc ? rc : ctl_answer_body_sss(ans, NULL, 0, 0);
		return rc ? rc : ctl_answer_set(ans, 0, NULL);
	}
	if (!ctl_set_exists(set))
		return ctl_answer_set(ans, CTL_RSP_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed");
	/* unlike 1003, the master is named whether alive or not */
	if (set->has_master) {
		const struct ctl_replica *m = ctl_set_replica(set, set->master_id);
		if ((rc = ctl_answer_ext_i64(ans, "masterBrokerId", set->master_id)) ||
		    (rc = ctl_answer_ext(ans, "masterAddress", m ? m->address : NULL)))
			return rc;
	}
	if ((rc = ctl_answer_ext_i64(ans, "masterEpoch", set->master_epoch)) ||
	    (rc = ctl_answer_body_sss(ans, set->sss, set->sss_count, set->sss_epoch)))
		return rc;
	return ctl_answer_set(ans, 0, NULL);
}

/* ---- 1001 CONTROLLER_ALTER_SYNC_STATE_SET ---- */

/* The body {"syncStateSet":[...],"syncStateSetEpoch":E}; ids normalized. */
static int parse_sss_body(const struct remoting_cmd *req, int64_t **ids, uint32_t *n, int32_t *epoch,
			  bool *has_epoch)
{
	struct jp j;
	const char *key;
	size_t keylen;
	int rc, more;
	uint32_t cap = 0;

	*ids = NULL;
	*n = 0;
	*has_epoch = false;
	if (!req->body || !req->body_len)
		return RMQNS_EINVAL;
	jp_init(&j, req->body, req->body_len, 8);
	rc = jp_obj_begin(&j);
	while (!rc && (more = jp_obj_key(&j, &key, &keylen)) > 0) {
		if (strcmp(key, "syncStateSetEpoch") == 0) {
			rc = jp_int32(&j, epoch);
			*has_epoch = !rc;
		} else if (strcmp(key, "syncStateSet") == 0 && jp_peek(&j) == JP_ARRAY) {
			rc = jp_arr_begin(&j);
			while (!rc && (more = jp_arr_next(&j)) > 0) {
				int64_t v;
				if ((rc = jp_int64(&j, &v)))
					break;
				if (*n == cap) {
					if (cap == CTL_MAX_IDS) {
						rc = RMQNS_ETOOBIG;
						break;
					}
					cap = cap ? cap * 2 : 8;
					int64_t *g = realloc(*ids, (size_t)cap * sizeof *g);
					if (!g) {
						rc = RMQNS_ENOMEM;
						break;
					}
					*ids = g;
				}
				(*ids)[(*n)++] = v;
			}
			if (!rc && more < 0)
				rc = more;
		} else {
			rc = jp_skip(&j);
		}
	}
	if (!rc && more < 0)
		rc = more;
	if (!rc && j.err)
		rc = j.err;
	jp_fini(&j);
	if (rc) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return rc;
	}
	ctl_ids_normalize(*ids, n);
	return 0;
}

static bool ids_equal_sss(const struct ctl_set *set, const int64_t *ids, uint32_t n)
{
	return n == set->sss_count && (n == 0 || memcmp(ids, set->sss, n * sizeof *ids) == 0);
}

static int alter_checks(const struct ctl_env *env, const struct ctl_set *set, int64_t master,
			int32_t master_epoch, int32_t epoch, const int64_t *ids, uint32_t n,
			struct ctl_answer *ans)
{
	const char *prefix = "Rejecting alter syncStateSet request because";

	if (ids_equal_sss(set, ids, n))
		return ctl_answer_set(ans, CTL_RSP_ALTER_SYNC_STATE_SET_FAILED,
				      "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet");
	if (!set->has_master || set->master_id != master) {
		char cur[24] = "null";
		if (set->has_master)
			snprintf(cur, sizeof cur, "%" PRId64, set->master_id);
		return ctl_answer_set(ans, CTL_RSP_INVALID_MASTER,
				      "%s the current leader is:{%s}, not {%" PRId64 "}", prefix, cur, master);
	}
	if (master_epoch != set->master_epoch)
		return ctl_answer_set(ans, CTL_RSP_FENCED_MASTER_EPOCH,
				      "%s the current master epoch is:{%d}, not {%d}", prefix,
				      set->master_epoch, master_epoch);
	if (epoch != set->sss_epoch)
		return ctl_answer_set(ans, CTL_RSP_FENCED_SYNC_STATE_SET_EPOCH,
				      "%s the current syncStateSet epoch is:{%d}, not {%d}", prefix,
				      set->sss_epoch, epoch);
	for (uint32_t i = 0; i < n; i++) {
		if (!ctl_set_replica(set, ids[i]))
			return ctl_answer_set(ans, CTL_RSP_INVALID_REPLICAS,
					      "%s the replicas {%" PRId64 "} don't exist", prefix, ids[i]);
		if (!ctl_env_alive(env, set->cluster, set->name, ids[i]))
			return ctl_answer_set(ans, CTL_RSP_BROKER_NOT_ALIVE,
					      "%s the replicas {%" PRId64 "} don't alive", prefix, ids[i]);
	}
	bool has_master = false;
	for (uint32_t i = 0; i < n; i++)
		has_master |= ids[i] == set->master_id;
	if (!has_master)
		return ctl_answer_set(ans, CTL_RSP_ALTER_SYNC_STATE_SET_FAILED,
				      "%s the newSyncStateSet don't contains origin leader {%" PRId64 "}",
				      prefix, set->master_id);
	return 1; /* passed */
}

static int handle_alter_sss(const struct ctl_env *env, const struct remoting_cmd *req,
			    struct ctl_answer *ans)
{
	const char *name = remoting_ext_get(req, "brokerName");
	int64_t master, *ids = NULL;
	int32_t master_epoch, epoch = 0; /* Java's int field: 0 when the body has none */
	uint32_t n = 0;
	bool has_epoch;
	int rc;

	if (!name)
		return missing(ans, "brokerName");
	if (!ext_long(req, "masterBrokerId", &master))
		return missing(ans, "masterBrokerId");
	if (!remoting_ext_get_int(req, "masterEpoch", &master_epoch))
		return missing(ans, "masterEpoch");
	rc = parse_sss_body(req, &ids, &n, &epoch, &has_epoch);
	if (rc == RMQNS_ENOMEM)
		return rc;
	if (rc)
		return missing(ans, "syncStateSet body");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	if (!ctl_set_exists(set))
		rc = ctl_answer_set(ans, CTL_RSP_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed");
	else
		rc = alter_checks(env, set, master, master_epoch, epoch, ids, n, ans);
	if (rc <= 0) {
		/* every refusal carries newSyncStateSetEpoch 0: Java's int field */
		if (!rc)
			rc = ctl_answer_ext_i64(ans, "newSyncStateSetEpoch", 0);
		goto out;
	}
	if ((rc = ctl_answer_ext_i64(ans, "newSyncStateSetEpoch", (int64_t)set->sss_epoch + 1)) ||
	    (rc = ctl_answer_body_sss(ans, ids, n, set->sss_epoch + 1)))
		goto out;
	ans->has_event = true;
	ans->event.type = CTL_EV_ALTER_SYNC_STATE_SET;
	ans->event.ids = ids;
	ans->event.id_count = n;
	ids = NULL;
	if ((rc = event_strdup(&ans->event.broker_name, name)))
		goto out;
	rc = ctl_answer_set(ans, 0, NULL);
out:
	free(ids);
	return rc;
}

/* ---- 1002 CONTROLLER_ELECT_MASTER ---- */

static int handle_elect(const struct ctl_env *env, const struct remoting_cmd *req,
			struct ctl_answer *ans)
{
	const char *name = remoting_ext_get(req, "brokerName");
	int64_t id = -1;
	bool has_id;

	if (!name)
		return missing(ans, "brokerName");
	/* 5.3 writes -1 for "no broker": the controller's own trigger */
	has_id = ext_long(req, "brokerId", &id) && id != -1;
	return ctl_elect_master(env, name, has_id, id, remoting_ext_get_bool(req, "designateElect"), ans);
}

/* ---- 1006 CONTROLLER_GET_SYNC_STATE_DATA ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The body's brokerNames (owned), sorted without repeats. */
static int parse_names(const struct remoting_cmd *req, char ***names, uint32_t *n)
{
	struct jp j;
	uint32_t cap = 0;
	int rc, more = 0;

	*names = NULL;
	*n = 0;
	if (!req->body || !req->body_len)
		return 0;
	jp_init(&j, req->body, req->body_len, 4);
	rc = jp_arr_begin(&j);
	while (!rc && (more = jp_arr_next(&j)) > 0) {
		const char *s;
		size_t len;
		if ((rc = jp_string(&j, &s, &len)))
			break;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			char **g = realloc(*names, (size_t)cap * sizeof *g);
			if (!g) {
				rc = RMQNS_ENOMEM;
				break;
			}
			*names = g;
		}
		if (!((*names)[*n] = strndup(s, len))) {
			rc = RMQNS_ENOMEM;
			break;
		}
		(*n)++;
	}
	if (!rc && more < 0)
		rc = more;
	jp_fini(&j);
	if (!rc && *n > 1) {
		uint32_t w = 1;
		qsort(*names, *n, sizeof **names, cmp_str);
		for (uint32_t r = 1; r < *n; r++) {
			if (strcmp((*names)[w - 1], (*names)[r]) == 0)
				free((*names)[r]);
			else
				(*names)[w++] = (*names)[r];
		}
		*n = w;
	}
	return rc;
}

static void write_replicas(struct jw *w, const struct ctl_env *env, const struct ctl_set *set,
			   bool in_sync)
{
	jw_arr_begin(w);
	for (uint32_t i = 0; i < set->replica_count; i++) {
		const struct ctl_replica *r = &set->replicas[i];
		if (ctl_set_in_sss(set, r->id) != in_sync)
			continue;
		jw_obj_begin(w);
		jw_member_bool(w, "alive", ctl_env_alive(env, set->cluster, set->name, r->id));
		jw_member_str(w, "brokerAddress", r->address);
		jw_member_int(w, "brokerId", r->id);
		jw_member_str(w, "brokerName", set->name);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static int handle_sync_state_data(const struct ctl_env *env, const struct remoting_cmd *req,
				  struct ctl_answer *ans)
{
	char **names;
	uint32_t n;
	struct jw w;
	int rc = parse_names(req, &names, &n);

	if (rc == RMQNS_ENOMEM)
		goto out;
	if (rc || n == 0) {
		rc = ctl_answer_set(ans, RSP_SYSTEM_ERROR, "not set any response code");
		goto out;
	}
	jw_init(&w, &ans->body, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "replicasInfoTable");
	jw_obj_begin(&w);
	for (uint32_t i = 0; i < n; i++) {
		const struct ctl_set *set = ctl_state_find(env->state, names[i]);
		if (!ctl_set_exists(set))
			continue;
		const struct ctl_replica *m = set->has_master ? ctl_set_replica(set, set->master_id) : NULL;
		jw_key(&w, set->name);
		jw_obj_begin(&w);
		jw_key(&w, "inSyncReplicas");
		write_replicas(&w, env, set, true);
		if (m) {
			jw_member_str(&w, "masterAddress", m->address);
		}
		if (set->has_master) {
			jw_member_int(&w, "masterBrokerId", set->master_id);
		}
		jw_member_int(&w, "masterEpoch", set->master_epoch);
		jw_key(&w, "notInSyncReplicas");
		write_replicas(&w, env, set, false);
		jw_member_int(&w, "syncStateSetEpoch", set->sss_epoch);
		jw_obj_end(&w);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	ans->has_body = true;
	rc = jw_error(&w);
	if (!rc)
		rc = ctl_answer_set(ans, 0, NULL);
out:
	for (uint32_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ---- 1011 CLEAN_BROKER_DATA ---- */

/* Java's Long.valueOf: an optional sign, then decimal digits in range. */
static bool parse_java_long(const char *s, int64_t *out)
{
	const char *p = s;
	char *end;

	if (*p == '+' || *p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return false;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool is_blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
			return false;
	return true;
}

/* "1;2;3" as Java splits it (trailing empty parts dropped); on a part that
 * is not a number, 2009 naming it as Java's exception does. */
static int parse_clean_ids(const char *text, struct ctl_event *ev, struct ctl_answer *ans)
{
	size_t len = strlen(text);
	char *copy = strdup(text), *save = NULL;
	uint32_t cap = 1;
	int rc = 0;

	if (!copy)
		return RMQNS_ENOMEM;
	while (len && copy[len - 1] == ';')
		copy[--len] = '\0';
	for (const char *p = copy; *p; p++)
		cap += *p == ';';
	ev->ids = malloc((size_t)cap * sizeof *ev->ids);
	if (!ev->ids) {
		free(copy);
		return RMQNS_ENOMEM;
	}
	char *part = copy;
	for (char *semi; part; part = save) {
		semi = strchr(part, ';');
		save = semi ? semi + 1 : NULL;
		if (semi)
			*semi = '\0';
		int64_t id;
		if (!parse_java_long(part, &id)) {
			rc = ctl_answer_set(ans, CTL_RSP_INVALID_CLEAN_BROKER_METADATA,
					    "Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \"%s\"",
					    part);
			rc = rc ? rc : 1;
			break;
		}
		ev->ids[ev->id_count++] = id;
	}
	free(copy);
	ctl_ids_normalize(ev->ids, &ev->id_count);
	return rc;
}

static int handle_clean(const struct ctl_env *env, const struct remoting_cmd *req,
			struct ctl_answer *ans)
{
	const char *cluster = remoting_ext_get(req, "clusterName");
	const char *name = remoting_ext_get(req, "brokerName");
	const char *ids_text = remoting_ext_get(req, "brokerControllerIdsToClean");
	bool living = remoting_ext_get_bool(req, "isCleanLivingBroker");
	struct ctl_event *ev = &ans->event;
	int rc;

	if (!name)
		return missing(ans, "brokerName");
	const struct ctl_set *set = ctl_state_find(env->state, name);
	if (!is_blank(ids_text) && (rc = parse_clean_ids(ids_text, ev, ans)))
		return rc < 0 ? rc : 0;
	if (!living) {
		if (ev->id_count == 0 && set && set->has_sync && set->has_master)
			return ctl_answer_set(ans, CTL_RSP_INVALID_CLEAN_BROKER_METADATA,
					      "Broker %s is still alive, clean up failure", name);
		for (uint32_t i = 0; i < ev->id_count; i++)
			if (ctl_env_alive(env, cluster, name, ev->ids[i]))
				return ctl_answer_set(ans, CTL_RSP_INVALID_CLEAN_BROKER_METADATA,
						      "Broker [%s,  %" PRId64 "] is still alive, clean up failure",
						      name, ev->ids[i]);
	}
	if (!ctl_set_exists(set))
		return ctl_answer_set(ans, CTL_RSP_INVALID_CLEAN_BROKER_METADATA,
				      "Broker %s is not existed,clean broker data failure.", name);
	/* Java drops the whole set when isCleanLivingBroker, whatever ids were
	 * named; here the named ids are cleaned and the flag only skips the
	 * liveness checks */
	ans->has_event = true;
	ev->type = CTL_EV_CLEAN_BROKER_DATA;
	if ((rc = event_strdup(&ev->broker_name, name)))
		return rc;
	return ctl_answer_set(ans, 0, NULL);
}

/* ---- 1009 / 1010 controller config ---- */

static int handle_get_config(const struct ctl_env *env, struct ctl_answer *ans)
{
	int rc = env->config ? properties_format(env->config, &ans->body) : 0;

	ans->has_body = true;
	return rc ? rc : ctl_answer_set(ans, 0, NULL);
}

/* Keys naming files, the list itself, and the node's place in its group
 * (read once at start): never changed from the wire. */
static bool config_key_fixed(const char *key)
{
	static const char *const keys[] = { "rocketmqHome", "configBlackList", "kvConfigPath",
					    "controllerStorePath", "controllerDLegerGroup",
					    "controllerDLegerPeers", "controllerDLegerSelfId",
					    "listenPort", NULL };
	for (unsigned i = 0; keys[i]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

/* The first key of upd the node refuses, with the answer set; NULL when
 * every key may change. The whole update is refused: no key is half set. */
static const char *config_update_refused(const struct ctl_env *env, const struct properties *upd,
					 struct ctl_answer *ans, int *rc)
{
	const char *black_list = env->config ? properties_get(env->config, "configBlackList") : NULL;

	for (size_t i = 0; i < upd->count; i++) {
		const char *key = upd->items[i].key;
		if (strcmp(key, "configStorePath") == 0)
			*rc = ctl_answer_set(ans, RSP_NO_PERMISSION, "Can not update config path");
		else if (config_key_fixed(key) || properties_list_names(black_list, key))
			*rc = ctl_answer_set(ans, RSP_NO_PERMISSION,
					     "Can not update config in black list: %s", key);
		/* Java would store it and use it nowhere: say so instead */
		else if (!env->config || !properties_has(env->config, key))
			*rc = ctl_answer_set(ans, RSP_SYSTEM_ERROR, "unknown key: %s", key);
		else
			continue;
		return key;
	}
	return NULL;
}

static int handle_update_config(const struct ctl_env *env, const struct remoting_cmd *req,
				struct ctl_answer *ans)
{
	struct properties upd = PROPERTIES_INIT;
	int rc = 0;

	if (req->body && req->body_len)
		rc = properties_parse(&upd, (const char *)req->body, req->body_len, PROPERTIES_UTF8, NULL);
	if (rc == RMQNS_ENOMEM)
		goto out;
	if (rc) {
		rc = ctl_answer_set(ans, RSP_SYSTEM_ERROR, "string2Properties error");
		goto out;
	}
	if (config_update_refused(env, &upd, ans, &rc))
		goto out;
	for (size_t i = 0; i < upd.count; i++) {
		if ((rc = properties_set(env->config, upd.items[i].key, upd.items[i].value)))
			goto out;
		ans->config_changed = true;
	}
	rc = ctl_answer_set(ans, 0, NULL);
out:
	properties_free(&upd);
	return rc;
}

/* ---- dispatch ---- */

static bool needs_leader(int32_t code)
{
	switch (code) {
	case CTL_REQ_BROKER_HEARTBEAT:
	case CTL_REQ_GET_METADATA_INFO:
	case CTL_REQ_UPDATE_CONTROLLER_CONFIG:
	case CTL_REQ_GET_CONTROLLER_CONFIG:
		return false;
	default:
		return true;
	}
}

static bool known_code(int32_t code)
{
	switch (code) {
	case CTL_REQ_BROKER_HEARTBEAT:
	case CTL_REQ_ALTER_SYNC_STATE_SET:
	case CTL_REQ_ELECT_MASTER:
	case CTL_REQ_REGISTER_BROKER:
	case CTL_REQ_GET_REPLICA_INFO:
	case CTL_REQ_GET_METADATA_INFO:
	case CTL_REQ_GET_SYNC_STATE_DATA:
	case CTL_REQ_UPDATE_CONTROLLER_CONFIG:
	case CTL_REQ_GET_CONTROLLER_CONFIG:
	case CTL_REQ_CLEAN_BROKER_DATA:
	case CTL_REQ_GET_NEXT_BROKER_ID:
	case CTL_REQ_APPLY_BROKER_ID:
		return true;
	default:
		return false;
	}
}

int ctl_handle(const struct ctl_env *env, const struct remoting_cmd *req, struct ctl_answer *ans)
{
	int rc;

	memset(ans, 0, sizeof *ans);
	if (!known_code(req->code))
		rc = ctl_answer_set(ans, RSP_REQUEST_CODE_NOT_SUPPORTED, " request type %d not supported",
				    req->code);
	else if (needs_leader(req->code) && !env->serving)
		rc = ctl_answer_set(ans, CTL_RSP_NOT_LEADER, NOT_LEADER_REMARK);
	else {
		switch (req->code) {
		case CTL_REQ_BROKER_HEARTBEAT: rc = handle_heartbeat(env, req, ans); break;
		case CTL_REQ_ALTER_SYNC_STATE_SET: rc = handle_alter_sss(env, req, ans); break;
		case CTL_REQ_ELECT_MASTER: rc = handle_elect(env, req, ans); break;
		case CTL_REQ_REGISTER_BROKER: rc = handle_register(env, req, ans); break;
		case CTL_REQ_GET_REPLICA_INFO: rc = handle_replica_info(env, req, ans); break;
		case CTL_REQ_GET_METADATA_INFO: rc = handle_metadata(env, ans); break;
		case CTL_REQ_GET_SYNC_STATE_DATA: rc = handle_sync_state_data(env, req, ans); break;
		case CTL_REQ_UPDATE_CONTROLLER_CONFIG: rc = handle_update_config(env, req, ans); break;
		case CTL_REQ_GET_CONTROLLER_CONFIG: rc = handle_get_config(env, ans); break;
		case CTL_REQ_CLEAN_BROKER_DATA: rc = handle_clean(env, req, ans); break;
		case CTL_REQ_GET_NEXT_BROKER_ID: rc = handle_next_broker_id(env, req, ans); break;
		default: rc = handle_apply_broker_id(env, req, ans); break;
		}
	}
	if (remoting_is_oneway(req))
		ans->no_answer = true;
	/* an answer that is not a success commits nothing */
	if (ans->code != 0 && ans->code != CTL_RSP_MASTER_NOT_AVAILABLE && ans->has_event) {
		ctl_event_clear(&ans->event);
		ans->has_event = false;
	}
	if (ans->code != 0)
		ans->notify_role_change = false;
	return rc;
}
