/* The JSON layouts of a REGISTER_BROKER body (regbody_json.c), one rung
 * above the table they fill (regbody_build.h); the compressed layout and
 * the decoder's entry point call them, never the reverse. */
#ifndef RMQNS_REGBODY_JSON_H
#define RMQNS_REGBODY_JSON_H

#include "regbody_build.h"

/* A plain (not compressed) body of sender version `version`. */
int regbody_json_decode(struct body_build *b, const uint8_t *text, size_t len, int32_t version);

/* The JSON items of the compressed layout. */
enum regbody_json_item { REGBODY_ITEM_DATA_VERSION, REGBODY_ITEM_FILTERS, REGBODY_ITEM_MAPPING };
int regbody_json_item(struct body_build *b, const uint8_t *s, size_t n, enum regbody_json_item what);

#endif
