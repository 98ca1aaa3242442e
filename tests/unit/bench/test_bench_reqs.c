/* rmqns-bench requests: the route request template against the encoder
 * and a captured Java frame, REGISTER_BROKER frames, plain and compressed
 * registration bodies, the masked body CRC, and naming. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <zlib.h>

#include "opts.h"
#include "reqs.h"
#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "rmqns/remoting.h"

/* protocol.md §2.3 A: GET_ROUTEINFO_BY_TOPIC "TopicTest", opaque 7, from a 5.3.3 Java client */
static const char java_105[] =
	"{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
	"\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";

Test(bench_reqs, route_template_reproduces_a_java_frame)
{
	struct reqs_route_tpl t;
	cr_assert_eq(reqs_route_tpl_init(&t, 479, 0), RMQNS_OK);
	cr_assert(t.spliced, "JSON requests are spliced from the template");
	struct buf b = BUF_INIT;
	cr_assert_eq(reqs_route_append(&t, "TopicTest", 7, &b), RMQNS_OK);
	size_t h = strlen(java_105);
	cr_assert_eq(b.len, 8 + h);
	cr_assert_eq(rd_be32(b.data), 4 + h);
	cr_assert_eq(rd_be32(b.data + 4), h);
	cr_assert_arr_eq(b.data + 8, java_105, h);
	buf_free(&b);
	reqs_route_tpl_free(&t);
}

static void check_route(const struct reqs_route_tpl *t, const char *topic, int32_t opaque, int ser)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(reqs_route_append(t, topic, opaque, &b), RMQNS_OK);
	/* a second request appended after the first: frames stay intact */
	cr_assert_eq(reqs_route_append(t, "Other-b0-t0", 1, &b), RMQNS_OK);
	size_t fs;
	cr_assert_eq(remoting_frame_cut(b.data, b.len, REMOTING_DEFAULT_MAX_FRAME, &fs), RMQNS_OK);
	struct remoting_cmd cmd;
	cr_assert_eq(remoting_decode(b.data, fs, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 105);
	cr_assert_eq(cmd.opaque, opaque);
	cr_assert_eq(cmd.version, t->version);
	cr_assert_eq(cmd.flag, 0);
	cr_assert_eq((int)cmd.serialize, ser);
	cr_assert_str_eq(remoting_ext_get(&cmd, "topic"), topic);
	remoting_cmd_release(&cmd);
	size_t fs2;
	cr_assert_eq(remoting_frame_cut(b.data + fs, b.len - fs, REMOTING_DEFAULT_MAX_FRAME, &fs2), RMQNS_OK);
	cr_assert_eq(fs + fs2, b.len);
	/* byte for byte what the encoder writes for the same command */
	struct remoting_ext_field ext = { "topic", topic };
	struct remoting_cmd want = { .code = 105, .language = LANG_JAVA, .version = t->version,
		.opaque = opaque, .ext = &ext, .ext_count = 1, .ext_present = true,
		.serialize = (enum remoting_serialize)ser };
	struct buf w = BUF_INIT;
	cr_assert_eq(remoting_encode(&want, &w), RMQNS_OK);
	cr_assert_eq(w.len, fs);
	cr_assert_arr_eq(w.data, b.data, fs);
	buf_free(&w);
	buf_free(&b);
}

Test(bench_reqs, route_requests_decode_for_any_opaque_and_topic)
{
	static const int32_t opaques[] = { 0, 7, 10, 12345, 999999999, 2147483647 };
	static const char *topics[] = { "T", "BenchTopic-b3-t42", "a-much-longer-topic-name-than-the-sentinel-x" };
	for (int ser = 0; ser < 2; ser++) {
		struct reqs_route_tpl t;
		cr_assert_eq(reqs_route_tpl_init(&t, ser ? 409 : 317, ser), RMQNS_OK);
		for (size_t i = 0; i < sizeof(opaques) / sizeof(opaques[0]); i++)
			for (size_t k = 0; k < sizeof(topics) / sizeof(topics[0]); k++)
				check_route(&t, topics[k], opaques[i], ser);
		reqs_route_tpl_free(&t);
	}
}

