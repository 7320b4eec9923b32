/* SPDX-License-Identifier: MIT */
/*
 * Between the files of the keeper, from the bottom up (each calls only
 * those below it, and the shared worker/ and worker/plugin/ code):
 *
 *   ring.c         the FUSE ring: SQEs, commands, the commit of a checked
 *                  reply, the records a successor reads
 *   pipe.c         small zero-copied transfers on memory files, through a
 *                  pipe
 *   backing.c      a backing file's data, moved by the keeper itself
 *   data.c         zero-copied data, between a file and the client's pages
 *   request.c      a request's way from the ring to whoever answers it
 *   rescue.c       what a successor finishes for a dead predecessor
 *   answer.c       the plugin host's records, checked; a host's death
 *   plugin_host.c  the keeper's end of its plugin host: made before the
 *                  fork, reaped, started again, told PING and STOP
 *   loop.c         the queue threads, which hand each completion on
 *
 * Everything but plugin_host.c's reaper runs on a queue's own thread.
 */
#ifndef RINGFENCE_KEEPER_I_H
#define RINGFENCE_KEEPER_I_H

#include "keeper.h"
#include "ring_tag.h"
#include "worker.h"

/* a queue idle this long with files in its data slots lets them go
 * (rf_data_release) */
#define RF_RELEASE_MS 100
/* how long the io-uring transport's /dev/fuse reader rests after a FORGET
 * (request.c: rf_queue_park_reader) */
#define RF_FORGET_REST_MS 10

/* ring.c */
/* Submit what is queued on the ring (and the channel's records first):
 * io_uring_submit's result. */
int rf_queue_submit(struct rf_queue *q);
struct io_uring_sqe *rf_queue_sqe(struct rf_queue *q);
/* An SQE for FUSE command @op of this queue, as the queue's buffers need. */
struct io_uring_sqe *rf_queue_cmd(struct rf_queue *q, uint32_t op, uint64_t commit_id);
void rf_queue_register(struct rf_req *req); /* a fresh entry on the slot */
void rf_queue_post_read(struct rf_req *req); /* the /dev/fuse reader reads */
void rf_queue_commit(struct rf_req *req); /* the answer goes out */
/* Whether @id can be a request's: FUSE numbers requests with even ids
 * (an odd one is the interrupt reply's), never 0. */
static inline bool rf_request_id(uint64_t id)
{
	return id && !(id & 1);
}
/* Ids grow by 2 per request from 2 and never reach this in a mount's life;
 * a probe carries its id in user_data above a 3-bit tag, so it must stay
 * below 2^61. */
#define RF_SEEN_ID_MAX (1ULL << 60)
/* The pool's table of received request ids (@id / 2 indexes it; odd ids,
 * interrupts, are not recorded). */
void rf_seen_record(struct rf_worker *w, uint64_t id);
bool rf_seen(const struct rf_worker *w, uint64_t id);

/* pipe.c: rf_pipe_start moves @req's zero-copied data through its
 * entry's pipe, if it is a small transfer on a memory file (true: the
 * ring op is posted), with @fd, a regular file if @checked; once that op
 * completed with @res, rf_pipe_done moves the rest and gives what the
 * transfer moved in all, or -errno. req->piped says which path a
 * completion is of. */
bool rf_pipe_start(struct rf_req *req, int fd, bool checked);
int rf_pipe_done(struct rf_req *req, int fd, int res);

/* backing.c, files whose data the keeper moves itself (its comment says
 * why). rf_backing_add takes @fd for handle @fh (true) or leaves it to
 * the caller (false: no regular file, the handle taken, the table full);
 * rf_backing_serve answers @req itself if it is a READ or WRITE of such
 * a file (true); rf_backing_put lets go of its file; rf_backing_release
 * forgets a handle the kernel released. */
#define RF_BACKING_MAX 16384
bool rf_backing_add(struct rf_queue *q, uint64_t fh, int fd);
bool rf_backing_serve(struct rf_req *req);
void rf_backing_put(struct rf_req *req);
void rf_backing_release(uint64_t fh);
/* rf_backing_take gives the table the file an open or create
 * answer names (taking @fd, or leaving it to the caller); rf_backing_move
 * moves @req's data between req->fd and its payload (or, zero-copied,
 * the client's pages), and commits; rf_backing_moved is a completion of
 * such a move. */
