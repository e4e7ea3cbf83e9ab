/*
 * demo-train.c - one data-parallel training step per iteration, for the
 * demo: every rank computes a gradient, MPI_Allreduce sums it (the isle
 * shim takes that call over when it is preloaded), and every rank applies
 * the update. It reports what the communication cost:
 *   - time in MPI_Allreduce per step (median over steps);
 *   - bytes this job's processes sent to each other, read from the kernel
 *     (TCP_INFO bytes_acked of each MPI connection; run with
 *     OMPI_MCA_btl=self,tcp so every byte between ranks is on a socket),
 *     split into "thin links" (between NVLink domains) and the rest;
 *   - the relative error of the summed gradient against the exact sum,
 *     which every rank computes on its own (||sum - exact|| / ||exact|| on
 *     a sample, worst step and rank).
 *
 *   demo-train --domains FILE [--params N] [--steps S]
 *
 * FILE has one NVLink domain per line: "NAME NODE NODE ..." (Slurm node
 * names, as in SLURMD_NODENAME). Build: mpicc -O2 -o demo-train
 * demo-train.c -lm.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <mpi.h>

#define NAME_LEN 64

struct conn {
	int rank;
	uint16_t lport, pport;
	uint64_t sent;
};

static void die(const char *msg)
{
	fprintf(stderr, "demo-train: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

/* Deterministic gradient of rank r for element i at step s. */
static float grad(int r, size_t i, int s)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + s);

	h ^= h >> 13;
	h *= 0x5bd1e995u;
	h ^= h >> 15;
	return ((float)(h & 0xffff) / 65536.0f - 0.5f) * (1.0f + r % 3);
}

/* Domain index of a node in the domains file, -1 if absent. */
static int domain_of(const char *path, const char *node)
{
	char line[4096];
	int d = 0, found = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -2;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok = strtok_r(line, " \t\n", &save);

		if (!tok || tok[0] == '#')
			continue;
		while ((tok = strtok_r(NULL, " \t\n", &save)))
			if (!strcmp(tok, node))
				found = d;
		d++;
	}
	fclose(f);
	return found;
}

