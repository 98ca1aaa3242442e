/* rmqns-admin: the NameServer side of mqadmin, native. Parses the command
 * line (mqadmin's subcommand names and short options), then runs one
 * subcommand; see usage() for the list. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"

struct command {
	const char *name;
	const char *opts;     /* getopt letters of its own options */
	const char *required; /* letters that must be given */
	int (*run)(struct admin_ctx *ctx);
	const char *synopsis;
};

static const struct command commands[] = {
	{ "clusterList", "", "", cmd_cluster_list, "brokers by cluster: name, id, address" },
	{ "brokers", "", "", cmd_brokers,
	  "every broker with cluster, name, id, role and address; with the server's HTTP\n"
	  "                       endpoint (its httpPort, or --http HOST:PORT) also heartbeat age,\n"
	  "                       timeout and topic count" },
	{ "topicRoute", "t:", "t", cmd_topic_route, "-t TOPIC: the topic's route" },
	{ "topicList", "c", "", cmd_topic_list, "[-c]: every topic (with -c: by cluster)" },
	{ "getNamesrvConfig", "", "", cmd_get_namesrv_config, "the server's options" },
	{ "updateNamesrvConfig", "k:v:", "kv", cmd_update_namesrv_config, "-k KEY -v VALUE: change an option" },
	{ "updateKvConfig", "s:k:v:", "skv", cmd_update_kv_config, "-s NAMESPACE -k KEY -v VALUE: set a KV entry" },
	{ "deleteKvConfig", "s:k:", "sk", cmd_delete_kv_config, "-s NAMESPACE -k KEY: delete a KV entry" },
	{ "getKvConfig", "s:k:", "sk", cmd_get_kv_config, "-s NAMESPACE -k KEY: one KV value" },
	{ "getKvList", "s:", "s", cmd_get_kv_list, "-s NAMESPACE: every entry of a namespace" },
	{ "wipeWritePerm", "b:", "b", cmd_wipe_write_perm, "-b BROKER: clear the write permission of its topics" },
	{ "addWritePerm", "b:", "b", cmd_add_write_perm, "-b BROKER: give its topics read and write" },
	{ "deleteTopic", "t:c:", "t", cmd_delete_topic, "-t TOPIC [-c CLUSTER]: drop the topic's routes" },
	{ "updateOrderConf", "t:v:m:", "tm", cmd_update_order_conf,
	  "-t TOPIC -m put|get|delete [-v broker:num;...]: order topic config" },
	{ "probe", "", "", cmd_probe, "exit 0 when every listed server answers" },
	{ "clusterDiff", "", "", cmd_cluster_diff, "where the listed servers disagree (exit 1 if they do)" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: rmqns-admin <subcommand> [-n \"host:port;host:port\"] [--json] "
		   "[--timeout MS] [options]\n\nsubcommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-20s %s\n", commands[i].name, commands[i].synopsis);
	fprintf(f, "\ncommon options:\n"
		   "  -n, --namesrvAddr LIST  NameServers, ';'-separated (default $NAMESRV_ADDR, else %s);\n"
		   "                          reads ask the first that answers, writes go to all\n"
		   "      --json              JSON output for scripts\n"
		   "      --timeout MS        per request, connect included (default %d)\n"
		   "      --access-key AK     sign every request as an ACL 1.0 client (the server's\n"
		   "      --secret-key SK     aclEnable); default $RMQNS_ACCESS_KEY / $RMQNS_SECRET_KEY\n"
		   "  -h, --help              this text\n"
		   "\nexit codes: 0 ok, 1 clusterDiff found differences, 2 usage, 3 no answer\n"
		   "(refused, timed out, closed), 4 a server answered with an error code,\n"
		   "5 a write took effect on some servers only, 6 an unreadable answer\n",
		ADMIN_DEFAULT_NAMESRV, ADMIN_DEFAULT_TIMEOUT_MS);
}

enum { OPT_JSON = 1000, OPT_TIMEOUT, OPT_HTTP, OPT_ACCESS_KEY, OPT_SECRET_KEY };

static const struct option long_opts[] = {
	{ "namesrvAddr", required_argument, NULL, 'n' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "access-key", required_argument, NULL, OPT_ACCESS_KEY },
	{ "secret-key", required_argument, NULL, OPT_SECRET_KEY },
	{ "help", no_argument, NULL, 'h' },
	{ "topic", required_argument, NULL, 't' },
	{ "namespace", required_argument, NULL, 's' },
	{ "key", required_argument, NULL, 'k' },
	{ "value", required_argument, NULL, 'v' },
	{ "brokerName", required_argument, NULL, 'b' },
	{ "method", required_argument, NULL, 'm' },
	{ NULL, 0, NULL, 0 },
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int parse(int argc, char **argv, const struct command *cmd, struct admin_ctx *ctx)
{
	char optstring[64];
	const char *namesrv = getenv("NAMESRV_ADDR");
	char err[256];
	char given[16] = "";

	const char *access_key = getenv("RMQNS_ACCESS_KEY"), *secret_key = getenv("RMQNS_SECRET_KEY");

	snprintf(optstring, sizeof optstring, ":hn:%s", cmd->opts);
	ctx->timeout_ms = ADMIN_DEFAULT_TIMEOUT_MS;
	optind = 1;
	int li = -1;
	for (int ch; (ch = getopt_long(argc, argv, optstring, long_opts, &li)) != -1; li = -1) {
		size_t ng = strlen(given);
		if (ch < 128 && ch != ':' && ch != '?' && strchr(cmd->opts, ch) && ng + 1 < sizeof given) {
			given[ng] = (char)ch;
			given[ng + 1] = '\0';
		}
		/* long names reach every letter: keep each command to its own */
		if (ch < 128 && ch != 'h' && ch != 'n' && ch != ':' && ch != '?' && !strchr(cmd->opts, ch)) {
			if (li >= 0)
				fprintf(stderr, "rmqns-admin: %s takes no option --%s\n", cmd->name, long_opts[li].name);
			else
				fprintf(stderr, "rmqns-admin: %s takes no option -%c\n", cmd->name, ch);
			return -1;
		}
		switch (ch) {
		case 'h': usage(stdout); exit(ADMIN_EXIT_OK);
		case 'n': namesrv = optarg; break;
		case OPT_JSON: ctx->json = true; break;
		case OPT_HTTP:
			if (strcmp(cmd->name, "brokers") != 0) {
				fprintf(stderr, "rmqns-admin: %s takes no option --http\n", cmd->name);
				return -1;
			}
			ctx->a.http = optarg;
			break;
		case OPT_ACCESS_KEY: access_key = optarg; break;
		case OPT_SECRET_KEY: secret_key = optarg; break;
		case OPT_TIMEOUT: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 3600000) {
				fprintf(stderr, "rmqns-admin: --timeout wants milliseconds, not \"%s\"\n", optarg);
				return -1;
			}
			ctx->timeout_ms = (int)v;
			break;
		}
		case 't': ctx->a.topic = optarg; break;
		case 'c':
			if (strcmp(cmd->name, "topicList") == 0)
				ctx->a.by_cluster = true;
			else
				ctx->a.cluster = optarg;
			break;
		case 'k': ctx->a.key = optarg; break;
		case 'v': ctx->a.value = optarg; break;
		case 's': ctx->a.ns = optarg; break;
		case 'b': ctx->a.broker = optarg; break;
		case 'm': ctx->a.method = optarg; break;
		case ':':
			fprintf(stderr, "rmqns-admin: %s: option %s needs a value\n", cmd->name, argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "rmqns-admin: %s: unknown option %s\n", cmd->name, argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rmqns-admin: %s: unexpected argument \"%s\"\n", cmd->name, argv[optind]);
		return -1;
	}
	for (const char *r = cmd->required; *r; r++) {
		if (!strchr(given, *r)) {
			fprintf(stderr, "rmqns-admin: %s needs -%c (see rmqns-admin --help)\n", cmd->name, *r);
			return -1;
		}
	}
	if (access_key && !*access_key)
		access_key = NULL;
	if (secret_key && !*secret_key)
		secret_key = NULL;
	if (!access_key != !secret_key) {
		fprintf(stderr, "rmqns-admin: --access-key and --secret-key go together\n");
		return -1;
	}
	target_set_credentials(access_key, secret_key);
	if (target_list_parse(namesrv && *namesrv ? namesrv : ADMIN_DEFAULT_NAMESRV, &ctx->targets, err,
			      sizeof err) < 0) {
		fprintf(stderr, "rmqns-admin: %s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct admin_ctx ctx;

	if (argc < 2) {
		usage(stderr);
		return ADMIN_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return ADMIN_EXIT_OK;
	}
	const struct command *cmd = find_command(argv[1]);
	if (!cmd) {
		fprintf(stderr, "rmqns-admin: unknown subcommand \"%s\" (see rmqns-admin --help)\n", argv[1]);
		return ADMIN_EXIT_USAGE;
	}
	/* argv[1] stands in for the program name: options follow the subcommand */
	if (parse(argc - 1, argv + 1, cmd, &ctx) < 0)
		return ADMIN_EXIT_USAGE;
	json_object_seed(0); /* before clusterDiff's threads use jansson */
	return cmd->run(&ctx);
}
