/* The NameServer's HTTP endpoints (http.h): /metrics (Prometheus text),
 * /healthz (the reactors and the registrar are turning), /readyz (healthy,
 * past waitSecondsForService when needWaitForService, and not stopping)
 * and /brokers (the live brokers as JSON). They run on the HTTP thread,
 * registered with RCU, and only read: counters, published route tables,
 * heartbeat stamps. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/app.h"
#include "rmqns/config.h"
#include "rmqns/controller_port.h"
#include "rmqns/err.h"
#include "rmqns/http.h"
#include "rmqns/http_controller.h"
#include "rmqns/http_status.h"
#include "rmqns/http_webcfg.h"
#include "rmqns/json_body.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/processor.h"
#include "rmqns/race.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/route.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define PROMETHEUS_TEXT "text/plain; version=0.0.4; charset=utf-8"

struct http_endpoints {
	struct app *app;
	struct http_server *http;
	uint64_t stall_ms;
	atomic_bool stopping; /* set by main when shutdown begins */
	struct http_webcfg *webcfg; /* NULL = plaintext, no login; the HTTP thread's once started */
	bool probes_open;           /* /healthz and /readyz answer without credentials */
};

static void ep_thread_start(void *arg)
{
	(void)arg;
	rcu_register_thread();
}

static void ep_thread_end(void *arg)
{
	(void)arg;
	rcu_unregister_thread();
}

static void ep_oom(struct http_response *rsp)
{
	rsp->status = 500;
	rsp->content_type = TEXT_PLAIN;
	rsp->body.len = 0;
	if (buf_append_str(&rsp->body, "out of memory\n") < 0)
		rsp->body.len = 0;
}

/* ---- /healthz ---- */

/* Appends one line per thread checked; true when all turned recently. */
static bool ep_health(struct http_endpoints *e, struct buf *out)
{
	uint64_t now = route_now_ms();
	bool ok = true;
	int rc = 0;

	struct server *s = e->app->server;
	unsigned n = s ? server_reactor_count(s) : 0;
	for (unsigned i = 0; i < n && rc >= 0; i++) {
		uint64_t t = server_reactor_turn_ms(s, i);
		uint64_t age = t && now > t ? now - t : 0;
		bool fine = t && age <= e->stall_ms;
		ok = ok && fine;
		rc = buf_printf(out, "reactor %u: %s, last turn %llu ms ago\n", i,
				fine ? "ok" : "STALLED", (unsigned long long)age);
	}
	/* a standalone controller runs no registrar */
	uint64_t t = e->app->registrar ? registrar_turn_ms(e->app->registrar) : 0;
	uint64_t age = t && now > t ? now - t : 0;
	bool fine = t && age <= e->stall_ms;
	ok = ok && (fine || !e->app->registrar);
	if (rc >= 0 && e->app->registrar)
		rc = buf_printf(out, "registrar: %s, last turn %llu ms ago\n", fine ? "ok" : "STALLED",
				(unsigned long long)age);
	struct ctl_node *ctl = ctl_port_node(e->app->controller);
	if (ctl && rc >= 0)
		ok = http_controller_health(ctl, now, e->stall_ms, out) && ok;
	return ok && rc >= 0;
}

static void ep_healthz(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	struct buf detail = BUF_INIT;
	(void)req;

	bool ok = ep_health(e, &detail);
	rsp->status = ok ? 200 : 503;
	if (buf_printf(&rsp->body, "%s\n", ok ? "ok" : "stalled") < 0 ||
	    buf_append(&rsp->body, detail.data, detail.len) < 0)
		ep_oom(rsp);
	buf_free(&detail);
}

/* ---- /readyz ---- */

