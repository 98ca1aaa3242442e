/* The config module (src/config): options table, command line, -p, value
 * checks, GET/UPDATE_NAMESRV_CONFIG preparation and application,
 * persistence to the -c file, SIGHUP reload, and etc/rmqns.conf against
 * the table. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urcu.h>

#include "options.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/properties.h"
#include "config_black.h"
#include "test_util.h"

static char dir[64];

static void setup(void)
{
	tu_mkdtemp(dir, sizeof(dir), "rmqns-cfg");
	setenv("HOME", dir, 1);
	unsetenv("ROCKETMQ_HOME");
	rcu_register_thread();
}

static void teardown(void)
{
	rcu_unregister_thread();
	tu_rmdir(dir);
}

TestSuite(config, .init = setup, .fini = teardown);

static char *path_in(const char *name)
{
	return tu_path_in(dir, name);
}

/* Writes text as the file name in the test's directory; its path. */
static char *write_file(const char *name, const char *text)
{
	char *p = path_in(name);
	tu_write_file(p, text);
	return p;
}

/* Runs config_from_args on a NULL-terminated list of arguments. */
static int run_args(struct config **cfg, enum config_action *act, char *err, size_t errlen, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "rmqns";
	va_start(ap, errlen);
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return config_from_args(argc, argv, cfg, act, err, errlen);
}

static struct config *start(const char *file, ...)
{
	char *argv[32];
	int argc = 0;
	struct config *cfg = NULL;
	enum config_action act;
	char err[512];
	va_list ap;

