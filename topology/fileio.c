/*
 * fileio.c - reading input files whole, and writing output files the way
 * admins expect.
 *
 * Generated files (cluster files, node JSONs) are written beside the target
 * and renamed over it, so readers never see half a file. A rename must not
 * replace what is not a plain file, though: `-o /dev/null` or `-o /dev/stdout`
 * would otherwise turn a device into a regular file, and a symlinked
 * /etc/slurm/isle.json would lose its link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isle_topo.h"
#include "topo_priv.h"

static int write_all(int fd, const char *data, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	return 0;
}

/* Writes into an existing device, FIFO or other non-regular file. */
static int write_through(const char *path, const char *data, size_t len,
			 char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return isle__errf(-errno, err, errlen, "%s: %s", path,
				  strerror(errno));
	rc = write_all(fd, data, len);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		return isle__errf(rc, err, errlen, "%s: %s", path,
				  strerror(-rc));
	return 0;
}

int isle_write_file(const char *path, const char *data, size_t len,
		    unsigned mode, char *err, size_t errlen)
{
	char *real = NULL, *tmp = NULL;
	const char *target = path;
	struct stat st;
	int fd = -1, rc = 0;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return write_through(path, data, len, err, errlen);
	/* Follow a symlink to a regular file, so the link survives. */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		real = realpath(path, NULL);
		if (real)
			target = real;
	}
	if (asprintf(&tmp, "%s.XXXXXX", target) < 0) {
		tmp = NULL;
		rc =
		    isle__errf(-ENOMEM, err, errlen, "%s: out of memory", path);
		goto out;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = isle__errf(-errno, err, errlen, "%s: %s", tmp,
				strerror(errno));
		goto out;
	}
	rc = write_all(fd, data, len);
	if (!rc && (fchmod(fd, (mode_t)mode) || fsync(fd)))
		rc = -errno;
	if (rc) {
		rc = isle__errf(rc, err, errlen, "%s: %s", tmp, strerror(-rc));
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		rc = isle__errf(-EIO, err, errlen, "%s: %s", tmp,
				strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, target)) {
		rc = isle__errf(-errno, err, errlen, "%s: %s", path,
				strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(real);
	return rc;
}

int isle__read_file(const char *path, char **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	int rc = 0;

	*out = NULL;
	if (!f)
		return isle__errf(-errno, err, errlen, "%s: %s", path,
				  strerror(errno));
	/* Sized from stat; the loop still copes with files that grow. */
	if (fstat(fileno(f), &st) == 0 && st.st_size > 0)
		cap = (size_t)st.st_size + 2;
	for (;;) {
		size_t n;

		if (len + 1 >= cap) {
			char *p;

			cap = cap ? cap * 2 : 65536;
			p = realloc(buf, cap);
			if (!p) {
				rc = isle__errf(-ENOMEM, err, errlen,
						"%s: out of memory", path);
				goto out;
			}
			buf = p;
		}
		if (!buf && !(buf = malloc(cap))) {
			rc = isle__errf(-ENOMEM, err, errlen,
					"%s: out of memory", path);
			goto out;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		rc = isle__errf(-EIO, err, errlen, "%s: read error", path);
		goto out;
	}
	if (memchr(buf, '\0', len)) {
		rc = isle__errf(-EINVAL, err, errlen, "%s: binary data", path);
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
out:
	free(buf);
	fclose(f);
	return rc;
}
