/* rmqns-bench `controller`: its options, the controller-mode requests a
 * broker sends (bytes decoded back), the answer fields it reads, and the
 * fail-over figures in the text and JSON reports. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "ctlreqs.h"
#include "opts.h"
#include "report.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

static int parse(struct bench_opts *o, char *err, ...)
{
	static char *argv[40];
	int argc = 0;
	va_list ap;
	va_start(ap, err);
	argv[argc++] = "rmqns-bench";
	for (char *a = va_arg(ap, char *); a && argc < 39; a = va_arg(ap, char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	bool help;
	return opts_parse(argc, argv, o, &help, err, 256);
}

Test(bench_controller, defaults_are_a_brokers_timings)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "controller", "--controller-addr", "127.0.0.1:9878", NULL), 0, "%s", err);
	cr_assert_eq(o.scenario, SC_CONTROLLER);
	cr_assert_str_eq(opts_scenario_name(o.scenario), "controller");
	cr_assert_eq(o.broker_sets, 2);
	cr_assert_eq(o.replicas, 2);
	cr_assert_eq(o.kills, 0);
	cr_assert_eq(o.heartbeat_interval_ns, 1000000000ull);
	cr_assert_eq(o.heartbeat_timeout_ns, 10000000000ull);
	cr_assert_eq(o.replica_poll_ns, 5000000000ull);
	cr_assert_eq(o.poll_interval_ns, 5000000ull);
	cr_assert_eq(o.kill_every_ns, 5000000000ull);
	cr_assert_eq(o.return_after_ns, 1000000000ull);
	cr_assert_eq(o.failover_timeout_ns, 30000000000ull);
	cr_assert_eq(o.broker_port, 0, "the kernel picks every broker's port");
	cr_assert_eq(o.broker_topics, 4);
	cr_assert_eq(o.duration_ns, 10000000000ull, "without kills: 10 s");
	cr_assert(!o.freeze);
}

Test(bench_controller, kills_and_their_bound)
{
	struct bench_opts o;
	char err[256];
	cr_assert_eq(parse(&o, err, "controller", "--controller-addr", "a:1;b:2;c:3;", "-a",
			   "127.0.0.1:9876;127.0.0.1:9886", "--broker-sets", "5", "--replicas", "3",
			   "--kills", "20", "--kill-every", "2s", "--return-after", "500ms",
			   "--heartbeat-interval", "100ms", "--heartbeat-timeout", "3s", "--poll-interval",
			   "1ms", "--replica-poll", "1s", "--broker-port", "30000", NULL), 0, "%s", err);
	cr_assert_eq(o.broker_sets, 5);
	cr_assert_eq(o.replicas, 3);
	cr_assert_eq(o.kills, 20);
	cr_assert_eq(o.kill_every_ns, 2000000000ull);
	cr_assert_eq(o.return_after_ns, 500000000ull);
	cr_assert_eq(o.heartbeat_interval_ns, 100000000ull);
	cr_assert_eq(o.heartbeat_timeout_ns, 3000000000ull);
	cr_assert_eq(o.poll_interval_ns, 1000000ull);
	cr_assert_eq(o.replica_poll_ns, 1000000000ull);
	cr_assert_eq(o.broker_port, 30000);
	/* a bound that leaves every kill its slowest case: 60 s + 20 x (2 + 30 + 0.5) s */
	cr_assert_eq(o.duration_ns, 60000000000ull + 20ull * 32500000000ull);
	cr_assert_eq(parse(&o, err, "controller", "--controller-addr", "a:1", "--freeze", "--kills", "1",
			   NULL), 0, "%s", err);
	cr_assert(o.freeze);
	cr_assert_eq(o.failover_timeout_ns, 60000000000ull, "a frozen master waits out its timeout");
}