	argv[argc++] = "rmqns";
	if (file) {
		argv[argc++] = "-c";
		argv[argc++] = (char *)file;
	}
	va_start(ap, file);
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	cr_assert_eq(config_from_args(argc, argv, &cfg, &act, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(act, CONFIG_ACTION_RUN);
	return cfg;
}

static char *get_text(struct config *cfg)
{
	struct buf b = BUF_INIT;

	rcu_read_lock();
	cr_assert_eq(config_properties_text(cfg, &b), 0);
	rcu_read_unlock();
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

/* ---- the table ---- */

Test(config, table_is_consistent)
{
	size_t n;
	const struct config_option *tab = config_options(&n);
	struct options o;
	struct options_env env = { "/h", NULL };
	char err[256];

	cr_assert_gt(n, 40);
	cr_assert_eq(options_init(&o, &env), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(tab[i].meaning);
		cr_assert_eq(config_option_find(tab[i].name), &tab[i], "%s unique", tab[i].name);
		if (tab[i].def)
			cr_assert_eq(options_check_text(&tab[i], tab[i].def, err, sizeof(err)), 0, "%s", err);
		else
			cr_assert(tab[i].flags & CONFIG_PATH, "%s: only paths are computed", tab[i].name);
		if (tab[i].type == CONFIG_I32 || tab[i].type == CONFIG_I64)
			cr_assert(tab[i].min <= tab[i].max && tab[i].run_min <= tab[i].max, "%s", tab[i].name);
	}
	cr_assert_null(config_option_find("listenport"), "names are case-sensitive");
	cr_assert_eq(options_check(&o, err, sizeof(err)), 0);
	options_free(&o);
}

Test(config, defaults)
{
	struct config *cfg = start(NULL, NULL);
	const struct options *o = config_startup(cfg);
	char *kv = path_in("namesrv/kvConfig.json"), *cs = path_in("namesrv/namesrv.properties");

	cr_assert_str_eq(o->kvConfigPath, kv);
	cr_assert_str_eq(o->configStorePath, cs);
	cr_assert_str_eq(o->rocketmqHome, "");
	cr_assert_eq(o->listenPort, 9876);
	cr_assert_str_eq(o->bindAddress, "0.0.0.0");
	cr_assert_str_eq(o->productEnvName, "center");
	cr_assert_str_eq(o->configBlackList, "configBlackList;configStorePath;kvConfigPath");
	cr_assert_eq(o->returnOrderTopicConfigToBroker, true);
	cr_assert_eq(o->enableAllTopicList, true);
	cr_assert_eq(o->enableTopicList, true);
	cr_assert_eq(o->orderMessageEnable, false);
	cr_assert_eq(o->clientRequestThreadPoolNums, 8);
	cr_assert_eq(o->defaultThreadPoolNums, 16);
	cr_assert_eq(o->clientRequestThreadPoolQueueCapacity, 50000);
	cr_assert_eq(o->defaultThreadPoolQueueCapacity, 10000);
	cr_assert_eq(o->scanNotActiveBrokerInterval, 5000);
	cr_assert_eq(o->unRegisterBrokerQueueCapacity, 3000);
	cr_assert_eq(o->waitSecondsForService, 45);
	cr_assert_eq(o->serverWorkerThreads, 0);
	cr_assert_eq(o->serverSelectorThreads, 0);
	cr_assert_eq(o->serverChannelMaxIdleTimeSeconds, 120);
	cr_assert_eq(o->serverSocketBacklog, 1024);
	cr_assert_eq(o->serverOnewaySemaphoreValue, 256);
	cr_assert_eq(o->serverAsyncSemaphoreValue, 64);
	cr_assert_eq(o->shutdownWaitTimeSeconds, 30);
	cr_assert_eq(o->maxFrameSize, 16777216);
	cr_assert_eq(o->processorQueueCapacity, 10000);
	cr_assert_eq(o->routeQueryInline, true);
	cr_assert_eq(o->registerInflateMaxBytes, 64 << 20);
	cr_assert_eq(o->outboundPauseBytes, 4 << 20);
	cr_assert_eq(o->outboundCloseBytes, 64 << 20);
	cr_assert_str_eq(o->logLevel, "INFO");
	cr_assert_null(config_file(cfg));
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->listenPort, 9876);
	rcu_read_unlock();
	config_destroy(cfg);
	free(kv);
	free(cs);
}

Test(config, rocketmq_home_from_env)
{
	struct config *cfg;

	setenv("ROCKETMQ_HOME", "/opt/rocketmq", 1);
	cfg = start(NULL, NULL);
	cr_assert_str_eq(config_startup(cfg)->rocketmqHome, "/opt/rocketmq");
	config_destroy(cfg);
}

/* ---- -p ---- */

Test(config, print_options_java_console_format)
{
	char *file = write_file("n.properties", "listenPort=19999\norderMessageEnable=true\n");
	struct config *cfg = NULL;
	enum config_action act;
	char err[256], *out = NULL, *line, *save = NULL;
	size_t outlen = 0, n, i = 0;
	const struct config_option *tab = config_options(&n);
	FILE *f;
	regex_t re;

	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), "-c", file, "-p", NULL), 0, "%s", err);
	cr_assert_eq(act, CONFIG_ACTION_PRINT);
	f = open_memstream(&out, &outlen);
	config_print_options(cfg, f);
	fclose(f);
	cr_assert_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} INFO main - ([A-Za-z.]+)=(.*)$",
			     REG_EXTENDED), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		regmatch_t m[3];
		cr_assert_lt(i, n, "more lines than options");
		cr_assert_eq(regexec(&re, line, 3, m, 0), 0, "line '%s'", line);
		cr_assert_eq((size_t)(m[1].rm_eo - m[1].rm_so), strlen(tab[i].name));
		cr_assert_eq(strncmp(line + m[1].rm_so, tab[i].name, strlen(tab[i].name)), 0,
			     "table order: expected %s in '%s'", tab[i].name, line);
		if (strcmp(tab[i].name, "listenPort") == 0)
			cr_assert_str_eq(line + m[2].rm_so, "19999");
		if (strcmp(tab[i].name, "configStorePath") == 0)
			cr_assert_str_eq(line + m[2].rm_so, file);
		if (strcmp(tab[i].name, "orderMessageEnable") == 0)
			cr_assert_str_eq(line + m[2].rm_so, "true");
		if (strcmp(tab[i].name, "rocketmqHome") == 0)
			cr_assert_str_eq(line + m[2].rm_so, "", "null strings print empty");
	}
	cr_assert_eq(i, n, "one line per option");
	cr_assert_str_eq(tab[0].name, "rocketmqHome");
	cr_assert_str_eq(tab[22].name, "bindAddress", "Netty options follow NamesrvConfig's 22");
	regfree(&re);
	free(out);
	free(file);
	config_destroy(cfg);
}

Test(config, help_and_usage)
{
	struct config *cfg = NULL;
	enum config_action act;
	char err[256], *out = NULL;
	size_t outlen = 0;
	FILE *f;

	/* -h wins even over an argument that would be an error */
	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), "--bogus=1", "-h", NULL), 0);
	cr_assert_eq(act, CONFIG_ACTION_HELP);
	cr_assert_not_null(cfg);
	cr_assert_eq(config_startup(cfg)->listenPort, 9876);
	config_destroy(cfg);
	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), "--help", NULL), 0);
	cr_assert_eq(act, CONFIG_ACTION_HELP);
	config_destroy(cfg);
	f = open_memstream(&out, &outlen);
	config_print_usage(f);
	fclose(f);
	cr_assert_not_null(strstr(out, "-c,--configFile"));
	cr_assert_not_null(strstr(out, "-p,--printConfigItem"));
	cr_assert_not_null(strstr(out, "--KEY=VALUE"));
	free(out);
}

