/*
 * isle_topo.h - the isle cluster model.
 *
 * One model of the cluster: nodes and their GPUs, NVLink islands (inside a
 * node, or spanning nodes as in a GB200 NVL72 rack), NICs and rails, racks,
 * and InfiniBand switches in levels (leaf, spine, core). Everything else in
 * isle (placement, the Slurm plugin, the agent, the comm shim) reads it.
 *
 * Error contract (the whole library):
 *   - Functions returning int return 0 (or a non-negative index) on success
 *     and a negative errno on failure (-EINVAL bad input, -ENOMEM, -ENOENT,
 *     -EEXIST duplicate name, -ERANGE out of range, -EIO on I/O errors).
 *   - Functions taking (char *err, size_t errlen) also write a one-line,
 *     NUL-terminated message on failure. Config and dump errors name the file
 *     and the line ("x.out:17: ...") or the JSON path
 *     ("cluster.json: $.nodes[3].gpus[1].island: unknown island 'foo'").
 *     err may be NULL.
 *   - Warnings (non-fatal) go to an optional isle_topo_warn_fn callback.
 *
 * Ownership: an isle_topo is created by isle_topo_create() or a loader and
 * owned by the caller, who frees it with isle_topo_destroy(). All strings and
 * arrays reachable from it belong to it. Pointers into it stay valid until the
 * next mutating call (add_*) or destroy. After isle_topo_finalize() the model
 * is read-only and may be shared by threads for reading.
 */
#ifndef ISLE_TOPO_H
#define ISLE_TOPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ISLE_TOPO_SCHEMA_VERSION 1
/* GPU masks are uint64_t: at most 64 GPUs per node. */
#define ISLE_MAX_GPUS_PER_NODE 64

/*
 * Communication tiers between two GPUs, from tightest to loosest. The tier of
 * a pair is the lowest one they share.
 */
typedef enum isle_tier {
	ISLE_TIER_ISLAND = 0, /* same NVLink island (node-local or multi-node) */
	ISLE_TIER_NODE,       /* same node, different islands (PCIe / SMP) */
	ISLE_TIER_LEAF,       /* same leaf group: leaf switch or rail-optimized SU */
	ISLE_TIER_SPINE,      /* same spine group (pod) */
	ISLE_TIER_CORE,       /* across the core, or unknown */
	ISLE_TIER_COUNT
} isle_tier;

typedef enum isle_sw_level {
	ISLE_SW_LEAF = 0,
	ISLE_SW_SPINE = 1,
	ISLE_SW_CORE = 2,
	ISLE_SW_UNKNOWN = 3
} isle_sw_level;

/* Alpha-beta parameters of one tier, per GPU. */
struct isle_tier_param {
	double bw_gbps; /* GB/s (bytes) per GPU through this tier */
	double lat_us;  /* one-hop latency, microseconds */
	double oversub; /* oversubscription >= 1.0 (1.0 = non-blocking) */
};

struct isle_gpu {
	char *bus_id; /* PCI bus id "0000:07:00.0", may be NULL */
	char *model;  /* "H100-SXM5-80GB", may be NULL */
	int island;   /* index into isle_topo.islands (set by finalize) */
	int numa;     /* NUMA node, -1 if unknown */
	int nic;      /* nearest NIC, index into node's nics, -1 if none */
};

struct isle_nic {
	char *name;      /* "mlx5_0" */
	uint64_t guid;   /* port GUID, 0 if unknown */
	int rail;        /* rail number, -1 if unknown */
	int sw;          /* switch the port is cabled to, -1 if unknown */
	int numa;        /* -1 if unknown */
	double gbps;     /* link rate in Gb/s (bits), 0 if unknown */
};

struct isle_node {
	char *name;
	int ngpus;
	struct isle_gpu *gpus;
	uint16_t *nvlinks;  /* ngpus*ngpus: NVLink count between GPU i and j */
	int nnics;
	struct isle_nic *nics;
	int rack;           /* index into racks, -1 if none */
	int domain;         /* multi-node NVLink island index, -1 if none */
	/* Group id per tier (LEAF, SPINE, CORE), set by finalize; -1 unknown.
	 * group[ISLE_TIER_ISLAND] and group[ISLE_TIER_NODE] are unused. */
	int group[ISLE_TIER_COUNT];
	int leaf;           /* primary leaf switch (rail 0 / first NIC), -1 */
	int first_island;   /* lowest island index of this node (finalize) */
	int nislands;       /* number of islands touching this node */
};

struct isle_island_member {
	int node;
	int gpu;
};

struct isle_island {
	char *name;       /* "n01:nvl0" (intra-node) or the domain name */
	int multi_node;   /* 1 for a multi-node NVLink domain */
	int ngpus;
	struct isle_island_member *members; /* sorted by (node, gpu) */
	int nnodes;
	int *nodes;       /* distinct nodes, ascending */
	double bw_gbps;   /* per-GPU NVLink bandwidth, GB/s (0 = tier default) */
};

struct isle_switch {
	char *name;
	uint64_t guid;
	isle_sw_level level;
	int rail;           /* rail of a rail-optimized leaf, -1 otherwise */
	int nup;
	int *up;            /* parent switches */
	int ndown;
	int *down;          /* child switches */
	int nnodes;
	int *nodes;         /* nodes cabled directly (any NIC), ascending */
	double gbps;        /* port rate, Gb/s */
};

struct isle_rack {
	char *name;
	int nnodes;
	int *nodes;
};

struct isle__index; /* private name -> index hash */

