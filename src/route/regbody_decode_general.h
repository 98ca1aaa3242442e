/* The decoder's general path alone (regbody.c), for the tests and fuzzers
 * that compare it with the shortcuts. */
#ifndef RMQNS_REGBODY_GENERAL_H
#define RMQNS_REGBODY_GENERAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/regbody.h"

/* regbody_decode without its shortcuts (the TopicConfig shape matched in
 * place, the inline read of a member key): the general path alone, for
 * the tests and fuzzers that compare the two. Freed with regbody_free. */
int regbody_decode_general(const uint8_t *body, size_t len, bool compressed, int32_t version,
			   size_t max_bytes, struct regbody *out, char *why, size_t whylen);

#endif