/* This process's TCP connections and the bytes the peer acknowledged. */
static int my_conns(int rank, struct conn **out)
{
	struct rlimit rl;
	struct conn *v = NULL;
	int n = 0, max = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < 65536)
		max = (int)rl.rlim_cur;
	for (int fd = 0; fd < max; fd++) {
		struct sockaddr_storage l, p;
		socklen_t ll = sizeof(l), pl = sizeof(p), il;
		struct tcp_info ti;
		int type = 0;
		socklen_t tl = sizeof(type);
		struct conn *nv;

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
		    type != SOCK_STREAM ||
		    getsockname(fd, (struct sockaddr *)&l, &ll) ||
		    getpeername(fd, (struct sockaddr *)&p, &pl) ||
		    (l.ss_family != AF_INET && l.ss_family != AF_INET6))
			continue;
		memset(&ti, 0, sizeof(ti));
		il = sizeof(ti);
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &il))
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n].rank = rank;
		v[n].lport =
		    ntohs(l.ss_family == AF_INET
			      ? ((struct sockaddr_in *)&l)->sin_port
			      : ((struct sockaddr_in6 *)&l)->sin6_port);
		v[n].pport =
		    ntohs(p.ss_family == AF_INET
			      ? ((struct sockaddr_in *)&p)->sin_port
			      : ((struct sockaddr_in6 *)&p)->sin6_port);
		v[n].sent = ti.tcpi_bytes_acked;
		n++;
	}
	*out = v;
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"domains", required_argument, NULL, 'd'},
	    {"params", required_argument, NULL, 'p'},
	    {"steps", required_argument, NULL, 's'},
	    {NULL, 0, NULL, 0},
	};
	const char *domains = NULL, *node = getenv("SLURMD_NODENAME");
	size_t nparams = 16u << 20; /* 64 MiB of fp32 gradients */
	int steps = 3, rank, size, c, *dom, mydom, nconn, *counts, *displs;
	float *w, *g;
	double *times, maxerr = 0, err_all;
	struct conn *mine, *all;
	uint64_t thin = 0, local = 0;
	char name[NAME_LEN] = "";

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	while ((c = getopt_long(argc, argv, "d:p:s:", opts, NULL)) != -1) {
		if (c == 'd')
			domains = optarg;
		else if (c == 'p')
			nparams = strtoull(optarg, NULL, 0);
		else if (c == 's')
			steps = atoi(optarg);
		else
			die("usage: demo-train --domains FILE [--params N] "
			    "[--steps S]");
	}
	if (!domains || !nparams || steps < 1)
		die("usage: demo-train --domains FILE [--params N] [--steps "
		    "S]");
	if (!node)
		gethostname(name, sizeof(name) - 1), node = name;
	snprintf(name, sizeof(name), "%s", node);
	mydom = domain_of(domains, name);
	if (mydom == -2)
		die("cannot read the domains file");

	w = calloc(nparams, sizeof(float));
	g = malloc(nparams * sizeof(float));
	times = calloc(steps, sizeof(double));
	dom = malloc(size * sizeof(int));
	if (!w || !g || !times || !dom)
		die("out of memory");
	MPI_Allgather(&mydom, 1, MPI_INT, dom, 1, MPI_INT, MPI_COMM_WORLD);

	for (int s = 0; s < steps; s++) {
		double t0;

		for (size_t i = 0; i < nparams; i++)
			g[i] = grad(rank, i, s);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(MPI_IN_PLACE, g, (int)nparams, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		times[s] = MPI_Wtime() - t0;
		/* ||sum - exact|| / ||exact|| on a sample of elements. */
		{
			double d2 = 0, e2 = 0;

			for (size_t i = 0; i < nparams; i += 257) {
				double exact = 0;

				for (int r = 0; r < size; r++)
					exact += grad(r, i, s);
				d2 += (g[i] - exact) * (g[i] - exact);
				e2 += exact * exact;
			}
			if (e2 > 0 && sqrt(d2 / e2) > maxerr)
				maxerr = sqrt(d2 / e2);
		}
		for (size_t i = 0; i < nparams; i++)
			w[i] -= 0.01f * g[i] / (float)size;
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* Count before exchanging: the exchange sends bytes too. */
	nconn = my_conns(rank, &mine);
	counts = malloc(size * sizeof(int));
	displs = malloc(size * sizeof(int));
	if (!counts || !displs)
		die("out of memory");
	{
		int bytes = nconn * (int)sizeof(struct conn), total = 0;

		MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0,
			   MPI_COMM_WORLD);
		if (rank == 0)
			for (int r = 0; r < size; r++) {
				displs[r] = total;
				total += counts[r];
			}
		all = malloc(rank == 0 ? (size_t)total + 1 : 1);
		MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs,
			    MPI_BYTE, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			int n = total / (int)sizeof(struct conn);

			/* A connection appears once in each endpoint with
			 * the ports swapped; unmatched sockets are not MPI's.
			 */
			for (int a = 0; a < n; a++)
				for (int b = 0; b < n; b++) {
					if (all[a].lport != all[b].pport ||
					    all[a].pport != all[b].lport ||
					    all[a].rank == all[b].rank)
						continue;
					if (dom[all[a].rank] >= 0 &&
					    dom[all[a].rank] ==
						dom[all[b].rank])
						local += all[a].sent;
					else
						thin += all[a].sent;
					break;
				}
		}
	}
	MPI_Reduce(&maxerr, &err_all, 1, MPI_DOUBLE, MPI_MAX, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		qsort(times, steps, sizeof(double), cmp_double);
		printf("demo-train: %d ranks, %zu MiB of gradients, %d steps: "
		       "allreduce %.1f ms (median), sent %.1f MiB on thin "
		       "links, %.1f MiB inside NVLink domains, gradient error "
		       "%.2g\n",
		       size, nparams * sizeof(float) >> 20, steps,
		       times[steps / 2] * 1e3, thin / 1048576.0,
		       local / 1048576.0, err_all);
	}
	free(all);
	free(mine);
	free(counts);
	free(displs);
	free(dom);
	free(times);
	free(g);
	free(w);
	MPI_Finalize();
	return 0;
}
