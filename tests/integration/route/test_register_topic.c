/* REGISTER_TOPIC_IN_NAMESRV (217) against the real binary: a TopicRouteData
 * body as fastjson writes it (bare integer keys) registers the topic on a
 * known group, with the queue numbers the body gives; a body that is not
 * JSON is answered SYSTEM_ERROR and changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "rmqns/err.h"
#include "rmqns/json_tree.h"

#define T HARNESS_IO_TIMEOUT_MS

static struct harness_server srv;

static void fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
}

TestSuite(register_topic, .fini = fini, .timeout = 120);

static struct client_reply *call(struct client *c, int32_t code, const char *topic, const char *body)
{
	struct remoting_ext_field ext[1] = { { "topic", topic } };
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, code, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = topic ? 1 : 0;
	req.body = (const uint8_t *)body;
	req.body_len = body ? (uint32_t)strlen(body) : 0;
	cr_assert_eq(client_call(c, &req, &r, T), 0, "request %d for %s failed", code, topic);
	return r;
}

static void register_group(struct client *c)
{
	const char *body = "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
			   "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
			   "\"T0\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"T0\",\"writeQueueNums\":1},"
			   "\"T1\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"T1\",\"writeQueueNums\":1}}}}";
	struct remoting_ext_field ext[] = {
		{ "brokerName", "bt" }, { "brokerAddr", "10.3.0.1:10911" }, { "clusterName", "TC" },
		{ "haServerAddr", "h:1" }, { "brokerId", "0" },
	};
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, 103, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = 5;
	req.body = (const uint8_t *)body;
	req.body_len = (uint32_t)strlen(body);
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	cr_assert_eq(r->cmd.code, 0, "registration: %d %s", r->cmd.code, r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
}

/* The route of topic: its only QueueData, as the route query answers it. */
static json_t *route_queue(struct client *c, const char *topic, json_t **root)
{
	struct client_reply *r = call(c, 105, topic, NULL);
	int err;

	cr_assert_eq(r->cmd.code, 0, "no route for %s", topic);
	*root = json_body_parse(r->cmd.body, r->cmd.body_len, &err);
	client_reply_free(r);
	cr_assert_not_null(*root);
	json_t *qds = json_object_get(*root, "queueDatas");
	cr_assert_eq(json_array_size(qds), 1);
	return json_array_get(qds, 0);
}

Test(register_topic, fastjson_body_registers_the_topic)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_group(c);

	struct client_reply *r = call(c, 217, "NEWT",
		"{\"brokerDatas\":[{\"brokerAddrs\":{0:\"10.3.0.1:10911\"},\"brokerName\":\"bt\",\"cluster\":\"TC\"}],"
		"\"filterServerTable\":{},\"queueDatas\":[{\"brokerName\":\"bt\",\"perm\":4,\"readQueueNums\":3,"
		"\"topicSysFlag\":0,\"writeQueueNums\":2}]}");
	cr_expect_eq(r->cmd.code, 0);
	client_reply_free(r);
	json_t *root, *q = route_queue(c, "NEWT", &root);
	cr_expect_str_eq(json_string_value(json_object_get(q, "brokerName")), "bt");
	cr_expect_eq(json_integer_value(json_object_get(q, "readQueueNums")), 3);
	cr_expect_eq(json_integer_value(json_object_get(q, "writeQueueNums")), 2);
	cr_expect_eq(json_integer_value(json_object_get(q, "perm")), 4);
	json_decref(root);

	/* numbers as text, and the older brokers' topicSynFlag */
	r = call(c, 217, "NEWT2",
		 "{\"queueDatas\":[{\"writeQueueNums\":\"5\",\"brokerName\":\"bt\",\"perm\":6,"
		 "\"readQueueNums\":\"7\",\"topicSynFlag\":1}]}");
	cr_expect_eq(r->cmd.code, 0);
	client_reply_free(r);
	q = route_queue(c, "NEWT2", &root);
	cr_expect_eq(json_integer_value(json_object_get(q, "readQueueNums")), 7);
	cr_expect_eq(json_integer_value(json_object_get(q, "writeQueueNums")), 5);
	cr_expect_eq(json_integer_value(json_object_get(q, "topicSysFlag")), 1);
	json_decref(root);
	client_close(c);
}

Test(register_topic, unreadable_or_empty_bodies_change_nothing)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_group(c);

	static const char *bad[] = {
		"{\"queueDatas\":[{\"brokerName\":\"bt\",\"perm\":6", "[]", "{\"queueDatas\":[{1:2}]}x",
		"{\"queueDatas\":[{\"brokerName\":\"bt\",\"perm\":99999999999999999999}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct client_reply *r = call(c, 217, "BAD", bad[i]);
		cr_expect_eq(r->cmd.code, RSP_SYSTEM_ERROR, "%s", bad[i]);
		cr_expect_str_eq(r->cmd.remark, "REGISTER_TOPIC_IN_NAMESRV body is not a TopicRouteData");
		client_reply_free(r);
	}
	struct client_reply *r = call(c, 217, "BAD", "{\"queueDatas\":[]}");
	cr_expect_eq(r->cmd.code, 0, "nothing to register is a success");
	client_reply_free(r);
	r = call(c, 105, "BAD", NULL);
	cr_expect_eq(r->cmd.code, RSP_TOPIC_NOT_EXIST);
	client_reply_free(r);
	client_close(c);
}
