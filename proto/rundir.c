/*
 * rundir.c - the trusted walk to a job's run directory, for its writer
 * (isle-agent, root) and its reader (the SPANK task side, the job's user).
 *
 * A path is only as safe as its least guarded component: whoever can write
 * a directory on the way can rename what is below it and put their own
 * tree in its place. So every component from "/" down is opened relative
 * to the one above with O_NOFOLLOW and must be owned by root (or by the
 * caller itself) and not writable by group or others. A root-owned sticky
 * directory (/tmp) is allowed on the way: there only an entry's owner can
 * rename or remove it, and the next component's owner is checked in turn.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto_priv.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

static int owner_ok(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == geteuid();
}

/* What is wrong with a component, or NULL. sticky_ok: one on the way. */
static const char *untrusted(const struct stat *st, int want_dir, int sticky_ok,
			     char *why, size_t len)
{
	if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return want_dir ? "is not a directory"
				: "is not a regular file";
	if (!owner_ok(st)) {
		snprintf(why, len, "is owned by uid %u, not root",
			 (unsigned)st->st_uid);
		return why;
	}
	if ((st->st_mode & 022) &&
	    !(sticky_ok && st->st_uid == 0 && (st->st_mode & S_ISVTX))) {
		snprintf(why, len, "is writable by group or others (mode %04o)",
			 (unsigned)(st->st_mode & 07777));
		return why;
	}
	return NULL;
}

/* 1 if an open of name below dfd failed with rc because it is a symlink
 * (O_NOFOLLOW gives ELOOP, or ENOTDIR with O_DIRECTORY). */
static int is_link(int dfd, const char *name, int rc)
{
	struct stat st;

	return (rc == -ELOOP || rc == -ENOTDIR) &&
	       !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISLNK(st.st_mode);
}

/* Opens name below dfd as a directory; with create, makes it 0755 first. */
static int open_component(int dfd, const char *name, int create)
{
	int fd = openat(dfd, name, DIR_FLAGS);

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dfd, name, 0755) && errno != EEXIST)
			return -errno;
		fd = openat(dfd, name, DIR_FLAGS);
	}
	return fd < 0 ? -errno : fd;
}

int isle_rundir_open(const char *path, int create, char *err, size_t errlen)
{
	char buf[4096], why[96];
	const char *bad;
	struct stat st;
	size_t len = path ? strlen(path) : 0;
	char *s, *name, *next;
	int dfd = -1, rc;

	if (!len || path[0] != '/')
		return errf(-EINVAL, err, errlen,
			    "run dir '%s': not an absolute path",
			    path ? path : "");
	if (len >= sizeof(buf))
		return errf(-ENAMETOOLONG, err, errlen,
			    "run dir %.64s...: path too long", path);
	memcpy(buf, path, len + 1);
	dfd = open("/", DIR_FLAGS);
	if (dfd < 0)
		return errf(-errno, err, errlen, "run dir %s: /: %s", path,
			    strerror(errno));
	for (s = buf; *s == '/'; s++)
		;
	name = s;
	/* buf[0 .. name) is the path walked so far, for messages. */
	for (;;) {
		int last, fd;

		if (fstat(dfd, &st)) {
			rc = -errno;
			goto fail_errno;
		}
		last = !*name;
		bad = untrusted(&st, 1, !last, why, sizeof(why));
		if (bad) {
			rc = -EPERM;
			goto fail_bad;
		}
		if (last)
			return dfd;
		next = strchr(name, '/');
		if (next)
			*next = '\0';
		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			rc = errf(-EINVAL, err, errlen,
				  "run dir %s: component '%s' not allowed",
				  path, name);
			goto out;
		}
		fd = open_component(dfd, name, create);
		if (fd < 0) {
			rc = fd;
			if (is_link(dfd, name, rc)) {
				bad = "is a symbolic link";
				goto fail_bad_named;
			}
			goto fail_errno_named;
		}
		close(dfd);
		dfd = fd;
		if (next) {
			*next = '/';
			for (s = next; *s == '/'; s++)
				;
			name = s;
		} else {
			name += strlen(name);
		}
	}
