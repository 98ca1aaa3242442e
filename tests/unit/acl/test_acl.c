/* ACL 1.0 (acl.h): signatures against the frames real mqadmin signed,
 * signatures built here for given keys, Java's key order, the address
 * patterns, plain_acl.yml reading, and the verdict in Java's order. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

#include "route_test_util.h" /* tu_frame_load: a captured frame, decoded */

static struct acl_accounts *accounts_of(const char *yaml)
{
	char err[512];
	struct acl_accounts *a = acl_accounts_parse(yaml, strlen(yaml), err, sizeof err);
	cr_assert_not_null(a, "accounts did not parse: %s", err);
	return a;
}

static struct acl_ip ip_of(const char *text)
{
	struct acl_ip ip;
	cr_assert(acl_ip_of_peer(text, &ip), "%s is no peer address", text);
	return ip;
}

static const char rocketmq2_yaml[] =
	"accounts:\n"
	"  - accessKey: rocketmq2\n"
	"    secretKey: 12345678\n"
	"    admin: true\n";

/* ---- the captured frames ---- */

Test(acl_sign, every_captured_signed_frame_verifies_but_the_tampered_one)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/java-4.9.8/index.jsonl", TESTDATA_DIR);
	FILE *idx = fopen(path, "r");
	cr_assert_not_null(idx);
	struct acl_accounts *acc = accounts_of(rocketmq2_yaml);
	struct acl_ip far = ip_of("192.0.2.7:40000");
	char line[1 << 16];
	int signed_frames = 0, refused = 0;

	while (fgets(line, sizeof line, idx)) {
		json_error_t e;
		json_t *rec = json_loads(line, 0, &e);
		cr_assert_not_null(rec, "index.jsonl: %s", e.text);
		json_t *ext = json_object_get(rec, "ext_fields");
		const char *ak = json_string_value(json_object_get(ext, "AccessKey"));
		if (!ak) {
			json_decref(rec);
			continue;
		}
		cr_assert_str_eq(ak, "rocketmq2");
		int seq = (int)json_integer_value(json_object_get(rec, "seq"));
		struct tu_frame f;
		snprintf(path, sizeof path, "java-4.9.8/%s", json_string_value(json_object_get(rec, "file")));
		tu_frame_load(&f, path);
		struct remoting_cmd cmd = f.cmd;

		char sig[ACL_SIGNATURE_LEN + 1];
		cr_assert_eq(acl_signature(&cmd, "12345678", sig), 0);
		const char *wire = remoting_ext_get(&cmd, ACL_EXT_SIGNATURE);
		cr_assert_not_null(wire);
		char remark[256];
		enum acl_verdict v = acl_check(acc, &cmd, &far, acl_class_of(cmd.code) == ACL_CLASS_ADMIN,
					       remark, sizeof remark);
		if (seq == 36) {
			/* its body was rewritten after mqadmin signed it */
			cr_assert_eq(cmd.code, REQ_UPDATE_NAMESRV_CONFIG);
			cr_assert_str_neq(sig, wire);
			cr_assert_eq(v, ACL_BAD_SIGNATURE);
			cr_assert_str_eq(remark, "ACL: signature mismatch for AccessKey=rocketmq2");
			refused++;
		} else {
			cr_assert_str_eq(sig, wire, "frame %d (code %d): computed %s, signed %s", seq, cmd.code,
					 sig, wire);
			cr_assert_eq(v, ACL_PASS, "frame %d: %s", seq, remark);
		}
		/* a wrong secret never verifies */
		struct acl_accounts *other = accounts_of("accounts:\n"
							 "  - accessKey: rocketmq2\n"
							 "    secretKey: 87654321\n"
							 "    admin: true\n");
		cr_assert_eq(acl_check(other, &cmd, &far, false, NULL, 0), ACL_BAD_SIGNATURE);
		acl_accounts_free(other);
		signed_frames++;
		tu_frame_free(&f);
		json_decref(rec);
	}
	fclose(idx);
	acl_accounts_free(acc);
	cr_assert_geq(signed_frames, 30, "only %d signed frames found", signed_frames);
	cr_assert_eq(refused, 1);
}

