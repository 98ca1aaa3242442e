/* rmqns-bench command line and /proc readers. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "opts.h"
#include "procstat.h"
#include "rmqns/err.h"

static int parse(struct bench_opts *o, char *err, ...)
{
	static char *argv[32]; /* options point into it after return */
	int argc = 0;
	va_list ap;
	va_start(ap, err);
	argv[argc++] = "rmqns-bench";
	for (char *a = va_arg(ap, char *); a && argc < 31; a = va_arg(ap, char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	bool help;
	return opts_parse(argc, argv, o, &help, err, 256);
}

Test(bench_opts, durations_and_counts)
{
	uint64_t v;
	cr_assert_eq(opts_parse_duration("10s", &v), 0);
	cr_assert_eq(v, 10000000000ull);
	cr_assert_eq(opts_parse_duration("250ms", &v), 0);
	cr_assert_eq(v, 250000000ull);
	cr_assert_eq(opts_parse_duration("500us", &v), 0);
	cr_assert_eq(v, 500000ull);
	cr_assert_eq(opts_parse_duration("2m", &v), 0);
	cr_assert_eq(v, 120000000000ull);
	cr_assert_eq(opts_parse_duration("1.5", &v), 0);
	cr_assert_eq(v, 1500000000ull);
	cr_assert_neq(opts_parse_duration("ten", &v), 0);
	cr_assert_neq(opts_parse_duration("5x", &v), 0);
	cr_assert_neq(opts_parse_duration("-1s", &v), 0);
	cr_assert_neq(opts_parse_duration("", &v), 0);
	cr_assert_eq(opts_parse_count("50k", &v), 0);
	cr_assert_eq(v, 50000);
	cr_assert_eq(opts_parse_count("2M", &v), 0);
	cr_assert_eq(v, 2000000);
	cr_assert_eq(opts_parse_count("17", &v), 0);
	cr_assert_eq(v, 17);
	cr_assert_neq(opts_parse_count("1.5", &v), 0);
	cr_assert_neq(opts_parse_count("-3", &v), 0);
	cr_assert_neq(opts_parse_count("3q", &v), 0);
}

Test(bench_opts, scenario_defaults)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "route", NULL), 0, "%s", err);
	cr_assert_eq(o.scenario, SC_ROUTE);
	cr_assert_str_eq(o.addr, "127.0.0.1:9876");
	cr_assert_eq(o.duration_ns, 10000000000ull);
	cr_assert_eq(o.conns, 8);
	cr_assert_eq(o.depth, 4);
	cr_assert_eq(o.version, 479);
	cr_assert_eq(o.brokers, 10);
	cr_assert_eq(o.broker_topics, 100);
	cr_assert_eq(o.timeout_ns, 3000000000ull);
	cr_assert(!o.dv_change);
	cr_assert_eq(parse(&o, err, "register", NULL), 0, "%s", err);
	cr_assert_eq(o.brokers, 4);
	cr_assert_eq(o.broker_topics, 1000);
	cr_assert(o.dv_change);
	cr_assert_eq(o.timeout_ns, 3000000000ull);
	cr_assert_eq(o.reg_timeout_ns, 60000000000ull);
	cr_assert_eq(parse(&o, err, "register", "--dv", "same", NULL), 0, "%s", err);
	cr_assert(!o.dv_change);
	/* --requests alone bounds the run: no default duration added */
	cr_assert_eq(parse(&o, err, "route", "-n", "5k", NULL), 0, "%s", err);
	cr_assert_eq(o.requests, 5000);
	cr_assert_eq(o.duration_ns, 0);
}

