/* A controller node: one thread with its own libuv loop running a member of
 * the Raft group (libraft: TCP transport, on-disk log and snapshots), the
 * FSM that applies committed events to the node's ctl_state, and the one
 * queue of work that touches that state: requests, connection closes,
 * elections the node starts itself. Like Java's event thread, work is
 * done strictly in order and a write is answered only once its event is
 * committed and applied. Other threads talk to it through the inbox. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "ctl_node.h"
#include "ctl_node_publish.h"
#include "ctl_node_setup.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/remoting.h"

#define TICK_MS 20
#define FIRST_EXPIRY_SCAN_MS 2000

static void queue_init(struct job_queue *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static void queue_push(struct job_queue *q, struct job *j)
{
	j->next = NULL;
	*q->tail = j;
	q->tail = &j->next;
}

static struct job *queue_pop(struct job_queue *q)
{
	struct job *j = q->head;
	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = &q->head;
	}
	return j;
}

static void job_free(struct job *j)
{
	if (j->decoded)
		remoting_cmd_release(&j->req);
	ctl_answer_clear(&j->ans);
	free(j->frame);
	free(j->broker_name);
	free(j);
}

/* Hands a job its end: the answer (or none) to its requester, a waiting
 * inspector released. */
static void job_finish(struct ctl_node *n, struct job *j, bool answer)
{
	if (j->kind == JOB_REQUEST && answer && j->decoded)
		metrics_controller_request(j->req.code, j->ans.code, j->recv_ns);
	if (j->kind == JOB_REQUEST && j->reply) {
		buf_reset(&n->out);
		if (answer && !j->ans.no_answer && j->decoded &&
		    ctl_answer_encode(&j->ans, &j->req, &n->out) == 0)
			j->reply(j->reply_arg, n->out.data, n->out.len);
		else
			j->reply(j->reply_arg, NULL, 0);
	}
	if (j->kind == JOB_INSPECT) {
		pthread_mutex_lock(&n->lock);
		*j->done = true;
		pthread_cond_broadcast(&n->cond);
		pthread_mutex_unlock(&n->lock);
	}
	job_free(j);
}

static void pump(struct ctl_node *n);

static struct ctl_env node_env(struct ctl_node *n, struct ctl_meta *meta, uint64_t conn)
{
	int leader = ctl_node_leader_index(n);

	*meta = (struct ctl_meta){
		.group = n->group,
		.leader_id = leader >= 0 ? n->peers[leader].id : NULL,
		.leader_address = leader >= 0 ? n->peers[leader].address : NULL,
		.is_leader = raft_state(&n->raft) == RAFT_LEADER,
		.peers = n->peers_desc,
	};
	return (struct ctl_env){ &n->state, &n->live, &n->options, meta, ctl_node_now_ms(), ctl_node_serving(n), conn };
}

static void notify_brokers(struct ctl_node *n, const char *broker_name)
{
	const struct ctl_set *set = ctl_state_find(&n->state, broker_name);

	if (!n->notify || !ctl_set_exists(set) || !set->has_master ||
	    !ctl_config_flag(&n->options, "notifyBrokerRoleChanged", true))
		return;
	buf_reset(&n->out);
	if (ctl_notify_encode(set, n->next_opaque++, &n->out) != 0) {
		log_warn_limited("controller: role change of %s not encoded", broker_name);
		return;
	}
	for (uint32_t i = 0; i < set->replica_count; i++) {
		const struct ctl_replica *r = &set->replicas[i];
		if (ctl_live_alive(&n->live, set->cluster, set->name, r->id, ctl_node_now_ms()))
			n->notify(n->notify_arg, r->address, n->out.data, n->out.len);
	}
}

/* An election's outcome, committed or refused: counted, and a line. */
static void election_done(struct ctl_node *n, const struct ctl_answer *ans, const char *asked)
{
	const struct ctl_event *ev = &ans->event;

	if (ans->has_event && ev->elected) {
		const struct ctl_set *set = ctl_state_find(&n->state, ev->broker_name);
		const struct ctl_replica *m = set ? ctl_set_replica(set, ev->broker_id) : NULL;
		n->elections_won++;
		log_info_limited("controller: %s elected broker %" PRId64 " (%s) master, epoch %d",
			 ev->broker_name, ev->broker_id, m ? m->address : "?",
			 set ? set->master_epoch : -1);
		return;
	}
	n->elections_failed++;
	log_info_limited("controller: election in %s found no master: %d %s",
		 ans->has_event ? ev->broker_name : asked ? asked : "a broker set", ans->code,
		 ans->remark ? ans->remark : "");
}

