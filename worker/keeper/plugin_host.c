// SPDX-License-Identifier: MIT
/*
 * The keeper's end of its plugin host (host/host.c says what the host
 * is): the host's parts, made before the fork while the keeper is still
 * root (a channel and a ring of its own per queue, the ring with the
 * queue's payloads registered, whose pinned pages charge no one's
 * RLIMIT_MEMLOCK); then the host waited for, told PING and STOP, ended
 * when it no longer speaks to a queue thread, and reaped. With
 * host_restart a thread of its own reaps each host and the main thread
 * starts the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

/* a program's output line, at most, in the log (the broker's lines are
 * 1023 bytes) */
#define RF_OUTPUT_LINE 900

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* ---- before the fork, as root ---- */

static int host_ring_create(struct rf_queue *q, const struct rf_worker *w)
{
	static const uint8_t ops[] = { IORING_OP_READ, IORING_OP_READ_FIXED,
				       IORING_OP_WRITE_FIXED };
	struct io_uring_restriction res[4];
	struct iovec *iov;
	uint32_t i, n = 0;
	int fd, r;

	memset(&q->hparams, 0, sizeof(q->hparams));
	/* enabled by the host's main thread, used by its queue thread: no
	 * SINGLE_ISSUER */
	q->hparams.flags = IORING_SETUP_R_DISABLED | IORING_SETUP_COOP_TASKRUN |
			   IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_CQSIZE;
	q->hparams.cq_entries = pow2_at_least(2 * (q->nreqs + 4));
	fd = rf_io_uring_setup(pow2_at_least(q->nreqs + 4), &q->hparams);
	if (fd < 0)
		return fd;
	iov = calloc(q->nreqs + 2, sizeof(*iov));
	if (!iov) {
		close(fd);
		return -ENOMEM;
	}
	if (q->qpool_size) {
		iov[n].iov_base = q->qpool;
		iov[n++].iov_len = q->qpool_size;
		for (i = 0; i < q->nreqs; i++)
			if (q->reqs[i].classic) {
				iov[n].iov_base = q->reqs[i].payload;
				iov[n++].iov_len = q->reqs[i].payload_cap;
			}
	} else {
		for (i = 0; i < q->nreqs; i++) {
			iov[n].iov_base = q->reqs[i].payload;
			iov[n++].iov_len = q->reqs[i].payload_cap;
		}
	}
	/* a private payload (make bench's unsafe mode) moves by pread/pwrite */
	r = (w->cfg.bench & RF_BENCH_PRIVATE_PAYLOAD)
		    ? 0
		    : rf_io_uring_register(fd, IORING_REGISTER_BUFFERS, iov, n);
	free(iov);
	memset(res, 0, sizeof(res));
	for (i = 0; i < sizeof(ops); i++) {
		res[i].opcode = IORING_RESTRICTION_SQE_OP;
		res[i].sqe_op = ops[i];
	}
	res[i].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[i++].sqe_flags = 0;
	if (!r)
		r = rf_io_uring_register(fd, IORING_REGISTER_RESTRICTIONS, res, i);
	if (r < 0) {
		close(fd);
		return r;
	}
	q->hring_fd = fd;
	return 0;
}

int rf_host_prepare(struct rf_worker *w, char *why, size_t len)
{
	int sv[2], r;
	uint32_t q;

	if (w->cfg.program) {
		if (pipe2(sv, O_CLOEXEC) < 0) {
			snprintf(why, len, "the program's output");
			return -errno;
		}
		w->out_rd = sv[0];
		w->out_wr = sv[1];
	}
	if (w->cfg.program && (w->cfg.bench & RF_UNSAFE_LEARN_SECCOMP)) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
			snprintf(why, len, "the learning program's channel");
			return -errno;
		}
		w->learn_rd = sv[0];
		w->learn_wr = sv[1];
	}
	for (q = 0; q < w->nqueues; q++) {
		struct rf_queue *qu = &w->queues[q];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
			snprintf(why, len, "queue %u: the host's channel", q);
			return -errno;
		}
		qu->chan_fd = sv[0];
		qu->chan_phase = RF_CHP_INIT;
		qu->host_chan_fd = sv[1];
		/* the rings, for every host; the first's wake-up eventfd
		 * (the keeper makes and keeps each host's) */
		r = rf_chan_rings_new(&qu->chan, qu->nreqs);
		qu->hevfd = r < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (!r && qu->hevfd < 0)
			r = -errno;
		if (r < 0) {
			snprintf(why, len, "queue %u: the host's rings and wake-up eventfd", q);
			return r;
		}
		r = host_ring_create(qu, w);
		if (r < 0) {
			snprintf(why, len, "queue %u: the host's ring", q);
			return r;
		}
	}
	return 0;
}