/* ---- signatures built here ---- */

Test(acl_sign, signature_of_given_keys)
{
	struct remoting_ext_field ext[] = {
		{ "topic", "TopicTest" },
		{ "AccessKey", "rocketmq2" },
		{ "Signature", "ignored" },
	};
	struct remoting_cmd cmd = { .ext = ext, .ext_count = 3 };
	char sig[ACL_SIGNATURE_LEN + 1];

	/* values in key order, AccessKey < topic; Signature left out */
	cr_assert_eq(acl_signature(&cmd, "12345678", sig), 0);
	cr_assert_str_eq(sig, "GeeGoP9mRvDhoVp4PD5omX0prgE=");

	/* _UNIQUE_KEY_QUERY is left out too, as Java's server does */
	struct remoting_ext_field ext2[] = {
		{ "_UNIQUE_KEY_QUERY", "true" },
		{ "topic", "TopicTest" },
		{ "AccessKey", "rocketmq2" },
	};
	struct remoting_cmd cmd2 = { .ext = ext2, .ext_count = 3 };
	cr_assert_eq(acl_signature(&cmd2, "12345678", sig), 0);
	cr_assert_str_eq(sig, "GeeGoP9mRvDhoVp4PD5omX0prgE=");

	/* nothing at all */
	struct remoting_cmd empty = { 0 };
	cr_assert_eq(acl_signature(&empty, "12345678", sig), 0);
	cr_assert_str_eq(sig, "beQgVA0KNM4WtCe68fj2DEn3WWU=");
}

Test(acl_sign, java_string_order_and_the_body)
{
	/* U+1F600 is a surrogate pair (D83D DE00) and sorts before U+FFFD in
	 * Java, though its UTF-8 bytes sort after */
	struct remoting_ext_field ext[] = {
		{ "\xef\xbf\xbd", "v-fffd" },
		{ "\xf0\x9f\x98\x80", "v-emoji" },
		{ "AccessKey", "AK-1234" },
	};
	static const char body[] = "{\"a\":1}";
	struct remoting_cmd cmd = { .ext = ext, .ext_count = 3, .body = (const uint8_t *)body,
				    .body_len = sizeof body - 1 };
	char sig[ACL_SIGNATURE_LEN + 1];

	cr_assert_eq(acl_signature(&cmd, "secret-key-1", sig), 0);
	cr_assert_str_eq(sig, "8iAuuOq2kjXmFM23iqBicuF2FvI=");

	cr_assert_lt(acl_key_compare("\xf0\x9f\x98\x80", "\xef\xbf\xbd"), 0);
	cr_assert_gt(strcmp("\xf0\x9f\x98\x80", "\xef\xbf\xbd"), 0);
	cr_assert_lt(acl_key_compare("AccessKey", "Signature"), 0);
	cr_assert_lt(acl_key_compare("Signature", "brokerName"), 0); /* upper case first */
	cr_assert_lt(acl_key_compare("key", "keys"), 0);
	cr_assert_eq(acl_key_compare("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"), 0);
	cr_assert_lt(acl_key_compare("z", "\xc3\xa9"), 0);
}

Test(acl_sign, sign_cmd_round_trip)
{
	struct remoting_ext_field ext[] = {
		{ "namespace", "ns" },
		{ "key", "k" },
		{ "Signature", "stale" },
		{ "value", "v" },
	};
	struct remoting_cmd cmd = { .code = REQ_PUT_KV_CONFIG, .ext = ext, .ext_count = 4 };
	struct acl_signed s;
	struct acl_accounts *acc = accounts_of(rocketmq2_yaml);
	struct acl_ip ip = ip_of("192.0.2.1:1");

	cr_assert_eq(acl_sign_cmd(&cmd, "rocketmq2", "12345678", &s), 0);
	cr_assert_eq(cmd.ext_count, 5);
	cr_assert_str_eq(remoting_ext_get(&cmd, ACL_EXT_ACCESS_KEY), "rocketmq2");
	cr_assert_str_eq(remoting_ext_get(&cmd, ACL_EXT_SIGNATURE), s.signature);
	cr_assert_eq(strlen(s.signature), ACL_SIGNATURE_LEN);
	cr_assert_eq(acl_check(acc, &cmd, &ip, true, NULL, 0), ACL_PASS);
	/* any value changed after signing is caught */
	cr_assert_str_eq(s.ext[2].key, "namespace");
	s.ext[2].value = "ns2";
	cr_assert_eq(acl_check(acc, &cmd, &ip, true, NULL, 0), ACL_BAD_SIGNATURE);
	acl_signed_free(&s);
	acl_accounts_free(acc);
}

