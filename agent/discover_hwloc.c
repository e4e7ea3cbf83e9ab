/*
 * discover_hwloc.c - GPUs, NICs, NUMA affinity and NVLinks from hwloc (2.x),
 * live or from an XML export.
 *
 * A GPU is a PCI device of class 0x0302 (3D controller, every data-center
 * GPU) or any display-class device that carries a compute OS device
 * (CUDA/OpenCL/NVML...). One GPU may show several OS devices (cuda0 and
 * nvml0): they are folded into their PCI device. NVLinks come from the
 * "NVLinkBandwidth" distances matrix that hwloc's NVML backend records
 * between GPUs, NVSwitches and CPUs (MB/s). AMD GPUs (MI200, MI300) have
 * Infinity Fabric links instead, which hwloc's RSMI backend records as the
 * "XGMIBandwidth" matrix between GPUs (MB/s): read the same way, they make
 * the islands of an AMD node.
 */
#include <errno.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_priv.h"

/* hwloc reports one NVLink (NVLink 2 and later) as 25 GB/s per direction. */
#define NVLINK_MBPS 25000
/* One xGMI link (MI200/MI300: 16 lanes at 25 Gb/s) is 50 GB/s per
 * direction in RSMI's bandwidth. */
#define XGMI_MBPS 50000
/* Link counts are uint16_t in the matrix; a larger value is nonsense. */
#define MAX_LINKS 1024

static void pci_bus_id(hwloc_obj_t pci, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain,
		 pci->attr->pcidev.bus, pci->attr->pcidev.dev,
		 pci->attr->pcidev.func);
}

static int is_compute_osdev(hwloc_obj_t o)
{
	if (o->type != HWLOC_OBJ_OS_DEVICE)
		return 0;
	if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC)
		return 1;
	/* GPU OS devices are also display outputs ("card0"); only the
	 * management libraries' devices mean compute. */
	return o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && o->name &&
	       (strncmp(o->name, "nvml", 4) == 0 ||
		strncmp(o->name, "rsmi", 4) == 0);
}

static int is_gpu(hwloc_obj_t pci)
{
	hwloc_obj_t c;

	if (pci->attr->pcidev.class_id == 0x0302)
		return 1;
	if ((pci->attr->pcidev.class_id >> 8) != 0x03)
		return 0;
	for (c = pci->io_first_child; c; c = c->next_sibling)
		if (is_compute_osdev(c))
			return 1;
	return 0;
}

/*
 * NVLink endpoints that are PCI devices but not GPUs are NVSwitches. hwloc
 * records a switch it cannot see on the PCI bus with a zero PCI id (one of
 * the twelve in a DGX-2 export), so only IBM's NVLink bridges (POWER9 NPUs)
 * are told apart by vendor; CPUs appear as non-PCI objects.
 */
static int is_nvswitch(hwloc_obj_t o)
{
	return o && o->type == HWLOC_OBJ_PCI_DEVICE &&
	       o->attr->pcidev.vendor_id != 0x1014;
}

/* hwloc objects behind the node's GPUs and NICs, by index. */
struct objs {
	hwloc_obj_t *gpu;
	hwloc_obj_t *nic;
};

/* OS index of the single NUMA node an I/O object hangs off, or -1. */
static int io_numa(hwloc_topology_t topo, hwloc_obj_t o)
{
	hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);

	if (!a || !a->nodeset || hwloc_bitmap_weight(a->nodeset) != 1)
		return -1;
	return hwloc_bitmap_first(a->nodeset);
}

static char *dup_info(hwloc_obj_t o, const char *name)
{
	const char *v = hwloc_obj_get_info_by_name(o, name);

	return v ? strdup(v) : NULL;
}

static int append_csv(char **dst, const char *s)
{
	char *p;

	if (!*dst) {
		*dst = strdup(s);
		return *dst ? 0 : -ENOMEM;
	}
	if (asprintf(&p, "%s,%s", *dst, s) < 0)
		return -ENOMEM;
	free(*dst);
	*dst = p;
	return 0;
}

/*
 * GPUs in PCI bus id order: the order of NVML indices, CUDA_DEVICE_ORDER=
 * PCI_BUS_ID and Slurm's GRES, whereas hwloc walks its I/O tree. Insertion
 * sort: a node has a handful of GPUs, and the matrix is still empty.
 */
