/* rmqns-bench `controller`. Plays --broker-sets x --replicas brokers in
 * controller mode, each listening on a loopback port of its own (its broker
 * address, where the controller's NOTIFY_BROKER_ROLE_CHANGED arrives), each
 * following the broker's life cycle of controller.md §4:
 *   1005 to the controllers until one names the leader; 1012 and 1013 for an
 *   id (once: a broker keeps it in its identity file); 1003; with no master,
 *   one round of heartbeats and 1002; then 904 to every controller every
 *   --heartbeat-interval, 1004 every --replica-poll, 1005 every 10 s, and a
 *   master's 1001 whenever its slaves (in this process, so "caught up" at
 *   once) differ from its sync-state set; REGISTER_BROKER (103) to every
 *   NameServer with brokerId 0 as master or its id as slave, stateVersion =
 *   the master epoch, on every role change and every 30 s.
 * Once every set has its master in the routes, one master is killed every
 * --kill-every (all its connections closed at once, its listener too: a
 * process death), or frozen with --freeze (it stops sending and reading, its
 * connections stay open). From the death on, this thread asks a NameServer
 * for the set's route (105) and the leader for the set's sync state (1006)
 * every --poll-interval, and times: the first answer or notification that
 * names a new master; the 1008 that reaches the new master; the first route
 * with the new master as brokerId 0. The dead broker comes back
 * --return-after later (not before a new master is known) with its old id
 * and follows the new master as a slave.
 * One thread, poll(2) over every socket: the times are those of this loop. */
#include "failover.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/buf.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "ctlreqs.h"
#include "engine.h"
#include "report.h"
#include "reqs.h"
#include "run.h"
#include "stats.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define FO_MAX_INBOUND 8                    /* connections a broker accepts (from controllers) */
#define FO_CALL_TIMEOUT_NS (3 * NS_PER_S)   /* a broker's controller calls (§4.1) */
#define FO_RETRY_NS NS_PER_S                /* a failed start-up step again */
#define FO_META_PERIOD_NS (10 * NS_PER_S)   /* syncControllerMetadataPeriod */
#define FO_NS_PERIOD_NS (30 * NS_PER_S)     /* registerNameServerPeriod */
#define FO_READ_CHUNK 65536u
#define FO_MAX_OUT (256u * 1024u)          /* a heartbeat waits while this much is unsent */
#define FO_OFFSET_PER_MS 1000              /* every broker's maxOffset grows alike */

/* ---- one connection ---- */

struct fo_conn {
	int fd;
	struct buf in, out;
	size_t out_off;
};

static void fo_conn_init(struct fo_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static void fo_conn_close(struct fo_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->in.len = 0;
	c->out.len = c->out_off = 0;
}

static void fo_conn_free(struct fo_conn *c)
{
	fo_conn_close(c);
	buf_free(&c->in);
	buf_free(&c->out);
}

static int fo_connect(struct fo_conn *c, const struct sockaddr_storage *sa, socklen_t len)
{
	fo_conn_close(c);
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMQNS_EIO;
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Not waited for: one thread plays every broker, and a controller cut
	 * off the network would hold it for each connect. Frames wait in the
	 * buffer until the connection opens; a refusal shows as POLLERR, a
	 * controller that never answers as the calls' timeout. */
	if (connect(fd, (const struct sockaddr *)sa, len) != 0 && errno != EINPROGRESS) {
		close(fd);
		return RMQNS_EIO;
	}
	c->fd = fd;
	return RMQNS_OK;
}

static bool fo_pending(const struct fo_conn *c)
{
	return c->out_off < c->out.len;
}

/* Sends what it can; false when the connection failed. */
static bool fo_flush(struct fo_conn *c)
{
	while (c->fd >= 0 && fo_pending(c)) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		c->out_off += (size_t)n;
	}
	if (!fo_pending(c))
		c->out.len = c->out_off = 0;
	return c->fd >= 0;
}

typedef void (*fo_frame_fn)(void *ctx, int slot, const struct remoting_cmd *cmd, uint64_t now);

/* Reads what is there and hands every whole frame to fn; false when the
 * connection closed or broke (fn may close it too: then it stops). */
static bool fo_read(struct fo_conn *c, fo_frame_fn fn, void *ctx, int slot)
{
	if (buf_reserve(&c->in, FO_READ_CHUNK))
		return false;
	ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	c->in.len += (size_t)n;
	uint64_t now = bench_now_ns();
	size_t off = 0;
	while (c->fd >= 0) {
		size_t fs;
		int rc = remoting_frame_cut(c->in.data + off, c->in.len - off, REMOTING_DEFAULT_MAX_FRAME,
					    &fs);
		if (rc == RMQNS_EAGAIN)
			break;
		struct remoting_cmd cmd;
		if (rc || remoting_decode(c->in.data + off, fs, &cmd) != RMQNS_OK)
			return false;
		off += fs;
		fn(ctx, slot, &cmd, now);
		remoting_cmd_release(&cmd);
	}
	if (c->fd < 0)
		return true; /* closed by fn: nothing left to keep */
	buf_consume(&c->in, off);
	return true;
}

/* ---- the brokers ---- */

enum fo_step {
	STEP_DEAD = 0,
	STEP_NEXT_ID,    /* 1012 */
	STEP_APPLY,      /* 1013 */
	STEP_REGISTER,   /* 1003 */
	STEP_ELECT,      /* heartbeats, then 1002 (start-up without a master) */
	STEP_RUNNING,
};

enum fo_role { ROLE_NONE = 0, ROLE_MASTER, ROLE_SLAVE };

/* One request to a controller in flight at a time, as the broker's calls are synchronous. */
struct fo_call {
	bool busy;
	int32_t opaque;
	int32_t code;
	int conn;               /* index of the controller connection */
	uint64_t sent_ns;
	int64_t ids[CTLREQS_MAX_SSS]; /* 1001: the set proposed */
	uint32_t nids;
};

struct fo_player {
	uint32_t set, index;         /* index = set * replicas + replica */
	char name[REQS_NAME_MAX];
	char addr[64], ha_addr[64];
	uint16_t port;
	int listen_fd;
	bool frozen;
	uint64_t return_at;          /* dead or frozen: comes back then (0: not yet set) */
	int kill_ix;                 /* the kill it is the victim of, -1 none */
	struct fo_conn in[FO_MAX_INBOUND];
	struct fo_conn ctl[OPTS_MAX_CONTROLLERS];
	uint64_t ctl_retry_at[OPTS_MAX_CONTROLLERS];
	struct fo_conn ns[OPTS_MAX_NAMESRVS];
	/* identity and role */
	enum fo_step step;
	int64_t id;                  /* 0 until applied */
	int64_t apply_id;
	char check_code[96];
	enum fo_role role;
	int32_t epoch;               /* master epoch known, -1 none */
	int64_t master_id;
	char master_addr[64];
	int64_t sss[CTLREQS_MAX_SSS];
	uint32_t nsss;
	int32_t sss_epoch;
	uint32_t gen;                /* role generation: the NameServers must hear of each */
	bool want_elect;             /* running with no master: 1002 */
	/* controllers */
	int leader;                  /* connection index, -1 unknown */
	int disc;                    /* the controller asked next for the leader */
	struct fo_call call;
	uint64_t wake_at;            /* the next step not before */
	uint64_t next_beat, next_poll, next_meta, sss_retry_at;
	/* NameServers */
	uint32_t ns_gen[OPTS_MAX_NAMESRVS];   /* generation last registered there */
	bool ns_busy[OPTS_MAX_NAMESRVS];
	int32_t ns_opaque[OPTS_MAX_NAMESRVS];
	uint32_t ns_sent_gen[OPTS_MAX_NAMESRVS];
	uint64_t ns_sent[OPTS_MAX_NAMESRVS], ns_next[OPTS_MAX_NAMESRVS];
	int64_t dv_counter;
};

