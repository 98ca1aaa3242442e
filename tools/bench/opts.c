/* rmqns-bench command line: parsing, per-scenario defaults, usage text. */
#include "opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "rmqns/err.h"

static const char *const scenario_names[] = {
	[SC_ROUTE] = "route", [SC_REGISTER] = "register", [SC_MIXED] = "mixed",
	[SC_CHURN] = "churn", [SC_SEED] = "seed", [SC_STARTUP] = "startup",
	[SC_RATIO] = "ratio", [SC_DISCONNECT] = "disconnect", [SC_CLIENTS] = "clients",
	[SC_CONTROLLER] = "controller",
};

const char *opts_scenario_name(enum bench_scenario sc)
{
	if ((unsigned)sc < sizeof(scenario_names) / sizeof(scenario_names[0]))
		return scenario_names[sc];
	return "?";
}

void opts_usage(FILE *f)
{
	fputs(
"Usage: rmqns-bench SCENARIO [OPTIONS]\n"
"       rmqns-bench ratio A.json [A.json...] -- B.json [B.json...]\n"
"\n"
"Load tool for RocketMQ NameServers (rmqns, the Java NameServer, rmqns-floor).\n"
"Every run is bounded: it stops after --duration and/or --requests.\n"
"\n"
"Scenarios:\n"
"  route     C connections x P requests in flight, GET_ROUTEINFO_BY_TOPIC (105)\n"
"            over the topics of the seeded brokers; closed loop, or open loop\n"
"            with --rate (latency from the intended send time).\n"
"  register  B brokers re-registering T topics each (REGISTER_BROKER, 103),\n"
"            one connection and one request in flight per broker.\n"
"  mixed     route load, first idle, then during a registration storm of\n"
"            --storm-brokers x --storm-topics re-registering as fast as answered;\n"
"            reports both phases and their ratios.\n"
"            With --heartbeats and --kv-interval, liveness traffic beside it\n"
"            (BROKER_HEARTBEAT 904, QUERY_DATA_VERSION 322, PUT_KV_CONFIG 100),\n"
"            measured in both phases.\n"
"  disconnect  mass disconnect: B brokers x T topics (default 32 x 40000), each\n"
"            on its own connection, close their connections at once; reports\n"
"            the time until every route is gone, the latency of a fresh\n"
"            broker's 100-topic registrations sent back to back meanwhile,\n"
"            and of route queries on a broker that stays (-c x -p, 2 x 1).\n"
"  churn     C concurrent cycles of connect, query, close.\n"
"  clients   a RocketMQ estate's clients: -c connections (e.g. 50k), each\n"
"            refreshing the routes of --topics-per-client topics every\n"
"            --period-ms, a fraction reconnecting (--churn); with --storm-brokers\n"
"            or --storm-topics, a registration storm beside it. Reports the\n"
"            route (and registration) latencies and, with --pid, the server's\n"
"            RSS per connection.\n"
"  controller  brokers in controller mode (5.x A-HA): --broker-sets x --replicas\n"
"            brokers, each listening on its own loopback port, go through the\n"
"            broker's life cycle with the --controller-addr controllers (1005,\n"
"            1012, 1013, 1003, 1002, 904, 1004, 1001) and register with the\n"
"            NameServers of --addr (a;b;... allowed) as id 0 (master) or their\n"
"            id; then --kills masters are killed (or --freeze) one every\n"
"            --kill-every. Reports per kill: death -> new master elected\n"
"            (1006/1004/1008), -> its 1008 received, -> a route (105) naming\n"
"            it brokerId 0; and heartbeats sent per second.\n"
"  seed      register brokers and keep them alive (re-register every\n"
"            --keepalive) until the run ends, so other tools have routes.\n"
"  startup   time from exec of --exec CMD to the first successful answer\n"
"            (GET_BROKER_CLUSTER_INFO, 106), --runs times.\n"
"  ratio     medians of the figures of saved --json runs, and A/B ratios.\n"
"\n"
"Target and bounds:\n"
"  -a, --addr HOST:PORT      server address (default 127.0.0.1:9876)\n"
"  -d, --duration TIME       measured run time (default 10s; mixed: both phases;\n"
"                            controller with kills: a bound, 60s + each kill's\n"
"                            slowest case;\n"
"                            disconnect: the longest wait for the routes to go, 60s;\n"
"                            clients: two periods, after the connections are open)\n"
"  -n, --requests N          stop after N requests of the measured load\n"
"      --warmup TIME         load before measuring starts (default 0)\n"
"      --timeout TIME        a query answer later than this is an error and the\n"
"                            connection is reopened (default 3s)\n"
"      --register-timeout TIME  the same for registrations (default 60s: a body\n"
"                            of 40,000 topics takes a server a while; disconnect\n"
"                            180s, for 32 such bodies at once)\n"
"Route load (route, mixed, churn):\n"
"  -c, --conns N             connections (churn: concurrent cycles) (default 8;\n"
"                            clients 1000; --connections is the same)\n"
"  -p, --depth N             requests in flight per connection (default 4)\n"
"  -r, --rate N              open loop: total requests per second (default 0 =\n"
"                            closed loop); latency then counts from the intended\n"
"                            send time (coordinated-omission correction)\n"
"      --threads N           event-loop threads sharing the connections (default 1)\n"
"      --topics N            query only the first N topics (default all seeded)\n"
"      --version N           version stamped on requests (default 479; < 401 asks\n"
"                            for the non-standard route JSON)\n"
"      --serialize json|rocketmq  request header serialization (default json)\n"
"      --churn-queries N     churn: queries per connection before closing (default 1)\n"
"Brokers (seeded for route/mixed/churn/seed, the load for register):\n"
"  -b, --brokers N           brokers (default 10; register 4)\n"
"  -t, --broker-topics N     topics per broker, at least 2 (default 100; register 1000)\n"
"      --queues N            read and write queues per topic (default 8)\n"
"      --layout distinct|shared  each broker its own topics, or all brokers the\n"
"                            same topics (default distinct)\n"
"      --compressed          zlib bodies (compressed=true, protocol.md 5.6)\n"
"      --dv change|same      register: a new data version on every registration\n"
"                            or always the same (default change)\n"
"      --interval TIME       register: pause between one broker's registrations\n"
"                            (default 0: as fast as the server answers)\n"
"      --keepalive TIME      re-registration period of seeded brokers (default 30s)\n"
"      --no-seed             route/churn/mixed: register nothing, query topics\n"
"                            registered by someone else (e.g. a seed run)\n"
"      --cluster NAME        cluster name (default BenchCluster)\n"
"      --broker-prefix NAME  broker names NAME-<i> (default bench-broker)\n"
"      --topic-prefix NAME   topic names NAME-b<i>-t<j> / NAME-t<j> (default BenchTopic)\n"
"      --broker-port N       fake broker address 127.0.0.1:N+i (default 20000)\n"
"      --broker-id N         the brokerId they register with (default 0, masters;\n"
"                            N > 0: slaves of sets whose master is elsewhere)\n"
"Many clients (clients):\n"
"      --period-ms N         each connection refreshes its routes every N ms\n"
"                            (default 30000, a RocketMQ client's poll interval)\n"
"      --jitter F            a period varies by up to F of itself either way\n"
"                            (0..1, default 0.1)\n"
"      --topics-per-client N topics a refresh asks for: N GET_ROUTEINFO_BY_TOPIC\n"
"                            pipelined on the connection (default 10)\n"
"      --churn F             fraction of the connections that close after a\n"
"                            refresh and reconnect, per period (0..1, default 0)\n"
"      --connect-rate N      connections opened per second while ramping up\n"
"                            (default 5000); the first refreshes are then\n"
"                            spread evenly over the first period\n"
"      --source-addrs LIST|N bind the connections in turn to these IPv4 source\n"
"                            addresses (127.0.0.2,127.0.0.3,...) or to the N\n"
"                            addresses from 127.0.0.2 up, so that each has its\n"
"                            own ephemeral ports; 0: the kernel picks (default:\n"
"                            one per 5,000 connections when --addr is 127.x)\n"
"      The descriptor limit is raised to the hard limit; a hard limit below the\n"
"      connections asked for is refused with the figure it needs.\n"
"Registration storm (mixed; clients when one of these is given):\n"
"      --storm-brokers N     brokers re-registering (default 4)\n"
"      --storm-topics N      topics each (default 10000)\n"
"      --storm-addr HOST:PORT  send the storm to another server: a control,\n"
"                            what the same load on this machine costs a\n"
"                            server that does none of the storm's work\n"
"      --no-idle             skip the idle phase\n"
"Liveness traffic (mixed), reported per phase:\n"
"      --heartbeats [N]      N more brokers (default 4), registered once with 10\n"
"                            topics, each sending BROKER_HEARTBEAT (904) and\n"
"                            QUERY_DATA_VERSION (322) every --heartbeat-interval,\n"
"                            at most one of each in flight\n"
"      --heartbeat-interval TIME  (default 10ms)\n"
"      --kv-interval TIME    one PUT_KV_CONFIG (100) every TIME on a connection\n"
"                            of its own, one in flight (default: none)\n"
"Mass disconnect (disconnect):\n"
"      --poll-interval TIME  between looks at GET_BROKER_CLUSTER_INFO (106) and\n"
"                            the sampled routes (105) after the closes (default 5ms)\n"
"      --measure-for TIME    disconnect: go on registering the fresh broker and\n"
"                            querying at least this long after the closes, so that\n"
"                            the server's removal of the tables is measured too\n"
"                            (default 2s)\n"
"Brokers in controller mode (controller):\n"
"      --controller-addr LIST  the controllers, HOST:PORT;HOST:PORT (required)\n"
"      --broker-sets N       broker sets (default 2), named --broker-prefix-<i>;\n"
"                            without --broker-prefix each run names them afresh\n"
"      --replicas N          brokers per set (1..8, default 2)\n"
"      --broker-port N       first broker port, the others follow (default 0:\n"
"                            each picked by the kernel)\n"
"      -t, --broker-topics N topics of each set (default 4)\n"
"      --kills N             masters killed in all (default 0: the life cycle\n"
"                            and heartbeats only, for --duration)\n"
"      --kill-every TIME     between kills (default 5s); sets take turns\n"
"      --return-after TIME   a killed master restarts this long after its death\n"
"                            (not before a new master is seen), keeps its id\n"
"                            and follows the new master (default 1s)\n"
"      --freeze              stop the master's heartbeats and reads instead,\n"
"                            its connections open (a hung process)\n"
"      --heartbeat-interval TIME  904 to every controller (default 1s)\n"
"      --heartbeat-timeout TIME   heartbeatTimeoutMills sent (default 10s)\n"
"      --replica-poll TIME   GET_REPLICA_INFO period (default 5s)\n"
"      --poll-interval TIME  route and sync-state polls after a kill (default 5ms)\n"
"      --failover-timeout TIME  a stage not seen by then is missing (default\n"
"                            30s, with --freeze 60s)\n"
"Access control (a server with aclEnable):\n"
"      --access-key AK       sign every request as an ACL 1.0 client, with\n"
"      --secret-key SK       this account (AccessKey and Signature ext fields)\n"
"TLS to the server (route, register, mixed, churn, seed):\n"
"      --tls                 talk TLS; without --tls-ca the server's certificate\n"
"                            is not checked (a Java client's default test mode)\n"
"      --tls-ca FILE         verify the server's certificate against this PEM CA,\n"
"                            and that its subjectAltName names --addr's host\n"
"      --tls-no-verify-hostname  the chain only, not the name (as Java's clients)\n"
"      --tls-cert FILE       present this client certificate (PEM), with\n"
"      --tls-key FILE        its key (tls.server.need.client.auth)\n"
"Server process (local only):\n"
"      --pid PID             report the server's CPU time and RSS before/after\n"
"      --server-pid PID      (clients: also with the connections open, and per\n"
"                            connection; a descriptor limit of the server's\n"
"                            below the connections is warned of)\n"
"Output:\n"
"      --json                print the result as JSON on stdout\n"
"      --plot FILE.svg       latency-by-percentile and throughput-over-time plot\n"
"      --floor FILE.json     a saved --json run of rmqns-floor: print every\n"
"                            figure as a fraction of the floor's\n"
"      --progress / --quiet  force the per-second progress line on stderr on or\n"
"                            off (default: on when stderr is a terminal)\n"
"Startup:\n"
"      --exec CMD            server command line (run with /bin/sh -c 'exec CMD');\n"
"                            --addr must be where it listens\n"
"      --runs N              starts to time (default 5)\n"
"  -h, --help                this text\n"
"\n"
"TIME: 10s, 250ms, 500us, 2m or plain seconds. N accepts k and M suffixes.\n"
"Exit status: 0 when the run had no errors, 1 when it had, 2 on bad usage.\n",
	      f);
}

