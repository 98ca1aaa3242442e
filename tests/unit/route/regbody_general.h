/* The REGISTER_BROKER decoder built without its shortcuts (the TopicConfig
 * shape matched in place, the inline read of a member key): the general
 * path alone, for tests and fuzzers that compare it with regbody_decode,
 * and the comparison of two decoded bodies field by field. */
#ifndef RMQNS_TEST_REGBODY_GENERAL_H
#define RMQNS_TEST_REGBODY_GENERAL_H

#include <stdbool.h>
#include <stddef.h>

#include "rmqns/regbody.h"

int regbody_general_decode(const uint8_t *body, size_t len, bool compressed, int32_t version,
			   size_t max_bytes, struct regbody *out, char *why, size_t whylen);
void regbody_general_free(struct regbody *rb);

/* true when a and b hold the same DataVersion, topics (in order, with
 * their names, values and name hashes), topic fingerprint, filter servers
 * and mappings; else false with the first difference named in diff. */
bool regbody_same(const struct regbody *a, const struct regbody *b, char *diff, size_t difflen);

#endif
