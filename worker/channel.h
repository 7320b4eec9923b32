/* SPDX-License-Identifier: MIT */
/*
 * Between the worker's two processes (worker/host/host.c says why there are
 * two): the keeper, which holds the rings and the pool's records, and the
 * plugin host, which runs the plugin. Each queue has a channel of two
 * halves, and each kind of record travels on one of them (the table in
 * channel.c):
 *
 *   the rings   a shared mapping the keeper makes before the fork, with a
 *               single-producer ring of records each way: requests and
 *               FORGETs to the host, answers (and PONGs) back. No system
 *               call moves a record; a side wakes the other (a write to
 *               its eventfd) only when that side said it sleeps.
 *   the socket  a SOCK_SEQPACKET pair, for what is rare or carries a
 *               file: PING and STOP from the keeper's main thread, READY
 *               and COUNT from the host, and an answer that hands the
 *               keeper a file (a zero-copied READ or WRITE, a backing
 *               file) as SCM_RIGHTS. Its end of file tells each side the
 *               other is gone.
 *
 * A channel has two phases. In INIT the host's plugin initialises (and
 * restores what earlier workers recorded): the host may only count what
 * it restored (on queue 0) and say READY, which is each host queue
 * thread's first record on its own channel and moves that channel to
 * SERVE; the keeper reads the host's ring only from then on. In SERVE the
 * keeper hands over requests and PINGs and the host answers them. What
 * each side may send in which phase, and on which half, is one table
 * (channel.c, rf_chan_check); the keeper checks every record it reads
 * against it, and a record out of it ends the host. The keeper treats
 * everything the host can write as hostile: each record is copied out of
 * the mapping before it is looked at, the ring's indices are held to the
 * keeper's own, the slot index is bounded by its own queue, the reply by
 * its own record of the request, and what the host never took is read
 * back from the keeper's private copy, never from the mapping.
 */
#ifndef RINGFENCE_CHANNEL_H
#define RINGFENCE_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <liburing.h>

#include "fuse_uapi.h"

enum rf_chan_kind {
	/* keeper to host */
	RF_CH_REQ = 1, /* serve the request in slot idx (in, len: its rest, a: payload offset) */
	/* the FORGET, BATCH_FORGET or INTERRUPT in slot idx (len: its
	 * argument bytes), which needs no reply: answer DONE once told */
	RF_CH_NOREPLY = 2,
	RF_CH_PING = 4, /* a: the broker's sequence number */
	RF_CH_STOP = 5, /* no more requests: leave */
	/* host to keeper */
	RF_CH_REPLY = 16, /* slot idx answered: error, len (reply bytes), flags */
	RF_CH_DONE = 17, /* slot idx's NOREPLY was told */
	RF_CH_PONG = 18, /* a: the PING answered */
	RF_CH_COUNT = 19, /* counters for the pool's statistics (idx: which) */
	RF_CH_READY = 20, /* this host queue thread serves (queue 0's: the plugin is initialised) */
	RF_CH_KINDS
};

enum rf_chan_phase {
	RF_CHP_INIT = 1,
	RF_CHP_SERVE = 2,
};

enum rf_chan_side {
	RF_CHAN_KEEPER = 1,
	RF_CHAN_HOST = 2,
};

/* the half a record came on */
enum rf_chan_via {
	RF_CHV_RING = 1,
	RF_CHV_SOCKET = 2,
};

/* RF_CH_REQ flags */
#define RF_CHF_ZC (1u << 0) /* the data is in the client's pages */
/* RF_CH_REPLY flags: how its data moved (moved bytes), or what the keeper
 * is to move with the file that came with it */
#define RF_CHF_INLINE (1u << 1) /* by pread/pwrite */
#define RF_CHF_FIXED (1u << 2) /* by READ_FIXED / WRITE_FIXED on the host's ring */
#define RF_CHF_FD_READ (1u << 3) /* zero copy: read len bytes at a from the file */
#define RF_CHF_FD_WRITE (1u << 4) /* zero copy: write the request's data at a */
/* an open or create answered: the file that came with it backs the
 * handle in the reply, and the keeper serves its data (keeper/backing.c) */
#define RF_CHF_BACKING (1u << 5)

/* RF_CH_COUNT indexes */
enum {
	RF_CNT_RESTORED = 1, /* a: nodes, len: files, error: failed */
	RF_CNT_RESTORE_FULL = 2, /* a: records the table had no room for */
};

struct rf_chan_rec {
	uint8_t kind;
	uint8_t flags;
	uint16_t pad;
	uint32_t idx;
	int32_t error;
	uint32_t len;
	uint64_t a;
	uint32_t moved;
	uint32_t pad2;
	struct fuse_in_header in; /* RF_CH_REQ, RF_CH_NOREPLY */
};

/* records per message, either way, and per take from a ring */
#define RF_CHAN_BATCH 64

_Static_assert(sizeof(struct rf_chan_rec) == 72, "channel record layout");

/* One direction's ring: the producer writes the records and tail, the
 * consumer head and sleeping (1: it waits in io_uring_enter, and the
 * producer wakes it); free-running indices, each word in a cache line of
 * its own. */
