// SPDX-License-Identifier: MIT
/*
 * One thread per FUSE queue, each the single issuer of its own ring.
 *
 * io-uring transport: every entry REGISTERs its slot (header + payload) and
 * then loops on COMMIT_AND_FETCH. Queue 0 also keeps a plain READ posted on
 * fixed file 0 for what the kernel still sends through /dev/fuse (FORGET,
 * BATCH_FORGET, INTERRUPT) -- and for everything, should a failed REGISTER
 * have turned the connection back to classic.
 *
 * classic transport: every entry keeps a plain READ posted on its queue's
 * cloned /dev/fuse (fixed file 0) and answers with a plain WRITE on it.
 *
 * Either way, file data moves between the plugin's files and the pool with
 * READ_FIXED / WRITE_FIXED (small transfers on tmpfs by pread/pwrite, see
 * on_memory_fs), and the worker holds no /dev/fuse descriptor.
 *
 * A successor first finishes what its dead predecessor left: adopt()
 * answers the requests recorded in the slots, rescue() finds those the
 * kernel handed over but never delivered.
 *
 * The low bits of each SQE's user_data say what completed.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/eventfd.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "log.h"
#include "uring_uapi.h"
#include "worker.h"

enum {
	TAG_CMD = 1, /* FUSE REGISTER / COMMIT_AND_FETCH */
	TAG_DATA = 2, /* READ_FIXED / WRITE_FIXED */
	TAG_CREAD = 3, /* classic READ of /dev/fuse */
	TAG_CWRITE = 4, /* classic reply WRITE */
	TAG_WAKE = 5, /* eventfd read */
	TAG_PROBE = 6, /* COMMIT_AND_FETCH for a lost request; the id above the tag */
	TAG_MASK = 7,
};

static __thread struct rf_queue *cur_queue;

static struct io_uring_sqe *get_sqe(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		/* The ring has room for every op the queue can have in flight,
		 * so a full SQ only means we must flush what we queued. */
		io_uring_submit(&q->ring);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe)
			fatalx("queue %u: submission queue full", q->qid);
	}
	return sqe;
}

static void set_data(struct io_uring_sqe *sqe, void *p, unsigned int tag)
{
	sqe->user_data = (uint64_t)(uintptr_t)p | tag;
}

static void post_register(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct io_uring_sqe *sqe = get_sqe(q);

	rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_REGISTER, (uint16_t)q->qid, 0);
	req->iov[0].iov_base = req->hdr;
	req->iov[0].iov_len = sizeof(struct fuse_uring_req_header);
	req->iov[1].iov_base = req->payload;
	req->iov[1].iov_len = req->payload_cap;
	sqe->addr = (uint64_t)(uintptr_t)req->iov;
	sqe->len = 2;
	set_data(sqe, req, TAG_CMD);
	req->state = RQ_WAIT;
}

/* Requests whose arguments all sit in the slot's header area (op_in), which
 * no reply touches, and which are safe to repeat: a successor runs them
 * again in full. */
static bool rerunnable(uint32_t op)
{
	switch (op) {
	case FUSE_GETATTR:
	case FUSE_READ:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
	case FUSE_STATFS:
	case FUSE_LISTXATTR:
	case FUSE_ACCESS:
	case FUSE_READLINK:
		return true;
	default:
		return false;
	}
}

static void uring_fetched(struct rf_req *req);

/*
 * Finish, on our own ring, the request a dead predecessor left in this
 * slot: commit the answer it had queued, run it again if it is safe to, or
 * answer EIO. The kernel finds the request by id; the entry is ours from
 * then on and fetches its next request into the same slot.
 */
