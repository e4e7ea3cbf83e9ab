/*
 * bench_topo.c - times the cluster model at the size of a large cluster.
 *
 * Generates a rail-optimized fabric: N nodes with 8 NVSwitch-connected GPUs
 * and 8 rails; scalable units of 32 nodes with one leaf per rail; pods of 8
 * units with 2 spines per rail; 16 cores over all spines. Times building
 * the model, finalize, lint, save and load, and checks that the loaded
 * file saves back to the same bytes.
 *
 *   bench_topo [-n NODES] [-o FILE]      (defaults: 10000,
 * build/bench/topo.json)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "isle_topo.h"

#define GPUS 8
#define RAILS 8
#define SU_NODES 32
#define POD_SUS 8
#define SPINES_PER_RAIL 2
#define CORES 16

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process: on a shared, loaded machine wall time mostly
 * measures the neighbours. */
static double cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_topo: %s failed (%d)\n", what, rc);
	exit(1);
}

static void count_warning(void *arg, const char *msg)
{
	(*(int *)arg)++;
	(void)msg;
}

static isle_topo *generate(int nnodes)
{
	int nsu = (nnodes + SU_NODES - 1) / SU_NODES;
	int npod = (nsu + POD_SUS - 1) / POD_SUS;
	int *leaf = malloc((size_t)nsu * RAILS * sizeof(int));
	int *spine =
	    malloc((size_t)npod * RAILS * SPINES_PER_RAIL * sizeof(int));
	int core[CORES];
	isle_topo *t = isle_topo_create();
	char name[64];
	int rc;

	if (!t || !leaf || !spine)
		die("allocation", -1);
	t->name = strdup("bench");
	for (int c = 0; c < CORES; c++) {
		snprintf(name, sizeof(name), "core%02d", c);
		core[c] = isle_topo_add_switch(t, name, 0x100000 + c,
					       ISLE_SW_UNKNOWN);
	}
	for (int p = 0; p < npod; p++)
		for (int r = 0; r < RAILS; r++)
			for (int k = 0; k < SPINES_PER_RAIL; k++) {
				int s,
				    i = (p * RAILS + r) * SPINES_PER_RAIL + k;

				snprintf(name, sizeof(name),
					 "pod%02d-r%d-spine%d", p, r, k);
				s = isle_topo_add_switch(t, name, 0x200000 + i,
							 ISLE_SW_UNKNOWN);
				spine[i] = s;
				for (int c = 0; c < CORES; c++)
					if ((rc = isle_topo_link_switches(
						 t, core[c], s)))
						die("link core", rc);
			}
	for (int u = 0; u < nsu; u++)
		for (int r = 0; r < RAILS; r++) {
			int s, p = u / POD_SUS;

			snprintf(name, sizeof(name), "su%03d-r%d", u, r);
			s = isle_topo_add_switch(
			    t, name, 0x300000 + u * RAILS + r, ISLE_SW_UNKNOWN);
			isle_topo_set_switch(t, s, r, 400);
			leaf[u * RAILS + r] = s;
			for (int k = 0; k < SPINES_PER_RAIL; k++)
				if ((rc = isle_topo_link_switches(
					 t,
					 spine[(p * RAILS + r) *
						   SPINES_PER_RAIL +
					       k],
					 s)))
					die("link spine", rc);
		}
	for (int i = 0; i < nnodes; i++) {
		int n, u = i / SU_NODES;

		snprintf(name, sizeof(name), "gpu%05d", i + 1);
		n = isle_topo_add_node(t, name, GPUS);
		if (n < 0)
			die("add node", n);
		for (int a = 0; a < GPUS; a++)
			for (int b = a + 1; b < GPUS; b++)
				isle_topo_set_nvlink(t, n, a, b, 18);
		for (int r = 0; r < RAILS; r++) {
			char nic[16];
			int k;

			snprintf(nic, sizeof(nic), "mlx5_%d", r);
			k = isle_topo_add_nic(t, n, nic,
					      0xb8cef60300000000ULL +
						  (uint64_t)i * RAILS + r,
					      r, 400, r / 4);
			if (k < 0 || (rc = isle_topo_attach_node(
					  t, leaf[u * RAILS + r], n, k)))
				die("nic", k < 0 ? k : rc);
			isle_topo_set_gpu_nic(t, n, r, k);
			isle_topo_set_gpu(t, n, r, NULL, "H100-SXM5-80GB",
					  r / 4);
		}
	}
	free(leaf);
	free(spine);
	return t;
}

