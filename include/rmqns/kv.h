/* KV config: namespace -> key -> value, persisted in the Java NameServer's
 * kvConfig.json shape (protocol.md §7). Readers use the lookups below inside
 * an RCU read-side section; only the registrar thread changes the store,
 * and it writes the file durably before a change is acknowledged. */
#ifndef RMQNS_KV_H
#define RMQNS_KV_H

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

#endif
