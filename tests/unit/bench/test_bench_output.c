/* rmqns-bench statistics and output formats: the per-second timeline, the
 * JSON document (parsed back with jansson), the SVG plot, the text summary
 * and the comparison of saved runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "report.h"
#include "stats.h"

static struct stats st_a, st_b;

/* 1000 answers of 1..1000 us in two seconds, 5 answers of code 17 in
 * 50 us, two timeouts. */
static void fill_route(struct stats *s, const char *name)
{
	cr_assert_eq(stats_init(s, name, false), 0);
	for (uint64_t i = 1; i <= 1000; i++) {
		stats_record_answer(s, 0, i * 1000, 0);
		s->sent++;
		s->bytes_in += 300;
		if (i == 500)
			cr_assert_eq(stats_close_second(s, 1), 0);
	}
	for (int i = 0; i < 5; i++)
		stats_record_answer(s, 17, 50000, 0);
	stats_record_transport(s, STATS_ERR_TIMEOUT, 2);
	cr_assert_eq(stats_close_second(s, 2), 0);
}

static char *capture(void (*fn)(FILE *, const struct report *), const struct report *r)
{
	/* The stream's buffer pointer lives on the heap: gcc -O3 otherwise
	 * takes the text for a pointer into this frame (-Wdangling-pointer). */
	char **text = calloc(1, sizeof(*text));
	size_t len = 0;
	cr_assert_not_null(text);
	FILE *f = open_memstream(text, &len);
	cr_assert_not_null(f);
	fn(f, r);
	fclose(f);
	char *out = *text;
	free(text);
	return out;
}

static void svg_fn(FILE *f, const struct report *r)
{
	cr_assert_eq(report_write_svg(f, r), 0);
}