/* ---- command line and file ---- */

Test(config, file_then_overrides)
{
	char *file = write_file("n.properties",
				"listenPort=19999\nbindAddress=  127.0.0.1  \nlogLevel=warn\n"
				"configStorePath=/elsewhere/x.properties\nfooBar=1\n");
	struct config *cfg = start(file, "--listenPort=20000", "--enableTopicList=FALSE", NULL);
	const struct options *o = config_startup(cfg);

	cr_assert_eq(o->listenPort, 20000, "the command line wins over the file");
	cr_assert_str_eq(o->bindAddress, "127.0.0.1", "strings are trimmed");
	cr_assert_str_eq(o->logLevel, "WARN");
	cr_assert_eq(o->enableTopicList, false);
	cr_assert_str_eq(o->configStorePath, file, "the -c file is the store path");
	cr_assert_str_eq(config_file(cfg), file);
	config_destroy(cfg);
	free(file);
}

Test(config, long_and_joined_file_forms)
{
	char *file = write_file("n.properties", "listenPort=19001\n");
	char *joined, *eq;
	struct config *cfg;
	enum config_action act;
	char err[256];

	cr_assert(asprintf(&joined, "-c%s", file) > 0);
	cr_assert(asprintf(&eq, "--configFile=%s", file) > 0);
	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), joined, "-n", "127.0.0.1:9876", NULL), 0, "%s", err);
	cr_assert_eq(config_startup(cfg)->listenPort, 19001);
	config_destroy(cfg);
	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), eq, "--printConfigItem", NULL), 0, "%s", err);
	cr_assert_eq(act, CONFIG_ACTION_PRINT);
	cr_assert_eq(config_startup(cfg)->listenPort, 19001);
	config_destroy(cfg);
	cr_assert_eq(run_args(&cfg, &act, err, sizeof(err), "--configFile", file, NULL), 0, "%s", err);
	config_destroy(cfg);
	free(joined);
	free(eq);
	free(file);
}

static void expect_error(const char *what, const char *needle1, const char *needle2, ...)
{
	char *argv[16];
	int argc = 0;
	struct config *cfg = (struct config *)1;
	enum config_action act;
	char err[512];
	va_list ap;

	argv[argc++] = "rmqns";
	va_start(ap, needle2);
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	cr_assert_lt(config_from_args(argc, argv, &cfg, &act, err, sizeof(err)), 0, "%s: accepted", what);
	cr_assert_null(cfg);
	cr_assert_not_null(strstr(err, needle1), "%s: '%s' lacks '%s'", what, err, needle1);
	if (needle2)
		cr_assert_not_null(strstr(err, needle2), "%s: '%s' lacks '%s'", what, err, needle2);
}

Test(config, options_rmqns_cannot_honour_are_refused_not_ignored)
{
	expect_error("cluster test", "clusterTest", "not supported", "--clusterTest=true", NULL);
	/* the embedded controller: what it cannot run with, each said */
	expect_error("controller without peers", "controllerDLegerPeers", "needs",
		     "--enableControllerInNamesrv=true", NULL);
	char *f = write_file("controller.properties", "enableControllerInNamesrv=true\n");
	expect_error("controller without peers, in a file", "controllerDLegerPeers", NULL, "-c", f, NULL);
	free(f);
	const char *peers = "--controllerDLegerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868";
	expect_error("self id not a peer", "controllerDLegerSelfId", "n7",
		     "--enableControllerInNamesrv=true", peers, "--controllerDLegerSelfId=n7", NULL);
	expect_error("peer without id", "controllerDLegerPeers", NULL, "--enableControllerInNamesrv=true",
		     "--controllerDLegerPeers=127.0.0.1:9878", "--controllerDLegerSelfId=n0", NULL);
	expect_error("controller on listenPort", "listenPort", "9878", "--enableControllerInNamesrv=true",
		     peers, "--controllerDLegerSelfId=n0", "--listenPort=9878", NULL);
	expect_error("raft port past 65535", "controllerRaftPortOffset", "65535",
		     "--enableControllerInNamesrv=true", peers, "--controllerDLegerSelfId=n0",
		     "--controllerRaftPortOffset=60000", NULL);
	expect_error("raft timings", "controllerElectionTimeoutMillis", "below",
		     "--enableControllerInNamesrv=true", peers, "--controllerDLegerSelfId=n0",
		     "--controllerHeartbeatTimeoutMillis=900", NULL);
}

