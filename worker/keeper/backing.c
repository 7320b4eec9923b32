// SPDX-License-Identifier: MIT
/*
 * Backing files, in the keeper: the files whose data the keeper moves
 * itself (rf_req_backing() in ringfence/plugin.h).
 *
 * A plugin that serves a file's bytes straight from a file of its own
 * (passthrough does) names that file once, with its open or create reply;
 * the host passes it to the keeper with the reply's record, and from then
 * on the keeper answers the file's READs and WRITEs itself (below),
 * without handing them to the host: a request then costs
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
#include "keeper_i.h"
#include "uring_uapi.h"

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
	rf_backing_move(req);
	return true;
}

/* An open or create answered with a backing file (rf_req_backing): it
 * serves the handle the reply gives the kernel, as the keeper commits it. */
void rf_backing_take(struct rf_queue *q, struct rf_req *req, int *fd)
{
	uint32_t at = req->in.opcode == FUSE_CREATE ? sizeof(struct fuse_entry_out) : 0;
	struct fuse_open_out o;

	if ((req->in.opcode != FUSE_OPEN && req->in.opcode != FUSE_CREATE) ||
	    req->reply_len < at + sizeof(o) || !req->payload) {
		log_warnx("queue %u: the plugin host passed a backing file with %s, no open or "
			  "create; ignored",
			  q->qid, rf_op_name(req->in.opcode));
		return;
	}
	memcpy(&o, req->payload + at, sizeof(o));
	if (rf_backing_add(q, o.fh, *fd))
		*fd = -1;
}

/*
 * A backing file's READ or WRITE, between its file and the
 * request's payload, in the keeper: by pread/pwrite on memory file
 * systems, as the host moves their data; elsewhere, and whenever the data
 * is zero-copied (in the client's pages, this entry's buffer slot), by a
 * fixed-buffer op on the FUSE ring, from the file installed in the
 * entry's data slot (small zero-copied ones on memory files through the
 * entry's pipe: pipe.c).
 * The file is the table's (counted for this transfer), never closed here.
 */
static void kept_post(struct rf_req *req)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(req->q);
	/* zero-copied: the client's pages, this entry's buffer, from 0 */
	char *buf = req->zc ? (char *)(uintptr_t)req->done : req->payload + req->done;
	int index = req->zc ? RF_BUF_INDEX_ZC + (int)req->idx : RF_BUF_INDEX_POOL;
	uint32_t n = req->len - req->done;
	uint64_t off = req->off + req->done;
	int slot = (int)(RF_FILE_SLOT_DATA + req->idx);

	if (req->fd_op == RF_FDOP_READ)
		io_uring_prep_read_fixed(sqe, slot, buf, n, off, index);
	else
		io_uring_prep_write_fixed(sqe, slot, buf, n, off, index);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, req, RF_TAG_DATA);
	req->state = RQ_DATA;
}

static void kept_end(struct rf_req *req)
{
	rf_reply_moved(req);
	rf_backing_put(req);
	req->fd = -1;
	rf_queue_commit(req);
}

static void kept_count(struct rf_req *req, uint32_t n)
{
	struct rf_queue_stats *st = req->q->stats;

	if (req->inline_io) {
		st->inline_ops++;
		st->inline_bytes += n;
	} else if (req->fd_op == RF_FDOP_READ) {
		st->read_fixed_ops++;
		st->read_fixed_bytes += n;
	} else {
		st->write_fixed_ops++;
		st->write_fixed_bytes += n;
	}
	if (req->zc) {
		st->zero_copy_ops++;
		st->zero_copy_bytes += n;
	}
	req->done += n;
}

/* The rest of a transfer by pread/pwrite on this thread: whole, or to the
 * end of the file. */
static void kept_inline(struct rf_req *req)
{
	req->inline_io = true;
	while (req->done < req->len) {
		char *buf = req->payload + req->done;
		uint32_t n = req->len - req->done;
		off_t off = (off_t)(req->off + req->done);
		ssize_t s = req->fd_op == RF_FDOP_READ ? pread(req->fd, buf, n, off)
						       : pwrite(req->fd, buf, n, off);

		if (s <= 0) {
			if (s < 0 && req->done == 0)
				req->error = errno < 512 ? errno : EIO;
			break;
		}
		kept_count(req, (uint32_t)s);
	}
	kept_end(req);
}

/* A fixed-buffer op of a backing file's transfer completed. One the ring
 * cancelled goes on by pread/pwrite: io_uring cancels an op it cannot
 * give a kernel worker thread, and the tenant's pids limit (which the
 * plugin's own threads count against) can leave it none. */
void rf_backing_moved(struct rf_req *req, int res)
{
	if (req->piped) {
		/* through the entry's pipe (pipe.c): whole */
		res = rf_pipe_done(req, req->fd, res);
		if (res > 0)
			kept_count(req, (uint32_t)res);
		else if (res < 0)
			req->error = -res < 512 ? -res : EIO;
		kept_end(req);
		return;
	}
	if ((res == -ECANCELED || res == -EAGAIN) && !req->zc) {
		kept_inline(req);
		return;
	}
	if (res <= 0) {
		if (res < 0 && req->done == 0)
			req->error = -res < 512 ? -res : EIO;
		kept_end(req);
		return;
	}
	kept_count(req, (uint32_t)res);
	if (req->done < req->len)
		kept_post(req); /* short transfer: carry on */
	else
		kept_end(req);
}

void rf_backing_move(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_DATA + req->idx,
					    .fds = (uint64_t)(uintptr_t)&req->fd };
	int r;

	req->done = 0;
	/* (make bench's unsafe modes: as the host moves data in them) */
	req->inline_io = !req->zc &&
			 (q->w->memory_source ||
			  (q->w->cfg.bench & (RF_BENCH_PLAIN_IO | RF_BENCH_PRIVATE_PAYLOAD)));
	if (req->len == 0) {
		kept_end(req);
		return;
	}
	if (req->inline_io) {
		kept_inline(req);
		return;
	}
	/* small, on a memory file: through the entry's pipe */
	if (rf_pipe_start(req, req->fd, true))
		return;
	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
	if (r < 0) {
		req->error = EIO;
		log_warnx("queue %u: install a backing file: %s", q->qid, strerror(-r));
		kept_end(req);
		return;
	}
	q->files_held = true;
	kept_post(req);
}
