// SPDX-License-Identifier: MIT
/*
 * The per-mount memfd pool, mapped at the mount's fixed address, and the
 * broker's reading of it. A worker maps the pool read-write, so every byte
 * in it is the worker's word: the broker takes the geometry from its own
 * records (t->geom) and checks what it reads against them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "broker.h"
#include "msg.h"
#include "log.h"

uint64_t rf_pool_state_bytes(const struct rf_tenant *t)
{
	return rf_restore_bytes(t->pol.restore_nodes) + t->pol.state_size;
}

void *rf_pool_addr(const struct rf_tenant *t)
{
	return (void *)(uintptr_t)(RF_POOL_BASE + (uint64_t)t->index * RF_POOL_STRIDE);
}

int rf_pool_map(struct rf_tenant *t)
{
	void *want = rf_pool_addr(t);
	void *p = mmap(want, t->geom.total_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, t->pool_fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	if (p != want) {
		/* kernels before 4.17 ignore MAP_FIXED_NOREPLACE */
		munmap(p, t->geom.total_size);
		return -EEXIST;
	}
	t->pool = p;
	return 0;
}

int rf_pool_create(struct rf_tenant *t)
{
	uint32_t q, bufs = 0;
	int r;

	if (t->conn.bufpool) {
		bufs = rf_pool_buffers(t->pol.pool_size, t->b->nqueues, t->pol.queue_depth,
				       t->conn.payload_size);
		if (!bufs) {
			log_warnx(
				"%s: pool_size %llu cannot hold one %u-byte buffer for each of %u "
				"queues besides their %u entries' headers",
				t->pol.name, (unsigned long long)t->pol.pool_size,
				t->conn.payload_size, t->b->nqueues, t->pol.queue_depth);
			return -EINVAL;
		}
	}
	r = rf_pool_geom_init(&t->geom, t->b->nqueues, t->pol.queue_depth, t->conn.payload_size,
			      bufs * t->conn.payload_size);
	if (r < 0) {
		log_warnx("%s: pool of %u queues x %u entries x %u bytes is out of range",
			  t->pol.name, t->b->nqueues, t->pol.queue_depth, t->conn.payload_size);
		return r;
	}
	if (bufs)
		log_info("%s: kernel buffer pools: %u buffers of %u bytes per queue, %llu bytes "
			 "pinned",
			 t->pol.name, bufs, t->conn.payload_size,
			 (unsigned long long)t->geom.total_size);
	else
		log_info("%s: per-entry buffers, %llu bytes pinned", t->pol.name,
			 (unsigned long long)t->geom.total_size);
	t->pool_fd = memfd_create("ringfence-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (t->pool_fd < 0) {
		r = -errno;
		log_warn("%s: memfd_create", t->pol.name);
		return r;
	}
	if (ftruncate(t->pool_fd, (off_t)t->geom.total_size) < 0 ||
	    fcntl(t->pool_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		log_warn("%s: size the pool", t->pol.name);
		goto close_fd;
	}
	r = rf_pool_map(t);
	if (r < 0) {
		log_warnx("%s: map the pool at %p: %s", t->pol.name, rf_pool_addr(t),
			  r == -EEXIST ? "placed elsewhere" : strerror(-r));
		goto close_fd;
	}
	/* the plugin's state: kept for the mount's life, every generation
	 * maps it; the broker never reads it */
	if (t->pol.state_size || t->pol.restore_nodes) {
		off_t size = (off_t)rf_pool_state_bytes(t);

		t->state_fd = memfd_create("ringfence-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (t->state_fd < 0 || ftruncate(t->state_fd, size) < 0 ||
		    fcntl(t->state_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
			    0) {
			r = -errno;
			log_warn("%s: make the plugin's state", t->pol.name);
			munmap(t->pool, t->geom.total_size);
			t->pool = NULL;
			if (t->state_fd >= 0)
				close(t->state_fd);
			t->state_fd = -1;
			goto close_fd;
		}
	}
	rf_pool_write_header(t);
	for (q = 0; q < t->geom.nqueues; q++)
		memset(rf_pool_stats(t->pool, q), 0, sizeof(struct rf_queue_stats));
	return 0;
close_fd:
	close(t->pool_fd);
	t->pool_fd = -1;
	return r;
}

void rf_pool_destroy(struct rf_tenant *t)
{
	if (t->pool) {
		munmap(t->pool, t->geom.total_size);
		t->pool = NULL;
	}
	if (t->pool_fd >= 0) {
		close(t->pool_fd);
		t->pool_fd = -1;
	}
	if (t->state_fd >= 0) {
		close(t->state_fd);
		t->state_fd = -1;
	}
}

void rf_pool_write_header(struct rf_tenant *t)
{
	struct rf_pool_ctl *ctl = t->pool;

	ctl->magic = RF_POOL_MAGIC;
	ctl->version = RF_POOL_VERSION;
	ctl->nqueues = t->geom.nqueues;
	ctl->depth = t->geom.depth;
	ctl->nslots = t->geom.nslots;
	ctl->payload_size = t->geom.payload_size;
	ctl->slot_size = t->geom.slot_size;
	ctl->ctl_size = t->geom.ctl_size;
	ctl->total_size = t->geom.total_size;
	ctl->transport = (uint32_t)t->conn.transport;
	ctl->qpool_size = t->geom.qpool_size;
}

unsigned int rf_pool_clean(void *pool, const struct rf_pool_geom *g, uint32_t generation,
			   uint64_t hb_seq)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = 0; i < g->nqueues; i++) {
		struct rf_queue_stats *st = rf_pool_stats(pool, i);

		if (st->heartbeat > hb_seq) {
			st->heartbeat = 0;
			n++;
		}
	}
	for (i = 0; i < g->nslots; i++) {
		struct rf_slot_state *ss = rf_pool_slot_state(pool, g, i);

		if (ss->state <= RF_SLOT_ANSWERED && ss->generation < generation)
			continue;
		if (ss->state == RF_SLOT_NONE && ss->generation == 0)
			continue;
		memset(ss, 0, sizeof(*ss));
		n++;
	}
	return n;
}

