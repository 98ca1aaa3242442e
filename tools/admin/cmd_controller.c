/* The controller subcommands, with mqadmin's names and options:
 * getControllerMetaData, getSyncStateSet, electMaster,
 * cleanBrokerMetadata, getControllerConfig, updateControllerConfig. They
 * talk to controller nodes (-a), not to NameServers. The state commands
 * ask a node for the metadata (1005) first and send the request to the
 * leader it names, as mqadmin does, so -a may name any node of the group;
 * the config commands talk to every listed node itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/json_tree.h"
#include "leader_view.h"
#include "ops.h"

/* Java prints a null String as "null"; so do the mqadmin-shaped lines. */
static const char *or_null(const char *s)
{
	return s ? s : "null";
}

/* The first listed node that answers 1005, into *m; *who is that node. */
static int meta_first(struct admin_ctx *ctx, struct leader_view *m, const struct target **who)
{
	char why[512];
	int ex = ADMIN_EXIT_UNREACHABLE;

	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < ctx->controllers.n; i++) {
		const struct target *t = &ctx->controllers.v[i];
		ex = leader_view_ask(t, ctx->timeout_ms, m);
		if (ex == ADMIN_EXIT_OK) {
			*who = t;
			return ex;
		}
		call_describe(&m->r, why, sizeof why);
		admin_error("%s: %s%s", t->name, why,
			    i + 1 < ctx->controllers.n ? "; trying the next controller" : "");
		leader_view_clear(m);
	}
	return ex;
}

