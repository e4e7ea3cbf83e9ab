/*
 * bench_paired - every allreduce variant inside one MPI job, interleaved:
 * the same processes, the variants taking turns within each iteration (the
 * order rotating from one iteration to the next), so that a loaded host or
 * a noisy moment hits them all alike. Plain MPI, built for Open MPI and for
 * MPICH (bench_paired_mpich); the shim comes in by LD_PRELOAD.
 *
 *   bench_paired --mpi openmpi|mpich --variants V,V,... [--min-bytes B]
 *                [--max-bytes B] [--sizes B,B,...] [--iters N] [--warmup W]
 *                [--big-bytes B --big-iters N] [--batch-bytes B]
 *
 * Sizes: --min-bytes to --max-bytes in steps of 4, or the --sizes list
 * (ascending, the largest at most --max-bytes).
 *
 * Variants:
 *   mpi_NAME    the library itself, called as PMPI_Allreduce (never
 *               through the shim). Open MPI (coll_tuned, run with
 *               --mca coll_tuned_use_dynamic_rules 1): one duplicated
 *               communicator per baseline, created after writing
 *               coll_tuned_allreduce_algorithm (and _segmentsize) through
 *               MPI_T, which coll_tuned copies at communicator creation:
 *               mpi_default (0: its fixed rules), mpi_ring (4),
 *               mpi_rdoubling (3), mpi_rabenseifner (6),
 *               mpi_segring:BYTES (5 with that segment size).
 *               MPICH: MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM written through
 *               MPI_T before each call (MPICH reads it per call):
 *               mpi_auto (0), mpi_nb (1), mpi_smp (2), mpi_rdoubling (3),
 *               mpi_rsag (4, reduce-scatter + allgather).
 *               mpi_han (Open MPI): the job's own default communicator;
 *               the script runs it in a job started with han selected
 *               (its priority cannot be changed at run time).
 *   isle_CODEC  MPI_Allreduce on a communicator the shim set up while
 *               ISLE_COMM_CODEC was CODEC (none, bf16, fp16, int8,
 *               topk:RATIO): the shim decides per call, as in a job.
 *   isle_CODEC@ALGO  the same with ISLE_COMM_ALGO=ALGO (e.g.
 *               isle_none@leader): one of the shim's algorithms, forced.
 *
 * Each timed iteration of a variant makes calls_per_iter calls back to
 * back (--batch-bytes / bytes of them, 1 to 256; default 64 KiB), each
 * into its own part of the output buffer: at 8 B one call is about a
 * microsecond, within the barrier's skew and the clock's reach.
 *
 * Output: one JSON line per variant and size: mpi, algo, bytes,
 * time_us_median/p10/p90 (the slowest rank's time per call, over its
 * iteration's calls), iters, calls_per_iter,
 * mismatches (elements of any call that differ from the exact sum; must be
 * 0 for mpi_* and isle_none), rel_error (lossy codecs, first call),
 * link_bytes (bytes each node's uplink ISLE_BENCH_LINK_DEV sent for one
 * call, summed over the nodes: the emulated network; else null).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_util.h"
#include "mpi_algo.h"

#define MAXV 16

struct variant {
	char name[64];
	MPI_Comm comm;
	int shim;		   /* through MPI_Allreduce (the shim) */
	struct isle__lib_algo lib; /* mpi_*: the library's algorithm */
	int lossy;
	double *t;
	long mismatches;
	double rel_error;
	double link_bytes;
};

static int rank, size;

