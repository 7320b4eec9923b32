/* SPDX-License-Identifier: MIT */
/*
 * The parts of a queue, between the files that make it:
 *   queue.c   the thread, its SQEs, fetches, commits and the mailbox;
 *   rescue.c  what a successor finishes for a dead predecessor: adoption
 *             of the requests in the slots, the rescue of lost ones;
 *   data.c    file data between the plugin's files and the pool.
 * Everything here runs on the queue's own thread.
 */
#ifndef RINGFENCE_QUEUE_I_H
#define RINGFENCE_QUEUE_I_H

#include "ring_tag.h"
#include "worker.h"

/* queue.c */
struct io_uring_sqe *rf_queue_sqe(struct rf_queue *q);
/* An SQE for FUSE command @op of this queue, as the queue's buffers need. */
struct io_uring_sqe *rf_queue_cmd(struct rf_queue *q, uint32_t op, uint64_t commit_id);
void rf_queue_register(struct rf_req *req); /* a fresh entry on the slot */
void rf_queue_fetched(struct rf_req *req); /* an entry's request arrived */
void rf_queue_commit(struct rf_req *req); /* the answer goes out */
void rf_queue_reap(struct rf_queue *q);
/* A reply made on another thread, for its queue's thread: put in the
 * mailbox, that thread woken on @evfd; and the mailbox emptied, a list by
 * mbox_next (the keeper's and the host's queue threads alike). */
void rf_mbox_put(struct rf_req *req, int evfd);
struct rf_req *rf_mbox_take(struct rf_queue *q);
/* The calling thread on its queue's CPU (the kernel queues a request on
 * its client's CPU's queue), unless make bench says otherwise. */
void rf_queue_pin(struct rf_queue *q);
/* The host's socket message of @res bytes in q->rx (with a file in
 * q->rx_cmsg, or none), after what it wrote on the ring before it: each
 * record checked against the keeper's own and acted on; a message that
 * is no whole number of records ends the worker. */
void rf_queue_host_message(struct rf_queue *q, int res);
/* What the host wrote on the queue's ring since last taken, once it
 * serves (READY): each record checked and acted on, in order. */
void rf_queue_host_ring(struct rf_queue *q);

/* rescue.c */
void rf_rescue(struct rf_queue *q);
void rf_adopt(struct rf_req *req);
/* Whether @id can be a request's: FUSE numbers requests with even ids
 * (an odd one is the interrupt reply's), never 0. */
static inline bool rf_request_id(uint64_t id)
{
	return id && !(id & 1);
}

/* The completion of an adopting commit; false if it is none of rescue's. */
bool rf_adopt_done(struct rf_req *req, int res);
void rf_register_or_reserve(struct rf_req *req);
/* Requests whose arguments all sit where no reply goes (the slot's header
 * area, op_in; before the payload on /dev/fuse), and which are safe to
 * repeat: a successor, or the next plugin host, runs them again in full. */
bool rf_rerunnable(uint32_t op);
void rf_probe_done(struct rf_queue *q, uint64_t id, int res);

/* data.c; a queue idle this long with files in its data slots lets them
 * go (rf_data_release) */
#define RF_RELEASE_MS 100
/* how long the io-uring transport's /dev/fuse reader rests after a FORGET
 * (queue.c: park_forget_reader) */
#define RF_FORGET_REST_MS 10
void rf_data_start(struct rf_req *req);
/* a backing file's transfer, in the keeper (backing.c) */
void rf_data_kept_start(struct rf_req *req);
void rf_data_done(struct rf_req *req, int res);
/* A transfer of req->done bytes is over: the reply it makes (a READ's
 * length, a WRITE's fuse_write_out), for the keeper and the host alike */
void rf_data_end(struct rf_req *req);
bool rf_data_in_flight(const struct rf_queue *q);
void rf_data_release(struct rf_queue *q);

#endif /* RINGFENCE_QUEUE_I_H */
