/* Handlers for GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318).
 * The update is checked here (parse, black list, paths, line breaks,
 * values) and applied by the registrar, which persists it to the -c file
 * before the answer leaves. */
#include <stdlib.h>

#include <urcu.h>

#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/config.h"
#include "rmqns/race.h"
#include "rmqns/handlers.h"
#include "rmqns/log.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

struct config_mutation {
	struct mutation m;
	struct app *app;
	struct request *req;      /* owned */
	struct config_update *u;  /* owned */
};

static void config_mutation_apply(struct mutation *m)
{
	struct config_mutation *cm = caa_container_of(m, struct config_mutation, m);
	char remark[768];
	int32_t code = config_update_apply(cm->app->config, cm->u, cm->req->peer, remark, sizeof(remark));

	request_reply_code(cm->req, code, code == 0 ? NULL : remark);
	config_update_free(cm->u);
	request_free(cm->req);
	free(cm);
}

static void handle_update_config(struct app *app, struct request *req)
{
	struct config_update *u = NULL;
	struct config_mutation *cm;
	char remark[768];
	int32_t code;
	int rc;

	rcu_read_lock();
	rc = config_update_prepare(app->config, req->cmd.body, req->cmd.body_len, &u, &code,
				   remark, sizeof(remark));
	race_reader_done();
	rcu_read_unlock();
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
	cm = calloc(1, sizeof(*cm));
	if (!cm) {
		config_update_free(u);
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
		request_free(req);
		return;
	}
	cm->m.apply = config_mutation_apply;
	cm->app = app;
	cm->req = req;
	cm->u = u;
	registrar_submit(app->registrar, &cm->m);
}

static void handle_get_config(struct app *app, struct request *req)
{
	struct buf body = BUF_INIT;
	int rc;

	rcu_read_lock();
	rc = config_properties_text(app->config, &body);
	race_reader_done();
	rcu_read_unlock();
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