static void adopt(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct fuse_uring_req_header *h = (void *)req->hdr;
	uint32_t state = __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE);
	struct fuse_out_header oh_old;
	struct fuse_in_header in;
	struct io_uring_sqe *sqe;

	req->adopting = true;
	req->in.unique = req->ss->commit_id;
	memcpy(&in, h->in_out, sizeof(in));
	if (state == RF_SLOT_FETCHED && rerunnable(req->ss->opcode) &&
	    in.unique == req->ss->commit_id && in.opcode == req->ss->opcode) {
		__atomic_fetch_add(&q->w->ctl->adopted_rerun, 1, __ATOMIC_RELAXED);
		log_info("queue %u: running request %llu (%s) of a dead worker again", q->qid,
			 (unsigned long long)in.unique, rf_op_name(in.opcode));
		uring_fetched(req);
		return;
	}
	memcpy(&oh_old, h->in_out, sizeof(oh_old));
	if (state == RF_SLOT_ANSWERED && oh_old.unique == req->ss->commit_id && oh_old.error <= 0 &&
	    oh_old.error > -512 && h->ring_ent_in_out.payload_sz <= req->payload_cap) {
		/* its answer is complete in the slot: send it as it is */
		__atomic_fetch_add(&q->w->ctl->adopted_answered, 1, __ATOMIC_RELAXED);
	} else {
		struct fuse_out_header oh = { .len = sizeof(oh),
					      .error = -EIO,
					      .unique = req->ss->commit_id };

		memcpy(h->in_out, &oh, sizeof(oh));
		h->ring_ent_in_out.payload_sz = 0;
	}
	sqe = get_sqe(q);
	rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, (uint16_t)q->qid,
			 req->ss->commit_id);
	set_data(sqe, req, TAG_CMD);
	req->state = RQ_WAIT;
}

/*
 * Requests no worker received. The kernel gives a request to an idle entry
 * and finishes the hand-over in the task that owns the entry's ring; if that
 * task dies first, the request stays with the dead entry, its client waits
 * for good, and no header in the pool names it. Its id, though, is one that
 * no worker received (the seen table). So a successor asks each queue for
 * every such id, newest first, with COMMIT_AND_FETCH and an EIO answer
 * placed in every slot the dead entry may have used: a miss costs an ENOENT
 * (and a line in the kernel log), a hit ends the lost request with EIO.
 *
 * A hit leaves us the dead entry, which fetches its next request into the
 * dead entry's slot: one of the candidates, we do not know which. Its first
 * fetch overwrites the commit id we left in that slot's header, which tells
 * us. Until every such entry has shown itself, candidate slots get no fresh
 * entry (RQ_RESERVED); the broker's kick after a respawn usually makes them
 * show at once. Newest first keeps probes off requests that arrive for an
 * inherited entry meanwhile: those are newer than every id still to ask for.
 */
/* Every candidate slot answers @id with EIO; its commit id is the marker. */
static void probe_arm(struct rf_queue *q, uint64_t id)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = -EIO, .unique = id };
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		struct fuse_uring_req_header *h = (void *)req->hdr;

		if (!req->candidate || req->state != RQ_IDLE)
			continue;
		memcpy(h->in_out, &oh, sizeof(oh));
		h->ring_ent_in_out.payload_sz = 0;
		h->ring_ent_in_out.commit_id = 0;
		req->mark = 0;
	}
}

static void register_reserved(struct rf_queue *q)
{
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++)
		if (q->reqs[e].state == RQ_RESERVED) {
			q->reqs[e].candidate = false;
			post_register(&q->reqs[e]);
		}
}

/* A fresh entry for @req's slot, unless an inherited entry may be on it. */
static void register_or_reserve(struct rf_req *req)
{
	if (req->candidate && req->q->floating > 0) {
		req->state = RQ_RESERVED;
		return;
	}
	req->candidate = false;
	post_register(req);
}

/* An inherited entry fetched a request: find the slot it wrote. */
static void inherited_fetched(struct rf_queue *q)
{
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		const struct fuse_uring_req_header *h = (const void *)req->hdr;

		if (!req->candidate || (req->state != RQ_IDLE && req->state != RQ_RESERVED) ||
		    h->ring_ent_in_out.commit_id == req->mark)
			continue;
		req->candidate = false;
		q->floating--;
		log_debug("queue %u: the entry of a lost request fetched into slot %u", q->qid, e);
		uring_fetched(req);
		if (q->floating <= 0)
			register_reserved(q);
		return;
	}
	/* a request in a slot we cannot find would wait for good: die, and
	 * let the next worker end it */
	fatalx("queue %u: an inherited entry fetched into no slot we know", q->qid);
}

