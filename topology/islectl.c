/*
 * islectl.c - the isle admin tool: build, check, show and export the
 * cluster file. Subcommands are rows of `commands` (see islectl.h); dot and
 * explain live in islectl_dot.c and islectl_explain.c.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "isle_topo.h"
#include "islectl.h"

const char *const isle__ctl_prog = "islectl";

static void warn_stderr(void *arg, const char *msg)
{
	const char *what = arg ? arg : "warning";

	fprintf(stderr, "%s: %s: %s\n", isle__ctl_prog, what, msg);
}

/* Loads FILE or prints the error; returns NULL on failure. */
isle_topo *isle__ctl_load(const char *path)
{
	char err[1024];
	isle_topo *t = NULL;

	if (isle_topo_load(path, &t, err, sizeof(err))) {
		fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
		return NULL;
	}
	return t;
}

/* Opens -o FILE for writing, or stdout. */
FILE *isle__ctl_open_out(const char *path)
{
	FILE *f;

	if (!path || strcmp(path, "-") == 0)
		return stdout;
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "%s: %s: %s\n", isle__ctl_prog, path,
			strerror(errno));
	return f;
}

int isle__ctl_close_out(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (f != stdout)
		bad |= fclose(f) != 0;
	else
		bad |= fflush(f) != 0;
	if (bad)
		fprintf(stderr, "%s: %s: write error\n", isle__ctl_prog,
			path ? path : "stdout");
	return bad ? 1 : 0;
}

/* Compressed host list of a node index array, or NULL. */
static char *node_list(const isle_topo *t, const int *idx, int n)
{
	const char **names = malloc((size_t)(n ? n : 1) * sizeof(char *));
	char *s;

	if (!names)
		return NULL;
	for (int i = 0; i < n; i++)
		names[i] = t->nodes[idx[i]].name;
	s = isle_hostlist_compress(names, n);
	free(names);
	return s;
}

/* --- validate ------------------------------------------------------------- */

static int cmd_validate(int argc, char **argv)
{
	isle_topo *t;
	int nwarn;

	if (argc != 2) {
		fprintf(stderr, "usage: %s validate FILE\n", isle__ctl_prog);
		return ISLECTL_EXIT_USAGE;
	}
	isle_topo_set_warn(warn_stderr, "warning");
	t = isle__ctl_load(argv[1]);
	if (!t)
		return 1;
	nwarn = isle_topo_lint(t, warn_stderr, "warning");
	printf("%s: ok: %d nodes, %ld GPUs, %d islands, %d switches, "
	       "%d racks; %d warning%s\n",
	       argv[1], t->nnodes, t->total_gpus, t->nislands, t->nswitches,
	       t->nracks, nwarn, nwarn == 1 ? "" : "s");
	isle_topo_destroy(t);
	return 0;
}

/* --- show ----------------------------------------------------------------- */

struct show {
	const isle_topo *t;
	char *seen;
	int *tmp;
};

/* Prints a switch and, below it, the switches not printed yet; those seen
 * under an earlier parent (fat trees) are counted, not repeated. */
static void show_switch(struct show *sh, int s, int depth)
{
	const struct isle_switch *sw = &sh->t->switches[s];
	int again = 0;

	sh->seen[s] = 1;
	printf("%*s%s (%s", 2 * depth + 2, "", sw->name,
	       isle_sw_level_name(sw->level));
	if (sw->rail >= 0)
		printf(", rail %d", sw->rail);
	if (sw->nnodes) {
		char *list = node_list(sh->t, sw->nodes, sw->nnodes);

		printf(", %d node%s): %s\n", sw->nnodes,
		       sw->nnodes == 1 ? "" : "s", list ? list : "?");
		free(list);
	} else {
		printf(", %d below)\n", sw->ndown);
	}
	for (int k = 0; k < sw->ndown; k++) {
		if (sh->seen[sw->down[k]])
			again++;
		else
			show_switch(sh, sw->down[k], depth + 1);
	}
	if (again)
		printf("%*s(%d more shown above)\n", 2 * depth + 4, "", again);
}

static int sig_cmp(const void *a, const void *b, void *arg)
{
	char **sig = arg;

	return strcmp(sig[*(const int *)a], sig[*(const int *)b]);
}

