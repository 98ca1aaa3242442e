/* The route snapshot's file (route_snapshot.h): read back at start, and
 * the writer thread that encodes the tables lock-free, as a reader, so
 * neither the registrar nor the readers ever wait for it, and replaces the
 * file atomically (write, fsync, rename). The last snapshot at SIGTERM is
 * bounded by the shutdown deadline. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/route_snapshot.h"

/* An unchanged table is written again once the last file is this old, so
 * that the broker ages in it stay well inside the default timeout (120 s)
 * for a restart after a crash. */
#define SNAPW_REFRESH_MS 30000u
/* Bytes written between two looks at the deadline. */
#define SNAPW_CHUNK (1u << 20)
/* The last snapshot is tried only when the time left is this many times
 * what the previous one took. */
#define SNAPW_MARGIN 2u

struct route_snapshot_writer {
	struct route_db *db;
	char *path;
	uint32_t interval_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	bool stop;           /* under lock */
	/* CLOCK_MONOTONIC ns a write under way must end by (0 = none): set
	 * by the stop, so that a periodic write cannot hold SIGTERM up */
	uint64_t deadline_ns;
	uint64_t written_changes; /* route_db_changes at the last write */
	uint64_t written_ms;      /* CLOCK_MONOTONIC ms of the last write; 0 = none */
	uint64_t cost_ns;         /* what the last write took, encoding included */
	struct buf bytes;
};

static uint64_t snapw_now_ms(void)
{
	return metrics_now_ns() / 1000000u;
}

static int snapw_fail(char *err, size_t errlen, const char *what, const char *path)
{
	snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
	return RMQNS_EIO;
}

static bool snapw_past(const uint64_t *deadline_ns)
{
	uint64_t d = deadline_ns ? __atomic_load_n(deadline_ns, __ATOMIC_RELAXED) : 0;
	return d && metrics_now_ns() > d;
}

int route_snapshot_write_file(const char *path, const uint8_t *p, size_t len, const uint64_t *deadline_ns,
			      char *err, size_t errlen)
{
	char tmp[4096], dir[4096];
	int fd, rc = 0;

	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		snprintf(err, errlen, "path too long: %s", path);
		return RMQNS_EIO;
	}
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof dir, ".");
	if (durable_mkdirs(dir, err, errlen) < 0)
		return RMQNS_EIO;
	fd = durable_create_tmp(tmp, 0640, err, errlen);
	if (fd < 0)
		return fd;
	for (size_t off = 0; off < len && rc == 0;) {
		if (snapw_past(deadline_ns)) {
			rc = RMQNS_EAGAIN;
			break;
		}
		size_t n = len - off > SNAPW_CHUNK ? SNAPW_CHUNK : len - off;
		ssize_t w = write(fd, p + off, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			rc = snapw_fail(err, errlen, "cannot write", tmp);
		else
			off += (size_t)w;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = snapw_fail(err, errlen, "cannot fsync", tmp);
	if (close(fd) < 0 && rc == 0)
		rc = snapw_fail(err, errlen, "cannot close", tmp);
	/* the rename is the commit: not made past the deadline */
	if (rc == 0 && snapw_past(deadline_ns))
		rc = RMQNS_EAGAIN;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = snapw_fail(err, errlen, "cannot rename over", path);
	if (rc) {
		(void)unlink(tmp);
		return rc;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		log_warn("route snapshot: cannot fsync the directory %s: %s", dir, strerror(errno));
	if (dfd >= 0)
		close(dfd);
	return 0;
}

/* One snapshot: encoded and written, or abandoned at the deadline. */
static int snapw_write(struct route_snapshot_writer *w, const uint64_t *deadline_ns)
{
	uint64_t changes = route_db_changes(w->db);
	uint64_t t0 = metrics_now_ns();
	char err[512] = "";
	int rc;

	buf_reset(&w->bytes);
	rc = route_snapshot_encode(w->db, route_snapshot_wall_ms(), deadline_ns, &w->bytes);
	uint64_t t1 = metrics_now_ns();
	if (rc == 0)
		rc = route_snapshot_write_file(w->path, w->bytes.data, w->bytes.len, deadline_ns, err, sizeof err);
	uint64_t t2 = metrics_now_ns();
	if (rc == RMQNS_EAGAIN) {
		log_warn("route snapshot: abandoned at the shutdown deadline after %llu ms; %s keeps the "
			 "previous one",
			 (unsigned long long)((t2 - t0) / 1000000u), w->path);
	} else if (rc) {
		log_error("route snapshot: not written: %s", err[0] ? err : rmqns_strerror(rc));
	} else {
		w->written_changes = changes;
		w->written_ms = t2 / 1000000u;
		w->cost_ns = t2 - t0;
		log_debug("route snapshot: %zu bytes to %s, encoded in %llu ms, written in %llu ms",
			  w->bytes.len, w->path, (unsigned long long)((t1 - t0) / 1000000u),
			  (unsigned long long)((t2 - t1) / 1000000u));
	}
	/* a big table's bytes are not kept between writes */
	if (w->bytes.cap > SNAPW_CHUNK)
		buf_free(&w->bytes);
	return rc;
}

static bool snapw_due(const struct route_snapshot_writer *w)
{
	if (route_db_changes(w->db) != w->written_changes)
		return true;
	return w->written_ms && snapw_now_ms() - w->written_ms >= SNAPW_REFRESH_MS;
}

static void snapw_deadline(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000u;
	ts->tv_nsec += (long)(ms % 1000u) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *snapw_main(void *arg)
{
	struct route_snapshot_writer *w = arg;
	struct timespec until;

	log_set_thread_name("snapshot");
	pthread_setname_np(pthread_self(), "snapshot");
	rcu_register_thread();
	pthread_mutex_lock(&w->lock);
	for (;;) {
		snapw_deadline(&until, w->interval_ms);
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
			;
		if (w->stop)
			break;
		if (!snapw_due(w))
			continue;
		pthread_mutex_unlock(&w->lock);
		(void)snapw_write(w, &w->deadline_ns);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	rcu_unregister_thread();
	return NULL;
}

struct route_snapshot_writer *route_snapshot_writer_start(struct route_db *db, const char *path,
							  uint32_t interval_ms)
{
	struct route_snapshot_writer *w;
	pthread_condattr_t ca;

	if (!path || !path[0])
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		log_error("route snapshot: out of memory: no snapshots will be written");
		free(w);
		return NULL;
	}
	w->db = db;
	w->interval_ms = interval_ms ? interval_ms : 1000u;
	/* what is there now came from the snapshot or from nothing */
	w->written_changes = route_db_changes(db);
	w->written_ms = snapw_now_ms();
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, snapw_main, w) != 0) {
		log_error("route snapshot: cannot start its thread: no snapshots will be written");
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w->path);
		free(w);
		return NULL;
	}
	log_info("route snapshot: written to %s at most every %u ms when the routes changed, and at "
		 "SIGTERM",
		 path, w->interval_ms);
	return w;
}

