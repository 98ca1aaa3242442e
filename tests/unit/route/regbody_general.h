/* The REGISTER_BROKER decoder's general path (regbody_decode_general in
 * src/route/regbody_decode_general.h: without the shortcuts of the TopicConfig shape
 * matched in place and the inline read of a member key), for tests and
 * fuzzers that compare it with regbody_decode, and the comparison of two
 * decoded bodies field by field. */
#ifndef RMQNS_TEST_REGBODY_GENERAL_H
#define RMQNS_TEST_REGBODY_GENERAL_H

#include <stdbool.h>
#include <stddef.h>

#include "regbody_decode_general.h"
#include "rmqns/regbody.h"

/* true when a and b hold the same DataVersion, topics (in order, with
 * their names, values and name hashes), topic fingerprint, filter servers
 * and mappings; else false with the first difference named in diff. */
bool regbody_same(const struct regbody *a, const struct regbody *b, char *diff, size_t difflen);

#endif