int opts_parse_duration(const char *s, uint64_t *out_ns)
{
	if (!s || !*s)
		return RMQNS_EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return RMQNS_EINVAL;
	double mul;
	if (*end == '\0' || strcmp(end, "s") == 0)
		mul = 1e9;
	else if (strcmp(end, "ms") == 0)
		mul = 1e6;
	else if (strcmp(end, "us") == 0)
		mul = 1e3;
	else if (strcmp(end, "m") == 0)
		mul = 60e9;
	else if (strcmp(end, "h") == 0)
		mul = 3600e9;
	else
		return RMQNS_EINVAL;
	double ns = v * mul;
	if (ns > 1e18)
		return RMQNS_ETOOBIG;
	*out_ns = (uint64_t)llround(ns);
	return RMQNS_OK;
}

int opts_parse_count(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return RMQNS_EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return RMQNS_EINVAL;
	if (*end == 'k' || *end == 'K') {
		v *= 1e3;
		end++;
	} else if (*end == 'M') {
		v *= 1e6;
		end++;
	}
	if (*end != '\0' || v > 1e15 || v != floor(v))
		return RMQNS_EINVAL;
	*out = (uint64_t)v;
	return RMQNS_OK;
}

static int opts_fail(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int opts_fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && err_len)
		vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return RMQNS_EINVAL;
}

