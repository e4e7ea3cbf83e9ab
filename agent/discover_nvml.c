/*
 * discover_nvml.c - NVLink wiring and multi-node NVLink domains from NVML,
 * loaded with dlopen("libnvidia-ml.so.1") so that isle-agent runs, and
 * builds, on machines without the NVIDIA driver.
 *
 * The few NVML types used are declared here: nvml.h is not needed to build,
 * and these structures are part of NVML's stable ABI.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_priv.h"

typedef int nvmlReturn_t; /* 0 = NVML_SUCCESS */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_DEVICE_NAME_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 96
#define NVML_GPU_FABRIC_UUID_LEN 16
#define NVML_GPU_FABRIC_STATE_COMPLETED 3
#define NVML_NVLINK_DEVICE_TYPE_GPU 0
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2

typedef struct {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned int state;
} nvmlGpuFabricInfo_t;

struct nvml {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned int,
				    nvmlPciInfo_t *);
	nvmlReturn_t (*link_type)(nvmlDevice_t, unsigned int, int *);
	nvmlReturn_t (*fabric)(nvmlDevice_t, nvmlGpuFabricInfo_t *);
};

/* Resolves the symbols; optional ones (newer drivers) may stay NULL.
 * ISLE_NVML_LIBRARY names another library (a driver outside the loader's
 * path, or the fake NVML of the unit tests). */