/* An empty report of the given scenario against the given target. */
static void report_start(struct report *r, const char *scenario, const char *target)
{
	memset(r, 0, sizeof(*r));
	r->scenario = scenario;
	r->target = target;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

Test(bench_stats, timeline_codes_and_peek)
{
	fill_route(&st_a, "route");
	cr_assert_eq(st_a.answered, 1005);
	cr_assert_eq(st_a.ok, 1000);
	cr_assert_eq(stats_errors(&st_a), 7);
	cr_assert_eq(stats_code_count(&st_a, 17), 5);
	cr_assert_eq(stats_code_count(&st_a, 0), 1000);
	cr_assert_eq(stats_code_count(&st_a, 1), 0);
	cr_assert_eq(st_a.nseconds, 2);
	cr_assert_eq(st_a.seconds[0].t, 1);
	cr_assert_eq(st_a.seconds[0].ok, 500);
	cr_assert_eq(st_a.seconds[1].ok, 500);
	cr_assert_eq(st_a.seconds[1].errors, 7);
	struct stats_second last;
	cr_assert(stats_peek_second(&st_a, &last));
	cr_assert_eq(last.t, 2);
	cr_assert(last.p50_ns >= 740000 && last.p50_ns <= 760000, "p50 of 2nd second %llu",
		  (unsigned long long)last.p50_ns);
	stats_destroy(&st_a);
}

Test(bench_stats, many_codes_and_merge)
{
	cr_assert_eq(stats_init(&st_a, "a", false), 0);
	cr_assert_eq(stats_init(&st_b, "b", false), 0);
	for (int c = 1; c <= STATS_MAX_CODES + 4; c++)
		stats_record_answer(&st_a, c, 1000, 0);
	cr_assert_eq(st_a.ncodes, STATS_MAX_CODES);
	cr_assert_eq(st_a.codes_other, 4);
	stats_record_answer(&st_b, 1, 2000, 0);
	stats_record_answer(&st_b, 0, 2000, 0);
	stats_close_second(&st_b, 3);
	stats_close_second(&st_a, 3);
	/* stragglers fold into the last second instead of opening one */
	stats_record_answer(&st_b, 0, 2000, 0);
	cr_assert_eq(stats_fold_second(&st_b, 4), 0);
	cr_assert_eq(st_b.nseconds, 1);
	cr_assert_eq(st_b.seconds[0].ok, 2);
	cr_assert_eq(st_b.lat.count, 3);
	cr_assert_eq(stats_merge(&st_a, &st_b), 0);
	cr_assert_eq(stats_code_count(&st_a, 1), 2);
	cr_assert_eq(st_a.ok, 2);
	cr_assert_eq(st_a.lat.count, STATS_MAX_CODES + 4 + 3);
	cr_assert_eq(st_a.nseconds, 1);
	cr_assert_eq(st_a.seconds[0].ok, 2);
	stats_destroy(&st_a);
	stats_destroy(&st_b);
}

Test(bench_output, json_has_the_fields)
{
	fill_route(&st_a, "route");
	struct report r;
	report_start(&r, "route", "127.0.0.1:9876");
	report_add_role(&r, "route", &st_a, 2.0);
	r.have_server = true;
	r.pid = 42;
	r.before.cpu_s = 1.0;
	r.after.cpu_s = 2.5;
	r.after.rss_kb = 12345;
	r.server_wall_s = 3.0;
	json_t *doc = report_to_json(&r);
	cr_assert_not_null(doc);
	/* through text and back, as a consumer of --json sees it */
	char *text = json_dumps(doc, 0);
	json_decref(doc);
	json_error_t err;
	doc = json_loads(text, 0, &err);
	free(text);
	cr_assert_not_null(doc, "JSON does not parse: %s", err.text);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "tool")), "rmqns-bench");
	cr_assert_str_eq(json_string_value(json_object_get(doc, "scenario")), "route");
	json_t *route = json_object_get(json_object_get(doc, "roles"), "route");
	cr_assert_not_null(route);
	cr_assert_eq(json_integer_value(json_object_get(route, "requests")), 1005);
	cr_assert_eq(json_integer_value(json_object_get(route, "ok")), 1000);
	cr_assert_eq(json_integer_value(json_object_get(route, "errors")), 7);
	cr_assert_float_eq(json_real_value(json_object_get(route, "throughput_rps")), 500.0, 1e-9);
	json_t *lat = json_object_get(route, "latency_us");
	/* the 503rd of 1005 samples: 498 us (five 50 us answers come first) */
	double p50 = json_real_value(json_object_get(lat, "p50"));
	cr_assert(p50 >= 498.0 && p50 <= 498.0 * 1.01, "p50 %f", p50);
	cr_assert_float_eq(json_real_value(json_object_get(lat, "max")), 1000.0, 1e-9);
	cr_assert_not_null(json_object_get(lat, "p90"));
	cr_assert_not_null(json_object_get(lat, "p99"));
	cr_assert_not_null(json_object_get(lat, "p99_9"));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(route, "errors_by_code"), "17")), 5);
	cr_assert_null(json_object_get(json_object_get(route, "errors_by_code"), "0"));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(route, "transport_errors"), "timeout")), 2);
	cr_assert_eq(json_array_size(json_object_get(route, "timeline")), 2);
	cr_assert_float_eq(json_real_value(json_object_get(route, "avg_answer_bytes")), 300000.0 / 1005, 1e-6);
	json_t *srv = json_object_get(doc, "server");
	cr_assert_float_eq(json_real_value(json_object_get(srv, "cpu_s")), 1.5, 1e-9);
	cr_assert_float_eq(json_real_value(json_object_get(srv, "cpu_pct")), 50.0, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(srv, "rss_kb_after")), 12345);
	cr_assert_null(json_object_get(doc, "mixed"));
	json_decref(doc);
	stats_destroy(&st_a);
}