void rf_host_forked_keeper(struct rf_worker *w)
{
	uint32_t q;

	/* the program's output and learning channel: the next host's too
	 * (host_restart) */
	if (w->out_wr >= 0 && !w->cfg.host_restart) {
		close(w->out_wr);
		w->out_wr = -1;
	}
	if (w->learn_wr >= 0 && !w->cfg.host_restart) {
		close(w->learn_wr);
		w->learn_wr = -1;
	}

	for (q = 0; q < w->nqueues; q++) {
		if (rf_chan_attach(&w->queues[q].chan, RF_CHAN_KEEPER, w->queues[q].hevfd, 1) < 0)
			fatalx("queue %u: the copy of the host's ring", q);
		/* host_restart: the host's end, kept (rf_queue_host_notice) */
		if (w->cfg.host_restart)
			w->queues[q].host_end = w->queues[q].host_chan_fd;
		else
			close(w->queues[q].host_chan_fd);
		w->queues[q].host_chan_fd = -1;
		/* the next host gets the same ring (host_restart): a new one
		 * would need root, for its pinned buffers */
		if (w->cfg.host_restart)
			continue;
		close(w->queues[q].hring_fd);
		w->queues[q].hring_fd = -1;
	}
}

/* ---- after it ---- */

/* A program's output: each line logged, as long as a log line may be
 * (longer ones in pieces). Read as it comes, by a thread of its own, and
 * what is left of a dead host's, by whoever reports the death, before it
 * does: the keeper may exit next.
 *
 * A program may write RF_OUTPUT_BURST lines at once and RF_OUTPUT_RATE a
 * second after that; the rest are read, counted and dropped here, so that
 * a program that floods its output neither fills the keeper's channel to
 * the broker (its heartbeats and reports wait behind every line) nor keeps
 * the broker busy dropping lines for it: its share stays below the
 * broker's own limit of the worker's lines. How many were dropped is
 * logged before the next line that passes, a second after the last
 * dropped one, and before a dead host's death is reported. */
#define RF_OUTPUT_BURST 200
#define RF_OUTPUT_RATE 50

static struct {
	pthread_mutex_t lock;
	char buf[4096];
	size_t have;
	struct log_rate rate;
	uint64_t dropped;
} out = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* under out.lock */
static void output_tell_dropped(void)
{
	if (!out.dropped)
		return;
	log_warnx("the program's output: %llu lines dropped (more than %d a second)",
		  (unsigned long long)out.dropped, RF_OUTPUT_RATE);
	out.dropped = 0;
}

/* under out.lock: one line, if the program's share allows it */
static void output_line(const char *line, size_t len)
{
	if (!log_rate_take(&out.rate, rf_now_ns() / 1000000, RF_OUTPUT_BURST, RF_OUTPUT_RATE)) {
		out.dropped++;
		return;
	}
	output_tell_dropped();
	log_info("program: %.*s", (int)len, line);
}

/* under out.lock; false at the end (no writer left) */
static bool output_take(int fd)
{
	size_t i, start;
	ssize_t n;

	for (;;) {
		n = read(fd, out.buf + out.have, sizeof(out.buf) - out.have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		out.have += (size_t)n;
		for (start = 0, i = 0; i < out.have; i++)
			if (out.buf[i] == '\n' || i - start == RF_OUTPUT_LINE) {
				output_line(out.buf + start, i - start);
				start = out.buf[i] == '\n' ? i + 1 : i;
			}
		memmove(out.buf, out.buf + start, out.have - start);
		out.have -= start;
	}
	if (n == 0 && out.have) {
		output_line(out.buf, out.have);
		out.have = 0;
	}
	return n != 0;
}

static void *read_output(void *arg)
{
	struct rf_worker *w = arg;
	struct pollfd p = { .fd = w->out_rd, .events = POLLIN };
	bool more = true;
	int r, wait;

	while (more) {
		/* a second of quiet after lines were dropped: say how many */
		pthread_mutex_lock(&out.lock);
		wait = out.dropped ? 1000 : -1;
		pthread_mutex_unlock(&out.lock);
		r = poll(&p, 1, wait);
		if (r < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&out.lock);
		if (r == 0)
			output_tell_dropped();
		else
			more = output_take(w->out_rd);
		pthread_mutex_unlock(&out.lock);
	}
	return NULL;
}

/* what a dead host wrote, all of it in the pipe by now */
static void output_drain(struct rf_worker *w)
{
	if (w->out_rd < 0)
		return;
	pthread_mutex_lock(&out.lock);
	output_take(w->out_rd);
	output_tell_dropped();
	pthread_mutex_unlock(&out.lock);
}

/* each host's listener, as it comes */
static void *take_learners(void *arg)
{
	struct rf_worker *w = arg;
	char byte;
	int fd, nfds, trunc;

	for (;;) {
		ssize_t n = rf_fdpass_recv(w->learn_rd, &byte, 1, &fd, 1, &nfds, &trunc);

		if (n == -EINTR)
			continue;
		if (n <= 0)
			return NULL;
		if (nfds == 1 && rf_learn_adopt(w, fd) < 0)
			log_warnx("learn: a plugin host's calls cannot be answered: it waits");
	}
}

void rf_host_learn_start(struct rf_worker *w)
{
	pthread_t t;

	if (w->learn_rd < 0)
		return;
	if (pthread_create(&t, NULL, take_learners, w) != 0)
		log_warnx("learn: no thread to answer the program's calls: it waits");
	else
		pthread_detach(t);
}

void rf_host_output_start(struct rf_worker *w)
{
	pthread_t t;

	if (w->out_rd < 0)
		return;
	if (fcntl(w->out_rd, F_SETFL, O_NONBLOCK) < 0 ||
	    pthread_create(&t, NULL, read_output, w) != 0)
		log_warnx("the program's output cannot be read: it is lost");
	else
		pthread_detach(t);
}

static atomic_int host_lost;

/* The keeper ends its host for breaking the rules (@why); its death is
 * then reported as the keeper's doing, not a kill from outside. */
static void end_host(struct rf_worker *w, const char *why)
{
	log_warnx("the plugin host %s; ending it", why);
	atomic_store(&w->ended_seq, atomic_load(&w->host_seq));
	kill(w->host_pid, SIGKILL);
}

/* Whether host @seq, ended with wait @status, was the keeper's kill. */
static bool ended_by_keeper(struct rf_worker *w, int status, unsigned int seq)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	       atomic_load(&w->ended_seq) == seq;
}

