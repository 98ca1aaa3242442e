/* The NameServer's configuration: the command line, the -c file, the
 * options in force (an RCU-published immutable snapshot), runtime updates
 * (UPDATE_NAMESRV_CONFIG, SIGHUP) and their persistence to the -c file.
 * Only the registrar thread publishes a new snapshot. */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>

#include "options.h"
#include "rmqns/config.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/properties.h"
#include "rmqns/race.h"

/* One published version of the configuration. Immutable once published. */
struct config_state {
	struct options opt;        /* in force */
	struct options configured; /* as last set (file, overrides, updates): GET shows it, the file gets it */
	struct properties extra;   /* keys of the -c file that name no option (kept, like Java) */
	struct rcu_head rcu;
	struct config_state *retired_next; /* ThreadSanitizer builds only, see state_publish */
};

struct config {
	struct options startup;       /* as at start; never changes */
	struct config_state *state;   /* RCU */
	char *file;                   /* -c FILE, or NULL */
	struct properties overrides;  /* --KEY=VALUE, re-applied on SIGHUP */
	struct properties env;        /* RMQNS_<option> at start, keyed by option name */
	char *env_home;
	char *env_rocketmq_home;
	bool deferred_frees;          /* call_rcu was used: wait for it at destroy */
	struct config_state *retired; /* ThreadSanitizer builds only */
};

struct config_update {
	struct properties props; /* checked: option keys with valid values, other keys as sent */
};

/* Keys UPDATE_NAMESRV_CONFIG always refuses (4.9.8 / 5.2+), and the ACL
 * and HTTP login options: a request must not be able to switch a check
 * off. */
static const char *const fixed_black_list[] = {
	"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome",
	"aclEnable", "aclFile", "aclReadRequests", "aclBrokerRequests",
	"httpWebConfigFile", "httpProbesOpen", NULL,
};

/* ---- snapshots ---- */

static void state_free(struct config_state *st)
{
	if (!st)
		return;
	options_free(&st->opt);
	options_free(&st->configured);
	properties_free(&st->extra);
	free(st);
}

static __attribute__((unused)) void state_free_rcu(struct rcu_head *head)
{
	race_grace_passed();
	state_free(caa_container_of(head, struct config_state, rcu));
}

/* Registrar thread: replaces the published snapshot. The old one is
 * freed after a grace period; ThreadSanitizer cannot see urcu's grace
 * periods, so its builds keep old snapshots until config_destroy unless
 * built to check reclamation (race.h; the publication itself is
 * annotated). */
static void state_publish(struct config *cfg, struct config_state *ns)
{
	struct config_state *old;

	race_release(ns);
	old = rcu_xchg_pointer(&cfg->state, ns);
	if (options_log_level(&old->opt) != options_log_level(&ns->opt))
		log_set_level((enum log_level)options_log_level(&ns->opt));
#ifdef RMQNS_TSAN_KEEP
	old->retired_next = cfg->retired;
	cfg->retired = old;
#else
	cfg->deferred_frees = true;
	race_reader_done(); /* the writer's last touches, for the callback */
	call_rcu(&old->rcu, state_free_rcu);
#endif
}

/* Inside rcu_read_lock(): the published snapshot. */
static const struct config_state *state_current(const struct config *cfg)
{
	const struct config_state *st = rcu_dereference(((struct config *)cfg)->state);

	race_acquire(st);
	return st;
}

/* The merged set: every option's configured value plus the extra keys. */
static int state_properties(const struct config_state *st, struct properties *out)
{
	const struct config_option *tab;
	struct buf v = BUF_INIT;
	size_t n;
	int rc = properties_copy(out, &st->extra);

	tab = config_options(&n);
	for (size_t i = 0; i < n && rc == RMQNS_OK; i++) {
		v.len = 0;
		rc = options_format_value(&st->configured, &tab[i], &v);
		if (rc == RMQNS_OK)
			rc = buf_terminate(&v);
		if (rc == RMQNS_OK)
			rc = properties_set(out, tab[i].name, v.data ? (const char *)v.data : "");
	}
	buf_free(&v);
	if (rc < 0)
		properties_free(out);
	return rc;
}

/* ---- building options from defaults, file and overrides ---- */

static void options_env_of(const struct config *cfg, struct options_env *env)
{
	env->home = cfg->env_home;
	env->rocketmq_home = cfg->env_rocketmq_home;
}

