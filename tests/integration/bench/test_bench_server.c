/* rmqns-bench against the real rmqns: every scenario runs about a second
 * and must end with answers and no error (seeded topics route, brokers
 * register, churn and the storm leave the route path clean); queries for
 * topics nobody registered are counted as code 17. What the liveness
 * traffic wrote and what the mass disconnect removed is checked again on
 * the server with a client of the test's own; the disconnect plot draws
 * every role's timeline. */
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bench_run.h"
#include "harness.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

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

static json_int_t jint(json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Many clients, each refreshing 10 seeded topics every 2 s, a tenth of them
 * reconnecting per period, a small storm beside them: every connection
 * opens, every refresh is answered in full, the server's RSS per
 * connection is reported. */
Test(bench_server, clients_refresh_with_churn_and_storm)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)srv.pid);
	const char *a[] = { "clients", "-c", "2000", "--period-ms", "2000", "--churn", "0.1", "-d",
			    "3s", "--connect-rate", "4000", "-b", "2", "-t", "20", "--source-addrs", "2",
			    "--storm-brokers", "2", "--storm-topics", "500", "--server-pid", pid, NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "clients");
	json_t *c = json_object_get(d, "clients");
	cr_assert_not_null(c);
	cr_assert_eq(jint(c, "connections"), 2000);
	cr_assert_eq(jint(c, "established"), 2000);
	cr_assert_eq(jint(c, "failed"), 0);
	cr_assert_eq(jint(c, "source_addresses"), 2);
	/* the first refreshes spread over the first 2 s period: each connection
	 * refreshed at least once in 3 s, some twice */
	json_int_t refreshes = jint(c, "refreshes");
	cr_assert(refreshes >= 2000 && refreshes <= 4400, "%lld refreshes", (long long)refreshes);
	/* a refresh is 10 pipelined route queries, all answered */
	json_t *route = json_object_get(json_object_get(d, "roles"), "route");
	cr_assert_eq(jint(route, "ok"), 10 * refreshes);
	cr_assert_eq(jint(route, "errors"), 0);
	/* about a tenth of the refreshes ended in a reconnect */
	json_int_t churned = jint(c, "churned");
	cr_assert(churned > refreshes / 40 && churned < refreshes / 4, "%lld churned of %lld",
		  (long long)churned, (long long)refreshes);
	cr_assert_gt(jint(c, "reconnects"), 0);
	cr_assert_leq(jint(c, "reconnects"), churned);
	cr_assert_gt(json_number_value(json_object_get(c, "route_p99_us")), 0.0);
	cr_assert_gt(json_number_value(json_object_get(c, "register_p99_us")), 0.0);
	cr_assert_gt(jint(json_object_get(json_object_get(d, "roles"), "register_storm"), "ok"), 0);
	/* the server holds memory for its connections */
	cr_assert_gt(jint(c, "rss_kb_connected"), jint(c, "rss_kb_before"));
	double per = json_number_value(json_object_get(c, "rss_bytes_per_connection"));
	cr_assert(per > 0.0 && per < 1024.0 * 1024.0, "%f B per connection", per);
	cr_assert_gt(json_number_value(json_object_get(c, "rss_bytes_per_connection_after")), 0.0);
	json_decref(d);
}

/* A source address the machine does not have: no connection opens, the
 * run says why and fails. */
