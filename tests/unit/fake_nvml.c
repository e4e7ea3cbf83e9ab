/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1, so that the NVML backend
 * of isle-agent (dlopen, NVLink walk, fabric info) runs on machines without
 * a GPU. Loaded through ISLE_NVML_LIBRARY by test_agent_discover.
 *
 * FAKE_NVML_MODE selects the machine:
 *   pairs     4 GPUs, NVLink bridges 0-1 and 2-3 (2 links each), fabric
 *             clique 5 of cluster 00112233-...-ff (a multi-node domain)
 *   nvswitch  8 GPUs, 18 links each into NVSwitches, fabric not started
 *   nogpu     nvmlDeviceGetCount returns 0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned int state;
} nvmlGpuFabricInfo_t;

enum { OK = 0, ERR_INVALID = 2, ERR_NOT_SUPPORTED = 3 };

static const char *mode(void)
{
	const char *m = getenv("FAKE_NVML_MODE");

	return m ? m : "pairs";
}

static unsigned ngpus(void)
{
	if (strcmp(mode(), "nvswitch") == 0)
		return 8;
	if (strcmp(mode(), "nogpu") == 0)
		return 0;
	return 4;
}

/* Device handles are 1-based indices in disguise. */
static int idx(nvmlDevice_t d)
{
	long i = (long)(intptr_t)d - 1;

	return i >= 0 && i < (long)ngpus() ? (int)i : -1;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return OK;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	return OK;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	return r == OK ? "Success" : "fake NVML error";
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = ngpus();
	return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i,
						  nvmlDevice_t *d)
{
	if (i >= ngpus())
		return ERR_INVALID;
	*d = (nvmlDevice_t)(intptr_t)(i + 1);
	return OK;
}

static void bus(int gpu, nvmlPciInfo_t *p)
{
	memset(p, 0, sizeof(*p));
	p->bus = (unsigned)gpu + 1;
	snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0", gpu + 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	if (idx(d) < 0)
		return ERR_INVALID;
	bus(idx(d), p);
	return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name,
				      unsigned int len)
{
	snprintf(name, len, "%s",
		 strcmp(mode(), "nvswitch") == 0 ? "NVIDIA H100 80GB HBM3"
						 : "NVIDIA GB200");
	return idx(d) < 0 ? ERR_INVALID : OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid,
				      unsigned int len)
{
	snprintf(uuid, len, "GPU-fake-%d", idx(d));
	return idx(d) < 0 ? ERR_INVALID : OK;
}

/* pairs: links 0-1 of GPU g go to its partner g^1; nvswitch: 18 links to
 * switches. */
static int link_used(int g, unsigned link)
{
	(void)g;
	return strcmp(mode(), "nvswitch") == 0 ? link < 18 : link < 2;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link,
					     int *active)
{
	if (idx(d) < 0 || link >= 18)
		return ERR_INVALID;
	*active = link_used(idx(d), link);
	return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d,
							unsigned int link,
							nvmlPciInfo_t *p)
{
	int g = idx(d);

	if (g < 0 || !link_used(g, link))
		return ERR_INVALID;
	if (strcmp(mode(), "nvswitch") == 0) {
		memset(p, 0, sizeof(*p));
		snprintf(p->busId, sizeof(p->busId), "00000000:%02X:00.0",
			 0x80 + (int)link % 4);
	} else {
		bus(g ^ 1, p);
	}
	return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d,
							unsigned int link,
							int *type)
{
	if (idx(d) < 0 || !link_used(idx(d), link))
		return ERR_INVALID;
	*type = strcmp(mode(), "nvswitch") == 0 ? 2 : 0;
	return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d,
					       nvmlGpuFabricInfo_t *fi)
{
	int i;

	if (idx(d) < 0)
		return ERR_INVALID;
	memset(fi, 0, sizeof(*fi));
	if (strcmp(mode(), "pairs") != 0) {
		fi->state = 1; /* not started */
		return OK;
	}
	for (i = 0; i < 16; i++)
		fi->clusterUuid[i] = (unsigned char)(i * 0x11);
	fi->status = OK;
	fi->cliqueId = 5;
	fi->state = 3; /* completed */
	return OK;
}
