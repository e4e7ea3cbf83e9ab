/*
 * isle_store.c - topology/isle's decision records: in memory, keyed by job
 * id, persisted off the scheduler's lock path.
 *
 * Evaluations run with slurmctld's job and node write locks held, many times
 * per job (submit test, main scheduler, backfill's plans). They only touch
 * memory here: the latest decision of each job in a hash table. One writer
 * thread does every file operation:
 *   - a decision that started its job is written once, as
 *     DIR/job_<id>.json (tmp file + rename), so `islectl explain` and a
 *     restarted slurmctld find it;
 *   - the records (and files) of jobs the scheduler no longer knows (purged
 *     after MinJobAge) are dropped.
 * Which jobs started or are gone is the caller's to say (isle_decision.c
 * asks Slurm from a thread of its own); the writer only runs the file
 * operations queued here. Nothing in this file calls Slurm, so a later
 * Slurm version can carry the same records elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "isle_proto.h"
#include "isle_store.h"

struct entry {
	uint64_t key;		/* a job id, or a key the caller maps to one */
	unsigned persisted : 1; /* the current decision is on disk */
	unsigned on_disk : 1;	/* some record of this job is on disk */
	char *line;
	char *record;
	struct entry *next;
};

/* A file operation for the writer: record != NULL writes, else unlinks. */
struct op {
	uint32_t job_id;
	char *record;
	struct op *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int running, stop;
	char *dir;
	struct entry **buckets;
	size_t nbuckets, count;
	struct op *head, *tail;
	isle__store_log_fn log;
} st = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static void _log(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (st.log)
		st.log(level, buf);
}

static size_t _slot(uint64_t key, size_t nbuckets)
{
	/* Fibonacci hashing: consecutive ids spread over the table. */
	return (size_t)(((key ^ (key >> 32)) * 11400714819323198485ull) >> 40) &
	       (nbuckets - 1);
}

static struct entry **_find(uint64_t key)
{
	struct entry **e;

	if (!st.nbuckets)
		return NULL;
	for (e = &st.buckets[_slot(key, st.nbuckets)]; *e; e = &(*e)->next)
		if ((*e)->key == key)
			return e;
	return NULL;
}

static int _grow(void)
{
	size_t n = st.nbuckets ? st.nbuckets * 2 : 1024;
	struct entry **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < st.nbuckets; i++) {
		struct entry *e = st.buckets[i], *next;

		for (; e; e = next) {
			size_t k = _slot(e->key, n);

			next = e->next;
			e->next = b[k];
			b[k] = e;
		}
	}
	free(st.buckets);
	st.buckets = b;
	st.nbuckets = n;
	return 0;
}

/* The entry of key, created when missing. */
static struct entry *_get(uint64_t key)
{
	struct entry **p = _find(key), *e;

	if (p)
		return *p;
	if (st.count >= st.nbuckets && _grow())
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->next = st.buckets[_slot(key, st.nbuckets)];
	st.buckets[_slot(key, st.nbuckets)] = e;
	st.count++;
	return e;
}

#define MAX_ONE(n) ((n) ? (n) : 1)

static void _entry_free(struct entry *e)
{
	free(e->line);
	free(e->record);
	free(e);
}

/* Queues a file operation; takes record. Caller holds the lock. */
static int _queue(uint32_t job_id, char *record)
{
	struct op *o = calloc(1, sizeof(*o));

	if (!o) {
		free(record);
		return -ENOMEM;
	}
	o->job_id = job_id;
	o->record = record;
	if (st.tail)
		st.tail->next = o;
	else
		st.head = o;
	st.tail = o;
	pthread_cond_signal(&st.cond);
	return 0;
}

bool isle__store_same(uint64_t key, const char *line)
{
	struct entry **p;
	bool same;

	pthread_mutex_lock(&st.lock);
	p = _find(key);
	same = p && (*p)->line && line && !strcmp((*p)->line, line);
	pthread_mutex_unlock(&st.lock);
	return same;
}

int isle__store_put(uint64_t key, const char *line, const char *record)
{
	char *l = line ? strdup(line) : NULL,
	     *r = record ? strdup(record) : NULL;
	struct entry *e;
	int rc = 0;

	if (!key || !l || !r) {
		rc = key ? -ENOMEM : -EINVAL;
		goto out;
	}
	pthread_mutex_lock(&st.lock);
	e = _get(key);
	if (!e) {
		pthread_mutex_unlock(&st.lock);
		rc = -ENOMEM;
		goto out;
	}
	if (e->line && !strcmp(e->line, l)) {
		pthread_mutex_unlock(&st.lock);
		goto out; /* same decision: keep the first record of it */
	}
	free(e->line);
	free(e->record);
	e->line = l;
	e->record = r;
	l = r = NULL;
	e->persisted = 0;
	rc = 1;
	pthread_mutex_unlock(&st.lock);
out:
	free(l);
	free(r);
	return rc;
}