Test(bench_server, clients_from_a_foreign_source_fail)
{
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
	char *argv[] = { RMQNS_BENCH_BIN, "clients", "-c", "20", "--period-ms", "500", "-d", "1s",
			 "-b", "1", "-t", "10", "--source-addrs", "192.0.2.1", "-a", addr, "--json",
			 "--quiet", NULL };
	char *out = NULL;
	int st = bench_run_capture(argv, 60000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "a run with failed connections exits 1");
	json_t *d = json_loads(out, 0, NULL);
	cr_assert_not_null(d, "%s", out);
	json_t *c = json_object_get(d, "clients");
	cr_assert_eq(jint(c, "established"), 0);
	cr_assert_eq(jint(c, "failed"), 20);
	cr_assert_not_null(strstr(json_string_value(json_object_get(c, "failed_why")), "address"),
			   "%s", json_string_value(json_object_get(c, "failed_why")));
	json_decref(d);
	free(out);
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
	int port = harness_free_port();
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

/* One request with ext fields (key, value pairs, NULL-ended) on a new connection. */
static struct client_reply *ask(int32_t code, ...)
{
	struct remoting_ext_field ext[4];
	uint32_t n = 0;
	va_list ap;
	va_start(ap, code);
	for (const char *k; n < 4 && (k = va_arg(ap, const char *)) != NULL; n++) {
		ext[n].key = k;
		ext[n].value = va_arg(ap, const char *);
	}
	va_end(ap);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	struct remoting_cmd req;
	harness_request_init(&req, code, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = n;
	req.ext_present = n > 0;
	struct client_reply *r = NULL;
	cr_assert_eq(client_call(c, &req, &r, 10000), 0, "no answer to code %d", code);
	client_close(c);
	return r;
}

static bool body_has(const struct client_reply *r, const char *text)
{
	return r->cmd.body && memmem(r->cmd.body, r->cmd.body_len, text, strlen(text));
}

Test(bench_server, mixed_with_liveness_traffic)
{
	const char *a[] = { "mixed", "-d", "2s", "--storm-brokers", "2", "--storm-topics", "1000",
			    "-b", "3", "-t", "20", "--heartbeats", "2", "--heartbeat-interval", "10ms",
			    "--kv-interval", "20ms", NULL };
	json_t *d = run(a);
	/* every role answered, none with an error: 904, 322 and 100 included */
	bench_assert_clean(d, "mixed with liveness");
	json_t *roles = json_object_get(d, "roles");
	static const char *const keys[] = { "heartbeat_idle", "heartbeat_storm", "query_dv_idle",
					    "query_dv_storm", "kv_put_idle", "kv_put_storm",
					    "register_storm" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *r = json_object_get(roles, keys[i]);
		cr_assert_not_null(r, "role %s", keys[i]);
		cr_assert_gt(json_integer_value(json_object_get(r, "ok")), 0, "%s answered", keys[i]);
	}
	/* two brokers, 904 and 322 each, at most one of each in flight: never
	 * more answers than one per interval per broker and kind */
	json_int_t hb = json_integer_value(json_object_get(json_object_get(roles, "heartbeat_idle"), "ok"));
	cr_assert_leq(hb, 2 * 110, "%lld heartbeats in a 1 s phase", (long long)hb);
	json_t *l = json_object_get(json_object_get(d, "mixed"), "liveness");
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(json_object_get(l, "heartbeat"),
		"storm"), "ok")), 0);
	cr_assert_gt(json_number_value(json_object_get(json_object_get(json_object_get(l,
		"register_storm"), "storm"), "p99_us")), 0.0);
	json_decref(d);
	/* the puts are on the server */
	struct client_reply *r = ask(REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "BenchKV", NULL);
	cr_assert_eq(r->cmd.code, 0);
	cr_assert(body_has(r, "key-0"), "the KV namespace holds the bench's keys");
	client_reply_free(r);
}

Test(bench_server, mixed_open_loop)
{
	const char *a[] = { "mixed", "-d", "2s", "-r", "2000", "--storm-brokers", "2",
			    "--storm-topics", "1000", "-b", "2", "-t", "10", NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "mixed open loop");
	json_t *roles = json_object_get(d, "roles");
	cr_assert(json_is_true(json_object_get(json_object_get(roles, "route_idle"), "open_loop")));
	cr_assert(json_is_true(json_object_get(json_object_get(roles, "route_storm"), "open_loop")));
	cr_assert_gt(json_number_value(json_object_get(json_object_get(d, "mixed"), "p99_ratio")), 0.0);
	json_decref(d);
}

/* The control run: route and liveness traffic on this server, the storm
 * on a second one; the storm's brokers exist only there. */