struct fo_kill {
	struct report_kill r;
	uint32_t victim;
	int64_t old_id;
	char old_addr[64];
	int32_t epoch_at_kill;
	uint64_t t_kill;
	bool elected, notified, routed, back, closed;
	char new_addr[64], route_addr[64];
};

struct fo_run {
	const struct bench_opts *o;
	char ctl_addr[OPTS_MAX_CONTROLLERS][OPTS_ADDR_MAX];
	struct sockaddr_storage ctl_sa[OPTS_MAX_CONTROLLERS];
	socklen_t ctl_len[OPTS_MAX_CONTROLLERS];
	uint32_t nctl;
	char ns_addr[OPTS_MAX_NAMESRVS][OPTS_ADDR_MAX];
	struct sockaddr_storage ns_sa[OPTS_MAX_NAMESRVS];
	socklen_t ns_len[OPTS_MAX_NAMESRVS];
	uint32_t nns;
	struct fo_player *pl;
	uint32_t npl;
	int32_t next_opaque;
	struct reqs_route_tpl tpl;
	char (*topic0)[REQS_NAME_MAX];   /* the first topic of each set */
	/* the watch on an open kill: routes from every NameServer, sync state from the leader */
	struct fo_conn obs_ns[OPTS_MAX_NAMESRVS];
	bool obs_ns_busy[OPTS_MAX_NAMESRVS];
	int32_t obs_ns_opaque[OPTS_MAX_NAMESRVS];
	uint64_t obs_ns_sent[OPTS_MAX_NAMESRVS], obs_ns_next;
	struct fo_conn obs_ctl;
	int obs_ctl_idx, obs_disc;
	bool obs_leader_known;
	bool obs_busy;
	int32_t obs_opaque, obs_code;
	uint64_t obs_sent, obs_next;
	/* kills */
	struct fo_kill *kills;
	uint32_t nkills;
	int open_kill;
	/* figures */
	struct stats st_ctl, st_poll, st_reg, st_route, st_sync;
	bool stats_ok;
	uint64_t heartbeats, notifications, elect_requests;
	uint64_t t_start, t_ready, t_hb_from;
	bool ready;
};

static int32_t fo_opaque(struct fo_run *r)
{
	if (++r->next_opaque <= 0)
		r->next_opaque = 1;
	return r->next_opaque;
}

static struct fo_player *fo_in_set(struct fo_run *r, uint32_t set, uint32_t replica)
{
	return &r->pl[set * r->o->replicas + replica];
}

static int64_t fo_offset(const struct fo_run *r, uint64_t now)
{
	return (int64_t)((now - r->t_start) / NS_PER_MS) * FO_OFFSET_PER_MS;
}

static struct ctlreqs_broker fo_ident(const struct fo_run *r, const struct fo_player *p)
{
	return (struct ctlreqs_broker){ .cluster = r->o->cluster, .name = p->name, .addr = p->addr,
					.id = p->id, .version = r->o->version,
					.serialize = r->o->serialize };
}

/* The controller at addr: its index, added when new (a leader outside
 * --controller-addr); -1 when there is no room or it does not resolve. */
static int fo_ctl_index(struct fo_run *r, const char *addr)
{
	for (uint32_t i = 0; i < r->nctl; i++)
		if (strcmp(r->ctl_addr[i], addr) == 0)
			return (int)i;
	if (r->nctl == OPTS_MAX_CONTROLLERS || strlen(addr) >= OPTS_ADDR_MAX ||
	    run_resolve_addr(addr, &r->ctl_sa[r->nctl], &r->ctl_len[r->nctl]))
		return -1;
	snprintf(r->ctl_addr[r->nctl], OPTS_ADDR_MAX, "%s", addr);
	return (int)r->nctl++;
}

/* A connection to controller i, opened when closed (at most once a second). */
static struct fo_conn *fo_ctl_conn(struct fo_run *r, struct fo_player *p, int i, uint64_t now)
{
	struct fo_conn *c = &p->ctl[i];
	if (c->fd >= 0)
		return c;
	if (now < p->ctl_retry_at[i])
		return NULL;
	if (fo_connect(c, &r->ctl_sa[i], r->ctl_len[i]) != RMQNS_OK) {
		p->ctl_retry_at[i] = now + NS_PER_S;
		return NULL;
	}
	return c;
}

/* ---- what the watch and the brokers see of an open kill ---- */

static double fo_ms(uint64_t from, uint64_t to)
{
	return (double)(to - from) / 1e6;
}

static struct fo_kill *fo_open_kill_of(struct fo_run *r, uint32_t set)
{
	if (r->open_kill < 0)
		return NULL;
	struct fo_kill *k = &r->kills[r->open_kill];
	return k->r.set == set ? k : NULL;
}

/* An answer or a notification naming set's master: the first naming
 * another than the dead one, at a later epoch, is the election. */
static void fo_saw_master(struct fo_run *r, uint32_t set, const struct ctlreqs_master *m,
			  const char *by, uint64_t now)
{
	struct fo_kill *k = fo_open_kill_of(r, set);
	if (!k || k->elected || !m->has_master || !m->has_epoch || m->master_id == k->old_id ||
	    m->master_epoch <= k->epoch_at_kill)
		return;
	k->elected = true;
	k->r.elected_ms = fo_ms(k->t_kill, now);
	k->r.elected_by = by;
	k->r.new_master = m->master_id;
	snprintf(k->new_addr, sizeof(k->new_addr), "%s", m->master_addr);
	struct fo_player *v = &r->pl[k->victim];
	uint64_t back = k->t_kill + r->o->return_after_ns;
	v->return_at = back > now ? back : now;
}

/* ---- a broker's role ---- */

static void fo_set_role(struct fo_run *r, struct fo_player *p, const struct ctlreqs_master *m,
			uint64_t now)
{
	(void)r;
	enum fo_role role = m->master_id == p->id ? ROLE_MASTER : ROLE_SLAVE;
	bool changed = role != p->role || m->master_epoch != p->epoch;
	p->role = role;
	p->epoch = m->master_epoch;
	p->master_id = m->master_id;
	snprintf(p->master_addr, sizeof(p->master_addr), "%s", m->master_addr);
	p->want_elect = false;
	if (role == ROLE_MASTER) {
		if (m->has_sss && m->nsss) {
			memcpy(p->sss, m->sss, m->nsss * sizeof(int64_t));
			p->nsss = m->nsss;
		} else {
			p->sss[0] = p->id; /* an election's set is the new master alone */
			p->nsss = 1;
		}
		if (m->has_sss_epoch)
			p->sss_epoch = m->sss_epoch;
		p->sss_retry_at = now;
	}
	if (changed) {
		p->gen++;
		for (uint32_t i = 0; i < r->nns; i++)
			p->ns_next[i] = now;
	}
}

/* What a broker does with a master view (controller.md §4.3, §4.4, §3.13):
 * a later epoch makes it master or slave; no master at all makes it ask
 * for an election. */
static void fo_take_view(struct fo_run *r, struct fo_player *p, const struct ctlreqs_master *m,
			 uint64_t now)
{
	if (!m->has_master) {
		p->want_elect = true;
		return;
	}
	if (!m->has_epoch)
		return;
	if (m->master_epoch > p->epoch || p->role == ROLE_NONE) {
		fo_set_role(r, p, m, now);
		return;
	}
	if (m->master_epoch == p->epoch && p->role == ROLE_MASTER && m->has_sss && m->has_sss_epoch &&
	    m->sss_epoch > p->sss_epoch && m->nsss) {
		memcpy(p->sss, m->sss, m->nsss * sizeof(int64_t));
		p->nsss = m->nsss;
		p->sss_epoch = m->sss_epoch;
	}
}