static void ep_readyz(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	struct buf detail = BUF_INIT;
	int rc;
	(void)req;

	/* a balancer stops sending clients here while the process still runs */
	if (atomic_load(&e->stopping)) {
		rsp->status = 503;
		rc = buf_append_str(&rsp->body, "not ready: stopping\n");
	} else if (!ep_health(e, &detail)) {
		rsp->status = 503;
		rc = buf_append_str(&rsp->body, "not ready: stalled\n");
		if (rc >= 0)
			rc = buf_append(&rsp->body, detail.data, detail.len);
	} else {
		state_read_lock();
		const struct options *o = config_current(e->app->config);
		/* restored from a route snapshot: the routes are known already */
		uint64_t wait_ms = o->needWaitForService && o->waitSecondsForService > 0 &&
					   !route_db_warm(e->app->route)
					   ? (uint64_t)o->waitSecondsForService * 1000u
					   : 0;
		state_read_unlock();
		uint64_t up = route_uptime_ms(e->app->route, route_now_ms());
		if (up < wait_ms) {
			rsp->status = 503;
			rc = buf_printf(&rsp->body,
					"not ready: waiting for brokers to register "
					"(needWaitForService), %llu ms left\n",
					(unsigned long long)(wait_ms - up));
		} else {
			rc = buf_append_str(&rsp->body, "ready\n");
		}
	}
	buf_free(&detail);
	if (rc < 0)
		ep_oom(rsp);
}

/* ---- /metrics ---- */

static int ep_gauge(struct buf *out, const char *name, const char *help, double v)
{
	int rc = metrics_write_family(out, name, "gauge", help);
	return rc < 0 ? rc : metrics_write_value(out, name, NULL, v);
}

/* ---- per-broker gauges: one series per live broker, gone with it ---- */

struct ep_broker_gauge {
	struct buf *out;
	const char *name;
	bool timeout;   /* heartbeatTimeoutMillis rather than the heartbeat's age */
	uint64_t now;
	struct buf lb;  /* the labels, rebuilt per broker */
};

static int ep_broker_gauge_one(void *arg, const struct route_broker_view *b)
{
	struct ep_broker_gauge *g = arg;
	struct buf *lb = &g->lb;
	int rc;

	lb->len = 0;
	rc = buf_append_str(lb, "cluster=\"");
	if (rc >= 0)
		rc = metrics_escape_label(lb, b->cluster);
	if (rc >= 0)
		rc = buf_append_str(lb, "\",broker=\"");
	if (rc >= 0)
		rc = metrics_escape_label(lb, b->name);
	if (rc >= 0)
		rc = buf_printf(lb, "\",id=\"%lld\",address=\"", (long long)b->id);
	if (rc >= 0)
		rc = metrics_escape_label(lb, b->addr);
	if (rc >= 0)
		rc = buf_append(lb, "\"", 2); /* the quote and a NUL */
	if (rc < 0)
		return RMQNS_ENOMEM;
	double v = g->timeout ? (double)b->timeout_ms / 1e3
		   : g->now > b->last_ms ? (double)(g->now - b->last_ms) / 1e3
					 : 0;
	return metrics_write_value(g->out, g->name, (const char *)lb->data, v);
}

/* The address is a label too: during a fail-over two live entries may
 * share cluster, name and id, and a scrape with two equal series is
 * rejected whole. */
static int ep_broker_gauges(struct http_endpoints *e, struct buf *out)
{
	struct ep_broker_gauge g = { .out = out, .lb = BUF_INIT };
	int rc = metrics_write_family(out, "rmqns_broker_heartbeat_age_seconds", "gauge",
				      "Seconds since a live broker's last registration or heartbeat.");
	state_read_lock();
	g.now = route_now_ms();
	g.name = "rmqns_broker_heartbeat_age_seconds";
	if (rc == 0)
		rc = route_brokers(e->app->route, ep_broker_gauge_one, &g);
	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_broker_heartbeat_timeout_seconds", "gauge",
					  "A live broker's heartbeatTimeoutMillis: it expires when its "
					  "heartbeat is older.");
	g.name = "rmqns_broker_heartbeat_timeout_seconds";
	g.timeout = true;
	if (rc == 0)
		rc = route_brokers(e->app->route, ep_broker_gauge_one, &g);
	state_read_unlock();
	buf_free(&g.lb);
	return rc;
}

