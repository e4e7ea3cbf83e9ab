/*
 * isle_jobinfo.c - a job's placement decision as per-job topology info.
 *
 * Where the release keeps topology info in the job's saved state (26.05),
 * the decision travels with the job: slurmctld packs it into its own job
 * state file and unpacks it on restart, so the decision and `islectl
 * explain` survive a controller crash without files of isle's own. The
 * format carries a version so that a later isle can still read it.
 */
#include <string.h>

#include "isle_jobinfo.h"

#include "isle_decision.h"
#include "isle_model.h"

#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#define ISLE_JOBINFO_VERSION 1
#define ISLE_JOBINFO_MAX_NODES 65536

struct isle__jobinfo *isle__jobinfo_create(job_record_t *job_ptr, uint64_t key,
					   const char *line,
					   const struct isle_place_result *res,
					   const char *islands,
					   const char *record)
{
	struct isle__jobinfo *ji = xmalloc(sizeof(*ji));
	const isle_topo *t = isle__ctx.topo;

	ji->key = key;
	ji->line = xstrdup(line);
	ji->islands = xstrdup(islands);
	ji->record = xstrdup(record);
	if (!res || !t)
		return ji;
	ji->tp = res->tp;
	ji->pp = res->pp;
	ji->dp = res->dp;
	ji->leafs = res->leafs;
	ji->tp_in_island = res->tp_in_island;
	ji->ntp_groups = res->ntp_groups;
	/* Nodes in the order ranks first reach them: the engine's order. */
	ji->nodes = xcalloc(MAX(res->nnodes, 1), sizeof(char *));
	ji->gpus = xcalloc(MAX(res->nnodes, 1), sizeof(uint64_t));
	for (int r = 0; r < res->nranks; r++) {
		int m = res->ranks[r].node;
		uint32_t k;

		if (m < 0 || m >= t->nnodes)
			continue;
		for (k = 0; k < ji->nnodes; k++)
			if (!xstrcmp(ji->nodes[k], t->nodes[m].name))
				break;
		if (k == ji->nnodes) {
			if (ji->nnodes >= (uint32_t)res->nnodes)
				continue;
			ji->nodes[ji->nnodes++] = xstrdup(t->nodes[m].name);
		}
		if (res->ranks[r].gpu >= 0 && res->ranks[r].gpu < 64)
			ji->gpus[k] |= 1ULL << res->ranks[r].gpu;
	}
	return ji;
}

void isle__jobinfo_free(void *arg)
{
	struct isle__jobinfo *ji = arg;

	if (!ji)
		return;
	for (uint32_t i = 0; i < ji->nnodes; i++)
		xfree(ji->nodes[i]);
	xfree(ji->nodes);
	xfree(ji->gpus);
	xfree(ji->line);
	xfree(ji->islands);
	xfree(ji->record);
	xfree(ji);
}

void isle__jobinfo_pack(void *arg, buf_t *buffer, uint16_t protocol_version)
{
	struct isle__jobinfo *ji = arg;

	pack16(ISLE_JOBINFO_VERSION, buffer);
	pack64(ji->key, buffer);
	packstr(ji->line, buffer);
	packstr(ji->islands, buffer);
	pack32(ji->tp, buffer);
	pack32(ji->pp, buffer);
	pack32(ji->dp, buffer);
	pack32(ji->leafs, buffer);
	pack32(ji->tp_in_island, buffer);
	pack32(ji->ntp_groups, buffer);
	pack32(ji->nnodes, buffer);
	for (uint32_t i = 0; i < ji->nnodes; i++) {
		packstr(ji->nodes[i], buffer);
		pack64(ji->gpus[i], buffer);
	}
	packstr(ji->record, buffer);
}

int isle__jobinfo_unpack(void **out, buf_t *buffer, uint16_t protocol_version)
{
	struct isle__jobinfo *ji = xmalloc(sizeof(*ji));
	uint16_t version;
	uint32_t n;

	*out = NULL;
	safe_unpack16(&version, buffer);
	if (version != ISLE_JOBINFO_VERSION) {
		error("isle: job topology info version %u, this isle reads %u",
		      version, ISLE_JOBINFO_VERSION);
		goto unpack_error;
	}
	safe_unpack64(&ji->key, buffer);
	safe_unpackstr(&ji->line, buffer);
	safe_unpackstr(&ji->islands, buffer);
	safe_unpack32(&ji->tp, buffer);
	safe_unpack32(&ji->pp, buffer);
	safe_unpack32(&ji->dp, buffer);
	safe_unpack32(&ji->leafs, buffer);
	safe_unpack32(&ji->tp_in_island, buffer);
	safe_unpack32(&ji->ntp_groups, buffer);
	safe_unpack32(&n, buffer);
	if (n > ISLE_JOBINFO_MAX_NODES)
		goto unpack_error;
	ji->nodes = xcalloc(MAX(n, 1), sizeof(char *));
	ji->gpus = xcalloc(MAX(n, 1), sizeof(uint64_t));
	ji->nnodes = n;
	for (uint32_t i = 0; i < ji->nnodes; i++) {
		safe_unpackstr(&ji->nodes[i], buffer);
		safe_unpack64(&ji->gpus[i], buffer);
	}
	safe_unpackstr(&ji->record, buffer);
	if (running_in_slurmctld() && ji->line && ji->record)
		isle__decision_restore(ji->key, ji->line, ji->record);
	*out = ji;
	return SLURM_SUCCESS;

unpack_error:
	isle__jobinfo_free(ji);
	return SLURM_ERROR;
}