void rf_backing_take(struct rf_queue *q, struct rf_req *req, int *fd);
void rf_backing_move(struct rf_req *req);
void rf_backing_moved(struct rf_req *req, int res);

/* data.c */
void rf_data_start(struct rf_req *req);
void rf_data_done(struct rf_req *req, int res);
bool rf_data_in_flight(const struct rf_queue *q);
void rf_data_release(struct rf_queue *q);

/* request.c */
void rf_queue_fetched(struct rf_req *req); /* an entry's request arrived */
/* On the owning thread: a reply is ready to go out (file data first). */
void rf_queue_complete(struct rf_req *req);
/* The request goes to the plugin host (or waits for the next one). */
void rf_queue_to_host(struct rf_req *req);
/* The /dev/fuse reader after a FORGET: rested (true), or not; and read
 * again once the rest is over (0, or the nanoseconds left). */
bool rf_queue_park_reader(struct rf_req *req);
uint64_t rf_queue_unpark_reader(struct rf_queue *q);
/* Completions: a FUSE command, a classic READ, a classic reply WRITE. */
void rf_queue_cmd_done(struct rf_req *req, int res);
void rf_queue_cread_done(struct rf_req *req, int res);
void rf_queue_cwrite_done(struct rf_req *req, int res);

/* rescue.c; @reap is the queue loop's (rf_queue_reap): each probe's
 * completion is taken before the next is sent */
void rf_rescue(struct rf_queue *q, void (*reap)(struct rf_queue *q));
void rf_adopt(struct rf_req *req);
/* The completion of an adopting commit; false if it is none of rescue's. */
bool rf_adopt_done(struct rf_req *req, int res);
void rf_register_or_reserve(struct rf_req *req);
/* Requests whose arguments all sit where no reply goes (the slot's header
 * area, op_in; before the payload on /dev/fuse), and which are safe to
 * repeat: a successor, or the next plugin host, runs them again in full. */
bool rf_rerunnable(uint32_t op);
void rf_probe_done(struct rf_queue *q, uint64_t id, int res);

/* answer.c */
/* The host's socket: one RECVMSG posted at a time. */
void rf_queue_post_chan_recv(struct rf_queue *q);
/* The host's socket message of @res bytes in q->rx (with a file in
 * q->rx_cmsg, or none), after what it wrote on the ring before it: each
 * record checked against the keeper's own and acted on; a message that
 * is no whole number of records ends the worker. */
void rf_queue_host_message(struct rf_queue *q, int res);
/* What the host wrote on the queue's ring since last taken, once it
 * serves (READY): each record checked and acted on, in order. */
void rf_queue_host_ring(struct rf_queue *q);
/* The channel took none of @n records (rf_side.chan_broken); a counter,
 * the keeper's own or its host's (rf_side.count). */
void rf_queue_host_broke(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n);
void rf_keeper_count(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len, int32_t error);
/* host_restart: the reaper's word that the host is dead, and the main
 * thread's that the next one is there: rf_queue_host_notice takes back
 * what the host never read (rf_queue_host_unsent) and, at the end of its
 * channel, what it held is settled: run again or EIO
 * (rf_queue_host_gone); rf_queue_host_renew hands the next host the
 * channel and what waited. */
void rf_queue_host_notice(struct rf_queue *q);
void rf_queue_host_unsent(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n);
void rf_queue_host_gone(struct rf_queue *q);
void rf_queue_host_renew(struct rf_queue *q);

/* plugin_host.c: a host that no longer speaks to a queue thread is
 * ended (without host_restart, as rf_host_lost: the keeper ends with
 * it). */
void rf_host_down(struct rf_queue *q, const char *why);

/* loop.c */
void rf_queue_reap(struct rf_queue *q);

#endif /* RINGFENCE_KEEPER_I_H */
