/*
 * index.c - name -> index hash used for node, switch and island lookups.
 *
 * Open addressing, linear probing, power-of-two table kept at most half full,
 * so a lookup touches one or two slots on average at any size.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

struct slot {
	const char *key; /* borrowed; NULL = empty */
	uint32_t hash;
	int val;
};

struct isle__index {
	struct slot *slots;
	size_t cap; /* power of two */
	size_t used;
};

/* FNV-1a, 32 bit: short host names hash well and it needs no seed. */
static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

struct isle__index *isle__index_create(void)
{
	struct isle__index *ix = calloc(1, sizeof(*ix));

	if (!ix)
		return NULL;
	ix->cap = 16;
	ix->slots = calloc(ix->cap, sizeof(*ix->slots));
	if (!ix->slots) {
		free(ix);
		return NULL;
	}
	return ix;
}

void isle__index_destroy(struct isle__index *ix)
{
	if (!ix)
		return;
	free(ix->slots);
	free(ix);
}

void isle__index_clear(struct isle__index *ix)
{
	if (!ix)
		return;
	memset(ix->slots, 0, ix->cap * sizeof(*ix->slots));
	ix->used = 0;
}

static struct slot *probe(struct slot *slots, size_t cap, const char *key,
			  uint32_t h)
{
	size_t i = h & (cap - 1);

	while (slots[i].key &&
	       (slots[i].hash != h || strcmp(slots[i].key, key) != 0))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int rehash(struct isle__index *ix, size_t cap)
{
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		struct slot *s = &ix->slots[i];

		if (s->key)
			*probe(slots, cap, s->key, s->hash) = *s;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

int isle__index_put(struct isle__index *ix, const char *key, int val)
{
	uint32_t h = hash_str(key);
	struct slot *s;

	if (2 * (ix->used + 1) > ix->cap) {
		int rc = rehash(ix, ix->cap * 2);

		if (rc)
			return rc;
	}
	s = probe(ix->slots, ix->cap, key, h);
	if (s->key)
		return -EEXIST;
	s->key = key;
	s->hash = h;
	s->val = val;
	ix->used++;
	return 0;
}

int isle__index_get(const struct isle__index *ix, const char *key)
{
	const struct slot *s;

	if (!ix || !key)
		return -1;
	s = probe(ix->slots, ix->cap, key, hash_str(key));
	return s->key ? s->val : -1;
}