static void probe_done(struct rf_queue *q, uint64_t id, int res)
{
	if (res == 0) {
		inherited_fetched(q);
		return;
	}
	if (id == q->probe_id) {
		q->probe_missed = true;
		if (res != -ENOENT)
			log_warnx("queue %u: asking for request %llu: %s", q->qid,
				  (unsigned long long)id, strerror(-res));
		return;
	}
	/* an inherited entry ended before fetching anything */
	q->floating--;
	if (q->floating <= 0)
		register_reserved(q);
}

static void reap(struct rf_queue *q);

static void rescue(struct rf_queue *q)
{
	struct rf_worker *w = q->w;
	struct saved {
		char oh[sizeof(struct fuse_out_header)];
		struct fuse_uring_ent_in_out eio;
	} * sv;
	uint32_t e, i, hits = 0, asked = 0;
	int r;

	if (!w->nrescue)
		return;
	sv = calloc(w->cfg.depth, sizeof(*sv));
	if (!sv)
		fatal("calloc");
	/* a FETCHED slot's entry still holds the request recorded there */
	for (e = 0; e < w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		const struct fuse_uring_req_header *h = (const void *)req->hdr;

		req->candidate = __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) !=
				 RF_SLOT_FETCHED;
		memcpy(sv[e].oh, h->in_out, sizeof(sv[e].oh));
		memcpy(&sv[e].eio, &h->ring_ent_in_out, sizeof(sv[e].eio));
	}
	for (i = 0; i < w->nrescue && !atomic_load(&w->conn_gone); i++) {
		uint64_t id = w->rescue[i];
		struct io_uring_sqe *sqe;

		if (rf_seen(w, id))
			continue;
		probe_arm(q, id);
		q->probe_id = id;
		q->probe_missed = false;
		sqe = get_sqe(q);
		rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, (uint16_t)q->qid, id);
		sqe->user_data = (id << 3) | TAG_PROBE; /* id < 2^60 (rescue.c) */
		/* submit, and run the task work of whatever the kernel did */
		r = io_uring_submit_and_get_events(&q->ring);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			fatalx("queue %u: io_uring_enter: %s", q->qid, strerror(-r));
		reap(q);
		asked++;
		if (q->probe_missed) {
			/* no queue has it: it was answered some other way (or
			 * its client gave up first); do not ask again */
			if (atomic_fetch_add(&w->rescue_misses[i], 1) + 1 == w->nqueues &&
			    id <= w->rescue_hi)
				rf_seen_record(w, id);
			continue;
		}
		rf_seen_record(w, id);
		hits++;
		q->floating++;
		__atomic_fetch_add(&w->ctl->rescued, 1, __ATOMIC_RELAXED);
		log_warnx("queue %u: request %llu never reached a worker: ended it with EIO",
			  q->qid, (unsigned long long)id);
	}
	q->probe_id = 0;
	/* put back what adoption reads; empty slots keep the marker */
	for (e = 0; e < w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		struct fuse_uring_req_header *h = (void *)req->hdr;

		if (!req->candidate || req->state != RQ_IDLE)
			continue;
		if (__atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) == RF_SLOT_NONE)
			continue;
		memcpy(h->in_out, sv[e].oh, sizeof(sv[e].oh));
		memcpy(&h->ring_ent_in_out, &sv[e].eio, sizeof(sv[e].eio));
		req->mark = sv[e].eio.commit_id;
	}
	free(sv);
	log_info("queue %u: asked for %u request ids no worker received: %u found", q->qid, asked,
		 hits);
}

static void post_classic_read(struct rf_req *req)
{
	struct io_uring_sqe *sqe = get_sqe(req->q);
	/* land so that WRITE data starts at the payload's first byte */
	char *buf = req->payload - RF_CLASSIC_PREFIX;

	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, req->payload_cap + RF_CLASSIC_PREFIX, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	set_data(sqe, req, TAG_CREAD);
	req->state = RQ_WAIT;
}

