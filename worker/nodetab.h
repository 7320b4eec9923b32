/* SPDX-License-Identifier: MIT */
/*
 * A table of small records keyed by a 64-bit id, kept in memory that
 * outlives the process writing it (a mount's state area, which the broker
 * maps into every worker generation), for the node ids and file handles a
 * successor must restore (issue 18's table; not yet wired to the worker).
 *
 * Crash consistency: a writer may be killed at any instruction, and the
 * next reader must find every record either as it was or as it became.
 * A new record is written whole before one aligned 8-byte store publishes
 * its id; a record's key is changed by writing the other of its two key
 * buffers and then flipping its selector with one store; a record is
 * removed by one store of the tombstone id. Readers trust nothing in the
 * memory: a header that does not match what this build would write is
 * formatted afresh (the table is empty: the successor answers ESTALE, as
 * without a table), and a record whose length exceeds the key size is
 * skipped.
 *
 * Writers of one generation are serialised by a lock in the worker's own
 * memory; only one generation writes at a time (its predecessor is dead).
 */
#ifndef RINGFENCE_NODETAB_H
#define RINGFENCE_NODETAB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define RF_NODETAB_MAGIC 0x626174656465726eULL /* "rnedetab" */
#define RF_NODETAB_VERSION 1
#define RF_NODETAB_FREE 0ULL
#define RF_NODETAB_GONE UINT64_MAX /* a tombstone: removed, keep probing */

struct rf_nodetab {
	void *mem;
	uint32_t nslots;
	uint32_t key_max;
	size_t rec_size;
	pthread_mutex_t lock;
};

/* Take @size bytes at @mem (8-byte aligned) as a table whose keys are at
 * most @key_max bytes. Returns 1 if it was formatted (empty: nothing was
 * there, or nothing this build can read), 0 if a predecessor's table was
 * taken as it is, -EINVAL if @size holds no table. */
int rf_nodetab_open(struct rf_nodetab *t, void *mem, size_t size, uint32_t key_max);
void rf_nodetab_close(struct rf_nodetab *t);

/* Insert @id (neither FREE nor GONE) with @kind and @key, or change the
 * kind and key of the record it has. 0, -EINVAL, or -ENOSPC. */
int rf_nodetab_put(struct rf_nodetab *t, uint64_t id, uint32_t kind, const void *key, uint32_t len);
/* The record of @id: its kind, and its key copied to @key (@cap bytes);
 * 0 with *@len set, -ENOENT, or -ERANGE if @cap is too small. */
int rf_nodetab_get(struct rf_nodetab *t, uint64_t id, uint32_t *kind, void *key, uint32_t cap,
		   uint32_t *len);
/* Remove @id: 0 or -ENOENT. */
int rf_nodetab_del(struct rf_nodetab *t, uint64_t id);
/* Records in the table (readable ones). */
uint32_t rf_nodetab_count(struct rf_nodetab *t);

#endif /* RINGFENCE_NODETAB_H */