Test(bench_controller, refusals)
{
	struct bench_opts o;
	char err[256];
	cr_assert_neq(parse(&o, err, "controller", NULL), 0);
	cr_assert(strstr(err, "--controller-addr"), "%s", err);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "nohost", NULL), 0);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "h:70000", NULL), 0);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1;b:2;c:3;d:4;e:5;f:6;g:7;h:8;i:9",
			   NULL), 0, "at most 8 controllers");
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "--kills", "1",
			    "--replicas", "1", NULL), 0);
	cr_assert(strstr(err, "slave"), "%s", err);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "--replicas", "9", NULL), 0);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "-n", "100", NULL), 0);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "--tls", NULL), 0);
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "--broker-port", "65535",
			    "--broker-sets", "2", NULL), 0, "no room for four ports");
	cr_assert_neq(parse(&o, err, "controller", "--controller-addr", "a:1", "--failover-timeout", "61s",
			    NULL), 0);
	/* the scenario's options are its own */
	cr_assert_neq(parse(&o, err, "route", "--kills", "2", NULL), 0);
	cr_assert(strstr(err, "controller only"), "%s", err);
	cr_assert_neq(parse(&o, err, "route", "--broker-port", "0", NULL), 0);
	cr_assert_neq(parse(&o, err, "register", "--freeze", NULL), 0);
}

Test(bench_controller, address_lists)
{
	char a[4][OPTS_ADDR_MAX];
	uint32_t n = 0;
	cr_assert_eq(opts_split_addrs("127.0.0.1:9878;[::1]:9868;host:1;", a, 4, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(a[0], "127.0.0.1:9878");
	cr_assert_str_eq(a[1], "[::1]:9868");
	cr_assert_str_eq(a[2], "host:1");
	cr_assert_neq(opts_split_addrs("", a, 4, &n), 0);
	cr_assert_neq(opts_split_addrs(";", a, 4, &n), 0);
	cr_assert_neq(opts_split_addrs("h:0", a, 4, &n), 0);
	cr_assert_neq(opts_split_addrs(":9", a, 4, &n), 0);
	cr_assert_neq(opts_split_addrs("a:1;b:2;c:3;d:4;e:5", a, 4, &n), 0);
}

/* ---- requests on the wire ---- */

static struct remoting_cmd decoded(struct buf *b)
{
	size_t fs;
	cr_assert_eq(remoting_frame_cut(b->data, b->len, 0, &fs), 0);
	cr_assert_eq(fs, b->len, "one whole frame");
	struct remoting_cmd c;
	cr_assert_eq(remoting_decode(b->data, fs, &c), 0);
	return c;
}

static const struct ctlreqs_broker broker = {
	.cluster = "C1", .name = "broker-a", .addr = "127.0.0.1:30911", .id = 2, .version = 441,
};

Test(bench_controller, heartbeat_is_one_way_with_what_a_broker_reports)
{
	struct buf b = BUF_INIT;
	struct ctlreqs_beat beat = { .epoch = 3, .max_offset = 4096, .confirm_offset = 1024,
				     .timeout_ms = 10000 };
	cr_assert_eq(ctlreqs_heartbeat(&broker, &beat, 7, &b), 0);
	struct remoting_cmd c = decoded(&b);
	cr_assert_eq(c.code, CTL_REQ_BROKER_HEARTBEAT);
	cr_assert(remoting_is_oneway(&c));
	cr_assert_eq(c.opaque, 7);
	cr_assert_str_eq(remoting_ext_get(&c, "brokerId"), "2");
	cr_assert_str_eq(remoting_ext_get(&c, "brokerAddr"), "127.0.0.1:30911");
	cr_assert_str_eq(remoting_ext_get(&c, "epoch"), "3");
	cr_assert_str_eq(remoting_ext_get(&c, "maxOffset"), "4096");
	cr_assert_str_eq(remoting_ext_get(&c, "confirmOffset"), "1024");
	cr_assert_str_eq(remoting_ext_get(&c, "heartbeatTimeoutMills"), "10000");
	cr_assert_str_eq(remoting_ext_get(&c, "electionPriority"), "2147483647");
	remoting_cmd_release(&c);
	buf_free(&b);
}

Test(bench_controller, identity_register_elect_alter)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(ctlreqs_apply_id(&broker, 2, "127.0.0.1:30911;1700000000000", 1, &b), 0);
	struct remoting_cmd c = decoded(&b);
	cr_assert_eq(c.code, CTL_REQ_APPLY_BROKER_ID);
	cr_assert(!remoting_is_oneway(&c));
	cr_assert_str_eq(remoting_ext_get(&c, "appliedBrokerId"), "2");
	cr_assert_str_eq(remoting_ext_get(&c, "registerCheckCode"), "127.0.0.1:30911;1700000000000");
	remoting_cmd_release(&c);
	buf_reset(&b);
	cr_assert_eq(ctlreqs_register(&broker, 2, &b), 0);
	c = decoded(&b);
	cr_assert_eq(c.code, CTL_REQ_REGISTER_BROKER);
	cr_assert_str_eq(remoting_ext_get(&c, "brokerAddress"), "127.0.0.1:30911");
	cr_assert_str_eq(remoting_ext_get(&c, "brokerId"), "2");
	remoting_cmd_release(&c);
	buf_reset(&b);
	cr_assert_eq(ctlreqs_elect(&broker, 3, &b), 0);
	c = decoded(&b);
	cr_assert_eq(c.code, CTL_REQ_ELECT_MASTER);
	cr_assert_str_eq(remoting_ext_get(&c, "designateElect"), "false");
	cr_assert_str_eq(remoting_ext_get(&c, "clusterName"), "C1");
	remoting_cmd_release(&c);
	buf_reset(&b);
	int64_t ids[] = { 1, 2 };
	cr_assert_eq(ctlreqs_alter_sss(&broker, 4, ids, 2, 5, 4, &b), 0);
	c = decoded(&b);
	cr_assert_eq(c.code, CTL_REQ_ALTER_SYNC_STATE_SET);
	cr_assert_str_eq(remoting_ext_get(&c, "masterBrokerId"), "2");
	cr_assert_str_eq(remoting_ext_get(&c, "masterEpoch"), "4");
	const char *want = "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":5}";
	cr_assert_eq(c.body_len, strlen(want));
	cr_assert_eq(memcmp(c.body, want, c.body_len), 0);
	remoting_cmd_release(&c);
	buf_free(&b);
}