static bool commit_event(struct ctl_node *n, struct job *j);

/* A replica (and maybe its set) adopted: a line each, counted. Brokers
 * cause these, so the lines are limited. */
static void adoption_done(struct ctl_node *n, const struct ctl_event *ev, bool new_set)
{
	static struct log_limit limit = LOG_LIMIT_INIT(LOG_LIMIT_LINES, LOG_LIMIT_WINDOW_MS);

	if (ev->type != CTL_EV_ADOPT_REPLICA)
		return;
	if (new_set) {
		n->adopted_sets++;
		log_write_limited(&limit, LOG_INFO,
				  "controller: adopted broker set %s/%s, unknown to the store, from its brokers",
				  ev->cluster, ev->broker_name);
	}
	n->adopted_brokers++;
	log_write_limited(&limit, LOG_INFO,
			  "controller: adopted broker %s/%s id %" PRId64 " at %s, unknown to the store",
			  ev->cluster, ev->broker_name, ev->broker_id, ev->address);
}

static void on_applied(struct raft_apply *req, int status, void *result)
{
	struct job *j = req->data;
	struct ctl_node *n = j->node;

	(void)result;
	n->inflight = NULL;
	if (status == 0 && j->pre_done < j->ans.pre_count) {
		/* one of the events before the answer's own: on to the next */
		if (j->kind != JOB_IMPORT)
			adoption_done(n, &j->ans.pre[j->pre_done], false);
		j->pre_done++;
		if (commit_event(n, j))
			return;
		job_finish(n, j, true);
		pump(n);
		return;
	}
	if (status != 0) {
		/* not committed (lost leadership, stopping): say so, as Java's code 1 */
		log_warn_limited("controller: event for %s not committed: %s",
			 j->ans.event.broker_name ? j->ans.event.broker_name : "?", raft_strerror(status));
		char *name = j->ans.event.broker_name;
		j->ans.event.broker_name = NULL;
		ctl_answer_clear(&j->ans);
		ctl_answer_set(&j->ans, RSP_SYSTEM_ERROR, "The change was not committed: %s",
			       raft_strerror(status));
		free(name);
	} else if (j->kind == JOB_IMPORT) {
		log_info("controller: %s imported: %u events committed", n->import_file,
			 j->ans.pre_count + 1);
	} else {
		adoption_done(n, &j->ans.event, j->ans.adopted & CTL_ADOPTED_SET);
		if (j->ans.event.type == CTL_EV_ELECT_MASTER || j->ans.event.type == CTL_EV_ADOPT_MASTER)
			election_done(n, &j->ans, NULL);
		if (j->ans.notify_role_change)
			notify_brokers(n, j->ans.event.broker_name);
	}
	ctl_node_publish_status(n);
	job_finish(n, j, true);
	pump(n);
}

/* Appends the answer's next event (those before its own first) to the
 * log; the job waits in n->inflight. */
static bool commit_event(struct ctl_node *n, struct job *j)
{
	struct raft_buffer rb;
	const struct ctl_event *ev =
		j->pre_done < j->ans.pre_count ? &j->ans.pre[j->pre_done] : &j->ans.event;
	int rc = ctl_entry_wrap(ev, &rb);

	if (rc == 0) {
		j->apply.data = j;
		rc = raft_apply(&n->raft, &j->apply, &rb, 1, on_applied);
		if (rc != 0) {
			raft_free(rb.base);
			log_warn_limited("controller: event not appended: %s", raft_strerror(rc));
		}
	}
	if (rc != 0) {
		ctl_answer_clear(&j->ans);
		ctl_answer_set(&j->ans, RSP_SYSTEM_ERROR, "The change could not be appended to the log");
		return false;
	}
	n->inflight = j;
	return true;
}

