// SPDX-License-Identifier: MIT
/*
 * A request's way through the keeper, from the FUSE ring to whoever
 * answers it:
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
 * Either way a request is recorded for a successor, counted, and then
 * answered by the keeper itself (a backing file's data, the broker's
 * kick, the EIO responder) or handed to the plugin host on the channel
 * (answer.c takes its answer). The keeper holds no /dev/fuse descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

/*
 * make bench's one-process target: the plugin answered in this process.
 * What the host does with such an answer is done here: a backing file
 * it names is taken (a copy: the plugin keeps its own), and file data
 * moves between its file and the payload as a backing file's does; true
 * if the reply is on its way.
 */
static bool alone_answered(struct rf_req *req)
{
	int fd;

	if (req->backing_fd >= 0 && !req->error) {
		fd = fcntl(req->backing_fd, F_DUPFD_CLOEXEC, 0);
		if (fd >= 0)
			rf_backing_take(req->q, req, &fd);
		if (fd >= 0)
			close(fd);
	}
	req->backing_fd = -1;
	if (req->fd_op == RF_FDOP_NONE || req->error)
		return false;
	if (!req->zc) {
		rf_backing_move(req);
		return true;
	}
	/* zero-copied: the data slot takes a copy, as of a host's file */
	req->fd = fcntl(req->fd, F_DUPFD_CLOEXEC, 0);
	if (req->fd < 0)
		req->error = EIO;
	return false;
}

/* On the owning thread: a reply is ready to go out. */
void rf_queue_complete(struct rf_req *req)
{
	if ((req->q->w->cfg.bench & RF_BENCH_ONE_PROCESS) && alone_answered(req))
		return;
	if (req->fd_op != RF_FDOP_NONE && !req->error)
		rf_data_start(req);
	else
		rf_queue_commit(req);
}

/* What a successor needs if this worker dies before answering, and when
 * the request arrived (for latency and the broker's watchdog). The slot
 * first, then the seen table: a worker killed between the two leaves a
 * slot that adoption answers (and the rescue plan counts as received);
 * the other order left an id marked received that no slot named, which
 * no successor asked for, and its client waited for good (t_faults, in the
 * 7.3 guest, whose clock reads are system calls). */
static void record_fetch(struct rf_req *req)
{
	req->start_ns = rf_now_ns();
	req->ss->commit_id = req->in.unique;
	req->ss->opcode = req->in.opcode;
	req->ss->generation = __atomic_load_n(&req->q->w->cfg.generation, __ATOMIC_RELAXED);
	req->ss->reruns = req->rerun;
	req->rerun = false;
	req->ss->fetched_ns = req->start_ns;
	__atomic_store_n(&req->ss->state, RF_SLOT_FETCHED, __ATOMIC_RELEASE);
	rf_seen_record(req->q->w, req->in.unique);
}

/*
 * A request goes to the plugin host, which answers with a record
 * (host_replied); the keeper counts it first, from its own view. Without
 * a host (the EIO responder), and for the broker's kick, the keeper
 * answers itself.
 */
void rf_queue_to_host(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct rf_chan_rec *r;

	if (q->host_down) {
		/* no host now: the next one gets it (host_renew) */
		req->host_park = true;
		return;
	}
	r = rf_chan_next(q);
	if (q->host_down) {
		/* the flush before it found the host gone: this one was not
		 * sent either */
		q->ntx = 0;
		req->host_park = true;
		return;
	}
	r->kind = RF_CH_REQ;
	r->idx = req->idx;
	r->flags = req->zc ? RF_CHF_ZC : 0;
	r->in = req->in;
	r->len = req->rest_len;
	r->a = q->qpool_size && !req->classic && req->payload ? (uint64_t)(req->payload - q->qpool)
							      : 0;
}

static void forward(struct rf_req *req)
{
	rf_dispatch_count(req);
	if (rf_dispatch_kick(req)) {
		rf_dispatch(req);
		return;
	}
	/* a backing file's data: the keeper's own (backing.c) */
	if (rf_backing_serve(req))
		return;
	if (req->in.opcode == FUSE_RELEASE)
		rf_backing_release(((const struct fuse_release_in *)(const void *)req->arg0)->fh);
	if (!req->q->w->host_pid) {
		/* no host: the EIO responder, or make bench's one-process */
		rf_dispatch(req);
		return;
	}
	req->state = RQ_PLUGIN;
	rf_req_reset(req);
	rf_queue_to_host(req);
}

