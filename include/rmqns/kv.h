/* KV config: namespace -> key -> value, persisted in the Java NameServer's
 * kvConfig.json shape (protocol.md §7). Readers use the lookups below inside
 * an RCU read-side section. Changes go to the KV writer, a thread of its
 * own and the store's only writer: it writes the file durably before a
 * change is acknowledged, so no other work ever waits on this disk. */
#ifndef RMQNS_KV_H
#define RMQNS_KV_H

#include <stdbool.h>
#include <stddef.h>

#include <urcu/wfcqueue.h>

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
/* The same as GET_KVLIST_BY_NAMESPACE sends it: cached as bytes until the
 * table changes, else built into scratch. *body is valid until
 * rcu_read_unlock() and points into scratch when it was built. */
int kv_table_body(const struct kv_store *kv, const char *ns, const uint8_t **body, size_t *len,
		  struct buf *scratch);

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

/* ---- changes (one writer thread at a time: the KV writer below) ----
 * A batch is a private copy of the table that changes are applied to in
 * order; committing it writes the whole file durably once (tmp, fsync,
 * <path>.bak = previous content, rename, directory fsync; parent
 * directories created) and publishes the new table only once the file is
 * written. On failure (RMQNS_EIO, RMQNS_ENOMEM) memory and file both keep
 * the old content, err holds the reason and the batch is freed. */
struct kv_batch;

/* NULL when out of memory. */
struct kv_batch *kv_batch_begin(struct kv_store *kv);
/* RMQNS_ENOMEM leaves the batch as it was (this change alone is lost). */
int kv_batch_put(struct kv_batch *b, const char *ns, const char *key, const char *value);
/* Removes key from ns (the namespace itself stays, possibly empty, as in
 * Java); ns or key may be NULL (nothing is removed; the commit still
 * rewrites the file, as Java does). */
void kv_batch_delete(struct kv_batch *b, const char *ns, const char *key);
int kv_batch_commit(struct kv_batch *b, char *err, size_t errlen);
void kv_batch_abort(struct kv_batch *b);

/* One change, committed on its own (a batch of one). */
int kv_put(struct kv_store *kv, const char *ns, const char *key, const char *value,
	   char *err, size_t errlen);
int kv_delete(struct kv_store *kv, const char *ns, const char *key, char *err, size_t errlen);

/* ---- the KV writer thread ----
 * Takes everything queued at once, applies it in arrival order to one
 * batch and commits it with one file write (group commit: while one write
 * waits on the disk, the changes arriving meanwhile make up the next
 * batch). Only then is each change's done callback run, on the writer
 * thread, in arrival order: rc 0, or the error (with err) of the whole
 * batch's write or of that change alone (out of memory). Should no thread
 * start at destroy, late changes get RMQNS_ECLOSED there, unwritten. */
enum kv_change_op { KV_CHANGE_PUT, KV_CHANGE_DELETE };

struct kv_change;
typedef void (*kv_change_done_fn)(struct kv_change *c, int rc, const char *err);

struct kv_change {
	struct cds_wfcq_node node; /* the writer's */
	int rc;                    /* the writer's */
	enum kv_change_op op;
	const char *ns, *key, *value; /* the caller's, valid until done */
	kv_change_done_fn done;       /* answers and frees the change */
};

struct kv_writer;

struct kv_writer *kv_writer_create(struct kv_store *kv);
int kv_writer_start(struct kv_writer *w);
/* Queues c; never blocks, never fails. Safe from any thread, before the
 * writer starts too (the queue waits for it). */
void kv_writer_submit(struct kv_writer *w, struct kv_change *c);
/* Commits and answers everything queued, then joins the thread. */
void kv_writer_stop(struct kv_writer *w);
/* Stops the writer if it runs, commits what was queued after, frees it. */
void kv_writer_destroy(struct kv_writer *w);

/* Changes and file writes (batches) committed or failed so far; read
 * after kv_writer_stop or from a done callback. */
void kv_writer_counts(const struct kv_writer *w, unsigned long *changes, unsigned long *writes);

/* ---- reads (inside rcu_read_lock) ---- */

/* The whole table as the file holds it (fastjson default form, no
 * trailing newline). */
int kv_file_json(const struct kv_store *kv, struct buf *out);
/* Number of namespaces and of keys over all namespaces. */
void kv_count(const struct kv_store *kv, size_t *namespaces, size_t *keys);

#endif
