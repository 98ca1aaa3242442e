/* rmqns entry point: command line, configuration, start-up in dependency
 * order (route tables, KV store, ACL, KV writer, registrar, pool, server,
 * HTTP endpoint), signals read from a signalfd on the main thread, and the
 * orderly stop within shutdownTimeoutMillis. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/acl.h"
#include "rmqns/app.h"
#include "rmqns/config.h"
#include "rmqns/controller.h"
#include "rmqns/controller_params.h"
#include "rmqns/controller_port.h"
#include "rmqns/cpus.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/http.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/net_params.h"
#include "rmqns/notify.h"
#include "rmqns/processor.h"
#include "rmqns/properties.h"
#include "rmqns/registrar.h"
#include "rmqns/route.h"
#include "rmqns/route_snapshot.h"
#include "rmqns/tls.h"
#include "rmqns/version.h"

/* Longest time answers already produced may take to drain at shutdown,
 * and the least they get once shutdownTimeoutMillis has run out. */
#define MAIN_FLUSH_MS 2000
#define MAIN_FLUSH_MIN_MS 100

/* Nice value of the general workers (they parse registrations): when the
 * CPUs are short, the reactors answering route queries go first. A nice
 * thread still gets its weighted share (about a tenth against a busy
 * reactor at 10), so registrations slow down, never stop. The registrar
 * keeps the normal priority: a request answered after a one-way
 * registration expects to see it applied, and its apply is short. */
#define MAIN_WORKER_NICE 10

/* Dedicated route-lane workers, on top of serverWorkerThreads general ones. */
#define MAIN_ROUTE_WORKERS 1

static uint64_t main_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Default-lane requests (registrations above all: megabytes of JSON
 * each) run on at most half the CPUs, so a registration storm leaves the
 * other half to the reactors answering route queries. */
static unsigned main_default_max(unsigned cpus)
{
	return cpus >= 4 ? cpus / 2 : 1u;
}

static unsigned main_threads(int32_t configured, unsigned cpus)
{
	return configured > 0 ? (unsigned)configured : cpus;
}

/* SIGTERM/SIGINT/SIGHUP are blocked in every thread (the threads inherit
 * the mask) and read from a signalfd here: no code runs in a handler. */
static int main_signalfd(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN); /* a peer gone mid-write is an EPIPE, not a death */
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* The route registry's request to drop an expired broker's connection. */
static void main_close_conn(void *server, uint64_t conn_id)
{
	(void)server_close_conn(server, conn_id);
}

/* ---- the network's callbacks: frames to the pool, closes to the registrar ---- */

static int main_on_frame(void *app, const struct net_frame *f)
{
	return processor_pool_take_frame(((struct app *)app)->pool, f);
}

static void main_on_turn_end(void *app)
{
	processor_pool_turn_end(((struct app *)app)->pool);
}

static void main_on_closed(void *app, uint64_t conn_id)
{
	(void)registrar_notify_conn_closed(((struct app *)app)->registrar, conn_id);
}

/* ---- the route hooks, counted for /metrics ---- */

/* Runs a route hook and counts the live brokers it removed; on the
 * registrar thread, the only writer, the count is exact. */
static void main_count_removed(void *db, void (*hook)(void *, uint64_t), uint64_t arg,
			       enum metrics_counter counter)
{
	struct route_stats st;
	route_stats(db, &st);
	uint32_t before = st.live;
	hook(db, arg);
	route_stats(db, &st);
	if (st.live < before)
		metrics_add(counter, before - st.live);
}

static void main_on_tick(void *db, uint64_t now_ms)
{
	main_count_removed(db, route_hook_tick, now_ms, MC_BROKER_EXPIRED);
}

static void main_on_conn_closed(void *db, uint64_t conn_id)
{
	main_count_removed(db, route_hook_conn_closed, conn_id, MC_BROKER_CONN_CLOSED);
}