static void enqueue_election(struct ctl_node *n, const char *broker_name, bool adopt)
{
	struct job *j = calloc(1, sizeof *j);

	if (!j || !(j->broker_name = strdup(broker_name))) {
		free(j);
		log_error_limited("controller: no memory to elect a master for %s", broker_name);
		return;
	}
	j->kind = JOB_ELECT;
	j->node = n;
	j->adopt = adopt;
	queue_push(&n->pending, j);
}

/* Brokers this node no longer sees: a master among them is replaced, by
 * the leader only (controller.md §2.4). */
static void brokers_inactive(struct ctl_node *n, struct ctl_broker_key *keys, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		const struct ctl_set *set = ctl_state_find(&n->state, keys[i].broker_name);
		log_info_limited("controller: broker %s/%s id %" PRId64 " is no longer live", keys[i].cluster,
			 keys[i].broker_name, keys[i].broker_id);
		if (ctl_node_serving(n) && ctl_set_exists(set) && set->has_master &&
		    set->master_id == keys[i].broker_id && strcmp(set->cluster, keys[i].cluster) == 0)
			enqueue_election(n, set->name, false);
	}
	ctl_broker_keys_free(keys, count);
}

/* A 1009 changed the options: they go to the node's config file before
 * the answer, which says so when they could not. */
