/* Handlers for the route requests; the table is filled as they are written. */
#include <stddef.h>

#include "rmqns/handlers.h"

const struct handler handlers_route[] = {
	{ 0, NULL, LANE_DEFAULT, false },
};
