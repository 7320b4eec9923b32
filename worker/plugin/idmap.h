/* SPDX-License-Identifier: MIT */
/* A map of 64-bit keys (never 0) to 64-bit values, in the worker's own
 * memory: open addressing, linear probing, deletion by backward shift,
 * doubled when half full. Not locked: callers serialise. */
#ifndef RINGFENCE_IDMAP_H
#define RINGFENCE_IDMAP_H

#include <stdbool.h>
#include <stdint.h>

struct rf_idmap {
	uint64_t *key; /* 0: empty */
	uint64_t *val;
	uint32_t mask;
	uint32_t n;
};

/* Room for @hint keys before the first doubling; 0 or -ENOMEM. */
int rf_idmap_init(struct rf_idmap *m, uint32_t hint);
void rf_idmap_free(struct rf_idmap *m);
/* Set @key's value: 0, -EINVAL (key 0), or -ENOMEM. */
int rf_idmap_set(struct rf_idmap *m, uint64_t key, uint64_t val);
bool rf_idmap_get(const struct rf_idmap *m, uint64_t key, uint64_t *val);
/* Remove @key: whether it was there. */
bool rf_idmap_del(struct rf_idmap *m, uint64_t key);

#endif /* RINGFENCE_IDMAP_H */