static void post_wake_read(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = get_sqe(q);

	io_uring_prep_read(sqe, RF_FILE_SLOT_WAKE, &q->ev_buf, sizeof(q->ev_buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	set_data(sqe, q, TAG_WAKE);
}

/* Account a finished request: errors, data sent, latency. */
static void account(struct rf_req *req)
{
	struct rf_queue_stats *st = req->q->stats;
	uint64_t ns = rf_now_ns() - req->start_ns, us = ns / 1000;
	unsigned int b = 0;

	if (req->error) {
		st->errors++;
		st->by_errno[req->error < RF_STATS_ERRNOS ? req->error : 0]++;
	} else if (req->in.opcode == FUSE_READ) {
		st->bytes_read += req->reply_len;
	}
	while (b + 1 < RF_STATS_LAT_BUCKETS && us >= (1ULL << b))
		b++;
	st->latency_us_log2[b]++;
	if (ns > st->latency_max_ns)
		st->latency_max_ns = ns;
}

static void commit(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	account(req);
	__atomic_store_n(&req->ss->state, RF_SLOT_ANSWERED, __ATOMIC_RELEASE);
	if (req->classic) {
		struct fuse_out_header *oh = (void *)(req->payload - sizeof(*oh));
		struct io_uring_sqe *sqe;

		oh->len = (uint32_t)sizeof(*oh) + (req->error ? 0 : req->reply_len);
		oh->error = -req->error;
		oh->unique = req->in.unique;
		sqe = get_sqe(q);
		io_uring_prep_write(sqe, RF_FILE_SLOT_FUSE, oh, oh->len, 0);
		sqe->flags |= IOSQE_FIXED_FILE;
		set_data(sqe, req, TAG_CWRITE);
		req->state = RQ_REPLY;
	} else {
		struct fuse_uring_req_header *h = (void *)req->hdr;
		struct fuse_out_header oh = {
			.len = (uint32_t)sizeof(oh) + (req->error ? 0 : req->reply_len),
			.error = -req->error,
			.unique = req->in.unique,
		};
		struct io_uring_sqe *sqe;

		memcpy(h->in_out, &oh, sizeof(oh));
		h->ring_ent_in_out.payload_sz = req->error ? 0 : req->reply_len;
		sqe = get_sqe(q);
		rf_prep_fuse_cmd(sqe, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, (uint16_t)q->qid,
				 req->in.unique);
		set_data(sqe, req, TAG_CMD);
		req->state = RQ_WAIT;
	}
}

static void data_done(struct rf_req *req, int res);

/* Submit the next piece of a fixed-buffer data op. */
static void post_data(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	uint32_t slot = RF_FILE_SLOT_DATA + req->idx;
	struct io_uring_sqe *sqe;

	if (req->inline_io) {
		ssize_t n = req->fd_op == RF_FDOP_READ
				    ? pread(req->fd, req->payload + req->done, req->len - req->done,
					    (off_t)(req->off + req->done))
				    : pwrite(req->fd, req->payload + req->done,
					     req->len - req->done, (off_t)(req->off + req->done));

		data_done(req, n < 0 ? -errno : (int)n);
		return;
	}
	sqe = get_sqe(q);
	if (req->fd_op == RF_FDOP_READ)
		io_uring_prep_read_fixed(sqe, (int)slot, req->payload + req->done,
					 req->len - req->done, req->off + req->done,
					 RF_BUF_INDEX_POOL);
	else
		io_uring_prep_write_fixed(sqe, (int)slot, req->payload + req->done,
					  req->len - req->done, req->off + req->done,
					  RF_BUF_INDEX_POOL);
	sqe->flags |= IOSQE_FIXED_FILE;
	set_data(sqe, req, TAG_DATA);
	req->state = RQ_DATA;
}

/*
 * Memory file systems (tmpfs, ramfs) cannot do nonblocking I/O, so the ring
 * hands every READ_FIXED / WRITE_FIXED on their files to a kernel worker
 * thread: two context switches per op. Below RF_INLINE_MAX a plain
 * pread/pwrite into the same slot on this thread is faster (make bench: 4 KiB
 * random reads five times faster); above it the worker thread's copy running
 * beside ours wins. Such files never block on a device, so this thread
 * never waits long. Other file systems always get the ring ops.
 */
#define RF_INLINE_MAX (128u << 10)

static bool on_memory_fs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

static void start_data(struct rf_req *req)
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
		commit(req);
		return;
	}
	/* Install the plugin's file in this entry's slot; the ring keeps its
	 * own reference, so a plugin closing the fd early cannot redirect
	 * the op to another file. */
	req->inline_io = (q->w->cfg.bench & RF_BENCH_PLAIN_IO) ||
			 (req->len <= RF_INLINE_MAX && on_memory_fs(req->fd));
	r = req->inline_io ? 0
			   : rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
	if (!req->inline_io && r >= 0)
		q->files_held = true;
	if (r < 0) {
		req->error = r == -EBADF ? EBADF : EIO;
		req->fd_op = RF_FDOP_NONE;
		if (r != -EBADF)
			log_warnx("queue %u: install data file: %s", q->qid, strerror(-r));
		commit(req);
		return;
	}
	req->done = 0;
	post_data(req);
}

