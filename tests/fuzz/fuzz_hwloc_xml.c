/*
 * fuzz_hwloc_xml.c - `isle-agent discover --hwloc-xml`: an hwloc XML export
 * read by hwloc, then isle's walk of it (GPUs, NICs, NVLink and XGMI
 * distance matrices, nearest NICs, islands) and the node JSON it writes,
 * which is read back by the model's importer.
 */
#include "fuzz.h"
#include "isle_agent.h"
#include "isle_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	isle_agent_node *n;
	char path[64], err[512], *json;
	int fd;

	/* hwloc's parsers are not what is under test: keep inputs small. */
	if (size > 256 * 1024)
		return 0;
	fd = fuzz_memfile(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	n = isle_agent_node_create();
	if (!n)
		goto out;
	if (isle_agent_discover_hwloc(n, path, err, sizeof(err)) != 0)
		goto out;
	if (!n->hostname)
		n->hostname = strdup("fuzz");
	json = isle_agent_node_to_json(n);
	if (json) {
		isle_topo *t = isle_topo_create();

		if (t && isle_topo_merge_node_json_buf(t, json, "node.json",
						       err, sizeof(err)) >= 0)
			isle_topo_finalize(t, err, sizeof(err));
		isle_topo_destroy(t);
		free(json);
	}
out:
	isle_agent_node_destroy(n);
	close(fd);
	return 0;
}
