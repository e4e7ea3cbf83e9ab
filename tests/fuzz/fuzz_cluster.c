/*
 * fuzz_cluster.c - the cluster-file loader with its validation, then what
 * the placement side does with a loaded model: save it back, emit every
 * configuration format, and run the placement engine (the switch walks and
 * node ranking it shares with the Slurm plugin's records) on a few
 * requests. The plugin's own record building needs Slurm's node table, so
 * the engine on the loaded model stands in for it here.
 *
 * Input: the cluster file, then optionally a NUL and 6 bytes per extra
 * request (GPUs, nodes, GPUs per node, log2 TP, PP, mode and span).
 */
#include <errno.h>

#include "fuzz.h"
#include "isle_place.h"
#include "isle_topo.h"

static void warn_sink(void *arg, const char *msg)
{
	*(size_t *)arg += strlen(msg);
}

struct req_spec {
	int gpus, nodes, gpn, tp, pp;
	isle_place_mode mode;
	isle_tier span;
};

static void place_some(const isle_topo *t, const struct req_spec *extra,
		       int nextra)
{
	static const struct req_spec reqs[] = {
	    {1, 0, 0, 1, 1, ISLE_PLACE_REQUIRED, ISLE_TIER_CORE},
	    {8, 0, 0, 8, 1, ISLE_PLACE_REQUIRED, ISLE_TIER_CORE},
	    {16, 0, 0, 4, 2, ISLE_PLACE_PREFERRED, ISLE_TIER_LEAF},
	    {0, 2, 4, 2, 2, ISLE_PLACE_REQUIRED, ISLE_TIER_SPINE},
	    {64, 0, 0, 8, 4, ISLE_PLACE_PREFERRED, ISLE_TIER_CORE},
	};
	struct isle_place_opts opts;
	struct isle_place_result res;
	isle_place_ctx *c;
	uint64_t *free_gpus;
	size_t i;
	int n;

	isle_place_opts_default(&opts);
	opts.explain_max = 8;
	c = isle_place_create(t, &opts);
	if (!c)
		return;
	free_gpus = calloc((size_t)t->nnodes + 1, sizeof(*free_gpus));
	if (!free_gpus)
		goto out;
	for (n = 0; n < t->nnodes; n++)
		free_gpus[n] = t->nodes[n].ngpus >= 64
				   ? ~0ull
				   : (1ull << t->nodes[n].ngpus) - 1;
	isle_place_result_init(&res);
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]) + (size_t)nextra; i++) {
		const struct req_spec *q =
		    i < sizeof(reqs) / sizeof(reqs[0])
			? &reqs[i]
			: &extra[i - sizeof(reqs) / sizeof(reqs[0])];
		struct isle_place_req r;
		char reason[256];

		isle_place_req_init(&r);
		r.gpus = q->gpus;
		r.nodes = q->nodes;
		r.gpus_per_node = q->gpn;
		r.tp = q->tp;
		r.pp = q->pp;
		r.mode = q->mode;
		r.max_span = q->span;
		if (isle_place_check(c, &r, reason, sizeof(reason)) != 0)
			continue;
		/* Placed jobs stay: later requests see a fragmented cluster. */
		if (isle_place(c, free_gpus, NULL, &r, &res) == 0 &&
		    isle_place_commit(&res, free_gpus) != 0)
			abort();
		isle_place_candidates(c, &n);
	}
	isle_place_fragmentation(c, free_gpus);
	isle_place_result_fini(&res);
out:
	free(free_gpus);
	isle_place_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_str(data, size), err[512];
	const uint8_t *z = memchr(data, 0, size);
	struct req_spec extra[8];
	int nextra = 0;
	isle_topo *t = NULL;
	size_t nwarn = 0;
	FILE *null;
	char *json;
	int n;

	isle_topo_set_warn(warn_sink, &nwarn);
	for (z = z ? z + 1 : NULL; z && z + 6 <= data + size && nextra < 8;
	     z += 6) {
		struct req_spec *q = &extra[nextra++];

		q->gpus = z[0];
		q->nodes = z[1] % 9;
		q->gpn = z[2] % 9;
		q->tp = 1 << (z[3] % 5);
		q->pp = 1 + z[4] % 4;
		q->mode = z[5] & 1 ? ISLE_PLACE_PREFERRED : ISLE_PLACE_REQUIRED;
		q->span = (isle_tier)((z[5] >> 1) % ISLE_TIER_COUNT);
	}
	if (isle_topo_load_buf(buf, "fuzz.json", &t, err, sizeof(err)) != 0)
		goto out;
	json = isle_topo_to_json(t);
	free(json);
	isle_topo_lint(t, warn_sink, &nwarn);
	null = fopen("/dev/null", "w");
	if (null) {
		isle_emit_slurm_tree(t, null);
		isle_emit_slurm_block(t, null);
		isle_emit_gres(t, -1, NULL, NULL, NULL, null);
		for (n = 0; n < t->nnodes && n < 4; n++)
			isle_emit_nccl_xml(t, n, null);
		isle_emit_dot(t, NULL, NULL, 0, null);
		fclose(null);
	}
	if (t->nnodes <= 256)
		place_some(t, extra, nextra);
out:
	isle_topo_destroy(t);
	isle_topo_set_warn(NULL, NULL);
	free(buf);
	return 0;
}