/* ---- addresses ---- */

static bool matches(const char *pattern, const char *peer)
{
	struct acl_addr a;
	char err[256];
	cr_assert_eq(acl_addr_parse(pattern, &a, err, sizeof err), 0, "%s: %s", pattern, err);
	struct acl_ip ip = ip_of(peer);
	bool m = acl_addr_match(&a, &ip);
	acl_addr_free(&a);
	return m;
}

static void refused_pattern(const char *pattern)
{
	struct acl_addr a;
	char err[256] = "";
	cr_assert_eq(acl_addr_parse(pattern, &a, err, sizeof err), RMQNS_EINVAL, "%s parsed", pattern);
	cr_assert_neq(err[0], '\0');
}

Test(acl_addr, java_forms)
{
	cr_assert(matches("*", "10.1.2.3:5"));
	cr_assert(matches("*.*.*.*", "10.1.2.3:5"));
	cr_assert(matches("*:*:*:*:*:*:*:*", "[::1]:5"));
	cr_assert(!matches("", "10.1.2.3:5"));
	cr_assert(!matches("  ", "10.1.2.3:5"));

	cr_assert(matches("192.168.0.1", "192.168.0.1:9"));
	cr_assert(!matches("192.168.0.1", "192.168.0.2:9"));
	cr_assert(matches(" 192.168.0.1 ", "192.168.0.1:9"));

	cr_assert(matches("192.168.0.*", "192.168.0.200:9"));
	cr_assert(!matches("192.168.0.*", "192.168.1.200:9"));
	cr_assert(matches("192.168.*.*", "192.168.77.3:9"));
	cr_assert(matches("10.*.*.*", "10.255.0.1:9"));
	cr_assert(!matches("10.*.*.*", "11.0.0.1:9"));

	cr_assert(matches("192.168.1.1-10", "192.168.1.1:9"));
	cr_assert(matches("192.168.1.1-10", "192.168.1.10:9"));
	cr_assert(!matches("192.168.1.1-10", "192.168.1.11:9"));
	cr_assert(!matches("192.168.1.1-10", "192.168.1.0:9"));
	cr_assert(matches("192.168.2-3.*", "192.168.3.99:9"));
	cr_assert(!matches("192.168.2-3.*", "192.168.4.99:9"));

	cr_assert(matches("192.168.1.2,10.0.0.1", "10.0.0.1:1"));
	cr_assert(!matches("192.168.1.2,10.0.0.1", "10.0.0.2:1"));
	cr_assert(matches("192.168.1.{1,2,3}", "192.168.1.3:1"));
	cr_assert(!matches("192.168.1.{1,2,3}", "192.168.1.4:1"));

	/* IPv6: exact (any spelling), lists, braces; a v4-mapped peer is v4 */
	cr_assert(matches("::1", "[0:0:0:0:0:0:0:1]:7"));
	cr_assert(matches("fe80::1,::1", "[::1]:7"));
	cr_assert(matches("fe80::{1,2}", "[fe80::2]:7"));
	cr_assert(matches("127.0.0.1", "[::ffff:127.0.0.1]:7"));
	cr_assert(!matches("::1", "127.0.0.1:7"));

	refused_pattern("192.168.0.256");
	refused_pattern("192.168.0");
	refused_pattern("192.168.10-1.*");
	refused_pattern("1-2.0.0.1");
	refused_pattern("192.168.0.1,nonsense");
	refused_pattern("host.example");
	refused_pattern("fe80::*");
	refused_pattern("{1,2}");
}

