/* A request in flight (request.h): its own copy of the frame (or, for a
 * big one, the read buffer it came in), the decoded command pointing into
 * it, and the way back to its connection. An answer is encoded here,
 * head and body, into the buffer net_send_begin gives. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/request.h"

/* Decodes the frame at req->frame and fills in the rest. */
static int request_fill(struct request *req, size_t len, struct net_conn conn, const char *peer,
			uint64_t recv_ns)
{
	req->frame_len = len;
	int rc = remoting_decode(req->frame, len, &req->cmd);
	if (rc < 0)
		return rc;
	req->conn = conn;
	req->handler = NULL;
	req->share = NULL;
	req->share_barrier = false;
	req->handoffs = NULL;
	req->recv_ns = recv_ns;
	/* a copy by hand: snprintf was 3 % of the CPU of a route query */
	size_t pl = peer ? strnlen(peer, sizeof req->peer - 1) : 0;
	memcpy(req->peer, peer ? peer : "", pl);
	req->peer[pl] = '\0';
	return RMQNS_OK;
}

struct request *request_create(const uint8_t *frame, size_t len, struct net_conn conn,
			       const char *peer, uint64_t recv_ns, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	struct request *req = malloc(sizeof *req + len);
	if (!req) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	req->frame = (uint8_t *)(req + 1);
	req->kept_block = NULL;
	memcpy(req->frame, frame, len);
	int rc = request_fill(req, len, conn, peer, recv_ns);
	if (rc < 0) {
		free(req);
		*err = rc;
		return NULL;
	}
	*err = RMQNS_OK;
	return req;
}

struct request *request_adopt(uint8_t *block, size_t len, struct net_conn conn, const char *peer,
			      uint64_t recv_ns, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	struct request *req = malloc(sizeof *req);
	if (!req) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	req->frame = block;
	req->kept_block = block;
	int rc = request_fill(req, len, conn, peer, recv_ns);
	if (rc < 0) {
		free(req);
		*err = rc;
		return NULL;
	}
	*err = RMQNS_OK;
	return req;
}

void request_free(struct request *req)
{
	if (!req)
		return;
	remoting_cmd_release(&req->cmd);
	net_block_free(req->kept_block);
	if (req->share)
		/* its connection may read on */
		net_share_release(req->share, req->frame_len, req->share_barrier);
	free(req);
}

/* Room made for an answer's head before it is encoded (it may grow). */
#define REQUEST_HEAD_ROOM 256u

int request_reply(const struct request *req, const struct remoting_cmd *rsp)
{
	metrics_request(req->cmd.code, rsp->code, req->recv_ns);
	if (remoting_is_oneway(&req->cmd))
		return RMQNS_OK;

	/* Whatever the handler built, the answer goes back as an answer to this
	 * request, in the request's serialization (protocol.md §2.6). */
	struct remoting_cmd out = *rsp;
	out.serialize = req->cmd.serialize;
	out.opaque = req->cmd.opaque;
	out.flag |= REMOTING_FLAG_RESPONSE;
	struct net_send snd;
	int rc = net_send_begin(&snd, req->conn, REQUEST_HEAD_ROOM + (size_t)out.body_len);
	if (rc < 0 || !snd.out)
		return rc; /* the connection is gone: dropped */
	rc = remoting_encode_head(&out, out.body_len, snd.out);
	if (rc == 0 && out.body_len)
		rc = buf_append(snd.out, out.body, out.body_len);
	if (rc < 0) {
		net_send_abort(&snd);
		return rc;
	}
	return net_send_commit(&snd);
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

bool request_is_stale(const struct request *req)
{
	return req->share && !remoting_is_oneway(&req->cmd) && net_share_closed(req->share);
}