/* The controller options only one of Java's two configurations reads. */
static const struct {
	const char *name;
	bool jraft;
} controller_typed[] = {
	{ "controllerDLegerGroup", false },     { "controllerDLegerPeers", false },
	{ "controllerDLegerSelfId", false },    { "controllerRaftPortOffset", false },
	{ "controllerElectionTimeoutMillis", false },
	{ "jRaftGroupId", true },               { "jRaftServerId", true },
	{ "jRaftInitConf", true },              { "jRaftControllerRPCAddr", true },
	{ "jRaftElectionTimeoutMs", true },
};

/* Warns about controller options of the type not configured: a
 * controllerType forgotten or mistyped shows here first. */
static void warn_other_type(const struct options *o, const struct options *def)
{
	bool jraft = options_controller_jraft(o);

	if (!options_controller_on(o))
		return;
	for (size_t i = 0; i < sizeof controller_typed / sizeof controller_typed[0]; i++) {
		const struct config_option *opt = config_option_find(controller_typed[i].name);
		if (opt && controller_typed[i].jraft != jraft && !options_equal(o, def, opt))
			log_warn("option %s is set but unused: controllerType=%s reads the %s keys",
				 opt->name, jraft ? "jRaft" : "DLedger",
				 jraft ? "jRaft*" : "controllerDLeger*");
	}
}

/* Warns about options given a value that means nothing in rmqns. */
static void warn_unused(const struct options *o, const struct options_env *env)
{
	struct options def;
	const struct config_option *tab;
	struct buf v = BUF_INIT;
	size_t n;

	if (options_init(&def, env) < 0)
		return;
	tab = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		if (!(tab[i].flags & CONFIG_UNUSED) || options_equal(o, &def, &tab[i]))
			continue;
		v.len = 0;
		if (options_format_value(o, &tab[i], &v) == 0 && buf_terminate(&v) == 0)
			log_warn("option %s=%s is accepted for compatibility but has no effect in rmqns",
				 tab[i].name, v.data ? (const char *)v.data : "");
	}
	buf_free(&v);
	warn_other_type(o, &def);
	options_free(&def);
}

/* defaults <- file <- environment <- overrides, checked. On failure err
 * names the key, the value and where it came from. */
static int config_build(const struct config *cfg, struct options *conf, struct properties *extra,
			char *err, size_t errlen)
{
	struct properties fp = PROPERTIES_INIT;
	struct options_env env;
	char why[512];
	int rc;

	options_env_of(cfg, &env);
	rc = options_init(conf, &env);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (cfg->file) {
		rc = properties_load_file(&fp, cfg->file, err, errlen);
		if (rc < 0)
			goto fail;
		for (size_t i = 0; i < fp.count; i++) {
			const struct config_option *opt = config_option_find(fp.items[i].key);
			if (!opt) {
				log_warn("%s: unknown option '%s' kept but not used", cfg->file, fp.items[i].key);
				rc = properties_set(extra, fp.items[i].key, fp.items[i].value);
				if (rc < 0) {
					snprintf(err, errlen, "out of memory");
					goto fail;
				}
				continue;
			}
			rc = options_set_text(conf, opt, fp.items[i].value, why, sizeof(why));
			if (rc < 0) {
				snprintf(err, errlen, "%s: %s", cfg->file, why);
				goto fail;
			}
		}
	}
	for (size_t i = 0; i < cfg->env.count; i++) {
		const struct config_option *opt = config_option_find(cfg->env.items[i].key);
		char name[128];

		rc = options_set_text(conf, opt, cfg->env.items[i].value, why, sizeof(why));
		if (rc < 0) {
			config_option_env_name(opt, name, sizeof(name));
			snprintf(err, errlen, "environment %s: %s", name, why);
			goto fail;
		}
	}
	for (size_t i = 0; i < cfg->overrides.count; i++) {
		const struct config_option *opt = config_option_find(cfg->overrides.items[i].key);
		rc = opt ? options_set_text(conf, opt, cfg->overrides.items[i].value, why, sizeof(why))
			 : RMQNS_EINVAL;
		if (rc < 0) {
			if (!opt)
				snprintf(why, sizeof(why), "unknown option");
			snprintf(err, errlen, "--%s: %s", cfg->overrides.items[i].key, why);
			goto fail;
		}
	}
	if (cfg->file) {
		/* As in Java, the -c file is where updates are persisted,
		 * whatever the file itself says. */
		char *p = strdup(cfg->file);
		if (!p) {
			rc = RMQNS_ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		free(conf->configStorePath);
		conf->configStorePath = p;
	}
	rc = options_check(conf, err, errlen);
	if (rc < 0)
		goto fail;
	properties_free(&fp);
	return RMQNS_OK;
fail:
	properties_free(&fp);
	properties_free(extra);
	options_free(conf);
	return rc;
}

/* ---- command line ---- */

static bool arg_is(const char *a, const char *s, const char *l)
{
	return strcmp(a, s) == 0 || strcmp(a, l) == 0;
}

static const char *user_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h && *h)
		return h;
	pw = getpwuid(getuid());
	return pw && pw->pw_dir ? pw->pw_dir : NULL;
}

