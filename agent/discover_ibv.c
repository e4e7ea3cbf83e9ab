/*
 * discover_ibv.c - RDMA NICs from libibverbs: port GUIDs, LIDs, state,
 * rate and link layer. A node without RDMA devices is normal (-ENOENT).
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_priv.h"

/* IBTA width and speed codes of ibv_port_attr. */
static double ib_gbps(int width_code, int speed_code)
{
	int lanes;
	double lane;

	switch (width_code) {
	case 1:
		lanes = 1;
		break;
	case 2:
		lanes = 4;
		break;
	case 4:
		lanes = 8;
		break;
	case 8:
		lanes = 12;
		break;
	case 16:
		lanes = 2;
		break;
	default:
		return 0;
	}
	switch (speed_code) {
	case 1:
		lane = 2.5; /* SDR */
		break;
	case 2:
		lane = 5; /* DDR */
		break;
	case 4:
	case 8:
		lane = 10; /* QDR, FDR10 */
		break;
	case 16:
		lane = 14; /* FDR */
		break;
	case 32:
		lane = 25; /* EDR */
		break;
	case 64:
		lane = 50; /* HDR */
		break;
	case 128:
		lane = 100; /* NDR */
		break;
	case 256:
		lane = 200; /* XDR */
		break;
	default:
		return 0;
	}
	return lanes * lane;
}

static void read_port(struct ibv_context *ctx, struct isle_agent_nic *c,
		      int nports)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int port;

	/* The first active port, else port 1. */
	for (port = 1; port <= nports; port++)
		if (ibv_query_port(ctx, (uint8_t)port, &pa) == 0 &&
		    pa.state == IBV_PORT_ACTIVE)
			break;
	if (port > nports)
		port = 1;
	if (ibv_query_port(ctx, (uint8_t)port, &pa) != 0)
		return;
	c->port = port;
	c->state = pa.state;
	c->link_layer_ib = pa.link_layer != IBV_LINK_LAYER_ETHERNET;
	c->lid = c->link_layer_ib ? pa.lid : -1;
	c->gbps = ib_gbps(pa.active_width, pa.active_speed);
	if (c->link_layer_ib && ibv_query_gid(ctx, (uint8_t)port, 0, &gid) == 0)
		c->port_guid = be64toh(gid.global.interface_id);
}

int isle_agent_discover_ibv(isle_agent_node *n, char *err, size_t errlen)
{
	struct ibv_device **list;
	int num = 0, i, rc = 0;

	list = ibv_get_device_list(&num);
	if (!list)
		return isle__errf(-ENOENT, err, errlen, "no RDMA devices (%s)",
				  strerror(errno));
	if (num == 0) {
		rc = isle__errf(-ENOENT, err, errlen, "no RDMA devices");
		goto out;
	}
	for (i = 0; i < num; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_device_attr da;
		struct ibv_context *ctx;
		struct isle_agent_nic *c;
		int k;

		if (!name)
			continue;
		k = isle__agent_find_nic(n, name);
		if (k < 0)
			k = isle__agent_add_nic(n, name);
		if (k < 0) {
			rc = isle__errf(-ENOMEM, err, errlen, "out of memory");
			goto out;
		}
		c = &n->nics[k];
		c->node_guid = be64toh(ibv_get_device_guid(list[i]));
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			isle_agent_warn(n, "ibverbs: cannot open %s: %s", name,
					strerror(errno));
			continue;
		}
		if (ibv_query_device(ctx, &da) == 0)
			read_port(ctx, c, da.phys_port_cnt);
		ibv_close_device(ctx);
	}
	isle_agent_derive(n);
out:
	ibv_free_device_list(list);
	return rc;
}
