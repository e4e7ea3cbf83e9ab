/*
 * fuzz_node_json.c - node JSON files (isle-agent discover output) merged
 * into a model, the way `islectl build` merges them: the input is merged
 * twice (into an empty model, then again over itself, which takes the
 * fill-in path of a node already known) and the model finalized.
 */
#include "fuzz.h"
#include "isle_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_str(data, size), err[512];
	isle_topo *t = isle_topo_create();

	if (t &&
	    isle_topo_merge_node_json_buf(t, buf, "node.json", err,
					  sizeof(err)) >= 0 &&
	    isle_topo_merge_node_json_buf(t, buf, "node.json", err,
					  sizeof(err)) >= 0 &&
	    isle_topo_finalize(t, err, sizeof(err)) == 0) {
		char *json = isle_topo_to_json(t);

		free(json);
	}
	isle_topo_destroy(t);
	free(buf);
	return 0;
}