static int ep_gauges(struct http_endpoints *e, struct buf *out)
{
	struct app *app = e->app;
	struct route_stats st;
	char lb[48];
	uint64_t now = route_now_ms();
	int rc;

	state_read_lock();
	route_stats(app->route, &st);
	state_read_unlock();

	rc = metrics_write_family(out, "rmqns_build_info", "gauge",
				  "Always 1; the version and build type are in its labels.");
	if (rc == 0)
		rc = metrics_write_value(out, "rmqns_build_info",
					 "version=\"" RMQNS_VERSION "\",build=\"" RMQNS_BUILD "\"", 1);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_uptime_seconds", "Seconds since the route tables were created.",
			      (double)route_uptime_ms(app->route, now) / 1e3);
	if (rc == 0 && app->server)
		rc = ep_gauge(out, "rmqns_connections_open", "Accepted protocol connections open now.",
			      server_conn_count(app->server));
	if (rc == 0 && app->server)
		rc = ep_gauge(out, "rmqns_connection_memory_bytes",
			      "Bytes held for connections: partial frames, unsent answers, queued "
			      "requests' frames (against connectionMemoryBudget).",
			      (double)server_held_bytes(app->server));
	if (rc == 0 && app->server)
		rc = ep_gauge(out, "rmqns_connection_memory_budget_bytes",
			      "connectionMemoryBudget: past it the connections holding the most are "
			      "closed (0 = no budget).",
			      (double)server_memory_budget(app->server));
	if (rc == 0 && app->pool) {
		rc = metrics_write_family(out, "rmqns_lane_queue_depth", "gauge",
					  "Requests waiting on a processor lane.");
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_lane_queue_depth", "lane=\"route\"",
						 (double)processor_pool_lane_depth(app->pool, LANE_ROUTE));
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_lane_queue_depth", "lane=\"default\"",
						 (double)processor_pool_lane_depth(app->pool, LANE_DEFAULT));
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_lane_queue_depth", "lane=\"broker\"",
						 (double)processor_pool_lane_depth(app->pool, LANE_BROKER));
		if (rc == 0)
			rc = metrics_write_value(out, "rmqns_lane_queue_depth", "lane=\"liveness\"",
						 (double)processor_pool_lane_depth(app->pool, LANE_LIVENESS));
		if (rc == 0)
			rc = ep_gauge(out, "rmqns_lane_queue_capacity",
				      "Requests a lane holds before SYSTEM_BUSY (processorQueueCapacity).",
				      processor_pool_lane_capacity(app->pool));
	}
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_brokers_live", "Live brokers (brokerLiveTable entries).",
			      st.live);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_broker_groups", "Broker groups (brokerAddrTable entries).",
			      st.groups);
	if (rc == 0)
		rc = ep_broker_gauges(e, out);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_topics", "Topics with a route.", (double)st.topics);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_route_digest",
			      "A 32-bit digest of the topic names and live brokers (cluster, address): "
			      "equal on nodes that hold the same ones.",
			      (double)st.names_digest);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_queue_entries", "QueueData entries over all topics.",
			      (double)st.queue_entries);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_route_cache_bytes", "Bytes of cached route answers.",
			      (double)st.cache_bytes);
	if (rc == 0)
		rc = ep_gauge(out, "rmqns_route_dead_entries",
			      "Queue entries of departed broker groups not yet removed.",
			      (double)st.dead_entries);
	if (rc == 0 && app->server) {
		rc = metrics_write_family(out, "rmqns_reactor_turn_age_seconds", "gauge",
					  "Seconds since a reactor last began a turn.");
		for (unsigned i = 0; rc == 0 && i < server_reactor_count(app->server); i++) {
			uint64_t t = server_reactor_turn_ms(app->server, i);
			snprintf(lb, sizeof lb, "reactor=\"%u\"", i);
			rc = metrics_write_value(out, "rmqns_reactor_turn_age_seconds", lb,
						 t && now > t ? (double)(now - t) / 1e3 : 0);
		}
		if (rc == 0)
			rc = metrics_write_family(out, "rmqns_reactor_connections", "gauge",
						  "Connections each reactor owns.");
		for (unsigned i = 0; rc == 0 && i < server_reactor_count(app->server); i++) {
			snprintf(lb, sizeof lb, "reactor=\"%u\"", i);
			rc = metrics_write_value(out, "rmqns_reactor_connections", lb,
						 (double)server_reactor_conn_count(app->server, i));
		}
	}
	if (rc == 0 && app->registrar) {
		uint64_t t = registrar_turn_ms(app->registrar);
		rc = ep_gauge(out, "rmqns_registrar_turn_age_seconds",
			      "Seconds since the registrar last began a turn or a mutation.",
			      t && now > t ? (double)(now - t) / 1e3 : 0);
	}
	struct ctl_node *ctl = ctl_port_node(app->controller);
	if (rc == 0 && ctl)
		rc = http_controller_metrics(ctl, now, out);
	return rc;
}