int config_option_env_name(const struct config_option *opt, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "RMQNS_%s", opt->name);

	if (n < 0 || (size_t)n >= outlen)
		return RMQNS_EINVAL;
	for (char *c = out; *c; c++)
		if (*c == '.')
			*c = '_';
	return RMQNS_OK;
}

/* Every option set in the environment, read once: SIGHUP applies the
 * same values again. Other RMQNS_ variables are not options and are left
 * alone. */
static int env_options_read(struct properties *env)
{
	const struct config_option *tab;
	char name[128];
	size_t n;

	tab = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		const char *v;

		if (config_option_env_name(&tab[i], name, sizeof(name)) < 0 || !(v = getenv(name)))
			continue;
		if (properties_set(env, tab[i].name, v) < 0)
			return RMQNS_ENOMEM;
	}
	return RMQNS_OK;
}

static struct config *config_new(void)
{
	struct config *cfg = calloc(1, sizeof(*cfg));
	const char *home = user_home(), *rh = getenv("ROCKETMQ_HOME");

	if (!cfg)
		return NULL;
	cfg->env_home = strdup(home ? home : "");
	cfg->env_rocketmq_home = rh ? strdup(rh) : NULL;
	if (!cfg->env_home || (rh && !cfg->env_rocketmq_home) || env_options_read(&cfg->env) < 0) {
		properties_free(&cfg->env);
		free(cfg->env_home);
		free(cfg->env_rocketmq_home);
		free(cfg);
		return NULL;
	}
	return cfg;
}

/* Reads argv into cfg (file, overrides) and the flags. */
static int args_parse(struct config *cfg, int argc, char **argv, bool *print, char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *file = NULL;

		if (arg_is(a, "-p", "--printConfigItem")) {
			*print = true;
		} else if (arg_is(a, "-c", "--configFile")) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "%s needs a file name", a);
				return RMQNS_EINVAL;
			}
			file = argv[++i];
		} else if (strncmp(a, "--configFile=", 13) == 0) {
			file = a + 13;
		} else if (strncmp(a, "-c", 2) == 0 && a[2] != '-') {
			file = a + 2;
		} else if (arg_is(a, "-n", "--namesrvAddr")) {
			/* Java accepts it and uses it for nothing */
			if (i + 1 >= argc) {
				snprintf(err, errlen, "%s needs an address list", a);
				return RMQNS_EINVAL;
			}
			i++;
		} else if (strncmp(a, "--namesrvAddr=", 14) == 0) {
			/* ignored, as above */
		} else if (strncmp(a, "--", 2) == 0 && a[2]) {
			const char *eq = strchr(a + 2, '=');
			char *key;
			int rc;

			if (!eq) {
				snprintf(err, errlen, "%s: expected --KEY=VALUE", a);
				return RMQNS_EINVAL;
			}
			key = strndup(a + 2, (size_t)(eq - (a + 2)));
			if (!key) {
				snprintf(err, errlen, "out of memory");
				return RMQNS_ENOMEM;
			}
			if (!config_option_find(key)) {
				snprintf(err, errlen, "--%s: unknown option (rmqns -p lists them)", key);
				free(key);
				return RMQNS_EINVAL;
			}
			rc = properties_set(&cfg->overrides, key, eq + 1);
			free(key);
			if (rc < 0) {
				snprintf(err, errlen, "out of memory");
				return rc;
			}
		} else {
			snprintf(err, errlen, "unexpected argument '%s'", a);
			return RMQNS_EINVAL;
		}
		if (file) {
			if (!*file) {
				snprintf(err, errlen, "-c needs a file name");
				return RMQNS_EINVAL;
			}
			free(cfg->file);
			if (!(cfg->file = strdup(file))) {
				snprintf(err, errlen, "out of memory");
				return RMQNS_ENOMEM;
			}
		}
	}
	return RMQNS_OK;
}

