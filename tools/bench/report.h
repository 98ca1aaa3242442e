/* Results of one rmqns-bench run and their three forms: the text summary,
 * the --json document and the --plot SVG (hand-written: a latency-by-
 * percentile panel and a throughput-over-time panel). Also the comparison
 * of saved JSON runs: medians per figure and A/B ratios (compare.sh, --floor). */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "opts.h"
#include "procstat.h"
#include "stats.h"

#define REPORT_MAX_ROLES 16

struct report_role {
	const char *key;      /* "route", "route_idle", "route_storm", "register", "churn", "seed" */
	struct stats *st;
	double wall_s;        /* measured time the role's figures are divided by */
};

/* The disconnect scenario's own figures; times since the first close. */
struct report_disconnect {
	unsigned brokers, topics;      /* the brokers that disconnected */
	unsigned samples;              /* topics of each broker checked with 105 */
	unsigned closed;               /* connections closed */
	double close_spread_us;        /* first to last close */
	bool brokers_gone, routes_gone;
	double brokers_gone_ms;        /* 106 lists none of them */
	double routes_gone_ms;         /* ... and every sampled topic answers 17 */
	double waited_ms;              /* how long it looked */
	unsigned polls;                /* 106 requests */
	unsigned route_checks;         /* rounds of sampled 105s */
	unsigned fresh_topics;
	const double *fresh_ms;        /* the fresh broker's registrations, in order */
	size_t nfresh;                 /* kept in fresh_ms */
	unsigned long long fresh_count;
};

/* The clients scenario's own figures. */
struct report_clients {
	unsigned connections, sources;
	unsigned long long established, failed; /* first attempts */
	const char *failed_why;                 /* the first failure's reason, or NULL */
	double ramp_s;                          /* first connect to the last first attempt */
	unsigned long long reconnects, churned, refreshes, refreshes_late;
	unsigned open_at_end;
	/* the server's RSS before the connections, with them open (before the
	 * load), and at the end (with them open) */
	bool have_rss;
	unsigned long long rss_kb_before, rss_kb_connected, rss_kb_after;
};

/* A distribution of a few samples: nearest rank (the p-th percentile is
 * the smallest sample with at least p % of them at or below it). */
struct report_dist {
	size_t n;
	double min, p50, p90, max;
};
/* Samples below 0 (not seen) are left out; all zero when none is left. */
void report_dist_of(const double *v, size_t n, struct report_dist *d);

/* The controller scenario: one master death and what followed, in ms
 * since the death; < 0 when not seen within the fail-over timeout. */
struct report_kill {
	unsigned set;
	long long old_master, new_master; /* controller ids; new -1 when none was seen */
	double elected_ms;                /* first 1006/1004/1003/1002 answer or 1008 naming it */
	const char *elected_by;           /* which of them ("1006", "1008", ...) */
	double notified_ms;               /* its own 1008 reached the new master */
	double route_ms;                  /* a 105 answer showed it as brokerId 0 */
	bool route_agrees;                /* that route's id 0 is the elected master's address */
	double back_ms;                   /* the old master followed the new one as a slave */
};

struct report_controller {
	unsigned sets, replicas, controllers, namesrvs;
	bool freeze;                      /* masters frozen, not killed */
	unsigned kills_asked;
	double kill_every_s, return_after_s;
	const struct report_kill *kills;  /* the kills made */
	size_t nkills;
	double ready_ms;                  /* start to every set's master in the route */
	unsigned long long heartbeats;    /* 904 frames sent, to all controllers */
	double heartbeat_s;               /* over this long */
	double heartbeat_interval_ms;
	unsigned long long notifications; /* 1008 frames received by all brokers */
	unsigned long long elect_requests; /* 1002 sent by brokers */
};

struct report {
	const struct bench_opts *opts; /* may be NULL (tests) */
	const char *scenario;
	const char *target;
	struct report_role roles[REPORT_MAX_ROLES];
	size_t nroles;
	/* seeding before the run */
	unsigned seed_brokers, seed_topics;
	double seed_s;
	/* server process (--pid or startup's child) */
	bool have_server;
	long pid;
	struct procstat before, after;
	double server_wall_s;
	/* startup */
	const double *startup_ms;
	size_t nstartup;
	bool have_startup_rss;
	unsigned long long startup_rss_kb; /* RSS at the first answer of the last run */
	/* disconnect */
	const struct report_disconnect *disconnect;
	/* clients */
	const struct report_clients *clients;
	/* controller */
	const struct report_controller *controller;
};

void report_add_role(struct report *r, const char *key, struct stats *st, double wall_s);
/* New reference; NULL on allocation failure. */
json_t *report_to_json(const struct report *r);
void report_print_text(FILE *f, const struct report *r);
int report_write_svg(FILE *f, const struct report *r);

/* Flat list of the comparable figures of a --json document:
 * "route.throughput_rps", "route.p99_us", "server.cpu_pct", ... */
struct report_figure {
	char name[64];
	double value;
	bool higher_better;
};
/* Up to cap figures of doc; returns how many. */
size_t report_figures(json_t *doc, struct report_figure *out, size_t cap);
/* Prints the median of each figure on side A and side B and A/B. */
int report_print_ratio(FILE *f, json_t *const *a, size_t na, json_t *const *b, size_t nb,
		       const char *label_a, const char *label_b);

#endif
