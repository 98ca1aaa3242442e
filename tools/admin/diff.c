/* clusterDiff: what each listed NameServer believes, compared. Every node
 * is read on its own thread and connection (cluster info, the topic list,
 * then every topic's route, pipelined); each node's view becomes two
 * sorted lists of (name, state text), which are merged to find a broker
 * or topic that a node lacks or sees differently. NameServers never talk
 * to each other, so a node that drifted is invisible otherwise. With -a,
 * the controller nodes too: who each says leads (1005). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "clusterinfo.h"
#include "leader_view.h"
#include "ops.h"
#include "routes.h"

struct diff_entry {
	const char *key; /* points into the node's parsed bodies */
	char *state;     /* owned */
};

struct diff_node {
	const struct target *t;
	int timeout_ms;
	struct diff_entry *brokers, *topics;
	size_t nbrokers, ntopics;
	json_t *topic_list;
	struct broker_rows rows;
	/* failure */
	bool failed;
	int exit_code;
	char why[600];
};

static int entry_key_cmp(const void *a, const void *b)
{
	return strcmp(((const struct diff_entry *)a)->key, ((const struct diff_entry *)b)->key);
}

static void node_fail(struct diff_node *n, const char *what, const struct call_result *r)
{
	char why[512];

	call_describe(r, why, sizeof why);
	n->failed = true;
	n->exit_code = admin_exit_for(r);
	if (n->exit_code == ADMIN_EXIT_OK)
		n->exit_code = ADMIN_EXIT_BAD_ANSWER;
	snprintf(n->why, sizeof n->why, "%s: %s", what, why);
}

static char *buf_take_string(struct buf *b)
{
	if (buf_terminate(b) < 0) {
		buf_free(b);
		return NULL;
	}
	char *s = (char *)b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return s ? s : strdup("");
}

/* A broker group's state: its cluster and its id=address pairs. */
static int node_brokers(struct diff_node *n)
{
	struct diff_entry *v = calloc(n->rows.n + 1, sizeof *v);
	size_t k = 0;

	if (!v)
		return -1;
	n->brokers = v;
	for (size_t i = 0; i < n->rows.n;) {
		const struct broker_row *g = &n->rows.v[i];
		struct buf b = BUF_INIT;
		int rc = buf_printf(&b, "cluster %s:", g->cluster);
		size_t j = i;
		for (; j < n->rows.n && strcmp(n->rows.v[j].name, g->name) == 0 &&
		       strcmp(n->rows.v[j].cluster, g->cluster) == 0; j++)
			rc |= buf_printf(&b, " %lld=%s", (long long)n->rows.v[j].id, n->rows.v[j].addr);
		v[k].key = g->name;
		v[k].state = rc < 0 ? NULL : buf_take_string(&b);
		buf_free(&b);
		if (!v[k].state)
			return -1;
		k++;
		i = j;
	}
	n->nbrokers = k;
	qsort(v, k, sizeof *v, entry_key_cmp);
	return 0;
}

struct queue_summary {
	const char *broker;
	long long r, w, perm, sys;
};

static int queue_cmp(const void *a, const void *b)
{
	return strcmp(((const struct queue_summary *)a)->broker, ((const struct queue_summary *)b)->broker);
}

/* A topic's state: its queue entries by broker name. Broker addresses are
 * compared once, with the brokers. */
static char *route_state(const struct remoting_cmd *answer)
{
	struct buf b = BUF_INIT;
	int err = 0, rc = 0;

	if (answer->code == 17)
		return strdup("(no route)");
	if (answer->code != 0) {
		rc = buf_printf(&b, "(code %d%s%s)", answer->code, answer->remark ? ": " : "",
				answer->remark ? answer->remark : "");
		return rc < 0 ? (buf_free(&b), NULL) : buf_take_string(&b);
	}
	json_t *route = answer->body ? json_body_parse(answer->body, answer->body_len, &err) : NULL;
	json_t *qds = json_object_get(route, "queueDatas");
	size_t nq = json_array_size(qds), i;
	struct queue_summary small[16];
	struct queue_summary *q = nq <= 16 ? small : calloc(nq, sizeof *q);
	json_t *qd;

	if (!route || !q) {
		json_decref(route);
		return strdup("(unreadable route)");
	}
	json_array_foreach(qds, i, qd) {
		q[i].broker = ops_str(qd, "brokerName");
		q[i].r = json_integer_value(json_object_get(qd, "readQueueNums"));
		q[i].w = json_integer_value(json_object_get(qd, "writeQueueNums"));
		q[i].perm = json_integer_value(json_object_get(qd, "perm"));
		q[i].sys = json_integer_value(json_object_get(qd, "topicSysFlag"));
	}
	qsort(q, nq, sizeof *q, queue_cmp);
	for (i = 0; i < nq && rc == 0; i++) {
		rc = buf_printf(&b, "%s%s r%lld w%lld perm%lld", i ? "; " : "", q[i].broker, q[i].r, q[i].w,
				q[i].perm);
		if (rc == 0 && q[i].sys)
			rc = buf_printf(&b, " sys%lld", q[i].sys);
	}
	if (q != small)
		free(q);
	json_decref(route);
	if (rc < 0) {
		buf_free(&b);
		return NULL;
	}
	return nq ? buf_take_string(&b) : strdup("(no queues)");
}