Test(bench_server, mixed_storm_to_another_server)
{
	struct harness_server other;
	cr_assert_eq(harness_start(&other, NULL), 0, "the second rmqns did not start");
	char storm_addr[64];
	snprintf(storm_addr, sizeof(storm_addr), "127.0.0.1:%d", other.port);
	const char *a[] = { "mixed", "-d", "4s", "--storm-brokers", "2", "--storm-topics", "1000",
			    "-b", "2", "-t", "10", "--heartbeats", "1", "--storm-addr", storm_addr, NULL };
	json_t *d = run(a);
	bench_assert_clean(d, "mixed, storm elsewhere");
	json_t *roles = json_object_get(d, "roles");
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(roles, "register_storm"), "ok")), 0);
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(roles, "route_storm"), "ok")), 0);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "config"), "storm_addr")),
			 storm_addr);
	json_decref(d);
	/* each server's log names the brokers that registered there (they are
	 * gone from the tables once the bench has closed its connections) */
	char *here = harness_slurp(srv.log_path), *there = harness_slurp(other.log_path);
	cr_assert(here && there);
	cr_assert_not_null(strstr(here, "name bench-broker-0,"), "the seeded broker registered here");
	cr_assert_not_null(strstr(here, "name bench-broker-hb-0,"), "the heartbeat broker too");
	cr_assert_null(strstr(here, "name bench-broker-storm-"), "no storm broker here");
	cr_assert_not_null(strstr(there, "name bench-broker-storm-0,"), "the storm went to the other");
	cr_assert_not_null(strstr(there, "name bench-broker-storm-1,"));
	cr_assert_null(strstr(there, "name bench-broker-0,"), "and only the storm");
	free(here);
	free(there);
	int st = harness_stop(&other, SIGTERM, 10000, NULL);
	harness_cleanup(&other);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The coordinate pairs of each <polyline> after `from` in an SVG text,
 * into counts[] (at most max); the number of polylines. */
static size_t svg_polyline_points(const char *svg, const char *from, size_t *counts, size_t max)
{
	const char *p = strstr(svg, from);
	size_t n = 0;
	while (p && (p = strstr(p, "<polyline")) != NULL && n < max) {
		const char *pts = strstr(p, "points=\"");
		cr_assert_not_null(pts);
		pts += strlen("points=\"");
		size_t pairs = 0;
		for (const char *q = pts; *q && *q != '"'; q++)
			if (*q == ',')
				pairs++;
		counts[n++] = pairs;
		p = pts;
	}
	return n;
}

/* A run shorter than a second after the closes: route_before is one
 * second, route_during and register_fresh a cut one. Each is a line. */
Test(bench_server, disconnect_plot_draws_every_series)
{
	char dir[128], svg_path[200];
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-plot"), 0);
	snprintf(svg_path, sizeof svg_path, "%s/disconnect.svg", dir);
	const char *a[] = { "disconnect", "-b", "3", "-t", "50", "-d", "30s", "--measure-for", "300ms",
			    "--plot", svg_path, NULL };
	json_t *d = run(a);
	json_decref(d);
	char *svg = harness_slurp(svg_path);
	cr_assert_not_null(svg, "no plot written");
	static const char *const roles[] = { "route_before", "route_during", "register_fresh" };
	for (size_t i = 0; i < 3; i++)
		cr_assert_not_null(strstr(svg, roles[i]), "%s is not in the legend", roles[i]);
	size_t counts[8];
	size_t n = svg_polyline_points(svg, "Latency by percentile", counts, 3);
	cr_assert_eq(n, 3, "one latency line per role, not %zu", n);
	n = svg_polyline_points(svg, "Answers per second", counts, 8);
	cr_assert_eq(n, 3, "one throughput line per role, not %zu:\n%s", n, svg);
	for (size_t i = 0; i < n; i++)
		cr_assert_gt(counts[i], 1, "throughput line %zu (%s) has %zu point(s)", i, roles[i], counts[i]);
	free(svg);
	harness_rmdir(dir);
}