/* A request fetched through a FUSE io-uring entry. */
void rf_queue_fetched(struct rf_req *req)
{
	const struct fuse_uring_req_header *h = (const void *)req->hdr;
	struct fuse_uring_ent_in_out eio;
	struct rf_queue *q = req->q;
	bool in_pool;

	memcpy(&req->in, h->in_out, sizeof(req->in));
	memcpy(&eio, &h->ring_ent_in_out, sizeof(eio));
	record_fetch(req);
	q->stats->requests++;
	q->stats->uring_requests++;
	/* the kernel's word for where the payload is, held to the pool */
	in_pool = !q->qpool_size || ((uint64_t)eio.offset + req->payload_cap <= q->qpool_size);
	if (q->qpool_size && in_pool)
		req->payload = q->qpool + eio.offset;
	req->arg0 = h->op_in;
	req->rest = req->payload;
	req->rest_len = eio.payload_sz;
	/* A zero-copied READ or WRITE has its data in the client's pages, at
	 * this entry's buffer slot: a READ gets no pool buffer at all (the
	 * offset means nothing, so no reply body may go there), a WRITE one
	 * for its reply only (what is in it is not the data). */
	req->zc = (eio.flags & FUSE_URING_ENT_ZERO_COPY) != 0;
	if (req->zc) {
		if (req->in.opcode == FUSE_READ)
			req->payload = NULL;
		req->rest = NULL;
	}
	if (eio.payload_sz > req->payload_cap || eio.commit_id != req->in.unique || !in_pool ||
	    (req->zc &&
	     (!q->zc || (req->in.opcode != FUSE_READ && req->in.opcode != FUSE_WRITE)))) {
		log_warnx("queue %u: kernel entry with payload %u > %u, offset %u outside a "
			  "%u-byte pool, zero copy (flags 0x%llx) for %s on a queue %s it, or "
			  "commit id mismatch",
			  q->qid, eio.payload_sz, req->payload_cap, eio.offset, q->qpool_size,
			  (unsigned long long)eio.flags, rf_op_name(req->in.opcode),
			  q->zc ? "with" : "without");
		req->zc = false;
		req->state = RQ_PLUGIN;
		rf_req_reset(req);
		rf_reply_err(req, EIO);
		return;
	}
	forward(req);
}

/*
 * On the io-uring transport the kernel still sends FORGETs through
 * /dev/fuse, one for each inode it drops: an unlink is a GETATTR and an
 * UNLINK on the ring and a FORGET here, and a READ always posted made that
 * FORGET one more wake-up of this thread per unlink (10000 unlinks: 10000
 * FORGETs, 3 context switches each), often from the other CPU. A FORGET
 * needs no answer and nobody waits for it, so after one the reader rests
 * RF_FORGET_REST_MS before it reads again, and the kernel, finding the
 * FORGETs it queued meanwhile, sends them as one BATCH_FORGET. Only a
 * FORGET starts a rest: after an INTERRUPT, and on a connection a refused
 * REGISTER turned back to /dev/fuse, the reader reads again at once; an
 * INTERRUPT sent during a rest waits for its end (advisory anyway).
 */
bool rf_queue_park_reader(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	if ((req->in.opcode != FUSE_FORGET && req->in.opcode != FUSE_BATCH_FORGET) ||
	    atomic_load(&q->w->transport) != RF_TRANSPORT_URING || q->parked ||
	    (q->w->cfg.bench & RF_BENCH_EAGER_FORGET))
		return false;
	q->parked = req;
	q->forget_due = rf_now_ns() + RF_FORGET_REST_MS * 1000000ULL;
	req->state = RQ_IDLE;
	return true;
}

/* The rested reader reads again once its time is up: 0, or the
 * nanoseconds left. */