typedef struct isle_topo {
	char *name;
	int nnodes;
	struct isle_node *nodes;
	int nislands;
	struct isle_island *islands;
	int nswitches;
	struct isle_switch *switches;
	int nracks;
	struct isle_rack *racks;
	struct isle_tier_param tier[ISLE_TIER_COUNT];
	int ngroups[ISLE_TIER_COUNT]; /* group count per tier (finalize) */
	long total_gpus;
	int finalized;
	struct isle__index *node_idx, *switch_idx, *island_idx;
	/* Private growth capacities. */
	int cap_nodes, cap_islands, cap_switches, cap_racks;
} isle_topo;

typedef void (*isle_topo_warn_fn)(void *arg, const char *msg);

/* Creates an empty model with default tier parameters. Caller destroys. */
isle_topo *isle_topo_create(void);

/* Frees t and everything it owns. NULL is a no-op. */
void isle_topo_destroy(isle_topo *t);

/* Sets the callback that receives warnings from loaders and finalize. */
void isle_topo_set_warn(isle_topo_warn_fn fn, void *arg);

/* --- Building (before finalize) ---------------------------------------- */

/* Adds a node with ngpus GPUs (0..64). Returns its index or -EEXIST/-EINVAL.
 * The name is copied. */
int isle_topo_add_node(isle_topo *t, const char *name, int ngpus);

/* Sets GPU details; strings are copied, NULL leaves them unset. */
int isle_topo_set_gpu(isle_topo *t, int node, int gpu, const char *bus_id,
		      const char *model, int numa);

/* Records nlinks NVLinks between GPUs a and b of a node (symmetric). */
int isle_topo_set_nvlink(isle_topo *t, int node, int a, int b, int nlinks);

/* Adds a NIC to a node; returns its index within the node. */
int isle_topo_add_nic(isle_topo *t, int node, const char *name, uint64_t guid,
		      int rail, double gbps, int numa);

/* Sets the nearest NIC of a GPU. */
int isle_topo_set_gpu_nic(isle_topo *t, int node, int gpu, int nic);

/* Adds a switch; returns its index or -EEXIST. */
int isle_topo_add_switch(isle_topo *t, const char *name, uint64_t guid,
			 isle_sw_level level);

/* Cables child below parent (both switch indices). Duplicates are ignored. */
int isle_topo_link_switches(isle_topo *t, int parent, int child);

/* Cables a node's NIC (or the node, nic = -1) to a switch. */
int isle_topo_attach_node(isle_topo *t, int sw, int node, int nic);

/* Declares a multi-node NVLink domain over the given nodes; all their GPUs
 * form one island. Returns the island index. */
int isle_topo_add_domain(isle_topo *t, const char *name, const int *nodes,
			 int nnodes, double bw_gbps);

/* Adds a rack over the given nodes; returns its index. */
int isle_topo_add_rack(isle_topo *t, const char *name, const int *nodes,
		       int nnodes);

/*
 * Derives everything else: intra-node islands from the NVLink matrices
 * (connected components; a GPU without NVLink is its own island), switch
 * levels where unknown (leafs hold nodes, spines hold leafs, cores the rest),
 * leaf groups (nodes sharing a leaf switch, so a rail-optimized scalable unit
 * is one group), spine groups, and the lookup indices. Idempotent; must run
 * before any query below. Returns 0 or -EINVAL with err filled.
 */
int isle_topo_finalize(isle_topo *t, char *err, size_t errlen);

/* --- Queries (after finalize; O(1) unless noted) ----------------------- */

/* Node index by name, or -1. */
int isle_topo_find_node(const isle_topo *t, const char *name);
/* Switch index by name, or -1. */
int isle_topo_find_switch(const isle_topo *t, const char *name);
/* Island index by name, or -1. */
int isle_topo_find_island(const isle_topo *t, const char *name);

/* Tier between two GPUs (node, gpu). */
isle_tier isle_topo_gpu_tier(const isle_topo *t, int na, int ga, int nb, int gb);

/* Tier between two nodes: ISLAND if same multi-node domain, NODE if same
 * node, else LEAF/SPINE/CORE by group. */
isle_tier isle_topo_node_tier(const isle_topo *t, int na, int nb);

/* Effective per-GPU bandwidth (GB/s) and latency (us) of a tier, with
 * oversubscription applied to the bandwidth. */
double isle_topo_tier_bw(const isle_topo *t, isle_tier tier);
double isle_topo_tier_lat(const isle_topo *t, isle_tier tier);

/* "island", "node", "leaf", "spine", "core"; NULL for bad values. */
const char *isle_tier_name(isle_tier tier);
/* Parses a tier name; returns the tier or -1. */
int isle_tier_parse(const char *s);
const char *isle_sw_level_name(isle_sw_level l);

/* --- Cluster file (JSON, json-c) --------------------------------------- */

/* Loads and finalizes a cluster file. On success *out is a new model the
 * caller destroys. On failure *out is NULL and err names file and JSON
 * path. Schema: docs/cluster-file.md. */
int isle_topo_load(const char *path, isle_topo **out, char *err, size_t errlen);

/* Same, from a NUL-terminated buffer; name is used in messages. */
int isle_topo_load_buf(const char *buf, const char *name, isle_topo **out,
		       char *err, size_t errlen);

/* Writes the model as a cluster file (atomic: temp file + rename). */
int isle_topo_save(const isle_topo *t, const char *path, char *err,
		   size_t errlen);

/* Returns a newly allocated JSON string of the model; caller frees. */
char *isle_topo_to_json(const isle_topo *t);

#ifdef __cplusplus
}
#endif
#endif /* ISLE_TOPO_H */
