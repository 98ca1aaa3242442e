/* A request in flight (request.h): its own copy of the frame, the decoded
 * command pointing into it, and the way back to its connection. Encoding
 * an answer happens here; delivering it is the server's job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/net.h"
#include "rmqns/request.h"

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
	snprintf(req->peer, sizeof req->peer, "%s", peer ? peer : "");
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

	struct buf b = BUF_INIT;
	int rc = buf_reserve(&b, 256 + (size_t)out.body_len);
	if (rc == 0)
		rc = remoting_encode(&out, &b);
	if (rc < 0) {
		buf_free(&b);
		return rc;
	}
	return server_send(req->server, req->conn_id, &b);
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
