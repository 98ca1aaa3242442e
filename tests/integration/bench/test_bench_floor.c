/* rmqns-bench against rmqns-floor: every scenario runs about a second and
 * must end with answers and no error; --plot writes an SVG, ratio and
 * compare.sh compare saved runs, startup times exec -> first answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bench_run.h"
#include "harness.h"

static pid_t floor_pid;
static int floor_port;

static void floor_up(void)
{
	floor_pid = bench_start_floor(RMQNS_FLOOR_BIN, 2, &floor_port);
	cr_assert_gt(floor_pid, 0, "rmqns-floor did not start");
}

static void floor_down(void)
{
	if (floor_pid > 0) {
		int st = bench_stop_pid(floor_pid, 5000);
		floor_pid = 0;
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rmqns-floor did not exit cleanly");
	}
}

TestSuite(bench_floor, .init = floor_up, .fini = floor_down, .timeout = 120);

static json_t *run(const char *const *args)
{
	return bench_run_json(RMQNS_BENCH_BIN, floor_port, args);
}

Test(bench_floor, route_closed_loop)
{
	const char *a[] = { "route", "-d", "1s", "-c", "4", "-p", "8", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route");
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	/* what the floor sends: a route body of a real size */
	double avg = json_number_value(json_object_get(r, "avg_answer_bytes"));
	cr_assert(avg > 240 && avg < 800, "answer size %f", avg);
	cr_assert_gt(json_array_size(json_object_get(r, "timeline")), 0);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(d, "seed"), "brokers")), 10);
	/* plaintext reads carry the kernel's receive time: the wire latency
	 * ends there, so it is never above the latency the thread saw */
	json_t *lat = json_object_get(r, "latency_us"), *wire = json_object_get(r, "wire_us");
	cr_assert_not_null(wire, "no wire latency on a plaintext run");
	for (int i = 0; i < 3; i++) {
		const char *k = (const char *[]){ "p50", "p99", "max" }[i];
		double w = json_number_value(json_object_get(wire, k));
		double l = json_number_value(json_object_get(lat, k));
		cr_assert(w > 0 && w <= l * 1.02 + 1, "wire %s %f against latency %f", k, w, l);
	}
	json_decref(d);
}

Test(bench_floor, route_open_loop_binary_headers_two_threads)
{
	const char *a[] = { "route", "-d", "1s", "-r", "2000", "--serialize", "rocketmq",
			    "--threads", "2", "--version", "400", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route open loop");
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	cr_assert(json_is_true(json_object_get(r, "open_loop")));
	cr_assert_not_null(json_object_get(r, "service_us"));
	/* the rate is honoured: 2000/s for a second, give or take the edges */
	json_int_t ok = json_integer_value(json_object_get(r, "ok"));
	cr_assert(ok >= 1600 && ok <= 2400, "answers %lld", (long long)ok);
	json_decref(d);
}

Test(bench_floor, route_by_request_count)
{
	const char *a[] = { "route", "-n", "3000", "-c", "3", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "route -n");
	json_t *r = json_object_get(json_object_get(d, "roles"), "route");
	cr_assert_eq(json_integer_value(json_object_get(r, "ok")), 3000);
	cr_assert_eq(json_integer_value(json_object_get(r, "sent")), 3000);
	json_decref(d);
}

Test(bench_floor, register_plain_and_compressed)
{
	const char *a[] = { "register", "-d", "1s", "-b", "2", "-t", "500", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "register");
	json_decref(d);
	const char *c[] = { "register", "-d", "1s", "-b", "2", "-t", "500", "--compressed",
			    "--interval", "10ms", NULL };
	d = run(c);
	bench_assert_clean(d, "register compressed");
	json_t *r = json_object_get(json_object_get(d, "roles"), "register");
	/* 2 brokers, one registration per 10 ms each at most */
	cr_assert_leq(json_integer_value(json_object_get(r, "ok")), 2 * 100 + 2);
	json_decref(d);
	/* bounded by count: every registration sent is answered and counted */
	const char *n[] = { "register", "-n", "40", "-b", "3", "-t", "50", NULL };
	d = run(n);
	bench_assert_clean(d, "register -n");
	r = json_object_get(json_object_get(d, "roles"), "register");
	cr_assert_eq(json_integer_value(json_object_get(r, "ok")), 40);
	json_decref(d);
}

Test(bench_floor, mixed)
{
	const char *a[] = { "mixed", "-d", "2s", "--storm-brokers", "2", "--storm-topics", "1000", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "mixed");
	json_t *roles = json_object_get(d, "roles");
	cr_assert_not_null(json_object_get(roles, "route_idle"));
	cr_assert_not_null(json_object_get(roles, "route_storm"));
	cr_assert_not_null(json_object_get(roles, "register_storm"));
	json_t *m = json_object_get(d, "mixed");
	cr_assert_gt(json_number_value(json_object_get(m, "throughput_ratio")), 0.0);
	cr_assert_gt(json_number_value(json_object_get(m, "p99_ratio")), 0.0);
	json_decref(d);
}

Test(bench_floor, churn)
{
	const char *a[] = { "churn", "-d", "1s", "-c", "4", "--churn-queries", "2", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "churn");
	json_t *r = json_object_get(json_object_get(d, "roles"), "churn");
	/* every cycle is one connection */
	cr_assert_geq(json_integer_value(json_object_get(r, "connects")),
		      json_integer_value(json_object_get(r, "ok")));
	json_decref(d);
}

Test(bench_floor, seed_with_server_figures)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)floor_pid);
	const char *a[] = { "seed", "-d", "1s", "-b", "3", "-t", "50", "--keepalive", "300ms",
			    "--pid", pid, NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "seed");
	json_t *r = json_object_get(json_object_get(d, "roles"), "seed");
	/* 3 first registrations, then each broker every 300 ms */
	json_int_t ok = json_integer_value(json_object_get(r, "ok"));
	cr_assert(ok >= 6 && ok <= 18, "registrations %lld", (long long)ok);
	json_t *s = json_object_get(d, "server");
	cr_assert_not_null(s);
	cr_assert_eq(json_integer_value(json_object_get(s, "pid")), floor_pid);
	cr_assert_gt(json_integer_value(json_object_get(s, "rss_kb_after")), 0);
	cr_assert_eq(json_integer_value(json_object_get(s, "threads")), 2);
	json_decref(d);
}

