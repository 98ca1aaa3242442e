/* The HTTP port's web configuration (httpWebConfigFile): a YAML file in
 * the format of the Prometheus exporters' web.config.yml, giving TLS
 * (tls_server_config) and basic authentication (basic_auth_users, user:
 * bcrypt hash). Loaded and checked at start; on the HTTP thread the file
 * and the certificate files it names are looked at every
 * HTTP_WEBCFG_WATCH_MS and the whole file re-read when one changed: a file
 * that does not load keeps the configuration in force and logs why.
 * Everything but http_webcfg_open runs on the HTTP thread only. */
#ifndef RMQNS_HTTP_WEBCFG_H
#define RMQNS_HTTP_WEBCFG_H

#include <stdbool.h>
#include <stddef.h>

struct ssl_ctx_st;

#define HTTP_WEBCFG_WATCH_MS 1000u
/* A file larger than this is not a web configuration. */
#define HTTP_WEBCFG_FILE_MAX (1u << 20)

struct http_webcfg;

/* Loads path (NULL with the reason in err, naming the file, its line and
 * the offending key). */
struct http_webcfg *http_webcfg_open(const char *path, char *err, size_t errlen);
void http_webcfg_close(struct http_webcfg *w);

/* Re-reads the file when it or a certificate file it names changed; 1
 * when a new configuration is in force, else 0. */
int http_webcfg_poll(struct http_webcfg *w);

/* The TLS context in force; NULL = plaintext. A connection's SSL_new
 * takes its own reference, so a reload does not touch open connections. */
struct ssl_ctx_st *http_webcfg_tls(const struct http_webcfg *w);

/* Whether basic_auth_users lists anyone (then requests need credentials). */
bool http_webcfg_auth_on(const struct http_webcfg *w);

/* Whether the value of an Authorization header (NULL: none sent) names a
 * user of the file with the right password; true when auth is off. The
 * bcrypt check runs at most once per distinct right credential until the
 * next reload (a scraper's every request would otherwise pay for it). */
bool http_webcfg_admit(struct http_webcfg *w, const char *authorization);

#endif
