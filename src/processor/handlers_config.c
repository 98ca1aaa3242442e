/* Handlers for GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318).
 * The update is checked here (parse, black list, paths, line breaks,
 * values) and made by the config module on the registrar thread
 * (config_change_apply), which persists it to the -c file before the
 * answer leaves. */
#include <stdlib.h>

#include <urcu/compiler.h>

#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/config.h"
#include "rmqns/race.h"
#include "rmqns/handlers.h"
#include "rmqns/log.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

/* A configuration change with the request it answers. */
struct config_request {
	struct config_change change;
	struct request *req; /* owned */
};

static void reply_config_change(struct config_change *c)
{
	struct config_request *cr = caa_container_of(c, struct config_request, change);

	request_reply_code(cr->req, c->code, c->code == 0 ? NULL : c->remark);
}

static void release_config_change(struct config_change *c)
{
	struct config_request *cr = caa_container_of(c, struct config_request, change);

	request_free(cr->req);
	free(cr);
}

static void handle_update_config(struct app *app, struct request *req)
{
	struct config_update *u = NULL;
	struct config_request *cr;
	char remark[768];
	int32_t code;
	int rc;

	state_read_lock();
	rc = config_update_prepare(app->config, req->cmd.body, req->cmd.body_len, &u, &code,
				   remark, sizeof(remark));
	state_read_unlock();
	if (rc < 0) {
		log_warn("UPDATE_NAMESRV_CONFIG from %s refused (code %d): %s", req->peer, code, remark);
		request_reply_code(req, code, remark);
		request_free(req);
		return;
	}
	if (!u) {
		/* no body: nothing to change */
		request_reply_code(req, RSP_SUCCESS, NULL);
		request_free(req);
		return;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr) {
		config_update_free(u);
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
		request_free(req);
		return;
	}
	config_change_init(&cr->change, app->config, u);
	cr->change.peer = req->peer;
	cr->change.done = reply_config_change;
	cr->change.release = release_config_change;
	cr->req = req;
	registrar_submit(app->registrar, &cr->change.m);
}

static void handle_get_config(struct app *app, struct request *req)
{
	struct buf body = BUF_INIT;
	int rc;

	state_read_lock();
	rc = config_properties_text(app->config, &body);
	state_read_unlock();
	/* The Java admin client reads the body unconditionally. */
	if (rc == 0)
		request_reply_body(req, RSP_SUCCESS, body.data ? body.data : (const uint8_t *)"", body.len);
	else
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
	buf_free(&body);
	request_free(req);
}

const struct handler handlers_config[] = {
	{ REQ_UPDATE_NAMESRV_CONFIG, handle_update_config, LANE_DEFAULT, false },
	{ REQ_GET_NAMESRV_CONFIG, handle_get_config, LANE_DEFAULT, false },
	{ 0, NULL, LANE_DEFAULT, false },
};
