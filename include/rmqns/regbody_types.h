/* A broker's DataVersion (regbody.h has the decoders): for headers that
 * carry one without the body decoder's API. */
#ifndef RMQNS_REGBODY_TYPES_H
#define RMQNS_REGBODY_TYPES_H

#include <stdbool.h>
#include <stdint.h>

struct data_version {
	int64_t counter;
	int64_t timestamp;
	int64_t state_version; /* 0 when the sender has none (4.x) */
};

static inline bool data_version_equal(const struct data_version *a, const struct data_version *b)
{
	return a->counter == b->counter && a->timestamp == b->timestamp &&
	       a->state_version == b->state_version;
}

struct regbody;

#endif
