/* The options table: every option's name, type, default, whether it
 * changes live, its limits and one-line meaning. Parsing, -p,
 * GET/UPDATE_NAMESRV_CONFIG and the documentation all follow this one
 * table; this file also owns the typed reads and writes of struct options. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "options.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

#define OFF(f) offsetof(struct options, f)
#define KIB (INT64_C(1) << 10)
#define MIB (INT64_C(1) << 20)
#define GIB (INT64_C(1) << 30)

static const char *const log_levels[] = { "DEBUG", "INFO", "WARN", "ERROR", NULL };
static const char *const log_formats[] = { "text", "json", NULL };
static const char *const tls_modes[] = { "disabled", "permissive", "enforcing", NULL };
static const char *const tls_client_auths[] = { "none", "optional", "require", NULL };

/* Minimums for run-time updates: an unauthenticated UPDATE_NAMESRV_CONFIG
 * must not be able to shrink pools, queues or limits to a crawl (the Java
 * project's issue 7542). At start the operator's file may set anything in
 * range. */
#define RUN_MIN_THREADS 2
#define RUN_MIN_QUEUE 1000

static const struct config_option options_table[] = {
	/* NamesrvConfig */
	{ "rocketmqHome", CONFIG_STR, CONFIG_PATH | CONFIG_UNUSED, OFF(rocketmqHome), NULL, 0, 0, 0, NULL,
	  "installation directory, from $ROCKETMQ_HOME; only reported (Java reads its logging setup there)" },
	{ "kvConfigPath", CONFIG_STR, CONFIG_PATH, OFF(kvConfigPath), NULL, 0, 0, 0, NULL,
	  "the KV config file (default $HOME/namesrv/kvConfig.json)" },
	{ "configStorePath", CONFIG_STR, CONFIG_PATH, OFF(configStorePath), NULL, 0, 0, 0, NULL,
	  "where UPDATE_NAMESRV_CONFIG persists; always the -c file when one is given" },
	{ "productEnvName", CONFIG_STR, CONFIG_UNUSED, OFF(productEnvName), "center", 0, 0, 0, NULL,
	  "Java's cluster-test environment name" },
	{ "clusterTest", CONFIG_BOOL, CONFIG_UNUSED, OFF(clusterTest), "false", 0, 0, 0, NULL,
	  "Java's cluster-test mode (forwarding unknown topics); not supported: true is refused at start" },
	{ "orderMessageEnable", CONFIG_BOOL, CONFIG_LIVE, OFF(orderMessageEnable), "false", 0, 0, 0, NULL,
	  "put the ORDER_TOPIC_CONFIG entry of a topic into its route (orderTopicConf)" },
	{ "configBlackList", CONFIG_STR, CONFIG_LIVE, OFF(configBlackList),
	  "configBlackList;configStorePath;kvConfigPath", 0, 0, 0, NULL,
	  "';'-separated keys UPDATE_NAMESRV_CONFIG refuses, besides the paths and this one" },
	{ "returnOrderTopicConfigToBroker", CONFIG_BOOL, CONFIG_LIVE, OFF(returnOrderTopicConfigToBroker), "true",
	  0, 0, 0, NULL, "answer REGISTER_BROKER with the ORDER_TOPIC_CONFIG table" },
	{ "clientRequestThreadPoolNums", CONFIG_I32, CONFIG_UNUSED, OFF(clientRequestThreadPoolNums), "8",
	  1, 1024, RUN_MIN_THREADS, NULL, "Java's route-query pool size (rmqns: serverWorkerThreads)" },
	{ "defaultThreadPoolNums", CONFIG_I32, CONFIG_UNUSED, OFF(defaultThreadPoolNums), "16",
	  1, 1024, RUN_MIN_THREADS, NULL, "Java's pool for other requests (rmqns: serverWorkerThreads)" },
	{ "clientRequestThreadPoolQueueCapacity", CONFIG_I32, CONFIG_UNUSED, OFF(clientRequestThreadPoolQueueCapacity),
	  "50000", 1, INT32_MAX, RUN_MIN_QUEUE, NULL, "Java's route-query queue (rmqns: processorQueueCapacity)" },
	{ "defaultThreadPoolQueueCapacity", CONFIG_I32, CONFIG_UNUSED, OFF(defaultThreadPoolQueueCapacity),
	  "10000", 1, INT32_MAX, RUN_MIN_QUEUE, NULL, "Java's queue for other requests (rmqns: processorQueueCapacity)" },
	{ "scanNotActiveBrokerInterval", CONFIG_I64, 0, OFF(scanNotActiveBrokerInterval), "5000",
	  100, 3600000, 1000, NULL, "milliseconds between two broker expiry scans" },
	{ "unRegisterBrokerQueueCapacity", CONFIG_I32, CONFIG_UNUSED, OFF(unRegisterBrokerQueueCapacity), "3000",
	  1, INT32_MAX, RUN_MIN_QUEUE, NULL, "Java's batch-unregister queue (rmqns unregisters on its registrar)" },
	{ "supportActingMaster", CONFIG_BOOL, CONFIG_LIVE, OFF(supportActingMaster), "false", 0, 0, 0, NULL,
	  "let a slave act as master in routes when the master is gone" },
	{ "enableAllTopicList", CONFIG_BOOL, CONFIG_LIVE, OFF(enableAllTopicList), "true", 0, 0, 0, NULL,
	  "answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)" },
	{ "enableTopicList", CONFIG_BOOL, CONFIG_LIVE, OFF(enableTopicList), "true", 0, 0, 0, NULL,
	  "answer the topic lists 224 and 311-313" },
	{ "notifyMinBrokerIdChanged", CONFIG_BOOL, 0, OFF(notifyMinBrokerIdChanged), "false", 0, 0, 0, NULL,
	  "tell brokers of acting-master groups when the group's smallest broker id changes (code 905)" },
	{ "enableControllerInNamesrv", CONFIG_BOOL, 0, OFF(enableControllerInNamesrv), "false",
	  0, 0, 0, NULL, "run the 5.x controller (A-HA) in this process, on this node's controllerDLegerPeers port" },
	{ "needWaitForService", CONFIG_BOOL, CONFIG_LIVE, OFF(needWaitForService), "false", 0, 0, 0, NULL,
	  "answer route queries only after waitSecondsForService from start" },
	{ "waitSecondsForService", CONFIG_I32, CONFIG_LIVE, OFF(waitSecondsForService), "45",
	  0, 3600, 0, NULL, "seconds needWaitForService waits" },
	{ "deleteTopicWithBrokerRegistration", CONFIG_BOOL, CONFIG_LIVE, OFF(deleteTopicWithBrokerRegistration),
	  "false", 0, 0, 0, NULL, "a full registration drops the broker's topics it no longer lists" },

	/* NettyServerConfig */
	{ "bindAddress", CONFIG_STR, 0, OFF(bindAddress), "0.0.0.0", 0, 0, 0, NULL,
	  "address to listen on" },
	{ "listenPort", CONFIG_I32, 0, OFF(listenPort), "9876", 0, 65535, 0, NULL,
	  "TCP port to listen on" },
	{ "serverWorkerThreads", CONFIG_I32, CONFIG_AUTO, OFF(serverWorkerThreads), "0",
	  0, 1024, RUN_MIN_THREADS, NULL, "processor threads; 0 = one per CPU the process may use (Java: 8 Netty handler threads)" },
	{ "serverCallbackExecutorThreads", CONFIG_I32, CONFIG_UNUSED, OFF(serverCallbackExecutorThreads), "0",
	  0, 1024, 0, NULL, "Java's callback pool for server-initiated calls" },
	{ "serverSelectorThreads", CONFIG_I32, CONFIG_AUTO, OFF(serverSelectorThreads), "0",
	  0, 1024, RUN_MIN_THREADS, NULL, "reactor (socket I/O) threads; 0 = one per CPU the process may use (Java: 3 event loops)" },
	{ "serverOnewaySemaphoreValue", CONFIG_I32, CONFIG_UNUSED, OFF(serverOnewaySemaphoreValue), "256",
	  1, INT32_MAX, 0, NULL, "Java's limit on concurrent server-initiated one-way calls" },
	{ "serverAsyncSemaphoreValue", CONFIG_I32, CONFIG_UNUSED, OFF(serverAsyncSemaphoreValue), "64",
	  1, INT32_MAX, 0, NULL, "Java's limit on concurrent server-initiated async calls" },
	{ "serverChannelMaxIdleTimeSeconds", CONFIG_I32, 0, OFF(serverChannelMaxIdleTimeSeconds), "120",
	  0, INT32_MAX, 10, NULL, "close a connection idle this many seconds; 0 = never" },
	{ "serverSocketSndBufSize", CONFIG_I32, 0, OFF(serverSocketSndBufSize), "0",
	  0, INT32_MAX, 0, NULL, "SO_SNDBUF of accepted sockets; 0 = system default" },
	{ "serverSocketRcvBufSize", CONFIG_I32, 0, OFF(serverSocketRcvBufSize), "0",
	  0, INT32_MAX, 0, NULL, "SO_RCVBUF of accepted sockets; 0 = system default" },
	{ "writeBufferHighWaterMark", CONFIG_I32, CONFIG_UNUSED, OFF(writeBufferHighWaterMark), "0",
	  0, INT32_MAX, 0, NULL, "Netty's write-buffer mark (rmqns: outboundPauseBytes)" },
	{ "writeBufferLowWaterMark", CONFIG_I32, CONFIG_UNUSED, OFF(writeBufferLowWaterMark), "0",
	  0, INT32_MAX, 0, NULL, "Netty's write-buffer mark (rmqns: outboundPauseBytes)" },
	{ "serverSocketBacklog", CONFIG_I32, 0, OFF(serverSocketBacklog), "1024",
	  1, 65535, 64, NULL, "listen(2) backlog" },
	{ "serverNettyWorkerGroupEnable", CONFIG_BOOL, CONFIG_UNUSED, OFF(serverNettyWorkerGroupEnable), "true",
	  0, 0, 0, NULL, "Netty's separate handler thread group" },
	{ "serverPooledByteBufAllocatorEnable", CONFIG_BOOL, CONFIG_UNUSED, OFF(serverPooledByteBufAllocatorEnable),
	  "true", 0, 0, 0, NULL, "Netty's pooled buffer allocator" },
	{ "enableShutdownGracefully", CONFIG_BOOL, CONFIG_UNUSED, OFF(enableShutdownGracefully), "false",
	  0, 0, 0, NULL, "Java's graceful shutdown (rmqns always drains queued answers on SIGTERM)" },
	{ "shutdownWaitTimeSeconds", CONFIG_I32, CONFIG_UNUSED, OFF(shutdownWaitTimeSeconds), "30",
	  0, 3600, 0, NULL, "Java's graceful shutdown wait" },
	{ "useEpollNativeSelector", CONFIG_BOOL, CONFIG_UNUSED, OFF(useEpollNativeSelector), "false",
	  0, 0, 0, NULL, "Netty's epoll transport (rmqns always uses epoll)" },

	/* rmqns */
	{ "maxFrameSize", CONFIG_I64, 0, OFF(maxFrameSize), "16777216",
	  1024, INT32_MAX, MIB, NULL, "largest frame accepted, bytes, length prefix included" },
	{ "processorQueueCapacity", CONFIG_I32, 0, OFF(processorQueueCapacity), "10000",
	  1, 10000000, RUN_MIN_QUEUE, NULL, "requests queued per processor lane before SYSTEM_BUSY" },
	{ "routeQueryInline", CONFIG_BOOL, 0, OFF(routeQueryInline), "true", 0, 0, 0, NULL,
	  "reactors answer GET_ROUTEINFO_BY_TOPIC themselves" },
	{ "serverReactorCpuAffinity", CONFIG_BOOL, 0, OFF(serverReactorCpuAffinity), "false", 0, 0, 0, NULL,
	  "pin reactor i to the i-th CPU the process may run on (for a host of its own)" },
	{ "registerInflateMaxBytes", CONFIG_I64, 0, OFF(registerInflateMaxBytes), "67108864",
	  KIB, 4 * GIB, MIB, NULL, "largest registration body once inflated, bytes" },
	{ "outboundPauseBytes", CONFIG_I64, 0, OFF(outboundPauseBytes), "4194304",
	  KIB, 64 * GIB, MIB, NULL, "stop reading a peer with this many unsent answer bytes" },
	{ "outboundCloseBytes", CONFIG_I64, 0, OFF(outboundCloseBytes), "67108864",
	  KIB, 64 * GIB, 4 * MIB, NULL, "close a peer with this many unsent answer bytes" },
	{ "serverMaxInflight", CONFIG_I32, 0, OFF(serverMaxInflight), "64", 0, 1000000, 8, NULL,
	  "stop reading a connection with this many requests queued until they are answered; 0 = no cap" },
	{ "connectionMemoryBudget", CONFIG_I64, 0, OFF(connectionMemoryBudget), "201326592",
	  0, 64 * GIB, 16 * MIB, NULL,
	  "bytes of partial frames, unsent answers and queued frames for all connections; past it "
	  "the connections holding the most are closed; 0 = no budget" },
	{ "shutdownTimeoutMillis", CONFIG_I32, 0, OFF(shutdownTimeoutMillis), "5000", 100, 600000, 0,
	  NULL, "SIGTERM: requests still queued this long after it are dropped and their connections closed" },
	{ "routeSnapshotPath", CONFIG_STR, CONFIG_PATH, OFF(routeSnapshotPath), "", 0, 0, 0, NULL,
	  "route snapshot file for a warm restart (routes answered at once after a restart); empty = off" },
	{ "routeSnapshotIntervalSeconds", CONFIG_I32, 0, OFF(routeSnapshotIntervalSeconds), "10", 1, 3600, 0,
	  NULL, "the route snapshot is written at most this often, when the routes changed, and at SIGTERM" },
	{ "logLevel", CONFIG_STR, CONFIG_LIVE, OFF(logLevel), "INFO", 0, 0, 0, log_levels,
	  "least severe log level written: DEBUG, INFO, WARN or ERROR" },
	{ "logFormat", CONFIG_STR, 0, OFF(logFormat), "text", 0, 0, 0, log_formats,
	  "log lines as text, or as JSON lines (one object per event: time, level, thread, message)" },
	{ "logFile", CONFIG_STR, CONFIG_PATH, OFF(logFile), "", 0, 0, 0, NULL,
	  "file the log is appended to, reopened on SIGHUP (for logrotate); empty = stderr" },
	{ "kvConfigIgnoreCorrupt", CONFIG_BOOL, 0, OFF(kvConfigIgnoreCorrupt), "false", 0, 0, 0, NULL,
	  "start with an empty KV table when kvConfigPath does not parse (it is moved aside)" },
	{ "httpPort", CONFIG_I32, 0, OFF(httpPort), "0", 0, 65535, 0, NULL,
	  "HTTP port of /metrics, /healthz, /readyz, /brokers and the status page /; 0 = off (9877 suggested)" },
	{ "httpBindAddress", CONFIG_STR, 0, OFF(httpBindAddress), "", 0, 0, 0, NULL,
	  "address the HTTP port listens on; empty = the same as bindAddress" },
	{ "httpWebConfigFile", CONFIG_STR, CONFIG_PATH, OFF(httpWebConfigFile), "", 0, 0, 0, NULL,
	  "the HTTP port's TLS and basic authentication, a Prometheus exporter web.config.yml "
	  "(tls_server_config, basic_auth_users); reloaded when it changes; empty = plaintext, no login" },
	{ "httpProbesOpen", CONFIG_BOOL, 0, OFF(httpProbesOpen), "true", 0, 0, 0, NULL,
	  "with basic_auth_users in httpWebConfigFile, /healthz and /readyz still answer without "
	  "credentials (for probes); false = they need them too" },
	{ "healthStallMillis", CONFIG_I32, 0, OFF(healthStallMillis), "5000", 2000, 3600000, 0, NULL,
	  "/healthz fails once a reactor or the registrar has not turned for this many ms" },
	{ "statusPeers", CONFIG_STR, CONFIG_LIVE, OFF(statusPeers), "", 0, 0, 0, NULL,
	  "the other nodes' HTTP ports (host:port,...) the status page compares with; set, "
	  "/api/ answers cross-origin reads" },

	/* ACL 1.0: Java's names; never changeable by UPDATE_NAMESRV_CONFIG */
	{ "aclEnable", CONFIG_BOOL, 0, OFF(aclEnable), "false", 0, 0, 0, NULL,
	  "check ACL 1.0 signatures: changing requests need an admin account of aclFile" },
	{ "aclFile", CONFIG_STR, CONFIG_PATH, OFF(aclFile), NULL, 0, 0, 0, NULL,
	  "the accounts file, Java's plain_acl.yml (default $ROCKETMQ_HOME/conf/plain_acl.yml)" },
	{ "aclReadRequests", CONFIG_BOOL, 0, OFF(aclReadRequests), "false", 0, 0, 0, NULL,
	  "with aclEnable, reads (route queries, lists) need a signature by any account too" },
	{ "aclBrokerRequests", CONFIG_BOOL, 0, OFF(aclBrokerRequests), "false", 0, 0, 0, NULL,
	  "with aclEnable, broker register/unregister/heartbeat need a signature by any account too" },

	/* TLS (Java's names; all read at start, none changeable at run time) */
	{ "tls.server.mode", CONFIG_STR, 0, OFF(tlsServerMode), "disabled", 0, 0, 0, tls_modes,
	  "TLS on the protocol port: disabled, permissive (TLS and plaintext) or enforcing (TLS only)" },
	{ "tls.server.certPath", CONFIG_STR, CONFIG_PATH, OFF(tlsServerCertPath), "", 0, 0, 0, NULL,
	  "PEM certificate chain of the server (reloaded when it changes)" },
	{ "tls.server.keyPath", CONFIG_STR, CONFIG_PATH, OFF(tlsServerKeyPath), "", 0, 0, 0, NULL,
	  "PEM private key of the server (reloaded when it changes)" },
	{ "tls.server.keyPassword", CONFIG_STR, CONFIG_SECRET, OFF(tlsServerKeyPassword), "", 0, 0, 0, NULL,
	  "password of an encrypted private key; empty = not encrypted" },
	{ "tls.server.trustCertPath", CONFIG_STR, CONFIG_PATH, OFF(tlsServerTrustCertPath), "", 0, 0, 0, NULL,
	  "PEM CA certificates client certificates must chain to (reloaded when it changes)" },
	{ "tls.server.need.client.auth", CONFIG_STR, 0, OFF(tlsServerNeedClientAuth), "none", 0, 0, 0,
	  tls_client_auths, "client certificates: none, optional (verified when sent) or require" },
	{ "tls.config.file", CONFIG_STR, CONFIG_PATH, OFF(tlsConfigFile), "", 0, 0, 0, NULL,
	  "a Java properties file with tls.* keys, as Java's tls.properties; its values win" },
	{ "tls.test.mode.enable", CONFIG_BOOL, 0, OFF(tlsTestModeEnable), "false", 0, 0, 0, NULL,
	  "no tls.server.certPath: a self-signed certificate made at start (tests only)" },

	/* the embedded controller (controller.md §1.4): Java's names, read at
	 * start; served when enableControllerInNamesrv=true */
	{ "controllerDLegerGroup", CONFIG_STR, 0, OFF(controllerDLegerGroup), "", 0, 0, 0, NULL,
	  "embedded controller: the Raft group's name, reported by CONTROLLER_GET_METADATA_INFO" },
	{ "controllerDLegerPeers", CONFIG_STR, 0, OFF(controllerDLegerPeers), "", 0, 0, 0, NULL,
	  "embedded controller: the group, id-host:port;... (brokers reach each node at its host:port)" },
	{ "controllerDLegerSelfId", CONFIG_STR, 0, OFF(controllerDLegerSelfId), "", 0, 0, 0, NULL,
	  "embedded controller: this node's id in controllerDLegerPeers" },
	{ "controllerStorePath", CONFIG_STR, CONFIG_PATH, OFF(controllerStorePath), NULL,
	  0, 0, 0, NULL, "embedded controller: directory of the Raft log and snapshots (default $HOME/DledgerController)" },
	{ "enableElectUncleanMaster", CONFIG_BOOL, 0, OFF(enableElectUncleanMaster), "false",
	  0, 0, 0, NULL, "embedded controller: may elect a replica outside the sync-state set (may lose messages)" },
	{ "notifyBrokerRoleChanged", CONFIG_BOOL, 0, OFF(notifyBrokerRoleChanged), "true",
	  0, 0, 0, NULL, "embedded controller: tell a set's live brokers of a new master (code 1008)" },
	{ "scanInactiveMasterInterval", CONFIG_I64, 0, OFF(scanInactiveMasterInterval), "5000",
	  100, 3600000, 1000, NULL, "embedded controller: ms between the leader's scans for masters no longer live" },
	{ "controllerRaftPortOffset", CONFIG_I32, 0, OFF(controllerRaftPortOffset), "1000",
	  1, 64535, 0, NULL, "embedded controller: a node's Raft port is its controllerDLegerPeers port plus this" },
	{ "controllerRaftMaxMessageBytes", CONFIG_I64, 0, OFF(controllerRaftMaxMessageBytes), "33554432",
	  1048576, 1073741824, 0, NULL, "embedded controller: a Raft message announcing more bytes closes its connection (above the largest snapshot)" },
	{ "controllerPeerTlsCertPath", CONFIG_STR, CONFIG_PATH, OFF(controllerPeerTlsCertPath), "", 0, 0, 0, NULL,
	  "embedded controller: PEM certificate chain this node shows its Raft peers (mutual TLS; reloaded when it changes)" },
	{ "controllerPeerTlsKeyPath", CONFIG_STR, CONFIG_PATH, OFF(controllerPeerTlsKeyPath), "", 0, 0, 0, NULL,
	  "embedded controller: PEM private key of controllerPeerTlsCertPath (reloaded when it changes)" },
	{ "controllerPeerTlsTrustCertPath", CONFIG_STR, CONFIG_PATH, OFF(controllerPeerTlsTrustCertPath), "", 0, 0, 0, NULL,
	  "embedded controller: PEM CA certificates the peers' certificates must chain to (reloaded when it changes)" },
	{ "controllerElectionTimeoutMillis", CONFIG_I32, 0, OFF(controllerElectionTimeoutMillis), "500",
	  100, 60000, 0, NULL, "embedded controller: Raft election timeout; a dead leader is replaced within about twice this" },
	{ "controllerHeartbeatTimeoutMillis", CONFIG_I32, 0, OFF(controllerHeartbeatTimeoutMillis), "100",
	  10, 10000, 0, NULL, "embedded controller: Raft heartbeat interval of the leader (below the election timeout)" },
	{ "controllerAdoptBrokers", CONFIG_BOOL, 0, OFF(controllerAdoptBrokers), "true", 0, 0, 0, NULL,
	  "embedded controller: brokers the store does not know (new group, lost store) are adopted with their ids, and the master they had kept at a higher epoch; false = Java's 2008/2010" },
	{ "controllerAdoptWaitMs", CONFIG_I64, 0, OFF(controllerAdoptWaitMs), "3000", 0, 600000, 0, NULL,
	  "embedded controller: how long the leader hears an adopted set's brokers before electing the master they had" },
	{ "controllerImportFile", CONFIG_STR, CONFIG_PATH, OFF(controllerImportFile), "", 0, 0, 0, NULL,
	  "embedded controller: an rmqns-admin exportControllerState file the first leader imports into an empty store" },
	{ "controllerMaxLiveBrokers", CONFIG_I32, 0, OFF(controllerMaxLiveBrokers), "10000",
	  1, 1000000, 0, NULL, "embedded controller: brokers a node tracks heartbeats of at most; a new one past it is refused (code 2)" },
	{ "controllerMaxHeartbeatTimeoutMillis", CONFIG_I64, 0, OFF(controllerMaxHeartbeatTimeoutMillis), "60000",
	  1000, 3600000, 0, NULL, "embedded controller: the longest heartbeatTimeoutMills a broker's heartbeat may ask; longer is cut to this" },
	{ "processReadEvent", CONFIG_BOOL, 0, OFF(processReadEvent), "false", 0, 0, 0, NULL,
	  "embedded controller: reads of the state (1004, 1006, 1012) answered after a Raft entry commits (Java's isProcessReadEvent)" },
	{ "mappedFileSize", CONFIG_I64, CONFIG_UNUSED, OFF(mappedFileSize), "1073741824", 0, INT64_MAX, 0, NULL,
	  "embedded controller: DLedger's log file size; the Raft log here sizes its own segments" },
	{ "controllerThreadPoolNums", CONFIG_I32, CONFIG_UNUSED, OFF(controllerThreadPoolNums), "16",
	  1, 65535, 0, NULL, "embedded controller: Java's request threads; one thread runs the controller here" },
	{ "controllerRequestThreadPoolQueueCapacity", CONFIG_I32, CONFIG_UNUSED,
	  OFF(controllerRequestThreadPoolQueueCapacity), "50000", 1, INT32_MAX, 0, NULL,
	  "embedded controller: Java's request queue; requests here wait within serverMaxInflight per connection" },
};

