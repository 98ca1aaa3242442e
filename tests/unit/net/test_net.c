/* The network side's own rules, without a running binary: options turned
 * into server parameters. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "rmqns/config.h"
#include "rmqns/net.h"
#include "rmqns/net_params.h"

Test(net_params, idle_timeout_in_64_bits)
{
	struct options o;
	struct server_params p;

	memset(&o, 0, sizeof o);
	o.serverChannelMaxIdleTimeSeconds = INT32_MAX; /* the option's maximum */
	server_params_from_options(&p, &o, 2);
	cr_assert_eq(p.idle_close_ms, (uint64_t)INT32_MAX * 1000u);

	/* 4,294,968 s is 704 ms past 2^32 ms: a 32-bit product would close
	 * connections after 0.7 s */
	o.serverChannelMaxIdleTimeSeconds = 4294968;
	server_params_from_options(&p, &o, 2);
	cr_assert_eq(p.idle_close_ms, 4294968000ull);

	o.serverChannelMaxIdleTimeSeconds = 0;
	server_params_from_options(&p, &o, 2);
	cr_assert_eq(p.idle_close_ms, 0);
}

/* A big frame's buffer comes back as a spare for the next big frame: at
 * most NET_SPARE_BLOCKS of them, none smaller than NET_SPARE_MIN_BYTES or
 * bigger than NET_SPARE_MAX_BYTES (those are freed). */
Test(net_spare, big_read_buffers_come_back_within_bounds)
{
	size_t cap = 0;
	uint8_t *blocks[NET_SPARE_BLOCKS + 1];
	for (unsigned i = 0; i <= NET_SPARE_BLOCKS; i++) {
		blocks[i] = malloc(2u << 20);
		cr_assert_not_null(blocks[i]);
		blocks[i][0] = (uint8_t)i;
	}
	uint8_t *tiny = malloc(4096), *huge = malloc(NET_SPARE_MAX_BYTES + 1);
	cr_assert(tiny && huge);
	net_block_free(tiny);
	net_block_free(huge);
	cr_expect_null(net_block_take(1, &cap), "neither a small nor a huge buffer is kept");
	for (unsigned i = 0; i <= NET_SPARE_BLOCKS; i++)
		net_block_free(blocks[i]); /* the last one is freed: no room */
	cr_expect_null(net_block_take(4u << 20, &cap), "none is big enough");
	bool seen[NET_SPARE_BLOCKS + 1] = { false };
	for (unsigned i = 0; i < NET_SPARE_BLOCKS; i++) {
		uint8_t *b = net_block_take(1u << 20, &cap);
		cr_assert_not_null(b, "spare %u", i);
		cr_expect_geq(cap, 2u << 20);
		cr_assert_lt(b[0], NET_SPARE_BLOCKS, "the first ones were kept");
		seen[b[0]] = true;
		free(b);
	}
	cr_expect_null(net_block_take(1, &cap), "all taken");
	for (unsigned i = 0; i < NET_SPARE_BLOCKS; i++)
		cr_expect(seen[i]);
	net_block_free(NULL);
}