/* ---- requests ---- */

static void fo_lose_ctl(struct fo_run *r, struct fo_player *p, int i, uint64_t now);

static bool fo_call(struct fo_run *r, struct fo_player *p, int conn, int32_t code, uint64_t now,
		    int (*build)(struct fo_run *, struct fo_player *, int32_t, struct buf *))
{
	struct fo_conn *c = fo_ctl_conn(r, p, conn, now);
	if (!c)
		return false;
	int32_t opaque = fo_opaque(r);
	if (build(r, p, opaque, &c->out) != RMQNS_OK)
		return false;
	p->call.busy = true;
	p->call.opaque = opaque;
	p->call.code = code;
	p->call.conn = conn;
	p->call.sent_ns = now;
	if (!fo_flush(c))
		fo_lose_ctl(r, p, conn, now);
	return true;
}

static int fo_b_meta(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	(void)p;
	return ctlreqs_metadata(op, r->o->version, r->o->serialize, out);
}

static int fo_b_next(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	return ctlreqs_next_id(&b, op, out);
}

static int fo_b_apply(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	return ctlreqs_apply_id(&b, p->apply_id, p->check_code, op, out);
}

static int fo_b_register(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	return ctlreqs_register(&b, op, out);
}

static int fo_b_elect(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	r->elect_requests++;
	return ctlreqs_elect(&b, op, out);
}

static int fo_b_replica(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	return ctlreqs_replica_info(&b, op, out);
}

static int fo_b_alter(struct fo_run *r, struct fo_player *p, int32_t op, struct buf *out)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	return ctlreqs_alter_sss(&b, p->epoch, p->call.ids, p->call.nids, p->sss_epoch, op, out);
}

/* One round of 904 to every controller. */
static void fo_beat(struct fo_run *r, struct fo_player *p, uint64_t now)
{
	struct ctlreqs_broker b = fo_ident(r, p);
	struct ctlreqs_beat beat = {
		.epoch = p->epoch, .max_offset = fo_offset(r, now),
		.confirm_offset = fo_offset(r, now),
		.timeout_ms = (int64_t)(r->o->heartbeat_timeout_ns / NS_PER_MS),
	};
	for (uint32_t i = 0; i < r->nctl; i++) {
		struct fo_conn *c = fo_ctl_conn(r, p, (int)i, now);
		if (!c || c->out.len - c->out_off > FO_MAX_OUT)
			continue; /* the controller reads slower than we beat: wait */
		if (ctlreqs_heartbeat(&b, &beat, fo_opaque(r), &c->out) != RMQNS_OK)
			continue;
		r->heartbeats++;
		if (!fo_flush(c))
			fo_lose_ctl(r, p, (int)i, now);
	}
}

/* The master's sync-state set as its slaves say it should be: itself and
 * every slave following it at its epoch (in this process: caught up). */
static uint32_t fo_wanted_sss(struct fo_run *r, const struct fo_player *p, int64_t *ids)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < r->o->replicas && n < CTLREQS_MAX_SSS; k++) {
		const struct fo_player *q = fo_in_set(r, p->set, k);
		if (q == p || (q->step == STEP_RUNNING && !q->frozen && q->role == ROLE_SLAVE &&
			       q->epoch == p->epoch && q->master_id == p->id))
			ids[n++] = q->id;
	}
	/* ascending, as the controller keeps them */
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int64_t t = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	return n;
}

static bool fo_same_ids(const int64_t *a, uint32_t na, const int64_t *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++) {
		bool found = false;
		for (uint32_t j = 0; j < nb && !found; j++)
			found = a[i] == b[j];
		if (!found)
			return false;
	}
	return true;
}

/* The next controller request of a broker that has none in flight. */
static void fo_next_call(struct fo_run *r, struct fo_player *p, uint64_t now)
{
	if (now < p->wake_at)
		return;
	if (p->leader < 0) {
		if (!fo_call(r, p, p->disc, CTL_REQ_GET_METADATA_INFO, now, fo_b_meta)) {
			p->disc = (p->disc + 1) % (int)r->nctl;
			p->wake_at = now + FO_RETRY_NS / 10;
		}
		return;
	}
	bool sent = true;
	switch (p->step) {
	case STEP_NEXT_ID:
		sent = fo_call(r, p, p->leader, CTL_REQ_GET_NEXT_BROKER_ID, now, fo_b_next);
		break;
	case STEP_APPLY:
		sent = fo_call(r, p, p->leader, CTL_REQ_APPLY_BROKER_ID, now, fo_b_apply);
		break;
	case STEP_REGISTER:
		sent = fo_call(r, p, p->leader, CTL_REQ_REGISTER_BROKER, now, fo_b_register);
		break;
	case STEP_ELECT:
		fo_beat(r, p, now); /* the one heartbeat before asking (§4.3 step 5) */
		sent = fo_call(r, p, p->leader, CTL_REQ_ELECT_MASTER, now, fo_b_elect);
		break;
	case STEP_RUNNING:
		if (p->want_elect || p->role == ROLE_NONE) {
			sent = fo_call(r, p, p->leader, CTL_REQ_ELECT_MASTER, now, fo_b_elect);
		} else if (p->role == ROLE_MASTER && now >= p->sss_retry_at &&
			   (p->call.nids = fo_wanted_sss(r, p, p->call.ids)) &&
			   !fo_same_ids(p->call.ids, p->call.nids, p->sss, p->nsss)) {
			sent = fo_call(r, p, p->leader, CTL_REQ_ALTER_SYNC_STATE_SET, now, fo_b_alter);
		} else if (now >= p->next_poll) {
			p->next_poll = now + r->o->replica_poll_ns;
			sent = fo_call(r, p, p->leader, CTL_REQ_GET_REPLICA_INFO, now, fo_b_replica);
		} else if (now >= p->next_meta) {
			p->next_meta = now + FO_META_PERIOD_NS;
			sent = fo_call(r, p, p->leader, CTL_REQ_GET_METADATA_INFO, now, fo_b_meta);
		}
		break;
	case STEP_DEAD:
		return;
	}
	if (!sent) { /* the leader's connection did not open */
		p->leader = -1;
		p->wake_at = now + FO_RETRY_NS / 10;
	}
}

/* REGISTER_BROKER to the NameServers that have not heard of this role. */
static void fo_ns_register(struct fo_run *r, struct fo_player *p, uint64_t now)
{
	if (p->step != STEP_RUNNING || p->role == ROLE_NONE)
		return;
	const struct bench_opts *o = r->o;
	for (uint32_t i = 0; i < r->nns; i++) {
		if (p->ns_busy[i] || now < p->ns_next[i])
			continue;
		struct fo_conn *c = &p->ns[i];
		if (c->fd < 0 && fo_connect(c, &r->ns_sa[i], r->ns_len[i]) != RMQNS_OK) {
			p->ns_next[i] = now + NS_PER_S;
			continue;
		}
		struct reqs_body_spec spec = {
			.topic_prefix = o->topic_prefix, .layout = LAYOUT_DISTINCT,
			.topics = o->broker_topics, .queues = o->queues, .version = o->version,
			.state_version = p->epoch,
		};
		struct buf body = BUF_INIT;
		struct ctlreqs_broker b = fo_ident(r, p);
		int32_t op = fo_opaque(r);
		int rc = reqs_register_body(&body, &spec, p->set, ++p->dv_counter, 1700000000000ll);
		if (!rc)
			rc = ctlreqs_ns_register(&b, p->role == ROLE_MASTER ? 0 : p->id, p->ha_addr, &body,
						 op, &c->out);
		buf_free(&body);
		if (rc) {
			p->ns_next[i] = now + NS_PER_S;
			continue;
		}
		p->ns_busy[i] = true;
		p->ns_opaque[i] = op;
		p->ns_sent[i] = now;
		p->ns_sent_gen[i] = p->gen;
		r->st_reg.sent++;
		if (!fo_flush(c)) {
			fo_conn_close(c);
			p->ns_busy[i] = false;
			p->ns_next[i] = now + NS_PER_S;
		}
	}
}