/* The host's end: ended first if it is alive but no longer speaking to
 * us; its wait status, or -1. */
static int host_reap(struct rf_worker *w, const char *why)
{
	siginfo_t si;
	int status;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)w->host_pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid == 0)
		end_host(w, why);
	while (waitpid(w->host_pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* The host's end as its wait @status says, as the keeper's own (PID 1 of
 * its namespace cannot die of a signal it sends itself): 128 + the signal
 * that killed it, or its exit status; RF_EXIT_HOST_ENDED where the keeper
 * ended it. */
static void __attribute__((noreturn)) exit_as_host(struct rf_worker *w, int status)
{
	output_drain(w);
	if (ended_by_keeper(w, status, atomic_load(&w->host_seq)))
		_exit(RF_EXIT_HOST_ENDED);
	if (WIFSIGNALED(status))
		_exit(RF_EXIT_HOST_SIGNAL + WTERMSIG(status));
	_exit(WIFEXITED(status) && WEXITSTATUS(status) < 128 ? WEXITSTATUS(status) : 1);
}

void rf_host_down(struct rf_queue *q, const char *why)
{
	struct rf_worker *w = q->w;

	if (!w->cfg.host_restart)
		rf_host_lost(w, why);
	if (q->host_down)
		return;
	/* alive, but no longer speaking to us (or dead, and the reaper
	 * will say so): nothing more goes to it, and its death is the
	 * reaper's to tell */
	q->host_down = true;
	if (atomic_load(&q->dead_seq) != q->host_seq)
		end_host(w, why);
}

/*
 * host_restart: the keeper learns of its host's death from the kernel,
 * not from the channel (the keeper holds the host's end too, so that it
 * can take back what the host never read, and the host's ring, which
 * outlives it, holds it open anyway). This thread reaps each host, tells
 * the broker, and each queue thread (rf_queue_host_notice). A first host
 * that dies before it served ends the keeper with its status, as without
 * host_restart.
 */
static void *host_reaper(void *arg)
{
	struct rf_worker *w = arg;

	for (;;) {
		struct rf_msg_host_died d = { 0 };
		unsigned int seq;
		pid_t pid;
		uint32_t q;

		pthread_mutex_lock(&w->start_lock);
		while (!w->reap_pid)
			pthread_cond_wait(&w->start_cond, &w->start_lock);
		pid = w->reap_pid;
		w->reap_pid = 0;
		seq = atomic_load(&w->host_seq);
		pthread_mutex_unlock(&w->start_lock);
		while (waitpid(pid, &d.status, 0) < 0) {
			if (errno == EINTR)
				continue;
			if (atomic_load(&w->stop))
				return NULL; /* reaped by the stop (rf_host_reap) */
			fatal("wait for the plugin host %d", (int)pid);
		}
		if (atomic_load(&w->stop))
			return NULL;
		if (!w->host_ready)
			exit_as_host(w, d.status);
		output_drain(w);
		d.by_keeper = ended_by_keeper(w, d.status, seq);
		atomic_store(&w->reported_seq, seq);
		for (q = 0; q < w->nqueues; q++) {
			atomic_store(&w->queues[q].dead_seq, seq);
			rf_queue_wake(&w->queues[q]);
		}
		rf_msg_send(w->ipc_fd, RF_MSG_HOST_DIED, 0, &d, sizeof(d), NULL, 0);
	}
	return NULL;
}

void rf_host_reaper_start(struct rf_worker *w)
{
	pthread_t t;
	int r;

	pthread_mutex_lock(&w->start_lock);
	w->reap_pid = w->host_pid;
	pthread_mutex_unlock(&w->start_lock);
	r = pthread_create(&t, NULL, host_reaper, w);
	if (r)
		fatalx("start the plugin host's reaper: %s", strerror(r));
	pthread_detach(t);
}

pid_t rf_host_respawn(struct rf_worker *w, uint32_t generation)
{
	unsigned int seq = atomic_load(&w->host_seq);
	uint32_t q;
	pid_t pid;
	int sv[2];

	if (!w->cfg.host_restart || atomic_load(&w->reported_seq) != seq) {
		log_warnx("HOST_START from the broker while the plugin host lives; ignored");
		return -1;
	}
	for (q = 0; q < w->nqueues; q++) {
		struct rf_queue *qu = &w->queues[q];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			fatal("queue %u: the next plugin host's channel", q);
		/* (a host that died before its queue thread took the last
		 * one's: that one is never used) */
		if (qu->hevfd_next >= 0)
			close(qu->hevfd_next);
		qu->hevfd_next = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (qu->hevfd_next < 0)
			fatal("queue %u: the next plugin host's wake-up eventfd", q);
		if (qu->chan_next >= 0)
			close(qu->chan_next);
		qu->chan_next = sv[0];
		qu->host_chan_fd = sv[1];
	}
	__atomic_store_n(&w->cfg.generation, generation, __ATOMIC_RELAXED);
	atomic_store(&w->host_seq, seq + 1);
	pid = fork();
	if (pid < 0)
		fatal("start the next plugin host");
	if (pid == 0)
		return 0;
	w->host_pid = pid;
	pthread_mutex_lock(&w->start_lock);
	w->reap_pid = pid;
	pthread_cond_broadcast(&w->start_cond);
	pthread_mutex_unlock(&w->start_lock);
	for (q = 0; q < w->nqueues; q++) {
		struct rf_queue *qu = &w->queues[q];

		/* the host's end, kept (rf_queue_host_notice says why) */
		if (qu->host_end_next >= 0)
			close(qu->host_end_next);
		qu->host_end_next = qu->host_chan_fd;
		qu->host_chan_fd = -1;
		atomic_store(&qu->chan_renew, 1);
		rf_queue_wake(qu);
	}
	return pid;
}

void rf_host_lost(struct rf_worker *w, const char *why)
{
	int status;

	if (atomic_exchange(&host_lost, 1)) {
		/* another thread is ending the process */
		for (;;)
			pause();
	}
	status = host_reap(w, why);
	if (status == -1)
		_exit(1);
	exit_as_host(w, status);
}

/* Until the host says it serves (queue 0's thread hears it, chan_done);
 * a host that dies first ends the keeper with its status there
 * (rf_host_lost). */
void rf_host_wait_ready(struct rf_worker *w)
{
	pthread_mutex_lock(&w->start_lock);
	while (!w->host_ready)
		pthread_cond_wait(&w->start_cond, &w->start_lock);
	pthread_mutex_unlock(&w->start_lock);
}

/* Tell every host queue thread: @kind (PING with @a, or STOP). A PING
 * that finds the channel full is dropped: the host is not reading, and
 * the heartbeat will say so. */
void rf_host_broadcast(struct rf_worker *w, uint8_t kind, uint64_t a)
{
	struct rf_chan_rec r = { .kind = kind, .a = a };
	uint32_t q;

	for (q = 0; q < w->nqueues; q++)
		if (rf_chan_send(w->queues[q].chan_fd, &r, 1,
				 kind == RF_CH_PING ? MSG_DONTWAIT : 0) < 0 &&
		    errno != EAGAIN && kind != RF_CH_STOP)
			log_debug("queue %u: tell the host: %s", q, strerror(errno));
}

/* After STOP: the host's threads leave and the plugin is told; wait for
 * it a little (the broker ends both after two seconds anyway). */
void rf_host_reap(struct rf_worker *w)
{
	int i, status;

	for (i = 0; i < 150; i++) {
		pid_t p = waitpid(w->host_pid, &status, WNOHANG);

		if (p == w->host_pid || (p < 0 && errno == ECHILD))
			return;
		usleep(10000);
	}
}
