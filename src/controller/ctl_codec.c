/* The controller's binary encodings: one event per Raft log entry and the
 * snapshot image of the whole state. Both are versioned, big-endian, and
 * read strictly: an input either decodes to exactly what the encoder
 * would write for it, or is refused. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "ctl_internal.h"

static const uint8_t snapshot_magic[4] = { 'R', 'M', 'Q', 'C' };

/* ---- writing ---- */

static int put_i64(struct buf *b, int64_t v)
{
	uint64_t u = (uint64_t)v;
	int rc = buf_put_be32(b, (uint32_t)(u >> 32));
	return rc ? rc : buf_put_be32(b, (uint32_t)u);
}

static int put_text(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	int rc;

	if (n > CTL_MAX_TEXT)
		return RMQNS_ETOOBIG;
	if ((rc = buf_put_be32(b, (uint32_t)n)))
		return rc;
	return buf_append(b, s, n);
}

static int put_ids(struct buf *b, const int64_t *ids, uint32_t n)
{
	int rc;

	if (n > CTL_MAX_IDS)
		return RMQNS_ETOOBIG;
	if ((rc = buf_put_be32(b, n)))
		return rc;
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = put_i64(b, ids[i]);
	return rc;
}

static int put_adopted_epochs(struct buf *b, const struct ctl_event *ev)
{
	if (ev->master_epoch < 0 || ev->sss_epoch < 0)
		return RMQNS_EINVAL;
	int rc = buf_put_be32(b, (uint32_t)ev->master_epoch);
	if (!rc)
		rc = buf_put_be32(b, (uint32_t)ev->sss_epoch);
	return rc ? rc : put_ids(b, ev->ids, ev->id_count);
}

int ctl_event_encode(const struct ctl_event *ev, struct buf *out)
{
	size_t old = out->len;
	int rc = buf_putc(out, CTL_EVENT_VERSION);

	if (!rc)
		rc = buf_putc(out, (uint8_t)ev->type);
	switch (ev->type) {
	case CTL_EV_ALTER_SYNC_STATE_SET:
	case CTL_EV_CLEAN_BROKER_DATA:
		if (!rc)
			rc = put_text(out, ev->broker_name);
		if (!rc)
			rc = put_ids(out, ev->ids, ev->id_count);
		break;
	case CTL_EV_APPLY_BROKER_ID:
	case CTL_EV_UPDATE_BROKER_ADDRESS:
	case CTL_EV_ADOPT_REPLICA:
		if (!rc)
			rc = put_text(out, ev->cluster);
		if (!rc)
			rc = put_text(out, ev->broker_name);
		if (!rc)
			rc = put_text(out, ev->address);
		if (!rc)
			rc = put_i64(out, ev->broker_id);
		if (!rc && ev->type == CTL_EV_APPLY_BROKER_ID)
			rc = put_text(out, ev->check_code);
		if (!rc && ev->type == CTL_EV_ADOPT_REPLICA)
			rc = put_i64(out, ev->next_id);
		break;
	case CTL_EV_ELECT_MASTER:
	case CTL_EV_ADOPT_MASTER:
		if (!rc)
			rc = put_text(out, ev->broker_name);
		if (!rc)
			rc = buf_putc(out, ev->elected ? 1 : 0);
		if (!rc)
			rc = put_i64(out, ev->elected ? ev->broker_id : 0);
		if (!rc && ev->type == CTL_EV_ADOPT_MASTER)
			rc = put_adopted_epochs(out, ev);
		break;
	default:
		rc = RMQNS_EINVAL;
	}
	if (rc)
		out->len = old;
	return rc;
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p, *end;
};

static int get_u8(struct rd *r, uint8_t *v)
{
	if (r->end - r->p < 1)
		return RMQNS_EINVAL;
	*v = *r->p++;
	return 0;
}

static int get_u32(struct rd *r, uint32_t *v)
{
	if (r->end - r->p < 4)
		return RMQNS_EINVAL;
	*v = rd_be32(r->p);
	r->p += 4;
	return 0;
}

static int get_i32(struct rd *r, int32_t *v)
{
	uint32_t u;
	int rc = get_u32(r, &u);

	if (!rc)
		*v = (int32_t)u;
	return rc;
}

static int get_i64(struct rd *r, int64_t *v)
{
	if (r->end - r->p < 8)
		return RMQNS_EINVAL;
	*v = (int64_t)(((uint64_t)rd_be32(r->p) << 32) | rd_be32(r->p + 4));
	r->p += 8;
	return 0;
}

/* A text as a new C string (owned by the caller). */
static int get_text(struct rd *r, char **out)
{
	uint32_t n;
	char *s;

	if (get_u32(r, &n) || n > CTL_MAX_TEXT || (size_t)(r->end - r->p) < n)
		return RMQNS_EINVAL;
	if (memchr(r->p, 0, n))
		return RMQNS_EINVAL;
	s = malloc((size_t)n + 1);
	if (!s)
		return RMQNS_ENOMEM;
	memcpy(s, r->p, n);
	s[n] = '\0';
	r->p += n;
	*out = s;
	return 0;
}