/* ---- answers ---- */

static void fo_record(struct stats *st, int32_t code, uint64_t sent, uint64_t now)
{
	stats_record_answer(st, code, now > sent ? now - sent : 0, 0);
}

static void fo_retry(struct fo_player *p, uint64_t now)
{
	p->wake_at = now + FO_RETRY_NS;
}

static void fo_on_call_answer(struct fo_run *r, struct fo_player *p, const struct remoting_cmd *cmd,
			      uint64_t now)
{
	int32_t code = p->call.code;
	p->call.busy = false;
	fo_record(code == CTL_REQ_GET_REPLICA_INFO ? &r->st_poll : &r->st_ctl, cmd->code,
		  p->call.sent_ns, now);
	if (cmd->code == CTL_RSP_NOT_LEADER) {
		/* a broker finds the leader again before its next call */
		p->leader = -1;
		return;
	}
	struct ctlreqs_master m;
	char addr[OPTS_ADDR_MAX];
	switch (code) {
	case CTL_REQ_GET_METADATA_INFO:
		if (ctlreqs_read_leader(cmd, addr, sizeof(addr)) && fo_ctl_index(r, addr) >= 0) {
			p->leader = fo_ctl_index(r, addr);
		} else if (p->leader < 0) {
			p->disc = (p->disc + 1) % (int)r->nctl;
			p->wake_at = now + FO_RETRY_NS / 10;
		}
		return;
	case CTL_REQ_GET_NEXT_BROKER_ID:
		if (cmd->code == RSP_SUCCESS && remoting_ext_get_long(cmd, "nextBrokerId", &p->apply_id)) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			snprintf(p->check_code, sizeof(p->check_code), "%s;%lld", p->addr,
				 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
			p->step = STEP_APPLY;
		} else {
			fo_retry(p, now);
		}
		return;
	case CTL_REQ_APPLY_BROKER_ID:
		if (cmd->code == RSP_SUCCESS) {
			p->id = p->apply_id;
			p->step = STEP_REGISTER;
		} else {
			/* another broker of the set took the id: ask again (§3.6) */
			p->step = STEP_NEXT_ID;
			p->wake_at = now + (uint64_t)(p->index % 8) * 10 * NS_PER_MS;
		}
		return;
	case CTL_REQ_REGISTER_BROKER:
		if (cmd->code == RSP_SUCCESS) {
			ctlreqs_read_master(cmd, &m);
			fo_saw_master(r, p->set, &m, "1003", now);
			if (m.has_master) {
				fo_set_role(r, p, &m, now);
				p->step = STEP_RUNNING;
			} else {
				p->step = STEP_ELECT;
			}
		} else if (cmd->code == CTL_RSP_BROKER_NEED_TO_BE_REGISTERED) {
			p->id = 0; /* the controller forgot it: a new id */
			p->step = STEP_NEXT_ID;
		} else {
			fo_retry(p, now);
		}
		return;
	case CTL_REQ_ELECT_MASTER:
		if (cmd->code == RSP_SUCCESS || cmd->code == CTL_RSP_MASTER_STILL_EXIST) {
			ctlreqs_read_master(cmd, &m);
			fo_saw_master(r, p->set, &m, "1002", now);
			if (m.has_master && m.has_epoch) {
				fo_set_role(r, p, &m, now);
				p->step = STEP_RUNNING;
				return;
			}
		}
		fo_retry(p, now); /* 2012, 2004, ...: the whole step again later (§4.3 step 5) */
		return;
	case CTL_REQ_GET_REPLICA_INFO:
		if (cmd->code == RSP_SUCCESS) {
			ctlreqs_read_master(cmd, &m);
			fo_saw_master(r, p->set, &m, "1004", now);
			fo_take_view(r, p, &m, now);
		} else if (cmd->code == CTL_RSP_BROKER_METADATA_NOT_EXIST) {
			p->step = STEP_REGISTER;
		}
		return;
	case CTL_REQ_ALTER_SYNC_STATE_SET: {
		int32_t e;
		if (cmd->code == RSP_SUCCESS && remoting_ext_get_int(cmd, "newSyncStateSetEpoch", &e)) {
			memcpy(p->sss, p->call.ids, p->call.nids * sizeof(int64_t));
			p->nsss = p->call.nids;
			p->sss_epoch = e;
		} else {
			/* fenced (a demoted master) or a slave not alive yet: look again */
			p->sss_retry_at = now + 100 * NS_PER_MS;
			if (cmd->code == CTL_RSP_INVALID_MASTER || cmd->code == CTL_RSP_FENCED_MASTER_EPOCH ||
			    cmd->code == CTL_RSP_FENCED_SYNC_STATE_SET_EPOCH)
				p->next_poll = now;
		}
		return;
	}
	default:
		return;
	}
}

static void fo_on_ns_answer(struct fo_run *r, struct fo_player *p, int i,
			    const struct remoting_cmd *cmd, uint64_t now)
{
	fo_record(&r->st_reg, cmd->code, p->ns_sent[i], now);
	p->ns_busy[i] = false;
	if (cmd->code != RSP_SUCCESS) {
		p->ns_next[i] = now + NS_PER_S;
		return;
	}
	p->ns_gen[i] = p->ns_sent_gen[i];
	p->ns_next[i] = p->ns_gen[i] == p->gen ? now + FO_NS_PERIOD_NS : now;
	/* a returned master follows the new one, as the NameServers see it */
	if (p->kill_ix >= 0 && p->role == ROLE_SLAVE) {
		struct fo_kill *k = &r->kills[p->kill_ix];
		bool all = true;
		for (uint32_t j = 0; j < r->nns; j++)
			all = all && p->ns_gen[j] == p->gen;
		if (all && p->epoch > k->epoch_at_kill) {
			k->back = true;
			k->r.back_ms = fo_ms(k->t_kill, now);
			p->kill_ix = -1;
		}
	}
}

/* Frames on a broker's connections: slot < 0 inbound (-1 - i), 0..nctl-1
 * controller, 1000 + i NameServer. */
struct fo_ctx {
	struct fo_run *r;
	struct fo_player *p;
};

#define FO_SLOT_NS 1000

static void fo_on_frame(void *arg, int slot, const struct remoting_cmd *cmd, uint64_t now)
{
	struct fo_ctx *x = arg;
	struct fo_run *r = x->r;
	struct fo_player *p = x->p;
	if (slot < 0) {
		if (remoting_is_response(cmd) || cmd->code != CTL_REQ_NOTIFY_BROKER_ROLE_CHANGED)
			return;
		struct ctlreqs_master m;
		ctlreqs_read_master(cmd, &m);
		r->notifications++;
		fo_saw_master(r, p->set, &m, "1008", now);
		struct fo_kill *k = fo_open_kill_of(r, p->set);
		if (k && !k->notified && m.has_master && m.master_id == p->id && m.has_epoch &&
		    m.master_epoch > k->epoch_at_kill) {
			k->notified = true;
			k->r.notified_ms = fo_ms(k->t_kill, now);
		}
		if (m.has_master && m.has_epoch && m.master_epoch > p->epoch && p->step == STEP_RUNNING)
			fo_set_role(r, p, &m, now);
		return;
	}
	if (!remoting_is_response(cmd))
		return; /* a NameServer's 905, say: nothing a bench broker acts on */
	if (slot >= FO_SLOT_NS) {
		int i = slot - FO_SLOT_NS;
		if (p->ns_busy[i] && cmd->opaque == p->ns_opaque[i])
			fo_on_ns_answer(r, p, i, cmd, now);
		return;
	}
	if (p->call.busy && p->call.conn == slot && cmd->opaque == p->call.opaque)
		fo_on_call_answer(r, p, cmd, now);
}