Test(bench_output, mixed_ratios)
{
	fill_route(&st_a, "route_idle");
	cr_assert_eq(stats_init(&st_b, "route_storm", false), 0);
	for (uint64_t i = 1; i <= 1000; i += 2)
		stats_record_answer(&st_b, 0, i * 3000, 0); /* three times slower, half as many */
	struct report r;
	report_start(&r, "mixed", "t");
	report_add_role(&r, "route_idle", &st_a, 2.0);
	report_add_role(&r, "route_storm", &st_b, 2.0);
	json_t *doc = report_to_json(&r);
	cr_assert_not_null(doc);
	json_t *m = json_object_get(doc, "mixed");
	cr_assert_float_eq(json_real_value(json_object_get(m, "throughput_ratio")), 0.5, 1e-9);
	double p99 = json_real_value(json_object_get(m, "p99_ratio"));
	cr_assert(p99 > 2.9 && p99 < 3.1, "p99 ratio %f", p99);
	json_decref(doc);
	stats_destroy(&st_a);
	stats_destroy(&st_b);
}

Test(bench_output, svg_is_well_formed_enough)
{
	fill_route(&st_a, "route");
	cr_assert_eq(stats_init(&st_b, "register", false), 0);
	stats_record_answer(&st_b, 0, 5000000, 0);
	stats_close_second(&st_b, 1);
	struct report r;
	report_start(&r, "route", "a<b&c");
	report_add_role(&r, "route", &st_a, 2.0);
	report_add_role(&r, "register", &st_b, 2.0);
	char *svg = capture(svg_fn, &r);
	cr_assert(strncmp(svg, "<svg", 4) == 0, "starts with <svg");
	size_t n = strlen(svg);
	cr_assert(n > 7 && strcmp(svg + n - 7, "</svg>\n") == 0, "ends with </svg>");
	/* per role: one curve of latency, one of throughput */
	cr_assert_eq(count_of(svg, "<polyline"), 4);
	cr_assert_eq(count_of(svg, "<text"), count_of(svg, "</text>"));
	cr_assert_eq(count_of(svg, "<svg"), 1);
	cr_assert_not_null(strstr(svg, "a&lt;b&amp;c"));
	cr_assert_null(strstr(svg, "a<b"));
	cr_assert_not_null(strstr(svg, "99.9%"));
	/* every polyline's points are numbers, and inside the picture */
	for (const char *p = strstr(svg, "points=\""); p; p = strstr(p + 1, "points=\"")) {
		const char *q = p + 8;
		while (*q != '"') {
			char *end;
			double x = strtod(q, &end);
			cr_assert(end != q && *end == ',', "x in points");
			double y = strtod(end + 1, &end);
			cr_assert(x >= 0 && x <= 960 && y >= 0 && y <= 780, "point %f,%f", x, y);
			q = end;
			while (*q == ' ')
				q++;
		}
	}
	free(svg);
	stats_destroy(&st_a);
	stats_destroy(&st_b);
}

Test(bench_output, text_summary)
{
	fill_route(&st_a, "route");
	struct report r;
	report_start(&r, "route", "127.0.0.1:1");
	report_add_role(&r, "route", &st_a, 2.0);
	char *text = capture(report_print_text, &r);
	cr_assert_not_null(strstr(text, "route: 1005 answers in 2.00 s = 500 ok/s"));
	cr_assert_not_null(strstr(text, "p99.9"));
	cr_assert_not_null(strstr(text, "errors by code: 17 x 5"));
	cr_assert_not_null(strstr(text, "timeout x 2"));
	free(text);
	stats_destroy(&st_a);
}

/* The line of text that starts with key (a copy), or NULL. */
static char *line_of(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p)
		return NULL;
	const char *e = strchr(p, '\n');
	return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

static json_t *doc_with(double rps, double p99)
{
	json_t *d = json_pack("{s:{s:{s:f,s:{s:f,s:f,s:f,s:f},s:i}}}", "roles", "route",
			      "throughput_rps", rps, "latency_us", "p50", p99 / 2, "p90", p99 / 1.5,
			      "p99", p99, "p99_9", p99 * 2, "errors", 0);
	cr_assert_not_null(d);
	return d;
}

