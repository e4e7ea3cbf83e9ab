/*
 * fuzz_ibnd.c - the ibnetdiscover dump reader: parse, classify, summarise,
 * then add the fabric to a model and finalize it (switch levels, leaf and
 * spine groups). The first byte picks the reader options, so anonymous CAs
 * are fuzzed both kept (as with a GUID map) and left out.
 */
#include <errno.h>

#include "fuzz.h"
#include "isle_topo.h"

static void warn_sink(void *arg, const char *msg)
{
	*(size_t *)arg += strlen(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isle_ibnd_opts o = {0};
	isle_ibnd_fabric *f = NULL;
	isle_topo *t = NULL;
	char path[64], err[512];
	size_t nwarn = 0;
	char *sum;
	int fd;

	if (size < 1)
		return 0;
	if (data[0] & 1)
		o.flags |= ISLE_IBND_KEEP_ANONYMOUS;
	isle_topo_set_warn(warn_sink, &nwarn);
	fd = fuzz_memfile(data + 1, size - 1, path, sizeof(path));
	if (fd < 0)
		return 0;
	if (isle_ibnd_parse(path, &o, &f, err, sizeof(err)) < 0)
		goto out;
	sum = isle_ibnd_summary(f);
	free(sum);
	t = isle_topo_create();
	if (t && isle_ibnd_to_topo(f, t, err, sizeof(err)) == 0 &&
	    isle_topo_finalize(t, err, sizeof(err)) == 0) {
		FILE *null = fopen("/dev/null", "w");

		if (null) {
			isle_emit_slurm_tree(t, null);
			isle_emit_slurm_block(t, null);
			fclose(null);
		}
		isle_topo_lint(t, warn_sink, &nwarn);
	}
out:
	isle_topo_destroy(t);
	isle_ibnd_fabric_destroy(f);
	isle_topo_set_warn(NULL, NULL);
	close(fd);
	return 0;
}