static void fo_lose_ctl(struct fo_run *r, struct fo_player *p, int i, uint64_t now)
{
	(void)r;
	fo_conn_close(&p->ctl[i]);
	p->ctl_retry_at[i] = now + 100 * NS_PER_MS;
	if (p->call.busy && p->call.conn == i) {
		p->call.busy = false;
		stats_record_transport(p->call.code == CTL_REQ_GET_REPLICA_INFO ? &r->st_poll : &r->st_ctl,
				       STATS_ERR_CLOSED, 1);
	}
	if (p->leader == i)
		p->leader = -1;
	if (p->disc == i)
		p->disc = (i + 1) % (int)r->nctl;
}

/* ---- life and death ---- */

static int fo_listen(struct fo_player *p, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMQNS_EIO;
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		close(fd);
		return RMQNS_EIO;
	}
	p->listen_fd = fd;
	p->port = ntohs(sa.sin_port);
	return RMQNS_OK;
}

/* A broker (re)starting: its listener, then the life cycle from the
 * leader's discovery; an id it has is kept (its identity file). */
static int fo_start(struct fo_run *r, struct fo_player *p, uint64_t now)
{
	int rc = fo_listen(p, p->port);
	if (rc)
		return rc;
	snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%u", p->port);
	snprintf(p->ha_addr, sizeof(p->ha_addr), "127.0.0.1:%u", p->port); /* no HA service here */
	p->step = p->id ? STEP_REGISTER : STEP_NEXT_ID;
	p->role = ROLE_NONE;
	p->want_elect = false;
	p->frozen = false;
	p->return_at = 0;
	p->leader = -1;
	p->disc = (int)(p->index % r->nctl);
	memset(&p->call, 0, sizeof(p->call));
	/* spread the first calls of a set's brokers a little: they race for ids */
	p->wake_at = now + (uint64_t)(p->index % r->o->replicas) * 20 * NS_PER_MS;
	p->next_beat = now;
	p->next_poll = now + 3 * NS_PER_S < now + r->o->replica_poll_ns ? now + 3 * NS_PER_S
									: now + r->o->replica_poll_ns;
	p->next_meta = now + FO_META_PERIOD_NS;
	p->gen++;
	for (uint32_t i = 0; i < r->nns; i++) {
		p->ns_busy[i] = false;
		p->ns_next[i] = now;
	}
	return RMQNS_OK;
}

static void fo_close_all(struct fo_run *r, struct fo_player *p)
{
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	p->listen_fd = -1;
	for (int i = 0; i < FO_MAX_INBOUND; i++)
		fo_conn_close(&p->in[i]);
	for (uint32_t i = 0; i < OPTS_MAX_CONTROLLERS; i++)
		fo_conn_close(&p->ctl[i]);
	for (uint32_t i = 0; i < r->nns; i++)
		fo_conn_close(&p->ns[i]);
}

/* A process death: every connection and the listener closed back to back. */
static void fo_kill(struct fo_run *r, struct fo_player *p)
{
	fo_close_all(r, p);
	p->step = STEP_DEAD;
	p->call.busy = false;
	for (uint32_t i = 0; i < r->nns; i++)
		p->ns_busy[i] = false;
}

static void fo_accept(struct fo_player *p)
{
	for (;;) {
		int fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		int slot = -1;
		for (int i = 0; i < FO_MAX_INBOUND && slot < 0; i++)
			if (p->in[i].fd < 0)
				slot = i;
		if (slot < 0) {
			close(fd); /* more controllers than a group has: refuse */
			continue;
		}
		p->in[slot].fd = fd;
	}
}

/* ---- the watch on an open kill ---- */

static void fo_obs_frame(void *arg, int slot, const struct remoting_cmd *cmd, uint64_t now)
{
	struct fo_run *r = arg;
	if (!remoting_is_response(cmd))
		return;
	struct fo_kill *k = r->open_kill >= 0 ? &r->kills[r->open_kill] : NULL;
	if (slot >= FO_SLOT_NS) {
		int i = slot - FO_SLOT_NS;
		if (!r->obs_ns_busy[i] || cmd->opaque != r->obs_ns_opaque[i])
			return;
		r->obs_ns_busy[i] = false;
		fo_record(&r->st_route, cmd->code, r->obs_ns_sent[i], now);
		char addr[64];
		if (!k || k->routed || cmd->code != RSP_SUCCESS ||
		    !ctlreqs_read_route_master(cmd->body, cmd->body_len, r->pl[k->victim].name, addr,
					       sizeof(addr)) ||
		    strcmp(addr, k->old_addr) == 0)
			return;
		for (uint32_t q = 0; q < r->o->replicas; q++)
			if (strcmp(fo_in_set(r, k->r.set, q)->addr, addr) == 0) {
				k->routed = true;
				k->r.route_ms = fo_ms(k->t_kill, now);
				snprintf(k->route_addr, sizeof(k->route_addr), "%s", addr);
			}
		return;
	}
	if (!r->obs_busy || cmd->opaque != r->obs_opaque)
		return;
	r->obs_busy = false;
	fo_record(&r->st_sync, cmd->code, r->obs_sent, now);
	if (cmd->code == CTL_RSP_NOT_LEADER) {
		r->obs_leader_known = false;
		return;
	}
	if (r->obs_code == CTL_REQ_GET_METADATA_INFO) {
		char addr[OPTS_ADDR_MAX];
		int i;
		if (ctlreqs_read_leader(cmd, addr, sizeof(addr)) && (i = fo_ctl_index(r, addr)) >= 0) {
			r->obs_leader_known = true;
			if (i != r->obs_ctl_idx) {
				fo_conn_close(&r->obs_ctl);
				r->obs_ctl_idx = i;
			}
		} else {
			r->obs_disc = (r->obs_disc + 1) % (int)r->nctl;
		}
		return;
	}
	struct ctlreqs_master m;
	if (k && cmd->code == RSP_SUCCESS &&
	    ctlreqs_read_sync_state_data(cmd->body, cmd->body_len, r->pl[k->victim].name, &m))
		fo_saw_master(r, k->r.set, &m, "1006", now);
}

