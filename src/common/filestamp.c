/* file_stamp (filestamp.h): a file's identity and times from stat(2). */
#include <string.h>
#include <sys/stat.h>

#include "rmqns/filestamp.h"

void file_stamp_take(struct file_stamp *st, const char *path)
{
	struct stat sb;

	memset(st, 0, sizeof *st);
	if (!path || stat(path, &sb) < 0)
		return;
	st->present = true;
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	st->size = sb.st_size;
	st->mtime = sb.st_mtim;
	st->ctime = sb.st_ctim;
}

bool file_stamps_changed(struct file_stamp *kept, const struct file_stamp *now, size_t n)
{
	bool changed = false;
	for (size_t i = 0; i < n; i++)
		changed |= !file_stamp_equal(&kept[i], &now[i]);
	if (changed)
		memcpy(kept, now, n * sizeof *now);
	return changed;
}

bool file_stamp_equal(const struct file_stamp *a, const struct file_stamp *b)
{
	return a->present == b->present && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}
