// SPDX-License-Identifier: MIT
/*
 * The plugin host: the worker's second process.
 *
 * The worker is two processes of the tenant's uid, in one sandbox. The
 * keeper (the process the broker started, PID 1 of the worker's PID
 * namespace) holds the FUSE rings and writes every record the kernel, the
 * broker and a successor read: reply headers, the slot records, the seen
 * table, the statistics. The host, its child, runs the plugin: it holds
 * no FUSE ring and no /dev/fuse, and maps the pool's control area and
 * every slot's header area read-only, from a read-only descriptor it
 * closes before the plugin is loaded, so no mprotect() can make them
 * writable again; the mappings that could be stretched over them (mremap)
 * are refused by its seccomp deny list. What the plugin writes are
 * payloads, and the records it sends the keeper (channel.h), which the
 * keeper checks against its own records before any of it reaches the
 * kernel. So a plugin cannot submit a FUSE ring command, write a reply
 * header, mark a request answered, or fake what the watchdog reads.
 *
 * File data still moves by fixed-buffer ops: the host has a ring of its
 * own per queue, made by the keeper while still root (its pinned payload
 * buffers charge no one's RLIMIT_MEMLOCK), with the queue's payload
 * buffers registered and restrictions that allow READ (the channel and
 * the mailbox), READ_FIXED and WRITE_FIXED, no SQE flag and no register
 * call; the host enables it before its deny list, which refuses every
 * register call. A zero-copied request's data is in the client's pages, which only
 * the FUSE ring reaches: the host passes the keeper the file (SCM_RIGHTS)
 * and the keeper moves the bytes.
 *
 * Each host queue thread serves the requests of its keeper queue thread:
 * it takes what the keeper wrote on the queue's ring (channel.h), calls
 * the plugin for each request, and writes the answers made meanwhile on
 * the ring back; it sleeps in its ring's io_uring_enter only after it
 * said so on the ring, and the keeper wakes it through its eventfd only
 * then. A reply made on another thread goes through the queue's mailbox,
 * as in the keeper.
 *
 * The keeper's code is in worker/keeper/ (its end of the host in
 * plugin_host.c), the host's here; what both run is in worker/ (the
 * channel between them, the mailbox, the sandbox) and worker/plugin/
 * (the plugin's ABI: dispatch, replies, the restore).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "host.h"
#include "report.h"
#include "plugin/restore.h"
#include "ring_tag.h"
#include "title.h"
#include "uring_uapi.h"

static __thread struct rf_queue *host_queue;

/* ---- before the plugin ---- */

static int map_ro(struct rf_worker *w, uint64_t off, uint64_t len)
{
	void *at = (char *)w->pool + off;
	void *p = mmap(at, len, PROT_READ, MAP_SHARED | MAP_FIXED, w->pool_ro_fd, (off_t)off);

	return p == at ? 0 : -errno;
}

/* The control area and every header area, read-only from here on. */
static int remap_records(struct rf_worker *w)
{
	uint32_t i;
	int r;

	if (w->geom.qpool_size)
		return map_ro(w, 0, w->geom.ctl_size + (uint64_t)w->geom.nslots * RF_SLOT_HDR_SIZE);
	r = map_ro(w, 0, w->geom.ctl_size);
	for (i = 0; !r && i < w->geom.nslots; i++)
		r = map_ro(w, rf_pool_slot_offset(&w->geom, i), RF_SLOT_HDR_SIZE);
	return r;
}

/*
 * An SQE with IOSQE_IO_DRAIN that the ring's restrictions refuse still
 * puts the ring in drain mode, where every later SQE waits for all
 * earlier ones: behind the channel's READ, which waits for the keeper,
 * the ring is wedged (a probe on 6.18). One SQE with
 * IOSQE_CQE_SKIP_SUCCESS turns draining off for good, refused or not;
 * a drain is then refused with EOPNOTSUPP and changes nothing
 * (docs/kernel-facts.md; t_hostile's ring_drain).
 */
static int disarm_drain(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->hring);
	struct io_uring_cqe *cqe;
	int r;

	io_uring_prep_read(sqe, q->hevfd, &q->hev_buf, sizeof(q->hev_buf), 0);
	sqe->flags = IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = 0;
	r = io_uring_submit_and_wait(&q->hring, 1);
	if (r < 0)
		return r;
	r = io_uring_peek_cqe(&q->hring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(&q->hring, cqe);
	/* refused by the restrictions, as it must be (no SQE flag allowed) */
	return r == -EACCES ? 0 : -EPROTO;
}

