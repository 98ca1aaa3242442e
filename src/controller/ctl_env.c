/* What a handler's environment answers beyond the state: whether a
 * broker is live on this node, and the node's controller flags. Called by
 * the handlers, the election and the node alike. */
#include <string.h>
#include <strings.h>

#include "ctl_internal.h"
#include "rmqns/properties.h"

bool ctl_env_alive(const struct ctl_env *env, const char *cluster, const char *broker_name,
		   int64_t id)
{
	return env->live && ctl_live_alive(env->live, cluster, broker_name, id, env->now_ms);
}

bool ctl_config_flag(const struct properties *cfg, const char *key, bool def)
{
	const char *v = cfg ? properties_get(cfg, key) : NULL;
	return v ? strcasecmp(v, "true") == 0 : def;
}
