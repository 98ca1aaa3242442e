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
	int64_t registerInflateMaxBytes;   /* cap on an inflated/parsed registration */
	int64_t outboundPauseBytes;        /* stop reading a peer past this many unsent bytes */
	int64_t outboundCloseBytes;        /* close it past this many */
	char *logLevel;
};

struct config;
struct registrar;

enum config_action {
	CONFIG_ACTION_RUN = 0,   /* start the server */
	CONFIG_ACTION_PRINT = 1, /* -p: print the options, exit 0 */
	CONFIG_ACTION_HELP = 2,  /* -h: print usage, exit 0 */
};

/* Parses `rmqns [-c FILE] [-p] [-h] [--KEY=VALUE ...]`: defaults, then the
 * file, then the overrides. On failure returns a negative rmqns_err and a
 * one-line reason in err (exit status 1). */
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

/* The options in force. Call inside rcu_read_lock(); valid until the
 * read-side section ends. */
const struct options *config_current(const struct config *cfg);

#endif
