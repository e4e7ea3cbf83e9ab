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
#include <stdio.h>

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
	ISLE_TIER_ISLAND =
	    0,		 /* same NVLink island (node-local or multi-node) */
	ISLE_TIER_NODE,	 /* same node, different islands (PCIe / SMP) */
	ISLE_TIER_LEAF,	 /* same leaf group: leaf switch or rail-optimized SU */
	ISLE_TIER_SPINE, /* same spine group (pod) */
	ISLE_TIER_CORE,	 /* across the core, or unknown */
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
	double lat_us;	/* one-hop latency, microseconds */
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
	char *name;    /* "mlx5_0" */
	uint64_t guid; /* port GUID, 0 if unknown */
	int rail;      /* rail number, -1 if unknown */
	int sw;	       /* switch the port is cabled to, -1 if unknown */
	int numa;      /* -1 if unknown */
	double gbps;   /* link rate in Gb/s (bits), 0 if unknown */
};

struct isle_node {
	char *name;
	int ngpus;
	struct isle_gpu *gpus;
	uint16_t *nvlinks; /* ngpus*ngpus: NVLink count between GPU i and j */
	int nnics;
	struct isle_nic *nics;
	int rack;   /* index into racks, -1 if none */
	int domain; /* multi-node NVLink island index, -1 if none */
	/* Group id per tier (LEAF, SPINE, CORE), set by finalize; -1 unknown.
	 * group[ISLE_TIER_ISLAND] and group[ISLE_TIER_NODE] are unused. */
	int group[ISLE_TIER_COUNT];
	int leaf;	  /* primary leaf switch (rail 0 / first NIC), -1 */
	int first_island; /* lowest island index of this node (finalize) */
	int nislands;	  /* number of islands touching this node */
};

struct isle_island_member {
	int node;
	int gpu;
};

struct isle_island {
	char *name;	/* "n01:nvl0" (intra-node) or the domain name */
	int multi_node; /* 1 for a multi-node NVLink domain */
	int ngpus;
	struct isle_island_member *members; /* sorted by (node, gpu) */
	int nnodes;
	int *nodes;	/* distinct nodes, ascending */
	double bw_gbps; /* per-GPU NVLink bandwidth, GB/s (0 = tier default) */
};

