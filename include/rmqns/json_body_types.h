/* The two forms of a JSON body (json_body.h has the writer): for headers
 * that name a form without the writer's API. */
#ifndef RMQNS_JSON_BODY_TYPES_H
#define RMQNS_JSON_BODY_TYPES_H

/* JW_DEFAULT: fastjson's (bare integer keys, Java map order);
 * JW_STANDARD: standard JSON (quoted keys, sorted). */
enum jw_form { JW_DEFAULT = 0, JW_STANDARD = 1 };

#endif
