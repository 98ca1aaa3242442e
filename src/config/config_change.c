/* UPDATE_NAMESRV_CONFIG on the registrar thread (config.h, struct
 * config_change): applies a checked update, hands the verdict to the
 * requester's done callback, which answers, and frees the update. */
#include <string.h>

#include <urcu/compiler.h>

#include "rmqns/config.h"

void config_change_init(struct config_change *c, struct config *cfg, struct config_update *u)
{
	memset(c, 0, sizeof(*c));
	c->m.apply = config_change_apply;
	c->cfg = cfg;
	c->u = u;
}

void config_change_apply(struct mutation *m)
{
	struct config_change *c = caa_container_of(m, struct config_change, m);

	c->code = config_update_apply(c->cfg, c->u, c->peer, c->remark, sizeof(c->remark));
	c->done(c);
	config_update_free(c->u);
	c->u = NULL;
	c->release(c);
}