static int opts_u32(const char *arg, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	if (opts_parse_count(arg, &v) || v < lo || v > hi)
		return RMQNS_EINVAL;
	*out = (uint32_t)v;
	return RMQNS_OK;
}

int opts_split_addrs(const char *list, char (*out)[OPTS_ADDR_MAX], uint32_t cap, uint32_t *n)
{
	uint32_t k = 0;
	if (!list || !*list)
		return RMQNS_EINVAL;
	for (const char *p = list; *p;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);
		if (len > 0) { /* "a;b;" (Java's trailing ';') is two entries */
			const char *colon = memrchr(p, ':', len);
			if (!colon || colon == p || k == cap || len >= OPTS_ADDR_MAX)
				return RMQNS_EINVAL;
			char port[8];
			size_t plen = len - (size_t)(colon + 1 - p);
			uint32_t v;
			if (plen == 0 || plen >= sizeof(port))
				return RMQNS_EINVAL;
			memcpy(port, colon + 1, plen);
			port[plen] = '\0';
			if (opts_u32(port, 1, 65535, &v))
				return RMQNS_EINVAL;
			memcpy(out[k], p, len);
			out[k][len] = '\0';
			k++;
		}
		if (!semi)
			break;
		p = semi + 1;
	}
	if (k == 0)
		return RMQNS_EINVAL;
	*n = k;
	return RMQNS_OK;
}

static int opts_name(const char *arg, char *dst, size_t cap)
{
	size_t n = strlen(arg);
	if (n == 0 || n >= cap)
		return RMQNS_EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)arg[i];
		if (c <= ' ' || c == '"' || c == '\\' || c >= 0x7f)
			return RMQNS_EINVAL; /* names go into JSON and compact lines unescaped */
	}
	memcpy(dst, arg, n + 1);
	return RMQNS_OK;
}

enum {
	OPT_WARMUP = 256, OPT_TIMEOUT, OPT_THREADS, OPT_TOPICS, OPT_VERSION, OPT_SERIALIZE,
	OPT_CHURN_QUERIES, OPT_QUEUES, OPT_LAYOUT, OPT_COMPRESSED, OPT_DV, OPT_INTERVAL,
	OPT_KEEPALIVE, OPT_NO_SEED, OPT_CLUSTER, OPT_BROKER_PREFIX, OPT_TOPIC_PREFIX,
	OPT_BROKER_PORT, OPT_BROKER_ID, OPT_STORM_BROKERS, OPT_STORM_TOPICS, OPT_STORM_ADDR, OPT_NO_IDLE, OPT_PID, OPT_JSON,
	OPT_PLOT, OPT_FLOOR, OPT_PROGRESS, OPT_QUIET, OPT_EXEC, OPT_RUNS, OPT_REG_TIMEOUT,
	OPT_HEARTBEATS, OPT_HEARTBEAT_INTERVAL, OPT_KV_INTERVAL, OPT_POLL_INTERVAL, OPT_MEASURE_FOR,
	OPT_ACCESS_KEY, OPT_SECRET_KEY,
	OPT_TLS, OPT_TLS_CA, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_NO_HOST,
	OPT_PERIOD_MS, OPT_JITTER, OPT_TOPICS_PER_CLIENT, OPT_CHURN, OPT_CONNECT_RATE, OPT_SOURCE_ADDRS,
	OPT_CONTROLLER_ADDR, OPT_BROKER_SETS, OPT_REPLICAS, OPT_KILLS, OPT_KILL_EVERY, OPT_RETURN_AFTER,
	OPT_FREEZE, OPT_HEARTBEAT_TIMEOUT, OPT_FAILOVER_TIMEOUT, OPT_REPLICA_POLL,
};

