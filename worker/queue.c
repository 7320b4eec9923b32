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
 * data.c), and the worker holds no /dev/fuse descriptor.
 *
 * A successor first finishes what its dead predecessor left: rf_adopt()
 * answers the requests recorded in the slots, rf_rescue() finds those the
 * kernel handed over but never delivered.
 *
 * The low bits of each SQE's user_data say what completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"
#include "uring_uapi.h"
#include "queue_i.h"

static __thread struct rf_queue *cur_queue;

static int submit(struct rf_queue *q)
{
	rf_chan_flush(q);
	return io_uring_submit(&q->ring);
}

struct io_uring_sqe *rf_queue_sqe(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe) {
		/* The ring has room for every op the queue can have in flight,
		 * so a full SQ only means we must flush what we queued. */
		submit(q);
		sqe = io_uring_get_sqe(&q->ring);
		if (!sqe)
			fatalx("queue %u: submission queue full", q->qid);
	}
	return sqe;
}

/*
 * On a queue with a kernel buffer pool every command carries the pool's
 * registered-buffer index, or the kernel refuses it (docs/kernel-facts.md).
 */
struct io_uring_sqe *rf_queue_cmd(struct rf_queue *q, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(q);

	rf_prep_fuse_cmd(sqe, op, (uint16_t)q->qid, commit_id);
	if (q->qpool_size) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = RF_BUF_INDEX_POOL;
	}
	return sqe;
}

void rf_queue_register(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct io_uring_sqe *sqe = rf_queue_cmd(q, FUSE_IO_URING_CMD_REGISTER, 0);

	req->iov[0].iov_base = req->hdr;
	req->iov[0].iov_len = sizeof(struct fuse_uring_req_header);
	/* with a pool, the second iovec stays empty: payloads are the pool's */
	req->iov[1].iov_base = q->qpool_size ? NULL : req->payload;
	req->iov[1].iov_len = q->qpool_size ? 0 : req->payload_cap;
	sqe->addr = (uint64_t)(uintptr_t)req->iov;
	sqe->len = 2;
	/* where the kernel registers this entry's zero-copied client pages:
	 * a slot that only this entry uses (one live entry per slot) */
	if (q->zc)
		rf_sqe_cmd(sqe)->ent_zero_copy_buf_index = (uint16_t)(RF_BUF_INDEX_ZC + req->idx);
	rf_sqe_tag(sqe, req, RF_TAG_CMD);
	req->state = RQ_WAIT;
}

static void post_classic_read(struct rf_req *req)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(req->q);
	/* land so that WRITE data starts at the payload's first byte */
	char *buf = req->payload - RF_CLASSIC_PREFIX;

	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, req->payload_cap + RF_CLASSIC_PREFIX, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, req, RF_TAG_CREAD);
	req->state = RQ_WAIT;
}

