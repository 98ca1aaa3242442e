/* Addressing and single requests for rmqns-admin (target.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "target.h"

static int target_parse_one(const char *s, size_t len, struct target *t)
{
	const char *colon;
	size_t hlen;

	if (len == 0 || len >= sizeof t->name)
		return -1;
	memcpy(t->name, s, len);
	t->name[len] = '\0';
	if (t->name[0] == '[') {
		char *close = strchr(t->name, ']');
		if (!close || close[1] != ':')
			return -1;
		hlen = (size_t)(close - t->name) - 1;
		memcpy(t->host, t->name + 1, hlen);
		colon = close + 1;
	} else {
		colon = strrchr(t->name, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - t->name);
		memcpy(t->host, t->name, hlen);
	}
	t->host[hlen] = '\0';
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (hlen == 0 || *end != '\0' || end == colon + 1 || port <= 0 || port > 65535)
		return -1;
	t->port = (int)port;
	return 0;
}

int target_list_parse(const char *spec, struct target_list *out, char *err, size_t err_len)
{
	out->n = 0;
	for (const char *p = spec; *p;) {
		const char *semi = strchr(p, ';');
		const char *end = semi ? semi : p + strlen(p);
		const char *b = p, *e = end;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > b) {
			if (out->n == TARGET_MAX) {
				snprintf(err, err_len, "more than %d addresses", TARGET_MAX);
				return -1;
			}
			if (target_parse_one(b, (size_t)(e - b), &out->v[out->n]) < 0) {
				snprintf(err, err_len, "bad address \"%.*s\" (want host:port)",
					 (int)(e - b), b);
				return -1;
			}
			out->n++;
		}
		p = semi ? semi + 1 : end;
	}
	if (out->n == 0) {
		snprintf(err, err_len, "no address in \"%s\"", spec);
		return -1;
	}
	return 0;
}

void target_request_init(struct remoting_cmd *req, int32_t code)
{
	memset(req, 0, sizeof *req);
	req->code = code;
	req->language = LANG_OTHER;
	req->version = RMQNS_SERVER_VERSION;
	req->serialize = REMOTING_JSON;
}

/* Set once by main before any call, like the credentials below. */
static struct ssl_ctx_st *tls_ctx;

void target_set_tls(struct ssl_ctx_st *ctx)
{
	tls_ctx = ctx;
}

struct client *target_connect(const struct target *t, int timeout_ms, struct call_result *r)
{
	int err = 0;

	memset(r, 0, sizeof *r);
	r->timeout_ms = timeout_ms;
	struct client *c = client_connect_tls(t->host, t->port, tls_ctx, timeout_ms, &err, r->tls_why,
					      sizeof r->tls_why);
	if (c)
		return c;
	if (r->tls_why[0]) {
		r->status = err == RMQNS_ENOMEM ? CALL_NOMEM : CALL_TLS_FAILED;
		return NULL;
	}
	switch (err) {
	case RMQNS_ECLOSED: r->status = CALL_CONN_REFUSED; break;
	case RMQNS_EAGAIN: r->status = CALL_CONN_TIMEOUT; break;
	case RMQNS_ENOMEM: r->status = CALL_NOMEM; break;
	default: r->status = CALL_CONN_FAILED; break;
	}
	return NULL;
}

/* Set once by main before any call (clusterDiff's threads only read them). */
static const char *sign_access_key, *sign_secret_key;

void target_set_credentials(const char *access_key, const char *secret_key)
{
	sign_access_key = access_key;
	sign_secret_key = secret_key;
}

/* client_call, the request signed first when credentials were given. */
static int target_client_call(struct client *c, struct remoting_cmd *req, struct client_reply **out,
			      int timeout_ms)
{
	if (!sign_access_key)
		return client_call(c, req, out, timeout_ms);
	struct remoting_ext_field *ext = req->ext;
	uint32_t ext_count = req->ext_count;
	bool ext_present = req->ext_present;
	struct acl_signed s;
	int rc = acl_sign_cmd(req, sign_access_key, sign_secret_key, &s);
	if (rc < 0)
		return rc;
	rc = client_call(c, req, out, timeout_ms);
	req->ext = ext;
	req->ext_count = ext_count;
	req->ext_present = ext_present;
	acl_signed_free(&s);
	return rc;
}

