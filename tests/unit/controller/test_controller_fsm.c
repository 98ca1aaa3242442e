/* The controller's replicated state machine (controller.h): the effect of
 * each event type on the tables, events that change nothing, the log
 * entry encoding and the snapshot image (round trips and refusals). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"

/* ---- event builders (fields point at literals: never cleared) ---- */

static struct ctl_event ev_apply(const char *name, int64_t id, const char *addr)
{
	return (struct ctl_event){ .type = CTL_EV_APPLY_BROKER_ID, .cluster = "C1",
				   .broker_name = (char *)name, .address = (char *)addr,
				   .check_code = "code", .broker_id = id };
}

static struct ctl_event ev_elect(const char *name, bool elected, int64_t id)
{
	return (struct ctl_event){ .type = CTL_EV_ELECT_MASTER, .broker_name = (char *)name,
				   .elected = elected, .broker_id = elected ? id : 0 };
}

static struct ctl_event ev_ids(enum ctl_event_type type, const char *name, int64_t *ids,
			       uint32_t n)
{
	return (struct ctl_event){ .type = type, .broker_name = (char *)name, .ids = ids,
				   .id_count = n };
}

static struct ctl_event ev_update(const char *name, int64_t id, const char *addr)
{
	return (struct ctl_event){ .type = CTL_EV_UPDATE_BROKER_ADDRESS, .cluster = "C1",
				   .broker_name = (char *)name, .address = (char *)addr,
				   .broker_id = id };
}

static void apply(struct ctl_state *s, struct ctl_event ev)
{
	cr_assert_eq(ctl_state_apply(s, &ev), 0);
}

/* A set with replicas 1 and 2, master 1, sync-state set {1,2}. */
static void two_brokers(struct ctl_state *s, const char *name)
{
	int64_t both[] = { 1, 2 };
	apply(s, ev_apply(name, 1, "127.0.0.1:30911"));
	apply(s, ev_apply(name, 2, "127.0.0.1:30921"));
	apply(s, ev_elect(name, true, 1));
	apply(s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, name, both, 2));
}

/* ---- the effect of each event ---- */

/* Each fsm and snapshot test starts with two empty states: s, and back for
 * what a snapshot restores into. */
static struct ctl_state s, back;
static struct buf img = BUF_INIT;

static void states_init(void)
{
	ctl_state_init(&back);
}

static void states_free(void)
{
	ctl_state_free(&back);
	buf_free(&img);
}

TestSuite(fsm, .init = states_init, .fini = states_free);
TestSuite(snapshot, .init = states_init, .fini = states_free);

static void expect_epochs(const struct ctl_set *set, int32_t master_epoch, int32_t sss_epoch,
			  uint32_t sss_count)
{
	cr_assert_eq(set->master_epoch, master_epoch);
	cr_assert_eq(set->sss_epoch, sss_epoch);
	cr_assert_eq(set->sss_count, sss_count);
}

Test(fsm, apply_broker_id_creates_the_set)
{
	apply(&s, ev_apply("broker-a", 1, "127.0.0.1:30911"));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert_not_null(set);
	cr_assert(ctl_set_exists(set));
	cr_assert_str_eq(set->cluster, "C1");
	cr_assert_eq(set->next_id, 2);
	cr_assert_eq(set->replica_count, 1);
	cr_assert_str_eq(ctl_set_replica(set, 1)->address, "127.0.0.1:30911");
	cr_assert_str_eq(ctl_set_replica(set, 1)->check_code, "code");
	cr_assert_not(set->has_master);
	expect_epochs(set, 0, 0, 0);
}

Test(fsm, apply_broker_id_adds_and_counts_next_id)
{
	apply(&s, ev_apply("broker-a", 1, "a1"));
	apply(&s, ev_apply("broker-a", 2, "a2"));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert_eq(set->next_id, 3);
	/* a retry of an id already there changes nothing, not even the address */
	apply(&s, ev_apply("broker-a", 2, "other"));
	cr_assert_eq(set->next_id, 3);
	cr_assert_str_eq(ctl_set_replica(set, 2)->address, "a2");
	/* any new id is added and counts once, whatever its value */
	apply(&s, ev_apply("broker-a", 7, "a7"));
	cr_assert_eq(set->next_id, 4);
	cr_assert_eq(set->replica_count, 3);
	cr_assert_eq(set->replicas[2].id, 7);
}