#define OPTIONS_COUNT (sizeof(options_table) / sizeof(options_table[0]))

const struct config_option *config_options(size_t *count)
{
	*count = OPTIONS_COUNT;
	return options_table;
}

const struct config_option *config_option_find(const char *name)
{
	for (size_t i = 0; i < OPTIONS_COUNT; i++)
		if (strcmp(options_table[i].name, name) == 0)
			return &options_table[i];
	return NULL;
}

/* ---- typed access ---- */

static char **field_str(struct options *o, const struct config_option *opt)
{
	return (char **)((char *)o + opt->offset);
}
static char *const *cfield_str(const struct options *o, const struct config_option *opt)
{
	return (char *const *)((const char *)o + opt->offset);
}
static bool *field_bool(struct options *o, const struct config_option *opt)
{
	return (bool *)((char *)o + opt->offset);
}
static const bool *cfield_bool(const struct options *o, const struct config_option *opt)
{
	return (const bool *)((const char *)o + opt->offset);
}
static int32_t *field_i32(struct options *o, const struct config_option *opt)
{
	return (int32_t *)((char *)o + opt->offset);
}
static const int32_t *cfield_i32(const struct options *o, const struct config_option *opt)
{
	return (const int32_t *)((const char *)o + opt->offset);
}
static int64_t *field_i64(struct options *o, const struct config_option *opt)
{
	return (int64_t *)((char *)o + opt->offset);
}
static const int64_t *cfield_i64(const struct options *o, const struct config_option *opt)
{
	return (const int64_t *)((const char *)o + opt->offset);
}

