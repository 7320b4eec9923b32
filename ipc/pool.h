/* SPDX-License-Identifier: MIT */
/*
 * The shared pool: one memfd per mount, made by the broker, mapped at the
 * same virtual address in the broker and in every worker generation, and
 * registered as fixed buffer 0 of every ring of the mount.
 *
 *   [control area][slot 0][slot 1]...[slot nslots-1]
 *   slot = [RF_SLOT_HDR_SIZE header area][payload_size payload]
 *
 * With the kernel's buffer pools (7.46, qpool_size != 0) an entry's slot
 * is its header area alone, and each queue has one payload pool of
 * qpool_size bytes, in which the kernel picks a payload_size buffer for
 * each request (fuse_uring_ent_in_out.offset); the last slot, queue 0's
 * /dev/fuse reader, keeps its payload:
 *
 *   [control area][hdr 0]...[hdr nslots-2][hdr + payload of the reader]
 *   [pool of queue 0]...[pool of queue nqueues-1]
 *
 * On the io-uring path the header area starts with the kernel's
 * struct fuse_uring_req_header. On the classic path a /dev/fuse read lands
 * RF_CLASSIC_PREFIX bytes before the payload, so that WRITE data starts on the
 * payload's page boundary; a reply's fuse_out_header goes right before the
 * payload for the same reason.
 *
 * The control area holds counters the worker writes and the broker shows,
 * and the slot records (below) a successor and the broker's watchdog read.
 * Every byte of the pool can be written by a worker, so the broker takes the
 * pool's geometry from its own records (struct rf_pool_geom), never from
 * the header below, and reads the rest only through rf_pool_verify()
 * (broker/pool.c), which treats an impossible value as the worker's fault.
 */
#ifndef RINGFENCE_POOL_H
#define RINGFENCE_POOL_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "fuse_uapi.h"
#include "transport.h"

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call): the clock of the
 * slot records, which the worker writes and the broker's watchdog reads. */
static inline uint64_t rf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define RF_POOL_MAGIC 0x6c6f6f7065636e66ULL /* "fncepool" */
#define RF_POOL_VERSION 3
#define RF_PAGE_SIZE 4096u
#define RF_SLOT_HDR_SIZE RF_PAGE_SIZE
#define RF_CLASSIC_PREFIX (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))

/* Pools live at fixed addresses far from the heap, the PIE image and the
 * mmap area, one stride apart, so every worker generation can map its
 * mount's pool where the broker has it. */
#define RF_POOL_BASE 0x100000000000ULL
#define RF_POOL_STRIDE 0x1000000000ULL /* 64 GiB per mount */
/* indexes a broker can have handed over: well inside the 128 TiB of a
 * process's address space */
#define RF_POOL_INDEX_MAX 1024u

#define RF_STATS_OPCODES 64 /* FUSE opcodes 0..63 */
#define RF_STATS_ERRNOS 64 /* errnos 1..63; slot 0 counts larger ones */
#define RF_STATS_LAT_BUCKETS 32 /* bucket i: latency < 2^i microseconds */
#define RF_STATS_SIZE_BUCKETS 24 /* request sizes up to 4 MiB, and larger */

/* The size bucket of @size in rf_queue_stats' histograms. */
static inline unsigned int rf_size_bucket(uint64_t size)
{
	unsigned int b = 0;

	while (b + 1 < RF_STATS_SIZE_BUCKETS && size > (1ULL << b))
		b++;
	return b;
}