Test(bench_opts, options_parse)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "mixed", "-a", "[::1]:9877", "-c", "16", "-p", "8", "-d", "3s",
			   "--storm-brokers", "4", "--storm-topics", "10000", "--serialize", "rocketmq",
			   "--version", "400", "--layout", "shared", "--compressed", "--json",
			   "--plot", "x.svg", "--pid", "123", "--threads", "2", NULL), 0, "%s", err);
	cr_assert_str_eq(o.addr, "[::1]:9877");
	cr_assert_eq(o.conns, 16);
	cr_assert_eq(o.depth, 8);
	cr_assert_eq(o.duration_ns, 3000000000ull);
	cr_assert_eq(o.storm_topics, 10000);
	cr_assert_eq(o.serialize, 1);
	cr_assert_eq(o.version, 400);
	cr_assert_eq(o.layout, LAYOUT_SHARED);
	cr_assert(o.compressed);
	cr_assert(o.json);
	cr_assert_str_eq(o.plot_path, "x.svg");
	cr_assert_eq(o.pid, 123);
	cr_assert_eq(o.threads, 2);
	cr_assert_eq(parse(&o, err, "route", "-r", "50k", NULL), 0, "%s", err);
	cr_assert_float_eq(o.rate, 50000.0, 1e-9);
	cr_assert_str_eq(o.storm_addr, "", "the storm goes to --addr unless told");
	cr_assert_eq(parse(&o, err, "mixed", "--storm-addr", "127.0.0.1:9877", NULL), 0, "%s", err);
	cr_assert_str_eq(o.storm_addr, "127.0.0.1:9877");
}

