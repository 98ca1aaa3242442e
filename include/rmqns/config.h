/* NameServer options: one table (src/config/options.c) of name, type,
 * default, live-changeable or not and meaning drives the properties-file
 * parser, -p, GET/UPDATE_NAMESRV_CONFIG and the docs. The effective values
 * are an immutable struct options published through RCU: readers call
 * config_current() inside a read-side section; only the registrar thread
 * (runtime updates, SIGHUP) publishes a new one. */
#ifndef RMQNS_CONFIG_H
#define RMQNS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmqns/buf.h"
#include "rmqns/mutation.h"

struct options {
	/* NamesrvConfig (protocol.md §8.1) */
	char *rocketmqHome;
	char *kvConfigPath;
	char *configStorePath;
	char *productEnvName;
	bool clusterTest;
	bool orderMessageEnable;
	char *configBlackList;
	bool returnOrderTopicConfigToBroker;
	int32_t clientRequestThreadPoolNums;
	int32_t defaultThreadPoolNums;
	int32_t clientRequestThreadPoolQueueCapacity;
	int32_t defaultThreadPoolQueueCapacity;
	int64_t scanNotActiveBrokerInterval;   /* ms */
	int32_t unRegisterBrokerQueueCapacity;
	bool supportActingMaster;
	bool enableAllTopicList;
	bool enableTopicList;
	bool notifyMinBrokerIdChanged;
	bool enableControllerInNamesrv;
	bool needWaitForService;
	int32_t waitSecondsForService;
	bool deleteTopicWithBrokerRegistration;
	/* NettyServerConfig (§8.2) */
	char *bindAddress;
	int32_t listenPort;
	int32_t serverWorkerThreads;       /* processor pool size (0 = CPUs) */
	int32_t serverCallbackExecutorThreads;
	int32_t serverSelectorThreads;     /* reactors (0 = CPUs) */
	int32_t serverOnewaySemaphoreValue;
	int32_t serverAsyncSemaphoreValue;
	int32_t serverChannelMaxIdleTimeSeconds;
	int32_t serverSocketSndBufSize;
	int32_t serverSocketRcvBufSize;
	int32_t writeBufferHighWaterMark;
	int32_t writeBufferLowWaterMark;
	int32_t serverSocketBacklog;
	bool serverNettyWorkerGroupEnable;
	bool serverPooledByteBufAllocatorEnable;
	bool enableShutdownGracefully;
	int32_t shutdownWaitTimeSeconds;
	bool useEpollNativeSelector;
	/* rmqns's own */
	int64_t maxFrameSize;              /* bytes, length prefix included */
	int32_t processorQueueCapacity;    /* per lane */
	bool routeQueryInline;             /* reactors answer code 105 themselves */
	bool serverReactorCpuAffinity;     /* reactor i pinned to the i-th allowed CPU */
	int64_t registerInflateMaxBytes;   /* cap on an inflated/parsed registration */
	int64_t outboundPauseBytes;        /* stop reading a peer past this many unsent bytes */
	int64_t outboundCloseBytes;        /* close it past this many */
	int32_t serverMaxInflight;         /* queued requests per connection before its reads stop */
	int64_t connectionMemoryBudget;    /* bytes held for all connections; 0 = none */
	int32_t shutdownTimeoutMillis;     /* SIGTERM: queued work left after this is dropped */
	char *routeSnapshotPath;           /* route snapshot file; NULL or "" = off */
	int32_t routeSnapshotIntervalSeconds; /* at most this often, when changed */
	char *logLevel;                    /* DEBUG, INFO, WARN or ERROR */
	char *logFormat;                   /* text or json */
	char *logFile;                     /* NULL or "" = stderr */
	bool kvConfigIgnoreCorrupt;        /* start with an empty KV table (the bad file moved aside) */
	int32_t httpPort;                  /* the HTTP endpoint; 0 = off */
	char *httpBindAddress;             /* NULL or "" = bindAddress */
	char *httpWebConfigFile;           /* web.config.yml of the HTTP port; NULL or "" = none */
	bool httpProbesOpen;               /* /healthz and /readyz without credentials */
	int32_t healthStallMillis;         /* /healthz fails past this without a turn */
	char *statusPeers;                 /* the status page's other nodes: host:httpPort,... */
	/* ACL 1.0 (acl.h), Java's names */
	bool aclEnable;
	char *aclFile;                     /* plain_acl.yml */
	bool aclReadRequests;              /* reads need a signature too */
	bool aclBrokerRequests;            /* so do broker registrations and liveness */
	/* TLS on the protocol port (tls.h); Java's names, read at start */
	char *tlsServerMode;               /* disabled, permissive or enforcing */
	char *tlsServerCertPath;
	char *tlsServerKeyPath;
	char *tlsServerKeyPassword;
	char *tlsServerTrustCertPath;
	char *tlsServerNeedClientAuth;     /* none, optional or require */
	char *tlsConfigFile;               /* Java properties holding the keys above */
	bool tlsTestModeEnable;            /* self-signed certificate when no certPath */
	/* the embedded controller (controller.md §1.4), Java's names; read at
	 * start, used when enableControllerInNamesrv is true */
	char *controllerDLegerGroup;
	char *controllerDLegerPeers;       /* n0-host:port;n1-host:port;... */
	char *controllerDLegerSelfId;
	char *controllerStorePath;         /* the Raft log and snapshots */
	bool enableElectUncleanMaster;
	bool notifyBrokerRoleChanged;
	int64_t scanInactiveMasterInterval; /* ms */
	int32_t controllerRaftPortOffset;  /* Raft port = peer port + this */
	int64_t controllerRaftMaxMessageBytes; /* a larger Raft message closes its connection */
	char *controllerPeerTlsCertPath;   /* mutual TLS between the peers: all three or none */
	char *controllerPeerTlsKeyPath;
	char *controllerPeerTlsTrustCertPath;
	int32_t controllerElectionTimeoutMillis;
	int32_t controllerHeartbeatTimeoutMillis;
	int32_t controllerMaxLiveBrokers;  /* brokers in the heartbeat table */
	int64_t controllerMaxHeartbeatTimeoutMillis; /* the longest timeout a heartbeat may ask */
	bool processReadEvent;             /* reads through the Raft log */
	bool controllerAdoptBrokers;       /* rebuild unknown sets from their brokers */
	int64_t controllerAdoptWaitMs;     /* heard this long before the adoption election */
	char *controllerImportFile;        /* exportControllerState JSON for an empty store */
	int64_t mappedFileSize;            /* accepted, no effect */
	int32_t controllerThreadPoolNums;  /* accepted, no effect */
	int32_t controllerRequestThreadPoolQueueCapacity; /* accepted, no effect */
};

