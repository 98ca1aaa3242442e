/* Route traffic against the real binary from several threads at once:
 * brokers re-registering with new versions (and dropping their connection
 * now and then), clients asking for routes in both forms, cluster info and
 * topic lists. Every answer must be well formed, and the server must stop
 * cleanly with no sanitizer report. A plain program (harness_main) so that
 * it also runs against a ThreadSanitizer build ('concurrency' suite). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "harness.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"

#define T HARNESS_IO_TIMEOUT_MS
#define BROKERS 2
#define CLIENTS 3
#define REGISTRATIONS 40
#define TOPICS 20

static atomic_int broker_failures, client_failures;
static atomic_bool brokers_done;
static atomic_long answers;

struct thread_arg {
	struct harness_server *s;
	int idx;
};

static char *body_for(int counter)
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		       "{\"counter\":%d,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{", counter);
	for (int t = 0; t < TOPICS; t++)
		buf_printf(&b, "%s\"load-%d\":{\"perm\":6,\"readQueueNums\":%d,\"topicName\":\"load-%d\",\"writeQueueNums\":4}",
			   t ? "," : "", t, 1 + counter % 8, t);
	buf_append_str(&b, "}}}");
	buf_terminate(&b);
	return (char *)b.data;
}

static void *broker(void *p)
{
	struct thread_arg *a = p;
	char name[16], addr[32];
	struct client *c = harness_connect(a->s);

	snprintf(name, sizeof(name), "lb%d", a->idx);
	snprintf(addr, sizeof(addr), "10.2.0.%d:10911", a->idx);
	for (int i = 0; c && i < REGISTRATIONS; i++) {
		char *body = body_for(i + 1);
		struct remoting_ext_field ext[] = {
			{ "brokerName", name }, { "brokerAddr", addr }, { "clusterName", "LoadCluster" },
			{ "haServerAddr", "h:1" }, { "brokerId", "0" }, { "enableActingMaster", "false" },
		};
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		harness_request_init(&req, 103, i % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON);
		req.ext = ext;
		req.ext_count = 6;
		req.body = (const uint8_t *)body;
		req.body_len = (uint32_t)strlen(body);
		if (client_call(c, &req, &r, T) != 0 || r->cmd.code != 0)
			atomic_fetch_add(&broker_failures, 1);
		client_reply_free(r);
		free(body);
		if (i % 10 == 9) { /* the connection drops: the broker goes, then comes back */
			client_close(c);
			c = harness_connect(a->s);
		}
	}
	if (!c)
		atomic_fetch_add(&broker_failures, 1);
	client_close(c);
	return NULL;
}

static bool body_parses(const struct client_reply *r)
{
	int err = 0;
	json_t *j = json_body_parse(r->cmd.body, r->cmd.body_len, &err);
	json_decref(j);
	return j != NULL;
}

static void *client_thread(void *p)
{
	struct thread_arg *a = p;
	struct client *c = harness_connect(a->s);
	unsigned seed = (unsigned)a->idx;

	for (int i = 0; c && (i < 200 || !atomic_load(&brokers_done)) && i < 20000; i++) {
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		char topic[32];
		struct remoting_ext_field ext[1] = { { "topic", topic } };
		int code = rand_r(&seed) % 8 == 0 ? 106 : (rand_r(&seed) % 8 == 0 ? 206 : 105);

		snprintf(topic, sizeof(topic), "load-%d", rand_r(&seed) % (TOPICS + 2));
		harness_request_init(&req, code, rand_r(&seed) % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON);
		if (code == 105) {
			req.ext = ext;
			req.ext_count = 1;
			req.version = rand_r(&seed) % 2 ? 479 : 317;
		}
		if (client_call(c, &req, &r, T) != 0) {
			atomic_fetch_add(&client_failures, 1);
			break;
		}
		if (!(r->cmd.code == 0 && body_parses(r)) && !(code == 105 && r->cmd.code == 17))
			atomic_fetch_add(&client_failures, 1);
		client_reply_free(r);
		atomic_fetch_add(&answers, 1);
	}
	if (!c)
		atomic_fetch_add(&client_failures, 1);
	client_close(c);
	return NULL;
}

static int test_route_traffic(struct harness_server *s)
{
	pthread_t b[BROKERS], cl[CLIENTS];
	struct thread_arg ba[BROKERS], ca[CLIENTS];

	HARNESS_CHECK(harness_start(s, NULL) == 0, "boot");
	for (int i = 0; i < CLIENTS; i++) {
		ca[i] = (struct thread_arg){ s, i + 1 };
		pthread_create(&cl[i], NULL, client_thread, &ca[i]);
	}
	for (int i = 0; i < BROKERS; i++) {
		ba[i] = (struct thread_arg){ s, i + 1 };
		pthread_create(&b[i], NULL, broker, &ba[i]);
	}
	for (int i = 0; i < BROKERS; i++)
		pthread_join(b[i], NULL);
	atomic_store(&brokers_done, true);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(cl[i], NULL);
	HARNESS_CHECK(atomic_load(&broker_failures) == 0, "%d registrations failed", atomic_load(&broker_failures));
	HARNESS_CHECK(atomic_load(&client_failures) == 0, "%d bad answers", atomic_load(&client_failures));
	HARNESS_CHECK(atomic_load(&answers) >= CLIENTS * 200, "%ld answers", atomic_load(&answers));

	/* every broker connection is closed: the registry is empty again */
	struct client *c = harness_connect(s);
	HARNESS_CHECK(c != NULL, "connect");
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	bool empty = false;
	for (int tries = 0; tries < 100 && !empty; tries++) {
		harness_request_init(&req, 106, REMOTING_JSON);
		HARNESS_CHECK(client_call(c, &req, &r, T) == 0, "cluster info");
		empty = r->cmd.body_len == 44 &&
			memcmp(r->cmd.body, "{\"brokerAddrTable\":{},\"clusterAddrTable\":{}}", 44) == 0;
		client_reply_free(r);
		if (!empty) {
			struct timespec ts = { 0, 20 * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	client_close(c);
	HARNESS_CHECK(empty, "brokers of closed connections removed");
	return 0;
}

static const struct harness_test tests[] = {
	{ "route_traffic", test_route_traffic },
};

int main(int argc, char **argv)
{
	return harness_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