/* Peer TLS: all three files or none, each readable; the reason says which. */
Test(config, controller_peer_tls_needs_three_readable_files)
{
	char file[] = "/tmp/rmqns-test-peer-tls-XXXXXX", cert[80], key[80], trust[80], gone[80];
	int fd = mkstemp(file);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(cert, sizeof cert, "--controllerPeerTlsCertPath=%s", file);
	snprintf(key, sizeof key, "--controllerPeerTlsKeyPath=%s", file);
	snprintf(trust, sizeof trust, "--controllerPeerTlsTrustCertPath=%s", file);
	snprintf(gone, sizeof gone, "--controllerPeerTlsKeyPath=%s.gone", file);
	const char *on = "--enableControllerInNamesrv=true", *self = "--controllerDLegerSelfId=n0";
	const char *peers = "--controllerDLegerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868";
	expect_error("certificate alone", "controllerPeerTlsKeyPath", "not set", on, peers, self, cert,
		     NULL);
	expect_error("certificate and key", "controllerPeerTlsTrustCertPath", "not set", on, peers,
		     self, cert, key, NULL);
	expect_error("trust alone", "controllerPeerTlsCertPath", "not set", on, peers, self, trust,
		     NULL);
	expect_error("a key that is not there", "controllerPeerTlsKeyPath", "cannot be read", on, peers,
		     self, cert, gone, trust, NULL);
	unlink(file);
}

Test(config, command_line_errors)
{
	expect_error("unknown key", "fooBar", "unknown", "--fooBar=1", NULL);
	expect_error("case matters", "listenport", NULL, "--listenport=1", NULL);
	expect_error("no value", "--listenPort", NULL, "--listenPort", NULL);
	expect_error("bad int", "listenPort", "x12", "--listenPort=x12", NULL);
	expect_error("out of range", "listenPort", "70000", "--listenPort=70000", NULL);
	expect_error("bad bool", "enableTopicList", "yes", "--enableTopicList=yes", NULL);
	expect_error("bad level", "logLevel", "LOUD", "--logLevel=LOUD", NULL);
	expect_error("-c without file", "-c", NULL, "-c", NULL);
	expect_error("missing file", "/nonexistent/x.properties", NULL, "-c", "/nonexistent/x.properties", NULL);
	expect_error("positional", "stray", NULL, "stray", NULL);
	expect_error("unknown dash", "-x", NULL, "-x", NULL);
	expect_error("limits conflict", "outboundCloseBytes", "outboundPauseBytes",
		     "--outboundPauseBytes=8388608", "--outboundCloseBytes=4194304", NULL);
}

/* ---- the environment: RMQNS_<option> ---- */

Test(config, env_names_are_prefixed_and_unique)
{
	size_t n;
	const struct config_option *tab = config_options(&n);
	char a[128], b[128];

	cr_assert_eq(config_option_env_name(config_option_find("listenPort"), a, sizeof(a)), 0);
	cr_assert_str_eq(a, "RMQNS_listenPort");
	cr_assert_eq(config_option_env_name(config_option_find("tls.server.mode"), a, sizeof(a)), 0);
	cr_assert_str_eq(a, "RMQNS_tls_server_mode");
	cr_assert_lt(config_option_env_name(config_option_find("listenPort"), a, 8), 0, "too short");
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			cr_assert_eq(config_option_env_name(&tab[i], a, sizeof(a)), 0);
			cr_assert_eq(config_option_env_name(&tab[j], b, sizeof(b)), 0);
			cr_assert_str_neq(a, b, "%s and %s share a variable", tab[i].name, tab[j].name);
		}
}

Test(config, env_between_file_and_command_line)
{
	char *file = write_file("n.properties",
				"listenPort=19999\nenableTopicList=true\nscanNotActiveBrokerInterval=7000\n");
	struct config *cfg;
	const struct options *o;

	setenv("RMQNS_listenPort", "20002", 1);
	setenv("RMQNS_enableTopicList", "false", 1);
	setenv("RMQNS_tls_server_need_client_auth", "optional", 1);
	setenv("RMQNS_fooBar", "1", 1);        /* not an option: left alone */
	setenv("RMQNS_listenport", "1", 1);    /* names are case-sensitive */
	cfg = start(file, "--listenPort=20003", NULL);
	o = config_startup(cfg);
	cr_assert_eq(o->listenPort, 20003, "the command line wins over the environment");
	cr_assert_eq(o->enableTopicList, false, "the environment wins over the file");
	cr_assert_eq(o->scanNotActiveBrokerInterval, 7000, "the file wins over the defaults");
	cr_assert_str_eq(o->tlsServerNeedClientAuth, "optional");
	config_destroy(cfg);

	cfg = start(NULL, NULL);
	cr_assert_eq(config_startup(cfg)->listenPort, 20002, "without a file or argument");
	config_destroy(cfg);
	free(file);
}

