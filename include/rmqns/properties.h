/* Java properties text: the reader follows java.util.Properties.load
 * (comments, the three separators, continuations, escapes), the writer
 * emits the `key=value\n` lines the Java NameServer writes for
 * GET_NAMESRV_CONFIG and its config file. A property set is kept sorted by
 * key, one entry per key (a later duplicate replaces the earlier value, as
 * Java's Hashtable does). */
#ifndef RMQNS_PROPERTIES_H
#define RMQNS_PROPERTIES_H

#include <stdbool.h>
#include <stddef.h>

#include "rmqns/buf.h"

struct property {
	char *key;   /* UTF-8, owned */
	char *value; /* UTF-8, owned */
};

struct properties {
	struct property *items; /* sorted by key (byte order), keys unique */
	size_t count;
	size_t cap;
};

#define PROPERTIES_INIT { NULL, 0, 0 }

/* How the bytes of a properties text are turned into characters. */
enum properties_charset {
	/* Request bodies (Java decodes them as UTF-8): malformed sequences
	 * become U+FFFD. */
	PROPERTIES_UTF8 = 0,
	/* Files. Java reads them as ISO-8859-1; rmqns takes a file that is
	 * valid UTF-8 as UTF-8 (a plain-ASCII file reads the same either
	 * way) and reads any other file as ISO-8859-1, byte for character. */
	PROPERTIES_FILE = 1,
};

/* Parses `text` and merges its properties into p. RMQNS_EINVAL for a
 * malformed \uXXXX escape or an escaped NUL (nothing is merged; *bad_line,
 * when not NULL, gets the 1-based line number), RMQNS_ENOMEM. */
int properties_parse(struct properties *p, const char *text, size_t len,
		     enum properties_charset cs, size_t *bad_line);

/* Reads and parses a file (PROPERTIES_FILE). On failure fills err with a
 * one-line reason naming the file. */
int properties_load_file(struct properties *p, const char *path, char *err, size_t errlen);

/* The value of key, or NULL. */
const char *properties_get(const struct properties *p, const char *key);
bool properties_has(const struct properties *p, const char *key);
/* Whether a ';'-separated list value (configBlackList's form: entries
 * trimmed of blanks, empty ones ignored) names key. */
bool properties_list_names(const char *list, const char *key);
/* Adds or replaces (copies both strings). */
int properties_set(struct properties *p, const char *key, const char *value);
/* Removes key if present. */
void properties_remove(struct properties *p, const char *key);
/* Deep copy into an empty dst. */
int properties_copy(struct properties *dst, const struct properties *src);
void properties_free(struct properties *p);

/* Appends `key=value\n` for every property, in key order. Characters the
 * reader would take for syntax are escaped (backslash, control characters,
 * and in keys the separators, or a leading `#`/`!`), so the text reads
 * back to the same set; ordinary values come out verbatim, as Java writes
 * them. */
int properties_format(const struct properties *p, struct buf *out);

#endif
