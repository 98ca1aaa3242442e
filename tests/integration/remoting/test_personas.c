/* Client personas against the real binary: requests built byte for byte as
 * each client family writes them (protocol.md §2.4-§2.5, §10), and answers
 * checked in the form that client parses - the header bytes, the header
 * word, the route body's form - not only the code.
 *
 *   Java 5.x client    version 479; JSON header, and ROCKETMQ binary header
 *   Go v2 client       version 317, "remark":"", language "GO" or 9,
 *                      "extFields":null, ext values as strings
 *   C++ 2.2.0 client   version 333, "CPP", a "\n" after the header, opaque
 *                      from 0, AccessKey "", OnsChannel ALIYUN, Signature;
 *                      reads the whole header word as the header length,
 *                      drops answers without the response flag, aborts on
 *                      quoted numbers in a route body
 *   Java 5.1.4 broker  version 441, enableActingMaster,
 *                      heartbeatTimeoutMillis, one-way 322/904 and 901 every
 *                      second, a zlib body flagged compressed=false
 *   ali-ons (Node)     version 121, ext values as JSON numbers and booleans;
 *                      reads the header word as the header length too */
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <zlib.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"

#ifndef TESTDATA_DIR
#error "TESTDATA_DIR must name tests/data"
#endif

#define T HARNESS_IO_TIMEOUT_MS

/* The synthetic broker group every test registers: a master and a slave of
 * broker-a in cluster C1 (nothing listens at these addresses; the
 * NameServer never dials them). */
#define MASTER "127.0.0.1:30911"
#define SLAVE "127.0.0.1:30921"
#define CLUSTER "C1"
#define GROUP "broker-a"

SERVER_SUITE(personas, .timeout = 120);

/* ---- frames as the clients write them ---- */

/* A frame with a JSON header of exactly the given text. */
static void json_frame(struct buf *out, const char *header, const void *body, size_t body_len)
{
	size_t h = strlen(header);
	buf_reset(out);
	cr_assert_eq(buf_put_be32(out, (uint32_t)(4 + h + body_len)), 0);
	cr_assert_eq(buf_put_be32(out, (uint32_t)h), 0); /* serialize type 0: JSON */
	cr_assert_eq(buf_append(out, header, h), 0);
	if (body_len)
		cr_assert_eq(buf_append(out, body, body_len), 0);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, f);
	cr_assert_geq(vasprintf(&s, f, ap), 0);
	va_end(ap);
	return s;
}

/* Sends bytes as they are and returns the next frame on the connection,
 * which must carry `opaque` (one connection, one request at a time: the
 * next frame is this request's answer, never an answer to a one-way). */
static struct client_reply *exchange(struct client *c, const struct buf *frame, int32_t opaque)
{
	struct client_reply *r = NULL;
	cr_assert_eq(client_send_raw(c, frame->data, frame->len, T), 0, "send");
	int rc = client_recv(c, &r, T);
	cr_assert_eq(rc, 0, "no answer to opaque %d (%s)", opaque, rmqns_strerror(rc));
	cr_assert_eq(r->cmd.opaque, opaque, "the next frame answers opaque %d, not %d", r->cmd.opaque, opaque);
	return r;
}

static void send_oneway(struct client *c, const struct buf *frame)
{
	cr_assert_eq(client_send_raw(c, frame->data, frame->len, T), 0, "send one-way");
}

/* The header word of an answer, its header text and its body text. */
static uint32_t header_word(const struct client_reply *r)
{
	return rd_be32(r->frame + 4);
}

static char *header_text(const struct client_reply *r)
{
	uint32_t h = header_word(r) & 0xFFFFFF;
	return strndup((const char *)r->frame + 8, h);
}

static char *body_text(const struct client_reply *r)
{
	return strndup(r->cmd.body ? (const char *)r->cmd.body : "", r->cmd.body_len);
}

/* A JSON answer header, byte for byte: Java's key order, no blanks. */
static void expect_header(const struct client_reply *r, const char *want)
{
	char *got = header_text(r);
	cr_expect_eq(header_word(r) >> 24, 0, "answered in JSON (header word %08x)", header_word(r));
	cr_expect_str_eq(got, want, "answer header");
	free(got);
}

static void expect_body(const struct client_reply *r, const char *want)
{
	char *got = body_text(r);
	cr_expect_str_eq(got, want, "answer body");
	free(got);
}

/* Sends a request whose JSON header is the text h (freed here), no body,
 * and returns its answer. */
static struct client_reply *ask(struct client *c, struct buf *f, char *h, int32_t opaque)
{
	json_frame(f, h, NULL, 0);
	free(h);
	return exchange(c, f, opaque);
}

