/* rmqns-bench against the real rmqns: every scenario runs about a second
 * and must end with answers and no error (seeded topics route, brokers
 * register, churn and the storm leave the route path clean); queries for
 * topics nobody registered are counted as code 17. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bench_run.h"
#include "harness.h"

static struct harness_server srv;

static void server_up(void)
{
	cr_assert_eq(harness_start(&srv, NULL), 0, "rmqns did not start");
}

static void server_down(void)
{
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	harness_cleanup(&srv);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "rmqns did not stop cleanly");
}

TestSuite(bench_server, .init = server_up, .fini = server_down, .timeout = 180);

static json_t *run(const char *const *args)
{
	return bench_run_json(RMQNS_BENCH_BIN, srv.port, args);
}

Test(bench_server, route_closed_loop)
{
	const char *a[] = { "route", "-d", "1s", "-c", "4", "-p", "4", "-b", "3", "-t", "20", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route");
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	/* a route of one broker, standard form */
	double avg = json_number_value(json_object_get(r, "avg_answer_bytes"));
	cr_assert(avg > 200 && avg < 1000, "answer size %f", avg);
	json_decref(d);
}

Test(bench_server, route_open_loop_old_clients_binary_headers)
{
	const char *a[] = { "route", "-d", "1s", "-r", "1000", "--version", "317", "--serialize",
			    "rocketmq", "-b", "2", "-t", "10", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route open loop");
	json_decref(d);
}

Test(bench_server, route_shared_topics_by_count)
{
	const char *a[] = { "route", "-n", "2000", "-b", "4", "-t", "10", "--layout", "shared", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route shared");
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	cr_assert_eq(json_integer_value(json_object_get(r, "ok")), 2000);
	/* every topic is on four brokers: a longer answer than one broker's */
	cr_assert_gt(json_number_value(json_object_get(r, "avg_answer_bytes")), 600.0);
	json_decref(d);
}

Test(bench_server, unknown_topics_count_as_code_17)
{
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
	char *argv[] = { RMQNS_BENCH_BIN, "route", "--no-seed", "-n", "200", "-a", addr, "--json",
			 "--quiet", "--topic-prefix", "NobodyRegisteredThis", NULL };
	char *out = NULL;
	int st = bench_run_capture(argv, 60000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "errors make the exit status 1");
	json_t *d = json_loads(out, 0, NULL);
	cr_assert_not_null(d);
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "errors_by_code"), "17")), 200);
	cr_assert_eq(json_integer_value(json_object_get(r, "ok")), 0);
	json_decref(d);
	free(out);
}

Test(bench_server, register_plain_compressed_same_version)
{
	const char *a[] = { "register", "-d", "1s", "-b", "2", "-t", "300", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "register");
	json_decref(d);
	const char *c[] = { "register", "-d", "1s", "-b", "2", "-t", "300", "--compressed", NULL };
	d = run(c);
	bench_assert_clean(d, "register compressed");
	json_decref(d);
	const char *s[] = { "register", "-d", "1s", "-b", "2", "-t", "300", "--dv", "same", NULL };
	d = run(s);
	bench_assert_clean(d, "register same data version");
	json_decref(d);
}

Test(bench_server, mixed)
{
	const char *a[] = { "mixed", "-d", "2s", "--storm-brokers", "2", "--storm-topics", "1000",
			    "-b", "3", "-t", "20", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "mixed");
	cr_assert_not_null(json_object_get(d, "mixed"));
	json_decref(d);
}

Test(bench_server, churn)
{
	const char *a[] = { "churn", "-d", "1s", "-c", "4", "-b", "2", "-t", "10", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "churn");
	json_decref(d);
}

Test(bench_server, seed_with_server_figures)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)srv.pid);
	const char *a[] = { "seed", "-d", "1s", "-b", "4", "-t", "200", "--keepalive", "250ms",
			    "--pid", pid, NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "seed");
	json_t *s = json_object_get(d, "server");
	cr_assert_gt(json_integer_value(json_object_get(s, "rss_kb_after")), 0);
	cr_assert_gt(json_integer_value(json_object_get(s, "threads")), 1);
	json_decref(d);
}

Test(bench_server, startup_of_rmqns)
{
	int port = bench_free_port();
	cr_assert_gt(port, 0);
	/* a home of its own: the suite's server keeps running in srv.dir */
	char home[] = "/tmp/rmqns-bench-startup-XXXXXX";
	cr_assert_not_null(mkdtemp(home));
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "env HOME=%s ROCKETMQ_HOME=%s %s --listenPort=%d --bindAddress=127.0.0.1",
		 home, home, RMQNS_BIN_PATH, port);
	const char *a[] = { "startup", "--exec", cmd, "--runs", "2", NULL };
	json_t *d = bench_run_json(RMQNS_BENCH_BIN, port, a);
	json_t *s = json_object_get(d, "startup");
	cr_assert_eq(json_array_size(json_object_get(s, "samples_ms")), 2);
	double med = json_number_value(json_object_get(json_object_get(s, "first_answer_ms"), "median"));
	cr_assert(med > 0.0 && med < 10000.0, "median %f", med);
	json_decref(d);
	char rm[128];
	snprintf(rm, sizeof(rm), "rm -rf %s", home);
	cr_assert_eq(system(rm), 0);
}
