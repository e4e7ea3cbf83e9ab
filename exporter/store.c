/*
 * store.c - the decision records, scanned incrementally.
 *
 * topology/isle's writer puts a record in job_<id>.json.new and renames it
 * over job_<id>.json, so a changed record is a new inode: readdir's d_ino
 * tells which files to parse without a stat per file. A job counts once,
 * when its record is first read; its id is remembered for an hour after
 * the record is gone, so a record that comes back (the store's reload
 * after a slurmctld restart) is not counted twice. The shim's reports
 * directory is scanned the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "isle_exporter.h"

#define FORGET_S 3600

const double isle_exp_cost_bounds[ISLE_EXP_COST_NBOUNDS] = {
    1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 4.0};

struct slot {
	uint32_t job_id; /* 0 = empty */
	uint8_t state;	 /* SLOT_* */
	uint8_t counted; /* its decision is in the counters */
	ino_t ino;
	uint64_t gen; /* scan that last saw the file */
	time_t gone;  /* when the file vanished (SLOT_GONE) */
	/* EMPTY: never used; OK / BAD: the file is there and read / does not
	 * read; GONE: the file went, its job was counted; DEAD: reusable. */
};

enum { SLOT_EMPTY = 0, SLOT_OK, SLOT_BAD, SLOT_GONE, SLOT_DEAD };

struct isle_exp_store {
	char *dir;
	int reports;	/* the shim's reports, not decision records */
	long max_reads; /* files read a scan, 0 = no limit */
	struct slot *tab;
	size_t cap, used; /* used counts non-empty slots, DEAD included */
	uint64_t gen;
	struct isle_exp_store_stats st;
};

isle_exp_store *isle_exp_store_create(const char *records_dir)
{
	isle_exp_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cap = 1024;
	s->dir = strdup(records_dir);
	s->tab = calloc(s->cap, sizeof(*s->tab));
	if (!s->dir || !s->tab) {
		isle_exp_store_destroy(s);
		return NULL;
	}
	return s;
}

isle_exp_store *isle_exp_reports_create(const char *reports_dir, long max_reads)
{
	isle_exp_store *s = isle_exp_store_create(reports_dir);

	if (s) {
		s->reports = 1;
		s->max_reads = max_reads;
	}
	return s;
}

void isle_exp_store_destroy(isle_exp_store *s)
{
	if (!s)
		return;
	free(s->dir);
	free(s->tab);
	free(s);
}

const struct isle_exp_store_stats *isle_exp_store_stats(const isle_exp_store *s)
{
	return &s->st;
}

static size_t hash(uint32_t id, size_t cap)
{
	return (size_t)((id * 2654435761u) & (cap - 1));
}

/* The slot of id, or the empty one where it would go. DEAD slots are
 * tombstones: probed past, reused on insert. */
static struct slot *find(isle_exp_store *s, uint32_t id, int insert)
{
	size_t i = hash(id, s->cap);
	struct slot *dead = NULL;

	for (;;) {
		struct slot *e = &s->tab[i];

		if (e->state == SLOT_EMPTY)
			return insert && dead ? dead : e;
		if (e->state == SLOT_DEAD) {
			if (!dead)
				dead = e;
		} else if (e->job_id == id) {
			return e;
		}
		i = (i + 1) & (s->cap - 1);
	}
}

static int grow(isle_exp_store *s)
{
	struct slot *old = s->tab;
	size_t oldcap = s->cap, ncap = s->cap;

	/* Rehash drops tombstones; double only when live slots need it. */
	size_t live = 0;
	for (size_t i = 0; i < oldcap; i++)
		live += old[i].state != SLOT_EMPTY && old[i].state != SLOT_DEAD;
	while (live * 2 >= ncap)
		ncap *= 2;
	s->tab = calloc(ncap, sizeof(*s->tab));
	if (!s->tab) {
		s->tab = old;
		return -ENOMEM;
	}
	s->cap = ncap;
	s->used = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].state != SLOT_EMPTY && old[i].state != SLOT_DEAD) {
			*find(s, old[i].job_id, 1) = old[i];
			s->used++;
		}
	free(old);
	return 0;
}

static void count(isle_exp_store *s, const struct isle_record_info *in)
{
	struct isle_exp_store_stats *st = &s->st;

	st->decisions[in->outcome]++;
	if (in->tp_groups < 0)
		return;
	st->tp_groups_placed += (uint64_t)in->tp_groups;
	st->tp_groups_split += (uint64_t)(in->tp_groups - in->tp_in_island);
	if (in->cost_ratio < 0)
		return;
	st->cost_count++;
	st->cost_sum += in->cost_ratio;
	for (int b = 0; b < ISLE_EXP_COST_NBOUNDS; b++)
		if (in->cost_ratio <= isle_exp_cost_bounds[b])
			st->cost_le[b]++;
}