/* The same, checking the answer header byte for byte. */
static void ask_expect_header(struct client *c, struct buf *f, char *h, int32_t opaque, const char *want)
{
	struct client_reply *r = ask(c, f, h, opaque);
	expect_header(r, want);
	client_reply_free(r);
}

/* ---- the Java 5.1.4 broker persona ---- */

/* RegisterBrokerBody (plain) as a 5.1.4 broker writes it. */
static char *registration_body(const char *topics_json, int64_t counter)
{
	return fmt("{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":%lld,"
		   "\"stateVersion\":0,\"timestamp\":1795942738472},\"mappingDataVersion\":{\"counter\":0,"
		   "\"stateVersion\":0,\"timestamp\":1795942749406},\"topicConfigTable\":{%s}}}",
		   (long long)counter, topics_json);
}

static char *topic_config(const char *name, int read, int write, int perm)
{
	return fmt("\"%s\":{\"attributes\":{},\"order\":false,\"perm\":%d,\"readQueueNums\":%d,"
		   "\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"%s\",\"topicSysFlag\":0,\"writeQueueNums\":%d}",
		   name, perm, read, name, write);
}

/* The topics of broker-a: TopicTest (4 queues, rw) and TBW102. */
static char *group_topics(void)
{
	char *a = topic_config("TopicTest", 4, 4, 6), *b = topic_config("TBW102", 8, 8, 7);
	char *s = fmt("%s,%s", a, b);
	free(a);
	free(b);
	return s;
}

/* REGISTER_BROKER exactly as a 5.1.4 broker with acting master on sends it
 * (the captured s2-acting-master frames): ext keys in its hash order,
 * values as strings, a real CRC. */
static struct client_reply *register_broker(struct client *c, const char *addr, int id, int32_t opaque)
{
	char *topics = group_topics();
	char *body = registration_body(topics, 1);
	uint32_t crc = (uint32_t)crc32(0, (const Bytef *)body, (uInt)strlen(body)) & 0x7FFFFFFFu;
	char ha[64];
	snprintf(ha, sizeof ha, "%.*s%d", (int)(strrchr(addr, ':') - addr + 1), addr,
		 atoi(strrchr(addr, ':') + 1) + 1);
	char *hdr = fmt("{\"code\":103,\"extFields\":{\"heartbeatTimeoutMillis\":\"10000\",\"brokerId\":\"%d\","
			"\"bodyCrc32\":\"%u\",\"clusterName\":\"" CLUSTER "\",\"brokerAddr\":\"%s\","
			"\"enableActingMaster\":\"true\",\"haServerAddr\":\"%s\",\"compressed\":\"false\","
			"\"brokerName\":\"" GROUP "\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":%d,"
			"\"serializeTypeCurrentRPC\":\"JSON\",\"version\":441}",
			id, crc, addr, ha, opaque);
	struct buf f = BUF_INIT;
	json_frame(&f, hdr, body, strlen(body));
	struct client_reply *r = exchange(c, &f, opaque);
	cr_assert_eq(r->cmd.code, 0, "REGISTER_BROKER of %s: code %d (%s)", addr, r->cmd.code,
		     r->cmd.remark ? r->cmd.remark : "");
	buf_free(&f);
	free(hdr);
	free(body);
	free(topics);
	return r;
}

/* Boots the server and registers master then slave, each over its own
 * connection as real brokers do; the connections stay open (closing them
 * would unregister the brokers). */
static struct client *brokers[2];

static void start_with_group(const char *const *args)
{
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
	brokers[0] = harness_connect_or_fail(&srv);
	brokers[1] = harness_connect_or_fail(&srv);
	client_reply_free(register_broker(brokers[0], MASTER, 0, 0));
	client_reply_free(register_broker(brokers[1], SLAVE, 1, 0));
}

/* A test's own client of the group and the buffer its frames are built in. */
static struct client *c;
static struct buf f = BUF_INIT;

static void start_with_client(void)
{
	start_with_group(NULL);
	c = harness_connect_or_fail(&srv);
}

static void close_group(void)
{
	buf_free(&f);
	if (c) {
		client_close(c);
		c = NULL;
	}
	for (int i = 0; i < 2; i++)
		if (brokers[i]) {
			client_close(brokers[i]);
			brokers[i] = NULL;
		}
}

/* The route of TopicTest in both forms (§5.1, §5.7). */
#define ROUTE_STANDARD                                                                                   \
	"{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"" MASTER "\",\"1\":\"" SLAVE "\"},\"brokerName\":\"" GROUP \
	"\",\"cluster\":\"" CLUSTER "\",\"enableActingMaster\":true}],\"filterServerTable\":{},\"queueDatas\":" \
	"[{\"brokerName\":\"" GROUP "\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}"
