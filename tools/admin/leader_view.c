/* The controller metadata answer (leader_view.h). */
#include <string.h>

#include "rmqns/controller.h"
#include "admin.h"
#include "leader_view.h"

int leader_view_ask(const struct target *t, int timeout_ms, struct leader_view *m)
{
	struct remoting_cmd req;

	memset(m, 0, sizeof *m);
	target_request_init(&req, CTL_REQ_GET_METADATA_INFO);
	target_call(t, &req, timeout_ms, &m->r);
	if (!call_ok(&m->r))
		return admin_exit_for(&m->r);
	const struct remoting_cmd *c = &m->r.reply->cmd;
	m->group = remoting_ext_get(c, "group");
	m->leader_id = remoting_ext_get(c, "controllerLeaderId");
	m->leader_addr = remoting_ext_get(c, "controllerLeaderAddress");
	m->peers = remoting_ext_get(c, "peers");
	const char *is_leader = remoting_ext_get(c, "isLeader");
	m->is_leader = is_leader && strcmp(is_leader, "true") == 0;
	return ADMIN_EXIT_OK;
}

json_t *leader_view_json(const struct target *t, const struct leader_view *m)
{
	json_t *peers = json_array();

	for (const char *p = m->peers; p && *p;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		/* "id:host:port" (DLedger style), or "host:port" alone (jRaft's,
		 * which names no ids) */
		if (colon && (p[0] == '[' || !memchr(colon + 1, ':', len - (size_t)(colon - p) - 1)))
			colon = p - 1;
		if (len > 0 && colon)
			json_array_append_new(peers, json_pack("{s:s%, s:s%}", "id", p,
							       (size_t)(colon < p ? 0 : colon - p),
							       "address", colon + 1,
							       (size_t)(len - (size_t)(colon - p) - 1)));
		p += len + (semi ? 1 : 0);
	}
	return json_pack("{s:s, s:s?, s:s?, s:s?, s:b, s:o}", "server", t->name, "group", m->group,
			 "controllerLeaderId", m->leader_id, "controllerLeaderAddress", m->leader_addr,
			 "isLeader", m->is_leader, "peers", peers);
}

void leader_view_clear(struct leader_view *m)
{
	call_result_clear(&m->r);
}
