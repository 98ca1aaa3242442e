/* rmqns-admin's TLS settings: the bench's options (--tls, --tls-ca,
 * --tls-cert, --tls-key) and the Java client's property names given as
 * -Dname=value (tls.enable, tls.client.trustCertPath, tls.client.certPath,
 * tls.client.keyPath, tls.client.keyPassword, tls.client.authServer,
 * tls.config.file), turned into one client context. */
#ifndef ADMIN_TLSOPTS_H
#define ADMIN_TLSOPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "rmqns/properties.h"

struct ssl_ctx_st;

struct admin_tls {
	bool enable;
	int auth_server; /* -1 unset, else tls.client.authServer */
	bool no_verify_hostname; /* --tls-no-verify-hostname */
	const char *ca, *cert, *key, *password;
	const char *config_file;
	struct properties file; /* tls.config.file's entries, once loaded */
};

#define ADMIN_TLS_INIT { .auth_server = -1, .file = PROPERTIES_INIT }

/* One -D setting ("name=value"). 0, or -1 with the reason in err. */
int admin_tls_define(struct admin_tls *t, const char *def, char *err, size_t err_len);

/* The client context the settings ask for (NULL when TLS is off): the
 * tls.config.file's values win over the command line's, as in Java. 0, or
 * -1 with the reason in err. */
int admin_tls_ctx(struct admin_tls *t, struct ssl_ctx_st **out, char *err, size_t err_len);

#endif
