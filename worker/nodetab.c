// SPDX-License-Identifier: MIT
/* The restore table (nodetab.h): open addressing with linear probing. */
#include <errno.h>
#include <string.h>

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

/* a record: the id, which of the two key buffers holds the key, the two
 * buffers' lengths and kinds, then the two buffers of key_max bytes */
struct rec {
	uint64_t id;
	uint32_t active;
	uint32_t pad;
	struct meta meta[2];
	unsigned char key[];
};

static struct rec *rec(const struct rf_nodetab *t, uint32_t i)
{
	return (struct rec *)((char *)t->mem + sizeof(struct hdr) + (size_t)i * t->rec_size);
}

static uint32_t home(const struct rf_nodetab *t, uint64_t id)
{
	return (uint32_t)(((id * 0x9e3779b97f4a7c15ULL) >> 32) % t->nslots);
}

static int usable(uint64_t id)
{
	return id != RF_NODETAB_FREE && id != RF_NODETAB_GONE;
}

int rf_nodetab_open(struct rf_nodetab *t, void *mem, size_t size, uint32_t key_max)
{
	struct hdr *h = mem;
	size_t rec_size = (sizeof(struct rec) + 2 * (size_t)key_max + 7) & ~(size_t)7;
	size_t n;

	if (!mem || ((uintptr_t)mem & 7) || key_max == 0 || key_max > 65536 ||
	    size < sizeof(*h) + rec_size)
		return -EINVAL;
	n = (size - sizeof(*h)) / rec_size;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	memset(t, 0, sizeof(*t));
	t->mem = mem;
	t->nslots = (uint32_t)n;
	t->key_max = key_max;
	t->rec_size = rec_size;
	pthread_mutex_init(&t->lock, NULL);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == RF_NODETAB_MAGIC &&
	    h->version == RF_NODETAB_VERSION && h->nslots == t->nslots && h->key_max == key_max &&
	    h->rec_size == rec_size)
		return 0;
	/* nothing, or nothing this build wrote: empty, then the magic last */
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	memset((char *)mem + sizeof(*h), 0, (size_t)t->nslots * rec_size);
	RF_NODETAB_STEP();
	h->version = RF_NODETAB_VERSION;
	h->nslots = t->nslots;
	h->key_max = key_max;
	h->rec_size = (uint32_t)rec_size;
	RF_NODETAB_STEP();
	__atomic_store_n(&h->magic, RF_NODETAB_MAGIC, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	return 1;
}

void rf_nodetab_close(struct rf_nodetab *t)
{
	pthread_mutex_destroy(&t->lock);
}

/* The slot holding @id, or nslots. Called locked. */
static uint32_t find(const struct rf_nodetab *t, uint64_t id)
{
	uint32_t i, s = home(t, id);

	for (i = 0; i < t->nslots; i++, s = s + 1 == t->nslots ? 0 : s + 1) {
		uint64_t got = __atomic_load_n(&rec(t, s)->id, __ATOMIC_ACQUIRE);

		if (got == id)
			return s;
		if (got == RF_NODETAB_FREE)
			break;
	}
	return t->nslots;
}

int rf_nodetab_put(struct rf_nodetab *t, uint64_t id, uint32_t kind, const void *key, uint32_t len)
{
	uint32_t i, s, slot;
	struct rec *r;

	if (!usable(id) || len > t->key_max)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot < t->nslots) {
		/* a new key: into the other buffer, then flip to it */
		uint32_t b = (__atomic_load_n(&rec(t, slot)->active, __ATOMIC_ACQUIRE) & 1) ^ 1;

		r = rec(t, slot);
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
	/* the first tombstone on its probe path, else the free slot ending it */
	slot = t->nslots;
	s = home(t, id);
	for (i = 0; i < t->nslots; i++, s = s + 1 == t->nslots ? 0 : s + 1) {
		uint64_t got = __atomic_load_n(&rec(t, s)->id, __ATOMIC_ACQUIRE);

		if (got == RF_NODETAB_GONE && slot == t->nslots)
			slot = s;
		if (got == RF_NODETAB_FREE) {
			if (slot == t->nslots)
				slot = s;
			break;
		}
	}
	if (slot == t->nslots) {
		pthread_mutex_unlock(&t->lock);
		return -ENOSPC;
	}
	/* whole, while the id still says free or gone; then publish */
	r = rec(t, slot);
	memcpy(r->key, key, len);
	RF_NODETAB_STEP();
	r->meta[0].len = len;
	RF_NODETAB_STEP();
	r->meta[0].kind = kind;
	RF_NODETAB_STEP();
	r->active = 0;
	RF_NODETAB_STEP();
	__atomic_store_n(&r->id, id, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int rf_nodetab_get(struct rf_nodetab *t, uint64_t id, uint32_t *kind, void *key, uint32_t cap,
		   uint32_t *len)
{
	uint32_t slot, b;
	struct meta m;
	struct rec *r;
	int ret = 0;

	if (!usable(id))
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot == t->nslots) {
		ret = -ENOENT;
		goto out;
	}
	r = rec(t, slot);
	b = __atomic_load_n(&r->active, __ATOMIC_ACQUIRE) & 1;
	m = r->meta[b];
	if (m.len > t->key_max) {
		ret = -ENOENT; /* not a record this build wrote */
	} else if (m.len > cap) {
		ret = -ERANGE;
	} else {
		memcpy(key, r->key + (size_t)b * t->key_max, m.len);
		*kind = m.kind;
		*len = m.len;
	}
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int rf_nodetab_del(struct rf_nodetab *t, uint64_t id)
{
	uint32_t slot;

	if (!usable(id))
		return -ENOENT;
	pthread_mutex_lock(&t->lock);
	slot = find(t, id);
	if (slot < t->nslots)
		__atomic_store_n(&rec(t, slot)->id, RF_NODETAB_GONE, __ATOMIC_RELEASE);
	RF_NODETAB_STEP();
	pthread_mutex_unlock(&t->lock);
	return slot < t->nslots ? 0 : -ENOENT;
}

uint32_t rf_nodetab_count(struct rf_nodetab *t)
{
	uint32_t i, n = 0;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nslots; i++) {
		struct rec *r = rec(t, i);

		if (usable(__atomic_load_n(&r->id, __ATOMIC_ACQUIRE)) &&
		    r->meta[__atomic_load_n(&r->active, __ATOMIC_ACQUIRE) & 1].len <= t->key_max)
			n++;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}