struct isle_switch {
	char *name;
	uint64_t guid;
	isle_sw_level level;
	int rail; /* rail of a rail-optimized leaf, -1 otherwise */
	int nup;
	int *up; /* parent switches */
	int ndown;
	int *down; /* child switches */
	int nnodes;
	int *nodes;  /* nodes cabled directly (any NIC), ascending */
	double gbps; /* port rate, Gb/s */
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

/* Changes the GPU count of a node (0..64), e.g. when a discovery file fills
 * in a node first seen in a fabric dump. Details and NVLinks of GPUs below
 * the new count are kept. */
int isle_topo_set_ngpus(isle_topo *t, int node, int ngpus);

/* Rack index by name, or -1. O(racks). */
int isle_topo_find_rack(const isle_topo *t, const char *name);

/* Moves a node into rack (index), or out of any rack with rack = -1. */
int isle_topo_set_node_rack(isle_topo *t, int node, int rack);

/* Sets a switch's rail (-1 = none) and port rate in Gb/s (0 = unknown). */
int isle_topo_set_switch(isle_topo *t, int sw, int rail, double gbps);

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

/*
 * The order in which a job's nodes get MPI ranks when the task layout
 * follows the topology (Slurm 26.05's topology_p_get_rank): by leaf group,
 * then NVLink island (multi-node domain, else the node's first island),
 * then cluster-file order, so each TP group's ranks stay inside an island.
 * nodes[i] is a model node index, or -1 for a node the model lacks (those
 * go last, in input order). On return order[r] is the position in nodes[]
 * of the node with rank r. The one definition of this order: the topology
 * plugin's get_rank and the agent's plan builder both call it. Returns 0,
 * -EINVAL or -ENOMEM.
 */
int isle_topo_rank_order(const isle_topo *t, const int *nodes, int n,
			 int *order);

/* Tier between two GPUs (node, gpu). */
isle_tier isle_topo_gpu_tier(const isle_topo *t, int na, int ga, int nb,
			     int gb);

/* Tier between two nodes: ISLAND if same multi-node domain, NODE if same
 * node, else LEAF/SPINE/CORE by group. */
isle_tier isle_topo_node_tier(const isle_topo *t, int na, int nb);

/*
 * Sets the island tier's bandwidth from the NVLink links the GPUs have (the
 * NVLink matrix, capped at the links per GPU of the model's generation,
 * times GB/s per link: V100 6 x 25, A100 12 x 25, H100 18 x 25, B200
 * 18 x 50), the lowest of all GPUs with NVLink. Only while the tier is at
 * its default (450) and every such GPU's model is known. Returns the value
 * set, or 0.
 */
double isle_topo_derive_nvlink_bw(isle_topo *t);

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

/*
 * Merges a cluster file (same schema; every field optional) into a model
 * that is not finalized yet: objects are matched by name (nodes, their GPUs
 * and NICs, switches, racks); given fields override, new objects are added,
 * tiers override per field. Used for admin overrides on top of discovered
 * data. On error t may hold part of the file; err names file and JSON path.
 */
int isle_topo_merge_json(isle_topo *t, const char *path, char *err,
			 size_t errlen);

/* Writes the model as a cluster file (atomic: temp file + rename).
 * -EINVAL when a node or switch name holds a character the loader refuses
 * (blanks, , [ ] = # "): such a file could not be read back. */
int isle_topo_save(const isle_topo *t, const char *path, char *err,
		   size_t errlen);

/* Writes len bytes to path: beside it then renamed over it (mode applied),
 * so readers never see half a file. A symlink is followed so the link
 * survives; a device or FIFO (-o /dev/null, /dev/stdout) is written into,
 * never replaced. Returns 0 or a negative errno with err filled. */
int isle_write_file(const char *path, const char *data, size_t len,
		    unsigned mode, char *err, size_t errlen);

/* Returns a newly allocated JSON string of the model; caller frees. */
char *isle_topo_to_json(const isle_topo *t);

/* ======================================================================
 * InfiniBand fabric dumps and node discovery files
 * (topology/ibnd_*.c, topology/node_json.c)
 * ====================================================================== */

/* --- ibnetdiscover dumps (topology/ibnd_parse.c, ibnd_fabric.c) --------- */

typedef enum isle_ibnd_type {
	ISLE_IBND_SWITCH = 0,
	ISLE_IBND_CA,
	ISLE_IBND_ROUTER
} isle_ibnd_type;

/* What a CA is, from the GUID map or its node description. */
typedef enum isle_ibnd_ca_kind {
	ISLE_IBND_CA_HOST = 0,	  /* "host hca" description or mapped GUID */
	ISLE_IBND_CA_AGGREGATION, /* SHARP "Aggregation Node" inside a switch */
	ISLE_IBND_CA_ANONYMOUS	  /* firmware default description, no host */
} isle_ibnd_ca_kind;

/* One connected port: a line "[port] "peer"[peer_port] ..." of the dump. */
struct isle_ibnd_port {
	int port;      /* local port number */
	int peer;      /* index of the remote node in isle_ibnd_fabric.nodes */
	int peer_port; /* remote port number */
	uint64_t guid; /* local port GUID (CA ports), 0 if not in the dump */
	int width;     /* lanes: 1, 2, 4, 8, 12; 0 if unknown */
	char speed[8]; /* "SDR" .. "XDR", "" if unknown */
	double gbps;   /* width x lane rate in Gb/s, 0 if unknown */
	int line;      /* line in the dump */
};

struct isle_ibnd_node {
	isle_ibnd_type type;
	char *id;      /* identifier as in the dump: "S-2c5eab0300b87b40" */
	char *desc;    /* node description, "" if none */
	uint64_t guid; /* node GUID (switchguid=/caguid= or from the id) */
	int nports;    /* port count from the header line */
	int lid;       /* switch LID (header) or CA port LID, -1 unknown */
	int line;      /* header line in the dump */
	int nlinks;
	struct isle_ibnd_port *links; /* connected ports, ascending port */
	/* Derived by classification (CAs). */
	isle_ibnd_ca_kind kind;
	char *host; /* host name (CA_HOST), else NULL */
	char *hca;  /* HCA name: "mlx5_5", "HCA-6"; "" if unknown */
	int rail;   /* CA: rank of the HCA name in its family; leaf
		     * switch: rail of most of its hosts; else -1 */
	/* Derived by classification (switches). */
	isle_sw_level level;
	int nhosts; /* host CAs cabled directly */
};

/* A parsed dump. Owned by the caller; free with isle_ibnd_fabric_destroy. */
typedef struct isle_ibnd_fabric {
	char *source; /* dump path as given */
	int nnodes;
	struct isle_ibnd_node *nodes; /* in dump order */
	int nswitches, ncas, nrouters;
	int nhosts; /* distinct host names */
	int nhost_cas, naggregation, nanonymous;
	int nlevel[4]; /* switches per isle_sw_level */
	int nrails;    /* rails seen (0 if no host CA) */
	long nlinks;   /* cables (each counted once) */
	/* Private. */
	int cap_nodes;
	struct isle__index *id_idx; /* id -> node index */
} isle_ibnd_fabric;

/* Options of the dump readers. Zero-initialised = defaults. */
#define ISLE_IBND_KEEP_ANONYMOUS 0x1 /* hosts named by CA id (ibmap2slurm) */
struct isle_ibnd_opts {
	const char *guid_map;  /* "H-<guid> host" / "0x<guid> host" lines */
	const char *spine_map; /* switch ids or GUIDs that are never leafs */
	unsigned flags;	       /* ISLE_IBND_* */
	/* isle_ibnd_load_opts: host list of the hosts to take ("gpu[001-064]"),
	 * NULL for all; only switches above them are kept. */
	const char *nodes;
};

/*
 * Parses an ibnetdiscover text dump (plain or -f) and classifies it: CAs
 * into hosts (GUID map first, then "host hca" descriptions), SHARP
 * aggregation nodes and anonymous CAs; rails from HCA names; switch levels
 * (leaf: host or anonymous CAs attached; spine: next to a leaf; core:
 * above). Lines before the dump (a shell prompt) are skipped with a warning.
 * On success *out is a new fabric the caller destroys; on failure *out is
 * NULL and err reads "file:line: reason". opts may be NULL.
 */
int isle_ibnd_parse(const char *dump_path, const struct isle_ibnd_opts *opts,
		    isle_ibnd_fabric **out, char *err, size_t errlen);

/* Frees f and everything it owns. NULL is a no-op. */
void isle_ibnd_fabric_destroy(isle_ibnd_fabric *f);

/* Node index of a dump id ("S-..."), or -1. */
int isle_ibnd_find(const isle_ibnd_fabric *f, const char *id);

/*
 * Returns the canonical text summary of a fabric (sorted, one switch or host
 * per line: the golden-file format, see docs/ibnd-summary.md) as a new
 * string the caller frees, or NULL when out of memory.
 */
char *isle_ibnd_summary(const isle_ibnd_fabric *f);

/*
 * Adds the fabric to a model that is not finalized: switches (named by their
 * description when it is one unique word an admin set, like "leaf-r1", else
 * by dump id; with levels, rails and rates), hosts as nodes (existing nodes of
 * the same name are filled in), their HCAs as NICs, and cables. Warns with the
 * counts of aggregation nodes and anonymous CAs left out.
 */
int isle_ibnd_to_topo(const isle_ibnd_fabric *f, isle_topo *t, char *err,
		      size_t errlen);

/* Parses a dump and adds it to t (see isle_ibnd_parse, isle_ibnd_to_topo);
 * guid_map_path may be NULL. With a GUID map, the map names the hosts and
 * CAs it does not name keep their dump id (ISLE_IBND_KEEP_ANONYMOUS, as
 * ibmap2slurm does); without one, anonymous CAs are left out. t is
 * unchanged on a parse error. */
int isle_ibnd_load(isle_topo *t, const char *dump_path,
		   const char *guid_map_path, char *err, size_t errlen);

/* Same, with all options (spine list, flags). */
int isle_ibnd_load_opts(isle_topo *t, const char *dump_path,
			const struct isle_ibnd_opts *opts, char *err,
			size_t errlen);

/* --- Node discovery files (topology/node_json.c, docs/node-json.md) --- */

/*
 * Merges one node JSON file written by `isle-agent discover` into a model
 * that is not finalized: adds the node, or fills in a node of the same name
 * found earlier (e.g. from an ibnetdiscover dump: NICs are matched by port
 * GUID, then by name). Sets GPUs, the NVLink matrix, NICs with rails, the
 * nearest NIC of each GPU and NUMA affinity. Errors name the file and the
 * JSON path. Returns the node index or a negative errno.
 */
int isle_topo_merge_node_json(isle_topo *t, const char *path, char *err,
			      size_t errlen);

/* Same, from a NUL-terminated buffer; name is used in messages. */
int isle_topo_merge_node_json_buf(isle_topo *t, const char *buf,
				  const char *name, char *err, size_t errlen);

/*
 * Merges several node files, then declares one multi-node NVLink domain per
 * NVML fabric clique ("fabric": cluster UUID + clique id) shared by two or
 * more of the nodes (GB200 NVL72). Stops at the first bad file. Returns 0.
 */
int isle_topo_merge_node_json_files(isle_topo *t, const char *const *paths,
				    int npaths, char *err, size_t errlen);

/* ====================================================================== */

/* --- Emitters (emit_*.c): configuration for other tools ---------------- */

/*
 * Each writes text to out and returns 0, -ENOMEM or -EIO. The model must be
 * finalized. Formats and choices: docs/cluster-file.md, "Emitters".
 */

/* Slurm topology.conf for topology/tree: SwitchName=... Nodes=/Switches=.
 * Each node is listed once, under its primary (rail-0) leaf. */
int isle_emit_slurm_tree(const isle_topo *t, FILE *out);

/* Slurm topology.conf for topology/block: one block per multi-node NVLink
 * domain, then one per leaf group of the remaining nodes; BlockSizes. */
int isle_emit_slurm_block(const isle_topo *t, FILE *out);

/* Slurm gres.conf lines "NodeName=n Name=gpu [Type=T] File=DIR/nvidiaI
 * [Cores=..] Links=..." for one node (index) or all (node = -1); dev_dir
 * NULL means /dev. cores (NULL: no Cores=) is one Slurm core list for every
 * GPU ("0-15") or one per NUMA node ("0:0-31;1:32-63"). type (NULL: none)
 * is the GRES type of slurm.conf's Gres=gpu:TYPE:N. -EINVAL if malformed. */
int isle_emit_gres(const isle_topo *t, int node, const char *dev_dir,
		   const char *cores, const char *type, FILE *out);

/* 1 if TYPE can be a Slurm GRES type name (letters, digits, "_.-"). */
int isle_gres_type_valid(const char *type);

/* NCCL topology XML (NCCL_TOPO_FILE) of one node. */
int isle_emit_nccl_xml(const isle_topo *t, int node, FILE *out);

/* The data network as "switch NAME LEVEL", "node NAME GPUS BRIDGE",
 * "gpus NODE ISLAND..." and "cable A B GBIT LAT_US TIER" lines, one L2
 * tree (first parents only), for the emulated fabric of the test cluster. */
int isle_emit_fabric(const isle_topo *t, FILE *out);

/* Graphviz DOT of the cluster. job_of_node (may be NULL) gives per node an
 * index into job_names or -1; nodes of a job share a fill colour. */
int isle_emit_dot(const isle_topo *t, const int *job_of_node,
		  const char *const *job_names, int njobs, FILE *out);

/* --- Checks (lint.c) ------------------------------------------------------ */

/*
 * Reports questionable but loadable content of a finalized model through
 * fn (one message per finding, "where: what"): nodes without GPUs (in the
 * fabric but no node file merged), nodes off the fabric, switches without
 * nodes or children, GPUs without a nearest NIC, empty racks. Returns the
 * number of findings.
 */
int isle_topo_lint(const isle_topo *t, isle_topo_warn_fn fn, void *arg);

/* --- Slurm host lists (hostlist.c) ------------------------------------- */

/* Most names one expression may expand to. */
#define ISLE_HOSTLIST_MAX (1 << 20)

/*
 * Expands a Slurm host list ("gpu[01-04,07],login1"; several bracket groups
 * multiply: "r[1-2]n[1-3]"; commas or blanks separate names) into *names, an
 * array of *n new strings in the order written, duplicates kept. The caller
 * frees them with isle_hostlist_free(). Returns 0, -EINVAL (err quotes the
 * expression), -ERANGE (over ISLE_HOSTLIST_MAX names) or -ENOMEM.
 */
int isle_hostlist_expand(const char *expr, char ***names, int *n, char *err,
			 size_t errlen);

/* Frees what isle_hostlist_expand() returned. NULL is a no-op. */
void isle_hostlist_free(char **names, int n);

/*
 * Compresses n names into Slurm's ranged form, sorted and deduplicated as
 * Slurm's hostlist_uniq() + hostlist_ranged_string() do:
 * {n03,n01,n02,n10,login} -> "login,n[01-03,10]". Returns a new string the
 * caller frees ("" for n == 0), NULL on -ENOMEM.
 */
char *isle_hostlist_compress(const char *const *names, int n);

#ifdef __cplusplus
}
#endif
#endif /* ISLE_TOPO_H */
