/* SPDX-License-Identifier: MIT */
/*
 * Between the worker's two processes (worker/host.c says why there are
 * two): the keeper, which holds the rings and the pool's records, and the
 * plugin host, which runs the plugin. One SOCK_SEQPACKET pair per queue;
 * each message is a whole number of fixed-size records, and a reply that
 * hands the keeper a file (a zero-copied READ or WRITE, a backing file)
 * carries it as SCM_RIGHTS in a message of its own.
 *
 * A channel has two phases. In INIT the host's plugin initialises (and
 * restores what earlier workers recorded): the host may only count what
 * it restored (on queue 0) and say READY, which is each host queue
 * thread's first record on its own channel and moves that channel to
 * SERVE. In SERVE the keeper hands over requests and PINGs and the host
 * answers them. What each side may send in which phase is one table
 * (channel.c, rf_chan_check); the keeper checks every record it reads
 * against it, and a record out of it ends the host. The keeper treats
 * what a record says as hostile too: the slot index is bounded by its
 * own queue, the reply by its own record of the request.
 */
#ifndef RINGFENCE_CHANNEL_H
#define RINGFENCE_CHANNEL_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

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

/* RF_CH_REQ flags */
#define RF_CHF_ZC (1u << 0) /* the data is in the client's pages */
/* RF_CH_REPLY flags: how its data moved (moved bytes), or what the keeper
 * is to move with the file that came with it */
#define RF_CHF_INLINE (1u << 1) /* by pread/pwrite */
#define RF_CHF_FIXED (1u << 2) /* by READ_FIXED / WRITE_FIXED on the host's ring */
#define RF_CHF_FD_READ (1u << 3) /* zero copy: read len bytes at a from the file */
#define RF_CHF_FD_WRITE (1u << 4) /* zero copy: write the request's data at a */
/* an open or create answered: the file that came with it backs the
 * handle in the reply, and the keeper serves its data (backing.c) */
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

/* records per message, either way */
#define RF_CHAN_BATCH 64

_Static_assert(sizeof(struct rf_chan_rec) == 72, "channel record layout");

/* @n records as one message, by sendmsg (what the worker's seccomp policy
 * allows for sockets); its result, as send()'s */
static inline ssize_t rf_chan_send(int fd, const struct rf_chan_rec *r, uint32_t n, int flags)
{
	struct iovec iov = { .iov_base = (void *)r, .iov_len = n * sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	return sendmsg(fd, &m, flags | MSG_NOSIGNAL);
}

/* 0 if record @r may come from @from on queue @qid's channel in @phase;
 * else -EPROTO, and why in @why. Pure. */
int rf_chan_check(enum rf_chan_side from, enum rf_chan_phase phase, uint32_t qid,
		  const struct rf_chan_rec *r, char *why, size_t len);
/* The phase a channel is in after record @kind (checked) in @phase. */
enum rf_chan_phase rf_chan_after(enum rf_chan_phase phase, uint8_t kind);
const char *rf_chan_kind_name(uint8_t kind);

struct rf_queue;
/* The next record to send on @q's channel (zeroed; a full batch goes
 * first), and sending what is queued as one message. A send that fails
 * is the process's to answer (rf_side.chan_broken). */
struct rf_chan_rec *rf_chan_next(struct rf_queue *q);
void rf_chan_flush(struct rf_queue *q);
/* @r with the file @fd, as a message of its own (SCM_RIGHTS), after what
 * was queued before it, so that the other side reads in order: 0, or
 * -EBADF if @fd is no descriptor (the record did not go), or -EPIPE (the
 * channel failed, and chan_broken was told). */
int rf_chan_send_file(struct rf_queue *q, const struct rf_chan_rec *r, int fd);

#endif /* RINGFENCE_CHANNEL_H */
