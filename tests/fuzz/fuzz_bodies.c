/* libFuzzer target for the request bodies other than REGISTER_BROKER's,
 * each read the way the server reads it:
 *   0: REGISTER_TOPIC_IN_NAMESRV (217): a one-way request through the real
 *      handler, applied by a real registrar to a route table that knows
 *      two broker groups; the tables must pass rt_check afterwards and the
 *      topic's route must answer or say not found;
 *   1: UPDATE_NAMESRV_CONFIG (318): the properties body checked by
 *      config_update_prepare, as the handler does before the registrar;
 *   2: an ORDER_TOPIC_CONFIG value (the KV value spliced into route
 *      answers as orderTopicConf), in both answer forms; the answer must
 *      still be one JSON object.
 * The first input byte picks the body; the rest is the body. */
#include <jansson.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "rmqns/log.h"
#include "rmqns/race.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"
#include "rmqns/route.h"
#include "route_priv.h"

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

static struct app app;
static struct config *cfg;
static sem_t applied;

static void register_group(const char *name, const char *addr)
{
	static const char body[] = "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":1,"
				   "\"timestamp\":1},\"topicConfigTable\":{\"Base\":{\"perm\":6,"
				   "\"readQueueNums\":4,\"topicName\":\"Base\",\"writeQueueNums\":4},"
				   "\"Other\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"Other\","
				   "\"writeQueueNums\":1}}}}";
	struct regbody rb;
	char why[160];
	REQUIRE(regbody_decode((const uint8_t *)body, sizeof(body) - 1, false, 441, 0, &rb, why,
			       sizeof(why)) == 0);
	struct route_broker_reg reg = { .cluster = "c1", .name = name, .addr = addr, .id = 0,
					.conn_id = 1, .body = &rb };
	struct route_reg_result res;
	REQUIRE(route_apply_register(app.route, &reg, route_now_ms(), &res) == 0);
	REQUIRE(res.outcome == ROUTE_REG_DONE);
	route_reg_result_free(&res);
	regbody_free(&rb);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char *args[] = { "rmqns", NULL };
	enum config_action action;
	char err[256];

	REQUIRE(config_from_args(1, args, &cfg, &action, err, sizeof(err)) == 0);
	log_set_level(LOG_ERROR);
	(void)log_set_file("/dev/null"); /* failures are expected here; keep stderr for findings */
	rcu_register_thread();
	app.config = cfg;
	app.route = route_db_create(1u << 20);
	REQUIRE(app.route);
	register_group("b1", "10.0.0.1:10911");
	register_group("b2", "10.0.0.2:10911");
	app.registrar = registrar_create(NULL);
	REQUIRE(app.registrar && registrar_start(app.registrar) == 0);
	sem_init(&applied, 0, 0);
	return 0;
}

/* Runs on the registrar after the fuzzed request: checks the tables and
 * removes the topic again so that runs do not depend on each other. */
static void check_and_reset(struct mutation *m)
{
	char err[512];
	if (rt_check(app.route, err, sizeof(err)) != 0) {
		fprintf(stderr, "rt_check: %s\n", err);
		abort();
	}
	struct buf scratch = BUF_INIT;
	struct route_query q = { "T", JW_DEFAULT, false, NULL, NULL };
	const uint8_t *body;
	size_t len;
	state_read_lock();
	int rc = route_topic_body(app.route, &q, &body, &len, &scratch);
	REQUIRE(rc == RMQNS_OK || rc == RMQNS_ENOTFOUND);
	state_read_unlock();
	buf_free(&scratch);
	route_apply_delete_topic(app.route, "T", NULL);
	while (route_hook_idle(app.route))
		;
	REQUIRE(rt_check(app.route, err, sizeof(err)) == 0);
	(void)m;
	sem_post(&applied);
}

static void register_topic(const uint8_t *body, size_t len)
{
	struct remoting_ext_field ext[] = { { "topic", "T" } };
	struct remoting_cmd cmd;
	struct buf frame = BUF_INIT;
	memset(&cmd, 0, sizeof(cmd));
	cmd.code = REQ_REGISTER_TOPIC_IN_NAMESRV;
	cmd.language = LANG_JAVA;
	cmd.version = 441;
	cmd.flag = REMOTING_FLAG_ONEWAY; /* no connection to answer on */
	cmd.serialize = REMOTING_JSON;
	cmd.ext = ext;
	cmd.ext_count = 1;
	cmd.body = body;
	cmd.body_len = (uint32_t)len;
	REQUIRE(remoting_encode(&cmd, &frame) == 0);
	int err;
	struct net_conn conn = { NULL, 7 };
	struct request *req = request_create(frame.data, frame.len, conn, "127.0.0.1:1", 0, &err);
	buf_free(&frame);
	REQUIRE(req);
	const struct handler *h = handler_lookup(REQ_REGISTER_TOPIC_IN_NAMESRV);
	REQUIRE(h);
	h->fn(&app, req);
	static struct mutation probe = { .apply = check_and_reset };
	registrar_submit(app.registrar, &probe);
	while (sem_wait(&applied) != 0)
		;
}

static void update_config(const uint8_t *body, size_t len)
{
	struct config_update *u = NULL;
	int32_t code = 0;
	char remark[768];
	remark[0] = 0;
	rcu_read_lock();
	int rc = config_update_prepare(cfg, len ? body : NULL, len, &u, &code, remark, sizeof(remark));
	rcu_read_unlock();
	if (rc == 0)
		REQUIRE(u != NULL || len == 0);
	else
		REQUIRE(u == NULL && code != 0 && remark[0] != 0);
	config_update_free(u);
}

static void order_conf(const uint8_t *data, size_t len)
{
	char *conf = malloc(len + 1);
	if (!conf)
		return;
	memcpy(conf, data, len);
	conf[len] = 0;
	for (int form = 0; form < 2; form++) {
		struct buf scratch = BUF_INIT;
		struct route_query q = { "Base", (enum jw_form)form, form == 1, conf, NULL };
		const uint8_t *body;
		size_t blen;
		state_read_lock();
		int rc = route_topic_body(app.route, &q, &body, &blen, &scratch);
		REQUIRE(rc == RMQNS_OK || rc == RMQNS_ENOMEM);
		if (rc == RMQNS_OK) {
			int err;
			json_t *j = json_body_parse(body, blen, &err);
			if (!j) {
				fprintf(stderr, "route answer with orderTopicConf does not parse: %.*s\n",
					(int)blen, (const char *)body);
				abort();
			}
			REQUIRE(json_is_object(j));
			json_decref(j);
		}
		state_read_unlock();
		buf_free(&scratch);
	}
	free(conf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		register_topic(data + 1, size - 1);
		break;
	case 1:
		update_config(data + 1, size - 1);
		break;
	default:
		order_conf(data + 1, size - 1);
		break;
	}
	return 0;
}