Test(config, env_value_errors_name_the_variable)
{
	setenv("RMQNS_listenPort", "oops", 1);
	expect_error("bad int from env", "RMQNS_listenPort", "oops", NULL);
	setenv("RMQNS_listenPort", "9876", 1);
	setenv("RMQNS_tls_server_mode", "sometimes", 1);
	expect_error("bad choice from env", "RMQNS_tls_server_mode", "sometimes", NULL);
}

Test(config, env_still_applies_after_sighup)
{
	char *file = write_file("n.properties", "enableTopicList=true\n");
	struct config *cfg;

	setenv("RMQNS_enableTopicList", "false", 1);
	cfg = start(file, NULL);
	free(write_file("n.properties", "enableTopicList=true\norderMessageEnable=true\n"));
	cr_assert_eq(config_reload(cfg), 0);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableTopicList, false, "the environment still wins");
	cr_assert_eq(config_current(cfg)->orderMessageEnable, true);
	rcu_read_unlock();
	config_destroy(cfg);
	free(file);
}

Test(config, file_value_errors_name_key_and_value)
{
	char *f1 = write_file("a.properties", "listenPort=9876 \n");
	char *f2 = write_file("b.properties", "scanNotActiveBrokerInterval=5s\n");
	char *f3 = write_file("c.properties", "maxFrameSize=99999999999\n");
	char *f4 = write_file("d.properties", "ok=1\nbad=\\uXYZW\n");
	char *f5 = write_file("e.properties", "clusterTest=tru\n");

	/* Java silently ignores a bad number; rmqns refuses to start. */
	expect_error("trailing space", "listenPort", "'9876 '", "-c", f1, NULL);
	expect_error("bad long", "scanNotActiveBrokerInterval", "5s", "-c", f2, NULL);
	expect_error("too big", "maxFrameSize", "99999999999", "-c", f3, NULL);
	expect_error("bad escape", f4, ":2", "-c", f4, NULL);
	expect_error("bad bool", "clusterTest", "tru", "-c", f5, NULL);
	free(f1);
	free(f2);
	free(f3);
	free(f4);
	free(f5);
}