static void sort_gpus(isle_agent_node *n, struct objs *ob)
{
	int i, j;

	for (i = 1; i < n->ngpus; i++) {
		struct isle_agent_gpu g = n->gpus[i];
		hwloc_obj_t o = ob->gpu[i];

		for (j = i;
		     j > 0 && strcmp(n->gpus[j - 1].bus_id, g.bus_id) > 0;
		     j--) {
			n->gpus[j] = n->gpus[j - 1];
			ob->gpu[j] = ob->gpu[j - 1];
		}
		n->gpus[j] = g;
		ob->gpu[j] = o;
	}
}

static int add_gpus(isle_agent_node *n, hwloc_topology_t topo, struct objs *ob)
{
	hwloc_obj_t pci = NULL, c;
	char bus[32];
	int k;

	while ((pci = hwloc_get_next_pcidev(topo, pci))) {
		struct isle_agent_gpu *g;

		if (!is_gpu(pci))
			continue;
		pci_bus_id(pci, bus, sizeof(bus));
		k = isle__agent_add_gpu(n, bus);
		if (k < 0)
			return k;
		hwloc_obj_t *p = realloc(ob->gpu, (size_t)(k + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ob->gpu = p;
		p[k] = pci;
		g = &n->gpus[k];
		g->numa = io_numa(topo, pci);
		for (c = pci->io_first_child; c; c = c->next_sibling) {
			if (!is_compute_osdev(c))
				continue;
			if (!g->model)
				g->model = dup_info(c, "GPUModel");
			if (!g->uuid)
				g->uuid = dup_info(c, "NVIDIAUUID");
			if (c->name && append_csv(&g->osdevs, c->name))
				return -ENOMEM;
		}
		if (!g->model)
			g->model = dup_info(pci, "PCIDevice");
	}
	sort_gpus(n, ob);
	return 0;
}

/* "248a:0703:001e:39fe" or "fe80:0000:...:248a:0703:001e:39fe" (the low 64
 * bits of a GID are the port GUID). */
static uint64_t parse_guid(const char *s)
{
	uint64_t g = 0;
	int digits = 0;
	const char *p;

	if (!s)
		return 0;
	for (p = s; *p; p++) {
		int v;

		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			continue;
		g = g << 4 | (uint64_t)v;
		digits++;
	}
	return digits >= 16 ? g : 0;
}

static int add_nics(isle_agent_node *n, hwloc_topology_t topo, struct objs *ob)
{
	hwloc_obj_t o = NULL;
	char key[32];
	int k, port;

	while ((o = hwloc_get_next_osdev(topo, o))) {
		struct isle_agent_nic *c;
		const char *v;

		if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS ||
		    !o->name)
			continue;
		k = isle__agent_add_nic(n, o->name);
		if (k < 0)
			return k;
		hwloc_obj_t *p = realloc(ob->nic, (size_t)(k + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ob->nic = p;
		p[k] = o;
		c = &n->nics[k];
		if (o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE)
			pci_bus_id(o->parent, c->bus_id, sizeof(c->bus_id));
		c->numa = io_numa(topo, o);
		c->node_guid =
		    parse_guid(hwloc_obj_get_info_by_name(o, "NodeGUID"));
		/* The first port hwloc describes. */
		for (port = 1; port < 8; port++) {
			snprintf(key, sizeof(key), "Port%dLID", port);
			if (hwloc_obj_get_info_by_name(o, key))
				break;
		}
		if (port == 8)
			port = 1;
		c->port = port;
		snprintf(key, sizeof(key), "Port%dLID", port);
		if ((v = hwloc_obj_get_info_by_name(o, key)))
			c->lid = (int)strtol(v, NULL, 0);
		snprintf(key, sizeof(key), "Port%dState", port);
		if ((v = hwloc_obj_get_info_by_name(o, key)))
			c->state = atoi(v);
		snprintf(key, sizeof(key), "Port%dGID0", port);
		c->port_guid = parse_guid(hwloc_obj_get_info_by_name(o, key));
		if (!c->port_guid)
			c->port_guid = c->node_guid;
	}
	return 0;
}

/* GPU index of a matrix object (a GPU OS device or its PCI device). */
static int matrix_gpu(const isle_agent_node *n, const struct objs *ob,
		      hwloc_obj_t o)
{
	int i;

	if (o->type == HWLOC_OBJ_OS_DEVICE)
		o = o->parent;
	for (i = 0; o && i < n->ngpus; i++)
		if (ob->gpu[i] == o)
			return i;
	return -1;
}

static int links_of(hwloc_uint64_t mbps, hwloc_uint64_t unit)
{
	hwloc_uint64_t l;

	if (mbps == 0)
		return 0;
	l = mbps < unit ? 1 : mbps / unit + (mbps % unit >= unit / 2);
	return l > MAX_LINKS ? MAX_LINKS : (int)l;
}

/*
 * GPU links from hwloc's distances: "NVLinkBandwidth" (NVIDIA), else
 * "XGMIBandwidth" (AMD Infinity Fabric). Either gives link counts per GPU
 * pair; only NVLink goes through NVSwitches.
 */
static void read_nvlinks(isle_agent_node *n, hwloc_topology_t topo,
			 const struct objs *ob)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, i, j;
	int g = n->ngpus, *map, nvlink = 1;
	hwloc_uint64_t unit = NVLINK_MBPS;

	if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &d, 0) ||
	    nr == 0) {
		nr = 1;
		nvlink = 0;
		unit = XGMI_MBPS;
		if (hwloc_distances_get_by_name(topo, "XGMIBandwidth", &nr, &d,
						0) ||
		    nr == 0)
			return;
	}
	map = malloc(d->nbobjs * sizeof(*map));
	if (!map)
		goto out;
	n->nvlink_source = ISLE_NVLINK_HWLOC;
	for (i = 0; i < d->nbobjs; i++) {
		map[i] = d->objs[i] ? matrix_gpu(n, ob, d->objs[i]) : -1;
		if (map[i] < 0 && nvlink && is_nvswitch(d->objs[i]))
			n->nnvswitches++;
	}
	for (i = 0; i < d->nbobjs; i++) {
		if (map[i] < 0)
			continue;
		for (j = 0; j < d->nbobjs; j++) {
			hwloc_uint64_t v = d->values[i * d->nbobjs + j];
			int a = map[i], b = map[j];

			if (v < d->values[j * d->nbobjs + i])
				v = d->values[j * d->nbobjs + i];
			if (b >= 0 && a != b) {
				n->nvlinks[a * g + b] =
				    (uint16_t)links_of(v, unit);
			} else if (b < 0 && nvlink && is_nvswitch(d->objs[j])) {
				int *sl = &n->gpus[a].nvswitch_links;

				*sl += links_of(v, unit);
				if (*sl > MAX_LINKS)
					*sl = MAX_LINKS;
			}
		}
	}
	/* Through the switch fabric a pair gets the smaller of its two
	 * GPUs' switch links. */
	for (i = 0; i < (unsigned)g; i++) {
		for (j = 0; j < (unsigned)g; j++) {
			int li = n->gpus[i].nvswitch_links;
			int lj = n->gpus[j].nvswitch_links;
			int m = li < lj ? li : lj;

			if (i != j && m > n->nvlinks[i * g + j])
				n->nvlinks[i * g + j] = (uint16_t)m;
		}
	}
	free(map);
out:
	hwloc_distances_release(topo, d);
}

