/*
 * islectl.h - subcommands of the islectl admin tool.
 *
 * A subcommand is a function `int fn(int argc, char **argv)` that gets its
 * own name as argv[0] and returns the process exit status (0 ok, 1 failed,
 * 2 usage). Subcommands in files of their own (islectl_NAME.c, listed in
 * topology/module.mk) are declared here and listed in islectl.c's table.
 * Formats written by other modules are read through proto/ (isle_proto.h),
 * never through another module's code.
 */
#ifndef ISLE_ISLECTL_H
#define ISLE_ISLECTL_H

struct isle__cmd {
	const char *name;
	const char *usage; /* arguments, for the help text */
	const char *help;  /* one line */
	int (*fn)(int argc, char **argv);
};

#include <stddef.h>
#include <stdio.h>

#include "isle_topo.h"

#define ISLECTL_EXIT_USAGE 2

/* The program name in messages. */
extern const char *const isle__ctl_prog;

/* Loads FILE or prints the error; NULL on failure. */
isle_topo *isle__ctl_load(const char *path);
/* -o FILE for writing, or stdout for NULL and "-"; NULL (said) on error. */
FILE *isle__ctl_open_out(const char *path);
/* Closes (or flushes stdout); 1 and a message on a write error, else 0. */
int isle__ctl_close_out(FILE *f, const char *path);

/* `islectl dot`: islectl_dot.c. */
int isle__cmd_dot(int argc, char **argv);

/* `islectl explain JOBID`: islectl_explain.c. */
int isle__cmd_explain(int argc, char **argv);

/*
 * Prints the decision record at path to out (text, or the JSON itself when
 * json is nonzero). In JSON, with a reports_dir, the record gains
 * "shim_report": job_id's shim report, or null and "shim_report_error".
 * 0, or -ENOENT / -EINVAL with err[errlen] filled.
 */
int isle__explain_print(const char *path, int json, const char *reports_dir,
			uint32_t job_id, FILE *out, char *err, size_t errlen);

/*
 * The shim's report of job_id from reports_dir (proto's isle_report_path,
 * isle_report_read), as text after the decision. No directory, no report
 * or an unreadable one is said in a line, never an error: returns 0.
 */
int isle__explain_report(const char *reports_dir, uint32_t job_id, FILE *out);

/*
 * isle's "isle: ..." segment of the admin_comment field of a job in
 * `scontrol --json show job` output (json), copied into buf. 0, or -ENOENT
 * when there is no such job, field or segment.
 */
int isle__explain_admin_comment(const char *json, char *buf, size_t len);

#endif /* ISLE_ISLECTL_H */
