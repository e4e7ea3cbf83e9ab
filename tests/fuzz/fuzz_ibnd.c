/*
 * fuzz_ibnd.c - the ibnetdiscover dump reader: parse, classify, summarise,
 * then add the fabric to a model and finalize it (switch levels, leaf and
 * spine groups). The first byte picks the reader options, so anonymous CAs
 * are fuzzed both kept (as with a GUID map) and left out. After it come
 * the dump, then optionally a NUL and a GUID map, then a NUL and a spine
 * list.
 */
#include <errno.h>

#include "fuzz_topo.h"

static void warn_sink(void *arg, const char *msg)
{
	*(size_t *)arg += strlen(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isle_ibnd_opts o = {0};
	isle_ibnd_fabric *f = NULL;
	isle_topo *t = NULL;
	char paths[3][64], err[512];
	const uint8_t *parts[3];
	size_t nwarn = 0, len[3];
	int fds[3] = {-1, -1, -1}, i, n = 0;
	char *sum;

	if (size < 1)
		return 0;
	if (data[0] & 1)
		o.flags |= ISLE_IBND_KEEP_ANONYMOUS;
	isle_topo_set_warn(warn_sink, &nwarn);
	data++;
	size--;
	/* dump [\0 map [\0 spines]] */
	parts[0] = data;
	len[0] = size;
	for (i = 1; i < 3; i++) {
		const uint8_t *z = memchr(parts[i - 1], 0, len[i - 1]);

		if (!z)
			break;
		parts[i] = z + 1;
		len[i] = len[i - 1] - (size_t)(z + 1 - parts[i - 1]);
		len[i - 1] = (size_t)(z - parts[i - 1]);
	}
	for (n = 0; n < i; n++) {
		fds[n] =
		    fuzz_memfile(parts[n], len[n], paths[n], sizeof(paths[n]));
		if (fds[n] < 0)
			goto out;
	}
	if (n > 1)
		o.guid_map = paths[1];
	if (n > 2)
		o.spine_map = paths[2];
	if (isle_ibnd_parse(paths[0], &o, &f, err, sizeof(err)) < 0)
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
		fuzz_check_reload(t);
	}
out:
	isle_topo_destroy(t);
	isle_ibnd_fabric_destroy(f);
	isle_topo_set_warn(NULL, NULL);
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return 0;
}
