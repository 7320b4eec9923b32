// SPDX-License-Identifier: MIT
/*
 * Small zero-copied transfers on memory files, through a pipe.
 *
 * A zero-copied request's data is in the client's pages, which only a
 * fixed-buffer op on the FUSE ring reaches. Between those pages and a
 * file on tmpfs or ramfs such an op cannot run in line: those file
 * systems cannot do nonblocking I/O, so the ring hands every READ_FIXED
 * and WRITE_FIXED on their files to a kernel worker thread, two context
 * switches that cost more than a small transfer itself. A pipe can: so a
 * small transfer goes through one.
 *
 * - a READ: splice() moves the file's pages into the entry's pipe (by
 *   reference, no copy), and a READ_FIXED from the pipe copies them into
 *   the client's pages, in line;
 * - a WRITE: a WRITE_FIXED copies the client's pages into the pipe, in
 *   line, and splice() writes them from the pipe into the file.
 *
 * Each entry has a pipe of its own, both ends the keeper's, made at the
 * entry's first such transfer, both ends installed in the entry's two
 * pipe slots of the ring (uring_uapi.h). The pipe is empty between
 * transfers: whatever one leaves in it is drained. A transfer fits when
 * every page it spans has a buffer of the pipe (a pipe holds a page, or
 * part of one, per buffer); larger ones, and all of an entry whose pipe
 * cannot be made, take the fixed-buffer op on the file, as on other file
 * systems. Which file system is decided as for the other memory-file
 * paths: once, from the source (data.c), and the file must be a regular
 * one (backing files are checked when the table takes them; a file passed
 * with an answer, here), so that no splice() can wait.
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

struct rf_pipe {
	int rd, wr;
	int cap; /* bytes; 0 not made yet, -1 cannot be */
};

/* The entry's pipe, made and installed at its first use; NULL if it
 * cannot be. */
static struct rf_pipe *entry_pipe(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	uint32_t slot = rf_file_slot_pipe(q->w->cfg.depth, req->idx);
	struct io_uring_files_update up = { .offset = slot };
	struct rf_pipe *p;
	int fds[2], r;

	if (!q->pipes) {
		q->pipes = calloc(q->nreqs, sizeof(*q->pipes));
		if (!q->pipes)
			return NULL;
	}
	p = &q->pipes[req->idx];
	if (p->cap)
		return p->cap > 0 ? p : NULL;
	p->cap = -1;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
		return NULL;
	r = fcntl(fds[1], F_GETPIPE_SZ);
	if (r > 0) {
		p->cap = r;
		up.fds = (uint64_t)(uintptr_t)fds;
		r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 2);
	}
	if (r < 0) {
		/* a ring made with fewer slots (a broker older than this
		 * worker): the file's own op, as before */
		log_debug("queue %u: entry %u's pipe: %s", q->qid, req->idx, strerror(-r));
		close(fds[0]);
		close(fds[1]);
		p->cap = -1;
		return NULL;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	return p;
}

static void drain(struct rf_pipe *p)
{
	char buf[4096];

	while (read(p->rd, buf, sizeof(buf)) > 0)
		;
}

bool rf_pipe_start(struct rf_req *req, int fd, bool checked)
{
	struct rf_queue *q = req->q;
	uint32_t page = (uint32_t)getpagesize(), slot;
	struct io_uring_sqe *sqe;
	struct rf_pipe *p;
	struct stat st;
	uint32_t n = 0;

	if (!req->zc || !q->w->memory_source || !req->len ||
	    (req->fd_op != RF_FDOP_READ && req->fd_op != RF_FDOP_WRITE))
		return false;
	p = entry_pipe(req);
	if (!p || (req->off & (page - 1)) + req->len > (uint64_t)p->cap)
		return false;
	if (!checked && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
		return false;
	slot = rf_file_slot_pipe(q->w->cfg.depth, req->idx);
	if (req->fd_op == RF_FDOP_READ) {
		loff_t off = (loff_t)req->off;

		while (n < req->len) {
			ssize_t s = splice(fd, &off, p->wr, NULL, req->len - n, SPLICE_F_NONBLOCK);

			if (s <= 0)
				break;
			n += (uint32_t)s;
		}
		if (!n) /* the end of the file, or a file splice() cannot read */
			return false;
	} else {
		n = req->len;
	}
	sqe = rf_queue_sqe(q);
	/* the client's pages, this entry's buffer, from 0 */
	if (req->fd_op == RF_FDOP_READ)
		io_uring_prep_read_fixed(sqe, (int)slot, NULL, n, 0,
					 RF_BUF_INDEX_ZC + (int)req->idx);
	else
		io_uring_prep_write_fixed(sqe, (int)slot + 1, NULL, n, 0,
					  RF_BUF_INDEX_ZC + (int)req->idx);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, req, RF_TAG_DATA);
	req->piped = n;
	req->state = RQ_DATA;
	return true;
}

int rf_pipe_done(struct rf_req *req, int fd, int res)
{
	struct rf_queue *q = req->q;
	struct rf_pipe *p = &q->pipes[req->idx];
	uint32_t in = req->piped, n = 0;

	req->piped = 0;
	if (req->fd_op == RF_FDOP_WRITE) {
		/* what the pipe took of the client's pages, into the file */
		loff_t off = (loff_t)req->off;

		in = res > 0 ? (uint32_t)res : 0;
		while (n < in) {
			ssize_t s = splice(p->rd, NULL, fd, &off, in - n, SPLICE_F_NONBLOCK);

			if (s <= 0) {
				if (s < 0 && !n)
					res = -errno;
				break;
			}
			n += (uint32_t)s;
		}
		if (n)
			res = (int)n;
	} else {
		n = res > 0 ? (uint32_t)res : 0;
	}
	if (n != in)
		drain(p);
	if (res > 0) {
		q->stats->spliced_ops++;
		q->stats->spliced_bytes += (uint64_t)res;
	}
	return res;
}