static void ep_metrics(void *arg, const struct http_request *req, struct http_response *rsp)
{
	(void)req;
	rsp->content_type = PROMETHEUS_TEXT;
	if (ep_gauges(arg, &rsp->body) < 0 || metrics_write_process(&rsp->body) < 0 ||
	    metrics_write(&rsp->body, remoting_request_name) < 0)
		ep_oom(rsp);
}

/* ---- /brokers ---- */

struct ep_brokers {
	struct jw w;
	uint64_t now;
};

static int ep_broker_one(void *arg, const struct route_broker_view *b)
{
	struct ep_brokers *eb = arg;
	uint64_t age = eb->now > b->last_ms ? eb->now - b->last_ms : 0;
	struct jw *w = &eb->w;

	/* the words rmqns-admin prints */
	http_status_broker_begin(w, b, b->id == 0 ? "master" : b->id > 0 ? "slave" : "unknown");
	jw_member_int(w, "lastHeartbeatAgeMillis", (int64_t)age);
	jw_member_int(w, "heartbeatTimeoutMillis", b->timeout_ms);
	jw_member_int(w, "topicCount", (int64_t)b->topics);
	jw_obj_end(w);
	return jw_error(w);
}

static void ep_brokers(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	struct ep_brokers eb;
	(void)req;

	/* {"brokers":[{...},...]}, in the standard JSON form */
	jw_init(&eb.w, &rsp->body, JW_STANDARD);
	jw_obj_begin(&eb.w);
	jw_key(&eb.w, "brokers");
	jw_arr_begin(&eb.w);
	state_read_lock();
	eb.now = route_now_ms();
	int rc = route_brokers(e->app->route, ep_broker_one, &eb);
	state_read_unlock();
	jw_arr_end(&eb.w);
	jw_obj_end(&eb.w);
	rsp->content_type = "application/json";
	if (rc < 0 || jw_error(&eb.w) < 0 || buf_putc(&rsp->body, '\n') < 0)
		ep_oom(rsp);
}

/* ---- /controller: the embedded controller's state, as this node has it ---- */

static void ep_controller(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	struct ctl_node *ctl = ctl_port_node(e->app->controller);
	(void)req;

	rsp->content_type = TEXT_PLAIN;
	if (!ctl) {
		rsp->status = 404;
		if (buf_append_str(&rsp->body, "no embedded controller: enableControllerInNamesrv=false\n") < 0)
			ep_oom(rsp);
		return;
	}
	int rc = http_controller_json(ctl, &rsp->body);
	if (rc == RMQNS_EAGAIN) {
		rsp->status = 503;
		rc = buf_append_str(&rsp->body, "the controller has not published its state yet\n");
	} else if (rc == 0) {
		rsp->content_type = "application/json";
	}
	if (rc < 0)
		ep_oom(rsp);
}

/* ---- the web configuration (httpWebConfigFile) ---- */

static struct ssl_ctx_st *ep_tls_context(void *arg)
{
	return http_webcfg_tls(((struct http_endpoints *)arg)->webcfg);
}

static void ep_tick(void *arg)
{
	(void)http_webcfg_poll(((struct http_endpoints *)arg)->webcfg);
}

static bool ep_is_probe(const char *path)
{
	return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0;
}

