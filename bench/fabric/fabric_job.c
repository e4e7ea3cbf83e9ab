/*
 * fabric_job - the MPI job of the emulated-fabric benchmark
 * (bench/fabric/run.sh). One rank per GPU under `srun --mpi=pmix`.
 *
 * Ranks follow Slurm's block distribution: rank r is TP rank r % tp of
 * pipeline stage (r / tp) % pp of data-parallel replica r / (tp * pp), so a
 * TP group is tp consecutive ranks.
 *
 * train: each step sleeps the modelled compute time, allreduces activations
 * inside every TP group (a sub-communicator), sends activations forward and
 * gradients backward between pipeline stages for each micro-batch, and
 * allreduces the gradient shard across DP replicas. Message sizes come from
 * the model profile times --scale (the fabric's cables carry the same
 * factor, so transfer times are those of the full-size cluster).
 * infer: each step is one token: per layer a small allreduce inside the TP
 * group, the activation through the pipeline, the modelled compute.
 *
 * Every reduction is checked: rank r contributes (r % 7) + (i % 5) at
 * element i, so the sum over a group of g ranks is known exactly (small
 * integers are exact in fp32); --tol allows a relative error for
 * compressing allreduces. Rank 0 prints one line per step:
 *   "step K MS" (train, slowest rank) or "token K MS" (infer),
 * then "fabric_job: verify ok STEPS" or "fabric_job: verify FAIL ...".
 * Train steps also print, outside the step's own time,
 *   "phase K COMPUTE TP PP DP LATMIN LATMAX": each phase's wall time (ms,
 *   slowest rank; TP and DP include fill and check), and the time of one
 *   4-byte MPI_Allreduce over all ranks right after a barrier (us, fastest
 *   and slowest rank): a probe of the host's per-message latency under the
 *   load of the moment, which the flow model's calibration reads.
 * --poll-us N (N > 0) waits for every transfer by testing it every N us and
 * sleeping between tests, instead of in a blocking call: Open MPI's TCP
 * path spins while it waits, and tens of spinning ranks on a few cores
 * make the host, not the emulated cables, set the step time. At the
 * bench's scaled cable rates a socket buffer holds far more than N us of
 * traffic, so the cables stay busy between tests.
 * Exit 0 only when every check passed.
 */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct profile {
	const char *name;
	double params; /* parameters */
	double hidden; /* hidden size */
	int layers;    /* transformer layers */
	double tokens; /* tokens per replica per step (train) */
	double flops;  /* sustained FLOP/s per GPU */
	double mem_bw; /* bytes/s per GPU (inference: weights read per token) */
};

static const struct profile profiles[] = {
    {"7b", 7e9, 4096, 32, 4096, 4e14, 3.3e12},
    {"70b", 70e9, 8192, 80, 4096, 4e14, 3.3e12},
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1e3);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static long poll_us; /* --poll-us; 0: blocking MPI calls */

static void waitall(int n, MPI_Request *r)
{
	int done = 0;

	if (!poll_us) {
		MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
		return;
	}
	for (;;) {
		MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
		if (done)
			return;
		sleep_ms(poll_us / 1e3);
	}
}

static void allreduce(void *buf, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
	MPI_Request r;

	if (!poll_us) {
		MPI_Allreduce(MPI_IN_PLACE, buf, n, t, op, c);
		return;
	}
	MPI_Iallreduce(MPI_IN_PLACE, buf, n, t, op, c, &r);
	waitall(1, &r);
}

static void recv_from(float *b, int n, int from, int tag)
{
	MPI_Request r;

	MPI_Irecv(b, n, MPI_FLOAT, from, tag, MPI_COMM_WORLD, &r);
	waitall(1, &r);
}

static void send_to(float *b, int n, int to, int tag)
{
	MPI_Request r;

	MPI_Isend(b, n, MPI_FLOAT, to, tag, MPI_COMM_WORLD, &r);
	waitall(1, &r);
}

static void barrier(MPI_Comm c)
{
	MPI_Request r;

	if (!poll_us) {
		MPI_Barrier(c);
		return;
	}
	MPI_Ibarrier(c, &r);
	waitall(1, &r);
}

static void fill(float *b, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (float)(rank % 7 + (int)(i % 5));
}

/* Sum over the ranks listed in world[] of fill(): checks every element. */
static int check(const float *b, size_t n, const int *world, int g, double tol,
		 double *worst)
{
	double base = 0;

	for (int k = 0; k < g; k++)
		base += world[k] % 7;
	for (size_t i = 0; i < n; i++) {
		double want = base + (double)g * (double)(i % 5);
		double err = fabs((double)b[i] - want);
		double rel = err / (want > 1 ? want : 1);

		if (rel > *worst)
			*worst = rel;
		if (rel > tol)
			return -1;
	}
	return 0;
}