Test(config, int_forms)
{
	char err[256];
	const struct config_option *port = config_option_find("listenPort");
	const struct config_option *scan = config_option_find("scanNotActiveBrokerInterval");

	cr_assert_eq(options_check_text(port, "+9876", err, sizeof(err)), 0, "Java accepts a plus sign");
	cr_assert_lt(options_check_text(port, "", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(port, "-", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(port, " 1", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(port, "0x10", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(port, "-1", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(scan, "9223372036854775808", err, sizeof(err)), 0);
	cr_assert_lt(options_check_text(port, "2147483648", err, sizeof(err)), 0);
}

/* ---- GET_NAMESRV_CONFIG ---- */

Test(config, get_text_sorted_with_file_keys)
{
	char *file = write_file("n.properties", "listenPort=19999\nzzUnknown=kept\n");
	struct config *cfg = start(file, NULL);
	char *text = get_text(cfg), *copy = strdup(text), *save = NULL, *prev = NULL;
	size_t n, lines = 0;
	char *want;

	config_options(&n);
	cr_assert_eq(text[strlen(text) - 1], '\n', "every line ends with LF");
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
		if (prev)
			cr_assert_lt(strcmp(prev, l), 0, "sorted: '%s' before '%s'", prev, l);
		prev = l;
	}
	cr_assert_eq(lines, n + 1, "every option plus the file's unknown key");
	cr_assert_not_null(strstr(text, "\nlistenPort=19999\n"));
	cr_assert_not_null(strstr(text, "\nzzUnknown=kept\n"));
	cr_assert_eq(strncmp(text, "aclBrokerRequests=false\naclEnable=false\n", 40), 0);
	cr_assert_not_null(strstr(text, "\nbindAddress=0.0.0.0\n"));
	cr_assert(asprintf(&want, "\nconfigStorePath=%s\n", file) > 0);
	cr_assert_not_null(strstr(text, want));
	cr_assert_not_null(strstr(text, "\nserverWorkerThreads=0\n"));
	free(want);
	free(copy);
	free(text);
	free(file);
	config_destroy(cfg);
}

/* ---- UPDATE_NAMESRV_CONFIG: checks ---- */

static void expect_refused(struct config *cfg, const char *body, int32_t want_code, const char *want_remark)
{
	struct config_update *u = (struct config_update *)1;
	int32_t code = -1;
	char remark[512];

	rcu_read_lock();
	cr_assert_lt(config_update_prepare(cfg, body, strlen(body), &u, &code, remark, sizeof(remark)), 0,
		     "'%s' accepted", body);
	rcu_read_unlock();
	cr_assert_null(u);
	cr_assert_eq(code, want_code, "'%s': code %d", body, code);
	cr_assert_not_null(strstr(remark, want_remark), "'%s': remark '%s'", body, remark);
}

static struct config_update *prepare_ok(struct config *cfg, const char *body)
{
	struct config_update *u = NULL;
	int32_t code = -1;
	char remark[512];

	rcu_read_lock();
	cr_assert_eq(config_update_prepare(cfg, body, body ? strlen(body) : 0, &u, &code, remark, sizeof(remark)), 0,
		     "'%s': %s", body, remark);
	rcu_read_unlock();
	cr_assert_eq(code, 0);
	return u;
}

Test(config, update_black_list)
{
	char *file = write_file("n.properties", "configBlackList=listenPort; serverSocketBacklog ;;\n");
	struct config *cfg = start(file, NULL);
	static const char black[] = CONFIG_BLACK_REMARK;

	for (size_t i = 0; i < sizeof config_always_black / sizeof config_always_black[0]; i++)
		expect_refused(cfg, config_always_black[i], 16, black);
	expect_refused(cfg, "enableTopicList=false\nconfigStorePath=/tmp/x", 16, black);
	expect_refused(cfg, "listenPort=1234", 16, black);
	expect_refused(cfg, "serverSocketBacklog=2048", 16, black);
	/* not black-listed by its prefix: refused as the unknown key it is */
	expect_refused(cfg, "configStorePathName=/tmp/x\n", 1, "unknown key: configStorePathName");
	free(file);
	config_destroy(cfg);
}

Test(config, update_checks)
{
	struct config *cfg = start(NULL, NULL);
	char *big;

	expect_refused(cfg, "a=\\uZZZZ", 1, "string2Properties error");
	expect_refused(cfg, "productEnvName=a\\nb", 1, "productEnvName contains a line break");
	expect_refused(cfg, "x\\ry=1", 1, "line break");
	expect_refused(cfg, "listenPort=12x", 1, "listenPort");
	expect_refused(cfg, "listenPort=12x", 1, "'12x'");
	expect_refused(cfg, "enableTopicList=nope", 1, "enableTopicList");
	expect_refused(cfg, "serverWorkerThreads=1", 1, "serverWorkerThreads=1 is below the minimum of 2");
	expect_refused(cfg, "defaultThreadPoolQueueCapacity=1", 1, "defaultThreadPoolQueueCapacity=1 is below the minimum of 1000");
	expect_refused(cfg, "processorQueueCapacity=10", 1, "processorQueueCapacity=10 is below");
	expect_refused(cfg, "maxFrameSize=4096", 1, "maxFrameSize=4096 is below");
	expect_refused(cfg, "clientRequestThreadPoolNums=1", 1, "minimum of 2");
	cr_assert(asprintf(&big, "listenPort=%s", "99999") > 0);
	expect_refused(cfg, big, 1, "listenPort");
	free(big);
	/* allowed */
	cr_assert_null(prepare_ok(cfg, NULL), "no body: nothing to do");
	config_update_free(prepare_ok(cfg, "serverWorkerThreads=0\n"));
	expect_refused(cfg, "fooBar=1\n", 1, "unknown key: fooBar");
	expect_refused(cfg, "enableTopicList=false\nfooBar=1\n", 1, "unknown key: fooBar");
	config_update_free(prepare_ok(cfg, "# only a comment\n"));
	config_destroy(cfg);
}

/* ---- UPDATE_NAMESRV_CONFIG: apply and persist ---- */

static int32_t apply(struct config *cfg, const char *body, char *remark, size_t len)
{
	struct config_update *u = prepare_ok(cfg, body);
	int32_t code = config_update_apply(cfg, u, "127.0.0.1:1", remark, len);
	config_update_free(u);
	return code;
}

Test(config, update_applies_live_and_persists_with_bak)
{
	char *file = write_file("n.properties", "listenPort=19999\nmyKey=old\n");
	struct config *cfg = start(file, NULL);
	char remark[512], *bak, *before, *text, *disk;

	cr_assert(asprintf(&bak, "%s.bak", file) > 0);
	before = tu_read_file(file);
	expect_refused(cfg, "enableTopicList=false\nfooBar=1\n", 1, "unknown key: fooBar");
	cr_assert_eq(apply(cfg, "enableTopicList=false\nlistenPort=1234\nmyKey=new\nlogLevel=debug\n",
			   remark, sizeof(remark)), 0, "%s", remark);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableTopicList, false, "live option applied at once");
	cr_assert_eq(config_current(cfg)->listenPort, 19999, "restart-only option stays in force");
	cr_assert_str_eq(config_current(cfg)->logLevel, "DEBUG");
	rcu_read_unlock();
	cr_assert_eq(config_startup(cfg)->enableTopicList, true);
	text = get_text(cfg);
	cr_assert_not_null(strstr(text, "\nlistenPort=1234\n"), "GET shows the new value, as Java does");
	cr_assert_not_null(strstr(text, "\nenableTopicList=false\n"));
	cr_assert_not_null(strstr(text, "\nmyKey=new\n"), "a key of the -c file is updated");
	cr_assert_null(strstr(text, "fooBar"), "an unknown key is refused, not kept");
	tu_assert_file_eq(file, text, "the file holds exactly the GET text");
	tu_assert_file_eq(bak, before, ".bak holds the previous content");
	free(before);
	free(text);

	/* second update: .bak now holds the first persisted text */
	before = tu_read_file(file);
	cr_assert_eq(apply(cfg, "orderMessageEnable=true\n", remark, sizeof(remark)), 0, "%s", remark);
	disk = tu_read_file(bak);
	cr_assert_str_eq(disk, before);
	free(disk);
	free(before);
	/* the persisted file starts the next run with the same values */
	config_destroy(cfg);
	cfg = start(file, NULL);
	cr_assert_eq(config_startup(cfg)->listenPort, 1234);
	cr_assert_eq(config_startup(cfg)->orderMessageEnable, true);
	cr_assert_eq(config_startup(cfg)->enableTopicList, false);
	config_destroy(cfg);
	free(bak);
	free(file);
}

Test(config, update_without_file_is_memory_only)
{
	struct config *cfg = start(NULL, NULL);
	char remark[256], *store = path_in("namesrv/namesrv.properties");
	struct stat st;

	cr_assert_eq(apply(cfg, "enableAllTopicList=false\n", remark, sizeof(remark)), 0);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableAllTopicList, false);
	rcu_read_unlock();
	cr_assert_lt(stat(store, &st), 0, "nothing written without -c");
	free(store);
	config_destroy(cfg);
}

Test(config, update_persist_failure_changes_nothing)
{
	char *file = write_file("n.properties", "listenPort=19999\n");
	struct config *cfg = start(file, NULL);
	char remark[512], *text_before, *text_after;

	text_before = get_text(cfg);
	/* the -c path becomes a directory: the write must fail */
	cr_assert_eq(unlink(file), 0);
	cr_assert_eq(mkdir(file, 0755), 0);
	cr_assert_eq(apply(cfg, "enableTopicList=false\n", remark, sizeof(remark)), 1);
	cr_assert_not_null(strstr(remark, "cannot persist"), "%s", remark);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableTopicList, true, "nothing applied");
	rcu_read_unlock();
	text_after = get_text(cfg);
	cr_assert_str_eq(text_after, text_before);
	cr_assert_eq(rmdir(file), 0);
	free(text_before);
	free(text_after);
	free(file);
	config_destroy(cfg);
}

Test(config, acl_options_are_never_changed_at_run_time)
{
	char *file = write_file("n.properties", "listenPort=19999\n");
	struct config *cfg = start(file, NULL);

	expect_refused(cfg, "aclEnable=false\n", 16, "black list");
	expect_refused(cfg, "aclReadRequests=false\n", 16, "black list");
	expect_refused(cfg, "aclBrokerRequests=false\n", 16, "black list");
	expect_refused(cfg, "orderMessageEnable=true\naclFile=/tmp/x.yml\n", 16, "black list");
	/* nor the HTTP port's login */
	expect_refused(cfg, "httpWebConfigFile=\n", 16, "black list");
	expect_refused(cfg, "httpProbesOpen=false\n", 16, "black list");
	free(file);
	config_destroy(cfg);
}

Test(config, cve_2023_37582_sequence_writes_only_the_c_file)
{
	char *file = write_file("n.properties", "listenPort=19999\n");
	char *evil = path_in("evil.properties");
	char *kvevil = path_in("evil-kv.json");
	struct config *cfg = start(file, NULL);
	char body[512], remark[256];
	struct stat st;

	snprintf(body, sizeof(body), "configStorePath=%s\n", evil);
	expect_refused(cfg, body, 16, "black list");
	snprintf(body, sizeof(body), "kvConfigPath=%s\n", kvevil);
	expect_refused(cfg, body, 16, "black list");
	cr_assert_eq(apply(cfg, "listenPort=1111\n", remark, sizeof(remark)), 0);
	cr_assert_lt(stat(evil, &st), 0);
	cr_assert_lt(stat(kvevil, &st), 0);
	rcu_read_lock();
	cr_assert_str_eq(config_current(cfg)->configStorePath, file);
	rcu_read_unlock();
	free(evil);
	free(kvevil);
	free(file);
	config_destroy(cfg);
}

Test(config, update_conflicting_limits_refused)
{
	struct config *cfg = start(NULL, NULL);
	char remark[256];

	cr_assert_eq(apply(cfg, "outboundCloseBytes=4194304\noutboundPauseBytes=8388608\n", remark, sizeof(remark)), 1);
	cr_assert_not_null(strstr(remark, "outboundCloseBytes"));
	config_destroy(cfg);
}

/* ---- SIGHUP ---- */

Test(config, reload_applies_live_and_defers_the_rest)
{
	char *file = write_file("n.properties", "listenPort=19999\nenableTopicList=true\n");
	struct config *cfg = start(file, "--orderMessageEnable=true", NULL);
	char *text;

	tu_write_file(file, "listenPort=20001\nenableTopicList=false\norderMessageEnable=false\nnewKey=1\n");
	cr_assert_eq(config_reload(cfg), 0);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableTopicList, false);
	cr_assert_eq(config_current(cfg)->listenPort, 19999);
	cr_assert_eq(config_current(cfg)->orderMessageEnable, true, "the command line still wins");
	rcu_read_unlock();
	text = get_text(cfg);
	cr_assert_not_null(strstr(text, "\nlistenPort=20001\n"));
	cr_assert_not_null(strstr(text, "\nnewKey=1\n"));
	free(text);

	/* a broken file changes nothing */
	tu_write_file(file, "enableTopicList=true\nlistenPort=oops\n");
	cr_assert_lt(config_reload(cfg), 0);
	rcu_read_lock();
	cr_assert_eq(config_current(cfg)->enableTopicList, false);
	rcu_read_unlock();
	free(file);
	config_destroy(cfg);
}