/*
 * The ring a dead host used, for the next (host_restart): what the dead
 * one queued and never submitted is dropped (the submission queue's tail
 * set back to the kernel's head), and every completion it left, the
 * kernel's overflow list included. Its requests in flight were cancelled
 * as it exited, or end later with ECANCELED (a read waiting on a file it
 * had): those completions carry its generation in user_data (w->hgen)
 * and are dropped as they come. IO_DRAIN stays off (the ring's, for
 * good: disarm_drain).
 */
static void reset_ring(struct io_uring *ring)
{
	unsigned int head = io_uring_smp_load_acquire(ring->sq.khead), i;

	io_uring_smp_store_release(ring->sq.ktail, head);
	ring->sq.sqe_head = head;
	ring->sq.sqe_tail = head;
	io_uring_get_events(ring);
	for (i = 0; i < 64 && io_uring_cq_ready(ring); i++) {
		io_uring_cq_advance(ring, io_uring_cq_ready(ring));
		io_uring_get_events(ring);
	}
}

int rf_host_enter(struct rf_worker *w, bool again, char *why, size_t len)
{
	uint32_t q;
	int r;

	w->side = &rf_host_side;
	rf_title_set(w->side->name, w->cfg.name);
	w->hgen = (uint16_t)w->cfg.generation;
	for (q = 0; q < w->nqueues; q++) {
		struct rf_queue *qu = &w->queues[q];

		/* the keeper's ring: not even its mapping stays */
		io_uring_queue_exit(&qu->ring);
		qu->ring_fd = -1;
		close(qu->chan_fd);
		qu->chan_fd = qu->host_chan_fd;
		qu->host_chan_fd = -1;
		if (again) {
			/* (the dead host's: keep_only_host_fds closed it) */
			qu->hevfd = qu->hevfd_next;
			qu->hevfd_next = -1;
		}
		/* the keeper's eventfd stays: it wakes the keeper */
		r = rf_chan_attach(&qu->chan, RF_CHAN_HOST, qu->evfd, atomic_load(&w->host_seq));
		if (r < 0) {
			snprintf(why, len, "queue %u: the host's view of its rings", q);
			return r;
		}
		qu->ntx = 0;
		qu->mbox = NULL;
		/* enabled here, before the deny list, which then refuses
		 * every register call (and the ring's restrictions would);
		 * a dead host's ring is enabled already */
		r = again ? 0
			  : rf_io_uring_register(qu->hring_fd, IORING_REGISTER_ENABLE_RINGS, NULL,
						 0);
		if (!r)
			r = io_uring_queue_mmap(qu->hring_fd, &qu->hparams, &qu->hring);
		if (r < 0) {
			snprintf(why, len, "queue %u: enable and map the host's ring", q);
			return r;
		}
		rf_ring_fill_sq_array(&qu->hring);
		qu->hring.features = qu->hparams.features;
		if (again) {
			reset_ring(&qu->hring);
			continue;
		}
		r = disarm_drain(qu);
		if (r < 0) {
			snprintf(why, len, "queue %u: keep IO_DRAIN off the host's ring", q);
			return r;
		}
	}
	r = remap_records(w);
	close(w->pool_ro_fd);
	w->pool_ro_fd = -1;
	if (r < 0) {
		snprintf(why, len, "map the pool's records read-only");
		return r;
	}
	return 0;
}

/* ---- serving ---- */

/* The answer's record; an open or create that names a backing file
 * (rf_req_backing) carries the file, which the keeper then serves. */
static void reply_rec(struct rf_req *req)
{
	struct rf_chan_rec *r, br;

	if (req->backing_fd >= 0 && !req->error) {
		br = (struct rf_chan_rec){
			.kind = RF_CH_REPLY,
			.idx = req->idx,
			.len = req->reply_len,
			.flags = RF_CHF_BACKING,
		};
		req->state = RQ_IDLE;
		if (rf_chan_send_file(req->q, &br, req->backing_fd) != -EBADF)
			return;
		req->state = RQ_PLUGIN; /* no file: the plain answer */
	}
	r = rf_chan_next(req->q);
	r->kind = RF_CH_REPLY;
	r->idx = req->idx;
	r->error = req->error;
	r->len = req->reply_len;
	r->flags = req->done_flags;
	r->moved = req->moved;
	req->state = RQ_IDLE;
}

