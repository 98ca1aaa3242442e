/* libraft 0.15's handshake and message headers as the Raft port checks
 * them (ctl_raft_wire.c): what libraft itself sends passes, each length
 * libraft would allocate or read past is refused with its reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "ctl_internal.h"

#define MAX_MESSAGE (1u << 20)

static void put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

Test(raft_wire, handshake_round_trip_and_bounds)
{
	uint8_t hs[CTL_RAFT_HANDSHAKE_PREAMBLE + CTL_RAFT_HANDSHAKE_MAX_ADDRESS];
	uint64_t id;
	size_t alen;
	size_t n = ctl_raft_handshake_encode(hs, sizeof hs, 2, "127.0.0.1:10878");

	cr_assert_eq(n, 24 + 16); /* the address, its NUL, padded to 8 */
	cr_assert_eq(ctl_raft_handshake_check(hs, &id, &alen), CTL_RAFT_OK);
	cr_assert_eq(id, 2);
	cr_assert_eq(alen, 16);
	put(hs + 16, 1u << 30); /* an address of 1 GiB */
	cr_assert_eq(ctl_raft_handshake_check(hs, &id, &alen), CTL_REFUSED_HANDSHAKE);
	put(hs, 2); /* another protocol */
	put(hs + 16, 16);
	cr_assert_eq(ctl_raft_handshake_check(hs, &id, &alen), CTL_REFUSED_HANDSHAKE);
}

Test(raft_wire, preamble_lengths_are_exact_per_type)
{
	static const struct {
		uint64_t type, len;
		enum ctl_raft_verdict v;
	} cases[] = {
		{ RAFT_IO_REQUEST_VOTE, 40, CTL_RAFT_OK },
		{ RAFT_IO_REQUEST_VOTE, 1, CTL_REFUSED_MALFORMED },
		{ RAFT_IO_REQUEST_VOTE_RESULT, 24, CTL_RAFT_OK },
		{ RAFT_IO_APPEND_ENTRIES_RESULT, 8, CTL_REFUSED_MALFORMED },
		{ RAFT_IO_TIMEOUT_NOW, 24, CTL_RAFT_OK },
		{ RAFT_IO_APPEND_ENTRIES, 48 + 16, CTL_RAFT_OK },
		{ RAFT_IO_APPEND_ENTRIES, 48 + 15, CTL_REFUSED_MALFORMED },
		{ RAFT_IO_APPEND_ENTRIES, 1u << 30, CTL_REFUSED_OVERSIZE },
		{ RAFT_IO_INSTALL_SNAPSHOT, 56, CTL_REFUSED_MALFORMED },
		{ 9, 24, CTL_REFUSED_MALFORMED },
	};
	uint8_t pre[16];
	uint64_t type;
	size_t hlen;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		put(pre, cases[i].type);
		put(pre + 8, cases[i].len);
		cr_expect_eq(ctl_raft_preamble_check(pre, MAX_MESSAGE, &type, &hlen), cases[i].v,
			     "type %llu, length %llu", (unsigned long long)cases[i].type,
			     (unsigned long long)cases[i].len);
	}
}

/* An AppendEntries header of one entry of elen bytes and type etype. */
static enum ctl_raft_verdict append(uint8_t etype, uint32_t elen, uint64_t *payload)
{
	uint8_t h[64] = { 0 };

	put(h + 32, 1);
	put(h + 40, 5); /* the entry's term */
	h[48] = etype;
	put(h + 52, elen); /* u32, then 4 bytes of the unused tail */
	return ctl_raft_header_check(RAFT_IO_APPEND_ENTRIES, h, sizeof h, 1, MAX_MESSAGE, payload);
}

Test(raft_wire, append_entries_payloads_are_checked)
{
	uint64_t payload;

	cr_assert_eq(append(RAFT_COMMAND, 64, &payload), CTL_RAFT_OK);
	cr_assert_eq(payload, 64);
	cr_assert_eq(append(RAFT_COMMAND, 63, &payload), CTL_REFUSED_MALFORMED); /* unpadded */
	cr_assert_eq(append(7, 64, &payload), CTL_REFUSED_MALFORMED);
	cr_assert_eq(append(RAFT_COMMAND, MAX_MESSAGE, &payload), CTL_REFUSED_OVERSIZE);
}

Test(raft_wire, votes_for_another_server_and_broken_configurations_are_refused)
{
	uint8_t vote[40] = { 0 }, snap[56 + 24] = { 0 };
	uint64_t payload;

	put(vote + 8, 3); /* candidate 3 */
	cr_assert_eq(ctl_raft_header_check(RAFT_IO_REQUEST_VOTE, vote, 40, 3, MAX_MESSAGE, &payload), CTL_RAFT_OK);
	cr_assert_eq(ctl_raft_header_check(RAFT_IO_REQUEST_VOTE, vote, 40, 2, MAX_MESSAGE, &payload),
		     CTL_REFUSED_ID);

	/* one server, id 1, "a:1", voter: 22 bytes, padded to 24 */
	put(snap + 32, 24);
	snap[40] = 1;
	put(snap + 41, 1);
	put(snap + 49, 1);
	memcpy(snap + 57, "a:1", 4);
	snap[61] = RAFT_VOTER;
	put(snap + 64, 100); /* snapshot data */
	cr_assert_eq(ctl_raft_header_check(RAFT_IO_INSTALL_SNAPSHOT, snap, sizeof snap, 1, MAX_MESSAGE, &payload),
		     CTL_RAFT_OK);
	cr_assert_eq(payload, 100);
	put(snap + 41, 1000); /* 1000 servers in 24 bytes */
	cr_assert_eq(ctl_raft_header_check(RAFT_IO_INSTALL_SNAPSHOT, snap, sizeof snap, 1, MAX_MESSAGE, &payload),
		     CTL_REFUSED_MALFORMED);
	put(snap + 41, 1);
	put(snap + 64, 1u << 30);
	cr_assert_eq(ctl_raft_header_check(RAFT_IO_INSTALL_SNAPSHOT, snap, sizeof snap, 1, MAX_MESSAGE, &payload),
		     CTL_REFUSED_OVERSIZE);
}
