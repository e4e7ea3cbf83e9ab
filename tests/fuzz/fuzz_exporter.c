/*
 * fuzz_exporter.c - what isle-exporter reads from scontrol: `show node
 * --json` (with its GRES strings) and topology/isle's `show topology`
 * text. Whatever parses is rendered both ways; an OpenMetrics rendering
 * must end in "# EOF".
 *
 * Input: the first byte picks the reader (0 node JSON, 1 topology text,
 * 2 a GRES string), the rest is its input.
 */
#include "fuzz.h"

#include "isle_exporter.h"

static void render(const struct isle_exp_snapshot *s)
{
	size_t len;
	char *om = isle_exp_render(s, ISLE_EXP_OPENMETRICS, &len), *txt;

	if (!om || len < 6 || strcmp(om + len - 6, "# EOF\n"))
		abort();
	txt = isle_exp_render(s, ISLE_EXP_TEXT, &len);
	if (!txt)
		abort();
	free(om);
	free(txt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isle_exp_snapshot s = {.fragmentation = -1.0};
	struct isle_exp_nodes nodes;
	struct isle_exp_topo st;
	char err[512], *buf;
	int n;

	if (size < 1)
		return 0;
	buf = fuzz_str(data + 1, size - 1);
	switch (data[0] % 3) {
	case 0:
		if (!isle_exp_nodes_parse(buf, size - 1, "nodes.json", &nodes,
					  err, sizeof(err))) {
			s.nodes = &nodes;
			render(&s);
			isle_exp_nodes_free(&nodes);
		}
		break;
	case 1:
		if (!isle_exp_topo_parse(buf, &st, err, sizeof(err))) {
			s.slurm_topo = &st;
			render(&s);
			isle_exp_topo_free(&st);
		}
		break;
	default:
		if (!isle_exp_gres_gpus(buf, &n) && n < 0)
			abort();
		break;
	}
	free(buf);
	return 0;
}