void route_snapshot_writer_stop(struct route_snapshot_writer *w, uint64_t deadline_ns)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	/* a periodic write under way ends by the deadline (abandoned if it
	 * must), and the last one below is skipped if that ate the time */
	__atomic_store_n(&w->deadline_ns, deadline_ns ? deadline_ns : metrics_now_ns(), __ATOMIC_RELAXED);
	pthread_join(w->thread, NULL);
	w->deadline_ns = deadline_ns;
	if (deadline_ns) {
		uint64_t now = metrics_now_ns();
		uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
		if (left <= w->cost_ns * SNAPW_MARGIN) {
			log_warn("route snapshot: the last one skipped: %llu ms left before the shutdown "
				 "deadline, the previous took %llu ms; %s keeps the previous one",
				 (unsigned long long)(left / 1000000u),
				 (unsigned long long)(w->cost_ns / 1000000u), w->path);
		} else {
			rcu_register_thread();
			if (snapw_write(w, &w->deadline_ns) == 0)
				log_info("route snapshot: written at shutdown to %s", w->path);
			rcu_unregister_thread();
		}
	}
	buf_free(&w->bytes);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w);
}

/* ---- restore at start ---- */

/* Past this a file is not a snapshot this build wrote (1.28 M topics take
 * about 50 MB). */
#define SNAP_FILE_MAX ((size_t)4 << 30)

struct snapw_restore {
	struct route_db *db;
	const char *path;
	int rc;
};

static void snapw_restore_run(struct snapw_restore *r)
{
	struct buf file = BUF_INIT;
	struct route_snapshot_info info;
	char err[512] = "";
	uint64_t t0 = metrics_now_ns();

	r->rc = durable_read(r->path, SNAP_FILE_MAX, &file, err, sizeof err);
	if (r->rc == RMQNS_ENOTFOUND) {
		log_info("route snapshot: none at %s; starting empty", r->path);
	} else if (r->rc < 0) {
		log_error("route snapshot: refused, starting empty: %s", err);
	} else {
		r->rc = route_snapshot_load_bytes(r->db, file.data, file.len, route_snapshot_wall_ms(), &info,
						  err, sizeof err);
		if (r->rc == 0)
			log_info("route snapshot: restored from %s (written %llu ms ago): %u broker groups, %u "
				 "brokers (%u past their timeout, removed), %llu topics in %llu ms",
				 r->path, (unsigned long long)info.age_ms, info.groups, info.brokers, info.expired,
				 (unsigned long long)info.topics,
				 (unsigned long long)((metrics_now_ns() - t0) / 1000000u));
		else if (r->rc == RMQNS_ENOTFOUND)
			log_warn("route snapshot: %s ignored: %s; starting empty", r->path, err);
		else
			log_error("route snapshot: %s refused, starting empty: %s", r->path, err);
	}
	buf_free(&file);
}

static void *snapw_restore_thread(void *arg)
{
	rcu_register_thread();
	snapw_restore_run(arg);
	rcu_unregister_thread();
	return NULL;
}

int route_snapshot_restore(struct route_db **db, const char *path)
{
	struct snapw_restore r = { *db, path, 0 };
	pthread_t t;

	if (!path || !path[0])
		return 0;
	/* on a registered thread of its own, standing in for the registrar,
	 * which has not started */
	if (pthread_create(&t, NULL, snapw_restore_thread, &r) != 0) {
		log_error("route snapshot: cannot start a thread to read %s; starting empty", path);
		return 0;
	}
	pthread_join(t, NULL);
	if (r.rc == 0)
		return 1;
	if (r.rc != RMQNS_ENOMEM)
		return 0; /* refused before any change */
	/* half-filled: an empty db instead */
	route_db_destroy(*db);
	*db = route_db_create(0);
	return *db ? 0 : RMQNS_ENOMEM;
}