static bool ep_admit(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	if (e->probes_open && ep_is_probe(req->path))
		return true;
	if (http_webcfg_admit(e->webcfg, req->authorization))
		return true;
	rsp->status = 401;
	rsp->content_type = TEXT_PLAIN;
	rsp->headers = "WWW-Authenticate: Basic realm=\"rmqns\", charset=\"UTF-8\"\r\n";
	if (buf_append_str(&rsp->body, "Unauthorized\n") < 0)
		rsp->body.len = 0;
	return false;
}

/* every other path: the status page and its JSON (http_status.c) */
static void ep_status(void *arg, const struct http_request *req, struct http_response *rsp)
{
	struct http_endpoints *e = arg;
	http_status_serve(e->app, req, rsp, http_webcfg_auth_on(e->webcfg));
}

static const struct http_route ep_routes[] = {
	{ "/metrics", ep_metrics },
	{ "/healthz", ep_healthz },
	{ "/readyz", ep_readyz },
	{ "/brokers", ep_brokers },
	{ "/controller", ep_controller },
};

struct http_endpoints *http_endpoints_start(struct app *app, const struct options *o, int *err)
{
	*err = RMQNS_OK;
	if (o->httpPort <= 0)
		return NULL;
	struct http_endpoints *e = calloc(1, sizeof *e);
	if (!e) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	e->app = app;
	atomic_init(&e->stopping, false);
	e->stall_ms = o->healthStallMillis > 0 ? (uint64_t)o->healthStallMillis : 5000;
	e->probes_open = o->httpProbesOpen;
	if (o->httpWebConfigFile && *o->httpWebConfigFile) {
		char why[768];
		e->webcfg = http_webcfg_open(o->httpWebConfigFile, why, sizeof why);
		if (!e->webcfg) {
			log_error("httpWebConfigFile: %s", why);
			fprintf(stderr, "rmqns: httpWebConfigFile: %s\n", why);
			free(e);
			*err = RMQNS_EINVAL;
			return NULL;
		}
	}
	struct http_params p = {
		.bind_address = o->httpBindAddress && *o->httpBindAddress ? o->httpBindAddress
									  : o->bindAddress,
		.port = o->httpPort,
		.routes = ep_routes,
		.nroutes = sizeof ep_routes / sizeof ep_routes[0],
		.fallback = ep_status,
		.arg = e,
		.on_thread_start = ep_thread_start,
		.on_thread_end = ep_thread_end,
		.tls_context = e->webcfg ? ep_tls_context : NULL,
		.admit = e->webcfg ? ep_admit : NULL,
		.on_tick = e->webcfg ? ep_tick : NULL,
		.tick_ms = HTTP_WEBCFG_WATCH_MS,
	};
	if (!p.bind_address || !*p.bind_address)
		p.bind_address = "0.0.0.0";
	/* asked before the HTTP thread starts: from then on a reload there
	 * may free the state these read */
	bool tls = http_webcfg_tls(e->webcfg) != NULL, login = http_webcfg_auth_on(e->webcfg);
	e->http = http_create(&p, err);
	if (!e->http || (*err = http_start(e->http)) < 0) {
		http_destroy(e->http);
		http_webcfg_close(e->webcfg);
		free(e);
		return NULL;
	}
	log_info("HTTP endpoint listening %s:%d%s (/metrics /healthz /readyz /brokers /controller, status "
		 "page /)%s",
		 p.bind_address, http_port(e->http), tls ? " over TLS" : "",
		 !login ? ""
		 : e->probes_open ? "; basic authentication except /healthz and /readyz"
				  : "; basic authentication on every path");
	return e;
}

int http_endpoints_port(const struct http_endpoints *e)
{
	return e ? http_port(e->http) : 0;
}

void http_endpoints_set_stopping(struct http_endpoints *e, bool stopping)
{
	if (e)
		atomic_store(&e->stopping, stopping);
}

void http_endpoints_stop(struct http_endpoints *e)
{
	if (!e)
		return;
	http_destroy(e->http);
	http_webcfg_close(e->webcfg);
	free(e);
}