/* Java's Long.parseLong over ASCII digits: optional sign, at least one
 * digit, nothing else (no spaces), no overflow. */
bool options_parse_long(const char *s, int64_t *out)
{
	bool neg = false;
	uint64_t v = 0, limit;

	if (*s == '+' || *s == '-') {
		neg = *s == '-';
		s++;
	}
	if (!*s)
		return false;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (limit - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* Java's String.trim: drops characters <= U+0020 at both ends. */
static char *java_trim_dup(const char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (unsigned char)s[n - 1] <= ' ')
		n--;
	while (n > 0 && (unsigned char)*s <= ' ') {
		s++;
		n--;
	}
	return strndup(s, n);
}

struct parsed_value {
	bool b;
	int64_t i;
	char *s; /* owned */
};

static int option_parse(const struct config_option *opt, const char *text, struct parsed_value *pv,
			char *err, size_t errlen)
{
	pv->s = NULL;
	switch (opt->type) {
	case CONFIG_STR:
		pv->s = java_trim_dup(text);
		if (!pv->s) {
			snprintf(err, errlen, "out of memory");
			return RMQNS_ENOMEM;
		}
		if (opt->choices) {
			for (const char *const *c = opt->choices; *c; c++) {
				if (strcasecmp(*c, pv->s) == 0) {
					/* store the canonical spelling */
					free(pv->s);
					pv->s = strdup(*c);
					if (!pv->s) {
						snprintf(err, errlen, "out of memory");
						return RMQNS_ENOMEM;
					}
					return RMQNS_OK;
				}
			}
			char expected[128] = "";
			size_t used = 0;
			for (const char *const *c = opt->choices; *c && used < sizeof expected; c++)
				used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s",
							 c == opt->choices ? "" : ", ", *c);
			snprintf(err, errlen, "invalid value for %s: '%s' (expected one of %s)", opt->name,
				 text, expected);
			free(pv->s);
			pv->s = NULL;
			return RMQNS_EINVAL;
		}
		return RMQNS_OK;
	case CONFIG_BOOL:
		/* Java takes anything but "true" as false; a typo would then
		 * silently flip a flag, so rmqns refuses it. */
		if (strcasecmp(text, "true") == 0) {
			pv->b = true;
			return RMQNS_OK;
		}
		if (strcasecmp(text, "false") == 0) {
			pv->b = false;
			return RMQNS_OK;
		}
		snprintf(err, errlen, "invalid value for %s: '%s' (expected true or false)", opt->name, text);
		return RMQNS_EINVAL;
	case CONFIG_I32:
	case CONFIG_I64:
		if (!options_parse_long(text, &pv->i) ||
		    (opt->type == CONFIG_I32 && (pv->i < INT32_MIN || pv->i > INT32_MAX))) {
			snprintf(err, errlen, "invalid value for %s: '%s' (expected an integer)", opt->name, text);
			return RMQNS_EINVAL;
		}
		if (pv->i < opt->min || pv->i > opt->max) {
			snprintf(err, errlen, "invalid value for %s: %" PRId64 " (expected %" PRId64 " to %" PRId64 ")",
				 opt->name, pv->i, opt->min, opt->max);
			return RMQNS_EINVAL;
		}
		return RMQNS_OK;
	}
	snprintf(err, errlen, "internal error: bad option type for %s", opt->name);
	return RMQNS_EINVAL;
}