/* Stops whatever has started, in data-flow order, then frees each part
 * only once nothing can call into it any more. The reactors feed the pool
 * and the registrar (and run the pool's thread hooks); the pool feeds the
 * registrar; both answer (and the route hooks close and notify) through
 * the server. So the registrar goes before the server and the pool after
 * it. The embedded controller's node takes frames and closes from the
 * reactors and answers through the server: it stops once the server has,
 * before the server is freed. The HTTP endpoint reads every part: it answers (/readyz failing)
 * until all have stopped and goes before any is freed. With a deadline
 * (CLOCK_MONOTONIC ns, 0 = none) queued work still waiting at it is
 * dropped, and the answers get what time is left to drain.
 * Safe after a partial start-up; a second call does nothing. */
static void main_teardown(struct app *app, struct http_endpoints **http, uint64_t deadline_ns)
{
	if (app->server)
		server_quiesce(app->server); /* no more frames reach the pool */
	if (app->pool) {
		processor_pool_set_deadline(app->pool, deadline_ns);
		processor_pool_stop(app->pool); /* runs what is queued, until the deadline */
	}
	if (app->registrar) {
		registrar_set_deadline(app->registrar, deadline_ns);
		registrar_stop(app->registrar); /* applies the mutations they made */
	}
	/* queued KV changes are written and answered before the answers drain:
	 * every acknowledged write is on disk, deadline or not */
	kv_writer_destroy(app->kv_writer);
	app->kv_writer = NULL;
	if (app->server) {
		int flush_ms = MAIN_FLUSH_MS;
		if (deadline_ns) {
			uint64_t now = metrics_now_ns();
			uint64_t left_ms = deadline_ns > now ? (deadline_ns - now) / 1000000u : 0;
			flush_ms = left_ms < MAIN_FLUSH_MIN_MS ? MAIN_FLUSH_MIN_MS
				   : left_ms > MAIN_FLUSH_MS  ? MAIN_FLUSH_MS
							      : (int)left_ms;
		}
		server_stop(app->server, flush_ms); /* drains the answers, closes the rest */
	}
	http_endpoints_stop(*http);
	*http = NULL;
	/* nothing reaches it any more (frames, closes, the HTTP side); before
	 * the server it sends through is freed */
	ctl_port_stop(app->controller);
	app->controller = NULL;
	registrar_destroy(app->registrar);
	app->registrar = NULL;
	server_destroy(app->server);
	app->server = NULL;
	processor_pool_destroy(app->pool);
	app->pool = NULL;
}

/* Returns the signal that asks to stop. */
static int main_wait_for_stop(int sfd, struct config *cfg, struct registrar *reg)
{
	for (;;) {
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof si);
		if (n != (ssize_t)sizeof si) {
			if (n < 0 && errno == EINTR)
				continue;
			log_error("signalfd read: %s", n < 0 ? strerror(errno) : "short read");
			return SIGTERM;
		}
		if (si.ssi_signo == SIGHUP) {
			/* logrotate renamed the file: new lines go to a new one */
			if (log_reopen() < 0)
				log_error("SIGHUP: cannot reopen the log file; still writing the old one");
			log_info("SIGHUP: reloading the configuration file");
			config_request_reload(cfg, reg);
			continue;
		}
		return (int)si.ssi_signo;
	}
}

/* Registration bodies are megabytes, read on a reactor and freed on a
 * worker. glibc raises its mmap threshold to the size of the first big
 * block freed, after which every later body comes from (and fragments) a
 * per-thread arena that never shrinks back. A fixed threshold keeps such
 * blocks in their own mappings, handed back to the kernel on free. */
#define MAIN_MMAP_THRESHOLD (256 * 1024)

/* SIGHUP re-reads the accounts file too, on the ACL's own thread. */
static void main_reload_acl(void *acl)
{
	acl_request_reload(acl);
}

/* A code the NameServer port answers: the controller's port hints at it. */
static bool main_is_namesrv_code(int32_t code)
{
	return handler_lookup(code) != NULL;
}

/* The address (cluster, broker_name) registered as brokerId 0 with this
 * NameServer: the master an adopted set's brokers serve with. Runs on the
 * controller's thread, rarely (once an adoption election). */
struct serving_master_find {
	const char *cluster, *name;
	char *out;
	size_t outlen;
	bool found;
};

static int serving_master_one(void *arg, const struct route_broker_view *b)
{
	struct serving_master_find *f = arg;

	if (b->id != 0 || strcmp(b->name, f->name) != 0 || strcmp(b->cluster, f->cluster) != 0)
		return 0;
	snprintf(f->out, f->outlen, "%s", b->addr);
	f->found = true;
	return 1;
}

