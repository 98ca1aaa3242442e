/* A request in flight (request.h): its own copy of the frame, the decoded
 * command pointing into it, and the way back to its connection. Encoding
 * an answer happens here; delivering it is the server's job. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/net.h"
#include "rmqns/request.h"

/* Scratch buffers above this size are given back after use. */
#define REQUEST_SCRATCH_KEEP 65536u

static pthread_key_t request_key;
static pthread_once_t request_key_once = PTHREAD_ONCE_INIT;
static bool request_key_ok;
static __thread struct buf *request_tls;

static void request_scratch_free(void *p)
{
	struct buf *b = p;
	buf_free(b);
	free(b);
}

static void request_key_init(void)
{
	request_key_ok = pthread_key_create(&request_key, request_scratch_free) == 0;
}

/* The calling thread's answer buffer (freed when the thread ends), or
 * NULL when there is none to be had. */
static struct buf *request_scratch(void)
{
	if (request_tls)
		return request_tls;
	pthread_once(&request_key_once, request_key_init);
	if (!request_key_ok)
		return NULL;
	struct buf *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	if (pthread_setspecific(request_key, b) != 0) {
		free(b);
		return NULL;
	}
	request_tls = b;
	return b;
}

struct request *request_create(const uint8_t *frame, size_t len, struct server *srv,
			       uint64_t conn_id, const char *peer, uint64_t recv_ns, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	struct request *req = malloc(sizeof *req + len);
	if (!req) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	memcpy(req->frame, frame, len);
	req->frame_len = len;
	int rc = remoting_decode(req->frame, len, &req->cmd);
	if (rc < 0) {
		free(req);
		*err = rc;
		return NULL;
	}
	req->conn_id = conn_id;
	req->recv_ns = recv_ns;
	req->server = srv;
	/* a copy by hand: snprintf was 3 % of the CPU of a route query */
	size_t pl = peer ? strnlen(peer, sizeof req->peer - 1) : 0;
	memcpy(req->peer, peer ? peer : "", pl);
	req->peer[pl] = '\0';
	*err = RMQNS_OK;
	return req;
}

void request_free(struct request *req)
{
	if (!req)
		return;
	remoting_cmd_release(&req->cmd);
	free(req);
}

int request_reply(const struct request *req, const struct remoting_cmd *rsp)
{
	if (remoting_is_oneway(&req->cmd))
		return RMQNS_OK;
	if (!req->server)
		return RMQNS_ECLOSED;

	/* Whatever the handler built, the answer goes back as an answer to this
	 * request, in the request's serialization (protocol.md §2.6). */
	struct remoting_cmd out = *rsp;
	out.serialize = req->cmd.serialize;
	out.opaque = req->cmd.opaque;
	out.flag |= REMOTING_FLAG_RESPONSE;

	/* Encoded into the thread's scratch buffer and copied out: an answer
	 * given inline joins its connection's waiting bytes without an
	 * allocation of its own. */
	struct buf *b = request_scratch();
	if (!b) {
		struct buf own = BUF_INIT;
		int rc = buf_reserve(&own, 256 + (size_t)out.body_len);
		if (rc == 0)
			rc = remoting_encode(&out, &own);
		if (rc < 0) {
			buf_free(&own);
			return rc;
		}
		return server_send(req->server, req->conn_id, &own);
	}
	b->len = 0;
	int rc = buf_reserve(b, 256 + (size_t)out.body_len);
	if (rc == 0)
		rc = remoting_encode(&out, b);
	if (rc == 0)
		rc = server_send_copy(req->server, req->conn_id, b->data, b->len);
	if (b->cap > REQUEST_SCRATCH_KEEP)
		buf_free(b); /* a big answer's room is not kept per thread */
	return rc;
}

int request_reply_code(const struct request *req, int32_t code, const char *remark)
{
	struct remoting_cmd rsp;
	remoting_response_init(&rsp, &req->cmd, code, remark);
	return request_reply(req, &rsp);
}

int request_reply_body(const struct request *req, int32_t code, const void *body, size_t len)
{
	if (len > UINT32_MAX)
		return RMQNS_ETOOBIG;
	struct remoting_cmd rsp;
	remoting_response_init(&rsp, &req->cmd, code, NULL);
	rsp.body = body;
	rsp.body_len = (uint32_t)len;
	return request_reply(req, &rsp);
}