static void post_wake_read(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(q);

	io_uring_prep_read(sqe, RF_FILE_SLOT_WAKE, &q->ev_buf, sizeof(q->ev_buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, q, RF_TAG_WAKE);
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

/*
 * A reply goes out under the id recorded in the slot when its request was
 * fetched (what a successor adopts), never under an odd one: an odd id is
 * the kernel's interrupt reply (through /dev/fuse the kernel takes one as
 * the answer to the INTERRUPT and leaves the request waiting for good;
 * through io-uring it trips a kernel WARN). A plugin that changed the
 * working copy is overruled, and said so; where it spoiled the record too,
 * the working copy stands in, and where both, the id as the kernel
 * delivered it in the slot's buffer; only where all three are spoiled
 * does the worker end before anything goes out (then the kernel's request
 * timeout, broker/init.c, ends what waits for good). The README's threat
 * model says what is left.
 */
static uint64_t delivered_id(const struct rf_req *req)
{
	const struct fuse_in_header *in =
		req->classic ? (const void *)(req->payload - RF_CLASSIC_PREFIX)
			     : (const void *)((const struct fuse_uring_req_header *)(const void *)
						      req->hdr)
				       ->in_out;

	return in->unique;
}

static void check_reply_id(struct rf_req *req)
{
	uint64_t rec = __atomic_load_n(&req->ss->commit_id, __ATOMIC_RELAXED), id;
	const char *whose;

	if (req->in.unique == rec && rf_request_id(rec))
		return;
	if (rf_request_id(rec)) {
		id = rec;
		whose = "recorded";
	} else if (rf_request_id(req->in.unique)) {
		id = req->in.unique;
		whose = "of the request (its record was spoiled)";
	} else if (rf_request_id(id = delivered_id(req))) {
		whose = "the kernel delivered (both records were spoiled)";
	} else {
		fatalx("queue %u: slot %u's request id is %llu, recorded %llu (%s): the plugin "
		       "wrote the framework's records; giving up",
		       req->q->qid, req->idx, (unsigned long long)req->in.unique,
		       (unsigned long long)rec, rf_op_name(req->in.opcode));
	}
	log_warnx("queue %u: the plugin changed request %llu's ids to %llu and %llu (%s): "
		  "answered under the id %s",
		  req->q->qid, (unsigned long long)id, (unsigned long long)req->in.unique,
		  (unsigned long long)rec, rf_op_name(req->in.opcode), whose);
	req->in.unique = id;
	/* what a successor adopts, should this worker die before the commit */
	if (rec != id)
		__atomic_store_n(&req->ss->commit_id, id, __ATOMIC_RELAXED);
}

void rf_queue_commit(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	char why[96];

	check_reply_id(req);
	/* directory entries as the plugin left them: checked whole, however
	 * it wrote them (names the kernel would pass on to clients beyond
	 * NAME_MAX, or with a NUL inside, included) */
	if (!req->error && (req->in.opcode == FUSE_READDIR || req->in.opcode == FUSE_READDIRPLUS) &&
	    !rf_dirents_ok(req->payload, req->reply_len, req->in.opcode == FUSE_READDIRPLUS, why,
			   sizeof(why))) {
		log_warnx("queue %u: %s reply refused (%s): EIO instead", q->qid,
			  rf_op_name(req->in.opcode), why);
		req->error = EIO;
		req->reply_len = 0;
	}
	account(req);
	__atomic_store_n(&req->ss->state, RF_SLOT_ANSWERED, __ATOMIC_RELEASE);
	if (req->classic) {
		struct fuse_out_header *oh = (void *)(req->payload - sizeof(*oh));
		struct io_uring_sqe *sqe;

		oh->len = (uint32_t)sizeof(*oh) + (req->error ? 0 : req->reply_len);
		oh->error = -req->error;
		oh->unique = req->in.unique;
		sqe = rf_queue_sqe(q);
		io_uring_prep_write(sqe, RF_FILE_SLOT_FUSE, oh, oh->len, 0);
		sqe->flags |= IOSQE_FIXED_FILE;
		rf_sqe_tag(sqe, req, RF_TAG_CWRITE);
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
		sqe = rf_queue_cmd(q, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, req->in.unique);
		rf_sqe_tag(sqe, req, RF_TAG_CMD);
		req->state = RQ_WAIT;
	}
}

static void take_backing(struct rf_queue *q, struct rf_req *req, int *fd);

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
			take_backing(req->q, req, &fd);
		if (fd >= 0)
			close(fd);
	}
	req->backing_fd = -1;
	if (req->fd_op == RF_FDOP_NONE || req->error)
		return false;
	if (!req->zc) {
		rf_data_kept_start(req);
		return true;
	}
	/* zero-copied: the data slot takes a copy, as of a host's file */
	req->fd = fcntl(req->fd, F_DUPFD_CLOEXEC, 0);
	if (req->fd < 0)
		req->error = EIO;
	return false;
}

/* On the owning thread: a reply is ready to go out. */
static void complete(struct rf_req *req)
{
	if ((req->q->w->cfg.bench & RF_BENCH_ONE_PROCESS) && alone_answered(req))
		return;
	if (req->fd_op != RF_FDOP_NONE && !req->error)
		rf_data_start(req);
	else
		rf_queue_commit(req);
}

void rf_req_finish(struct rf_req *req)
{
	req->q->w->side->finish(req);
}

static void keeper_finish(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	if (cur_queue == q) {
		complete(req);
		return;
	}
	/* another thread replied: hand the request to its queue's thread */
	rf_mbox_put(req, q->evfd);
}

