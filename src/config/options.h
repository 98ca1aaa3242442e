/* Private to src/config: typed access to struct options through the table
 * of options.c (set from text, print as text, copy, compare, free). */
#ifndef RMQNS_CONFIG_OPTIONS_H
#define RMQNS_CONFIG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/config.h"

/* Where the computed defaults come from (NULL = unset). */
struct options_env {
	const char *home;          /* user.home: $HOME, else the passwd entry */
	const char *rocketmq_home; /* $ROCKETMQ_HOME */
};

/* Fills o with every default. */
int options_init(struct options *o, const struct options_env *env);
void options_free(struct options *o);
int options_copy(struct options *dst, const struct options *src);

/* Parses text as the option's type and stores it: strings trimmed (as
 * Java does), integers and booleans taken exactly (no trimming), checked
 * against the range and the choices. RMQNS_EINVAL with a reason naming
 * the key and the value. */
int options_set_text(struct options *o, const struct config_option *opt, const char *text,
		     char *err, size_t errlen);

/* Checks a text without storing it (same rules as options_set_text). */
int options_check_text(const struct config_option *opt, const char *text, char *err, size_t errlen);

/* Checks between options (outboundCloseBytes >= outboundPauseBytes). */
int options_check(const struct options *o, char *err, size_t errlen);

/* The controller runs: embedded (enableControllerInNamesrv) or
 * standalone (controllerOnly). */
bool options_controller_on(const struct options *o);
/* controllerType=jRaft (else DLedger). */
bool options_controller_jraft(const struct options *o);
struct ctl_node_config;
/* The group's name, members, this node's place among them and the
 * election timeout in p, from the keys of the configured type (strings
 * point into o). */
void options_controller_members(const struct options *o, struct ctl_node_config *p);

/* The value as Java's toString writes it (null strings as ""). */
int options_format_value(const struct options *o, const struct config_option *opt, struct buf *out);

bool options_equal(const struct options *a, const struct options *b, const struct config_option *opt);

/* Moves one option's value from src to dst (dst's old value is freed;
 * a string is copied). */
int options_assign(struct options *dst, const struct options *src, const struct config_option *opt);

/* Java's Long.parseLong (optional sign, ASCII digits, nothing else). */
bool options_parse_long(const char *text, int64_t *out);

/* The log level an options value names (INFO when unknown). */
int options_log_level(const struct options *o);
/* enum log_format of logFormat. */
int options_log_format(const struct options *o);

#endif