int options_check_text(const struct config_option *opt, const char *text, char *err, size_t errlen)
{
	struct parsed_value pv;
	int rc = option_parse(opt, text, &pv, err, errlen);

	free(pv.s);
	return rc;
}

int options_set_text(struct options *o, const struct config_option *opt, const char *text,
		     char *err, size_t errlen)
{
	struct parsed_value pv;
	int rc = option_parse(opt, text, &pv, err, errlen);

	if (rc < 0)
		return rc;
	switch (opt->type) {
	case CONFIG_STR:
		free(*field_str(o, opt));
		*field_str(o, opt) = pv.s;
		break;
	case CONFIG_BOOL:
		*field_bool(o, opt) = pv.b;
		break;
	case CONFIG_I32:
		*field_i32(o, opt) = (int32_t)pv.i;
		break;
	case CONFIG_I64:
		*field_i64(o, opt) = pv.i;
		break;
	}
	return RMQNS_OK;
}

static char *path_join(const char *dir, const char *rest)
{
	char *s = NULL;

	if (asprintf(&s, "%s%s", dir, rest) < 0)
		return NULL;
	return s;
}

int options_init(struct options *o, const struct options_env *env)
{
	char err[256];
	const char *home = env->home ? env->home : "";

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct config_option *opt = &options_table[i];
		if (opt->def && options_set_text(o, opt, opt->def, err, sizeof(err)) < 0) {
			log_error("option table: %s", err);
			options_free(o);
			return RMQNS_EINVAL;
		}
	}
	o->rocketmqHome = strdup(env->rocketmq_home ? env->rocketmq_home : "");
	o->kvConfigPath = path_join(home, "/namesrv/kvConfig.json");
	o->configStorePath = path_join(home, "/namesrv/namesrv.properties");
	o->aclFile = path_join(o->rocketmqHome ? o->rocketmqHome : "", "/conf/plain_acl.yml");
	o->controllerStorePath = path_join(home, "/DledgerController");
	if (!o->rocketmqHome || !o->kvConfigPath || !o->configStorePath || !o->aclFile ||
	    !o->controllerStorePath) {
		options_free(o);
		return RMQNS_ENOMEM;
	}
	return RMQNS_OK;
}