Test(bench_output, figures_and_ratio_of_medians)
{
	json_t *a[3] = { doc_with(100, 10), doc_with(300, 30), doc_with(200, 20) };
	json_t *b[2] = { doc_with(100, 10), doc_with(100, 10) };
	struct report_figure f[16];
	size_t n = report_figures(a[0], f, 16);
	cr_assert_eq(n, 6);
	cr_assert_str_eq(f[0].name, "route.throughput_rps");
	cr_assert(f[0].higher_better);
	cr_assert_float_eq(f[0].value, 100.0, 1e-9);
	cr_assert_str_eq(f[3].name, "route.p99_us");
	cr_assert(!f[3].higher_better);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_eq(report_print_ratio(out, a, 3, b, 2, "A", "B"), 0);
	fclose(out);
	/* medians: A 200 rps / p99 20; B 100 / 10 */
	char *line = line_of(text, "route.throughput_rps");
	cr_assert_not_null(line);
	cr_assert_not_null(strstr(line, " 200.00 "), "%s", line);
	cr_assert_not_null(strstr(line, " 100.00 "), "%s", line);
	cr_assert_not_null(strstr(line, " 2.000"), "%s", line);
	free(line);
	line = line_of(text, "route.p99_us");
	cr_assert_not_null(line);
	cr_assert_not_null(strstr(line, " 20.00 "), "%s", line);
	cr_assert_not_null(strstr(line, " 2.000"), "%s", line);
	free(line);
	free(text);
	for (int i = 0; i < 3; i++)
		json_decref(a[i]);
	json_decref(b[0]);
	json_decref(b[1]);
}

/* The liveness roles of mixed: JSON by kind and phase, and the fixed text
 * lines targets.sh reads. */
Test(bench_output, mixed_liveness_lines)
{
	struct stats idle, storm, hb_i, hb_s, reg;
	cr_assert_eq(stats_init(&idle, "route_idle", false), 0);
	cr_assert_eq(stats_init(&storm, "route_storm", false), 0);
	cr_assert_eq(stats_init(&hb_i, "heartbeat_idle", false), 0);
	cr_assert_eq(stats_init(&hb_s, "heartbeat_storm", false), 0);
	cr_assert_eq(stats_init(&reg, "register_storm", false), 0);
	for (uint64_t i = 1; i <= 100; i++) {
		stats_record_answer(&idle, 0, 100000, 0);
		stats_record_answer(&storm, 0, 200000, 0);
		stats_record_answer(&hb_i, 0, 500000, 0);          /* 0.5 ms */
		stats_record_answer(&hb_s, 0, i == 100 ? 9000000 : 1000000, 0);
		stats_record_answer(&reg, 0, 20000000, 0);         /* 20 ms */
	}
	struct report r;
	report_start(&r, "mixed", "t");
	report_add_role(&r, "route_idle", &idle, 1.0);
	report_add_role(&r, "route_storm", &storm, 1.0);
	report_add_role(&r, "register_storm", &reg, 1.0);
	report_add_role(&r, "heartbeat_idle", &hb_i, 1.0);
	report_add_role(&r, "heartbeat_storm", &hb_s, 1.0);
	json_t *doc = report_to_json(&r);
	cr_assert_not_null(doc);
	json_t *l = json_object_get(json_object_get(doc, "mixed"), "liveness");
	json_t *hs = json_object_get(json_object_get(l, "heartbeat"), "storm");
	cr_assert_eq(json_integer_value(json_object_get(hs, "ok")), 100);
	double p99 = json_real_value(json_object_get(hs, "p99_us"));
	cr_assert(p99 > 990 && p99 < 1010, "p99 %f", p99);
	double mx = json_real_value(json_object_get(hs, "max_us"));
	cr_assert(mx > 8900 && mx < 9100, "max %f", mx);
	cr_assert_not_null(json_object_get(json_object_get(l, "heartbeat"), "idle"));
	cr_assert_not_null(json_object_get(json_object_get(l, "register_storm"), "storm"));
	cr_assert_null(json_object_get(json_object_get(l, "register_storm"), "idle"));
	cr_assert_null(json_object_get(l, "kv_put"), "no kv roles, no kv entry");
	json_decref(doc);
	char *text = capture(report_print_text, &r);
	char *hb = line_of(text, "904 heartbeat:");
	cr_assert_not_null(hb, "%s", text);
	cr_assert_not_null(strstr(hb, "idle p50 0.50"), "%s", hb);
	cr_assert_not_null(strstr(hb, "| storm p50 1.0"), "%s", hb);
	char *rg = line_of(text, "103 storm registrations:");
	cr_assert_not_null(rg, "%s", text);
	cr_assert_not_null(strstr(rg, "storm p50 20."), "%s", rg);
	cr_assert_null(strstr(text, "100 kv put:"));
	free(hb);
	free(rg);
	free(text);
	stats_destroy(&idle);
	stats_destroy(&storm);
	stats_destroy(&hb_i);
	stats_destroy(&hb_s);
	stats_destroy(&reg);
}

