/* Every refusal of a controller configuration at start: the binary, given
 * a namesrv.conf or controller.conf written as RocketMQ's documentation
 * writes one, exits 1 and its log names the key at fault and why. Embedded
 * and standalone (--controllerOnly=true), DLedger and jRaft style. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

#define JRAFT_OK "controllerType = jRaft\n" \
	"jRaftInitConf = 127.0.0.1:19880, 127.0.0.1:19881, 127.0.0.1:19882\n" \
	"jRaftControllerRPCAddr = 127.0.0.1:19770, 127.0.0.1:19771, 127.0.0.1:19772\n"

static const struct refusal {
	const char *what;
	const char *conf;
	const char *key, *why;
} refusals[] = {
	{ "controllerType in another case", "controllerType = jraft\n", "controllerType", "jraft" },
	{ "no peers", "controllerDLegerGroup = g1\n", "controllerDLegerPeers", "needs" },
	{ "self id missing",
	  "controllerDLegerPeers = n0-127.0.0.1:19877;n1-127.0.0.1:19878\ncontrollerDLegerSelfId = n2\n",
	  "controllerDLegerSelfId", "not one of" },
	{ "DLedger entry without id", "controllerDLegerPeers = 127.0.0.1:19877\n",
	  "controllerDLegerPeers", "id-host:port" },
	{ "DLedger Raft port past 65535",
	  "controllerDLegerPeers = n0-127.0.0.1:65000\ncontrollerDLegerSelfId = n0\n",
	  "controllerRaftPortOffset", "65535" },
	{ "jRaft self missing", JRAFT_OK "jRaftServerId = 127.0.0.1:19999\n", "jRaftServerId",
	  "not one of" },
	{ "jRaft lists of different lengths",
	  "controllerType = jRaft\njRaftServerId = 127.0.0.1:19880\n"
	  "jRaftInitConf = 127.0.0.1:19880,127.0.0.1:19881\njRaftControllerRPCAddr = 127.0.0.1:19770\n",
	  "jRaftControllerRPCAddr", "1 entries" },
	{ "jRaft port past 65535",
	  "controllerType = jRaft\njRaftServerId = 127.0.0.1:19880\n"
	  "jRaftInitConf = 127.0.0.1:19880,127.0.0.1:65536\n"
	  "jRaftControllerRPCAddr = 127.0.0.1:19770,127.0.0.1:19771\n",
	  "jRaftInitConf", "65535" },
	{ "jRaft empty list",
	  "controllerType = jRaft\njRaftServerId = 127.0.0.1:19880\njRaftInitConf =\n", "jRaftInitConf",
	  "empty" },
	{ "jRaft duplicate entry",
	  "controllerType = jRaft\njRaftServerId = 127.0.0.1:19880\n"
	  "jRaftInitConf = 127.0.0.1:19880,127.0.0.1:19880\n"
	  "jRaftControllerRPCAddr = 127.0.0.1:19770,127.0.0.1:19771\n",
	  "jRaftInitConf", "twice" },
	{ "jRaft Raft and controller on one port",
	  "controllerType = jRaft\njRaftServerId = 127.0.0.1:19880\n"
	  "jRaftInitConf = 127.0.0.1:19880\njRaftControllerRPCAddr = 127.0.0.1:19880\n",
	  "jRaftServerId", "port each" },
	{ "jRaft election timeout below the heartbeat",
	  JRAFT_OK "jRaftServerId = 127.0.0.1:19880\njRaftElectionTimeoutMs = 100\n",
	  "jRaftElectionTimeoutMs", "below" },
};

static void expect_refused(const struct refusal *r, bool standalone)
{
	char dir[256], path[300], *log = NULL;
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-refusal"), 0);
	snprintf(path, sizeof path, "%s/%s", dir, standalone ? "controller.conf" : "namesrv.conf");
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "%s%s", standalone ? "" : "enableControllerInNamesrv = true\n", r->conf);
	cr_assert_eq(fclose(f), 0);
	const char *args[] = { "-c", path, "--listenPort=0",
			       standalone ? "--controllerOnly=true" : NULL, NULL };
	int st = harness_run_logged(args, 20000, NULL, &log);
	cr_expect(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s%s: status %#x", r->what,
		  standalone ? " (standalone)" : "", st);
	cr_expect(log && strstr(log, r->key) && strstr(log, r->why), "%s%s: the log lacks '%s' and "
		  "'%s':\n%s", r->what, standalone ? " (standalone)" : "", r->key, r->why,
		  log ? log : "(none)");
	free(log);
	harness_rmdir(dir);
}

Test(controller_refusals, every_refusal_exits_1_and_names_the_key)
{
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		expect_refused(&refusals[i], false);
		expect_refused(&refusals[i], true);
	}
}

/* the other type's keys are warned about, by name and with the type */
Test(controller_refusals, keys_of_the_other_type_are_warned_about)
{
	char dir[256], path[300];
	int port = harness_free_port_pair(1000);
	cr_assert_gt(port, 0);
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-refusal"), 0);
	snprintf(path, sizeof path, "%s/controller.conf", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "controllerType = jRaft\njRaftServerId = 127.0.0.1:%d\njRaftInitConf = 127.0.0.1:%d\n"
		"jRaftControllerRPCAddr = 127.0.0.1:%d\ncontrollerStorePath = %s/store\n"
		"controllerDLegerGroup = g1\ncontrollerDLegerPeers = n0-127.0.0.1:19877\n",
		port + 1000, port + 1000, port, dir);
	cr_assert_eq(fclose(f), 0);
	struct harness_server s;
	const char *args[] = { "-c", path, "--controllerOnly=true", NULL };
	cr_assert_eq(harness_start(&s, args), 0);
	cr_expect_eq(s.port, port, "the boot line names the controller's port");
	cr_expect(harness_wait_log(&s, "controllerDLegerPeers is set but unused: controllerType=jRaft",
				   10000));
	cr_expect(harness_wait_log(&s, "controllerDLegerGroup is set but unused", 10000));
	cr_expect(harness_wait_log(&s, "mode: standalone controller", 10000));
	cr_expect_eq(harness_cleanup(&s), 0);
	harness_rmdir(dir);
}
