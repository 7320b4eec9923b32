// SPDX-License-Identifier: MIT
/*
 * The keeper's queue threads: one per FUSE queue, each the single issuer
 * of its own ring. A thread enables its ring, adds its queue and pool
 * and drops its privileges while the process is still root; then, once
 * the plugin host serves, finishes what a dead predecessor left
 * (rescue.c), registers its entries and loops: submit and wait, then
 * hand each completion to what it is for: a request arriving
 * (request.c), file data moved (data.c, backing.c), the host's channel
 * (answer.c), a wake-up (the mailbox, a new host).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"
#include "keeper_i.h"
#include "uring_uapi.h"

static __thread struct rf_queue *cur_queue;

static void post_wake_read(struct rf_queue *q)
{
	struct io_uring_sqe *sqe = rf_queue_sqe(q);

	io_uring_prep_read(sqe, RF_FILE_SLOT_WAKE, &q->ev_buf, sizeof(q->ev_buf), 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	rf_sqe_tag(sqe, q, RF_TAG_WAKE);
}

/* A reply made in this process (rf_side.finish): the keeper's own (an
 * error it answers itself, the broker's kick), or the plugin's where there
 * is no host (the EIO responder, make bench's one-process). */
static void keeper_finish(struct rf_req *req)
{
	struct rf_queue *q = req->q;

	if (cur_queue == q) {
		rf_queue_complete(req);
		return;
	}
	/* another thread replied: hand the request to its queue's thread */
	rf_mbox_put(req, q->evfd);
}

static void drain_mbox(struct rf_queue *q)
{
	struct rf_req *list, *next;

	for (list = rf_mbox_take(q); list; list = next) {
		next = list->mbox_next;
		rf_queue_complete(list);
	}
}

/* The wake-up eventfd fired: replies from other threads, a PING, or a
 * new plugin host. */
static void wake_done(struct rf_queue *q)
{
	if (q->w->cfg.host_restart) {
		rf_queue_host_notice(q);
		if (atomic_load(&q->chan_renew))
			rf_queue_host_renew(q);
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
		if (!rf_adopt_done(req, cqe->res))
			rf_queue_cmd_done(req, cqe->res);
		return;
	case RF_TAG_DATA:
		rf_data_done(req, cqe->res);
		return;
	case RF_TAG_CREAD:
		rf_queue_cread_done(req, cqe->res);
		return;
	case RF_TAG_CWRITE:
		rf_queue_cwrite_done(req, cqe->res);
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

/* Submit and wait for a completion; with files held in data slots and no
 * data moving, wait at most RF_RELEASE_MS, then let them go (data.c); with
 * the /dev/fuse reader resting, wait no longer than its rest. */
static int submit_and_wait(struct rf_queue *q)
{
	uint64_t rest = rf_queue_unpark_reader(q), wait = 0;
	bool release = q->files_held && !rf_data_in_flight(q);
	/* the host serves, and reads the queue's rings */
	bool ring = q->chan_phase == RF_CHP_SERVE && q->chan.copy && !q->host_down;
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
	if ((q->w->cfg.bench & RF_BENCH_SPIN) && ring && !io_uring_cq_ready(&q->ring)) {
		io_uring_submit(&q->ring);
		if (rf_chan_spin(&q->chan, &q->ring, RF_SPIN_NS))
			return io_uring_get_events(&q->ring);
	}
	/* asleep only once the host can know it: what it answered meanwhile
	 * is taken first */
	if (ring && !rf_chan_sleep(&q->chan))
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
		rf_queue_post_chan_recv(q);
	if (w->cfg.adopt)
		rf_rescue(q, rf_queue_reap);
	for (i = 0; i < q->nreqs; i++) {
		struct rf_req *req = &q->reqs[i];

		if (req->classic)
			rf_queue_post_read(req);
		else if (req->state != RQ_IDLE)
			continue; /* an inherited entry's, serving already */
		else if (w->cfg.adopt &&
			 __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_NONE)
			rf_adopt(req);
		else
			rf_register_or_reserve(req);
	}
	q->live = q->nreqs;
	r = rf_queue_submit(q);
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

const struct rf_side rf_keeper_side = {
	.name = "keeper",
	.finish = keeper_finish,
	.chan_broken = rf_queue_host_broke,
	.count = rf_keeper_count,
};