/* Nodes grouped by the shape of their intra-node islands ("8", "2+2+1"). */
static void show_islands(const isle_topo *t, int *tmp)
{
	char **sig = calloc((size_t)t->nnodes + 1, sizeof(char *));
	int *order = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	int n = 0;

	if (!sig || !order)
		goto out;
	for (int d = 0; d < t->nislands; d++) {
		const struct isle_island *is = &t->islands[d];
		char *list;

		if (!is->multi_node)
			continue;
		list = node_list(t, is->nodes, is->nnodes);
		printf("  %s (NVLink domain): %d nodes, %d GPUs: %s\n",
		       is->name, is->nnodes, is->ngpus, list ? list : "?");
		free(list);
	}
	for (int i = 0; i < t->nnodes; i++) {
		const struct isle_node *nd = &t->nodes[i];
		char buf[512] = "";
		size_t len = 0;

		if (nd->domain >= 0 || !nd->nislands)
			continue;
		for (int k = 0; k < nd->nislands && len < sizeof(buf) - 8; k++)
			len += (size_t)snprintf(
			    buf + len, sizeof(buf) - len, "%s%d", k ? "+" : "",
			    t->islands[nd->first_island + k].ngpus);
		sig[i] = strdup(buf);
		if (!sig[i])
			goto out;
		order[n++] = i;
	}
	qsort_r(order, (size_t)n, sizeof(int), sig_cmp, sig);
	for (int a = 0, b; a < n; a = b) {
		char *list;
		int m = 0;

		for (b = a; b < n && !strcmp(sig[order[a]], sig[order[b]]); b++)
			tmp[m++] = order[b];
		list = node_list(t, tmp, m);
		printf("  %d node%s with island%s of %s GPUs: %s\n", m,
		       m == 1 ? "" : "s", strchr(sig[order[a]], '+') ? "s" : "",
		       sig[order[a]], list ? list : "?");
		free(list);
	}
out:
	for (int i = 0; sig && i < t->nnodes; i++)
		free(sig[i]);
	free(sig);
	free(order);
}

static int cmd_show(int argc, char **argv)
{
	struct show sh = {0};
	isle_topo *t;
	int nloose = 0, rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s show FILE\n", isle__ctl_prog);
		return ISLECTL_EXIT_USAGE;
	}
	t = isle__ctl_load(argv[1]);
	if (!t)
		return 1;
	sh.t = t;
	sh.seen = calloc((size_t)t->nswitches + 1, 1);
	sh.tmp = malloc(((size_t)t->nnodes + 1) * sizeof(int));
	if (!sh.seen || !sh.tmp)
		goto out;

	printf("cluster %s: %d nodes, %ld GPUs, %d islands, %d switches, "
	       "%d racks\n",
	       t->name ? t->name : "(unnamed)", t->nnodes, t->total_gpus,
	       t->nislands, t->nswitches, t->nracks);
	printf("tiers (GB/s per GPU, us):");
	for (int k = 0; k < ISLE_TIER_COUNT; k++)
		printf(" %s %g/%g%s", isle_tier_name(k),
		       isle_topo_tier_bw(t, k), isle_topo_tier_lat(t, k),
		       k < ISLE_TIER_COUNT - 1 ? "," : "\n");
	printf("groups: %d leaf, %d spine, %d core\n",
	       t->ngroups[ISLE_TIER_LEAF], t->ngroups[ISLE_TIER_SPINE],
	       t->ngroups[ISLE_TIER_CORE]);

	printf("fabric:\n");
	for (int s = 0; s < t->nswitches; s++)
		if (!t->switches[s].nup)
			show_switch(&sh, s, 0);
	for (int s = 0; s < t->nswitches; s++) /* cycles without a root */
		if (!sh.seen[s])
			show_switch(&sh, s, 0);
	for (int i = 0; i < t->nnodes; i++)
		if (t->nodes[i].leaf < 0)
			sh.tmp[nloose++] = i;
	if (nloose) {
		char *list = node_list(t, sh.tmp, nloose);

		printf("  not on any switch: %s\n", list ? list : "?");
		free(list);
	}

	printf("islands:\n");
	show_islands(t, sh.tmp);

	if (t->nracks)
		printf("racks:\n");
	for (int r = 0; r < t->nracks; r++) {
		char *list =
		    node_list(t, t->racks[r].nodes, t->racks[r].nnodes);

		printf("  %s (%d node%s): %s\n", t->racks[r].name,
		       t->racks[r].nnodes, t->racks[r].nnodes == 1 ? "" : "s",
		       list ? list : "?");
		free(list);
	}
	rc = isle__ctl_close_out(stdout, NULL);
out:
	free(sh.seen);
	free(sh.tmp);
	isle_topo_destroy(t);
	return rc;
}

/* --- emit ----------------------------------------------------------------- */

