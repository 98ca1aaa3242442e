/* Configuration against the real binary: -p, -h and bad options,
 * GET/UPDATE_NAMESRV_CONFIG (answers, persistence to the -c file with
 * .bak, refusals), the CVE-2023-37582 sequence, and SIGHUP. */
#include <dirent.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_criterion.h"
#include "config_black.h"
#include "test_util.h"
#include "rmqns/buf.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"

#define T HARNESS_IO_TIMEOUT_MS

SERVER_FIXTURE_SUITE(config_server, "rmqns-cfgs", .timeout = 120);

/* Starts the server with -c file (when not NULL) and its KV file in dir. */
static void start_with(const char *file)
{
	char *kv = NULL;
	const char *args[4];
	int n = 0;

	cr_assert(asprintf(&kv, "--kvConfigPath=%s/kv.json", fx.dir) > 0);
	if (file) {
		args[n++] = "-c";
		args[n++] = file;
	}
	args[n++] = kv;
	args[n] = NULL;
	cr_assert_eq(harness_start(&fx.srv, args), 0, "the server did not start");
	free(kv);
}

static struct client_reply *update(struct client *c, const char *body)
{
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, REQ_UPDATE_NAMESRV_CONFIG, REMOTING_JSON);
	if (body) {
		req.body = (const uint8_t *)body;
		req.body_len = (uint32_t)strlen(body);
	}
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	return r;
}

static void expect_update(struct client *c, const char *body, int32_t code, const char *remark)
{
	struct client_reply *r = update(c, body);

	cr_assert_eq(r->cmd.code, code, "'%s': code %d (%s)", body, r->cmd.code, r->cmd.remark ? r->cmd.remark : "-");
	if (remark) {
		cr_assert_not_null(r->cmd.remark);
		cr_assert_not_null(strstr(r->cmd.remark, remark), "'%s': remark '%s'", body, r->cmd.remark);
	} else {
		cr_assert_null(r->cmd.remark);
	}
	cr_assert_eq(r->cmd.ext_count, 0);
	cr_assert_eq(r->cmd.body_len, 0);
	client_reply_free(r);
}

static char *get_config(struct client *c, enum remoting_serialize ser)
{
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	char *body;

	harness_request_init(&req, REQ_GET_NAMESRV_CONFIG, ser);
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	cr_assert_eq(r->cmd.code, 0);
	cr_assert_null(r->cmd.remark);
	cr_assert_eq(r->cmd.ext_count, 0);
	cr_assert_gt(r->cmd.body_len, 0, "GET_NAMESRV_CONFIG always has a body");
	body = strndup((const char *)r->cmd.body, r->cmd.body_len);
	client_reply_free(r);
	return body;
}

/* ---- command line ---- */

Test(config_server, print_options_and_exit)
{
	char *file = fixture_write(&fx, "n.conf", "listenPort=19999\nenableTopicList=false\n");
	const char *args[] = { "-c", file, "-p", NULL };
	char *out = NULL, *line, *save = NULL;
	size_t n, lines = 0;
	const struct config_option *tab = config_options(&n);
	regex_t re;
	int st;

	st = harness_run(args, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} INFO main - [A-Za-z.]+=",
			     REG_EXTENDED), 0);
	line = strtok_r(out, "\n", &save);
	cr_assert_not_null(line);
	{
		char want[512];
		snprintf(want, sizeof(want), "load config properties file OK, %s", file);
		cr_assert_str_eq(line, want, "Java's first line");
	}
	for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++) {
		cr_assert_eq(regexec(&re, line, 0, NULL, 0), 0, "'%s'", line);
		cr_assert_lt(lines, n);
		cr_assert_not_null(strstr(line, tab[lines].name), "order: %s in '%s'", tab[lines].name, line);
	}
	cr_assert_eq(lines, n, "one line per option");
	regfree(&re);
	free(out);
	out = NULL;
	/* values of the file are printed */
	st = harness_run(args, 20000, &out);
	cr_assert_not_null(strstr(out, " INFO main - listenPort=19999\n"));
	cr_assert_not_null(strstr(out, " INFO main - enableTopicList=false\n"));
	free(out);
	free(file);
}

