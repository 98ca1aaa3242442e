/* rmqns-admin: what every subcommand shares. The context built from the
 * command line (the NameServer list, the timeout, the output form), the
 * exit codes, and the subcommand entry points (cmd_*.c, diff.c). */
#ifndef ADMIN_H
#define ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "target.h"

/* Exit codes: scripts branch on these. */
enum admin_exit {
	ADMIN_EXIT_OK = 0,
	ADMIN_EXIT_DIFF = 1,        /* clusterDiff: the NameServers disagree */
	ADMIN_EXIT_USAGE = 2,       /* bad command line */
	ADMIN_EXIT_UNREACHABLE = 3, /* no answer: refused, timed out, closed */
	ADMIN_EXIT_REFUSED = 4,     /* a server answered with an error code */
	ADMIN_EXIT_PARTIAL = 5,     /* a write took effect on some servers only */
	ADMIN_EXIT_BAD_ANSWER = 6,  /* an answer we could not read, or out of memory */
};

#define ADMIN_DEFAULT_TIMEOUT_MS 3000
#define ADMIN_DEFAULT_NAMESRV "127.0.0.1:9876"

/* Subcommand options, as mqadmin names them. NULL = not given. */
struct admin_args {
	const char *topic;      /* -t */
	const char *cluster;    /* -c (deleteTopic) */
	bool by_cluster;        /* -c (topicList) */
	const char *key;        /* -k */
	const char *value;      /* -v */
	const char *ns;         /* -s */
	const char *broker;     /* -b */
	const char *method;     /* -m */
	const char *http;       /* --http HOST:PORT (brokers) */
	const char *controller; /* -a: controller addresses */
	const char *broker_ids; /* -b of electMaster (one id) and cleanBrokerMetadata ("1;2") */
	bool clean_living;      /* -l (cleanBrokerMetadata) */
	const char *output;     /* -o FILE (exportControllerState) */
};

struct admin_ctx {
	struct target_list targets;     /* the NameServers (-n) */
	bool namesrv_given;             /* -n or $NAMESRV_ADDR, not the default */
	struct target_list controllers; /* -a, for the controller subcommands */
	int timeout_ms;
	bool json;
	struct admin_args a;
};

/* Every subcommand returns an enum admin_exit. */
int cmd_cluster_list(struct admin_ctx *ctx);
int cmd_brokers(struct admin_ctx *ctx);
int cmd_topic_route(struct admin_ctx *ctx);
int cmd_topic_list(struct admin_ctx *ctx);
int cmd_get_namesrv_config(struct admin_ctx *ctx);
int cmd_get_kv_config(struct admin_ctx *ctx);
int cmd_get_kv_list(struct admin_ctx *ctx);
int cmd_probe(struct admin_ctx *ctx);

int cmd_update_namesrv_config(struct admin_ctx *ctx);
int cmd_update_kv_config(struct admin_ctx *ctx);
int cmd_delete_kv_config(struct admin_ctx *ctx);
int cmd_wipe_write_perm(struct admin_ctx *ctx);
int cmd_add_write_perm(struct admin_ctx *ctx);
int cmd_delete_topic(struct admin_ctx *ctx);
int cmd_update_order_conf(struct admin_ctx *ctx);

int cmd_cluster_diff(struct admin_ctx *ctx);

int cmd_get_controller_metadata(struct admin_ctx *ctx);
int cmd_get_sync_state_set(struct admin_ctx *ctx);
int cmd_elect_master(struct admin_ctx *ctx);
int cmd_clean_broker_metadata(struct admin_ctx *ctx);
int cmd_get_controller_config(struct admin_ctx *ctx);
int cmd_update_controller_config(struct admin_ctx *ctx);
int cmd_export_controller_state(struct admin_ctx *ctx);

/* Sends "KEY=VALUE" (-k, -v) as a properties body with `code` to every
 * server of list: updateNamesrvConfig and updateControllerConfig. */
int admin_update_config(struct admin_ctx *ctx, const struct target_list *list, int32_t code,
			const char *what);

/* GET_KV_CONFIG, shared by getKvConfig and `updateOrderConf -m get`. */
int admin_get_kv(struct admin_ctx *ctx, const char *ns, const char *key, bool order_conf);

/* The exit code for a failed call (unreachable, refused, bad answer). */
int admin_exit_for(const struct call_result *r);

/* Reports a problem: "rmqns-admin: <message>" on stderr, and kept for the
 * JSON error document (admin_json_error). */
void admin_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last message admin_error reported, or NULL. */
const char *admin_last_error(void);

/* With --json, when a run ends with a non-zero exit code and printed no
 * JSON document: {"ok":false,"exit":N,"error":"<last message>",
 * "errors":[...]} on stdout, so a script always gets JSON. */
void admin_json_error(int exit_code);

#endif