uint64_t rf_queue_unpark_reader(struct rf_queue *q)
{
	uint64_t now;

	if (!q->parked)
		return 0;
	now = rf_now_ns();
	if (now < q->forget_due)
		return q->forget_due - now;
	rf_queue_post_read(q->parked);
	q->parked = NULL;
	return 0;
}

/* A request read from /dev/fuse into [payload - prefix, ...). */
static void classic_fetched(struct rf_req *req, uint32_t n)
{
	struct rf_queue *q = req->q;
	const char *buf = req->payload - RF_CLASSIC_PREFIX;
	uint32_t a0;

	if (n < sizeof(req->in)) {
		log_warnx("queue %u: short /dev/fuse read (%u bytes)", q->qid, n);
		rf_queue_post_read(req);
		return;
	}
	memcpy(&req->in, buf, sizeof(req->in));
	q->stats->requests++;
	q->stats->classic_requests++;
	if (req->in.len != n) {
		log_warnx("queue %u: /dev/fuse message says %u bytes, read %u", q->qid, req->in.len,
			  n);
		rf_queue_post_read(req);
		return;
	}
	if (rf_noreply_count(q, &req->in, buf + sizeof(req->in), n - (uint32_t)sizeof(req->in))) {
		/* FORGET and INTERRUPT on the io-uring transport's reader:
		 * seen, so that no successor asks for them */
		rf_seen_record(q->w, req->in.unique);
		if (q->w->host_pid && !q->host_down) {
			/* the host tells the plugin, and says when (DONE): till
			 * then the slot holds the arguments (with no host, for
			 * now, no one is told: rf_queue_host_gone says why) */
			struct rf_chan_rec *r = rf_chan_next(q);

			if (q->host_down) {
				q->ntx = 0;
				if (!rf_queue_park_reader(req))
					rf_queue_post_read(req);
				return;
			}
			r->kind = RF_CH_NOREPLY;
			r->idx = req->idx;
			r->in = req->in;
			r->len = n - (uint32_t)sizeof(req->in);
			req->noreply = true;
			req->state = RQ_PLUGIN;
			return;
		}
		/* no host at all: the plugin, if any, is this process's */
		if (!q->w->host_pid)
			rf_dispatch_noreply(q->w, &req->in, buf + sizeof(req->in),
					    n - (uint32_t)sizeof(req->in));
		if (!rf_queue_park_reader(req))
			rf_queue_post_read(req);
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
	forward(req);
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

/* A FUSE REGISTER or COMMIT_AND_FETCH completed: a request arrived, or
 * the entry ended. */
void rf_queue_cmd_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

	if (res == 0) {
		rf_queue_fetched(req);
		return;
	}
	if (res == -ENOENT) {
		/* The kernel knows no request with this commit id: the reply
		 * went astray (only corrupted memory does that), so the real
		 * request would wait forever. Die instead: the broker then
		 * aborts the connection and every waiting client gets an
		 * error. */
		fatalx("queue %u: the kernel refused commit id %llu (%s): giving up", q->qid,
		       (unsigned long long)req->in.unique, rf_op_name(req->in.opcode));
	}
	if (req->state == RQ_WAIT && (res == -EINVAL || res == -EOPNOTSUPP) &&
	    atomic_load(&q->w->transport) == RF_TRANSPORT_URING && req->idx == 0 && !req->classic) {
		log_warnx("queue %u: FUSE io-uring REGISTER refused (%s); the kernel has "
			  "fallen back to /dev/fuse, served by queue 0's reader",
			  q->qid, strerror(-res));
		atomic_store(&q->w->transport, RF_TRANSPORT_CLASSIC);
	}
	entry_gone(req, res);
}

/* A classic READ of /dev/fuse completed. */
void rf_queue_cread_done(struct rf_req *req, int res)
{
	if (res > 0) {
		classic_fetched(req, (uint32_t)res);
		return;
	}
	if (res == -EINTR || res == -EAGAIN || res == -ENOENT) {
		rf_queue_post_read(req);
		return;
	}
	entry_gone(req, res);
}

/* A classic reply WRITE completed. */
void rf_queue_cwrite_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

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
	rf_queue_post_read(req);
}