/* Wire latencies (ending at the kernel's receive timestamp) get their own
 * lines beside the thread-measured ones, which stay as they were. */
Test(bench_output, wire_latency_lines)
{
	struct stats idle, storm, hb_s;
	cr_assert_eq(stats_init(&idle, "route_idle", false), 0);
	cr_assert_eq(stats_init(&storm, "route_storm", false), 0);
	cr_assert_eq(stats_init(&hb_s, "heartbeat_storm", false), 0);
	for (int i = 0; i < 100; i++) {
		stats_record_answer(&idle, 0, 300000, 0);
		stats_record_wire(&idle, 100000);
		stats_record_answer(&storm, 0, 900000, 0);
		stats_record_wire(&storm, 200000);
		stats_record_answer(&hb_s, 0, 3000000, 0);
		stats_record_wire(&hb_s, 1500000);
	}
	struct report r;
	report_start(&r, "mixed", "t");
	report_add_role(&r, "route_idle", &idle, 1.0);
	report_add_role(&r, "route_storm", &storm, 1.0);
	report_add_role(&r, "heartbeat_storm", &hb_s, 1.0);
	char *text = capture(report_print_text, &r);
	char *ratio = line_of(text, "storm vs idle: ");
	char *wratio = line_of(text, "storm vs idle, wire: ");
	char *hb = line_of(text, "904 heartbeat:");
	char *whb = line_of(text, "wire 904 heartbeat:");
	cr_assert(ratio && wratio && hb && whb, "%s", text);
	cr_assert_not_null(strstr(ratio, "p99 x 3.00"), "%s", ratio);
	cr_assert_not_null(strstr(wratio, "p99 x 2.00 (idle 100."), "%s", wratio);
	cr_assert_not_null(strstr(hb, "storm p50 3.0"), "%s", hb);
	cr_assert_not_null(strstr(whb, "storm p50 1.5"), "%s", whb);
	cr_assert_eq(count_of(text, "\n  wire "), 3, "%s", text);
	json_t *doc = report_to_json(&r);
	json_t *w = json_object_get(json_object_get(json_object_get(doc, "roles"), "route_storm"), "wire_us");
	cr_assert_not_null(w);
	double p50 = json_real_value(json_object_get(w, "p50"));
	cr_assert(p50 > 195 && p50 < 205, "wire p50 %f", p50);
	json_decref(doc);
	free(ratio);
	free(wratio);
	free(hb);
	free(whb);
	free(text);
	stats_destroy(&idle);
	stats_destroy(&storm);
	stats_destroy(&hb_s);
}

