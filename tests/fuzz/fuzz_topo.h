/*
 * fuzz_topo.h - shared helpers of the fuzz targets that build a cluster
 * model (fuzz_ibnd.c, fuzz_node_json.c).
 */
#ifndef ISLE_FUZZ_TOPO_H
#define ISLE_FUZZ_TOPO_H

#include "fuzz.h"
#include "isle_topo.h"
#include "topo_priv.h"

/* The cluster file `islectl build` would save must load again. */
static inline void fuzz_check_reload(const isle_topo *t)
{
	char *json = isle_topo_to_json(t), err[512];
	isle_topo *u = NULL;

	/* Names the loader refuses are refused by isle_topo_save as well,
	 * with an error naming them: no file is written. */
	for (int i = 0; i < t->nnodes; i++)
		if (isle__bad_name_char(t->nodes[i].name))
			goto out;
	for (int i = 0; i < t->nswitches; i++)
		if (isle__bad_name_char(t->switches[i].name))
			goto out;
	for (int i = 0; i < t->nnodes; i++)
		for (int k = 0; k < t->nodes[i].nnics; k++)
			if (isle__bad_name_char(t->nodes[i].nics[k].name))
				goto out;
	if (!json)
		return;
	if (isle_topo_load_buf(json, "saved.json", &u, err, sizeof(err)) != 0) {
		fprintf(stderr, "saved model does not load: %s\n", err);
		abort();
	}
	isle_topo_destroy(u);
out:
	free(json);
}

#endif
