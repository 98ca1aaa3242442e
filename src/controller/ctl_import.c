/* controllerImportFile: the JSON rmqns-admin exportControllerState writes,
 * read into the events that rebuild it (per set: an ADOPT_REPLICA per
 * replica, then an ADOPT_MASTER with its epochs and sync-state set). The
 * leader proposes them once, on an empty store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/buf.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/json_reader.h"

#define IMPORT_MAX_BYTES (64u << 20)

/* The events read so far, in a growing buffer (v: its data). */
struct events {
	struct buf b;
	struct ctl_event *v;
	uint32_t n;
};

static struct ctl_event *events_add(struct events *e)
{
	if (e->n >= (1u << 24) || buf_reserve(&e->b, sizeof *e->v))
		return NULL;
	e->v = (struct ctl_event *)(void *)e->b.data;
	memset(&e->v[e->n], 0, sizeof *e->v);
	e->b.len += sizeof *e->v;
	return &e->v[e->n++];
}

/* One set as read: its ADOPT_MASTER in `master`, its replicas appended to
 * the event list as they come (their set's name and cluster filled in at
 * the end, since members come in any order). */
struct set_read {
	char *name, *cluster;
	int64_t next_id;
	uint32_t first;          /* index of its first replica event */
	struct ctl_event master;
	bool has_epoch, has_sss_epoch;
};

static int read_ids(struct jp *j, struct ctl_event *ev)
{
	int rc = jp_arr_begin(j), more;
	uint32_t cap = 0;

	while (!rc && (more = jp_arr_next(j)) > 0) {
		if (ev->id_count == cap) {
			if (cap >= CTL_MAX_IDS)
				return RMQNS_EINVAL;
			cap = cap ? cap * 2 : 8;
			int64_t *g = realloc(ev->ids, cap * sizeof *g);
			if (!g)
				return RMQNS_ENOMEM;
			ev->ids = g;
		}
		rc = jp_int64(j, &ev->ids[ev->id_count++]);
	}
	return rc ? rc : more;
}

static int read_replica(struct jp *j, struct events *e)
{
	struct ctl_event *ev = events_add(e);
	const char *key, *s;
	size_t len;
	int rc, more;
	bool has_id = false;

	if (!ev)
		return RMQNS_ENOMEM;
	ev->type = CTL_EV_ADOPT_REPLICA;
	rc = jp_obj_begin(j);
	while (!rc && (more = jp_obj_key(j, &key, &len)) > 0) {
		if (strcmp(key, "brokerId") == 0) {
			rc = jp_int64(j, &ev->broker_id);
			has_id = !rc;
		} else if (strcmp(key, "brokerAddress") == 0 && !ev->address) {
			rc = jp_string(j, &s, &len);
			if (!rc && !(ev->address = strndup(s, len)))
				rc = RMQNS_ENOMEM;
		} else {
			rc = jp_skip(j);
		}
	}
	if (!rc && more < 0)
		rc = more;
	if (!rc && (!has_id || ev->broker_id < 1 || ev->broker_id == INT64_MAX || !ev->address))
		rc = RMQNS_EINVAL;
	return rc;
}

static int read_text(struct jp *j, char **out)
{
	const char *s;
	size_t len;
	int rc = *out ? RMQNS_EINVAL : jp_string(j, &s, &len);

	if (!rc && !(*out = strndup(s, len)))
		rc = RMQNS_ENOMEM;
	return rc;
}

/* An epoch, and that the set gave it (finish_set requires both). */
static int read_epoch(struct jp *j, int32_t *epoch, bool *given)
{
	int rc = jp_int32(j, epoch);

	*given = !rc;
	return rc;
}

static int read_set_member(struct jp *j, const char *key, struct set_read *sr, struct events *e)
{
	int rc, more;

	if (strcmp(key, "brokerName") == 0)
		return read_text(j, &sr->name);
	if (strcmp(key, "clusterName") == 0)
		return read_text(j, &sr->cluster);
	if (strcmp(key, "nextBrokerId") == 0)
		return jp_int64(j, &sr->next_id);
	if (strcmp(key, "masterBrokerId") == 0) {
		if (jp_peek(j) == JP_NULL)
			return jp_null(j);
		sr->master.elected = true;
		return jp_int64(j, &sr->master.broker_id);
	}
	if (strcmp(key, "masterEpoch") == 0)
		return read_epoch(j, &sr->master.master_epoch, &sr->has_epoch);
	if (strcmp(key, "syncStateSetEpoch") == 0)
		return read_epoch(j, &sr->master.sss_epoch, &sr->has_sss_epoch);
	if (strcmp(key, "syncStateSet") == 0)
		return read_ids(j, &sr->master);
	if (strcmp(key, "replicas") == 0) {
		rc = jp_arr_begin(j);
		while (!rc && (more = jp_arr_next(j)) > 0)
			rc = read_replica(j, e);
		return rc ? rc : more;
	}
	return jp_skip(j);
}