/* ---- the options table ---- */

enum config_type {
	CONFIG_STR = 0,
	CONFIG_BOOL = 1,
	CONFIG_I32 = 2,
	CONFIG_I64 = 3,
};

enum config_flag {
	CONFIG_LIVE = 1u << 0,   /* takes effect at once when changed at run time */
	CONFIG_PATH = 1u << 1,   /* names a file or directory: never changed at run time */
	CONFIG_UNUSED = 1u << 2, /* accepted for Java compatibility, no effect in rmqns */
	CONFIG_AUTO = 1u << 3,   /* 0 means "as many as there are CPUs" */
	CONFIG_SECRET = 1u << 4, /* shown as ****** by -p and GET_NAMESRV_CONFIG */
};

struct config_option {
	const char *name;         /* the Java name, case-sensitive */
	enum config_type type;
	unsigned flags;           /* enum config_flag */
	size_t offset;            /* of the field in struct options */
	const char *def;          /* default as text; NULL = computed at start (paths) */
	int64_t min, max;         /* integers: accepted range */
	int64_t run_min;          /* integers: UPDATE_NAMESRV_CONFIG refuses less (but 0 of CONFIG_AUTO) */
	const char *const *choices; /* strings: allowed values (any case), NULL = any */
	const char *meaning;      /* one line */
};

/* The table, in the order -p prints it: NamesrvConfig, NettyServerConfig,
 * then rmqns's own options. */
const struct config_option *config_options(size_t *count);
const struct config_option *config_option_find(const char *name);
/* The environment variable that sets opt: RMQNS_ and its name, each '.'
 * written '_' (RMQNS_listenPort, RMQNS_tls_server_mode). RMQNS_EINVAL
 * when out is too short. */
int config_option_env_name(const struct config_option *opt, char *out, size_t outlen);

struct config;
struct properties;
struct registrar;

