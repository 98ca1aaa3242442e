/* Request-code dispatch: handler_lookup over the subject tables of
 * handlers.h (route, kv, config), and the built-in answer for codes nobody
 * handles. Owns no state beyond an index built once. */
#include <pthread.h>
#include <stdio.h>

#include "rmqns/app.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/log.h"
#include "rmqns/processor.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

/* Codes below this are found by direct index; every known code is. */
#define DISPATCH_DIRECT_CODES 1024

static const struct handler *const dispatch_tables[] = {
	handlers_route,
	handlers_kv,
	handlers_config,
};

static const struct handler *dispatch_direct[DISPATCH_DIRECT_CODES];
static pthread_once_t dispatch_once = PTHREAD_ONCE_INIT;

static void dispatch_build_index(void)
{
	for (size_t t = 0; t < sizeof dispatch_tables / sizeof dispatch_tables[0]; t++) {
		for (const struct handler *h = dispatch_tables[t]; h->fn; h++) {
			if (h->code < 0 || h->code >= DISPATCH_DIRECT_CODES)
				continue;
			if (dispatch_direct[h->code]) {
				log_warn("request code %d has two handlers; the first one wins", h->code);
				continue;
			}
			dispatch_direct[h->code] = h;
		}
	}
}

const struct handler *handler_lookup(int32_t code)
{
	pthread_once(&dispatch_once, dispatch_build_index);
	if (code >= 0 && code < DISPATCH_DIRECT_CODES)
		return dispatch_direct[code];
	for (size_t t = 0; t < sizeof dispatch_tables / sizeof dispatch_tables[0]; t++)
		for (const struct handler *h = dispatch_tables[t]; h->fn; h++)
			if (h->code == code)
				return h;
	return NULL;
}

/* The requests a 5.x controller serves (controller.md §3; 1007 and 1008
 * go to brokers): sent here, they were meant for a controller's port. */
static bool dispatch_controller_code(int32_t code)
{
	return code >= 1001 && code <= 1013 && code != 1007 && code != 1008;
}

/* 5.x answers an unknown code with 3 and this exact remark (leading space
 * included); 4.9 did not answer at all and left clients to time out. A
 * controller's code gets a hint after it: which port it belongs on. */
static void dispatch_answer_unsupported(struct app *app, struct request *req)
{
	char remark[200];
	int len = snprintf(remark, sizeof remark, PROCESSOR_UNSUPPORTED_FMT, req->cmd.code);
	int ctl_port = app ? app->controller_port : 0;

	if (dispatch_controller_code(req->cmd.code) && ctl_port > 0)
		snprintf(remark + len, sizeof remark - (size_t)len,
			 "; this is a NameServer port: the controller of this node listens on port %d",
			 ctl_port);
	else if (dispatch_controller_code(req->cmd.code))
		snprintf(remark + len, sizeof remark - (size_t)len,
			 "; this is a NameServer port and this node runs no controller");
	int rc = request_reply_code(req, RSP_REQUEST_CODE_NOT_SUPPORTED, remark);
	if (rc < 0)
		log_debug("%s: answer to unsupported code %d not sent: %s", req->peer,
			  req->cmd.code, rmqns_strerror(rc));
	request_free(req);
}

static const struct handler dispatch_unsupported = {
	-1, dispatch_answer_unsupported, LANE_DEFAULT, true,
};

const struct handler *processor_handler_for(int32_t code)
{
	const struct handler *h = handler_lookup(code);
	return h ? h : &dispatch_unsupported;
}