static int cmd_emit(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"node", required_argument, NULL, 'n'},
	    {"dev-dir", required_argument, NULL, 'd'},
	    {"cores", required_argument, NULL, 'c'},
	    {"type", required_argument, NULL, 't'},
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	const char *node = NULL, *dev_dir = NULL, *outp = NULL, *kind;
	const char *cores = NULL, *type = NULL;
	isle_topo *t;
	FILE *out, *mem;
	char *text = NULL;
	size_t len = 0;
	int c, ni = -1, rc;

	while ((c = getopt_long(argc, argv, "n:d:c:t:o:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cores = optarg;
			break;
		case 't':
			type = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'd':
			dev_dir = optarg;
			break;
		case 'o':
			outp = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2)
		goto usage;
	kind = argv[optind];
	if (strcmp(kind, "slurm-tree") && strcmp(kind, "slurm-block") &&
	    strcmp(kind, "gres") && strcmp(kind, "nccl-xml") &&
	    strcmp(kind, "fabric")) {
		fprintf(stderr, "%s: emit: unknown format '%s'\n",
			isle__ctl_prog, kind);
		goto usage;
	}
	if (type && (strcmp(kind, "gres") || !isle_gres_type_valid(type))) {
		fprintf(stderr,
			"%s: emit: --type '%s': a GRES type of letters, "
			"digits, '_', '.', '-' (emit gres only)\n",
			isle__ctl_prog, type);
		return ISLECTL_EXIT_USAGE;
	}
	t = isle__ctl_load(argv[optind + 1]);
	if (!t)
		return 1;
	if (node) {
		ni = isle_topo_find_node(t, node);
		if (ni < 0) {
			fprintf(stderr, "%s: emit: no node '%s' in %s\n",
				isle__ctl_prog, node, argv[optind + 1]);
			isle_topo_destroy(t);
			return 1;
		}
	} else if (!strcmp(kind, "nccl-xml")) {
		if (t->nnodes != 1) {
			fprintf(stderr,
				"%s: emit nccl-xml: --node is needed "
				"(one file per node)\n",
				isle__ctl_prog);
			isle_topo_destroy(t);
			return ISLECTL_EXIT_USAGE;
		}
		ni = 0;
	}
	/* Into memory first: a bad --cores must not truncate the admin's
	 * existing -o file (e.g. /etc/slurm/gres.conf). */
	mem = open_memstream(&text, &len);
	if (!mem) {
		rc = -ENOMEM;
	} else if (!strcmp(kind, "slurm-tree")) {
		rc = isle_emit_slurm_tree(t, mem);
	} else if (!strcmp(kind, "slurm-block")) {
		rc = isle_emit_slurm_block(t, mem);
	} else if (!strcmp(kind, "gres")) {
		rc = isle_emit_gres(t, ni, dev_dir, cores, type, mem);
	} else if (!strcmp(kind, "fabric")) {
		rc = isle_emit_fabric(t, mem);
	} else {
		rc = isle_emit_nccl_xml(t, ni, mem);
	}
	if (mem && fclose(mem) && !rc)
		rc = -ENOMEM;
	isle_topo_destroy(t);
	if (rc == -EINVAL && cores)
		fprintf(stderr,
			"%s: emit gres: bad --cores '%s' (want "
			"\"0-15\" or \"0:0-31;1:32-63\")\n",
			isle__ctl_prog, cores);
	else if (rc)
		fprintf(stderr, "%s: emit %s: %s\n", isle__ctl_prog, kind,
			strerror(-rc));
	if (!rc) {
		out = isle__ctl_open_out(outp);
		if (!out)
			rc = 1;
		else if (len)
			fwrite(text, 1, len, out);
		if (out)
			rc = isle__ctl_close_out(out, outp);
	}
	free(text);
	return rc ? 1 : 0;
usage:
	fprintf(stderr,
		"usage: %s emit slurm-tree|slurm-block|gres|nccl-xml|fabric "
		"[--node N] [--dev-dir DIR] [--cores LIST|N:LIST;...] "
		"[--type TYPE] [-o OUT] FILE\n",
		isle__ctl_prog);
	return ISLECTL_EXIT_USAGE;
}

/* --- build ---------------------------------------------------------------- */

static int json_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 &&
	       strcmp(d->d_name + n - 5, ".json") == 0;
}

/* Adds path, or every *.json of the directory path (sorted), to the list
 * *files (grown as needed; the strings are new and the caller frees them). */
