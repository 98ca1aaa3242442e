/* The network side's own rules, without a running binary: options turned
 * into server parameters. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "rmqns/config.h"
#include "rmqns/net.h"

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
