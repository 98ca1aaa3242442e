/* The embedded controller's parameters, built from the start-up options
 * (as net_params.h builds the server's): the controller reads no options
 * itself. */
#ifndef RMQNS_CONTROLLER_PARAMS_H
#define RMQNS_CONTROLLER_PARAMS_H

#include <stddef.h>

struct config;
struct ctl_node_config;
struct options;
struct properties;

/* Java's controller writes UPDATE_CONTROLLER_CONFIG here, below the
 * user's home, in embedded mode too. */
#define CONTROLLER_CONFIG_FILE "/controller/controller.properties"

/* Fills p from o (strings point into o and store_path, which must outlive
 * p) and *shown with what GET_CONTROLLER_CONFIG (1010) shows: every option
 * and every other key of the -c file, secrets masked, listenPort the
 * controller's port and configStorePath store_path, where 1009 writes
 * (p->options points to it; free it with properties_free). Before the
 * registrar starts. RMQNS_ENOMEM, or RMQNS_EINVAL with a reason. */
int controller_params_from_options(struct ctl_node_config *p, struct properties *shown,
				   const struct config *cfg, const struct options *o,
				   const char *store_path, char *err, size_t errlen);

#endif
