/* KV config: namespace -> key -> value, persisted in the Java NameServer's
 * kvConfig.json shape (protocol.md §7). Readers use the lookups below inside
 * an RCU read-side section; only the registrar thread changes the store,
 * and it writes the file durably before a change is acknowledged. */
#ifndef RMQNS_KV_H
#define RMQNS_KV_H

#include <stdbool.h>
#include <stddef.h>

#include "rmqns/buf.h"

struct kv_store;

#define KV_NAMESPACE_ORDER_TOPIC_CONFIG "ORDER_TOPIC_CONFIG"

/* Inside rcu_read_lock(): the value, or NULL. Valid until the read-side
 * section ends. */
const char *kv_get(const struct kv_store *kv, const char *ns, const char *key);

/* Inside rcu_read_lock(): appends the namespace as a KVTable body
 * ({"table":{...}}, fastjson default form); RMQNS_ENOTFOUND if the
 * namespace does not exist. */
int kv_table_json(const struct kv_store *kv, const char *ns, struct buf *out);

/* ---- lifecycle (main thread) ---- */

/* Opens the store on `path` (kvConfigPath) and loads the file if it
 * exists, in Java's shape {"configTable":{"NS":{"k":"v"}}}. A file that
 * cannot be read or does not parse is an error (NULL, reason in err: the
 * server refuses to start), unless ignore_corrupt: then it is renamed to
 * <path>.corrupt-<unix time>, the error is logged and the store starts
 * empty. Nothing is written until the first change. */
struct kv_store *kv_open(const char *path, bool ignore_corrupt, char *err, size_t errlen);
/* Frees the store; no reader may still be inside a read-side section. */
void kv_close(struct kv_store *kv);
const char *kv_path(const struct kv_store *kv);

/* ---- changes (registrar thread only) ----
 * Each builds the new table, writes the whole file durably (tmp, fsync,
 * <path>.bak = previous content, rename, directory fsync; parent
 * directories created) and publishes the table only once the file is
 * written. On failure (RMQNS_EIO, RMQNS_ENOMEM) memory and file both keep
 * the old content and err holds the reason. */
int kv_put(struct kv_store *kv, const char *ns, const char *key, const char *value,
	   char *err, size_t errlen);
/* Removes key from ns (the namespace itself stays, possibly empty, as in
 * Java). The file is rewritten even when nothing was removed; ns or key
 * may be NULL (nothing is removed). */
int kv_delete(struct kv_store *kv, const char *ns, const char *key, char *err, size_t errlen);

/* ---- reads (inside rcu_read_lock) ---- */

/* The whole table as the file holds it (fastjson default form, no
 * trailing newline). */
int kv_file_json(const struct kv_store *kv, struct buf *out);
/* Number of namespaces and of keys over all namespaces. */
void kv_count(const struct kv_store *kv, size_t *namespaces, size_t *keys);

#endif