/* An id list, ascending without repeats. */
static int get_ids(struct rd *r, int64_t **out, uint32_t *count)
{
	uint32_t n;
	int64_t *ids = NULL;

	if (get_u32(r, &n) || n > CTL_MAX_IDS || (size_t)(r->end - r->p) / 8 < n)
		return RMQNS_EINVAL;
	if (n) {
		ids = malloc((size_t)n * sizeof *ids);
		if (!ids)
			return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		get_i64(r, &ids[i]);
		if (i && ids[i] <= ids[i - 1]) {
			free(ids);
			return RMQNS_EINVAL;
		}
	}
	*out = ids;
	*count = n;
	return 0;
}

static int get_adopted_epochs(struct rd *r, struct ctl_event *ev)
{
	int rc = get_i32(r, &ev->master_epoch);

	if (!rc)
		rc = get_i32(r, &ev->sss_epoch);
	if (!rc && (ev->master_epoch < 0 || ev->sss_epoch < 0))
		rc = RMQNS_EINVAL;
	return rc ? rc : get_ids(r, &ev->ids, &ev->id_count);
}

static int decode_body(struct rd *r, struct ctl_event *ev)
{
	int rc = 0;
	uint8_t elected = 0;

	switch (ev->type) {
	case CTL_EV_ALTER_SYNC_STATE_SET:
	case CTL_EV_CLEAN_BROKER_DATA:
		if (!(rc = get_text(r, &ev->broker_name)))
			rc = get_ids(r, &ev->ids, &ev->id_count);
		return rc;
	case CTL_EV_APPLY_BROKER_ID:
	case CTL_EV_UPDATE_BROKER_ADDRESS:
	case CTL_EV_ADOPT_REPLICA:
		if (!rc)
			rc = get_text(r, &ev->cluster);
		if (!rc)
			rc = get_text(r, &ev->broker_name);
		if (!rc)
			rc = get_text(r, &ev->address);
		if (!rc)
			rc = get_i64(r, &ev->broker_id);
		if (!rc && ev->type == CTL_EV_APPLY_BROKER_ID)
			rc = get_text(r, &ev->check_code);
		if (!rc && ev->type == CTL_EV_ADOPT_REPLICA)
			rc = get_i64(r, &ev->next_id);
		return rc;
	case CTL_EV_ELECT_MASTER:
	case CTL_EV_ADOPT_MASTER:
		if (!rc)
			rc = get_text(r, &ev->broker_name);
		if (!rc)
			rc = get_u8(r, &elected);
		if (!rc && elected > 1)
			rc = RMQNS_EINVAL;
		if (!rc)
			rc = get_i64(r, &ev->broker_id);
		if (!rc && !elected && ev->broker_id != 0)
			rc = RMQNS_EINVAL;
		ev->elected = elected == 1;
		if (!rc && ev->type == CTL_EV_ADOPT_MASTER)
			rc = get_adopted_epochs(r, ev);
		return rc;
	}
	return RMQNS_EINVAL;
}

int ctl_event_decode(const uint8_t *p, size_t len, struct ctl_event *ev)
{
	struct rd r = { p, p + len };
	uint8_t version, type;
	int rc;

	memset(ev, 0, sizeof *ev);
	if (get_u8(&r, &version) || version != CTL_EVENT_VERSION || get_u8(&r, &type))
		return RMQNS_EINVAL;
	ev->type = (enum ctl_event_type)type;
	rc = decode_body(&r, ev);
	if (!rc && r.p != r.end)
		rc = RMQNS_EINVAL;
	if (rc)
		ctl_event_clear(ev);
	return rc;
}

/* ---- snapshot ---- */

enum { SNAP_REPLICAS = 1, SNAP_SYNC = 2, SNAP_MASTER = 4 };

static int snapshot_set(const struct ctl_set *set, struct buf *out)
{
	uint8_t flags = (set->has_replicas ? SNAP_REPLICAS : 0) | (set->has_sync ? SNAP_SYNC : 0) |
			(set->has_master ? SNAP_MASTER : 0);
	int rc = put_text(out, set->name);

	if (!rc)
		rc = put_text(out, set->cluster);
	if (!rc)
		rc = buf_putc(out, flags);
	if (!rc)
		rc = put_i64(out, set->next_id);
	if (!rc)
		rc = buf_put_be32(out, set->replica_count);
	for (uint32_t i = 0; i < set->replica_count && !rc; i++) {
		rc = put_i64(out, set->replicas[i].id);
		if (!rc)
			rc = put_text(out, set->replicas[i].address);
		if (!rc)
			rc = put_text(out, set->replicas[i].check_code);
	}
	if (!rc)
		rc = put_i64(out, set->master_id);
	if (!rc)
		rc = buf_put_be32(out, (uint32_t)set->master_epoch);
	if (!rc)
		rc = buf_put_be32(out, (uint32_t)set->sss_epoch);
	if (!rc)
		rc = put_ids(out, set->sss, set->sss_count);
	return rc;
}

