/* SIGHUP: hands the re-read of the -c file to the registrar, the only
 * thread that publishes configuration. Kept apart from config.c so that
 * code linking the config module without a registrar (tools, unit tests)
 * does not need one. */
#include <stdlib.h>

#include <urcu/compiler.h>

#include "rmqns/config.h"
#include "rmqns/log.h"
#include "rmqns/registrar.h"

struct config_reload_mutation {
	struct mutation m;
	struct config *cfg;
};

static void config_reload_apply(struct mutation *m)
{
	struct config_reload_mutation *r = caa_container_of(m, struct config_reload_mutation, m);

	config_reload(r->cfg); /* logs its own outcome */
	free(r);
}

/* Set once at start-up on the main thread, read there on SIGHUP. */
static void (*reload_hook)(void *arg);
static void *reload_hook_arg;

void config_set_reload_hook(void (*fn)(void *arg), void *arg)
{
	reload_hook = fn;
	reload_hook_arg = arg;
}

void config_request_reload(struct config *cfg, struct registrar *reg)
{
	if (reload_hook)
		reload_hook(reload_hook_arg);

	if (!reg) {
		/* a standalone controller: its options are read at start only */
		log_info("SIGHUP: no NameServer options to re-read in a standalone controller");
		return;
	}
	struct config_reload_mutation *r = calloc(1, sizeof(*r));
	if (!r) {
		log_error("SIGHUP: out of memory; configuration not re-read");
		return;
	}
	r->m.apply = config_reload_apply;
	r->cfg = cfg;
	registrar_submit(reg, &r->m);
}