Test(bench_floor, plot_and_ratio)
{
	char dir[] = "/tmp/rmqns-bench-test-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char svg[256], j1[256], j2[256], addr[64];
	snprintf(svg, sizeof(svg), "%s/p.svg", dir);
	snprintf(j1, sizeof(j1), "%s/a.json", dir);
	snprintf(j2, sizeof(j2), "%s/b.json", dir);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", floor_port);
	const char *a[] = { "route", "-d", "1s", "--plot", svg, NULL };
	json_t *d = run(a);
	cr_assert_eq(json_dump_file(d, j1, 0), 0);
	cr_assert_eq(json_dump_file(d, j2, 0), 0);
	json_decref(d);
	FILE *f = fopen(svg, "r");
	cr_assert_not_null(f);
	char head[8] = "";
	cr_assert_eq(fread(head, 1, 4, f), 4);
	cr_assert_str_eq(head, "<svg");
	fclose(f);

	char *argv[] = { RMQNS_BENCH_BIN, "ratio", j1, "--", j2, NULL };
	char *out = NULL;
	int st = bench_run_capture(argv, 10000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_not_null(strstr(out, "route.throughput_rps"));
	cr_assert_not_null(strstr(out, " 1.000"), "a run against itself: ratio 1\n%s", out);
	free(out);

	/* --floor: the run's figures as fractions of a saved floor run */
	const char *b[] = { "route", "-d", "1s", "--floor", j1, NULL };
	d = run(b);
	json_t *frac = json_object_get(d, "floor_fraction");
	cr_assert_gt(json_number_value(json_object_get(frac, "route.throughput_rps")), 0.0);
	json_decref(d);

	/* compare.sh, one quick round on each side */
	char *cargv[] = { "/bin/sh", "-c", NULL, NULL };
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "RMQNS_BENCH=%s %s %s %s -r 1 -o %s/cmp -- route -d 500ms -c 2",
		 RMQNS_BENCH_BIN, RMQNS_COMPARE_SH, addr, addr, dir);
	cargv[2] = cmd;
	st = bench_run_capture(cargv, 60000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compare.sh: %s", out);
	cr_assert_not_null(strstr(out, "route.throughput_rps"), "%s", out);
	free(out);
	char rm[300];
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	cr_assert_eq(system(rm), 0);
}

Test(bench_floor, startup_times_exec_to_first_answer)
{
	int port = harness_free_port();
	cr_assert_gt(port, 0);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s --port %d --threads 1 --duration 30", RMQNS_FLOOR_BIN, port);
	const char *a[] = { "startup", "--exec", cmd, "--runs", "2", NULL };
	json_t *d = bench_run_json(RMQNS_BENCH_BIN, port, a);
	json_t *s = json_object_get(d, "startup");
	cr_assert_eq(json_integer_value(json_object_get(s, "runs")), 2);
	cr_assert_eq(json_array_size(json_object_get(s, "samples_ms")), 2);
	double med = json_number_value(json_object_get(json_object_get(s, "first_answer_ms"), "median"));
	cr_assert(med > 0.0 && med < 10000.0, "median %f", med);
	cr_assert_gt(json_integer_value(json_object_get(s, "rss_kb_at_first_answer")), 0);
	json_decref(d);
}

Test(bench_floor, refuses_a_dead_address)
{
	int port = harness_free_port();
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	char *argv[] = { RMQNS_BENCH_BIN, "route", "-a", addr, "-d", "1s", "--quiet", NULL };
	int st = bench_run_capture(argv, 30000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "no server: exit status 1");
}

Test(bench_floor, mixed_with_liveness_traffic)
{
	const char *a[] = { "mixed", "-d", "2s", "--storm-brokers", "2", "--storm-topics", "1000",
			    "--heartbeats", "--kv-interval", "10ms", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "mixed with liveness");
	json_t *roles = json_object_get(d, "roles");
	/* the floor answers at once: four brokers every 10 ms over a 1 s phase */
	json_int_t hb = json_integer_value(json_object_get(json_object_get(roles, "heartbeat_storm"), "ok"));
	cr_assert(hb > 0 && hb <= 4 * 110, "%lld heartbeats", (long long)hb);
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(roles, "query_dv_idle"), "ok")), 0);
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(roles, "kv_put_storm"), "ok")), 0);
	json_decref(d);
}

Test(bench_floor, disconnect_needs_a_server_that_lists_brokers)
{
	/* the floor answers 106 with a route body: no broker is ever listed,
	 * so there is nothing whose removal could be timed */
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", floor_port);
	char *argv[] = { RMQNS_BENCH_BIN, "disconnect", "-a", addr, "-b", "2", "-t", "10",
			 "--json", "--quiet", NULL };
	char *out = NULL;
	int st = bench_run_capture(argv, 60000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status 1");
	cr_assert_null(strstr(out, "routes_gone"), "no figures: %s", out);
	free(out);
}
