/* The route snapshot (warm restart): the route tables written to one file
 * now and then and at SIGTERM, and read back before the port opens, so a
 * restarted NameServer answers routes at once instead of TOPIC_NOT_EXIST
 * until every broker has registered again. */
#ifndef RMQNS_ROUTE_SNAPSHOT_H
#define RMQNS_ROUTE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/route.h"

/* The file's format version (the header's; another is refused). */
#define ROUTE_SNAPSHOT_VERSION 1u
/* Bytes of the header: magic, version, CRC32, content length, written at. */
#define ROUTE_SNAPSHOT_HEADER 32u

/* Wall-clock time in ms (CLOCK_REALTIME): a snapshot's age spans a
 * restart, which the monotonic clock does not. */
uint64_t route_snapshot_wall_ms(void);

/* Encodes the tables into out (appended): read lock-free on the calling
 * thread (registered with urcu, outside any read-side section), never
 * blocking the registrar. wall_ms is stored as the time of writing.
 * RMQNS_EAGAIN when CLOCK_MONOTONIC passes *deadline_ns (read as it goes,
 * so another thread may set it; NULL or 0 = none); RMQNS_ENOMEM. */
int route_snapshot_encode(struct route_db *db, uint64_t wall_ms, const uint64_t *deadline_ns,
			  struct buf *out);

struct route_snapshot_info {
	uint64_t age_ms;   /* wall time since it was written */
	uint32_t groups;
	uint32_t brokers;  /* live entries restored */
	uint32_t expired;  /* of them, past their timeout already (removed) */
	uint64_t topics;
};

/* Rebuilds the tables of an empty db from the bytes of a snapshot, through
 * the writer functions a registration uses, on the calling thread, which
 * stands in for the registrar (registered with urcu, outside any read-side
 * section; before the registrar starts). now_wall_ms is the wall clock
 * now. Checks everything before it changes anything: RMQNS_ECRC,
 * RMQNS_EPROTO (not a snapshot, or another version), RMQNS_EINVAL (a
 * record that does not hold together), with the reason in err; db is
 * unchanged then. RMQNS_ENOTFOUND when it is older than its longest
 * broker timeout (ignored). RMQNS_ENOMEM may leave db partly filled. */
int route_snapshot_load_bytes(struct route_db *db, const uint8_t *p, size_t len, uint64_t now_wall_ms,
			      struct route_snapshot_info *info, char *err, size_t errlen);

/* Start-up: loads the snapshot at path (NULL or "" = off) into *db, a db
 * just created, on a thread of its own registered with urcu, and logs
 * what it did: restored, none there, stale (ignored) or refused (corrupt,
 * truncated: the server starts empty). A load that fails half-way leaves
 * a fresh empty db in *db. Returns 1 when routes were restored, else 0;
 * RMQNS_ENOMEM only when no empty db could be made either. */
int route_snapshot_restore(struct route_db **db, const char *path);

/* ---- the writer thread (route_snapshot_file.c) ---- */

struct route_snapshot_writer;

/* Starts the thread that writes the snapshot at path (write, fsync,
 * rename): at most every interval_ms, when the tables changed, and also
 * unchanged once its broker ages get old (so a crash still finds brokers
 * within their timeouts). NULL when path is NULL or "" (off) or the thread
 * cannot start (logged). */
struct route_snapshot_writer *route_snapshot_writer_start(struct route_db *db, const char *path,
							  uint32_t interval_ms);
/* SIGTERM: writes the last snapshot if it fits before deadline_ns
 * (CLOCK_MONOTONIC ns; 0 = no last snapshot), else skips it with a log
 * line; a write that would pass the deadline is abandoned, leaving the
 * previous file. Then stops the thread and frees w. NULL does nothing. */
void route_snapshot_writer_stop(struct route_snapshot_writer *w, uint64_t deadline_ns);

/* Writes bytes to path atomically: <path>.tmp written in chunks, fsynced,
 * renamed over path, directory fsynced. RMQNS_EAGAIN (the tmp file
 * removed, path untouched) when CLOCK_MONOTONIC passes *deadline_ns (as
 * for route_snapshot_encode) before the rename; RMQNS_EIO with the reason
 * in err. */
int route_snapshot_write_file(const char *path, const uint8_t *p, size_t len, const uint64_t *deadline_ns,
			      char *err, size_t errlen);

#endif
