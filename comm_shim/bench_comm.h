/*
 * bench_comm.h - between bench_comm.c (options, plan, probe, mpi, codecs)
 * and bench_comm_report.c (report). Only those two files include it.
 */
#ifndef ISLE_BENCH_COMM_H
#define ISLE_BENCH_COMM_H

#include <stddef.h>

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

/* Prints "bench_comm: " and fmt with arg to stderr; exits 2. */
void isle__bench_comm_die(const char *fmt, const char *arg)
    __attribute__((noreturn));

/* The shim codec an isle_* algorithm runs with, NULL for mpi_*. */
const char *isle__bench_codec_of(const char *algo);

/* bench_comm report: comm.json and the summary on stdout. */
int isle__bench_comm_report(const struct opts *o);

#endif /* ISLE_BENCH_COMM_H */
