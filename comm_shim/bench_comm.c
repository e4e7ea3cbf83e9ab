/*
 * bench_comm.c - allreduce benchmark driver for scripts/bench-comm.sh.
 *
 *   bench_comm plan   --nodes N --ppn R --rate RATE [--lat-us L]
 *       print the plan of the emulated cluster (ranks placed by node)
 *   bench_comm probe  (under mpirun) ping-pong between node 0 and node 1:
 *       one JSON line with the link's latency and bandwidth
 *   bench_comm mpi    --algo ALGO [--min-bytes B] [--max-bytes B] [--step S]
 *       (under mpirun) time allreduce of fp32 sums; one JSON line per size
 *       (median, p10, p90 of 10 timed reps after 2 warm-up, 5 above 64 MiB;
 *       the first call's result checked against the exact sum)
 *       ALGO: mpi_* (MPI_Allreduce; the script sets the MCA parameters:
 *       mpi_default, mpi_ring, mpi_rabenseifner, mpi_han), isle_none,
 *       isle_bf16, isle_int8, isle_topk (isle_comm_allreduce, that codec
 *       across nodes, algorithm auto)
 *   bench_comm codecs single-core CPU codec throughput and memcpy, JSON
 *   bench_comm report --results F --codecs F --probe F --nodes N --ppn R
 *                     --rate RATE --mtu M --shaped-bytes B --out F
 *                     [--links F] [--idle F] [--converge F]
 *       comm.json, plus ratios to mpi_best and the alpha-beta bound of the
 *       algorithm that ran on stdout
 *
 * Rates are tc rates ("1gbit", "500mbit"); bandwidths printed are GB/s
 * (bytes), like the plan's bw_gbps.
 *
 * The report subcommand is bench_comm_report.c; helpers shared with
 * bench_paired are in bench_util.c.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mpi.h>

#include "bench_comm.h"
#include "bench_util.h"
#include "isle_comm.h"

void isle__bench_comm_die(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench_comm: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

/* "1gbit" -> 1e9; tc's units (bit, kbit, mbit, gbit, tbit). */
static double parse_rate(const char *s)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = {{"bit", 1},
		     {"kbit", 1e3},
		     {"mbit", 1e6},
		     {"gbit", 1e9},
		     {"tbit", 1e12}};
	char *end;
	double v = strtod(s, &end);

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (v > 0 && !strcasecmp(end, units[i].unit))
			return v * units[i].mult;
	isle__bench_comm_die("bad rate '%s' (expected e.g. 1gbit)", s);
	return 0;
}

static size_t parse_size(const char *s)
{
	size_t v = 0;

	if (isle__bench_parse_size(s, &v))
		isle__bench_comm_die("bad byte count '%s'", s);
	return v;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.nodes = 2,
			   .ppn = 4,
			   .mtu = 1500,
			   .rate = "1gbit",
			   .lat_us = 50,
			   .algo = "mpi_default",
			   .min_bytes = 4096,
			   .max_bytes = 256u << 20,
			   .step = 4};
	for (int i = 2; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			isle__bench_comm_die("%s needs a value", k);
		i++;
		if (!strcmp(k, "--nodes"))
			o->nodes = atoi(v);
		else if (!strcmp(k, "--ppn"))
			o->ppn = atoi(v);
		else if (!strcmp(k, "--mtu"))
			o->mtu = atoi(v);
		else if (!strcmp(k, "--rate"))
			o->rate = v;
		else if (!strcmp(k, "--lat-us"))
			o->lat_us = atof(v);
		else if (!strcmp(k, "--algo"))
			o->algo = v;
		else if (!strcmp(k, "--min-bytes"))
			o->min_bytes = parse_size(v);
		else if (!strcmp(k, "--max-bytes"))
			o->max_bytes = parse_size(v);
		else if (!strcmp(k, "--step"))
			o->step = atoi(v);
		else if (!strcmp(k, "--results"))
			o->results = v;
		else if (!strcmp(k, "--codecs"))
			o->codecs = v;
		else if (!strcmp(k, "--probe"))
			o->probe = v;
		else if (!strcmp(k, "--shaped-bytes"))
			o->shaped_bytes = atof(v);
		else if (!strcmp(k, "--out"))
			o->out = v;
		else if (!strcmp(k, "--links"))
			o->links = v;
		else if (!strcmp(k, "--idle"))
			o->idle = v;
		else if (!strcmp(k, "--converge"))
			o->converge = v;
		else
			isle__bench_comm_die("unknown option %s", k);
	}
	o->rate_bps = parse_rate(o->rate);
	if (o->nodes < 2 || o->ppn < 1 || o->step < 2 || o->min_bytes < 4)
		isle__bench_comm_die(
		    "%s", "need --nodes >= 2, --ppn >= 1, --step >= 2");
}

