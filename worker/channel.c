// SPDX-License-Identifier: MIT
/*
 * The channel between the keeper and its plugin host (channel.h): what
 * each side may send in which phase, and a queue's outgoing batch, for
 * both processes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "worker.h"

#define INIT (1u << RF_CHP_INIT)
#define SERVE (1u << RF_CHP_SERVE)

#define RING RF_CHV_RING
#define SOCKET RF_CHV_SOCKET

static const struct {
	const char *name;
	uint8_t from; /* enum rf_chan_side */
	uint8_t phases; /* in which it may be sent */
	uint8_t via; /* on which half (enum rf_chan_via) */
	uint8_t queue0; /* on queue 0's channel only */
	uint8_t next; /* the phase it moves the channel to, or 0 */
} kinds[RF_CH_KINDS] = {
	[RF_CH_REQ] = { "REQ", RF_CHAN_KEEPER, SERVE, RING, 0, 0 },
	[RF_CH_NOREPLY] = { "NOREPLY", RF_CHAN_KEEPER, SERVE, RING, 0, 0 },
	[RF_CH_PING] = { "PING", RF_CHAN_KEEPER, SERVE, SOCKET, 0, 0 },
	[RF_CH_STOP] = { "STOP", RF_CHAN_KEEPER, SERVE, SOCKET, 0, 0 },
	/* on the socket when it hands over a file */
	[RF_CH_REPLY] = { "REPLY", RF_CHAN_HOST, SERVE, RING | SOCKET, 0, 0 },
	[RF_CH_DONE] = { "DONE", RF_CHAN_HOST, SERVE, RING, 0, 0 },
	[RF_CH_PONG] = { "PONG", RF_CHAN_HOST, SERVE, RING, 0, 0 },
	[RF_CH_COUNT] = { "COUNT", RF_CHAN_HOST, INIT | SERVE, SOCKET, 1, 0 },
	[RF_CH_READY] = { "READY", RF_CHAN_HOST, INIT, SOCKET, 0, RF_CHP_SERVE },
};

const char *rf_chan_kind_name(uint8_t kind)
{
	return kind < RF_CH_KINDS && kinds[kind].name ? kinds[kind].name : "unknown";
}

int rf_chan_check(enum rf_chan_side from, enum rf_chan_phase phase, enum rf_chan_via via,
		  uint32_t qid, const struct rf_chan_rec *r, char *why, size_t len)
{
	const char *side = from == RF_CHAN_HOST ? "plugin host" : "keeper";

	if (r->kind >= RF_CH_KINDS || !kinds[r->kind].name || kinds[r->kind].from != from) {
		snprintf(why, len, "sent record kind %u, which the %s never sends", r->kind, side);
		return -EPROTO;
	}
	if (!(kinds[r->kind].phases & (1u << phase))) {
		snprintf(why, len, "sent %s on queue %u %s", rf_chan_kind_name(r->kind), qid,
			 phase == RF_CHP_INIT ? "before READY" : "after READY");
		return -EPROTO;
	}
	if (!(kinds[r->kind].via & via)) {
		snprintf(why, len, "sent %s on the %s", rf_chan_kind_name(r->kind),
			 via == RF_CHV_RING ? "ring" : "socket");
		return -EPROTO;
	}
	if (kinds[r->kind].queue0 && qid != 0) {
		snprintf(why, len, "sent %s on queue %u, not 0", rf_chan_kind_name(r->kind), qid);
		return -EPROTO;
	}
	return 0;
}

enum rf_chan_phase rf_chan_after(enum rf_chan_phase phase, uint8_t kind)
{
	return kind < RF_CH_KINDS && kinds[kind].next ? (enum rf_chan_phase)kinds[kind].next
						      : phase;
}

/* ---- the rings ---- */

static uint32_t ring_cap(uint32_t nreqs)
{
	uint32_t cap = 64;

	/* at most one record per slot is outstanding either way, and a
	 * PONG per PING: a ring the other side empties is never full */
	while (cap < nreqs + 64)
		cap <<= 1;
	return cap;
}