Test(acl_addr, peers)
{
	struct acl_ip ip;
	cr_assert(acl_ip_of_peer("127.0.0.1:9876", &ip));
	cr_assert_eq(ip.family, AF_INET);
	cr_assert(acl_ip_of_peer("[::1]:9876", &ip));
	cr_assert_eq(ip.family, AF_INET6);
	cr_assert(!acl_ip_of_peer("unknown", &ip));
	cr_assert(!acl_ip_of_peer(NULL, &ip));
}

/* ---- plain_acl.yml ---- */

/* A broker's file: every key Java's sample has. */
static const char broker_yaml[] =
	"globalWhiteRemoteAddresses:\n"
	"  - 10.10.103.*\n"
	"  - 192.168.0.*\n"
	"\n"
	"accounts:\n"
	"  - accessKey: RocketMQ\n"
	"    secretKey: 12345678\n"
	"    whiteRemoteAddress:\n"
	"    admin: false\n"
	"    defaultTopicPerm: DENY\n"
	"    defaultGroupPerm: SUB\n"
	"    topicPerms:\n"
	"      - topicA=DENY\n"
	"      - topicB=PUB|SUB\n"
	"    groupPerms:\n"
	"      - groupA=DENY\n"
	"\n"
	"  - accessKey: rocketmq2\n"
	"    secretKey: \"12345678\"\n"
	"    whiteRemoteAddress: 192.168.1.*\n"
	"    admin: true\n"
	"dataVersion:\n"
	"  - counter: 3\n"
	"    timestamp: 1700000000000\n";

Test(acl_accounts, broker_file_with_extra_keys)
{
	struct acl_accounts *a = accounts_of(broker_yaml);

	cr_assert_eq(a->n, 2);
	cr_assert_eq(a->nglobal, 2);
	const struct acl_account *r = acl_accounts_find(a, "RocketMQ");
	const struct acl_account *r2 = acl_accounts_find(a, "rocketmq2");
	cr_assert_not_null(r);
	cr_assert_not_null(r2);
	cr_assert_null(acl_accounts_find(a, "rocketmq3"));
	cr_assert(!r->admin);
	cr_assert(r2->admin);
	cr_assert_str_eq(r2->secret_key, "12345678");
	cr_assert_eq(r->white.kind, ACL_ADDR_NONE);
	struct acl_ip in = ip_of("192.168.1.5:1"), out = ip_of("192.168.2.5:1");
	cr_assert(acl_addr_match(&r2->white, &in));
	cr_assert(!acl_addr_match(&r2->white, &out));
	struct acl_ip g = ip_of("10.10.103.9:1");
	cr_assert(acl_addr_match(&a->global_white[0], &g));
	acl_accounts_free(a);
}

static void refused_yaml(const char *yaml, const char *why)
{
	char err[512] = "";
	struct acl_accounts *a = acl_accounts_parse(yaml, strlen(yaml), err, sizeof err);
	cr_assert_null(a, "accepted: %s", yaml);
	cr_assert_not_null(strstr(err, why), "reason '%s' lacks '%s'", err, why);
	cr_assert_null(strstr(err, "s3cr3t-value"), "a secret in the reason: %s", err);
}

Test(acl_accounts, broken_files)
{
	refused_yaml("accounts:\n  - accessKey: rocketmq2\n    secretKey: [unclosed\n", "not YAML");
	refused_yaml("accounts: [\n", "not YAML");
	refused_yaml("", "no data");
	refused_yaml("- just\n- a list\n", "not a YAML mapping");
	refused_yaml("accounts: nope\n", "accounts is not a list");
	refused_yaml("accounts:\n  - accessKey: short\n    secretKey: s3cr3t-value\n",
		     "accessKey short must be longer than 6");
	refused_yaml("accounts:\n  - accessKey: rocketmq2\n    secretKey: tiny\n",
		     "secretKey of accessKey rocketmq2");
	refused_yaml("accounts:\n  - secretKey: s3cr3t-value\n", "accessKey (none)");
	refused_yaml("accounts:\n  - accessKey: rocketmq2\n    secretKey: s3cr3t-value\n"
		     "  - accessKey: rocketmq2\n    secretKey: s3cr3t-value\n",
		     "appears twice");
	refused_yaml("accounts:\n  - accessKey: rocketmq2\n    secretKey: s3cr3t-value\n    admin: maybe\n",
		     "admin of accessKey rocketmq2");
	refused_yaml("accounts:\n  - accessKey: rocketmq2\n    secretKey: s3cr3t-value\n"
		     "    whiteRemoteAddress: 300.1.1.1\n",
		     "line 4: whiteRemoteAddress of accessKey rocketmq2");
	refused_yaml("globalWhiteRemoteAddresses:\n  - 10.0.0.1-500\n", "globalWhiteRemoteAddresses");
	refused_yaml("globalWhiteRemoteAddresses: 10.0.0.1\n", "not a list");
}

