/*
 * islectl.h - subcommands of the islectl admin tool.
 *
 * A subcommand is a function `int fn(int argc, char **argv)` that gets its
 * own name as argv[0] and returns the process exit status (0 ok, 1 failed,
 * 2 usage). Subcommands implemented outside topology/ are declared weak
 * here and listed in islectl.c's table; islectl offers them once their
 * object file is linked in. To add one from another module:
 *
 *   1. define `int isle__cmd_NAME(int argc, char **argv)` in your .c file;
 *   2. declare it below (weak) and add a row to `commands` in islectl.c;
 *   3. in your module.mk:  $(B)/bin/islectl: $(B)/yourdir/yourfile.o
 *      (an object, not an archive: weak references do not pull archive
 *      members), plus `$(B)/bin/islectl: LDLIBS += ...` if it needs more.
 */
#ifndef ISLE_ISLECTL_H
#define ISLE_ISLECTL_H

struct isle__cmd {
	const char *name;
	const char *usage; /* arguments, for the help text */
	const char *help;  /* one line */
	int (*fn)(int argc, char **argv);
};

/* `islectl explain JOBID`: slurm_plugin/explain.c. */
int isle__cmd_explain(int argc, char **argv) __attribute__((weak));

#endif /* ISLE_ISLECTL_H */