/*
 * Loads path and saves it to a string in a fresh process (-l), as islectl
 * or slurmctld would at startup: the generator's heap would slow json-c's
 * many small allocations. Prints the load time and a checksum of the text.
 */
static int load_only(const char *path)
{
	char err[512], *json;
	unsigned long sum = 5381;
	isle_topo *t;
	double t0 = now(), c0 = cpu();
	int rc = isle_topo_load(path, &t, err, sizeof(err));

	if (rc)
		die(err, rc);
	printf("%.6f %.6f", now() - t0, cpu() - c0);
	json = isle_topo_to_json(t);
	for (const char *p = json; p && *p; p++)
		sum = sum * 33 + (unsigned char)*p;
	printf(" %lu\n", sum);
	free(json);
	isle_topo_destroy(t);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = "build/bench/topo.json";
	double t0, c0, t_gen, t_fin, t_lint, t_save, t_load = -1;
	double c_fin, c_lint, c_save, c_load = -1, wall, cpus, loadavg = -1;
	int nnodes = 10000, c, nwarn = 0, rc, ngroups, nsw, nis;
	unsigned long sum = 5381, sum2 = 0;
	char err[512], *json, cmd[4200];
	long size, ngpus;
	isle_topo *t;
	FILE *f;

	while ((c = getopt(argc, argv, "n:o:l:")) != -1) {
		if (c == 'n')
			nnodes = atoi(optarg);
		else if (c == 'o')
			path = optarg;
		else if (c == 'l')
			return load_only(optarg);
		else
			return 2;
	}
	if (nnodes < 1 || strchr(path, '\''))
		return 2;

	t0 = now();
	t = generate(nnodes);
	t_gen = now() - t0;

	t0 = now();
	c0 = cpu();
	if ((rc = isle_topo_finalize(t, err, sizeof(err))))
		die(err, rc);
	t_fin = now() - t0;
	c_fin = cpu() - c0;

	t0 = now();
	c0 = cpu();
	isle_topo_lint(t, count_warning, &nwarn);
	t_lint = now() - t0;
	c_lint = cpu() - c0;

	t0 = now();
	c0 = cpu();
	if ((rc = isle_topo_save(t, path, err, sizeof(err))))
		die(err, rc);
	t_save = now() - t0;
	c_save = cpu() - c0;

	json = isle_topo_to_json(t);
	for (const char *p = json; p && *p; p++)
		sum = sum * 33 + (unsigned char)*p;
	free(json);
	ngroups = t->ngroups[ISLE_TIER_LEAF];
	nsw = t->nswitches;
	nis = t->nislands;
	ngpus = t->total_gpus;
	isle_topo_destroy(t);

	/* Load in a fresh process; it must give back the same text. */
	snprintf(cmd, sizeof(cmd), "/proc/%d/exe -l '%s'", (int)getpid(), path);
	f = popen(cmd, "r");
	if (!f || fscanf(f, "%lf %lf %lu", &t_load, &c_load, &sum2) != 3)
		die("load", -1);
	pclose(f);
	if (sum != sum2)
		die("round trip (saved and reloaded files differ)", -1);
	if (ngroups != (nnodes + SU_NODES - 1) / SU_NODES)
		die("leaf groups", ngroups);

	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &loadavg) != 1)
			loadavg = -1;
		fclose(f);
	}
	wall = t_fin + t_lint + t_save + t_load;
	cpus = c_fin + c_lint + c_save + c_load;
	printf("bench-topo: %d nodes, %ld GPUs, %d switches, %d islands "
	       "(%.1f MB file); wall s: generate %.3f finalize %.3f lint %.3f "
	       "(%d findings) save %.3f load %.3f; cpu s: finalize %.3f lint "
	       "%.3f save %.3f load %.3f; finalize+lint+save+load %.3f s cpu, "
	       "%.3f s wall at load average %.1f (goal < 2 s): %s\n",
	       nnodes, ngpus, nsw, nis, (double)size / 1e6, t_gen, t_fin,
	       t_lint, nwarn, t_save, t_load, c_fin, c_lint, c_save, c_load,
	       cpus, wall, loadavg, cpus < 2.0 ? "ok" : "SLOW");
	return 0;
}