struct rf_chan_ring {
	_Alignas(64) uint32_t tail;
	_Alignas(64) uint32_t head;
	_Alignas(64) uint32_t sleeping;
	uint8_t pad[60];
};

/* The shared mapping: the host it is for (the keeper sets it after it
 * has set the rings back to empty; a host reads and writes nothing on
 * them until it sees its own number), the two rings, then cap records
 * for each. */
struct rf_chan_shm {
	_Alignas(64) uint32_t host;
	struct rf_chan_ring to_host;
	struct rf_chan_ring to_keeper;
};

/* This process's view of a queue's rings (in struct rf_queue): what it
 * writes, what it reads, and its own copies of the indices, which are
 * all it trusts. */
struct rf_chan_view {
	struct rf_chan_shm *shm;
	size_t size;
	uint32_t cap; /* records per ring, a power of two */
	struct rf_chan_ring *out, *in;
	struct rf_chan_rec *out_rec, *in_rec;
	/* the keeper's private copy of what it wrote (rf_chan_unread) */
	struct rf_chan_rec *copy;
	uint32_t out_tail; /* next to write */
	uint32_t out_head; /* the other side's head, as last held to ours */
	uint32_t in_head; /* next to read */
	int peer_evfd; /* the other side's wake-up eventfd */
	uint32_t host; /* the host this side is, or serves */
	bool live; /* the rings are this host's (the keeper's: always) */
};

/* @n records as one message, by sendmsg (what the worker's seccomp policy
 * allows for sockets); its result, as send()'s */
static inline ssize_t rf_chan_send(int fd, const struct rf_chan_rec *r, uint32_t n, int flags)
{
	struct iovec iov = { .iov_base = (void *)r, .iov_len = n * sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	return sendmsg(fd, &m, flags | MSG_NOSIGNAL);
}

/* 0 if record @r may come from @from on queue @qid's channel in @phase,
 * on the half @via; else -EPROTO, and why in @why. Pure. */
int rf_chan_check(enum rf_chan_side from, enum rf_chan_phase phase, enum rf_chan_via via,
		  uint32_t qid, const struct rf_chan_rec *r, char *why, size_t len);
/* The phase a channel is in after record @kind (checked) in @phase. */
enum rf_chan_phase rf_chan_after(enum rf_chan_phase phase, uint8_t kind);
const char *rf_chan_kind_name(uint8_t kind);

/* The rings of a queue of @nreqs slots, shared, zeroed: 0 or -errno.
 * Made by the keeper while it may still make shared memory (its deny
 * list refuses it later), before the first host's fork; every host it
 * starts uses them in turn. Each process takes its view for host number
 * @host (attach): the keeper's sets the rings back to empty, says whose
 * they are and wakes that host (through @peer_evfd); a host's uses them
 * from then on. detach unmaps. */
int rf_chan_rings_new(struct rf_chan_view *v, uint32_t nreqs);
int rf_chan_attach(struct rf_chan_view *v, enum rf_chan_side side, int peer_evfd, uint32_t host);
void rf_chan_detach(struct rf_chan_view *v);
/* Up to @max records the other side wrote, copied into @r, its head
 * moved past them before any is acted on: how many, or -EPROTO if the
 * other side's tail is none a ring of this size can have. */
int rf_chan_take(struct rf_chan_view *v, struct rf_chan_rec *r, uint32_t max);
/* Whether the other side has written what this side has not taken. */
bool rf_chan_pending(struct rf_chan_view *v);
/* About to wait: this side says it sleeps, unless records came (then
 * false: take them first). rf_chan_awake says it runs again. */
bool rf_chan_sleep(struct rf_chan_view *v);
void rf_chan_awake(struct rf_chan_view *v);
/* ringfenced --bench-unsafe=spin: up to @ns polling for the other side's
 * records or for work on @ring (completions, or task work the kernel
 * queued), yielding the CPU to anything else that would run: whether
 * something came. */
#define RF_SPIN_NS 30000
bool rf_chan_spin(struct rf_chan_view *v, const struct io_uring *ring, uint64_t ns);
/* The keeper, its host dead: the records it wrote that the host never
 * took, from its own copy (the host's head held to what the keeper
 * wrote), the first @skip passed over, up to @max into @r; how many. */
uint32_t rf_chan_unread(const struct rf_chan_view *v, uint32_t skip, struct rf_chan_rec *r,
			uint32_t max);

struct rf_queue;
/* The next record to send on @q's ring (zeroed; a full batch goes
 * first), and writing what is queued, waking the other side if it
 * sleeps. A ring the other side does not empty is the process's to
 * answer (rf_side.chan_broken, with what did not go). */
struct rf_chan_rec *rf_chan_next(struct rf_queue *q);
void rf_chan_flush(struct rf_queue *q);
/* @r with the file @fd, as a socket message of its own (SCM_RIGHTS),
 * after what was queued before it went on the ring (the keeper takes
 * the ring's records before each socket message's, so it reads them in
 * the order they were sent): 0, or
 * -EBADF if @fd is no descriptor (the record did not go), or -EPIPE (the
 * channel failed, and chan_broken was told). */
int rf_chan_send_file(struct rf_queue *q, const struct rf_chan_rec *r, int fd);

#endif /* RINGFENCE_CHANNEL_H */