Test(bench_reqs, masked_crc)
{
	/* CRC-32 of "123456789" is CBF43926; the top bit is masked off */
	cr_assert_eq(reqs_body_crc((const uint8_t *)"123456789", 9), 0x4BF43926u);
	cr_assert_eq(reqs_body_crc(NULL, 0), 0);
}

Test(bench_reqs, topic_names)
{
	char n[REQS_NAME_MAX];
	cr_assert_eq(reqs_topic_name(n, sizeof(n), "P", LAYOUT_DISTINCT, 1, 2), RMQNS_OK);
	cr_assert_str_eq(n, "P-b1-t2");
	cr_assert_eq(reqs_topic_name(n, sizeof(n), "P", LAYOUT_SHARED, 1, 2), RMQNS_OK);
	cr_assert_str_eq(n, "P-t2");
	char small[6];
	cr_assert_eq(reqs_topic_name(small, sizeof(small), "Prefix", LAYOUT_SHARED, 0, 0), RMQNS_ETOOBIG);
}

static struct bench_opts opts_for(int32_t version, bool compressed)
{
	struct bench_opts o;
	memset(&o, 0, sizeof(o));
	o.version = version;
	o.compressed = compressed;
	o.broker_port = 30000;
	o.queues = 8;
	snprintf(o.cluster, sizeof(o.cluster), "C1");
	return o;
}

Test(bench_reqs, plain_register_frame_and_body)
{
	struct bench_opts o = opts_for(479, false);
	struct reqs_body_spec spec = { .topic_prefix = "T", .layout = LAYOUT_DISTINCT, .topics = 3,
				       .queues = 8, .compressed = false, .version = 479 };
	struct reqs_broker br;
	cr_assert_eq(reqs_broker_init(&br, &o, &spec, "bk", 2, true), RMQNS_OK);
	cr_assert_eq(br.nbodies, 2);
	struct buf f = BUF_INIT;
	cr_assert_eq(reqs_register_append(&br, 1, 77, &f), RMQNS_OK);
	cr_assert_eq(reqs_register_append(&br, 2, 78, &f), RMQNS_EINVAL);
	struct remoting_cmd cmd;
	cr_assert_eq(remoting_decode(f.data, f.len, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 103);
	cr_assert_eq(cmd.opaque, 77);
	cr_assert_eq(cmd.version, 479);
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerName"), "bk-2");
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerAddr"), "127.0.0.1:30002");
	cr_assert_str_eq(remoting_ext_get(&cmd, "haServerAddr"), "127.0.0.1:30003");
	cr_assert_str_eq(remoting_ext_get(&cmd, "clusterName"), "C1");
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerId"), "0");
	cr_assert_str_eq(remoting_ext_get(&cmd, "compressed"), "false");
	cr_assert_not_null(remoting_ext_get(&cmd, "enableActingMaster"));
	int64_t crc;
	cr_assert(remoting_ext_get_long(&cmd, "bodyCrc32", &crc));
	cr_assert_eq(cmd.body_len, br.body[1].len);
	cr_assert_eq((uint32_t)crc, (uint32_t)crc32(0, cmd.body, cmd.body_len) & 0x7FFFFFFFu);
	cr_assert_neq(crc, 0);

	int err = 0;
	json_t *body = json_body_parse(cmd.body, cmd.body_len, &err);
	cr_assert_not_null(body, "body parses (%d)", err);
	json_t *w = json_object_get(body, "topicConfigSerializeWrapper");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(w, "dataVersion"), "counter")), 2);
	json_t *table = json_object_get(w, "topicConfigTable");
	cr_assert_eq(json_object_size(table), 3);
	json_t *tc = json_object_get(table, "T-b2-t1");
	cr_assert_not_null(tc);
	cr_assert_str_eq(json_string_value(json_object_get(tc, "topicName")), "T-b2-t1");
	cr_assert_eq(json_integer_value(json_object_get(tc, "readQueueNums")), 8);
	cr_assert_eq(json_integer_value(json_object_get(tc, "writeQueueNums")), 8);
	cr_assert_eq(json_integer_value(json_object_get(tc, "perm")), 6);
	cr_assert(json_is_array(json_object_get(body, "filterServerList")));
	json_decref(body);
	remoting_cmd_release(&cmd);

	/* the other variant carries another data version */
	body = json_body_parse(br.body[0].data, br.body[0].len, &err);
	cr_assert_not_null(body);
	w = json_object_get(body, "topicConfigSerializeWrapper");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(w, "dataVersion"), "counter")), 1);
	json_decref(body);
	buf_free(&f);
	reqs_broker_free(&br);
}