static int add_node_json(const char *path, char ***files, int *n, int *cap)
{
	struct dirent **ents = NULL;
	int ne, rc = 0;
	DIR *d = opendir(path);

	if (!d) {
		ents = NULL;
		ne = 0;
	} else {
		closedir(d);
		ne = scandir(path, &ents, json_name, alphasort);
		if (ne < 0) {
			fprintf(stderr, "%s: %s: %s\n", isle__ctl_prog, path,
				strerror(errno));
			return 1;
		}
	}
	for (int i = 0; i < (d ? ne : 1); i++) {
		char *file = NULL;

		if (!rc && *n + 1 > *cap) {
			int nc = *cap ? *cap * 2 : 16;
			char **p = realloc(*files, (size_t)nc * sizeof(*p));

			if (!p)
				rc = 1;
			else {
				*files = p;
				*cap = nc;
			}
		}
		if (!rc &&
		    (d ? asprintf(&file, "%s/%s", path, ents[i]->d_name) < 0
		       : !(file = strdup(path))))
			rc = 1;
		if (!rc)
			(*files)[(*n)++] = file;
		if (d)
			free(ents[i]);
	}
	free(ents);
	if (rc)
		fprintf(stderr, "%s: out of memory\n", isle__ctl_prog);
	return rc;
}

static int cmp_pstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 if the node file's host is one of hosts[n] (sorted); 0 if not; -1 if
 * the file cannot be read (the merge then reports why). */
static int node_file_wanted(const char *path, char **hosts, int n)
{
	json_object *root = json_object_from_file(path), *h;
	const char *name;
	int rc = -1;

	if (root && json_object_object_get_ex(root, "hostname", &h) &&
	    (name = json_object_get_string(h)))
		rc = bsearch(&name, hosts, (size_t)n, sizeof(char *),
			     cmp_pstr) != NULL;
	json_object_put(root);
	return rc;
}

/* Drops the node files of hosts outside --nodes from files[*n]. */
static int filter_node_files(char **files, int *n, const char *list)
{
	char **hosts = NULL, err[256];
	int nhosts = 0, k = 0;

	if (isle_hostlist_expand(list, &hosts, &nhosts, err, sizeof(err))) {
		fprintf(stderr, "%s: --nodes '%s': %s\n", isle__ctl_prog, list,
			err);
		return 1;
	}
	qsort(hosts, (size_t)nhosts, sizeof(char *), cmp_pstr);
	for (int i = 0; i < *n; i++) {
		if (node_file_wanted(files[i], hosts, nhosts))
			files[k++] = files[i];
		else
			free(files[i]);
	}
	*n = k;
	isle_hostlist_free(hosts, nhosts);
	return 0;
}

