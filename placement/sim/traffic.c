/*
 * traffic.c - what a training job sends per step, from its size and its
 * TP/PP/DP shape.
 *
 * The class comes from the job size (a small job trains a small model).
 * Per step a replica runs 8 micro-batches per pipeline stage of one
 * 4096-token sequence each (keeps the pipeline bubble small at any PP):
 *   TP: 4 allreduces per layer and micro-batch (2 forward, 2 backward) of
 *       the activations, seq x hidden x 2 bytes, over the stage's layers;
 *   PP: per micro-batch one send forward and one backward of the
 *       activations, split over the TP ranks;
 *   DP: the GPU's share of the gradients, params / (tp x pp) x 2 bytes;
 *   compute: 6 x params / (tp x pp) flops per token at 400 TFLOP/s.
 */
#include <errno.h>
#include <stdlib.h>

#include "islesim.h"

#define SEQ 4096.0
#define MB_PER_STAGE 8.0
#define FLOPS 400e12

const struct sim_model_class sim_model_classes[] = {
    {"1.3B", 2, 1.3e9, 24, 2048}, {"7B", 8, 6.7e9, 32, 4096},
    {"13B", 32, 13e9, 40, 5120},  {"34B", 128, 34e9, 48, 8192},
    {"70B", 512, 70e9, 80, 8192}, {"175B", 1 << 30, 175e9, 96, 12288},
    {NULL, 0, 0, 0, 0},
};

int sim_traffic_of(int gpus, int tp, int pp, struct sim_traffic *out)
{
	const struct sim_model_class *m = sim_model_classes;
	double mb, act;

	if (gpus < 1 || tp < 1 || pp < 1 || gpus % (tp * pp))
		return -EINVAL;
	while (m[1].name && gpus > m->max_gpus)
		m++;
	mb = MB_PER_STAGE * pp;
	act = SEQ * m->hidden * SIM_TRAFFIC_BYTES;
	out->model = m;
	out->compute_s = 6.0 * m->params / (tp * pp) * mb * SEQ / FLOPS;
	out->tp_msg = tp > 1 ? act : 0;
	out->tp_calls = tp > 1 ? 4.0 * m->layers / pp * mb : 0;
	out->pp_msg = pp > 1 ? act / tp : 0;
	out->pp_calls = pp > 1 ? 2.0 * mb : 0;
	out->dp_bytes = gpus / (tp * pp) > 1
			    ? m->params / (tp * pp) * SIM_TRAFFIC_BYTES
			    : 0;
	return 0;
}

/* Groups members by node, nodes in the order of their first rank and
 * a node's GPUs ascending (stable, in place; n is small). */
static void group_by_node(const struct isle_place_rank *ranks, int *m, int n)
{
	int done = 0;

	while (done < n) {
		int node = ranks[m[done]].node, i, j;

		for (i = done; i < n; i++) {
			if (ranks[m[i]].node != node)
				continue;
			/* insert at the end of this node's run, GPU order */
			int v = m[i];

			for (j = i;
			     j > done && (ranks[m[j - 1]].node != node ||
					  ranks[m[j - 1]].gpu > ranks[v].gpu);
			     j--)
				m[j] = m[j - 1];
			m[j] = v;
			done++;
		}
	}
}

/*
 * Ring allreduce over members, as NCCL builds it: the ring visits the
 * GPUs of one node after another (in GPU order), and the hop to the next
 * node runs as one channel per GPU pair, the c-th GPU of a node to the
 * c-th of the next, so a node's NICs share the inter-node bytes. Each
 * hop carries 2(n-1)/n of the buffer.
 */
int sim_ring_xfers(struct sim_xfer *x, int k,
		   const struct isle_place_rank *ranks, int *members, int n,
		   int phase, double bytes)
{
	double b = bytes * 2.0 * (n - 1) / n;
	int i, start, next, nnodes = 0;

	if (n < 2)
		return k;
	group_by_node(ranks, members, n);
	for (i = 0; i < n; i++)
		nnodes +=
		    !i || ranks[members[i]].node != ranks[members[i - 1]].node;
	for (start = 0; start < n; start = next) {
		const struct isle_place_rank *a = &ranks[members[start]];
		int m, mn, nstart, c;

		for (next = start + 1;
		     next < n && ranks[members[next]].node == a->node; next++)
			;
		m = next - start;
		/* inside the node: a chain, closed when the ring has no
		 * other node */
		for (i = start; i + 1 < next || (nnodes == 1 && i < next);
		     i++) {
			const struct isle_place_rank *p = &ranks[members[i]];
			const struct isle_place_rank *q =
			    &ranks[members[i + 1 < next ? i + 1 : start]];

			x[k++] = (struct sim_xfer){p->node, p->gpu, q->node,
						   q->gpu,  phase,  b};
		}
		if (nnodes == 1)
			break;
		nstart = next < n ? next : 0;
		for (mn = 1;
		     nstart + mn < n && ranks[members[nstart + mn]].node ==
					    ranks[members[nstart]].node;
		     mn++)
			;
		if (mn > m)
			mn = m;
		for (c = 0; c < mn; c++) {
			const struct isle_place_rank *p =
			    &ranks[members[start + c]];
			const struct isle_place_rank *q =
			    &ranks[members[nstart + c]];

			x[k++] = (struct sim_xfer){p->node, p->gpu, q->node,
						   q->gpu,  phase,  b / mn};
		}
	}
	return k;
}

int sim_job_xfers(const struct sim_traffic *tr,
		  const struct isle_place_rank *ranks, int nranks, int tp,
		  int pp, struct sim_xfer **out, int *nout)
{
	int dp = nranks / (tp * pp), k = 0, r, i;
	int *mem = malloc(((size_t)nranks + 1) * sizeof(int));
	struct sim_xfer *x = malloc(((size_t)nranks * 6 + 1) * sizeof(*x));

	*out = NULL;
	*nout = 0;
	if (!mem || !x) {
		free(mem);
		free(x);
		return -ENOMEM;
	}
	/* TP groups: tp consecutive ranks */
	for (r = 0; tr->tp_calls > 0 && r + tp <= nranks; r += tp) {
		for (i = 0; i < tp; i++)
			mem[i] = r + i;
		k = sim_ring_xfers(x, k, ranks, mem, tp, SIM_PH_TP,
				   tr->tp_msg * tr->tp_calls);
	}
	/* stage s -> s + 1 of each replica and TP index, both ways */
	for (r = 0; tr->pp_calls > 0 && r < nranks; r++) {
		int stage = (r / tp) % pp;
		const struct isle_place_rank *a = &ranks[r], *b;

		if (stage + 1 >= pp)
			continue;
		b = &ranks[r + tp];
		x[k++] = (struct sim_xfer){
		    a->node, a->gpu,	b->node,
		    b->gpu,  SIM_PH_PP, tr->pp_msg * tr->pp_calls / 2};
		x[k++] = (struct sim_xfer){
		    b->node, b->gpu,	a->node,
		    a->gpu,  SIM_PH_PP, tr->pp_msg * tr->pp_calls / 2};
	}
	/* DP: the ranks of one TP index and stage across the replicas */
	for (r = 0; tr->dp_bytes > 0 && r < tp * pp; r++) {
		for (i = 0; i < dp; i++)
			mem[i] = r + i * tp * pp;
		k = sim_ring_xfers(x, k, ranks, mem, dp, SIM_PH_DP,
				   tr->dp_bytes);
	}
	free(mem);
	*out = x;
	*nout = k;
	return 0;
}
