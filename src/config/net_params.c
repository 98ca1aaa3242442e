/* The network side's parameters built from the start-up options
 * (net_params.h): struct server_params, and the TLS settings from the
 * tls.* options and the tls.config.file they may name. net itself reads
 * no options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/net.h"
#include "rmqns/net_params.h"
#include "rmqns/properties.h"
#include "rmqns/remoting.h"
#include "rmqns/tls.h"

void server_params_from_options(struct server_params *p, const struct options *o, unsigned cpus)
{
	memset(p, 0, sizeof *p);
	p->bind_address = o->bindAddress;
	p->port = o->listenPort;
	p->backlog = o->serverSocketBacklog > 0 ? o->serverSocketBacklog : 1024;
	unsigned n = o->serverSelectorThreads > 0 ? (unsigned)o->serverSelectorThreads
						  : (cpus ? cpus : 1u);
	p->reactors = n > NET_MAX_REACTORS ? NET_MAX_REACTORS : n;
	p->max_frame = o->maxFrameSize > 0 && o->maxFrameSize <= INT32_MAX
			       ? (uint32_t)o->maxFrameSize
			       : REMOTING_DEFAULT_MAX_FRAME;
	/* in 64 bits: INT32_MAX seconds is past 2^32 ms */
	p->idle_close_ms = o->serverChannelMaxIdleTimeSeconds > 0
				   ? (uint64_t)o->serverChannelMaxIdleTimeSeconds * 1000u
				   : 0;
	p->outbound_pause_bytes = o->outboundPauseBytes > 0 ? (uint64_t)o->outboundPauseBytes : 0;
	p->outbound_close_bytes = o->outboundCloseBytes > 0 ? (uint64_t)o->outboundCloseBytes : 0;
	p->sndbuf = o->serverSocketSndBufSize;
	p->rcvbuf = o->serverSocketRcvBufSize;
	p->cpu_affinity = o->serverReactorCpuAffinity;
	p->max_inflight = o->serverMaxInflight > 0 ? (uint32_t)o->serverMaxInflight : 0;
	p->memory_budget = o->connectionMemoryBudget > 0 ? (uint64_t)o->connectionMemoryBudget : 0;
}

/* The index of text among the names name(0), name(1), name(2); -1: none. */
static int parse_choice(const char *(*name)(int), const char *text)
{
	for (int i = 0; i < 3; i++)
		if (text && strcasecmp(text, name(i)) == 0)
			return i;
	return -1;
}

static const char *mode_name(int i)
{
	return tls_mode_name((enum tls_mode)i);
}

static const char *auth_name(int i)
{
	return tls_client_auth_name((enum tls_client_auth)i);
}

/* One key of the options or of the file. */
static int settings_apply(struct tls_settings *s, const char *key, const char *value,
			  const char *where, char *err, size_t errlen)
{
	if (strcmp(key, "tls.server.mode") == 0) {
		int m = parse_choice(mode_name, value);
		if (m < 0) {
			snprintf(err, errlen, "invalid value for tls.server.mode%s: '%s' (expected disabled, permissive or enforcing)",
				 where, value);
			return RMQNS_EINVAL;
		}
		s->mode = (enum tls_mode)m;
		return RMQNS_OK;
	}
	if (strcmp(key, "tls.server.need.client.auth") == 0) {
		int a = parse_choice(auth_name, value);
		if (a < 0) {
			snprintf(err, errlen, "invalid value for tls.server.need.client.auth%s: '%s' (expected none, optional or require)",
				 where, value);
			return RMQNS_EINVAL;
		}
		s->client_auth = (enum tls_client_auth)a;
		return RMQNS_OK;
	}
	if (strcmp(key, "tls.test.mode.enable") == 0) {
		if (strcasecmp(value, "true") != 0 && strcasecmp(value, "false") != 0) {
			snprintf(err, errlen, "invalid value for tls.test.mode.enable%s: '%s' (expected true or false)",
				 where, value);
			return RMQNS_EINVAL;
		}
		s->test_mode = strcasecmp(value, "true") == 0;
		return RMQNS_OK;
	}
	char **slot = strcmp(key, "tls.server.certPath") == 0	      ? &s->cert_path
		      : strcmp(key, "tls.server.keyPath") == 0	      ? &s->key_path
		      : strcmp(key, "tls.server.keyPassword") == 0    ? &s->key_password
		      : strcmp(key, "tls.server.trustCertPath") == 0 ? &s->trust_path
								      : NULL;
	if (!slot)
		return RMQNS_EAGAIN; /* not a key of ours */
	if (tls_settings_set_path(slot, value) < 0) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	return RMQNS_OK;
}

int tls_settings_load(struct tls_settings *s, const struct options *o, char *err, size_t errlen)
{
	const struct {
		const char *key, *value;
	} from_options[] = {
		{ "tls.server.mode", o->tlsServerMode },
		{ "tls.server.need.client.auth", o->tlsServerNeedClientAuth },
		{ "tls.server.certPath", o->tlsServerCertPath },
		{ "tls.server.keyPath", o->tlsServerKeyPath },
		{ "tls.server.keyPassword", o->tlsServerKeyPassword },
		{ "tls.server.trustCertPath", o->tlsServerTrustCertPath },
		{ "tls.test.mode.enable", o->tlsTestModeEnable ? "true" : "false" },
	};
	int rc = RMQNS_OK;

	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < sizeof from_options / sizeof from_options[0] && rc == RMQNS_OK; i++)
		if (from_options[i].value && *from_options[i].value) /* unset: the default */
			rc = settings_apply(s, from_options[i].key, from_options[i].value, "", err, errlen);
	if (rc == RMQNS_OK && o->tlsConfigFile && *o->tlsConfigFile) {
		struct properties p = PROPERTIES_INIT;
		char where[300];
		snprintf(where, sizeof where, " in %s", o->tlsConfigFile);
		rc = properties_load_file(&p, o->tlsConfigFile, err, errlen);
		for (size_t i = 0; i < p.count && rc == RMQNS_OK; i++) {
			rc = settings_apply(s, p.items[i].key, p.items[i].value, where, err, errlen);
			if (rc == RMQNS_EAGAIN) {
				/* Java's file also holds client keys and tls.server.authClient */
				log_debug("tls.config.file %s: %s is not a server key, ignored", o->tlsConfigFile,
					  p.items[i].key);
				rc = RMQNS_OK;
			}
		}
		properties_free(&p);
	}
	if (rc < 0)
		tls_settings_free(s);
	return rc;
}

