/*
 * ibnd_priv.h - internals shared by topology/ibnd_*.c.
 */
#ifndef ISLE_IBND_PRIV_H
#define ISLE_IBND_PRIV_H

#include "topo_priv.h"

/*
 * A name list read from a file: "key [value...]" lines, '#' comments. Keys
 * are dump ids ("H-0002c903...") or GUIDs ("0x0002c903..."), normalized so
 * that either spelling finds a node.
 */
struct isle__ibnd_keymap {
	int n, cap;
	char **keys;
	char **vals;
	struct isle__index *idx;
};

/* ibnd_fabric.c: reads a GUID map (need_value: "key host [hca]") or a
 * spine list; frees one. */
int isle__ibnd_keymap_read(struct isle__ibnd_keymap *m, const char *path,
			   int need_value, char *err, size_t errlen);
void isle__ibnd_keymap_free(struct isle__ibnd_keymap *m);

/* ibnd_fabric.c: classifies a read fabric (hosts and rails of CAs, switch
 * levels and rails, host counts); 0 or -ENOMEM. Then the report of HCAs
 * that could not be tied to a host. */
int isle__ibnd_classify(isle_ibnd_fabric *f,
			const struct isle__ibnd_keymap *map,
			const struct isle__ibnd_keymap *spines, unsigned flags);
void isle__ibnd_report_anonymous(const isle_ibnd_fabric *f);

/* ibnd_fabric.c: 1 if tok[0..len) is a chip model ("MT4129"); the
 * fastest port of a node in Gb/s. */
int isle__ibnd_is_chip_name(const char *tok, size_t len);
double isle__ibnd_max_gbps(const struct isle_ibnd_node *n);

#endif /* ISLE_IBND_PRIV_H */