/* PCIe hops between two I/O objects through their lowest common ancestor. */
static int hops(hwloc_obj_t a, hwloc_obj_t b)
{
	hwloc_obj_t x, y;
	int da = 0, db;

	for (x = a; x; x = x->parent, da++)
		for (y = b, db = 0; y; y = y->parent, db++)
			if (x == y)
				return da + db;
	return 1 << 20;
}

/* Each GPU's nearest NIC on PCIe, and each NIC's nearest GPUs. */
static void nearest_nics(isle_agent_node *n, const struct objs *ob)
{
	int i, j;

	for (i = 0; i < n->ngpus; i++) {
		int best = -1, bh = 0;

		for (j = 0; j < n->nnics; j++) {
			int h = hops(ob->gpu[i], ob->nic[j]);

			if (best < 0 || h < bh) {
				best = j;
				bh = h;
			}
		}
		n->gpus[i].nic = best;
	}
	for (j = 0; j < n->nnics; j++) {
		int bh = 1 << 20;

		n->nics[j].near_gpus = 0;
		for (i = 0; i < n->ngpus && i < 64; i++) {
			int h = hops(ob->gpu[i], ob->nic[j]);

			if (h < bh) {
				bh = h;
				n->nics[j].near_gpus = 0;
			}
			if (h == bh)
				n->nics[j].near_gpus |= 1ull << i;
		}
	}
}