static void persist_options(struct ctl_node *n, struct ctl_answer *ans)
{
	char err[512], dir[4096];
	struct buf text = BUF_INIT;

	if (!n->config_store_path)
		return;
	snprintf(dir, sizeof dir, "%s", n->config_store_path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	int rc = properties_format(&n->options, &text);
	if (rc == 0 && slash && slash != dir)
		rc = durable_mkdirs(dir, err, sizeof err);
	if (rc == 0)
		rc = durable_write(n->config_store_path, text.data, text.len, true, err, sizeof err);
	else if (rc == RMQNS_ENOMEM)
		snprintf(err, sizeof err, "out of memory");
	buf_free(&text);
	if (rc == 0) {
		log_info_limited("controller: options changed by UPDATE_CONTROLLER_CONFIG written to %s",
			 n->config_store_path);
		return;
	}
	log_error_limited("controller: options changed but not written: %s", err);
	ctl_answer_clear(ans);
	ctl_answer_set(ans, RSP_SYSTEM_ERROR, "The config was changed but not written: %s", err);
}

/* The reads Java's controller appends to its log first when
 * processReadEvent is on: answered from state no older than the read. */
static bool read_goes_through_log(struct ctl_node *n, int32_t code)
{
	return (code == CTL_REQ_GET_REPLICA_INFO || code == CTL_REQ_GET_SYNC_STATE_DATA ||
		code == CTL_REQ_GET_NEXT_BROKER_ID) &&
	       ctl_node_serving(n) && ctl_config_flag(&n->options, "processReadEvent", false);
}

static void answer_request(struct ctl_node *n, struct job *j);

static void on_read_barrier(struct raft_barrier *req, int status)
{
	struct job *j = req->data;
	struct ctl_node *n = j->node;

	n->inflight = NULL;
	if (status != 0) {
		ctl_answer_set(&j->ans, RSP_SYSTEM_ERROR, "The read was not committed: %s",
			       raft_strerror(status));
		job_finish(n, j, true);
	} else {
		answer_request(n, j);
	}
	pump(n);
}

static void run_request(struct ctl_node *n, struct job *j)
{
	if (remoting_decode(j->frame, j->len, &j->req) != 0) {
		job_finish(n, j, false);
		return;
	}
	j->decoded = true;
	if (read_goes_through_log(n, j->req.code)) {
		j->read_barrier.data = j;
		if (raft_barrier(&n->raft, &j->read_barrier, on_read_barrier) == 0) {
			n->inflight = j;
			return;
		}
		ctl_answer_set(&j->ans, RSP_SYSTEM_ERROR, "The read could not be appended to the log");
		job_finish(n, j, true);
		return;
	}
	answer_request(n, j);
}

/* A NameServer request sent to the controller's port: the code-3 answer
 * says where it belongs (a client given the wrong address learns which). */
static void hint_wrong_port(struct ctl_node *n, struct ctl_answer *ans, int32_t code)
{
	const char *was = ans->remark ? ans->remark : "";
	int port = atomic_load_explicit(&n->namesrv_port, memory_order_relaxed);

	if (ans->code != RSP_REQUEST_CODE_NOT_SUPPORTED || !n->namesrv_code || !n->namesrv_code(code))
		return;
	/* formatted before the old remark is freed; kept when out of memory */
	if (port > 0)
		ctl_answer_set(ans, ans->code,
			       "%s; this is a controller port: the NameServer of this node listens on port %d",
			       was, port);
	else
		ctl_answer_set(ans, ans->code, "%s; this is a controller port, not a NameServer's", was);
}

void ctl_node_set_namesrv_port(struct ctl_node *n, int port)
{
	atomic_store_explicit(&n->namesrv_port, port, memory_order_relaxed);
}

/* Runs the handler and answers, after committing its event if it made one. */
static void answer_request(struct ctl_node *n, struct job *j)
{
	struct ctl_meta meta;
	struct ctl_env env = node_env(n, &meta, j->conn);

	if (ctl_handle(&env, &j->req, &j->ans) != 0) {
		ctl_answer_clear(&j->ans);
		ctl_answer_set(&j->ans, RSP_SYSTEM_ERROR, "The controller ran out of memory");
	}
	hint_wrong_port(n, &j->ans, j->req.code);
	if (j->ans.has_event && commit_event(n, j))
		return;
	if (j->req.code == CTL_REQ_ELECT_MASTER && !j->ans.has_event && j->ans.code != 0)
		election_done(n, &j->ans, remoting_ext_get(&j->req, "brokerName"));
	if (j->ans.config_changed)
		persist_options(n, &j->ans);
	else if (j->req.code == CTL_REQ_UPDATE_CONTROLLER_CONFIG && j->ans.code != 0)
		log_warn_limited("controller: UPDATE_CONTROLLER_CONFIG refused (code %d): %s",
				 j->ans.code, j->ans.remark ? j->ans.remark : "");
	job_finish(n, j, true);
}

static struct adopt_wait *adopt_wait_find(struct ctl_node *n, const char *name)
{
	for (uint32_t i = 0; i < n->adopt_wait_count; i++)
		if (strcmp(n->adopt_waits[i].name, name) == 0)
			return &n->adopt_waits[i];
	return NULL;
}

/* The adoption election of a set (ctl_adopt_elect), with the master this
 * process's NameServer has for it; true when its events are in flight. */
static bool run_adoption(struct ctl_node *n, struct job *j, const struct ctl_env *env)
{
	const struct ctl_set *set = ctl_state_find(&n->state, j->broker_name);
	char serving[256];
	const char *hint = NULL;

	if (set && n->serving_master &&
	    n->serving_master(n->serving_master_arg, set->cluster, set->name, serving,
			      sizeof serving) == 0)
		hint = serving;
	const struct adopt_wait *w = adopt_wait_find(n, j->broker_name);
	bool wait_for_serving = w && env->now_ms - w->since < CTL_ADOPT_SERVING_WAIT_MS;
	if (ctl_adopt_elect(env, j->broker_name, hint, wait_for_serving, &j->ans) != 0) {
		log_warn_limited("controller: adoption of %s: out of memory", j->broker_name);
		return false;
	}
	if (!j->ans.has_event) {
		log_debug("controller: adoption of %s: %s", j->broker_name, j->ans.remark);
		return false; /* nothing yet: the scan tries again */
	}
	log_info("controller: %s has no master here but its brokers had one; adopting broker %" PRId64
		 " at epoch %d (NameServer's master: %s)",
		 j->broker_name, j->ans.event.broker_id, j->ans.event.master_epoch,
		 hint ? hint : "unknown");
	return commit_event(n, j);
}

/* controllerImportFile on the first serving term: proposed when the store
 * is empty, refused with the reason when it is not. True when in flight. */
static bool run_import(struct ctl_node *n, struct job *j)
{
	struct ctl_event *events;
	uint32_t count;
	char err[512];

	if (n->state.count) {
		log_warn("controller: %s not imported: the store already holds %u broker sets "
			 "(an import only starts an empty store)", n->import_file, n->state.count);
		return false;
	}
	if (ctl_import_read(n->import_file, &events, &count, err, sizeof err) != 0) {
		log_error("controller: %s not imported: %s", n->import_file, err);
		return false;
	}
	/* the last event moves into the answer's own; the array goes with ans.pre
	 * (ctl_answer_clear clears only the pre_count before it) */
	j->ans.event = events[count - 1];
	j->ans.has_event = true;
	j->ans.pre = events;
	j->ans.pre_count = count - 1;
	log_info("controller: importing %s: %u events", n->import_file, count);
	return commit_event(n, j);
}

static void run_job(struct ctl_node *n, struct job *j)
{
	struct ctl_meta meta;
	struct ctl_env env;
	struct ctl_broker_key *gone;
	uint32_t count;

	switch (j->kind) {
	case JOB_REQUEST:
		run_request(n, j);
		return;
	case JOB_CLOSE:
		if (ctl_live_remove_conn(&n->live, j->conn, &gone, &count) == 0)
			brokers_inactive(n, gone, count);
		break;
	case JOB_ELECT:
		env = node_env(n, &meta, 0);
		if (!env.serving)
			break;
		if (j->adopt) {
			if (run_adoption(n, j, &env))
				return;
			break;
		}
		if (ctl_elect_master(&env, j->broker_name, false, 0, false, &j->ans) == 0) {
			log_info_limited("controller: master of %s is gone; electing another", j->broker_name);
			if (j->ans.has_event && commit_event(n, j))
				return;
			election_done(n, &j->ans, j->broker_name);
		}
		break;
	case JOB_INSPECT:
		j->inspect(j->inspect_arg, &n->state);
		break;
	case JOB_IMPORT:
		if (ctl_node_serving(n) && run_import(n, j))
			return;
		break;
	}
	job_finish(n, j, true);
}

static void pump(struct ctl_node *n)
{
	struct job *j;

	while (!n->inflight && (j = queue_pop(&n->pending))) {
		if (n->closing)
			job_finish(n, j, false);
		else
			run_job(n, j);
	}
}

/* ---- the loop ---- */

static void on_barrier(struct raft_barrier *req, int status)
{
	struct ctl_node *n = req->data;

	n->barrier_pending = false;
	if (status == 0 && raft_state(&n->raft) == RAFT_LEADER &&
	    n->raft.current_term == n->barrier_term) {
		n->serving_term = n->barrier_term;
		n->next_master_scan = ctl_node_now_ms() + n->scan_inactive_master_ms;
		log_info_limited("controller %s: leader of term %llu, serving", n->peers[n->self].id,
			 (unsigned long long)n->serving_term);
		if (n->import_file && !n->import_tried) {
			struct job *j = calloc(1, sizeof *j);
			n->import_tried = true;
			if (j) {
				*j = (struct job){ .kind = JOB_IMPORT, .node = n };
				queue_push(&n->pending, j);
			} else {
				log_error("controller: no memory to import %s", n->import_file);
			}
		}
	}
	ctl_node_publish_status(n);
}

/* A new leader serves only once a no-op of its term is applied: then
 * every earlier entry is applied too. */
static void watch_role(struct ctl_node *n)
{
	if (raft_state(&n->raft) != RAFT_LEADER) {
		if (n->serving_term)
			log_info_limited("controller %s: no longer leader", n->peers[n->self].id);
		n->serving_term = 0;
		return;
	}
	if (n->serving_term == n->raft.current_term || n->barrier_pending)
		return;
	n->barrier.data = n;
	n->barrier_term = n->raft.current_term;
	if (raft_barrier(&n->raft, &n->barrier, on_barrier) == 0)
		n->barrier_pending = true;
}

#define ADOPT_SCAN_MS 250
#define ADOPT_RETRY_MS 1000

/* Forgets the waits of sets no longer pending (all when not serving). */
static void adopt_waits_prune(struct ctl_node *n, const struct ctl_env *env)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < n->adopt_wait_count; i++) {
		struct adopt_wait *a = &n->adopt_waits[i];
		if (env->serving && ctl_adopt_pending(env, ctl_state_find(&n->state, a->name)))
			n->adopt_waits[w++] = *a;
		else
			free(a->name);
	}
	n->adopt_wait_count = w;
}

