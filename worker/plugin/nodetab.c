// SPDX-License-Identifier: MIT
/* The restore table (nodetab.h): slots in shared memory, their index in
 * the writer's own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "nodetab.h"

/* Between every two stores to the table: tests/unit/check_nodetab.c
 * defines it to end the process there, one point after another, as a
 * kill at any instruction would. */
#ifndef RF_NODETAB_STEP
#define RF_NODETAB_STEP() \
	do {              \
	} while (0)
#endif

struct hdr {
	uint64_t magic; /* stored last when formatting */
	uint32_t version;
	uint32_t nslots;
	uint32_t key_max;
	uint32_t rec_size;
	uint64_t reserved;
};

struct meta {
	uint32_t len;
	uint32_t kind;
};

/* a record: the id (FREE: an empty slot), its count, which of the two key
 * buffers holds the key, the two buffers' lengths and kinds, then the two
 * buffers of key_max bytes */
struct rec {
	uint64_t id;
	uint64_t count;
	uint32_t active;
	uint32_t pad;
	struct meta meta[2];
	unsigned char key[];
};

static struct rec *rec(const struct rf_nodetab *t, uint32_t i)
{
	return (struct rec *)((char *)t->mem + sizeof(struct hdr) + (size_t)i * t->rec_size);
}

size_t rf_nodetab_rec_size(uint32_t key_max)
{
	return (sizeof(struct rec) + 2 * (size_t)key_max + 7) & ~(size_t)7;
}

/* the slot of @id, or nslots */
static uint32_t find(const struct rf_nodetab *t, uint64_t id)
{
	uint64_t slot;

	return rf_idmap_get(&t->ix, id, &slot) ? (uint32_t)slot : t->nslots;
}