Test(bench_controller, namesrv_registration_as_master_carries_the_epoch)
{
	struct buf body = BUF_INIT, b = BUF_INIT;
	struct reqs_body_spec spec = { .topic_prefix = "T", .layout = LAYOUT_DISTINCT, .topics = 2,
				       .queues = 4, .version = 441, .state_version = 6 };
	cr_assert_eq(reqs_register_body(&body, &spec, 0, 3, 1700000000000ll), 0);
	cr_assert_eq(ctlreqs_ns_register(&broker, 0, "127.0.0.1:30912", &body, 9, &b), 0);
	struct remoting_cmd c = decoded(&b);
	cr_assert_eq(c.code, REQ_REGISTER_BROKER);
	cr_assert_str_eq(remoting_ext_get(&c, "brokerId"), "0", "a master registers as id 0");
	char crc[16];
	snprintf(crc, sizeof crc, "%u", reqs_body_crc(body.data, body.len));
	cr_assert_str_eq(remoting_ext_get(&c, "bodyCrc32"), crc);
	cr_assert(memmem(c.body, c.body_len, "\"stateVersion\":6", 16), "%.*s", (int)c.body_len, c.body);
	remoting_cmd_release(&c);
	buf_free(&b);
	buf_free(&body);
}

/* ---- answers ---- */

static void answer(struct remoting_cmd *c, int32_t code, struct remoting_ext_field *ext, uint32_t n,
		   const char *body)
{
	memset(c, 0, sizeof(*c));
	c->code = code;
	c->flag = REMOTING_FLAG_RESPONSE;
	c->ext = ext;
	c->ext_count = n;
	c->body = (const uint8_t *)body;
	c->body_len = body ? (uint32_t)strlen(body) : 0;
}

Test(bench_controller, master_views)
{
	struct remoting_ext_field ext[] = {
		{ "masterBrokerId", "2" }, { "masterAddress", "127.0.0.1:30921" }, { "masterEpoch", "3" },
	};
	struct remoting_cmd c;
	struct ctlreqs_master m;
	answer(&c, 0, ext, 3, "{\"syncStateSet\":[2,1],\"syncStateSetEpoch\":4}");
	ctlreqs_read_master(&c, &m);
	cr_assert(m.has_master && m.master_id == 2);
	cr_assert_str_eq(m.master_addr, "127.0.0.1:30921");
	cr_assert(m.has_epoch && m.master_epoch == 3);
	cr_assert(m.has_sss_epoch && m.sss_epoch == 4, "the body's set epoch when the ext has none");
	cr_assert(m.has_sss && m.nsss == 2 && m.sss[0] == 2 && m.sss[1] == 1);
	/* a master cleared: the epoch alone */
	answer(&c, 0, ext + 2, 1, "{\"syncStateSet\":[2],\"syncStateSetEpoch\":9}");
	ctlreqs_read_master(&c, &m);
	cr_assert(!m.has_master && m.has_epoch && m.master_epoch == 3);
	/* 1002's body has bare number keys; the ext fields still read */
	struct remoting_ext_field e2[] = {
		{ "masterBrokerId", "1" }, { "masterAddress", "a:1" }, { "masterEpoch", "1" },
		{ "syncStateSetEpoch", "1" },
	};
	answer(&c, 0, e2, 4,
	       "{\"brokerMemberGroup\":{\"brokerAddrs\":{1:\"a:1\"},\"brokerName\":\"b\",\"cluster\":\"C\"},\"syncStateSet\":[1]}");
	ctlreqs_read_master(&c, &m);
	cr_assert(m.has_master && m.master_id == 1 && m.has_sss_epoch && m.sss_epoch == 1);
	cr_assert(m.has_sss && m.nsss == 1 && m.sss[0] == 1);
}