static void data_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

	if (res > 0) {
		if (q->w->cfg.bench & RF_BENCH_PLAIN_IO) {
			/* make bench's comparison: nothing to count */
		} else if (req->inline_io) {
			q->stats->inline_ops++;
			q->stats->inline_bytes += (uint64_t)res;
		} else if (req->fd_op == RF_FDOP_READ) {
			q->stats->read_fixed_ops++;
			q->stats->read_fixed_bytes += (uint64_t)res;
		} else {
			q->stats->write_fixed_ops++;
			q->stats->write_fixed_bytes += (uint64_t)res;
		}
		req->done += (uint32_t)res;
		if (req->done < req->len) {
			post_data(req); /* short transfer: carry on */
			return;
		}
	} else if (res < 0 && req->done == 0) {
		req->error = -res < 512 ? -res : EIO;
	}
	/* res == 0: end of file */
	if (req->fd_op == RF_FDOP_READ) {
		req->reply_len = req->done;
	} else {
		struct fuse_write_out o = { .size = req->done };

		memcpy(req->payload, &o, sizeof(o));
		req->reply_len = sizeof(o);
	}
	req->fd_op = RF_FDOP_NONE;
	commit(req);
}

/* On the owning thread: a reply is ready to go out. */
static void complete(struct rf_req *req)
{
	if (req->fd_op != RF_FDOP_NONE && !req->error)
		start_data(req);
	else
		commit(req);
}

void rf_req_finish(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	if (cur_queue == q) {
		complete(req);
		return;
	}
	/* another thread replied: hand the request to its queue's thread */
	pthread_mutex_lock(&q->mbox_lock);
	req->mbox_next = q->mbox;
	q->mbox = req;
	pthread_mutex_unlock(&q->mbox_lock);
	rf_queue_wake(q);
}

