/* The HTTP endpoint (httpPort): one small thread with its own epoll,
 * apart from the reactors, so nothing on this port can slow the protocol
 * port. It speaks just enough HTTP/1.1 for probes and scrapers: GET and
 * HEAD, one request per connection (answered with Connection: close), a
 * bounded request head, a deadline for the whole request and a cap on
 * connections (at the cap a new one replaces the oldest still reading). Two halves: the server (http_server.c) knows sockets and
 * paths only; the endpoints (http_endpoints.c) give /metrics, /healthz,
 * /readyz and /brokers from the running NameServer, and the status page
 * (http_status.c) / and /api/. */
#ifndef RMQNS_HTTP_H
#define RMQNS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"

struct app;
struct options;

/* ---- the server ---- */

/* A slot is a small struct; its request buffer exists only while a head
 * is arriving, sized to it. */
#define HTTP_MAX_CONNS_DEFAULT 256
#define HTTP_MAX_REQUEST_DEFAULT 8192u /* request line and headers, bytes */
#define HTTP_DEADLINE_MS_DEFAULT 5000u /* to send the request and read the answer */

struct http_request {
	const char *method; /* "GET" or "HEAD" */
	const char *path;   /* the target up to '?' */
	const char *query;  /* after '?', or "" */
	const char *authorization; /* the Authorization header's value, or NULL */
	const char *origin;        /* the Origin header's value, or NULL */
};

struct http_response {
	int status;               /* 200 unless the handler says otherwise */
	const char *content_type; /* a static string; default text/plain */
	const char *headers;      /* static extra header lines, each ending "\r\n"; NULL = none */
	struct buf body;
};

/* Runs on the HTTP thread; fills rsp (body starts empty). */
typedef void (*http_handler_fn)(void *arg, const struct http_request *req,
				struct http_response *rsp);

struct ssl_ctx_st;

struct http_route {
	const char *path; /* exact match */
	http_handler_fn fn;
};

struct http_params {
	const char *bind_address; /* numeric IPv4 or IPv6; NULL or "" = 127.0.0.1 */
	int port;                 /* 0 = an ephemeral port (see http_port) */
	unsigned max_conns;       /* 0 = HTTP_MAX_CONNS_DEFAULT */
	uint32_t max_request;     /* 0 = HTTP_MAX_REQUEST_DEFAULT */
	uint32_t deadline_ms;     /* 0 = HTTP_DEADLINE_MS_DEFAULT */
	const struct http_route *routes; /* kept by pointer: static tables */
	size_t nroutes;
	/* Asked for a path no route matches (NULL = 404): it answers, or sets
	 * status 404 itself. */
	http_handler_fn fallback;
	void *arg;                /* for the handlers and the thread hooks */
	void (*on_thread_start)(void *arg); /* NULL = none */
	void (*on_thread_end)(void *arg);
	/* The TLS context for a new connection (NULL = plaintext), asked at
	 * every accept; NULL hook = plaintext always. A plaintext request on a
	 * TLS connection is answered 400 and closed. */
	struct ssl_ctx_st *(*tls_context)(void *arg);
	/* Asked before the route's handler (NULL = every request admitted):
	 * false when it filled rsp with the refusal. */
	bool (*admit)(void *arg, const struct http_request *req, struct http_response *rsp);
	/* Called on the HTTP thread about every tick_ms (NULL = none). */
	void (*on_tick)(void *arg);
	uint32_t tick_ms;
};

struct http_server;

struct http_server *http_create(const struct http_params *p, int *err);
/* Binds and listens (errors logged), then starts the thread. */
int http_start(struct http_server *h);
/* The port actually bound. */
int http_port(const struct http_server *h);
/* Stops the thread and closes every connection. */
void http_stop(struct http_server *h);
void http_destroy(struct http_server *h);

/* ---- the endpoints ---- */

struct http_endpoints;

/* Starts the endpoint server described by the options (httpPort,
 * httpBindAddress, healthStallMillis) over app, which must outlive it.
 * NULL with *err = RMQNS_OK when httpPort is 0 (off). */
struct http_endpoints *http_endpoints_start(struct app *app, const struct options *o, int *err);
int http_endpoints_port(const struct http_endpoints *e);
/* Shutdown has begun (true): /readyz answers 503 "not ready: stopping"
 * while /healthz goes on answering as before. Safe from any thread; e may
 * be NULL (the endpoint is off). */
void http_endpoints_set_stopping(struct http_endpoints *e, bool stopping);
void http_endpoints_stop(struct http_endpoints *e);

#endif