Test(bench_controller, leader_sync_state_and_route)
{
	struct remoting_ext_field ext[] = {
		{ "controllerLeaderId", "n1" }, { "controllerLeaderAddress", "127.0.0.1:9868" },
		{ "isLeader", "false" },
	};
	struct remoting_cmd c;
	char addr[64];
	answer(&c, 0, ext, 3, NULL);
	cr_assert(ctlreqs_read_leader(&c, addr, sizeof(addr)));
	cr_assert_str_eq(addr, "127.0.0.1:9868");
	answer(&c, 0, ext + 2, 1, NULL);
	cr_assert(!ctlreqs_read_leader(&c, addr, sizeof(addr)), "a candidate names no leader");

	const char *ssd = "{\"replicasInfoTable\":{\"broker-a\":{\"inSyncReplicas\":[{\"alive\":true,"
			  "\"brokerAddress\":\"127.0.0.1:30911\",\"brokerId\":1,\"brokerName\":\"broker-a\"}],"
			  "\"masterAddress\":\"127.0.0.1:30911\",\"masterBrokerId\":1,\"masterEpoch\":2,"
			  "\"notInSyncReplicas\":[],\"syncStateSetEpoch\":3}}}";
	struct ctlreqs_master m;
	cr_assert(ctlreqs_read_sync_state_data((const uint8_t *)ssd, strlen(ssd), "broker-a", &m));
	cr_assert(m.has_master && m.master_id == 1 && m.master_epoch == 2 && m.sss_epoch == 3);
	cr_assert(m.nsss == 1 && m.sss[0] == 1);
	cr_assert(!ctlreqs_read_sync_state_data((const uint8_t *)ssd, strlen(ssd), "broker-b", &m));

	/* both forms of a route: bare keys (fastjson's default) and quoted */
	const char *bare = "{\"brokerDatas\":[{\"brokerAddrs\":{1:\"x:1\"},\"brokerName\":\"other\"},"
			   "{\"brokerAddrs\":{0:\"127.0.0.1:30921\",1:\"127.0.0.1:30911\"},\"brokerName\":\"broker-a\"}],"
			   "\"queueDatas\":[]}";
	cr_assert(ctlreqs_read_route_master((const uint8_t *)bare, strlen(bare), "broker-a", addr,
					    sizeof(addr)));
	cr_assert_str_eq(addr, "127.0.0.1:30921");
	const char *quoted = "{\"brokerDatas\":[{\"brokerAddrs\":{\"2\":\"a:2\"},\"brokerName\":\"broker-a\"}]}";
	cr_assert(!ctlreqs_read_route_master((const uint8_t *)quoted, strlen(quoted), "broker-a", addr,
					     sizeof(addr)), "no master in the route");
	cr_assert(!ctlreqs_read_route_master((const uint8_t *)"nope", 4, "broker-a", addr, sizeof(addr)));
}

/* ---- the report ---- */

Test(bench_controller, distribution_by_nearest_rank)
{
	struct report_dist d;
	double v[] = { 5, -1, 1, 3, 2, 4, 10, 9, 8, 7, 6 };
	report_dist_of(v, 11, &d);
	cr_assert_eq(d.n, 10, "the one not seen is left out");
	cr_assert_eq(d.min, 1);
	cr_assert_eq(d.p50, 5);
	cr_assert_eq(d.p90, 9);
	cr_assert_eq(d.max, 10);
	double two[] = { 7.5, 2.5 };
	report_dist_of(two, 2, &d);
	cr_assert(d.n == 2 && d.min == 2.5 && d.p50 == 2.5 && d.p90 == 7.5 && d.max == 7.5);
	double none[] = { -1 };
	report_dist_of(none, 1, &d);
	cr_assert(d.n == 0 && d.max == 0);
}