void options_free(struct options *o)
{
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		if (options_table[i].type == CONFIG_STR) {
			free(*field_str(o, &options_table[i]));
			*field_str(o, &options_table[i]) = NULL;
		}
	}
}

int options_copy(struct options *dst, const struct options *src)
{
	*dst = *src;
	for (size_t i = 0; i < OPTIONS_COUNT; i++)
		if (options_table[i].type == CONFIG_STR)
			*field_str(dst, &options_table[i]) = NULL;
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct config_option *opt = &options_table[i];
		const char *s;

		if (opt->type != CONFIG_STR || !(s = *cfield_str(src, opt)))
			continue;
		if (!(*field_str(dst, opt) = strdup(s))) {
			options_free(dst);
			return RMQNS_ENOMEM;
		}
	}
	return RMQNS_OK;
}

/* The embedded controller's options, when it is on: what Java refuses at
 * start (no peers, a self id not among them) and what rmqns cannot
 * honour, each with its reason. */
/* The peers' TLS files: all three or none, each readable. */
static int options_check_peer_tls(const struct options *o, char *err, size_t errlen)
{
	const struct {
		const char *name, *path;
	} files[] = {
		{ "controllerPeerTlsCertPath", o->controllerPeerTlsCertPath },
		{ "controllerPeerTlsKeyPath", o->controllerPeerTlsKeyPath },
		{ "controllerPeerTlsTrustCertPath", o->controllerPeerTlsTrustCertPath },
	};
	unsigned set = 0;

	for (unsigned i = 0; i < 3; i++)
		set += files[i].path && *files[i].path;
	for (unsigned i = 0; set && i < 3; i++) {
		if (!files[i].path || !*files[i].path) {
			snprintf(err, errlen, "peer TLS needs controllerPeerTlsCertPath, "
				 "controllerPeerTlsKeyPath and controllerPeerTlsTrustCertPath: %s is not set",
				 files[i].name);
			return RMQNS_EINVAL;
		}
		if (access(files[i].path, R_OK) != 0) {
			snprintf(err, errlen, "%s %s cannot be read: %s", files[i].name, files[i].path,
				 strerror(errno));
			return RMQNS_EINVAL;
		}
	}
	return RMQNS_OK;
}

