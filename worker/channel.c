// SPDX-License-Identifier: MIT
/*
 * The channel between the keeper and its plugin host (channel.h): what
 * each side may send in which phase, and a queue's outgoing batch, for
 * both processes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "channel.h"
#include "worker.h"

#define INIT (1u << RF_CHP_INIT)
#define SERVE (1u << RF_CHP_SERVE)

static const struct {
	const char *name;
	uint8_t from; /* enum rf_chan_side */
	uint8_t phases; /* in which it may be sent */
	uint8_t queue0; /* on queue 0's channel only */
	uint8_t next; /* the phase it moves the channel to, or 0 */
} kinds[RF_CH_KINDS] = {
	[RF_CH_REQ] = { "REQ", RF_CHAN_KEEPER, SERVE, 0, 0 },
	[RF_CH_NOREPLY] = { "NOREPLY", RF_CHAN_KEEPER, SERVE, 0, 0 },
	[RF_CH_PING] = { "PING", RF_CHAN_KEEPER, SERVE, 0, 0 },
	[RF_CH_STOP] = { "STOP", RF_CHAN_KEEPER, SERVE, 0, 0 },
	[RF_CH_REPLY] = { "REPLY", RF_CHAN_HOST, SERVE, 0, 0 },
	[RF_CH_DONE] = { "DONE", RF_CHAN_HOST, SERVE, 0, 0 },
	[RF_CH_PONG] = { "PONG", RF_CHAN_HOST, SERVE, 0, 0 },
	[RF_CH_COUNT] = { "COUNT", RF_CHAN_HOST, INIT | SERVE, 1, 0 },
	[RF_CH_READY] = { "READY", RF_CHAN_HOST, INIT, 0, RF_CHP_SERVE },
};

const char *rf_chan_kind_name(uint8_t kind)
{
	return kind < RF_CH_KINDS && kinds[kind].name ? kinds[kind].name : "unknown";
}

int rf_chan_check(enum rf_chan_side from, enum rf_chan_phase phase, uint32_t qid,
		  const struct rf_chan_rec *r, char *why, size_t len)
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

static void send_batch(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	ssize_t s;

	do
		s = rf_chan_send(q->chan_fd, r, n, 0);
	while (s < 0 && errno == EINTR);
	if (s < 0)
		q->w->side->chan_broken(q, r, n);
}

void rf_chan_flush(struct rf_queue *q)
{
	if (q->ntx) {
		send_batch(q, q->tx, q->ntx);
		q->ntx = 0;
	}
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