Test(acl_accounts, empty_lists_and_the_sample)
{
	struct acl_accounts *a = accounts_of("globalWhiteRemoteAddresses:\naccounts:\n");
	cr_assert_eq(a->n, 0);
	cr_assert_eq(a->nglobal, 0);
	acl_accounts_free(a);

	char err[512];
	a = acl_accounts_load(RMQNS_SOURCE_ROOT "/etc/plain_acl.yml", err, sizeof err);
	cr_assert_not_null(a, "etc/plain_acl.yml: %s", err);
	const struct acl_account *r2 = acl_accounts_find(a, "rocketmq2");
	cr_assert_not_null(r2);
	cr_assert(r2->admin);
	cr_assert_str_eq(r2->secret_key, "12345678");
	acl_accounts_free(a);

	cr_assert_null(acl_accounts_load("/nonexistent/plain_acl.yml", err, sizeof err));
	cr_assert_not_null(strstr(err, "cannot open"));
}

/* ---- the verdict ---- */

Test(acl_check, java_order)
{
	struct acl_accounts *a = accounts_of("globalWhiteRemoteAddresses:\n"
					     "  - 10.9.*.*\n"
					     "accounts:\n"
					     "  - accessKey: admin-key\n"
					     "    secretKey: admin-secret\n"
					     "    admin: true\n"
					     "  - accessKey: plain-key\n"
					     "    secretKey: plain-secret\n"
					     "    whiteRemoteAddress: 10.1.1.1\n");
	struct acl_ip global = ip_of("10.9.3.4:1"), mine = ip_of("10.1.1.1:1"), far = ip_of("10.2.2.2:1");
	struct remoting_ext_field ext[] = { { "namespace", "ns" }, { "key", "k" } };
	struct remoting_cmd bare = { .code = REQ_DELETE_KV_CONFIG, .ext = ext, .ext_count = 2 };
	char remark[256];

	/* global white list: no signature needed */
	cr_assert_eq(acl_check(a, &bare, &global, true, remark, sizeof remark), ACL_PASS);
	cr_assert_eq(acl_check(a, &bare, &far, true, remark, sizeof remark), ACL_UNSIGNED);
	cr_assert_str_eq(remark, "ACL: unsigned request: code 102 needs an AccessKey and a Signature");

	struct remoting_cmd c = bare;
	struct acl_signed s;
	cr_assert_eq(acl_sign_cmd(&c, "nobody-key", "nobody-secret", &s), 0);
	cr_assert_eq(acl_check(a, &c, &far, true, remark, sizeof remark), ACL_UNKNOWN_KEY);
	cr_assert_str_eq(remark, "ACL: unknown access key: no account for AccessKey=nobody-key");
	acl_signed_free(&s);
	/* the client's key is quoted short and printable only */
	c = bare;
	cr_assert_eq(acl_sign_cmd(&c, "evil\nkey\x01 "
				     "0123456789012345678901234567890123456789012345678901234567890123456789",
				  "x", &s), 0);
	cr_assert_eq(acl_check(a, &c, &far, true, remark, sizeof remark), ACL_UNKNOWN_KEY);
	cr_assert_str_eq(remark, "ACL: unknown access key: no account for AccessKey=evil?key??"
				 "012345678901234567890123456789012345678901234567890123...");
	acl_signed_free(&s);

	/* the account's white list passes before the signature and admin */
	c = bare;
	cr_assert_eq(acl_sign_cmd(&c, "plain-key", "wrong-secret", &s), 0);
	cr_assert_eq(acl_check(a, &c, &mine, true, remark, sizeof remark), ACL_PASS);
	cr_assert_eq(acl_check(a, &c, &far, true, remark, sizeof remark), ACL_BAD_SIGNATURE);
	cr_assert_str_eq(remark, "ACL: signature mismatch for AccessKey=plain-key");
	acl_signed_free(&s);

	c = bare;
	cr_assert_eq(acl_sign_cmd(&c, "plain-key", "plain-secret", &s), 0);
	cr_assert_eq(acl_check(a, &c, &far, false, remark, sizeof remark), ACL_PASS);
	cr_assert_eq(acl_check(a, &c, &far, true, remark, sizeof remark), ACL_NOT_ADMIN);
	cr_assert_str_eq(remark, "ACL: account not admin: AccessKey=plain-key may not send code 102");
	cr_assert_null(strstr(remark, "plain-secret"));
	/* AccessKey without a Signature */
	cr_assert_str_eq(s.ext[1].key, ACL_EXT_SIGNATURE);
	s.ext[1] = s.ext[--c.ext_count];
	cr_assert_eq(acl_check(a, &c, &far, false, remark, sizeof remark), ACL_UNSIGNED);
	cr_assert_str_eq(remark, "ACL: unsigned request: AccessKey=plain-key without a Signature");
	acl_signed_free(&s);

	c = bare;
	cr_assert_eq(acl_sign_cmd(&c, "admin-key", "admin-secret", &s), 0);
	cr_assert_eq(acl_check(a, &c, &far, true, remark, sizeof remark), ACL_PASS);
	acl_signed_free(&s);
	acl_accounts_free(a);
}