/* logFormat and logFile, then the line every log starts with: the
 * version and build, before any warning about the options. */
static int config_start_log(const struct options *o, char *err, size_t errlen)
{
	log_set_format((enum log_format)options_log_format(o));
	if (o->logFile && *o->logFile && log_set_file(o->logFile) < 0) {
		snprintf(err, errlen, "logFile %s: cannot open: %s", o->logFile, strerror(errno));
		return RMQNS_EIO;
	}
	log_info("rmqns %s (build %s) starting, pid %ld", RMQNS_VERSION, RMQNS_BUILD,
		 (long)getpid());
	return RMQNS_OK;
}

int config_from_args(int argc, char **argv, struct config **out,
		     enum config_action *action, char *err, size_t errlen)
{
	struct config *cfg;
	struct config_state *st = NULL;
	struct options_env env;
	bool help = false, print = false, version = false;
	int rc;

	*out = NULL;
	*action = CONFIG_ACTION_RUN;
	if (errlen)
		err[0] = '\0';
	for (int i = 1; i < argc; i++) {
		help |= arg_is(argv[i], "-h", "--help");
		version |= arg_is(argv[i], "-v", "--version");
	}
	/* -v alone prints the version; both print the usage, which names it */
	if (version && !help) {
		*action = CONFIG_ACTION_VERSION;
		return RMQNS_OK;
	}
	cfg = config_new();
	st = calloc(1, sizeof(*st));
	if (!cfg || !st) {
		snprintf(err, errlen, "out of memory");
		rc = RMQNS_ENOMEM;
		goto fail;
	}
	if (help) {
		*action = CONFIG_ACTION_HELP;
	} else {
		rc = args_parse(cfg, argc, argv, &print, err, errlen);
		if (rc < 0)
			goto fail;
	}
	if (help) {
		options_env_of(cfg, &env);
		rc = options_init(&st->configured, &env);
		if (rc < 0)
			snprintf(err, errlen, "out of memory");
	} else {
		rc = config_build(cfg, &st->configured, &st->extra, err, errlen);
	}
	if (rc < 0)
		goto fail;
	rc = options_copy(&st->opt, &st->configured);
	if (rc == RMQNS_OK) {
		rc = options_copy(&cfg->startup, &st->configured);
		if (rc < 0)
			options_free(&st->opt);
	}
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		options_free(&st->configured);
		properties_free(&st->extra);
		goto fail;
	}
	rcu_assign_pointer(cfg->state, st);
	if (!help) {
		log_set_level((enum log_level)options_log_level(&cfg->startup));
		if (!print && (rc = config_start_log(&cfg->startup, err, errlen)) < 0) {
			config_destroy(cfg);
			return rc;
		}
		if (cfg->file) {
			printf("load config properties file OK, %s\n", cfg->file);
			fflush(stdout);
		}
		options_env_of(cfg, &env);
		warn_unused(&cfg->startup, &env);
		*action = print ? CONFIG_ACTION_PRINT : CONFIG_ACTION_RUN;
	}
	*out = cfg;
	return RMQNS_OK;
fail:
	free(st);
	config_destroy(cfg);
	return rc;
}

void config_print_options(const struct config *cfg, FILE *out)
{
	const struct config_option *tab;
	struct buf v = BUF_INIT;
	char ts[32] = "";
	struct tm tm;
	time_t now = time(NULL);
	size_t n;

	/* The 5.x console logger's line: time, level, thread, message. */
	if (localtime_r(&now, &tm))
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	tab = config_options(&n);
	for (size_t i = 0; i < n; i++) {
		v.len = 0;
		if (options_format_value(&cfg->startup, &tab[i], &v) < 0 || buf_terminate(&v) < 0)
			break;
		const char *text = v.data ? (const char *)v.data : "";
		if ((tab[i].flags & CONFIG_SECRET) && *text)
			text = "******";
		fprintf(out, "%s INFO main - %s=%s\n", ts, tab[i].name, text);
	}
	buf_free(&v);
	fflush(out);
}