void rf_queue_wake(struct rf_queue *q)
{
	uint64_t one = 1;

	if (write(q->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("queue %u: wake", q->qid);
}

static void drain_mbox(struct rf_queue *q)
{
	struct rf_req *list, *next;

	pthread_mutex_lock(&q->mbox_lock);
	list = q->mbox;
	q->mbox = NULL;
	pthread_mutex_unlock(&q->mbox_lock);
	for (; list; list = next) {
		next = list->mbox_next;
		complete(list);
	}
}

/* What a successor needs if this worker dies before answering, and when
 * the request arrived (for latency and the broker's watchdog). */
static void record_fetch(struct rf_req *req)
{
	rf_seen_record(req->q->w, req->in.unique);
	req->start_ns = rf_now_ns();
	req->ss->commit_id = req->in.unique;
	req->ss->opcode = req->in.opcode;
	req->ss->generation = req->q->w->cfg.generation;
	req->ss->fetched_ns = req->start_ns;
	__atomic_store_n(&req->ss->state, RF_SLOT_FETCHED, __ATOMIC_RELEASE);
}

/* A request fetched through a FUSE io-uring entry. */
static void uring_fetched(struct rf_req *req)
{
	const struct fuse_uring_req_header *h = (const void *)req->hdr;
	struct fuse_uring_ent_in_out eio;

	memcpy(&req->in, h->in_out, sizeof(req->in));
	memcpy(&eio, &h->ring_ent_in_out, sizeof(eio));
	record_fetch(req);
	req->q->stats->requests++;
	req->q->stats->uring_requests++;
	req->arg0 = h->op_in;
	req->rest = req->payload;
	req->rest_len = eio.payload_sz;
	if (eio.payload_sz > req->payload_cap || eio.commit_id != req->in.unique) {
		log_warnx("queue %u: kernel entry with payload %u > %u or commit id mismatch",
			  req->q->qid, eio.payload_sz, req->payload_cap);
		req->state = RQ_PLUGIN;
		rf_req_reset(req);
		rf_reply_err(req, EIO);
		return;
	}
	rf_dispatch(req);
}

/* A request read from /dev/fuse into [payload - prefix, ...). */
static void classic_fetched(struct rf_req *req, uint32_t n)
{
	struct rf_queue *q = req->q;
	const char *buf = req->payload - RF_CLASSIC_PREFIX;
	uint32_t a0;

	if (n < sizeof(req->in)) {
		log_warnx("queue %u: short /dev/fuse read (%u bytes)", q->qid, n);
		post_classic_read(req);
		return;
	}
	memcpy(&req->in, buf, sizeof(req->in));
	q->stats->requests++;
	q->stats->classic_requests++;
	if (req->in.len != n) {
		log_warnx("queue %u: /dev/fuse message says %u bytes, read %u", q->qid, req->in.len,
			  n);
		post_classic_read(req);
		return;
	}
	if (rf_dispatch_noreply(q->w, q, &req->in, buf + sizeof(req->in),
				n - (uint32_t)sizeof(req->in))) {
		/* FORGET and INTERRUPT on the io-uring transport's reader:
		 * seen, so that no successor asks for them */
		rf_seen_record(q->w, req->in.unique);
		post_classic_read(req);
		return;
	}
	record_fetch(req);
	a0 = rf_op_arg0_size(req->in.opcode);
	if (n < sizeof(req->in) + a0) {
		req->state = RQ_PLUGIN;
		rf_req_reset(req);
		rf_reply_err(req, EINVAL);
		return;
	}
	req->arg0 = buf + sizeof(req->in);
	req->rest = req->arg0 + a0;
	req->rest_len = n - (uint32_t)sizeof(req->in) - a0;
	rf_dispatch(req);
}

static void entry_gone(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;
	uint32_t i;

	req->state = RQ_DEAD;
	if (q->live)
		q->live--;
	if ((res == -ENOTCONN || res == -ECONNABORTED || res == -ENODEV) &&
	    !atomic_exchange(&q->w->conn_gone, 1)) {
		/* the connection is over: requests still with the plugin can
		 * never be answered, so no queue waits for them */
		for (i = 0; i < q->w->nqueues; i++)
			rf_queue_wake(&q->w->queues[i]);
	}
	if (res != -ENOTCONN && res != -ECONNABORTED && res != -ENODEV && res != -ECANCELED)
		log_warnx("queue %u entry %u: %s failed: %s", q->qid, req->idx,
			  req->classic ? "/dev/fuse read" : "FUSE io-uring command",
			  strerror(-res));
}

static void handle_cqe(struct rf_queue *q, const struct io_uring_cqe *cqe)
{
	unsigned int tag = (unsigned int)(cqe->user_data & TAG_MASK);
	void *p = (void *)(uintptr_t)(cqe->user_data & ~(uint64_t)TAG_MASK);
	struct rf_req *req = p;
	int res = cqe->res;

	switch (tag) {
	case TAG_PROBE:
		probe_done(q, cqe->user_data >> 3, res);
		return;
	case TAG_WAKE:
		drain_mbox(q);
		if (!atomic_load(&q->w->stop))
			post_wake_read(q);
		return;
	case TAG_CMD:
		if (req->adopting) {
			req->adopting = false;
			if (res == 0) {
				req->candidate = false;
				__atomic_fetch_add(&q->w->ctl->adopted, 1, __ATOMIC_RELAXED);
				log_info("queue %u: finished request %llu (%s) of a dead worker",
					 q->qid, (unsigned long long)req->in.unique,
					 rf_op_name(req->ss->opcode));
				uring_fetched(req);
				return;
			}
			if (res == -ENOENT) {
				/* it had been answered after all: a fresh entry */
				__atomic_store_n(&req->ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE);
				register_or_reserve(req);
				return;
			}
		}
		if (res == 0) {
			uring_fetched(req);
			return;
		}
		if (res == -ENOENT) {
			/* The kernel knows no request with this commit id: the
			 * reply went astray (only corrupted memory does that), so
			 * the real request would wait forever. Die instead: the
			 * broker then aborts the connection and every waiting
			 * client gets an error. */
			fatalx("queue %u: the kernel refused commit id %llu (%s): giving up",
			       q->qid, (unsigned long long)req->in.unique,
			       rf_op_name(req->in.opcode));
		}
		if (req->state == RQ_WAIT && (res == -EINVAL || res == -EOPNOTSUPP) &&
		    atomic_load(&q->w->transport) == RF_XPORT_URING && req->idx == 0 &&
		    !req->classic) {
			log_warnx("queue %u: FUSE io-uring REGISTER refused (%s); the kernel has "
				  "fallen back to /dev/fuse, served by queue 0's reader",
				  q->qid, strerror(-res));
			atomic_store(&q->w->transport, RF_XPORT_CLASSIC);
		}
		entry_gone(req, res);
		return;
	case TAG_CREAD:
		if (res > 0) {
			classic_fetched(req, (uint32_t)res);
			return;
		}
		if (res == -EINTR || res == -EAGAIN || res == -ENOENT) {
			post_classic_read(req);
			return;
		}
		entry_gone(req, res);
		return;
	case TAG_CWRITE:
		if (res == -ENOENT)
			/* as with a refused commit: the real request would wait
			 * forever, so give up and let the broker abort */
			fatalx("queue %u: the kernel knows no request %llu (%s): giving up", q->qid,
			       (unsigned long long)req->in.unique, rf_op_name(req->in.opcode));
		if (res < 0)
			log_debug("queue %u: reply to %s: %s", q->qid, rf_op_name(req->in.opcode),
				  strerror(-res));
		if (res == -ENODEV || res == -ECONNABORTED) {
			entry_gone(req, res);
			return;
		}
		post_classic_read(req);
		return;
	case TAG_DATA:
		data_done(req, res);
		return;
	default:
		/* not ours: something else submitted on this ring */
		log_warnx("queue %u: unexpected completion (user_data 0x%llx, res %d)", q->qid,
			  (unsigned long long)cqe->user_data, res);
	}
}

static void reap(struct rf_queue *q)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	io_uring_for_each_cqe (&q->ring, head, cqe) {
		handle_cqe(q, cqe);
		n++;
	}
	io_uring_cq_advance(&q->ring, n);
}

static int install_wake(struct rf_queue *q)
{
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_WAKE,
					    .fds = (uint64_t)(uintptr_t)&q->evfd };
	int r;

	q->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->evfd < 0)
		return -errno;
	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
	return r < 0 ? r : 0;
}