Test(fsm, sets_are_kept_in_name_order)
{
	apply(&s, ev_apply("c", 1, "x"));
	apply(&s, ev_apply("a", 1, "x"));
	apply(&s, ev_apply("b", 1, "x"));
	cr_assert_eq(s.count, 3);
	cr_assert_str_eq(s.sets[0]->name, "a");
	cr_assert_str_eq(s.sets[1]->name, "b");
	cr_assert_str_eq(s.sets[2]->name, "c");
	cr_assert_null(ctl_state_find(&s, "d"));
}

Test(fsm, elect_master_sets_master_and_bumps_both_epochs)
{
	two_brokers(&s, "broker-a");
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert(set->has_master);
	cr_assert_eq(set->master_id, 1);
	expect_epochs(set, 1, 2, 2);
	apply(&s, ev_elect("broker-a", true, 2));
	cr_assert_eq(set->master_id, 2);
	expect_epochs(set, 2, 3, 1);
	cr_assert_eq(set->sss[0], 2);
	cr_assert(ctl_set_in_sss(set, 2));
	cr_assert_not(ctl_set_in_sss(set, 1));
}

Test(fsm, elect_nobody_clears_master_keeps_sync_state_set)
{
	two_brokers(&s, "broker-a");
	apply(&s, ev_elect("broker-a", false, 0));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert_not(set->has_master);
	expect_epochs(set, 2, 2, 2);
}

Test(fsm, alter_sync_state_set_replaces_and_bumps_epoch)
{
	int64_t one[] = { 1 };
	two_brokers(&s, "broker-a");
	apply(&s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "broker-a", one, 1));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	expect_epochs(set, 1, 3, 1);
}

Test(fsm, update_broker_address_keeps_check_code)
{
	two_brokers(&s, "broker-a");
	apply(&s, ev_update("broker-a", 2, "127.0.0.1:30931"));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert_str_eq(ctl_set_replica(set, 2)->address, "127.0.0.1:30931");
	cr_assert_str_eq(ctl_set_replica(set, 2)->check_code, "code");
	cr_assert_str_eq(ctl_set_replica(set, 1)->address, "127.0.0.1:30911");
}

Test(fsm, clean_whole_set)
{
	two_brokers(&s, "broker-a");
	two_brokers(&s, "broker-b");
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", NULL, 0));
	cr_assert_null(ctl_state_find(&s, "broker-a"));
	cr_assert_eq(s.count, 1);
}

Test(fsm, clean_ids_removes_replica_and_member_keeps_next_id)
{
	int64_t two[] = { 2 };
	two_brokers(&s, "broker-a");
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", two, 1));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert(ctl_set_exists(set));
	cr_assert_eq(set->replica_count, 1);
	cr_assert_null(ctl_set_replica(set, 2));
	cr_assert_eq(set->sss_count, 1);
	cr_assert_eq(set->sss[0], 1);
	cr_assert_eq(set->sss_epoch, 2, "a removal from the set does not count as a replacement");
	cr_assert_eq(set->next_id, 3, "the next id is never lowered");
	/* the next applied id is 3, not the cleaned 2 */
	apply(&s, ev_apply("broker-a", 3, "a3"));
	cr_assert_eq(set->next_id, 4);
}

Test(fsm, clean_leaves_half_set_that_no_longer_exists)
{
	int64_t one[] = { 1 };
	two_brokers(&s, "broker-a");
	apply(&s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "broker-a", one, 1));
	/* cleaning the only member empties the sync table: it goes, replicas stay */
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", one, 1));
	struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert_not_null(set);
	cr_assert(set->has_replicas);
	cr_assert_not(set->has_sync);
	cr_assert_not(ctl_set_exists(set));
	cr_assert_eq(set->master_epoch, 0);
	cr_assert_not(set->has_master);
	/* events other than APPLY_BROKER_ID and UPDATE ignore a half set */
	apply(&s, ev_elect("broker-a", true, 2));
	apply(&s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "broker-a", one, 1));
	cr_assert_not(set->has_sync);
	/* APPLY_BROKER_ID makes both tables anew */
	apply(&s, ev_apply("broker-a", 1, "fresh"));
	set = ctl_state_find(&s, "broker-a");
	cr_assert(ctl_set_exists(set));
	cr_assert_eq(set->replica_count, 1);
	cr_assert_eq(set->next_id, 2);
	cr_assert_str_eq(set->replicas[0].address, "fresh");
}

