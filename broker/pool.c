// SPDX-License-Identifier: MIT
/* The per-mount memfd pool, mapped at the mount's fixed address. */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

int rf_pool_create(struct rf_tenant *t)
{
	struct rf_pool_ctl *ctl;
	void *want, *p;
	uint32_t q;
	int r;

	r = rf_pool_geom_init(&t->geom, t->b->nqueues, t->pol.queue_depth, t->conn.payload_size);
	if (r < 0) {
		log_warnx("%s: pool of %u queues x %u entries x %u bytes is out of range",
			  t->pol.name, t->b->nqueues, t->pol.queue_depth, t->conn.payload_size);
		return r;
	}
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
	want = (void *)(uintptr_t)(RF_POOL_BASE + (uint64_t)t->index * RF_POOL_STRIDE);
	p = mmap(want, t->geom.total_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		 t->pool_fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		log_warn("%s: map the pool at %p", t->pol.name, want);
		goto close_fd;
	}
	if (p != want) {
		/* kernels before 4.17 ignore MAP_FIXED_NOREPLACE */
		munmap(p, t->geom.total_size);
		log_warnx("%s: the pool could not be placed at %p", t->pol.name, want);
		r = -EEXIST;
		goto close_fd;
	}
	t->pool = p;
	ctl = p;
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
	for (q = 0; q < t->geom.nqueues; q++)
		memset(&ctl->q[q], 0, sizeof(ctl->q[q]));
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
}