/* A FETCHED record this far ahead of the broker's clock was not written by
 * rf_now_ns() (the slack covers a write racing the broker's read). */
#define RF_POOL_CLOCK_SLACK_NS 1000000000ULL

const char *rf_pool_verify(const void *pool, const struct rf_pool_geom *g, uint32_t transport,
			   uint32_t generation, uint64_t hb_seq, uint64_t now_ns, char *why,
			   size_t len)
{
	const struct rf_pool_ctl *ctl = pool;
	uint32_t i;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	if (LOAD(ctl->magic) != RF_POOL_MAGIC || LOAD(ctl->version) != RF_POOL_VERSION ||
	    LOAD(ctl->nqueues) != g->nqueues || LOAD(ctl->depth) != g->depth ||
	    LOAD(ctl->nslots) != g->nslots || LOAD(ctl->payload_size) != g->payload_size ||
	    LOAD(ctl->slot_size) != g->slot_size || LOAD(ctl->ctl_size) != g->ctl_size ||
	    LOAD(ctl->total_size) != g->total_size || LOAD(ctl->transport) != transport ||
	    LOAD(ctl->qpool_size) != g->qpool_size) {
		snprintf(why, len, "pool: the header the broker wrote was changed");
		return why;
	}
	for (i = 0; i < g->nqueues; i++) {
		uint64_t hb = LOAD(rf_pool_stats((void *)pool, i)->heartbeat);

		if (hb > hb_seq) {
			snprintf(why, len, "pool: queue %u answered heartbeat %llu, never sent", i,
				 (unsigned long long)hb);
			return why;
		}
	}
	for (i = 0; i < g->nslots; i++) {
		const struct rf_slot_state *ss = rf_pool_slot_state((void *)pool, g, i);
		uint32_t state = __atomic_load_n(&ss->state, __ATOMIC_ACQUIRE);
		uint32_t gen = LOAD(ss->generation);

		if (state > RF_SLOT_ANSWERED || gen > generation) {
			snprintf(why, len, "pool: slot %u has state %u of generation %u", i, state,
				 gen);
			return why;
		}
		if (state == RF_SLOT_FETCHED && gen == generation &&
		    LOAD(ss->fetched_ns) > now_ns + RF_POOL_CLOCK_SLACK_NS) {
			snprintf(why, len, "pool: slot %u was fetched in the future", i);
			return why;
		}
	}
#undef LOAD
	return NULL;
}
