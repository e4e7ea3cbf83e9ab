/*
 * bench_comm_report.c - bench_comm report: the results of the mpi runs,
 * the codec throughput, the link probe and the host's idle CPU into
 * comm.json, with each result's ratio to the fastest MPI variant and to
 * the alpha-beta bound of the algorithm that ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_comm.h"
#include "isle_comm.h"

#define ISLE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_RESULTS 256

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
		isle__bench_comm_die("cannot open %s", path);
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
		isle__bench_comm_die("cannot open %s", path);
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(s = calloc(1, (size_t)len + 1)) ||
	    fread(s, 1, (size_t)len, f) != (size_t)len)
		isle__bench_comm_die("cannot read %s", path);
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
	const char *spec = isle__bench_codec_of(r->algo);
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

int isle__bench_comm_report(const struct opts *o)
{
	static struct result r[MAX_RESULTS];
	char *codecs, *probe;
	double lat_us, link_gbps;
	int n;
	FILE *f;

	if (!o->results || !o->codecs || !o->probe || !o->out)
		isle__bench_comm_die(
		    "%s", "report needs --results --codecs --probe --out");
	n = read_results(o->results, r, MAX_RESULTS);
	codecs = slurp(o->codecs);
	probe = slurp(o->probe);
	lat_us = json_num(probe, "lat_us");
	link_gbps = json_num(probe, "gbps");
	if (!(lat_us >= 0))
		lat_us = 0;

	f = fopen(o->out, "w");
	if (!f)
		isle__bench_comm_die("cannot write %s", o->out);
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
		isle__bench_comm_die("cannot write %s", o->out);

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
