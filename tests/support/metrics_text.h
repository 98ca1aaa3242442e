/* Reading the metrics exposition text (GET /metrics) back in tests. */
#ifndef RMQNS_METRICS_TEXT_H
#define RMQNS_METRICS_TEXT_H

#include <stdlib.h>
#include <string.h>

/* The value of the sample named exactly name ("name{labels}"), or -1 when
 * the text has none. */
static inline double metrics_text_sample(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

#endif
