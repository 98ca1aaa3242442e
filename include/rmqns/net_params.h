/* The network side's parameters, built from the start-up options: net
 * is handed them and reads no options itself. */
#ifndef RMQNS_NET_PARAMS_H
#define RMQNS_NET_PARAMS_H

#include <stddef.h>

struct options;
struct server_params;
struct tls_settings;

/* Fills p from the options (p->tls left NULL: see below); a reactor count
 * of 0 there means one per CPU the process may use, cpus of them
 * (cpus.h). */
void server_params_from_options(struct server_params *p, const struct options *o, unsigned cpus);

/* The TLS settings of the options, then of tls.config.file (when set)
 * over them, as Java's file overrides its system properties. err names
 * the key or the file on failure (RMQNS_EINVAL, RMQNS_ENOMEM); free with
 * tls_settings_free. */
int tls_settings_load(struct tls_settings *s, const struct options *o, char *err, size_t errlen);

#endif
