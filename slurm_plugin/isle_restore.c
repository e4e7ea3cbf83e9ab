/*
 * isle_restore.c - decision records that come back with the jobs' state.
 *
 * slurmctld unpacks job state (and with it isle's per-job topology info)
 * holding its locks, where isle must not touch files. Records are queued
 * there and written by one thread of isle's own, only where the explain
 * path has no record of the job: a file written after the last job state
 * save is newer and stays.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isle_compat.h"

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

struct restore_item {
	struct restore_item *next;
	uint32_t job_id;
	char *record;
};

static pthread_mutex_t rs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rs_cond = PTHREAD_COND_INITIALIZER;
static struct restore_item *rs_head, **rs_tail = &rs_head;
static pthread_t rs_thread;
static bool rs_running, rs_stop;

static int _write_record(const char *dir, uint32_t job_id, const char *text)
{
	char *path = NULL, *tmp = NULL;
	size_t len = strlen(text);
	int fd = -1, rc = 0;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		rc = -errno;
		goto out;
	}
	path = xstrdup_printf("%s/job_%u.json", dir, job_id);
	if (!access(path, F_OK))
		goto out;
	tmp = xstrdup_printf("%s.restore.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd)) {
		rc = -errno;
		goto out;
	}
	if (rename(tmp, path))
		rc = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (rc && tmp)
		(void)unlink(tmp);
	if (rc)
		error("isle: cannot restore decision record of job %u in %s: "
		      "%s",
		      job_id, dir, strerror(-rc));
	xfree(path);
	xfree(tmp);
	return rc;
}

static void *_restore_thread(void *arg)
{
	char *dir = arg;
	int n = 0;

	slurm_mutex_lock(&rs_lock);
	for (;;) {
		struct restore_item *it;

		while (!rs_head && !rs_stop)
			slurm_cond_wait(&rs_cond, &rs_lock);
		if (!rs_head)
			break;
		it = rs_head;
		rs_head = it->next;
		if (!rs_head)
			rs_tail = &rs_head;
		slurm_mutex_unlock(&rs_lock);
		if (!_write_record(dir, it->job_id, it->record))
			n++;
		xfree(it->record);
		xfree(it);
		slurm_mutex_lock(&rs_lock);
	}
	slurm_mutex_unlock(&rs_lock);
	if (n)
		verbose("isle: restored %d decision record(s) from job state",
			n);
	xfree(dir);
	return NULL;
}

void isle__decision_restore(uint32_t job_id, const char *record)
{
	struct restore_item *it = xmalloc(sizeof(*it));

	it->job_id = job_id;
	it->record = xstrdup(record);
	slurm_mutex_lock(&rs_lock);
	*rs_tail = it;
	rs_tail = &it->next;
	if (!rs_running && !rs_stop) {
		char *dir = xstrdup_printf(
		    "%s/%s", slurm_conf.state_save_location, ISLE_STATE_SUBDIR);

		if (pthread_create(&rs_thread, NULL, _restore_thread, dir)) {
			error("isle: cannot start the record restore thread: "
			      "%m");
			xfree(dir);
		} else {
			rs_running = true;
		}
	}
	slurm_cond_signal(&rs_cond);
	slurm_mutex_unlock(&rs_lock);
}

/* Writes what is queued, then stops the thread. */
void isle__decision_restore_fini(void)
{
	bool join;

	slurm_mutex_lock(&rs_lock);
	rs_stop = true;
	join = rs_running;
	rs_running = false;
	slurm_cond_signal(&rs_cond);
	slurm_mutex_unlock(&rs_lock);
	if (join)
		pthread_join(rs_thread, NULL);
	slurm_mutex_lock(&rs_lock);
	while (rs_head) {
		struct restore_item *it = rs_head;

		rs_head = it->next;
		xfree(it->record);
		xfree(it);
	}
	rs_tail = &rs_head;
	rs_stop = false;
	slurm_mutex_unlock(&rs_lock);
}