/* The leader as a listed node names it, in *leader. */
static int find_leader(struct admin_ctx *ctx, struct target *leader)
{
	struct leader_view m;
	const struct target *who = NULL;
	struct target_list one;
	char err[256];

	int ex = meta_first(ctx, &m, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (!m.leader_addr) {
		admin_error("%s: the controller knows no leader (an election under way, or no quorum)",
			    who->name);
		ex = ADMIN_EXIT_REFUSED;
	} else if (target_list_parse(m.leader_addr, &one, err, sizeof err) < 0 || one.n != 1) {
		admin_error("%s: the leader's address \"%s\" does not parse", who->name, m.leader_addr);
		ex = ADMIN_EXIT_BAD_ANSWER;
	} else {
		*leader = one.v[0];
	}
	leader_view_clear(&m);
	return ex;
}

/* Finds the leader and sends req there; on code 0, r holds the answer. */
static int leader_call(struct admin_ctx *ctx, struct remoting_cmd *req, struct target *leader,
		       struct call_result *r)
{
	memset(r, 0, sizeof *r);
	int ex = find_leader(ctx, leader);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	target_call(leader, req, ctx->timeout_ms, r);
	if (call_ok(r))
		return ADMIN_EXIT_OK;
	ex = ops_fail(leader, r);
	call_result_clear(r);
	return ex;
}

/* ---- getControllerMetaData ---- */

int cmd_get_controller_metadata(struct admin_ctx *ctx)
{
	struct leader_view m;
	const struct target *who = NULL;

	int ex = meta_first(ctx, &m, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (ctx->json) {
		ex = ops_print_json(leader_view_json(who, &m));
	} else {
		printf("\n#ControllerGroup\t%s", or_null(m.group));
		printf("\n#ControllerLeaderId\t%s", or_null(m.leader_id));
		printf("\n#ControllerLeaderAddress\t%s", or_null(m.leader_addr));
		printf("\n#IsLeader\t%s", m.is_leader ? "true" : "false");
		for (const char *p = m.peers; p && *p;) {
			size_t len = strcspn(p, ";");
			if (len)
				printf("\n#Peer:\t%.*s", (int)len, p);
			p += len + (p[len] == ';');
		}
		printf("\n");
	}
	leader_view_clear(&m);
	return ex;
}

/* ---- getSyncStateSet ---- */

struct name_list {
	char **v;
	size_t n;
};

static void name_list_free(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int name_list_add(struct name_list *l, const char *s, size_t len)
{
	char **v = realloc(l->v, (l->n + 1) * sizeof *v);
	if (!v)
		return -1;
	l->v = v;
	if (!(v[l->n] = strndup(s, len)))
		return -1;
	l->n++;
	return 0;
}

/* -b "a,b": the names, blanks around them dropped. */
static int names_from_option(const char *spec, struct name_list *out)
{
	for (const char *p = spec; *p;) {
		size_t len = strcspn(p, ",");
		const char *b = p, *e = p + len;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > b && name_list_add(out, b, (size_t)(e - b)) < 0)
			return ADMIN_EXIT_BAD_ANSWER;
		p += len + (p[len] == ',');
	}
	if (out->n == 0) {
		admin_error("getSyncStateSet: no broker name in -b \"%s\"", spec);
		return ADMIN_EXIT_USAGE;
	}
	return ADMIN_EXIT_OK;
}

/* -c CLUSTER: its broker names, from the first NameServer that answers
 * GET_BROKER_CLUSTER_INFO (as mqadmin gets them). */
static int names_from_cluster(struct admin_ctx *ctx, const char *cluster, struct name_list *out)
{
	struct remoting_cmd req;
	const struct target *who;
	json_t *info, *name;
	size_t i;

	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
	int ex = ops_read_json(ctx, &req, &info, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	json_t *names = json_object_get(json_object_get(info, "clusterAddrTable"), cluster);
	json_array_foreach(names, i, name) {
		const char *s = json_string_value(name);
		if (s && name_list_add(out, s, strlen(s)) < 0) {
			ex = ADMIN_EXIT_BAD_ANSWER;
			break;
		}
	}
	if (ex == ADMIN_EXIT_OK && out->n == 0) {
		admin_error("%s: the NameServer knows no broker of cluster %s", who->name, cluster);
		ex = ADMIN_EXIT_REFUSED;
	}
	json_decref(info);
	return ex;
}

/* ReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='...', alive=true} */
static void print_replicas(const char *label, const json_t *replicas)
{
	size_t i;
	json_t *r;

	json_array_foreach(replicas, i, r) {
		printf("\n%s:\tReplicaIdentity{brokerName='%s', brokerId=%lld, brokerAddress='%s', alive=%s}\n",
		       label, ops_str(r, "brokerName"),
		       (long long)json_integer_value(json_object_get(r, "brokerId")),
		       ops_str(r, "brokerAddress"), json_is_true(json_object_get(r, "alive")) ? "true" : "false");
	}
}

static void print_sync_state(const char *name, const json_t *info)
{
	const json_t *master_id = json_object_get(info, "masterBrokerId");
	const json_t *in_sync = json_object_get(info, "inSyncReplicas");
	char id[32] = "null";

	if (json_is_integer(master_id))
		snprintf(id, sizeof id, "%lld", (long long)json_integer_value(master_id));
	printf("\n#brokerName\t%s\n#MasterBrokerId\t%s\n#MasterAddr\t%s\n#MasterEpoch\t%lld\n"
	       "#SyncStateSetEpoch\t%lld\n#SyncStateSetNums\t%zu\n",
	       name, id, or_null(json_string_value(json_object_get(info, "masterAddress"))),
	       (long long)json_integer_value(json_object_get(info, "masterEpoch")),
	       (long long)json_integer_value(json_object_get(info, "syncStateSetEpoch")),
	       json_array_size(in_sync));
	print_replicas("InSyncReplica", in_sync);
	print_replicas("NotInSyncReplica", json_object_get(info, "notInSyncReplicas"));
}

/* One set as JSON: the answer's members, named as Java names them. */
static json_t *sync_state_json(const char *name, json_t *info)
{
	json_t *o = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?}", "brokerName", name, "masterBrokerId",
			      json_object_get(info, "masterBrokerId"), "masterAddress",
			      json_object_get(info, "masterAddress"), "masterEpoch",
			      json_object_get(info, "masterEpoch"), "syncStateSetEpoch",
			      json_object_get(info, "syncStateSetEpoch"));
	json_t *in = json_object_get(info, "inSyncReplicas"), *out = json_object_get(info, "notInSyncReplicas");
	json_object_set_new(o, "inSyncReplicas", in ? json_incref(in) : json_array());
	json_object_set_new(o, "notInSyncReplicas", out ? json_incref(out) : json_array());
	return o;
}

static int sync_state_print(struct admin_ctx *ctx, const struct target *leader,
			    const struct name_list *names, json_t *answer)
{
	json_t *table = json_object_get(answer, "replicasInfoTable");
	json_t *sets = ctx->json ? json_array() : NULL, *unknown = ctx->json ? json_array() : NULL;
	size_t found = 0;

	/* in the order asked; the controller leaves out names it does not know */
	for (size_t i = 0; i < names->n; i++) {
		json_t *info = json_object_get(table, names->v[i]);
		if (!json_is_object(info)) {
			admin_error("%s: no broker set %s in the controller", leader->name, names->v[i]);
			if (unknown)
				json_array_append_new(unknown, json_string(names->v[i]));
			continue;
		}
		found++;
		if (sets)
			json_array_append_new(sets, sync_state_json(names->v[i], info));
		else
			print_sync_state(names->v[i], info);
	}
	int ex = found ? ADMIN_EXIT_OK : ADMIN_EXIT_REFUSED;
	if (sets && found)
		ex = ops_print_json(json_pack("{s:s, s:o, s:o}", "controller", leader->name, "brokers", sets,
					      "unknown", unknown));
	else {
		json_decref(sets);
		json_decref(unknown);
	}
	return ex;
}

int cmd_get_sync_state_set(struct admin_ctx *ctx)
{
	struct name_list names = { 0 };
	struct remoting_cmd req;
	struct call_result r;
	struct target leader;
	int ex;

	if (!ctx->a.broker == !ctx->a.cluster) {
		admin_error("getSyncStateSet needs -b BROKERNAME[,BROKERNAME...] or -c CLUSTER (one of them)");
		return ADMIN_EXIT_USAGE;
	}
	ex = ctx->a.broker ? names_from_option(ctx->a.broker, &names)
			   : names_from_cluster(ctx, ctx->a.cluster, &names);
	if (ex != ADMIN_EXIT_OK) {
		name_list_free(&names);
		return ex;
	}
	/* the body: a JSON array of the names */
	json_t *arr = json_array();
	for (size_t i = 0; i < names.n; i++)
		json_array_append_new(arr, json_string(names.v[i]));
	char *body = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	if (!body) {
		name_list_free(&names);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	target_request_init(&req, CTL_REQ_GET_SYNC_STATE_DATA);
	req.body = (uint8_t *)body;
	req.body_len = (uint32_t)strlen(body);
	ex = leader_call(ctx, &req, &leader, &r);
	if (ex == ADMIN_EXIT_OK) {
		json_t *answer = ops_body_json(&leader, &r);
		ex = answer ? sync_state_print(ctx, &leader, &names, answer) : ADMIN_EXIT_BAD_ANSWER;
		json_decref(answer);
		call_result_clear(&r);
	}
	free(body);
	name_list_free(&names);
	return ex;
}

/* ---- electMaster ---- */

static bool parse_id(const char *s, long long *out)
{
	char *end;
	if (!*s)
		return false;
	*out = strtoll(s, &end, 10);
	return *end == '\0';
}

/* An ext value as a JSON number; null when absent or not a number. */
static json_t *ext_number(const char *s)
{
	long long v;
	return s && parse_id(s, &v) ? json_integer((json_int_t)v) : json_null();
}

int cmd_elect_master(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	struct call_result r;
	struct target leader;
	long long id;

	if (!parse_id(ctx->a.broker_ids, &id)) {
		admin_error("electMaster: -b wants a broker id (a number), not \"%s\"", ctx->a.broker_ids);
		return ADMIN_EXIT_USAGE;
	}
	target_request_init(&req, CTL_REQ_ELECT_MASTER);
	ops_set_ext(&req, &ext, "clusterName", ctx->a.cluster, "brokerName", ctx->a.broker, "brokerId",
		    ctx->a.broker_ids, "designateElect", "true", NULL);
	int ex = leader_call(ctx, &req, &leader, &r);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	const struct remoting_cmd *c = &r.reply->cmd;
	const char *master_id = remoting_ext_get(c, "masterBrokerId");
	const char *master_addr = remoting_ext_get(c, "masterAddress");
	const char *master_epoch = remoting_ext_get(c, "masterEpoch");
	const char *sss_epoch = remoting_ext_get(c, "syncStateSetEpoch");
	int err = 0;
	json_t *body = c->body_len ? json_body_parse(c->body, c->body_len, &err) : NULL;
	json_t *addrs = json_object_get(json_object_get(body, "brokerMemberGroup"), "brokerAddrs");
	if (ctx->json) {
		json_t *sss = json_object_get(body, "syncStateSet");
		ex = ops_print_json(json_pack(
			"{s:s, s:s, s:s, s:o, s:s?, s:o, s:o, s:o, s:o}", "controller", leader.name,
			"clusterName", ctx->a.cluster, "brokerName", ctx->a.broker, "masterBrokerId",
			ext_number(master_id), "masterAddress", master_addr, "masterEpoch",
			ext_number(master_epoch), "syncStateSetEpoch", ext_number(sss_epoch), "brokerAddrs",
			json_is_object(addrs) ? json_incref(addrs) : json_object(), "syncStateSet",
			json_is_array(sss) ? json_incref(sss) : json_array()));
	} else {
		printf("\n#ClusterName\t%s", ctx->a.cluster);
		printf("\n#BrokerName\t%s", ctx->a.broker);
		printf("\n#BrokerMasterAddr\t%s", or_null(master_addr));
		printf("\n#MasterEpoch\t%s", or_null(master_epoch));
		printf("\n#SyncStateSetEpoch\t%s\n", or_null(sss_epoch));
		const char *k;
		json_t *v;
		json_object_foreach(addrs, k, v)
			printf("\t#Broker\t%s\t%s\n", k, or_null(json_string_value(v)));
	}
	json_decref(body);
	call_result_clear(&r);
	return ex;
}

/* ---- cleanBrokerMetadata ---- */

int cmd_clean_broker_metadata(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	struct call_result r;
	struct target leader;
	const char *ids = ctx->a.broker_ids;

	/* as mqadmin: ids as "1;2;3", and a cluster unless every living
	 * broker may go too */
	for (const char *p = ids; p && *p;) {
		size_t len = strcspn(p, ";");
		char one[32];
		long long id;
		snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
		if (len >= sizeof one || !parse_id(one, &id)) {
			admin_error("cleanBrokerMetadata: -b wants broker ids as 1;2;3, not \"%s\"", ids);
			return ADMIN_EXIT_USAGE;
		}
		p += len + (p[len] == ';');
	}
	if (!ctx->a.clean_living && !ctx->a.cluster) {
		admin_error("cleanBrokerMetadata needs -c CLUSTER unless -l (clean living brokers) is given");
		return ADMIN_EXIT_USAGE;
	}
	target_request_init(&req, CTL_REQ_CLEAN_BROKER_DATA);
	ops_ext_add(&req, &ext, "clusterName", ctx->a.cluster);
	ops_ext_add(&req, &ext, "brokerName", ctx->a.broker);
	ops_ext_add(&req, &ext, "brokerControllerIdsToClean", ids);
	ops_ext_add(&req, &ext, "isCleanLivingBroker", ctx->a.clean_living ? "true" : "false");
	int ex = leader_call(ctx, &req, &leader, &r);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	call_result_clear(&r);
	if (ctx->json)
		return ops_print_json(json_pack("{s:b, s:s, s:s, s:s?, s:s?, s:b}", "ok", 1, "controller",
						leader.name, "brokerName", ctx->a.broker, "clusterName",
						ctx->a.cluster, "brokerControllerIdsToClean", ids,
						"cleanLivingBroker", ctx->a.clean_living));
	printf("clear broker %s metadata from controller success! \n", ctx->a.broker);
	return ADMIN_EXIT_OK;
}

/* ---- getControllerConfig, updateControllerConfig ---- */

/* Every listed node's options (each node has its own). Exit 0 when all
 * answered, else the first failure's code (the others still printed). */
int cmd_get_controller_config(struct admin_ctx *ctx)
{
	json_t *results = ctx->json ? json_array() : NULL;
	int ex = ADMIN_EXIT_OK;
	char why[512];

	for (size_t i = 0; i < ctx->controllers.n; i++) {
		const struct target *t = &ctx->controllers.v[i];
		struct remoting_cmd req;
		struct call_result r;

		target_request_init(&req, CTL_REQ_GET_CONTROLLER_CONFIG);
		target_call(t, &req, ctx->timeout_ms, &r);
		if (call_ok(&r)) {
			json_t *cfg = results ? json_object() : NULL;
			admin_config_print(t, &r.reply->cmd, cfg);
			if (results)
				json_array_append_new(results, json_pack("{s:s, s:b, s:o}", "server", t->name,
									 "ok", 1, "config", cfg));
		} else {
			int fail = ops_fail(t, &r);
			if (ex == ADMIN_EXIT_OK)
				ex = fail;
			call_describe(&r, why, sizeof why);
			if (results)
				json_array_append_new(results, json_pack("{s:s, s:b, s:s}", "server", t->name,
									 "ok", 0, "error", why));
		}
		call_result_clear(&r);
	}
	if (results) {
		json_t *top = json_pack("{s:o}", "results", results);
		if (ex != ADMIN_EXIT_OK)
			json_object_set_new(top, "exit", json_integer(ex));
		ops_print_json(top);
	}
	return ex;
}

int cmd_update_controller_config(struct admin_ctx *ctx)
{
	return admin_update_config(ctx, &ctx->controllers, CTL_REQ_UPDATE_CONTROLLER_CONFIG,
				   "updateControllerConfig");
}

/* ---- exportControllerState ---- */

/* One set as the import reads it (docs/controller.md, "Importing"): ids,
 * addresses, master, epochs, sync-state set, and the next id to hand out. */
static json_t *export_set(const char *cluster, const char *name, json_t *info, json_int_t next_id)
{
	json_t *replicas = json_array(), *sss = json_array(), *r;
	const char *lists[] = { "inSyncReplicas", "notInSyncReplicas" };
	size_t i;

	for (int l = 0; l < 2; l++)
		json_array_foreach(json_object_get(info, lists[l]), i, r) {
			json_t *id = json_object_get(r, "brokerId");
			json_array_append_new(replicas, json_pack("{s:O, s:s}", "brokerId", id, "brokerAddress",
								  ops_str(r, "brokerAddress")));
			if (l == 0)
				json_array_append(sss, id);
		}
	json_t *master = json_object_get(info, "masterBrokerId");
	return json_pack("{s:s, s:s, s:I, s:o, s:O, s:O, s:o, s:o}", "clusterName", cluster,
			 "brokerName", name, "nextBrokerId", next_id, "masterBrokerId",
			 json_is_integer(master) ? json_incref(master) : json_null(), "masterEpoch",
			 json_object_get(info, "masterEpoch"), "syncStateSetEpoch",
			 json_object_get(info, "syncStateSetEpoch"), "syncStateSet", sss, "replicas",
			 replicas);
}

/* The set's next id (1012) from the leader; 0 when it does not answer. */
static json_int_t export_next_id(struct admin_ctx *ctx, const struct target *leader,
				 const char *cluster, const char *name)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	struct call_result r;
	json_int_t next = 0;

	memset(&r, 0, sizeof r);
	target_request_init(&req, CTL_REQ_GET_NEXT_BROKER_ID);
	ops_set_ext(&req, &ext, "clusterName", cluster, "brokerName", name, NULL);
	target_call(leader, &req, ctx->timeout_ms, &r);
	const char *v = call_ok(&r) ? remoting_ext_get(&r.reply->cmd, "nextBrokerId") : NULL;
	if (v)
		next = strtoll(v, NULL, 10);
	call_result_clear(&r);
	return next;
}

int cmd_export_controller_state(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	const struct target *who;
	struct call_result r;
	struct target leader;
	json_t *info, *v;
	const char *name;

	if (!ctx->a.output) {
		admin_error("exportControllerState needs -o FILE");
		return ADMIN_EXIT_USAGE;
	}
	/* every broker set the NameServer lists, with its cluster */
	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
	int ex = ops_read_json(ctx, &req, &info, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	json_t *table = json_object_get(info, "brokerAddrTable"), *names = json_array();
	json_object_foreach(table, name, v)
		json_array_append_new(names, json_string(name));
	char *body = json_dumps(names, JSON_COMPACT);
	json_decref(names);
	target_request_init(&req, CTL_REQ_GET_SYNC_STATE_DATA);
	req.body = (uint8_t *)body;
	req.body_len = body ? (uint32_t)strlen(body) : 0;
	ex = body ? leader_call(ctx, &req, &leader, &r) : ADMIN_EXIT_BAD_ANSWER;
	free(body);
	if (ex != ADMIN_EXIT_OK) {
		json_decref(info);
		return ex;
	}
	json_t *answer = ops_body_json(&leader, &r);
	call_result_clear(&r);
	json_t *sets = json_array();
	json_object_foreach(json_object_get(answer, "replicasInfoTable"), name, v) {
		const char *cluster = ops_str(json_object_get(table, name), "cluster");
		json_array_append_new(sets, export_set(cluster, name, v,
						       export_next_id(ctx, &leader, cluster, name)));
	}
	json_t *doc = json_pack("{s:s, s:i, s:s, s:o}", "format", "rmqns-controller-state", "version", 1,
				"controller", leader.name, "brokerSets", sets);
	if (!answer || !doc || json_dump_file(doc, ctx->a.output, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
		admin_error("%s: cannot write the controller state", ctx->a.output);
		ex = ADMIN_EXIT_BAD_ANSWER;
	} else {
		fprintf(stderr, "%zu broker sets of %s written to %s\n", json_array_size(sets),
			leader.name, ctx->a.output);
	}
	json_decref(doc);
	json_decref(answer);
	json_decref(info);
	return ex;
}