Test(config, reload_without_file)
{
	struct config *cfg = start(NULL, NULL);

	cr_assert_eq(config_reload(cfg), 0);
	config_destroy(cfg);
}

/* ---- the documented default file ---- */

Test(config, default_conf_documents_every_option)
{
	char *conf = tu_read_file(RMQNS_SOURCE_ROOT "/etc/rmqns.conf");
	size_t n;
	const struct config_option *tab = config_options(&n);
	struct properties p = PROPERTIES_INIT;

	cr_assert_not_null(conf);
	for (size_t i = 0; i < n; i++) {
		char *line;
		if (tab[i].def)
			cr_assert(asprintf(&line, "\n#%s=%s\n", tab[i].name, tab[i].def) > 0);
		else
			cr_assert(asprintf(&line, "\n#%s=", tab[i].name) > 0);
		cr_assert(strstr(conf, line) != NULL || (strcmp(tab[i].name, "listenPort") == 0 &&
							 strstr(conf, "\nlistenPort=9876\n")),
			  "etc/rmqns.conf lacks '%s'", line + 1);
		free(line);
		if (tab[i].type == CONFIG_I32 || tab[i].type == CONFIG_I64) {
			/* the documented range is the table's */
			cr_assert(asprintf(&line, "%" PRId64 " to %" PRId64, tab[i].min, tab[i].max) > 0);
			cr_assert_not_null(strstr(conf, line), "etc/rmqns.conf: %s lacks range %s", tab[i].name, line);
			free(line);
		}
	}
	/* and it loads */
	cr_assert_eq(properties_parse(&p, conf, strlen(conf), PROPERTIES_FILE, NULL), 0);
	for (size_t i = 0; i < p.count; i++)
		cr_assert_not_null(config_option_find(p.items[i].key), "unknown key %s", p.items[i].key);
	properties_free(&p);
	free(conf);
}
