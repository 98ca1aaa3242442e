/* Writes the rmqns(8) manual page to stdout at build time. Its OPTIONS
 * section comes from the options table itself (src/config/options.c), so
 * the page lists every option with its default and meaning, and never
 * drifts from the binary. */
#include <stdio.h>
#include <string.h>

#include "rmqns/config.h"

/* roff: a leading '.' or '\'' would be a request, '\' an escape, '-' a hyphen. */
static void roff_text(const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", stdout);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", stdout);
		else if (*s == '-')
			fputs("\\-", stdout);
		else
			putchar(*s);
	}
}

static const char *type_name(enum config_type t)
{
	switch (t) {
	case CONFIG_BOOL: return "true|false";
	case CONFIG_I32:
	case CONFIG_I64: return "integer";
	case CONFIG_STR: break;
	}
	return "text";
}

static void print_option(const struct config_option *o)
{
	char env[128];

	printf(".TP\n.BR %s \" = \" \"", o->name);
	if (o->choices) {
		for (int i = 0; o->choices[i]; i++) {
			if (i)
				putchar('|');
			roff_text(o->choices[i]);
		}
	} else {
		fputs(type_name(o->type), stdout);
	}
	fputs("\"\n", stdout);
	roff_text(o->meaning);
	fputs(".\n.br\nDefault: ", stdout);
	if (o->def && *o->def)
		roff_text(o->def);
	else
		fputs(o->def ? "empty" : "computed at start", stdout);
	if (o->flags & CONFIG_LIVE)
		fputs("; changes live", stdout);
	if (o->flags & CONFIG_UNUSED)
		fputs("; accepted for compatibility, no effect", stdout);
	if (config_option_env_name(o, env, sizeof env) == 0)
		printf("; environment \\fB%s\\fR", env);
	fputs(".\n", stdout);
}

int main(void)
{
	const struct config_option *tab;
	size_t n;

	tab = config_options(&n);
	fputs(".TH RMQNS 8 \"\" \"rmqns " RMQNS_VERSION "\" \"System Administration\"\n"
	      ".SH NAME\nrmqns \\- a RocketMQ NameServer\n"
	      ".SH SYNOPSIS\n.B rmqns\n[\\fB\\-c\\fR \\fIFILE\\fR] [\\fB\\-p\\fR] [\\fB\\-h\\fR] "
	      "[\\fB\\-n\\fR \\fIADDR\\fR] [\\fB\\-\\-\\fIKEY\\fB=\\fIVALUE\\fR ...]\n"
	      ".SH DESCRIPTION\n"
	      "rmqns answers RocketMQ brokers, producers, consumers and mqadmin as the Java NameServer does: "
	      "brokers register their topics and stay alive with heartbeats, clients ask for routes. "
	      "It takes the Java NameServer's options, names and file format.\n"
	      ".SH COMMAND LINE\n"
	      ".TP\n.BR \\-c \", \" \\-\\-configFile \" \" \\fIFILE\\fR\n"
	      "A Java properties file of options. Runtime updates (UPDATE_NAMESRV_CONFIG) are persisted to it.\n"
	      ".TP\n.BR \\-p \", \" \\-\\-printConfigItem\n"
	      "Print every option in force, one a line, and exit.\n"
	      ".TP\n.BR \\-h \", \" \\-\\-help\nPrint the usage and exit.\n"
	      ".TP\n.BR \\-n \" \" \\fIADDR\\fR\nAccepted for compatibility with mqnamesrv, ignored.\n"
	      ".TP\n.BI \\-\\- KEY = VALUE\nSet an option.\n"
	      ".SH PRECEDENCE\n"
	      "Defaults, then the \\fB\\-c\\fR file, then the environment, then \\fB\\-\\-\\fIKEY\\fB=\\fIVALUE\\fR. "
	      "Every option can be set in the environment as \\fBRMQNS_\\fR followed by its name, "
	      "each \\(aq.\\(aq written \\(aq_\\(aq "
	      "(\\fBRMQNS_listenPort\\fR, \\fBRMQNS_tls_server_mode\\fR); other \\fBRMQNS_\\fR variables are ignored. "
	      "SIGHUP re-reads the file and applies the same order.\n"
	      ".SH OPTIONS\n",
	      stdout);
	for (size_t i = 0; i < n; i++)
		print_option(&tab[i]);
	fputs(".SH SIGNALS\n"
	      ".TP\n.B SIGHUP\nRe-read the \\fB\\-c\\fR file: live options change at once, the others at the next start.\n"
	      ".TP\n.BR SIGTERM \", \" SIGINT\nAnswer what is queued, write pending KV changes, exit 0.\n"
	      ".SH ENVIRONMENT\n"
	      ".TP\n.B HOME\nBase of the default kvConfigPath and configStorePath.\n"
	      ".TP\n.B ROCKETMQ_HOME\nrocketmqHome, and the directory of the ACL accounts file (conf/plain_acl.yml).\n"
	      ".TP\n.BI RMQNS_ option\nAn option, as above.\n"
	      ".SH FILES\n"
	      ".TP\n.I /etc/rmqns/rmqns.conf\nThe configuration the systemd unit starts with.\n"
	      ".TP\n.I /var/lib/rmqns/namesrv/kvConfig.json\nThe KV config, in the Java NameServer's format.\n"
	      ".SH SEE ALSO\n.BR rmqns\\-admin (8)\n",
	      stdout);
	return ferror(stdout) ? 1 : 0;
}
