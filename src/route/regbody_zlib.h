/* The compressed layout of a REGISTER_BROKER body (regbody_zlib.c): it
 * inflates and hands the JSON items it finds to regbody_json.h. Only the
 * decoder's entry point (regbody.c) calls it. */
#ifndef RMQNS_REGBODY_ZLIB_H
#define RMQNS_REGBODY_ZLIB_H

#include "regbody_json.h"

/* A compressed body (or one flagged plain that starts with a zlib
 * header), inflated within `max` bytes. */
int regbody_zlib_decode(struct body_build *b, const uint8_t *body, size_t len, int32_t version,
			size_t max);

#endif