static void die(const char *msg, const char *arg)
{
	if (rank == 0)
		fprintf(stderr, "bench_paired: %s%s\n", msg, arg ? arg : "");
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

static size_t parse_size(const char *s)
{
	size_t v;

	if (isle__bench_parse_size(s, &v))
		die("bad byte count ", s);
	return v;
}

/* This node's uplink counter (ISLE_BENCH_LINK_DEV, set where each node
 * has its own emulated uplink), or -1 without one. */
static double eth0_tx(void)
{
	const char *dev = getenv("ISLE_BENCH_LINK_DEV");
	char path[256];
	double v = -1;
	FILE *f;

	if (!dev || !*dev)
		return -1;
	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/tx_bytes",
		 dev);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%lf", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void setup(struct variant *v, const char *mpi, int iters)
{
	const char *n = v->name;

	v->comm = MPI_COMM_NULL;
	v->shim = v->lossy = 0;
	v->mismatches = 0;
	v->t = calloc((size_t)iters, sizeof(double));
	if (!v->t)
		die("out of memory", NULL);
	if (!strncmp(n, "isle_", 5)) {
		char codec[64], *algo;

		/* The shim reads its settings when a communicator's first
		 * allreduce sets it up: one communicator per codec. */
		snprintf(codec, sizeof(codec), "%s", n + 5);
		if ((algo = strchr(codec, '@'))) {
			*algo++ = '\0';
			setenv("ISLE_COMM_ALGO", algo, 1);
		}
		setenv("ISLE_COMM_CODEC", codec, 1);
		MPI_Comm_dup(MPI_COMM_WORLD, &v->comm);
		{
			float one = 1, sum;

			MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM,
				      v->comm);
		}
		unsetenv("ISLE_COMM_CODEC");
		unsetenv("ISLE_COMM_ALGO");
		v->shim = 1;
		v->lossy = strcmp(codec, "none") != 0;
		return;
	}
	if (strncmp(n, "mpi_", 4))
		die("unknown variant ", n);
	/* han: the job's own default (the script selects it); the others
	 * through mpi_algo.c, as the shim's probe picks them. */
	if (!strcmp(mpi, "openmpi") && !strcmp(n, "mpi_han")) {
		MPI_Comm_dup(MPI_COMM_WORLD, &v->comm);
		return;
	}
	if (isle__lib_parse(n + 4, &v->lib))
		die(!strcmp(mpi, "mpich") ? "unknown MPICH variant "
					  : "unknown Open MPI variant ",
		    n);
	if (v->lib.alg && !isle__lib_usable())
		die("the library does not take run-time algorithm choices "
		    "(Open MPI: --mca coll_tuned_use_dynamic_rules 1): ",
		    n);
	if (isle__lib_dup(MPI_COMM_WORLD, &v->lib, &v->comm))
		die("cannot set up ", n);
}

/* reps calls of variant v back to back, each into its own slice of out;
 * the slowest rank's time per call. Checks every element this rank owns
 * (i = rank mod size) of every call against the exact sum. */
static double call(struct variant *v, const char *mpi, const float *in,
		   float *out, const float *ref, size_t n, int reps, int first)
{
	double t, tmax, acc[2] = {0, 0};

	PMPI_Barrier(MPI_COMM_WORLD);
	t = isle__bench_now_s();
	for (int r = 0; r < reps; r++)
		if ((v->shim ? MPI_Allreduce(in, out + (size_t)r * n, (int)n,
					     MPI_FLOAT, MPI_SUM, v->comm)
			     : isle__lib_allreduce(
				   &v->lib, in, out + (size_t)r * n, (int)n,
				   MPI_FLOAT, MPI_SUM, v->comm)) != MPI_SUCCESS)
			die("allreduce failed: ", v->name);
	t = (isle__bench_now_s() - t) / reps;
	for (int r = 0; r < reps; r++) {
		double a[2] = {0, 0};

		v->mismatches += isle__bench_check(out + (size_t)r * n, ref, n,
						   rank, size, r ? a : acc);
	}
	if (first) {
		double sum[2];

		PMPI_Allreduce(acc, sum, 2, MPI_DOUBLE, MPI_SUM,
			       MPI_COMM_WORLD);
		v->rel_error = sum[1] > 0 ? sqrt(sum[0] / sum[1]) : 0;
	}
	PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	(void)mpi;
	return tmax;
}

