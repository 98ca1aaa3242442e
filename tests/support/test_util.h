/* Helpers for the Criterion tests: a test's temporary directory, paths in
 * it, and whole files written and read back. Every failure is an assertion
 * failure of the calling test. */
#ifndef RMQNS_TEST_UTIL_H
#define RMQNS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fresh directory /tmp/PREFIX-XXXXXX written into dir (n bytes). */
static inline void tu_mkdtemp(char *dir, size_t n, const char *prefix)
{
	cr_assert_lt((size_t)snprintf(dir, n, "/tmp/%s-XXXXXX", prefix), n);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

/* Removes dir and everything in it. */
static inline void tu_rmdir(const char *dir)
{
	char cmd[512];
	cr_assert_lt((size_t)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir), sizeof(cmd));
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* "dir/name", malloc'd. */
static inline char *tu_path_in(const char *dir, const char *name)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

/* Writes text as the whole file at path. */
static inline void tu_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot create %s", path);
	cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	cr_assert_eq(fclose(f), 0);
}

/* The file's text ("" when empty), malloc'd; NULL when it cannot be
 * opened (absent). */
static inline char *tu_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	size_t n = 0;

	if (!f)
		return NULL;
	ssize_t got = getdelim(&s, &n, '\0', f);
	cr_assert(got >= 0 || feof(f), "cannot read %s", path);
	fclose(f);
	if (got < 0) {
		free(s);
		s = strdup("");
		cr_assert_not_null(s);
	}
	return s;
}

/* The file at path holds exactly want; what says what is checked. */
static inline void tu_assert_file_eq(const char *path, const char *want, const char *what)
{
	char *got = tu_read_file(path);
	cr_assert_not_null(got, "%s: cannot read %s", what, path);
	cr_assert_str_eq(got, want, "%s", what);
	free(got);
}

/* A file's bytes in a buffer of exactly its size, so that any read past
 * the end is an AddressSanitizer error; the file must exist and not be
 * empty. */
static inline uint8_t *tu_load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	cr_assert(n > 0, "%s is empty", path);
	uint8_t *p = malloc((size_t)n);
	cr_assert(p);
	cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

#endif
