/* The language table of the command header (§2.4): codes to names and
 * back. A leaf of remoting/: the command model and both header codecs use
 * it. */
#include <string.h>
#include <strings.h>

#include "rmqns/remoting.h"
#include "remoting_int.h"

static const char *const remoting_language_names[] = {
	"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
	"OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
};
#define REMOTING_LANGUAGE_COUNT (sizeof(remoting_language_names) / sizeof(remoting_language_names[0]))

const char *remoting_language_name(int32_t language)
{
	if (language >= 0 && (size_t)language < REMOTING_LANGUAGE_COUNT)
		return remoting_language_names[language];
	return "UNKNOWN";
}

int32_t remoting_language_parse_n(const char *name, size_t n)
{
	for (size_t i = 0; i < REMOTING_LANGUAGE_COUNT; i++) {
		const char *k = remoting_language_names[i];
		if (strlen(k) == n && memcmp(k, name, n) == 0)
			return (int32_t)i;
	}
	for (size_t i = 0; i < REMOTING_LANGUAGE_COUNT; i++) {
		const char *k = remoting_language_names[i];
		if (strlen(k) == n && strncasecmp(k, name, n) == 0)
			return (int32_t)i;
	}
	return LANG_UNKNOWN;
}

int32_t remoting_language_parse(const char *name)
{
	if (!name)
		return LANG_UNKNOWN;
	return remoting_language_parse_n(name, strlen(name));
}
