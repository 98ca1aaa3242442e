/* java.lang.String.hashCode over UTF-16 units (javahash.h). */
#include <string.h>

#include "rmqns/javahash.h"
#include "rmqns/utf8.h"

int32_t java_string_hash(const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t left;
	uint32_t h = 0;

	if (!s)
		return 0;
	left = strlen(s);
	while (left) {
		uint32_t cp;
		size_t len = utf8_decode(p, left, &cp);
		if (len == 0) {
			cp = 0xFFFD;
			len = 1;
		}
		p += len;
		left -= len;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = h * 31 + (0xD800 + (cp >> 10));
			h = h * 31 + (0xDC00 + (cp & 0x3FF));
		} else {
			h = h * 31 + cp;
		}
	}
	return (int32_t)h;
}