static int node_on_route(void *arg, size_t index, const struct remoting_cmd *answer)
{
	struct diff_node *n = arg;
	n->topics[index].state = route_state(answer);
	return 0;
}

static void *node_read(void *arg)
{
	struct diff_node *n = arg;
	struct remoting_cmd req;
	struct call_result r;
	const char **names = NULL;
	json_t *info = NULL;
	struct client *c = target_connect(n->t, n->timeout_ms, &r);

	if (!c) {
		node_fail(n, "connect", &r);
		return NULL;
	}
	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
	target_call_on(c, &req, n->timeout_ms, &r);
	if (!call_ok(&r) || !(info = ops_body_json(n->t, &r)))
		node_fail(n, "cluster info", &r);
	call_result_clear(&r);
	if (n->failed)
		goto out;
	if (broker_rows_build(info, &n->rows) < 0 || node_brokers(n) < 0) {
		n->failed = true;
		n->exit_code = ADMIN_EXIT_BAD_ANSWER;
		snprintf(n->why, sizeof n->why, "cluster info: unreadable, or out of memory");
		goto out;
	}

	target_request_init(&req, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
	target_call_on(c, &req, n->timeout_ms, &r);
	if (!call_ok(&r) || !(n->topic_list = ops_body_json(n->t, &r)))
		node_fail(n, "topic list", &r);
	call_result_clear(&r);
	if (n->failed)
		goto out;
	json_t *arr = json_object_get(n->topic_list, "topicList");
	size_t total = json_array_size(arr), i;
	json_t *s;
	names = calloc(total + 1, sizeof *names);
	n->topics = calloc(total + 1, sizeof *n->topics);
	if (!names || !n->topics) {
		n->failed = true;
		n->exit_code = ADMIN_EXIT_BAD_ANSWER;
		snprintf(n->why, sizeof n->why, "out of memory");
		goto out;
	}
	json_array_foreach(arr, i, s) {
		if (json_string_value(s))
			names[n->ntopics++] = json_string_value(s);
	}
	qsort(names, n->ntopics, sizeof *names, ops_str_ptr_cmp);
	for (i = 0; i < n->ntopics; i++)
		n->topics[i].key = names[i];
	if (routes_fetch(c, names, n->ntopics, n->timeout_ms, node_on_route, n, &r) < 0) {
		node_fail(n, "routes", &r);
		goto out;
	}
	for (i = 0; i < n->ntopics; i++) {
		if (!n->topics[i].state) {
			n->failed = true;
			n->exit_code = ADMIN_EXIT_BAD_ANSWER;
			snprintf(n->why, sizeof n->why, "routes: out of memory");
			break;
		}
	}
out:
	free(names);
	client_close(c);
	return NULL;
}

static void node_free(struct diff_node *n)
{
	for (size_t i = 0; i < n->nbrokers; i++)
		free(n->brokers[i].state);
	for (size_t i = 0; i < n->ntopics; i++)
		free(n->topics[i].state);
	free(n->brokers);
	free(n->topics);
	json_decref(n->topic_list);
	broker_rows_free(&n->rows);
}

struct diff_report {
	struct admin_ctx *ctx;
	json_t *differences; /* --json */
	size_t compared, differ;
};

/* Merges the nodes' sorted lists (brokers or topics) and reports every
 * name whose state is not the same everywhere. */
static void diff_merge(struct diff_report *rep, struct diff_node *nodes, size_t nn, const char *kind,
		       bool topics)
{
	size_t pos[TARGET_MAX] = { 0 };
	const char *state[TARGET_MAX];

	for (;;) {
		const char *key = NULL;
		for (size_t i = 0; i < nn; i++) {
			size_t len = topics ? nodes[i].ntopics : nodes[i].nbrokers;
			struct diff_entry *v = topics ? nodes[i].topics : nodes[i].brokers;
			if (pos[i] < len && (!key || strcmp(v[pos[i]].key, key) < 0))
				key = v[pos[i]].key;
		}
		if (!key)
			break;
		bool same = true;
		for (size_t i = 0; i < nn; i++) {
			size_t len = topics ? nodes[i].ntopics : nodes[i].nbrokers;
			struct diff_entry *v = topics ? nodes[i].topics : nodes[i].brokers;
			state[i] = NULL;
			if (pos[i] < len && strcmp(v[pos[i]].key, key) == 0)
				state[i] = v[pos[i]].state;
			if (!state[i] || (i > 0 && (!state[0] || strcmp(state[i], state[0]) != 0)))
				same = false;
		}
		rep->compared++;
		if (!same) {
			rep->differ++;
			if (rep->differences) {
				json_t *states = json_object();
				for (size_t i = 0; i < nn; i++)
					json_object_set_new(states, nodes[i].t->name,
							    state[i] ? json_string(state[i]) : json_null());
				json_array_append_new(rep->differences, json_pack("{s:s, s:s, s:o}", "kind", kind,
										   "name", key, "states", states));
			} else {
				printf("%s %s:\n", kind, key);
				for (size_t i = 0; i < nn; i++)
					printf("  %-24s %s\n", nodes[i].t->name, state[i] ? state[i] : "(missing)");
			}
		}
		for (size_t i = 0; i < nn; i++)
			if (state[i])
				pos[i]++;
	}
}

static int diff_namesrvs(struct admin_ctx *ctx, json_t *top);

/* ---- controllers ---- */

/* What one controller node says leads: "n0 at host:port", or "(no leader)". */
static void leader_text(const struct leader_view *m, char *out, size_t n)
{
	if (m->leader_id || m->leader_addr)
		snprintf(out, n, "%s at %s", m->leader_id ? m->leader_id : "?",
			 m->leader_addr ? m->leader_addr : "?");
	else
		snprintf(out, n, "(no leader)");
}

/* Asks every controller node who leads. The nodes of one group agree
 * when they all name the same leader and at most one of them says it
 * leads; two independent groups, or a node cut off from its group, show
 * up as different leaders. *agree gets the verdict; with --json the
 * object goes into top under "controllers". */
static int diff_controllers(struct admin_ctx *ctx, json_t *top, bool *agree)
{
	size_t nn = ctx->controllers.n, leading = 0;
	struct leader_view *m = calloc(nn, sizeof *m);
	char (*text)[600] = calloc(nn, sizeof *text);
	char why[512];
	int ex = ADMIN_EXIT_OK;

	*agree = true;
	if (!m || !text) {
		free(m);
		free(text);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	for (size_t i = 0; i < nn; i++) {
		const struct target *t = &ctx->controllers.v[i];
		int e = leader_view_ask(t, ctx->timeout_ms, &m[i]);
		if (e != ADMIN_EXIT_OK) {
			call_describe(&m[i].r, why, sizeof why);
			admin_error("%s: controller metadata: %s", t->name, why);
			if (ex == ADMIN_EXIT_OK)
				ex = e;
			continue;
		}
		leader_text(&m[i], text[i], sizeof text[i]);
		if (m[i].is_leader)
			leading++;
		if (strcmp(text[i], text[0]) != 0)
			*agree = false;
	}
	if (leading > 1)
		*agree = false;
	if (ex == ADMIN_EXIT_OK && top) {
		json_t *arr = json_array();
		for (size_t i = 0; i < nn; i++)
			json_array_append_new(arr, leader_view_json(&ctx->controllers.v[i], &m[i]));
		json_object_set_new(top, "controllers",
				    json_pack("{s:b, s:b, s:o}", "agree", *agree, "termCompared", 0,
					      "nodes", arr));
	} else if (ex == ADMIN_EXIT_OK) {
		if (!*agree) {
			printf("controller leader:\n");
			for (size_t i = 0; i < nn; i++)
				printf("  %-24s %s%s\n", ctx->controllers.v[i].name, text[i],
				       m[i].is_leader ? " (this node says it leads)" : "");
		}
		printf("%zu controllers compared (the leader only: no answer carries the Raft term): %s%s\n",
		       nn, *agree ? "they agree, leader " : "the controllers DISAGREE on the leader",
		       *agree ? text[0] : "");
	}
	for (size_t i = 0; i < nn; i++)
		leader_view_clear(&m[i]);
	free(m);
	free(text);
	return ex;
}

int cmd_cluster_diff(struct admin_ctx *ctx)
{
	/* -a alone compares the controllers only */
	bool with_namesrv = ctx->namesrv_given || ctx->controllers.n == 0;
	json_t *top = ctx->json ? json_object() : NULL;
	bool ctl_agree = true;

	if (top) /* first in the document; set at the end */
		json_object_set_new(top, "agree", json_false());

	if (with_namesrv && ctx->targets.n < 2) {
		json_decref(top);
		admin_error("clusterDiff needs at least two NameServers (-n \"a:port;b:port\")");
		return ADMIN_EXIT_USAGE;
	}
	int ex = ctx->controllers.n ? diff_controllers(ctx, top, &ctl_agree) : ADMIN_EXIT_OK;
	if (ex == ADMIN_EXIT_OK && with_namesrv)
		ex = diff_namesrvs(ctx, top);
	if (ex == ADMIN_EXIT_OK && !ctl_agree)
		ex = ADMIN_EXIT_DIFF;
	if (top && ex != ADMIN_EXIT_OK && ex != ADMIN_EXIT_DIFF) {
		json_decref(top);
	} else if (top) {
		json_object_set_new(top, "agree", json_boolean(ex == ADMIN_EXIT_OK));
		ops_print_json(top);
	}
	return ex;
}

/* The NameServers of -n, compared; with --json the members go into top. */
static int diff_namesrvs(struct admin_ctx *ctx, json_t *top)
{
	size_t nn = ctx->targets.n;
	struct diff_node nodes[TARGET_MAX];
	pthread_t threads[TARGET_MAX];
	bool started[TARGET_MAX] = { false };
	int ex = ADMIN_EXIT_OK;

	memset(nodes, 0, sizeof nodes);
	for (size_t i = 0; i < nn; i++) {
		nodes[i].t = &ctx->targets.v[i];
		nodes[i].timeout_ms = ctx->timeout_ms;
		started[i] = pthread_create(&threads[i], NULL, node_read, &nodes[i]) == 0;
		if (!started[i])
			node_read(&nodes[i]);
	}
	for (size_t i = 0; i < nn; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		if (nodes[i].failed) {
			admin_error("%s: %s", nodes[i].t->name, nodes[i].why);
			if (ex == ADMIN_EXIT_OK)
				ex = nodes[i].exit_code;
		}
	}
	if (ex == ADMIN_EXIT_OK) {
		struct diff_report brokers = { .ctx = ctx }, topics = { .ctx = ctx };
		json_t *diffs = top ? json_array() : NULL;
		brokers.differences = topics.differences = diffs;
		diff_merge(&brokers, nodes, nn, "broker", false);
		diff_merge(&topics, nodes, nn, "topic", true);
		bool agree = brokers.differ == 0 && topics.differ == 0;
		if (diffs) {
			json_t *servers = json_array();
			for (size_t i = 0; i < nn; i++)
				json_array_append_new(servers, json_string(nodes[i].t->name));
			json_object_set_new(top, "servers", servers);
			json_object_set_new(top, "brokersCompared", json_integer((json_int_t)brokers.compared));
			json_object_set_new(top, "brokersDiffer", json_integer((json_int_t)brokers.differ));
			json_object_set_new(top, "topicsCompared", json_integer((json_int_t)topics.compared));
			json_object_set_new(top, "topicsDiffer", json_integer((json_int_t)topics.differ));
			json_object_set_new(top, "differences", diffs);
		} else {
			printf("%zu brokers compared, %zu differ; %zu topics compared, %zu differ: %s\n",
			       brokers.compared, brokers.differ, topics.compared, topics.differ,
			       agree ? "the NameServers agree" : "the NameServers DISAGREE");
		}
		ex = agree ? ADMIN_EXIT_OK : ADMIN_EXIT_DIFF;
	}
	for (size_t i = 0; i < nn; i++)
		node_free(&nodes[i]);
	return ex;
}
