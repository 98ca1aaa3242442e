/* A controller request for the unit tests: code, then key/value ext
 * pairs, NULL-ended (the fields live in req_ext until the next call). */
#ifndef RMQNS_TEST_CTL_TEST_REQ_H
#define RMQNS_TEST_CTL_TEST_REQ_H

#include <stdarg.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/remoting.h"

static struct remoting_ext_field req_ext[16];

static inline struct remoting_cmd make_req(int32_t code, ...)
{
	struct remoting_cmd c = { .code = code, .language = LANG_JAVA, .version = 441, .opaque = 42 };
	va_list ap;
	const char *k;
	va_start(ap, code);
	while ((k = va_arg(ap, const char *)) && c.ext_count < 16) {
		req_ext[c.ext_count].key = k;
		req_ext[c.ext_count].value = va_arg(ap, const char *);
		c.ext_count++;
	}
	va_end(ap);
	c.ext = req_ext;
	c.ext_present = c.ext_count > 0;
	return c;
}

/* An ext field of an answer, or NULL. */
static inline const char *answer_ext(const struct ctl_answer *a, const char *key)
{
	for (uint32_t i = 0; i < a->ext_count; i++)
		if (strcmp(a->ext[i].key, key) == 0)
			return a->ext[i].value;
	return NULL;
}

#endif