static const struct option long_opts[] = {
	{ "addr", required_argument, NULL, 'a' },
	{ "duration", required_argument, NULL, 'd' },
	{ "requests", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "register-timeout", required_argument, NULL, OPT_REG_TIMEOUT },
	{ "conns", required_argument, NULL, 'c' },
	{ "connections", required_argument, NULL, 'c' },
	{ "period-ms", required_argument, NULL, OPT_PERIOD_MS },
	{ "jitter", required_argument, NULL, OPT_JITTER },
	{ "topics-per-client", required_argument, NULL, OPT_TOPICS_PER_CLIENT },
	{ "churn", required_argument, NULL, OPT_CHURN },
	{ "connect-rate", required_argument, NULL, OPT_CONNECT_RATE },
	{ "source-addrs", required_argument, NULL, OPT_SOURCE_ADDRS },
	{ "depth", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "topics", required_argument, NULL, OPT_TOPICS },
	{ "version", required_argument, NULL, OPT_VERSION },
	{ "serialize", required_argument, NULL, OPT_SERIALIZE },
	{ "churn-queries", required_argument, NULL, OPT_CHURN_QUERIES },
	{ "brokers", required_argument, NULL, 'b' },
	{ "broker-topics", required_argument, NULL, 't' },
	{ "queues", required_argument, NULL, OPT_QUEUES },
	{ "layout", required_argument, NULL, OPT_LAYOUT },
	{ "compressed", no_argument, NULL, OPT_COMPRESSED },
	{ "dv", required_argument, NULL, OPT_DV },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "keepalive", required_argument, NULL, OPT_KEEPALIVE },
	{ "no-seed", no_argument, NULL, OPT_NO_SEED },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "broker-prefix", required_argument, NULL, OPT_BROKER_PREFIX },
	{ "topic-prefix", required_argument, NULL, OPT_TOPIC_PREFIX },
	{ "broker-port", required_argument, NULL, OPT_BROKER_PORT },
	{ "broker-id", required_argument, NULL, OPT_BROKER_ID },
	{ "storm-brokers", required_argument, NULL, OPT_STORM_BROKERS },
	{ "storm-topics", required_argument, NULL, OPT_STORM_TOPICS },
	{ "storm-addr", required_argument, NULL, OPT_STORM_ADDR },
	{ "no-idle", no_argument, NULL, OPT_NO_IDLE },
	{ "heartbeats", optional_argument, NULL, OPT_HEARTBEATS },
	{ "heartbeat-interval", required_argument, NULL, OPT_HEARTBEAT_INTERVAL },
	{ "kv-interval", required_argument, NULL, OPT_KV_INTERVAL },
	{ "poll-interval", required_argument, NULL, OPT_POLL_INTERVAL },
	{ "measure-for", required_argument, NULL, OPT_MEASURE_FOR },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "tls-ca", required_argument, NULL, OPT_TLS_CA },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-no-verify-hostname", no_argument, NULL, OPT_TLS_NO_HOST },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "server-pid", required_argument, NULL, OPT_PID },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "floor", required_argument, NULL, OPT_FLOOR },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "exec", required_argument, NULL, OPT_EXEC },
	{ "runs", required_argument, NULL, OPT_RUNS },
	{ "access-key", required_argument, NULL, OPT_ACCESS_KEY },
	{ "secret-key", required_argument, NULL, OPT_SECRET_KEY },
	{ "controller-addr", required_argument, NULL, OPT_CONTROLLER_ADDR },
	{ "broker-sets", required_argument, NULL, OPT_BROKER_SETS },
	{ "replicas", required_argument, NULL, OPT_REPLICAS },
	{ "kills", required_argument, NULL, OPT_KILLS },
	{ "kill-every", required_argument, NULL, OPT_KILL_EVERY },
	{ "return-after", required_argument, NULL, OPT_RETURN_AFTER },
	{ "freeze", no_argument, NULL, OPT_FREEZE },
	{ "heartbeat-timeout", required_argument, NULL, OPT_HEARTBEAT_TIMEOUT },
	{ "failover-timeout", required_argument, NULL, OPT_FAILOVER_TIMEOUT },
	{ "replica-poll", required_argument, NULL, OPT_REPLICA_POLL },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A fraction 0..1. */
static int opts_fraction(const char *arg, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < 0.0 || v > 1.0)
		return RMQNS_EINVAL;
	*out = v;
	return RMQNS_OK;
}

/* "127.0.0.2,127.0.0.3" or a count N (127.0.0.2 up); "0": none. */
static int opts_sources(const char *arg, uint32_t *out, uint32_t *n)
{
	if (!strchr(arg, '.')) {
		uint32_t k;
		if (opts_u32(arg, 0, OPTS_MAX_SOURCES, &k))
			return RMQNS_EINVAL;
		for (uint32_t i = 0; i < k; i++)
			out[i] = 0x7f000002u + i;
		*n = k;
		return RMQNS_OK;
	}
	char one[INET_ADDRSTRLEN];
	uint32_t k = 0;
	for (const char *p = arg;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		struct in_addr a;
		if (len == 0 || len >= sizeof(one) || k == OPTS_MAX_SOURCES)
			return RMQNS_EINVAL;
		memcpy(one, p, len);
		one[len] = '\0';
		if (inet_pton(AF_INET, one, &a) != 1)
			return RMQNS_EINVAL;
		out[k++] = ntohl(a.s_addr);
		if (!comma)
			break;
		p = comma + 1;
	}
	*n = k;
	return RMQNS_OK;
}

static void opts_defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->addr, sizeof(o->addr), "127.0.0.1:9876");
	o->threads = 1;
	o->version = 479;
	o->queues = 8;
	o->dv_change = true;
	o->keepalive_ns = 30000000000ull;
	o->progress = -1;
	o->pid = 0;
	o->runs = 5;
	o->churn_queries = 1;
	o->period_ns = 30000000000ull;
	o->jitter = 0.1;
	o->topics_per_client = 10;
	o->connect_rate = 5000;
	o->broker_port = 20000;
	snprintf(o->cluster, sizeof(o->cluster), "BenchCluster");
	snprintf(o->broker_prefix, sizeof(o->broker_prefix), "bench-broker");
	snprintf(o->topic_prefix, sizeof(o->topic_prefix), "BenchTopic");
}

static int opts_parse_ratio(int argc, char **argv, struct bench_opts *o, char *err, size_t err_len)
{
	int sep = -1;
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	if (sep < 0)
		return opts_fail(err, err_len, "ratio needs A files, '--', B files");
	o->ratio_a = argv + 2;
	o->ratio_na = (size_t)(sep - 2);
	o->ratio_b = argv + sep + 1;
	o->ratio_nb = (size_t)(argc - sep - 1);
	if (o->ratio_na == 0 || o->ratio_nb == 0)
		return opts_fail(err, err_len, "ratio needs at least one file on each side");
	return RMQNS_OK;
}

/* controller: checks and defaults. A broker's own timings (controller.md
 * §4.1) unless asked otherwise; kills need a slave to take over. */