static int main_serving_master(void *arg, const char *cluster, const char *broker_name, char *out,
			       size_t outlen)
{
	struct app *app = arg;
	struct serving_master_find f = { cluster, broker_name, out, outlen, false };

	rcu_register_thread();
	rcu_read_lock();
	int rc = route_brokers(app->route, serving_master_one, &f);
	rcu_read_unlock();
	rcu_unregister_thread();
	return rc >= 0 && f.found ? 0 : RMQNS_ENOTFOUND;
}

/* The controller: its node running and its port added to the server,
 * which has not started yet. */
static int main_start_controller(struct app *app, const struct config *cfg, const struct options *o)
{
	struct ctl_node_config ncfg;
	struct properties shown = PROPERTIES_INIT;
	char err[512] = "", store[4096];
	const char *home = getenv("HOME");

	snprintf(store, sizeof store, "%s" CONTROLLER_CONFIG_FILE, home && *home ? home : "");
	int rc = controller_params_from_options(&ncfg, &shown, cfg, o, store, err, sizeof err);

	ncfg.namesrv_code = main_is_namesrv_code;
	ncfg.serving_master = main_serving_master;
	ncfg.serving_master_arg = app;
	if (rc == 0) {
		app->controller = ctl_port_start(app->server, app->acl, &ncfg, o->bindAddress, err,
						 sizeof err);
		rc = app->controller ? 0 : RMQNS_EIO;
	}
	const char *port = properties_get(&shown, "listenPort");
	app->controller_port = rc == 0 && port ? atoi(port) : 0;
	properties_free(&shown); /* the node keeps a copy */
	if (rc < 0)
		fprintf(stderr, "rmqns: cannot start the controller: %s\n", err);
	return rc;
}

/* Which of the three set-ups runs, said once at start. */
static void main_log_mode(const struct options *o)
{
	const char *type = o->controllerType ? o->controllerType : "DLedger";

	if (o->controllerOnly)
		log_info("mode: standalone controller (controllerOnly=true, controllerType=%s): no "
			 "NameServer port, no route tables", type);
	else if (o->enableControllerInNamesrv)
		log_info("mode: NameServer with an embedded controller (controllerType=%s)", type);
	else
		log_info("mode: NameServer");
}

/* What only a NameServer runs: the KV writer, the registrar and the
 * processor pool. */
