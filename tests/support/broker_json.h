/* A broker as the HTTP endpoint's /brokers and rmqns-admin's brokers
 * --json list it: the heartbeat fields of one entry. */
#ifndef RMQNS_TEST_BROKER_JSON_H
#define RMQNS_TEST_BROKER_JSON_H

#include <criterion/criterion.h>
#include <jansson.h>

/* b's heartbeat timeout and topic count are these, its heartbeat age a
 * whole number of ms below the timeout. */
static inline void expect_broker_heartbeat(const json_t *b, json_int_t timeout_ms, json_int_t topics)
{
	cr_assert_eq(json_integer_value(json_object_get(b, "heartbeatTimeoutMillis")), timeout_ms);
	cr_assert_eq(json_integer_value(json_object_get(b, "topicCount")), topics);
	json_int_t age = json_integer_value(json_object_get(b, "lastHeartbeatAgeMillis"));
	cr_assert(json_is_integer(json_object_get(b, "lastHeartbeatAgeMillis")) && age >= 0 && age < timeout_ms,
		  "age %lld", (long long)age);
}

#endif