static void wake(struct rf_queue *q, int evfd)
{
	uint64_t one = 1;

	if (write(evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("queue %u: wake", q->qid);
}

void rf_queue_wake(struct rf_queue *q)
{
	wake(q, q->evfd);
}

void rf_mbox_put(struct rf_req *req, int evfd)
{
	struct rf_queue *q = req->q;

	pthread_mutex_lock(&q->mbox_lock);
	req->mbox_next = q->mbox;
	q->mbox = req;
	pthread_mutex_unlock(&q->mbox_lock);
	wake(q, evfd);
}

struct rf_req *rf_mbox_take(struct rf_queue *q)
{
	struct rf_req *list;

	pthread_mutex_lock(&q->mbox_lock);
	list = q->mbox;
	q->mbox = NULL;
	pthread_mutex_unlock(&q->mbox_lock);
	return list;
}

static void drain_mbox(struct rf_queue *q)
{
	struct rf_req *list, *next;

	for (list = rf_mbox_take(q); list; list = next) {
		next = list->mbox_next;
		complete(list);
	}
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
static void to_host(struct rf_req *req)
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
	to_host(req);
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
static bool park_forget_reader(struct rf_req *req)
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
static uint64_t unpark_forget_reader(struct rf_queue *q)
{
	uint64_t now;

	if (!q->parked)
		return 0;
	now = rf_now_ns();
	if (now < q->forget_due)
		return q->forget_due - now;
	post_classic_read(q->parked);
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
				if (!park_forget_reader(req))
					post_classic_read(req);
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
		if (!park_forget_reader(req))
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
static void cmd_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

	if (rf_adopt_done(req, res))
		return;
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
static void cread_done(struct rf_req *req, int res)
{
	if (res > 0) {
		classic_fetched(req, (uint32_t)res);
		return;
	}
	if (res == -EINTR || res == -EAGAIN || res == -ENOENT) {
		post_classic_read(req);
		return;
	}
	entry_gone(req, res);
}

/* A classic reply WRITE completed. */
static void cwrite_done(struct rf_req *req, int res)
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
	post_classic_read(req);
}

/* The host's channel: one RECVMSG posted at a time, with room for one
 * file (MSG_TRUNC: a message longer than the buffer shows as such). */
static void post_chan_recv(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(q);

	memset(&q->rx_cmsg, 0, sizeof(q->rx_cmsg));
	q->rx_iov.iov_base = q->rx;
	q->rx_iov.iov_len = sizeof(q->rx);
	memset(&q->rx_msg, 0, sizeof(q->rx_msg));
	q->rx_msg.msg_iov = &q->rx_iov;
	q->rx_msg.msg_iovlen = 1;
	q->rx_msg.msg_control = q->rx_cmsg.buf;
	q->rx_msg.msg_controllen = sizeof(q->rx_cmsg.buf);
	io_uring_prep_recvmsg(sqe, RF_FILE_SLOT_CHAN, &q->rx_msg, MSG_TRUNC | MSG_CMSG_CLOEXEC);
	sqe->flags |= IOSQE_FIXED_FILE;
	q->chan_armed = true;
	rf_sqe_tag_gen(sqe, q->rx, RF_TAG_WAKE, q->chan_gen);
}

/* The file a message carried, or -1 (read from the control buffer as
 * the kernel left it: zeroed before each receive). */
static int chan_file(struct rf_queue *q)
{
	const struct cmsghdr *cm = (const void *)q->rx_cmsg.buf;
	int fd;

	if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

/* An open or create answered with a backing file (rf_req_backing): it
 * serves the handle the reply gives the kernel, as the keeper commits it. */
static void take_backing(struct rf_queue *q, struct rf_req *req, int *fd)
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

/* The host's answer to the request in a slot, held to the keeper's own
 * record of it: a slot that waits for no answer, an error the kernel
 * would refuse, a body longer than the request may carry or where it has
 * no buffer, a file for what is no zero-copied READ or WRITE: none of it
 * reaches the kernel. @fd: the file the message carried (taken, or left). */
static void host_replied(struct rf_queue *q, const struct rf_chan_rec *r, int *fd)
{
	struct rf_req *req = r->idx < q->nreqs ? &q->reqs[r->idx] : NULL;
	struct rf_queue_stats *st = q->stats;
	uint32_t fdio = r->flags & (RF_CHF_FD_READ | RF_CHF_FD_WRITE);

	if (!req || req->state != RQ_PLUGIN || req->noreply || req->replied || req->host_park) {
		log_warnx("queue %u: the plugin host answered slot %u, which waits for no "
			  "answer; ignored",
			  q->qid, r->idx);
		return;
	}
	req->replied = true;
	req->error = r->error >= 0 && r->error < 512 ? r->error : EIO;
	req->fd_op = RF_FDOP_NONE;
	req->reply_len = 0;
	if (fdio) {
		uint32_t want = fdio == RF_CHF_FD_READ ? FUSE_READ : FUSE_WRITE;

		if (!req->zc || *fd < 0 || req->in.opcode != want ||
		    fdio == (RF_CHF_FD_READ | RF_CHF_FD_WRITE)) {
			log_warnx("queue %u: the plugin host passed a file for %s, no zero-copied "
				  "%s; EIO",
				  q->qid, rf_op_name(req->in.opcode),
				  want == FUSE_READ ? "READ" : "WRITE");
			req->error = EIO;
		} else if (!req->error) {
			req->fd_op = want == FUSE_READ ? RF_FDOP_READ : RF_FDOP_WRITE;
			req->fd = *fd;
			*fd = -1;
			req->off = r->a;
			req->len = want == FUSE_READ
					   ? (r->len < rf_reply_limit(req) ? r->len
									   : rf_reply_limit(req))
					   : req->rest_len;
		}
	} else if (!req->error) {
		if (r->len > req->payload_cap || (r->len && !req->payload) ||
		    (req->in.opcode == FUSE_READ && r->len > rf_reply_limit(req))) {
			log_warnx("queue %u: the plugin host answered %s with %u bytes, more than "
				  "it may carry; EIO",
				  q->qid, rf_op_name(req->in.opcode), r->len);
			req->error = EIO;
		} else {
			req->reply_len = r->len;
		}
	}
	if ((r->flags & RF_CHF_BACKING) && *fd >= 0 && !fdio && !req->error)
		take_backing(q, req, fd);
	/* how the host moved the data, for the statistics */
	if (r->moved && r->moved <= req->payload_cap) {
		if (r->flags & RF_CHF_INLINE) {
			st->inline_ops++;
			st->inline_bytes += r->moved;
		} else if ((r->flags & RF_CHF_FIXED) && req->in.opcode == FUSE_READ) {
			st->read_fixed_ops++;
			st->read_fixed_bytes += r->moved;
		} else if (r->flags & RF_CHF_FIXED) {
			st->write_fixed_ops++;
			st->write_fixed_bytes += r->moved;
		}
	}
	complete(req);
}

/* The host told the plugin of a FORGET or INTERRUPT: the reader reads on. */
static void host_told(struct rf_queue *q, const struct rf_chan_rec *r)
{
	struct rf_req *req = r->idx < q->nreqs ? &q->reqs[r->idx] : NULL;

	if (!req || !req->noreply || req->state != RQ_PLUGIN) {
		log_warnx("queue %u: the plugin host finished slot %u, which it was not "
			  "given; ignored",
			  q->qid, r->idx);
		return;
	}
	req->noreply = false;
	if (!park_forget_reader(req))
		post_classic_read(req);
}

/* A counter for the pool's statistics, the keeper's own or a COUNT of
 * its host's (on queue 0, rf_chan_check says). */
static void keeper_count(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len,
			 int32_t error)
{
	struct rf_queue_stats *st = w->queues[0].stats;

	if (which == RF_CNT_RESTORED) {
		__atomic_add_fetch(&st->restored_nodes, a, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st->restored_files, len, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st->restore_failed, (uint32_t)error, __ATOMIC_RELAXED);
	} else if (which == RF_CNT_RESTORE_FULL) {
		__atomic_add_fetch(&st->restore_full, a, __ATOMIC_RELAXED);
	}
}

/* The host took none of @n records: a message is taken whole or not at
 * all, so what is in it never reached a host (host_restart: the next
 * gets it), and this one is ended (unless the keeper is stopping). */
static void keeper_chan_broken(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	if (atomic_load(&q->w->stop))
		return;
	if (q->w->cfg.host_restart)
		rf_queue_host_unsent(q, r, n);
	rf_host_down(q, "does not take its requests");
}

const struct rf_side rf_keeper_side = {
	.name = "keeper",
	.finish = keeper_finish,
	.chan_broken = keeper_chan_broken,
	.count = keeper_count,
};

/* A record from the host, on @via (with the file the message carried
 * in @fd, or -1): checked against the table and acted on; false if it
 * ended the host. */
static bool host_record(struct rf_queue *q, const struct rf_chan_rec *r, enum rf_chan_via via,
			int *fd)
{
	struct rf_worker *w = q->w;
	char why[80];

	if (rf_chan_check(RF_CHAN_HOST, q->chan_phase, via, q->qid, r, why, sizeof(why)) < 0) {
		rf_host_down(q, why);
		return false;
	}
	q->chan_phase = rf_chan_after(q->chan_phase, r->kind);
	switch (r->kind) {
	case RF_CH_REPLY:
		host_replied(q, r, fd);
		break;
	case RF_CH_DONE:
		host_told(q, r);
		break;
	case RF_CH_PONG:
		/* both of this queue's threads are alive */
		__atomic_store_n(&q->stats->heartbeat, r->a, __ATOMIC_RELAXED);
		break;
	case RF_CH_COUNT:
		keeper_count(w, r->idx, r->a, r->len, r->error);
		break;
	case RF_CH_READY:
		if (q->qid != 0)
			break;
		if (atomic_load(&w->host_seq) > 1) {
			/* a host started after a death: the keeper has been
			 * serving all along; the broker learns */
			struct rf_msg_ready rd = { .transport = atomic_load(&w->transport),
						   .nqueues = w->nqueues };

			rf_msg_send(w->ipc_fd, RF_MSG_READY, 0, &rd, sizeof(rd), NULL, 0);
			break;
		}
		pthread_mutex_lock(&w->start_lock);
		w->host_ready = true;
		pthread_cond_broadcast(&w->start_cond);
		pthread_mutex_unlock(&w->start_lock);
		break;
	default: /* none other passes rf_chan_check */
		break;
	}
	return true;
}

/* What the host wrote on the ring, once it serves (READY), in order. */
void rf_queue_host_ring(struct rf_queue *q)
{
	struct rf_chan_rec r[RF_CHAN_BATCH];
	int i, n;

	if (q->chan_phase != RF_CHP_SERVE || !q->chan.copy)
		return;
	do {
		n = rf_chan_take(&q->chan, r, RF_CHAN_BATCH);
		if (n < 0) {
			rf_host_down(q, "broke its ring");
			return;
		}
		for (i = 0; i < n; i++) {
			int none = -1;

			if (!host_record(q, &r[i], RF_CHV_RING, &none))
				return;
		}
	} while (n == RF_CHAN_BATCH);
}

/* A socket message from the host: what it wrote on the ring before it,
 * then its records, in order. */
void rf_queue_host_message(struct rf_queue *q, int res)
{
	struct rf_worker *w = q->w;
	uint32_t i, n;
	int fd;

	rf_queue_host_ring(q);
	if (res <= 0 || atomic_load(&w->stop)) {
		if (atomic_load(&w->stop))
			return; /* it leaves, as told */
		rf_host_down(q, res == 0 ? "closed its channel" : "broke its channel");
		return;
	}
	fd = chan_file(q);
	if ((size_t)res > sizeof(q->rx) || res % (int)sizeof(q->rx[0])) {
		if (fd >= 0)
			close(fd);
		rf_host_down(q, "sent a message that is no whole number of records");
		return;
	}
	n = (uint32_t)res / sizeof(q->rx[0]);
	for (i = 0; i < n; i++) {
		if (!host_record(q, &q->rx[i], RF_CHV_SOCKET, &fd)) {
			if (fd >= 0)
				close(fd);
			return;
		}
	}
	if (fd >= 0)
		close(fd);
	/* (READY: what the host wrote after it is on the ring already) */
	rf_queue_host_ring(q);
	post_chan_recv(q);
}

/* Records that never reached a host (sent nowhere, or left unread in a
 * dead host's end): a request waits for the next host, a FORGET or
 * INTERRUPT is not told (rf_queue_host_gone says why). */
void rf_queue_host_unsent(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct rf_req *req = r[i].idx < q->nreqs ? &q->reqs[r[i].idx] : NULL;

		if (!req || req->state != RQ_PLUGIN || req->replied)
			continue;
		if (r[i].kind == RF_CH_REQ && !req->noreply) {
			req->host_park = true;
		} else if (r[i].kind == RF_CH_NOREPLY && req->noreply) {
			req->noreply = false;
			if (!park_forget_reader(req))
				post_classic_read(req);
		}
	}
}

/*
 * host_restart: the reaper found this queue's host dead (host.c). What it
 * answered on its ring is taken; new requests wait from now on; what it
 * never took from the keeper's ring is read back from the keeper's copy
 * and waits too. Then its end of the socket, which the keeper kept, is
 * shut down: the keeper's RECVMSG gets the files the host passed before
 * it died, then the end of the channel, and only then is the rest it
 * held settled (rf_host_down). The dead host's READ, still posted on its
 * ring, is woken by the shutdown and ended by the kernel.
 */
void rf_queue_host_notice(struct rf_queue *q)
{
	struct rf_chan_rec r[RF_CHAN_BATCH];
	uint32_t n, skip;

	if (atomic_load(&q->dead_seq) != q->host_seq || q->host_noticed)
		return;
	q->host_noticed = true;
	/* what it answered on its ring before it died */
	rf_queue_host_ring(q);
	q->host_down = true;
	rf_queue_host_unsent(q, q->tx, q->ntx);
	q->ntx = 0;
	for (skip = 0; (n = rf_chan_unread(&q->chan, skip, r, RF_CHAN_BATCH)) > 0; skip += n)
		rf_queue_host_unsent(q, r, n);
	shutdown(q->host_end, SHUT_RDWR);
	close(q->host_end);
	q->host_end = -1;
	q->host_draining = true;
	if (!q->chan_armed)
		/* its RECVMSG ended already (the host broke the channel) */
		rf_host_down(q, "is dead");
}

/*
 * host_restart: the plugin host is dead. What this queue had handed it
 * is settled as a successor settles a dead worker's requests: run again,
 * once, where that is safe (rf_rerunnable), by the next host; anything
 * else answered EIO, for it may have been half done. A FORGET or
 * INTERRUPT it was telling the plugin is over (a FORGET told twice could
 * drop a node the kernel still holds; one never told leaves a count too
 * high, which only keeps a record longer).
 */
void rf_queue_host_gone(struct rf_queue *q)
{
	struct rf_pool_ctl *ctl = q->w->ctl;
	uint32_t i;

	q->host_down = true;
	q->ntx = 0;
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (req->state != RQ_PLUGIN || req->replied || req->host_park)
			continue;
		if (req->noreply) {
			req->noreply = false;
			if (!park_forget_reader(req))
				post_classic_read(req);
			continue;
		}
		__atomic_fetch_add(&ctl->adopted, 1, __ATOMIC_RELAXED);
		if (rf_rerunnable(req->in.opcode) && !req->ss->reruns) {
			__atomic_fetch_add(&ctl->adopted_rerun, 1, __ATOMIC_RELAXED);
			req->ss->reruns = 1;
			req->host_park = true;
			log_info("queue %u: the plugin host died holding request %llu (%s): "
				 "the next host runs it again",
				 q->qid, (unsigned long long)req->in.unique,
				 rf_op_name(req->in.opcode));
			continue;
		}
		log_info("queue %u: the plugin host died holding request %llu (%s): EIO", q->qid,
			 (unsigned long long)req->in.unique, rf_op_name(req->in.opcode));
		req->replied = true;
		req->error = EIO;
		req->reply_len = 0;
		req->fd_op = RF_FDOP_NONE;
		complete(req);
	}
}

/* The main thread started the next host (rf_host_respawn): its channel
 * is in this queue's descriptor already (dup2); the ring's file slot
 * takes it, and what waited goes to it. */
static void host_renew(struct rf_queue *q)
{
	struct rf_worker *w = q->w;
	struct io_uring_files_update up = { .offset = RF_FILE_SLOT_CHAN,
					    .fds = (uint64_t)(uintptr_t)&q->chan_fd };
	uint32_t gen = __atomic_load_n(&w->cfg.generation, __ATOMIC_RELAXED), i;
	int r;

	if (!atomic_exchange(&q->chan_renew, 0))
		return;
	rf_queue_host_notice(q);
	if (q->host_draining) {
		/* its death's last completion is still to come: the
		 * channel's generation makes it nothing */
		q->host_draining = false;
		rf_queue_host_gone(q);
	}
	q->host_end = q->host_end_next;
	q->host_end_next = -1;
	/* the new host's eventfd, and the rings set back to empty for it;
	 * the dead one's read of its eventfd stays posted on the ring the
	 * next host inherits (the kernel cancels only a dead task's requests
	 * on ring files): woken once more, it ends (ECANCELED, dropped by
	 * its generation) instead of keeping the eventfd for as long as the
	 * ring lives */
	if (q->hevfd >= 0) {
		uint64_t one = 1;

		if (write(q->hevfd, &one, sizeof(one)) < 0)
			log_debug("queue %u: wake the dead host's eventfd: %s", q->qid,
				  strerror(errno));
		close(q->hevfd);
	}
	q->hevfd = q->hevfd_next;
	q->hevfd_next = -1;
	if (rf_chan_attach(&q->chan, RF_CHAN_KEEPER, q->hevfd, atomic_load(&w->host_seq)) < 0)
		fatalx("queue %u: the copy of the new plugin host's ring", q->qid);
	/* the same descriptor number, now the new host's channel: the main
	 * thread's PINGs go there too */
	if (dup3(q->chan_next, q->chan_fd, O_CLOEXEC) < 0)
		fatal("queue %u: take the new plugin host's channel", q->qid);
	close(q->chan_next);
	q->chan_next = -1;
	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
	if (r < 0)
		fatalx("queue %u: install the new plugin host's channel: %s", q->qid, strerror(-r));
	q->chan_gen++;
	q->chan_phase = RF_CHP_INIT;
	q->host_seq = atomic_load(&w->host_seq);
	q->host_down = false;
	q->host_noticed = false;
	post_chan_recv(q);
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (!req->host_park)
			continue;
		req->host_park = false;
		/* the watchdog watches it as the new generation's */
		__atomic_store_n(&req->ss->generation, gen, __ATOMIC_RELAXED);
		to_host(req);
	}
}

/* The wake-up eventfd fired: replies from other threads, a PING, or a
 * new plugin host. */
static void wake_done(struct rf_queue *q)
{
	if (q->w->cfg.host_restart) {
		rf_queue_host_notice(q);
		if (atomic_load(&q->chan_renew))
			host_renew(q);
	}
	drain_mbox(q);
	if (!atomic_load(&q->w->stop))
		post_wake_read(q);
}

static void handle_cqe(struct rf_queue *q, const struct io_uring_cqe *cqe)
{
	struct rf_req *req = rf_cqe_ptr(cqe);

	switch (rf_cqe_tag(cqe)) {
	case RF_TAG_CMD:
		cmd_done(req, cqe->res);
		return;
	case RF_TAG_DATA:
		rf_data_done(req, cqe->res);
		return;
	case RF_TAG_CREAD:
		cread_done(req, cqe->res);
		return;
	case RF_TAG_CWRITE:
		cwrite_done(req, cqe->res);
		return;
	case RF_TAG_WAKE:
		if (req != (void *)q->rx) {
			wake_done(q);
		} else if (rf_cqe_gen(cqe) == q->chan_gen) {
			q->chan_armed = false;
			rf_queue_host_message(q, cqe->res);
		} else if (cqe->res > 0) {
			/* a dead host's last message, after its successor
			 * came: what it answered was settled without it */
			log_debug("queue %u: a dead plugin host's message dropped", q->qid);
		}
		return;
	case RF_TAG_PROBE:
		rf_probe_done(q, rf_cqe_probe_id(cqe), cqe->res);
		return;
	case RF_TAG_SETUP: /* waited for by setup_cmd alone */
		break;
	}
	/* not ours: something else submitted on this ring */
	log_warnx("queue %u: unexpected completion (user_data 0x%llx, res %d)", q->qid,
		  (unsigned long long)cqe->user_data, cqe->res);
}

void rf_queue_reap(struct rf_queue *q)
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
void rf_queue_pin(struct rf_queue *q)
{
	cpu_set_t set;

	if (q->w->cfg.bench & RF_BENCH_NO_PIN)
		return;
	CPU_ZERO(&set);
	CPU_SET(q->qid, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		log_debug("queue %u: cannot run on CPU %u only: %s", q->qid, q->qid,
			  strerror(errno));
}

/* Submit and wait for a completion; with files held in data slots and no
 * data moving, wait at most RF_RELEASE_MS, then let them go (data.c); with
 * the /dev/fuse reader resting, wait no longer than its rest. */
static int submit_and_wait(struct rf_queue *q)
{
	uint64_t rest = unpark_forget_reader(q), wait = 0;
	bool release = q->files_held && !rf_data_in_flight(q);
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;
	int r;

	if (release)
		wait = RF_RELEASE_MS * 1000000ULL;
	if (rest && (!wait || rest < wait)) {
		wait = rest;
		release = false;
	}
	rf_chan_flush(q);
	if ((q->w->cfg.bench & RF_BENCH_SPIN) && q->chan_phase == RF_CHP_SERVE && q->chan.copy &&
	    !q->host_down && !io_uring_cq_ready(&q->ring)) {
		io_uring_submit(&q->ring);
		if (rf_chan_spin(&q->chan, &q->ring, RF_SPIN_NS))
			return io_uring_get_events(&q->ring);
	}
	/* asleep only once the host can know it: what it answered meanwhile
	 * is taken first */
	if (q->chan_phase == RF_CHP_SERVE && q->chan.copy && !q->host_down &&
	    !rf_chan_sleep(&q->chan))
		return io_uring_submit(&q->ring);
	if (!wait) {
		r = io_uring_submit_and_wait(&q->ring, 1);
		rf_chan_awake(&q->chan);
		return r;
	}
	ts.tv_sec = (long long)(wait / 1000000000ULL);
	ts.tv_nsec = (long long)(wait % 1000000000ULL);
	r = io_uring_submit_and_wait_timeout(&q->ring, &cqe, 1, &ts, NULL);
	rf_chan_awake(&q->chan);
	/* liburing 2.3 answers a timeout with -ETIME or with what it
	 * submitted: no completion to reap is what tells. A completion that
	 * came as the time ran out comes with -ETIME too: reaped, as any
	 * (it ended the worker once, t_restore under memfs's churn). */
	if ((r >= 0 || r == -ETIME) && !io_uring_cq_ready(&q->ring)) {
		if (release)
			rf_data_release(q);
		return 0;
	}
	return r == -ETIME ? 0 : r;
}

/* Submit one setup command of this queue and wait for it: its result.
 * Nothing else is in flight yet. */
static int setup_cmd(struct rf_queue *q, uint32_t op)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(q);
	struct fuse_uring_cmd_req *c = rf_prep_fuse_cmd(sqe, op, (uint16_t)q->qid, 0);
	struct io_uring_cqe *cqe;
	int r;

	if (op == FUSE_IO_URING_CMD_ADD_QUEUE && q->zc)
		c->flags = FUSE_URING_ZERO_COPY;
	if (op == FUSE_IO_URING_CMD_ADD_BUFPOOL) {
		c->bufpool.uaddr = (uint64_t)(uintptr_t)q->qpool;
		c->bufpool.len = q->qpool_size;
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = RF_BUF_INDEX_POOL;
	}
	sqe->user_data = RF_TAG_SETUP;
	r = io_uring_submit_and_wait(&q->ring, 1);
	if (r < 0)
		return r;
	r = io_uring_peek_cqe(&q->ring, &cqe);
	if (r < 0)
		return r;
	if (rf_cqe_tag(cqe) != RF_TAG_SETUP)
		fatalx("queue %u: completion 0x%llx before the queue was set up", q->qid,
		       (unsigned long long)cqe->user_data);
	r = cqe->res;
	io_uring_cqe_seen(&q->ring, cqe);
	return r;
}

/* A step of a queue's set-up failed: say which, for the main thread. */
static int setup_failed(struct rf_queue *q, int err, const char *what)
{
	snprintf(q->failed, sizeof(q->failed), "queue %u: %s", q->qid, what);
	return err;
}

/*
 * Give the queue its kernel buffer pool: the queue (a zero-copy one if
 * asked, which takes CAP_SYS_ADMIN in this task), then the pool, both
 * before any entry. Both outlive the worker that added them; a successor
 * finds the queue there (EEXIST) and the pool too (EINVAL), at the same
 * address, which is where the pool is mapped in every generation.
 */
static int add_pool(struct rf_queue *q)
{
	int r = setup_cmd(q, FUSE_IO_URING_CMD_ADD_QUEUE);
	bool existed = r == -EEXIST;

	if (r < 0 && !existed)
		return setup_failed(q, r,
				    q->zc ? "FUSE io-uring ADD_QUEUE with FUSE_URING_ZERO_COPY "
					    "(needs CAP_SYS_ADMIN)"
					  : "FUSE io-uring ADD_QUEUE");
	r = setup_cmd(q, FUSE_IO_URING_CMD_ADD_BUFPOOL);
	if (r < 0 && !(existed && r == -EINVAL))
		return setup_failed(q, r, "FUSE io-uring ADD_BUFPOOL");
	log_debug("queue %u: %s %sbuffer pool of %u bytes", q->qid,
		  existed ? "kept the" : "added a", q->zc ? "zero-copy queue and its " : "",
		  q->qpool_size);
	return 0;
}

/*
 * The queue's trusted start-up, on its own thread while the process is
 * still root: enabling the ring makes this thread its single issuer and
 * arms the restrictions the broker registered; then the wake-up eventfd,
 * the queue and its pool; then this thread's part of the privilege drop
 * (rf_sandbox_drop_thread), before any plugin code exists. 0, or -errno
 * with what failed in q->failed.
 */
static int queue_prepare(struct rf_queue *q)
{
	int r;

	r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
	if (r < 0)
		return setup_failed(q, r, "enable the ring");
	r = install_wake(q);
	if (r < 0)
		return setup_failed(q, r, "install the wake-up eventfd");
	if (q->chan_fd >= 0) {
		struct io_uring_files_update up = { .offset = RF_FILE_SLOT_CHAN,
						    .fds = (uint64_t)(uintptr_t)&q->chan_fd };

		r = rf_io_uring_register(q->ring_fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
		if (r < 0)
			return setup_failed(q, r, "install the plugin host's channel");
	}
	if (q->qpool_size) {
		r = add_pool(q);
		if (r < 0)
			return r;
	}
	r = rf_sandbox_drop_thread();
	if (r < 0)
		return setup_failed(q, r, "drop the thread's privileges");
	return 0;
}

static void *queue_main(void *arg)
{
	struct rf_queue *q = arg;
	struct rf_worker *w = q->w;
	uint32_t i;
	int r;

	cur_queue = q;
	q->tid = (pid_t)syscall(SYS_gettid);
	rf_queue_pin(q);
	r = queue_prepare(q);
	/* tell the main thread, and wait until the process has dropped its
	 * privileges and the plugin is loaded */
	pthread_mutex_lock(&w->start_lock);
	q->setup_err = r;
	w->prepared++;
	pthread_cond_broadcast(&w->start_cond);
	while (!r && !w->serving)
		pthread_cond_wait(&w->start_cond, &w->start_lock);
	pthread_mutex_unlock(&w->start_lock);
	if (r < 0)
		return NULL;
	post_wake_read(q);
	if (w->host_pid)
		post_chan_recv(q);
	if (w->cfg.adopt)
		rf_rescue(q);
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (req->classic)
			post_classic_read(req);
		else if (req->state != RQ_IDLE)
			continue; /* an inherited entry's, serving already */
		else if (w->cfg.adopt &&
			 __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_NONE)
			rf_adopt(req);
		else
			rf_register_or_reserve(req);
	}
	q->live = q->nreqs;
	r = submit(q);
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
		/* this thread is alive: answer the broker's heartbeat (with a
		 * host, its thread answers, chan_done) */
		if (!w->host_pid)
			__atomic_store_n(&q->stats->heartbeat, atomic_load(&w->ping_seq),
					 __ATOMIC_RELAXED);
		rf_queue_reap(q);
		rf_queue_host_ring(q);
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

static int queue_start(struct rf_queue *q)
{
	uint32_t i;
	int r;

	r = io_uring_queue_mmap(q->ring_fd, &q->params, &q->ring);
	if (r < 0)
		return r;
	rf_ring_fill_sq_array(&q->ring);
	/* liburing 2.3 copies the features only in io_uring_queue_init_params();
	 * without IORING_FEAT_EXT_ARG here, submit_and_wait() would time its
	 * wait with a TIMEOUT op, which the ring's restrictions refuse */
	q->ring.features = q->params.features;
	q->no_files = malloc(q->nreqs * sizeof(*q->no_files));
	if (!q->no_files)
		return -ENOMEM;
	for (i = 0; i < q->nreqs; i++)
		q->no_files[i] = -1;
	pthread_mutex_init(&q->mbox_lock, NULL);
	r = pthread_create(&q->thread, NULL, queue_main, q);
	return -r;
}

int rf_queues_prepare(struct rf_worker *w, char *why, size_t len)
{
	uint32_t q;
	int r;

	pthread_mutex_init(&w->start_lock, NULL);
	pthread_cond_init(&w->start_cond, NULL);
	for (q = 0; q < w->nqueues; q++) {
		r = queue_start(&w->queues[q]);
		if (r < 0) {
			snprintf(why, len, "start queue %u", q);
			return r;
		}
	}
	pthread_mutex_lock(&w->start_lock);
	while (w->prepared < w->nqueues)
		pthread_cond_wait(&w->start_cond, &w->start_lock);
	pthread_mutex_unlock(&w->start_lock);
	for (q = 0; q < w->nqueues; q++)
		if (w->queues[q].setup_err < 0) {
			snprintf(why, len, "%s", w->queues[q].failed);
			return w->queues[q].setup_err;
		}
	return 0;
}

void rf_queues_serve(struct rf_worker *w)
{
	pthread_mutex_lock(&w->start_lock);
	w->serving = true;
	pthread_cond_broadcast(&w->start_cond);
	while (atomic_load(&w->registered) < w->nqueues)
		pthread_cond_wait(&w->start_cond, &w->start_lock);
	pthread_mutex_unlock(&w->start_lock);
}
