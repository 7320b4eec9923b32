// SPDX-License-Identifier: MIT
/* The worker's own 64-bit map (idmap.h). */
#include <errno.h>
#include <stdlib.h>

#include "idmap.h"

static uint32_t home(const struct rf_idmap *m, uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & m->mask;
}

/* the position of @key, or of the empty entry ending its probe */
static uint32_t pos(const struct rf_idmap *m, uint64_t key)
{
	uint32_t p = home(m, key);

	while (m->key[p] && m->key[p] != key)
		p = (p + 1) & m->mask;
	return p;
}

static int alloc(struct rf_idmap *m, uint32_t cap)
{
	m->key = calloc(cap, sizeof(*m->key));
	m->val = calloc(cap, sizeof(*m->val));
	if (!m->key || !m->val) {
		free(m->key);
		free(m->val);
		m->key = m->val = NULL;
		return -ENOMEM;
	}
	m->mask = cap - 1;
	m->n = 0;
	return 0;
}

int rf_idmap_init(struct rf_idmap *m, uint32_t hint)
{
	uint32_t cap = 16;

	while (cap < 2 * (uint64_t)hint && cap < (1u << 31))
		cap *= 2;
	return alloc(m, cap);
}

void rf_idmap_free(struct rf_idmap *m)
{
	free(m->key);
	free(m->val);
	m->key = m->val = NULL;
	m->n = 0;
}

static int grow(struct rf_idmap *m)
{
	struct rf_idmap old = *m;
	uint32_t i;

	if (old.mask >= (1u << 30) || alloc(m, (old.mask + 1) * 2) < 0) {
		*m = old;
		return -ENOMEM;
	}
	for (i = 0; i <= old.mask; i++)
		if (old.key[i]) {
			uint32_t p = pos(m, old.key[i]);

			m->key[p] = old.key[i];
			m->val[p] = old.val[i];
			m->n++;
		}
	rf_idmap_free(&old);
	return 0;
}

int rf_idmap_set(struct rf_idmap *m, uint64_t key, uint64_t val)
{
	uint32_t p;

	if (!key)
		return -EINVAL;
	p = pos(m, key);
	if (!m->key[p]) {
		if (2 * (m->n + 1) > m->mask + 1) {
			if (grow(m) < 0)
				return -ENOMEM;
			p = pos(m, key);
		}
		m->key[p] = key;
		m->n++;
	}
	m->val[p] = val;
	return 0;
}

bool rf_idmap_get(const struct rf_idmap *m, uint64_t key, uint64_t *val)
{
	uint32_t p;

	if (!key || !m->key)
		return false;
	p = pos(m, key);
	if (m->key[p] != key)
		return false;
	if (val)
		*val = m->val[p];
	return true;
}

bool rf_idmap_del(struct rf_idmap *m, uint64_t key)
{
	uint32_t p, q;

	if (!key || !m->key)
		return false;
	p = pos(m, key);
	if (m->key[p] != key)
		return false;
	m->key[p] = 0;
	m->n--;
	for (q = p;;) {
		uint32_t h;

		q = (q + 1) & m->mask;
		if (!m->key[q])
			return true;
		h = home(m, m->key[q]);
		/* move q back into the hole at p unless its home lies in (p, q] */
		if (((q - h) & m->mask) >= ((q - p) & m->mask)) {
			m->key[p] = m->key[q];
			m->val[p] = m->val[q];
			m->key[q] = 0;
			p = q;
		}
	}
}