Test(config_server, help_and_errors)
{
	const char *help[] = { "-h", NULL };
	const char *bad_key[] = { "--noSuchOption=1", NULL };
	const char *bad_val[] = { "--listenPort=12ab", NULL };
	const char *no_file[] = { "-c", "/nonexistent/rmqns.conf", NULL };
	char *out = NULL;
	int st;

	st = harness_run(help, 20000, &out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_not_null(strstr(out, "usage: rmqns"));
	free(out);
	st = harness_run(bad_key, 20000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	st = harness_run(bad_val, 20000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	st = harness_run(no_file, 20000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}

/* ---- GET / UPDATE ---- */

Test(config_server, get_config_sorted_java_format)
{
	char *file = fixture_write(&fx, "n.conf", "orderMessageEnable=true\nmyOwnKey=kept\n");
	char *body, *copy, *line, *save = NULL, *prev = NULL, want[600];
	size_t n, lines = 0;
	struct client *c;

	config_options(&n);
	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	body = get_config(c, REMOTING_JSON);
	cr_assert_eq(body[strlen(body) - 1], '\n');
	copy = strdup(body);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++) {
		cr_assert_not_null(strchr(line, '='));
		if (prev)
			cr_assert_lt(strcmp(prev, line), 0, "sorted");
		prev = line;
	}
	cr_assert_eq(lines, n + 1);
	cr_assert_not_null(strstr(body, "\norderMessageEnable=true\n"));
	cr_assert_not_null(strstr(body, "\nmyOwnKey=kept\n"));
	snprintf(want, sizeof(want), "\nconfigStorePath=%s\n", file);
	cr_assert_not_null(strstr(body, want));
	snprintf(want, sizeof(want), "\nkvConfigPath=%s/kv.json\n", fx.dir);
	cr_assert_not_null(strstr(body, want));
	free(copy);
	free(body);
	body = get_config(c, REMOTING_ROCKETMQ);
	cr_assert_not_null(strstr(body, "\norderMessageEnable=true\n"));
	free(body);
	client_close(c);
	free(file);
}

/* As Java writes every property of its configuration back, an update
 * writes the effective configuration: a one-off --KEY=VALUE becomes part
 * of the -c file (docs/configuration.md). */
Test(config_server, update_writes_command_line_values_back)
{
	char *file = fixture_write(&fx, "n.conf", "enableTopicList=true\n");
	char *kv = NULL;
	cr_assert(asprintf(&kv, "--kvConfigPath=%s/kv.json", fx.dir) > 0);
	const char *args[] = { "-c", file, kv, "--orderMessageEnable=true", NULL };
	cr_assert_eq(harness_start(&fx.srv, args), 0, "the server did not start");
	struct client *c = harness_connect_or_fail(&fx.srv);
	expect_update(c, "enableTopicList=false\n", 0, NULL);
	char *disk = harness_slurp(file);
	cr_assert_not_null(strstr(disk, "\nenableTopicList=false\n"), "%s", disk);
	cr_assert_not_null(strstr(disk, "\norderMessageEnable=true\n"), "the override is written: %s", disk);
	cr_assert_not_null(strstr(disk, "\nlistenPort=0\n"), "the harness's --listenPort=0 too: %s", disk);
	free(disk);
	client_close(c);
	free(kv);
	free(file);
}

Test(config_server, update_round_trip_persists_with_bak)
{
	const char *original = "# my config\nlistenPort=19999\nmyOwnKey=old\n";
	char *file = fixture_write(&fx, "n.conf", original);
	char *bak = fixture_path(&fx, "n.conf.bak"), *body;
	struct client *c;
	int st;

	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	expect_update(c, "enableTopicList=false\nfooBar=1\n", 1, "unknown key: fooBar");
	tu_assert_file_eq(file, original, "a refused update writes nothing");
	expect_update(c, "enableTopicList=false\nlogLevel=debug\nmyOwnKey=new\nserverSocketBacklog=2048\n",
		      0, NULL);
	body = get_config(c, REMOTING_JSON);
	cr_assert_not_null(strstr(body, "\nenableTopicList=false\n"));
	cr_assert_not_null(strstr(body, "\nlogLevel=DEBUG\n"));
	cr_assert_not_null(strstr(body, "\nmyOwnKey=new\n"));
	cr_assert_not_null(strstr(body, "\nserverSocketBacklog=2048\n"), "restart-only values are shown");
	cr_assert_null(strstr(body, "fooBar"), "unknown keys are refused");
	tu_assert_file_eq(file, body, "the -c file holds what GET shows");
	tu_assert_file_eq(bak, original, ".bak holds the previous content");
	cr_assert(harness_wait_log(&fx.srv, "UPDATE_NAMESRV_CONFIG from", HARNESS_WAIT_MS));
	/* the persisted file starts the next run */
	client_close(c);
	st = harness_stop(&fx.srv, SIGTERM, 5000, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	harness_cleanup(&fx.srv);
	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	free(body);
	body = get_config(c, REMOTING_JSON);
	cr_assert_not_null(strstr(body, "\nenableTopicList=false\n"));
	cr_assert_not_null(strstr(body, "\nserverSocketBacklog=2048\n"));
	cr_assert_not_null(strstr(body, "\nmyOwnKey=new\n"));
	free(body);
	client_close(c);
	free(bak);
	free(file);
}

Test(config_server, update_refusals)
{
	char *file = fixture_write(&fx, "n.conf", "configBlackList=configBlackList;configStorePath;kvConfigPath;listenPort\n");
	char *before, *after, *disk_before;
	struct client *c;
	static const char black[] = CONFIG_BLACK_REMARK;

	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	before = get_config(c, REMOTING_JSON);
	disk_before = harness_slurp(file);
	for (size_t i = 0; i < sizeof config_always_black / sizeof config_always_black[0]; i++)
		expect_update(c, config_always_black[i], 16, black);
	expect_update(c, "listenPort=1\n", 16, black);
	expect_update(c, "enableTopicList=false\nkvConfigPath=/tmp/x.json\n", 16, black);
	expect_update(c, "a=\\uZZZZ\n", 1, "string2Properties error");
	expect_update(c, "productEnvName=x\\n* * * * * root touch /tmp/pwned\n", 1, "line break");
	expect_update(c, "serverWorkerThreads=1\n", 1, "serverWorkerThreads=1 is below the minimum of 2");
	expect_update(c, "defaultThreadPoolQueueCapacity=1\n", 1, "below the minimum of 1000");
	expect_update(c, "scanNotActiveBrokerInterval=soon\n", 1, "scanNotActiveBrokerInterval");
	expect_update(c, NULL, 0, NULL);
	after = get_config(c, REMOTING_JSON);
	cr_assert_str_eq(after, before, "nothing was applied");
	tu_assert_file_eq(file, disk_before, "nothing was written");
	free(before);
	free(after);
	free(disk_before);
	client_close(c);
	free(file);
}

/* Counts the entries of dir other than the expected ones. */
static int strangers(const char *const *expected)
{
	DIR *d = opendir(fx.dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		for (int i = 0; expected[i] && !known; i++)
			known = strcmp(e->d_name, expected[i]) == 0;
		if (!known) {
			fprintf(stderr, "unexpected file %s/%s\n", fx.dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

Test(config_server, cve_2023_37582_sequence_creates_no_file_elsewhere)
{
	char *file = fixture_write(&fx, "n.conf", "listenPort=19999\n");
	const char *expected[] = { "n.conf", "n.conf.bak", "kv.json", "kv.json.bak", NULL };
	char body[512];
	struct client *c;
	struct remoting_cmd req;
	struct remoting_ext_field ext[3] = { { "namespace", "NS" }, { "key", "k" }, { "value", "v" } };
	struct client_reply *r = NULL;

	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	/* point the config and KV files elsewhere (refused), then make the
	 * server write both (CVE-2023-33246 / CVE-2023-37582) */
	snprintf(body, sizeof(body), "configStorePath=%s/evil.properties\n", fx.dir);
	expect_update(c, body, 16, "black list");
	snprintf(body, sizeof(body), "kvConfigPath=%s/evil.json\n", fx.dir);
	expect_update(c, body, 16, "black list");
	snprintf(body, sizeof(body), "configStorePathName=%s/evil2.properties\n", fx.dir);
	expect_update(c, body, 1, "unknown key: configStorePathName");
	expect_update(c, "orderMessageEnable=true\n", 0, NULL);
	expect_update(c, "orderMessageEnable=false\n", 0, NULL);
	for (int i = 0; i < 2; i++) {
		harness_request_init(&req, REQ_PUT_KV_CONFIG, REMOTING_JSON);
		req.ext = ext;
		req.ext_count = 3;
		req.ext_present = true;
		cr_assert_eq(client_call(c, &req, &r, T), 0);
		cr_assert_eq(r->cmd.code, 0);
		client_reply_free(r);
	}
	cr_assert_eq(strangers(expected), 0, "a file appeared outside the configured paths");
	client_close(c);
	free(file);
}

Test(config_server, update_without_c_file_is_memory_only)
{
	struct client *c;
	char *body, *store;
	struct stat st;

	start_with(NULL);
	c = harness_connect_or_fail(&fx.srv);
	expect_update(c, "enableAllTopicList=false\n", 0, NULL);
	body = get_config(c, REMOTING_JSON);
	cr_assert_not_null(strstr(body, "\nenableAllTopicList=false\n"));
	free(body);
	cr_assert(asprintf(&store, "%s/namesrv/namesrv.properties", fx.srv.dir) > 0);
	cr_assert_lt(stat(store, &st), 0, "nothing written without -c");
	free(store);
	client_close(c);
}

/* ---- answers as the Java NameServer sent them ---- */

Test(config_server, answers_match_java_4_9_8_capture)
{
	char *file = fixture_write(&fx, "n.conf", "listenPort=19999\n");
	struct client *c;
	struct client_reply *r;

	if (!getenv("RMQNS_TESTDATA"))
		cr_skip_test("RMQNS_TESTDATA not set");
	start_with(file);
	c = harness_connect_or_fail(&fx.srv);
	r = harness_replay_java498_like(c, "00027-c007-c2s-req-code319.bin",
					"00029-c007-s2c-rsp-to319-code0.bin");
	cr_assert_gt(r->cmd.body_len, 0);
	client_reply_free(r);
	/* clusterTest=false */
	client_reply_free(harness_replay_java498_like(c, "00031-c008-c2s-req-code318.bin",
						      "00034-c008-s2c-rsp-to318-code0.bin"));
	/* kvConfigPath=... */
	client_reply_free(harness_replay_java498_like(c, "00036-c009-c2s-req-code318.bin",
						      "00038-c009-s2c-rsp-to318-code16.bin"));
	client_close(c);
	free(file);
}

/* ---- SIGHUP ---- */

Test(config_server, sighup_applies_live_options)
{
	char *file = fixture_write(&fx, "n.conf", "logLevel=INFO\nenableTopicList=true\nserverSocketBacklog=1024\n");
	struct client *c;
	char *body;

	start_with(file);
	tu_write_file(file, "logLevel=WARN\nenableTopicList=false\nserverSocketBacklog=512\n");
	cr_assert_eq(kill(fx.srv.pid, SIGHUP), 0);
	cr_assert(harness_wait_log(&fx.srv, "SIGHUP: enableTopicList=false applied", HARNESS_WAIT_MS));
	cr_assert(harness_wait_log(&fx.srv, "SIGHUP: serverSocketBacklog=512 takes effect after a restart", HARNESS_WAIT_MS));
	c = harness_connect_or_fail(&fx.srv);
	body = get_config(c, REMOTING_JSON);
	cr_assert_not_null(strstr(body, "\nenableTopicList=false\n"));
	cr_assert_not_null(strstr(body, "\nlogLevel=WARN\n"));
	free(body);
	/* a broken file changes nothing and the server keeps running */
	tu_write_file(file, "enableTopicList=true\nlistenPort=oops\n");
	cr_assert_eq(kill(fx.srv.pid, SIGHUP), 0);
	cr_assert(harness_wait_log(&fx.srv, "configuration unchanged", HARNESS_WAIT_MS));
	body = get_config(c, REMOTING_JSON);
	cr_assert_not_null(strstr(body, "\nenableTopicList=false\n"));
	free(body);
	client_close(c);
	free(file);
}