static int opts_controller(struct bench_opts *o, bool port_given, bool topics_given, char *err,
			   size_t err_len)
{
	if (!o->controller_addr[0])
		return opts_fail(err, err_len, "controller needs --controller-addr HOST:PORT[;HOST:PORT...]");
	char tmp[OPTS_MAX_NAMESRVS][OPTS_ADDR_MAX];
	uint32_t n;
	if (opts_split_addrs(o->addr, tmp, OPTS_MAX_NAMESRVS, &n))
		return opts_fail(err, err_len, "bad --addr '%s' (HOST:PORT;HOST:PORT..., at most %d)",
				 o->addr, OPTS_MAX_NAMESRVS);
	if (o->requests)
		return opts_fail(err, err_len, "controller runs for its kills: bound it with --duration");
	if (o->heartbeats || o->kv_interval_ns || o->measure_for_ns)
		return opts_fail(err, err_len,
				 "--heartbeats, --kv-interval and --measure-for do not apply to controller");
	if (o->tls || o->access_key)
		return opts_fail(err, err_len, "controller speaks plaintext without ACL signatures");
	if (!o->broker_sets) o->broker_sets = 2;
	if (!o->replicas) o->replicas = 2;
	if (o->kills && o->replicas < 2)
		return opts_fail(err, err_len, "--kills needs --replicas of at least 2 (a slave takes over)");
	if (!o->kill_every_ns) o->kill_every_ns = 5000000000ull;
	if (!o->return_after_ns) o->return_after_ns = 1000000000ull;
	if (!o->heartbeat_interval_ns) o->heartbeat_interval_ns = 1000000000ull;
	if (!o->heartbeat_timeout_ns) o->heartbeat_timeout_ns = 10000000000ull;
	if (!o->failover_timeout_ns)
		o->failover_timeout_ns = o->freeze ? HIST_MAX_NS : 30000000000ull;
	if (!o->replica_poll_ns) o->replica_poll_ns = 5000000000ull;
	if (!o->poll_interval_ns) o->poll_interval_ns = 5000000ull;
	if (!topics_given) o->broker_topics = 4;
	if (!port_given) o->broker_port = 0; /* every broker's port picked by the kernel */
	else if (o->broker_port &&
		 o->broker_port + (uint64_t)o->broker_sets * o->replicas - 1 > 65535)
		return opts_fail(err, err_len, "--broker-port %u leaves no room for %u brokers",
				 o->broker_port, o->broker_sets * o->replicas);
	if (!o->duration_ns && !o->kills)
		o->duration_ns = 10000000000ull; /* the life cycle and heartbeats only */
	if (!o->duration_ns) /* a bound, not a target: start-up, then every kill at its slowest */
		o->duration_ns = 60000000000ull +
				 (uint64_t)o->kills * (o->kill_every_ns + o->failover_timeout_ns +
						       o->return_after_ns);
	return RMQNS_OK;
}

