/* Command line of rmqns-bench: the scenario, its knobs and their
 * per-scenario defaults, and the --help text. Pure: parses argv into a
 * struct, prints nothing but the usage it is asked for. */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum bench_scenario {
	SC_ROUTE = 0,
	SC_REGISTER,
	SC_MIXED,
	SC_CHURN,
	SC_SEED,
	SC_STARTUP,
	SC_RATIO,
	SC_DISCONNECT,
	SC_CLIENTS,
	SC_CONTROLLER,
};

/* controller: addresses in --controller-addr and NameServers in --addr */
#define OPTS_MAX_CONTROLLERS 8
#define OPTS_MAX_NAMESRVS 8

/* clients: source addresses a connection may be bound to */
#define OPTS_MAX_SOURCES 64
/* clients: connections per source address by default. connect() looks
 * for a free port in the source's ephemeral range (28,232 ports by
 * default); with 19,500 connections on one source each connect cost the
 * bench milliseconds of kernel time and SYNs timed out, with 1,950 per
 * source none did. */
#define OPTS_CONNS_PER_SOURCE 5000

enum bench_layout {
	LAYOUT_DISTINCT = 0, /* every broker has its own topics */
	LAYOUT_SHARED = 1,   /* every broker carries the same topics */
};

struct bench_opts {
	enum bench_scenario scenario;
	char addr[256];
	uint64_t duration_ns;
	uint64_t requests;       /* 0: no limit */
	uint64_t warmup_ns;
	uint64_t timeout_ns;      /* route queries */
	uint64_t reg_timeout_ns;  /* registrations (seed, register, storm) */
	uint32_t conns;
	uint32_t depth;
	uint32_t threads;        /* engines sharing the route connections */
	double rate;             /* total requests/s; 0 = closed loop */
	uint32_t topics;         /* queried topics; 0 = every registered one */
	int32_t version;
	int serialize;           /* 0 JSON, 1 ROCKETMQ */
	/* registered brokers: seeding (route, mixed, churn, seed) or the load (register) */
	uint32_t brokers;
	uint32_t broker_topics;
	uint32_t queues;
	enum bench_layout layout;
	bool compressed;
	bool dv_change;
	uint64_t interval_ns;    /* register: pause between one broker's registrations */
	uint64_t keepalive_ns;   /* re-registration period of seeded brokers */
	bool no_seed;
	/* mixed */
	uint32_t storm_brokers;
	uint32_t storm_topics;
	bool no_idle;            /* mixed: skip the idle phase */
	char storm_addr[256];    /* mixed: the storm goes to this server ("": --addr) */
	/* mixed: liveness traffic beside the route load, measured per phase */
	uint32_t heartbeats;     /* brokers sending 904 and 322 (0: none) */
	uint64_t heartbeat_interval_ns;
	uint64_t kv_interval_ns; /* one PUT_KV_CONFIG every this long (0: none) */
	/* disconnect */
	uint64_t poll_interval_ns; /* between looks at whether the routes are gone */
	uint64_t measure_for_ns;   /* disconnect: keep registering and querying this long after the closes */
	/* churn */
	uint32_t churn_queries;
	/* clients: -c connections, each refreshing its routes every period */
	uint64_t period_ns;
	double jitter;             /* a period varies by up to this fraction either way */
	uint32_t topics_per_client; /* GET_ROUTEINFO_BY_TOPIC per refresh, pipelined */
	double churn;              /* fraction of connections closing and reopening per period */
	uint32_t connect_rate;     /* new connections per second while ramping up */
	uint32_t sources[OPTS_MAX_SOURCES]; /* IPv4 source addresses, host order */
	uint32_t nsources;         /* 0: the kernel picks the source */
	bool storm_given;          /* clients: a registration storm beside the refreshes */
	/* controller: brokers in controller mode and masters killed on cue */
	char controller_addr[512];  /* HOST:PORT;HOST:PORT... (--addr may list NameServers so too) */
	uint32_t broker_sets;
	uint32_t replicas;          /* brokers per set */
	uint32_t kills;             /* masters killed in all (0: none, only the life cycle) */
	uint64_t kill_every_ns;     /* between two kills */
	uint64_t return_after_ns;   /* a killed master comes back as a slave this long after */
	bool freeze;                /* the master stops heartbeating but keeps its connections */
	uint64_t heartbeat_timeout_ns; /* heartbeatTimeoutMills sent in every 904 */
	uint64_t failover_timeout_ns;  /* a kill's stages not seen by then are missing */
	uint64_t replica_poll_ns;      /* GET_REPLICA_INFO period of every broker */
	/* names */
	char cluster[64];
	char broker_prefix[64];
	bool broker_prefix_given;
	char topic_prefix[64];
	uint32_t broker_port;    /* first fake broker port */
	uint32_t broker_id;      /* the brokerId the fake brokers register with (0: masters) */
	/* ACL 1.0: sign every request (both or neither) */
	const char *access_key;
	const char *secret_key;
	/* TLS to the server: without a CA the certificate is not checked */
	bool tls;
	const char *tls_ca;
	const char *tls_cert;
	const char *tls_key;
	bool tls_no_verify_hostname; /* --tls-no-verify-hostname */
	/* server process */
	pid_t pid;
	/* output */
	bool json;
	int progress;            /* -1 auto (terminal), 0 off, 1 on */
	const char *plot_path;
	const char *floor_path;
	/* startup */
	const char *exec_cmd;
	uint32_t runs;
	/* ratio: the JSON files of side A and side B */
	char **ratio_a;
	size_t ratio_na;
	char **ratio_b;
	size_t ratio_nb;
};

/* Fills *o from argv (argv[1] is the scenario). RMQNS_OK, or a negative
 * rmqns_err with a one-line reason in err. *help is set for -h/--help
 * (nothing else is then guaranteed). ratio_a/ratio_b point into argv. */
int opts_parse(int argc, char **argv, struct bench_opts *o, bool *help, char *err, size_t err_len);
void opts_usage(FILE *f);
const char *opts_scenario_name(enum bench_scenario sc);

/* Splits "HOST:PORT;HOST:PORT;..." (empty entries skipped, as Java's
 * trailing ';') into at most cap addresses of OPTS_ADDR_MAX bytes. */
#define OPTS_ADDR_MAX 64
int opts_split_addrs(const char *list, char (*out)[OPTS_ADDR_MAX], uint32_t cap, uint32_t *n);

/* "10s", "250ms", "500us", "2m", "1.5" (seconds) to nanoseconds. */
int opts_parse_duration(const char *s, uint64_t *out_ns);
/* "100", "50k", "2M" to a count. */
int opts_parse_count(const char *s, uint64_t *out);

#endif
