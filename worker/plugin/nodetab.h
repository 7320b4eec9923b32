/* SPDX-License-Identifier: MIT */
/*
 * A table of small records keyed by a 64-bit id, kept in memory that
 * outlives the process writing it (a mount's state area, which the broker
 * maps into every worker generation): the node ids and file handles a
 * successor restores (restore.c).
 *
 * Crash consistency: a writer may be killed at any instruction, and the
 * next reader must find every record either as it was or as it became.
 * Each record is a slot of its own: a new record is written whole into a
 * free slot before one aligned 8-byte store publishes its id; a record's
 * key is changed by writing the other of its two key buffers and then
 * flipping its selector with one store; its count is one 8-byte store; a
 * record is removed by one store of the free id. Which slot holds which id
 * is kept in the writer's own memory (an index built by reading every slot
 * when the table is opened), never in the shared memory, so nothing there
 * can send a lookup astray. Readers trust nothing in the memory: a header
 * that does not match what this build would write is formatted afresh (the
 * table is empty), a slot whose length exceeds the key size is freed, and
 * of two slots with one id the second is freed.
 *
 * Writers of one generation are serialised by a lock in the worker's own
 * memory; only one generation writes at a time (its predecessor is dead).
 */
#ifndef RINGFENCE_NODETAB_H
#define RINGFENCE_NODETAB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "idmap.h"

#define RF_NODETAB_MAGIC 0x626174656465726eULL /* "rnedetab" */
#define RF_NODETAB_VERSION 2
#define RF_NODETAB_FREE 0ULL

struct rf_nodetab {
	void *mem;
	uint32_t nslots;
	uint32_t key_max;
	size_t rec_size;
	pthread_mutex_t lock;
	/* the writer's own: id -> slot (open addressing, 2^n entries), and
	 * the free slots */
	struct rf_idmap ix;
	uint32_t *free;
	uint32_t nfree;
};

/* Bytes of one record with keys of at most @key_max bytes. */
size_t rf_nodetab_rec_size(uint32_t key_max);
/* Take @size bytes at @mem (8-byte aligned) as a table whose keys are at
 * most @key_max bytes. Returns 1 if it was formatted (empty: nothing was
 * there, or nothing this build can read), 0 if a predecessor's table was
 * taken as it is, -EINVAL if @size holds no table, -ENOMEM. */
int rf_nodetab_open(struct rf_nodetab *t, void *mem, size_t size, uint32_t key_max);
void rf_nodetab_close(struct rf_nodetab *t);

/* Insert @id (not FREE) with @kind, @key and a count of 0, or change the
 * kind and key of the record it has (its count stays). 0, -EINVAL, or
 * -ENOSPC. */
int rf_nodetab_put(struct rf_nodetab *t, uint64_t id, uint32_t kind, const void *key, uint32_t len);
/* The record of @id: its kind, its key copied to @key (@cap bytes) and its
 * count (@count may be NULL); 0 with *@len set, -ENOENT, or -ERANGE if
 * @cap is too small. */
int rf_nodetab_get(struct rf_nodetab *t, uint64_t id, uint32_t *kind, void *key, uint32_t cap,
		   uint32_t *len, uint64_t *count);
/* Add @delta to the count of @id (a negative one stops at 0): 0 with the
 * new count in *@now (may be NULL), or -ENOENT. */
int rf_nodetab_count_add(struct rf_nodetab *t, uint64_t id, int64_t delta, uint64_t *now);
/* Remove @id: 0 or -ENOENT. */
int rf_nodetab_del(struct rf_nodetab *t, uint64_t id);
/* Records in the table. */
uint32_t rf_nodetab_count(struct rf_nodetab *t);
/* Call @fn for every record (unlocked: for a single-threaded start-up). */
void rf_nodetab_each(struct rf_nodetab *t,
		     void (*fn)(uint64_t id, uint32_t kind, uint64_t count, const void *key,
				uint32_t len, void *arg),
		     void *arg);

#endif /* RINGFENCE_NODETAB_H */