Test(fsm, clean_every_id_removes_the_set)
{
	int64_t both[] = { 1, 2 };
	two_brokers(&s, "broker-a");
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", both, 2));
	cr_assert_null(ctl_state_find(&s, "broker-a"));
	cr_assert_eq(s.count, 0);
}

Test(fsm, events_about_unknown_sets_change_nothing)
{
	struct ctl_state before;
	int64_t one[] = { 1 };
	two_brokers(&s, "broker-a");
	ctl_state_init(&before);
	two_brokers(&before, "broker-a");
	apply(&s, ev_elect("nope", true, 1));
	apply(&s, ev_elect("nope", false, 0));
	apply(&s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "nope", one, 1));
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "nope", one, 1));
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "nope", NULL, 0));
	apply(&s, ev_update("nope", 1, "x"));
	apply(&s, ev_update("broker-a", 9, "x")); /* unknown id */
	cr_assert(ctl_state_equal(&s, &before));
	ctl_state_free(&before);
}

Test(fsm, unknown_event_type_is_refused)
{
	struct ctl_event ev = { .type = 4, .broker_name = "x" };
	cr_assert_eq(ctl_state_apply(&s, &ev), RMQNS_EINVAL);
}

Test(fsm, ids_normalize_sorts_and_drops_repeats)
{
	int64_t ids[] = { 3, 1, 3, 2, 1 };
	uint32_t n = 5;
	ctl_ids_normalize(ids, &n);
	cr_assert_eq(n, 3);
	cr_assert_eq(ids[0], 1);
	cr_assert_eq(ids[1], 2);
	cr_assert_eq(ids[2], 3);
}

/* ---- log entry encoding ---- */

static void round_trip(struct ctl_event ev)
{
	struct buf b = BUF_INIT, again = BUF_INIT;
	struct ctl_event back;
	cr_assert_eq(ctl_event_encode(&ev, &b), 0);
	cr_assert_eq(b.data[0], CTL_EVENT_VERSION);
	cr_assert_eq(b.data[1], ev.type);
	cr_assert_eq(ctl_event_decode(b.data, b.len, &back), 0);
	cr_assert_eq(back.type, ev.type);
	cr_assert_eq(back.broker_id, ev.broker_id);
	cr_assert_eq(back.elected, ev.elected);
	cr_assert_eq(back.id_count, ev.id_count);
	for (uint32_t i = 0; i < ev.id_count; i++)
		cr_assert_eq(back.ids[i], ev.ids[i]);
	cr_assert_str_eq(back.broker_name, ev.broker_name);
	if (ev.cluster)
		cr_assert_str_eq(back.cluster, ev.cluster);
	if (ev.address)
		cr_assert_str_eq(back.address, ev.address);
	if (ev.check_code)
		cr_assert_str_eq(back.check_code, ev.check_code);
	/* the decoded event encodes to the same bytes */
	cr_assert_eq(ctl_event_encode(&back, &again), 0);
	cr_assert_eq(again.len, b.len);
	cr_assert_arr_eq(again.data, b.data, b.len);
	ctl_event_clear(&back);
	buf_free(&b);
	buf_free(&again);
}