char *isle__store_get(uint64_t key)
{
	struct entry **p;
	char *r = NULL;

	pthread_mutex_lock(&st.lock);
	p = _find(key);
	if (p && (*p)->record)
		r = strdup((*p)->record);
	pthread_mutex_unlock(&st.lock);
	return r;
}

/* Caller holds the lock. */
static int _started_locked(struct entry *e)
{
	char *r;

	if (e->persisted || !e->record || e->key > UINT32_MAX)
		return 0; /* only job ids name files */
	r = strdup(e->record);
	if (!r)
		return -ENOMEM;
	e->persisted = e->on_disk = 1;
	return _queue((uint32_t)e->key, r);
}

/* Caller holds the lock; p from _find. */
static int _purge_locked(struct entry **p)
{
	struct entry *e = *p;
	int rc = 0;

	*p = e->next;
	st.count--;
	if (e->on_disk)
		rc = _queue((uint32_t)e->key, NULL);
	_entry_free(e);
	return rc;
}

/* Adds the scheduler's grant to e's record as "granted"; takes gpus. */
static void _add_granted(struct entry *e, char *gpus)
{
	json_object *rec = NULL, *g = NULL;
	char *r;

	if (!gpus || !e->record)
		goto out;
	rec = json_tokener_parse(e->record);
	g = json_tokener_parse(gpus);
	if (!rec || !g || !json_object_is_type(rec, json_type_object) ||
	    !json_object_is_type(g, json_type_array))
		goto out;
	json_object_object_add(rec, "granted", g);
	g = NULL;
	r = strdup(json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN));
	if (r) {
		free(e->record);
		e->record = r;
	}
out:
	json_object_put(g);
	json_object_put(rec);
	free(gpus);
}

int isle__store_keys(uint64_t **keys, uint8_t **unsaved)
{
	size_t n = 0;

	pthread_mutex_lock(&st.lock);
	*keys = malloc(MAX_ONE(st.count) * sizeof(**keys));
	*unsaved = malloc(MAX_ONE(st.count));
	if (!*keys || !*unsaved) {
		pthread_mutex_unlock(&st.lock);
		free(*keys);
		free(*unsaved);
		*keys = NULL;
		*unsaved = NULL;
		return -ENOMEM;
	}
	for (size_t b = 0; b < st.nbuckets; b++)
		for (struct entry *e = st.buckets[b]; e; e = e->next) {
			(*unsaved)[n] = !e->persisted;
			(*keys)[n++] = e->key;
		}
	pthread_mutex_unlock(&st.lock);
	return (int)n;
}

int isle__store_started(uint64_t key, uint32_t job_id, char *granted)
{
	struct entry **p, *e;
	int rc;

	pthread_mutex_lock(&st.lock);
	p = _find(key);
	if (!p) {
		pthread_mutex_unlock(&st.lock);
		free(granted);
		return -ENOENT;
	}
	e = *p;
	if (job_id && job_id != e->key) {
		/* The decision started a job under another id (a task split
		 * off a pending array): file it there. */
		struct entry **old = _find(job_id);

		if (old)
			(void)_purge_locked(old);
		p = _find(key);
		*p = e->next;
		e->key = job_id;
		e->next = st.buckets[_slot(e->key, st.nbuckets)];
		st.buckets[_slot(e->key, st.nbuckets)] = e;
	}
	if (!e->persisted)
		_add_granted(e, granted);
	else
		free(granted);
	rc = _started_locked(e);
	pthread_mutex_unlock(&st.lock);
	return rc;
}

int isle__store_purge(uint64_t key)
{
	struct entry **p;
	int rc = -ENOENT;

	pthread_mutex_lock(&st.lock);
	p = _find(key);
	if (p)
		rc = _purge_locked(p);
	pthread_mutex_unlock(&st.lock);
	return rc;
}

/* --- the writer ---------------------------------------------------------- */

/* The record's file (proto's naming), malloc'ed; NULL if too long or out
 * of memory. */
static char *_path(const char *dir, uint32_t job_id, const char *suffix)
{
	char buf[PATH_MAX];

	if (isle_record_path(dir, job_id, suffix, buf, sizeof(buf)))
		return NULL;
	return strdup(buf);
}