static int nvml_open(struct nvml *m)
{
	const char *path = getenv("ISLE_NVML_LIBRARY");

	memset(m, 0, sizeof(*m));
	m->lib = dlopen(path && *path ? path : "libnvidia-ml.so.1",
			RTLD_NOW | RTLD_LOCAL);
	if (!m->lib)
		return -ENOENT;
#define SYM(field, name) (*(void **)&m->field = dlsym(m->lib, name))
	SYM(init, "nvmlInit_v2");
	SYM(shutdown, "nvmlShutdown");
	SYM(error_string, "nvmlErrorString");
	SYM(count, "nvmlDeviceGetCount_v2");
	SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
	SYM(pci, "nvmlDeviceGetPciInfo_v3");
	SYM(name, "nvmlDeviceGetName");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(link_state, "nvmlDeviceGetNvLinkState");
	SYM(link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	SYM(link_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
	SYM(fabric, "nvmlDeviceGetGpuFabricInfo");
#undef SYM
	if (!m->init || !m->shutdown || !m->count || !m->handle || !m->pci) {
		dlclose(m->lib);
		m->lib = NULL;
		return -ENOSYS;
	}
	return 0;
}

static const char *nvml_str(const struct nvml *m, nvmlReturn_t r)
{
	return m->error_string ? m->error_string(r) : "NVML error";
}

static void set_str(char **dst, const char *s)
{
	char *p = strdup(s);

	if (p) {
		free(*dst);
		*dst = p;
	}
}

/* One GPU's links: direct GPU peers, and links into NVSwitches. */
static void read_links(const struct nvml *m, isle_agent_node *n, int gi,
		       nvmlDevice_t dev, uint16_t *links)
{
	unsigned l;

	if (!m->link_state || !m->link_remote)
		return;
	for (l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		nvmlPciInfo_t rp;
		int active = 0, type = -1, peer;

		if (m->link_state(dev, l, &active) != NVML_SUCCESS || !active)
			continue;
		if (m->link_remote(dev, l, &rp) != NVML_SUCCESS)
			continue;
		if (m->link_type)
			m->link_type(dev, l, &type);
		peer = isle__agent_find_gpu(n, rp.busId);
		if (peer >= 0 && peer != gi &&
		    (type < 0 || type == NVML_NVLINK_DEVICE_TYPE_GPU))
			links[gi * n->ngpus + peer]++;
		else if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH)
			n->gpus[gi].nvswitch_links++;
	}
}

static void read_fabric(const struct nvml *m, isle_agent_node *n,
			nvmlDevice_t dev)
{
	nvmlGpuFabricInfo_t fi;
	char uuid[40];
	const unsigned char *u = fi.clusterUuid;

	memset(&fi, 0, sizeof(fi));
	if (!m->fabric || m->fabric(dev, &fi) != NVML_SUCCESS ||
	    fi.state != NVML_GPU_FABRIC_STATE_COMPLETED ||
	    fi.status != NVML_SUCCESS)
		return;
	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	if (n->fabric_cluster && (strcmp(n->fabric_cluster, uuid) != 0 ||
				  n->fabric_clique != (int)fi.cliqueId)) {
		isle_agent_warn(n, "NVML: GPUs of one node report different "
				   "fabric cliques");
		return;
	}
	set_str(&n->fabric_cluster, uuid);
	n->fabric_clique = (int)fi.cliqueId;
}

int isle_agent_discover_nvml(isle_agent_node *n, char *err, size_t errlen)
{
	struct nvml m;
	uint16_t *links = NULL;
	unsigned count = 0, i;
	nvmlReturn_t r;
	int rc;

	rc = nvml_open(&m);
	if (rc == -ENOENT)
		return isle__errf(rc, err, errlen,
				  "libnvidia-ml.so.1 not found");
	if (rc < 0)
		return isle__errf(rc, err, errlen,
				  "libnvidia-ml.so.1 lacks nvmlInit_v2");
	r = m.init();
	if (r != NVML_SUCCESS) {
		rc = isle__errf(-ENOENT, err, errlen, "nvmlInit: %s",
				nvml_str(&m, r));
		goto close;
	}
	r = m.count(&count);
	if (r != NVML_SUCCESS || count == 0) {
		rc = isle__errf(-ENOENT, err, errlen, "no GPU (%s)",
				nvml_str(&m, r));
		goto out;
	}
	/* GPUs hwloc missed (no PCI access in a container) are added. */
	for (i = 0; i < count; i++) {
		nvmlDevice_t dev;
		nvmlPciInfo_t pci;
		char buf[NVML_DEVICE_NAME_BUFFER_SIZE];
		int gi;

		if (m.handle(i, &dev) != NVML_SUCCESS ||
		    m.pci(dev, &pci) != NVML_SUCCESS)
			continue;
		gi = isle__agent_find_gpu(n, pci.busId);
		if (gi < 0)
			gi = isle__agent_add_gpu(n, pci.busId);
		if (gi < 0) {
			rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
			goto out;
		}
		if (m.name && m.name(dev, buf, sizeof(buf)) == NVML_SUCCESS)
			set_str(&n->gpus[gi].model, buf);
		if (m.uuid && m.uuid(dev, buf, sizeof(buf)) == NVML_SUCCESS)
			set_str(&n->gpus[gi].uuid, buf);
	}
	links = calloc((size_t)n->ngpus * n->ngpus + 1, sizeof(*links));
	if (!links) {
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < (unsigned)n->ngpus; i++)
		n->gpus[i].nvswitch_links = 0;
	n->nnvswitches = 0;
	for (i = 0; i < count; i++) {
		nvmlDevice_t dev;
		nvmlPciInfo_t pci;
		int gi;

		if (m.handle(i, &dev) != NVML_SUCCESS ||
		    m.pci(dev, &pci) != NVML_SUCCESS)
			continue;
		gi = isle__agent_find_gpu(n, pci.busId);
		if (gi < 0)
			continue;
		read_links(&m, n, gi, dev, links);
		read_fabric(&m, n, dev);
	}
	/* NVML is authoritative: it replaces the hwloc matrix. */
	for (i = 0; i < (unsigned)n->ngpus; i++) {
		for (unsigned j = 0; j < (unsigned)n->ngpus; j++) {
			int li = n->gpus[i].nvswitch_links;
			int lj = n->gpus[j].nvswitch_links;
			int sw = li < lj ? li : lj;
			int d =
			    links[i * n->ngpus + j] > links[j * n->ngpus + i]
				? links[i * n->ngpus + j]
				: links[j * n->ngpus + i];

			n->nvlinks[i * n->ngpus + j] =
			    (uint16_t)(i == j ? 0 : (d > sw ? d : sw));
		}
		if (n->gpus[i].nvswitch_links)
			n->nnvswitches = 1; /* seen, count unknown to NVML */
	}
	n->nvlink_source = ISLE_NVLINK_NVML;
	isle_agent_derive(n);
	rc = 0;
out:
	free(links);
	m.shutdown();
close:
	dlclose(m.lib);
	return rc;
}