/* Sets whose brokers had a master the state lacks: heard for adopt_wait_ms
 * (so that the whole set has reported), then their adoption election. */
static void adopt_scan(struct ctl_node *n, int64_t now)
{
	struct ctl_meta meta;
	struct ctl_env env = node_env(n, &meta, 0);

	adopt_waits_prune(n, &env);
	if (!env.serving)
		return;
	for (uint32_t i = 0; i < n->state.count; i++) {
		const struct ctl_set *set = n->state.sets[i];
		if (set->has_master || !ctl_adopt_pending(&env, set))
			continue;
		struct adopt_wait *a = adopt_wait_find(n, set->name);
		if (!a) {
			struct adopt_wait *g = realloc(n->adopt_waits,
						       (n->adopt_wait_count + 1) * sizeof *g);
			char *name = strdup(set->name);
			if (g)
				n->adopt_waits = g;
			if (!g || !name) {
				free(name);
				return;
			}
			a = &n->adopt_waits[n->adopt_wait_count++];
			*a = (struct adopt_wait){ name, now, now + (n->adopt_wait_ms > 0 ? n->adopt_wait_ms : 0) };
			log_info("controller: %s has no master here but its brokers report epochs above %d; "
				 "adopting in %" PRId64 " ms", set->name, set->master_epoch,
				 n->adopt_wait_ms > 0 ? n->adopt_wait_ms : 0);
		}
		if (now >= a->next_try) {
			a->next_try = now + ADOPT_RETRY_MS;
			enqueue_election(n, set->name, true);
		}
	}
}