static int _write_record(const char *dir, uint32_t job_id, const char *rec)
{
	char *path = _path(dir, job_id, ""),
	     *tmp = _path(dir, job_id, ISLE_RECORD_PARTIAL);
	size_t len = strlen(rec), off = 0;
	int fd = -1, rc = -ENOMEM;

	if (!path || !tmp)
		goto out;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		rc = -errno;
		_log(ISLE_STORE_LOG_ERROR, "isle: cannot create %s: %s", dir,
		     strerror(errno));
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		goto fail;
	while (off < len) {
		ssize_t n = write(fd, rec + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path))
		goto fail;
	rc = 0;
	goto out;
fail:
	rc = -errno;
	_log(ISLE_STORE_LOG_ERROR, "isle: cannot write decision record %s: %s",
	     path, strerror(errno));
	if (fd >= 0)
		close(fd);
	(void)unlink(tmp);
out:
	free(path);
	free(tmp);
	return rc;
}

static void _unlink_record(const char *dir, uint32_t job_id)
{
	char *path = _path(dir, job_id, "");

	if (path && unlink(path) && errno != ENOENT)
		_log(ISLE_STORE_LOG_ERROR, "isle: cannot remove %s: %s", path,
		     strerror(errno));
	free(path);
}

/* Runs the queued file operations; called and returns with the lock held,
 * drops it around each operation. */
static void _drain(void)
{
	while (st.head) {
		struct op *o = st.head;

		st.head = o->next;
		if (!st.head)
			st.tail = NULL;
		pthread_mutex_unlock(&st.lock);
		if (!st.dir) {
			/* never initialised: nowhere to write */
		} else if (o->record) {
			(void)_write_record(st.dir, o->job_id, o->record);
		} else {
			_unlink_record(st.dir, o->job_id);
		}
		free(o->record);
		free(o);
		pthread_mutex_lock(&st.lock);
	}
}

static void *_writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&st.lock);
	while (!st.stop) {
		_drain();
		if (!st.stop)
			pthread_cond_wait(&st.cond, &st.lock);
	}
	_drain(); /* finish what was queued before stop */
	pthread_mutex_unlock(&st.lock);
	return NULL;
}

/* Reads DIR/job_<id>.json records left by an earlier slurmctld. */
static void _reload(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		uint32_t id;
		char path[PATH_MAX];
		json_object *o, *line;
		void *rec;
		struct entry *e;
		int rc = isle_record_name_parse(de->d_name, &id);

		if (rc == -EAGAIN) {
			/* a write cut short by a crash */
			if (isle_record_path(dir, id, ISLE_RECORD_PARTIAL, path,
					     sizeof(path)) == 0)
				(void)unlink(path);
			continue;
		}
		if (rc || isle_record_path(dir, id, "", path, sizeof(path)) ||
		    isle_record_read(path, &rec, NULL, 0))
			continue;
		o = rec;
		json_object_object_get_ex(o, "line", &line);
		pthread_mutex_lock(&st.lock);
		e = _get(id);
		if (e && !e->record) {
			e->line = strdup(json_object_get_string(line));
			e->record = strdup(json_object_to_json_string_ext(
			    o, JSON_C_TO_STRING_PLAIN));
			e->persisted = e->on_disk = 1;
			n++;
		}
		pthread_mutex_unlock(&st.lock);
		json_object_put(o);
	}
	closedir(d);
	if (n)
		_log(ISLE_STORE_LOG_INFO,
		     "isle: reloaded %d decision records "
		     "from %s",
		     n, dir);
}

int isle__store_init(const char *dir, isle__store_log_fn log)
{
	int rc = 0;

	if (!dir)
		return -EINVAL;
	pthread_mutex_lock(&st.lock);
	if (st.running) {
		pthread_mutex_unlock(&st.lock);
		return 0;
	}
	free(st.dir);
	st.dir = strdup(dir);
	st.log = log;
	st.stop = 0;
	pthread_mutex_unlock(&st.lock);
	if (!st.dir)
		return -ENOMEM;
	_reload(dir);
	pthread_mutex_lock(&st.lock);
	rc = -pthread_create(&st.thread, NULL, _writer, NULL);
	st.running = !rc;
	pthread_mutex_unlock(&st.lock);
	return rc;
}

void isle__store_fini(void)
{
	pthread_mutex_lock(&st.lock);
	if (st.running) {
		st.stop = 1;
		pthread_cond_signal(&st.cond);
		pthread_mutex_unlock(&st.lock);
		pthread_join(st.thread, NULL);
		pthread_mutex_lock(&st.lock);
		st.running = 0;
	}
	_drain(); /* ops queued without a writer */
	for (size_t b = 0; b < st.nbuckets; b++) {
		struct entry *e = st.buckets[b], *next;

		for (; e; e = next) {
			next = e->next;
			_entry_free(e);
		}
	}
	free(st.buckets);
	st.buckets = NULL;
	st.nbuckets = st.count = 0;
	free(st.dir);
	st.dir = NULL;
	pthread_mutex_unlock(&st.lock);
}