/*
 * The kernel queues a request on the queue of the CPU its client runs on.
 * Served by a thread on that same CPU, the request needs no wake-up of
 * another CPU, either way: the client sleeps, the queue thread runs in its
 * place, answers, and the client runs again.
 */
static void pin_to_cpu(struct rf_queue *q)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		log_debug("queue %u: cannot run on CPU %u only: %s", q->qid, q->qid,
			  strerror(errno));
}

/*
 * A data slot keeps its file open until another file takes the slot: a
 * file deleted meanwhile keeps its space (and its place in a quota) for
 * as long. Once the queue has been idle for RF_RELEASE_MS, its slots are
 * emptied: one system call when a burst ends, none under load.
 */
#define RF_RELEASE_MS 100

static bool data_in_flight(const struct rf_queue *q)
{
	uint32_t i;

	for (i = 0; i < q->nreqs; i++)
		if (q->reqs[i].state == RQ_DATA)
			return true;
	return false;
}

static void release_files(struct rf_queue *q)
{
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_DATA,
					    .fds = (uint64_t)(uintptr_t)q->no_files };
	int r;

	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, q->nreqs);
	if (r < 0)
		log_warnx("queue %u: empty the data slots: %s", q->qid, strerror(-r));
	q->files_held = false;
}

/* Submit and wait for a completion; with files held and no data moving,
 * wait at most RF_RELEASE_MS, then let them go. */