static int cmd_build(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"ibnetdiscover", required_argument, NULL, 'i'},
	    {"map", required_argument, NULL, 'm'},
	    {"spines", required_argument, NULL, 's'},
	    {"node-json", required_argument, NULL, 'n'},
	    {"overrides", required_argument, NULL, 'r'},
	    {"name", required_argument, NULL, 'N'},
	    {"nodes", required_argument, NULL, 'w'},
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	const char *dump = NULL, *map = NULL, *over = NULL, *outp = NULL;
	const char *name = NULL, *spines = NULL, *subset = NULL;
	const char **node_json = calloc((size_t)argc + 1, sizeof(char *));
	char **files = NULL;
	int nnode_json = 0, nfiles = 0, capfiles = 0, c, rc = 1;
	char err[1024];
	isle_topo *t = NULL;

	if (!node_json)
		return 1;
	while ((c = getopt_long(argc, argv, "i:m:s:n:r:N:w:o:", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'i':
			dump = optarg;
			break;
		case 'm':
			map = optarg;
			break;
		case 's':
			spines = optarg;
			break;
		case 'n':
			node_json[nnode_json++] = optarg;
			break;
		case 'r':
			over = optarg;
			break;
		case 'N':
			name = optarg;
			break;
		case 'w':
			subset = optarg;
			break;
		case 'o':
			outp = optarg;
			break;
		default:
			goto usage;
		}
	}
	/* "--node-json a.json b.json": the extra words are node files too. */
	if (optind < argc && !nnode_json)
		goto usage;
	while (optind < argc)
		node_json[nnode_json++] = argv[optind++];
	if (!dump && !nnode_json && !over)
		goto usage;
	if ((map || spines) && !dump)
		goto usage;

	isle_topo_set_warn(warn_stderr, "warning");
	t = isle_topo_create();
	if (!t)
		goto out;
	if (name && !(t->name = strdup(name)))
		goto out;
	if (dump) {
		/* As isle_ibnd_load: a GUID map names the hosts, so CAs it
		 * leaves out stay hosts under their dump id. */
		struct isle_ibnd_opts o = {
		    .guid_map = map,
		    .spine_map = spines,
		    .flags = map ? ISLE_IBND_KEEP_ANONYMOUS : 0,
		    .nodes = subset,
		};

		if (isle_ibnd_load_opts(t, dump, &o, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
			goto out;
		}
	}
	for (int i = 0; i < nnode_json; i++)
		if (add_node_json(node_json[i], &files, &nfiles, &capfiles))
			goto out;
	if (subset && filter_node_files(files, &nfiles, subset))
		goto out;
	/* All node files at once: nodes sharing an NVML fabric clique become
	 * one multi-node NVLink domain (GB200 NVL72). */
	if (nfiles &&
	    isle_topo_merge_node_json_files(t, (const char *const *)files,
					    nfiles, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
		goto out;
	}
	/* Before the overrides, which may set the tier themselves. */
	if (nfiles && isle_topo_derive_nvlink_bw(t) > 0)
		fprintf(stderr,
			"%s: island tier: %g GB/s per GPU, from the GPUs' "
			"NVLink links\n",
			isle__ctl_prog, t->tier[ISLE_TIER_ISLAND].bw_gbps);
	if (over && isle_topo_merge_json(t, over, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
		goto out;
	}
	if (isle_topo_finalize(t, err, sizeof(err))) {
		fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
		goto out;
	}
	if (outp && strcmp(outp, "-")) {
		if (isle_topo_save(t, outp, err, sizeof(err))) {
			fprintf(stderr, "%s: error: %s\n", isle__ctl_prog, err);
			goto out;
		}
	} else {
		char *json = isle_topo_to_json(t);

		if (!json)
			goto out;
		fputs(json, stdout);
		free(json);
		if (isle__ctl_close_out(stdout, NULL))
			goto out;
	}
	fprintf(stderr,
		"%s: built %s: %d nodes, %ld GPUs, %d islands, "
		"%d switches\n",
		isle__ctl_prog, outp ? outp : "stdout", t->nnodes,
		t->total_gpus, t->nislands, t->nswitches);
	rc = 0;
out:
	isle_topo_destroy(t);
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(node_json);
	return rc;
usage:
	fprintf(stderr,
		"usage: %s build [--ibnetdiscover DUMP [--map GUIDMAP] "
		"[--spines SPINEFILE]] "
		"[--node-json DIR_OR_FILE...] [--overrides FILE] [--name NAME] "
		"[--nodes HOSTLIST] [-o cluster.json]\n",
		isle__ctl_prog);
	free(node_json);
	return ISLECTL_EXIT_USAGE;
}

/* --- dispatch ------------------------------------------------------------- */

static int cmd_help(int argc, char **argv);

static const struct isle__cmd commands[] = {
    {"build",
     "[--ibnetdiscover DUMP [--map MAP] [--spines FILE]] "
     "[--node-json PATH...] [--overrides FILE] [--name NAME] "
     "[--nodes HOSTLIST] [-o OUT]",
     "build a cluster file from discovery data", cmd_build},
    {"validate", "FILE", "check a cluster file (exit 1 on errors)",
     cmd_validate},
    {"show", "FILE", "print fabric, islands and racks", cmd_show},
    {"emit",
     "slurm-tree|slurm-block|gres|nccl-xml [--node N] "
     "[--dev-dir DIR] [--cores SPEC] [--type TYPE] [-o OUT] FILE",
     "write Slurm topology.conf, gres.conf or NCCL topology XML", cmd_emit},
    {"dot", "[-o OUT.png|.svg|.pdf|.dot] [--jobs JOBSFILE] FILE",
     "draw the cluster with Graphviz", isle__cmd_dot},
    {"explain", "[--state-dir DIR] [--json] JOBID",
     "why the Slurm plugin placed a job where it did", isle__cmd_explain},
    {"help", "", "this text", cmd_help},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static int cmd_help(int argc, char **argv)
{
	printf("usage: %s COMMAND [ARGS]\n\n", isle__ctl_prog);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].fn)
			printf("  %s %s\n      %s\n", commands[i].name,
			       commands[i].usage, commands[i].help);
	printf("\nCluster file format: docs/cluster-file.md\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return argc < 2 ? (cmd_help(0, NULL), ISLECTL_EXIT_USAGE)
				: cmd_help(0, NULL);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		if (!commands[i].fn) {
			fprintf(stderr,
				"%s: '%s' is not built into this "
				"islectl\n",
				isle__ctl_prog, argv[1]);
			return 1;
		}
		optind = 1; /* each subcommand parses its own options */
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "%s: unknown command '%s' (try '%s help')\n",
		isle__ctl_prog, argv[1], isle__ctl_prog);
	return ISLECTL_EXIT_USAGE;
}