int opts_parse(int argc, char **argv, struct bench_opts *o, bool *help, char *err, size_t err_len)
{
	opts_defaults(o);
	*help = false;
	if (argc < 2)
		return opts_fail(err, err_len, "no scenario given (try --help)");
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		*help = true;
		return RMQNS_OK;
	}
	bool found = false;
	for (unsigned i = 0; i < sizeof(scenario_names) / sizeof(scenario_names[0]); i++)
		if (strcmp(argv[1], scenario_names[i]) == 0) {
			o->scenario = (enum bench_scenario)i;
			found = true;
		}
	if (!found)
		return opts_fail(err, err_len, "unknown scenario '%s'", argv[1]);
	if (o->scenario == SC_RATIO)
		return opts_parse_ratio(argc, argv, o, err, err_len);

	/* 0 below means "not given": filled by the scenario's default after. */
	bool dv_given = false, liveness_given = false, poll_given = false, keepalive_given = false;
	bool clients_given = false, sources_given = false;
	bool controller_given = false, port_given = false, topics_given = false;
	optind = 0; /* GNU: start afresh, so the parser can run more than once */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc - 1, argv + 1, "+a:d:n:c:p:r:b:t:h", long_opts, NULL)) != -1) {
		const char *a = optarg;
		uint64_t v;
		switch (c) {
		case 'a':
			if (strlen(a) == 0 || strlen(a) >= sizeof(o->addr) || !strrchr(a, ':'))
				return opts_fail(err, err_len, "bad --addr '%s' (HOST:PORT)", a);
			snprintf(o->addr, sizeof(o->addr), "%s", a);
			break;
		case 'd':
			if (opts_parse_duration(a, &o->duration_ns) || o->duration_ns == 0)
				return opts_fail(err, err_len, "bad --duration '%s'", a);
			break;
		case 'n':
			if (opts_parse_count(a, &o->requests) || o->requests == 0)
				return opts_fail(err, err_len, "bad --requests '%s'", a);
			break;
		case OPT_WARMUP:
			if (opts_parse_duration(a, &o->warmup_ns))
				return opts_fail(err, err_len, "bad --warmup '%s'", a);
			break;
		case OPT_TIMEOUT:
			if (opts_parse_duration(a, &o->timeout_ns) || o->timeout_ns < 1000000)
				return opts_fail(err, err_len, "bad --timeout '%s' (at least 1ms)", a);
			break;
		case OPT_REG_TIMEOUT:
			if (opts_parse_duration(a, &o->reg_timeout_ns) || o->reg_timeout_ns < 1000000)
				return opts_fail(err, err_len, "bad --register-timeout '%s' (at least 1ms)", a);
			break;
		case 'c':
			if (opts_u32(a, 1, 1000000, &o->conns))
				return opts_fail(err, err_len, "bad --conns '%s' (1..1000000)", a);
			break;
		case OPT_PERIOD_MS:
			if (opts_parse_count(a, &v) || v < 10 || v > 3600000)
				return opts_fail(err, err_len, "bad --period-ms '%s' (10..3600000)", a);
			o->period_ns = v * 1000000ull;
			clients_given = true;
			break;
		case OPT_JITTER:
			if (opts_fraction(a, &o->jitter))
				return opts_fail(err, err_len, "bad --jitter '%s' (0..1)", a);
			clients_given = true;
			break;
		case OPT_TOPICS_PER_CLIENT:
			if (opts_u32(a, 1, 1000, &o->topics_per_client))
				return opts_fail(err, err_len, "bad --topics-per-client '%s' (1..1000)", a);
			clients_given = true;
			break;
		case OPT_CHURN:
			if (opts_fraction(a, &o->churn))
				return opts_fail(err, err_len, "bad --churn '%s' (0..1)", a);
			clients_given = true;
			break;
		case OPT_CONNECT_RATE:
			if (opts_u32(a, 1, 1000000, &o->connect_rate))
				return opts_fail(err, err_len, "bad --connect-rate '%s' (1..1000000)", a);
			clients_given = true;
			break;
		case OPT_SOURCE_ADDRS:
			if (opts_sources(a, o->sources, &o->nsources))
				return opts_fail(err, err_len,
						 "bad --source-addrs '%s' (IPv4 addresses split by commas, or a count up to %d)",
						 a, OPTS_MAX_SOURCES);
			clients_given = sources_given = true;
			break;
		case 'p':
			if (opts_u32(a, 1, 65536, &o->depth))
				return opts_fail(err, err_len, "bad --depth '%s' (1..65536)", a);
			break;
		case 'r':
			if (opts_parse_count(a, &v) || v > 100000000)
				return opts_fail(err, err_len, "bad --rate '%s'", a);
			o->rate = (double)v;
			break;
		case OPT_THREADS:
			if (opts_u32(a, 1, 64, &o->threads))
				return opts_fail(err, err_len, "bad --threads '%s' (1..64)", a);
			break;
		case OPT_TOPICS:
			if (opts_u32(a, 1, 100000000, &o->topics))
				return opts_fail(err, err_len, "bad --topics '%s'", a);
			break;
		case OPT_VERSION: {
			char *end;
			errno = 0;
			long ver = strtol(a, &end, 10);
			if (end == a || *end || errno || ver < -32768 || ver > 32767)
				return opts_fail(err, err_len, "bad --version '%s'", a);
			o->version = (int32_t)ver;
			break;
		}
		case OPT_SERIALIZE:
			if (strcmp(a, "json") == 0)
				o->serialize = 0;
			else if (strcmp(a, "rocketmq") == 0)
				o->serialize = 1;
			else
				return opts_fail(err, err_len, "bad --serialize '%s' (json|rocketmq)", a);
			break;
		case OPT_CHURN_QUERIES:
			if (opts_u32(a, 1, 1000000, &o->churn_queries))
				return opts_fail(err, err_len, "bad --churn-queries '%s'", a);
			break;
		case 'b':
			if (opts_u32(a, 1, 100000, &o->brokers))
				return opts_fail(err, err_len, "bad --brokers '%s' (1..100000)", a);
			break;
		case 't':
			if (opts_u32(a, 2, 10000000, &o->broker_topics))
				return opts_fail(err, err_len,
						 "bad --broker-topics '%s' (at least 2: a first registration of one topic is refused)", a);
			topics_given = true;
			break;
		case OPT_QUEUES:
			if (opts_u32(a, 1, 1024, &o->queues))
				return opts_fail(err, err_len, "bad --queues '%s' (1..1024)", a);
			break;
		case OPT_LAYOUT:
			if (strcmp(a, "distinct") == 0)
				o->layout = LAYOUT_DISTINCT;
			else if (strcmp(a, "shared") == 0)
				o->layout = LAYOUT_SHARED;
			else
				return opts_fail(err, err_len, "bad --layout '%s' (distinct|shared)", a);
			break;
		case OPT_COMPRESSED:
			o->compressed = true;
			break;
		case OPT_DV:
			if (strcmp(a, "change") == 0)
				o->dv_change = true;
			else if (strcmp(a, "same") == 0)
				o->dv_change = false;
			else
				return opts_fail(err, err_len, "bad --dv '%s' (change|same)", a);
			dv_given = true;
			break;
		case OPT_INTERVAL:
			if (opts_parse_duration(a, &o->interval_ns))
				return opts_fail(err, err_len, "bad --interval '%s'", a);
			break;
		case OPT_KEEPALIVE:
			if (opts_parse_duration(a, &o->keepalive_ns) || o->keepalive_ns < 100000000)
				return opts_fail(err, err_len, "bad --keepalive '%s' (at least 100ms)", a);
			keepalive_given = true;
			break;
		case OPT_NO_SEED:
			o->no_seed = true;
			break;
		case OPT_CLUSTER:
			if (opts_name(a, o->cluster, sizeof(o->cluster)))
				return opts_fail(err, err_len, "bad --cluster '%s'", a);
			break;
		case OPT_BROKER_PREFIX:
			if (opts_name(a, o->broker_prefix, sizeof(o->broker_prefix)))
				return opts_fail(err, err_len, "bad --broker-prefix '%s'", a);
			o->broker_prefix_given = true;
			break;
		case OPT_TOPIC_PREFIX:
			if (opts_name(a, o->topic_prefix, sizeof(o->topic_prefix)))
				return opts_fail(err, err_len, "bad --topic-prefix '%s'", a);
			break;
		case OPT_BROKER_PORT:
			if (opts_u32(a, 0, 65535, &o->broker_port))
				return opts_fail(err, err_len, "bad --broker-port '%s'", a);
			port_given = true;
			break;
		case OPT_BROKER_ID:
			if (opts_u32(a, 0, 1000000, &o->broker_id))
				return opts_fail(err, err_len, "bad --broker-id '%s'", a);
			break;
		case OPT_CONTROLLER_ADDR: {
			char tmp[OPTS_MAX_CONTROLLERS][OPTS_ADDR_MAX];
			uint32_t n;
			if (strlen(a) >= sizeof(o->controller_addr) ||
			    opts_split_addrs(a, tmp, OPTS_MAX_CONTROLLERS, &n))
				return opts_fail(err, err_len,
						 "bad --controller-addr '%s' (HOST:PORT;HOST:PORT..., at most %d)",
						 a, OPTS_MAX_CONTROLLERS);
			snprintf(o->controller_addr, sizeof(o->controller_addr), "%s", a);
			controller_given = true;
			break;
		}
		case OPT_BROKER_SETS:
			if (opts_u32(a, 1, 10000, &o->broker_sets))
				return opts_fail(err, err_len, "bad --broker-sets '%s' (1..10000)", a);
			controller_given = true;
			break;
		case OPT_REPLICAS:
			if (opts_u32(a, 1, 8, &o->replicas))
				return opts_fail(err, err_len, "bad --replicas '%s' (1..8)", a);
			controller_given = true;
			break;
		case OPT_KILLS:
			if (opts_u32(a, 0, 100000, &o->kills))
				return opts_fail(err, err_len, "bad --kills '%s' (0..100000)", a);
			controller_given = true;
			break;
		case OPT_KILL_EVERY:
			if (opts_parse_duration(a, &o->kill_every_ns) || o->kill_every_ns < 10000000)
				return opts_fail(err, err_len, "bad --kill-every '%s' (at least 10ms)", a);
			controller_given = true;
			break;
		case OPT_RETURN_AFTER:
			if (opts_parse_duration(a, &o->return_after_ns) || o->return_after_ns > 3600000000000ull)
				return opts_fail(err, err_len, "bad --return-after '%s' (up to 1h)", a);
			controller_given = true;
			break;
		case OPT_FREEZE:
			o->freeze = true;
			controller_given = true;
			break;
		case OPT_HEARTBEAT_TIMEOUT:
			if (opts_parse_duration(a, &o->heartbeat_timeout_ns) ||
			    o->heartbeat_timeout_ns < 1000000 || o->heartbeat_timeout_ns > 3600000000000ull)
				return opts_fail(err, err_len, "bad --heartbeat-timeout '%s' (1ms..1h)", a);
			controller_given = true;
			break;
		case OPT_FAILOVER_TIMEOUT:
			if (opts_parse_duration(a, &o->failover_timeout_ns) || o->failover_timeout_ns < 1000000 ||
			    o->failover_timeout_ns > HIST_MAX_NS)
				return opts_fail(err, err_len, "bad --failover-timeout '%s' (1ms..60s)", a);
			controller_given = true;
			break;
		case OPT_REPLICA_POLL:
			if (opts_parse_duration(a, &o->replica_poll_ns) || o->replica_poll_ns < 1000000)
				return opts_fail(err, err_len, "bad --replica-poll '%s' (at least 1ms)", a);
			controller_given = true;
			break;
		case OPT_STORM_BROKERS:
			if (opts_u32(a, 1, 100000, &o->storm_brokers))
				return opts_fail(err, err_len, "bad --storm-brokers '%s'", a);
			o->storm_given = true;
			break;
		case OPT_STORM_TOPICS:
			if (opts_u32(a, 2, 10000000, &o->storm_topics))
				return opts_fail(err, err_len, "bad --storm-topics '%s' (at least 2)", a);
			o->storm_given = true;
			break;
		case OPT_STORM_ADDR:
			if (strlen(a) == 0 || strlen(a) >= sizeof(o->storm_addr) || !strrchr(a, ':'))
				return opts_fail(err, err_len, "bad --storm-addr '%s' (HOST:PORT)", a);
			snprintf(o->storm_addr, sizeof(o->storm_addr), "%s", a);
			break;
		case OPT_NO_IDLE:
			o->no_idle = true;
			break;
		case OPT_HEARTBEATS:
			/* "--heartbeats" alone, "--heartbeats=N" or "--heartbeats N" */
			if (!a && optind < argc - 1 && opts_parse_count(argv[optind + 1], &v) == RMQNS_OK)
				a = argv[1 + optind++];
			if (!a)
				o->heartbeats = 4;
			else if (opts_u32(a, 1, 10000, &o->heartbeats))
				return opts_fail(err, err_len, "bad --heartbeats '%s' (1..10000)", a);
			liveness_given = true;
			break;
		case OPT_HEARTBEAT_INTERVAL:
			if (opts_parse_duration(a, &o->heartbeat_interval_ns) ||
			    o->heartbeat_interval_ns < 100000)
				return opts_fail(err, err_len, "bad --heartbeat-interval '%s' (at least 100us)", a);
			liveness_given = true;
			break;
		case OPT_KV_INTERVAL:
			if (opts_parse_duration(a, &o->kv_interval_ns) || o->kv_interval_ns < 100000)
				return opts_fail(err, err_len, "bad --kv-interval '%s' (at least 100us)", a);
			liveness_given = true;
			break;
		case OPT_POLL_INTERVAL:
			if (opts_parse_duration(a, &o->poll_interval_ns) || o->poll_interval_ns < 100000 ||
			    o->poll_interval_ns > 1000000000ull)
				return opts_fail(err, err_len, "bad --poll-interval '%s' (100us..1s)", a);
			poll_given = true;
			break;
		case OPT_MEASURE_FOR:
			if (opts_parse_duration(a, &o->measure_for_ns) || o->measure_for_ns > 600000000000ull)
				return opts_fail(err, err_len, "bad --measure-for '%s' (up to 600s)", a);
			poll_given = true;
			break;
		case OPT_TLS:
		case OPT_TLS_CA:
		case OPT_TLS_CERT:
		case OPT_TLS_KEY:
			if (a && !*a)
				return opts_fail(err, err_len, "empty file name for --tls-*");
			o->tls = true;
			if (c == OPT_TLS_CA)
				o->tls_ca = a;
			else if (c == OPT_TLS_CERT)
				o->tls_cert = a;
			else if (c == OPT_TLS_KEY)
				o->tls_key = a;
			break;
		case OPT_TLS_NO_HOST:
			o->tls_no_verify_hostname = true;
			break;
		case OPT_PID: {
			uint64_t pid;
			if (opts_parse_count(a, &pid) || pid == 0 || pid > 0x7fffffff)
				return opts_fail(err, err_len, "bad --pid '%s'", a);
			o->pid = (pid_t)pid;
			break;
		}
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_PLOT:
			o->plot_path = a;
			break;
		case OPT_FLOOR:
			o->floor_path = a;
			break;
		case OPT_PROGRESS:
			o->progress = 1;
			break;
		case OPT_QUIET:
			o->progress = 0;
			break;
		case OPT_EXEC:
			if (!*a)
				return opts_fail(err, err_len, "empty --exec");
			o->exec_cmd = a;
			break;
		case OPT_RUNS:
			if (opts_u32(a, 1, 1000, &o->runs))
				return opts_fail(err, err_len, "bad --runs '%s' (1..1000)", a);
			break;
		case OPT_ACCESS_KEY:
			if (!*a)
				return opts_fail(err, err_len, "empty --access-key");
			o->access_key = a;
			break;
		case OPT_SECRET_KEY:
			if (!*a)
				return opts_fail(err, err_len, "empty --secret-key");
			o->secret_key = a;
			break;
		case 'h':
			*help = true;
			return RMQNS_OK;
		case ':':
			return opts_fail(err, err_len, "option needs a value: %s", argv[optind]);
		default:
			return opts_fail(err, err_len, "unknown option: %s", argv[optind > 0 ? optind : 1]);
		}
	}
	if (optind < argc - 1)
		return opts_fail(err, err_len, "unexpected argument '%s'", argv[optind + 1]);
	if (!o->access_key != !o->secret_key)
		return opts_fail(err, err_len, "--access-key and --secret-key go together");

	/* per-scenario defaults */
	if (o->scenario == SC_MIXED && o->duration_ns == 0 && o->requests)
		return opts_fail(err, err_len, "mixed needs --duration: its phases are halves of it");
	if (o->scenario == SC_CONTROLLER) {
		int rc = opts_controller(o, port_given, topics_given, err, err_len);
		if (rc)
			return rc;
		liveness_given = poll_given = false; /* taken */
	} else if (controller_given) {
		return opts_fail(err, err_len,
				 "--controller-addr, --broker-sets, --replicas, --kills, --kill-every, "
				 "--return-after, --freeze, --heartbeat-timeout, --failover-timeout and "
				 "--replica-poll apply to controller only");
	}
	if (liveness_given && o->scenario != SC_MIXED)
		return opts_fail(err, err_len,
				 "--heartbeats, --heartbeat-interval and --kv-interval apply to mixed only "
				 "(--heartbeat-interval to controller too)");
	if (poll_given && o->scenario != SC_DISCONNECT)
		return opts_fail(err, err_len, "--poll-interval and --measure-for apply to disconnect only "
				 "(--poll-interval to controller too)");
	if (o->scenario != SC_CONTROLLER && o->broker_port == 0)
		return opts_fail(err, err_len, "--broker-port 0 applies to controller only");
	if (o->scenario == SC_DISCONNECT) {
		if (o->requests)
			return opts_fail(err, err_len,
					 "disconnect runs until the routes are gone: bound it with --duration");
		if (!o->duration_ns) o->duration_ns = 60000000000ull;
		if (!o->measure_for_ns) o->measure_for_ns = 2000000000ull;
		if (!o->brokers) o->brokers = 32;
		if (!o->broker_topics) o->broker_topics = 40000;
		if (!o->reg_timeout_ns) o->reg_timeout_ns = 180000000000ull;
		if (!o->conns) o->conns = 2;
		if (!o->depth) o->depth = 1;
		if (!keepalive_given)
			o->keepalive_ns = 100000000000ull; /* no re-registration while seeding */
	}
	if (clients_given && o->scenario != SC_CLIENTS)
		return opts_fail(err, err_len,
				 "--period-ms, --jitter, --topics-per-client, --churn, --connect-rate and "
				 "--source-addrs apply to clients only");
	if (o->scenario == SC_CLIENTS) {
		if (o->requests)
			return opts_fail(err, err_len, "clients runs for a time: bound it with --duration");
		if (!o->duration_ns) o->duration_ns = 2 * o->period_ns;
		if (!o->conns) o->conns = 1000;
		o->depth = o->topics_per_client; /* a refresh's requests in flight at once */
		if (!sources_given && strncmp(o->addr, "127.", 4) == 0) {
			o->nsources = (o->conns + OPTS_CONNS_PER_SOURCE - 1) / OPTS_CONNS_PER_SOURCE;
			if (o->nsources > OPTS_MAX_SOURCES)
				o->nsources = OPTS_MAX_SOURCES;
			for (uint32_t i = 0; i < o->nsources; i++)
				o->sources[i] = 0x7f000002u + i;
		}
		if (o->nsources && (o->addr[0] == '[' || strchr(o->addr, ':') != strrchr(o->addr, ':')))
			return opts_fail(err, err_len, "--source-addrs needs an IPv4 --addr");
	} else {
		o->storm_given = false;
	}
	if (!o->heartbeat_interval_ns) o->heartbeat_interval_ns = 10000000ull;
	if (!o->poll_interval_ns) o->poll_interval_ns = 5000000ull;
	if (o->duration_ns == 0 && o->requests == 0)
		o->duration_ns = 10000000000ull;
	if (o->scenario == SC_REGISTER) {
		if (!o->brokers) o->brokers = 4;
		if (!o->broker_topics) o->broker_topics = 1000;
	}
	if (!dv_given && o->scenario != SC_REGISTER && o->scenario != SC_MIXED)
		o->dv_change = false; /* seeded brokers keep their data version */
	if (!o->brokers) o->brokers = 10;
	if (!o->broker_topics) o->broker_topics = 100;
	if (!o->timeout_ns) o->timeout_ns = 3000000000ull;
	if (!o->reg_timeout_ns) o->reg_timeout_ns = 60000000000ull;
	if (!o->conns) o->conns = 8;
	if (!o->depth) o->depth = 4;
	if (!o->storm_brokers) o->storm_brokers = 4;
	if (!o->storm_topics) o->storm_topics = 10000;
	if (o->scenario == SC_STARTUP && !o->exec_cmd)
		return opts_fail(err, err_len, "startup needs --exec CMD");
	if (o->rate > 0 && o->scenario != SC_ROUTE && o->scenario != SC_MIXED)
		return opts_fail(err, err_len, "--rate applies to route and mixed only");
	if (o->storm_addr[0] && o->scenario != SC_MIXED)
		return opts_fail(err, err_len, "--storm-addr applies to mixed only");
	if (o->tls && (o->scenario == SC_STARTUP || o->scenario == SC_DISCONNECT))
		return opts_fail(err, err_len, "--tls applies to route, register, mixed, churn and seed");
	if (!o->tls_cert != !o->tls_key)
		return opts_fail(err, err_len, "--tls-cert and --tls-key go together");
	if (o->threads > o->conns)
		o->threads = o->conns;
	return RMQNS_OK;
}