fail_errno_named:
	errf(rc, err, errlen, "run dir %s: %.*s%s: %s", path, (int)(name - buf),
	     buf, name, strerror(-rc));
	goto out;
fail_bad_named:
	rc = -EPERM;
	errf(rc, err, errlen, "run dir %s: %.*s%s %s", path, (int)(name - buf),
	     buf, name, bad);
	goto out;
fail_errno:
	errf(rc, err, errlen, "run dir %s: %s", path, strerror(-rc));
	goto out;
fail_bad:
	/* The component just checked ends before name (or is "/"). */
	{
		size_t n = (size_t)(name - buf);

		while (n > 1 && buf[n - 1] == '/')
			n--;
		errf(rc, err, errlen, "run dir %s: %.*s %s", path, (int)n, buf,
		     bad);
	}
out:
	close(dfd);
	return rc;
}

int isle_rundir_open_job(const char *root, const char *id, char *err,
			 size_t errlen)
{
	char why[96];
	const char *bad;
	struct stat st;
	int rfd, dfd, rc;

	rc = isle_rundir_check_id(id, err, errlen);
	if (rc)
		return rc;
	rfd = isle_rundir_open(root, 0, err, errlen);
	if (rfd < 0)
		return rfd;
	dfd = openat(rfd, id, DIR_FLAGS);
	rc = -errno;
	if (dfd < 0) {
		int link = is_link(rfd, id, rc);

		close(rfd);
		return errf(rc, err, errlen, "run dir %s/%s: %s", root, id,
			    link ? "is a symbolic link" : strerror(-rc));
	}
	close(rfd);
	if (fstat(dfd, &st)) {
		rc = -errno;
		close(dfd);
		return errf(rc, err, errlen, "run dir %s/%s: %s", root, id,
			    strerror(-rc));
	}
	bad = untrusted(&st, 1, 0, why, sizeof(why));
	if (bad) {
		close(dfd);
		return errf(-EPERM, err, errlen, "run dir %s/%s %s", root, id,
			    bad);
	}
	return dfd;
}

int isle_rundir_read(int dfd, const char *name, size_t max, char **out,
		     char *err, size_t errlen)
{
	char why[96];
	const char *bad;
	struct stat st;
	size_t got = 0;
	char *buf = NULL;
	int fd, rc = 0;

	*out = NULL;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		return errf(rc, err, errlen, "%s: %s", name,
			    rc == -ELOOP ? "is a symbolic link"
					 : strerror(-rc));
	}
	if (fstat(fd, &st)) {
		rc = errf(-errno, err, errlen, "%s: %s", name, strerror(errno));
		goto out;
	}
	bad = untrusted(&st, 0, 0, why, sizeof(why));
	if (bad) {
		rc = errf(-EPERM, err, errlen, "%s %s", name, bad);
		goto out;
	}
	if ((size_t)st.st_size > max) {
		rc = errf(-EFBIG, err, errlen, "%s: larger than %zu bytes",
			  name, max);
		goto out;
	}
	buf = malloc(max + 1);
	if (!buf) {
		rc = errf(-ENOMEM, err, errlen, "%s: out of memory", name);
		goto out;
	}
	while (got < max) {
		ssize_t n = read(fd, buf + got, max - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errf(-errno, err, errlen, "%s: %s", name,
				  strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

int isle_rundir_check_id(const char *id, char *err, size_t errlen)
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
	return errf(-EINVAL, err, errlen,
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

int isle_rundir_remove(int rootfd, const char *id, char *err, size_t errlen)
{
	int dfd, rc;

	rc = isle_rundir_check_id(id, err, errlen);
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
	return errf(rc, err, errlen, "cannot remove run dir of job %s: %s", id,
		    strerror(-rc));
}