static size_t floats_of(double bytes)
{
	size_t n = (size_t)(bytes / sizeof(float));

	return n < 16 ? 16 : n;
}

static void usage(const char *p)
{
	fprintf(stderr,
		"usage: %s --mode train|infer --tp T [--pp P] [--model 7b|70b] "
		"[--steps N] [--scale S] [--micro M] [--tol REL] "
		"[--poll-us N]\n",
		p);
}

int main(int argc, char **argv)
{
	const struct profile *pr = &profiles[0];
	const char *mode = "train";
	int tp = 1, pp = 1, steps = 4, micro = 4;
	double scale = 1e-3, tol = 0;
	int rank, size, fails = 0;
	double worst = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			usage(argv[0]);
			return 2;
		}
		if (!strcmp(a, "--mode"))
			mode = v;
		else if (!strcmp(a, "--tp"))
			tp = atoi(v);
		else if (!strcmp(a, "--pp"))
			pp = atoi(v);
		else if (!strcmp(a, "--steps"))
			steps = atoi(v);
		else if (!strcmp(a, "--micro"))
			micro = atoi(v);
		else if (!strcmp(a, "--scale"))
			scale = atof(v);
		else if (!strcmp(a, "--tol"))
			tol = atof(v);
		else if (!strcmp(a, "--poll-us"))
			poll_us = atol(v);
		else if (!strcmp(a, "--model")) {
			pr = NULL;
			for (size_t k = 0;
			     k < sizeof(profiles) / sizeof(profiles[0]); k++)
				if (!strcmp(v, profiles[k].name))
					pr = &profiles[k];
			if (!pr) {
				fprintf(stderr,
					"fabric_job: unknown model %s\n", v);
				return 2;
			}
		} else {
			usage(argv[0]);
			return 2;
		}
		i++;
	}
	if (tp < 1 || pp < 1 || steps < 1 || micro < 1 || scale <= 0 ||
	    poll_us < 0 || (strcmp(mode, "train") && strcmp(mode, "infer"))) {
		usage(argv[0]);
		return 2;
	}

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size % (tp * pp)) {
		if (!rank)
			fprintf(stderr,
				"fabric_job: %d ranks is not a multiple of "
				"tp %d x pp %d\n",
				size, tp, pp);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int dp = size / (tp * pp);
	int tpr = rank % tp, stage = (rank / tp) % pp, rep = rank / (tp * pp);
	MPI_Comm tpc, dpc;
	/* TP group: same stage and replica; DP group: same TP rank and stage.
	 */
	MPI_Comm_split(MPI_COMM_WORLD, rep * pp + stage, tpr, &tpc);
	MPI_Comm_split(MPI_COMM_WORLD, stage * tp + tpr, rep, &dpc);
	int tp_world[tp], dp_world[dp];
	for (int k = 0; k < tp; k++)
		tp_world[k] = rep * tp * pp + stage * tp + k;
	for (int k = 0; k < dp; k++)
		dp_world[k] = k * tp * pp + stage * tp + tpr;

	int train = !strcmp(mode, "train");
	double shard = pr->params / (tp * pp); /* parameters per rank */
	size_t n_tp, n_pp, n_dp;
	double compute_ms;
	if (train) {
		/* Activations of every layer of this stage, forward + back. */
		n_tp = floats_of(2.0 * pr->layers / pp * pr->tokens *
				 pr->hidden * 2 * scale);
		n_pp = floats_of(pr->tokens / micro * pr->hidden * 2 * scale);
		n_dp = floats_of(shard * 2 * scale); /* bf16 gradients */
		compute_ms = 6.0 * shard * pr->tokens / pr->flops * 1e3;
	} else {
		n_tp = floats_of(pr->hidden * 2 * scale);
		n_pp = n_tp;
		n_dp = 0;
		compute_ms = shard * 2 / pr->mem_bw * 1e3;
	}
	size_t nmax = n_tp > n_dp ? n_tp : n_dp;
	if (n_pp > nmax)
		nmax = n_pp;
	float *buf = malloc(nmax * sizeof(float));
	float *pbuf = malloc(n_pp * sizeof(float));
	if (!buf || !pbuf)
		MPI_Abort(MPI_COMM_WORLD, 3);
	int layers_here = pr->layers / pp > 0 ? pr->layers / pp : 1;

	/* After the barrier every rank is past MPI_Init (and its preconnect):
	 * the runner's launch watchdog waits for this line. */
	barrier(MPI_COMM_WORLD);
	if (!rank) {
		printf(
		    "fabric_job: %s %s ranks %d tp %d pp %d dp %d scale %g "
		    "bytes tp %zu pp %zu dp %zu compute %.1f ms poll %ld us\n",
		    mode, pr->name, size, tp, pp, dp, scale,
		    n_tp * sizeof(float), n_pp * sizeof(float),
		    n_dp * sizeof(float), compute_ms, poll_us);
		fflush(stdout);
	}
	for (int s = 0; s < steps; s++) {
		double t0 = now_ms(), dt, slow, ph[6] = {0}, tph = t0;

		if (train) {
			sleep_ms(compute_ms);
			ph[0] = now_ms() - tph;
			tph = now_ms();
			if (tp > 1) {
				fill(buf, n_tp, rank);
				allreduce(buf, (int)n_tp, MPI_FLOAT, MPI_SUM,
					  tpc);
				fails += check(buf, n_tp, tp_world, tp, tol,
					       &worst) != 0;
			}
			ph[1] = now_ms() - tph;
			tph = now_ms();
			/* Micro-batches: forward down the pipeline, the
			 * gradients back up. */
			for (int m = 0; m < micro && pp > 1; m++) {
				for (int dir = 0; dir < 2; dir++) {
					int from =
					    dir == 0 ? stage - 1 : stage + 1;
					int to =
					    dir == 0 ? stage + 1 : stage - 1;
					int base = rep * tp * pp + tpr;

					if (from >= 0 && from < pp) {
						recv_from(pbuf, (int)n_pp,
							  base + from * tp, 7);
						fails +=
						    pbuf[0] !=
						    (float)(base + from * tp);
					}
					if (to >= 0 && to < pp) {
						pbuf[0] = (float)rank;
						send_to(pbuf, (int)n_pp,
							base + to * tp, 7);
					}
				}
			}
			ph[2] = now_ms() - tph;
			tph = now_ms();
			if (dp > 1) {
				fill(buf, n_dp, rank);
				allreduce(buf, (int)n_dp, MPI_FLOAT, MPI_SUM,
					  dpc);
				fails += check(buf, n_dp, dp_world, dp, tol,
					       &worst) != 0;
			}
			ph[3] = now_ms() - tph;
		} else {
			if (stage > 0) {
				recv_from(pbuf, (int)n_pp, rank - tp, 8);
				fails += pbuf[0] != (float)(rank - tp);
			}
			for (int l = 0; l < layers_here; l++) {
				if (tp > 1) {
					fill(buf, n_tp, rank);
					allreduce(buf, (int)n_tp, MPI_FLOAT,
						  MPI_SUM, tpc);
					fails += check(buf, n_tp, tp_world, tp,
						       tol, &worst) != 0;
				}
			}
			sleep_ms(compute_ms);
			if (stage < pp - 1) {
				pbuf[0] = (float)rank;
				send_to(pbuf, (int)n_pp, rank + tp, 8);
			}
		}
		dt = now_ms() - t0;
		slow = dt;
		allreduce(&slow, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (!rank) {
			printf("%s %d %.3f\n", train ? "step" : "token", s,
			       slow);
			fflush(stdout);
		}
		if (train) {
			double all_ph[6];
			int one = 1, sum;

			/* The probe waits as the steps do: with --poll-us
			 * its hops include the wake-ups the steps' hops
			 * have. */
			barrier(MPI_COMM_WORLD);
			tph = now_ms();
			sum = one;
			allreduce(&sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
			ph[5] = (now_ms() - tph) * 1e3;
			fails += sum != size;
			ph[4] = -ph[5]; /* max of -x: the fastest rank */
			MPI_Allreduce(ph, all_ph, 6, MPI_DOUBLE, MPI_MAX,
				      MPI_COMM_WORLD);
			if (!rank) {
				printf("phase %d %.3f %.3f %.3f %.3f %.1f "
				       "%.1f\n",
				       s, all_ph[0], all_ph[1], all_ph[2],
				       all_ph[3], -all_ph[4], all_ph[5]);
				fflush(stdout);
			}
		}
	}
	int all = 0;
	double wmax = 0;
	MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&worst, &wmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (!rank) {
		if (all)
			printf("fabric_job: verify FAIL %d checks (worst rel "
			       "%.3g, tol %g)\n",
			       all, wmax, tol);
		else
			printf("fabric_job: verify ok %d (worst rel %.3g)\n",
			       steps, wmax);
		fflush(stdout);
	}
	free(buf);
	free(pbuf);
	MPI_Comm_free(&tpc);
	MPI_Comm_free(&dpc);
	MPI_Finalize();
	return all ? 1 : 0;
}