/*
 * hwloc 2.9 crashes on some malformed XML files (an object without its
 * complete_cpuset, tests/fuzz/inputs/hwloc_xml): it loads each file in a
 * child first, so a bad export costs an error message, not the agent.
 * Returns 0 if it loads, -EINVAL (err filled) if not.
 */
static int xml_loads_safely(const char *path, char *err, size_t errlen)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 0; /* no child to spare: take the risk */
	if (pid == 0) {
		static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL,
					    SIGABRT};
		hwloc_topology_t topo;
		int bad;

		/* Die of a crash here, whatever handler the caller set. */
		for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
			signal(fatal[i], SIG_DFL);
		bad = hwloc_topology_init(&topo) < 0;

		if (!bad) {
			hwloc_topology_set_io_types_filter(
			    topo, HWLOC_TYPE_FILTER_KEEP_ALL);
			hwloc_topology_set_flags(
			    topo, HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT);
			bad = hwloc_topology_set_xml(topo, path) < 0 ||
			      hwloc_topology_load(topo) < 0;
		}
		_exit(bad ? 2 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return isle__errf(-EINVAL, err, errlen, "%s: hwloc cannot load it (%s)",
			  path,
			  WIFSIGNALED(status) || WEXITSTATUS(status) != 2
			      ? "hwloc crashed on it: malformed XML"
			      : "not an hwloc XML export, or one from "
				"hwloc 3.x?");
}

int isle_agent_discover_hwloc(isle_agent_node *n, const char *xml_path,
			      char *err, size_t errlen)
{
	struct objs ob = {NULL, NULL};
	hwloc_topology_t topo;
	const char *host;
	char buf[256];
	int rc;

	if (hwloc_topology_init(&topo) < 0)
		return isle__errf(-ENOMEM, err, errlen,
				  "hwloc: cannot initialize");
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (xml_path) {
		FILE *fp = fopen(xml_path, "r");

		if (!fp) {
			rc = -errno;
			isle__errf(rc, err, errlen, "%s: %s", xml_path,
				   strerror(errno));
			goto out;
		}
		fclose(fp);
		rc = xml_loads_safely(xml_path, err, errlen);
		if (rc < 0)
			goto out;
		hwloc_topology_set_flags(topo,
					 HWLOC_TOPOLOGY_FLAG_IMPORT_SUPPORT);
		if (hwloc_topology_set_xml(topo, xml_path) < 0) {
			rc = isle__errf(-EINVAL, err, errlen,
					"%s: hwloc cannot read it as XML",
					xml_path);
			goto out;
		}
	}
	if (hwloc_topology_load(topo) < 0) {
		rc = isle__errf(-EINVAL, err, errlen,
				"%s: hwloc cannot load it (not an hwloc "
				"XML export, or one from hwloc 3.x?)",
				xml_path ? xml_path : "this machine");
		goto out;
	}
	host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName");
	if (!host && !xml_path && gethostname(buf, sizeof(buf)) == 0) {
		buf[sizeof(buf) - 1] = '\0';
		host = buf;
	}
	/* NULL when nothing names the host: the caller decides. */
	n->hostname = host ? strdup(host) : NULL;
	if (xml_path)
		rc = asprintf(&n->source, "hwloc xml %s", xml_path);
	else
		rc = asprintf(&n->source, "hwloc live");
	if (rc < 0)
		n->source = NULL;
	n->nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	rc = add_gpus(n, topo, &ob);
	if (rc == 0)
		rc = add_nics(n, topo, &ob);
	if (rc < 0 || (host && !n->hostname)) {
		rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	read_nvlinks(n, topo, &ob);
	nearest_nics(n, &ob);
	isle_agent_derive(n);
	rc = 0;
out:
	free(ob.gpu);
	free(ob.nic);
	hwloc_topology_destroy(topo);
	return rc;
}