Test(codec, every_event_type_round_trips)
{
	int64_t ids[] = { -5, 1, 2, INT64_MAX };
	round_trip(ev_apply("broker-a", 1, "127.0.0.1:30911"));
	round_trip(ev_elect("broker-a", true, 3));
	round_trip(ev_elect("broker-a", false, 0));
	round_trip(ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "broker-a", ids, 4));
	round_trip(ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", ids, 4));
	round_trip(ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-a", NULL, 0));
	round_trip(ev_update("broker-a", 2, "127.0.0.1:30931"));
	round_trip(ev_apply("", 0, ""));
}

Test(codec, apply_entry_bytes)
{
	struct buf b = BUF_INIT;
	struct ctl_event ev = ev_apply("b", 1, "a");
	static const uint8_t want[] = {
		1, 2,                          /* version, APPLY_BROKER_ID */
		0, 0, 0, 2, 'C', '1',          /* cluster */
		0, 0, 0, 1, 'b',               /* name */
		0, 0, 0, 1, 'a',               /* address */
		0, 0, 0, 0, 0, 0, 0, 1,        /* id */
		0, 0, 0, 4, 'c', 'o', 'd', 'e' /* check code */
	};
	cr_assert_eq(ctl_event_encode(&ev, &b), 0);
	cr_assert_eq(b.len, sizeof want);
	cr_assert_arr_eq(b.data, want, sizeof want);
	buf_free(&b);
}

static void expect_refused(const uint8_t *p, size_t n, const char *why)
{
	struct ctl_event ev;
	cr_expect_eq(ctl_event_decode(p, n, &ev), RMQNS_EINVAL, "%s", why);
}

Test(codec, decoder_refusals)
{
	struct buf b = BUF_INIT;
	struct ctl_event ev = ev_apply("b", 1, "a");
	cr_assert_eq(ctl_event_encode(&ev, &b), 0);
	/* every cut short of the whole entry, and one byte more */
	for (size_t n = 0; n < b.len; n++)
		expect_refused(b.data, n, "truncated");
	cr_assert_eq(buf_putc(&b, 0), 0);
	expect_refused(b.data, b.len, "trailing byte");
	b.len--;
	b.data[0] = 2;
	expect_refused(b.data, b.len, "unknown version");
	b.data[0] = 1;
	b.data[1] = 4;
	expect_refused(b.data, b.len, "ReadEvent is never written");
	b.data[1] = 9;
	expect_refused(b.data, b.len, "unknown type");
	b.data[1] = 2;
	b.data[12] = 0;
	expect_refused(b.data, b.len, "NUL in a text");
	b.data[12] = 'b';
	b.data[8] = 0x7f;
	expect_refused(b.data, b.len, "text length past the input");
	buf_free(&b);

	/* ids out of order or repeated */
	static const uint8_t unsorted[] = { 1, 1, 0, 0, 0, 1, 'b', 0, 0, 0, 2,
					    0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1 };
	expect_refused(unsorted, sizeof unsorted, "unsorted ids");
	static const uint8_t repeated[] = { 1, 5, 0, 0, 0, 1, 'b', 0, 0, 0, 2,
					    0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1 };
	expect_refused(repeated, sizeof repeated, "repeated ids");
	static const uint8_t many[] = { 1, 5, 0, 0, 0, 1, 'b', 0xff, 0xff, 0xff, 0xff };
	expect_refused(many, sizeof many, "id count past the input");
	/* ELECT: the flag is 0 or 1, and no id without an election */
	static const uint8_t flag2[] = { 1, 3, 0, 0, 0, 1, 'b', 2, 0, 0, 0, 0, 0, 0, 0, 1 };
	expect_refused(flag2, sizeof flag2, "elected flag 2");
	static const uint8_t id_no_elect[] = { 1, 3, 0, 0, 0, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	expect_refused(id_no_elect, sizeof id_no_elect, "id without election");
	static const uint8_t elect_ok[] = { 1, 3, 0, 0, 0, 1, 'b', 1, 0, 0, 0, 0, 0, 0, 0, 1 };
	struct ctl_event ok;
	cr_assert_eq(ctl_event_decode(elect_ok, sizeof elect_ok, &ok), 0);
	cr_assert(ok.elected);
	cr_assert_eq(ok.broker_id, 1);
	ctl_event_clear(&ok);
}

Test(codec, text_longer_than_the_limit)
{
	char *big = malloc(CTL_MAX_TEXT + 2);
	struct buf b = BUF_INIT;
	memset(big, 'x', CTL_MAX_TEXT + 1);
	big[CTL_MAX_TEXT + 1] = '\0';
	struct ctl_event ev = ev_elect(big, true, 1);
	cr_assert_eq(ctl_event_encode(&ev, &b), RMQNS_ETOOBIG);
	cr_assert_eq(b.len, 0);
	big[CTL_MAX_TEXT] = '\0';
	cr_assert_eq(ctl_event_encode(&ev, &b), 0);
	/* the same entry with the length raised by one is refused */
	b.data[2] = 0; b.data[3] = 0; b.data[4] = 1; b.data[5] = 0;
	cr_assert_eq(buf_putc(&b, 'x'), 0);
	expect_refused(b.data, b.len, "text past CTL_MAX_TEXT");
	buf_free(&b);
	free(big);
}

/* ---- snapshots ---- */

/* Into s: two whole sets, one without a master, one half set. */
static void build_state(void)
{
	int64_t one[] = { 1 };
	two_brokers(&s, "broker-a");
	two_brokers(&s, "broker-b");
	apply(&s, ev_elect("broker-b", false, 0));
	apply(&s, ev_apply("broker-c", 1, "c1"));
	/* a half set: replicas without a sync table */
	two_brokers(&s, "broker-d");
	apply(&s, ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "broker-d", one, 1));
	apply(&s, ev_ids(CTL_EV_CLEAN_BROKER_DATA, "broker-d", one, 1));
}

Test(snapshot, restore_gives_identical_state)
{
	struct buf again = BUF_INIT;
	build_state();
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), 0);
	cr_assert(ctl_state_equal(&s, &back));
	cr_assert_eq(ctl_state_snapshot(&back, &again), 0);
	cr_assert_eq(again.len, img.len);
	cr_assert_arr_eq(again.data, img.data, img.len);
	/* the restored state goes on like the original */
	apply(&s, ev_apply("broker-a", 5, "x"));
	apply(&back, ev_apply("broker-a", 5, "x"));
	cr_assert(ctl_state_equal(&s, &back));
	buf_free(&again);
}

