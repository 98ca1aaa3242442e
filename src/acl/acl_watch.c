/* The running ACL (acl.h): the accounts snapshot published through RCU,
 * the thread that re-reads the file when it changes or on SIGHUP (so no
 * reload ever runs on a reactor, a worker or the registrar), and the check
 * the processor pool calls before each handler: a verdict, with refusals
 * counted and logged at most once per client address and minute (the pool
 * answers them). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <urcu.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "rmqns/filestamp.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/race.h"
#include "rmqns/remoting.h"

#define ACL_POLL_MS 1000
/* Slots of the refusal-log table: a collision only costs an extra line
 * or one hidden for the rest of a minute. */
#define ACL_LOG_SLOTS 256

struct acl {
	bool enable, read_requests, broker_requests;
	char *path;
	struct acl_accounts *current; /* RCU-published */

	pthread_mutex_t reload_lock;  /* one reload at a time */
	struct file_stamp stamp;  /* of the last read attempt, under reload_lock */

	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, reload_requested;
	bool watching;
	pthread_t watcher;

	_Atomic uint64_t log_slots[ACL_LOG_SLOTS];
	struct acl_retired *retired; /* ThreadSanitizer builds only */
};

/* ThreadSanitizer cannot see urcu's grace periods: its builds keep the
 * replaced snapshots until acl_destroy instead, unless built to check
 * reclamation (race.h). */
struct acl_retired {
	struct acl_retired *next;
	struct acl_accounts *accounts;
};

/* Reload thread, under reload_lock: publishes fresh and frees the old
 * snapshot once no reader can hold it. */
static void acl_publish(struct acl *acl, struct acl_accounts *fresh)
{
	race_release(fresh);
	struct acl_accounts *old = rcu_xchg_pointer(&acl->current, fresh);
#ifdef RMQNS_TSAN_KEEP
	struct acl_retired *r = malloc(sizeof *r);
	if (r) {
		r->accounts = old;
		r->next = acl->retired;
		acl->retired = r;
		return;
	}
#endif
	synchronize_rcu();
	race_grace_passed();
	acl_accounts_free(old);
}

static void log_loaded(const struct acl *acl, const struct acl_accounts *a, const char *what)
{
	size_t admins = 0;

	for (size_t i = 0; i < a->n; i++)
		admins += a->accounts[i].admin;
	log_info("ACL: %s %s: %zu accounts (%zu admin), %zu global white-list entries", what, acl->path,
		 a->n, admins, a->nglobal);
}

/* Reads the file again if it changed since the last attempt (or always,
 * when forced); a file that does not load keeps the accounts in force. */
static int acl_reload_if(struct acl *acl, bool forced)
{
	struct file_stamp now;
	char err[512];
	int rc = RMQNS_OK;

	pthread_mutex_lock(&acl->reload_lock);
	file_stamp_take(&now, acl->path);
	if (!forced && file_stamp_equal(&now, &acl->stamp)) {
		pthread_mutex_unlock(&acl->reload_lock);
		return RMQNS_OK;
	}
	acl->stamp = now;
	struct acl_accounts *fresh = acl_accounts_load(acl->path, err, sizeof err);
	if (!fresh) {
		log_error("ACL: %s not reloaded, the previous accounts stay in force: %s", acl->path, err);
		rc = RMQNS_EINVAL;
	} else {
		log_loaded(acl, fresh, "reloaded");
		acl_publish(acl, fresh);
	}
	pthread_mutex_unlock(&acl->reload_lock);
	return rc;
}

int acl_reload(struct acl *acl)
{
	if (!acl || !acl->enable)
		return RMQNS_OK;
	return acl_reload_if(acl, true);
}

static void *acl_watch_main(void *arg)
{
	struct acl *acl = arg;

	log_set_thread_name("acl");
	pthread_setname_np(pthread_self(), "acl");
	pthread_mutex_lock(&acl->lock);
	while (!acl->stop) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += ACL_POLL_MS / 1000;
		while (!acl->stop && !acl->reload_requested &&
		       pthread_cond_timedwait(&acl->wake, &acl->lock, &until) == 0)
			;
		if (acl->stop)
			break;
		bool forced = acl->reload_requested;
		acl->reload_requested = false;
		pthread_mutex_unlock(&acl->lock);
		if (forced)
			log_info("ACL: re-reading %s (SIGHUP)", acl->path);
		acl_reload_if(acl, forced);
		pthread_mutex_lock(&acl->lock);
	}
	pthread_mutex_unlock(&acl->lock);
	return NULL;
}

void acl_request_reload(struct acl *acl)
{
	if (!acl || !acl->watching)
		return;
	pthread_mutex_lock(&acl->lock);
	acl->reload_requested = true;
	pthread_cond_signal(&acl->wake);
	pthread_mutex_unlock(&acl->lock);
}

/* Broker requests pass unchecked by default (brokers do not sign): said
 * once at start, for an operator who takes aclEnable for the whole story. */
