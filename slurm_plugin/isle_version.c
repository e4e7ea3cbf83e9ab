/*
 * isle_version.c - is the Slurm that loaded this plugin the one it was
 * built for? Linked into topology_isle.so and spank_isle.so.
 *
 * Slurm's loader (plugin_load_from_file) refuses a plugin whose
 * plugin_version differs from the daemon's, logging only the plugin's
 * version ("Incompatible Slurm plugin ... version (24.11.5)"), and for the
 * topology plugin slurmctld then stops. The check below runs first, from a
 * constructor at dlopen(), and logs one line naming both releases, so the
 * admin sees why next to Slurm's own line. The running release is read from
 * the loaded libslurm's API number (slurm_api_version()); libslurm symbols
 * are looked up with dlsym so that a missing one cannot crash the daemon.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "isle_version.h"

/* libslurm API number of each Slurm release isle knows (config.h's
 * SLURM_API_CURRENT). */
static const struct {
	long api;
	const char *release;
} releases[] = {
    {42, "24.11"},
    {44, "25.11"},
    {45, "26.05"},
};

static const char *_release(long api)
{
	for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); i++)
		if (releases[i].api == api)
			return releases[i].release;
	return NULL;
}

static int checked, result;

static int _check(const char *what)
{
	Dl_info self;
	long (*api_fn)(void);
	void (*err_fn)(const char *, ...);
	long built = SLURM_API_VERSION >> 16, running;
	const char *rel;
	char name[64];

	if (checked)
		return result;
	checked = 1;
	*(void **)&api_fn = dlsym(RTLD_DEFAULT, "slurm_api_version");
	if (!api_fn)
		return result = 0; /* not inside a Slurm process */
	running = api_fn() >> 16;
	if (running == built)
		return result = 0;
	if (!what)
		what = dladdr((void *)_check, &self) && self.dli_fname
			   ? self.dli_fname
			   : "an isle plugin";
	rel = _release(running);
	if (rel)
		snprintf(name, sizeof(name), "%s", rel);
	else
		snprintf(name, sizeof(name), "with libslurm API %ld", running);
	*(void **)&err_fn = dlsym(RTLD_DEFAULT, "slurm_error");
	if (err_fn)
		err_fn("isle: %s was built for Slurm %s (libslurm API %ld) "
		       "but is loaded by Slurm %s (libslurm API %ld); Slurm "
		       "does not load plugins of another release: rebuild "
		       "isle against the running Slurm (make SLURM=%s) or "
		       "install the package built for it (isle-slurm-%s)",
		       what, SLURM_VERSION_STRING, built, name, running,
		       rel ? rel : "<release>", rel ? rel : "<release>");
	else
		fprintf(stderr,
			"isle: %s was built for Slurm %s (libslurm API %ld) "
			"but is loaded by Slurm %s (libslurm API %ld); rebuild "
			"isle against the running Slurm (make SLURM=%s) or "
			"install the package built for it (isle-slurm-%s)\n",
			what, SLURM_VERSION_STRING, built, name, running,
			rel ? rel : "<release>", rel ? rel : "<release>");
	return result = -EPROTO;
}

int isle__version_check(const char *what)
{
	return _check(what);
}

__attribute__((constructor)) static void _check_at_load(void)
{
	(void)_check(NULL);
}
