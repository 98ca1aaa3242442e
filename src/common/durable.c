/* Durable whole-file replacement: tmp file, fsync, .bak, rename, directory
 * fsync. Used by the KV store, the config persistence and the route
 * snapshot; knows nothing of what the bytes mean. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmqns/buf.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"

static int fsync_dir(const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open directory %s: %s", dir, strerror(errno));
		return RMQNS_EIO;
	}
	if (fsync(fd) < 0 && errno != EINVAL) {
		snprintf(err, errlen, "cannot fsync directory %s: %s", dir, strerror(errno));
		close(fd);
		return RMQNS_EIO;
	}
	close(fd);
	return RMQNS_OK;
}

char *durable_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int durable_mkdirs(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	char *parent;
	int rc;

	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return RMQNS_OK;
		snprintf(err, errlen, "%s is not a directory", dir);
		return RMQNS_EIO;
	}
	if (errno != ENOENT) {
		snprintf(err, errlen, "cannot use directory %s: %s", dir, strerror(errno));
		return RMQNS_EIO;
	}
	parent = durable_dir_of(dir);
	if (!parent) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	rc = strcmp(parent, dir) == 0 ? RMQNS_OK : durable_mkdirs(parent, err, errlen);
	if (rc == RMQNS_OK) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
			rc = RMQNS_EIO;
		} else {
			rc = fsync_dir(parent, err, errlen);
		}
	}
	free(parent);
	return rc;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int durable_create_tmp(const char *tmp, mode_t mode, char *err, size_t errlen)
{
	/* unlink removes a link itself, never its target; a directory stays
	 * and the create below names the trouble */
	if (unlink(tmp) < 0 && errno != ENOENT && errno != EISDIR && errno != EPERM) {
		snprintf(err, errlen, "cannot remove the stale %s: %s", tmp, strerror(errno));
		return RMQNS_EIO;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return RMQNS_EIO;
	}
	return fd;
}

/* Writes data to a new file at path (mode), fsynced and closed. */
static int write_new_file(const char *path, const void *data, size_t len, mode_t mode,
			  char *err, size_t errlen)
{
	int fd = durable_create_tmp(path, mode, err, errlen);

	if (fd < 0)
		return fd;
	if (fchmod(fd, mode) < 0 || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return RMQNS_EIO;
	}
	if (close(fd) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		unlink(path);
		return RMQNS_EIO;
	}
	return RMQNS_OK;
}

/* Reads a whole regular file into a new buffer. */
static int read_all(const char *path, char **out, size_t *outlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *b;

	if (fd < 0)
		return -1;
	b = malloc(cap);
	for (;;) {
		ssize_t n;
		if (!b) {
			close(fd);
			errno = ENOMEM;
			return -1;
		}
		if (len == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				close(fd);
				errno = ENOMEM;
				return -1;
			}
			b = nb;
			cap *= 2;
		}
		n = read(fd, b + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(b);
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	*out = b;
	*outlen = len;
	return 0;
}

/* Makes <path>.bak hold the current content of path, atomically. */
static int keep_backup(const char *path, mode_t mode, char *err, size_t errlen)
{
	char *bak = NULL, *bak_tmp = NULL;
	int rc = RMQNS_OK;

	if (asprintf(&bak, "%s.bak", path) < 0 || asprintf(&bak_tmp, "%s.bak.tmp", path) < 0) {
		free(bak);
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	unlink(bak_tmp);
	/* The old file is about to be replaced by a rename, so its inode
	 * can simply stay alive under the .bak name. */
	if (link(path, bak_tmp) < 0) {
		char *data;
		size_t len;

		if (read_all(path, &data, &len) < 0) {
			snprintf(err, errlen, "cannot read %s for its backup: %s", path, strerror(errno));
			rc = RMQNS_EIO;
			goto out;
		}
		rc = write_new_file(bak_tmp, data, len, mode, err, errlen);
		free(data);
		if (rc < 0)
			goto out;
	}
	if (rename(bak_tmp, bak) < 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", bak_tmp, bak, strerror(errno));
		unlink(bak_tmp);
		rc = RMQNS_EIO;
	}
out:
	free(bak);
	free(bak_tmp);
	return rc;
}

int durable_write(const char *path, const void *data, size_t len, bool keep_bak,
		  char *err, size_t errlen)
{
	char *real = NULL, *tmp = NULL, *dir = NULL;
	mode_t mode = 0644;
	bool exists = false;
	struct stat st;
	int rc;

	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			real = realpath(path, NULL);
			if (!real) {
				snprintf(err, errlen, "cannot resolve symbolic link %s: %s", path, strerror(errno));
				return RMQNS_EIO;
			}
			if (stat(real, &st) < 0) {
				snprintf(err, errlen, "cannot use %s: %s", real, strerror(errno));
				free(real);
				return RMQNS_EIO;
			}
			path = real;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "%s is not a regular file", path);
			free(real);
			return RMQNS_EIO;
		}
		exists = true;
		mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		snprintf(err, errlen, "cannot use %s: %s", path, strerror(errno));
		return RMQNS_EIO;
	}

	dir = durable_dir_of(path);
	if (!dir || asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		snprintf(err, errlen, "out of memory");
		rc = RMQNS_ENOMEM;
		goto out;
	}
	rc = durable_mkdirs(dir, err, errlen);
	if (rc < 0)
		goto out;
	rc = write_new_file(tmp, data, len, mode, err, errlen);
	if (rc < 0)
		goto out;
	if (exists && keep_bak) {
		rc = keep_backup(path, mode, err, errlen);
		if (rc < 0) {
			unlink(tmp);
			goto out;
		}
	}
	if (rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		rc = RMQNS_EIO;
		goto out;
	}
	rc = fsync_dir(dir, err, errlen);
out:
	free(real);
	free(tmp);
	free(dir);
	return rc;
}

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

int durable_read(const char *path, size_t max, struct buf *out, char *err, size_t errlen)
{
	struct stat st;
	/* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer;
	 * it has no effect on the regular file read below */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return e == ENOENT ? RMQNS_ENOTFOUND : RMQNS_EIO;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		close(fd);
		return RMQNS_EIO;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s, not a regular file", path, file_kind(st.st_mode));
		close(fd);
		return RMQNS_EIO;
	}
	for (;;) {
		ssize_t n;

		if (out->len > max) {
			snprintf(err, errlen, "%s is larger than %zu bytes", path, max);
			close(fd);
			return RMQNS_ETOOBIG;
		}
		if (buf_reserve(out, 65536) < 0) {
			snprintf(err, errlen, "out of memory reading %s", path);
			close(fd);
			return RMQNS_ENOMEM;
		}
		n = read(fd, out->data + out->len, out->cap - out->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			close(fd);
			return RMQNS_EIO;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
	}
	close(fd);
	return RMQNS_OK;
}