Test(bench_opts, refusals)
{
	struct bench_opts o;
	char err[256];
	cr_assert_neq(parse(&o, err, NULL), 0);
	cr_assert_neq(parse(&o, err, "fly", NULL), 0);
	cr_assert_not_null(strstr(err, "fly"));
	cr_assert_neq(parse(&o, err, "route", "--broker-topics", "1", NULL), 0);
	cr_assert_not_null(strstr(err, "at least 2"));
	cr_assert_neq(parse(&o, err, "route", "-c", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "-d", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--bogus", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "extra", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "-a", "nocolon", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--topic-prefix", "has space", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--topic-prefix", "q\"uote", NULL), 0);
	cr_assert_neq(parse(&o, err, "register", "-r", "100", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--storm-addr", "127.0.0.1:9877", NULL), 0);
	cr_assert_not_null(strstr(err, "mixed only"));
	cr_assert_neq(parse(&o, err, "mixed", "--storm-addr", "nocolon", NULL), 0);
	cr_assert_neq(parse(&o, err, "mixed", "-n", "1000", NULL), 0);
	cr_assert_eq(parse(&o, err, "mixed", "-n", "1000", "-d", "4s", NULL), 0, "%s", err);
	cr_assert_neq(parse(&o, err, "startup", NULL), 0);
	cr_assert_not_null(strstr(err, "--exec"));
	cr_assert_eq(parse(&o, err, "startup", "--exec", "./server -p 1", "--runs", "3", NULL), 0);
	cr_assert_eq(o.runs, 3);
}

Test(bench_opts, disconnect_defaults)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "disconnect", NULL), 0, "%s", err);
	cr_assert_eq(o.scenario, SC_DISCONNECT);
	cr_assert_str_eq(opts_scenario_name(o.scenario), "disconnect");
	/* the shape: 32 brokers x 40,000 distinct topics x 8 queues */
	cr_assert_eq(o.brokers, 32);
	cr_assert_eq(o.broker_topics, 40000);
	cr_assert_eq(o.queues, 8);
	cr_assert_eq(o.layout, LAYOUT_DISTINCT);
	/* seeding 32 big bodies at once: a generous registration timeout, no
	 * re-registration while it runs */
	cr_assert_eq(o.reg_timeout_ns, 180000000000ull);
	cr_assert_geq(o.keepalive_ns, 60000000000ull);
	/* a small closed loop of route queries; -d bounds the wait */
	cr_assert_eq(o.conns, 2);
	cr_assert_eq(o.depth, 1);
	cr_assert_eq(o.duration_ns, 60000000000ull);
	cr_assert_eq(o.poll_interval_ns, 5000000ull);
	cr_assert(!o.dv_change);
	/* small shapes for tests, and explicit values win */
	cr_assert_eq(parse(&o, err, "disconnect", "-b", "3", "-t", "50", "--poll-interval", "10ms",
			   "--register-timeout", "20s", "--keepalive", "1s", "-c", "4", "-d", "5s",
			   NULL), 0, "%s", err);
	cr_assert_eq(o.brokers, 3);
	cr_assert_eq(o.broker_topics, 50);
	cr_assert_eq(o.poll_interval_ns, 10000000ull);
	cr_assert_eq(o.reg_timeout_ns, 20000000000ull);
	cr_assert_eq(o.keepalive_ns, 1000000000ull);
	cr_assert_eq(o.conns, 4);
	cr_assert_eq(o.duration_ns, 5000000000ull);
	/* other scenarios keep theirs */
	cr_assert_eq(parse(&o, err, "seed", NULL), 0, "%s", err);
	cr_assert_eq(o.brokers, 10);
	cr_assert_eq(o.reg_timeout_ns, 60000000000ull);
	cr_assert_eq(o.keepalive_ns, 30000000000ull);
	/* refusals */
	cr_assert_neq(parse(&o, err, "disconnect", "-n", "100", NULL), 0);
	cr_assert_not_null(strstr(err, "--duration"));
	cr_assert_neq(parse(&o, err, "disconnect", "-r", "1000", NULL), 0);
	cr_assert_neq(parse(&o, err, "disconnect", "--poll-interval", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "disconnect", "--poll-interval", "2s", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--poll-interval", "5ms", NULL), 0);
	cr_assert_not_null(strstr(err, "disconnect only"));
}

Test(bench_opts, liveness_options)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "mixed", NULL), 0, "%s", err);
	cr_assert_eq(o.heartbeats, 0);
	cr_assert_eq(o.kv_interval_ns, 0);
	cr_assert_eq(o.heartbeat_interval_ns, 10000000ull);
	/* alone: four brokers */
	cr_assert_eq(parse(&o, err, "mixed", "--heartbeats", NULL), 0, "%s", err);
	cr_assert_eq(o.heartbeats, 4);
	cr_assert_eq(parse(&o, err, "mixed", "--heartbeats", "--kv-interval", "10ms", NULL), 0, "%s",
		     err);
	cr_assert_eq(o.heartbeats, 4);
	cr_assert_eq(o.kv_interval_ns, 10000000ull);
	/* with a count, either form */
	cr_assert_eq(parse(&o, err, "mixed", "--heartbeats", "7", "-d", "2s", NULL), 0, "%s", err);
	cr_assert_eq(o.heartbeats, 7);
	cr_assert_eq(o.duration_ns, 2000000000ull);
	cr_assert_eq(parse(&o, err, "mixed", "--heartbeats=2", "--heartbeat-interval", "5ms",
			   "--rate", "30k", NULL), 0, "%s", err);
	cr_assert_eq(o.heartbeats, 2);
	cr_assert_eq(o.heartbeat_interval_ns, 5000000ull);
	cr_assert_float_eq(o.rate, 30000.0, 1e-9);
	/* refusals */
	cr_assert_neq(parse(&o, err, "mixed", "--heartbeats=0", NULL), 0);
	cr_assert_neq(parse(&o, err, "mixed", "--heartbeats=x", NULL), 0);
	cr_assert_neq(parse(&o, err, "mixed", "--heartbeat-interval", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "mixed", "--kv-interval", "10us", NULL), 0);
	cr_assert_neq(parse(&o, err, "mixed", "--kv-interval", "soon", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--heartbeats", NULL), 0);
	cr_assert_not_null(strstr(err, "mixed only"));
	cr_assert_neq(parse(&o, err, "register", "--kv-interval", "10ms", NULL), 0);
}

Test(bench_opts, clients_defaults)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "clients", NULL), 0, "%s", err);
	cr_assert_eq(o.scenario, SC_CLIENTS);
	cr_assert_str_eq(opts_scenario_name(o.scenario), "clients");
	cr_assert_eq(o.conns, 1000);
	/* a RocketMQ client's poll interval, 10 topics in one pipelined refresh */
	cr_assert_eq(o.period_ns, 30000000000ull);
	cr_assert_eq(o.topics_per_client, 10);
	cr_assert_eq(o.depth, 10);
	cr_assert_float_eq(o.jitter, 0.1, 1e-12);
	cr_assert_float_eq(o.churn, 0.0, 1e-12);
	cr_assert_eq(o.connect_rate, 5000);
	/* two periods once the connections are open */
	cr_assert_eq(o.duration_ns, 60000000000ull);
	cr_assert(!o.storm_given, "no storm unless asked for");
	/* a loopback target: one source address per 5,000 connections, from 127.0.0.2 */
	cr_assert_eq(o.nsources, 1);
	cr_assert_eq(o.sources[0], 0x7f000002u);
	cr_assert_eq(parse(&o, err, "clients", "--connections", "50k", NULL), 0, "%s", err);
	cr_assert_eq(o.conns, 50000);
	cr_assert_eq(o.nsources, 10);
	cr_assert_eq(o.sources[9], 0x7f00000bu);
	cr_assert_eq(parse(&o, err, "clients", "-c", "100001", NULL), 0, "%s", err);
	cr_assert_eq(o.nsources, 21);
	/* not a loopback address: the kernel picks */
	cr_assert_eq(parse(&o, err, "clients", "-a", "10.1.2.3:9876", NULL), 0, "%s", err);
	cr_assert_eq(o.nsources, 0);
	/* the period sets the default duration; -d wins */
	cr_assert_eq(parse(&o, err, "clients", "--period-ms", "2000", NULL), 0, "%s", err);
	cr_assert_eq(o.period_ns, 2000000000ull);
	cr_assert_eq(o.duration_ns, 4000000000ull);
	cr_assert_eq(parse(&o, err, "clients", "--period-ms", "2000", "-d", "3s", NULL), 0, "%s", err);
	cr_assert_eq(o.duration_ns, 3000000000ull);
}