static uint32_t take32(const uint8_t **p, const uint8_t *end)
{
	cr_assert_leq(*p + 4, end, "stream too short");
	uint32_t v = rd_be32(*p);
	*p += 4;
	return v;
}

static void check_compressed(int32_t version)
{
	struct bench_opts o = opts_for(version, true);
	struct reqs_body_spec spec = { .topic_prefix = "Z", .layout = LAYOUT_SHARED, .topics = 5,
				       .queues = 8, .compressed = true, .version = version };
	struct reqs_broker br;
	cr_assert_eq(reqs_broker_init(&br, &o, &spec, "bk", 0, false), RMQNS_OK);
	cr_assert_eq(br.nbodies, 1);
	const struct buf *z = &br.body[0];
	cr_assert_eq(z->data[0], 0x78, "zlib header");
	cr_assert_eq(z->data[1], 0xDA, "level 9, as Java writes it");
	cr_assert_eq(br.crc[0], (uint32_t)crc32(0, z->data, (uInt)z->len) & 0x7FFFFFFFu);
	uint8_t raw[4096];
	uLongf rawlen = sizeof(raw);
	cr_assert_eq(uncompress(raw, &rawlen, z->data, z->len), Z_OK);
	const uint8_t *p = raw, *end = raw + rawlen;
	uint32_t dvlen = take32(&p, end);
	json_t *dv = json_loadb((const char *)p, dvlen, 0, NULL);
	cr_assert_not_null(dv);
	cr_assert_eq(json_integer_value(json_object_get(dv, "counter")), 1);
	json_decref(dv);
	p += dvlen;
	cr_assert_eq(take32(&p, end), 5);
	for (int i = 0; i < 5; i++) {
		uint32_t n = take32(&p, end);
		char want[64];
		snprintf(want, sizeof(want), "Z-t%d 8 8 6 SINGLE_TAG {}", i);
		cr_assert_eq(n, strlen(want));
		cr_assert_arr_eq(p, want, n);
		p += n;
	}
	cr_assert_eq(take32(&p, end), 2);
	cr_assert_arr_eq(p, "[]", 2);
	p += 2;
	if (version >= 413)
		cr_assert_eq(take32(&p, end), 0, "empty static-topic mapping section");
	cr_assert_eq(p, end, "nothing after the last section");

	struct buf f = BUF_INIT;
	cr_assert_eq(reqs_register_append(&br, 0, 5, &f), RMQNS_OK);
	struct remoting_cmd cmd;
	cr_assert_eq(remoting_decode(f.data, f.len, &cmd), RMQNS_OK);
	cr_assert_str_eq(remoting_ext_get(&cmd, "compressed"), "true");
	cr_assert(remoting_ext_get_bool(&cmd, "compressed"));
	cr_assert_eq(cmd.body_len, z->len);
	cr_assert_arr_eq(cmd.body, z->data, z->len);
	remoting_cmd_release(&cmd);
	buf_free(&f);
	reqs_broker_free(&br);
}

Test(bench_reqs, compressed_body_layout_5x)
{
	check_compressed(479);
}

Test(bench_reqs, compressed_body_layout_4x)
{
	check_compressed(409);
}

