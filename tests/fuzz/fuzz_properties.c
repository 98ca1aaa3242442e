/* libFuzzer target for the properties reader (java.util.Properties.load
 * rules) in both charsets. What parses must write out (properties_format)
 * as text that reads back to the same set: properties.h promises it, the
 * config file and GET_NAMESRV_CONFIG rely on it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/properties.h"

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

static void round_trip(const struct properties *p)
{
	struct buf text = BUF_INIT;
	struct properties back = PROPERTIES_INIT;

	if (properties_format(p, &text) != RMQNS_OK) {
		buf_free(&text);
		return;
	}
	size_t bad = 0;
	int rc = properties_parse(&back, (const char *)text.data, text.len, PROPERTIES_UTF8, &bad);
	if (rc != RMQNS_OK || back.count != p->count) {
		fprintf(stderr, "written text does not read back (rc %d, %zu of %zu keys):\n%.*s\n", rc,
			back.count, p->count, (int)text.len, (const char *)text.data);
		abort();
	}
	for (size_t i = 0; i < p->count; i++) {
		if (strcmp(back.items[i].key, p->items[i].key) != 0 ||
		    strcmp(back.items[i].value, p->items[i].value) != 0) {
			fprintf(stderr, "key %zu reads back as [%s]=[%s], was [%s]=[%s]\n", i, back.items[i].key,
				back.items[i].value, p->items[i].key, p->items[i].value);
			abort();
		}
	}
	for (size_t i = 1; i < p->count; i++)
		REQUIRE(strcmp(p->items[i - 1].key, p->items[i].key) < 0);
	properties_free(&back);
	buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int cs = 0; cs < 2; cs++) {
		struct properties p = PROPERTIES_INIT;
		size_t bad = 0;
		int rc = properties_parse(&p, (const char *)data, size, (enum properties_charset)cs, &bad);
		if (rc == RMQNS_OK) {
			round_trip(&p);
			for (size_t i = 0; i < p.count; i++)
				REQUIRE(properties_get(&p, p.items[i].key) == p.items[i].value);
		} else {
			REQUIRE(rc == RMQNS_EINVAL || rc == RMQNS_ENOMEM);
			REQUIRE(rc != RMQNS_EINVAL || bad >= 1);
		}
		properties_free(&p);
	}
	return 0;
}