Test(bench_server, disconnect_removes_every_route)
{
	const char *a[] = { "disconnect", "-b", "3", "-t", "50", "-d", "30s", "--measure-for", "300ms", NULL };
	json_t *d = run(a);
	json_t *x = json_object_get(d, "disconnect");
	cr_assert_not_null(x);
	cr_assert_eq(json_integer_value(json_object_get(x, "connections_closed")), 3);
	cr_assert(json_is_true(json_object_get(x, "brokers_gone")));
	cr_assert(json_is_true(json_object_get(x, "routes_gone")));
	double bg = json_number_value(json_object_get(x, "brokers_gone_ms"));
	double rg = json_number_value(json_object_get(x, "routes_gone_ms"));
	cr_assert(bg >= 0 && rg >= bg, "brokers gone %f ms, routes %f ms", bg, rg);
	cr_assert_geq(json_integer_value(json_object_get(x, "polls")), 1);
	cr_assert_geq(json_integer_value(json_object_get(x, "route_checks")), 1);
	/* the fresh broker's registrations: as many latencies as answers (the
	 * first 10,000 are kept) */
	json_t *f = json_object_get(x, "fresh_registration");
	json_int_t count = json_integer_value(json_object_get(f, "count"));
	cr_assert_geq(count, 1);
	json_int_t kept = (json_int_t)json_array_size(json_object_get(f, "each_ms"));
	cr_assert(kept == count || (kept == 10000 && count > 10000), "%lld latencies kept of %lld",
		  (long long)kept, (long long)count);
	cr_assert_gt(json_number_value(json_object_get(f, "first_ms")), 0.0);
	json_t *roles = json_object_get(d, "roles");
	json_t *fr = json_object_get(roles, "register_fresh");
	cr_assert_eq(json_integer_value(json_object_get(fr, "ok")), count);
	cr_assert_gt(json_integer_value(json_object_get(json_object_get(roles, "route_before"), "ok")), 0);
	const char *key;
	json_t *r;
	json_object_foreach(roles, key, r)
		cr_assert_eq(json_integer_value(json_object_get(r, "errors")), 0, "%s: errors", key);
	json_decref(d);
	/* seen from outside: none of the three brokers, none of their topics */
	struct client_reply *c = ask(REQ_GET_BROKER_CLUSTER_INFO, NULL);
	cr_assert_eq(c->cmd.code, 0);
	cr_assert(!body_has(c, "\"bench-broker-0\"") && !body_has(c, "\"bench-broker-2\""));
	client_reply_free(c);
	c = ask(REQ_GET_ROUTEINFO_BY_TOPIC, "topic", "BenchTopic-b1-t25", NULL);
	cr_assert_eq(c->cmd.code, 17);
	client_reply_free(c);
}

/* ---- TLS: the server certificate must name the address dialled ---- */

/* A self-signed certificate for subject alternative names san in
 * dir/name.pem and dir/name.key. */
static void make_cert(const char *dir, const char *name, const char *san)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "cd '%s' && openssl req -x509 -newkey ec -pkeyopt "
			   "ec_paramgen_curve:P-256 -nodes -keyout %s.key -out %s.pem -days 2 "
			   "-subj /CN=127.0.0.1 -addext subjectAltName=%s >/dev/null 2>&1",
			   dir, name, name, san) > 0);
	int st = system(cmd);
	free(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cannot make the certificate %s", name);
}

/* A route run over TLS against server s, trusting dir/name.pem, with
 * one more option (or NULL): its exit code. */
static int tls_route(const struct harness_server *s, const char *dir, const char *name,
		     const char *extra)
{
	char addr[64], ca[300];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", s->port);
	snprintf(ca, sizeof ca, "%s/%s.pem", dir, name);
	char *argv[] = { RMQNS_BENCH_BIN, "route", "-d", "1s", "-c", "2", "-b", "1", "-t", "5",
			 "--tls-ca", ca, "-a", addr, "--json", "--quiet", (char *)extra, NULL };
	char *out = NULL;
	int st = bench_run_capture(argv, 60000, &out);
	free(out);
	cr_assert(WIFEXITED(st), "rmqns-bench died");
	return WEXITSTATUS(st);
}

Test(bench_server, tls_server_name_checked)
{
	char dir[256], cert[300], key[300];
	struct harness_server tls[2];
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-bench-tls"), 0);
	make_cert(dir, "right", "IP:127.0.0.1");
	make_cert(dir, "other", "IP:127.0.0.9,DNS:rmqns-other.invalid");
	const char *names[2] = { "right", "other" };
	for (int i = 0; i < 2; i++) {
		snprintf(cert, sizeof cert, "--tls.server.certPath=%s/%s.pem", dir, names[i]);
		snprintf(key, sizeof key, "--tls.server.keyPath=%s/%s.key", dir, names[i]);
		const char *args[] = { "--tls.server.mode=enforcing", cert, key, NULL };
		cr_assert_eq(harness_start(&tls[i], args), 0, "the TLS server did not start");
	}
	cr_assert_eq(tls_route(&tls[0], dir, "right", NULL), 0, "the right name is accepted");
	cr_assert_eq(tls_route(&tls[1], dir, "other", NULL), 1, "another name is refused");
	/* by the route connections too, not only by the seeding client */
	cr_assert_eq(tls_route(&tls[1], dir, "other", "--no-seed"), 1, "another name is refused");
	cr_assert_eq(tls_route(&tls[1], dir, "other", "--tls-no-verify-hostname"), 0,
		     "the chain only when asked");
	for (int i = 0; i < 2; i++)
		cr_expect_eq(harness_cleanup(&tls[i]), 0);
	harness_rmdir(dir);
}
