/* rmqns-admin: the NameServer and controller side of mqadmin, native. Parses the command
 * line (mqadmin's subcommand names and short options), then runs one
 * subcommand; see usage() for the list. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"
#include "rmqns/version.h"
#include "tlsopts.h"

struct command {
	const char *name;
	const char *opts;     /* getopt letters of its own options */
	const char *required; /* letters that must be given */
	int (*run)(struct admin_ctx *ctx);
	const char *args;     /* its own options, for the usage line */
	const char *synopsis; /* one line for the list */
	const char *help;     /* more, for `rmqns-admin SUBCOMMAND -h` (may be "") */
};

/* An N among the required letters stands for mqadmin's "-bn NAME" (the
 * broker name); -b is then a broker id. */

/* Help shared by the controller subcommands. */
#define CTL_ADDR_HELP \
	"  -a, --controllerAddress LIST  controller nodes (their controllerDLegerPeers\n" \
	"                          addresses), ';'-separated\n"
#define CTL_LEADER_HELP \
	"Asks the first listed node that answers who leads (1005) and sends the request\n" \
	"to that leader, as mqadmin does: any node of the group will do.\n"

static const struct command commands[] = {
	{ "clusterList", "", "", cmd_cluster_list, "", "brokers by cluster: name, id, address", "" },
	{ "brokers", "", "", cmd_brokers, "[--http HOST:PORT]",
	  "every broker: cluster, name, id, role, address, heartbeat age",
	  "Every broker with its cluster, name, id, role and address. With the server's\n"
	  "HTTP endpoint (its httpPort, or --http HOST:PORT) also the heartbeat age, the\n"
	  "timeout and the topic count.\n" },
	{ "topicRoute", "t:", "t", cmd_topic_route, "-t TOPIC", "the topic's route",
	  "  -t, --topic TOPIC       the topic\n"
	  "Exit 4 (code 17 TOPIC_NOT_EXIST) when no server route has it.\n" },
	{ "topicList", "c", "", cmd_topic_list, "[-c]", "every topic (with -c: by cluster)",
	  "  -c                      list the cluster of every topic (retry and DLQ topics\n"
	  "                          left out, as mqadmin does)\n" },
	{ "getNamesrvConfig", "", "", cmd_get_namesrv_config, "", "the server's options", "" },
	{ "updateNamesrvConfig", "k:v:", "kv", cmd_update_namesrv_config, "-k KEY -v VALUE",
	  "change an option on every server",
	  "  -k, --key KEY           the option (as getNamesrvConfig names it)\n"
	  "  -v, --value VALUE       its new value\n"
	  "A key the server does not know is refused (code 1, \"unknown key: KEY\"): exit 4.\n"
	  "A server started with -c writes its whole effective configuration to that file.\n" },
	{ "updateKvConfig", "s:k:v:", "skv", cmd_update_kv_config, "-s NAMESPACE -k KEY -v VALUE",
	  "set a KV entry", "" },
	{ "deleteKvConfig", "s:k:", "sk", cmd_delete_kv_config, "-s NAMESPACE -k KEY", "delete a KV entry", "" },
	{ "getKvConfig", "s:k:", "sk", cmd_get_kv_config, "-s NAMESPACE -k KEY", "one KV value", "" },
	{ "getKvList", "s:", "s", cmd_get_kv_list, "-s NAMESPACE", "every entry of a namespace", "" },
	{ "wipeWritePerm", "b:", "b", cmd_wipe_write_perm, "-b BROKER",
	  "clear the write permission of its topics",
	  "  -b, --brokerName BROKER the broker name\n"
	  "Each server answers how many topics it changed; when no server knows the\n"
	  "broker (0 everywhere) the run ends with a warning and exit 4.\n" },
	{ "addWritePerm", "b:", "b", cmd_add_write_perm, "-b BROKER", "give its topics read and write",
	  "  -b, --brokerName BROKER the broker name\n"
	  "As wipeWritePerm: 0 topics on every server is a warning and exit 4.\n" },
	{ "deleteTopic", "t:c:", "tc", cmd_delete_topic, "-t TOPIC -c CLUSTER",
	  "delete the topic on the cluster's masters, then on every server",
	  "  -t, --topic TOPIC       the topic\n"
	  "  -c, --clusterName NAME  its cluster\n"
	  "As mqadmin: the master brokers of the cluster (from the first server that\n"
	  "answers GET_BROKER_CLUSTER_INFO) delete the topic first (DELETE_TOPIC_IN_BROKER),\n"
	  "so that their next registration does not bring it back; then every NameServer\n"
	  "drops its route (DELETE_TOPIC_IN_NAMESRV). Each step is reported. Exit 5 when\n"
	  "some step failed and others took effect.\n" },
	{ "updateOrderConf", "t:v:m:", "tm", cmd_update_order_conf, "-t TOPIC -m put|get|delete [-v broker:num;...]",
	  "order topic config", "" },
	{ "probe", "", "", cmd_probe, "", "exit 0 when every listed server answers",
	  "Sends GET_BROKER_CLUSTER_INFO to each server. Any well-formed answer means the\n"
	  "server is alive, an error code included (an ACL refusal, code 16, says so).\n" },
	{ "clusterDiff", "a:", "", cmd_cluster_diff, "[-a CONTROLLERS]",
	  "where the listed servers disagree (exit 1 if they do)",
	  "Compares every NameServer of -n (brokers and topic routes), and with -a the\n"
	  "controller nodes: each is asked who leads (1005), and nodes that name different\n"
	  "leaders, or more than one node that says it leads, are reported. 1005 carries\n"
	  "no Raft term, nor does any other controller answer, so only the leader is\n"
	  "compared, not the term. With -a and neither -n nor $NAMESRV_ADDR, only the\n"
	  "controllers are compared.\n"
	  "  -a, --controllerAddress LIST  controller nodes, ';'-separated\n" },
	{ "getControllerMetaData", "a:", "a", cmd_get_controller_metadata, "-a CONTROLLER",
	  "a controller node's view: group, leader, peers",
	  CTL_ADDR_HELP
	  "Asks the first listed node that answers (1005): the group, the leader's id and\n"
	  "address (null while it knows none), whether this node leads (#IsLeader, which\n"
	  "mqadmin does not print), and every peer.\n" },
	{ "getSyncStateSet", "a:b:c:", "a", cmd_get_sync_state_set,
	  "-a CONTROLLER (-b NAME[,NAME] | -c CLUSTER)",
	  "master, epochs and in-sync replicas of broker sets",
	  CTL_ADDR_HELP
	  "  -b, --brokerName NAMES  broker sets, ','-separated\n"
	  "  -c, --clusterName NAME  every broker set of the cluster, as the first\n"
	  "                          NameServer of -n that answers lists them\n"
	  CTL_LEADER_HELP
	  "A name the controller does not know is reported on stderr; none known: exit 4.\n" },
	{ "electMaster", "a:c:b:", "acbN", cmd_elect_master, "-a CONTROLLER -c CLUSTER -bn NAME -b ID",
	  "make that broker the master of its set", CTL_ADDR_HELP
	  "  -c, --clusterName NAME  the broker's cluster\n"
	  "  -bn, --brokerName NAME  its broker set\n"
	  "  -b, --brokerId ID       the controller id of the broker to elect\n"
	  CTL_LEADER_HELP
	  "An admin election (designateElect): the broker must be alive and, unless the\n"
	  "controller allows unclean elections, in the in-sync set. Prints the new master\n"
	  "and epochs, then each member of the set (#Broker ID ADDRESS). The controller's\n"
	  "refusal (2011: that broker is already master, 2012: it cannot be elected) is\n"
	  "exit 4 with its code and remark.\n" },
	{ "cleanBrokerMetadata", "a:c:b:l", "aN", cmd_clean_broker_metadata,
	  "-a CONTROLLER -bn NAME [-c CLUSTER] [-b \"ID;ID\"] [-l]",
	  "remove dead brokers (or a whole set) from the controller", CTL_ADDR_HELP
	  "  -bn, --brokerName NAME  the broker set\n"
	  "  -c, --clusterName NAME  its cluster (required unless -l)\n"
	  "  -b, --brokerControllerIdsToClean \"ID;ID\"  the controller ids to remove (none:\n"
	  "                          the whole set)\n"
	  "  -l, --cleanLivingBroker also brokers that are alive\n"
	  CTL_LEADER_HELP },
	{ "exportControllerState", "a:o:", "ao", cmd_export_controller_state,
	  "-a CONTROLLERS -n NAMESERVERS -o FILE",
	  "every broker set's controller state into a JSON file (controllerImportFile)", CTL_ADDR_HELP
	  "  -o, --output FILE       where the JSON goes\n"
	  "Every broker set the first NameServer of -n that answers lists, with what the\n"
	  "controller leader (a Java 5.x group or an rmqns one) holds for it: ids and\n"
	  "addresses, master, master epoch, sync-state set and its epoch, next id. rmqns\n"
	  "nodes started with controllerImportFile=FILE on empty stores begin from it.\n" },
	{ "getControllerConfig", "a:", "a", cmd_get_controller_config, "-a CONTROLLERS",
	  "every listed controller node's options", CTL_ADDR_HELP
	  "Asks each node (each has its own options); exit as the first that failed.\n" },
	{ "updateControllerConfig", "a:k:v:", "akv", cmd_update_controller_config,
	  "-a CONTROLLERS -k KEY -v VALUE", "change an option on every listed controller node",
	  CTL_ADDR_HELP
	  "  -k, --key KEY           the option\n"
	  "  -v, --value VALUE       its new value\n"
	  "One line per node; exit 5 when some nodes took it and others did not.\n" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage_common(FILE *f)
{
	fprintf(f, "common options:\n"
		   "  -n, --namesrvAddr LIST  NameServers, ';'-separated (default $NAMESRV_ADDR, else %s);\n"
		   "                          reads ask the first that answers, writes go to all\n"
		   "      --json              JSON output for scripts; failures too: {\"ok\":false,\n"
		   "                          \"exit\":N,\"error\":...} on stdout\n"
		   "      --timeout MS        per request, connect included (default %d)\n"
		   "      --access-key AK     sign every request as an ACL 1.0 client (the server's\n"
		   "      --secret-key SK     aclEnable); default $RMQNS_ACCESS_KEY / $RMQNS_SECRET_KEY\n"
		   "      --tls               talk TLS; without a CA file the server's certificate\n"
		   "                          is not checked\n"
		   "      --tls-ca FILE       verify the server's certificate against this PEM CA,\n"
		   "                          and that its subjectAltName names the host dialled\n"
		   "                          (an IP entry for an address, a DNS entry for a name)\n"
		   "      --tls-no-verify-hostname  the chain only, not the name (Java's clients check\n"
		   "                          no name; -Dtls.client.authServer=false checks nothing)\n"
		   "      --tls-cert FILE     present this client certificate (PEM), with\n"
		   "      --tls-key FILE      its key (a server with tls.server.need.client.auth)\n"
		   "      --tls-key-password PW  the password of an encrypted key\n"
		   "  -D NAME=VALUE           the Java client's TLS properties: tls.enable,\n"
		   "                          tls.client.trustCertPath, tls.client.certPath,\n"
		   "                          tls.client.keyPath, tls.client.keyPassword,\n"
		   "                          tls.client.authServer, tls.config.file (a properties\n"
		   "                          file of these; its values win)\n"
		   "  -h, --help              help (after a subcommand: that subcommand's)\n",
		ADMIN_DEFAULT_NAMESRV, ADMIN_DEFAULT_TIMEOUT_MS);
	fprintf(f, "\nexit codes: 0 ok, 1 clusterDiff found differences, 2 usage, 3 no answer\n"
		   "(refused, timed out, closed, TLS handshake failed), 4 a server answered with an\n"
		   "error code (or a write changed nothing anywhere), 5 a write took effect on some\n"
		   "servers only, 6 an unreadable answer\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rmqns-admin <subcommand> [-n \"host:port;host:port\"] [--json] "
		   "[--timeout MS] [options]\n"
		   "       rmqns-admin <subcommand> -h\n"
		   "       rmqns-admin --version\n\nsubcommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char head[80];
		snprintf(head, sizeof head, "%s%s%s", commands[i].name, *commands[i].args ? " " : "",
			 commands[i].args);
		if (strlen(head) > 22)
			fprintf(f, "  %s\n  %-22s %s\n", head, "", commands[i].synopsis);
		else
			fprintf(f, "  %-22s %s\n", head, commands[i].synopsis);
	}
	fprintf(f, "\nThe controller subcommands (and clusterDiff -a) talk to controller nodes at their\n"
		   "controllerDLegerPeers addresses, -a \"host:port;host:port\"; the others to the\n"
		   "NameServers of -n.\n\n");
	usage_common(f);
}

/* `rmqns-admin SUBCOMMAND -h` */
static void usage_command(FILE *f, const struct command *cmd)
{
	fprintf(f, "usage: rmqns-admin %s%s%s [common options]\n\n%s: %s\n", cmd->name,
		*cmd->args ? " " : "", cmd->args, cmd->name, cmd->synopsis);
	if (*cmd->help)
		fprintf(f, "\n%s", cmd->help);
	fputc('\n', f);
	usage_common(f);
}

enum {
	OPT_JSON = 1000, OPT_TIMEOUT, OPT_HTTP, OPT_ACCESS_KEY, OPT_SECRET_KEY,
	OPT_TLS, OPT_TLS_CA, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_KEY_PASSWORD, OPT_TLS_NO_HOST,
};

static const struct option long_opts[] = {
	{ "namesrvAddr", required_argument, NULL, 'n' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "access-key", required_argument, NULL, OPT_ACCESS_KEY },
	{ "secret-key", required_argument, NULL, OPT_SECRET_KEY },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "tls-ca", required_argument, NULL, OPT_TLS_CA },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-key-password", required_argument, NULL, OPT_TLS_KEY_PASSWORD },
	{ "tls-no-verify-hostname", no_argument, NULL, OPT_TLS_NO_HOST },
	{ "help", no_argument, NULL, 'h' },
	{ "topic", required_argument, NULL, 't' },
	{ "clusterName", required_argument, NULL, 'c' },
	{ "namespace", required_argument, NULL, 's' },
	{ "key", required_argument, NULL, 'k' },
	{ "value", required_argument, NULL, 'v' },
	{ "brokerName", required_argument, NULL, 'b' },
	{ "method", required_argument, NULL, 'm' },
	{ "controllerAddress", required_argument, NULL, 'a' },
	{ "brokerId", required_argument, NULL, 'b' },
	{ "brokerControllerIdsToClean", required_argument, NULL, 'b' },
	{ "cleanLivingBroker", no_argument, NULL, 'l' },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int parse(int argc, char **argv, const struct command *cmd, struct admin_ctx *ctx,
		 struct admin_tls *tls)
{
	char optstring[64];
	const char *namesrv = getenv("NAMESRV_ADDR");
	char err[256];
	char given[16] = "";

	const char *access_key = getenv("RMQNS_ACCESS_KEY"), *secret_key = getenv("RMQNS_SECRET_KEY");

	snprintf(optstring, sizeof optstring, ":hn:D:%s", cmd->opts);
	ctx->timeout_ms = ADMIN_DEFAULT_TIMEOUT_MS;
	bool bn = strchr(cmd->required, 'N') != NULL;
	/* mqadmin's two-letter "-bn", which getopt cannot have, as its long name */
	for (int i = 1; bn && i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-bn") == 0)
			argv[i] = (char *)"--brokerName";
	optind = 1;
	int li = -1;
	for (int ch; (ch = getopt_long(argc, argv, optstring, long_opts, &li)) != -1; li = -1) {
		size_t ng = strlen(given);
		const char *lname = li >= 0 ? long_opts[li].name : "";
		/* -bn (N among the required letters) names the broker; -b is the id */
		bool bn_name = bn && ch == 'b' && strcmp(lname, "brokerName") == 0;
		if (ch < 128 && ch != ':' && ch != '?' && strchr(cmd->opts, ch) && ng + 1 < sizeof given) {
			given[ng] = bn_name ? 'N' : (char)ch;
			given[ng + 1] = '\0';
		}
		if (!bn && (strcmp(lname, "brokerId") == 0 ||
				 strcmp(lname, "brokerControllerIdsToClean") == 0)) {
			admin_error("%s takes no option --%s", cmd->name, lname);
			return -1;
		}
		/* long names reach every letter: keep each command to its own */
		if (ch < 128 && ch != 'h' && ch != 'n' && ch != 'D' && ch != ':' && ch != '?' &&
		    !strchr(cmd->opts, ch)) {
			if (li >= 0)
				admin_error("%s takes no option --%s", cmd->name, long_opts[li].name);
			else
				admin_error("%s takes no option -%c", cmd->name, ch);
			return -1;
		}
		switch (ch) {
		case 'h': usage_command(stdout, cmd); exit(ADMIN_EXIT_OK);
		case 'n': namesrv = optarg; break;
		case 'a': ctx->a.controller = optarg; break;
		case 'l': ctx->a.clean_living = true; break;
		case 'o': ctx->a.output = optarg; break;
		case 'D':
			if (admin_tls_define(tls, optarg, err, sizeof err) < 0) {
				admin_error("%s", err);
				return -1;
			}
			break;
		case OPT_TLS: tls->enable = true; break;
		case OPT_TLS_CA: tls->ca = optarg; tls->enable = true; break;
		case OPT_TLS_CERT: tls->cert = optarg; tls->enable = true; break;
		case OPT_TLS_KEY: tls->key = optarg; tls->enable = true; break;
		case OPT_TLS_KEY_PASSWORD: tls->password = optarg; break;
		case OPT_TLS_NO_HOST: tls->no_verify_hostname = true; break;
		case OPT_JSON: ctx->json = true; break;
		case OPT_HTTP:
			if (strcmp(cmd->name, "brokers") != 0) {
				admin_error("%s takes no option --http", cmd->name);
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
				admin_error("--timeout wants milliseconds, not \"%s\"", optarg);
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
		case 'b':
			if (bn && !bn_name)
				ctx->a.broker_ids = optarg;
			else
				ctx->a.broker = optarg;
			break;
		case 'm': ctx->a.method = optarg; break;
		case ':':
			admin_error("%s: option %s needs a value", cmd->name, argv[optind - 1]);
			return -1;
		default:
			admin_error("%s: unknown option %s", cmd->name, argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		admin_error("%s: unexpected argument \"%s\"", cmd->name, argv[optind]);
		return -1;
	}
	for (const char *r = cmd->required; *r; r++) {
		if (!strchr(given, *r)) {
			if (*r == 'N')
				admin_error("%s needs -bn (see rmqns-admin --help)", cmd->name);
			else
				admin_error("%s needs -%c (see rmqns-admin --help)", cmd->name, *r);
			return -1;
		}
	}
	if (access_key && !*access_key)
		access_key = NULL;
	if (secret_key && !*secret_key)
		secret_key = NULL;
	if (!access_key != !secret_key) {
		admin_error("--access-key and --secret-key go together");
		return -1;
	}
	target_set_credentials(access_key, secret_key);
	struct ssl_ctx_st *tls_ctx = NULL;
	if (admin_tls_ctx(tls, &tls_ctx, err, sizeof err) < 0) {
		admin_error("TLS: %s", err);
		return -1;
	}
	target_set_tls(tls_ctx);
	ctx->namesrv_given = namesrv && *namesrv;
	if (target_list_parse(ctx->namesrv_given ? namesrv : ADMIN_DEFAULT_NAMESRV, &ctx->targets, err,
			      sizeof err) < 0) {
		admin_error("-n: %s", err);
		return -1;
	}
	if (ctx->a.controller &&
	    target_list_parse(ctx->a.controller, &ctx->controllers, err, sizeof err) < 0) {
		admin_error("-a: %s", err);
		return -1;
	}
	return 0;
}

/* --json anywhere after the subcommand: usage errors are JSON too. */
static bool wants_json(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--json") == 0)
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	static struct admin_ctx ctx;
	static struct admin_tls tls = ADMIN_TLS_INIT;

	if (argc < 2) {
		usage(stderr);
		return ADMIN_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return ADMIN_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		version_print(stdout, "rmqns-admin");
		return ADMIN_EXIT_OK;
	}
	ctx.json = wants_json(argc, argv);
	const struct command *cmd = find_command(argv[1]);
	if (!cmd) {
		admin_error("unknown subcommand \"%s\" (see rmqns-admin --help)", argv[1]);
		if (ctx.json)
			admin_json_error(ADMIN_EXIT_USAGE);
		return ADMIN_EXIT_USAGE;
	}
	/* argv[1] stands in for the program name: options follow the subcommand */
	if (parse(argc - 1, argv + 1, cmd, &ctx, &tls) < 0) {
		if (ctx.json)
			admin_json_error(ADMIN_EXIT_USAGE);
		return ADMIN_EXIT_USAGE;
	}
	json_object_seed(0); /* before clusterDiff's threads use jansson */
	int ex = cmd->run(&ctx);
	if (ctx.json)
		admin_json_error(ex);
	return ex;
}
