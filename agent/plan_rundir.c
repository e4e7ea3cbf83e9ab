/*
 * plan_rundir.c - the job's run directory, created and removed as root.
 *
 * <root>/<id>/ and its files stay owned by root:root (but for report/, the
 * job user's, where the shim leaves its report); the job's user, and
 * nobody else, reads them through a POSIX ACL entry of its own (a group,
 * even the job's, may hold other users). Nothing here trusts what it
 * finds: a directory may be left from an older version that handed it to
 * the user. The root is reached by proto's trusted walk (every component
 * root's and not writable by others), every open below is relative to a
 * directory fd with O_NOFOLLOW, files are created with O_EXCL, and removal
 * walks iteratively (no depth limit, no descriptor per level), never
 * follows a symlink, never crosses a mount and never leaves the tree it
 * started in.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "plan.h"

/* Owner only; the reader's ACL entry is the one other way in. */
#define DIR_MODE 0700
#define FILE_MODE 0600

int isle__rundir_open_root(const char *root, char *err, size_t errlen)
{
	return isle_rundir_open(root, 1, err, errlen);
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

/*
 * Gives uid read access (and search, for a directory) to fd through an ACL
 * entry: owner full, uid r(x), owning group and others nothing. The ACL is
 * the kernel's xattr form (acl(5)), so no library is needed.
 */
static int grant_reader(int fd, uid_t uid, int dir)
{
	struct {
		struct posix_acl_xattr_header h;
		struct posix_acl_xattr_entry e[5];
	} acl;
	const uint16_t r = ACL_READ | (dir ? ACL_EXECUTE : 0);
	const struct {
		uint16_t tag, perm;
		uint32_t id;
	} ent[5] = {
	    {ACL_USER_OBJ, ACL_READ | ACL_WRITE | (dir ? ACL_EXECUTE : 0),
	     (uint32_t)ACL_UNDEFINED_ID},
	    {ACL_USER, r, (uint32_t)uid},
	    {ACL_GROUP_OBJ, 0, (uint32_t)ACL_UNDEFINED_ID},
	    {ACL_MASK, r, (uint32_t)ACL_UNDEFINED_ID},
	    {ACL_OTHER, 0, (uint32_t)ACL_UNDEFINED_ID},
	};

	acl.h.a_version = htole32(POSIX_ACL_XATTR_VERSION);
	for (int i = 0; i < 5; i++) {
		acl.e[i].e_tag = htole16(ent[i].tag);
		acl.e[i].e_perm = htole16(ent[i].perm);
		acl.e[i].e_id = htole32(ent[i].id);
	}
	return fsetxattr(fd, "system.posix_acl_access", &acl, sizeof(acl), 0)
		   ? -errno
		   : 0;
}

/* The job's user needs an ACL entry unless it is the owner already. */
static int needs_acl(uid_t reader)
{
	return reader != (uid_t)-1 && reader != geteuid();
}

static int write_file(int dfd, const struct isle__rundir_file *f, uid_t reader)
{
	int fd, rc;

	fd = openat(dfd, f->name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    FILE_MODE);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, f->data, f->len);
	/* Not the group of a setgid parent: nobody but root and the reader. */
	if (!rc && geteuid() == 0 && fchown(fd, (uid_t)-1, 0))
		rc = -errno;
	if (!rc && fchmod(fd, FILE_MODE))
		rc = -errno;
	if (!rc && needs_acl(reader))
		rc = grant_reader(fd, reader, 0);
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

static int make_report_dir(int dfd, uid_t owner)
{
	int fd, rc = 0;

	if (mkdirat(dfd, ISLE_RUNDIR_REPORT_DIR, DIR_MODE))
		return -errno;
	fd = openat(dfd, ISLE_RUNDIR_REPORT_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((geteuid() == 0 && fchown(fd, owner, 0)) || fchmod(fd, DIR_MODE))
		rc = -errno;
	close(fd);
	return rc;
}

int isle__rundir_write(int rootfd, const char *id, uid_t reader,
		       const struct isle__rundir_file *files, int nfiles,
		       char *err, size_t errlen)
{
	const char *what = "create";
	int dfd = -1, rc;

	rc = isle_rundir_check_id(id, err, errlen);
	if (rc)
		return rc;
	/* A requeued job finds its old directory: start afresh. */
	rc = isle_rundir_remove(rootfd, id, err, errlen);
	if (rc)
		return rc;
	if (mkdirat(rootfd, id, DIR_MODE)) {
		rc = -errno;
		goto fail;
	}
	dfd =
	    openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		goto fail;
	}
	what = "owner";
	if ((geteuid() == 0 && fchown(dfd, (uid_t)-1, 0)) ||
	    fchmod(dfd, DIR_MODE)) {
		rc = -errno;
		goto fail;
	}
	for (int i = 0; i < nfiles; i++) {
		rc = write_file(dfd, &files[i], reader);
		if (rc) {
			what = files[i].name;
			goto fail;
		}
	}
	/* The one place the job may write: the shim's report, collected
	 * by root at job end (isle_report_collect). Owned by the job's
	 * user, so the job directory itself stays root's. */
	what = ISLE_RUNDIR_REPORT_DIR;
	if (reader != (uid_t)-1 && (rc = make_report_dir(dfd, reader)))
		goto fail;
	/* The reader gets the directory only now that it is complete. */
	what = "ACL";
	if (needs_acl(reader) && (rc = grant_reader(dfd, reader, 1)))
		goto fail;
	close(dfd);
	return 0;
fail:
	if (rc == -EOPNOTSUPP)
		(void)isle__errf(
		    0, err, errlen,
		    "run dir of job %s: %s: the file system does not support "
		    "POSIX ACLs, which let the job's user alone read its "
		    "files (use a tmpfs such as /run/isle)",
		    id, what);
	else
		(void)isle__errf(0, err, errlen, "run dir of job %s: %s: %s",
				 id, what, strerror(-rc));
	if (dfd >= 0)
		close(dfd);
	isle_rundir_remove(rootfd, id, NULL, 0);
	return rc;
}