static void count_report(isle_exp_store *s, const struct isle_report *r)
{
	struct isle_exp_store_stats *st = &s->st;

	st->jobs_reported++;
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		st->shim_taken[k] += r->taken[k];
		st->shim_passed[k] += r->passed[k];
	}
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		st->shim_sent[t] += r->sent[t];
		st->shim_library[t] += r->library[t];
	}
}

/* Reads the record or report of e (new or replaced); counts it the first
 * time. */
static void read_one(isle_exp_store *s, struct slot *e, const char *name)
{
	char path[4096];
	struct isle_record_info in;
	struct isle_report r;
	void *rec;

	if (snprintf(path, sizeof(path), "%s/%s", s->dir, name) >=
	    (int)sizeof(path)) {
		e->state = SLOT_BAD;
		s->st.bad_files++;
		return;
	}
	if (s->reports) {
		if (isle_report_read(path, &r, NULL, 0)) {
			e->state = SLOT_BAD;
			s->st.bad_files++;
			return;
		}
		if (!e->counted)
			count_report(s, &r);
		e->counted = 1;
		e->state = SLOT_OK;
		return;
	}
	if (isle_record_read(path, &rec, NULL, 0)) {
		e->state = SLOT_BAD;
		s->st.bad_files++;
		return;
	}
	isle_record_info(rec, &in);
	json_object_put(rec);
	if (in.job_id != e->job_id) {
		/* a record under another job's name */
		e->state = SLOT_BAD;
		s->st.bad_files++;
		return;
	}
	if (!e->counted)
		count(s, &in);
	e->counted = 1;
	e->state = SLOT_OK;
}

int isle_exp_store_scan(isle_exp_store *s, char *err, size_t errlen)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	time_t now = time(NULL);
	long records = 0, partial = 0, bad = 0, reads = 0, deferred = 0;

	if (!d) {
		int rc = -errno;

		if (err)
			snprintf(err, errlen, "%s: %s", s->dir,
				 strerror(errno));
		s->st.records = s->st.partial = s->st.unreadable = 0;
		return rc == -ENOENT ? -ENOENT : -EIO;
	}
	s->gen++;
	while ((errno = 0, de = readdir(d))) {
		uint32_t id;
		int rc = s->reports ? isle_report_name_parse(de->d_name, &id)
				    : isle_record_name_parse(de->d_name, &id);
		struct slot *e;

		if (rc == -EAGAIN)
			partial++;
		if (rc)
			continue;
		if ((s->used + 1) * 4 >= s->cap * 3 && grow(s)) {
			closedir(d);
			return -ENOMEM;
		}
		e = find(s, id, 1);
		if (s->max_reads &&
		    (e->state == SLOT_EMPTY || e->state == SLOT_DEAD ||
		     e->ino != de->d_ino || e->state == SLOT_GONE) &&
		    reads++ >= s->max_reads) {
			/* Left for the next scan; a known file stays seen. */
			deferred++;
			if (e->state != SLOT_EMPTY && e->state != SLOT_DEAD)
				e->gen = s->gen;
			continue;
		}
		if (e->state == SLOT_EMPTY || e->state == SLOT_DEAD) {
			if (e->state == SLOT_EMPTY)
				s->used++;
			memset(e, 0, sizeof(*e));
			e->job_id = id;
			e->ino = de->d_ino;
			read_one(s, e, de->d_name);
		} else if (e->ino != de->d_ino || e->state == SLOT_GONE) {
			e->ino = de->d_ino;
			read_one(s, e, de->d_name);
		}
		e->gen = s->gen;
		if (e->state == SLOT_OK)
			records++;
		else
			bad++;
	}
	if (errno) {
		int rc = errno;

		closedir(d);
		if (err)
			snprintf(err, errlen, "%s: %s", s->dir, strerror(rc));
		return -EIO;
	}
	closedir(d);
	for (size_t i = 0; i < s->cap; i++) {
		struct slot *e = &s->tab[i];

		if (e->state == SLOT_EMPTY || e->state == SLOT_DEAD ||
		    e->gen == s->gen)
			continue;
		if (e->state == SLOT_GONE) {
			if (now - e->gone > FORGET_S)
				e->state = SLOT_DEAD;
		} else if (e->counted) {
			e->state = SLOT_GONE;
			e->gone = now;
		} else {
			e->state = SLOT_DEAD;
		}
	}
	s->st.records = records;
	s->st.deferred = deferred;
	s->st.partial = partial;
	s->st.unreadable = bad;
	return 0;
}