static void acl_warn_unchecked_brokers(const struct acl *acl)
{
	if (acl->broker_requests)
		return;
	log_warn("ACL: aclBrokerRequests=false: broker requests (103 REGISTER_BROKER, 104 "
		 "UNREGISTER_BROKER, 904 heartbeat) are not checked, so any client that reaches this "
		 "port can register a live broker's identity at an address of its own (producers then "
		 "send there) or remove a broker. Brokers do not sign their requests: set "
		 "aclBrokerRequests=true and list the brokers' addresses in globalWhiteRemoteAddresses");
}

struct acl *acl_create(const struct acl_params *p, char *err, size_t errlen)
{
	struct acl *acl = calloc(1, sizeof *acl);
	pthread_condattr_t ca;

	if (!acl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	acl->enable = p->enable;
	acl->read_requests = p->read_requests;
	acl->broker_requests = p->broker_requests;
	pthread_mutex_init(&acl->reload_lock, NULL);
	pthread_mutex_init(&acl->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&acl->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (!acl->enable)
		return acl;

	char why[512];
	acl->path = strdup(p->file ? p->file : "");
	if (!acl->path) {
		snprintf(err, errlen, "out of memory");
		acl_destroy(acl);
		return NULL;
	}
	file_stamp_take(&acl->stamp, acl->path);
	acl->current = acl_accounts_load(acl->path, why, sizeof why);
	if (!acl->current) {
		snprintf(err, errlen, "aclEnable=true but the accounts file cannot be used: %s", why);
		acl_destroy(acl);
		return NULL;
	}
	log_loaded(acl, acl->current, "loaded");
	acl_warn_unchecked_brokers(acl);
	int rc = pthread_create(&acl->watcher, NULL, acl_watch_main, acl);
	if (rc != 0) {
		snprintf(err, errlen, "cannot start the thread watching %s (error %d)", acl->path, rc);
		acl_destroy(acl);
		return NULL;
	}
	acl->watching = true;
	return acl;
}

void acl_destroy(struct acl *acl)
{
	if (!acl)
		return;
	if (acl->watching) {
		pthread_mutex_lock(&acl->lock);
		acl->stop = true;
		pthread_cond_signal(&acl->wake);
		pthread_mutex_unlock(&acl->lock);
		pthread_join(acl->watcher, NULL);
	}
	/* every reader is gone by now: the server stopped first */
	acl_accounts_free(acl->current);
	while (acl->retired) {
		struct acl_retired *r = acl->retired;
		acl->retired = r->next;
		acl_accounts_free(r->accounts);
		free(r);
	}
	pthread_cond_destroy(&acl->wake);
	pthread_mutex_destroy(&acl->lock);
	pthread_mutex_destroy(&acl->reload_lock);
	free(acl->path);
	free(acl);
}

/* ---- the check ---- */

static enum metrics_counter acl_counter(enum acl_verdict v)
{
	switch (v) {
	case ACL_UNKNOWN_KEY: return MC_ACL_UNKNOWN_KEY;
	case ACL_BAD_SIGNATURE: return MC_ACL_BAD_SIGNATURE;
	case ACL_NOT_ADMIN: return MC_ACL_NOT_ADMIN;
	default: return MC_ACL_UNSIGNED;
	}
}

/* Whether this refusal is the first from its address this minute: one
 * compare-and-swap on a slot chosen by the address, no lock. */
static bool acl_log_first(struct acl *acl, const struct acl_ip *ip)
{
	struct timespec ts;
	uint32_t h = 2166136261u;
	size_t n = ip->family == AF_INET ? 4 : 16;

	for (size_t i = 0; i < n; i++)
		h = (h ^ ip->b[i]) * 16777619u;
	h = (h ^ (uint32_t)ip->family) * 16777619u;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t mark = ((uint64_t)(h | 1u) << 32) | (uint32_t)(ts.tv_sec / 60);
	_Atomic uint64_t *slot = &acl->log_slots[h % ACL_LOG_SLOTS];
	uint64_t seen = atomic_load_explicit(slot, memory_order_relaxed);
	if (seen == mark)
		return false;
	return atomic_compare_exchange_strong_explicit(slot, &seen, mark, memory_order_relaxed,
						       memory_order_relaxed);
}

bool acl_authorize(struct acl *acl, const struct remoting_cmd *cmd, const char *peer, char *remark,
		   size_t remark_len)
{
	if (!acl || !acl->enable)
		return true;
	enum acl_class cls = acl_class_of_cmd(cmd);
	if ((cls == ACL_CLASS_READ && !acl->read_requests) ||
	    (cls == ACL_CLASS_BROKER && !acl->broker_requests))
		return true;

	struct acl_ip ip;
	(void)acl_ip_of_peer(peer, &ip);
	rcu_read_lock();
	const struct acl_accounts *a = rcu_dereference(acl->current);
	race_acquire(a);
	enum acl_verdict v = acl_check(a, cmd, &ip, cls == ACL_CLASS_ADMIN, remark, remark_len);
	race_reader_done();
	rcu_read_unlock();
	if (v == ACL_PASS)
		return true;

	metrics_add(acl_counter(v), 1);
	if (acl_log_first(acl, &ip))
		log_warn("ACL: refused code %d from %s: %s (more refusals from this address are not logged "
			 "for a minute)", cmd->code, peer, remark);
	return false;
}