/* ---------------------------------------------------------------- plan */

/*
 * Two levels: shared memory inside a node, the rate-limited uplink across
 * nodes. The uplink is shared by the node's ranks, so each rank gets
 * 1/ppn of it; the codec line is overridden per run (ISLE_COMM_CODEC).
 */
static int cmd_plan(const struct opts *o)
{
	int n = o->nodes * o->ppn, rc = -ENOMEM;
	struct isle_plan p = {
	    .version = ISLE_PLAN_VERSION,
	    .job_id = "bench-comm",
	    .nranks = n,
	    .nlevels = 2,
	    .levels = {{.name = "shm",
			.scope = ISLE_SCOPE_NODE,
			.bw_gbps = 5.0,
			.lat_us = 2.0},
		       {.name = "uplink",
			.scope = ISLE_SCOPE_JOB,
			.bw_gbps = o->rate_bps / 8 / 1e9 / o->ppn,
			.lat_us = o->lat_us}}};
	char(*names)[32] = calloc((size_t)n, sizeof(*names));

	if (!names || !(p.ranks = calloc((size_t)n, sizeof(*p.ranks))))
		goto out;
	for (int r = 0; r < n; r++) {
		snprintf(names[r], sizeof(names[r]), "node%d", r / o->ppn);
		p.ranks[r] = (struct isle_plan_rank){.node = names[r],
						     .gpu = -1,
						     .island = names[r],
						     .leaf = "leaf0"};
	}
	rc = isle_plan_write(&p, stdout);
out:
	free(p.ranks);
	free(names);
	return rc ? 1 : 0;
}

/* --------------------------------------------------------------- probe */