Test(bench_output, disconnect_figures)
{
	struct stats before, during, fresh;
	cr_assert_eq(stats_init(&before, "route_before", false), 0);
	cr_assert_eq(stats_init(&during, "route_during", false), 0);
	cr_assert_eq(stats_init(&fresh, "register_fresh", false), 0);
	for (int i = 0; i < 10; i++) {
		stats_record_answer(&before, 0, 50000, 0);
		stats_record_answer(&during, 0, 100000, 0);
	}
	static const double each[] = { 40.0, 3.0, 2.0 };
	for (int i = 0; i < 3; i++)
		stats_record_answer(&fresh, 0, (uint64_t)(each[i] * 1e6), 0);
	struct report_disconnect x = {
		.brokers = 32, .topics = 40000, .samples = 3, .closed = 32, .close_spread_us = 500,
		.brokers_gone = true, .brokers_gone_ms = 900.5, .routes_gone = true,
		.routes_gone_ms = 905.25, .waited_ms = 905.25, .polls = 150, .route_checks = 2,
		.fresh_topics = 100, .fresh_ms = each, .nfresh = 3, .fresh_count = 3,
	};
	struct report r;
	report_start(&r, "disconnect", "t");
	r.disconnect = &x;
	report_add_role(&r, "route_before", &before, 1.0);
	report_add_role(&r, "route_during", &during, 0.9);
	report_add_role(&r, "register_fresh", &fresh, 0.9);
	json_t *doc = report_to_json(&r);
	cr_assert_not_null(doc);
	json_t *d = json_object_get(doc, "disconnect");
	cr_assert(json_is_true(json_object_get(d, "routes_gone")));
	cr_assert_float_eq(json_real_value(json_object_get(d, "routes_gone_ms")), 905.25, 1e-9);
	cr_assert_eq(json_integer_value(json_object_get(d, "connections_closed")), 32);
	json_t *f = json_object_get(d, "fresh_registration");
	cr_assert_eq(json_integer_value(json_object_get(f, "count")), 3);
	cr_assert_eq(json_array_size(json_object_get(f, "each_ms")), 3);
	cr_assert_float_eq(json_real_value(json_object_get(f, "first_ms")), 40.0, 1e-9);
	double mx = json_real_value(json_object_get(f, "max_ms"));
	cr_assert(mx > 39.5 && mx < 40.5, "max %f", mx);
	struct report_figure figs[64];
	size_t nf = report_figures(doc, figs, 64);
	bool seen = false;
	for (size_t i = 0; i < nf; i++)
		seen = seen || strcmp(figs[i].name, "disconnect.routes_gone_ms") == 0;
	cr_assert(seen, "compare.sh sees the removal time");
	json_decref(doc);
	char *text = capture(report_print_text, &r);
	cr_assert_not_null(strstr(text, "routes gone after 905.2 ms"), "%s", text);
	cr_assert_not_null(strstr(text, "3 registrations meanwhile: first 40.00 ms"), "%s", text);
	cr_assert_not_null(strstr(text, "each (ms): 40.00 3.00 2.00"), "%s", text);
	cr_assert_not_null(strstr(text, "p50 x 2.00"), "%s", text);
	free(text);
	/* not gone: said so, no time given */
	x.routes_gone = false;
	text = capture(report_print_text, &r);
	cr_assert_not_null(strstr(text, "routes NOT gone after 905.2 ms"), "%s", text);
	free(text);
	doc = report_to_json(&r);
	cr_assert(json_is_false(json_object_get(json_object_get(doc, "disconnect"), "routes_gone")));
	cr_assert_null(json_object_get(json_object_get(doc, "disconnect"), "routes_gone_ms"));
	json_decref(doc);
	stats_destroy(&before);
	stats_destroy(&during);
	stats_destroy(&fresh);
}
