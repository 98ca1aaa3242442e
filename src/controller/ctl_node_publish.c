/* What a controller node publishes for other threads (the HTTP side,
 * tests): its status, the leader it knows and the view of its state; and
 * the calls that read them. Written on the node's thread, read under the
 * node's lock; nobody waits for the node's thread here. */
#include <inttypes.h>
#include <stdlib.h>

#include "ctl_node_publish.h"
#include "rmqns/log.h"

bool ctl_node_serving(struct ctl_node *n)
{
	return !n->closing && raft_state(&n->raft) == RAFT_LEADER && n->serving_term != 0 &&
	       n->serving_term == n->raft.current_term;
}

int ctl_node_leader_index(struct ctl_node *n)
{
	raft_id id = 0;
	const char *addr = NULL;

	raft_leader(&n->raft, &id, &addr);
	return id >= 1 && id <= n->n_peers ? (int)id - 1 : -1;
}

void ctl_node_publish_status(struct ctl_node *n)
{
	struct ctl_node_status st = {
		.is_leader = raft_state(&n->raft) == RAFT_LEADER,
		.serving = ctl_node_serving(n),
		.term = n->raft.current_term,
		.last_applied = raft_last_applied(&n->raft),
		.leader = ctl_node_leader_index(n),
		.turn_ms = (uint64_t)ctl_node_now_ms(),
		.leader_changes = n->leader_changes,
		.elections_won = n->elections_won,
		.elections_failed = n->elections_failed,
		.adopted_brokers = n->adopted_brokers,
		.adopted_sets = n->adopted_sets,
		.live_brokers = n->live.count,
		.live_brokers_max = n->live.max_entries,
		.heartbeats_refused = n->live.refused,
	};
	for (uint32_t i = 0; i < n->state.count; i++) {
		const struct ctl_set *set = n->state.sets[i];
		st.broker_sets += ctl_set_exists(set);
		st.masters += ctl_set_exists(set) && set->has_master;
	}
	pthread_mutex_lock(&n->lock);
	n->status = st;
	pthread_mutex_unlock(&n->lock);
}

/* ---- work ---- */

/* Followers name the new leader as soon as libraft knows it. */
void ctl_node_watch_leader(struct ctl_node *n)
{
	int leader = ctl_node_leader_index(n);

	if (leader == n->last_leader)
		return;
	if (n->last_leader != -2)
		n->leader_changes++;
	n->last_leader = leader;
	if (leader >= 0)
		log_info_limited("controller %s: leader is %s (%s), term %llu", n->peers[n->self].id,
			 n->peers[leader].id, n->peers[leader].address,
			 (unsigned long long)n->raft.current_term);
	else
		log_info_limited("controller %s: no leader known, term %llu", n->peers[n->self].id,
			 (unsigned long long)n->raft.current_term);
}

/* The JSON and metrics the HTTP side shows, rebuilt here, swapped in. */
void ctl_node_publish_view(struct ctl_node *n)
{
	int64_t now = ctl_node_now_ms();
	struct buf json = BUF_INIT, prom = BUF_INIT;

	if (now < n->next_view_ms)
		return;
	n->next_view_ms = now + CTL_VIEW_MS;
	struct ctl_node_status st;
	pthread_mutex_lock(&n->lock);
	st = n->status;
	pthread_mutex_unlock(&n->lock);
	struct ctl_view_ctx v = {
		.state = &n->state, .live = &n->live, .status = &st, .self_id = n->peers[n->self].id,
		.group = n->group, .leader = st.leader >= 0 ? &n->peers[st.leader] : NULL, .now_ms = now,
		.peer_auth = ctl_transport_peer_auth(&n->transport), .raft_refused = n->transport.refused,
	};
	if (ctl_view_json(&v, &json) != 0 || ctl_view_prom(&v, &prom) != 0) {
		buf_free(&json);
		buf_free(&prom);
		return; /* the previous view stays */
	}
	pthread_mutex_lock(&n->lock);
	struct buf old_json = n->view_json, old_prom = n->view_prom;
	n->view_json = json;
	n->view_prom = prom;
	pthread_mutex_unlock(&n->lock);
	buf_free(&old_json);
	buf_free(&old_prom);
}

const struct ctl_peer *ctl_node_peer(const struct ctl_node *n, int i)
{
	return i >= 0 && (unsigned)i < n->n_peers ? &n->peers[i] : NULL;
}

const char *ctl_node_self_id(const struct ctl_node *n)
{
	return n->peers[n->self].id;
}

int ctl_node_view(struct ctl_node *n, struct buf *json, struct buf *prom)
{
	int rc = 0;

	pthread_mutex_lock(&n->lock);
	if (json)
		rc = buf_append(json, n->view_json.data, n->view_json.len);
	if (prom && rc == 0)
		rc = buf_append(prom, n->view_prom.data, n->view_prom.len);
	pthread_mutex_unlock(&n->lock);
	return rc;
}

void ctl_node_status(struct ctl_node *n, struct ctl_node_status *out)
{
	pthread_mutex_lock(&n->lock);
	*out = n->status;
	pthread_mutex_unlock(&n->lock);
}
