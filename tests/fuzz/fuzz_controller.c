/* libFuzzer target for the controller's log entries and snapshots
 * (controller.h). The first byte picks the mode:
 *   0  one log entry: what decodes re-encodes to the same bytes and applies;
 *   1  a snapshot image: what restores snapshots back to the same bytes;
 *   2+ a log: entries of u16 length each, applied in order to one state
 *      (undecodable ones skipped), then snapshot -> restore -> the same state.
 * A node replays whatever its log holds, so none of this may crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

static void same_bytes(const struct buf *b, const uint8_t *p, size_t n)
{
	REQUIRE(b->len == n);
	REQUIRE(n == 0 || memcmp(b->data, p, n) == 0);
}

static void check_snapshot_round_trip(const struct ctl_state *s)
{
	struct buf img = BUF_INIT;
	struct ctl_state back;

	ctl_state_init(&back);
	if (ctl_state_snapshot(s, &img) == 0) {
		REQUIRE(ctl_state_restore(&back, img.data, img.len) == 0);
		REQUIRE(ctl_state_equal(s, &back));
	}
	ctl_state_free(&back);
	buf_free(&img);
}

static void one_entry(const uint8_t *p, size_t n)
{
	struct ctl_event ev;
	struct ctl_state s;
	struct buf out = BUF_INIT;

	if (ctl_event_decode(p, n, &ev) != 0)
		return;
	REQUIRE(ctl_event_encode(&ev, &out) == 0);
	same_bytes(&out, p, n);
	ctl_state_init(&s);
	(void)ctl_state_apply(&s, &ev);
	check_snapshot_round_trip(&s);
	ctl_state_free(&s);
	ctl_event_clear(&ev);
	buf_free(&out);
}

static void one_snapshot(const uint8_t *p, size_t n)
{
	struct ctl_state s;
	struct buf out = BUF_INIT;

	ctl_state_init(&s);
	if (ctl_state_restore(&s, p, n) == 0) {
		REQUIRE(ctl_state_snapshot(&s, &out) == 0);
		same_bytes(&out, p, n);
	}
	ctl_state_free(&s);
	buf_free(&out);
}

static void one_log(const uint8_t *p, size_t n)
{
	struct ctl_state s;

	ctl_state_init(&s);
	while (n >= 2) {
		size_t len = ((size_t)p[0] << 8) | p[1];
		p += 2;
		n -= 2;
		if (len > n)
			len = n;
		struct ctl_event ev;
		if (ctl_event_decode(p, len, &ev) == 0) {
			(void)ctl_state_apply(&s, &ev);
			ctl_event_clear(&ev);
		}
		p += len;
		n -= len;
	}
	check_snapshot_round_trip(&s);
	ctl_state_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0]) {
	case 0:
		one_entry(data + 1, size - 1);
		break;
	case 1:
		one_snapshot(data + 1, size - 1);
		break;
	default:
		one_log(data + 1, size - 1);
	}
	return 0;
}
