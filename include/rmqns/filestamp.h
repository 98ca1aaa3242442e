/* What a file looks like from stat(2), to tell that it changed on disk
 * without reading it: the watchers of the ACL accounts file and of the TLS
 * certificate files poll these. Inode and ctime are in it so that a file
 * replaced by rename (as editors and config managers do) counts as changed
 * even when its size and mtime happen to match. */
#ifndef RMQNS_FILESTAMP_H
#define RMQNS_FILESTAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct file_stamp {
	bool present; /* false: no path, or stat failed */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

/* The stamp of path now (path NULL: not present). */
void file_stamp_take(struct file_stamp *st, const char *path);
bool file_stamp_equal(const struct file_stamp *a, const struct file_stamp *b);
/* Whether any of the n stamps now differs from kept's; kept then takes
 * now's, so a change is reported once (whether or not the files load). */
bool file_stamps_changed(struct file_stamp *kept, const struct file_stamp *now, size_t n);

#endif
