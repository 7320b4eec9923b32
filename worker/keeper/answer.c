// SPDX-License-Identifier: MIT
/*
 * What the plugin host says to a keeper queue thread, on the queue's
 * channel (channel.h): each record checked against the channel's table
 * and against the keeper's own record of the slot it names before any
 * of it reaches the kernel; and, with host_restart, what a host's death
 * means for the requests it held, and the next host taking the channel
 * over.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

/* The host's channel: one RECVMSG posted at a time, with room for one
 * file (MSG_TRUNC: a message longer than the buffer shows as such). */
void rf_queue_post_chan_recv(struct rf_queue *q)
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

/*
 * The channel failed, or says the host's last word is in. A dead host's
 * end of it was shut down (rf_queue_host_notice): what it held is
 * settled now. Anything else is a host that no longer speaks to this
 * queue, which is ended (plugin_host.c).
 */
static void host_failed(struct rf_queue *q, const char *why)
{
	if (q->host_draining) {
		q->host_draining = false;
		rf_queue_host_gone(q);
		return;
	}
	rf_host_down(q, why);
}

/* The file a message carried, or -1 (read from the control buffer as
 * the kernel left it: zeroed before each receive). The buffer has room
 * for one header and two descriptors, and the kernel installs only the
 * descriptors that fit (closing the rest): anything but exactly one file
 * is closed, every file of it, for the keeper holds nothing it did not
 * ask for. */
static int chan_file(struct rf_queue *q)
{
	const struct cmsghdr *cm = (const void *)q->rx_cmsg.buf;
	int fds[(sizeof(q->rx_cmsg.buf) - CMSG_LEN(0)) / sizeof(int)];
	size_t len = cm->cmsg_len, n, i;

	if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || len < CMSG_LEN(0))
		return -1;
	if (len > sizeof(q->rx_cmsg.buf))
		len = sizeof(q->rx_cmsg.buf);
	n = (len - CMSG_LEN(0)) / sizeof(int);
	memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
	if (n == 1)
		return fds[0];
	for (i = 0; i < n; i++)
		close(fds[i]);
	return -1;
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
		rf_backing_take(q, req, fd);
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
	rf_queue_complete(req);
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
	if (!rf_queue_park_reader(req))
		rf_queue_post_read(req);
}

/* A counter for the pool's statistics, the keeper's own or a COUNT of
 * its host's (on queue 0, rf_chan_check says). */
void rf_keeper_count(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len, int32_t error)
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

/*
 * A count the host reports (the restore's, run in the host), held to what
 * it can be: one restore per host, of at most the tables' records; a
 * record the table had no room for, one at a time. Anything else is not
 * counted.
 */
static void host_count(struct rf_queue *q, const struct rf_chan_rec *r)
{
	struct rf_worker *w = q->w;
	uint32_t nodes = w->cfg.restore_nodes, files = rf_restore_files(nodes);
	uint32_t seq = atomic_load(&w->host_seq);

	if (r->idx == RF_CNT_RESTORED) {
		if (w->restored_seq == seq || r->a > nodes || r->len > files || r->error < 0 ||
		    (uint32_t)r->error > nodes + files)
			return;
		w->restored_seq = seq;
	} else if (r->idx != RF_CNT_RESTORE_FULL || r->a != 1) {
		return;
	}
	rf_keeper_count(w, r->idx, r->a, r->len, r->error);
}

/* The host took none of @n records: a message is taken whole or not at
 * all, so what is in it never reached a host (host_restart: the next
 * gets it), and this one is ended (unless the keeper is stopping). */
void rf_queue_host_broke(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	if (atomic_load(&q->w->stop))
		return;
	if (q->w->cfg.host_restart)
		rf_queue_host_unsent(q, r, n);
	host_failed(q, "does not take its requests");
}

/* A record from the host, on @via (with the file the message carried
 * in @fd, or -1): checked against the table and acted on; false if it
 * ended the host. */
static bool host_record(struct rf_queue *q, const struct rf_chan_rec *r, enum rf_chan_via via,
			int *fd)
{
	struct rf_worker *w = q->w;
	uint64_t ping;
	char why[80];

	if (rf_chan_check(RF_CHAN_HOST, q->chan_phase, via, q->qid, r, why, sizeof(why)) < 0) {
		host_failed(q, why);
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
		/* both of this queue's threads are alive: the broker reads
		 * the PING it sent last, written by the keeper, if this is
		 * the answer to it (not a value the host made up: an answer
		 * to an older PING leaves the heartbeat where it is) */
		ping = atomic_load(&w->ping_seq);
		if (r->a == ping)
			__atomic_store_n(&q->stats->heartbeat, ping, __ATOMIC_RELAXED);
		break;
	case RF_CH_COUNT:
		host_count(q, r);
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
			host_failed(q, "broke its ring");
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
		host_failed(q, res == 0 ? "closed its channel" : "broke its channel");
		return;
	}
	fd = chan_file(q);
	if ((size_t)res > sizeof(q->rx) || res % (int)sizeof(q->rx[0])) {
		if (fd >= 0)
			close(fd);
		host_failed(q, "sent a message that is no whole number of records");
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
	rf_queue_post_chan_recv(q);
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
			if (!rf_queue_park_reader(req))
				rf_queue_post_read(req);
		}
	}
}

/*
 * host_restart: the reaper found this queue's host dead (plugin_host.c). What it
 * answered on its ring is taken; new requests wait from now on; what it
 * never took from the keeper's ring is read back from the keeper's copy
 * and waits too. Then its end of the socket, which the keeper kept, is
 * shut down: the keeper's RECVMSG gets the files the host passed before
 * it died, then the end of the channel, and only then is the rest it
 * held settled (host_failed). The dead host's READ, still posted on its
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
		host_failed(q, "is dead");
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
			if (!rf_queue_park_reader(req))
				rf_queue_post_read(req);
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
		rf_queue_complete(req);
	}
}

/* The main thread started the next host (rf_host_respawn): its channel
 * is in this queue's descriptor already (dup2); the ring's file slot
 * takes it, and what waited goes to it. */
void rf_queue_host_renew(struct rf_queue *q)
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
	rf_queue_post_chan_recv(q);
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (!req->host_park)
			continue;
		req->host_park = false;
		/* the watchdog watches it as the new generation's */
		__atomic_store_n(&req->ss->generation, gen, __ATOMIC_RELAXED);
		rf_queue_to_host(req);
	}
}