/* A zero-copied READ or WRITE answered by descriptor: the keeper moves
 * its bytes, for only the FUSE ring reaches the client's pages. */
static void pass_file(struct rf_req *req)
{
	struct rf_chan_rec r = {
		.kind = RF_CH_REPLY,
		.idx = req->idx,
		.flags = req->fd_op == RF_FDOP_READ ? RF_CHF_FD_READ : RF_CHF_FD_WRITE,
		.len = req->len,
		.a = req->off,
	};

	req->state = RQ_IDLE;
	if (rf_chan_send_file(req->q, &r, req->fd) == -EBADF) {
		/* the plugin's descriptor was no file: the request fails */
		struct rf_chan_rec *e = rf_chan_next(req->q);

		e->kind = RF_CH_REPLY;
		e->idx = req->idx;
		e->error = EBADF;
	}
}

static void data_done(struct rf_req *req, int res);

static struct io_uring_sqe *host_sqe(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->hring);

	if (!sqe) {
		io_uring_submit(&q->hring);
		sqe = io_uring_get_sqe(&q->hring);
		if (!sqe)
			fatalx("host queue %u: submission queue full", q->qid);
	}
	return sqe;
}

/* The next piece of a request's file data, between the plugin's file and
 * the payload: by a fixed-buffer op on this ring, or in line on memory
 * file systems (keeper/data.c says why). */
static void post_data(struct rf_req *req)
{
	struct io_uring_sqe *sqe;
	char *buf = req->payload + req->done;
	uint32_t n = req->len - req->done;
	uint64_t off = req->off + req->done;

	if (req->inline_io) {
		ssize_t r = req->fd_op == RF_FDOP_READ ? pread(req->fd, buf, n, (off_t)off)
						       : pwrite(req->fd, buf, n, (off_t)off);

		data_done(req, r < 0 ? -errno : (int)r);
		return;
	}
	sqe = host_sqe(req->q);
	if (req->fd_op == RF_FDOP_READ)
		io_uring_prep_read_fixed(sqe, req->fd, buf, n, off, rf_host_buf(req));
	else
		io_uring_prep_write_fixed(sqe, req->fd, buf, n, off, rf_host_buf(req));
	rf_sqe_tag_gen(sqe, req, RF_TAG_DATA, req->q->w->hgen);
	req->state = RQ_DATA;
}

static void data_done(struct rf_req *req, int res)
{
	if (res > 0) {
		req->moved += (uint32_t)res;
		req->done += (uint32_t)res;
		if (req->done < req->len) {
			post_data(req);
			return;
		}
	} else if (res < 0 && req->done == 0) {
		req->error = -res < 512 ? -res : EIO;
	}
	rf_reply_moved(req);
	reply_rec(req);
}

static void data_start(struct rf_req *req)
{
	struct rf_worker *w = req->q->w;

	req->done = 0;
	req->moved = 0;
	if (req->len == 0) {
		data_done(req, 0);
		return;
	}
	req->inline_io = (w->cfg.bench & (RF_BENCH_PLAIN_IO | RF_BENCH_PRIVATE_PAYLOAD)) ||
			 w->memory_source;
	req->done_flags = (w->cfg.bench & RF_BENCH_PLAIN_IO) ? 0
			  : req->inline_io		     ? RF_CHF_INLINE
							     : RF_CHF_FIXED;
	post_data(req);
}

/* On the request's own host thread: the plugin's answer goes out. */
static void host_complete(struct rf_req *req)
{
	if (req->fd_op != RF_FDOP_NONE && !req->error) {
		if (req->zc)
			pass_file(req);
		else
			data_start(req);
		return;
	}
	req->fd_op = RF_FDOP_NONE;
	reply_rec(req);
}

static void host_finish(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	if (host_queue == q) {
		host_complete(req);
		return;
	}
	rf_mbox_put(req, q->hevfd);
}

