/* Route answers byte for byte against the captured Java ones: every
 * captured session is replayed at the registry level (registrations,
 * unregistrations, perms, deletes, heartbeats and expiry by the recorded
 * clock), and every recorded GET_ROUTEINFO_BY_TOPIC and
 * GET_BROKER_CLUSTER_INFO answer is compared with ours. 4.9.8 answers
 * lack the 5.x member "enableActingMaster", which rmqns always writes; the
 * comparison inserts it into the expected bytes and nothing else. */
#include "rmqns/race.h"
#include "route_test_util.h"

struct pending {
	int conn;
	int32_t opaque;
	struct tu_frame f;
};

struct session {
	const char *dir;
	bool java49;           /* expected bytes lack enableActingMaster */
	struct route_db *db;
	struct pending req[64];
	int n_req;
	bool order_enable;
	char order_topic[16][128];
	char order_value[16][128];
	int n_order;
	int compared_105, compared_106, compared_17;
};

static void keep_request(struct session *s, int conn, struct tu_frame *f)
{
	/* a small ring: answers follow their requests closely */
	struct pending *p = &s->req[s->n_req++ % 64];
	if (s->n_req > 64)
		tu_frame_free(&p->f);
	p->conn = conn;
	p->opaque = f->cmd.opaque;
	p->f = *f;
}

static struct tu_frame *find_request(struct session *s, int conn, int32_t opaque, int32_t code)
{
	int n = s->n_req < 64 ? s->n_req : 64;
	for (int i = 0; i < n; i++) {
		struct pending *p = &s->req[(s->n_req - 1 - i) % 64];
		if (p->conn == conn && p->opaque == opaque && p->f.cmd.code == code)
			return &p->f;
	}
	return NULL;
}

static void apply_register(struct session *s, const struct remoting_cmd *c, int conn, uint64_t now)
{
	struct regbody rb;
	char why[160];
	struct route_broker_reg reg;
	struct route_reg_result res;
	int64_t crc = 0, id = 0, timeout = 0;

	if (remoting_ext_get_long(c, "bodyCrc32", &crc))
		cr_assert(regbody_crc_matches(c->body, c->body_len, crc), "captured crc32 must match");
	cr_assert_eq(regbody_decode(c->body, c->body_len, remoting_ext_get_bool(c, "compressed"), c->version, 0,
				    &rb, why, sizeof(why)),
		     0, "%s: %s", s->dir, why);
	memset(&reg, 0, sizeof(reg));
	reg.cluster = remoting_ext_get(c, "clusterName");
	reg.name = remoting_ext_get(c, "brokerName");
	reg.addr = remoting_ext_get(c, "brokerAddr");
	reg.ha_addr = remoting_ext_get(c, "haServerAddr");
	cr_assert(remoting_ext_get_long(c, "brokerId", &id));
	reg.id = id;
	reg.new_style = remoting_ext_get(c, "enableActingMaster") != NULL;
	reg.acting_master = remoting_ext_get_bool(c, "enableActingMaster");
	reg.zone = remoting_ext_get(c, "__ZONE_NAME");
	if (remoting_ext_get_long(c, "heartbeatTimeoutMillis", &timeout))
		reg.timeout_ms = timeout;
	reg.conn_id = (uint64_t)conn;
	reg.body = &rb;
	cr_assert_eq(route_apply_register(s->db, &reg, now, &res), 0);
	route_reg_result_free(&res);
	regbody_free(&rb);
}

static void apply_request(struct session *s, const struct remoting_cmd *c, int conn, uint64_t now)
{
	const char *ns, *key, *val;
	struct data_version dv, st;
	bool known, changed;

	switch (c->code) {
	case 103:
		apply_register(s, c, conn, now);
		break;
	case 104:
		route_apply_unregister(s->db, remoting_ext_get(c, "clusterName"), remoting_ext_get(c, "brokerAddr"),
				       remoting_ext_get(c, "brokerName"), (uint64_t)conn);
		break;
	case 205:
	case 327:
		route_apply_write_perm(s->db, remoting_ext_get(c, "brokerName"), c->code == 327);
		break;
	case 216:
		route_apply_delete_topic(s->db, remoting_ext_get(c, "topic"), remoting_ext_get(c, "clusterName"));
		break;
	case 322:
		if (regbody_parse_data_version(c->body, c->body_len, &dv) == 0) {
			state_read_lock();
			route_query_data_version(s->db, remoting_ext_get(c, "clusterName"),
						 remoting_ext_get(c, "brokerAddr"), &dv, now, &known, &changed, &st);
			state_read_unlock();
		}
		break;
	case 904:
		state_read_lock();
		route_heartbeat(s->db, remoting_ext_get(c, "clusterName"), remoting_ext_get(c, "brokerAddr"), now);
		state_read_unlock();
		break;
	case 100:
		ns = remoting_ext_get(c, "namespace");
		key = remoting_ext_get(c, "key");
		val = remoting_ext_get(c, "value");
		if (ns && key && val && strcmp(ns, "ORDER_TOPIC_CONFIG") == 0 && s->n_order < 16) {
			snprintf(s->order_topic[s->n_order], 128, "%s", key);
			snprintf(s->order_value[s->n_order++], 128, "%s", val);
		}
		break;
	case 318:
		if (c->body && c->body_len >= 18 && memmem(c->body, c->body_len, "orderMessageEnable=", 19))
			s->order_enable = memmem(c->body, c->body_len, "orderMessageEnable=true", 23) != NULL;
		break;
	default:
		break;
	}
}

