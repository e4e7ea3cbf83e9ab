/*
 * plan_rundir.c - the job's run directory, created and removed as root.
 *
 * The job's user owns <root>/<id>/ once it is complete, so nothing here may
 * trust what it finds there: every open is relative to a directory fd and
 * uses O_NOFOLLOW, files are created with O_EXCL, and removal never follows
 * a symlink or leaves the tree it started in. The root itself must be a
 * real directory that only we can write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan.h"

#define DIR_MODE 0750
#define FILE_MODE 0640
/* A user who owns the job directory can nest directories in it. */
#define MAX_DEPTH 16

static int mkdir_parents(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int is_symlink(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISLNK(st.st_mode);
}

int isle__rundir_open_root(const char *root, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	rc = mkdir_parents(root);
	if (rc) {
		isle__plan_errf(err, errlen, "run dir %s: cannot create: %s",
				root, strerror(-rc));
		return rc;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		/* O_NOFOLLOW|O_DIRECTORY on a symlink: ELOOP or ENOTDIR. */
		isle__plan_errf(err, errlen, "run dir %s: %s", root,
				is_symlink(root) ? "is a symlink"
						 : strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		isle__plan_errf(err, errlen,
				"run dir %s: must be owned by uid %u and not "
				"writable by group or others (is uid %u, mode "
				"%04o)",
				root, (unsigned)geteuid(), (unsigned)st.st_uid,
				(unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
fail:
	isle__plan_errf(err, errlen, "run dir %s: %s", root, strerror(-rc));
	close(fd);
	return rc;
}

int isle__rundir_check_id(const char *id, char *err, size_t errlen)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > 64 || !strcmp(id, ".") || !strcmp(id, ".."))
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
			    id[i]))
			goto bad;
	return 0;
bad:
	isle__plan_errf(err, errlen,
			"job id '%s': expected 1-64 of [A-Za-z0-9_.-]",
			id ? id : "");
	return -EINVAL;
}

/* Empties the directory dfd (consumed), depth levels deep at most. */
static int empty_dir(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), e->d_name, 0))
			continue;
		if (errno != EISDIR && errno != EPERM) {
			rc = rc ?: -errno;
			continue;
		}
		if (depth >= MAX_DEPTH) {
			rc = rc ?: -ELOOP;
			continue;
		}
		sub = openat(dirfd(d), e->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			rc = rc ?: -errno;
			continue;
		}
		rc = empty_dir(sub, depth + 1) ?: rc;
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR))
			rc = rc ?: -errno;
	}
	closedir(d);
	return rc;
}

int isle__rundir_remove(int rootfd, const char *id, char *err, size_t errlen)
{
	int dfd, rc;

	rc = isle__rundir_check_id(id, err, errlen);
	if (rc)
		return rc;
	dfd =
	    openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		/* Not a directory (someone put a file or link there). */
		if ((errno == ENOTDIR || errno == ELOOP) &&
		    !unlinkat(rootfd, id, 0))
			return 0;
		rc = -errno;
		goto fail;
	}
	rc = empty_dir(dfd, 0);
	if (!rc && unlinkat(rootfd, id, AT_REMOVEDIR))
		rc = -errno;
	if (!rc)
		return 0;
fail:
	isle__plan_errf(err, errlen, "cannot remove run dir of job %s: %s", id,
			strerror(-rc));
	return rc;
}

/* Group root, so that the job's user is the only other reader; a
 * non-root caller (tests) keeps its own group. */
static gid_t owner_group(void)
{
	return geteuid() == 0 ? 0 : (gid_t)-1;
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += n;
		len -= n;
	}
	return 0;
}

static int write_file(int dfd, const struct isle__rundir_file *f, uid_t uid)
{
	int fd, rc;

	fd = openat(dfd, f->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, f->data, f->len);
	if (!rc && fchown(fd, uid, owner_group()))
		rc = -errno;
	if (!rc && fchmod(fd, FILE_MODE))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

int isle__rundir_write(int rootfd, const char *id, uid_t uid,
		       const struct isle__rundir_file *files, int nfiles,
		       char *err, size_t errlen)
{
	const char *what = "create";
	int dfd = -1, rc;

	rc = isle__rundir_check_id(id, err, errlen);
	if (rc)
		return rc;
	/* A requeued job finds its old directory: start afresh. */
	rc = isle__rundir_remove(rootfd, id, err, errlen);
	if (rc)
		return rc;
	if (mkdirat(rootfd, id, 0700)) {
		rc = -errno;
		goto fail;
	}
	dfd =
	    openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		goto fail;
	}
	for (int i = 0; i < nfiles; i++) {
		rc = write_file(dfd, &files[i], uid);
		if (rc) {
			what = files[i].name;
			goto fail;
		}
	}
	/* Hand the directory over only now that it is complete. */
	what = "chown";
	if (fchown(dfd, uid, owner_group()) || fchmod(dfd, DIR_MODE)) {
		rc = -errno;
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	isle__plan_errf(err, errlen, "run dir of job %s: %s: %s", id, what,
			strerror(-rc));
	if (dfd >= 0)
		close(dfd);
	isle__rundir_remove(rootfd, id, NULL, 0);
	return rc;
}
