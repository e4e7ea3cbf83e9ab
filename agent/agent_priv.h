/*
 * agent_priv.h - internals shared by the files of agent/.
 */
#ifndef ISLE_AGENT_PRIV_H
#define ISLE_AGENT_PRIV_H

#include <stdarg.h>
#include <stddef.h>

#include "isle_proto.h"
#include "isle_agent.h"

/* Appends a GPU with the given bus id; returns its index or -ENOMEM. The
 * NVLink matrix grows with it. */
int isle__agent_add_gpu(isle_agent_node *n, const char *bus_id);

/* Appends a NIC named name; returns its index or -ENOMEM. */
int isle__agent_add_nic(isle_agent_node *n, const char *name);

/* GPU index by PCI bus id (case-insensitive, domain optional), or -1. */
int isle__agent_find_gpu(const isle_agent_node *n, const char *bus_id);

/* NIC index by name, or -1. */
int isle__agent_find_nic(const isle_agent_node *n, const char *name);

#endif /* ISLE_AGENT_PRIV_H */