static const struct report_kill kills[] = {
	{ .set = 0, .old_master = 1, .new_master = 2, .elected_ms = 1.5, .elected_by = "1008",
	  .notified_ms = 1.75, .route_ms = 4.25, .route_agrees = true, .back_ms = 210 },
	{ .set = 1, .old_master = 1, .new_master = -1, .elected_ms = -1, .notified_ms = -1,
	  .route_ms = -1, .back_ms = -1 },
};

static struct report_controller ctl_fig(void)
{
	return (struct report_controller){
		.sets = 2, .replicas = 2, .controllers = 1, .namesrvs = 1, .kills_asked = 2,
		.kill_every_s = 1, .return_after_s = 0.5, .kills = kills, .nkills = 2, .ready_ms = 120,
		.heartbeats = 400, .heartbeat_s = 2, .heartbeat_interval_ms = 1000, .notifications = 4,
		.elect_requests = 2,
	};
}

Test(bench_controller, json_stages_and_each_kill)
{
	struct report_controller x = ctl_fig();
	struct report r = { .scenario = "controller", .target = "127.0.0.1:9878", .controller = &x };
	json_t *doc = report_to_json(&r);
	cr_assert_not_null(doc);
	json_t *c = json_object_get(doc, "controller");
	cr_assert_str_eq(json_string_value(json_object_get(c, "mode")), "kill");
	cr_assert_eq(json_integer_value(json_object_get(c, "kills")), 2);
	json_t *el = json_object_get(json_object_get(c, "stages"), "elected_ms");
	cr_assert_eq(json_integer_value(json_object_get(el, "n")), 1);
	cr_assert_float_eq(json_real_value(json_object_get(el, "p50")), 1.5, 1e-9);
	json_t *rt = json_object_get(json_object_get(c, "stages"), "route_ms");
	cr_assert_float_eq(json_real_value(json_object_get(rt, "max")), 4.25, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(c, "missing"), "notified_ms")), 1);
	cr_assert_float_eq(json_real_value(json_object_get(json_object_get(c, "heartbeats"), "per_s")),
			   200.0, 1e-9);
	json_t *e0 = json_array_get(json_object_get(c, "each"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(e0, "elected_by")), "1008");
	cr_assert(json_is_true(json_object_get(e0, "route_agrees")));
	json_t *e1 = json_array_get(json_object_get(c, "each"), 1);
	cr_assert_null(json_object_get(e1, "elected_by"));
	cr_assert_float_eq(json_real_value(json_object_get(e1, "route_ms")), -1.0, 1e-9);
	/* the figures compare.sh and `ratio` read */
	struct report_figure f[64];
	size_t n = report_figures(doc, f, 64);
	bool seen = false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(f[i].name, "controller.route_p50_ms") == 0) {
			seen = true;
			cr_assert_float_eq(f[i].value, 4.25, 1e-9);
		}
	cr_assert(seen);
	json_decref(doc);
}

Test(bench_controller, text_lines)
{
	struct report_controller x = ctl_fig();
	x.freeze = true;
	struct report r = { .scenario = "controller", .target = "127.0.0.1:9878", .controller = &x };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	report_print_text(f, &r);
	fclose(f);
	cr_assert(strstr(text, "controller: 2 sets x 2 brokers, 1 controller(s), 1 NameServer(s); every "
			       "set's master in the route after 120.0 ms\n"), "%s", text);
	cr_assert(strstr(text, "2 of 2 masters frozen"), "%s", text);
	cr_assert(strstr(text, "death -> new master elected:  1 of 2, min 1.50 ms, p50 1.50 ms, p90 1.50 ms, "
			       "max 1.50 ms\n"), "%s", text);
	cr_assert(strstr(text, "death -> route shows it as 0: 1 of 2, min 4.25 ms"), "%s", text);
	cr_assert(strstr(text, "heartbeats: 400 sent (200/s, each broker every 1000.0 ms"), "%s", text);
	free(text);
}
