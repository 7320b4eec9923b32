// SPDX-License-Identifier: MIT
/*
 * The file data the keeper moves itself (the host moves the rest, with
 * the ring of its own host/host.c describes):
 *
 * - zero-copied data: the host passes the plugin's file with its answer;
 *   it is installed in its entry's data slot of the FUSE ring and the
 *   bytes move with READ_FIXED / WRITE_FIXED between the file and the
 *   client's own pages, which the kernel registered for the request in
 *   the entry's buffer slot: no byte passes through the pool (small
 *   transfers on memory files through the entry's pipe: pipe.c);
 * - a backing file's data, between the file and the request's payload,
 *   with no word from the host at all, is backing.c's.
 *
 * Memory file systems (tmpfs, ramfs) are probed here once, for both
 * processes: their transfers move by pread/pwrite.
 */
#include <errno.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

/* Submit the next piece of a zero-copied data op. */
static void post_data(struct rf_req *req)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(req->q);
	uint32_t slot = RF_FILE_SLOT_DATA + req->idx;
	/* the client's pages, registered as this entry's buffer, addressed
	 * from 0 */
	char *buf = (char *)(uintptr_t)req->done;
	int index = RF_BUF_INDEX_ZC + (int)req->idx;

	if (req->fd_op == RF_FDOP_READ)
		io_uring_prep_read_fixed(sqe, (int)slot, buf, req->len - req->done,
					 req->off + req->done, index);
	else
		io_uring_prep_write_fixed(sqe, (int)slot, buf, req->len - req->done,
					  req->off + req->done, index);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, req, RF_TAG_DATA);
	req->state = RQ_DATA;
}

/*
 * Memory file systems (tmpfs, ramfs) cannot do nonblocking I/O, so a ring
 * hands every READ_FIXED / WRITE_FIXED on their files to a kernel worker
 * thread: two context switches per op. A plain pread/pwrite into the same
 * slot on the host's thread is faster at every size (make bench: 4 KiB
 * random reads five times faster; 1 MiB transfers, make bench's plain-io
 * against the ring ops in one run, 1.07-1.12x with O_DIRECT and 1.25x
 * buffered, with less CPU per byte). Such files never block on a device,
 * so that thread never waits long. Other file systems always get the ring
 * ops.
 *
 * Which file system a transfer's file is on is decided once, from the
 * source directory, not per transfer (a statfs per request was a tenth of
 * a 4 KiB read's system calls): a plugin's files are the source's. A file
 * from elsewhere only moves by the other path, which is as correct.
 */

void rf_data_probe_source(struct rf_worker *w)
{
	struct statfs sf;

	w->memory_source = w->source_fd >= 0 && fstatfs(w->source_fd, &sf) == 0 &&
			   (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

void rf_data_start(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	unsigned int slot = RF_FILE_SLOT_DATA + req->idx;
	struct io_uring_files_update up = { .offset = slot, .fds = (uint64_t)(uintptr_t)&req->fd };
	int r;

	if (req->len == 0) {
		req->fd_op = RF_FDOP_NONE;
		req->reply_len = 0;
		if (req->in.opcode == FUSE_WRITE) {
			struct fuse_write_out o = { 0 };

			memcpy(req->payload, &o, sizeof(o));
			req->reply_len = sizeof(o);
		}
		if (req->fd >= 0)
			close(req->fd);
		req->fd = -1;
		rf_queue_commit(req);
		return;
	}
	/* small, on a memory file: through the entry's pipe, with the file
	 * kept until then */
	req->done = 0;
	if (rf_pipe_start(req, req->fd, false))
		return;
	/* Install the plugin's file in this entry's slot; the ring keeps its
	 * own reference, and the keeper lets go of the one it was passed. */
	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
	close(req->fd);
	req->fd = -1;
	if (r >= 0)
		q->files_held = true;
	if (r < 0) {
		req->error = r == -EBADF ? EBADF : EIO;
		req->fd_op = RF_FDOP_NONE;
		if (r != -EBADF)
			log_warnx("queue %u: install data file: %s", q->qid, strerror(-r));
		rf_queue_commit(req);
		return;
	}
	post_data(req);
}

void rf_data_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

	/* a backing file's, or any not zero-copied (make bench's
	 * one-process target moves the plugin's data as a backing file's) */
	if (req->backing_ref >= 0 || !req->zc) {
		rf_backing_moved(req, res);
		return;
	}
	if (req->piped) {
		res = rf_pipe_done(req, req->fd, res);
		close(req->fd);
		req->fd = -1;
		req->len = res > 0 ? (uint32_t)res : 0; /* whole: no more to move */
	}
	if (res > 0) {
		if (req->fd_op == RF_FDOP_READ) {
			q->stats->read_fixed_ops++;
			q->stats->read_fixed_bytes += (uint64_t)res;
		} else {
			q->stats->write_fixed_ops++;
			q->stats->write_fixed_bytes += (uint64_t)res;
		}
		/* ... of which straight to or from the client's pages */
		q->stats->zero_copy_ops++;
		q->stats->zero_copy_bytes += (uint64_t)res;
		req->done += (uint32_t)res;
		if (req->done < req->len) {
			post_data(req); /* short transfer: carry on */
			return;
		}
	} else if (res < 0 && req->done == 0) {
		req->error = -res < 512 ? -res : EIO;
	}
	/* res == 0: end of file */
	rf_reply_moved(req);
	rf_queue_commit(req);
}

bool rf_data_in_flight(const struct rf_queue *q)
{
	uint32_t i;

	for (i = 0; i < q->nreqs; i++)
		if (q->reqs[i].state == RQ_DATA)
			return true;
	return false;
}

void rf_data_release(struct rf_queue *q)
{
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_DATA,
					    .fds = (uint64_t)(uintptr_t)q->no_files };
	int r;

	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, q->nreqs);
	if (r < 0)
		log_warnx("queue %u: empty the data slots: %s", q->qid, strerror(-r));
	q->files_held = false;
}