static int options_check_controller(const struct options *o, char *err, size_t errlen)
{
	if (!o->controllerDLegerPeers || !*o->controllerDLegerPeers) {
		snprintf(err, errlen, "enableControllerInNamesrv=true needs controllerDLegerPeers "
			 "(n0-host:port;n1-host:port;n2-host:port)");
		return RMQNS_EINVAL;
	}
	int port = ctl_peers_self_port(o->controllerDLegerPeers, o->controllerDLegerSelfId, err, errlen);
	if (port < 0)
		return RMQNS_EINVAL;
	if (port == o->listenPort) {
		snprintf(err, errlen, "controllerDLegerPeers gives this node port %d, which is "
			 "listenPort: the controller needs a port of its own", port);
		return RMQNS_EINVAL;
	}
	if (port + o->controllerRaftPortOffset > 65535) {
		snprintf(err, errlen, "the controller's Raft port (%d + controllerRaftPortOffset %d) is "
			 "past 65535", port, (int)o->controllerRaftPortOffset);
		return RMQNS_EINVAL;
	}
	if (options_check_peer_tls(o, err, errlen) < 0)
		return RMQNS_EINVAL;
	if (o->controllerHeartbeatTimeoutMillis >= o->controllerElectionTimeoutMillis) {
		snprintf(err, errlen, "controllerHeartbeatTimeoutMillis (%d) must be below "
			 "controllerElectionTimeoutMillis (%d)", (int)o->controllerHeartbeatTimeoutMillis,
			 (int)o->controllerElectionTimeoutMillis);
		return RMQNS_EINVAL;
	}
	return RMQNS_OK;
}