#define ROUTE_DEFAULT                                                                                    \
	"{\"brokerDatas\":[{\"brokerAddrs\":{0:\"" MASTER "\",1:\"" SLAVE "\"},\"brokerName\":\"" GROUP        \
	"\",\"cluster\":\"" CLUSTER "\",\"enableActingMaster\":true}],\"filterServerTable\":{},\"queueDatas\":" \
	"[{\"brokerName\":\"" GROUP "\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}]}"

#define OK_HEADER(opaque) \
	"{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":" #opaque ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}"

/* ================= Java 5.x clients ================= */

/* protocol.md §2.3 A: a 5.3.3 client's GET_ROUTEINFO_BY_TOPIC, 139 bytes. */
static const char JAVA5_ROUTE_JSON_HEADER[] =
	"{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":7,"
	"\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";

/* protocol.md §2.3 B: the same request with a ROCKETMQ header, 49 bytes. */
static const uint8_t JAVA5_ROUTE_BINARY[] = {
	0x00, 0x00, 0x00, 0x2d, 0x01, 0x00, 0x00, 0x29, 0x00, 0x69, 0x00, 0x01, 0xdf, 0x00, 0x00, 0x00,
	0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x05, 0x74,
	0x6f, 0x70, 0x69, 0x63, 0x00, 0x00, 0x00, 0x09, 0x54, 0x6f, 0x70, 0x69, 0x63, 0x54, 0x65, 0x73,
	0x74,
};

Test(personas, java5_json_route_is_standard_json)
{
	start_with_client();
	json_frame(&f, JAVA5_ROUTE_JSON_HEADER, NULL, 0);
	cr_assert_eq(f.len, 139, "the §2.3 A example is 139 bytes");
	struct client_reply *r = exchange(c, &f, 7);
	expect_header(r, OK_HEADER(7));
	expect_body(r, ROUTE_STANDARD);
	cr_expect_eq(rd_be32(r->frame), r->frame_len - 4, "frame length");
	client_reply_free(r);
	close_group();
}