/* Per-queue counters, written only by that queue's worker thread. */
struct rf_queue_stats {
	uint64_t requests; /* requests dispatched, all kinds */
	uint64_t uring_requests; /* fetched through FUSE io-uring entries */
	uint64_t classic_requests; /* read from /dev/fuse */
	uint64_t errors; /* replies with error != 0 */
	uint64_t read_fixed_ops;
	uint64_t read_fixed_bytes;
	uint64_t write_fixed_ops;
	uint64_t write_fixed_bytes;
	uint64_t forgets;
	uint64_t interrupts;
	uint64_t bytes_read; /* READ reply data sent to clients */
	uint64_t bytes_written; /* WRITE data received from clients */
	uint64_t latency_max_ns; /* arrival to reply, slowest */
	uint64_t heartbeat; /* the last PING this queue's thread answered */
	uint64_t inline_ops; /* small transfers done by pread/pwrite (see worker/keeper/data.c) */
	uint64_t inline_bytes;
	uint64_t zero_copy_ops; /* fixed-buffer ops on a request's client pages (7.46) */
	uint64_t zero_copy_bytes;
	/* restore_nodes (worker/plugin/restore.c): node ids and open files the
	 * successors restored, those they could not, and those the table had
	 * no room for (not restorable) */
	uint64_t restored_nodes;
	uint64_t restored_files;
	uint64_t restore_failed;
	uint64_t restore_full;
	/* of the zero-copied transfers, those through a pipe (small ones on
	 * memory files: worker/keeper/pipe.c) */
	uint64_t spliced_ops;
	uint64_t spliced_bytes;
	/* READ and WRITE requests by the size the kernel asked for: bucket i
	 * counts sizes in (2^(i-1), 2^i], bucket 0 sizes 0 and 1, the last
	 * bucket everything larger */
	uint64_t read_size_log2[RF_STATS_SIZE_BUCKETS];
	uint64_t write_size_log2[RF_STATS_SIZE_BUCKETS];
	uint64_t by_opcode[RF_STATS_OPCODES];
	uint64_t by_errno[RF_STATS_ERRNOS];
	uint64_t latency_us_log2[RF_STATS_LAT_BUCKETS];
};

/*
 * What each slot's entry is doing, kept where the next worker generation
 * can read it after any crash. A slot is FETCHED from the moment a request
 * arrives in it until the next request does: a successor that finds it
 * FETCHED commits the id again; if the first commit had gone through, the
 * kernel answers ENOENT and nothing is lost.
 */
enum rf_slot_state_kind {
	RF_SLOT_NONE = 0, /* no request seen (or a fresh entry) */
	RF_SLOT_FETCHED = 1, /* holds request commit_id, not answered yet */
	RF_SLOT_ANSWERED = 2, /* its answer is queued or sent */
};

struct rf_slot_state {
	uint64_t commit_id;
	uint64_t fetched_ns; /* rf_now_ns() */
	uint32_t state;
	uint32_t opcode;
	uint32_t generation; /* of the worker that fetched it */
	uint32_t reruns; /* 1: a successor is running it again (worker/keeper/rescue.c) */
};

struct rf_pool_ctl {
	uint64_t magic;
	uint32_t version;
	uint32_t nqueues;
	uint32_t depth;
	uint32_t nslots;
	uint32_t payload_size;
	uint32_t slot_size;
	uint64_t ctl_size;
	uint64_t total_size;
	uint32_t transport; /* enum rf_transport, set by the broker */
	uint32_t qpool_size; /* the header up to here is the broker's; it never changes */
	uint64_t adopted; /* requests successors answered for dead workers */
	uint64_t adopted_rerun; /* ... of which run again in full */
	uint64_t adopted_answered; /* ... of which the dead worker had answered */
	uint64_t rescued; /* requests a dead worker never received, ended EIO */
	uint64_t pad[5];
	/* nqueues struct rf_queue_stats, nslots struct rf_slot_state, then
	 * the seen table: RF_SEEN_IDS uint64_t */
	struct rf_queue_stats q[];
};

/*
 * The ids of the last requests any worker of the mount received, indexed by
 * (id / 2) % RF_SEEN_IDS. The kernel numbers requests 2, 4, 6, ... per
 * connection; an id in the table's range that is not in it was never
 * received: a successor asks each queue for it (see worker/keeper/rescue.c).
 */
#define RF_SEEN_IDS 16384

_Static_assert(sizeof(struct rf_queue_stats) % 64 == 0, "stats are whole cache lines");
_Static_assert(sizeof(struct rf_pool_ctl) % 64 == 0, "stats stay cache aligned");

/* Geometry of a pool; pure arithmetic shared by broker, worker and tests. */
struct rf_pool_geom {
	uint32_t nqueues;
	uint32_t depth;
	uint32_t nslots; /* nqueues * depth + 1 (the queue-0 /dev/fuse reader) */
	uint32_t payload_size;
	uint32_t slot_size;
	uint32_t qpool_size; /* bytes of each queue's buffer pool; 0: per-entry buffers */
	uint64_t ctl_size;
	uint64_t qpool_offset; /* of queue 0's buffer pool */
	uint64_t total_size;
};

static inline uint64_t rf_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Returns 0, or -EINVAL when the numbers are out of range or overflow.
 * @qpool_size: 0 for per-entry buffers, else each queue's buffer pool, a
 * whole number of payload_size buffers. */