/* Fastest round trip of len bytes between rank 0 and peer, seconds. */
static double pingpong(int rank, int peer, char *buf, size_t len, int reps)
{
	double best = INFINITY;

	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < reps; i++) {
		double t = MPI_Wtime();

		if (rank == 0) {
			MPI_Send(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == peer) {
			MPI_Recv(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
		t = MPI_Wtime() - t;
		best = t < best ? t : best;
	}
	return best;
}

/*
 * Ping-pong rank 0 <-> rank ppn (first rank of node 1). The fastest of many
 * round trips is the link's own latency; on a busy host the average mostly
 * measures the scheduler.
 */
static int cmd_probe(const struct opts *o)
{
	const size_t big = 8u << 20;
	int rank, size, peer = o->ppn;
	char *buf = malloc(big);
	double lat, t_big;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!buf || size <= peer) {
		fprintf(stderr, "bench_comm probe: needs > %d ranks\n", peer);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(buf, 1, big);
	lat = pingpong(rank, peer, buf, 8, 300) / 2;
	t_big = pingpong(rank, peer, buf, big, 5) / 2;
	if (rank == 0)
		printf("{\"lat_us\": %.2f, \"gbps\": %.4f}\n", lat * 1e6,
		       (double)big / (t_big - lat) / 1e9);
	free(buf);
	return 0;
}

/* ----------------------------------------------------------------- mpi */

const char *isle__bench_codec_of(const char *algo)
{
	static const struct {
		const char *algo, *codec;
	} map[] = {{"isle_none", "none"},
		   {"isle_bf16", "bf16"},
		   {"isle_fp16", "fp16"},
		   {"isle_int8", "int8"},
		   {"isle_topk", "topk:0.01"}};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(algo, map[i].algo))
			return map[i].codec;
	return NULL;
}

/*
 * 2 warm-up and 10 timed repetitions up to 64 MiB, 5 above (the floor
 * that keeps a 256 MiB run at 1 Gbit/s short).
 */
static int reps_for(size_t bytes, int *warmup)
{
	*warmup = 2;
	return bytes <= (64u << 20) ? 10 : 5;
}

static int cmd_mpi(const struct opts *o)
{
	const char *codec = isle__bench_codec_of(o->algo);
	struct isle_comm_config cfg;
	isle_comm *c = NULL;
	int rank, size, rc = 0;
	float *in = NULL, *out = NULL, *ref = NULL;
	char err[512];
	size_t maxn = o->max_bytes / sizeof(float);

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (strncmp(o->algo, "mpi_", 4) && !codec) {
		if (rank == 0)
			fprintf(stderr, "bench_comm: unknown algo %s\n",
				o->algo);
		return 2;
	}
	if (codec) {
		rc = isle_comm_config_from_env(&cfg, err, sizeof(err));
		if (!rc) {
			cfg.async = 0; /* blocking calls only: no helper */
			cfg.have_codec_override = 1;
			rc = isle_codec_parse(codec, &cfg.codec_override, err,
					      sizeof(err));
		}
		if (!rc)
			rc = isle_comm_create(MPI_COMM_WORLD, &cfg, &c, err,
					      sizeof(err));
		if (rc) {
			if (rank == 0)
				fprintf(stderr, "bench_comm: %s\n", err);
			return 1;
		}
		if (rank == 0 && isle_comm_describe(c, err, sizeof(err)) >= 0)
			fprintf(stderr, "bench_comm: %s: %s\n", o->algo, err);
	}
	in = malloc(maxn * sizeof(float));
	out = malloc(maxn * sizeof(float));
	ref = malloc((maxn / (size_t)size + 1) * sizeof(float));
	if (!in || !out || !ref) {
		fprintf(stderr, "bench_comm: out of memory\n");
		rc = 1;
		goto out;
	}
	memset(out, 0, maxn * sizeof(float)); /* fault the pages in now */
	isle__bench_fill(rank, size, maxn, in, ref);

	for (size_t bytes = o->min_bytes; bytes <= o->max_bytes;
	     bytes *= (size_t)o->step) {
		size_t n = bytes / sizeof(float), bad_all;
		int warmup, reps = reps_for(bytes, &warmup);
		double t[32], mine, acc[3] = {0, 0, 0}, sum[3], rel_all;
		const char *run = "mpi";

		for (int i = -warmup; i < reps; i++) { /* < 0: warm-up */
			/* after the warm-up: the crossover probe runs at the
			 * first call of its sizes (bench-comm sets
			 * ISLE_COMM_PROBE_SHARE=0: a long job's steady state)
			 */
			if (c && i == 0)
				run = isle_algo_name(
				    isle_comm_algo_for(c, n, ISLE_DTYPE_F32));
			MPI_Barrier(MPI_COMM_WORLD);
			mine = isle__bench_now_s();
			if (c)
				rc = isle_comm_allreduce(
				    c, in, out, n, ISLE_DTYPE_F32,
				    (uint64_t)(uintptr_t)out);
			else
				rc = MPI_Allreduce(in, out, (int)n, MPI_FLOAT,
						   MPI_SUM, MPI_COMM_WORLD);
			mine = isle__bench_now_s() - mine;
			if (rc) {
				fprintf(stderr,
					"bench_comm: %s: %zu bytes: "
					"%s\n",
					o->algo, bytes,
					c ? isle_comm_strerror(rc)
					  : "MPI_Allreduce failed");
				goto out;
			}
			/*
			 * The first call at a size has no error-feedback
			 * residual yet: its error is the codec's own.
			 */
			if (i == -warmup)
				acc[0] += (double)isle__bench_check(
				    out, ref, n, rank, size, acc + 1);
			/* A collective takes as long as its slowest rank. */
			if (i >= 0)
				MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE,
					      MPI_MAX, MPI_COMM_WORLD);
		}
		MPI_Allreduce(acc, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		bad_all = (size_t)sum[0];
		rel_all = sum[2] > 0 ? sqrt(sum[1] / sum[2]) : sqrt(sum[1]);
		if (rank == 0) {
			qsort(t, (size_t)reps, sizeof(*t), isle__bench_cmp_dbl);
			printf("{\"algo\":\"%s\",\"bytes\":%zu,"
			       "\"time_us_median\":%.1f,\"time_us_p10\":%.1f,"
			       "\"time_us_p90\":%.1f,\"reps\":%d,\"warmup\":%d,"
			       "\"run\":\"%s\",\"mismatches\":%zu,"
			       "\"rel_error\":%.3g}\n",
			       o->algo, bytes,
			       isle__bench_quantile(t, reps, 0.5) * 1e6,
			       isle__bench_quantile(t, reps, 0.1) * 1e6,
			       isle__bench_quantile(t, reps, 0.9) * 1e6, reps,
			       warmup, run, bad_all, rel_all);
			fflush(stdout);
		}
		/* Codec none must be bit-exact; so must every MPI variant. */
		if (bad_all && (!codec || !strcmp(codec, "none"))) {
			if (rank == 0)
				fprintf(stderr,
					"bench_comm: %s: %zu bytes: %zu "
					"elements differ from the exact sum\n",
					o->algo, bytes, bad_all);
			rc = 1;
			goto out;
		}
	}
out:
	free(in);
	free(out);
	free(ref);
	isle_comm_destroy(c);
	return rc ? 1 : 0;
}

/* -------------------------------------------------------------- codecs */

/* Best of a few runs of fn over n floats: GB/s of fp32 data. */
#define BEST_GBPS(bytes, stmt)                                                 \
	({                                                                     \
		double best_ = 0;                                              \
		for (int r_ = 0; r_ < 5; r_++) {                               \
			double t_ = isle__bench_now_s();                       \
			stmt;                                                  \
			t_ = isle__bench_now_s() - t_;                         \
			if ((double)(bytes) / t_ / 1e9 > best_)                \
				best_ = (double)(bytes) / t_ / 1e9;            \
		}                                                              \
		best_;                                                         \
	})

static int cmd_codecs(const struct opts *o)
{
	static const char *specs[] = {"none", "fp16", "bf16", "int8",
				      "topk:0.01"};
	const struct isle_codec_ops *ops = isle_codec_cpu_ops();
	const size_t n = 16u << 20, bytes = n * sizeof(float); /* 64 MiB */
	float *src = malloc(bytes), *dst = malloc(bytes), *res = NULL;
	void *enc = malloc(bytes + 4096);
	double memcpy_gbps;
	int rc = 0;

	(void)o;
	if (!src || !dst || !enc) {
		fprintf(stderr, "bench_comm: out of memory\n");
		rc = 1;
		goto out;
	}
	srand(42);
	for (size_t i = 0; i < n; i++)
		src[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	memset(dst, 0, bytes);
	memcpy(dst, src, bytes); /* warm-up */
	memcpy_gbps = BEST_GBPS(bytes, memcpy(dst, src, bytes));

	printf("{\"backend\": \"%s\", \"memcpy_gbps\": %.3f, \"codecs\": [",
	       ops->name, memcpy_gbps);
	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		struct isle_codec c;
		char err[128];
		double e, d, a;

		if (isle_codec_parse(specs[s], &c, err, sizeof(err))) {
			fprintf(stderr, "bench_comm: %s\n", err);
			rc = 1;
			goto out;
		}
		free(res);
		res = c.error_feedback ? calloc(n, sizeof(float)) : NULL;
		if (c.error_feedback && !res) {
			rc = 1;
			goto out;
		}
		e = BEST_GBPS(bytes,
			      rc |= ops->encode(&c, src, n, enc, res, NULL));
		d = BEST_GBPS(bytes, rc |= ops->decode(&c, enc, n, dst, NULL));
		a = BEST_GBPS(bytes,
			      rc |= ops->decode_acc(&c, enc, n, dst, NULL));
		if (rc) {
			fprintf(stderr, "bench_comm: codec %s failed\n",
				specs[s]);
			goto out;
		}
		/* gbps: the slower direction, as an allreduce needs both. */
		printf("%s\n  {\"codec\": \"%s\", \"gbps\": %.3f, "
		       "\"encode_gbps\": %.3f, \"decode_gbps\": %.3f, "
		       "\"decode_acc_gbps\": %.3f}",
		       s ? "," : "", specs[s], e < d ? e : d, e, d, a);
	}
	printf("\n]}\n");
out:
	free(src);
	free(dst);
	free(enc);
	free(res);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc;

	parse_opts(argc, argv, &o);
	if (!strcmp(cmd, "plan"))
		return cmd_plan(&o);
	if (!strcmp(cmd, "codecs"))
		return cmd_codecs(&o);
	if (!strcmp(cmd, "report"))
		return isle__bench_comm_report(&o);
	if (strcmp(cmd, "mpi") && strcmp(cmd, "probe")) {
		fprintf(stderr,
			"usage: bench_comm plan|probe|mpi|codecs|report "
			"[options] (see the comment in bench_comm.c)\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	rc = !strcmp(cmd, "probe") ? cmd_probe(&o) : cmd_mpi(&o);
	MPI_Finalize();
	return rc;
}
