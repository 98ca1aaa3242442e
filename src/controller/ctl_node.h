/* Private to the controller node's files (ctl_node*.c): the node and its
 * jobs, the rung all three stand on. ctl_node_setup.h and
 * ctl_node_publish.h declare what those two files give ctl_node.c, which
 * runs the loop and the work: calls go from ctl_node.c to the other two
 * only, and neither includes the other's header. */
#ifndef RMQNS_CONTROLLER_CTL_NODE_H
#define RMQNS_CONTROLLER_CTL_NODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <raft.h>
#include <uv.h>

#include "ctl_internal.h"
#include "rmqns/buf.h"
#include "rmqns/properties.h"
#include "rmqns/remoting.h"

enum job_kind { JOB_REQUEST, JOB_CLOSE, JOB_ELECT, JOB_INSPECT, JOB_IMPORT };

struct job {
	struct job *next;
	enum job_kind kind;
	struct ctl_node *node;
	/* JOB_REQUEST */
	uint8_t *frame;
	size_t len;
	uint64_t conn;
	ctl_reply_fn reply;
	void *reply_arg;
	uint64_t recv_ns;      /* when the reactor handed it over (metrics_now_ns) */
	struct remoting_cmd req;
	bool decoded;
	struct ctl_answer ans;
	struct raft_apply apply;
	struct raft_barrier read_barrier; /* processReadEvent: a read after a log entry */
	/* events of ans.pre committed so far (each waits for the one before) */
	uint32_t pre_done;
	/* JOB_ELECT; adopt: the adoption election (ctl_adopt_elect) */
	char *broker_name;
	bool adopt;
	/* JOB_INSPECT: the caller waits on the node's cond for *done */
	void (*inspect)(void *arg, const struct ctl_state *s);
	void *inspect_arg;
	bool *done;
};

struct job_queue {
	struct job *head;
	struct job **tail;
};

struct ctl_node {
	/* set before the thread starts, read-only after */
	struct ctl_peer *peers;
	unsigned n_peers;
	unsigned self;
	char *group;
	char *peers_desc;
	char *dir;
	char *config_store_path;
	char raft_address[200];
	char bind_address[200];
	unsigned election_timeout_ms, heartbeat_timeout_ms, snapshot_threshold, snapshot_trailing;
	uint64_t raft_max_message;
	char *peer_tls[3]; /* certificate, key, trust; NULL = no peer TLS */
	int64_t scan_not_active_ms, scan_inactive_master_ms;
	void (*notify)(void *arg, const char *address, const uint8_t *frame, size_t len);
	void *notify_arg;
	void (*hold)(void *arg, int64_t delta);
	void *hold_arg;
	bool (*namesrv_code)(int32_t code);
	_Atomic int namesrv_port; /* set once the NameServer's port is bound */
	int (*serving_master)(void *arg, const char *cluster, const char *broker_name, char *out,
			      size_t outlen);
	void *serving_master_arg;
	int64_t adopt_wait_ms;
	char *import_file;       /* controllerImportFile; NULL = none */
	bool import_tried;       /* the first serving term looked at it */

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct job_queue inbox;
	bool stopping;
	bool started;
	int start_rc;
	char start_err[512];
	struct ctl_node_status status;

	/* the loop thread's own */
	uv_loop_t loop;
	uv_async_t wake;
	uv_timer_t tick;
	struct ctl_transport transport;
	struct raft_io io;
	struct raft raft;
	struct raft_fsm fsm;
	struct ctl_state state;
	struct ctl_live live;
	struct properties options;
	struct job_queue pending;
	struct job *inflight;
	struct raft_barrier barrier;
	bool barrier_pending;
	raft_term barrier_term;
	raft_term serving_term;  /* the term whose no-op is applied; 0 = none */
	bool closing;
	int64_t next_expiry_scan;
	int64_t next_master_scan;
	int32_t next_opaque;
	struct buf out;
	/* what the HTTP side reads (ctl_node_status, ctl_node_view) */
	int last_leader;         /* -2 before the first look */
	uint64_t leader_changes, elections_won, elections_failed;
	uint64_t adopted_brokers, adopted_sets;
	/* sets awaiting an adoption election, and since when (the leader's) */
	struct adopt_wait { char *name; int64_t since, next_try; } *adopt_waits;
	int64_t next_adopt_scan;
	uint32_t adopt_wait_count;
	int64_t next_view_ms;
	struct buf view_json, view_prom; /* under lock */
};

/* CLOCK_MONOTONIC milliseconds. */
static inline int64_t ctl_node_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