Test(bench_opts, clients_options)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "clients", "-c", "2000", "--period-ms", "500", "--jitter", "0.25",
			   "--topics-per-client", "3", "--churn", "0.05", "--connect-rate", "800",
			   "--source-addrs", "127.0.0.7,127.0.0.9", "--threads", "2", "--server-pid", "77",
			   "--storm-topics", "500", NULL), 0, "%s", err);
	cr_assert_eq(o.conns, 2000);
	cr_assert_eq(o.period_ns, 500000000ull);
	cr_assert_float_eq(o.jitter, 0.25, 1e-12);
	cr_assert_eq(o.topics_per_client, 3);
	cr_assert_eq(o.depth, 3, "a refresh's requests are in flight together");
	cr_assert_float_eq(o.churn, 0.05, 1e-12);
	cr_assert_eq(o.connect_rate, 800);
	cr_assert_eq(o.nsources, 2);
	cr_assert_eq(o.sources[0], 0x7f000007u);
	cr_assert_eq(o.sources[1], 0x7f000009u);
	cr_assert_eq(o.threads, 2);
	cr_assert_eq(o.pid, 77, "--server-pid is --pid");
	/* one storm option is enough; the other keeps its default */
	cr_assert(o.storm_given);
	cr_assert_eq(o.storm_topics, 500);
	cr_assert_eq(o.storm_brokers, 4);
	/* a count of sources from 127.0.0.2; 0 for none */
	cr_assert_eq(parse(&o, err, "clients", "--source-addrs", "4", NULL), 0, "%s", err);
	cr_assert_eq(o.nsources, 4);
	cr_assert_eq(o.sources[3], 0x7f000005u);
	cr_assert_eq(parse(&o, err, "clients", "-c", "60k", "--source-addrs", "0", NULL), 0, "%s", err);
	cr_assert_eq(o.nsources, 0);
	/* the storm options keep meaning nothing new to mixed */
	cr_assert_eq(parse(&o, err, "mixed", "--storm-brokers", "2", NULL), 0, "%s", err);
	cr_assert(!o.storm_given);
}

