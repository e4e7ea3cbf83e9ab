/*
 * fuzz_node_json.c - node JSON files (isle-agent discover output) merged
 * into a model, the way `islectl build` merges them.
 *
 * Input: one to four node files separated by NUL bytes. With one, it is
 * merged twice (into an empty model, then again over itself, which takes
 * the fill-in path of a node already known); with more, they go through
 * isle_topo_merge_node_json_files, which also builds the multi-node NVLink
 * domains of shared fabric cliques (GB200 NVL72). The model is finalized
 * and written back as a cluster file, which must load again.
 */
#include "fuzz_topo.h"

#define MAX_FILES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char paths[MAX_FILES][64], err[512];
	const char *pp[MAX_FILES];
	int fds[MAX_FILES], n = 0, i;
	const uint8_t *p = data, *end = data + size;
	isle_topo *t = isle_topo_create();

	if (!t)
		return 0;
	if (!memchr(data, 0, size)) {
		char *buf = fuzz_str(data, size);

		if (isle_topo_merge_node_json_buf(t, buf, "node.json", err,
						  sizeof(err)) >= 0 &&
		    isle_topo_merge_node_json_buf(t, buf, "node.json", err,
						  sizeof(err)) >= 0 &&
		    isle_topo_finalize(t, err, sizeof(err)) == 0)
			fuzz_check_reload(t);
		free(buf);
		isle_topo_destroy(t);
		return 0;
	}
	while (p <= end && n < MAX_FILES) {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));
		size_t len = z ? (size_t)(z - p) : (size_t)(end - p);

		fds[n] = fuzz_memfile(p, len, paths[n], sizeof(paths[n]));
		if (fds[n] < 0)
			break;
		pp[n] = paths[n];
		n++;
		if (!z)
			break;
		p = z + 1;
	}
	if (isle_topo_merge_node_json_files(t, pp, n, err, sizeof(err)) == 0 &&
	    isle_topo_finalize(t, err, sizeof(err)) == 0)
		fuzz_check_reload(t);
	for (i = 0; i < n; i++)
		close(fds[i]);
	isle_topo_destroy(t);
	return 0;
}