int rf_chan_rings_new(struct rf_chan_view *v, uint32_t nreqs)
{
	void *p;

	memset(v, 0, sizeof(*v));
	v->peer_evfd = -1;
	v->cap = ring_cap(nreqs);
	v->size = sizeof(struct rf_chan_shm) + 2 * (size_t)v->cap * sizeof(struct rf_chan_rec);
	p = mmap(NULL, v->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	v->shm = p;
	return 0;
}

int rf_chan_attach(struct rf_chan_view *v, enum rf_chan_side side, int peer_evfd, uint32_t host)
{
	struct rf_chan_rec *to_host = (void *)(v->shm + 1), *to_keeper = to_host + v->cap;
	uint64_t one = 1;

	v->out_tail = v->out_head = v->in_head = 0;
	v->peer_evfd = peer_evfd;
	v->host = host;
	if (side == RF_CHAN_HOST) {
		v->out = &v->shm->to_keeper;
		v->in = &v->shm->to_host;
		v->out_rec = to_keeper;
		v->in_rec = to_host;
		v->live = false;
		return 0;
	}
	v->out = &v->shm->to_host;
	v->in = &v->shm->to_keeper;
	v->out_rec = to_host;
	v->in_rec = to_keeper;
	if (!v->copy)
		v->copy = calloc(v->cap, sizeof(*v->copy));
	if (!v->copy)
		return -ENOMEM;
	/* what a dead host left is nothing to the next: empty, then its */
	memset(&v->shm->to_host, 0, sizeof(v->shm->to_host));
	memset(&v->shm->to_keeper, 0, sizeof(v->shm->to_keeper));
	__atomic_store_n(&v->shm->host, host, __ATOMIC_SEQ_CST);
	v->live = true;
	/* it may be asleep already, its word for it wiped */
	(void)!write(peer_evfd, &one, sizeof(one));
	return 0;
}

/* A host's rings are its own once the keeper says so. */
static bool live(struct rf_chan_view *v)
{
	if (!v->live && __atomic_load_n(&v->shm->host, __ATOMIC_ACQUIRE) == v->host)
		v->live = true;
	return v->live;
}

void rf_chan_detach(struct rf_chan_view *v)
{
	if (v->shm)
		munmap(v->shm, v->size);
	free(v->copy);
	memset(v, 0, sizeof(*v));
	v->peer_evfd = -1;
}

int rf_chan_take(struct rf_chan_view *v, struct rf_chan_rec *r, uint32_t max)
{
	uint32_t tail, n, i;

	if (!live(v))
		return 0;
	tail = __atomic_load_n(&v->in->tail, __ATOMIC_ACQUIRE);
	n = tail - v->in_head;
	if (n > v->cap)
		return -EPROTO;
	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		memcpy(&r[i], &v->in_rec[(v->in_head + i) & (v->cap - 1)], sizeof(*r));
	v->in_head += n;
	/* taken before acted on: what the head is past, this side holds */
	__atomic_store_n(&v->in->head, v->in_head, __ATOMIC_RELEASE);
	return (int)n;
}

bool rf_chan_pending(struct rf_chan_view *v)
{
	return live(v) && __atomic_load_n(&v->in->tail, __ATOMIC_ACQUIRE) != v->in_head;
}

/* sleeping, then the tail; the writer: the tail, then sleeping (flush).
 * Each a sequentially consistent store and load: of the two, at least
 * one side sees the other's store, so no wake-up is lost. */
bool rf_chan_sleep(struct rf_chan_view *v)
{
	/* (a host whose rings are not its own yet: the keeper wakes it
	 * when they are) */
	if (!live(v))
		return true;
	__atomic_store_n(&v->in->sleeping, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&v->in->tail, __ATOMIC_SEQ_CST) == v->in_head)
		return true;
	__atomic_store_n(&v->in->sleeping, 0, __ATOMIC_RELAXED);
	return false;
}

void rf_chan_awake(struct rf_chan_view *v)
{
	if (v->in && v->live)
		__atomic_store_n(&v->in->sleeping, 0, __ATOMIC_RELAXED);
}