static void scan(struct ctl_node *n)
{
	int64_t now = ctl_node_now_ms();
	struct ctl_broker_key *gone;
	uint32_t count;

	if (now >= n->next_expiry_scan) {
		n->next_expiry_scan = now + n->scan_not_active_ms;
		if (ctl_live_remove_expired(&n->live, now, &gone, &count) == 0)
			brokers_inactive(n, gone, count);
	}
	if (now >= n->next_adopt_scan) {
		n->next_adopt_scan = now + ADOPT_SCAN_MS;
		adopt_scan(n, now);
	}
	if (ctl_node_serving(n) && now >= n->next_master_scan) {
		n->next_master_scan = now + n->scan_inactive_master_ms;
		for (uint32_t i = 0; i < n->state.count; i++) {
			const struct ctl_set *set = n->state.sets[i];
			if (!ctl_set_exists(set) || !set->has_master ||
			    ctl_live_alive(&n->live, set->cluster, set->name, set->master_id, now))
				continue;
			bool any = false;
			for (uint32_t k = 0; k < set->replica_count && !any; k++)
				any = ctl_live_alive(&n->live, set->cluster, set->name, set->replicas[k].id, now);
			if (any)
				enqueue_election(n, set->name, false);
		}
	}
}

static void on_tick(uv_timer_t *t)
{
	struct ctl_node *n = t->data;

	watch_role(n);
	ctl_node_watch_leader(n);
	scan(n);
	ctl_node_publish_status(n);
	ctl_node_publish_view(n);
	pump(n);
}

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_raft_closed(struct raft *r)
{
	struct ctl_node *n = r->data;

	raft_uv_close(&n->io);
	ctl_transport_free(&n->transport);
	uv_close((uv_handle_t *)&n->tick, on_handle_closed);
	uv_close((uv_handle_t *)&n->wake, on_handle_closed);
}

static void on_wake(uv_async_t *a)
{
	struct ctl_node *n = a->data;
	struct job_queue in;
	bool stopping;
	struct job *j;

	pthread_mutex_lock(&n->lock);
	in = n->inbox;
	queue_init(&n->inbox);
	if (!in.head)
		in.tail = &in.head;
	stopping = n->stopping;
	pthread_mutex_unlock(&n->lock);
	while ((j = queue_pop(&in)))
		queue_push(&n->pending, j);
	if (stopping && !n->closing) {
		n->closing = true;
		uv_timer_stop(&n->tick);
		pump(n); /* drops what waits; the one in flight ends in raft_close */
		raft_close(&n->raft, on_raft_closed);
		return;
	}
	pump(n);
}

/* Closes what node_open opened after raft_init, and runs the loop dry. */
static void node_close_raft(struct ctl_node *n)
{
	n->closing = true;
	raft_close(&n->raft, on_raft_closed);
	uv_run(&n->loop, UV_RUN_DEFAULT);
	uv_loop_close(&n->loop);
}

