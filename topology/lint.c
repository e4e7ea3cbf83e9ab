/*
 * lint.c - findings about a loadable but questionable model (islectl
 * validate prints them as warnings).
 */
#include <stdarg.h>
#include <stdio.h>

#include "topo_priv.h"

struct lint {
	isle_topo_warn_fn fn;
	void *arg;
	int count;
};

static void __attribute__((format(printf, 2, 3)))
finding(struct lint *l, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->count++;
	if (l->fn)
		l->fn(l->arg, msg);
}

int isle_topo_lint(const isle_topo *t, isle_topo_warn_fn fn, void *arg)
{
	struct lint l = {fn, arg, 0};

	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *n = &t->nodes[i];
		int gpus_without_nic = 0;

		if (!n->ngpus && n->nnics)
			finding(&l,
				"$.nodes[%d] (%s): in the fabric but no "
				"GPUs (no node JSON merged?)",
				i, n->name);
		else if (!n->ngpus)
			finding(&l, "$.nodes[%d] (%s): no GPUs", i, n->name);
		if (t->nswitches && n->leaf < 0)
			finding(&l,
				"$.nodes[%d] (%s): not cabled to any "
				"switch",
				i, n->name);
		for (int k = 0; k < n->nnics; k++)
			if (n->nics[k].sw < 0 && t->nswitches)
				finding(&l,
					"$.nodes[%d].nics[%d] (%s:%s): "
					"not cabled to a switch",
					i, k, n->name, n->nics[k].name);
		for (int g = 0; g < n->ngpus; g++)
			gpus_without_nic += n->gpus[g].nic < 0;
		if (n->nnics > 1 && gpus_without_nic)
			finding(&l,
				"$.nodes[%d] (%s): %d GPUs without a "
				"nearest NIC (rail alignment unknown)",
				i, n->name, gpus_without_nic);
	}
	for (int s = 0; s < t->nswitches; s++) {
		const struct isle_switch *sw = &t->switches[s];

		if (!sw->nnodes && !sw->ndown)
			finding(&l,
				"$.switches[%d] (%s): no nodes and no "
				"child switches",
				s, sw->name);
		else if (sw->level == ISLE_SW_LEAF && !sw->nnodes)
			finding(&l, "$.switches[%d] (%s): leaf without nodes",
				s, sw->name);
		if (sw->nnodes && sw->level != ISLE_SW_LEAF)
			finding(&l,
				"$.switches[%d] (%s): %s switch with "
				"nodes cabled directly",
				s, sw->name, isle_sw_level_name(sw->level));
	}
	for (int r = 0; r < t->nracks; r++)
		if (!t->racks[r].nnodes)
			finding(&l, "$.racks[%d] (%s): empty rack", r,
				t->racks[r].name);
	return l.count;
}