enum config_action {
	CONFIG_ACTION_RUN = 0,   /* start the server */
	CONFIG_ACTION_PRINT = 1, /* -p: print the options, exit 0 */
	CONFIG_ACTION_HELP = 2,  /* -h: print usage, exit 0 */
	CONFIG_ACTION_VERSION = 3, /* -v/--version: print the version line, exit 0 */
};

/* Parses `rmqns [-c FILE] [-p] [-h] [--KEY=VALUE ...]`: defaults, then the
 * file, then the environment (RMQNS_<option>), then the overrides. On failure returns a negative rmqns_err and a
 * one-line reason in err (exit status 1). Like Java it prints
 * `load config properties file OK, FILE` on stdout once -c is read; it also
 * sets the log level (logLevel) and logs a warning for each option given a
 * non-default value that has no effect in rmqns. With -h no file is read
 * and *out holds the defaults. */
int config_from_args(int argc, char **argv, struct config **out,
		     enum config_action *action, char *err, size_t errlen);
void config_print_options(const struct config *cfg, FILE *out);
void config_print_usage(FILE *out);
void config_destroy(struct config *cfg);

/* The options as they were at start-up. Never freed while cfg lives, so
 * any thread may read it without RCU; use it for what only takes effect
 * at start (ports, thread counts, paths). */
const struct options *config_startup(const struct config *cfg);

/* SIGHUP: queues a re-read of the -c file on the registrar, which applies
 * what can change live and logs what needs a restart. Safe to call from
 * the main thread (not from a signal handler). */
void config_request_reload(struct config *cfg, struct registrar *reg);
/* Also calls fn(arg) at each config_request_reload (one hook, e.g. the
 * ACL's re-read of its accounts file); NULL removes it. */
void config_set_reload_hook(void (*fn)(void *arg), void *arg);

/* The options in force. Call inside rcu_read_lock(); valid until the
 * read-side section ends. Options that only take effect at start keep
 * their start-up value here even after UPDATE_NAMESRV_CONFIG or SIGHUP
 * changed them in the file (GET_NAMESRV_CONFIG shows the new value, as
 * Java does). */
const struct options *config_current(const struct config *cfg);

/* The -c file, or NULL when none was given. */
const char *config_file(const struct config *cfg);

/* GET_NAMESRV_CONFIG's body: every option and every other key of the -c
 * file as `key=value\n`, sorted by key. Call inside rcu_read_lock(). */
int config_properties_text(const struct config *cfg, struct buf *out);
/* The same set as properties, merged into out. */
int config_properties(const struct config *cfg, struct properties *out);

/* ---- UPDATE_NAMESRV_CONFIG ---- */

/* A checked update, ready for the registrar. */
struct config_update;

/* The verdict on an UPDATE_NAMESRV_CONFIG body, taken on a processor
 * thread inside rcu_read_lock(). Returns 0 with *out set (NULL when there
 * is nothing to do: no body), or fills *code (1 or 16) and remark. A key
 * that is neither an option nor a key of the -c file is refused (code 1,
 * "unknown key: KEY"): the whole update is then left undone. */
int config_update_prepare(const struct config *cfg, const void *body, size_t len,
			  struct config_update **out, int32_t *code, char *remark, size_t remark_len);

/* Registrar thread only: applies u (live options at once), persists the
 * merged set to the -c file (durably, with .bak) and publishes the new
 * options. Returns the response code (0, or 1 with remark when the file
 * cannot be written or the options conflict: then nothing changes). Does
 * not free u. `peer` names the sender in the log. */
int32_t config_update_apply(struct config *cfg, const struct config_update *u, const char *peer,
			    char *remark, size_t remark_len);
void config_update_free(struct config_update *u);

/* An update as the registrar applies it: the requester sets u, peer, done
 * and release and submits m; config_change_apply (m.apply) runs
 * config_update_apply into code and remark, calls done (which answers),
 * frees u and calls release (which frees the rest, the change included). */
struct config_change {
	struct mutation m;
	struct config *cfg;
	struct config_update *u; /* owned */
	const char *peer;
	int32_t code;
	char remark[768];
	void (*done)(struct config_change *c);
	void (*release)(struct config_change *c);
};
void config_change_init(struct config_change *c, struct config *cfg, struct config_update *u);
void config_change_apply(struct mutation *m);

/* Registrar thread only: the SIGHUP work (re-read the -c file, apply what
 * can change live, log the rest). RMQNS_OK, or an error when the file
 * could not be used (then nothing changes; the reason is logged). */
int config_reload(struct config *cfg);

#endif