static void fo_obs_tick(struct fo_run *r, uint64_t now)
{
	const struct bench_opts *o = r->o;
	struct fo_kill *k = r->open_kill >= 0 ? &r->kills[r->open_kill] : NULL;
	/* routes */
	for (uint32_t i = 0; i < r->nns; i++)
		if (r->obs_ns_busy[i] && now - r->obs_ns_sent[i] > o->timeout_ns) {
			fo_conn_close(&r->obs_ns[i]);
			r->obs_ns_busy[i] = false;
			stats_record_transport(&r->st_route, STATS_ERR_TIMEOUT, 1);
		}
	if (k && !k->routed && now >= r->obs_ns_next) {
		r->obs_ns_next = now + o->poll_interval_ns;
		for (uint32_t i = 0; i < r->nns; i++) {
			struct fo_conn *c = &r->obs_ns[i];
			if (r->obs_ns_busy[i] ||
			    (c->fd < 0 && fo_connect(c, &r->ns_sa[i], r->ns_len[i]) != RMQNS_OK))
				continue;
			int32_t op = fo_opaque(r);
			if (reqs_route_append(&r->tpl, r->topic0[k->r.set], op, &c->out))
				continue;
			r->obs_ns_busy[i] = true;
			r->obs_ns_opaque[i] = op;
			r->obs_ns_sent[i] = now;
			r->st_route.sent++;
			if (!fo_flush(c)) {
				fo_conn_close(c);
				r->obs_ns_busy[i] = false;
			}
		}
	}
	/* sync state from the leader */
	if (r->obs_busy && now - r->obs_sent > o->timeout_ns) {
		fo_conn_close(&r->obs_ctl);
		r->obs_busy = false;
		r->obs_leader_known = false;
		stats_record_transport(&r->st_sync, STATS_ERR_TIMEOUT, 1);
	}
	if (!k || k->elected || r->obs_busy || now < r->obs_next)
		return;
	r->obs_next = now + o->poll_interval_ns;
	if (!r->obs_leader_known && r->obs_ctl_idx != r->obs_disc) {
		fo_conn_close(&r->obs_ctl);
		r->obs_ctl_idx = r->obs_disc;
	}
	struct fo_conn *c = &r->obs_ctl;
	if (c->fd < 0 && fo_connect(c, &r->ctl_sa[r->obs_ctl_idx], r->ctl_len[r->obs_ctl_idx])) {
		r->obs_leader_known = false;
		r->obs_disc = (r->obs_disc + 1) % (int)r->nctl;
		return;
	}
	int32_t op = fo_opaque(r);
	int rc = r->obs_leader_known
		? ctlreqs_sync_state_data(r->pl[k->victim].name, op, o->version, o->serialize, &c->out)
		: ctlreqs_metadata(op, o->version, o->serialize, &c->out);
	if (rc)
		return;
	r->obs_busy = true;
	r->obs_opaque = op;
	r->obs_code = r->obs_leader_known ? CTL_REQ_GET_SYNC_STATE_DATA : CTL_REQ_GET_METADATA_INFO;
	r->obs_sent = now;
	r->st_sync.sent++;
	if (!fo_flush(c)) {
		fo_conn_close(c);
		r->obs_busy = false;
		r->obs_leader_known = false;
	}
}

/* ---- the kills ---- */

/* A set ready for a kill: one master, every broker running and following
 * it at its epoch, all in its sync-state set, every NameServer told. */
static bool fo_set_healthy(struct fo_run *r, uint32_t set, struct fo_player **master)
{
	struct fo_player *m = NULL;
	for (uint32_t q = 0; q < r->o->replicas; q++) {
		struct fo_player *p = fo_in_set(r, set, q);
		if (p->step != STEP_RUNNING || p->frozen || p->role == ROLE_NONE)
			return false;
		if (p->role == ROLE_MASTER) {
			if (m)
				return false;
			m = p;
		}
		for (uint32_t i = 0; i < r->nns; i++)
			if (p->ns_gen[i] != p->gen)
				return false;
	}
	if (!m || m->nsss != r->o->replicas)
		return false;
	for (uint32_t q = 0; q < r->o->replicas; q++) {
		struct fo_player *p = fo_in_set(r, set, q);
		if (p->epoch != m->epoch || (p != m && p->master_id != m->id))
			return false;
	}
	*master = m;
	return true;
}

static void fo_begin_kill(struct fo_run *r, struct fo_player *m, uint64_t now)
{
	struct fo_kill *k = &r->kills[r->nkills];
	memset(k, 0, sizeof(*k));
	k->r.set = m->set;
	k->r.old_master = m->id;
	k->r.new_master = -1;
	k->r.elected_ms = k->r.notified_ms = k->r.route_ms = k->r.back_ms = -1;
	k->victim = m->index;
	k->old_id = m->id;
	snprintf(k->old_addr, sizeof(k->old_addr), "%s", m->addr);
	k->epoch_at_kill = m->epoch;
	r->open_kill = (int)r->nkills++;
	m->kill_ix = r->open_kill;
	r->obs_ns_next = r->obs_next = now; /* the watch starts with the death */
	k->t_kill = bench_now_ns();
	if (r->o->freeze)
		m->frozen = true; /* its sockets stay open, unread */
	else
		fo_kill(r, m);
}

static void fo_close_kill(struct fo_run *r, struct fo_kill *k, uint64_t now)
{
	k->closed = true;
	k->r.route_agrees = k->elected && k->routed && strcmp(k->new_addr, k->route_addr) == 0;
	r->open_kill = -1;
	struct fo_player *v = &r->pl[k->victim];
	if (!v->return_at) /* no election seen: it comes back anyway */
		v->return_at = now;
	if (r->o->progress != 0) {
		fprintf(stderr, "kill %u/%u: set %u master %lld", r->nkills, r->o->kills, k->r.set,
			(long long)k->old_id);
		if (k->elected)
			fprintf(stderr, " -> %lld: elected %.2f ms (%s)", (long long)k->r.new_master,
				k->r.elected_ms, k->r.elected_by);
		else
			fprintf(stderr, ": no new master seen");
		fprintf(stderr, ", notified %s%.2f ms, route %s%.2f ms\n", k->notified ? "" : "NOT SEEN ",
			k->r.notified_ms, k->routed ? "" : "NOT SEEN ", k->r.route_ms);
	}
}

/* ---- the loop ---- */

enum fo_fd_kind { FD_LISTEN, FD_IN, FD_CTL, FD_NS, FD_OBS_NS, FD_OBS_CTL };

struct fo_fd {
	enum fo_fd_kind kind;
	struct fo_player *p;
	int slot;
};

static size_t fo_add(struct pollfd *pf, struct fo_fd *ff, size_t n, int fd, short ev,
		     enum fo_fd_kind kind, struct fo_player *p, int slot)
{
	pf[n] = (struct pollfd){ .fd = fd, .events = ev };
	ff[n] = (struct fo_fd){ .kind = kind, .p = p, .slot = slot };
	return n + 1;
}

static short fo_ev(const struct fo_conn *c)
{
	return (short)(POLLIN | (fo_pending(c) ? POLLOUT : 0));
}