void config_print_usage(FILE *out)
{
	fputs("usage: rmqns [-c <file>] [-h] [-n <addr>] [-p] [-v] [--KEY=VALUE ...]\n"
	      " -c,--configFile <file>   NameServer config properties file (Java format); also where\n"
	      "                          UPDATE_NAMESRV_CONFIG persists changes\n"
	      " -h,--help                Print help\n"
	      " -n,--namesrvAddr <addr>  Accepted for compatibility with mqnamesrv, ignored\n"
	      " -p,--printConfigItem     Print all config items and exit\n"
	      " -v,--version             Print the version, commit and build, and exit\n"
	      " --KEY=VALUE              Set an option (applied after the -c file and the environment)\n"
	      "Environment: RMQNS_<option> sets an option after the -c file, before --KEY=VALUE\n"
	      "             ('.' in a name as '_': RMQNS_listenPort, RMQNS_tls_server_mode).\n"
	      "Signals: SIGHUP re-reads the -c file (live options change at once); SIGTERM/SIGINT stop.\n",
	      out);
	fflush(out);
}

void config_destroy(struct config *cfg)
{
	if (!cfg)
		return;
	if (cfg->deferred_frees)
		rcu_barrier();
	while (cfg->retired) {
		struct config_state *next = cfg->retired->retired_next;
		state_free(cfg->retired);
		cfg->retired = next;
	}
	state_free(cfg->state);
	options_free(&cfg->startup);
	properties_free(&cfg->overrides);
	properties_free(&cfg->env);
	free(cfg->file);
	free(cfg->env_home);
	free(cfg->env_rocketmq_home);
	free(cfg);
}

const struct options *config_startup(const struct config *cfg)
{
	return &cfg->startup;
}

const struct options *config_current(const struct config *cfg)
{
	return &state_current(cfg)->opt;
}

const char *config_file(const struct config *cfg)
{
	return cfg->file;
}

/* A secret that is set reads as ****** (the file keeps it). */
static int mask_secrets(struct properties *all)
{
	const struct config_option *tab;
	size_t n;
	int rc = RMQNS_OK;

	tab = config_options(&n);
	for (size_t i = 0; i < n && rc == RMQNS_OK; i++) {
		const char *v = (tab[i].flags & CONFIG_SECRET) ? properties_get(all, tab[i].name) : NULL;
		if (v && *v)
			rc = properties_set(all, tab[i].name, "******");
	}
	return rc;
}

int config_properties(const struct config *cfg, struct properties *out)
{
	int rc = state_properties(state_current(cfg), out);

	return rc == RMQNS_OK ? mask_secrets(out) : rc;
}

int config_properties_text(const struct config *cfg, struct buf *out)
{
	struct properties all = PROPERTIES_INIT;
	int rc = config_properties(cfg, &all);

	if (rc == RMQNS_OK)
		rc = properties_format(&all, out);
	properties_free(&all);
	return rc;
}

/* ---- UPDATE_NAMESRV_CONFIG ---- */

static bool black_listed(const char *list, const struct properties *p)
{
	for (int i = 0; fixed_black_list[i]; i++)
		if (properties_has(p, fixed_black_list[i]))
			return true;
	/* TLS settings are the operator's, never a remote peer's */
	for (size_t i = 0; i < p->count; i++)
		if (strncmp(p->items[i].key, "tls.", 4) == 0 || properties_list_names(list, p->items[i].key))
			return true;
	return false;
}

int config_update_prepare(const struct config *cfg, const void *body, size_t len,
			  struct config_update **out, int32_t *code, char *remark, size_t remark_len)
{
	const struct options *cur = config_current(cfg);
	struct config_update *u;
	char why[512];
	int rc;