/* the keeper is gone: so are we (it was PID 1) */
static void host_chan_broken(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	(void)q;
	(void)r;
	(void)n;
	_exit(1);
}

/* the statistics are read-only here: the keeper counts, told from any
 * host thread on queue 0's channel (a message is taken whole: no lock,
 * and not queue 0's batch, which is its thread's) */
static void host_count(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len, int32_t error)
{
	struct rf_chan_rec r = {
		.kind = RF_CH_COUNT, .idx = which, .a = a, .len = len, .error = error
	};

	(void)!rf_chan_send(w->queues[0].chan_fd, &r, 1, 0);
}

const struct rf_side rf_host_side = {
	.name = "host",
	.finish = host_finish,
	.chan_broken = host_chan_broken,
	.count = host_count,
};

/* A request from the keeper: set the slot up as the keeper found it. */
static void serve_req(struct rf_queue *q, struct rf_req *req, const struct rf_chan_rec *r)
{
	req->in = r->in;
	req->zc = (r->flags & RF_CHF_ZC) != 0;
	req->done_flags = 0;
	req->moved = 0;
	if (req->classic) {
		const char *buf = req->payload - RF_CLASSIC_PREFIX;

		req->arg0 = buf + sizeof(req->in);
		req->rest = req->arg0 + rf_op_arg0_size(req->in.opcode);
	} else {
		const struct fuse_uring_req_header *h = (const void *)req->hdr;

		if (q->qpool_size)
			req->payload = q->qpool + r->a;
		req->arg0 = h->op_in;
		req->rest = req->payload;
		if (req->zc) {
			if (req->in.opcode == FUSE_READ)
				req->payload = NULL;
			req->rest = NULL;
		}
	}
	req->rest_len = r->len;
	rf_dispatch(req);
}

static void serve_noreply(struct rf_queue *q, struct rf_req *req, const struct rf_chan_rec *r)
{
	const char *buf = req->payload - RF_CLASSIC_PREFIX;
	struct rf_chan_rec *d;

	rf_dispatch_noreply(q->w, &r->in, buf + sizeof(r->in), r->len);
	d = rf_chan_next(q);
	d->kind = RF_CH_DONE;
	d->idx = req->idx;
}

static void post_chan_read(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = host_sqe(q);

	io_uring_prep_read(sqe, q->chan_fd, q->rx, sizeof(q->rx), 0);
	rf_sqe_tag_gen(sqe, q->rx, RF_TAG_WAKE, q->w->hgen);
}

static void post_wake_read(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = host_sqe(q);

	io_uring_prep_read(sqe, q->hevfd, &q->hev_buf, sizeof(q->hev_buf), 0);
	rf_sqe_tag_gen(sqe, q, RF_TAG_WAKE, q->w->hgen);
}

/* A record from the keeper, on @via: false once it says STOP. */
static bool keeper_record(struct rf_queue *q, const struct rf_chan_rec *r, enum rf_chan_via via)
{
	struct rf_req *req = r->idx < q->nreqs ? &q->reqs[r->idx] : NULL;
	struct rf_chan_rec *p;
	char why[80];

	if (rf_chan_check(RF_CHAN_KEEPER, RF_CHP_SERVE, via, q->qid, r, why, sizeof(why)) < 0) {
		log_warnx("host queue %u: the keeper %s; ignored", q->qid, why);
		return true;
	}
	switch (r->kind) {
	case RF_CH_REQ:
		if (req)
			serve_req(q, req, r);
		break;
	case RF_CH_NOREPLY:
		if (req)
			serve_noreply(q, req, r);
		break;
	case RF_CH_PING:
		/* this thread is alive: the keeper tells the broker */
		p = rf_chan_next(q);
		p->kind = RF_CH_PONG;
		p->a = r->a;
		break;
	case RF_CH_STOP:
		return false;
	default:
		break;
	}
	return true;
}

/* What the keeper wrote on the ring: whether there was any. */
static bool host_take(struct rf_queue *q)
{
	struct rf_chan_rec r[RF_CHAN_BATCH];
	int i, n = rf_chan_take(&q->chan, r, RF_CHAN_BATCH);

	if (n < 0)
		fatalx("host queue %u: the keeper's ring is broken", q->qid);
	for (i = 0; i < n; i++)
		keeper_record(q, &r[i], RF_CHV_RING);
	return n > 0;
}