/* Brings up the loop, the Raft member and the timer; on failure what was
 * opened is closed again and err says why. */
static int node_open(struct ctl_node *n, char *err, size_t errlen)
{
	int rc;

	if (durable_mkdirs(n->dir, err, errlen) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", n->dir, strerror(errno));
		return RMQNS_EIO;
	}
	if (uv_loop_init(&n->loop) != 0) {
		snprintf(err, errlen, "cannot start an event loop");
		return RMQNS_EIO;
	}
	uv_async_init(&n->loop, &n->wake, on_wake);
	n->wake.data = n;
	uv_timer_init(&n->loop, &n->tick);
	n->tick.data = n;
	if (ctl_transport_init(&n->transport, &n->loop, n->peers, n->n_peers, n->self,
			       n->raft_max_message, n->bind_address,
			       n->peer_tls[0] ? (const char *const *)n->peer_tls : NULL, err,
			       errlen) != 0)
		goto fail_handles;
	n->transport.hold = n->hold;
	n->transport.hold_arg = n->hold_arg;
	if ((rc = raft_uv_init(&n->io, &n->loop, n->dir, &n->transport.outer)) != 0) {
		snprintf(err, errlen, "raft log in %s: %s", n->dir, raft_strerror(rc));
		goto fail_transport;
	}
	ctl_fsm_init(&n->fsm, &n->state);
	if ((rc = raft_init(&n->raft, &n->io, &n->fsm, n->self + 1, n->raft_address)) != 0) {
		snprintf(err, errlen, "raft: %s", raft_strerror(rc));
		goto fail_io;
	}
	n->raft.data = n;
	if (ctl_node_bootstrap(n, err, errlen) != 0) {
		node_close_raft(n);
		return RMQNS_EIO;
	}
	raft_set_election_timeout(&n->raft, n->election_timeout_ms);
	raft_set_heartbeat_timeout(&n->raft, n->heartbeat_timeout_ms);
	raft_set_snapshot_threshold(&n->raft, n->snapshot_threshold);
	raft_set_snapshot_trailing(&n->raft, n->snapshot_trailing);
	raft_set_pre_vote(&n->raft, true);
	if ((rc = raft_start(&n->raft)) != 0) {
		/* libraft leaves its message empty when the transport refused */
		const char *why = raft_errmsg(&n->raft);
		if (!why || !*why)
			why = n->transport.outer.errmsg;
		snprintf(err, errlen, "raft start in %s: %s", n->dir,
			 why && *why ? why : raft_strerror(rc));
		node_close_raft(n);
		return RMQNS_EIO;
	}
	n->next_expiry_scan = ctl_node_now_ms() + FIRST_EXPIRY_SCAN_MS;
	uv_timer_start(&n->tick, on_tick, TICK_MS, TICK_MS);
	return 0;

fail_io:
	raft_uv_close(&n->io);
fail_transport:
	ctl_transport_free(&n->transport);
fail_handles:
	uv_close((uv_handle_t *)&n->tick, on_handle_closed);
	uv_close((uv_handle_t *)&n->wake, on_handle_closed);
	uv_run(&n->loop, UV_RUN_DEFAULT);
	uv_loop_close(&n->loop);
	return RMQNS_EIO;
}

static void *node_main(void *arg)
{
	struct ctl_node *n = arg;
	char err[512] = "";
	int rc;

	log_set_thread_name("controller");
	/* a peer that went away must be a write error here, not the end of the
	 * process (the library writes to sockets without MSG_NOSIGNAL) */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	rc = node_open(n, err, sizeof err);
	pthread_mutex_lock(&n->lock);
	n->started = true;
	n->start_rc = rc;
	snprintf(n->start_err, sizeof n->start_err, "%s", err);
	pthread_cond_broadcast(&n->cond);
	pthread_mutex_unlock(&n->lock);
	if (rc)
		return NULL;
	ctl_node_publish_status(n);
	uv_run(&n->loop, UV_RUN_DEFAULT);
	uv_loop_close(&n->loop);
	/* what arrived after the close: no answer */
	struct job *j;
	pthread_mutex_lock(&n->lock);
	struct job_queue left = n->inbox;
	queue_init(&n->inbox);
	pthread_mutex_unlock(&n->lock);
	if (!left.head)
		left.tail = &left.head;
	while ((j = queue_pop(&left)))
		queue_push(&n->pending, j);
	while ((j = queue_pop(&n->pending)))
		job_finish(n, j, false);
	return NULL;
}