Test(snapshot, empty_state)
{
	apply(&back, ev_apply("x", 1, "y"));
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	cr_assert_eq(img.len, 9);
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), 0);
	cr_assert_eq(back.count, 0);
}

Test(snapshot, refusals_leave_the_state_unchanged)
{
	struct ctl_state before;
	build_state();
	ctl_state_init(&before);
	apply(&back, ev_apply("keep", 1, "me"));
	apply(&before, ev_apply("keep", 1, "me"));
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	for (size_t n = 0; n < img.len; n++)
		cr_assert_eq(ctl_state_restore(&back, img.data, n), RMQNS_EINVAL, "cut at %zu", n);
	cr_assert_eq(buf_putc(&img, 0), 0);
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
	img.len--;
	img.data[0] = 'X';
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
	img.data[0] = 'R';
	img.data[4] = 2;
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
	img.data[4] = 1;
	cr_assert(ctl_state_equal(&back, &before));
	ctl_state_free(&before);
}

/* Two sets with their names swapped in the image are out of order. */
Test(snapshot, names_out_of_order_refused)
{
	apply(&s, ev_apply("a", 1, "x"));
	apply(&s, ev_apply("b", 1, "x"));
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	uint8_t *p = memchr(img.data + 9, 'b', img.len - 9);
	cr_assert_not_null(p);
	*p = 'a';
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
}

/* A flag byte that says "master" without a sync table, or an unknown bit. */
Test(snapshot, inconsistent_flags_refused)
{
	apply(&s, ev_apply("a", 1, "x"));
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	size_t flags_at = 9 + 4 + 1 + 4 + 2; /* header, name "a", cluster "C1" */
	cr_assert_eq(img.data[flags_at], 3);
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), 0);
	img.data[flags_at] = 1 | 4;
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
	img.data[flags_at] = 3 | 8;
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
	img.data[flags_at] = 0;
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), RMQNS_EINVAL);
}

/* Replaying the same encoded entries on two nodes gives the same state. */
Test(snapshot, replay_of_encoded_entries_is_deterministic)
{
	struct buf log = BUF_INIT;
	size_t ends[16];
	unsigned n = 0;
	int64_t both[] = { 1, 2 }, two[] = { 2 };
	struct ctl_event evs[] = {
		ev_apply("x", 1, "a1"), ev_apply("x", 2, "a2"), ev_elect("x", true, 1),
		ev_ids(CTL_EV_ALTER_SYNC_STATE_SET, "x", both, 2), ev_elect("x", true, 2),
		ev_update("x", 1, "a1b"), ev_ids(CTL_EV_CLEAN_BROKER_DATA, "x", two, 1),
		ev_elect("x", false, 0),
	};
	for (unsigned i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		cr_assert_eq(ctl_event_encode(&evs[i], &log), 0);
		ends[n++] = log.len;
		apply(&s, evs[i]);
	}
	size_t at = 0;
	for (unsigned i = 0; i < n; i++) {
		struct ctl_event ev;
		cr_assert_eq(ctl_event_decode(log.data + at, ends[i] - at, &ev), 0);
		apply(&back, ev);
		ctl_event_clear(&ev);
		at = ends[i];
	}
	cr_assert(ctl_state_equal(&s, &back));
	struct ctl_set *set = ctl_state_find(&back, "x");
	/* cleaning master 2 emptied the sync-state set: its table went, and the
	 * last ELECT found no registered set */
	cr_assert(set->has_replicas);
	cr_assert_not(set->has_sync);
	cr_assert_eq(set->master_epoch, 0);
	cr_assert_str_eq(ctl_set_replica(set, 1)->address, "a1b");
	buf_free(&log);
}