/* Expected body bytes, with the 5.x BrokerData member added for 4.9. */
static char *expected_body(const struct session *s, const struct remoting_cmd *c)
{
	struct buf b = BUF_INIT;
	const char *p = (const char *)c->body, *end = p + c->body_len;

	if (!s->java49) {
		buf_append(&b, p, c->body_len);
		return tu_text(&b);
	}
	while (p < end) {
		const char *k = memmem(p, (size_t)(end - p), "\"cluster\":\"", 11);
		if (!k) {
			buf_append(&b, p, (size_t)(end - p));
			break;
		}
		const char *q = memchr(k + 11, '"', (size_t)(end - k - 11));
		cr_assert(q);
		buf_append(&b, p, (size_t)(q + 1 - p));
		buf_append_str(&b, ",\"enableActingMaster\":false");
		p = q + 1;
	}
	return tu_text(&b);
}

static void check_route(struct session *s, const struct remoting_cmd *req, const struct remoting_cmd *rsp,
			const char *file)
{
	struct route_query q;
	memset(&q, 0, sizeof(q));
	q.topic = remoting_ext_get(req, "topic");
	q.form = req->version >= 401 || remoting_ext_get_bool(req, "acceptStandardJsonOnly") ? JW_STANDARD : JW_DEFAULT;
	for (int i = 0; s->order_enable && q.topic && i < s->n_order; i++)
		if (strcmp(s->order_topic[i], q.topic) == 0)
			q.order_conf = s->order_value[i];
	char *got = tu_route_q(s->db, &q);
	if (rsp->code == 17) {
		cr_expect_null(got, "%s %s: expected no route, got %s", s->dir, file, got);
		s->compared_17++;
	} else {
		cr_assert_eq(rsp->code, 0);
		char *want = expected_body(s, rsp);
		cr_expect(got != NULL, "%s %s: no route for %s", s->dir, file, q.topic);
		if (got)
			cr_expect_str_eq(got, want, "%s %s (topic %s)", s->dir, file, q.topic);
		free(want);
		s->compared_105++;
	}
	free(got);
}

static void check_cluster_info(struct session *s, const struct remoting_cmd *rsp, const char *file)
{
	char *want = expected_body(s, rsp);
	char *got = tu_cluster_info(s->db);
	cr_expect_str_eq(got, want, "%s %s", s->dir, file);
	free(got);
	free(want);
	s->compared_106++;
}

static void replay(struct session *s)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s/index.jsonl", TESTDATA_DIR, s->dir);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	char *line = NULL;
	size_t cap = 0;

	while (getline(&line, &cap, f) > 0) {
		json_error_t e;
		json_t *rec = json_loads(line, 0, &e);
		cr_assert(rec, "%s: %s", path, e.text);
		const char *file = json_string_value(json_object_get(rec, "file"));
		int conn = (int)json_integer_value(json_object_get(rec, "conn"));
		uint64_t now = (uint64_t)(json_real_value(json_object_get(rec, "ts")) * 1000.0);
		bool response = json_is_true(json_object_get(rec, "is_response"));
		char rel[1024];
		struct tu_frame fr;

		route_apply_expire(s->db, now);
		snprintf(rel, sizeof(rel), "%s/%s", s->dir, file);
		tu_frame_load(&fr, rel);
		if (!response) {
			/* Java applies a change somewhere between a request and
			 * its answer, while other connections' requests run in
			 * parallel; answered changes are applied when their
			 * answer was sent, one-way ones on arrival. */
			if (remoting_is_oneway(&fr.cmd))
				apply_request(s, &fr.cmd, conn, now);
			keep_request(s, conn, &fr);
		} else {
			int rcode = (int)json_integer_value(json_object_get(rec, "request_code"));
			struct tu_frame *rq = find_request(s, conn, fr.cmd.opaque, rcode);
			cr_assert(rq, "%s: no request for %s", s->dir, file);
			apply_request(s, &rq->cmd, conn, now);
			if (rcode == 105)
				check_route(s, &rq->cmd, &fr.cmd, file);
			else if (rcode == 106)
				check_cluster_info(s, &fr.cmd, file);
			tu_frame_free(&fr);
		}
		json_decref(rec);
	}
	free(line);
	fclose(f);
	for (int i = 0; i < (s->n_req < 64 ? s->n_req : 64); i++)
		tu_frame_free(&s->req[i].f);
}

static void run(const char *dir, bool java49, int min105, int min106)
{
	struct session *s = calloc(1, sizeof(*s));
	rcu_register_thread();
	s->dir = dir;
	s->java49 = java49;
	s->db = route_db_create(0);
	replay(s);
	cr_expect_geq(s->compared_105, min105, "%s: %d route answers compared", dir, s->compared_105);
	cr_expect_geq(s->compared_106, min106, "%s: %d cluster answers compared", dir, s->compared_106);
	route_db_destroy(s->db);
	rcu_unregister_thread();
	free(s);
}

Test(route_body, java_4_9_8_session)
{
	run("java-4.9.8", true, 30, 5);
}

Test(route_body, java_5_1_4_basic_session)
{
	run("java-5.1.4/s1-basic", false, 10, 10);
}

Test(route_body, java_5_1_4_acting_master_session)
{
	run("java-5.1.4/s2-acting-master", false, 30, 20);
}
