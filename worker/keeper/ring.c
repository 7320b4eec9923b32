// SPDX-License-Identifier: MIT
/*
 * The keeper's FUSE ring, below everything else a keeper queue thread
 * does: SQEs, FUSE commands, the /dev/fuse reader's posted READ, and the
 * commit of a reply the keeper has checked, with the records a successor
 * reads should this worker die (the slot's state, the table of request
 * ids received).
 *
 * The low bits of each SQE's user_data say what completed (ring_tag.h).
 */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

int rf_queue_submit(struct rf_queue *q)
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
		rf_queue_submit(q);
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

void rf_queue_post_read(struct rf_req *req)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(req->q);
	/* land so that WRITE data starts at the payload's first byte */
	char *buf = req->payload - RF_CLASSIC_PREFIX;

	io_uring_prep_read(sqe, RF_FILE_SLOT_FUSE, buf, req->payload_cap + RF_CLASSIC_PREFIX, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, req, RF_TAG_CREAD);
	req->state = RQ_WAIT;
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

void rf_seen_record(struct rf_worker *w, uint64_t id)
{
	if (!(id & 1)) /* an odd id is an interrupt's: its request's id | 1 */
		__atomic_store_n(&w->seen[(id >> 1) % RF_SEEN_IDS], id, __ATOMIC_RELAXED);
}

bool rf_seen(const struct rf_worker *w, uint64_t id)
{
	return __atomic_load_n(&w->seen[(id >> 1) % RF_SEEN_IDS], __ATOMIC_RELAXED) == id;
}
