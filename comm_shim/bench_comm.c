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
 * A benchmark driver, not part of any library: its subcommands share the
 * option parsing and result format, so it stays one file of about 900
 * lines.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <mpi.h>

#include "isle_comm.h"

#define MAX_RESULTS 256

struct opts {
	int nodes, ppn, mtu;
	double shaped_bytes; /* bytes the uplinks' tbf qdiscs sent */
	double rate_bps;     /* link rate, bits per second */
	const char *rate;
	double lat_us;
	const char *algo;
	size_t min_bytes, max_bytes;
	int step;
	const char *results, *codecs, *probe, *out;
	const char *links, *idle, *converge;
};

#define ISLE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void die(const char *fmt, const char *arg)
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
	die("bad rate '%s' (expected e.g. 1gbit)", s);
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		die("bad byte count '%s'", s);
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		die("bad byte count '%s'", s);
	return (size_t)v;
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
			die("%s needs a value", k);
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
			die("unknown option %s", k);
	}
	o->rate_bps = parse_rate(o->rate);
	if (o->nodes < 2 || o->ppn < 1 || o->step < 2 || o->min_bytes < 4)
		die("%s", "need --nodes >= 2, --ppn >= 1, --step >= 2");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

static const char *codec_of(const char *algo)
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

/* Quantile q of sorted v[0..n) (linear between closest ranks). */
static double quantile(const double *v, int n, double q)
{
	double x = q * (n - 1);
	int i = (int)x;

	return i + 1 < n ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[n - 1];
}

/*
 * The benchmark's data: integer-valued floats in [-64, 64], most near zero
 * (a cube, like gradients), a pure function of (rank, index), so every rank
 * can compute the exact sum of all ranks' data itself: an allreduce result
 * independent of any MPI (integer sums below 2^24 are exact in fp32).
 */
static float datum(int rank, size_t i)
{
	uint64_t z = ((uint64_t)rank << 40) ^ (uint64_t)i;
	double u;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	u = (double)(z >> 11) / 9007199254740992.0 - 0.5;
	return (float)rint(u * u * u * 512.0);
}

/*
 * Verify out[0..n) against the exact sums: this rank checks the elements
 * i = rank mod size (ref[i / size]); together the ranks check them all.
 * Mismatches and sums of squares of error and reference for ||e|| / ||ref||.
 */
static void check(const float *out, const float *ref, size_t n, int rank,
		  int size, double acc[3])
{
	for (size_t i = (size_t)rank; i < n; i += (size_t)size) {
		float r = ref[i / (size_t)size];
		double d = (double)out[i] - (double)r;

		acc[0] += memcmp(&out[i], &r, sizeof(float)) != 0;
		acc[1] += d * d;
		acc[2] += (double)r * (double)r;
	}
}