	*out = NULL;
	*code = 0;
	if (remark_len)
		remark[0] = '\0';
	if (!body || len == 0)
		return RMQNS_OK;
	u = calloc(1, sizeof(*u));
	if (!u) {
		*code = 1;
		snprintf(remark, remark_len, "out of memory");
		return RMQNS_ENOMEM;
	}
	rc = properties_parse(&u->props, body, len, PROPERTIES_UTF8, NULL);
	if (rc < 0) {
		*code = 1;
		snprintf(remark, remark_len, "%s", rc == RMQNS_EINVAL ? "string2Properties error" : "out of memory");
		goto refuse;
	}
	if (black_listed(cur->configBlackList, &u->props)) {
		*code = 16;
		snprintf(remark, remark_len, "Can not update config in black list.");
		rc = RMQNS_EPERM;
		goto refuse;
	}
	for (size_t i = 0; i < u->props.count; i++) {
		const struct property *p = &u->props.items[i];
		const struct config_option *opt = config_option_find(p->key);
		if (opt && (opt->flags & CONFIG_PATH)) {
			*code = 16;
			snprintf(remark, remark_len, "Can not update %s: options naming files or directories are not changeable at run time",
				 p->key);
			rc = RMQNS_EPERM;
			goto refuse;
		}
	}
	for (size_t i = 0; i < u->props.count; i++) {
		const struct property *p = &u->props.items[i];
		const struct config_option *opt;
		int64_t v;

		if (strpbrk(p->key, "\r\n") || strpbrk(p->value, "\r\n")) {
			*code = 1;
			if (strpbrk(p->key, "\r\n"))
				snprintf(remark, remark_len, "Refused: a key contains a line break");
			else
				snprintf(remark, remark_len, "Refused: the value of %s contains a line break", p->key);
			rc = RMQNS_EPERM;
			goto refuse;
		}
		opt = config_option_find(p->key);
		if (!opt && properties_has(&state_current(cfg)->extra, p->key))
			continue; /* a key of the -c file rmqns does not use: kept, as Java keeps it */
		if (!opt) {
			/* Java would take it silently and use it nowhere: say so instead */
			*code = 1;
			snprintf(remark, remark_len, "unknown key: %s", p->key);
			rc = RMQNS_EINVAL;
			goto refuse;
		}
		rc = options_check_text(opt, p->value, why, sizeof(why));
		if (rc < 0) {
			*code = 1;
			snprintf(remark, remark_len, "%s", why);
			goto refuse;
		}
		if ((opt->type == CONFIG_I32 || opt->type == CONFIG_I64) && opt->run_min > 0 &&
		    options_parse_long(p->value, &v) && v < opt->run_min &&
		    !(v == 0 && (opt->flags & CONFIG_AUTO))) {
			*code = 1;
			snprintf(remark, remark_len,
				 "Refused: %s=%" PRId64 " is below the minimum of %" PRId64 " accepted at run time%s",
				 p->key, v, opt->run_min, (opt->flags & CONFIG_AUTO) ? " (0 = one per CPU)" : "");
			rc = RMQNS_EPERM;
			goto refuse;
		}
	}
	*out = u;
	return RMQNS_OK;
refuse:
	config_update_free(u);
	return rc;
}

void config_update_free(struct config_update *u)
{
	if (!u)
		return;
	properties_free(&u->props);
	free(u);
}

static struct config_state *state_clone(const struct config_state *st)
{
	struct config_state *ns = calloc(1, sizeof(*ns));

	if (!ns)
		return NULL;
	if (options_copy(&ns->opt, &st->opt) < 0) {
		free(ns);
		return NULL;
	}
	if (options_copy(&ns->configured, &st->configured) < 0) {
		options_free(&ns->opt);
		free(ns);
		return NULL;
	}
	if (properties_copy(&ns->extra, &st->extra) < 0) {
		state_free(ns);
		return NULL;
	}
	return ns;
}

/* Writes the merged set of st to the -c file. */
static int state_persist(const struct config *cfg, const struct config_state *st, char *err, size_t errlen)
{
	struct properties all = PROPERTIES_INIT;
	struct buf text = BUF_INIT;
	int rc = state_properties(st, &all);

	if (rc == RMQNS_OK)
		rc = properties_format(&all, &text);
	if (rc < 0)
		snprintf(err, errlen, "out of memory");
	else
		rc = durable_write(cfg->file, text.data ? (const char *)text.data : "", text.len, true, err, errlen);
	properties_free(&all);
	buf_free(&text);
	return rc;
}