void target_call_on(struct client *c, struct remoting_cmd *req, int timeout_ms,
		    struct call_result *r)
{
	memset(r, 0, sizeof *r);
	r->timeout_ms = timeout_ms;
	int rc = target_client_call(c, req, &r->reply, timeout_ms);
	if (rc < 0 && client_tls_error(c)) {
		snprintf(r->tls_why, sizeof r->tls_why, "%s", client_tls_error(c));
		r->status = CALL_TLS_FAILED;
		return;
	}
	switch (rc) {
	case RMQNS_OK: r->status = CALL_ANSWERED; break;
	case RMQNS_EAGAIN: r->status = CALL_TIMEOUT; break;
	case RMQNS_ECLOSED: r->status = CALL_CLOSED; break;
	case RMQNS_ENOMEM: r->status = CALL_NOMEM; break;
	default: r->status = CALL_BAD_FRAME; break;
	}
}

void target_call(const struct target *t, struct remoting_cmd *req, int timeout_ms,
		 struct call_result *r)
{
	struct client *c = target_connect(t, timeout_ms, r);
	if (!c)
		return;
	target_call_on(c, req, timeout_ms, r);
	client_close(c);
}

const char *call_code_name(int32_t code)
{
	switch (code) {
	case 0: return "SUCCESS";
	case 1: return "SYSTEM_ERROR";
	case 2: return "SYSTEM_BUSY";
	case 3: return "REQUEST_CODE_NOT_SUPPORTED";
	case 16: return "NO_PERMISSION";
	case 17: return "TOPIC_NOT_EXIST";
	case 22: return "QUERY_NOT_FOUND";
	case 1500: return "GO_AWAY";
	/* the controller's (controller.md §3.2) */
	case 2000: return "CONTROLLER_FENCED_MASTER_EPOCH";
	case 2001: return "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH";
	case 2002: return "CONTROLLER_INVALID_MASTER";
	case 2003: return "CONTROLLER_INVALID_REPLICAS";
	case 2004: return "CONTROLLER_MASTER_NOT_AVAILABLE";
	case 2005: return "CONTROLLER_INVALID_REQUEST";
	case 2006: return "CONTROLLER_BROKER_NOT_ALIVE";
	case 2007: return "CONTROLLER_NOT_LEADER";
	case 2008: return "CONTROLLER_BROKER_METADATA_NOT_EXIST";
	case 2009: return "CONTROLLER_INVALID_CLEAN_BROKER_METADATA";
	case 2010: return "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED";
	case 2011: return "CONTROLLER_MASTER_STILL_EXIST";
	case 2012: return "CONTROLLER_ELECT_MASTER_FAILED";
	case 2013: return "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED";
	case 2014: return "CONTROLLER_BROKER_ID_INVALID";
	default: return "?";
	}
}

void call_describe(const struct call_result *r, char *out, size_t n)
{
	switch (r->status) {
	case CALL_ANSWERED: {
		const struct remoting_cmd *c = &r->reply->cmd;
		if (c->remark && *c->remark)
			snprintf(out, n, "code %d (%s): %s", c->code, call_code_name(c->code), c->remark);
		else
			snprintf(out, n, "code %d (%s)", c->code, call_code_name(c->code));
		break;
	}
	case CALL_CONN_REFUSED: snprintf(out, n, "connection refused"); break;
	case CALL_CONN_TIMEOUT:
		snprintf(out, n, "timed out after %d ms connecting", r->timeout_ms);
		break;
	case CALL_CONN_FAILED: snprintf(out, n, "cannot connect"); break;
	case CALL_TLS_FAILED: snprintf(out, n, "%s", r->tls_why); break;
	case CALL_TIMEOUT:
		snprintf(out, n, "timed out after %d ms waiting for the answer", r->timeout_ms);
		break;
	case CALL_CLOSED:
		snprintf(out, n, "connection closed by the server%s",
			 tls_ctx ? "" : " (if it enforces TLS, use --tls)");
		break;
	case CALL_BAD_FRAME: snprintf(out, n, "the answer is not a remoting frame"); break;
	case CALL_NOMEM: snprintf(out, n, "out of memory"); break;
	}
}

void call_result_clear(struct call_result *r)
{
	client_reply_free(r->reply);
	r->reply = NULL;
}
