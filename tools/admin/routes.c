/* Pipelined route queries (routes.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "routes.h"

static enum call_status routes_status(int rc)
{
	switch (rc) {
	case RMQNS_EAGAIN: return CALL_TIMEOUT;
	case RMQNS_ECLOSED: return CALL_CLOSED;
	case RMQNS_ENOMEM: return CALL_NOMEM;
	default: return CALL_BAD_FRAME;
	}
}

/* Encodes requests for topics[*sent..] until `limit` are in flight. */
static int routes_send_batch(struct client *c, const char *const *topics, size_t n, size_t *sent,
			     size_t limit, int32_t *base, int timeout_ms)
{
	struct buf b = BUF_INIT;
	int rc = 0;

	while (*sent < n && *sent < limit) {
		struct remoting_ext_field ext = { "topic", topics[*sent] };
		struct remoting_cmd req;
		target_request_init(&req, REQ_GET_ROUTEINFO_BY_TOPIC);
		req.ext = &ext;
		req.ext_count = 1;
		req.opaque = client_next_opaque(c);
		if (*sent == 0)
			*base = req.opaque;
		rc = remoting_encode(&req, &b);
		if (rc < 0)
			break;
		(*sent)++;
	}
	if (rc == 0 && b.len > 0)
		rc = client_send_raw(c, b.data, b.len, timeout_ms);
	buf_free(&b);
	return rc;
}

int routes_fetch(struct client *c, const char *const *topics, size_t n, int timeout_ms,
		 routes_fn fn, void *arg, struct call_result *fail)
{
	size_t sent = 0, done = 0;
	int32_t base = 0;
	bool *answered = calloc(n ? n : 1, sizeof *answered);
	int rc = 0;

	memset(fail, 0, sizeof *fail);
	fail->timeout_ms = timeout_ms;
	if (!answered) {
		fail->status = CALL_NOMEM;
		return -1;
	}
	while (done < n) {
		/* Refill when half the window has drained: few, large writes. */
		if (sent < n && sent - done <= ROUTES_WINDOW / 2) {
			rc = routes_send_batch(c, topics, n, &sent, done + ROUTES_WINDOW, &base,
					       timeout_ms);
			if (rc < 0)
				break;
		}
		struct client_reply *r = NULL;
		rc = client_recv(c, &r, timeout_ms);
		if (rc < 0)
			break;
		int64_t idx = (int64_t)r->cmd.opaque - base;
		if (!remoting_is_response(&r->cmd) || idx < 0 || (size_t)idx >= sent || answered[idx]) {
			client_reply_free(r);
			continue;
		}
		answered[idx] = true;
		done++;
		int stop = fn(arg, (size_t)idx, &r->cmd);
		client_reply_free(r);
		if (stop)
			break;
	}
	free(answered);
	if (rc < 0) {
		fail->status = routes_status(rc);
		return -1;
	}
	return 0;
}