static int cmd_mpi(const struct opts *o)
{
	const char *codec = codec_of(o->algo);
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
	for (size_t i = 0; i < maxn; i++)
		in[i] = datum(rank, i);
	for (size_t i = (size_t)rank; i < maxn; i += (size_t)size) {
		float sum = 0;

		for (int r = 0; r < size; r++)
			sum += datum(r, i);
		ref[i / (size_t)size] = sum;
	}

	for (size_t bytes = o->min_bytes; bytes <= o->max_bytes;
	     bytes *= (size_t)o->step) {
		size_t n = bytes / sizeof(float), bad_all;
		int warmup, reps = reps_for(bytes, &warmup);
		double t[32], mine, acc[3] = {0, 0, 0}, sum[3], rel_all;
		const char *run = "mpi";

		for (int i = -warmup; i < reps; i++) { /* < 0: warm-up */
			/* after the warm-up: the crossover probe runs at the
			 * first call of its sizes */
			if (c && i == 0)
				run = isle_algo_name(
				    isle_comm_algo_for(c, n, ISLE_DTYPE_F32));
			MPI_Barrier(MPI_COMM_WORLD);
			mine = now_s();
			if (c)
				rc = isle_comm_allreduce(
				    c, in, out, n, ISLE_DTYPE_F32,
				    (uint64_t)(uintptr_t)out);
			else
				rc = MPI_Allreduce(in, out, (int)n, MPI_FLOAT,
						   MPI_SUM, MPI_COMM_WORLD);
			mine = now_s() - mine;
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
				check(out, ref, n, rank, size, acc);
			/* A collective takes as long as its slowest rank. */
			if (i >= 0)
				MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE,
					      MPI_MAX, MPI_COMM_WORLD);
		}
		MPI_Allreduce(acc, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		bad_all = (size_t)sum[0];
		rel_all = sum[2] > 0 ? sqrt(sum[1] / sum[2]) : sqrt(sum[1]);
		if (rank == 0) {
			qsort(t, (size_t)reps, sizeof(*t), cmp_double);
			printf("{\"algo\":\"%s\",\"bytes\":%zu,"
			       "\"time_us_median\":%.1f,\"time_us_p10\":%.1f,"
			       "\"time_us_p90\":%.1f,\"reps\":%d,\"warmup\":%d,"
			       "\"run\":\"%s\",\"mismatches\":%zu,"
			       "\"rel_error\":%.3g}\n",
			       o->algo, bytes, median(t, reps) * 1e6,
			       quantile(t, reps, 0.1) * 1e6,
			       quantile(t, reps, 0.9) * 1e6, reps, warmup, run,
			       bad_all, rel_all);
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
			double t_ = now_s();                                   \
			stmt;                                                  \
			t_ = now_s() - t_;                                     \
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

/* -------------------------------------------------------------- report */

struct result {
	char algo[32], run[32];
	size_t bytes;
	double us, p10, p90, rel_error, mismatches;
	int reps;
};

static double json_num(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static int read_results(const char *path, struct result *r, int max)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	if (!f)
		die("cannot open %s", path);
	while (n < max && fgets(line, sizeof(line), f)) {
		const char *run = strstr(line, "\"run\":\"");

		if (sscanf(line, "{\"algo\":\"%31[^\"]\",\"bytes\":%zu,",
			   r[n].algo, &r[n].bytes) != 2)
			continue;
		r[n].us = json_num(line, "time_us_median");
		r[n].p10 = json_num(line, "time_us_p10");
		r[n].p90 = json_num(line, "time_us_p90");
		r[n].rel_error = json_num(line, "rel_error");
		r[n].mismatches = json_num(line, "mismatches");
		r[n].reps = (int)json_num(line, "reps");
		if (!run || sscanf(run, "\"run\":\"%31[^\"]\"", r[n].run) != 1)
			snprintf(r[n].run, sizeof(r[n].run), "mpi");
		n++;
	}
	fclose(f);
	return n;
}

/* Whole file into a NUL-terminated string without its trailing newline. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	long len;

	if (!f)
		die("cannot open %s", path);
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(s = calloc(1, (size_t)len + 1)) ||
	    fread(s, 1, (size_t)len, f) != (size_t)len)
		die("cannot read %s", path);
	fclose(f);
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		s[--len] = '\0';
	return s;
}

/*
 * Alpha-beta bound on the emulated link for the algorithm that ran (bytes
 * each node pushes through its uplink, one direction, at the tc rate;
 * intra-node work free), P ranks on G nodes, ranks numbered node by node:
 *   ring: each uplink carries one of the P chunks per step, 2 (P-1) steps:
 *     2 (P-1)/P * N bytes, 2 (P-1) latencies;
 *   Rabenseifner, han, isle hier (codec none): the node's share crosses
 *     once each way: 2 (G-1)/G * N bytes (encoded for isle's codecs; top-k's
 *     reduced chunk carries up to G * k pairs back), 2 (G-1) latencies;
 *   Open MPI's default (fixed rules pick among them): the smaller of both.
 */
static double bound_us(const struct opts *o, const struct result *r,
		       double lat_us)
{
	double bps = o->rate_bps / 8, n = (double)r->bytes;
	int p = o->nodes * o->ppn, g = o->nodes;
	const char *spec = codec_of(r->algo);
	double ring =
	    2.0 * (p - 1) * lat_us + 2.0 * (p - 1) / p * n / bps * 1e6;
	double half =
	    2.0 * (g - 1) * lat_us + 2.0 * (g - 1) / g * n / bps * 1e6;
	struct isle_codec c;
	size_t elems = r->bytes / sizeof(float), part;
	double wire;

	if (!strcmp(r->algo, "mpi_ring") || !strcmp(r->run, "ring"))
		return ring;
	if (!strcmp(r->algo, "mpi_rabenseifner") || !strcmp(r->algo, "mpi_han"))
		return half;
	if (!spec || !strcmp(r->run, "passthrough") ||
	    !strcmp(r->run, "rdoubling"))
		return fmin(ring, half);
	if (isle_codec_parse(spec, &c, NULL, 0))
		return NAN;
	part = elems * (size_t)(g - 1) / (size_t)g;
	wire = (double)isle_codec_encoded_size(&c, part);
	if (c.kind == ISLE_CODEC_TOPK)
		c.ratio = fmin(1.0, c.ratio * g);
	wire += (double)isle_codec_encoded_size(&c, part);
	return 2.0 * (g - 1) * lat_us + wire / bps * 1e6;
}

static const char *const mpi_algos[] = {"mpi_default", "mpi_ring",
					"mpi_rabenseifner", "mpi_han"};

/* The fastest MPI variant (median) at r's size, or NULL. */
static const struct result *mpi_best(const struct result *r, int n,
				     size_t bytes)
{
	const struct result *best = NULL;

	for (int j = 0; j < n; j++)
		for (size_t m = 0; m < ISLE_ARRAY_LEN(mpi_algos); m++)
			if (!strcmp(r[j].algo, mpi_algos[m]) &&
			    r[j].bytes == bytes &&
			    (!best || r[j].us < best->us))
				best = &r[j];
	return best;
}

/* Lines "ALGO LINK BYTES" -> {"ALGO": {"LINK": B, ..., "total": T}, ...} */
static void print_links(FILE *f, const char *path)
{
	FILE *in = path ? fopen(path, "r") : NULL;
	char algo[64], link[64], prev[64] = "";
	double b, total = 0;
	int first = 1;

	fprintf(f, "\"link_bytes\": {");
	while (in && fscanf(in, "%63s %63s %lf", algo, link, &b) == 3) {
		if (strcmp(algo, prev)) {
			if (prev[0])
				fprintf(f, ", \"total\": %.0f}", total);
			fprintf(f, "%s\n  \"%s\": {", first ? "" : ",", algo);
			snprintf(prev, sizeof(prev), "%s", algo);
			total = 0;
			first = 1;
		}
		fprintf(f, "%s\"%s\": %.0f", first ? "" : ", ", link, b);
		total += b;
		first = 0;
	}
	if (prev[0])
		fprintf(f, ", \"total\": %.0f}", total);
	fprintf(f, "\n},\n");
	if (in)
		fclose(in);
}

/* Lines "NAME PCT" -> {"NAME": PCT, ...} */
static void print_idle(FILE *f, const char *path)
{
	FILE *in = path ? fopen(path, "r") : NULL;
	char name[64];
	double pct;
	int i = 0;

	fprintf(f, "\"idle_cpu_pct\": {");
	while (in && fscanf(in, "%63s %lf", name, &pct) == 2)
		fprintf(f, "%s\"%s\": %.1f", i++ ? ", " : "", name, pct);
	fprintf(f, "},\n");
	if (in)
		fclose(in);
}

/* "KEY": VALUE, or null where VALUE is not finite (JSON has no nan). */
static void json_num_out(FILE *f, const char *key, const char *fmt, double v)
{
	fprintf(f, "\"%s\": ", key);
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs("null", f);
}

/* JSON lines of train_mnist -> "convergence": [...] */
static void print_converge(FILE *f, const char *path)
{
	FILE *in = path ? fopen(path, "r") : NULL;
	char line[1024];
	int i = 0;

	fprintf(f, "\"convergence\": [");
	while (in && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '{')
			fprintf(f, "%s\n  %s", i++ ? "," : "", line);
	}
	fprintf(f, "\n],\n");
	if (in)
		fclose(in);
}

static int cmd_report(const struct opts *o)
{
	static struct result r[MAX_RESULTS];
	char *codecs, *probe;
	double lat_us, link_gbps;
	int n;
	FILE *f;

	if (!o->results || !o->codecs || !o->probe || !o->out)
		die("%s", "report needs --results --codecs --probe --out");
	n = read_results(o->results, r, MAX_RESULTS);
	codecs = slurp(o->codecs);
	probe = slurp(o->probe);
	lat_us = json_num(probe, "lat_us");
	link_gbps = json_num(probe, "gbps");
	if (!(lat_us >= 0))
		lat_us = 0;

	f = fopen(o->out, "w");
	if (!f)
		die("cannot write %s", o->out);
	fprintf(f,
		"{\n\"link\": {\"nodes\": %d, \"ranks_per_node\": %d, "
		"\"node\": \"network+UTS namespace\", "
		"\"intra_node\": \"shared memory (Open MPI vader)\", "
		"\"inter_node\": \"TCP over veth + bridge\", "
		"\"qdisc\": \"tbf\", \"rate\": \"%s\", "
		"\"rate_gbps\": %.4f, \"mtu\": %d, "
		"\"measured_lat_us\": %.2f, \"measured_gbps\": %.4f, "
		"\"shaped_bytes\": %.0f},\n",
		o->nodes, o->ppn, o->rate, o->rate_bps / 8 / 1e9, o->mtu,
		lat_us, link_gbps, o->shaped_bytes);
	print_idle(f, o->idle);
	print_links(f, o->links);
	/* codecs file: {"backend":..,"memcpy_gbps":X,"codecs":[...]} */
	fprintf(f, "\"memcpy_gbps\": %.3f,\n", json_num(codecs, "memcpy_gbps"));
	{
		const char *a = strstr(codecs, "\"codecs\":");
		const char *z = strrchr(codecs, ']');

		if (a && z > a)
			fprintf(f, "%.*s,\n", (int)(z + 1 - a), a);
		else
			fprintf(f, "\"codecs\": [],\n");
	}
	print_converge(f, o->converge);
	for (size_t m = 0; m < ISLE_ARRAY_LEN(mpi_algos); m++) {
		int k = 0;

		fprintf(f, "\"%s\": [", mpi_algos[m]);
		for (int i = 0; i < n; i++)
			if (!strcmp(r[i].algo, mpi_algos[m]))
				fprintf(f,
					"%s\n  {\"bytes\": %zu, "
					"\"time_us_median\": %.1f, "
					"\"time_us_p10\": %.1f, "
					"\"time_us_p90\": %.1f}",
					k++ ? "," : "", r[i].bytes, r[i].us,
					r[i].p10, r[i].p90);
		fprintf(f, "\n],\n");
	}
	fprintf(f, "\"mpi_best\": [");
	for (int i = 0, k = 0; i < n; i++) {
		const struct result *b = mpi_best(r, n, r[i].bytes);

		if (b == &r[i])
			fprintf(f,
				"%s\n  {\"bytes\": %zu, \"algo\": \"%s\", "
				"\"time_us_median\": %.1f}",
				k++ ? "," : "", b->bytes, b->algo, b->us);
	}
	fprintf(f, "\n],\n\"results\": [");
	for (int i = 0; i < n; i++) {
		const struct result *b = mpi_best(r, n, r[i].bytes);

		fprintf(f,
			"%s\n  {\"algo\": \"%s\", \"bytes\": %zu, "
			"\"time_us_median\": %.1f, \"time_us_p10\": %.1f, "
			"\"time_us_p90\": %.1f, \"reps\": %d, \"run\": \"%s\", "
			"\"mismatches\": %.0f, ",
			i ? "," : "", r[i].algo, r[i].bytes, r[i].us, r[i].p10,
			r[i].p90, r[i].reps, r[i].run, r[i].mismatches);
		json_num_out(f, "rel_error", "%.3g", r[i].rel_error);
		fputs(", ", f);
		json_num_out(f, "bound_us", "%.1f", bound_us(o, &r[i], lat_us));
		fputs(", ", f);
		/* no MPI baseline at this size: null, not a number */
		json_num_out(f, "vs_mpi_best", "%.3f",
			     b ? b->us / r[i].us : NAN);
		fputs("}", f);
	}
	fprintf(f, "\n]\n}\n");
	if (fclose(f))
		die("cannot write %s", o->out);

	/* Speed-up over the fastest MPI variant, and measured / bound. */
	printf("%-16s %10s %10s %10s %10s %10s %7s %9s %-11s %s\n", "algo",
	       "bytes", "median_us", "p10_us", "p90_us", "bound_us", "x_bnd",
	       "vs_best", "run", "rel_error");
	for (int i = 0; i < n; i++) {
		const struct result *b = mpi_best(r, n, r[i].bytes);
		double bd = bound_us(o, &r[i], lat_us);

		printf("%-16s %10zu %10.1f %10.1f %10.1f %10.1f %7.2f %8.2fx "
		       "%-11s %.3g\n",
		       r[i].algo, r[i].bytes, r[i].us, r[i].p10, r[i].p90, bd,
		       r[i].us / bd, b ? b->us / r[i].us : NAN, r[i].run,
		       r[i].rel_error);
	}
	free(codecs);
	free(probe);
	return 0;
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
		return cmd_report(&o);
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
