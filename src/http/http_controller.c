/* The embedded controller on the HTTP endpoint (http_controller.h). */
#include <stdio.h>

#include "rmqns/buf.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/http_controller.h"
#include "rmqns/metrics.h"

bool http_controller_health(struct ctl_node *node, uint64_t now, uint64_t stall_ms, struct buf *out)
{
	struct ctl_node_status st;

	ctl_node_status(node, &st);
	uint64_t age = st.turn_ms && now > st.turn_ms ? now - st.turn_ms : 0;
	bool fine = st.turn_ms && age <= stall_ms;
	return buf_printf(out, "controller: %s, last turn %llu ms ago (%s, term %llu)\n",
			  fine ? "ok" : "STALLED", (unsigned long long)age,
			  st.serving ? "leader" : st.is_leader ? "leader, not serving yet" : "follower",
			  (unsigned long long)st.term) >= 0 && fine;
}

/* One sample; a type starts its family (the # HELP and # TYPE lines),
 * NULL adds another labelled sample to the family above. */
struct ctl_metric {
	const char *name;
	const char *type;
	const char *help;
	const char *labels;
	double value;
};

int http_controller_metrics(struct ctl_node *node, uint64_t now, struct buf *out)
{
	struct ctl_node_status st;

	ctl_node_status(node, &st);
	const struct ctl_metric all[] = {
		{ "rmqns_controller_leader", "gauge",
		  "1 when this node is the Raft leader serving controller requests.", NULL, st.serving },
		{ "rmqns_controller_term", "gauge", "The Raft term this node is in.", NULL,
		  (double)st.term },
		{ "rmqns_controller_last_applied", "gauge", "Index of the last Raft entry applied here.",
		  NULL, (double)st.last_applied },
		{ "rmqns_controller_leader_known", "gauge", "1 when this node knows a leader.", NULL,
		  st.leader >= 0 },
		{ "rmqns_controller_leader_changes_total", "counter",
		  "Times the leader this node knows changed.", NULL, (double)st.leader_changes },
		{ "rmqns_controller_broker_sets", "gauge", "Broker sets registered in the controller.",
		  NULL, st.broker_sets },
		{ "rmqns_controller_masters", "gauge", "Broker sets with a master.", NULL, st.masters },
		{ "rmqns_controller_live_brokers", "gauge",
		  "Brokers heart-beating to this node within their timeout.", NULL, st.live_brokers },
		{ "rmqns_controller_live_brokers_max", "gauge",
		  "Brokers this node tracks at most (controllerMaxLiveBrokers).", NULL, st.live_brokers_max },
		{ "rmqns_controller_heartbeats_refused_total", "counter",
		  "Heartbeats of new brokers refused because the table was full.", NULL,
		  (double)st.heartbeats_refused },
		{ "rmqns_controller_turn_age_seconds", "gauge",
		  "Seconds since the controller's thread last turned.", NULL,
		  st.turn_ms && now > st.turn_ms ? (double)(now - st.turn_ms) / 1e3 : 0 },
		{ "rmqns_controller_elections_total", "counter",
		  "Master elections this node ran as leader, by result.", "result=\"elected\"",
		  (double)st.elections_won },
		{ "rmqns_controller_elections_total", NULL, NULL, "result=\"none\"",
		  (double)st.elections_failed },
		{ "rmqns_controller_adopted_total", "counter",
		  "Brokers and broker sets this node adopted as leader from what the brokers reported.",
		  "kind=\"broker\"", (double)st.adopted_brokers },
		{ "rmqns_controller_adopted_total", NULL, NULL, "kind=\"set\"",
		  (double)st.adopted_sets },
	};
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < sizeof all / sizeof all[0]; i++) {
		if (all[i].type)
			rc = metrics_write_family(out, all[i].name, all[i].type, all[i].help);
		if (rc == 0)
			rc = metrics_write_value(out, all[i].name, all[i].labels, all[i].value);
	}
	if (rc == 0)
		rc = ctl_node_view(node, NULL, out);
	return rc < 0 ? RMQNS_ENOMEM : 0;
}

int http_controller_json(struct ctl_node *node, struct buf *out)
{
	size_t before = out->len;
	int rc = ctl_node_view(node, out, NULL);

	if (rc < 0)
		return RMQNS_ENOMEM;
	if (out->len == before)
		return RMQNS_EAGAIN;
	return buf_putc(out, '\n') < 0 ? RMQNS_ENOMEM : 0;
}