static int submit_and_wait(struct rf_queue *q)
{
	struct __kernel_timespec ts = { 0, RF_RELEASE_MS * 1000000LL };
	struct io_uring_cqe *cqe;
	int r;

	if (!q->files_held || data_in_flight(q))
		return io_uring_submit_and_wait(&q->ring, 1);
	r = io_uring_submit_and_wait_timeout(&q->ring, &cqe, 1, &ts, NULL);
	/* liburing 2.3 answers a timeout with -ETIME or with what it
	 * submitted: no completion to reap is what tells */
	if ((r >= 0 || r == -ETIME) && !io_uring_cq_ready(&q->ring)) {
		release_files(q);
		return 0;
	}
	return r;
}

static void *queue_main(void *arg)
{
	struct rf_queue *q = arg;
	struct rf_worker *w = q->w;
	uint32_t i;
	int r;

	cur_queue = q;
	pin_to_cpu(q);
	/* Enabling makes this thread the ring's single issuer and arms the
	 * restrictions the broker registered. */
	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (r < 0)
		fatalx("queue %u: enable ring: %s", q->qid, strerror(-r));
	r = install_wake(q);
	if (r < 0)
		fatalx("queue %u: install wake-up eventfd: %s", q->qid, strerror(-r));
	post_wake_read(q);
	if (w->cfg.adopt)
		rescue(q);
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (req->classic)
			post_classic_read(req);
		else if (req->state != RQ_IDLE)
			continue; /* an inherited entry's, serving already */
		else if (w->cfg.adopt &&
			 __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_NONE)
			adopt(req);
		else
			register_or_reserve(req);
	}
	q->live = q->nreqs;
	r = io_uring_submit(&q->ring);
	if (r < 0)
		fatalx("queue %u: submit: %s", q->qid, strerror(-r));

	atomic_fetch_add(&w->queues_alive, 1);
	pthread_mutex_lock(&w->start_lock);
	atomic_fetch_add(&w->registered, 1);
	pthread_cond_broadcast(&w->start_cond);
	pthread_mutex_unlock(&w->start_lock);

	while (!atomic_load(&w->stop) && q->live && !atomic_load(&w->conn_gone)) {
		r = submit_and_wait(q);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			fatalx("queue %u: io_uring_enter: %s", q->qid, strerror(-r));
		/* this thread is alive: answer the broker's heartbeat */
		__atomic_store_n(&q->stats->heartbeat, atomic_load(&w->ping_seq), __ATOMIC_RELAXED);
		reap(q);
	}
	if (!atomic_load(&w->stop) && atomic_load(&w->conn_gone)) {
		/* Nothing is left to answer, so the worker goes at once, so
		 * that the broker learns (e.g. after the kernel's
		 * request_timeout aborted the connection) and so that a
		 * thread stuck in the plugin cannot keep the rings alive. */
		log_warnx("queue %u: the FUSE connection has ended", q->qid);
		_exit(RF_EXIT_CONN_GONE);
	}
	if (!atomic_load(&w->stop)) {
		log_info("queue %u: every entry ended", q->qid);
		if (atomic_fetch_sub(&w->queues_alive, 1) == 1) {
			log_warnx("every queue has ended: the FUSE connection was aborted");
			exit(RF_EXIT_CONN_GONE);
		}
	}
	return NULL;
}

int rf_queue_start(struct rf_queue *q)
{
	uint32_t i;
	int r;

	r = io_uring_queue_mmap(q->ring_fd, &q->params, &q->ring);
	if (r < 0)
		return r;
	rf_ring_fill_sq_array(&q->ring);
	q->no_files = malloc(q->nreqs * sizeof(*q->no_files));
	if (!q->no_files)
		return -ENOMEM;
	for (i = 0; i < q->nreqs; i++)
		q->no_files[i] = -1;
	pthread_mutex_init(&q->mbox_lock, NULL);
	r = pthread_create(&q->thread, NULL, queue_main, q);
	return -r;
}