static inline int rf_pool_geom_init(struct rf_pool_geom *g, uint32_t nqueues, uint32_t depth,
				    uint32_t payload_size, uint32_t qpool_size)
{
	uint64_t ctl, total;

	if (nqueues == 0 || nqueues > 4096 || depth == 0 || depth > 1024 ||
	    payload_size < FUSE_MIN_READ_BUFFER || payload_size % RF_PAGE_SIZE ||
	    qpool_size % payload_size)
		return -EINVAL;
	g->nqueues = nqueues;
	g->depth = depth;
	g->nslots = nqueues * depth + 1;
	g->payload_size = payload_size;
	g->qpool_size = qpool_size;
	g->slot_size = RF_SLOT_HDR_SIZE + (qpool_size ? 0 : payload_size);
	ctl = rf_round_up(sizeof(struct rf_pool_ctl) +
				  (uint64_t)nqueues * sizeof(struct rf_queue_stats) +
				  (uint64_t)(nqueues * depth + 1) * sizeof(struct rf_slot_state) +
				  RF_SEEN_IDS * sizeof(uint64_t),
			  RF_PAGE_SIZE);
	total = ctl + (uint64_t)g->nslots * g->slot_size;
	g->qpool_offset = 0;
	if (qpool_size) {
		/* the reader's payload, then the queues' pools */
		total += payload_size;
		g->qpool_offset = total;
		total += (uint64_t)nqueues * qpool_size;
	}
	if (total > RF_POOL_STRIDE / 2)
		return -EINVAL;
	g->ctl_size = ctl;
	g->total_size = total;
	return 0;
}

/* The automatic pool_size: what per-entry buffers would pin, up to this. */
#define RF_POOL_AUTO_MAX (32ULL << 20)

/*
 * Buffers per queue's pool for a pool that pins at most @budget bytes in
 * all (0: automatic), its control area, headers and the reader's slot
 * included; at most one per entry, which is all a queue can use. 0 when
 * not even one buffer per queue fits.
 */
static inline uint32_t rf_pool_buffers(uint64_t budget, uint32_t nqueues, uint32_t depth,
				       uint32_t payload_size)
{
	struct rf_pool_geom one, entries;
	uint64_t fixed, n;

	if (rf_pool_geom_init(&one, nqueues, depth, payload_size, payload_size) < 0 ||
	    rf_pool_geom_init(&entries, nqueues, depth, payload_size, 0) < 0)
		return 0;
	if (!budget)
		budget = entries.total_size < RF_POOL_AUTO_MAX ? entries.total_size
							       : RF_POOL_AUTO_MAX;
	fixed = one.total_size - (uint64_t)nqueues * payload_size;
	if (budget < fixed)
		return 0;
	n = (budget - fixed) / ((uint64_t)nqueues * payload_size);
	return (uint32_t)(n < depth ? n : depth);
}

/* Where queue @q's buffer pool starts (pools only). */
static inline uint64_t rf_pool_qpool(const struct rf_pool_geom *g, uint32_t q)
{
	return g->qpool_offset + (uint64_t)q * g->qpool_size;
}

static inline uint64_t rf_pool_slot_offset(const struct rf_pool_geom *g, uint32_t slot)
{
	return g->ctl_size + (uint64_t)slot * g->slot_size;
}

/* Slot of entry @ent of queue @qid; the extra reader slot is nslots - 1. */
static inline uint32_t rf_pool_slot_index(const struct rf_pool_geom *g, uint32_t qid, uint32_t ent)
{
	return qid * g->depth + ent;
}

/* Where the parts of the control area are, from the geometry alone: a
 * worker can overwrite the header, but not move these. */
static inline struct rf_queue_stats *rf_pool_stats(void *pool, uint32_t q)
{
	return &((struct rf_pool_ctl *)pool)->q[q];
}

static inline struct rf_slot_state *rf_pool_slot_state(void *pool, const struct rf_pool_geom *g,
						       uint32_t slot)
{
	return (struct rf_slot_state *)rf_pool_stats(pool, g->nqueues) + slot;
}

static inline uint64_t *rf_pool_seen(void *pool, const struct rf_pool_geom *g)
{
	return (uint64_t *)rf_pool_slot_state(pool, g, g->nslots);
}

#endif /* RINGFENCE_POOL_H */
