/* The controller's replicated tables: broker sets by name, their replicas,
 * masters, epochs and sync-state sets, and the one place events change
 * them (ctl_state_apply). Every node applies the same committed events in
 * the same order; nothing here may depend on time, liveness or the node. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "ctl_internal.h"

void ctl_state_init(struct ctl_state *s)
{
	memset(s, 0, sizeof *s);
}

void ctl_set_free(struct ctl_set *set)
{
	if (!set)
		return;
	for (uint32_t i = 0; i < set->replica_count; i++) {
		free(set->replicas[i].address);
		free(set->replicas[i].check_code);
	}
	free(set->replicas);
	free(set->sss);
	free(set->name);
	free(set->cluster);
	free(set);
}

void ctl_state_free(struct ctl_state *s)
{
	for (uint32_t i = 0; i < s->count; i++)
		ctl_set_free(s->sets[i]);
	free(s->sets);
	ctl_state_init(s);
}

/* Index of `name`, or of where it would go (*found false). */
static uint32_t state_search(const struct ctl_state *s, const char *name, bool *found)
{
	uint32_t lo = 0, hi = s->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->sets[mid]->name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

struct ctl_set *ctl_state_find(const struct ctl_state *s, const char *name)
{
	bool found;
	uint32_t i;

	if (!name)
		return NULL;
	i = state_search(s, name, &found);
	return found ? s->sets[i] : NULL;
}

static int64_t *ids_find(int64_t *ids, uint32_t n, int64_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ids[mid] == id)
			return &ids[mid];
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint32_t replica_search(const struct ctl_set *set, int64_t id, bool *found)
{
	uint32_t lo = 0, hi = set->replica_count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (set->replicas[mid].id == id) {
			*found = true;
			return mid;
		}
		if (set->replicas[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

const struct ctl_replica *ctl_set_replica(const struct ctl_set *set, int64_t id)
{
	bool found;
	uint32_t i;

	if (!set || !set->has_replicas)
		return NULL;
	i = replica_search(set, id, &found);
	return found ? &set->replicas[i] : NULL;
}

bool ctl_set_in_sss(const struct ctl_set *set, int64_t id)
{
	return set && set->has_sync && ids_find(set->sss, set->sss_count, id) != NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void ctl_ids_sort(int64_t *ids, uint32_t count)
{
	qsort(ids, count, sizeof *ids, cmp_i64);
}

void ctl_ids_normalize(int64_t *ids, uint32_t *count)
{
	uint32_t n = *count, w = 0;

	if (n < 2)
		return;
	ctl_ids_sort(ids, n);
	for (uint32_t r = 0; r < n; r++)
		if (w == 0 || ids[w - 1] != ids[r])
			ids[w++] = ids[r];
	*count = w;
}

void ctl_event_clear(struct ctl_event *ev)
{
	free(ev->cluster);
	free(ev->broker_name);
	free(ev->address);
	free(ev->check_code);
	free(ev->ids);
	memset(ev, 0, sizeof *ev);
}

static bool str_equal(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool set_equal(const struct ctl_set *a, const struct ctl_set *b)
{
	if (!str_equal(a->name, b->name) || !str_equal(a->cluster, b->cluster) ||
	    a->has_replicas != b->has_replicas || a->next_id != b->next_id ||
	    a->replica_count != b->replica_count || a->has_sync != b->has_sync ||
	    a->has_master != b->has_master || a->master_id != b->master_id ||
	    a->master_epoch != b->master_epoch || a->sss_epoch != b->sss_epoch ||
	    a->sss_count != b->sss_count)
		return false;
	for (uint32_t i = 0; i < a->replica_count; i++) {
		const struct ctl_replica *x = &a->replicas[i], *y = &b->replicas[i];
		if (x->id != y->id || !str_equal(x->address, y->address) ||
		    !str_equal(x->check_code, y->check_code))
			return false;
	}
	return a->sss_count == 0 || memcmp(a->sss, b->sss, a->sss_count * sizeof *a->sss) == 0;
}

bool ctl_state_equal(const struct ctl_state *a, const struct ctl_state *b)
{
	if (a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->count; i++)
		if (!set_equal(a->sets[i], b->sets[i]))
			return false;
	return true;
}

/* ---- apply ---- */

static int state_reserve(struct ctl_state *s)
{
	if (s->count < s->cap)
		return 0;
	uint32_t ncap = s->cap ? s->cap * 2 : 8;
	struct ctl_set **n = realloc(s->sets, (size_t)ncap * sizeof *n);
	if (!n)
		return RMQNS_ENOMEM;
	s->sets = n;
	s->cap = ncap;
	return 0;
}

static void state_remove_at(struct ctl_state *s, uint32_t i)
{
	ctl_set_free(s->sets[i]);
	memmove(&s->sets[i], &s->sets[i + 1], (size_t)(s->count - i - 1) * sizeof *s->sets);
	s->count--;
}

/* Forgets the sync table of a set (its fields back to zero). */
static void set_drop_sync(struct ctl_set *set)
{
	free(set->sss);
	set->sss = NULL;
	set->sss_count = 0;
	set->has_sync = false;
	set->has_master = false;
	set->master_id = 0;
	set->master_epoch = 0;
	set->sss_epoch = 0;
}

static void set_drop_replicas(struct ctl_set *set)
{
	for (uint32_t i = 0; i < set->replica_count; i++) {
		free(set->replicas[i].address);
		free(set->replicas[i].check_code);
	}
	free(set->replicas);
	set->replicas = NULL;
	set->replica_count = 0;
	set->has_replicas = false;
	set->next_id = 0;
}

/* A fresh set as the first APPLY_BROKER_ID makes it: both tables, one
 * replica, next id 2, no master, epochs 0, empty sync-state set. */
static struct ctl_set *set_create(const struct ctl_event *ev)
{
	struct ctl_set *set = calloc(1, sizeof *set);

	if (!set)
		return NULL;
	set->name = strdup(ev->broker_name);
	set->cluster = strdup(ev->cluster ? ev->cluster : "");
	set->replicas = calloc(1, sizeof *set->replicas);
	if (set->replicas) {
		set->replicas[0].id = ev->broker_id;
		set->replicas[0].address = strdup(ev->address ? ev->address : "");
		set->replicas[0].check_code = strdup(ev->check_code ? ev->check_code : "");
		set->replica_count = 1;
	}
	if (!set->name || !set->cluster || !set->replicas || !set->replicas[0].address ||
	    !set->replicas[0].check_code) {
		ctl_set_free(set);
		return NULL;
	}
	set->has_replicas = true;
	set->next_id = 2;
	set->has_sync = true;
	return set;
}

/* Adds the event's replica to a set that lacks it, at its place. */
static int set_insert_replica(struct ctl_set *set, const struct ctl_event *ev, uint32_t at)
{
	struct ctl_replica *n = realloc(set->replicas, (size_t)(set->replica_count + 1) * sizeof *n);

	if (!n)
		return RMQNS_ENOMEM;
	set->replicas = n;
	char *addr = strdup(ev->address ? ev->address : "");
	char *code = strdup(ev->check_code ? ev->check_code : "");
	if (!addr || !code) {
		free(addr);
		free(code);
		return RMQNS_ENOMEM;
	}
	memmove(&n[at + 1], &n[at], (size_t)(set->replica_count - at) * sizeof *n);
	n[at] = (struct ctl_replica){ ev->broker_id, addr, code };
	set->replica_count++;
	return 0;
}

/* Puts a fresh set at index i (replacing a half set there when found). */
static int state_put_fresh(struct ctl_state *s, uint32_t i, bool found, struct ctl_set *fresh)
{
	if (found) {
		ctl_set_free(s->sets[i]);
		s->sets[i] = fresh;
		return 0;
	}
	if (state_reserve(s)) {
		ctl_set_free(fresh);
		return RMQNS_ENOMEM;
	}
	memmove(&s->sets[i + 1], &s->sets[i], (size_t)(s->count - i) * sizeof *s->sets);
	s->sets[i] = fresh;
	s->count++;
	return 0;
}

/* next_id after an adoption: above every id seen and never lowered. */
static int64_t adopted_next_id(int64_t cur, const struct ctl_event *ev)
{
	int64_t next = cur;

	if (ev->broker_id < INT64_MAX && ev->broker_id + 1 > next)
		next = ev->broker_id + 1;
	return ev->next_id > next ? ev->next_id : next;
}

/* APPLY_BROKER_ID (Java's next id, +1 an id) and ADOPT_REPLICA (above
 * every id seen). */
static int apply_replica(struct ctl_state *s, const struct ctl_event *ev)
{
	bool found, adopt = ev->type == CTL_EV_ADOPT_REPLICA;
	uint32_t i = state_search(s, ev->broker_name, &found);
	struct ctl_set *set = found ? s->sets[i] : NULL;

	if (ctl_set_exists(set)) {
		uint32_t at = replica_search(set, ev->broker_id, &found);
		if (found)
			return 0; /* a retried apply, or a replica known already */
		int rc = set_insert_replica(set, ev, at);
		if (!rc)
			set->next_id = adopt ? adopted_next_id(set->next_id, ev) : set->next_id + 1;
		return rc;
	}
	/* absent, or half of it left by a clean: Java creates both tables anew */
	struct ctl_set *fresh = set_create(ev);
	if (!fresh)
		return RMQNS_ENOMEM;
	if (adopt)
		fresh->next_id = adopted_next_id(1, ev);
	return state_put_fresh(s, i, found, fresh);
}

static int set_replace_sss(struct ctl_set *set, const int64_t *ids, uint32_t n)
{
	int64_t *copy = NULL;

	if (n) {
		copy = malloc((size_t)n * sizeof *copy);
		if (!copy)
			return RMQNS_ENOMEM;
		memcpy(copy, ids, (size_t)n * sizeof *copy);
	}
	free(set->sss);
	set->sss = copy;
	set->sss_count = n;
	set->sss_epoch++;
	return 0;
}

static int apply_elect(struct ctl_set *set, const struct ctl_event *ev)
{
	if (ev->elected) {
		int rc = set_replace_sss(set, &ev->broker_id, 1);
		if (rc)
			return rc;
		set->has_master = true;
		set->master_id = ev->broker_id;
	} else {
		/* the master is gone and no one replaced it: the set is kept */
		set->has_master = false;
		set->master_id = 0;
	}
	set->master_epoch++;
	return 0;
}

static int apply_adopt_master(struct ctl_set *set, const struct ctl_event *ev)
{
	int rc = set_replace_sss(set, ev->ids, ev->id_count);

	if (rc)
		return rc;
	set->has_master = ev->elected;
	set->master_id = ev->elected ? ev->broker_id : 0;
	set->master_epoch = ev->master_epoch;
	set->sss_epoch = ev->sss_epoch;
	return 0;
}

static void apply_clean(struct ctl_state *s, const struct ctl_event *ev)
{
	bool found;
	uint32_t i = state_search(s, ev->broker_name, &found);
	struct ctl_set *set = found ? s->sets[i] : NULL;

	if (!found)
		return;
	if (ev->id_count == 0) {
		state_remove_at(s, i);
		return;
	}
	if (!ctl_set_exists(set))
		return;
	for (uint32_t k = 0; k < ev->id_count; k++) {
		uint32_t at = replica_search(set, ev->ids[k], &found);
		if (found) {
			free(set->replicas[at].address);
			free(set->replicas[at].check_code);
			memmove(&set->replicas[at], &set->replicas[at + 1],
				(size_t)(set->replica_count - at - 1) * sizeof *set->replicas);
			set->replica_count--;
		}
		int64_t *p = ids_find(set->sss, set->sss_count, ev->ids[k]);
		if (p) {
			memmove(p, p + 1, (size_t)(set->sss + set->sss_count - p - 1) * sizeof *p);
			set->sss_count--;
		}
	}
	/* each table goes when it is empty, even if the other stays (Java does) */
	if (set->replica_count == 0)
		set_drop_replicas(set);
	if (set->sss_count == 0)
		set_drop_sync(set);
	if (!set->has_replicas && !set->has_sync)
		state_remove_at(s, i);
}

static int apply_update_address(struct ctl_set *set, const struct ctl_event *ev)
{
	bool found;
	uint32_t at;

	if (!set || !set->has_replicas)
		return 0;
	at = replica_search(set, ev->broker_id, &found);
	if (!found)
		return 0;
	char *addr = strdup(ev->address ? ev->address : "");
	if (!addr)
		return RMQNS_ENOMEM;
	free(set->replicas[at].address);
	set->replicas[at].address = addr;
	return 0;
}

int ctl_state_apply(struct ctl_state *s, const struct ctl_event *ev)
{
	struct ctl_set *set;

	if (!ev->broker_name)
		return RMQNS_EINVAL;
	switch (ev->type) {
	case CTL_EV_ALTER_SYNC_STATE_SET:
		set = ctl_state_find(s, ev->broker_name);
		return ctl_set_exists(set) ? set_replace_sss(set, ev->ids, ev->id_count) : 0;
	case CTL_EV_APPLY_BROKER_ID:
	case CTL_EV_ADOPT_REPLICA:
		return apply_replica(s, ev);
	case CTL_EV_ELECT_MASTER:
		set = ctl_state_find(s, ev->broker_name);
		return ctl_set_exists(set) ? apply_elect(set, ev) : 0;
	case CTL_EV_CLEAN_BROKER_DATA:
		apply_clean(s, ev);
		return 0;
	case CTL_EV_UPDATE_BROKER_ADDRESS:
		return apply_update_address(ctl_state_find(s, ev->broker_name), ev);
	case CTL_EV_ADOPT_MASTER:
		set = ctl_state_find(s, ev->broker_name);
		return ctl_set_exists(set) ? apply_adopt_master(set, ev) : 0;
	}
	return RMQNS_EINVAL;
}
