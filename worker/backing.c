// SPDX-License-Identifier: MIT
/*
 * Backing files, in the keeper: the files whose data the keeper moves
 * itself (rf_req_backing() in ringfence/plugin.h).
 *
 * A plugin that serves a file's bytes straight from a file of its own
 * (passthrough does) names that file once, with its open or create reply;
 * the host passes it to the keeper with the reply's record, and from then
 * on the keeper answers the file's READs and WRITEs itself (data.c says
 * how), without handing them to the host: a request then costs
 * the client and the keeper two context switches, as in a one-process
 * server, instead of four. Until the kernel RELEASEs the handle, which
 * reaches the host as before.
 *
 * Nothing here trusts the host more than before: the keeper moves bytes
 * between a file the host could read and write anyway and the request's
 * own payload, as the kernel's RELEASE of the handle ends it; the file
 * must be a regular one (a pipe or socket could hold a queue thread), a
 * handle already taken keeps its first file, and the table is bounded.
 * The handle is the one the keeper commits, read from the reply it checked.
 *
 * The table is the keeper's, for all its queue threads (the kernel sends
 * a handle's requests on the queue of whichever CPU its client runs on):
 * a hash of handles under one lock, each entry counted while a transfer
 * uses its file, so that a RELEASE never closes a file under a transfer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "queue_i.h"

#define RF_BACKING_BUCKETS 8192 /* a power of two */

struct rf_backing {
	uint64_t fh;
	int fd;
	uint32_t refs; /* the table's (until RELEASE) and each transfer's */
	int32_t next; /* in its bucket, or on the free list; -1 ends */
};

static pthread_mutex_t backing_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rf_backing *backing;
static int32_t *buckets;
static int32_t backing_free = -1;
static bool backing_full_said;

static uint32_t bucket_of(uint64_t fh)
{
	fh ^= fh >> 33;
	fh *= 0xff51afd7ed558ccdULL;
	fh ^= fh >> 33;
	return (uint32_t)fh & (RF_BACKING_BUCKETS - 1);
}

/* The table, made at its first use (under the lock); false without memory. */
static bool backing_table(void)
{
	int32_t i;

	if (backing)
		return true;
	backing = calloc(RF_BACKING_MAX, sizeof(*backing));
	buckets = malloc(RF_BACKING_BUCKETS * sizeof(*buckets));
	if (!backing || !buckets) {
		free(backing);
		free(buckets);
		backing = NULL;
		buckets = NULL;
		return false;
	}
	for (i = 0; i < RF_BACKING_BUCKETS; i++)
		buckets[i] = -1;
	for (i = RF_BACKING_MAX - 1; i >= 0; i--) {
		backing[i].fd = -1;
		backing[i].next = backing_free;
		backing_free = i;
	}
	return true;
}

static int32_t find(uint64_t fh)
{
	int32_t i;

	for (i = buckets[bucket_of(fh)]; i >= 0; i = backing[i].next)
		if (backing[i].fh == fh)
			return i;
	return -1;
}

/* Under the lock: one reference less; the last closes the file. */
static void put_locked(int32_t i)
{
	if (--backing[i].refs)
		return;
	close(backing[i].fd);
	backing[i].fd = -1;
	backing[i].next = backing_free;
	backing_free = i;
}

bool rf_backing_add(struct rf_queue *q, uint64_t fh, int fd)
{
	struct stat st;
	bool ok = false;
	int32_t i;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_warnx("queue %u: the plugin named a backing file for handle 0x%llx that is no "
			  "regular file; its data goes to the plugin",
			  q->qid, (unsigned long long)fh);
		return false;
	}
	pthread_mutex_lock(&backing_lock);
	if (!backing_table() || find(fh) >= 0 || backing_free < 0) {
		if (backing && backing_free < 0 && !backing_full_said) {
			backing_full_said = true;
			log_warnx("queue %u: %d backing files open: the data of further files "
				  "goes to the plugin",
				  q->qid, RF_BACKING_MAX);
		}
		goto out;
	}
	i = backing_free;
	backing_free = backing[i].next;
	backing[i].fh = fh;
	backing[i].fd = fd;
	backing[i].refs = 1;
	backing[i].next = buckets[bucket_of(fh)];
	buckets[bucket_of(fh)] = i;
	ok = true;
out:
	pthread_mutex_unlock(&backing_lock);
	return ok;
}

/* The file of handle @fh, counted (rf_backing_put), or -1 in *ref. */
static int backing_get(uint64_t fh, int32_t *ref)
{
	int fd = -1;
	int32_t i;

	*ref = -1;
	pthread_mutex_lock(&backing_lock);
	if (backing && (i = find(fh)) >= 0) {
		backing[i].refs++;
		*ref = i;
		fd = backing[i].fd;
	}
	pthread_mutex_unlock(&backing_lock);
	return fd;
}

void rf_backing_put(struct rf_req *req)
{
	if (req->backing_ref < 0)
		return;
	pthread_mutex_lock(&backing_lock);
	put_locked(req->backing_ref);
	pthread_mutex_unlock(&backing_lock);
	req->backing_ref = -1;
}

void rf_backing_release(uint64_t fh)
{
	int32_t *p, i;

	pthread_mutex_lock(&backing_lock);
	if (!backing)
		goto out;
	for (p = &buckets[bucket_of(fh)]; (i = *p) >= 0; p = &backing[i].next)
		if (backing[i].fh == fh) {
			*p = backing[i].next;
			put_locked(i);
			break;
		}
out:
	pthread_mutex_unlock(&backing_lock);
}

bool rf_backing_serve(struct rf_req *req)
{
	const struct fuse_read_in *rd = (const void *)req->arg0;
	const struct fuse_write_in *wr = (const void *)req->arg0;
	int32_t ref;
	int fd;

	if (req->in.opcode != FUSE_READ && req->in.opcode != FUSE_WRITE)
		return false;
	/* a write that must clear the set-user-ID and set-group-ID bits is
	 * the plugin's (it keeps the file's owners and modes) */
	if (req->in.opcode == FUSE_WRITE && (wr->write_flags & FUSE_WRITE_KILL_SUIDGID))
		return false;
	fd = backing_get(rd->fh, &ref);
	if (fd < 0)
		return false;
	req->state = RQ_PLUGIN;
	rf_req_reset(req);
	req->replied = true;
	req->backing_ref = ref;
	req->fd = fd;
	if (req->in.opcode == FUSE_READ) {
		req->fd_op = RF_FDOP_READ;
		req->off = rd->offset;
		req->len = rd->size < rf_reply_limit(req) ? rd->size : rf_reply_limit(req);
	} else {
		req->fd_op = RF_FDOP_WRITE;
		req->off = wr->offset;
		req->len = req->rest_len;
	}
	rf_data_kept_start(req);
	return true;
}