int32_t config_update_apply(struct config *cfg, const struct config_update *u, const char *peer,
			    char *remark, size_t remark_len)
{
	struct config_state *st = cfg->state, *ns;
	struct buf changes = BUF_INIT;
	char why[512];
	int rc = RMQNS_OK;

	if (remark_len)
		remark[0] = '\0';
	ns = state_clone(st);
	if (!ns) {
		snprintf(remark, remark_len, "out of memory");
		return 1;
	}
	for (size_t i = 0; i < u->props.count && rc == RMQNS_OK; i++) {
		const struct property *p = &u->props.items[i];
		const struct config_option *opt = config_option_find(p->key);

		if (!opt) {
			/* like Java: only keys already in the merged set are kept */
			if (properties_has(&ns->extra, p->key))
				rc = properties_set(&ns->extra, p->key, p->value);
			continue;
		}
		rc = options_set_text(&ns->configured, opt, p->value, why, sizeof(why));
		if (rc == RMQNS_OK && (opt->flags & CONFIG_LIVE))
			rc = options_assign(&ns->opt, &ns->configured, opt);
		if (rc == RMQNS_OK)
			rc = buf_printf(&changes, " %s=%s%s", p->key, p->value,
					(opt->flags & CONFIG_LIVE) ? "" : " (after a restart)");
	}
	if (rc < 0) {
		snprintf(remark, remark_len, "%s", rc == RMQNS_ENOMEM ? "out of memory" : why);
		goto fail;
	}
	rc = options_check(&ns->configured, why, sizeof(why));
	if (rc < 0) {
		snprintf(remark, remark_len, "%s", why);
		goto fail;
	}
	if (cfg->file) {
		rc = state_persist(cfg, ns, why, sizeof(why));
		if (rc < 0) {
			log_error("UPDATE_NAMESRV_CONFIG from %s not applied: %s", peer ? peer : "?", why);
			snprintf(remark, remark_len, "cannot persist the configuration: %s", why);
			goto fail;
		}
	}
	buf_terminate(&changes);
	log_info("UPDATE_NAMESRV_CONFIG from %s:%s%s", peer ? peer : "?",
		 changes.len ? (const char *)changes.data : " nothing to change",
		 cfg->file ? "" : " (no -c file: lasts until restart)");
	state_publish(cfg, ns);
	buf_free(&changes);
	return 0;
fail:
	buf_free(&changes);
	state_free(ns);
	return 1;
}

/* ---- SIGHUP ---- */

int config_reload(struct config *cfg)
{
	struct config_state *st = cfg->state, *ns;
	const struct config_option *tab;
	struct options_env env;
	struct buf v = BUF_INIT;
	char err[512];
	size_t n;
	int rc;

	if (!cfg->file) {
		log_warn("SIGHUP: no -c file was given, nothing to re-read");
		return RMQNS_OK;
	}
	ns = calloc(1, sizeof(*ns));
	if (!ns) {
		log_error("SIGHUP: out of memory; configuration unchanged");
		return RMQNS_ENOMEM;
	}
	rc = config_build(cfg, &ns->configured, &ns->extra, err, sizeof(err));
	if (rc < 0) {
		log_error("SIGHUP: %s; configuration unchanged", err);
		free(ns);
		return rc;
	}
	rc = options_copy(&ns->opt, &st->opt);
	if (rc < 0) {
		options_free(&ns->configured);
		properties_free(&ns->extra);
		free(ns);
		log_error("SIGHUP: out of memory; configuration unchanged");
		return rc;
	}
	tab = config_options(&n);
	for (size_t i = 0; i < n && rc == RMQNS_OK; i++) {
		const struct config_option *opt = &tab[i];
		bool live = opt->flags & CONFIG_LIVE;

		if (live && !options_equal(&ns->opt, &ns->configured, opt))
			rc = options_assign(&ns->opt, &ns->configured, opt);
		if (rc < 0 || options_equal(&st->configured, &ns->configured, opt))
			continue;
		v.len = 0;
		if (options_format_value(&ns->configured, opt, &v) < 0 || buf_terminate(&v) < 0)
			continue;
		const char *shown = (opt->flags & CONFIG_SECRET) ? "******" : (const char *)v.data;
		if (live)
			log_info("SIGHUP: %s=%s applied", opt->name, shown);
		else if (!options_equal(&cfg->startup, &ns->configured, opt))
			log_warn("SIGHUP: %s=%s takes effect after a restart", opt->name, shown);
		else
			log_info("SIGHUP: %s=%s (the value in force)", opt->name, shown);
	}
	buf_free(&v);
	if (rc < 0) {
		state_free(ns);
		log_error("SIGHUP: out of memory; configuration unchanged");
		return rc;
	}
	options_env_of(cfg, &env);
	warn_unused(&ns->configured, &env);
	state_publish(cfg, ns);
	log_info("SIGHUP: re-read %s", cfg->file);
	return RMQNS_OK;
}