int options_check(const struct options *o, char *err, size_t errlen)
{
	/* Java options rmqns cannot honour: refused, never accepted and ignored */
	if (o->enableControllerInNamesrv) {
		int rc = options_check_controller(o, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (o->clusterTest) {
		snprintf(err, errlen, "clusterTest=true: Java's cluster-test mode (forwarding unknown "
			 "topics to a test cluster) is not supported; keep it false");
		return RMQNS_EINVAL;
	}
	if (o->outboundCloseBytes < o->outboundPauseBytes) {
		snprintf(err, errlen, "outboundCloseBytes (%" PRId64 ") must not be less than outboundPauseBytes (%" PRId64 ")",
			 o->outboundCloseBytes, o->outboundPauseBytes);
		return RMQNS_EINVAL;
	}
	return RMQNS_OK;
}

int options_format_value(const struct options *o, const struct config_option *opt, struct buf *out)
{
	switch (opt->type) {
	case CONFIG_STR: {
		const char *s = *cfield_str(o, opt);
		return s ? buf_append_str(out, s) : RMQNS_OK;
	}
	case CONFIG_BOOL:
		return buf_append_str(out, *cfield_bool(o, opt) ? "true" : "false");
	case CONFIG_I32:
		return buf_printf(out, "%" PRId32, *cfield_i32(o, opt));
	case CONFIG_I64:
		return buf_printf(out, "%" PRId64, *cfield_i64(o, opt));
	}
	return RMQNS_EINVAL;
}

bool options_equal(const struct options *a, const struct options *b, const struct config_option *opt)
{
	switch (opt->type) {
	case CONFIG_STR: {
		const char *x = *cfield_str(a, opt), *y = *cfield_str(b, opt);
		return (!x && !y) || (x && y && strcmp(x, y) == 0);
	}
	case CONFIG_BOOL:
		return *cfield_bool(a, opt) == *cfield_bool(b, opt);
	case CONFIG_I32:
		return *cfield_i32(a, opt) == *cfield_i32(b, opt);
	case CONFIG_I64:
		return *cfield_i64(a, opt) == *cfield_i64(b, opt);
	}
	return false;
}

int options_assign(struct options *dst, const struct options *src, const struct config_option *opt)
{
	switch (opt->type) {
	case CONFIG_STR: {
		const char *s = *cfield_str(src, opt);
		char *copy = NULL;
		if (s && !(copy = strdup(s)))
			return RMQNS_ENOMEM;
		free(*field_str(dst, opt));
		*field_str(dst, opt) = copy;
		break;
	}
	case CONFIG_BOOL:
		*field_bool(dst, opt) = *cfield_bool(src, opt);
		break;
	case CONFIG_I32:
		*field_i32(dst, opt) = *cfield_i32(src, opt);
		break;
	case CONFIG_I64:
		*field_i64(dst, opt) = *cfield_i64(src, opt);
		break;
	}
	return RMQNS_OK;
}

int options_log_format(const struct options *o)
{
	int f = log_format_parse(o->logFormat);
	return f < 0 ? LOG_TEXT : f;
}

int options_log_level(const struct options *o)
{
	for (int i = 0; log_levels[i]; i++)
		if (o->logLevel && strcasecmp(o->logLevel, log_levels[i]) == 0)
			return i; /* the table follows enum log_level */
	return LOG_INFO;
}