Test(acl_check, classes)
{
	static const int32_t admin[] = { 100, 102, 205, 216, 217, 318, 327, 1009, 1011 };
	static const int32_t broker[] = { 103, 104, 322, 904, 1001, 1002, 1003, 1012, 1013 };
	static const int32_t read[] = { 101, 105, 106, 206, 219, 224, 304, 311, 312, 313, 319, 901,
					1004, 1005, 1006, 1010, 12345 };

	for (size_t i = 0; i < sizeof admin / sizeof admin[0]; i++)
		cr_assert_eq(acl_class_of(admin[i]), ACL_CLASS_ADMIN, "code %d", admin[i]);
	for (size_t i = 0; i < sizeof broker / sizeof broker[0]; i++)
		cr_assert_eq(acl_class_of(broker[i]), ACL_CLASS_BROKER, "code %d", broker[i]);
	for (size_t i = 0; i < sizeof read / sizeof read[0]; i++)
		cr_assert_eq(acl_class_of(read[i]), ACL_CLASS_READ, "code %d", read[i]);
}

/* An election naming its winner is the operator's, whichever way the
 * flag is spelt true; any other election is the broker's. */
Test(acl_check, designated_election_is_admin)
{
	static const struct {
		const char *flag;
		enum acl_class cls;
	} cases[] = { { "true", ACL_CLASS_ADMIN }, { "True", ACL_CLASS_ADMIN }, { "TRUE", ACL_CLASS_ADMIN },
		      { "false", ACL_CLASS_BROKER }, { "1", ACL_CLASS_BROKER }, { NULL, ACL_CLASS_BROKER } };

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct remoting_ext_field ext[] = { { "brokerName", "b" }, { "designateElect", cases[i].flag } };
		struct remoting_cmd cmd;
		remoting_request_init(&cmd, 1002, 0, 0, REMOTING_JSON);
		cmd.ext = ext;
		cmd.ext_count = cases[i].flag ? 2 : 1;
		cmd.ext_present = true;
		cr_assert_eq(acl_class_of_cmd(&cmd), cases[i].cls, "designateElect=%s", cases[i].flag);
		cmd.code = 1001; /* the flag means nothing elsewhere */
		cr_assert_eq(acl_class_of_cmd(&cmd), ACL_CLASS_BROKER);
	}
}