static int main_start_nameserver(struct app *app, const struct registrar_hooks *hooks,
				 const struct processor_params *pp)
{
	int rc = 0;

	app->kv_writer = kv_writer_create(app->kv);
	if (!app->kv_writer || kv_writer_start(app->kv_writer) < 0) {
		fprintf(stderr, "rmqns: cannot start the KV writer\n");
		return -1;
	}
	app->registrar = registrar_create(hooks);
	if (!app->registrar || registrar_start(app->registrar) < 0) {
		fprintf(stderr, "rmqns: cannot start the registrar\n");
		return -1;
	}
	app->pool = processor_pool_create(app, pp, &rc);
	if (!app->pool || processor_pool_start(app->pool) < 0) {
		fprintf(stderr, "rmqns: cannot start the processor pool: %s\n", rmqns_strerror(rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* said once the log has its first line (a sanitizer's allocator refuses it) */
	bool mmap_threshold_refused = mallopt(M_MMAP_THRESHOLD, MAIN_MMAP_THRESHOLD) != 1;
	struct config *cfg = NULL;
	enum config_action action;
	char err[512] = "";

	log_set_thread_name("main"); /* before the options are read: they may warn */

	int rc = config_from_args(argc, argv, &cfg, &action, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "rmqns: %s\n", err[0] ? err : rmqns_strerror(rc));
		return 1;
	}
	if (action == CONFIG_ACTION_VERSION) {
		version_print(stdout, "rmqns");
		return 0;
	}
	if (action == CONFIG_ACTION_HELP) {
		config_print_usage(stdout);
		config_destroy(cfg);
		return 0;
	}
	if (action == CONFIG_ACTION_PRINT) {
		config_print_options(cfg, stdout);
		config_destroy(cfg);
		return 0;
	}

	const struct options *o = config_startup(cfg);
	if (mmap_threshold_refused)
		log_warn("mallopt(M_MMAP_THRESHOLD) refused; memory may fragment");
	int sfd = main_signalfd();
	if (sfd < 0) {
		fprintf(stderr, "rmqns: cannot set up signal handling: %s\n", strerror(errno));
		config_destroy(cfg);
		return 1;
	}

	main_log_mode(o);
	/* a standalone controller: the route tables stay empty (the HTTP
	 * endpoint reads them) and nothing that fills them starts */
	const bool standalone = o->controllerOnly;
	struct app app = { .config = cfg };
	struct registrar_hooks hooks = { 0 };
	hooks.tick_ms = o->scanNotActiveBrokerInterval > 0 ? (uint32_t)o->scanNotActiveBrokerInterval
							    : 5000;
	/* the registrar drives the route tables: expiry scans, closed
	 * connections' brokers, background removal between mutations */
	app.route = route_db_create(0);
	if (!app.route) {
		fprintf(stderr, "rmqns: cannot create the route tables\n");
		close(sfd);
		config_destroy(cfg);
		return 1;
	}
	/* Route snapshot: the last run's tables, before anything can answer. */
	if (!standalone && route_snapshot_restore(&app.route, o->routeSnapshotPath) < 0) {
		fprintf(stderr, "rmqns: cannot create the route tables\n");
		close(sfd);
		config_destroy(cfg);
		return 1;
	}
	hooks.on_tick = main_on_tick;
	hooks.on_conn_closed = main_on_conn_closed;
	hooks.on_idle = route_hook_idle;
	hooks.arg = app.route;
	/* loaded before anything can answer a request */
	app.kv = standalone ? NULL : kv_open(o->kvConfigPath, o->kvConfigIgnoreCorrupt, err, sizeof err);
	if (!app.kv && !standalone) {
		fprintf(stderr, "rmqns: %s\n", err);
		route_db_destroy(app.route);
		close(sfd);
		config_destroy(cfg);
		return 1;
	}

	/* ACL: the accounts must load before anything can answer a request. */
	const struct acl_params ap = {
		.enable = o->aclEnable,
		.read_requests = o->aclReadRequests,
		.broker_requests = o->aclBrokerRequests,
		.file = o->aclFile,
	};
	app.acl = acl_create(&ap, err, sizeof err);
	if (!app.acl) {
		fprintf(stderr, "rmqns: %s\n", err);
		kv_close(app.kv);
		route_db_destroy(app.route);
		close(sfd);
		config_destroy(cfg);
		return 1;
	}
	config_set_reload_hook(main_reload_acl, app.acl);

	/* read once: the affinity mask and the cgroup files */
	unsigned cpus = cpus_usable();
	struct server_params sp;
	server_params_from_options(&sp, o, cpus);
	struct processor_params pp = {
		.workers = main_threads(o->serverWorkerThreads, cpus),
		.route_workers = MAIN_ROUTE_WORKERS,
		.lane_capacity = o->processorQueueCapacity > 0 ? (uint32_t)o->processorQueueCapacity
							      : 10000,
		.default_max = main_default_max(cpus),
		.default_nice = MAIN_WORKER_NICE,
		.run_inline = o->routeQueryInline,
	};
	sp.no_own_port = standalone;
	const struct net_callbacks cb = {
		.on_frame = main_on_frame,
		.on_turn_end = standalone ? NULL : main_on_turn_end,
		.on_closed = main_on_closed,
		.arg = &app,
	};

	int exit_code = 1;
	struct http_endpoints *http = NULL;
	struct route_snapshot_writer *snapshot = NULL; /* route snapshot */
	/* The KV store's writer: KV changes fsync there, never on the registrar. */
	if (!standalone && main_start_nameserver(&app, &hooks, &pp) < 0)
		goto out;
	struct tls_settings tls;
	char tls_err[600];
	rc = tls_settings_load(&tls, o, tls_err, sizeof tls_err);
	if (rc < 0) {
		log_error("TLS: %s", tls_err);
	} else {
		sp.tls = &tls;
		app.server = server_create(&sp, &cb, &rc);
		tls_settings_free(&tls); /* the server keeps a copy */
	}
	if (app.server && (o->enableControllerInNamesrv || standalone) &&
	    main_start_controller(&app, cfg, o) < 0)
		goto out;
	if (!app.server || (rc = server_start(app.server)) < 0) {
		fprintf(stderr, "rmqns: cannot start the server on %s:%d: %s\n",
			sp.bind_address && *sp.bind_address ? sp.bind_address : "0.0.0.0", sp.port,
			rmqns_strerror(rc));
		goto out;
	}
	if (app.controller) /* for its hint at NameServer codes sent to it */
		ctl_node_set_namesrv_port(ctl_port_node(app.controller), server_port(app.server));
	/* Connection ids exist only from here on, so expiry cannot ask
	 * before; the registrar stops before the server does (main_teardown),
	 * so neither hook outlives the server. */
	route_db_set_close_hook(app.route, main_close_conn, app.server);
	/* NOTIFY_MIN_BROKER_ID_CHANGE (905): the route module computes
	 * targets only while a hook is installed, hence read at start. */
	if (o->notifyMinBrokerIdChanged && !standalone) {
		route_db_set_notify_hook(app.route, notify_min_id_change, app.server);
		log_info("notifyMinBrokerIdChanged: brokers of acting-master groups are told when "
			 "their group's minimum broker id changes (code 905)");
	}

	/* Route snapshot: written from here on, by a thread of its own. */
	if (!standalone)
		snapshot = route_snapshot_writer_start(app.route, o->routeSnapshotPath,
						       (uint32_t)o->routeSnapshotIntervalSeconds * 1000u);

	/* Last: its endpoints read every part started above. */
	http = http_endpoints_start(&app, o, &rc);
	if (!http && rc < 0) {
		fprintf(stderr, "rmqns: cannot start the HTTP endpoint on port %d: %s\n", o->httpPort,
			rmqns_strerror(rc));
		goto out;
	}

	if (!standalone)
		log_info("threads: %u reactors, %u processor workers (at most %u on the default lane) "
			 "+ %u route workers, lane capacity %u, route queries answered %s; %u CPUs usable",
			 sp.reactors, pp.workers, pp.default_max, pp.route_workers, pp.lane_capacity,
			 pp.run_inline ? "inline by reactors" : "by the pool", cpus);
	const char *bind = o->bindAddress && *o->bindAddress ? o->bindAddress : "0.0.0.0";
	/* Java's boot line, on stdout only: scripts wait for it there, and a
	 * copy in the log showed it twice wherever the two streams meet. A
	 * standalone controller gives its controller port. */
	printf("The %s boot success. serializeType=JSON, address %s:%d\n",
	       standalone ? "ControllerManager" : "Name Server", bind, server_port(app.server));
	fflush(stdout);

	int sig = main_wait_for_stop(sfd, cfg, app.registrar);
	http_endpoints_set_stopping(http, true); /* /readyz: 503 from now on */
	uint64_t t0 = main_now_ms();
	log_info("%s received", strsignal(sig));
	log_info("shutdown hook was invoked, 1 times.");
	/* No new requests, run the queued ones until the deadline, apply the
	 * mutations they made, then drain the answers. */
	uint64_t deadline_ns = metrics_now_ns() + (uint64_t)o->shutdownTimeoutMillis * 1000000u;
	main_teardown(&app, &http, deadline_ns);
	/* Route snapshot: the last one, if it fits before the deadline. */
	route_snapshot_writer_stop(snapshot, deadline_ns);
	snapshot = NULL;
	log_info("shutdown hook done, consuming time total(ms): %llu",
		 (unsigned long long)(main_now_ms() - t0));
	exit_code = 0;
out:
	main_teardown(&app, &http, 0); /* after a failed start-up */
	route_snapshot_writer_stop(snapshot, 0); /* route snapshot: none more */
	kv_close(app.kv); /* after its writer */
	route_db_destroy(app.route); /* after the registrar */
	config_set_reload_hook(NULL, NULL);
	acl_destroy(app.acl); /* after every reader (reactors, workers) */
	close(sfd);
	config_destroy(cfg);
	return exit_code;
}