/* The set's replica events get its name and cluster; its ADOPT_MASTER follows. */
static int finish_set(struct set_read *sr, struct events *e)
{
	struct ctl_event *m = &sr->master;

	if (!sr->name || !*sr->name || !sr->cluster || e->n == sr->first || !sr->has_epoch ||
	    !sr->has_sss_epoch || m->master_epoch < 0 || m->sss_epoch < 0 ||
	    (m->elected && m->broker_id < 1))
		return RMQNS_EINVAL;
	for (uint32_t i = sr->first; i < e->n; i++) {
		struct ctl_event *ev = &e->v[i];
		ev->broker_name = strdup(sr->name);
		ev->cluster = strdup(sr->cluster);
		if (!ev->broker_name || !ev->cluster)
			return RMQNS_ENOMEM;
		ev->next_id = sr->next_id > ev->broker_id + 1 ? sr->next_id : ev->broker_id + 1;
	}
	for (uint32_t i = 0; i < m->id_count; i++)
		if (m->ids[i] < 1)
			return RMQNS_EINVAL;
	ctl_ids_normalize(m->ids, &m->id_count);
	struct ctl_event *ev = events_add(e);
	if (!ev)
		return RMQNS_ENOMEM;
	m->type = CTL_EV_ADOPT_MASTER;
	m->broker_name = sr->name;
	sr->name = NULL;
	*ev = *m;
	memset(m, 0, sizeof *m);
	return 0;
}

static int read_set(struct jp *j, struct events *e)
{
	struct set_read sr = { .first = e->n };
	const char *key;
	size_t len;
	int rc = jp_obj_begin(j), more;

	while (!rc && (more = jp_obj_key(j, &key, &len)) > 0) {
		char *k = strndup(key, len); /* the key's storage goes with the next string */
		rc = k ? read_set_member(j, k, &sr, e) : RMQNS_ENOMEM;
		free(k);
	}
	if (!rc && more < 0)
		rc = more;
	if (!rc)
		rc = finish_set(&sr, e);
	free(sr.name);
	free(sr.cluster);
	ctl_event_clear(&sr.master);
	return rc;
}

static int read_doc(struct jp *j, struct events *e, bool *format_ok)
{
	const char *key, *s;
	size_t len;
	int rc = jp_obj_begin(j), more;

	while (!rc && (more = jp_obj_key(j, &key, &len)) > 0) {
		if (strcmp(key, "format") == 0) {
			rc = jp_string(j, &s, &len);
			*format_ok = !rc && len == 22 && memcmp(s, "rmqns-controller-state", 22) == 0;
		} else if (strcmp(key, "brokerSets") == 0) {
			rc = jp_arr_begin(j);
			while (!rc && (more = jp_arr_next(j)) > 0)
				rc = read_set(j, e);
			if (!rc && more < 0)
				rc = more;
		} else {
			rc = jp_skip(j);
		}
	}
	if (!rc && more < 0)
		rc = more;
	return rc ? rc : jp_end(j);
}

int ctl_import_read(const char *path, struct ctl_event **out, uint32_t *count, char *err,
		    size_t errlen)
{
	struct events e = { BUF_INIT, NULL, 0 };
	struct buf text = BUF_INIT;
	bool format_ok = false;
	struct jp j;

	*out = NULL;
	*count = 0;
	int rc = durable_read(path, IMPORT_MAX_BYTES, &text, err, errlen);
	if (rc) {
		buf_free(&text);
		return rc == RMQNS_ENOTFOUND ? RMQNS_EIO : rc;
	}
	jp_init_opts(&j, text.data, text.len, 16, JP_RFC);
	rc = read_doc(&j, &e, &format_ok);
	if (!rc && j.err)
		rc = j.err;
	jp_fini(&j);
	buf_free(&text);
	if (!rc && (!format_ok || e.n == 0))
		rc = RMQNS_EINVAL;
	if (rc) {
		snprintf(err, errlen, "%s: %s", path,
			 rc == RMQNS_ENOMEM ? "out of memory"
			 : !format_ok ? "not an exportControllerState file"
				      : "a broker set without brokerName, clusterName, replicas or epochs, or not valid JSON");
		for (uint32_t k = 0; k < e.n; k++)
			ctl_event_clear(&e.v[k]);
		buf_free(&e.b);
		return rc == RMQNS_ENOMEM ? rc : RMQNS_EINVAL;
	}
	*out = e.v;
	*count = e.n;
	return 0;
}