Test(bench_reqs, simple_request)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(reqs_simple_append(REQ_GET_BROKER_CLUSTER_INFO, 9, 479, 1, &b), RMQNS_OK);
	struct remoting_cmd cmd;
	cr_assert_eq(remoting_decode(b.data, b.len, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 106);
	cr_assert_eq(cmd.opaque, 9);
	cr_assert_eq(cmd.serialize, REMOTING_ROCKETMQ);
	cr_assert_eq(cmd.body_len, 0);
	remoting_cmd_release(&cmd);
	buf_free(&b);
}

Test(bench_reqs, liveness_requests_of_a_broker)
{
	struct bench_opts o = opts_for(479, false);
	struct reqs_body_spec spec = { .topic_prefix = "T", .layout = LAYOUT_DISTINCT, .topics = 2,
				       .queues = 1, .compressed = false, .version = 479 };
	struct reqs_broker br;
	cr_assert_eq(reqs_broker_init(&br, &o, &spec, "hb", 1, false), RMQNS_OK);
	struct buf f = BUF_INIT;
	struct remoting_cmd cmd;

	/* 904: the three fields a 5.x broker fills in, no body */
	cr_assert_eq(reqs_heartbeat_append(&br, 5, &f), RMQNS_OK);
	cr_assert_eq(remoting_decode(f.data, f.len, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 904);
	cr_assert_eq(cmd.opaque, 5);
	cr_assert(!remoting_is_response(&cmd));
	cr_assert_str_eq(remoting_ext_get(&cmd, "clusterName"), "C1");
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerAddr"), br.addr);
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerName"), "hb-1");
	cr_assert_eq(cmd.body_len, 0);
	remoting_cmd_release(&cmd);

	/* 322: the identity and, as body, the data version of the registered body */
	f.len = 0;
	cr_assert_eq(reqs_query_dv_append(&br, 0, 6, &f), RMQNS_OK);
	cr_assert_eq(reqs_query_dv_append(&br, 1, 7, &f), RMQNS_EINVAL, "one body only");
	cr_assert_eq(remoting_decode(f.data, f.len, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 322);
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerName"), "hb-1");
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerAddr"), br.addr);
	cr_assert_str_eq(remoting_ext_get(&cmd, "clusterName"), "C1");
	cr_assert_str_eq(remoting_ext_get(&cmd, "brokerId"), "0");
	json_t *dv = json_loadb((const char *)cmd.body, cmd.body_len, 0, NULL);
	cr_assert_not_null(dv);
	int err = 0;
	json_t *body = json_body_parse(br.body[0].data, br.body[0].len, &err);
	cr_assert_not_null(body);
	json_t *reg = json_object_get(json_object_get(body, "topicConfigSerializeWrapper"), "dataVersion");
	cr_assert(json_equal(dv, reg), "322 carries the registered data version");
	cr_assert_eq(json_integer_value(json_object_get(dv, "counter")), 1);
	json_decref(dv);
	json_decref(body);
	remoting_cmd_release(&cmd);

	/* 100 */
	f.len = 0;
	cr_assert_eq(reqs_kv_put_append("NS", "k", "v 1", 8, 479, 1, &f), RMQNS_OK);
	cr_assert_eq(remoting_decode(f.data, f.len, &cmd), RMQNS_OK);
	cr_assert_eq(cmd.code, 100);
	cr_assert_eq(cmd.opaque, 8);
	cr_assert_eq(cmd.serialize, REMOTING_ROCKETMQ);
	cr_assert_str_eq(remoting_ext_get(&cmd, "namespace"), "NS");
	cr_assert_str_eq(remoting_ext_get(&cmd, "key"), "k");
	cr_assert_str_eq(remoting_ext_get(&cmd, "value"), "v 1");
	remoting_cmd_release(&cmd);
	buf_free(&f);
	reqs_broker_free(&br);
}

/* With credentials every frame carries AccessKey and a Signature that
 * the server's check accepts; the spliced route template stays spliced
 * and writes what the encoder writes for the signed command. */
static void expect_signed(const uint8_t *frame, size_t len, const struct acl_accounts *acc)
{
	struct remoting_cmd cmd;
	struct acl_ip ip;
	char remark[256];
	cr_assert_eq(remoting_decode(frame, len, &cmd), RMQNS_OK);
	cr_assert(acl_ip_of_peer("192.0.2.1:1", &ip));
	cr_assert_str_eq(remoting_ext_get(&cmd, ACL_EXT_ACCESS_KEY), "rocketmq2");
	cr_assert_eq(acl_check(acc, &cmd, &ip, true, remark, sizeof remark), ACL_PASS, "code %d: %s", cmd.code,
		     remark);
	remoting_cmd_release(&cmd);
}

Test(bench_reqs, signed_requests_verify)
{
	static const char yaml[] = "accounts:\n  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n";
	char err[256];
	struct acl_accounts *acc = acl_accounts_parse(yaml, sizeof yaml - 1, err, sizeof err);
	cr_assert_not_null(acc, "%s", err);
	reqs_set_credentials("rocketmq2", "12345678");

	for (int ser = 0; ser < 2; ser++) {
		struct reqs_route_tpl t;
		cr_assert_eq(reqs_route_tpl_init(&t, 479, ser), RMQNS_OK);
		cr_assert_eq(t.spliced, ser == 0, "JSON requests stay spliced when signed");
		static const char *topics[] = { "T", "BenchTopic-b3-t42", "a-much-longer-topic-name-than-the-sentinel-x" };
		for (size_t k = 0; k < sizeof topics / sizeof topics[0]; k++) {
			struct buf b = BUF_INIT;
			cr_assert_eq(reqs_route_append(&t, topics[k], 12345, &b), RMQNS_OK);
			expect_signed(b.data, b.len, acc);
			/* byte for byte the encoder's signed frame */
			struct remoting_ext_field ext = { "topic", topics[k] };
			struct remoting_cmd want = { .code = 105, .language = LANG_JAVA, .version = 479,
				.opaque = 12345, .ext = &ext, .ext_count = 1, .ext_present = true,
				.serialize = (enum remoting_serialize)ser };
			struct acl_signed s;
			cr_assert_eq(acl_sign_cmd(&want, "rocketmq2", "12345678", &s), 0);
			struct buf w = BUF_INIT;
			cr_assert_eq(remoting_encode(&want, &w), RMQNS_OK);
			cr_assert_eq(w.len, b.len);
			cr_assert_arr_eq(w.data, b.data, b.len);
			acl_signed_free(&s);
			buf_free(&w);
			buf_free(&b);
		}
		reqs_route_tpl_free(&t);
	}

	/* a registration: the head signed over the body sent after it */
	struct bench_opts o;
	memset(&o, 0, sizeof o);
	o.broker_port = 30000;
	o.version = 479;
	snprintf(o.cluster, sizeof o.cluster, "C");
	struct reqs_body_spec spec = { .topic_prefix = "T", .topics = 3, .queues = 2, .version = 479 };
	struct reqs_broker br;
	cr_assert_eq(reqs_broker_init(&br, &o, &spec, "b", 0, false), RMQNS_OK);
	struct buf f = BUF_INIT;
	cr_assert_eq(reqs_register_append(&br, 0, 1, &f), RMQNS_OK);
	expect_signed(f.data, f.len, acc);
	f.len = 0;
	cr_assert_eq(reqs_heartbeat_append(&br, 2, &f), RMQNS_OK);
	expect_signed(f.data, f.len, acc);
	f.len = 0;
	cr_assert_eq(reqs_kv_put_append("ns", "k", "v", 3, 479, 0, &f), RMQNS_OK);
	expect_signed(f.data, f.len, acc);
	f.len = 0;
	cr_assert_eq(reqs_simple_append(106, 4, 479, 1, &f), RMQNS_OK);
	expect_signed(f.data, f.len, acc);
	buf_free(&f);
	reqs_broker_free(&br);
	reqs_set_credentials(NULL, NULL);
	acl_accounts_free(acc);
}