/* A socket message from the keeper; false once it says STOP (or is
 * gone). */
static bool chan_done(struct rf_queue *q, int res)
{
	uint32_t i, n;

	if (res <= 0 || res % (int)sizeof(struct rf_chan_rec))
		return false; /* the keeper is gone, or speaks nonsense */
	n = (uint32_t)res / sizeof(struct rf_chan_rec);
	for (i = 0; i < n; i++) {
		if (!keeper_record(q, &q->rx[i], RF_CHV_SOCKET))
			return false;
	}
	post_chan_read(q);
	return true;
}

static void drain_mbox(struct rf_queue *q)
{
	struct rf_req *list, *next;

	for (list = rf_mbox_take(q); list; list = next) {
		next = list->mbox_next;
		host_complete(list);
	}
	post_wake_read(q);
}

static void *host_queue_main(void *arg)
{
	struct rf_chan_rec ready = { .kind = RF_CH_READY };
	struct rf_queue *q = arg;
	bool on = true;
	int r;

	host_queue = q;
	q->tid = (pid_t)syscall(SYS_gettid);
	/* next to its keeper thread, on the CPU the queue's requests come
	 * from (polling, on the next one) */
	if (q->w->cfg.bench & RF_BENCH_SPIN)
		rf_queue_pin_to(q, (q->qid + 1) % q->w->nqueues); /* a queue per CPU */
	else
		rf_queue_pin(q);
	/* the channel's first record: this thread serves (channel.h) */
	if (rf_chan_send(q->chan_fd, &ready, 1, 0) < 0)
		_exit(1);
	post_chan_read(q);
	post_wake_read(q);
	while (on) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		while (host_take(q))
			;
		rf_chan_flush(q);
		if ((q->w->cfg.bench & RF_BENCH_SPIN) && !io_uring_cq_ready(&q->hring) &&
		    rf_chan_spin(&q->chan, &q->hring, RF_SPIN_NS)) {
			io_uring_submit(&q->hring);
			continue;
		}
		/* asleep only once the keeper can know it */
		if (!io_uring_cq_ready(&q->hring) && !rf_chan_sleep(&q->chan)) {
			io_uring_submit(&q->hring);
			continue;
		}
		r = io_uring_submit_and_wait(&q->hring, 1);
		rf_chan_awake(&q->chan);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			fatalx("host queue %u: io_uring_enter: %s", q->qid, strerror(-r));
		io_uring_for_each_cqe (&q->hring, head, cqe) {
			void *p = rf_cqe_ptr(cqe);

			n++;
			if (rf_cqe_gen(cqe) != q->w->hgen)
				continue; /* a dead host's, on the same ring */
			switch (rf_cqe_tag(cqe)) {
			case RF_TAG_WAKE:
				if (p != (void *)q->rx)
					drain_mbox(q);
				else if (!chan_done(q, cqe->res))
					on = false;
				break;
			case RF_TAG_DATA:
				data_done(p, cqe->res);
				break;
			default:
				/* not ours: the plugin submitted on this ring */
				log_warnx("host queue %u: unexpected completion (user_data 0x%llx, "
					  "res %d)",
					  q->qid, (unsigned long long)cqe->user_data, cqe->res);
				break;
			}
		}
		io_uring_cq_advance(&q->hring, n);
	}
	rf_chan_flush(q);
	return NULL;
}

static int host_serve(struct rf_worker *w)
{
	uint32_t q;
	int r;

	/* the plugin is initialised: each queue thread says READY */
	for (q = 0; q < w->nqueues; q++) {
		struct rf_queue *qu = &w->queues[q];

		pthread_mutex_init(&qu->mbox_lock, NULL);
		r = pthread_create(&qu->thread, NULL, host_queue_main, qu);
		if (r)
			return -r;
	}
	for (q = 0; q < w->nqueues; q++)
		pthread_join(w->queues[q].thread, NULL);
	return 0;
}

void rf_host_run(struct rf_worker *w)
{
	int err = host_serve(w);

	if (err < 0)
		rf_report_fail(-err, "start the plugin host's threads");
	if (w->plugin->destroy)
		w->plugin->destroy(w->userdata);
	rf_restore_stop(w);
}