uint32_t rf_chan_unread(const struct rf_chan_view *v, uint32_t skip, struct rf_chan_rec *r,
			uint32_t max)
{
	uint32_t head = __atomic_load_n(&v->out->head, __ATOMIC_ACQUIRE), n, i;

	if (!v->copy)
		return 0;
	/* a head outside what the keeper wrote and the host had taken
	 * when last looked at: the host took none of the rest */
	if (head - v->out_head > v->out_tail - v->out_head)
		head = v->out_head;
	n = v->out_tail - head;
	if (skip >= n)
		return 0;
	head += skip;
	n -= skip;
	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		r[i] = v->copy[(head + i) & (v->cap - 1)];
	return n;
}

bool rf_chan_spin(struct rf_chan_view *v, const struct io_uring *ring, uint64_t ns)
{
	struct timespec t0, t;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (i = 0; i < 32; i++) {
			if (rf_chan_pending(v) || io_uring_cq_ready(ring) ||
			    (IO_URING_READ_ONCE(*ring->sq.kflags) &
			     (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)))
				return true;
			sched_yield();
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ULL + (uint64_t)t.tv_nsec -
			    (uint64_t)t0.tv_nsec >
		    ns)
			return false;
	}
}

/* Write @n records on the ring: how many went (fewer if the other side
 * does not empty it). */
static uint32_t ring_write(struct rf_chan_view *v, const struct rf_chan_rec *r, uint32_t n)
{
	uint32_t i;

	/* a host with nothing taken has nothing to answer but a PING, whose
	 * PONG then goes nowhere (the next PING's will not) */
	if (!live(v))
		return n;
	for (i = 0; i < n; i++) {
		uint32_t at = v->out_tail & (v->cap - 1);

		if (v->out_tail - v->out_head >= v->cap) {
			uint32_t head = __atomic_load_n(&v->out->head, __ATOMIC_ACQUIRE);

			/* the other side's head, held to what was written */
			if (head - v->out_head <= v->out_tail - v->out_head)
				v->out_head = head;
			if (v->out_tail - v->out_head >= v->cap)
				break;
		}
		memcpy(&v->out_rec[at], &r[i], sizeof(*r));
		if (v->copy)
			v->copy[at] = r[i];
		v->out_tail++;
	}
	if (!i)
		return 0;
	__atomic_store_n(&v->out->tail, v->out_tail, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&v->out->sleeping, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&v->out->sleeping, 0, __ATOMIC_SEQ_CST)) {
		uint64_t one = 1;

		/* (a failure: the other side is gone, which its socket tells) */
		(void)!write(v->peer_evfd, &one, sizeof(one));
	}
	return i;
}

void rf_chan_flush(struct rf_queue *q)
{
	uint32_t n;

	if (!q->ntx)
		return;
	n = ring_write(&q->chan, q->tx, q->ntx);
	if (n < q->ntx)
		q->w->side->chan_broken(q, q->tx + n, q->ntx - n);
	q->ntx = 0;
}

struct rf_chan_rec *rf_chan_next(struct rf_queue *q)
{
	struct rf_chan_rec *r;

	if (q->ntx == RF_CHAN_BATCH)
		rf_chan_flush(q);
	r = &q->tx[q->ntx++];
	memset(r, 0, sizeof(*r));
	return r;
}

int rf_chan_send_file(struct rf_queue *q, const struct rf_chan_rec *r, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = { .iov_base = (void *)r, .iov_len = sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t s;

	rf_chan_flush(q);
	memset(&c, 0, sizeof(c));
	m.msg_control = c.buf;
	m.msg_controllen = sizeof(c.buf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		s = sendmsg(q->chan_fd, &m, MSG_NOSIGNAL);
	while (s < 0 && errno == EINTR);
	if (s >= 0)
		return 0;
	if (errno == EBADF)
		return -EBADF;
	q->w->side->chan_broken(q, r, 1);
	return -EPIPE;
}