Test(bench_opts, clients_refusals)
{
	struct bench_opts o;
	char err[256];
	cr_assert_neq(parse(&o, err, "clients", "--jitter", "1.5", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--jitter", "-0.1", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--churn", "x", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--churn", "2", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--period-ms", "5", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--period-ms", "1.5", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--topics-per-client", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--topics-per-client", "1001", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--connect-rate", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--source-addrs", "127.0.0.2,", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--source-addrs", "127.0.0.300", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--source-addrs", "65", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "--source-addrs", "::1", NULL), 0);
	cr_assert_neq(parse(&o, err, "clients", "-a", "[::1]:9876", "--source-addrs", "2", NULL), 0);
	cr_assert_not_null(strstr(err, "IPv4"));
	/* an IPv6 target without sources is fine */
	cr_assert_eq(parse(&o, err, "clients", "-a", "[::1]:9876", NULL), 0, "%s", err);
	cr_assert_eq(o.nsources, 0);
	cr_assert_neq(parse(&o, err, "clients", "-n", "1000", NULL), 0);
	cr_assert_not_null(strstr(err, "--duration"));
	cr_assert_neq(parse(&o, err, "clients", "-r", "1000", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--period-ms", "1000", NULL), 0);
	cr_assert_not_null(strstr(err, "clients only"));
	cr_assert_neq(parse(&o, err, "mixed", "--churn", "0.1", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--source-addrs", "2", NULL), 0);
}

Test(bench_opts, ratio_and_help)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "ratio", "a1.json", "a2.json", "--", "b.json", NULL), 0, "%s", err);
	cr_assert_eq(o.scenario, SC_RATIO);
	cr_assert_eq(o.ratio_na, 2);
	cr_assert_eq(o.ratio_nb, 1);
	cr_assert_str_eq(o.ratio_a[1], "a2.json");
	cr_assert_str_eq(o.ratio_b[0], "b.json");
	cr_assert_neq(parse(&o, err, "ratio", "a.json", NULL), 0);
	cr_assert_neq(parse(&o, err, "ratio", "--", "b.json", NULL), 0);
	char *argv[] = { "rmqns-bench", "route", "--help", NULL };
	bool help = false;
	cr_assert_eq(opts_parse(3, argv, &o, &help, err, sizeof(err)), 0);
	cr_assert(help);
	/* the usage text names every long option the parser knows */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	opts_usage(f);
	fclose(f);
	static const char *names[] = { "--addr", "--duration", "--requests", "--warmup", "--timeout",
		"--register-timeout", "--conns", "--depth", "--rate", "--threads", "--topics", "--version", "--serialize",
		"--churn-queries", "--brokers", "--broker-topics", "--queues", "--layout",
		"--compressed", "--dv", "--interval", "--keepalive", "--no-seed", "--cluster",
		"--broker-prefix", "--topic-prefix", "--broker-port", "--storm-brokers",
		"--storm-topics", "--storm-addr", "--no-idle", "--pid", "--json", "--plot", "--floor", "--progress",
		"--quiet", "--exec", "--runs", "--help", "--heartbeats", "--heartbeat-interval",
		"--kv-interval", "--poll-interval", "disconnect", "clients", "--connections",
		"--period-ms", "--jitter", "--topics-per-client", "--churn", "--connect-rate",
		"--source-addrs", "--server-pid" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_not_null(strstr(text, names[i]), "usage lacks %s", names[i]);
	free(text);
}

Test(bench_procstat, parses_stat_and_status)
{
	/* a command name with spaces and parentheses; utime 250, stime 50 ticks, 7 threads */
	const char *stat = "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 "
			   "20 0 7 0 12345 1000000 500 18446744073709551615\n";
	struct procstat ps;
	memset(&ps, 0, sizeof(ps));
	cr_assert_eq(procstat_parse_stat(stat, 100, &ps), 0);
	cr_assert_float_eq(ps.user_s, 2.5, 1e-9);
	cr_assert_float_eq(ps.sys_s, 0.5, 1e-9);
	cr_assert_float_eq(ps.cpu_s, 3.0, 1e-9);
	cr_assert_eq(ps.threads, 7);
	cr_assert_neq(procstat_parse_stat("4242 (x) S 1 2", 100, &ps), 0);
	cr_assert_neq(procstat_parse_stat("no parenthesis", 100, &ps), 0);
	const char *status = "Name:\tsrv\nVmPeak:\t  9000 kB\nVmHWM:\t    4321 kB\nVmRSS:\t    1234 kB\n";
	cr_assert_eq(procstat_parse_status(status, &ps), 0);
	cr_assert_eq(ps.rss_kb, 1234);
	cr_assert_eq(ps.hwm_kb, 4321);
	cr_assert_neq(procstat_parse_status("Name:\tx\n", &ps), 0);
	/* this very process */
	cr_assert_eq(procstat_read(getpid(), &ps), 0);
	cr_assert_gt(ps.rss_kb, 0);
	cr_assert_geq(ps.threads, 1);
}

Test(bench_procstat, parses_the_descriptor_limit)
{
	const char *limits =
		"Limit                     Soft Limit           Hard Limit           Units     \n"
		"Max cpu time              unlimited            unlimited            seconds   \n"
		"Max open files            20000                200000               files     \n";
	uint64_t soft = 0;
	cr_assert_eq(procstat_parse_nofile(limits, &soft), 0);
	cr_assert_eq(soft, 20000);
	cr_assert_eq(procstat_parse_nofile("Max open files            unlimited            unlimited  files\n",
					   &soft), 0);
	cr_assert_eq(soft, UINT64_MAX);
	cr_assert_neq(procstat_parse_nofile("Max cpu time   unlimited\n", &soft), 0);
	/* this very process: what getrlimit says */
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_eq(procstat_read_nofile(getpid(), &soft), 0);
	cr_assert_eq(soft, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur);
}

Test(bench_opts, acl_credentials)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "route", NULL), 0, "%s", err);
	cr_assert_null(o.access_key);
	cr_assert_null(o.secret_key);
	cr_assert_eq(parse(&o, err, "route", "--access-key", "rocketmq2", "--secret-key", "12345678", NULL), 0,
		     "%s", err);
	cr_assert_str_eq(o.access_key, "rocketmq2");
	cr_assert_str_eq(o.secret_key, "12345678");
	cr_assert_neq(parse(&o, err, "route", "--access-key", "rocketmq2", NULL), 0);
	cr_assert_not_null(strstr(err, "go together"));
	cr_assert_neq(parse(&o, err, "route", "--secret-key", "12345678", NULL), 0);
	cr_assert_neq(parse(&o, err, "route", "--access-key", "", "--secret-key", "x", NULL), 0);
}

Test(bench_opts, tls)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "route", NULL), 0, "%s", err);
	cr_assert(!o.tls);
	cr_assert_eq(parse(&o, err, "route", "--tls", NULL), 0, "%s", err);
	cr_assert(o.tls);
	cr_assert_null(o.tls_ca);
	/* a CA or a client certificate means TLS */
	cr_assert_eq(parse(&o, err, "churn", "--tls-ca", "ca.pem", NULL), 0, "%s", err);
	cr_assert(o.tls);
	cr_assert_str_eq(o.tls_ca, "ca.pem");
	cr_assert(!o.tls_no_verify_hostname, "names are checked by default");
	cr_assert_eq(parse(&o, err, "route", "--tls-ca", "ca.pem", "--tls-no-verify-hostname", NULL), 0,
		     "%s", err);
	cr_assert(o.tls_no_verify_hostname);
	cr_assert_eq(parse(&o, err, "mixed", "--tls-cert", "c.pem", "--tls-key", "k.pem", NULL), 0, "%s", err);
	cr_assert(o.tls);
	cr_assert_str_eq(o.tls_cert, "c.pem");
	cr_assert_str_eq(o.tls_key, "k.pem");
	cr_assert_neq(parse(&o, err, "route", "--tls-cert", "c.pem", NULL), 0);
	cr_assert_not_null(strstr(err, "--tls-key"));
	cr_assert_neq(parse(&o, err, "route", "--tls-ca", "", NULL), 0);
	cr_assert_neq(parse(&o, err, "disconnect", "--tls", NULL), 0);
	cr_assert_not_null(strstr(err, "--tls"));
	cr_assert_neq(parse(&o, err, "startup", "--exec", "x", "--tls", NULL), 0);
}