int ctl_state_snapshot(const struct ctl_state *s, struct buf *out)
{
	size_t old = out->len;
	int rc = buf_append(out, snapshot_magic, sizeof snapshot_magic);

	if (!rc)
		rc = buf_putc(out, CTL_SNAPSHOT_VERSION);
	if (!rc)
		rc = buf_put_be32(out, s->count);
	for (uint32_t i = 0; i < s->count && !rc; i++)
		rc = snapshot_set(s->sets[i], out);
	if (rc)
		out->len = old;
	return rc;
}

/* The fields of an absent table must be zero, as apply leaves them. */
static bool restored_canonical(const struct ctl_set *set)
{
	if (!set->has_replicas && !set->has_sync)
		return false;
	if (!set->has_replicas && (set->next_id != 0 || set->replica_count != 0))
		return false;
	if (set->has_replicas && set->replica_count == 0)
		return false;
	if (!set->has_sync && (set->has_master || set->master_epoch || set->sss_epoch ||
			       set->sss_count))
		return false;
	return set->has_master || set->master_id == 0;
}

static int restore_set(struct rd *r, struct ctl_set **out)
{
	struct ctl_set *set = calloc(1, sizeof *set);
	uint8_t flags = 0;
	uint32_t n = 0;
	int rc;

	if (!set)
		return RMQNS_ENOMEM;
	rc = get_text(r, &set->name);
	if (!rc)
		rc = get_text(r, &set->cluster);
	if (!rc)
		rc = get_u8(r, &flags);
	if (!rc && (flags & ~(SNAP_REPLICAS | SNAP_SYNC | SNAP_MASTER)))
		rc = RMQNS_EINVAL;
	if (!rc && (flags & SNAP_MASTER) && !(flags & SNAP_SYNC))
		rc = RMQNS_EINVAL;
	if (!rc)
		rc = get_i64(r, &set->next_id);
	if (!rc)
		rc = get_u32(r, &n);
	/* an id, two text lengths: at least 16 bytes a replica */
	if (!rc && (n > CTL_MAX_IDS || (size_t)(r->end - r->p) / 16 < n))
		rc = RMQNS_EINVAL;
	if (!rc && n && !(set->replicas = calloc(n, sizeof *set->replicas)))
		rc = RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n && !rc; i++) {
		struct ctl_replica *rep = &set->replicas[i];
		rc = get_i64(r, &rep->id);
		if (!rc && i && rep->id <= set->replicas[i - 1].id)
			rc = RMQNS_EINVAL;
		if (!rc)
			rc = get_text(r, &rep->address);
		if (!rc)
			rc = get_text(r, &rep->check_code);
		set->replica_count = i + 1;
	}
	if (!rc)
		rc = get_i64(r, &set->master_id);
	if (!rc)
		rc = get_i32(r, &set->master_epoch);
	if (!rc)
		rc = get_i32(r, &set->sss_epoch);
	if (!rc)
		rc = get_ids(r, &set->sss, &set->sss_count);
	if (!rc) {
		set->has_replicas = flags & SNAP_REPLICAS;
		set->has_sync = flags & SNAP_SYNC;
		set->has_master = flags & SNAP_MASTER;
		if (!restored_canonical(set))
			rc = RMQNS_EINVAL;
	}
	if (rc) {
		ctl_set_free(set);
		return rc;
	}
	*out = set;
	return 0;
}

int ctl_state_restore(struct ctl_state *s, const uint8_t *p, size_t len)
{
	struct rd r = { p, p + len };
	struct ctl_state fresh;
	uint8_t version;
	uint32_t n;
	int rc = 0;

	ctl_state_init(&fresh);
	if ((size_t)(r.end - r.p) < sizeof snapshot_magic ||
	    memcmp(r.p, snapshot_magic, sizeof snapshot_magic))
		return RMQNS_EINVAL;
	r.p += sizeof snapshot_magic;
	if (get_u8(&r, &version) || version != CTL_SNAPSHOT_VERSION || get_u32(&r, &n))
		return RMQNS_EINVAL;
	/* a set takes at least 41 bytes */
	if ((size_t)(r.end - r.p) / 41 < n)
		return RMQNS_EINVAL;
	if (n && !(fresh.sets = calloc(n, sizeof *fresh.sets)))
		return RMQNS_ENOMEM;
	fresh.cap = n;
	for (uint32_t i = 0; i < n && !rc; i++) {
		rc = restore_set(&r, &fresh.sets[i]);
		if (rc)
			break;
		fresh.count = i + 1;
		if (i && strcmp(fresh.sets[i - 1]->name, fresh.sets[i]->name) >= 0)
			rc = RMQNS_EINVAL;
	}
	if (!rc && r.p != r.end)
		rc = RMQNS_EINVAL;
	if (rc) {
		ctl_state_free(&fresh);
		return rc;
	}
	ctl_state_free(s);
	*s = fresh;
	return 0;
}
