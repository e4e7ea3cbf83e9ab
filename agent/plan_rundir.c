/*
 * plan_rundir.c - the job's run directory, created and removed as root.
 *
 * <root>/<id>/ and its files stay owned by root; the job's user reads them
 * through the group (the job's gid) and can write nothing there. Still,
 * nothing here trusts what it finds: a directory may be left from an older
 * version that handed it to the user. Every open is relative to a directory
 * fd and uses O_NOFOLLOW, files are created with O_EXCL, and removal walks
 * iteratively (no depth limit, no descriptor per level), never follows a
 * symlink, never crosses a mount and never leaves the tree it started in.
 * The root itself must be a real directory that only we can write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan.h"

#define DIR_MODE 0750
#define FILE_MODE 0640

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
		return isle__agent_err(rc, err, errlen,
				       "run dir %s: cannot create: %s", root,
				       strerror(-rc));
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		/* O_NOFOLLOW|O_DIRECTORY on a symlink: ELOOP or ENOTDIR. */
		return isle__agent_err(rc, err, errlen, "run dir %s: %s", root,
				       is_symlink(root) ? "is a symlink"
							: strerror(-rc));
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		goto fail;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		(void)isle__agent_err(
		    0, err, errlen,
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
	(void)isle__agent_err(0, err, errlen, "run dir %s: %s", root,
			      strerror(-rc));
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
	return isle__agent_err(-EINVAL, err, errlen,
			       "job id '%s': expected 1-64 of [A-Za-z0-9_.-]",
			       id ? id : "");
}

/* Where the walk is: one (dev, ino) per directory from the top down. */
struct walk {
	struct {
		dev_t dev;
		ino_t ino;
	} * v;
	size_t n, cap;
};

static int walk_push(struct walk *w, const struct stat *st)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		void *p = realloc(w->v, cap * sizeof(*w->v));

		if (!p)
			return -ENOMEM;
		w->v = p;
		w->cap = cap;
	}
	w->v[w->n].dev = st->st_dev;
	w->v[w->n].ino = st->st_ino;
	w->n++;
	return 0;
}

/*
 * Removes the entries of dfd it can remove at once (files, links, empty
 * directories) and returns 1 with *sub open on the first non-empty
 * subdirectory, 0 when dfd is empty, or a negative errno: the first entry
 * that cannot go ends the walk (re-entering it would loop).
 */
static int next_subdir(int dfd, dev_t dev, int *sub)
{
	int fd = dup(dfd), rc = 0;
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rewinddir(d); /* the dup shares the offset of earlier scans */
	while ((e = readdir(d))) {
		struct stat st;
		int s;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dfd, e->d_name, 0))
			continue;
		/* a directory: EISDIR (Linux) or EPERM (POSIX) */
		if (errno != EISDIR && errno != EPERM) {
			rc = -errno;
			break;
		}
		if (!unlinkat(dfd, e->d_name, AT_REMOVEDIR))
			continue;
		if (errno != ENOTEMPTY && errno != EEXIST) {
			rc = -errno;
			break;
		}
		s = openat(dfd, e->d_name,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0) {
			rc = -errno;
			break;
		}
		if (fstat(s, &st) || st.st_dev != dev) {
			/* a mount point inside: not ours to empty */
			rc = -EXDEV;
			close(s);
			break;
		}
		*sub = s;
		rc = 1;
		break;
	}
	closedir(d);
	return rc;
}

/*
 * Empties the directory dfd (consumed). Goes down one directory at a time
 * and back up through "..", checked against the (dev, ino) it came from,
 * so the depth is bounded by memory only and one descriptor is open.
 */
static int empty_dir(int dfd)
{
	struct walk w = {0};
	struct stat st;
	int rc = 0, sub = -1;

	if (fstat(dfd, &st)) {
		rc = -errno;
		goto out;
	}
	if ((rc = walk_push(&w, &st)))
		goto out;
	for (;;) {
		int r = next_subdir(dfd, w.v[0].dev, &sub);

		if (r < 0) {
			rc = r;
			goto out;
		}
		if (r == 1) {
			close(dfd);
			dfd = sub;
			if (fstat(dfd, &st)) {
				rc = -errno;
				goto out;
			}
			if ((rc = walk_push(&w, &st)))
				goto out;
			continue;
		}
		/* dfd is empty now; its parent removes it on the next scan */
		if (w.n == 1)
			break;
		sub = openat(dfd, "..",
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			rc = -errno;
			goto out;
		}
		close(dfd);
		dfd = sub;
		w.n--;
		if (fstat(dfd, &st) || st.st_dev != w.v[w.n - 1].dev ||
		    st.st_ino != w.v[w.n - 1].ino) {
			rc = -ESTALE; /* moved under us: stop, touch nothing */
			goto out;
		}
	}
out:
	free(w.v);
	close(dfd);
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
	rc = empty_dir(dfd);
	if (!rc && unlinkat(rootfd, id, AT_REMOVEDIR))
		rc = -errno;
	if (!rc)
		return 0;
fail:
	return isle__agent_err(rc, err, errlen,
			       "cannot remove run dir of job %s: %s", id,
			       strerror(-rc));
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

static int write_file(int dfd, const struct isle__rundir_file *f, gid_t gid)
{
	int fd, rc;

	fd = openat(dfd, f->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, f->data, f->len);
	if (!rc && gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid))
		rc = -errno;
	if (!rc && fchmod(fd, FILE_MODE))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

int isle__rundir_write(int rootfd, const char *id, gid_t gid,
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
		rc = write_file(dfd, &files[i], gid);
		if (rc) {
			what = files[i].name;
			goto fail;
		}
	}
	/* Readable by the job's group only now that it is complete. */
	what = "chown";
	if ((gid != (gid_t)-1 && fchown(dfd, (uid_t)-1, gid)) ||
	    fchmod(dfd, DIR_MODE)) {
		rc = -errno;
		goto fail;
	}
	close(dfd);
	return 0;
fail:
	(void)isle__agent_err(0, err, errlen, "run dir of job %s: %s: %s", id,
			      what, strerror(-rc));
	if (dfd >= 0)
		close(dfd);
	isle__rundir_remove(rootfd, id, NULL, 0);
	return rc;
}
