/* Handlers for the kv requests; the table is filled as they are written. */
#include <stddef.h>

#include "rmqns/handlers.h"

const struct handler handlers_kv[] = {
	{ 0, NULL, LANE_DEFAULT, false },
};
