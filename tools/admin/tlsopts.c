/* rmqns-admin's TLS settings (tlsopts.h). */
#include <stdio.h>
#include <string.h>

#include "rmqns/client.h"
#include "rmqns/err.h"
#include "tlsopts.h"

static int tls_bool(const char *name, const char *v, bool *out, char *err, size_t err_len)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
		*out = strcmp(v, "true") == 0;
		return 0;
	}
	snprintf(err, err_len, "%s wants true or false, not \"%s\"", name, v);
	return -1;
}

/* One Java client property. from_file: an entry of tls.config.file, where
 * the server's own keys may sit too and are ignored. */
static int tls_set(struct admin_tls *t, const char *name, const char *v, bool from_file, char *err,
		   size_t err_len)
{
	bool b;

	if (strcmp(name, "tls.enable") == 0) {
		if (tls_bool(name, v, &b, err, err_len) < 0)
			return -1;
		t->enable = b;
	} else if (strcmp(name, "tls.client.authServer") == 0) {
		if (tls_bool(name, v, &b, err, err_len) < 0)
			return -1;
		t->auth_server = b;
	} else if (strcmp(name, "tls.client.trustCertPath") == 0) {
		t->ca = *v ? v : NULL;
	} else if (strcmp(name, "tls.client.certPath") == 0) {
		t->cert = *v ? v : NULL;
	} else if (strcmp(name, "tls.client.keyPath") == 0) {
		t->key = *v ? v : NULL;
	} else if (strcmp(name, "tls.client.keyPassword") == 0) {
		t->password = v;
	} else if (strcmp(name, "tls.config.file") == 0 && !from_file) {
		t->config_file = *v ? v : NULL;
	} else if (!from_file) {
		snprintf(err, err_len, "-D%s: not a TLS client setting (see rmqns-admin --help)", name);
		return -1;
	}
	return 0;
}

int admin_tls_define(struct admin_tls *t, const char *def, char *err, size_t err_len)
{
	const char *eq = strchr(def, '=');
	char name[64];

	if (!eq || eq == def || (size_t)(eq - def) >= sizeof name) {
		snprintf(err, err_len, "-D wants name=value, not \"%s\"", def);
		return -1;
	}
	memcpy(name, def, (size_t)(eq - def));
	name[eq - def] = '\0';
	return tls_set(t, name, eq + 1, false, err, err_len);
}

int admin_tls_ctx(struct admin_tls *t, struct ssl_ctx_st **out, char *err, size_t err_len)
{
	*out = NULL;
	if (t->config_file) {
		char why[256];
		if (properties_load_file(&t->file, t->config_file, why, sizeof why) < 0) {
			snprintf(err, err_len, "tls.config.file: %s", why);
			return -1;
		}
		for (size_t i = 0; i < t->file.count; i++)
			if (tls_set(t, t->file.items[i].key, t->file.items[i].value, true, why,
				    sizeof why) < 0) {
				snprintf(err, err_len, "%s: %s", t->config_file, why);
				return -1;
			}
	}
	if (!t->enable)
		return 0;
	if (!t->cert != !t->key) {
		snprintf(err, err_len, "a client certificate and its key go together "
			 "(--tls-cert/--tls-key, tls.client.certPath/tls.client.keyPath)");
		return -1;
	}
	const struct client_tls_opts o = {
		.ca = t->auth_server == 0 ? NULL : t->ca,
		.cert = t->cert,
		.key = t->key,
		.key_password = t->password,
		.no_verify_hostname = t->no_verify_hostname,
	};
	return client_tls_ctx_new(&o, out, err, err_len) < 0 ? -1 : 0;
}
