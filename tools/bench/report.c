/* Text, JSON and SVG forms of a bench result, and the comparison of saved
 * runs. Reads the stats it is given; writes only to the FILE it is given. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"

void report_add_role(struct report *r, const char *key, struct stats *st, double wall_s)
{
	if (r->nroles >= REPORT_MAX_ROLES)
		return;
	r->roles[r->nroles].key = key;
	r->roles[r->nroles].st = st;
	r->roles[r->nroles].wall_s = wall_s;
	r->nroles++;
}

static const struct report_role *report_role(const struct report *r, const char *key)
{
	for (size_t i = 0; i < r->nroles; i++)
		if (strcmp(r->roles[i].key, key) == 0)
			return &r->roles[i];
	return NULL;
}

static double report_rate(const struct report_role *rr)
{
	return rr->wall_s > 0 ? (double)rr->st->ok / rr->wall_s : 0.0;
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

/* ---- JSON ---- */

static int jset(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *report_json_latency(const struct hist *h)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bad |= jset(o, "min", json_real(h->count ? us(h->min) : 0.0));
	bad |= jset(o, "p50", json_real(us(hist_percentile(h, 50.0))));
	bad |= jset(o, "p90", json_real(us(hist_percentile(h, 90.0))));
	bad |= jset(o, "p99", json_real(us(hist_percentile(h, 99.0))));
	bad |= jset(o, "p99_9", json_real(us(hist_percentile(h, 99.9))));
	bad |= jset(o, "max", json_real(us(h->max)));
	bad |= jset(o, "mean", json_real(hist_mean(h) / 1000.0));
	bad |= jset(o, "clamped", json_integer((json_int_t)h->clamped));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *report_json_role(const struct report_role *rr)
{
	const struct stats *s = rr->st;
	json_t *o = json_object(), *codes = json_object(), *tr = json_object(), *tl = json_array();
	int bad = !o || !codes || !tr || !tl;
	if (bad)
		goto fail;
	bad |= jset(o, "seconds", json_real(rr->wall_s));
	bad |= jset(o, "sent", json_integer((json_int_t)s->sent));
	bad |= jset(o, "requests", json_integer((json_int_t)s->answered));
	bad |= jset(o, "ok", json_integer((json_int_t)s->ok));
	bad |= jset(o, "errors", json_integer((json_int_t)stats_errors(s)));
	bad |= jset(o, "throughput_rps", json_real(report_rate(rr)));
	bad |= jset(o, "open_loop", json_boolean(s->open_loop));
	bad |= jset(o, "latency_us", report_json_latency(&s->lat));
	if (s->open_loop)
		bad |= jset(o, "service_us", report_json_latency(&s->service));
	if (s->wire.count)
		bad |= jset(o, "wire_us", report_json_latency(&s->wire));
	for (uint32_t i = 0; i < s->ncodes; i++) {
		if (s->codes[i].code == 0)
			continue;
		char k[16];
		snprintf(k, sizeof(k), "%d", s->codes[i].code);
		bad |= jset(codes, k, json_integer((json_int_t)s->codes[i].count));
	}
	if (s->codes_other)
		bad |= jset(codes, "other", json_integer((json_int_t)s->codes_other));
	for (int i = 0; i < STATS_ERR_COUNT; i++)
		bad |= jset(tr, stats_transport_name((enum stats_transport)i),
			    json_integer((json_int_t)s->transport[i]));
	bad |= json_object_set(o, "errors_by_code", codes);
	bad |= json_object_set(o, "transport_errors", tr);
	bad |= jset(o, "bytes_in", json_integer((json_int_t)s->bytes_in));
	bad |= jset(o, "bytes_out", json_integer((json_int_t)s->bytes_out));
	bad |= jset(o, "avg_answer_bytes",
		    json_real(s->answered ? (double)s->bytes_in / (double)s->answered : 0.0));
	bad |= jset(o, "connects", json_integer((json_int_t)s->connects));
	for (uint32_t i = 0; i < s->nseconds && !bad; i++) {
		const struct stats_second *sec = &s->seconds[i];
		json_t *e = json_object();
		if (!e) {
			bad = 1;
			break;
		}
		bad |= jset(e, "t", json_integer(sec->t));
		bad |= jset(e, "ok", json_integer((json_int_t)sec->ok));
		bad |= jset(e, "errors", json_integer((json_int_t)sec->errors));
		bad |= jset(e, "p50_us", json_real(us(sec->p50_ns)));
		bad |= jset(e, "p99_us", json_real(us(sec->p99_ns)));
		bad |= json_array_append_new(tl, e);
	}
	bad |= json_object_set(o, "timeline", tl);
fail:
	json_decref(codes);
	json_decref(tr);
	json_decref(tl);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Bytes of server RSS per connection between two readings (0 when none). */
static double report_rss_per_conn(unsigned long long from_kb, unsigned long long to_kb,
				  unsigned long long conns)
{
	if (!conns || to_kb < from_kb)
		return 0.0;
	return (double)(to_kb - from_kb) * 1024.0 / (double)conns;
}

static json_t *report_json_clients(const struct report *r)
{
	const struct report_clients *x = r->clients;
	const struct report_role *route = report_role(r, "route");
	const struct report_role *reg = report_role(r, "register_storm");
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = 0;
	bad |= jset(o, "connections", json_integer(x->connections));
	bad |= jset(o, "source_addresses", json_integer(x->sources));
	bad |= jset(o, "established", json_integer((json_int_t)x->established));
	bad |= jset(o, "failed", json_integer((json_int_t)x->failed));
	if (x->failed_why)
		bad |= jset(o, "failed_why", json_string(x->failed_why));
	bad |= jset(o, "ramp_s", json_real(x->ramp_s));
	bad |= jset(o, "open_at_end", json_integer(x->open_at_end));
	bad |= jset(o, "reconnects", json_integer((json_int_t)x->reconnects));
	bad |= jset(o, "churned", json_integer((json_int_t)x->churned));
	bad |= jset(o, "refreshes", json_integer((json_int_t)x->refreshes));
	bad |= jset(o, "refreshes_late", json_integer((json_int_t)x->refreshes_late));
	if (route)
		bad |= jset(o, "route_p99_us", json_real(us(hist_percentile(&route->st->lat, 99.0))));
	if (reg)
		bad |= jset(o, "register_p99_us", json_real(us(hist_percentile(&reg->st->lat, 99.0))));
	if (x->have_rss) {
		bad |= jset(o, "rss_kb_before", json_integer((json_int_t)x->rss_kb_before));
		bad |= jset(o, "rss_kb_connected", json_integer((json_int_t)x->rss_kb_connected));
		bad |= jset(o, "rss_kb_after", json_integer((json_int_t)x->rss_kb_after));
		bad |= jset(o, "rss_bytes_per_connection",
			    json_real(report_rss_per_conn(x->rss_kb_before, x->rss_kb_connected,
							  x->established)));
		bad |= jset(o, "rss_bytes_per_connection_after",
			    json_real(report_rss_per_conn(x->rss_kb_before, x->rss_kb_after,
							  x->open_at_end)));
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *report_json_config(const struct bench_opts *o)
{
	json_t *c = json_object();
	if (!c)
		return NULL;
	int bad = 0;
	bad |= jset(c, "duration_s", json_real((double)o->duration_ns / 1e9));
	bad |= jset(c, "requests", json_integer((json_int_t)o->requests));
	bad |= jset(c, "warmup_s", json_real((double)o->warmup_ns / 1e9));
	bad |= jset(c, "conns", json_integer(o->conns));
	bad |= jset(c, "depth", json_integer(o->depth));
	bad |= jset(c, "threads", json_integer(o->threads));
	bad |= jset(c, "rate", json_real(o->rate));
	bad |= jset(c, "version", json_integer(o->version));
	bad |= jset(c, "serialize", json_string(o->serialize ? "rocketmq" : "json"));
	bad |= jset(c, "brokers", json_integer(o->brokers));
	bad |= jset(c, "broker_topics", json_integer(o->broker_topics));
	bad |= jset(c, "queues", json_integer(o->queues));
	bad |= jset(c, "layout", json_string(o->layout == LAYOUT_SHARED ? "shared" : "distinct"));
	bad |= jset(c, "compressed", json_boolean(o->compressed));
	bad |= jset(c, "dv_change", json_boolean(o->dv_change));
	bad |= jset(c, "interval_s", json_real((double)o->interval_ns / 1e9));
	bad |= jset(c, "storm_brokers", json_integer(o->storm_brokers));
	bad |= jset(c, "storm_topics", json_integer(o->storm_topics));
	if (o->storm_addr[0])
		bad |= jset(c, "storm_addr", json_string(o->storm_addr));
	bad |= jset(c, "no_seed", json_boolean(o->no_seed));
	if (o->scenario == SC_CLIENTS) {
		bad |= jset(c, "period_s", json_real((double)o->period_ns / 1e9));
		bad |= jset(c, "jitter", json_real(o->jitter));
		bad |= jset(c, "topics_per_client", json_integer(o->topics_per_client));
		bad |= jset(c, "churn", json_real(o->churn));
		bad |= jset(c, "connect_rate", json_integer(o->connect_rate));
		bad |= jset(c, "storm", json_boolean(o->storm_given));
	}
	if (bad) {
		json_decref(c);
		return NULL;
	}
	return c;
}

static json_t *report_json_server(const struct report *r)
{
	json_t *s = json_object();
	if (!s)
		return NULL;
	double cpu = r->after.cpu_s - r->before.cpu_s;
	int bad = 0;
	bad |= jset(s, "pid", json_integer(r->pid));
	bad |= jset(s, "seconds", json_real(r->server_wall_s));
	bad |= jset(s, "cpu_s", json_real(cpu));
	bad |= jset(s, "user_s", json_real(r->after.user_s - r->before.user_s));
	bad |= jset(s, "sys_s", json_real(r->after.sys_s - r->before.sys_s));
	bad |= jset(s, "cpu_pct", json_real(r->server_wall_s > 0 ? 100.0 * cpu / r->server_wall_s : 0.0));
	bad |= jset(s, "rss_kb_before", json_integer((json_int_t)r->before.rss_kb));
	bad |= jset(s, "rss_kb_after", json_integer((json_int_t)r->after.rss_kb));
	bad |= jset(s, "hwm_kb", json_integer((json_int_t)r->after.hwm_kb));
	bad |= jset(s, "threads", json_integer(r->after.threads));
	if (bad) {
		json_decref(s);
		return NULL;
	}
	return s;
}

static int report_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double report_median(double *v, size_t n)
{
	if (n == 0)
		return 0.0;
	qsort(v, n, sizeof(*v), report_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void report_dist_of(const double *v, size_t n, struct report_dist *d)
{
	memset(d, 0, sizeof(*d));
	double *s = malloc((n ? n : 1) * sizeof(double));
	if (!s)
		return;
	for (size_t i = 0; i < n; i++)
		if (v[i] >= 0)
			s[d->n++] = v[i];
	if (d->n) {
		qsort(s, d->n, sizeof(double), report_cmp_double);
		/* rank ceil(p * n), 1-based */
		size_t r50 = (d->n * 50 + 99) / 100, r90 = (d->n * 90 + 99) / 100;
		d->min = s[0];
		d->p50 = s[r50 - 1];
		d->p90 = s[r90 - 1];
		d->max = s[d->n - 1];
	}
	free(s);
}

/* Stage k (0 elected, 1 notified, 2 route) of every kill. */
static void report_stage(const struct report_controller *x, int k, struct report_dist *d)
{
	double *v = malloc((x->nkills ? x->nkills : 1) * sizeof(double));
	if (!v) {
		memset(d, 0, sizeof(*d));
		return;
	}
	for (size_t i = 0; i < x->nkills; i++)
		v[i] = k == 0 ? x->kills[i].elected_ms : k == 1 ? x->kills[i].notified_ms
								: x->kills[i].route_ms;
	report_dist_of(v, x->nkills, d);
	free(v);
}

static const char *const report_stage_keys[] = { "elected_ms", "notified_ms", "route_ms" };

static json_t *report_json_dist(const struct report_dist *d)
{
	return json_pack("{s:I,s:f,s:f,s:f,s:f}", "n", (json_int_t)d->n, "min", d->min, "p50", d->p50,
			 "p90", d->p90, "max", d->max);
}

static json_t *report_json_kill(const struct report_kill *k)
{
	json_t *o = json_pack("{s:i,s:I,s:I,s:f,s:f,s:f,s:b,s:f}", "set", (int)k->set, "old_master",
			      (json_int_t)k->old_master, "new_master", (json_int_t)k->new_master,
			      "elected_ms", k->elected_ms, "notified_ms", k->notified_ms, "route_ms",
			      k->route_ms, "route_agrees", k->route_agrees, "back_ms", k->back_ms);
	if (o && k->elected_by && jset(o, "elected_by", json_string(k->elected_by))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *report_json_controller(const struct report *r)
{
	const struct report_controller *x = r->controller;
	json_t *o = json_pack("{s:i,s:i,s:i,s:i,s:s,s:i,s:I,s:f,s:f,s:f,s:I,s:I}", "sets", (int)x->sets,
			      "replicas", (int)x->replicas, "controllers", (int)x->controllers,
			      "namesrvs", (int)x->namesrvs, "mode", x->freeze ? "freeze" : "kill",
			      "kills_asked", (int)x->kills_asked, "kills", (json_int_t)x->nkills,
			      "kill_every_s", x->kill_every_s, "return_after_s", x->return_after_s,
			      "ready_ms", x->ready_ms, "notifications", (json_int_t)x->notifications,
			      "elect_requests", (json_int_t)x->elect_requests);
	json_t *hb = json_pack("{s:I,s:f,s:f,s:f}", "sent", (json_int_t)x->heartbeats, "seconds",
			       x->heartbeat_s, "per_s",
			       x->heartbeat_s > 0 ? (double)x->heartbeats / x->heartbeat_s : 0.0,
			       "interval_ms", x->heartbeat_interval_ms);
	json_t *stages = json_object(), *missing = json_object(), *each = json_array();
	int bad = !o || !hb || !stages || !missing || !each;
	for (int k = 0; k < 3 && !bad; k++) {
		struct report_dist d;
		report_stage(x, k, &d);
		bad |= jset(stages, report_stage_keys[k], report_json_dist(&d));
		bad |= jset(missing, report_stage_keys[k], json_integer((json_int_t)(x->nkills - d.n)));
	}
	for (size_t i = 0; i < x->nkills && !bad; i++)
		bad |= json_array_append_new(each, report_json_kill(&x->kills[i])) ? 1 : 0;
	if (!bad) {
		bad |= json_object_set_new(o, "heartbeats", hb);
		hb = NULL;
		bad |= json_object_set_new(o, "stages", stages);
		stages = NULL;
		bad |= json_object_set_new(o, "missing", missing);
		missing = NULL;
		bad |= json_object_set_new(o, "each", each);
		each = NULL;
	}
	json_decref(hb);
	json_decref(stages);
	json_decref(missing);
	json_decref(each);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *report_json_startup(const struct report *r)
{
	json_t *s = json_object(), *samples = json_array(), *fa = json_object();
	double *v = malloc((r->nstartup ? r->nstartup : 1) * sizeof(double));
	int bad = !s || !samples || !fa || !v;
	if (bad)
		goto out;
	for (size_t i = 0; i < r->nstartup; i++) {
		v[i] = r->startup_ms[i];
		bad |= json_array_append_new(samples, json_real(r->startup_ms[i]));
	}
	double med = report_median(v, r->nstartup);
	bad |= jset(fa, "min", json_real(r->nstartup ? v[0] : 0.0));
	bad |= jset(fa, "median", json_real(med));
	bad |= jset(fa, "max", json_real(r->nstartup ? v[r->nstartup - 1] : 0.0));
	bad |= jset(s, "runs", json_integer((json_int_t)r->nstartup));
	bad |= json_object_set(s, "first_answer_ms", fa);
	bad |= json_object_set(s, "samples_ms", samples);
	if (r->have_startup_rss)
		bad |= jset(s, "rss_kb_at_first_answer", json_integer((json_int_t)r->startup_rss_kb));
out:
	free(v);
	json_decref(samples);
	json_decref(fa);
	if (bad) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/* The liveness roles of mixed, by kind and phase. */
static const struct {
	const char *label, *idle, *storm, *key;
} report_liveness[] = {
	{ "103 storm registrations:", NULL, "register_storm", "register_storm" },
	{ "904 heartbeat:", "heartbeat_idle", "heartbeat_storm", "heartbeat" },
	{ "322 data version:", "query_dv_idle", "query_dv_storm", "query_dv" },
	{ "100 kv put:", "kv_put_idle", "kv_put_storm", "kv_put" },
};

static json_t *report_json_brief(const struct report_role *rr)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	const struct hist *h = &rr->st->lat;
	int bad = 0;
	bad |= jset(o, "ok", json_integer((json_int_t)rr->st->ok));
	bad |= jset(o, "errors", json_integer((json_int_t)stats_errors(rr->st)));
	bad |= jset(o, "p50_us", json_real(us(hist_percentile(h, 50.0))));
	bad |= jset(o, "p99_us", json_real(us(hist_percentile(h, 99.0))));
	bad |= jset(o, "max_us", json_real(us(h->max)));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* mixed.liveness.{register_storm,heartbeat,query_dv,kv_put}.{idle,storm}: p50/p99/max. */
static int report_json_liveness(const struct report *r, json_t *m)
{
	json_t *l = json_object();
	int bad = !l;
	for (size_t i = 0; l && i < sizeof(report_liveness) / sizeof(report_liveness[0]); i++) {
		const struct report_role *ri = report_liveness[i].idle
			? report_role(r, report_liveness[i].idle) : NULL;
		const struct report_role *rs = report_role(r, report_liveness[i].storm);
		if (!ri && !rs)
			continue;
		json_t *k = json_object();
		bad |= !k;
		if (!k)
			break;
		if (ri)
			bad |= jset(k, "idle", report_json_brief(ri));
		if (rs)
			bad |= jset(k, "storm", report_json_brief(rs));
		bad |= json_object_set_new(l, report_liveness[i].key, k);
	}
	if (l)
		bad |= json_object_set_new(m, "liveness", l);
	return bad;
}

static json_t *report_json_disconnect(const struct report *r)
{
	const struct report_disconnect *x = r->disconnect;
	const struct report_role *fr = report_role(r, "register_fresh");
	json_t *o = json_object(), *f = json_object(), *each = json_array();
	int bad = !o || !f || !each;
	if (bad)
		goto out;
	bad |= jset(o, "brokers", json_integer(x->brokers));
	bad |= jset(o, "topics_per_broker", json_integer(x->topics));
	bad |= jset(o, "connections_closed", json_integer(x->closed));
	bad |= jset(o, "close_spread_us", json_real(x->close_spread_us));
	bad |= jset(o, "brokers_gone", json_boolean(x->brokers_gone));
	if (x->brokers_gone)
		bad |= jset(o, "brokers_gone_ms", json_real(x->brokers_gone_ms));
	bad |= jset(o, "routes_gone", json_boolean(x->routes_gone));
	if (x->routes_gone)
		bad |= jset(o, "routes_gone_ms", json_real(x->routes_gone_ms));
	bad |= jset(o, "waited_ms", json_real(x->waited_ms));
	bad |= jset(o, "samples_per_broker", json_integer(x->samples));
	bad |= jset(o, "polls", json_integer(x->polls));
	bad |= jset(o, "route_checks", json_integer(x->route_checks));
	bad |= jset(f, "topics", json_integer(x->fresh_topics));
	bad |= jset(f, "count", json_integer((json_int_t)x->fresh_count));
	if (x->nfresh)
		bad |= jset(f, "first_ms", json_real(x->fresh_ms[0]));
	if (fr) {
		const struct hist *h = &fr->st->lat;
		bad |= jset(f, "p50_ms", json_real((double)hist_percentile(h, 50.0) / 1e6));
		bad |= jset(f, "p99_ms", json_real((double)hist_percentile(h, 99.0) / 1e6));
		bad |= jset(f, "max_ms", json_real((double)h->max / 1e6));
	}
	for (size_t i = 0; i < x->nfresh && !bad; i++)
		bad |= json_array_append_new(each, json_real(x->fresh_ms[i]));
	bad |= json_object_set(f, "each_ms", each);
	bad |= json_object_set(o, "fresh_registration", f);
out:
	json_decref(f);
	json_decref(each);
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *report_to_json(const struct report *r)
{
	json_t *doc = json_object(), *roles = json_object();
	int bad = !doc || !roles;
	if (bad)
		goto out;
	bad |= jset(doc, "tool", json_string("rmqns-bench"));
	bad |= jset(doc, "scenario", json_string(r->scenario ? r->scenario : ""));
	bad |= jset(doc, "target", json_string(r->target ? r->target : ""));
	if (r->opts)
		bad |= jset(doc, "config", report_json_config(r->opts));
	if (r->seed_brokers) {
		json_t *sd = json_object();
		bad |= !sd;
		if (sd) {
			bad |= jset(sd, "brokers", json_integer(r->seed_brokers));
			bad |= jset(sd, "topics_per_broker", json_integer(r->seed_topics));
			bad |= jset(sd, "seconds", json_real(r->seed_s));
			bad |= json_object_set_new(doc, "seed", sd);
		}
	}
	for (size_t i = 0; i < r->nroles && !bad; i++)
		bad |= jset(roles, r->roles[i].key, report_json_role(&r->roles[i]));
	bad |= json_object_set(doc, "roles", roles);
	const struct report_role *idle = report_role(r, "route_idle");
	const struct report_role *storm = report_role(r, "route_storm");
	/* mixed: the storm/idle ratios, and the liveness roles (also without an idle phase) */
	bool liveness = report_role(r, "register_storm") != NULL && !r->clients;
	if ((idle && storm) || liveness) {
		json_t *m = json_object();
		bad |= !m;
		if (m && liveness)
			bad |= report_json_liveness(r, m);
		if (m && idle && storm) {
			double ip99 = (double)hist_percentile(&idle->st->lat, 99.0);
			double sp99 = (double)hist_percentile(&storm->st->lat, 99.0);
			double ip50 = (double)hist_percentile(&idle->st->lat, 50.0);
			double sp50 = (double)hist_percentile(&storm->st->lat, 50.0);
			double it = report_rate(idle), st = report_rate(storm);
			bad |= jset(m, "p50_ratio", json_real(ip50 > 0 ? sp50 / ip50 : 0.0));
			bad |= jset(m, "p99_ratio", json_real(ip99 > 0 ? sp99 / ip99 : 0.0));
			bad |= jset(m, "throughput_ratio", json_real(it > 0 ? st / it : 0.0));
		}
		if (m)
			bad |= json_object_set_new(doc, "mixed", m);
	}
	if (r->disconnect && !bad)
		bad |= jset(doc, "disconnect", report_json_disconnect(r));
	if (r->clients && !bad)
		bad |= jset(doc, "clients", report_json_clients(r));
	if (r->controller && !bad)
		bad |= jset(doc, "controller", report_json_controller(r));
	if (r->have_server)
		bad |= jset(doc, "server", report_json_server(r));
	if (r->nstartup)
		bad |= jset(doc, "startup", report_json_startup(r));
out:
	json_decref(roles);
	if (bad) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* ---- text ---- */

static const char *report_fmt_ns(char *b, size_t n, uint64_t ns)
{
	if (ns < 1000)
		snprintf(b, n, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(b, n, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(b, n, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(b, n, "%.2f s", (double)ns / 1e9);
	return b;
}

static void report_print_latency(FILE *f, const char *label, const struct hist *h)
{
	char a[5][24], m[24];
	fprintf(f, "  %-9s p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n", label,
		report_fmt_ns(a[0], 24, hist_percentile(h, 50.0)),
		report_fmt_ns(a[1], 24, hist_percentile(h, 90.0)),
		report_fmt_ns(a[2], 24, hist_percentile(h, 99.0)),
		report_fmt_ns(a[3], 24, hist_percentile(h, 99.9)),
		report_fmt_ns(a[4], 24, h->max),
		report_fmt_ns(m, 24, (uint64_t)hist_mean(h)));
}

static void report_print_role(FILE *f, const struct report_role *rr)
{
	const struct stats *s = rr->st;
	fprintf(f, "%s: %llu answers in %.2f s = %.0f ok/s; ok %llu, errors %llu\n", rr->key,
		(unsigned long long)s->answered, rr->wall_s, report_rate(rr),
		(unsigned long long)s->ok, (unsigned long long)stats_errors(s));
	if (s->lat.count) {
		report_print_latency(f, s->open_loop ? "latency*" : "latency", &s->lat);
		if (s->open_loop) {
			report_print_latency(f, "service", &s->service);
			fprintf(f, "  (* from the intended send time: coordinated omission corrected)\n");
		}
		if (s->wire.count)
			report_print_latency(f, "wire", &s->wire);
	}
	if (s->code_errors) {
		fprintf(f, "  errors by code:");
		for (uint32_t i = 0; i < s->ncodes; i++)
			if (s->codes[i].code != 0)
				fprintf(f, " %d x %llu", s->codes[i].code,
					(unsigned long long)s->codes[i].count);
		if (s->codes_other)
			fprintf(f, " other x %llu", (unsigned long long)s->codes_other);
		fputc('\n', f);
	}
	bool any = false;
	for (int i = 0; i < STATS_ERR_COUNT; i++)
		any = any || s->transport[i];
	if (any) {
		fprintf(f, "  transport errors:");
		for (int i = 0; i < STATS_ERR_COUNT; i++)
			if (s->transport[i])
				fprintf(f, " %s x %llu", stats_transport_name((enum stats_transport)i),
					(unsigned long long)s->transport[i]);
		fputc('\n', f);
	}
	if (s->answered)
		fprintf(f, "  bytes: out %.1f MB, in %.1f MB (%.0f B per answer)\n",
			(double)s->bytes_out / 1e6, (double)s->bytes_in / 1e6,
			(double)s->bytes_in / (double)s->answered);
}

static void report_print_brief(FILE *f, const char *phase, const struct report_role *rr, bool wire)
{
	const struct hist *h = wire ? &rr->st->wire : &rr->st->lat;
	fprintf(f, " %s p50 %.3f ms, p99 %.3f ms, max %.3f ms (%llu ok)", phase,
		(double)hist_percentile(h, 50.0) / 1e6, (double)hist_percentile(h, 99.0) / 1e6,
		(double)h->max / 1e6, (unsigned long long)rr->st->ok);
}

/* One line per liveness kind, in a fixed form scripts read (targets.sh);
 * then the same from the wire latencies, "wire " before the label. */
static void report_print_liveness(FILE *f, const struct report *r)
{
	for (int wire = 0; wire < 2; wire++) {
		for (size_t i = 0; i < sizeof(report_liveness) / sizeof(report_liveness[0]); i++) {
			const struct report_role *ri = report_liveness[i].idle
				? report_role(r, report_liveness[i].idle) : NULL;
			const struct report_role *rs = report_role(r, report_liveness[i].storm);
			if (wire && ri && !ri->st->wire.count)
				ri = NULL;
			if (wire && rs && !rs->st->wire.count)
				rs = NULL;
			if (!ri && !rs)
				continue;
			char label[40];
			snprintf(label, sizeof label, "%s%s", wire ? "wire " : "", report_liveness[i].label);
			fprintf(f, "%-*s", wire ? 30 : 25, label);
			if (ri)
				report_print_brief(f, "idle", ri, wire);
			if (ri && rs)
				fputs(" |", f);
			if (rs)
				report_print_brief(f, "storm", rs, wire);
			fputc('\n', f);
		}
	}
}

/* Lines in a fixed form scripts read (targets.sh): "routes gone after X ms",
 * "registrations ... max X ms". */
static void report_print_disconnect(FILE *f, const struct report *r)
{
	const struct report_disconnect *x = r->disconnect;
	fprintf(f, "disconnect: %u connections of %u brokers x %u topics closed within %.1f us\n",
		x->closed, x->brokers, x->topics, x->close_spread_us);
	if (x->brokers_gone)
		fprintf(f, "  brokers gone from GET_BROKER_CLUSTER_INFO after %.1f ms\n", x->brokers_gone_ms);
	if (x->routes_gone)
		fprintf(f, "  routes gone after %.1f ms (%u sampled topics a broker answer 17; %u polls)\n",
			x->routes_gone_ms, x->samples, x->polls);
	else
		fprintf(f, "  routes NOT gone after %.1f ms (%u polls)\n", x->waited_ms, x->polls);
	const struct report_role *fr = report_role(r, "register_fresh");
	if (fr && fr->st->lat.count) {
		const struct hist *h = &fr->st->lat;
		fprintf(f, "  fresh broker, %u topics, %llu registrations meanwhile: first %.2f ms, "
			"p50 %.2f ms, max %.2f ms\n", x->fresh_topics, x->fresh_count,
			x->nfresh ? x->fresh_ms[0] : 0.0, (double)hist_percentile(h, 50.0) / 1e6,
			(double)h->max / 1e6);
		fprintf(f, "  each (ms):");
		for (size_t i = 0; i < x->nfresh && i < 20; i++)
			fprintf(f, " %.2f", x->fresh_ms[i]);
		fprintf(f, "%s\n", x->nfresh > 20 ? " ..." : "");
	}
	const struct report_role *rb = report_role(r, "route_before");
	const struct report_role *rd = report_role(r, "route_during");
	if (rb && rd && rb->st->lat.count && rd->st->lat.count)
		fprintf(f, "  route queries during / before: p50 x %.2f, p99 x %.2f, max %.2f ms\n",
			(double)hist_percentile(&rd->st->lat, 50.0) /
				(double)hist_percentile(&rb->st->lat, 50.0),
			(double)hist_percentile(&rd->st->lat, 99.0) /
				(double)hist_percentile(&rb->st->lat, 99.0),
			(double)rd->st->lat.max / 1e6);
}

/* Lines in a fixed form: "clients: ...", "server rss per connection: N B". */
static void report_print_clients(FILE *f, const struct report *r)
{
	const struct report_clients *x = r->clients;
	fprintf(f, "clients: %llu of %u connections opened in %.2f s from %u source address(es), "
		"%llu failed%s%s%s\n", x->established, x->connections, x->ramp_s, x->sources, x->failed,
		x->failed_why ? " (" : "", x->failed_why ? x->failed_why : "", x->failed_why ? ")" : "");
	fprintf(f, "  %llu refreshes answered in full, %llu came due late; %llu churned, "
		"%llu reconnects; %u open at the end\n", x->refreshes, x->refreshes_late, x->churned,
		x->reconnects, x->open_at_end);
	if (x->have_rss)
		fprintf(f, "server rss: %llu kB before the connections, %llu kB with them open, "
			"%llu kB at the end\nserver rss per connection: %.0f B open, %.0f B at the end\n",
			x->rss_kb_before, x->rss_kb_connected, x->rss_kb_after,
			report_rss_per_conn(x->rss_kb_before, x->rss_kb_connected, x->established),
			report_rss_per_conn(x->rss_kb_before, x->rss_kb_after, x->open_at_end));
}

/* Lines in a fixed form: "death -> ...: n of K, min X ms, p50 X ms, p90 X ms, max X ms". */
static void report_print_controller(FILE *f, const struct report *r)
{
	static const char *const label[] = {
		"death -> new master elected:  ", "death -> new master notified: ",
		"death -> route shows it as 0: ",
	};
	const struct report_controller *x = r->controller;
	fprintf(f, "controller: %u sets x %u brokers, %u controller(s), %u NameServer(s); every set's "
		"master in the route after %.1f ms\n", x->sets, x->replicas, x->controllers,
		x->namesrvs, x->ready_ms);
	if (x->kills_asked)
		fprintf(f, "  %zu of %u masters %s, one every %.3g s, back as slaves after %.3g s\n",
			x->nkills, x->kills_asked, x->freeze ? "frozen (heartbeats stopped, connections open)"
							     : "killed (connections closed)",
			x->kill_every_s, x->return_after_s);
	for (int k = 0; k < 3 && x->nkills; k++) {
		struct report_dist d;
		report_stage(x, k, &d);
		fprintf(f, "  %s%zu of %zu", label[k], d.n, x->nkills);
		if (d.n)
			fprintf(f, ", min %.2f ms, p50 %.2f ms, p90 %.2f ms, max %.2f ms", d.min, d.p50,
				d.p90, d.max);
		fputc('\n', f);
	}
	fprintf(f, "  heartbeats: %llu sent (%.0f/s, each broker every %.1f ms to every controller); "
		"%llu role notifications received, %llu elections asked by brokers\n", x->heartbeats,
		x->heartbeat_s > 0 ? (double)x->heartbeats / x->heartbeat_s : 0.0,
		x->heartbeat_interval_ms, x->notifications, x->elect_requests);
}

void report_print_text(FILE *f, const struct report *r)
{
	const struct bench_opts *o = r->opts;
	fprintf(f, "rmqns-bench %s -> %s\n", r->scenario ? r->scenario : "?", r->target ? r->target : "?");
	bool queries = o && (o->scenario == SC_ROUTE || o->scenario == SC_MIXED ||
			     o->scenario == SC_CHURN || o->scenario == SC_DISCONNECT);
	if (o && o->scenario == SC_CLIENTS) {
		fprintf(f, "  %u connections, each %u topics every %.3g s (jitter %.0f%%, churn %.1f%%), "
			"%u thread(s)\n", o->conns, o->topics_per_client, (double)o->period_ns / 1e9,
			100.0 * o->jitter, 100.0 * o->churn, o->threads);
	} else if (queries) {
		fprintf(f, "  %u conns x depth %u, %s, version %d, %s headers, %u thread(s)\n", o->conns,
			o->scenario == SC_CHURN ? 1 : o->depth,
			o->rate > 0 ? "open loop" : "closed loop", o->version,
			o->serialize ? "ROCKETMQ" : "JSON", o->threads);
		if (o->rate > 0)
			fprintf(f, "  rate %.0f requests/s\n", o->rate);
	} else if (o && o->scenario != SC_STARTUP) {
		fprintf(f, "  version %d, %s headers\n", o->version, o->serialize ? "ROCKETMQ" : "JSON");
	}
	if (o && o->scenario != SC_STARTUP && o->scenario != SC_CONTROLLER) {
		fprintf(f, "  brokers %u x %u topics x %u queues, %s topics, %s bodies\n", o->brokers,
			o->broker_topics, o->queues, o->layout == LAYOUT_SHARED ? "shared" : "distinct",
			o->compressed ? "compressed" : "plain");
		if (o->scenario == SC_MIXED || o->storm_given)
			fprintf(f, "  storm: %u brokers x %u topics re-registering%s%s\n",
				o->storm_brokers, o->storm_topics, o->storm_addr[0] ? " at " : "",
				o->storm_addr);
	}
	if (r->seed_brokers)
		fprintf(f, "seeded %u brokers x %u topics in %.2f s\n", r->seed_brokers, r->seed_topics,
			r->seed_s);
	for (size_t i = 0; i < r->nroles; i++)
		report_print_role(f, &r->roles[i]);
	const struct report_role *idle = report_role(r, "route_idle");
	const struct report_role *storm = report_role(r, "route_storm");
	if (idle && storm) {
		double ip99 = (double)hist_percentile(&idle->st->lat, 99.0);
		double sp99 = (double)hist_percentile(&storm->st->lat, 99.0);
		double it = report_rate(idle), st = report_rate(storm);
		fprintf(f, "storm vs idle: p99 x %.2f, throughput x %.2f\n", ip99 > 0 ? sp99 / ip99 : 0.0,
			it > 0 ? st / it : 0.0);
		if (idle->st->wire.count && storm->st->wire.count) {
			double iw = (double)hist_percentile(&idle->st->wire, 99.0);
			double sw = (double)hist_percentile(&storm->st->wire, 99.0);
			fprintf(f, "storm vs idle, wire: p99 x %.2f (idle %.1f us, storm %.1f us)\n",
				iw > 0 ? sw / iw : 0.0, iw / 1e3, sw / 1e3);
		}
	}
	if (!r->clients)
		report_print_liveness(f, r);
	if (r->disconnect)
		report_print_disconnect(f, r);
	if (r->clients)
		report_print_clients(f, r);
	if (r->controller)
		report_print_controller(f, r);
	if (r->have_server) {
		double cpu = r->after.cpu_s - r->before.cpu_s;
		fprintf(f, "server pid %ld: cpu %.2f s (user %.2f, sys %.2f) = %.0f%% of one core, "
			"rss %llu kB -> %llu kB, peak %llu kB, %lld threads\n",
			r->pid, cpu, r->after.user_s - r->before.user_s, r->after.sys_s - r->before.sys_s,
			r->server_wall_s > 0 ? 100.0 * cpu / r->server_wall_s : 0.0,
			(unsigned long long)r->before.rss_kb, (unsigned long long)r->after.rss_kb,
			(unsigned long long)r->after.hwm_kb, (long long)r->after.threads);
	}
	if (r->nstartup) {
		double *v = malloc(r->nstartup * sizeof(double));
		if (v) {
			memcpy(v, r->startup_ms, r->nstartup * sizeof(double));
			double med = report_median(v, r->nstartup);
			fprintf(f, "startup: exec -> first answer over %zu runs: min %.2f ms, median %.2f ms, "
				"max %.2f ms\n", r->nstartup, v[0], med, v[r->nstartup - 1]);
			free(v);
		}
		if (r->have_startup_rss)
			fprintf(f, "  server rss at first answer: %llu kB\n", r->startup_rss_kb);
	}
}

/* ---- SVG ---- */

static const char *const report_colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
};

static void report_svg_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* 1, 2 or 5 times a power of ten, at least v. */
static double report_nice_ceil(double v)
{
	if (v <= 0)
		return 1.0;
	double p = pow(10.0, floor(log10(v)));
	for (int k = 0; k < 4; k++) {
		static const double m[] = { 1, 2, 5, 10 };
		if (m[k] * p >= v)
			return m[k] * p;
	}
	return 10 * p;
}

#define SVG_W 960
#define SVG_L 90.0
#define SVG_R 930.0

static void report_svg_frame(FILE *f, double top, double bottom, const char *title)
{
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"15\" font-weight=\"bold\">", SVG_L,
		top - 12);
	report_svg_text(f, title);
	fputs("</text>\n", f);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
		"stroke=\"#444\"/>\n", SVG_L, top, SVG_R - SVG_L, bottom - top);
}

static void report_svg_ytick(FILE *f, double y, const char *label)
{
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
		SVG_L, y, SVG_R, y);
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
		SVG_L - 6, y + 4, label);
}

/* Linear y axis from 0 to ymax in five steps. */
static void report_svg_axes(FILE *f, double top, double bottom, double ymax, const char *yunit,
			    const char *title)
{
	report_svg_frame(f, top, bottom, title);
	for (int k = 0; k <= 5; k++) {
		char label[48];
		snprintf(label, sizeof(label), "%g %s", ymax * k / 5.0, yunit);
		report_svg_ytick(f, bottom - (bottom - top) * k / 5.0, label);
	}
}

/* Latencies span decades (a storm's 100 ms next to 100 us route answers):
 * the y axis is logarithmic, one tick per decade, in microseconds. */
struct report_logy {
	double lo, hi; /* log10 of the axis ends, in us */
	double top, bottom;
};

static double report_logy_y(const struct report_logy *a, double v_us)
{
	double l = v_us > 0 ? log10(v_us) : a->lo;
	if (l < a->lo)
		l = a->lo;
	if (l > a->hi)
		l = a->hi;
	return a->bottom - (a->bottom - a->top) * (l - a->lo) / (a->hi - a->lo);
}

static void report_svg_latency(FILE *f, const struct report *r, double top, double bottom)
{
	/* x = log10(1 / (1 - q)): 0 for the median's left end, 2 for p99, 3 for p99.9 */
	double xmax = 2.0, max_us = 1.0, min_us = 1e12;
	for (size_t i = 0; i < r->nroles; i++) {
		const struct hist *h = &r->roles[i].st->lat;
		if (!h->count)
			continue;
		double lx = log10((double)h->count);
		if (lx > xmax)
			xmax = lx;
		if (us(h->max) > max_us)
			max_us = us(h->max);
		if (us(h->min) < min_us)
			min_us = us(h->min);
	}
	xmax = ceil(xmax > 6.0 ? 6.0 : xmax);
	struct report_logy ax = { .top = top, .bottom = bottom };
	ax.lo = floor(log10(min_us < 1.0 ? 1.0 : (min_us > max_us ? max_us : min_us)));
	ax.hi = ceil(log10(max_us));
	if (ax.hi <= ax.lo)
		ax.hi = ax.lo + 1;
	report_svg_frame(f, top, bottom, "Latency by percentile");
	for (int d = (int)ax.lo; d <= (int)ax.hi; d++) {
		static const char *const names[] = { "1 us", "10 us", "100 us", "1 ms", "10 ms",
						     "100 ms", "1 s", "10 s", "100 s" };
		report_svg_ytick(f, report_logy_y(&ax, pow(10.0, d)), d >= 0 && d <= 8 ? names[d] : "?");
	}
	for (int k = 0; k <= (int)xmax; k++) {
		double x = SVG_L + (SVG_R - SVG_L) * k / xmax;
		char label[32];
		if (k == 0)
			snprintf(label, sizeof(label), "0%%");
		else
			snprintf(label, sizeof(label), "%.*f%%", k > 2 ? k - 2 : 0, 100.0 - pow(10.0, 2 - k));
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n",
			x, top, x, bottom);
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
			x, bottom + 16, label);
	}
	for (size_t i = 0; i < r->nroles; i++) {
		const struct hist *h = &r->roles[i].st->lat;
		if (!h->count)
			continue;
		double lx = log10((double)h->count);
		if (lx > xmax)
			lx = xmax;
		fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"",
			report_colors[i % 6]);
		const int steps = 200;
		for (int k = 0; k <= steps; k++) {
			double xv = xmax * k / steps;
			if (xv > lx)
				xv = lx;
			double q = 100.0 * (1.0 - pow(10.0, -xv));
			double x = SVG_L + (SVG_R - SVG_L) * xv / xmax;
			fprintf(f, "%.1f,%.1f ", x, report_logy_y(&ax, us(hist_percentile(h, q))));
			if (xv >= lx)
				break;
		}
		fputs("\"/>\n", f);
	}
}

/* The answers per second of a timeline entry: a second cut short (the
 * last one of a run) counts for the part of it that was measured. */
static double report_second_rate(const struct stats_second *sec)
{
	double span = sec->span_ms ? (double)sec->span_ms / 1e3 : 1.0;
	return (double)sec->ok / span;
}

/* Each second is drawn as a step across the time it covers, so a role of
 * one second is a visible segment and a second cut short is neither a
 * drop to nothing nor stretched. */
static void report_svg_throughput(FILE *f, const struct report *r, double top, double bottom)
{
	uint32_t tmax = 1;
	double ymax_v = 0.0;
	for (size_t i = 0; i < r->nroles; i++) {
		const struct stats *s = r->roles[i].st;
		for (uint32_t k = 0; k < s->nseconds; k++) {
			if (s->seconds[k].t > tmax)
				tmax = s->seconds[k].t;
			if (report_second_rate(&s->seconds[k]) > ymax_v)
				ymax_v = report_second_rate(&s->seconds[k]);
		}
	}
	double ymax = report_nice_ceil(ymax_v);
	report_svg_axes(f, top, bottom, ymax, "/s", "Answers per second (code 0)");
	uint32_t step = tmax > 20 ? (tmax + 9) / 10 : 1;
	for (uint32_t t = 0; t <= tmax; t += step) {
		double x = SVG_L + (SVG_R - SVG_L) * t / tmax;
		fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%us</text>\n",
			x, bottom + 16, t);
	}
	for (size_t i = 0; i < r->nroles; i++) {
		const struct stats *s = r->roles[i].st;
		if (!s->nseconds)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"",
			report_colors[i % 6]);
		for (uint32_t k = 0; k < s->nseconds; k++) {
			const struct stats_second *sec = &s->seconds[k];
			double from = (double)(sec->t - 1);
			double to = from + (sec->span_ms ? (double)sec->span_ms / 1e3 : 1.0);
			double y = bottom - (bottom - top) * (report_second_rate(sec) / ymax);
			fprintf(f, "%.1f,%.1f %.1f,%.1f ", SVG_L + (SVG_R - SVG_L) * from / tmax, y,
				SVG_L + (SVG_R - SVG_L) * to / tmax, y);
		}
		fputs("\"/>\n", f);
	}
}

int report_write_svg(FILE *f, const struct report *r)
{
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"780\" "
		"viewBox=\"0 0 %d 780\" font-family=\"sans-serif\">\n", SVG_W, SVG_W);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
	fputs("<text x=\"90\" y=\"26\" font-size=\"17\">rmqns-bench ", f);
	report_svg_text(f, r->scenario);
	fputs(" \xE2\x86\x92 ", f);
	report_svg_text(f, r->target);
	fputs("</text>\n", f);
	report_svg_latency(f, r, 70, 380);
	report_svg_throughput(f, r, 450, 730);
	/* legend */
	for (size_t i = 0; i < r->nroles; i++) {
		char p99[24];
		double y = 84 + 18.0 * (double)i;
		fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"4\" fill=\"%s\"/>\n",
			SVG_L + 12, y - 4, report_colors[i % 6]);
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">", SVG_L + 32, y);
		report_svg_text(f, r->roles[i].key);
		fprintf(f, ": %.0f ok/s, p99 %s</text>\n",
			r->roles[i].wall_s > 0 ? (double)r->roles[i].st->ok / r->roles[i].wall_s : 0.0,
			report_fmt_ns(p99, sizeof(p99), hist_percentile(&r->roles[i].st->lat, 99.0)));
	}
	fputs("</svg>\n", f);
	return ferror(f) ? RMQNS_EIO : RMQNS_OK;
}

/* ---- comparison of saved runs ---- */

static void report_fig(struct report_figure *out, size_t cap, size_t *n, const char *a,
		       const char *b, json_t *v, bool higher_better)
{
	if (*n >= cap || !json_is_number(v))
		return;
	snprintf(out[*n].name, sizeof(out[*n].name), "%s.%s", a, b);
	out[*n].value = json_number_value(v);
	out[*n].higher_better = higher_better;
	(*n)++;
}

size_t report_figures(json_t *doc, struct report_figure *out, size_t cap)
{
	size_t n = 0;
	const char *key;
	json_t *role;
	json_object_foreach(json_object_get(doc, "roles"), key, role) {
		json_t *lat = json_object_get(role, "latency_us");
		report_fig(out, cap, &n, key, "throughput_rps", json_object_get(role, "throughput_rps"), true);
		report_fig(out, cap, &n, key, "p50_us", json_object_get(lat, "p50"), false);
		report_fig(out, cap, &n, key, "p90_us", json_object_get(lat, "p90"), false);
		report_fig(out, cap, &n, key, "p99_us", json_object_get(lat, "p99"), false);
		report_fig(out, cap, &n, key, "p99_9_us", json_object_get(lat, "p99_9"), false);
		report_fig(out, cap, &n, key, "errors", json_object_get(role, "errors"), false);
	}
	json_t *m = json_object_get(doc, "mixed");
	report_fig(out, cap, &n, "mixed", "p99_ratio", json_object_get(m, "p99_ratio"), false);
	report_fig(out, cap, &n, "mixed", "throughput_ratio", json_object_get(m, "throughput_ratio"), true);
	json_t *dc = json_object_get(doc, "disconnect");
	report_fig(out, cap, &n, "disconnect", "routes_gone_ms", json_object_get(dc, "routes_gone_ms"), false);
	json_t *fr = json_object_get(dc, "fresh_registration");
	report_fig(out, cap, &n, "disconnect", "fresh_p50_ms", json_object_get(fr, "p50_ms"), false);
	report_fig(out, cap, &n, "disconnect", "fresh_max_ms", json_object_get(fr, "max_ms"), false);
	json_t *cl = json_object_get(doc, "clients");
	report_fig(out, cap, &n, "clients", "rss_bytes_per_connection",
		   json_object_get(cl, "rss_bytes_per_connection"), false);
	json_t *ctl = json_object_get(doc, "controller");
	json_t *stg = json_object_get(ctl, "stages");
	report_fig(out, cap, &n, "controller", "elected_p50_ms",
		   json_object_get(json_object_get(stg, "elected_ms"), "p50"), false);
	report_fig(out, cap, &n, "controller", "notified_p50_ms",
		   json_object_get(json_object_get(stg, "notified_ms"), "p50"), false);
	report_fig(out, cap, &n, "controller", "route_p50_ms",
		   json_object_get(json_object_get(stg, "route_ms"), "p50"), false);
	report_fig(out, cap, &n, "controller", "route_max_ms",
		   json_object_get(json_object_get(stg, "route_ms"), "max"), false);
	report_fig(out, cap, &n, "controller", "heartbeats_per_s",
		   json_object_get(json_object_get(ctl, "heartbeats"), "per_s"), true);
	json_t *s = json_object_get(doc, "server");
	report_fig(out, cap, &n, "server", "cpu_pct", json_object_get(s, "cpu_pct"), false);
	report_fig(out, cap, &n, "server", "rss_kb_after", json_object_get(s, "rss_kb_after"), false);
	json_t *st = json_object_get(json_object_get(doc, "startup"), "first_answer_ms");
	report_fig(out, cap, &n, "startup", "first_answer_ms", json_object_get(st, "median"), false);
	return n;
}

#define REPORT_MAX_FIGS 128

static bool report_lookup(json_t *doc, const char *name, double *v)
{
	struct report_figure figs[REPORT_MAX_FIGS];
	size_t n = report_figures(doc, figs, REPORT_MAX_FIGS);
	for (size_t i = 0; i < n; i++)
		if (strcmp(figs[i].name, name) == 0) {
			*v = figs[i].value;
			return true;
		}
	return false;
}

int report_print_ratio(FILE *f, json_t *const *a, size_t na, json_t *const *b, size_t nb,
		       const char *label_a, const char *label_b)
{
	if (na == 0 || nb == 0)
		return RMQNS_EINVAL;
	struct report_figure figs[REPORT_MAX_FIGS];
	size_t nf = report_figures(a[0], figs, REPORT_MAX_FIGS);
	double *va = malloc(na * sizeof(double)), *vb = malloc(nb * sizeof(double));
	if (!va || !vb) {
		free(va);
		free(vb);
		return RMQNS_ENOMEM;
	}
	fprintf(f, "%-34s %14s %14s %9s\n", "figure (median of runs)", label_a, label_b, "A/B");
	for (size_t i = 0; i < nf; i++) {
		size_t ka = 0, kb = 0;
		for (size_t j = 0; j < na; j++)
			if (report_lookup(a[j], figs[i].name, &va[ka]))
				ka++;
		for (size_t j = 0; j < nb; j++)
			if (report_lookup(b[j], figs[i].name, &vb[kb]))
				kb++;
		if (!ka || !kb)
			continue;
		double ma = report_median(va, ka), mb = report_median(vb, kb);
		if (mb != 0.0)
			fprintf(f, "%-34s %14.2f %14.2f %9.3f%s\n", figs[i].name, ma, mb, ma / mb,
				figs[i].higher_better ? "  (higher is better)" : "");
		else
			fprintf(f, "%-34s %14.2f %14.2f %9s\n", figs[i].name, ma, mb, "-");
	}
	free(va);
	free(vb);
	return RMQNS_OK;
}