/* One pass over every broker's timers and one poll(2). */
static int fo_step(struct fo_run *r, struct pollfd *pf, struct fo_fd *ff, uint64_t wait_ns)
{
	const struct bench_opts *o = r->o;
	uint64_t now = bench_now_ns();
	size_t n = 0;
	for (uint32_t i = 0; i < r->npl; i++) {
		struct fo_player *p = &r->pl[i];
		if (p->step == STEP_DEAD || p->frozen) {
			if (p->return_at && now >= p->return_at) {
				if (p->frozen) {
					p->frozen = false;
					p->return_at = 0;
					p->next_poll = now; /* a thawed broker looks at once */
					p->call.busy = false;
				} else if (fo_start(r, p, now) != RMQNS_OK) {
					fprintf(stderr, "rmqns-bench: broker %s cannot listen on %u again\n",
						p->name, p->port);
					return RMQNS_EIO;
				}
			}
			if (p->step == STEP_DEAD || p->frozen)
				continue;
		}
		if (p->call.busy && now - p->call.sent_ns > FO_CALL_TIMEOUT_NS) {
			stats_record_transport(p->call.code == CTL_REQ_GET_REPLICA_INFO ? &r->st_poll
											  : &r->st_ctl,
					       STATS_ERR_TIMEOUT, 1);
			fo_lose_ctl(r, p, p->call.conn, now);
		}
		if (p->step == STEP_RUNNING && now >= p->next_beat) {
			fo_beat(r, p, now);
			p->next_beat += o->heartbeat_interval_ns;
			if (p->next_beat < now)
				p->next_beat = now + o->heartbeat_interval_ns;
		}
		if (!p->call.busy)
			fo_next_call(r, p, now);
		fo_ns_register(r, p, now);
		n = fo_add(pf, ff, n, p->listen_fd, POLLIN, FD_LISTEN, p, 0);
		for (int k = 0; k < FO_MAX_INBOUND; k++)
			if (p->in[k].fd >= 0)
				n = fo_add(pf, ff, n, p->in[k].fd, POLLIN, FD_IN, p, k);
		for (uint32_t k = 0; k < r->nctl; k++)
			if (p->ctl[k].fd >= 0)
				n = fo_add(pf, ff, n, p->ctl[k].fd, fo_ev(&p->ctl[k]), FD_CTL, p, (int)k);
		for (uint32_t k = 0; k < r->nns; k++)
			if (p->ns[k].fd >= 0)
				n = fo_add(pf, ff, n, p->ns[k].fd, fo_ev(&p->ns[k]), FD_NS, p, (int)k);
	}
	fo_obs_tick(r, now);
	for (uint32_t k = 0; k < r->nns; k++)
		if (r->obs_ns[k].fd >= 0)
			n = fo_add(pf, ff, n, r->obs_ns[k].fd, fo_ev(&r->obs_ns[k]), FD_OBS_NS, NULL, (int)k);
	if (r->obs_ctl.fd >= 0)
		n = fo_add(pf, ff, n, r->obs_ctl.fd, fo_ev(&r->obs_ctl), FD_OBS_CTL, NULL, 0);
	struct timespec ts = { .tv_sec = (time_t)(wait_ns / NS_PER_S),
			       .tv_nsec = (long)(wait_ns % NS_PER_S) };
	int got = ppoll(pf, n, &ts, NULL);
	if (got < 0)
		return errno == EINTR ? RMQNS_OK : RMQNS_EIO;
	for (size_t i = 0; i < n && got > 0; i++) {
		if (!pf[i].revents)
			continue;
		struct fo_fd *f = &ff[i];
		struct fo_player *p = f->p;
		struct fo_ctx x = { r, p };
		now = bench_now_ns();
		bool in = pf[i].revents & (POLLIN | POLLERR | POLLHUP);
		bool out = pf[i].revents & POLLOUT;
		switch (f->kind) {
		case FD_LISTEN:
			if (p->listen_fd >= 0)
				fo_accept(p);
			break;
		case FD_IN:
			if (p->in[f->slot].fd >= 0 && in && !fo_read(&p->in[f->slot], fo_on_frame, &x, -1 - f->slot))
				fo_conn_close(&p->in[f->slot]);
			break;
		case FD_CTL: {
			struct fo_conn *c = &p->ctl[f->slot];
			if (c->fd >= 0 && ((out && !fo_flush(c)) || (in && !fo_read(c, fo_on_frame, &x, f->slot))))
				fo_lose_ctl(r, p, f->slot, now);
			break;
		}
		case FD_NS: {
			struct fo_conn *c = &p->ns[f->slot];
			if (c->fd >= 0 && ((out && !fo_flush(c)) ||
					   (in && !fo_read(c, fo_on_frame, &x, FO_SLOT_NS + f->slot)))) {
				fo_conn_close(c);
				if (p->ns_busy[f->slot])
					stats_record_transport(&r->st_reg, STATS_ERR_CLOSED, 1);
				p->ns_busy[f->slot] = false;
				p->ns_next[f->slot] = now + NS_PER_S;
			}
			break;
		}
		case FD_OBS_NS: {
			struct fo_conn *c = &r->obs_ns[f->slot];
			if (c->fd >= 0 && ((out && !fo_flush(c)) ||
					   (in && !fo_read(c, fo_obs_frame, r, FO_SLOT_NS + f->slot)))) {
				fo_conn_close(c);
				r->obs_ns_busy[f->slot] = false;
			}
			break;
		}
		case FD_OBS_CTL:
			if (r->obs_ctl.fd >= 0 &&
			    ((out && !fo_flush(&r->obs_ctl)) || (in && !fo_read(&r->obs_ctl, fo_obs_frame, r, 0)))) {
				fo_conn_close(&r->obs_ctl);
				r->obs_busy = false;
				r->obs_leader_known = false;
			}
			break;
		}
	}
	return RMQNS_OK;
}

static bool fo_all_healthy(struct fo_run *r)
{
	struct fo_player *m;
	for (uint32_t s = 0; s < r->o->broker_sets; s++)
		if (!fo_set_healthy(r, s, &m))
			return false;
	return true;
}

static bool fo_victims_back(const struct fo_run *r)
{
	for (uint32_t i = 0; i < r->nkills; i++)
		if (!r->kills[i].back)
			return false;
	return true;
}

/* ---- set-up, run, report ---- */

static int fo_setup(struct fo_run *r)
{
	const struct bench_opts *o = r->o;
	if (opts_split_addrs(o->controller_addr, r->ctl_addr, OPTS_MAX_CONTROLLERS, &r->nctl) ||
	    opts_split_addrs(o->addr, r->ns_addr, OPTS_MAX_NAMESRVS, &r->nns))
		return RMQNS_EINVAL;
	for (uint32_t i = 0; i < r->nctl; i++)
		if (run_resolve_addr(r->ctl_addr[i], &r->ctl_sa[i], &r->ctl_len[i])) {
			fprintf(stderr, "rmqns-bench: cannot resolve controller %s\n", r->ctl_addr[i]);
			return RMQNS_EINVAL;
		}
	for (uint32_t i = 0; i < r->nns; i++)
		if (run_resolve_addr(r->ns_addr[i], &r->ns_sa[i], &r->ns_len[i])) {
			fprintf(stderr, "rmqns-bench: cannot resolve NameServer %s\n", r->ns_addr[i]);
			return RMQNS_EINVAL;
		}
	r->npl = o->broker_sets * o->replicas;
	r->pl = calloc(r->npl, sizeof(*r->pl));
	r->topic0 = calloc(o->broker_sets, sizeof(*r->topic0));
	r->kills = calloc(o->kills ? o->kills : 1, sizeof(*r->kills));
	if (!r->pl || !r->topic0 || !r->kills)
		return RMQNS_ENOMEM;
	int rc = reqs_route_tpl_init(&r->tpl, o->version, o->serialize);
	if (rc)
		return rc;
	for (uint32_t s = 0; s < o->broker_sets; s++) {
		rc = reqs_topic_name(r->topic0[s], REQS_NAME_MAX, o->topic_prefix, LAYOUT_DISTINCT, s, 0);
		if (rc)
			return rc;
	}
	/* A controller keeps every set it has seen, and a set whose in-sync
	 * brokers are all gone never gets a master again: without a prefix of
	 * its own, each run names its sets afresh. */
	char prefix[96];
	if (o->broker_prefix_given)
		snprintf(prefix, sizeof(prefix), "%s", o->broker_prefix);
	else
		snprintf(prefix, sizeof(prefix), "%s-%lx", o->broker_prefix, (unsigned long)time(NULL));
	for (uint32_t i = 0; i < r->npl; i++) {
		struct fo_player *p = &r->pl[i];
		p->listen_fd = -1;
		p->index = i;
		p->set = i / o->replicas;
		p->epoch = -1;
		p->kill_ix = -1;
		for (int k = 0; k < FO_MAX_INBOUND; k++)
			fo_conn_init(&p->in[k]);
		for (int k = 0; k < OPTS_MAX_CONTROLLERS; k++)
			fo_conn_init(&p->ctl[k]);
		for (int k = 0; k < OPTS_MAX_NAMESRVS; k++)
			fo_conn_init(&p->ns[k]);
		if (snprintf(p->name, sizeof(p->name), "%s-%u", prefix, p->set) >=
		    (int)sizeof(p->name))
			return RMQNS_ETOOBIG;
		p->port = o->broker_port ? (uint16_t)(o->broker_port + i) : 0;
	}
	for (int k = 0; k < OPTS_MAX_NAMESRVS; k++)
		fo_conn_init(&r->obs_ns[k]);
	fo_conn_init(&r->obs_ctl);
	r->open_kill = -1;
	rc = stats_init(&r->st_ctl, "controller", false);
	if (!rc)
		rc = stats_init(&r->st_poll, "replica_info", false);
	if (!rc)
		rc = stats_init(&r->st_reg, "register", false);
	if (!rc)
		rc = stats_init(&r->st_route, "route_watch", false);
	if (!rc)
		rc = stats_init(&r->st_sync, "sync_state_watch", false);
	r->stats_ok = rc == RMQNS_OK;
	return rc;
}

