/*
 * isle_agent.h - isle-agent: what runs on each compute node.
 *
 * This header: node discovery (`isle-agent discover`), which describes the
 * node's GPUs, their NVLink wiring and islands, its InfiniBand NICs and
 * NUMA affinity as a node JSON file (docs/node-json.md) that `islectl
 * build` merges into the cluster model. The per-job plan (`isle-agent
 * plan`) is in plan.h.
 *
 * Error contract: as in isle_topo.h. Functions return 0 or a negative errno
 * and fill (char *err, size_t errlen) with a one-line message naming the
 * file or device; err may be NULL. A backend that is not present on this
 * machine (no NVML library, no RDMA devices) is not an error: it returns
 * -ENOENT and leaves the node as it was.
 */
#ifndef ISLE_AGENT_H
#define ISLE_AGENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the NVLink matrix came from; "none" means unknown, not absent. */
typedef enum isle_nvlink_source {
	ISLE_NVLINK_NONE = 0, /* nothing said anything about NVLink */
	ISLE_NVLINK_HWLOC,    /* hwloc's "NVLinkBandwidth" distances */
	ISLE_NVLINK_NVML      /* NVML, queried on this node */
} isle_nvlink_source;

struct isle_agent_gpu {
	char bus_id[32];    /* "0000:07:00.0" (lower case) */
	char *model;	    /* "Tesla V100-SXM3-32GB-H"; NULL if unknown */
	char *uuid;	    /* "GPU-..."; NULL if unknown */
	char *osdevs;	    /* hwloc OS devices, "nvml0,cuda0"; NULL if none */
	int numa;	    /* NUMA node, -1 if unknown */
	int nvswitch_links; /* NVLinks into the node's NVSwitch fabric */
	int island;	    /* derived: index of its island (0-based) */
	int nic;	    /* derived: nearest NIC index, -1 if none */
};

struct isle_agent_nic {
	char name[64];	    /* "mlx5_0" */
	char bus_id[32];    /* PCI bus id, "" if unknown */
	uint64_t node_guid; /* 0 if unknown */
	uint64_t port_guid; /* port 1 GUID; 0 if unknown */
	int port;	    /* port number the fields below describe */
	int lid;	    /* -1 if unknown */
	int state;	    /* IB port state (4 = active), -1 if unknown */
	int link_layer_ib;  /* 1 InfiniBand, 0 Ethernet (RoCE), -1 unknown */
	double gbps;	    /* active rate, Gb/s; 0 if unknown */
	int numa;	    /* -1 if unknown */
	uint64_t near_gpus; /* derived: GPUs closest to it on PCIe (mask) */
};

/* What discovery found on one node. Created by isle_agent_node_create,
 * owned by the caller, freed by isle_agent_node_destroy. */
typedef struct isle_agent_node {
	char *hostname; /* NULL if nothing named the host */
	char *source;	/* "hwloc live", "hwloc xml FILE", ... */
	int ngpus;
	struct isle_agent_gpu *gpus; /* by PCI bus id */
	uint16_t *nvlinks;	     /* ngpus*ngpus NVLink counts (symmetric) */
	isle_nvlink_source nvlink_source;
	int nnvswitches; /* NVSwitch devices seen (one fabric) */
	int nislands;	 /* derived */
	int nnics;
	struct isle_agent_nic *nics;
	int nnuma; /* NUMA nodes */
	/* Multi-node NVLink domain (GB200 NVL72): NVML fabric info. */
	char *fabric_cluster; /* cluster UUID, NULL if none */
	int fabric_clique;    /* clique id, -1 if none */
	char **warnings;      /* things a human should know, e.g. SXM GPUs */
	int nwarnings;	      /*   with no NVLink data */
} isle_agent_node;

isle_agent_node *isle_agent_node_create(void);
void isle_agent_node_destroy(isle_agent_node *n);

/* --- Backends (agent/discover*.c) ---------------------------------------- */

/*
 * Reads GPUs, NICs, NUMA affinity and hwloc's NVLinkBandwidth matrix from
 * hwloc: the live machine (xml_path NULL) or an XML export. Fills an empty
 * node. Errors name the XML file.
 */
int isle_agent_discover_hwloc(isle_agent_node *n, const char *xml_path,
			      char *err, size_t errlen);

/*
 * Refines GPUs from NVML (dlopen("libnvidia-ml.so.1")): NVLink state and
 * remote PCI ids (replacing the hwloc matrix), GPU fabric cluster UUID and
 * clique id. -ENOENT when NVML is not installed or sees no GPU.
 */
int isle_agent_discover_nvml(isle_agent_node *n, char *err, size_t errlen);

/*
 * Refines NICs from libibverbs: port GUIDs, LIDs, state, rate, link layer;
 * adds RDMA devices hwloc did not report. -ENOENT when there is none.
 */
int isle_agent_discover_ibv(isle_agent_node *n, char *err, size_t errlen);

/* Derives islands (connected NVLink components; all NVSwitches of a node are
 * one fabric) and nearest NICs. Called by the backends; idempotent. */
void isle_agent_derive(isle_agent_node *n);

/* Adds a printf-style warning to the node (shown in its JSON). */
void isle_agent_warn(isle_agent_node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* --- Node JSON (agent/discover_json.c, docs/node-json.md) --------------- */

/* Returns the node as a new JSON string the caller frees; NULL on ENOMEM. */
char *isle_agent_node_to_json(const isle_agent_node *n);

/* Writes the node JSON to path ("-" = stdout), atomically for files. */
int isle_agent_node_write(const isle_agent_node *n, const char *path, char *err,
			  size_t errlen);

/* --- Command line (agent/isle-agent.c) ---------------------------------- */

/* One `isle-agent NAME ...` subcommand. run() gets argv[0] = NAME and
 * returns the process exit status. */
struct isle_agent_cmd {
	const char *name;
	const char *summary; /* one line for `isle-agent help` */
	int (*run)(int argc, char **argv);
};

/* Subcommands, each defined next to its code. */
extern const struct isle_agent_cmd isle_agent_cmd_discover;
extern const struct isle_agent_cmd isle_agent_cmd_fabric;
/* `isle-agent plan write|show|remove`: the per-job plan (agent/plan_cmd.c). */
extern const struct isle_agent_cmd isle_agent_cmd_plan;

#ifdef __cplusplus
}
#endif
#endif /* ISLE_AGENT_H */
