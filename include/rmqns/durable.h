/* The files rmqns persists (the KV config, the -c config file, the route
 * snapshot): durable whole-file replacement, so that a reader after a crash
 * at any moment finds either the old or the new content, never a mix or
 * nothing; and the bounded whole-file read that loads them. */
#ifndef RMQNS_DURABLE_H
#define RMQNS_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rmqns/buf.h"

/* Replaces the content of path with data[0..len): creates missing parent
 * directories, writes and fsyncs <path>.tmp, keeps the previous content as
 * <path>.bak (keep_bak; a hard link to the old file, a copy where links
 * are not possible), renames the tmp file over path and fsyncs the
 * directory. A symbolic link at path is followed (a configuration file
 * may be one); the tmp and .bak.tmp files are created as
 * durable_create_tmp does, never through a link. When it returns 0 the
 * new content is on disk; otherwise path is unchanged and err holds a
 * one-line reason naming the file (RMQNS_EIO, RMQNS_ENOMEM). */
int durable_write(const char *path, const void *data, size_t len, bool keep_bak,
		  char *err, size_t errlen);

/* Creates the temporary file tmp for writing, exclusively and never
 * through a symbolic link (O_EXCL | O_NOFOLLOW), with mode (under the
 * umask): a stale one left by a crash, or a link planted there, is
 * removed first (the link, never its target). The descriptor, or
 * RMQNS_EIO with a reason in err. */
int durable_create_tmp(const char *tmp, mode_t mode, char *err, size_t errlen);

/* Reads the whole regular file at path into out (appended). It is opened
 * without blocking: a FIFO, directory or device there is refused at once
 * (RMQNS_EIO, err naming its kind). RMQNS_ENOTFOUND
 * when it does not exist, RMQNS_ETOOBIG past max bytes, RMQNS_EIO for any
 * other failure (not a regular file, unreadable), RMQNS_ENOMEM; err then
 * holds a one-line reason naming the file. */
int durable_read(const char *path, size_t max, struct buf *out, char *err, size_t errlen);

/* The directory part of path ("." for a bare name, "/" for one at the
 * root) in a new string; NULL when out of memory. */
char *durable_dir_of(const char *path);

/* Creates dir and its missing parents (mode 0755), fsyncing each parent
 * that gained an entry. */
int durable_mkdirs(const char *dir, char *err, size_t errlen);

#endif