static void fo_free(struct fo_run *r)
{
	for (uint32_t i = 0; r->pl && i < r->npl; i++) {
		struct fo_player *p = &r->pl[i];
		fo_close_all(r, p);
		for (int k = 0; k < FO_MAX_INBOUND; k++)
			fo_conn_free(&p->in[k]);
		for (int k = 0; k < OPTS_MAX_CONTROLLERS; k++)
			fo_conn_free(&p->ctl[k]);
		for (int k = 0; k < OPTS_MAX_NAMESRVS; k++)
			fo_conn_free(&p->ns[k]);
	}
	for (int k = 0; k < OPTS_MAX_NAMESRVS; k++)
		fo_conn_free(&r->obs_ns[k]);
	fo_conn_free(&r->obs_ctl);
	if (r->stats_ok) {
		stats_destroy(&r->st_ctl);
		stats_destroy(&r->st_poll);
		stats_destroy(&r->st_reg);
		stats_destroy(&r->st_route);
		stats_destroy(&r->st_sync);
	}
	reqs_route_tpl_free(&r->tpl);
	free(r->pl);
	free(r->topic0);
	free(r->kills);
}

static int fo_report(struct fo_run *r, uint64_t t_end, struct report_kill *each)
{
	const struct bench_opts *o = r->o;
	struct report rep;
	memset(&rep, 0, sizeof(rep));
	rep.opts = o;
	rep.scenario = opts_scenario_name(o->scenario);
	rep.target = o->controller_addr;
	for (uint32_t i = 0; i < r->nkills; i++)
		each[i] = r->kills[i].r;
	struct report_controller x = {
		.sets = o->broker_sets, .replicas = o->replicas, .controllers = r->nctl,
		.namesrvs = r->nns, .freeze = o->freeze, .kills_asked = o->kills,
		.kill_every_s = (double)o->kill_every_ns / 1e9,
		.return_after_s = (double)o->return_after_ns / 1e9, .kills = each,
		.nkills = r->nkills, .ready_ms = r->ready ? fo_ms(r->t_start, r->t_ready) : -1,
		.heartbeats = r->heartbeats,
		.heartbeat_s = r->t_hb_from && t_end > r->t_hb_from ? fo_ms(r->t_hb_from, t_end) / 1e3 : 0,
		.heartbeat_interval_ms = (double)o->heartbeat_interval_ns / 1e6,
		.notifications = r->notifications, .elect_requests = r->elect_requests,
	};
	rep.controller = &x;
	double wall = fo_ms(r->t_start, t_end) / 1e3;
	report_add_role(&rep, "controller", &r->st_ctl, wall);
	report_add_role(&rep, "replica_info", &r->st_poll, wall);
	report_add_role(&rep, "register", &r->st_reg, wall);
	if (r->nkills) {
		report_add_role(&rep, "route_watch", &r->st_route, wall);
		report_add_role(&rep, "sync_state_watch", &r->st_sync, wall);
	}
	int exit_code = run_output(o, &rep) ? 1 : 0;
	if (!r->ready || r->nkills < o->kills)
		exit_code = 1;
	for (uint32_t i = 0; i < r->nkills; i++)
		if (!r->kills[i].elected || !r->kills[i].notified || !r->kills[i].routed)
			exit_code = 1;
	return exit_code;
}

int failover_run(const struct bench_opts *o)
{
	struct fo_run r;
	memset(&r, 0, sizeof(r));
	r.o = o;
	int rc = fo_setup(&r);
	if (rc) {
		fprintf(stderr, "rmqns-bench: setup failed: %s\n", rmqns_strerror(rc));
		fo_free(&r);
		return 2;
	}
	/* at most: every broker's sockets and the watch's */
	size_t cap = (size_t)r.npl * (1 + FO_MAX_INBOUND + OPTS_MAX_CONTROLLERS + OPTS_MAX_NAMESRVS) +
		     OPTS_MAX_NAMESRVS + 1;
	struct pollfd *pf = calloc(cap, sizeof(*pf));
	struct fo_fd *ff = calloc(cap, sizeof(*ff));
	int exit_code = 1;
	if (!pf || !ff) {
		fprintf(stderr, "rmqns-bench: out of memory\n");
		goto out;
	}
	r.t_start = bench_now_ns();
	for (uint32_t i = 0; i < r.npl; i++)
		if (fo_start(&r, &r.pl[i], r.t_start) != RMQNS_OK) {
			fprintf(stderr, "rmqns-bench: broker %u cannot listen on 127.0.0.1:%u\n", i,
				r.pl[i].port);
			exit_code = 2;
			goto out;
		}
	r.t_hb_from = r.t_start;
	uint64_t deadline = r.t_start + o->duration_ns;
	uint64_t tick = o->heartbeat_interval_ns < o->poll_interval_ns ? o->heartbeat_interval_ns
								       : o->poll_interval_ns;
	if (tick > NS_PER_MS)
		tick = NS_PER_MS;
	uint64_t next_cue = 0, last_close = 0;
	for (;;) {
		uint64_t now = bench_now_ns();
		if (bench_interrupted || now >= deadline)
			break;
		if (!r.ready && fo_all_healthy(&r)) {
			r.ready = true;
			r.t_ready = now;
			next_cue = now + o->kill_every_ns;
			if (o->progress != 0)
				fprintf(stderr, "%u sets x %u brokers: every master in the routes after %.1f ms\n",
					o->broker_sets, o->replicas, fo_ms(r.t_start, now));
		}
		if (r.open_kill >= 0) {
			struct fo_kill *k = &r.kills[r.open_kill];
			if ((k->elected && k->notified && k->routed) ||
			    now - k->t_kill > o->failover_timeout_ns) {
				fo_close_kill(&r, k, now);
				last_close = now;
			}
		}
		if (r.ready && r.open_kill < 0 && r.nkills < o->kills && now >= next_cue) {
			struct fo_player *m;
			if (fo_set_healthy(&r, r.nkills % o->broker_sets, &m)) {
				fo_begin_kill(&r, m, now);
				next_cue += o->kill_every_ns;
				if (next_cue < now)
					next_cue = now + o->kill_every_ns;
			}
		}
		/* without kills the run lasts --duration; with them, until the last victim is back */
		if (o->kills && r.ready && r.nkills == o->kills && r.open_kill < 0 &&
		    (fo_victims_back(&r) || now - last_close > o->return_after_ns + o->failover_timeout_ns))
			break;
		if (fo_step(&r, pf, ff, tick) != RMQNS_OK)
			goto out;
	}
	uint64_t t_end = bench_now_ns();
	if (r.open_kill >= 0)
		fo_close_kill(&r, &r.kills[r.open_kill], t_end);
	if (!r.ready) {
		fprintf(stderr, "rmqns-bench: not every set had its master in the routes after %.1f s:",
			fo_ms(r.t_start, t_end) / 1e3);
		for (uint32_t s = 0; s < o->broker_sets; s++) {
			struct fo_player *m;
			if (!fo_set_healthy(&r, s, &m))
				fprintf(stderr, " %s", r.pl[s * o->replicas].name);
		}
		fprintf(stderr, " (a controller that knew these names before keeps their old "
			"brokers: another --broker-prefix, or a fresh controllerStorePath)\n");
	}
	struct report_kill *each = calloc(r.nkills ? r.nkills : 1, sizeof(*each));
	if (!each)
		goto out;
	exit_code = fo_report(&r, t_end, each);
	free(each);
	if (bench_interrupted && !exit_code)
		exit_code = 130;
out:
	free(pf);
	free(ff);
	fo_free(&r);
	return exit_code;
}