Test(personas, java5_binary_route_is_answered_in_binary)
{
	start_with_client();
	cr_assert_eq(buf_append(&f, JAVA5_ROUTE_BINARY, sizeof JAVA5_ROUTE_BINARY), 0);
	struct client_reply *r = exchange(c, &f, 7);
	/* code 0, JAVA, version 479, opaque 7, flag 1, no remark, no ext */
	static const uint8_t want_header[] = {
		0x00, 0x00, 0x00, 0x01, 0xdf, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	cr_expect_eq(header_word(r), (1u << 24) | sizeof want_header, "header word %08x", header_word(r));
	cr_assert_geq(r->frame_len, 8 + sizeof want_header);
	cr_expect_arr_eq(r->frame + 8, want_header, sizeof want_header, "binary answer header");
	expect_body(r, ROUTE_STANDARD);
	client_reply_free(r);
	close_group();
}

/* A binary ext section: keyLen int16, key, valLen int32, value. */
static void bin_ext(struct buf *b, const char *k, const char *v)
{
	cr_assert_eq(buf_put_be16(b, (uint16_t)strlen(k)), 0);
	cr_assert_eq(buf_append_str(b, k), 0);
	cr_assert_eq(buf_put_be32(b, (uint32_t)strlen(v)), 0);
	cr_assert_eq(buf_append_str(b, v), 0);
}

static void bin_request(struct buf *f, uint16_t code, int32_t opaque, const char *const *kv)
{
	struct buf ext = BUF_INIT, h = BUF_INIT;
	for (size_t i = 0; kv[i]; i += 2)
		bin_ext(&ext, kv[i], kv[i + 1]);
	cr_assert_eq(buf_put_be16(&h, code), 0);
	cr_assert_eq(buf_putc(&h, 0), 0); /* JAVA */
	cr_assert_eq(buf_put_be16(&h, 479), 0);
	cr_assert_eq(buf_put_be32(&h, (uint32_t)opaque), 0);
	cr_assert_eq(buf_put_be32(&h, 0), 0); /* flag */
	cr_assert_eq(buf_put_be32(&h, 0), 0); /* no remark */
	cr_assert_eq(buf_put_be32(&h, (uint32_t)ext.len), 0);
	cr_assert_eq(buf_append(&h, ext.data, ext.len), 0);
	buf_reset(f);
	cr_assert_eq(buf_put_be32(f, (uint32_t)(4 + h.len)), 0);
	cr_assert_eq(buf_put_be32(f, (1u << 24) | (uint32_t)h.len), 0);
	cr_assert_eq(buf_append(f, h.data, h.len), 0);
	buf_free(&ext);
	buf_free(&h);
}

Test(personas, java5_binary_kv_answer_carries_binary_ext)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	c = harness_connect_or_fail(&srv);

	bin_request(&f, 100, 0, (const char *const[]){ "namespace", "NS", "key", "k", "value", "v1", NULL });
	struct client_reply *r = exchange(c, &f, 0);
	static const uint8_t put_ok[] = {
		0x00, 0x00, 0x00, 0x01, 0xdf, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	cr_expect_eq(r->frame_len, 8 + sizeof put_ok, "PUT answer is %zu bytes", r->frame_len);
	cr_expect_eq(header_word(r), (1u << 24) | sizeof put_ok);
	cr_expect_arr_eq(r->frame + 8, put_ok, sizeof put_ok);
	client_reply_free(r);

	bin_request(&f, 101, 1, (const char *const[]){ "namespace", "NS", "key", "k", NULL });
	r = exchange(c, &f, 1);
	/* ... the same with ext {value: v1}: 2+5+4+2 = 13 bytes of ext */
	static const uint8_t get_ok[] = {
		0x00, 0x00, 0x00, 0x01, 0xdf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0d,
		0x00, 0x05, 'v', 'a', 'l', 'u', 'e', 0x00, 0x00, 0x00, 0x02, 'v', '1',
	};
	cr_expect_eq(r->frame_len, 8 + sizeof get_ok, "GET answer is %zu bytes", r->frame_len);
	cr_expect_eq(header_word(r), (1u << 24) | sizeof get_ok);
	cr_expect_arr_eq(r->frame + 8, get_ok, sizeof get_ok);
	client_reply_free(r);
	close_group();
}

/* ================= Go (rocketmq-client-go v2) ================= */

/* Go marshals its RemotingCommand struct in field order, remark always
 * (""), a nil ext map as null; language "GO" (v2.1) or the ordinal 9
 * (older v2 releases). Values are map[string]string. */
static char *go_header(int code, const char *language, int32_t opaque, const char *ext)
{
	return fmt("{\"code\":%d,\"language\":%s,\"version\":317,\"opaque\":%d,\"flag\":0,\"remark\":\"\","
		   "\"extFields\":%s}",
		   code, language, opaque, ext);
}

static void go_route(const char *language)
{
	start_with_client();
	struct client_reply *r = ask(c, &f, go_header(105, language, 1, "{\"topic\":\"TopicTest\"}"), 1);
	/* Version 317 < 401: fastjson's default form, which Go splits by hand
	 * (integer broker ids unquoted). */
	expect_header(r, OK_HEADER(1));
	expect_body(r, ROUTE_DEFAULT);
	client_reply_free(r);

	/* code 17 for an unknown topic: Go falls back to TBW102 on it */
	r = ask(c, &f, go_header(105, language, 2, "{\"topic\":\"NoSuchTopic\"}"), 2);
	expect_header(r, "{\"code\":17,\"flag\":1,\"language\":\"JAVA\",\"opaque\":2,\"remark\":\"No topic route info in "
			 "name server for the topic: NoSuchTopic\\nSee https://rocketmq.apache.org/docs/bestPractice/"
			 "06FAQ for further details.\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	cr_expect_eq(r->cmd.body_len, 0);
	client_reply_free(r);
	close_group();
}

Test(personas, go_language_by_name)
{
	go_route("\"GO\"");
}

Test(personas, go_language_by_ordinal)
{
	go_route("9");
}

Test(personas, go_ext_values_come_back_as_strings)
{
	start_with_client();
	struct client_reply *r;

	/* "extFields":null (a nil map): cluster info, default form */
	r = ask(c, &f, go_header(106, "\"GO\"", 1, "null"), 1);
	expect_header(r, OK_HEADER(1));
	expect_body(r, "{\"brokerAddrTable\":{\"" GROUP "\":{\"brokerAddrs\":{0:\"" MASTER "\",1:\"" SLAVE
		       "\"},\"brokerName\":\"" GROUP "\",\"cluster\":\"" CLUSTER "\",\"enableActingMaster\":true}},"
		       "\"clusterAddrTable\":{\"" CLUSTER "\":[\"" GROUP "\"]}}");
	client_reply_free(r);

	/* Every answer ext value is a JSON string: Go decodes map[string]string. */
	ask_expect_header(c, &f, go_header(205, "\"GO\"", 2, "{\"brokerName\":\"" GROUP "\"}"), 2,
			  "{\"code\":0,\"extFields\":{\"wipeTopicCount\":\"2\"},\"flag\":1,\"language\":\"JAVA\","
			 "\"opaque\":2,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");

	ask_expect_header(c, &f, go_header(327, "\"GO\"", 3, "{\"brokerName\":\"" GROUP "\"}"), 3,
			  "{\"code\":0,\"extFields\":{\"addTopicCount\":\"2\"},\"flag\":1,\"language\":\"JAVA\","
			 "\"opaque\":3,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");

	ask_expect_header(c, &f, go_header(100, "\"GO\"", 4, "{\"namespace\":\"NS\",\"key\":\"n\",\"value\":\"12\"}"), 4,
			  OK_HEADER(4));

	ask_expect_header(c, &f, go_header(101, "\"GO\"", 5, "{\"namespace\":\"NS\",\"key\":\"n\"}"), 5,
			  "{\"code\":0,\"extFields\":{\"value\":\"12\"},\"flag\":1,\"language\":\"JAVA\","
			 "\"opaque\":5,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");

	/* a KV miss: code 22, the remark Go returns as the error text */
	ask_expect_header(c, &f, go_header(101, "\"GO\"", 6, "{\"namespace\":\"NS\",\"key\":\"missing\"}"), 6,
			  "{\"code\":22,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\",\"opaque\":6,"
			 "\"remark\":\"No config item, Namespace: NS Key: missing\",\"serializeTypeCurrentRPC\":\"JSON\","
			 "\"version\":479}");
	close_group();
}

/* ================= C++ 2.2.0 ================= */

/* jsoncpp's FastWriter: keys sorted, a newline at the end. The client adds
 * the ACL fields to every request (empty AccessKey without credentials)
 * and stamps each with a Signature over the other values. */
static char *cpp_header(int code, int32_t opaque, const char *ext)
{
	return fmt("{\"code\":%d,\"extFields\":{\"AccessKey\":\"\",\"OnsChannel\":\"ALIYUN\","
		   "\"Signature\":\"kq3rB9tOMB3J9D0wVdPWQ2nS7mU=\"%s%s},\"flag\":0,\"language\":\"CPP\","
		   "\"opaque\":%d,\"remark\":\"\",\"version\":333}\n",
		   code, *ext ? "," : "", ext, opaque);
}

/* What the C++ reader needs of an answer: the whole header word is the
 * header length (so the serialization byte must be 0: JSON), the response
 * flag is set, code and flag are JSON numbers. */
static void expect_cpp_readable(const struct client_reply *r)
{
	uint32_t word = header_word(r);
	cr_expect_eq(word >> 24, 0, "serialization byte %u: the C++ client takes the word %08x as the length",
		     word >> 24, word);
	cr_expect_eq(8 + (size_t)word + r->cmd.body_len, r->frame_len, "header word = header length");
	cr_expect(r->cmd.flag & REMOTING_FLAG_RESPONSE, "response flag");
	char *h = header_text(r);
	cr_expect(strstr(h, "\"flag\":1,"), "flag written as the number 1: %s", h);
	cr_expect(strncmp(h, "{\"code\":", 8) == 0 && h[8] >= '0' && h[8] <= '9', "code is a number: %s", h);
	json_error_t e;
	json_t *j = json_loads(h, 0, &e);
	cr_expect_not_null(j, "strict JSON header: %s (%s)", h, e.text);
	json_decref(j);
	free(h);
}

/* No number in a route body is quoted: jsoncpp's asInt() on a string
 * aborts the C++ client. Checked on the text (any "member":"digits") and
 * on the parsed members the client reads with asInt(). */
static void expect_no_quoted_numbers(const struct client_reply *r)
{
	char *body = body_text(r);
	regex_t re;
	cr_assert_eq(regcomp(&re, "\"[A-Za-z]+\":\"-?[0-9]+\"", REG_EXTENDED), 0);
	regmatch_t m;
	cr_expect_neq(regexec(&re, body, 1, &m, 0), 0, "a quoted number in the route body at %.*s",
		      (int)(m.rm_eo - m.rm_so), body + m.rm_so);
	regfree(&re);

	int err = 0;
	json_t *j = json_body_parse(r->cmd.body, r->cmd.body_len, &err);
	cr_assert_not_null(j, "route body does not parse: %s", body);
	size_t i;
	json_t *q;
	json_array_foreach(json_object_get(j, "queueDatas"), i, q) {
		static const char *const num[] = { "perm", "readQueueNums", "writeQueueNums", "topicSysFlag" };
		for (size_t k = 0; k < sizeof num / sizeof num[0]; k++)
			cr_expect(json_is_integer(json_object_get(q, num[k])), "queueDatas[%zu].%s is a number", i,
				  num[k]);
	}
	cr_expect_gt(json_array_size(json_object_get(j, "queueDatas")), 0);
	json_decref(j);
	free(body);
}

Test(personas, cpp_route_in_json_with_numbers_and_response_flag)
{
	start_with_client();

	/* The C++ client numbers its requests from 0. */
	struct client_reply *r = ask(c, &f, cpp_header(105, 0, "\"topic\":\"TopicTest\""), 0);
	expect_cpp_readable(r);
	expect_header(r, OK_HEADER(0));
	expect_body(r, ROUTE_DEFAULT); /* version 333 < 401 */
	expect_no_quoted_numbers(r);
	client_reply_free(r);

	r = ask(c, &f, cpp_header(105, 1, "\"topic\":\"TBW102\""), 1);
	expect_cpp_readable(r);
	expect_no_quoted_numbers(r);
	char *tbw = body_text(r);
	cr_expect(strstr(tbw, "\"perm\":7,\"readQueueNums\":8,"), "TBW102 queues: %s", tbw);
	free(tbw);
	client_reply_free(r);

	/* An unknown topic: code 17, JSON, with the flag; no body. */
	r = ask(c, &f, cpp_header(105, 2, "\"topic\":\"NoSuchTopic\""), 2);
	expect_cpp_readable(r);
	cr_expect_eq(r->cmd.code, 17);
	cr_expect_eq(r->cmd.body_len, 0);
	client_reply_free(r);

	/* The KV calls it makes (the signature covers namespace and key). */
	r = ask(c, &f, cpp_header(100, 3, "\"key\":\"ck\",\"namespace\":\"CNS\",\"value\":\"cv\""), 3);
	expect_cpp_readable(r);
	expect_header(r, OK_HEADER(3));
	client_reply_free(r);
	r = ask(c, &f, cpp_header(101, 4, "\"key\":\"ck\",\"namespace\":\"CNS\""), 4);
	expect_cpp_readable(r);
	expect_header(r, "{\"code\":0,\"extFields\":{\"value\":\"cv\"},\"flag\":1,\"language\":\"JAVA\","
			 "\"opaque\":4,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	client_reply_free(r);
	close_group();
}

Test(personas, cpp_cluster_info_has_no_quoted_numbers)
{
	start_with_client();
	struct client_reply *r = ask(c, &f, cpp_header(106, 0, ""), 0);
	expect_cpp_readable(r);
	char *body = body_text(r);
	cr_expect(strstr(body, "\"brokerAddrs\":{0:\"" MASTER "\",1:\"" SLAVE "\"}"), "%s", body);
	free(body);
	client_reply_free(r);
	close_group();
}

/* ================= Java 5.1.4 brokers ================= */

static char *qdv_header(const char *addr, int id, int32_t opaque, int flag)
{
	return fmt("{\"code\":322,\"extFields\":{\"brokerId\":\"%d\",\"clusterName\":\"" CLUSTER "\","
		   "\"brokerAddr\":\"%s\",\"brokerName\":\"" GROUP "\"},\"flag\":%d,\"language\":\"JAVA\","
		   "\"opaque\":%d,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":441}",
		   id, addr, flag, opaque);
}

static const char DATA_VERSION[] = "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1795942738472}";

Test(personas, broker_5_1_4_acting_master_rounds)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	brokers[0] = harness_connect_or_fail(&srv);
	brokers[1] = harness_connect_or_fail(&srv);

	/* A slave registering before its master: no master to name yet. */
	struct client_reply *r = register_broker(brokers[1], SLAVE, 1, 0);
	expect_header(r, "{\"code\":0,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\",\"opaque\":0,"
			 "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	client_reply_free(r);
	r = register_broker(brokers[0], MASTER, 0, 29);
	expect_header(r, "{\"code\":0,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\",\"opaque\":29,"
			 "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	client_reply_free(r);
	/* The slave's next registration learns its master's addresses. */
	r = register_broker(brokers[1], SLAVE, 1, 1);
	cr_expect_str_eq(remoting_ext_get(&r->cmd, "masterAddr"), MASTER);
	cr_expect_str_eq(remoting_ext_get(&r->cmd, "haServerAddr"), "127.0.0.1:30912");
	client_reply_free(r);

	/* Three one-second rounds, as the brokers run them: the master's
	 * one-way QUERY_DATA_VERSION (old-NameServer mode), the slave's one-way
	 * BROKER_HEARTBEAT (new mode, no brokerId), and each one's
	 * GET_BROKER_MEMBER_GROUP. No one-way is answered: the next frame on
	 * each connection is the answer to its 901. */
	const char *member_body = "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"" MASTER "\",1:\"" SLAVE
				  "\"},\"brokerName\":\"" GROUP "\",\"cluster\":\"" CLUSTER "\"}}";
	int32_t opaque = 100;
	for (int round = 0; round < 3; round++) {
		char *h = qdv_header(MASTER, 0, opaque++, 2);
		json_frame(&f, h, DATA_VERSION, strlen(DATA_VERSION));
		send_oneway(brokers[0], &f);
		free(h);
		h = fmt("{\"code\":904,\"extFields\":{\"clusterName\":\"" CLUSTER "\",\"brokerAddr\":\"" SLAVE "\","
			"\"brokerName\":\"" GROUP "\"},\"flag\":2,\"language\":\"JAVA\",\"opaque\":%d,"
			"\"serializeTypeCurrentRPC\":\"JSON\",\"version\":441}",
			opaque++);
		json_frame(&f, h, NULL, 0);
		send_oneway(brokers[1], &f);
		free(h);
		for (int b = 0; b < 2; b++) {
			int32_t o = opaque++;
			r = ask(brokers[b], &f, fmt("{\"code\":901,\"extFields\":{\"clusterName\":\"" CLUSTER "\",\"brokerName\":\"" GROUP
				"\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":%d,\"serializeTypeCurrentRPC\":\"JSON\","
				"\"version\":441}",
				o), o);
			/* the 5.x answer, remark included (protocol.md §4 901) */
			char *want = fmt("{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":%d,\"remark\":"
					 "\"not set any response code\",\"serializeTypeCurrentRPC\":\"JSON\","
					 "\"version\":479}",
					 o);
			expect_header(r, want);
			expect_body(r, member_body);
			free(want);
			client_reply_free(r);
		}
		if (round < 2)
			harness_sleep_ms(1000);
	}

	/* A two-way QUERY_DATA_VERSION with the registered version: unchanged. */
	char *h = qdv_header(MASTER, 0, opaque, 0);
	json_frame(&f, h, DATA_VERSION, strlen(DATA_VERSION));
	r = exchange(brokers[0], &f, opaque);
	char *want = fmt("{\"code\":0,\"extFields\":{\"changed\":\"false\"},\"flag\":1,\"language\":\"JAVA\","
			 "\"opaque\":%d,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}",
			 opaque);
	expect_header(r, want);
	expect_body(r, DATA_VERSION);
	free(want);
	client_reply_free(r);
	free(h);

	/* Both stay in the route, the group flagged acting-master. */
	c = harness_connect_or_fail(&srv);
	json_frame(&f, JAVA5_ROUTE_JSON_HEADER, NULL, 0);
	r = exchange(c, &f, 7);
	expect_body(r, ROUTE_STANDARD);
	client_reply_free(r);
	close_group();
}

/* A 5.1.4 broker with compressedRegister=true: a zlib body under
 * compressed=false (the captured s3 frame, sent as recorded). The Java
 * 5.1.4 NameServer fails it; rmqns recognises the zlib header. */
Test(personas, broker_5_1_4_zlib_body_flagged_plain)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	char *path = fmt("%s/java-5.1.4/s3-compressed/frames/00013-c003-c2s-req-code103.bin", TESTDATA_DIR);
	char *bytes = harness_slurp(path);
	cr_assert_not_null(bytes, "%s", path);
	uint32_t len = rd_be32((const uint8_t *)bytes) + 4;
	cr_assert_eq(buf_append(&f, bytes, len), 0);
	cr_assert_not_null(memmem(f.data + 8, rd_be32(f.data + 4) & 0xFFFFFF, "\"compressed\":\"false\"", 20),
			   "the frame says plain");
	cr_assert_eq(f.data[8 + (rd_be32(f.data + 4) & 0xFFFFFF)], 0x78, "the body is zlib");

	struct client *b = harness_connect_or_fail(&srv);
	struct client_reply *r = exchange(b, &f, 2);
	expect_header(r, "{\"code\":0,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\",\"opaque\":2,"
			 "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	client_reply_free(r);

	/* Its topics are routable: BenchmarkTest, 1024 queues, on b5c. */
	c = harness_connect_or_fail(&srv);
	r = ask(c, &f, fmt("{\"code\":105,\"extFields\":{\"topic\":\"BenchmarkTest\"},\"flag\":0,\"language\":\"JAVA\","
		"\"opaque\":3,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":441}"), 3);
	expect_body(r, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:20980\"},\"brokerName\":\"b5c\","
		       "\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false}],\"filterServerTable\":{},"
		       "\"queueDatas\":[{\"brokerName\":\"b5c\",\"perm\":6,\"readQueueNums\":1024,\"topicSysFlag\":0,"
		       "\"writeQueueNums\":1024}]}");
	client_reply_free(r);
	client_close(b);
	close_group();
	free(bytes);
	free(path);
}

/* ================= Node: ali-ons ================= */

/* ali-ons writes JSON.stringify({code, language, opaque, flag, version,
 * remark, extFields}): remark undefined is left out, ext values keep their
 * JavaScript types. It also reads the header word as the length. */
static char *node_header(int code, int32_t opaque, const char *ext)
{
	return fmt("{\"code\":%d,\"language\":\"JAVA\",\"opaque\":%d,\"flag\":0,\"version\":121,\"extFields\":{%s}}",
		   code, opaque, ext);
}

Test(personas, ali_ons_raw_json_scalars_in_ext)
{
	start_with_client();
	struct client_reply *r;
	char *h;

	/* numbers and booleans stored as their text */
	r = ask(c, &f, node_header(100, 1, "\"namespace\":\"NS\",\"key\":\"num\",\"value\":12345678901234567890"), 1);
	expect_cpp_readable(r);
	expect_header(r, OK_HEADER(1));
	client_reply_free(r);
	client_reply_free(ask(c, &f, node_header(100, 2, "\"namespace\":\"NS\",\"key\":\"flag\",\"value\":true"), 2));
	ask_expect_header(c, &f, node_header(101, 3, "\"namespace\":\"NS\",\"key\":\"num\""), 3,
			  "{\"code\":0,\"extFields\":{\"value\":\"12345678901234567890\"},\"flag\":1,"
			 "\"language\":\"JAVA\",\"opaque\":3,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	ask_expect_header(c, &f, node_header(101, 4, "\"namespace\":\"NS\",\"key\":\"flag\""), 4,
			  "{\"code\":0,\"extFields\":{\"value\":\"true\"},\"flag\":1,"
			 "\"language\":\"JAVA\",\"opaque\":4,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");

	/* version 121: the default form; a boolean acceptStandardJsonOnly
	 * switches it to standard JSON */
	r = ask(c, &f, node_header(105, 5, "\"topic\":\"TopicTest\""), 5);
	expect_cpp_readable(r);
	expect_body(r, ROUTE_DEFAULT);
	client_reply_free(r);
	r = ask(c, &f, node_header(105, 6, "\"topic\":\"TopicTest\",\"acceptStandardJsonOnly\":true"), 6);
	expect_body(r, ROUTE_STANDARD);
	client_reply_free(r);

	/* a numeric broker id (a QUERY_DATA_VERSION from a Node-side tool) */
	h = fmt("{\"code\":322,\"language\":\"JAVA\",\"opaque\":7,\"flag\":0,\"version\":121,\"extFields\":"
		"{\"brokerName\":\"" GROUP "\",\"brokerAddr\":\"" MASTER "\",\"clusterName\":\"" CLUSTER "\","
		"\"brokerId\":0}}");
	json_frame(&f, h, DATA_VERSION, strlen(DATA_VERSION));
	r = exchange(c, &f, 7);
	cr_expect_eq(r->cmd.code, 0, "code %d (%s)", r->cmd.code, r->cmd.remark ? r->cmd.remark : "");
	cr_expect_str_eq(remoting_ext_get(&r->cmd, "changed"), "false");
	client_reply_free(r);
	free(h);
	close_group();
}

/* The Java NameServer (4.9 and 5.x) applies UNREGISTER_BROKER whatever
 * connection it arrives on; so does rmqns, unless it comes on the
 * connection the broker left when it registered again (a stale one). */
Test(personas, unregister_from_another_connection_removes_the_broker)
{
	start_with_client();
	json_frame(&f, "{\"code\":104,\"extFields\":{\"brokerId\":\"1\",\"clusterName\":\"" CLUSTER "\",\"brokerAddr\":\""
		       SLAVE "\",\"brokerName\":\"" GROUP "\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":5,"
		       "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":441}",
		   NULL, 0);
	struct client_reply *r = exchange(c, &f, 5);
	expect_header(r, OK_HEADER(5));
	client_reply_free(r);
	/* 5.x unregisters in the background: ask until the slave is gone,
	 * bounded in count. */
	char *body = NULL;
	for (int i = 0; i < 50; i++) {
		json_frame(&f, JAVA5_ROUTE_JSON_HEADER, NULL, 0);
		r = exchange(c, &f, 7);
		free(body);
		body = body_text(r);
		client_reply_free(r);
		if (!strstr(body, SLAVE))
			break;
		harness_sleep_ms(100);
	}
	cr_expect_str_eq(body, "{\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"" MASTER "\"},\"brokerName\":\"" GROUP
			       "\",\"cluster\":\"" CLUSTER "\",\"enableActingMaster\":true}],\"filterServerTable\":{},"
			       "\"queueDatas\":[{\"brokerName\":\"" GROUP "\",\"perm\":6,\"readQueueNums\":4,"
			       "\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
	free(body);
	close_group();
}
