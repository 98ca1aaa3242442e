/* The NameServers an rmqns-admin run talks to ("host:port;host:port", as
 * RocketMQ writes NameServer lists) and one request to one of them, with
 * every way it can fail told apart: refused, timed out, closed, a bad
 * frame, or an answer with an error code. Each call opens its own
 * connection; nothing is shared with any server's state. */
#ifndef ADMIN_TARGET_H
#define ADMIN_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define TARGET_MAX 64

struct target {
	char host[256];
	int port;
	char name[300]; /* "host:port" as the operator wrote it */
};

struct target_list {
	struct target v[TARGET_MAX];
	size_t n;
};

/* Parses "a:1;b:2" (blanks around entries ignored, "[::1]:9876" for IPv6).
 * 0, or -1 with a reason in err. */
int target_list_parse(const char *spec, struct target_list *out, char *err, size_t err_len);

enum call_status {
	CALL_ANSWERED = 0,  /* reply set; its code may still be an error */
	CALL_CONN_REFUSED,  /* nobody listens there */
	CALL_CONN_TIMEOUT,  /* connect did not complete in time */
	CALL_CONN_FAILED,   /* another connect error, or the name does not resolve */
	CALL_TLS_FAILED,    /* connected, but the TLS handshake failed (reason in tls_why) */
	CALL_TIMEOUT,       /* connected and sent, but no answer in time */
	CALL_CLOSED,        /* the server closed the connection */
	CALL_BAD_FRAME,     /* the answer was not a remoting frame */
	CALL_NOMEM,
};

struct call_result {
	enum call_status status;
	struct client_reply *reply; /* CALL_ANSWERED only; owned here */
	int timeout_ms;             /* for the message */
	char tls_why[256];          /* CALL_TLS_FAILED: OpenSSL's reason */
};

/* A request as rmqns-admin sends it: JSON header, this project's version. */
void target_request_init(struct remoting_cmd *req, int32_t code);

/* Connects to t; NULL with r->status set on failure. */
struct client *target_connect(const struct target *t, int timeout_ms, struct call_result *r);

/* Every connection from now on speaks TLS with ctx (NULL: plaintext, the
 * default); the context must outlive the calls. */
struct ssl_ctx_st;
void target_set_tls(struct ssl_ctx_st *ctx);

/* Every request from now on is signed as an ACL 1.0 client signs it
 * (AccessKey and Signature ext fields); the strings must outlive the
 * calls. NULL access_key: unsigned (the default). */
void target_set_credentials(const char *access_key, const char *secret_key);

/* Sends req on c and waits for its answer (client_call). */
void target_call_on(struct client *c, struct remoting_cmd *req, int timeout_ms,
		    struct call_result *r);

/* Connect, call, close. */
void target_call(const struct target *t, struct remoting_cmd *req, int timeout_ms,
		 struct call_result *r);

/* Whether the server answered with code 0. */
static inline bool call_ok(const struct call_result *r)
{
	return r->status == CALL_ANSWERED && r->reply->cmd.code == 0;
}

/* What went wrong, for a person: "connection refused", "timed out after
 * 3000 ms waiting for the answer", "code 16 (NO_PERMISSION): <remark>". */
void call_describe(const struct call_result *r, char *out, size_t n);

/* A response code's name ("NO_PERMISSION"), or "?" for one we do not know. */
const char *call_code_name(int32_t code);

void call_result_clear(struct call_result *r);

#endif