struct ctl_node *ctl_node_start(const struct ctl_node_config *cfg, char *err, size_t errlen)
{
	struct ctl_node *n = calloc(1, sizeof *n);

	if (!n) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->cond, NULL);
	queue_init(&n->inbox);
	queue_init(&n->pending);
	ctl_state_init(&n->state);
	ctl_live_init(&n->live);
	n->options = (struct properties)PROPERTIES_INIT;
	n->next_opaque = 1;
	n->last_leader = -2;
	if (ctl_node_configure(n, cfg, err, errlen) != 0) {
		ctl_node_free(n);
		return NULL;
	}
	if (pthread_create(&n->thread, NULL, node_main, n) != 0) {
		snprintf(err, errlen, "cannot start the controller thread");
		ctl_node_free(n);
		return NULL;
	}
	pthread_mutex_lock(&n->lock);
	while (!n->started)
		pthread_cond_wait(&n->cond, &n->lock);
	int rc = n->start_rc;
	snprintf(err, errlen, "%s", n->start_err);
	pthread_mutex_unlock(&n->lock);
	if (rc) {
		pthread_join(n->thread, NULL);
		ctl_node_free(n);
		return NULL;
	}
	log_info("controller %s: raft member %s, log in %s, peers %s", n->peers[n->self].id,
		 n->raft_address, n->dir, n->peers_desc);
	return n;
}

void ctl_node_stop(struct ctl_node *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stopping = true;
	uv_async_send(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	ctl_node_free(n);
}

/* Puts a job in the inbox and wakes the loop; RMQNS_ECLOSED once stopping. */
static int node_post(struct ctl_node *n, struct job *j)
{
	pthread_mutex_lock(&n->lock);
	if (n->stopping) {
		pthread_mutex_unlock(&n->lock);
		return RMQNS_ECLOSED;
	}
	queue_push(&n->inbox, j);
	/* under the lock: once stopping is set nobody touches the handle the
	 * loop is about to close */
	uv_async_send(&n->wake);
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* Posts j, or frees it when the node no longer takes work. */
static int node_post_or_free(struct ctl_node *n, struct job *j)
{
	int rc = node_post(n, j);

	if (rc)
		job_free(j);
	return rc;
}

int ctl_node_submit(struct ctl_node *n, const uint8_t *frame, size_t len, uint64_t conn,
		    ctl_reply_fn reply, void *arg)
{
	struct job *j = calloc(1, sizeof *j);

	if (!j || !(j->frame = malloc(len ? len : 1))) {
		free(j);
		return RMQNS_ENOMEM;
	}
	memcpy(j->frame, frame, len);
	*j = (struct job){ .kind = JOB_REQUEST, .node = n, .frame = j->frame, .len = len,
			   .conn = conn, .reply = reply, .reply_arg = arg,
			   .recv_ns = metrics_now_ns() };
	return node_post_or_free(n, j);
}

int ctl_node_conn_closed(struct ctl_node *n, uint64_t conn)
{
	struct job *j = calloc(1, sizeof *j);

	if (!j)
		return RMQNS_ENOMEM;
	*j = (struct job){ .kind = JOB_CLOSE, .node = n, .conn = conn };
	return node_post_or_free(n, j);
}

int ctl_node_inspect(struct ctl_node *n, void (*fn)(void *arg, const struct ctl_state *s), void *arg)
{
	struct job *j = calloc(1, sizeof *j);
	bool done = false;

	if (!j)
		return RMQNS_ENOMEM;
	j->kind = JOB_INSPECT;
	j->node = n;
	j->inspect = fn;
	j->inspect_arg = arg;
	j->done = &done;
	int rc = node_post(n, j);
	if (rc) {
		job_free(j);
		return rc;
	}
	pthread_mutex_lock(&n->lock);
	while (!done)
		pthread_cond_wait(&n->cond, &n->lock);
	pthread_mutex_unlock(&n->lock);
	return 0;
}