int main(int argc, char **argv)
{
	const char *mpi = "openmpi", *list = "mpi_default,isle_none",
		   *sizes = NULL;
	size_t sz[64];
	int nsz = 0;
	size_t min_b = 8, max_b = 256u << 20, big_b = SIZE_MAX,
	       batch_b = 64 << 10;
	int iters = 30, warmup = 3, big_iters = 30, provided, nv = 0, local;
	struct variant v[MAXV] = {0};
	float *in, *out, *ref;
	size_t maxn;
	char *names, *save = NULL;
	MPI_Comm node;

	MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *a = argv[i + 1];

		if (!strcmp(k, "--mpi"))
			mpi = a;
		else if (!strcmp(k, "--variants"))
			list = a;
		else if (!strcmp(k, "--min-bytes"))
			min_b = parse_size(a);
		else if (!strcmp(k, "--max-bytes"))
			max_b = parse_size(a);
		else if (!strcmp(k, "--sizes"))
			sizes = a;
		else if (!strcmp(k, "--iters"))
			iters = atoi(a);
		else if (!strcmp(k, "--warmup"))
			warmup = atoi(a);
		else if (!strcmp(k, "--big-bytes"))
			big_b = parse_size(a);
		else if (!strcmp(k, "--big-iters"))
			big_iters = atoi(a);
		else if (!strcmp(k, "--batch-bytes"))
			batch_b = parse_size(a);
		else
			die("unknown option ", k);
	}
	if (iters < 1 || big_iters < 1 || warmup < 0 || min_b < 4)
		die("bad --iters, --big-iters, --warmup or --min-bytes", NULL);
	if (sizes) {
		char *l = strdup(sizes), *sv = NULL;

		for (char *s = strtok_r(l, ",", &sv); s && nsz < 64;
		     s = strtok_r(NULL, ",", &sv))
			if ((sz[nsz++] = parse_size(s)) < 4 ||
			    sz[nsz - 1] > max_b)
				die("--sizes: each from 4 to --max-bytes: ", s);
		free(l);
	} else {
		for (size_t b = min_b; b <= max_b && nsz < 64; b *= 4)
			sz[nsz++] = b;
	}
	names = strdup(list);
	for (char *s = strtok_r(names, ",", &save); s && nv < MAXV;
	     s = strtok_r(NULL, ",", &save)) {
		snprintf(v[nv].name, sizeof(v[nv].name), "%s", s);
		setup(&v[nv++], mpi, iters > big_iters ? iters : big_iters);
	}
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
			    MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &local);

	maxn = max_b / sizeof(float);
	in = malloc(maxn * sizeof(float));
	out = malloc(maxn * sizeof(float));
	ref = malloc((maxn / (size_t)size + 1) * sizeof(float));
	if (!in || !out || !ref)
		die("out of memory", NULL);
	memset(out, 0, maxn * sizeof(float));
	isle__bench_fill(rank, size, maxn, in, ref);

	for (int si = 0; si < nsz; si++) {
		size_t bytes = sz[si], n = bytes / sizeof(float);
		int it = bytes >= big_b ? big_iters : iters;
		/* Calls per sample: about batch_b bytes, at most 256 calls. */
		int reps = bytes < batch_b ? (int)(batch_b / bytes) : 1;

		if (reps > 256)
			reps = 256;
		if ((size_t)reps * n > maxn)
			reps = (int)(maxn / n);

		for (int k = 0; k < nv; k++) {
			v[k].mismatches = 0;
			v[k].rel_error = 0;
			v[k].link_bytes = -1;
		}
		/* Link bytes: one call of each variant alone, between reads
		 * of this node's uplink counter (one reader per node). */
		for (int k = 0; k < nv; k++) {
			double tx0 = -1, tx1, d, all;

			PMPI_Barrier(MPI_COMM_WORLD);
			if (local == 0)
				tx0 = eth0_tx();
			call(&v[k], mpi, in, out, ref, n, 1, 1);
			PMPI_Barrier(MPI_COMM_WORLD);
			d = 0;
			if (local == 0 && tx0 >= 0 && (tx1 = eth0_tx()) >= 0)
				d = tx1 - tx0;
			else if (local == 0)
				d = -1e300; /* no counter on some node */
			PMPI_Allreduce(&d, &all, 1, MPI_DOUBLE, MPI_SUM,
				       MPI_COMM_WORLD);
			v[k].link_bytes = all >= 0 ? all : -1;
		}
		for (int i = -warmup; i < it; i++)
			for (int j = 0; j < nv; j++) {
				int k = (j + (i < 0 ? 0 : i)) % nv;
				double t =
				    call(&v[k], mpi, in, out, ref, n, reps, 0);

				if (i >= 0)
					v[k].t[i] = t;
			}
		for (int k = 0; k < nv; k++) {
			long bad = 0, mine = v[k].mismatches;

			PMPI_Allreduce(&mine, &bad, 1, MPI_LONG, MPI_SUM,
				       MPI_COMM_WORLD);
			if (rank)
				continue;
			qsort(v[k].t, (size_t)it, sizeof(double),
			      isle__bench_cmp_dbl);
			printf("{\"mpi\":\"%s\",\"algo\":\"%s\",\"bytes\":%zu,"
			       "\"time_us_median\":%.3f,\"time_us_p10\":%.3f,"
			       "\"time_us_p90\":%.3f,\"iters\":%d,\"calls_per_"
			       "iter\":%d,\"warmup\":%d,"
			       "\"mismatches\":%ld,\"rel_error\":%.3g,",
			       mpi, v[k].name, bytes,
			       isle__bench_quantile(v[k].t, it, 0.5) * 1e6,
			       isle__bench_quantile(v[k].t, it, 0.1) * 1e6,
			       isle__bench_quantile(v[k].t, it, 0.9) * 1e6, it,
			       reps, warmup, bad, v[k].rel_error);
			if (v[k].link_bytes >= 0)
				printf("\"link_bytes\":%.0f}\n",
				       v[k].link_bytes);
			else
				printf("\"link_bytes\":null}\n");
			fflush(stdout);
			if (bad && !v[k].lossy) {
				fprintf(stderr,
					"bench_paired: %s: %zu bytes: %ld "
					"elements differ from the exact sum\n",
					v[k].name, bytes, bad);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	free(in);
	free(out);
	free(ref);
	free(names);
	MPI_Comm_free(&node);
	for (int k = 0; k < nv; k++) {
		MPI_Comm_free(&v[k].comm);
		free(v[k].t);
	}
	/* MPI_T first: Open MPI 4.1 crashes in MPI_T_finalize after
	 * MPI_Finalize. */
	MPI_T_finalize();
	MPI_Finalize();
	return 0;
}