static void format(struct rf_nodetab *t, struct hdr *h)
{
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	memset((char *)t->mem + sizeof(*h), 0, (size_t)t->nslots * t->rec_size);
	RF_NODETAB_STEP();
	h->version = RF_NODETAB_VERSION;
	h->nslots = t->nslots;
	h->key_max = t->key_max;
	h->rec_size = (uint32_t)t->rec_size;
	RF_NODETAB_STEP();
	__atomic_store_n(&h->magic, RF_NODETAB_MAGIC, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
}

int rf_nodetab_open(struct rf_nodetab *t, void *mem, size_t size, uint32_t key_max)
{
	struct hdr *h = mem;
	size_t rec_size = rf_nodetab_rec_size(key_max), n;
	int formatted = 0;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	if (!mem || ((uintptr_t)mem & 7) || key_max == 0 || key_max > 65536 ||
	    size < sizeof(*h) + rec_size)
		return -EINVAL;
	n = (size - sizeof(*h)) / rec_size;
	if (n > (1u << 30))
		n = 1u << 30;
	t->mem = mem;
	t->nslots = (uint32_t)n;
	t->key_max = key_max;
	t->rec_size = rec_size;
	t->free = calloc(n, sizeof(*t->free));
	if (!t->free || rf_idmap_init(&t->ix, (uint32_t)n) < 0) {
		rf_nodetab_close(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	if (!(__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == RF_NODETAB_MAGIC &&
	      h->version == RF_NODETAB_VERSION && h->nslots == t->nslots && h->key_max == key_max &&
	      h->rec_size == rec_size)) {
		/* nothing, or nothing this build wrote: empty, then the magic */
		format(t, h);
		formatted = 1;
	}
	/* the index, from the slots; what cannot be a record is freed */
	for (i = (uint32_t)n; i-- > 0;) {
		struct rec *r = rec(t, i);
		uint64_t id = __atomic_load_n(&r->id, __ATOMIC_ACQUIRE);

		if (id != RF_NODETAB_FREE &&
		    (r->meta[r->active & 1].len > key_max || find(t, id) != t->nslots)) {
			__atomic_store_n(&r->id, RF_NODETAB_FREE, __ATOMIC_RELEASE);
			RF_NODETAB_STEP();
			id = RF_NODETAB_FREE;
		}
		if (id == RF_NODETAB_FREE)
			t->free[t->nfree++] = i;
		else if (rf_idmap_set(&t->ix, id, i) < 0)
			return -ENOMEM; /* within the room it was made with: never */
	}
	return formatted;
}

void rf_nodetab_close(struct rf_nodetab *t)
{
	if (t->free)
		pthread_mutex_destroy(&t->lock);
	rf_idmap_free(&t->ix);
	free(t->free);
	t->free = NULL;
}

int rf_nodetab_put(struct rf_nodetab *t, uint64_t id, uint32_t kind, const void *key, uint32_t len)
{
	uint32_t slot;
	struct rec *r;

	if (id == RF_NODETAB_FREE || len > t->key_max)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot < t->nslots) {
		/* a new key: into the other buffer, then flip to it */
		uint32_t b = (r = rec(t, slot))->active & 1 ? 0 : 1;

		memcpy(r->key + (size_t)b * t->key_max, key, len);
		RF_NODETAB_STEP();
		r->meta[b].len = len;
		RF_NODETAB_STEP();
		r->meta[b].kind = kind;
		RF_NODETAB_STEP();
		__atomic_store_n(&r->active, b, __ATOMIC_RELEASE);
		RF_NODETAB_STEP();
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	if (t->nfree == 0) {
		pthread_mutex_unlock(&t->lock);
		return -ENOSPC;
	}
	slot = t->free[--t->nfree];
	/* whole, while the id still says free; then publish */
	r = rec(t, slot);
	memcpy(r->key, key, len);
	RF_NODETAB_STEP();
	r->meta[0].len = len;
	RF_NODETAB_STEP();
	r->meta[0].kind = kind;
	RF_NODETAB_STEP();
	r->active = 0;
	RF_NODETAB_STEP();
	r->count = 0;
	RF_NODETAB_STEP();
	if (rf_idmap_set(&t->ix, id, slot) < 0) {
		t->free[t->nfree++] = slot;
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	__atomic_store_n(&r->id, id, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int rf_nodetab_get(struct rf_nodetab *t, uint64_t id, uint32_t *kind, void *key, uint32_t cap,
		   uint32_t *len, uint64_t *count)
{
	uint32_t slot, b;
	struct meta m;
	struct rec *r;
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot == t->nslots) {
		ret = -ENOENT;
		goto out;
	}
	r = rec(t, slot);
	b = r->active & 1;
	m = r->meta[b];
	if (m.len > t->key_max) {
		ret = -ENOENT; /* written since by no code of ours */
	} else if (m.len > cap) {
		ret = -ERANGE;
	} else {
		memcpy(key, r->key + (size_t)b * t->key_max, m.len);
		*kind = m.kind;
		*len = m.len;
		if (count)
			*count = r->count;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int rf_nodetab_count_add(struct rf_nodetab *t, uint64_t id, int64_t delta, uint64_t *now)
{
	uint32_t slot;
	uint64_t c;

	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot == t->nslots) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	c = rec(t, slot)->count;
	if (delta < 0)
		c = (uint64_t)-delta >= c ? 0 : c - (uint64_t)-delta;
	else
		c += (uint64_t)delta;
	__atomic_store_n(&rec(t, slot)->count, c, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	pthread_mutex_unlock(&t->lock);
	if (now)
		*now = c;
	return 0;
}

int rf_nodetab_del(struct rf_nodetab *t, uint64_t id)
{
	uint32_t slot;

	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot == t->nslots) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	__atomic_store_n(&rec(t, slot)->id, RF_NODETAB_FREE, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	t->free[t->nfree++] = slot;
	rf_idmap_del(&t->ix, id);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

uint32_t rf_nodetab_count(struct rf_nodetab *t)
{
	uint32_t n;

	pthread_mutex_lock(&t->lock);
	n = t->nslots - t->nfree;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void rf_nodetab_each(struct rf_nodetab *t,
		     void (*fn)(uint64_t id, uint32_t kind, uint64_t count, const void *key,
				uint32_t len, void *arg),
		     void *arg)
{
	uint32_t i;

	for (i = 0; i <= t->ix.mask; i++) {
		struct rec *r;
		uint32_t b;

		if (t->ix.key[i] == RF_NODETAB_FREE)
			continue;
		r = rec(t, (uint32_t)t->ix.val[i]);
		b = r->active & 1;
		if (r->meta[b].len > t->key_max)
			continue;
		fn(t->ix.key[i], r->meta[b].kind, r->count, r->key + (size_t)b * t->key_max,
		   r->meta[b].len, arg);
	}
}
